//! The HTTP side of `auth_strategy = keystone`: the caller's token from the request, Keystone's
//! answers as Magnum's error bodies, and keystonemiddleware's `WWW-Authenticate` challenge.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::WWW_AUTHENTICATE;
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest};

use super::error::ApiError;
use crate::api::AppState;
use crate::auth::authenticator::Identity;
use crate::auth::keystone::{KeystoneAuth, KeystoneError, UNAUTHORIZED, UNAVAILABLE};
use crate::auth::Authenticator;

impl From<KeystoneError> for ApiError {
    fn from(e: KeystoneError) -> ApiError {
        match e {
            KeystoneError::Missing | KeystoneError::Invalid => {
                ApiError::Unauthorized(UNAUTHORIZED.into())
            }
            KeystoneError::Unavailable(cause) => {
                tracing::error!(error = %cause, "cannot validate a token with Keystone");
                ApiError::ServiceUnavailable(UNAVAILABLE.into())
            }
        }
    }
}

/// The identity behind the request's token, validated by Keystone (or its cache).
pub async fn authenticate(
    keystone: &KeystoneAuth,
    req: &HttpRequest,
) -> Result<Identity, ApiError> {
    let token = request_token(req).ok_or(KeystoneError::Missing)?;
    let identity = keystone.validate(token).await?;
    // As keystonemiddleware: a token scoped to a project, or to the whole system.
    let project_id = match identity.project_id {
        Some(project) => project,
        None if identity.system_scope.is_some() => String::new(),
        None => {
            return Err(ApiError::Unauthorized(format!(
                "{UNAUTHORIZED} The token is not scoped to a project."
            )))
        }
    };
    Ok(Identity {
        user_id: identity.user_id,
        project_id,
        domain_id: identity.domain_id,
        roles: identity
            .roles
            .into_iter()
            .map(|r| r.to_lowercase())
            .collect(),
        system_scope: identity.system_scope,
        is_admin_project: identity.is_admin_project,
    })
}

/// The caller's token: `X-Auth-Token`, else `Authorization: Bearer`.
pub fn request_token(req: &HttpRequest) -> Option<&str> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    header("x-auth-token").or_else(|| {
        header("authorization").and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
                .map(str::trim)
                .filter(|v| !v.is_empty())
        })
    })
}

/// Adds keystonemiddleware's `WWW-Authenticate: Keystone uri="..."` to every 401 when the
/// service authenticates with Keystone.
pub async fn challenge_middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let challenge = req.app_data::<web::Data<AppState>>().and_then(|state| {
        match state.authenticator.as_ref() {
            Authenticator::Keystone(keystone) => Some(keystone.challenge().clone()),
            _ => None,
        }
    });
    let mut res = next.call(req).await?;
    if let Some(value) = challenge {
        if res.status() == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(WWW_AUTHENTICATE, value);
        }
    }
    Ok(res)
}
