//! delete and deletecollection, as the API server deletes (finalizers, preconditions, dry
//! run); a provisioned cluster goes through its driver as `DELETE /v1/clusters/{id}` does.

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::delete_options::Delete;
use crate::api::kube::objects::{list_meta, ClusterList, API_VERSION, LIST_KIND};
use crate::api::kube::request::{
    authorize_namespace, authorized_entry, caller, json_response, params, Visible,
};
use crate::api::kube::scan::{list_entries, Selectors, MAX_PAGE};
use crate::api::kube::status::{KubeError, CLUSTERS};
use crate::api::kube::{access, view};
use crate::api::v1::cluster_delete::{delete_attempt, delete_writes, waiting_delete_writes};
use crate::api::v1::lookup::cluster_target;
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::Cluster as Row;
use crate::domain::registry::EXTERNAL_DRIVER;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{RegistryEntry, StoreError, Write};

/// Deletes one cluster as the API server deletes an object: with finalizers, the cluster is
/// only marked (`deletionTimestamp`, status `DELETE_IN_PROGRESS` with the finalizers named in
/// its reason) and stays until the last finalizer is removed; without, a registered cluster
/// goes at once (row and event in one commit) and a provisioned one through its driver, as
/// `DELETE /v1/clusters/{id}` does. A cluster already being deleted is left as it is. Returns
/// the cluster as it still is, if it is.
pub(super) async fn delete_entry(
    state: &AppState,
    ctx: &RequestContext,
    e: &RegistryEntry,
) -> Result<Option<RegistryEntry>, KubeError> {
    if e.cluster.registry.is_deleting() {
        return Ok(Some(e.clone()));
    }
    if e.driver == EXTERNAL_DRIVER {
        let mut next = e.cluster.clone();
        let writes = if next.begin_delete(crate::store::sql::now()) {
            external_delete_writes(state, ctx, &e.cluster)
        } else {
            // A registered cluster has no node groups.
            waiting_delete_writes(state, ctx, &next, &[])
        };
        return match state.store.commit(&writes).await {
            Ok(()) | Err(StoreError::Stale) => Ok(state
                .store
                .registry_entries(&[e.cluster.uuid])
                .await?
                .into_iter()
                .next()),
            Err(err) if err.is_constraint("federation_membership") => Err(federated(&e.cluster)),
            Err(err) => Err(err.into()),
        };
    }
    let c = e.cluster.clone();
    retry::until_committed(async || {
        let current = match state.store.find_cluster(&c.uuid).await? {
            Some(c) => c,
            None => return Ok(Attempt::Done(())),
        };
        delete_attempt(state, ctx, &current).await
    })
    .await
    .map_err(KubeError::from)?;
    Ok(state
        .store
        .registry_entries(&[c.uuid])
        .await?
        .into_iter()
        .next())
}

pub(super) fn federated(c: &Row) -> KubeError {
    KubeError::ConflictMessage(format!(
        "cluster {} belongs to a federation; unjoin it first",
        c.registry.name.clone()
    ))
}

/// The writes that remove a registered cluster: refused while it is federated; a registered
/// cluster has no node groups, so there is nothing else to read for the event.
pub(super) fn external_delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Row,
) -> Vec<Write> {
    vec![
        Write::RefuseIfFederated {
            cluster_uuid: c.uuid,
        },
        Write::DeleteCluster { uuid: c.uuid },
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Success,
            c,
            &[],
            Some(&initiator(ctx)),
        )),
    ]
}

/// Goes on with a deletion whose last finalizer `next` removes (from `e`): a registered
/// cluster's row goes, a provisioned cluster's driver teardown starts; in one commit with the
/// update, which is refused (`false`) when `e` moved on meanwhile.
pub(super) async fn finish_deletion(
    state: &AppState,
    ctx: &RequestContext,
    e: &RegistryEntry,
    next: &Row,
) -> Result<bool, KubeError> {
    let writes = if e.driver == EXTERNAL_DRIVER {
        // The update checks the version the change was planned on.
        let mut writes = vec![Write::update_cluster(next)];
        writes.extend(external_delete_writes(state, ctx, next));
        writes
    } else {
        let mut teardown = next.clone();
        teardown.status_reason = None;
        delete_writes(state, ctx, &teardown)
            .await
            .map_err(KubeError::from)?
    };
    match state.store.commit(&writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::Stale) => Ok(false),
        Err(err) if err.is_constraint("federation_membership") => Err(federated(&e.cluster)),
        Err(err) => Err(err.into()),
    }
}

#[tracing::instrument(name = "registry.delete", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let e = authorized_entry(
        &ctx,
        &state,
        (&namespace, &name),
        access::DELETE.pair(),
        &CLUSTERS,
    )
    .await?;
    check_preconditions(&options, &e)?;
    if options.dry_run {
        return Ok(json_response(
            actix_web::http::StatusCode::OK,
            &view::cluster(&dry_run_delete(&state, &e).await?),
        ));
    }
    let still = delete_entry(&state, &ctx, &e).await?;
    Ok(json_response(
        actix_web::http::StatusCode::OK,
        &view::cluster(still.as_ref().unwrap_or(&e)),
    ))
}

/// What a delete would leave, written nowhere: the same refusals (a federation member), and
/// the cluster marked as being deleted.
pub(super) async fn dry_run_delete(
    state: &AppState,
    e: &RegistryEntry,
) -> Result<RegistryEntry, KubeError> {
    if !state
        .store
        .federations_of_cluster(&e.cluster.uuid)
        .await?
        .is_empty()
    {
        return Err(federated(&e.cluster));
    }
    let mut shown = e.clone();
    shown
        .cluster
        .registry
        .mark_deleting(crate::store::sql::now());
    Ok(shown)
}

/// `DeleteOptions.preconditions` (uid, resourceVersion): 409 when the object moved on.
pub(super) fn check_preconditions(options: &Delete, e: &RegistryEntry) -> Result<(), KubeError> {
    let name = e.cluster.registry.name.clone();
    if let Some(uid) = &options.uid {
        if *uid != e.cluster.uuid.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {}: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                CLUSTERS.qualified(),
                e.cluster.uuid
            )));
        }
    }
    if let Some(rv) = &options.resource_version {
        if *rv != e.cluster.registry.resource_version.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {} {}: the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                CLUSTERS.qualified(),
                crate::api::kube::status::quote(&name),
                e.cluster.registry.resource_version
            )));
        }
    }
    Ok(())
}

/// deletecollection: every cluster of the namespace the selectors pick (one page's worth per
/// request), answered as the list of what was deleted.
#[tracing::instrument(name = "registry.delete_collection", skip_all, fields(namespace = %path))]
pub(super) async fn delete_collection(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    authorize_namespace(
        &ctx,
        access::DELETE_COLLECTION.rule,
        access::DELETE_COLLECTION.verb,
        &CLUSTERS,
        &namespace,
    )?;
    let p = params(&req)?;
    let options = Delete::parse(req.query_string(), &body)?;
    let selectors = Selectors::parse(&p)?;
    let listed = list_entries(
        &state,
        &Visible::Namespace(namespace.clone()),
        &selectors,
        Some(MAX_PAGE),
        None,
    )
    .await?;
    let mut gone = Vec::new();
    for e in &listed.items {
        if !ctx.allowed(access::DELETE.rule, &cluster_target(&e.cluster)) {
            continue;
        }
        let shown = if options.dry_run {
            dry_run_delete(&state, e).await?
        } else {
            delete_entry(&state, &ctx, e)
                .await?
                .unwrap_or_else(|| e.clone())
        };
        gone.push(view::cluster(&shown));
    }
    let list = ClusterList {
        api_version: API_VERSION,
        kind: LIST_KIND,
        metadata: list_meta(listed.resource_version, String::new(), None),
        items: &gone,
    };
    Ok(json_response(actix_web::http::StatusCode::OK, &list))
}
