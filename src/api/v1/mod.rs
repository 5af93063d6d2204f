//! The Magnum v1 face: one module per resource (handlers and their `configure`), the views
//! (`views/`), Magnum's JSON-Patch dialect and the Python literals python-magnumclient sends,
//! the shared lookups, and the OpenAPI document of `/v1`.

pub mod certificates;
pub mod cluster_access;
pub mod cluster_actions;
pub mod cluster_delete;
pub mod cluster_group_bindings;
pub mod cluster_group_members;
pub mod cluster_groups;
pub mod cluster_templates;
pub mod clusters;
pub mod credentials;
pub mod federation_delete;
pub mod federations;
pub mod lookup;
pub mod machine_create;
pub mod machine_delete;
pub mod machine_ops;
pub mod machines;
pub mod mservices;
pub mod nodegroup_delete;
pub mod nodegroup_roll;
pub mod nodegroups;
pub mod openapi;
pub mod patch;
pub mod quotas;
pub mod retry_actions;
pub mod stats;
pub mod versions;
pub mod views;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};

use crate::api::http::error::ApiError;
use crate::api::http::retry::Attempt;
use crate::api::AppState;
use crate::store::{StoreError, Write};

/// The routes under `/v1` (mounted by [`crate::api::routes`] behind the microversion
/// middleware). Each collection is a scope of its own, matched by its static prefix: a request
/// runs the patterns of its collection only (actix matches every dynamic pattern with a
/// regular expression, in registration order). One cluster's routes, its node groups'
/// included, are a scope of their own under `/v1/clusters`, so that the cluster's identifier is
/// matched once and the rest of the path against static patterns (a node group by its
/// identifier is the one further expression).
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("", web::get().to(versions::v1))
        .route("/openapi.json", web::get().to(openapi::serve))
        .service(
            web::scope("/clusters")
                .configure(clusters::configure)
                .service(
                    web::scope("/{cluster_ident}")
                        .configure(clusters::configure_one)
                        .configure(nodegroups::configure)
                        .configure(machines::configure)
                        .configure(retry_actions::configure_nodegroup),
                ),
        )
        .service(web::scope("/clustertemplates").configure(cluster_templates::configure))
        // Cluster groups (microversion 1.20): the groups, their members and bindings.
        .service(
            web::scope("/clustergroups")
                .configure(cluster_groups::configure)
                .configure(cluster_group_members::configure)
                .configure(cluster_group_bindings::configure),
        )
        .service(
            web::scope("/federations")
                .configure(federations::configure)
                .configure(retry_actions::configure_federation),
        )
        .service(web::scope("/certificates").configure(certificates::configure))
        .service(web::scope("/credentials").configure(credentials::configure))
        .service(web::scope("/quotas").configure(quotas::configure))
        .configure(stats::configure)
        .configure(mservices::configure)
        .default_service(web::to(not_found));
}

pub async fn not_found() -> HttpResponse {
    ApiError::Framework(StatusCode::NOT_FOUND).error_response()
}

pub async fn method_not_allowed() -> HttpResponse {
    ApiError::Framework(StatusCode::METHOD_NOT_ALLOWED).error_response()
}

/// Commits a delete that needs no driver work and answers 204; a row already gone (a
/// concurrent delete) is `gone`'s 404.
pub(crate) async fn commit_deleted(
    state: &AppState,
    writes: &[Write],
    gone: impl FnOnce() -> ApiError,
) -> Result<HttpResponse, ApiError> {
    match state.store.commit(writes).await {
        Ok(()) => Ok(HttpResponse::NoContent().finish()),
        Err(StoreError::NotFound) => Err(gone()),
        Err(e) => Err(e.into()),
    }
}

/// Commits a change whose driver work was queued with it, and answers 202 with the resource's
/// uuid; a write that lost against a concurrent one (stale) is tried again from a fresh read.
pub(crate) async fn commit_accepted(
    state: &AppState,
    writes: &[Write],
    uuid: impl ToString,
) -> Result<Attempt<HttpResponse>, ApiError> {
    match state.store.commit(writes).await {
        Ok(()) => Ok(Attempt::Done(
            HttpResponse::Accepted().json(views::AcceptedView::new(uuid)),
        )),
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}
