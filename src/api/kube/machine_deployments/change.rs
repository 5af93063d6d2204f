//! The node group operations behind a `MachineDeployment` write, each what `/v1` commits for
//! it, checked whole before anything is written:
//!
//! * `spec.replicas` is a resize of the group (`POST /v1/clusters/{c}/actions/resize` with the
//!   group): the same rules (a master group only where the driver resizes masters, a worker
//!   group within its bounds, the cluster in a state that takes it) and the same writes (the
//!   cluster and group `UPDATE_IN_PROGRESS` with the new count, the `cluster.resize` job and
//!   its notification).
//! * `spec.template.spec.flavor`, `.osImage` and `.versions.kubelet` are the group's roll
//!   (`PATCH /v1/clusters/{c}/nodegroups/{ng}` with `/flavor_id`, `/image_id`,
//!   `/max_batch_size`), `maxSurge` its batch (the group's kept one when the write states
//!   none): the group's new flavor, image and version, the
//!   group and cluster `UPDATE_IN_PROGRESS`, a `nodegroup.roll` job (carrying the kubelet of a
//!   version change) and the group's notification. A kubelet version is held to the skew
//!   policy first (never newer than the control plane, at most three minors older, the control
//!   plane first); the master group's version is the control plane's, changed by a cluster
//!   upgrade. The same spec again after `UPDATE_FAILED` resumes the roll.
//!
//! A group already being worked on is a 409; the driver's refusal and the rules' are a 422 on
//! the field that asked.

use crate::api::kube::status::{Cause, KubeError, MACHINE_DEPLOYMENTS};
use crate::api::v1::cluster_actions::{check_resize, resize_writes, NodeCountChange};
use crate::api::v1::lookup::{cluster_target, driver_for, nodegroups_of, template_of};
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::{cluster_accepts_nodegroup_work, nodegroup_change_allowed};
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::job::JobPayload;
use crate::domain::machine::roll::{self, RollState, RollTarget};
use crate::domain::machine::{check_nodegroup_version, KubeVersion, Machine};
use crate::domain::status::Verb;
use crate::drivers::MachineAction;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{NodeGroupEntry, Write};

use super::diff::Change;
use super::object::group_version;

/// What a write does: its writes (none when nothing changes) and the group as it leaves it.
pub(super) struct Planned {
    pub writes: Vec<Write>,
    pub nodegroup: NodeGroup,
}

/// A refusal of the rules, as the face words it: a 400 is a 422 on `field`, the rest as is.
fn refusal(name: &str, field: &str, err: crate::api::http::error::ApiError) -> KubeError {
    match err {
        crate::api::http::error::ApiError::BadRequest(message) => invalid(name, field, &message),
        other => other.into(),
    }
}

fn invalid(name: &str, field: &str, message: &str) -> KubeError {
    KubeError::invalid(
        &MACHINE_DEPLOYMENTS,
        name,
        vec![Cause::invalid_unquoted(field, message)],
    )
}

/// 409 for a group in a state that takes no change now.
fn group_busy(ng: &NodeGroup) -> Result<(), KubeError> {
    if ng.status.is_in_progress() || !nodegroup_change_allowed(ng.status) {
        return Err(KubeError::ConflictMessage(format!(
            "Operation cannot be fulfilled on {} {}: node group {} is {}; try again once it \
             is done.",
            MACHINE_DEPLOYMENTS.qualified(),
            crate::api::kube::status::quote(&ng.name),
            ng.name,
            ng.status
        )));
    }
    Ok(())
}

/// 409 for a group, or a cluster, in a state that takes no roll now (a roll is a node group
/// update, as `/v1`'s).
fn busy(ng: &NodeGroup, c: &Cluster) -> Result<(), KubeError> {
    group_busy(ng)?;
    if !cluster_accepts_nodegroup_work(c.status, false) {
        return Err(KubeError::ConflictMessage(format!(
            "Updating a cluster when status is \"{}\" is not supported.",
            c.status
        )));
    }
    Ok(())
}

/// The control plane's version: the one the driver reported, else the `kube_tag` the cluster
/// or its template names.
fn control_plane(
    c: &Cluster,
    template_labels: &crate::domain::labels::Labels,
) -> Option<KubeVersion> {
    c.coe_version
        .as_deref()
        .and_then(|v| KubeVersion::parse(v).ok())
        .or_else(|| {
            c.labels
                .get("kube_tag")
                .and_then(|t| KubeVersion::parse(t).ok())
        })
        .or_else(|| {
            template_labels
                .get("kube_tag")
                .and_then(|t| KubeVersion::parse(t).ok())
        })
}

/// The kubelet a resumed roll carries: the group's version when some machine's spec already
/// names it (a version roll began), else none.
fn resumed_kubelet(ng: &NodeGroup, machines: &[Machine]) -> Option<KubeVersion> {
    let v = group_version(ng)?;
    machines
        .iter()
        .any(|m| m.spec.versions.kubelet.as_ref() == Some(&v))
        .then_some(v)
}

/// The writes of `change` to the group of `e` (object `name`) by `ctx`, checked whole.
pub(super) async fn plan(
    state: &AppState,
    ctx: &RequestContext,
    e: &NodeGroupEntry,
    name: &str,
    change: &Change,
) -> Result<Planned, KubeError> {
    let ng = &e.nodegroup;
    let c = state
        .store
        .find_cluster(&ng.cluster_id)
        .await?
        .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, name))?;
    ctx.authorize(
        super::super::access::DEPLOYMENT_UPDATE.rule,
        &cluster_target(&c),
    )?;
    if change.replicas.is_some() && change.rolls() {
        return Err(invalid(
            name,
            "spec.replicas",
            "a change of spec.replicas resizes the node group and a change of \
             spec.template rolls its machines: send them in two writes",
        ));
    }
    if let Some(n) = change.replicas {
        if n > state.node_limit() {
            return Err(invalid(
                name,
                "spec.replicas",
                &format!("must be at most {}", state.node_limit()),
            ));
        }
        return resize(state, ctx, (&c, ng), name, n).await;
    }
    roll_plan(state, ctx, (&c, ng), name, change, e.max_surge).await
}

async fn resize(
    state: &AppState,
    ctx: &RequestContext,
    (c, ng): (&Cluster, &NodeGroup),
    name: &str,
    n: i32,
) -> Result<Planned, KubeError> {
    // The cluster's state is the resize's own rule (`check_resize`).
    group_busy(ng)?;
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    check_resize(c, ng, n, driver.as_ref()).map_err(|e| refusal(name, "spec.replicas", e))?;
    let ngs = nodegroups_of(state, c).await?;
    let mut next = ng.clone();
    next.node_count = n;
    next.begin(Verb::Update);
    let change = NodeCountChange {
        nodegroup: ng,
        node_count: n,
        nodes_to_remove: Vec::new(),
        remove: Vec::new(),
    };
    Ok(Planned {
        writes: resize_writes(state, ctx, c, &ngs, change, driver.name()),
        nodegroup: next,
    })
}

async fn roll_plan(
    state: &AppState,
    ctx: &RequestContext,
    (c, ng): (&Cluster, &NodeGroup),
    name: &str,
    change: &Change,
    kept_surge: Option<i32>,
) -> Result<Planned, KubeError> {
    let mut next = ng.clone();
    if let Some(f) = &change.flavor {
        next.flavor_id = Some(f.clone());
    }
    if let Some(i) = &change.image {
        next.image_id = Some(i.clone());
    }
    let template = template_of(state, c).await?;
    if let Some(k) = &change.kubelet {
        let field = "spec.template.spec.versions.kubelet";
        if ng.is_master() {
            return Err(invalid(
                name,
                field,
                "the master node group runs the control plane: its version changes with a \
                 cluster upgrade (POST /v1/clusters/{cluster}/actions/upgrade), before the \
                 worker groups follow it",
            ));
        }
        let cp = control_plane(c, &template.spec.labels).ok_or_else(|| {
            invalid(
                name,
                field,
                "the control plane's version is not known yet, so the version-skew rules \
                 cannot be checked; try again once the cluster reports it",
            )
        })?;
        check_nodegroup_version(&ng.name, k, &cp)
            .map_err(|e| invalid(name, field, &e.to_string()))?;
        next.version = Some(k.to_string());
    }
    let machines = state.store.nodegroup_machines(&ng.uuid).await?;
    let kubelet = change
        .kubelet
        .clone()
        .or_else(|| resumed_kubelet(ng, &machines));
    let target = RollTarget::of(&next).with_kubelet(kubelet.clone());
    let left = machines.iter().any(|m| {
        matches!(
            roll::state(m, &target),
            RollState::Left | RollState::InFlight
        )
    });
    // The same spec again: nothing to do, unless a stopped roll has machines left.
    let resumes = ng.status == crate::domain::status::ClusterStatus::UpdateFailed && left;
    if next == *ng && !resumes {
        return Ok(Planned {
            writes: Vec::new(),
            nodegroup: ng.clone(),
        });
    }
    busy(ng, c)?;
    let driver = driver_for(state, &template)?;
    if let Some(m) = machines.first().filter(|_| !driver.rolls_whole_group(ng)) {
        driver
            .check_machine_action(m, MachineAction::Replace)
            .map_err(|reason| invalid(name, "spec.template.spec", &reason))?;
    }
    next.begin(Verb::Update);
    let mut cluster = c.clone();
    cluster.begin(Verb::Update);
    let payload = JobPayload::NodegroupRoll {
        nodegroup: ng.uuid,
        max_batch_size: change.max_surge.or(kept_surge).unwrap_or(1),
        kubelet,
    };
    // Each claim of a roll's job is a step of the roll, as `/v1`'s roll's job.
    let mut job = state.job(payload, c.uuid, driver.name());
    job.max_attempts = 0;
    let writes = vec![
        Write::update_cluster(&cluster),
        Write::update_nodegroup(&next),
        Write::job(job),
        Write::event(events::nodegroup_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Pending,
            &next,
            Some(&initiator(ctx)),
        )),
    ];
    Ok(Planned {
        writes,
        nodegroup: next,
    })
}
