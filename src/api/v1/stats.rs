//! `GET /v1/stats`: how many clusters a project (or, for an admin, the whole cloud) has, and
//! how many nodes they have in total (masters included).

use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};

use super::views::StatsView;
use crate::api::http::body::query_params;
use crate::api::http::error::ApiError;
use crate::api::AppState;
use crate::api::RequestContext;

/// The only statistics type Magnum knows.
const ALLOWED_TYPES: &[&str] = &["cluster"];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/stats")
            .route(web::get().to(get_all))
            .default_service(web::to(super::method_not_allowed)),
    );
}

#[tracing::instrument(name = "stats.get_all", skip_all, fields(project = %ctx.project_id))]
async fn get_all(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = query_params(&req, &["project_id", "type"])?;
    ctx.authorize_own("stats:get_all")?;
    let kind = params.get("type").map(String::as_str).unwrap_or("cluster");
    if !ALLOWED_TYPES.contains(&kind.to_lowercase().as_str()) {
        return Err(ApiError::bad_request(format!(
            "Invalid stats type. Allowed values are '{}'",
            ALLOWED_TYPES.join(",")
        )));
    }
    let requested = params
        .get("project_id")
        .map(String::as_str)
        .filter(|p| !p.is_empty());
    // A non-admin sees its own project only; an admin without project_id sees the whole cloud.
    let project = if ctx.is_admin {
        requested
    } else {
        let own = ctx.project_id.as_str();
        if requested.is_some_and(|p| p != own) {
            return Err(ApiError::forbidden("Not authorized."));
        }
        Some(own)
    };
    let (clusters, nodes) = state.store.stats(project).await?;
    Ok(HttpResponse::Ok().json(StatsView { clusters, nodes }))
}
