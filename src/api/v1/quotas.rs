//! `/v1/quotas`: list, show (with the configured default when a project has no row), create,
//! update with a plain quota document (not JSON-Patch) and delete. The only resource is
//! `Cluster`; its limit is enforced by cluster create.
//!
//! With `auth_strategy = keystone` a quota's project must exist in Keystone, as in Magnum;
//! the other strategies have no Keystone to ask, so project ids are stored as given.

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;

use super::views::{DefaultQuotaView, QuotaCollection, QuotaShowView, QuotaView};
use crate::api::http::body::{json_object, parse_bool, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::pagination::{next_page, page_request};
use crate::api::AppState;
use crate::api::RequestContext;
use crate::auth::Authenticator;
use crate::store::{StoreError, QUOTA_SORT_KEYS};

/// The resources a quota may limit (Magnum's `QuotaResourceName`).
const RESOURCES: &[&str] = &["Cluster"];
const CLUSTER: &str = "Cluster";
const READ_ONLY: &[&str] = &["id", "created_at", "updated_at"];
const LIST_PARAMS: &[&str] = &["marker", "limit", "sort_key", "sort_dir", "all_tenants"];

/// The routes under `/v1/quotas`, relative to the scope [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{project_id}/{resource}")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    );
}

fn not_found(project_id: &str, resource: &str) -> ApiError {
    ApiError::not_found(format!(
        "Quota could not be found: project_id {project_id} resource {resource}."
    ))
}

/// The attributes of a quota document, validated as Magnum's `Quota` type does.
struct QuotaDocument {
    project_id: Option<String>,
    resource: String,
    hard_limit: i32,
}

fn parse_document(
    req: &HttpRequest,
    body: &Bytes,
    argument: &'static str,
) -> Result<QuotaDocument, ApiError> {
    let mut f = Fields::new(argument, json_object(req, body, argument)?);
    f.read_only(READ_ONLY)?;
    let project_id = f.string("project_id", 0, 255)?.filter(|p| !p.is_empty());
    let resource = f
        .one_of("resource", RESOURCES)?
        .unwrap_or_else(|| CLUSTER.into());
    // An omitted hard_limit is 1, on create and (as in Magnum) on update.
    let hard_limit = f.int32("hard_limit", Some(0), None)?.unwrap_or(1);
    f.finish()?;
    Ok(QuotaDocument {
        project_id,
        resource,
        hard_limit,
    })
}

#[tracing::instrument(name = "quotas.list", skip_all, fields(project = %ctx.project_id))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let mut params = query_params(&req, LIST_PARAMS)?;
    let marker = match params.remove("marker") {
        None => None,
        Some(text) => Some(text.trim().parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!(
                "Invalid input for marker: {text} is not an integer."
            ))
        })?),
    };
    let all_tenants = match params.remove("all_tenants") {
        None => false,
        Some(text) => parse_bool(&json!(text)).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Invalid input for all_tenants: {text} is not a boolean."
            ))
        })?,
    };
    let page = page_request(&params, QUOTA_SORT_KEYS, state.settings.api.max_limit)?;
    ctx.authorize_own("quota:get_all")?;
    let every_project = ctx.is_admin && all_tenants;
    let project = (!every_project).then_some(ctx.project_id.as_str());
    let quotas = match state.store.list_quotas(project, marker, &page).await {
        Ok(q) => q,
        Err(StoreError::NotFound) => {
            return Err(ApiError::not_found(format!(
                "Quota could not be found: quota id {}.",
                marker.unwrap_or_default()
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let last = quotas.last().map(|q| q.id.to_string());
    let items: Vec<QuotaView> = quotas.iter().map(QuotaView::from).collect();
    // Unlike Magnum, the next page stays the listing the caller asked for.
    let filter: &[(&str, &str)] = if every_project {
        &[("all_tenants", "True")]
    } else {
        &[]
    };
    let next = next_page(&req, "quotas", &page, items.len(), last, filter);
    Ok(HttpResponse::Ok().json(QuotaCollection {
        quotas: items,
        next,
    }))
}

#[tracing::instrument(name = "quotas.show", skip_all, fields(project = %ctx.project_id, quota_project = %path.0, resource = %path.1))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let (project_id, resource) = path.into_inner();
    ctx.authorize_own("quota:get")?;
    if !ctx.is_admin && project_id != ctx.project_id {
        return Err(ApiError::forbidden("Not authorized."));
    }
    let body = match state.store.get_quota(&project_id, &resource).await? {
        Some(q) => QuotaShowView::Stored(QuotaView::from(&q)),
        // No row: the default every project has, as Magnum reports it.
        None => QuotaShowView::Default(DefaultQuotaView {
            project_id,
            hard_limit: state.settings.quotas.max_clusters_per_project,
            resource: CLUSTER.into(),
        }),
    };
    Ok(HttpResponse::Ok().json(body))
}

#[tracing::instrument(name = "quotas.create", skip_all, fields(project = %ctx.project_id))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let doc = parse_document(&req, &body, "quota")?;
    ctx.authorize_own("quota:create")?;
    let Some(project_id) = doc.project_id else {
        return Err(ApiError::bad_request("Must provide a valid project ID."));
    };
    if let Authenticator::Keystone(keystone) = state.authenticator.as_ref() {
        if !keystone.project_exists(&project_id).await? {
            return Err(ApiError::not_found(format!(
                "The project_id {project_id} could not be found."
            )));
        }
    }
    match state
        .store
        .create_quota(&project_id, &doc.resource, doc.hard_limit)
        .await
    {
        Ok(q) => Ok(HttpResponse::Created().json(QuotaView::from(&q))),
        Err(e) if e.is_constraint("uniq_quotas0project_id0resource") => {
            Err(ApiError::conflict(format!(
                "Quota for project {project_id} already exists for resource {}.",
                doc.resource
            )))
        }
        Err(e) => Err(e.into()),
    }
}

#[tracing::instrument(name = "quotas.update", skip_all, fields(project = %ctx.project_id, quota_project = %path.0, resource = %path.1))]
async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let (project_id, resource) = path.into_inner();
    // The path names the quota; the body's project_id and resource are validated, then ignored.
    let doc = parse_document(&req, &body, "quotapatch")?;
    ctx.authorize_own("quota:update")?;
    match state
        .store
        .update_quota(&project_id, &resource, doc.hard_limit)
        .await
    {
        Ok(q) => Ok(HttpResponse::Accepted().json(QuotaView::from(&q))),
        Err(StoreError::NotFound) => Err(not_found(&project_id, &resource)),
        Err(e) => Err(e.into()),
    }
}

#[tracing::instrument(name = "quotas.delete", skip_all, fields(project = %ctx.project_id, quota_project = %path.0, resource = %path.1))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let (project_id, resource) = path.into_inner();
    ctx.authorize_own("quota:delete")?;
    match state.store.delete_quota(&project_id, &resource).await {
        Ok(()) => Ok(HttpResponse::NoContent().finish()),
        Err(StoreError::NotFound) => Err(not_found(&project_id, &resource)),
        Err(e) => Err(e.into()),
    }
}
