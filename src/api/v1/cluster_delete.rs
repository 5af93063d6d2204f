//! The administrator's forced delete of a cluster, `DELETE /v1/clusters/{cluster_ident}
//! ?force=true` (microversion 1.18, rule `cluster:delete_force`, admin only by default): for a
//! cluster whose delete cannot complete (`DELETE_FAILED` with leftovers, or a teardown that
//! hangs). The cluster's pending jobs are superseded by one forced delete job; the conductor
//! makes one last best-effort attempt and removes the record whatever the driver answers,
//! with an audit notification (`magnum.cluster.force_delete`) listing what the infrastructure
//! may still hold. What a plain delete refuses or waits for is refused or waited for here too:
//! a cluster that hosts or belongs to a federation (409), registry finalizers (the deletion
//! waits for them, as a plain one does). The plain delete's own steps are here too, shared with
//! the cluster registry's delete.

use actix_web::HttpRequest;
use chrono::Utc;
use serde_json::json;

use super::lookup::{driver_for, nodegroups_of, template_of};
use crate::api::http::body::{parse_bool, query_params};
use crate::api::http::error::ApiError;
use crate::api::http::microversion::FORCED_DELETE;
use crate::api::http::retry::Attempt;
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::job::{ForcedBy, JobPayload};
use crate::domain::status::ClusterStatus;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write};

/// The rule an administrator's forced delete is checked against (after `cluster:delete`).
pub const RULE: &str = "cluster:delete_force";

/// What the superseded jobs of a force-deleted cluster record as their end.
const SUPERSEDED: &str = "Superseded by a forced delete.";

/// Whether a cluster's or a node group's DELETE asks for a forced delete: `force` is a query parameter from
/// microversion 1.18 (an unknown argument, 400, before), a boolean in Magnum's spellings.
pub(super) fn force_requested(req: &HttpRequest, ctx: &RequestContext) -> Result<bool, ApiError> {
    let allowed: &[&str] = if ctx.version >= FORCED_DELETE {
        &["force"]
    } else {
        &[]
    };
    let params = query_params(req, allowed)?;
    match params.get("force") {
        None => Ok(false),
        Some(v) => parse_bool(&json!(v)).ok_or_else(|| {
            ApiError::bad_request(format!("Invalid input for force: {v} is not a boolean."))
        }),
    }
}

/// One attempt at forcing the delete of `c` (looked up, and authorized for `cluster:delete`
/// and [`RULE`], by the caller).
pub(super) async fn forced_delete_attempt(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
) -> Result<Attempt<()>, ApiError> {
    refuse_if_federated(state, c).await?;
    // Held by registry finalizers: it waits for them, forced or not.
    if c.registry.deletion_waits() {
        return Ok(Attempt::Done(()));
    }
    let mut next = c.clone();
    let writes = if next.begin_delete(crate::store::sql::now()) {
        next.status_reason = Some(format!(
            "Forced delete requested by {} (project {}).",
            ctx.user_id, ctx.project_id
        ));
        forced_writes(state, ctx, &next).await?
    } else {
        let ngs = nodegroups_of(state, c).await?;
        waiting_delete_writes(state, ctx, &next, &ngs)
    };
    match state.store.commit(&writes).await {
        Ok(()) => Ok(Attempt::Done(())),
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) if e.is_constraint("federation_membership") => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}

/// The row (`DELETE_IN_PROGRESS`, the reason naming who forced it), the cluster's pending jobs
/// ended, the forced delete job (one attempt) and the pending delete notification; refused
/// under the row lock when a federation was created or joined meanwhile.
async fn forced_writes(
    state: &AppState,
    ctx: &RequestContext,
    next: &Cluster,
) -> Result<Vec<Write>, ApiError> {
    let template = template_of(state, next).await?;
    let driver = driver_for(state, &template)?;
    let ngs = nodegroups_of(state, next).await?;
    let forced = ForcedBy {
        user_id: ctx.user_id.clone(),
        project_id: ctx.project_id.clone(),
        request_id: Some(ctx.request_id.clone()),
    };
    let mut job = state.job(
        JobPayload::ClusterDelete {
            forced: Some(forced),
        },
        next.uuid,
        driver.name(),
    );
    job.max_attempts = 1;
    Ok(vec![
        Write::update_cluster(next),
        Write::RefuseIfFederated {
            cluster_uuid: next.uuid,
        },
        Write::SupersedeJobs {
            resource: next.uuid.into(),
            error: SUPERSEDED.into(),
        },
        Write::job(job),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Pending,
            next,
            &ngs,
            Some(&initiator(ctx)),
        )),
    ])
}

/// Magnum's 409 for the delete of a cluster that hosts or belongs to a federation.
pub(crate) async fn refuse_if_federated(state: &AppState, c: &Cluster) -> Result<(), ApiError> {
    let feds = state.store.federations_of_cluster(&c.uuid).await?;
    if feds.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = feds
        .iter()
        .map(|f| format!("{} ({})", f.name, f.uuid))
        .collect();
    Err(ApiError::conflict(format!(
        "Cluster {} hosts or belongs to federation(s) {}; unjoin it or delete the federation first.",
        c.name,
        names.join(", ")
    )))
}

/// One attempt at starting the delete of `c` (looked up and authorized by the caller): refused
/// while the cluster hosts or belongs to a federation; otherwise `DELETE_IN_PROGRESS`, the
/// driver's delete job and the pending event in one commit. Done at once when a delete is
/// already under way.
pub(crate) async fn delete_attempt(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
) -> Result<Attempt<()>, ApiError> {
    refuse_if_federated(state, c).await?;
    // Already being deleted, or waiting for its registry finalizers.
    if c.status == ClusterStatus::DeleteInProgress {
        return Ok(Attempt::Done(()));
    }
    let mut next = c.clone();
    let writes = if next.begin_delete(crate::store::sql::now()) {
        delete_writes(state, ctx, &next).await?
    } else {
        let ngs = nodegroups_of(state, c).await?;
        waiting_delete_writes(state, ctx, &next, &ngs)
    };
    match state.store.commit(&writes).await {
        Ok(()) => Ok(Attempt::Done(())),
        // Stale: re-read. Federated meanwhile: the next round's check names the federation.
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) if e.is_constraint("federation_membership") => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}

/// The writes of a deletion the registry's finalizers hold back until the last one is removed:
/// `next` marked (see [`Cluster::begin_delete`]) and the pending event; refused under the row
/// lock when a federation was created or joined meanwhile.
pub(crate) fn waiting_delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    next: &Cluster,
    ngs: &[NodeGroup],
) -> Vec<Write> {
    vec![
        Write::update_cluster(next),
        Write::RefuseIfFederated {
            cluster_uuid: next.uuid,
        },
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Pending,
            next,
            ngs,
            Some(&initiator(ctx)),
        )),
    ]
}

/// The writes that start the teardown of `next` (a cluster marked `DELETE_IN_PROGRESS`, at the
/// version it was read at): the row, the driver's delete job (due to end within `[conductor]
/// delete_timeout`) and the pending event; refused under the row lock when a federation was
/// created or joined meanwhile.
pub(crate) async fn delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    next: &Cluster,
) -> Result<Vec<Write>, ApiError> {
    let template = template_of(state, next).await?;
    let driver = driver_for(state, &template)?;
    let ngs = nodegroups_of(state, next).await?;
    let mut job = state.job(
        JobPayload::ClusterDelete { forced: None },
        next.uuid,
        driver.name(),
    );
    let minutes = state.settings.conductor.delete_timeout;
    if minutes > 0 {
        job.deadline_at = Some(Utc::now() + chrono::Duration::minutes(i64::from(minutes)));
    }
    Ok(vec![
        Write::update_cluster(next),
        // Re-checked under the row lock: a federation created or joined meanwhile wins.
        Write::RefuseIfFederated {
            cluster_uuid: next.uuid,
        },
        Write::job(job),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Pending,
            next,
            &ngs,
            Some(&initiator(ctx)),
        )),
    ])
}
