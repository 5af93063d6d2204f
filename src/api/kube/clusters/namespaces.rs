//! `/api/v1/namespaces`: the caller's projects as Kubernetes namespaces.

use actix_web::{web, HttpResponse};

use crate::api::http::error::ApiError;
use crate::api::kube::request::{caller, json_response};
use crate::api::kube::status::{KubeError, NAMESPACES};
use crate::api::{AppState, RequestContext};

/// The most namespaces one list shows.
pub(super) const MAX_NAMESPACES: u32 = 1000;

pub(super) fn namespace_object(name: &str) -> k8s_openapi::api::core::v1::Namespace {
    use k8s_openapi::api::core::v1::{Namespace, NamespaceSpec, NamespaceStatus};
    Namespace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(NamespaceSpec {
            finalizers: Some(vec!["kubernetes".into()]),
        }),
        status: Some(NamespaceStatus {
            phase: Some("Active".into()),
            ..Default::default()
        }),
    }
}

/// `GET /api/v1/namespaces` (`kubectl get ns`): the projects the caller may see as
/// namespaces: its own, and for an admin every project that has clusters.
pub(super) async fn namespaces(
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let mut names = vec![ctx.project_id.clone()];
    if ctx.is_admin {
        names.extend(state.store.registry_projects(MAX_NAMESPACES).await?);
        names.sort();
        names.dedup();
        names.truncate(MAX_NAMESPACES as usize);
    }
    let list = k8s_openapi::List {
        items: names.iter().map(|n| namespace_object(n)).collect(),
        metadata: Default::default(),
    };
    Ok(json_response(actix_web::http::StatusCode::OK, &list))
}

/// `GET /api/v1/namespaces/{namespace}`: kubectl asks after a 404 whether the namespace
/// exists. A project the caller may see is an `Active` Namespace; any other is a 403, so a
/// project's existence is not told to outsiders.
pub(super) async fn namespace(
    ctx: Result<RequestContext, ApiError>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    if !(ctx.is_admin || ctx.project_id == namespace) {
        return Err(KubeError::forbidden("get", &NAMESPACES, None, &ctx.user_id));
    }
    Ok(json_response(
        actix_web::http::StatusCode::OK,
        &namespace_object(&namespace),
    ))
}
