//! The `fake` driver: a deterministic simulator of provisioning, in the spirit of Nova's fake
//! virt driver. It creates nothing anywhere; it answers as a backend would, with addresses
//! derived from the cluster's uuid and configurable durations. It is the quick start's default
//! and the driver of the test suite and the scale benchmark.
//!
//! Failure injection, by cluster label: `fake_fail=<op>` (`create`, `update`, `resize`,
//! `upgrade`, `delete`, `rotate_ca`, `rotate_credential`, `federation`) makes that operation
//! fail permanently; `fake_transient_failures=N` makes the first N attempts of each operation
//! fail transiently. `[fake_driver] fail_operations` fails operations for every cluster of the
//! process (an infrastructure broken until it is repaired), and `[fake_driver]
//! transient_operations` fails them transiently on every attempt (an unreachable API). A
//! delete that fails reports what it left behind: the stack, network and load balancer named
//! after the cluster's uuid and a server group per node group (see `leftovers`). Every
//! operation is idempotent: what it reports derives from the cluster's uuid and node groups,
//! so a retried or resumed operation finds what an earlier attempt made.
//!
//! One machine's operations: a kubelet change within its minor line is made on the node (in
//! place); a new minor line, container runtime, OS image or flavor takes a new node (a
//! replacement, reported as a new server `fake://<machine uuid>/<n>` behind the same node
//! name). They take `update_seconds` from the machine's last change, and fail as the
//! operations `machine_update`, `machine_replace` and `machine_reboot` of the labels and
//! settings above. `[fake_driver] fail_replacement = N` fails the replacement of the `N`-th
//! machine the process is asked to replace (a rolling replacement that stops part way).
//!
//! Nothing it builds grows with a count a client chose: a group lists the addresses (and the
//! health reports) of its first [`LISTED_NODES`] nodes, whatever its node count.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::Utc;

use super::{
    Capabilities, ClusterContext, ClusterObservation, Driver, DriverError, DriverResult,
    FederationContext, FederationProgress, HealthObservation, MachineAction, MachineObservation,
    MemberChange, NodeGroupObservation, Phase, Progress, Provides, Resize,
};
use crate::config::FakeDriverSection;
use crate::domain::cluster::{NodeGroup, ROLE_MASTER};
use crate::domain::leftover::Leftover;
use crate::domain::machine::{
    ChangeMode, KubeVersion, Machine, MachineAddress, MachinePhase, MachineRole, MachineSpec,
    MachineVersions,
};
use crate::domain::status::{ClusterStatus, FederationStatus};
use crate::domain::template::ClusterTemplate;
use crate::domain::MachineId;

const PROVIDES: &[Provides] = &[
    Provides {
        server_type: "vm",
        os: "fedora-coreos",
        coe: "kubernetes",
    },
    Provides {
        server_type: "vm",
        os: "ubuntu",
        coe: "kubernetes",
    },
    Provides {
        server_type: "vm",
        os: "flatcar",
        coe: "kubernetes",
    },
    Provides {
        server_type: "bm",
        os: "ubuntu",
        coe: "kubernetes",
    },
];

pub struct FakeDriver {
    settings: FakeDriverSection,
    /// The machines this process was asked to replace, in the order it was first asked.
    replacing: std::sync::Mutex<Vec<MachineId>>,
}

impl FakeDriver {
    pub fn new(settings: FakeDriverSection) -> FakeDriver {
        FakeDriver {
            settings,
            replacing: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Refuses the replacement of the machine when it is the `[fake_driver] fail_replacement`-th
    /// this process was asked to replace.
    fn check_replacement(&self, m: &Machine) -> DriverResult<()> {
        let nth = self.settings.fail_replacement;
        if nth == 0 {
            return Ok(());
        }
        let mut asked = self
            .replacing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let position = match asked.iter().position(|u| *u == m.uuid) {
            Some(i) => i,
            None => {
                asked.push(m.uuid);
                asked.len() - 1
            }
        };
        if u32::try_from(position).is_ok_and(|p| p.saturating_add(1) == nth) {
            return Err(DriverError::Permanent(format!(
                "The fake driver simulated a failure of the replacement of machine {} (the \
                 replacement number {nth} of this process: [fake_driver] fail_replacement = {nth}).",
                m.name
            )));
        }
        Ok(())
    }

    /// Waits the configured latency, then applies the failure-injection labels.
    async fn simulate(&self, ctx: &ClusterContext, op: &str) -> DriverResult<()> {
        if self.settings.latency_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(self.settings.latency_ms)).await;
        }
        self.check_failure(ctx, op)
    }

    fn check_failure(&self, ctx: &ClusterContext, op: &str) -> DriverResult<()> {
        if self
            .settings
            .fail_operations
            .split(',')
            .any(|o| o.trim() == op)
        {
            return Err(DriverError::Permanent(format!(
                "The fake driver simulated a failure of '{op}' ([fake_driver] fail_operations = {})."
            , self.settings.fail_operations)));
        }
        if self
            .settings
            .transient_operations
            .split(',')
            .any(|o| o.trim() == op)
        {
            return Err(DriverError::Transient(format!(
                "The fake driver simulated a transient failure of '{op}' ([fake_driver] transient_operations = {}).",
                self.settings.transient_operations
            )));
        }
        let labels = &ctx.cluster.labels;
        if labels
            .get("fake_fail")
            .is_some_and(|v| v.split(',').any(|o| o.trim() == op))
        {
            return Err(DriverError::Permanent(format!(
                "The fake driver simulated a failure of '{op}' (label fake_fail={op})."
            )));
        }
        let transient: i32 = labels
            .get("fake_transient_failures")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if ctx.attempt <= transient {
            return Err(DriverError::Transient(format!(
                "The fake driver simulated a transient failure of '{op}' (attempt {} of the first {transient}).",
                ctx.attempt
            )));
        }
        Ok(())
    }

    fn seconds_for(&self, status: ClusterStatus) -> u64 {
        match status {
            ClusterStatus::CreateInProgress => self.settings.create_seconds,
            ClusterStatus::DeleteInProgress => self.settings.delete_seconds,
            _ => self.settings.update_seconds,
        }
    }

    /// Finished within the job when the simulated duration is zero, else started.
    fn progress(&self, ctx: &ClusterContext, seconds: u64) -> Progress {
        let phase = if seconds == 0 {
            Phase::Complete
        } else {
            Phase::InProgress
        };
        let obs = observe(ctx, phase);
        if seconds == 0 {
            Progress::Done(obs)
        } else {
            Progress::Started(obs)
        }
    }
}

/// The most nodes of one group the simulator lists addresses and health reports for: the
/// distinct addresses one group's octet holds.
pub const LISTED_NODES: i32 = 240;

/// The nodes of a group the simulator lists.
fn listed(ng: &NodeGroup) -> std::ops::Range<i32> {
    0..ng.node_count.clamp(0, LISTED_NODES)
}

/// A deterministic private address for node `index` of a group.
fn address(ctx: &ClusterContext, group: usize, index: i32) -> String {
    let b = ctx.cluster.uuid.0.as_bytes();
    format!(
        "10.{}.{}.{}",
        b[0] % 250,
        (b[1] as usize + group * 16) % 250,
        10 + index.clamp(0, LISTED_NODES - 1)
    )
}

/// The version a group's nodes run: the kubelet its machines' specs all name (a version
/// change rolled them there), else the cluster's Kubernetes version.
fn group_version(ctx: &ClusterContext, ng: &NodeGroup) -> String {
    let mut named = ctx
        .machines
        .iter()
        .filter(|m| m.nodegroup_id == ng.uuid && m.status.phase != MachinePhase::Deleting)
        .map(|m| m.spec.versions.kubelet.as_ref());
    match named.next() {
        Some(Some(first)) if named.all(|k| k == Some(first)) => first.to_string(),
        _ => kube_version(ctx),
    }
}

fn observe(ctx: &ClusterContext, phase: Phase) -> ClusterObservation {
    let mut nodegroups = BTreeMap::new();
    let mut api_address = None;
    for (i, ng) in ctx.nodegroups.iter().enumerate() {
        let addresses: Vec<String> = listed(ng).map(|n| address(ctx, i, n)).collect();
        if ng.role == ROLE_MASTER && api_address.is_none() {
            api_address = addresses.first().map(|a| format!("https://{a}:6443"));
        }
        nodegroups.insert(
            ng.uuid.to_string(),
            NodeGroupObservation {
                node_count: Some(ng.node_count),
                node_addresses: addresses,
                ready: phase == Phase::Complete,
                version: Some(group_version(ctx, ng)),
            },
        );
    }
    ClusterObservation {
        phase,
        stack_id: Some(format!("fake-{}", ctx.cluster.uuid)),
        api_address,
        coe_version: Some(kube_version(ctx)),
        container_version: Some("containerd 1.7.20".into()),
        nodegroups,
        leftovers: Vec::new(),
        machines: observe_machines(ctx),
    }
}

/// What the simulated infrastructure reports of each machine not being deleted (the first
/// [`LISTED_NODES`] of a group, as its addresses are): a server
/// named after the machine (`fake://<uuid>`), a node of the machine's name, the address its
/// number gives in its group (the group's listed addresses), and the versions it was asked for
/// (the cluster's Kubernetes version where none was).
fn observe_machines(ctx: &ClusterContext) -> BTreeMap<MachineId, MachineObservation> {
    let mut out = BTreeMap::new();
    for ng in &ctx.nodegroups {
        let ours = ctx
            .machines
            .iter()
            .filter(|m| m.nodegroup_id == ng.uuid && m.status.phase != MachinePhase::Deleting)
            .take(usize::try_from(LISTED_NODES).unwrap_or(0));
        for (position, m) in ours.enumerate() {
            out.insert(m.uuid, observe_machine(ctx, m, position));
        }
    }
    out
}

/// What the simulated infrastructure reports of one machine, the `position`-th of its group
/// (its number when its name has none): the server it last made for it, else
/// `fake://<uuid>`, a node of the machine's name, its address, the versions of its spec, and
/// the error of a failed machine.
fn observe_machine(ctx: &ClusterContext, m: &Machine, position: usize) -> MachineObservation {
    let version = KubeVersion::parse(&kube_version(ctx)).ok();
    let group = ctx
        .nodegroups
        .iter()
        .position(|ng| ng.uuid == m.nodegroup_id)
        .unwrap_or(0);
    let index = machine_number(m.name.as_str()).unwrap_or(
        i32::try_from(position)
            .unwrap_or(i32::MAX)
            .saturating_add(1),
    );
    let wanted = &m.spec.versions;
    let is_master = m.role == MachineRole::Master;
    MachineObservation {
        provider_id: Some(server_of(m)),
        node_ref: Some(m.name.to_string()),
        addresses: vec![MachineAddress {
            kind: "InternalIP".into(),
            address: address(ctx, group, index.saturating_sub(1)),
        }],
        versions: MachineVersions {
            kubelet: wanted.kubelet.clone().or_else(|| version.clone()),
            control_plane: wanted
                .control_plane
                .clone()
                .or_else(|| version.clone().filter(|_| is_master)),
        },
        // A failed machine stays failed for the simulator until an operation of its own runs.
        error_reason: failed(m).and(m.status.error_reason.clone()),
        error_message: failed(m).and(m.status.error_message.clone()),
    }
}

fn failed(m: &Machine) -> Option<()> {
    (m.status.phase == MachinePhase::Failed).then_some(())
}

/// The simulated server of a machine: the one a replacement made (`fake://<uuid>/<n>`), else
/// `fake://<uuid>`.
fn server_of(m: &Machine) -> String {
    let first = format!("fake://{}", m.uuid);
    match &m.status.provider_id {
        Some(p) if p == &first || p.starts_with(&format!("{first}/")) => p.clone(),
        _ => first,
    }
}

/// The server a replacement of the machine makes: the next `fake://<uuid>/<n>`. Derived from
/// the server it has, so a retried replacement makes the same one.
fn next_server(m: &Machine) -> String {
    let first = format!("fake://{}", m.uuid);
    let current = server_of(m);
    let n = current
        .strip_prefix(&format!("{first}/"))
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(1);
    format!("{first}/{}", n.saturating_add(1))
}

/// How the simulated infrastructure applies `next` to the machine: a kubelet on another patch
/// release of the minor line the node runs (else the one its spec names) in place; anything else that changes (a new minor line or a
/// kubelet version it did not know, the container runtime, the OS image, the flavor, the
/// control plane) by a new node.
pub fn plan_change(m: &Machine, next: &MachineSpec) -> ChangeMode {
    let now = &m.spec;
    let replaced = now.container_runtime != next.container_runtime
        || now.os_image != next.os_image
        || now.flavor != next.flavor
        || now.versions.control_plane != next.versions.control_plane;
    if replaced {
        return ChangeMode::Replace;
    }
    let running = m
        .status
        .versions
        .kubelet
        .as_ref()
        .or(now.versions.kubelet.as_ref());
    match (running, &next.versions.kubelet) {
        (Some(a), Some(b)) if a.major() == b.major() && a.minor() == b.minor() => {
            ChangeMode::InPlace
        }
        (a, b) if a == b.as_ref() => ChangeMode::InPlace,
        _ => ChangeMode::Replace,
    }
}

/// The `n` of a machine named `<group>-<n>`.
fn machine_number(name: &str) -> Option<i32> {
    name.rsplit('-').next()?.parse().ok()
}

/// What a delete of the cluster that has not finished leaves behind, as the simulated
/// infrastructure names it: the stack, its network and load balancer (derived from the
/// cluster's uuid) and one server group per node group (from the group's uuid).
fn leftovers(ctx: &ClusterContext) -> Vec<Leftover> {
    let uuid = ctx.cluster.uuid;
    let mut out = vec![
        Leftover::new("stack", format!("fake-{uuid}")),
        Leftover::new("network", format!("fake-net-{uuid}")),
        Leftover::new("load_balancer", format!("fake-lb-{uuid}")),
    ];
    out.extend(
        ctx.nodegroups
            .iter()
            .map(|ng| Leftover::new("server_group", format!("fake-sg-{}", ng.uuid))),
    );
    out
}

fn kube_version(ctx: &ClusterContext) -> String {
    ctx.cluster
        .labels
        .get("kube_tag")
        .or_else(|| ctx.template.spec.labels.get("kube_tag"))
        .cloned()
        .unwrap_or_else(|| "v1.30.1".into())
}

#[async_trait]
impl Driver for FakeDriver {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn provides(&self) -> &[Provides] {
        PROVIDES
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            federation: true,
            rotate_ca: true,
            rotate_credential: true,
            master_resize: false,
            upgrade: true,
        }
    }

    async fn create_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.simulate(ctx, "create").await?;
        Ok(self.progress(ctx, self.settings.create_seconds))
    }

    async fn update_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.simulate(ctx, "update").await?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn resize_cluster(
        &self,
        ctx: &ClusterContext,
        _resize: &Resize,
    ) -> DriverResult<Progress> {
        self.simulate(ctx, "resize").await?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn upgrade_cluster(
        &self,
        ctx: &ClusterContext,
        _template: &ClusterTemplate,
        _max_batch_size: i32,
        _nodegroup: Option<&str>,
    ) -> DriverResult<Progress> {
        self.simulate(ctx, "upgrade").await?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn delete_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.simulate(ctx, "delete")
            .await
            .map_err(|e| e.leaving(leftovers(ctx)))?;
        if self.settings.delete_seconds == 0 {
            return Ok(Progress::Done(ClusterObservation::phase(Phase::Gone)));
        }
        let mut obs = ClusterObservation::phase(Phase::InProgress);
        obs.leftovers = leftovers(ctx);
        Ok(Progress::Started(obs))
    }

    async fn create_nodegroup(
        &self,
        ctx: &ClusterContext,
        _ng: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.simulate(ctx, "update").await?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn update_nodegroup(
        &self,
        ctx: &ClusterContext,
        _ng: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.simulate(ctx, "update").await?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn delete_nodegroup(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.simulate(ctx, "update").await.map_err(|e| {
            e.leaving(vec![Leftover::new(
                "server_group",
                format!("fake-sg-{}", ng.uuid),
            )])
        })?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn cluster_status(&self, ctx: &ClusterContext) -> DriverResult<ClusterObservation> {
        let status = ctx.cluster.status;
        if !status.is_in_progress() {
            return Ok(observe(ctx, Phase::Complete));
        }
        let since = ctx.cluster.updated_at.unwrap_or(ctx.cluster.created_at);
        let elapsed = (Utc::now() - since).num_milliseconds().max(0) as u64;
        if elapsed < self.seconds_for(status) * 1000 {
            let mut obs = observe(ctx, Phase::InProgress);
            if status == ClusterStatus::DeleteInProgress {
                obs.leftovers = leftovers(ctx);
            }
            return Ok(obs);
        }
        if status == ClusterStatus::DeleteInProgress {
            return Ok(ClusterObservation::phase(Phase::Gone));
        }
        Ok(observe(ctx, Phase::Complete))
    }

    async fn cluster_health(
        &self,
        ctx: &ClusterContext,
    ) -> DriverResult<Option<HealthObservation>> {
        if !ctx.cluster.status.is_complete_like() {
            return Ok(None);
        }
        let mut reason = BTreeMap::new();
        reason.insert("api".to_string(), "ok".to_string());
        for ng in &ctx.nodegroups {
            for n in listed(ng) {
                reason.insert(
                    format!("{}-{}-node-{n}.Ready", ctx.cluster.name, ng.name),
                    "True".into(),
                );
            }
        }
        Ok(Some(HealthObservation {
            healthy: Some(true),
            reason,
        }))
    }

    async fn rotate_ca(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.simulate(ctx, "rotate_ca").await?;
        Ok(self.progress(ctx, self.settings.update_seconds))
    }

    async fn rotate_credential(&self, ctx: &ClusterContext) -> DriverResult<()> {
        self.simulate(ctx, "rotate_credential").await
    }

    fn plan_machine_change(&self, m: &Machine, next: &MachineSpec) -> Result<ChangeMode, String> {
        Ok(plan_change(m, next))
    }

    fn check_machine_action(&self, _m: &Machine, _action: MachineAction) -> Result<(), String> {
        Ok(())
    }

    async fn update_machine(
        &self,
        ctx: &ClusterContext,
        m: &Machine,
        mode: ChangeMode,
    ) -> DriverResult<Progress> {
        let server = match mode {
            ChangeMode::InPlace => server_of(m),
            ChangeMode::Replace => next_server(m),
        };
        self.machine_operation(ctx, m, "machine_update", server)
            .await
    }

    async fn replace_machine(&self, ctx: &ClusterContext, m: &Machine) -> DriverResult<Progress> {
        self.check_replacement(m)?;
        self.machine_operation(ctx, m, "machine_replace", next_server(m))
            .await
    }

    async fn reboot_machine(&self, ctx: &ClusterContext, m: &Machine) -> DriverResult<Progress> {
        self.machine_operation(ctx, m, "machine_reboot", server_of(m))
            .await
    }

    async fn create_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        let host = ctx.host.as_ref().ok_or_else(|| {
            DriverError::Permanent(format!(
                "The host cluster {} no longer exists.",
                ctx.federation.hostcluster_id
            ))
        })?;
        self.simulate(host, "federation").await?;
        if !host.cluster.status.is_complete_like() {
            return Err(DriverError::Transient(format!(
                "The host cluster {} is {}; the federation control plane waits for it to complete.",
                host.cluster.name, host.cluster.status
            )));
        }
        Ok(self.federation_progress())
    }

    async fn update_federation(
        &self,
        ctx: &FederationContext,
        change: &MemberChange,
    ) -> DriverResult<FederationProgress> {
        if let Some(host) = &ctx.host {
            self.simulate(host, "federation").await?;
        }
        let missing: Vec<String> = change
            .joined
            .iter()
            .filter(|m| !ctx.members.iter().any(|c| c.uuid == **m))
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() {
            let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
            return Err(DriverError::Permanent(super::missing_members(&missing)));
        }
        let gone: Vec<String> = change
            .unjoined
            .iter()
            .filter(|m| !ctx.members.iter().any(|c| c.uuid == **m))
            .map(ToString::to_string)
            .collect();
        if !gone.is_empty() {
            let names: Vec<&str> = gone.iter().map(String::as_str).collect();
            return Ok(FederationProgress::DoneWithNote(format!(
                "Unjoined {}: the cluster no longer exists, so its member-side clean-up was skipped.",
                names.join(", ")
            )));
        }
        Ok(self.federation_progress())
    }

    async fn delete_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        if let Some(host) = &ctx.host {
            self.simulate(host, "federation").await?;
        }
        Ok(self.federation_progress())
    }

    async fn federation_status(&self, ctx: &FederationContext) -> DriverResult<Phase> {
        let f = &ctx.federation;
        let since = f.updated_at.unwrap_or(f.created_at);
        let elapsed = (Utc::now() - since).num_milliseconds().max(0) as u64;
        if elapsed < self.settings.federation_seconds * 1000 {
            return Ok(Phase::InProgress);
        }
        Ok(if f.status == FederationStatus::DeleteInProgress {
            Phase::Gone
        } else {
            Phase::Complete
        })
    }
}

impl FakeDriver {
    /// One machine's operation: done when `update_seconds` have passed since the machine's
    /// change was accepted, else under way; the machine reported with `server`.
    async fn machine_operation(
        &self,
        ctx: &ClusterContext,
        m: &Machine,
        op: &str,
        server: String,
    ) -> DriverResult<Progress> {
        self.simulate(ctx, op).await?;
        let since = m.updated_at.unwrap_or(m.created_at);
        let elapsed = (Utc::now() - since).num_milliseconds().max(0) as u64;
        let done = elapsed >= self.settings.update_seconds * 1000;
        let mut seen = observe_machine(ctx, m, 0);
        seen.provider_id = Some(server);
        let mut obs = ClusterObservation::phase(if done {
            Phase::Complete
        } else {
            Phase::InProgress
        });
        obs.machines.insert(m.uuid, seen);
        Ok(if done {
            Progress::Done(obs)
        } else {
            Progress::Started(obs)
        })
    }

    fn federation_progress(&self) -> FederationProgress {
        if self.settings.federation_seconds == 0 {
            FederationProgress::Done
        } else {
            FederationProgress::Started
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::machine::{ContainerRuntime, MachineName, MachineStatus};
    use crate::domain::{ClusterId, NodeGroupId};

    fn v(text: &str) -> KubeVersion {
        KubeVersion::parse(text).expect("version")
    }

    fn machine(kubelet: &str) -> Machine {
        let mut spec = MachineSpec::default();
        spec.versions.kubelet = Some(v(kubelet));
        spec.os_image = Some("fedora-coreos-40".into());
        Machine {
            id: 1,
            uuid: MachineId::new(),
            name: MachineName::parse("workers-1").expect("name"),
            role: MachineRole::Worker,
            project_id: "p".into(),
            cluster_id: ClusterId::new(),
            nodegroup_id: NodeGroupId::new(),
            spec,
            status: MachineStatus::pending(),
            created_at: Utc::now(),
            updated_at: None,
        }
    }

    #[test]
    fn a_patch_release_is_in_place_anything_else_a_replacement() {
        let m = machine("v1.31.4");
        let with = |f: &dyn Fn(&mut MachineSpec)| {
            let mut next = m.spec.clone();
            f(&mut next);
            plan_change(&m, &next)
        };
        assert_eq!(
            with(&|s| s.versions.kubelet = Some(v("v1.31.6"))),
            ChangeMode::InPlace
        );
        assert_eq!(
            with(&|s| s.versions.kubelet = Some(v("v1.30.2"))),
            ChangeMode::Replace
        );
        assert_eq!(
            with(&|s| s.os_image = Some("fedora-coreos-41".into())),
            ChangeMode::Replace
        );
        assert_eq!(
            with(&|s| {
                s.container_runtime = Some(ContainerRuntime {
                    name: "cri-o".into(),
                    version: None,
                })
            }),
            ChangeMode::Replace
        );
        // A kubelet it never knew: the version it runs decides.
        let mut unknown = machine("v1.31.4");
        unknown.spec.versions.kubelet = None;
        unknown.status.versions.kubelet = Some(v("v1.31.4"));
        let mut next = unknown.spec.clone();
        next.versions.kubelet = Some(v("v1.31.9"));
        assert_eq!(plan_change(&unknown, &next), ChangeMode::InPlace);
        unknown.status.versions.kubelet = None;
        assert_eq!(plan_change(&unknown, &next), ChangeMode::Replace);
    }

    #[test]
    fn a_replacement_makes_the_next_server_and_keeps_it() {
        let mut m = machine("v1.31.4");
        let first = format!("fake://{}", m.uuid);
        assert_eq!(server_of(&m), first);
        assert_eq!(next_server(&m), format!("{first}/2"));
        m.status.provider_id = Some(format!("{first}/2"));
        assert_eq!(server_of(&m), format!("{first}/2"));
        assert_eq!(next_server(&m), format!("{first}/3"));
        m.status.provider_id = Some("openstack:///other".into());
        assert_eq!(server_of(&m), first, "a server the simulator never made");
    }

    #[test]
    fn the_configured_replacement_fails_each_time_it_is_asked_and_only_it() {
        let fake = FakeDriver::new(FakeDriverSection {
            fail_replacement: 2,
            ..FakeDriverSection::default()
        });
        let (a, b, c) = (machine("v1.31.4"), machine("v1.31.4"), machine("v1.31.4"));
        assert_eq!(fake.check_replacement(&a), Ok(()));
        let err = fake.check_replacement(&b).expect_err("the second");
        assert!(err.to_string().contains("fail_replacement = 2"), "{err}");
        assert!(!err.is_transient());
        assert_eq!(fake.check_replacement(&a), Ok(()), "asked again");
        assert!(fake.check_replacement(&b).is_err(), "and again");
        assert_eq!(fake.check_replacement(&c), Ok(()));
        let none = FakeDriver::new(FakeDriverSection::default());
        assert_eq!(none.check_replacement(&b), Ok(()));
    }

    #[test]
    fn drivers_without_machine_operations_refuse_with_their_name() {
        let m = machine("v1.31.4");
        let external = super::super::external::ExternalDriver;
        assert_eq!(
            external.plan_machine_change(&m, &m.spec),
            Err("The external driver cannot change machines.".to_string())
        );
        assert_eq!(
            external.check_machine_action(&m, MachineAction::Reboot),
            Err("The external driver cannot reboot machines.".to_string())
        );
    }
}
