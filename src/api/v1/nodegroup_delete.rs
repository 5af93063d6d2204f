//! The administrator's forced delete of a node group, `DELETE /v1/clusters/{cluster_ident}/
//! nodegroups/{nodegroup_ident}?force=true` (microversion 1.18, rule `nodegroup:delete_force`,
//! admin only by default): for a node group whose delete cannot complete (`DELETE_FAILED` with
//! leftovers, or a teardown that hangs). The group's pending jobs are superseded by one forced
//! delete job; the conductor makes one last best-effort attempt and removes the node group's
//! row whatever the driver answers (the cluster completes its update as after a plain node
//! group delete), with an audit notification (`magnum.nodegroup.force_delete`) listing what
//! the infrastructure may still hold. The default groups stay undeletable, forced or not.

use crate::api::http::error::ApiError;
use crate::api::http::retry::Attempt;
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::job::{ForcedBy, JobPayload};
use crate::domain::status::Verb;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write};

use super::lookup::{driver_for, template_of};

/// The rule an administrator's forced node group delete is checked against (after
/// `nodegroup:delete`).
pub const RULE: &str = "nodegroup:delete_force";

/// What the superseded jobs of a force-deleted node group record as their end.
const SUPERSEDED: &str = "Superseded by a forced delete.";

/// One attempt at forcing the delete of `ng` of `c` (looked up, authorized for
/// `nodegroup:delete` and [`RULE`], and checked not to be a default group and the cluster to
/// take node group work, by the caller): the group `DELETE_IN_PROGRESS` naming who forced it,
/// the cluster `UPDATE_IN_PROGRESS`, the group's pending jobs ended, the forced job (one
/// attempt) and the pending notification, in one commit.
pub(super) async fn forced_attempt(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    ng: &NodeGroup,
) -> Result<Attempt<()>, ApiError> {
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    let mut next_ng = ng.clone();
    next_ng.begin(Verb::Delete);
    next_ng.status_reason = Some(format!(
        "Forced delete requested by {} (project {}).",
        ctx.user_id, ctx.project_id
    ));
    let mut next = c.clone();
    next.begin(Verb::Update);
    let forced = ForcedBy {
        user_id: ctx.user_id.clone(),
        project_id: ctx.project_id.clone(),
        request_id: Some(ctx.request_id.clone()),
    };
    let mut job = state.job(
        JobPayload::NodegroupDelete {
            nodegroup: ng.uuid,
            forced: Some(forced),
        },
        c.uuid,
        driver.name(),
    );
    job.max_attempts = 1;
    let writes = vec![
        Write::update_cluster(&next),
        Write::update_nodegroup(&next_ng),
        Write::SupersedeNodeGroupJobs {
            cluster: c.uuid.into(),
            nodegroup: ng.uuid,
            error: SUPERSEDED.into(),
        },
        Write::job(job),
        Write::event(events::nodegroup_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Pending,
            &next_ng,
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => Ok(Attempt::Done(())),
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}
