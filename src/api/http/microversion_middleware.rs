//! The `/v1` scope's middleware for [`super::microversion`]: the negotiated version in the
//! request extensions, the version headers on every response, 406 for a header refused.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue, VARY};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError};

use super::error::ApiError;
use super::microversion::{
    negotiate, Version, VersionError, HEADER, MAX_VERSION, MIN_VERSION, SERVICE_TYPE,
};

/// Middleware for the `/v1` scope: negotiates, stores the [`Version`] in the request
/// extensions and writes the four version headers on every response it can.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let header = req
        .headers()
        .get(HEADER)
        .map(|v| v.to_str().unwrap_or("\u{0}").to_string());
    match negotiate(header.as_deref()) {
        Ok(version) => {
            req.extensions_mut().insert(version);
            let mut resp = next.call(req).await?.map_into_boxed_body();
            add_headers(resp.headers_mut(), Some(version));
            Ok(resp)
        }
        Err(VersionError::Malformed) => {
            let resp = ApiError::Framework(StatusCode::NOT_ACCEPTABLE).error_response();
            Ok(req.into_response(resp))
        }
        Err(VersionError::Unsupported) => {
            let mut resp = ApiError::MicroversionUnsupported.error_response();
            add_headers(resp.headers_mut(), None);
            Ok(req.into_response(resp))
        }
    }
}

fn add_headers(headers: &mut actix_web::http::header::HeaderMap, version: Option<Version>) {
    let pairs = [
        ("openstack-api-minimum-version", Some(MIN_VERSION)),
        ("openstack-api-maximum-version", Some(MAX_VERSION)),
        ("openstack-api-version", version),
    ];
    for (name, v) in pairs {
        if let Some(v) = v {
            if let Ok(value) = HeaderValue::from_str(&format!("{SERVICE_TYPE} {v}")) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
    }
    headers.insert(VARY, HeaderValue::from_static("OpenStack-API-Version"));
}
