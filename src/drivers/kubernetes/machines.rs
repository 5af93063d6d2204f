//! One machine's operations on Cluster API (KEP-3's Machine capabilities).
//!
//! Cluster API changes a node only by replacing it, and only per group: a MachineDeployment
//! rolls its Machines when its template's `version` or infrastructure template changes, the
//! KubeadmControlPlane when its `version` does. So:
//!
//! * a change of one machine's kubelet, image, flavor, container runtime, labels or taints is
//!   refused before anything changes, with the way to get it (change the node group);
//! * a worker is replaced new-first ([`KubernetesDriver::replace`]): its MachineDeployment
//!   grows by one (with the group's current templates), the new Machine runs, then the old
//!   one gets `cluster.x-k8s.io/delete-machine` and the MachineDeployment shrinks back;
//! * a master is not replaced one by one (a KubeadmControlPlane renews its machines all
//!   together, and a surge of one would make the etcd member count even): refused with that
//!   reason. A reboot, which Cluster API does not have, goes through the workload cluster
//!   ([`super::reboot`]).
//!
//! The replacement's progress lives on the management cluster, in annotations, so every call
//! reads where it is and takes the next step; a conductor restarted in the middle finds the
//! surge it asked for and never makes a second one. The old Machine carries [`SURGE_FOR`]
//! (the Fleetyard machine it is replaced for) from the moment the group grows; the new Machine
//! carries [`REPLACES`] (the old server's provider id) once claimed. The MachineDeployment's
//! replicas are always the node group's `node_count` plus the surges under way (old Machines
//! with [`SURGE_FOR`] and not yet marked for deletion), so repeating a step changes nothing.

use serde_json::{json, Value};

use crate::domain::cluster::NodeGroup;
use crate::domain::machine::{ChangeMode, KubeVersion, Machine, MachineRole, MachineSpec};
use crate::drivers::{
    ClusterContext, ClusterObservation, DriverError, DriverResult, MachineAction, Phase, Progress,
};

use super::capi::CapiVersion;
use super::render::{
    cluster_name, deployment_name, normalize_version, Overrides, Renderer, CAPI_CLUSTER_NAME_LABEL,
    CAPI_DEPLOYMENT_NAME_LABEL, DELETE_MACHINE,
};
use super::{status, KubernetesDriver};

/// On the Machine being replaced: the uuid of the Fleetyard machine it is replaced for.
pub const SURGE_FOR: &str = "fleetyard/surge-for";
/// On the Machine made for a replacement: the provider id of the server it replaces.
pub const REPLACES: &str = "fleetyard/replaces";

const VERSION_PER_GROUP: &str = "Cluster API sets versions per MachineDeployment, not per Machine: upgrade the node group instead (openstack coe cluster upgrade <cluster> <template> --nodegroup <group>), and Cluster API replaces its machines.";
const CONTROL_PLANE_VERSION: &str = "Cluster API sets the control plane's version on its KubeadmControlPlane, for every master at once: upgrade the master node group instead (openstack coe cluster upgrade).";
const IMAGE_PER_GROUP: &str = "Cluster API sets the image and flavor per MachineDeployment (its machine template), not per Machine: change the node group's image or flavor instead, and its machines are replaced one by one.";
const RUNTIME_IN_IMAGE: &str = "Cluster API takes the container runtime from the node image: change the node group's image instead.";
const METADATA_PER_GROUP: &str = "Cluster API sets node labels and taints per MachineDeployment (its KubeadmConfigTemplate), not per Machine: change the node group's instead.";
const NO_MASTER_REPLACE: &str = "Cluster API cannot replace one control plane machine: a KubeadmControlPlane renews its machines all together, and a surge of one would make the etcd member count even. Upgrade the master node group to renew them.";
const NO_IN_PLACE: &str =
    "The kubernetes driver changes nothing on a node in place: Cluster API replaces machines.";

/// How the kubernetes driver would apply `next` to `m`: only the same spec again (a failed
/// worker's way forward) is accepted, by replacement; every change is Cluster API's per group.
pub fn plan_change(m: &Machine, next: &MachineSpec) -> Result<ChangeMode, String> {
    let now = &m.spec;
    if next.versions.control_plane != now.versions.control_plane {
        return Err(CONTROL_PLANE_VERSION.into());
    }
    if next.versions.kubelet != now.versions.kubelet {
        return Err(match m.role {
            MachineRole::Master => CONTROL_PLANE_VERSION,
            MachineRole::Worker => VERSION_PER_GROUP,
        }
        .into());
    }
    if next.os_image != now.os_image || next.flavor != now.flavor {
        return Err(IMAGE_PER_GROUP.into());
    }
    if next.container_runtime != now.container_runtime {
        return Err(RUNTIME_IN_IMAGE.into());
    }
    if next.labels != now.labels
        || next.taints != now.taints
        || next.provider_config != now.provider_config
    {
        return Err(METADATA_PER_GROUP.into());
    }
    check_action(m, MachineAction::Replace).map(|()| ChangeMode::Replace)
}

/// Whether the kubernetes driver can replace or reboot `m`, or why not. A reboot (workers and
/// masters, see [`super::reboot`]) needs the machine's node.
pub fn check_action(m: &Machine, action: MachineAction) -> Result<(), String> {
    match (action, m.role) {
        (MachineAction::Reboot, _)
            if m.status.node_ref.is_none() && m.status.provider_id.is_none() =>
        {
            Err(format!(
                "The machine {} has no node yet, so there is nothing to reboot.",
                m.name
            ))
        }
        (MachineAction::Reboot, _) => Ok(()),
        (MachineAction::Replace, MachineRole::Master) => Err(NO_MASTER_REPLACE.into()),
        (MachineAction::Replace, MachineRole::Worker) => Ok(()),
    }
}

/// The version a MachineDeployment running `live` makes the replacement of `m` at: the kubelet
/// `m` names when it is newer (a roll of the node group to a version respecifies each machine
/// before it is replaced), else the one it runs; a machine whose spec lags never moves the
/// group's template back.
pub fn new_version(m: &Machine, live: Option<&str>) -> Option<String> {
    let live_version = live.and_then(|v| v.trim_start_matches('v').parse::<KubeVersion>().ok());
    let key = |k: &KubeVersion| (k.major(), k.minor(), k.patch());
    match (&m.spec.versions.kubelet, live_version) {
        (Some(k), Some(l)) if key(k) > key(&l) => Some(normalize_version(&k.to_string())),
        (Some(k), None) if live.is_none() => Some(normalize_version(&k.to_string())),
        _ => live.map(str::to_string),
    }
}

/// The machine's update as planned: only ever a replacement.
pub fn in_place_refused() -> DriverError {
    DriverError::Permanent(NO_IN_PLACE.into())
}

fn annotation<'a>(m: &'a Value, key: &str) -> Option<&'a str> {
    m["metadata"]["annotations"][key].as_str()
}

fn name_of(m: &Value) -> &str {
    m["metadata"]["name"].as_str().unwrap_or_default()
}

fn provider_id(m: &Value) -> Option<&str> {
    m["spec"]["providerID"].as_str().filter(|p| !p.is_empty())
}

/// A Machine Cluster API is removing or was told to remove.
fn going(m: &Value) -> bool {
    annotation(m, DELETE_MACHINE).is_some() || m["metadata"]["deletionTimestamp"].is_string()
}

/// A Machine with its server and its node.
fn running(m: &Value) -> bool {
    m["status"]["phase"].as_str() == Some("Running")
        && m["status"]["nodeRef"]["name"].is_string()
        && provider_id(m).is_some()
}

/// The MachineDeployment's replicas while `machines` are its Machines: the group's count plus
/// the surges under way.
fn replicas_for(node_count: i32, machines: &[Value]) -> i64 {
    let surges = machines
        .iter()
        .filter(|m| annotation(m, SURGE_FOR).is_some() && !going(m))
        .count();
    i64::from(node_count.max(0)) + surges as i64
}

impl KubernetesDriver {
    /// Replaces a worker machine, new first; one step per call (see the module's text).
    pub(super) async fn replace(
        &self,
        ctx: &ClusterContext,
        m: &Machine,
    ) -> DriverResult<Progress> {
        check_action(m, MachineAction::Replace).map_err(DriverError::Permanent)?;
        let ng = ctx
            .nodegroups
            .iter()
            .find(|g| g.uuid == m.nodegroup_id)
            .ok_or_else(|| {
                DriverError::Permanent(format!(
                    "The node group of machine {} is not part of cluster {}.",
                    m.name, ctx.cluster.name
                ))
            })?;
        let Some(server) = m.status.provider_id.clone() else {
            return Err(DriverError::Permanent(format!(
                "The machine {} has no server yet (Cluster API has not made it), so there is nothing to replace.",
                m.name
            )));
        };
        let mgmt = self.management().await?;
        let ns = Some(self.ns());
        let cluster = cluster_name(&ctx.cluster.uuid);
        let md_name = deployment_name(&cluster, ng);
        let Some(md) = mgmt
            .get(self.capi.core(), "MachineDeployment", ns, &md_name)
            .await?
        else {
            return Err(DriverError::Permanent(format!(
                "The MachineDeployment {md_name} of node group {} is missing from the management cluster.",
                ng.name
            )));
        };
        let selector =
            format!("{CAPI_CLUSTER_NAME_LABEL}={cluster},{CAPI_DEPLOYMENT_NAME_LABEL}={md_name}");
        let mut machines = mgmt
            .list(self.capi.core(), "Machine", ns, &selector)
            .await?;
        let mut new = machines
            .iter()
            .position(|x| annotation(x, REPLACES) == Some(server.as_str()) && !going(x));
        let old = machines
            .iter()
            .position(|x| provider_id(x) == Some(server.as_str()));

        let Some(old) = old else {
            // The old Machine is gone: an earlier call finished the replacement.
            return match new {
                Some(n) => Ok(self.replaced(m, &machines[n])),
                None => Err(DriverError::Permanent(format!(
                    "The Cluster API Machine of machine {} (server {server}) is no longer in MachineDeployment {md_name}.",
                    m.name
                ))),
            };
        };
        if new.is_none() {
            // The new machine is made from the group's current flavor and image.
            self.refresh_templates(ctx, ng, m, &md).await?;
        }
        if annotation(&machines[old], SURGE_FOR).is_none() && !going(&machines[old]) {
            let patch = json!({"metadata": {"annotations": {SURGE_FOR: m.uuid.to_string()}}});
            machines[old] = self.patch_machine(name_of(&machines[old]), &patch).await?;
        }
        if new.is_none() {
            new = self.claim(ctx, ng, &server, &mut machines, old).await?;
        }
        if let Some(n) = new {
            if let Some(why) = status::failure(&machines[n], "the replacement machine") {
                self.give_up(ng, &md, &mut machines, old, n).await?;
                return Err(DriverError::Permanent(why));
            }
            if running(&machines[n]) {
                if annotation(&machines[old], DELETE_MACHINE).is_none() {
                    let patch = json!({"metadata": {"annotations": {DELETE_MACHINE: "yes"}}});
                    machines[old] = self.patch_machine(name_of(&machines[old]), &patch).await?;
                }
                self.set_replicas(&md, replicas_for(ng.node_count, &machines))
                    .await?;
                return Ok(self.replaced(m, &machines[n]));
            }
        }
        self.set_replicas(&md, replicas_for(ng.node_count, &machines))
            .await?;
        let mut obs = ClusterObservation::phase(Phase::InProgress);
        obs.stack_id = Some(cluster);
        Ok(Progress::Started(obs))
    }

    /// The machine replaced: reported with its new Machine's server, node and addresses.
    fn replaced(&self, m: &Machine, new: &Value) -> Progress {
        let mut obs = ClusterObservation::phase(Phase::Complete);
        obs.machines.insert(m.uuid, status::read_back(m, new, None));
        Progress::Done(obs)
    }

    /// Claims the newest Machine of the group that no Fleetyard machine, surge or deletion
    /// accounts for, as the replacement of `server`.
    async fn claim(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        server: &str,
        machines: &mut [Value],
        old: usize,
    ) -> DriverResult<Option<usize>> {
        let known: Vec<&str> = status::rows_of(ctx, ng)
            .iter()
            .filter_map(|r| r.status.provider_id.as_deref())
            .collect();
        let candidate = machines
            .iter()
            .enumerate()
            .filter(|(i, x)| {
                *i != old
                    && !going(x)
                    && annotation(x, SURGE_FOR).is_none()
                    && annotation(x, REPLACES).is_none()
                    && provider_id(x).is_none_or(|p| !known.contains(&p))
            })
            .max_by(|(_, a), (_, b)| {
                let key = |m: &Value| {
                    (
                        m["metadata"]["creationTimestamp"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        name_of(m).to_string(),
                    )
                };
                key(a).cmp(&key(b))
            })
            .map(|(i, _)| i);
        let Some(i) = candidate else {
            return Ok(None);
        };
        let patch = json!({"metadata": {"annotations": {REPLACES: server}}});
        machines[i] = self.patch_machine(name_of(&machines[i]), &patch).await?;
        Ok(Some(i))
    }

    /// A replacement that failed: its Machine goes, the old one stays, the surge is undone.
    async fn give_up(
        &self,
        ng: &NodeGroup,
        md: &Value,
        machines: &mut [Value],
        old: usize,
        new: usize,
    ) -> DriverResult<()> {
        let patch = json!({"metadata": {"annotations": {DELETE_MACHINE: "yes"}}});
        machines[new] = self.patch_machine(name_of(&machines[new]), &patch).await?;
        let patch = json!({"metadata": {"annotations": {SURGE_FOR: null}}});
        machines[old] = self.patch_machine(name_of(&machines[old]), &patch).await?;
        self.set_replicas(md, replicas_for(ng.node_count, machines))
            .await
    }

    async fn patch_machine(&self, name: &str, patch: &Value) -> DriverResult<Value> {
        let mgmt = self.management().await?;
        mgmt.merge_patch(self.capi.core(), "Machine", Some(self.ns()), name, patch)
            .await?
            .ok_or_else(|| {
                DriverError::Transient(format!(
                    "The Machine {name} disappeared from the management cluster while being replaced; it will be retried."
                ))
            })
    }

    async fn set_replicas(&self, md: &Value, replicas: i64) -> DriverResult<()> {
        if md["spec"]["replicas"].as_i64() == Some(replicas) {
            return Ok(());
        }
        let patch = json!({"spec": {"replicas": replicas}});
        let name = name_of(md);
        self.management()
            .await?
            .merge_patch(
                self.capi.core(),
                "MachineDeployment",
                Some(self.ns()),
                name,
                &patch,
            )
            .await?
            .map(|_| ())
            .ok_or_else(|| {
                DriverError::Permanent(format!(
                    "The MachineDeployment {name} disappeared from the management cluster."
                ))
            })
    }

    /// Points the MachineDeployment at the group's current templates (its flavor, image, node
    /// labels and taints) and at the version its new machines run ([`new_version`]) when they
    /// differ from the ones it uses, with the `OnDelete` strategy: Cluster API then makes new
    /// machines (this replacement's surge) from the new templates and leaves the others until
    /// they are replaced in turn.
    async fn refresh_templates(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        m: &Machine,
        md: &Value,
    ) -> DriverResult<()> {
        let live = &md["spec"]["template"]["spec"];
        let overrides = Overrides {
            version: new_version(m, live["version"].as_str()),
            ..Overrides::default()
        };
        let mut objects = Renderer::new(&self.settings, ctx)
            .worker(ng, &overrides, None)
            .map_err(DriverError::Permanent)?;
        let Some(rendered) = objects.last_mut() else {
            return Ok(());
        };
        let wanted = &rendered["spec"]["template"]["spec"];
        let same = |path: &[&str]| {
            let pick = |v: &Value| path.iter().fold(v.clone(), |v, k| v[*k].clone());
            pick(wanted) == pick(live)
        };
        if same(&["infrastructureRef", "name"])
            && same(&["bootstrap", "configRef", "name"])
            && same(&["version"])
        {
            return Ok(());
        }
        rendered["spec"]["replicas"] = md["spec"]["replicas"].clone();
        let on_delete = json!({"type": "OnDelete"});
        match self.capi {
            CapiVersion::V1beta1 => rendered["spec"]["strategy"] = on_delete,
            CapiVersion::V1beta2 => rendered["spec"]["rollout"]["strategy"] = on_delete,
        }
        self.apply_all(&objects).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::machine::{KubeVersion, MachineName, MachineStatus};
    use crate::domain::{ClusterId, MachineId, NodeGroupId};

    fn machine(role: MachineRole) -> Machine {
        Machine {
            id: 1,
            uuid: MachineId::new(),
            name: MachineName::parse("workers-1").expect("name"),
            role,
            project_id: "p".into(),
            cluster_id: ClusterId::new(),
            nodegroup_id: NodeGroupId::new(),
            spec: MachineSpec::default(),
            status: MachineStatus::pending(),
            created_at: chrono::Utc::now(),
            updated_at: None,
        }
    }

    #[test]
    fn every_change_of_one_machine_is_refused_with_the_group_to_change() {
        let m = machine(MachineRole::Worker);
        let mut next = m.spec.clone();
        next.versions.kubelet = KubeVersion::parse("v1.31.4").ok();
        assert_eq!(plan_change(&m, &next), Err(VERSION_PER_GROUP.to_string()));
        let mut next = m.spec.clone();
        next.flavor = Some("m1.xlarge".into());
        assert_eq!(plan_change(&m, &next), Err(IMAGE_PER_GROUP.to_string()));
        let mut next = m.spec.clone();
        next.labels.insert("tier".into(), "gpu".into());
        assert_eq!(plan_change(&m, &next), Err(METADATA_PER_GROUP.to_string()));
        assert_eq!(plan_change(&m, &m.spec), Ok(ChangeMode::Replace));
        let master = machine(MachineRole::Master);
        assert_eq!(
            plan_change(&master, &master.spec),
            Err(NO_MASTER_REPLACE.to_string())
        );
    }

    #[test]
    fn a_replacement_runs_the_newer_of_the_machines_kubelet_and_the_groups_version() {
        let mut m = machine(MachineRole::Worker);
        assert_eq!(
            new_version(&m, Some("v1.30.2")).as_deref(),
            Some("v1.30.2"),
            "no kubelet named: the version the group runs"
        );
        m.spec.versions.kubelet = KubeVersion::parse("v1.31.4").ok();
        assert_eq!(new_version(&m, Some("v1.30.2")).as_deref(), Some("v1.31.4"));
        assert_eq!(new_version(&m, None).as_deref(), Some("v1.31.4"));
        m.spec.versions.kubelet = KubeVersion::parse("v1.30.1").ok();
        assert_eq!(
            new_version(&m, Some("v1.30.2")).as_deref(),
            Some("v1.30.2"),
            "a lagging spec never moves the template back"
        );
        assert_eq!(new_version(&m, Some("v1.30.1")).as_deref(), Some("v1.30.1"));
    }

    #[test]
    fn replicas_count_the_surges_not_yet_marked_for_deletion() {
        let plain = json!({"metadata": {"name": "a"}});
        let surging = json!({"metadata": {"name": "b", "annotations": {SURGE_FOR: "x"}}});
        let done = json!({"metadata": {"name": "c", "annotations": {SURGE_FOR: "y", DELETE_MACHINE: "yes"}}});
        assert_eq!(replicas_for(2, std::slice::from_ref(&plain)), 2);
        assert_eq!(replicas_for(2, &[plain, surging, done]), 3);
    }
}
