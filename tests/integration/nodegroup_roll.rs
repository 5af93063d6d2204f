//! A node group's flavor or image change (microversion 1.20): `PATCH …/nodegroups/{ng}` with
//! `/flavor_id`, `/image_id` and `/max_batch_size` replaces the group's machines, at most a
//! batch at a time, each exactly once (a new server behind the same machine); a failure stops
//! the roll with the group `UPDATE_FAILED` and the machines replaced kept, and the same request
//! again resumes it with only the rest. Bad input is a 400 that changes nothing. On PostgreSQL
//! and SQLite.

use std::collections::BTreeMap;

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::{ConductorSection, DriversSection, FakeDriverSection, Settings};
use fleetyard::drivers::DriverRegistry;
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{
    at, cluster_as, conductor, conductor_from, drain, events_of, instant, spawn_keeping,
    template_as, Backend, Resp, TestApp,
};

/// The app, its instant conductor, and a complete cluster of five workers on `m1.small`.
struct Env {
    app: TestApp,
    conductor: Conductor,
    h: HeaderMap,
    cluster: String,
}

const WORKERS: usize = 5;

impl Env {
    async fn new(backend: Backend) -> Env {
        Env::with(backend, crate::helpers::instant_settings).await
    }

    async fn with(backend: Backend, tweak: fn(&mut Settings)) -> Env {
        let (app, settings) = spawn_keeping(backend, tweak).await;
        let conductor = conductor_from(&app, &settings);
        let h = at(&app.headers, "latest");
        let t = template_as(&app, "roll-tpl", json!({}), &h).await;
        let body = json!({"name": "roll", "cluster_template_id": t, "node_count": WORKERS,
                          "flavor_id": "m1.small"});
        let cluster = cluster_as(&app, body, &h).await;
        drain(&conductor).await;
        let env = Env {
            app,
            conductor,
            h,
            cluster,
        };
        assert_eq!(env.group().await["status"], "CREATE_COMPLETE");
        env
    }

    fn group_path(&self) -> String {
        format!("/v1/clusters/{}/nodegroups/default-worker", self.cluster)
    }

    async fn group(&self) -> Value {
        let r = self.app.get_as(&self.group_path(), &self.h).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn cluster_status(&self) -> Value {
        let path = format!("/v1/clusters/{}", self.cluster);
        self.app.get_as(&path, &self.h).await.body["status"].clone()
    }

    async fn patch_as(&self, ops: Value, h: &HeaderMap) -> Resp {
        self.app.patch_as(&self.group_path(), &ops, h).await
    }

    async fn patch(&self, ops: Value) -> Resp {
        self.patch_as(ops, &self.h).await
    }

    /// The worker machines, by uuid.
    async fn workers(&self) -> BTreeMap<String, Value> {
        let path = format!("/v1/clusters/{}/machines?role=worker", self.cluster);
        let r = self.app.get_as(&path, &self.h).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["machines"]
            .as_array()
            .expect("machines")
            .iter()
            .map(|m| (m["uuid"].as_str().expect("uuid").to_string(), m.clone()))
            .collect()
    }

    /// How many workers run on `flavor` with their second server (replaced once).
    async fn replaced(&self, flavor: &str) -> usize {
        self.workers()
            .await
            .iter()
            .filter(|(uuid, m)| {
                m["spec"]["flavor"] == flavor
                    && m["status"]["provider_id"] == format!("fake://{uuid}/2")
                    && m["status"]["phase"] == "Running"
            })
            .count()
    }

    /// `(event type, outcome)` of the resource's notifications, in order.
    async fn events(&self, uuid: &str) -> Vec<(String, String)> {
        events_of(&self.app, uuid)
            .await
            .into_iter()
            .map(|(t, o, _)| (t, o))
            .collect()
    }
}

fn flavor(value: &str) -> Value {
    json!([{"op": "replace", "path": "/flavor_id", "value": value}])
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(t, o)| (t.to_string(), o.to_string()))
        .collect()
}

#[rstest]
#[tokio::test]
async fn a_flavor_change_replaces_every_machine_once_a_batch_at_a_time(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
    #[values(1, 2)] batch: usize,
) {
    let env = Env::new(backend).await;
    let before = env.workers().await;
    assert_eq!(before.len(), WORKERS);
    for (uuid, m) in &before {
        assert_eq!(m["spec"]["flavor"], "m1.small");
        assert_eq!(m["status"]["provider_id"], format!("fake://{uuid}"));
    }
    let group = env.group().await;

    let r = env
        .patch(json!([
            {"op": "replace", "path": "/flavor_id", "value": "m1.large"},
            {"op": "replace", "path": "/max_batch_size", "value": batch},
        ]))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["flavor_id"], "m1.large");
    assert_eq!(r.body["image_id"], group["image_id"]);
    assert_eq!(r.body["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(r.body["node_count"], WORKERS);
    assert_eq!(
        r.body,
        env.group().await,
        "the answer is the group as stored"
    );
    assert_eq!(env.cluster_status().await, "UPDATE_IN_PROGRESS");
    assert_eq!(env.replaced("m1.large").await, 0, "nothing replaced yet");

    // One attempt of the job: one batch started and (the driver being instant) finished.
    let first = env.conductor.try_execute_one().await.expect("a step");
    assert!(matches!(first, Outcome::Started { .. }), "{first:?}");
    assert_eq!(env.replaced("m1.large").await, batch, "one batch");
    assert_eq!(env.group().await["status"], "UPDATE_IN_PROGRESS");

    drain(&env.conductor).await;
    let after = env.workers().await;
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "the same machines, none lost"
    );
    for (uuid, m) in &after {
        assert_eq!(m["spec"]["flavor"], "m1.large", "{m}");
        assert_eq!(m["spec"]["os_image"], before[uuid]["spec"]["os_image"]);
        assert_eq!(m["status"]["phase"], "Running", "{m}");
        assert_eq!(m["status"]["last_change"], "Replace");
        assert_eq!(
            m["status"]["provider_id"],
            format!("fake://{uuid}/2"),
            "replaced exactly once"
        );
        assert_eq!(m["name"], before[uuid]["name"]);
        assert_eq!(
            env.events(uuid).await,
            pairs(&[
                ("magnum.machine.update", "pending"),
                ("magnum.machine.update", "success")
            ])
        );
    }
    let group = env.group().await;
    assert_eq!(group["status"], "UPDATE_COMPLETE", "{group}");
    assert_eq!(group["node_count"], WORKERS);
    assert_eq!(group["flavor_id"], "m1.large");
    assert_eq!(env.cluster_status().await, "UPDATE_COMPLETE");
    let ng_uuid = group["uuid"].as_str().expect("uuid");
    assert_eq!(
        env.events(ng_uuid).await,
        pairs(&[
            ("magnum.nodegroup.update", "pending"),
            ("magnum.nodegroup.update", "success")
        ])
    );
    // The master group was not rolled.
    let path = format!("/v1/clusters/{}/machines?role=master", env.cluster);
    let masters = env.app.get_as(&path, &env.h).await.body;
    let master = &masters["machines"][0];
    assert_eq!(
        master["status"]["provider_id"],
        format!("fake://{}", master["uuid"].as_str().expect("uuid"))
    );
    // The same change again changes nothing and queues nothing.
    let r = env.patch(flavor("m1.large")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, group);
    assert!(drain(&env.conductor).await.is_empty(), "no job");
}

#[rstest]
#[tokio::test]
async fn a_failure_stops_the_roll_keeps_what_was_replaced_and_a_retry_resumes(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let before = env.workers().await;
    let image = json!([{"op": "replace", "path": "/image_id", "value": "fedora-coreos-41"}]);
    let r = env.patch(image.clone()).await;
    assert_eq!(r.status, 202, "{}", r.text);
    // The third replacement this conductor is asked for fails.
    let broken = conductor(
        &env.app,
        FakeDriverSection {
            fail_replacement: 3,
            ..instant()
        },
    );
    let outcomes = drain(&broken).await;
    assert!(
        matches!(outcomes.last(), Some(Outcome::Failed { .. })),
        "{outcomes:?}"
    );
    let group = env.group().await;
    assert_eq!(group["status"], "UPDATE_FAILED", "{group}");
    let reason = group["status_reason"].as_str().expect("a reason");
    assert!(
        reason
            .starts_with("The rolling replacement of node group default-worker stopped at machine"),
        "{reason}"
    );
    assert!(reason.contains("fail_replacement = 3"), "{reason}");
    assert_eq!(group["image_id"], "fedora-coreos-41", "the target stays");
    assert_eq!(env.cluster_status().await, "UPDATE_FAILED");

    let stopped = env.workers().await;
    assert_eq!(stopped.len(), WORKERS, "none lost");
    let by_phase = |phase: &str| {
        stopped
            .values()
            .filter(|m| m["status"]["phase"] == phase)
            .count()
    };
    assert_eq!(by_phase("Failed"), 1);
    assert_eq!(by_phase("Running"), WORKERS - 1);
    let (failed_uuid, failed) = stopped
        .iter()
        .find(|(_, m)| m["status"]["phase"] == "Failed")
        .expect("the failed one");
    assert_eq!(failed["status"]["error_reason"], "ReplaceError");
    assert_eq!(
        failed["status"]["provider_id"],
        format!("fake://{failed_uuid}"),
        "its replacement never finished"
    );
    let replaced: Vec<&String> = stopped
        .iter()
        .filter(|(u, m)| m["status"]["provider_id"] == format!("fake://{u}/2"))
        .map(|(u, _)| u)
        .collect();
    assert_eq!(replaced.len(), 2, "the two before the failure are kept");
    let untouched = stopped
        .iter()
        .filter(|(u, m)| {
            m["status"]["provider_id"] == format!("fake://{u}")
                && m["spec"]["os_image"] == before[*u]["spec"]["os_image"]
                && m["status"]["phase"] == "Running"
        })
        .count();
    assert_eq!(untouched, 2, "the rest were not started");

    // The same request again resumes with the rest only.
    let r = env.patch(image).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(r.body["status_reason"], Value::Null);
    drain(&env.conductor).await;
    let after = env.workers().await;
    assert_eq!(after.len(), WORKERS);
    for (uuid, m) in &after {
        assert_eq!(m["spec"]["os_image"], "fedora-coreos-41");
        assert_eq!(m["status"]["phase"], "Running", "{m}");
        assert_eq!(
            m["status"]["provider_id"],
            format!("fake://{uuid}/2"),
            "each replaced exactly once"
        );
    }
    for uuid in &replaced {
        assert_eq!(
            env.events(uuid).await,
            pairs(&[
                ("magnum.machine.update", "pending"),
                ("magnum.machine.update", "success")
            ]),
            "kept, not replaced again"
        );
    }
    assert_eq!(
        env.events(failed_uuid).await,
        pairs(&[
            ("magnum.machine.update", "pending"),
            ("magnum.machine.update", "failure"),
            ("magnum.machine.update", "pending"),
            ("magnum.machine.update", "success")
        ])
    );
    let group = env.group().await;
    assert_eq!(group["status"], "UPDATE_COMPLETE");
    assert_eq!(
        env.events(group["uuid"].as_str().expect("uuid")).await,
        pairs(&[
            ("magnum.nodegroup.update", "pending"),
            ("magnum.nodegroup.update", "failure"),
            ("magnum.nodegroup.update", "pending"),
            ("magnum.nodegroup.update", "success")
        ])
    );
    assert_eq!(env.cluster_status().await, "UPDATE_COMPLETE");
}

#[rstest]
#[tokio::test]
async fn bad_rolls_are_400s_and_change_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let group = env.group().await;
    let workers = env.workers().await;
    let long = format!(
        "Invalid input for field/attribute flavor_id. Value: '{}'. Value should have a maximum \
         character requirement of 255.",
        "f".repeat(256)
    );
    let cases: Vec<(Value, &str)> = vec![
        (
            json!([{"op": "replace", "path": "/max_batch_size", "value": 0}]),
            "Invalid input for field/attribute max_batch_size. Value: '0'. Value should be greater or equal to 1.",
        ),
        (
            json!([{"op": "replace", "path": "/max_batch_size", "value": "two"}]),
            "Invalid input for field/attribute max_batch_size. Value: 'two'. Value should be an integer.",
        ),
        (
            flavor(""),
            "Invalid input for field/attribute flavor_id. Value: ''. Value should have a minimum character requirement of 1.",
        ),
        (
            flavor(&"f".repeat(256)),
            &long,
        ),
        (
            json!([{"op": "replace", "path": "/image_id", "value": 7}]),
            "Invalid input for field/attribute image_id. Value: '7'. Value should be string.",
        ),
        (
            json!([{"op": "remove", "path": "/flavor_id"}]),
            "'/flavor_id' is a mandatory attribute and can not be removed",
        ),
        (
            json!([
                {"op": "replace", "path": "/flavor_id", "value": "m1.large"},
                {"op": "replace", "path": "/max_node_count", "value": 9}
            ]),
            "Changing the flavor or image of node group default-worker replaces its machines \
             and cannot be combined with other changes; send the other changes in another request.",
        ),
        (
            json!([{"op": "replace", "path": "/node_count", "value": 2}]),
            "'/node_count' is an internal attribute and can not be updated",
        ),
    ];
    for (ops, detail) in cases {
        env.patch(ops).await.assert_error(400, detail);
    }
    // Below 1.20 the flavor and image are internal, as before.
    let old = at(&env.app.headers, "1.19");
    env.patch_as(flavor("m1.large"), &old).await.assert_error(
        400,
        "'/flavor_id' is an internal attribute and can not be updated",
    );
    assert_eq!(env.group().await, group, "nothing changed");
    assert_eq!(env.workers().await, workers);
    assert!(drain(&env.conductor).await.is_empty(), "no job");

    // A group being rolled takes no second roll.
    assert_eq!(env.patch(flavor("m1.large")).await.status, 202);
    env.patch(flavor("m1.xlarge")).await.assert_error(
        409,
        "Updating a nodegroup when status is \"UPDATE_IN_PROGRESS\" is not supported.",
    );
    drain(&env.conductor).await;
    assert_eq!(env.replaced("m1.large").await, WORKERS);
}

/// A conductor whose retries come at once, with the fake driver as given.
fn quick(app: &TestApp, fake: FakeDriverSection) -> Conductor {
    Conductor::new(
        app.store.clone(),
        DriverRegistry::build(&DriversSection::default(), &fake).expect("drivers"),
        "test-host",
        ConductorSection {
            retry_delay: 0.01,
            retry_max_delay: 0.01,
            ..ConductorSection::default()
        },
    )
}

#[rstest]
#[tokio::test]
async fn a_transient_refusal_holds_the_roll_and_the_next_attempt_goes_on(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    // Jobs get two attempts; a roll's claims are steps, not attempts.
    let env = Env::with(backend, |s| {
        crate::helpers::instant_settings(s);
        s.conductor.max_attempts = 2;
    })
    .await;
    assert_eq!(env.patch(flavor("m1.large")).await.status, 202);
    // Two steps, each a machine replaced: the next claim is the job's third.
    let good = quick(&env.app, instant());
    for _ in 0..2 {
        good.try_execute_one().await.expect("a step");
    }
    assert_eq!(env.replaced("m1.large").await, 2);
    let unreachable = quick(
        &env.app,
        FakeDriverSection {
            transient_operations: "machine_replace".into(),
            ..instant()
        },
    );
    // The step that starts the third replacement goes on at once; the next is refused.
    let started = unreachable.try_execute_one().await.expect("a step");
    assert!(matches!(started, Outcome::Started { .. }), "{started:?}");
    let refused = unreachable.try_execute_one().await.expect("a step");
    assert!(matches!(refused, Outcome::Retried { .. }), "{refused:?}");
    let group = env.group().await;
    assert_eq!(group["status"], "UPDATE_IN_PROGRESS", "{group}");
    let in_flight: Vec<Value> = env
        .workers()
        .await
        .into_values()
        .filter(|m| m["status"]["phase"] == "Provisioning")
        .collect();
    assert_eq!(
        in_flight.len(),
        1,
        "the refused replacement stays under way"
    );
    assert_eq!(in_flight[0]["spec"]["flavor"], "m1.large");

    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    drain(&good).await;
    assert_eq!(env.replaced("m1.large").await, WORKERS);
    assert_eq!(env.group().await["status"], "UPDATE_COMPLETE");
}
