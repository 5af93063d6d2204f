//! The delete of one machine: `DELETE /v1/clusters/{cluster_ident}/machines/{machine_ident}`
//! (microversion 1.19) and `kubectl delete machine` make the same writes. That node goes and
//! its node group shrinks by one, never a different node: it is a resize of the group that
//! names the machine, with the machine's own delete notification.

use super::cluster_actions::{check_resize, resize_writes, NodeCountChange};
use super::lookup::{driver_for, nodegroups_of, template_of};
use crate::api::http::error::ApiError;
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::Cluster;
use crate::domain::machine::{Machine, MachinePhase};
use crate::notify::events::{self, Action, Outcome};
use crate::store::Write;

/// The writes that delete machine `m` of cluster `c`: refused with Magnum's 409 when it is
/// already being deleted or the cluster is in a state no resize is accepted in, and with
/// the resize's 400 when its group may not shrink (its `min_node_count`, or a master group
/// of a driver that does not resize masters).
pub(crate) async fn machine_delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    m: &Machine,
) -> Result<Vec<Write>, ApiError> {
    if m.status.phase == MachinePhase::Deleting {
        return Err(ApiError::conflict(format!(
            "Machine {} is already being deleted.",
            m.name
        )));
    }
    let ngs = nodegroups_of(state, c).await?;
    let ng = ngs
        .iter()
        .find(|n| n.uuid == m.nodegroup_id)
        .ok_or_else(|| ApiError::not_found(format!("Machine {} could not be found.", m.name)))?;
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    let node_count = ng.node_count.saturating_sub(1).max(0);
    check_resize(c, ng, node_count, driver.as_ref())?;
    let change = NodeCountChange {
        nodegroup: ng,
        node_count,
        nodes_to_remove: vec![driver_name(m)],
        remove: vec![m.uuid],
    };
    let mut writes = resize_writes(state, ctx, c, &ngs, change, driver.name());
    let mut going = m.clone();
    going.status.phase = MachinePhase::Deleting;
    writes.push(Write::event(events::machine_event(
        &state.settings.default.host,
        Action::Delete,
        Outcome::Pending,
        &going,
        Some(&initiator(ctx)),
    )));
    Ok(writes)
}

/// The name the driver knows the machine's node by: its node's, else its server's, else the
/// machine's own.
fn driver_name(m: &Machine) -> String {
    m.status
        .node_ref
        .clone()
        .or_else(|| m.status.provider_id.clone())
        .unwrap_or_else(|| m.name.to_string())
}
