//! The master node group's rolling replacement (a flavor or image change) with Cluster API.
//!
//! A KubeadmControlPlane renews its machines together, so the driver hands it the whole group
//! rather than replacing masters one by one: it applies an OpenStackMachineTemplate rendered
//! from the group's current flavor and image (named by the hash of its spec, so a retry applies
//! the same one and never makes a second), points the control plane's machine template at it
//! (`v1beta1` `spec.machineTemplate.infrastructureRef`, `v1beta2`
//! `spec.machineTemplate.spec.infrastructureRef`) with a rolling update of `maxSurge` 1 (the new
//! machine before the old one goes; `v1beta1` `spec.rolloutStrategy`, `v1beta2`
//! `spec.rollout.strategy`), and follows its status until every replica is up to date and
//! ready. The control plane's Machines are then read back: each master that was being rolled
//! gets one of the new Machines (its server, node, addresses), each exactly once.
//!
//! The progress lives on the management cluster: the control plane's machine template says
//! where the roll goes, its status how far it is, and [`ROLL_STARTED`] on the
//! KubeadmControlPlane when it began. A conductor restarted in the middle, or another
//! conductor, reads the same and goes on. A failed Machine or control plane, or a roll-out
//! taking longer than the cluster's create timeout, ends the roll with Cluster API's reason
//! (and [`ROLL_STARTED`] removed, so that updating the group again resumes with a new timer).

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use crate::domain::cluster::NodeGroup;
use crate::domain::machine::{KubeVersion, Machine};
use crate::drivers::{
    ClusterContext, ClusterObservation, DriverError, DriverResult, Phase, Progress,
};

use super::capi::CapiVersion;
use super::render::{
    cluster_name, control_plane_name, object_name, Overrides, Renderer, CAPI_CLUSTER_NAME_LABEL,
};
use super::{status, KubernetesDriver};

/// On the KubeadmControlPlane while a roll of the master group is under way: when it began
/// (RFC 3339).
pub const ROLL_STARTED: &str = "fleetyard/roll-started";

/// The minutes a roll-out may take when the cluster names no create timeout.
const DEFAULT_TIMEOUT_MINUTES: i64 = 60;

/// The `(machine template reference, roll-out strategy)` of a KubeadmControlPlane in `capi`'s
/// shape.
fn rollout_fields(capi: CapiVersion, kcp: &Value) -> (&Value, &Value) {
    let spec = &kcp["spec"];
    match capi {
        CapiVersion::V1beta1 => (
            &spec["machineTemplate"]["infrastructureRef"],
            &spec["rolloutStrategy"],
        ),
        CapiVersion::V1beta2 => (
            &spec["machineTemplate"]["spec"]["infrastructureRef"],
            &spec["rollout"]["strategy"],
        ),
    }
}

/// The merge patch setting the machine template reference and the strategy, in `capi`'s shape.
fn rollout_patch(capi: CapiVersion, reference: &Value, strategy: &Value) -> Value {
    match capi {
        CapiVersion::V1beta1 => json!({"spec": {
            "machineTemplate": {"infrastructureRef": reference},
            "rolloutStrategy": strategy,
        }}),
        CapiVersion::V1beta2 => json!({"spec": {
            "machineTemplate": {"spec": {"infrastructureRef": reference}},
            "rollout": {"strategy": strategy},
        }}),
    }
}

/// The metadata setting (or, with `None`, removing) [`ROLL_STARTED`].
fn timer_patch(at: Option<DateTime<Utc>>) -> Value {
    json!({"annotations": {ROLL_STARTED: at.map(|t| t.to_rfc3339())}})
}

fn text(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// A control plane Machine that has its server and its node, and is not going.
fn serving(m: &Value) -> bool {
    m["status"]["phase"].as_str() == Some("Running")
        && text(&m["status"]["nodeRef"]["name"]).is_some()
        && text(&m["spec"]["providerID"]).is_some()
        && !m["metadata"]["deletionTimestamp"].is_string()
}

/// The new Machines for `rolling` (in id order): the serving control plane Machines whose
/// server no other master holds, oldest first; `None` until there is one for each.
fn new_machines<'a>(
    rolling: &[Machine],
    others: &[&Machine],
    machines: &'a [Value],
) -> Option<Vec<&'a Value>> {
    let held: Vec<&str> = others
        .iter()
        .filter_map(|m| m.status.provider_id.as_deref())
        .collect();
    let mut fresh: Vec<&Value> = machines
        .iter()
        .filter(|m| status::is_control_plane_machine(m) && serving(m))
        .filter(|m| text(&m["spec"]["providerID"]).is_some_and(|p| !held.contains(&p)))
        .collect();
    fresh.sort_by_key(|m| {
        (
            m["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            m["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    });
    (fresh.len() >= rolling.len()).then_some(fresh)
}

impl KubernetesDriver {
    /// One step of the master group's roll to its current flavor and image (see the module's
    /// text): `Started` while Cluster API rolls, `Done` with every machine of `rolling` read
    /// back from its new Machine.
    pub(super) async fn roll_control_plane(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        rolling: &[Machine],
    ) -> DriverResult<Progress> {
        if !ng.is_master() {
            return Err(DriverError::Permanent(format!(
                "The node group {} is not the control plane: its machines are replaced one by one.",
                ng.name
            )));
        }
        let mgmt = self.management().await?;
        let ns = Some(self.ns());
        let cluster = cluster_name(&ctx.cluster.uuid);
        let kcp_name = control_plane_name(&cluster);
        let api = self.capi.control_plane();
        let Some(mut kcp) = mgmt.get(api, "KubeadmControlPlane", ns, &kcp_name).await? else {
            return Err(DriverError::Permanent(format!(
                "The KubeadmControlPlane {kcp_name} of cluster {} is missing from the management cluster.",
                ctx.cluster.name
            )));
        };
        // The machine template of the group's flavor and image, at the version the control
        // plane runs, new machines first.
        let overrides = Overrides {
            version: text(&kcp["spec"]["version"]).map(str::to_string),
            image: None,
            max_surge: Some(1),
        };
        let rendered = Renderer::new(&self.settings, ctx)
            .control_plane(ng, &overrides)
            .map_err(DriverError::Permanent)?;
        let [template, wanted] = rendered.as_slice() else {
            return Err(DriverError::Permanent(
                "The control plane renders as its machine template and KubeadmControlPlane.".into(),
            ));
        };
        let (reference, strategy) = rollout_fields(self.capi, wanted);
        let (live_ref, live_strategy) = rollout_fields(self.capi, &kcp);
        let pointed = text(&live_ref["name"]) == Some(object_name(template));
        let mut started = kcp["metadata"]["annotations"][ROLL_STARTED]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        let timer = started.is_some() || !pointed || live_strategy != strategy;
        if !pointed || live_strategy != strategy {
            mgmt.apply(template).await?;
            let now = Utc::now();
            let mut patch = rollout_patch(self.capi, reference, strategy);
            patch["metadata"] = timer_patch(Some(now));
            kcp = self.patch_control_plane(&kcp_name, &patch).await?;
            started = Some(now);
        }
        let selector = format!("{CAPI_CLUSTER_NAME_LABEL}={cluster}");
        let machines = mgmt
            .list(self.capi.core(), "Machine", ns, &selector)
            .await?;
        if let Some(why) = self.roll_failure(ctx, &kcp, &machines, started) {
            self.patch_control_plane(&kcp_name, &json!({"metadata": timer_patch(None)}))
                .await?;
            return Err(DriverError::Permanent(why));
        }
        let others: Vec<&Machine> = status::rows_of(ctx, ng)
            .into_iter()
            .filter(|r| rolling.iter().all(|m| m.uuid != r.uuid))
            .collect();
        let fresh = new_machines(rolling, &others, &machines);
        let (true, Some(fresh)) = (status::settled(&kcp), fresh) else {
            if !timer {
                // Resumed after a failure: the roll-out gets its time again.
                let patch = json!({"metadata": timer_patch(Some(Utc::now()))});
                self.patch_control_plane(&kcp_name, &patch).await?;
            }
            let mut obs = ClusterObservation::phase(Phase::InProgress);
            obs.stack_id = Some(cluster);
            return Ok(Progress::Started(obs));
        };
        if timer {
            self.patch_control_plane(&kcp_name, &json!({"metadata": timer_patch(None)}))
                .await?;
        }
        let version = text(&kcp["spec"]["version"]).and_then(|v| KubeVersion::parse(v).ok());
        let mut obs = ClusterObservation::phase(Phase::Complete);
        for (m, new) in rolling.iter().zip(fresh) {
            obs.machines
                .insert(m.uuid, status::read_back(m, new, version.as_ref()));
        }
        Ok(Progress::Done(obs))
    }

    /// Why the roll-out cannot finish: the control plane or one of its Machines failed, or it
    /// has taken longer than the cluster's create timeout.
    fn roll_failure(
        &self,
        ctx: &ClusterContext,
        kcp: &Value,
        machines: &[Value],
        started: Option<DateTime<Utc>>,
    ) -> Option<String> {
        if let Some(why) = status::failure(kcp, "the control plane") {
            return Some(why);
        }
        let failed = machines
            .iter()
            .filter(|m| status::is_control_plane_machine(m))
            .filter(|m| !m["metadata"]["deletionTimestamp"].is_string())
            .find_map(|m| {
                let name = m["metadata"]["name"].as_str().unwrap_or_default();
                status::failure(m, &format!("the control plane machine {name}"))
            });
        if failed.is_some() {
            return failed;
        }
        let minutes = ctx
            .cluster
            .create_timeout
            .map_or(DEFAULT_TIMEOUT_MINUTES, i64::from)
            .max(1);
        let since = started?;
        (Utc::now() - since > Duration::minutes(minutes) && !status::settled(kcp)).then(|| {
            format!(
                "The KubeadmControlPlane has not rolled its machines onto the new machine template in {minutes} minutes (the cluster's create timeout): the roll-out is stuck."
            )
        })
    }

    async fn patch_control_plane(&self, name: &str, patch: &Value) -> DriverResult<Value> {
        self.management()
            .await?
            .merge_patch(
                self.capi.control_plane(),
                "KubeadmControlPlane",
                Some(self.ns()),
                name,
                patch,
            )
            .await?
            .ok_or_else(|| {
                DriverError::Permanent(format!(
                    "The KubeadmControlPlane {name} disappeared from the management cluster."
                ))
            })
    }
}
