//! `clusterregistry.k8s.io/v1alpha1` `clusters`, namespaced by project: list (JSON or Table,
//! label and field selectors, `limit`/`continue`), watch, get, create (a registered cluster,
//! driver `external`), replace, patch (merge, JSON, apply), delete and deletecollection, over
//! the same rows as `/v1/clusters`.
//!
//! By what each part does: [`namespaces`] (the projects as namespaces), [`listing`] (list,
//! watch, get), [`parse`] (body to domain), [`plan`] (the row a write leaves), [`commit`]
//! (create, replace, patch, apply) and [`delete`]; the request and policy helpers they share
//! are [`super::request`], the paged scan [`super::scan`].

mod commit;
mod delete;
mod listing;
mod namespaces;
mod parse;
mod plan;

pub(super) use commit::update_row;
use commit::{create, patch_one, replace};
use delete::{delete, delete_collection};
pub(super) use listing::get;
use listing::{list_all, list_namespace};
use namespaces::{namespace, namespaces};

use actix_web::{web, HttpResponse};

use crate::api::kube::status::KubeError;

pub(super) const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/v1/namespaces")
            .route(web::get().to(namespaces))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/namespaces/{namespace}")
            .route(web::get().to(namespace))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/clusters"))
            .name("registry_clusters_all")
            .route(web::get().to(list_all))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/clusters"))
            .route(web::get().to(list_namespace))
            .route(web::post().to(create))
            .route(web::delete().to(delete_collection))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/clusters/{{name}}"))
            .route(web::get().to(get))
            .route(web::put().to(replace))
            .route(web::patch().to(patch_one))
            .route(web::delete().to(delete))
            .default_service(web::to(method_not_allowed)),
    );
}

pub(super) async fn method_not_allowed() -> Result<HttpResponse, KubeError> {
    Err(KubeError::MethodNotAllowedHere)
}
