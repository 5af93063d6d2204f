//! `PATCH /v1/credentials/{cluster_ident}` (≥ 1.12, no body): rotates the cluster's
//! credential through its driver, and renews the client certificate the service uses on the
//! cluster. The cluster's status does not change (as in Magnum); the work is a job.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use super::lookup::{self, driver_for, template_of};
use super::views::AcceptedView;
use crate::api::http::body::query_params;
use crate::api::http::error::ApiError;
use crate::api::http::microversion::CREDENTIAL_ROTATION;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::job::JobPayload;
use crate::store::Write;

/// The routes under `/v1/credentials`, relative to the scope [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/{cluster_ident}")
            .route(web::patch().to(rotate))
            .default_service(web::to(super::method_not_allowed)),
    );
}

#[tracing::instrument(name = "credentials.rotate", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn rotate(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if ctx.version < CREDENTIAL_ROTATION {
        return Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE));
    }
    query_params(&req, &[])?;
    // Magnum evaluates this rule against the caller's own project; the lookup below is
    // project-scoped, so only the caller's clusters are reachable.
    ctx.authorize_own("credential:rotate")?;
    let c = lookup::cluster(&state, &ctx, &path, false).await?;
    if !c.status.allows_credential_rotation() {
        return Err(ApiError::bad_request(format!(
            "Rotating the credential of a cluster when status is \"{}\" is not supported.",
            c.status
        )));
    }
    let template = template_of(&state, &c).await?;
    let driver = driver_for(&state, &template)?;
    if !driver.capabilities().rotate_credential {
        return Err(ApiError::bad_request(
            "Credential rotation is not supported by driver.",
        ));
    }
    // The renewed client certificate's row uuid, fixed now: a retried job does not renew twice.
    let client = Some(uuid::Uuid::new_v4());
    let job = state.job(
        JobPayload::CredentialRotate { client },
        c.uuid,
        driver.name(),
    );
    state.store.commit(&[Write::job(job)]).await?;
    Ok(HttpResponse::Accepted().json(AcceptedView::new(c.uuid)))
}
