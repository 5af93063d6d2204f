//! `DELETE …/namespaces/{namespace}/machines/{name}`: that machine's node goes and its node
//! group shrinks by one (the writes of `DELETE /v1/clusters/{c}/machines/{m}`). The answer is
//! the machine being deleted (`phase: Deleting`, with its `deletionTimestamp`), 200, as
//! kube-apiserver answers a delete that is not yet done; it is gone once the driver is done.
//! `dryRun` checks everything and writes nothing; the `uid` and `resourceVersion`
//! preconditions are 409 when the object moved on.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::listing;
use super::object::machine;
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::MACHINE_DELETE;
use crate::api::kube::delete_options::Delete;
use crate::api::kube::request::{authorize_namespace, caller, json_response};
use crate::api::kube::status::{KubeError, MACHINES};
use crate::api::v1::lookup::cluster_target;
use crate::api::v1::machine_delete::machine_delete_writes;
use crate::api::{AppState, RequestContext};
use crate::domain::machine::MachinePhase;
use crate::store::{MachineEntry, StoreError};

#[tracing::instrument(name = "machines.delete", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn delete(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let options = Delete::parse(req.query_string(), &body)?;
    let (rule, verb) = MACHINE_DELETE.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    retry::until_committed(async || {
        let e = listing::find(&state, &namespace, &name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINES, &name))?;
        check_preconditions(&options, &e)?;
        let c = state
            .store
            .find_cluster(&e.machine.cluster_id)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINES, &name))?;
        ctx.authorize(rule, &cluster_target(&c))?;
        let writes = machine_delete_writes(&state, &ctx, &c, &e.machine).await?;
        if !options.dry_run {
            match state.store.commit(&writes).await {
                Ok(()) => {}
                Err(StoreError::Stale) => return Ok(Attempt::Retry),
                Err(err) => return Err(err.into()),
            }
        }
        // The machine as stored once the delete is committed (as it would be, on a dry run).
        let stored = match options.dry_run {
            true => None,
            false => listing::find(&state, &namespace, &name).await?,
        };
        let going = stored.unwrap_or_else(|| {
            let mut going = e.clone();
            going.machine.status.phase = MachinePhase::Deleting;
            going.machine.updated_at = Some(crate::store::sql::now());
            going
        });
        Ok(Attempt::Done(json_response(
            StatusCode::OK,
            &machine(&going),
        )))
    })
    .await
}

/// `DeleteOptions.preconditions`: the machine's uid, and the resourceVersion it was read at.
fn check_preconditions(options: &Delete, e: &MachineEntry) -> Result<(), KubeError> {
    let rv = e.resource_version;
    if let Some(uid) = &options.uid {
        if *uid != e.machine.uuid.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {}: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                MACHINES.qualified(),
                e.machine.uuid
            )));
        }
    }
    if let Some(v) = &options.resource_version {
        if *v != rv.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {} {}: the ResourceVersion in the precondition ({v}) does not match the ResourceVersion in record ({rv}). The object might have been modified",
                MACHINES.qualified(),
                crate::api::kube::status::quote(&e.machine.name.to_string()),
            )));
        }
    }
    Ok(())
}
