//! The outermost middleware: the request id and root span, path rerouting under `/v1`, a URL
//! holding `%00` refused, and Magnum's error body on errors produced outside the handlers.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::{StatusCode, Uri};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, ResponseError};
use tracing::Instrument;

use super::context::RequestId;
use super::error::{self, ApiError};

/// First path segments of the Kubernetes-facing APIs, served as they come (not rerouted under
/// `/v1`).
pub const KUBE_ROOTS: &[&str] = &[
    "api", "apis", "openapi", "version", "healthz", "readyz", "livez",
];

pub const REQUEST_ID_HEADER: &str = "x-openstack-request-id";

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
        f if KUBE_ROOTS.contains(&f) => trimmed.to_string(),
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
