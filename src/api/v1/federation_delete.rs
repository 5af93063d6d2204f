//! The administrator's forced delete of a federation, `DELETE /v1/federations/{federation_ident}
//! ?force=true` (microversion 1.18, rule `federation:delete_force`, admin only by default): for
//! a federation whose delete cannot complete. Its pending jobs are superseded by one forced
//! delete job; the conductor makes one last best-effort attempt and removes the record whatever
//! the driver answers, with an audit notification (`magnum.federation.force_delete`).

use crate::api::http::error::ApiError;
use crate::api::http::retry::Attempt;
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::federation::Federation;
use crate::domain::job::{ForcedBy, JobPayload};
use crate::domain::status::Verb;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write};

/// The rule an administrator's forced federation delete is checked against (after
/// `federation:delete`).
pub const RULE: &str = "federation:delete_force";

/// What the superseded jobs of a force-deleted federation record as their end.
const SUPERSEDED: &str = "Superseded by a forced delete.";

/// One attempt at forcing the delete of `f` (looked up and authorized for `federation:delete`
/// and [`RULE`] by the caller; `driver` the one its jobs run on): `DELETE_IN_PROGRESS` naming
/// who forced it, the pending jobs ended, the forced job (one attempt) and the pending
/// notification, in one commit.
pub(super) async fn forced_attempt(
    state: &AppState,
    ctx: &RequestContext,
    f: &Federation,
    driver: String,
) -> Result<Attempt<()>, ApiError> {
    let mut next = f.clone();
    next.begin(Verb::Delete);
    next.status_reason = Some(format!(
        "Forced delete requested by {} (project {}).",
        ctx.user_id, ctx.project_id
    ));
    let forced = ForcedBy {
        user_id: ctx.user_id.clone(),
        project_id: ctx.project_id.clone(),
        request_id: Some(ctx.request_id.clone()),
    };
    let mut job = state.job(
        JobPayload::FederationDelete {
            forced: Some(forced),
        },
        f.uuid,
        driver,
    );
    job.max_attempts = 1;
    let writes = vec![
        Write::update_federation(&next),
        Write::SupersedeJobs {
            resource: f.uuid.into(),
            error: SUPERSEDED.into(),
        },
        Write::job(job),
        Write::event(events::federation_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Pending,
            &next,
            None,
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => Ok(Attempt::Done(())),
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}
