//! A node group rolled as a whole (`Driver::rolls_whole_group`, as the kubernetes driver does
//! for its master group): every machine left starts at once whatever `max_batch_size` says,
//! one `roll_nodegroup` question per step stands for all of them, and its answer is each
//! machine's, every machine replaced once. A conductor made anew mid-roll goes on; a refusal
//! ends the roll `UPDATE_FAILED` with the group's reason, and the same request resumes it. On
//! PostgreSQL and SQLite.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use fleetyard::conductor::Conductor;
use fleetyard::config::{ConductorSection, DriversSection};
use fleetyard::domain::cluster::NodeGroup;
use fleetyard::domain::machine::{ChangeMode, Machine, MachineSpec};
use fleetyard::domain::template::ClusterTemplate;
use fleetyard::drivers::fake::FakeDriver;
use fleetyard::drivers::{
    Capabilities, ClusterContext, ClusterObservation, Driver, DriverError, DriverRegistry,
    DriverResult, FederationContext, FederationProgress, HealthObservation, MachineAction,
    MemberChange, Phase, Progress, Provides, Resize,
};
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{
    at, cluster_as, drain, instant, spawn_keeping, template_as, Backend, TestApp,
};

/// How the whole-group roll answers.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// The backend is still rolling.
    Rolling,
    /// The backend finished: every machine on its next server.
    Finish,
    /// The backend's roll-out failed.
    Refuse,
}

/// The fake driver, rolling worker groups as a whole.
struct WholeGroup {
    inner: FakeDriver,
    mode: Mode,
    /// `roll_nodegroup` questions, and the machines each was about.
    calls: AtomicUsize,
    asked: std::sync::Mutex<Vec<usize>>,
}

impl WholeGroup {
    fn new(mode: Mode) -> Arc<WholeGroup> {
        Arc::new(WholeGroup {
            inner: FakeDriver::new(instant()),
            mode,
            calls: AtomicUsize::new(0),
            asked: std::sync::Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Driver for WholeGroup {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn provides(&self) -> &[Provides] {
        self.inner.provides()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn create_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.inner.create_cluster(ctx).await
    }
    async fn update_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.inner.update_cluster(ctx).await
    }
    async fn resize_cluster(&self, ctx: &ClusterContext, r: &Resize) -> DriverResult<Progress> {
        self.inner.resize_cluster(ctx, r).await
    }
    async fn upgrade_cluster(
        &self,
        ctx: &ClusterContext,
        t: &ClusterTemplate,
        b: i32,
        ng: Option<&str>,
    ) -> DriverResult<Progress> {
        self.inner.upgrade_cluster(ctx, t, b, ng).await
    }
    async fn delete_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.inner.delete_cluster(ctx).await
    }
    async fn create_nodegroup(
        &self,
        ctx: &ClusterContext,
        n: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.inner.create_nodegroup(ctx, n).await
    }
    async fn update_nodegroup(
        &self,
        ctx: &ClusterContext,
        n: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.inner.update_nodegroup(ctx, n).await
    }
    async fn delete_nodegroup(
        &self,
        ctx: &ClusterContext,
        n: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.inner.delete_nodegroup(ctx, n).await
    }
    async fn cluster_status(&self, ctx: &ClusterContext) -> DriverResult<ClusterObservation> {
        self.inner.cluster_status(ctx).await
    }
    async fn cluster_health(
        &self,
        ctx: &ClusterContext,
    ) -> DriverResult<Option<HealthObservation>> {
        self.inner.cluster_health(ctx).await
    }
    async fn rotate_ca(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.inner.rotate_ca(ctx).await
    }
    fn plan_machine_change(&self, m: &Machine, next: &MachineSpec) -> Result<ChangeMode, String> {
        self.inner.plan_machine_change(m, next)
    }
    fn check_machine_action(&self, _m: &Machine, _a: MachineAction) -> Result<(), String> {
        Err("No machine of this driver is replaced alone.".into())
    }
    async fn replace_machine(&self, _ctx: &ClusterContext, m: &Machine) -> DriverResult<Progress> {
        panic!("machine {} asked about alone", m.name)
    }
    fn rolls_whole_group(&self, ng: &NodeGroup) -> bool {
        !ng.is_master()
    }
    async fn roll_nodegroup(
        &self,
        ctx: &ClusterContext,
        _ng: &NodeGroup,
        rolling: &[Machine],
    ) -> DriverResult<Progress> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.asked.lock().expect("lock").push(rolling.len());
        match self.mode {
            Mode::Rolling => {
                return Ok(Progress::Started(ClusterObservation::phase(
                    Phase::InProgress,
                )))
            }
            Mode::Refuse => {
                return Err(DriverError::Permanent(
                    "Cluster API reports that the control plane machine cp-a failed.".into(),
                ))
            }
            Mode::Finish => {}
        }
        let mut obs = ClusterObservation::phase(Phase::Complete);
        for m in rolling {
            // The fake driver's replacement of each: its next server.
            match self.inner.replace_machine(ctx, m).await? {
                Progress::Done(one) => obs.machines.extend(one.machines),
                Progress::Started(_) => {
                    return Ok(Progress::Started(ClusterObservation::phase(
                        Phase::InProgress,
                    )))
                }
            }
        }
        Ok(Progress::Done(obs))
    }
    async fn create_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        self.inner.create_federation(ctx).await
    }
    async fn update_federation(
        &self,
        ctx: &FederationContext,
        change: &MemberChange,
    ) -> DriverResult<FederationProgress> {
        self.inner.update_federation(ctx, change).await
    }
    async fn delete_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        self.inner.delete_federation(ctx).await
    }
    async fn federation_status(&self, ctx: &FederationContext) -> DriverResult<Phase> {
        self.inner.federation_status(ctx).await
    }
}

fn conductor_with(app: &TestApp, driver: Arc<WholeGroup>) -> Conductor {
    let mut drivers =
        DriverRegistry::build(&DriversSection::default(), &instant()).expect("drivers");
    drivers.insert(driver);
    Conductor::new(
        app.store.clone(),
        drivers,
        "test-host",
        ConductorSection {
            retry_delay: 0.01,
            retry_max_delay: 0.01,
            ..ConductorSection::default()
        },
    )
}

const WORKERS: usize = 4;

/// The workers, by uuid.
async fn workers(
    app: &TestApp,
    cluster: &str,
    h: &reqwest::header::HeaderMap,
) -> BTreeMap<String, Value> {
    let r = app
        .get_as(&format!("/v1/clusters/{cluster}/machines?role=worker"), h)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["machines"]
        .as_array()
        .expect("machines")
        .iter()
        .map(|m| (m["uuid"].as_str().expect("uuid").to_string(), m.clone()))
        .collect()
}

#[rstest]
#[tokio::test]
async fn a_group_rolled_as_a_whole_starts_every_machine_and_survives_a_new_conductor(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, _settings) = spawn_keeping(backend, crate::helpers::instant_settings).await;
    let h = at(&app.headers, "latest");
    let t = template_as(&app, "whole-tpl", json!({}), &h).await;
    let body = json!({"name": "whole", "cluster_template_id": t, "node_count": WORKERS,
                      "flavor_id": "m1.small"});
    let cluster = cluster_as(&app, body, &h).await;
    drain(&conductor_with(&app, WholeGroup::new(Mode::Finish))).await;
    let group = format!("/v1/clusters/{cluster}/nodegroups/default-worker");
    let ops = json!([{"op": "replace", "path": "/flavor_id", "value": "m1.large"},
                     {"op": "replace", "path": "/max_batch_size", "value": 1}]);
    let r = app.patch_as(&group, &ops, &h).await;
    assert_eq!(r.status, 202, "{}", r.text);

    // The backend is rolling: every machine under way at once, one question per step.
    let rolling = WholeGroup::new(Mode::Rolling);
    let first = conductor_with(&app, rolling.clone());
    for _ in 0..2 {
        first.try_execute_one().await.expect("a step");
    }
    assert_eq!(rolling.calls.load(Ordering::SeqCst), 2);
    assert_eq!(*rolling.asked.lock().expect("lock"), [WORKERS, WORKERS]);
    let under_way = workers(&app, &cluster, &h).await;
    assert!(
        under_way
            .values()
            .all(|m| m["status"]["phase"] == "Provisioning" && m["spec"]["flavor"] == "m1.large"),
        "{under_way:?}"
    );
    assert_eq!(
        app.get_as(&group, &h).await.body["status"],
        "UPDATE_IN_PROGRESS"
    );

    // A conductor made anew (the first one gone) finishes it: each machine replaced once.
    drop(first);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let finishing = WholeGroup::new(Mode::Finish);
    drain(&conductor_with(&app, finishing.clone())).await;
    assert_eq!(finishing.calls.load(Ordering::SeqCst), 1);
    let done = workers(&app, &cluster, &h).await;
    assert_eq!(done.len(), WORKERS, "the count is unchanged");
    for (uuid, m) in &done {
        assert_eq!(m["status"]["phase"], "Running", "{m}");
        assert_eq!(m["spec"]["flavor"], "m1.large");
        assert_eq!(
            m["status"]["provider_id"],
            format!("fake://{uuid}/2"),
            "replaced once"
        );
    }
    let ng = app.get_as(&group, &h).await.body;
    assert_eq!(ng["status"], "UPDATE_COMPLETE", "{ng}");
}

#[rstest]
#[tokio::test]
async fn a_whole_group_roll_refused_fails_the_group_and_the_same_request_resumes_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, _settings) = spawn_keeping(backend, crate::helpers::instant_settings).await;
    let h = at(&app.headers, "latest");
    let t = template_as(&app, "whole-tpl", json!({}), &h).await;
    let body = json!({"name": "whole", "cluster_template_id": t, "node_count": WORKERS,
                      "flavor_id": "m1.small"});
    let cluster = cluster_as(&app, body, &h).await;
    drain(&conductor_with(&app, WholeGroup::new(Mode::Finish))).await;
    let group = format!("/v1/clusters/{cluster}/nodegroups/default-worker");
    let ops = json!([{"op": "replace", "path": "/flavor_id", "value": "m1.large"}]);
    assert_eq!(app.patch_as(&group, &ops, &h).await.status, 202);

    drain(&conductor_with(&app, WholeGroup::new(Mode::Refuse))).await;
    let ng = app.get_as(&group, &h).await.body;
    assert_eq!(ng["status"], "UPDATE_FAILED", "{ng}");
    assert_eq!(
        ng["status_reason"],
        "The rolling replacement of node group default-worker as a whole stopped: Cluster API \
         reports that the control plane machine cp-a failed. Updating the node group again \
         resumes it."
    );
    let failed = workers(&app, &cluster, &h).await;
    assert!(
        failed.values().all(|m| m["status"]["phase"] == "Failed"),
        "{failed:?}"
    );

    assert_eq!(app.patch_as(&group, &ops, &h).await.status, 202);
    drain(&conductor_with(&app, WholeGroup::new(Mode::Finish))).await;
    let ng = app.get_as(&group, &h).await.body;
    assert_eq!(ng["status"], "UPDATE_COMPLETE", "{ng}");
    for (uuid, m) in workers(&app, &cluster, &h).await {
        assert_eq!(m["status"]["phase"], "Running");
        assert_eq!(
            m["status"]["provider_id"],
            format!("fake://{uuid}/2"),
            "replaced once"
        );
    }
}
