//! What the Kubernetes-facing paths share at the edge, as kube-apiserver behaves there:
//! discovery and OpenAPI documents need an authenticated caller when authentication is on
//! (only `/version` and the health endpoints are public); a resource request that accepts only
//! protobuf is a 406; every error is a `metav1.Status` (a path nothing serves, a body over the
//! limit, a method a path does not take), never the Magnum error body of `/v1`; a response
//! asked for as `application/yaml` is YAML; and, before anything else, a front proxy's
//! request is reviewed when reviews decide ([`super::delegated`]), then `Impersonate-*`
//! headers are honoured or refused ([`super::impersonate`]).

use actix_web::body::{self, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, ResponseError};

use super::status::KubeError;
use crate::api::RequestContext;

/// The media types a resource answers in.
const ACCEPTED: &str =
    "application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io";

/// Whether `path` is a discovery or OpenAPI document (not a resource).
fn is_document(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(
        segments.as_slice(),
        ["openapi", ..] | ["api"] | ["api", "v1"] | ["apis"] | ["apis", _] | ["apis", _, _]
    )
}

/// Whether `path` is served under `/api` or `/apis` (documents and resources).
fn is_api(path: &str) -> bool {
    path == "/api" || path == "/apis" || path.starts_with("/api/") || path.starts_with("/apis/")
}

/// How a response is written, from `Accept`: the first media range the service can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Json,
    Yaml,
    /// Only media types the service does not write (protobuf, CBOR).
    Unacceptable,
}

fn wanted(accept: &str) -> Wanted {
    if accept.trim().is_empty() {
        return Wanted::Json;
    }
    for range in accept.split(',').take(32) {
        let media = range
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/yaml" => return Wanted::Yaml,
            "application/json" | "application/*" | "*/*" | "" => return Wanted::Json,
            _ => {}
        }
    }
    Wanted::Unacceptable
}

/// The middleware of every Kubernetes-facing route.
pub async fn middleware(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let path = req.path().to_string();
    if let Err(e) = super::delegated::authorize(&mut req).await {
        return Ok(req.into_response(e.error_response()));
    }
    if let Err(e) = super::impersonate::apply(&mut req).await {
        return Ok(req.into_response(e.error_response()));
    }
    if is_document(&path) {
        if let Err(e) = req.extract::<RequestContext>().await {
            return Ok(req.into_response(KubeError::from(e).error_response()));
        }
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let api = is_api(&path);
    let format = wanted(&accept);
    if api && !is_document(&path) && format == Wanted::Unacceptable {
        let err = KubeError::NotAcceptable(format!(
            "only the following media types are accepted: {ACCEPTED}"
        ));
        return Ok(req.into_response(err.error_response()));
    }
    let watching = req
        .query_string()
        .split('&')
        .any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True"));
    let resp = next.call(req).await?.map_into_boxed_body();
    let status = resp.status();
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (status.is_client_error() || status.is_server_error()) && !json {
        let err = KubeError::from_status(status);
        return Ok(resp.into_response(err.error_response()));
    }
    if api && format == Wanted::Yaml && json && status.is_success() && !watching {
        let (req, res) = resp.into_parts();
        let (head, body) = res.into_parts();
        let bytes = match body::to_bytes(body).await {
            Ok(b) => b,
            Err(_) => {
                let err = KubeError::internal(anyhow::anyhow!("response body unreadable"));
                return Ok(ServiceResponse::new(req, err.error_response()));
            }
        };
        let yaml = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| serde_norway::to_string(&v).ok());
        let mut out = HttpResponse::build(head.status());
        for (k, v) in head.headers() {
            if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
                out.append_header((k.clone(), v.clone()));
            }
        }
        let out = match yaml {
            Some(text) => out.content_type("application/yaml").body(text),
            None => out.content_type("application/json").body(bytes),
        };
        return Ok(ServiceResponse::new(req, out));
    }
    Ok(resp)
}

/// A method a Kubernetes-facing path does not take: 405 in a `Status`.
pub async fn method_not_allowed() -> HttpResponse {
    KubeError::MethodNotAllowedHere.error_response()
}

/// The answer for a path nothing serves: a `Status` under the Kubernetes-facing roots,
/// Magnum's framework 404 elsewhere (another method on `/`, say).
pub async fn not_found(req: actix_web::HttpRequest) -> HttpResponse {
    let first = req
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    if crate::api::http::request::KUBE_ROOTS.contains(&first) {
        KubeError::path_not_found().error_response()
    } else {
        crate::api::v1::not_found().await
    }
}

impl KubeError {
    /// The Status of an error the framework answered itself (no handler's error).
    pub fn from_status(status: StatusCode) -> KubeError {
        match status.as_u16() {
            404 => KubeError::path_not_found(),
            405 => KubeError::MethodNotAllowedHere,
            401 => KubeError::Unauthorized,
            413 => KubeError::RequestEntityTooLarge(crate::api::MAX_BODY_BYTES),
            415 => KubeError::UnsupportedMediaType,
            503 => KubeError::ServiceUnavailable(
                "The service is temporarily unavailable; try again shortly.".into(),
            ),
            _ if status.is_client_error() => KubeError::BadRequest(
                status
                    .canonical_reason()
                    .unwrap_or("Bad Request")
                    .to_string(),
            ),
            _ => KubeError::internal(anyhow::anyhow!("framework error {status}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_told_from_resources() {
        for doc in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/clusterregistry.k8s.io",
            "/apis/clusterregistry.k8s.io/v1alpha1",
            "/openapi/v3",
            "/openapi/v3/apis/clusterregistry.k8s.io/v1alpha1",
            "/openapi/v2",
        ] {
            assert!(is_document(doc), "{doc}");
        }
        for res in [
            "/apis/clusterregistry.k8s.io/v1alpha1/clusters",
            "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/p/clusters/x",
            "/api/v1/namespaces",
            "/version",
        ] {
            assert!(!is_document(res), "{res}");
        }
    }

    #[test]
    fn accept_picks_the_first_range_the_service_writes() {
        assert_eq!(wanted(""), Wanted::Json);
        assert_eq!(wanted("application/json"), Wanted::Json);
        assert_eq!(wanted("application/yaml"), Wanted::Yaml);
        assert_eq!(
            wanted("application/vnd.kubernetes.protobuf, application/json"),
            Wanted::Json
        );
        assert_eq!(
            wanted("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
            Wanted::Json
        );
        assert_eq!(
            wanted("application/vnd.kubernetes.protobuf"),
            Wanted::Unacceptable
        );
        assert_eq!(wanted("application/cbor"), Wanted::Unacceptable);
        assert_eq!(wanted("*/*"), Wanted::Json);
    }
}
