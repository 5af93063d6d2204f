//! HTTP only: routing, the OpenStack conventions (request ids, path rerouting, trailing slashes,
//! microversions, Magnum's error body) and one module per resource.

pub mod body;
pub mod certificates;
pub mod cluster_actions;
pub mod cluster_templates;
pub mod clusters;
pub mod context;
pub mod credentials;
pub mod error;
pub mod federations;
pub mod keystone;
pub mod kube;
pub mod links;
pub mod lookup;
pub mod microversion;
pub mod mservices;
pub mod nodegroups;
pub mod openapi;
pub mod pagination;
pub mod patch;
pub mod provisional;
pub mod pyliteral;
pub mod quotas;
pub mod retry;
mod state;
pub mod stats;
pub mod versions;
pub mod views;
pub mod wire;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::{StatusCode, Uri};
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, HttpMessage, HttpResponse, ResponseError};
use chrono::{DateTime, SecondsFormat, Utc};
use tracing::Instrument;

use crate::notify::events::Initiator;
pub use context::{RequestContext, RequestId};
use error::ApiError;
pub use state::{AppState, StateParts};

pub const REQUEST_ID_HEADER: &str = "x-openstack-request-id";

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

/// Every route of the service. Each `/v1` collection is a scope of its own, matched by its
/// static prefix: a request runs the patterns of its collection only (actix matches every
/// dynamic pattern with a regular expression, in registration order). One cluster's routes,
/// its node groups' included, are a scope of their own under `/v1/clusters`, so that the
/// cluster's identifier is matched once and the rest of the path against static patterns
/// (a node group by its identifier is the one further expression). The Kubernetes-facing
/// routes come after `/v1`, so that no `/v1` request runs theirs.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(versions::root))
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
                .wrap(from_fn(microversion::middleware))
                .route("", web::get().to(versions::v1))
                .route("/openapi.json", web::get().to(openapi::serve))
                .service(
                    web::scope("/clusters")
                        .configure(clusters::configure)
                        .service(
                            web::scope("/{cluster_ident}")
                                .configure(clusters::configure_one)
                                .configure(nodegroups::configure),
                        ),
                )
                .service(web::scope("/clustertemplates").configure(cluster_templates::configure))
                .service(web::scope("/federations").configure(federations::configure))
                .service(web::scope("/certificates").configure(certificates::configure))
                .service(web::scope("/credentials").configure(credentials::configure))
                .service(web::scope("/quotas").configure(quotas::configure))
                .configure(stats::configure)
                .configure(mservices::configure)
                .default_service(web::to(not_found)),
        )
        .configure(kube::configure)
        .default_service(web::to(not_found));
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

pub async fn not_found() -> HttpResponse {
    ApiError::Framework(StatusCode::NOT_FOUND).error_response()
}

pub async fn method_not_allowed() -> HttpResponse {
    ApiError::Framework(StatusCode::METHOD_NOT_ALLOWED).error_response()
}

/// The path the router sees: trailing slashes trimmed, and any path whose first segment is not
/// `v1` rerouted under `/v1` (so Magnum's bookmark links and an endpoint without `/v1` work).
pub fn normalized_path(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
    let first = trimmed
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    match first {
        "" | "v1" | "healthcheck" => trimmed.to_string(),
        // The Kubernetes-facing APIs and what kubectl asks for around them.
        f if kube::ROOTS.contains(&f) => trimmed.to_string(),
        _ => format!("/v1{trimmed}"),
    }
}

/// No name, id or parameter can hold a NUL character (PostgreSQL's text cannot).
const NUL_IN_URL: &str =
    "The request URL holds a NUL character (%00), which no name, id or parameter accepts.";

/// Outermost middleware: request id and root span, path normalisation, a URL holding `%00`
/// refused before anything reads it, and Magnum's error body on errors produced outside the
/// handlers (payload limits, ...).
pub async fn request_middleware(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let request_id = format!("req-{}", uuid::Uuid::new_v4());
    let path = req.path().to_string();
    let normalized = normalized_path(&path);
    if normalized != path {
        let query = req.query_string();
        let pq = if query.is_empty() {
            normalized.clone()
        } else {
            format!("{normalized}?{query}")
        };
        if let Ok(uri) = pq.parse::<Uri>() {
            req.match_info_mut().get_mut().update(&uri);
            req.head_mut().uri = uri;
        }
    }
    req.extensions_mut().insert(RequestId(request_id.clone()));
    let span = tracing::info_span!(
        "request",
        request_id = %request_id,
        method = %req.method(),
        path = %path,
        route = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    let started = std::time::Instant::now();
    let nul_in_url = req.path().contains("%00") || req.query_string().contains("%00");
    async move {
        let mut resp = if nul_in_url {
            req.into_response(ApiError::bad_request(NUL_IN_URL).error_response())
        } else {
            next.call(req).await?.map_into_boxed_body()
        };
        let status = resp.status();
        let is_json = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if (status.is_client_error() || status.is_server_error())
            && !is_json
            && status != StatusCode::SERVICE_UNAVAILABLE
        {
            let reason = status.canonical_reason().unwrap_or("Error");
            let replacement =
                HttpResponse::build(status).json(error::error_body(status, &format!("{reason}.")));
            resp = resp.into_response(replacement);
        }
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            resp.headers_mut()
                .insert(HeaderName::from_static(REQUEST_ID_HEADER), v);
        }
        let span = tracing::Span::current();
        let route = resp.request().match_pattern();
        if let Some(route) = &route {
            span.record("route", route.as_str());
        }
        span.record("status", status.as_u16());
        crate::metrics::http_request(
            resp.request().method().as_str(),
            route,
            status.as_u16(),
            started.elapsed(),
        );
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "request handled"
        );
        Ok(resp)
    }
    .instrument(span)
    .await
}

#[cfg(test)]
mod tests {
    use super::normalized_path;

    #[test]
    fn paths_are_rerouted_under_v1_and_trailing_slashes_trimmed() {
        assert_eq!(normalized_path("/"), "/");
        assert_eq!(normalized_path("/v1/"), "/v1");
        assert_eq!(normalized_path("/v1/clusters/"), "/v1/clusters");
        assert_eq!(normalized_path("/clusters/x"), "/v1/clusters/x");
        assert_eq!(
            normalized_path("/clustertemplates/"),
            "/v1/clustertemplates"
        );
        assert_eq!(normalized_path("/healthcheck"), "/healthcheck");
        assert_eq!(
            normalized_path("/apis/clusterregistry.k8s.io/v1alpha1/clusters/"),
            "/apis/clusterregistry.k8s.io/v1alpha1/clusters"
        );
        assert_eq!(normalized_path("/openapi/v3"), "/openapi/v3");
        assert_eq!(normalized_path("/version"), "/version");
    }
}
