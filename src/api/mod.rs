//! HTTP only. Three faces of one service, each in its own folder: `v1/` the Magnum v1 API (one
//! module per resource, its views and its OpenAPI document), `kube/` the Kubernetes-facing
//! cluster registry under `/api` and `/apis`, and `http/` what every request goes through
//! (request ids and path rerouting, the request context, microversions, bodies, Magnum's error
//! body, pagination, links, the connection's own errors). This module holds the routes of the
//! whole service and the few helpers both faces share.

pub mod http;
pub mod kube;
mod state;
pub mod v1;

use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, SecondsFormat, Utc};

use crate::notify::events::Initiator;
pub use http::context::{RequestContext, RequestId};
pub use http::request::{request_middleware, REQUEST_ID_HEADER};
pub use state::{AppState, StateParts};

/// The largest request body the service reads.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Timestamps as Magnum writes them: ISO-8601 with an explicit UTC offset.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

pub fn initiator(ctx: &RequestContext) -> Initiator {
    Initiator {
        user_id: Some(ctx.user_id.clone()),
        project_id: Some(ctx.project_id.clone()),
        domain_id: ctx.domain_id.clone(),
        roles: ctx.roles.clone(),
        is_admin: ctx.is_admin,
        request_id: Some(ctx.request_id.clone()),
    }
}

/// Every route of the service: version discovery and the health endpoints, the Magnum face
/// under `/v1` ([`v1::routes`]), then the Kubernetes-facing routes, after `/v1` so that no
/// `/v1` request runs theirs.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(v1::versions::root))
        .route("/healthcheck", web::get().to(healthcheck))
        .route("/healthcheck", web::head().to(healthcheck))
        // kube-apiserver's health endpoints, for what watches the Kubernetes-facing side:
        // ready and healthy while the database answers, live while the process serves.
        .service(
            web::resource("/healthz")
                .route(web::get().to(kube_health))
                .default_service(web::to(kube::edge::method_not_allowed)),
        )
        .service(
            web::resource("/readyz")
                .route(web::get().to(kube_health))
                .default_service(web::to(kube::edge::method_not_allowed)),
        )
        .service(
            web::resource("/livez")
                .route(web::get().to(|| async { plain_ok() }))
                .default_service(web::to(kube::edge::method_not_allowed)),
        )
        .service(
            web::scope("/v1")
                .wrap(from_fn(http::microversion_middleware::middleware))
                .configure(v1::routes),
        )
        .configure(kube::configure)
        .default_service(web::to(v1::not_found));
}

/// The longest `/healthcheck` waits for the database: a load balancer hears of an outage
/// within a second, whatever the pool and statement timeouts.
const HEALTH_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(800);

async fn healthcheck(state: web::Data<AppState>) -> HttpResponse {
    // A stopping process finishes what it has and takes nothing new: balancers move away.
    if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
        return HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body("DRAINING");
    }
    let probe = tokio::time::timeout(HEALTH_PROBE_TIMEOUT, state.store.ping()).await;
    match probe.unwrap_or(Err(crate::store::StoreError::TimedOut(
        HEALTH_PROBE_TIMEOUT,
    ))) {
        Ok(()) => HttpResponse::Ok().content_type("text/plain").body("OK"),
        Err(e) => {
            tracing::warn!(error = %e, "health check: database unreachable");
            HttpResponse::ServiceUnavailable()
                .content_type("text/plain")
                .body("DATABASE UNAVAILABLE")
        }
    }
}

fn plain_ok() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok")
}

async fn kube_health(state: web::Data<AppState>) -> HttpResponse {
    let probe = tokio::time::timeout(HEALTH_PROBE_TIMEOUT, state.store.ping()).await;
    match probe {
        Ok(Ok(())) => plain_ok(),
        _ => HttpResponse::InternalServerError()
            .content_type("text/plain")
            .body("[-]database failed: unreachable\nhealthz check failed"),
    }
}
