//! The request context: identity, roles, admin flag and negotiated microversion, extracted
//! once per request from the configured auth strategy.

use std::future::{ready, Ready};
use std::sync::Arc;

use futures_util::future::{Either, LocalBoxFuture};

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use serde_json::{Map, Value};

use super::keystone::{KeystoneAuth, KeystoneIdentity};
use super::policy::{Credentials, Enforcer};
use super::token::TokenVerifier;
use crate::api::error::ApiError;
use crate::api::microversion::{Version, MIN_VERSION};
use crate::config::{split_list, NoauthSection};
use crate::store::Scope;

/// How requests are authenticated.
pub enum Authenticator {
    /// Identity from `X-User-Id`/`X-Project-Id`/`X-Roles`, else the configured default.
    Noauth(NoauthSection),
    /// A JWT from `X-Auth-Token` or `Authorization: Bearer`.
    Jwt(Box<TokenVerifier>),
    /// A Keystone token from `X-Auth-Token` or `Authorization: Bearer`, validated by Keystone.
    Keystone(Arc<KeystoneAuth>),
}

/// The request id, set by the request-id middleware.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

#[derive(Debug, Clone)]
pub struct RequestContext {
    pub request_id: String,
    pub user_id: String,
    pub project_id: String,
    pub domain_id: Option<String>,
    pub roles: Vec<String>,
    pub is_admin: bool,
    /// `all` for a system-scoped Keystone token.
    pub system_scope: Option<String>,
    pub is_admin_project: bool,
    pub version: Version,
    enforcer: Arc<Enforcer>,
}

impl RequestContext {
    pub fn credentials(&self) -> Credentials {
        Credentials {
            user_id: Some(self.user_id.clone()),
            // A system-scoped token has no project.
            project_id: Some(self.project_id.clone()).filter(|p| !p.is_empty()),
            domain_id: self.domain_id.clone(),
            roles: self.roles.clone(),
            is_admin: self.is_admin,
            system_scope: self.system_scope.clone(),
            is_admin_project: self.is_admin_project,
        }
    }

    /// The target for rules that protect no particular object: the caller's own project.
    pub fn own_target(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("project_id".into(), Value::String(self.project_id.clone()));
        m.insert("user_id".into(), Value::String(self.user_id.clone()));
        m
    }

    pub fn allowed(&self, rule: &str, target: &Map<String, Value>) -> bool {
        self.enforcer.enforce(rule, target, &self.credentials())
    }

    /// 403 "Policy doesn't allow <rule> to be performed." unless the rule passes.
    pub fn authorize(&self, rule: &str, target: &Map<String, Value>) -> Result<(), ApiError> {
        if self.allowed(rule, target) {
            Ok(())
        } else {
            Err(ApiError::policy(rule))
        }
    }

    pub fn authorize_own(&self, rule: &str) -> Result<(), ApiError> {
        self.authorize(rule, &self.own_target())
    }

    /// The rows this caller sees: its project, or every project for an admin.
    pub fn scope(&self) -> Scope {
        Scope {
            project_id: self.project_id.clone(),
            all_projects: self.is_admin,
        }
    }

    pub fn project_scope(&self) -> Scope {
        Scope {
            project_id: self.project_id.clone(),
            all_projects: false,
        }
    }

    pub fn at_least(&self, major: u16, minor: u16) -> bool {
        self.version >= Version::new(major, minor)
    }
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// `keystone`: the identity its token gives (validated before [`extract`] runs).
fn extract(
    req: &HttpRequest,
    keystone: Option<KeystoneIdentity>,
) -> Result<RequestContext, ApiError> {
    let state = req
        .app_data::<web::Data<crate::startup::AppState>>()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("application state missing")))?;
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_default();
    let version = req
        .extensions()
        .get::<Version>()
        .copied()
        .unwrap_or(MIN_VERSION);
    let mut system_scope = None;
    let mut is_admin_project = true;
    let (user_id, project_id, roles, domain_id) = match state.authenticator.as_ref() {
        Authenticator::Noauth(defaults) => {
            let user = header(req, "x-user-id")
                .unwrap_or(&defaults.user_id)
                .to_string();
            let project = header(req, "x-project-id")
                .or_else(|| header(req, "x-tenant-id"))
                .unwrap_or(&defaults.project_id)
                .to_string();
            let roles = split_list(header(req, "x-roles").unwrap_or(&defaults.roles));
            let domain = header(req, "x-domain-id").map(String::from);
            (user, project, roles, domain)
        }
        Authenticator::Jwt(verifier) => {
            let token = header(req, "x-auth-token").or_else(|| {
                header(req, "authorization").and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                        .map(str::trim)
                })
            });
            let Some(token) = token else {
                return Err(ApiError::Unauthorized(
                    "The request you have made requires authentication.".into(),
                ));
            };
            let identity = verifier.verify(token).map_err(|e| {
                ApiError::Unauthorized(format!(
                    "The request you have made requires authentication. {e}"
                ))
            })?;
            let project = identity.project_id.ok_or_else(|| {
                ApiError::Unauthorized(
                    "The request you have made requires authentication. The token is not scoped to a project."
                        .into(),
                )
            })?;
            (
                identity.user_id,
                project,
                identity.roles,
                identity.domain_id,
            )
        }
        Authenticator::Keystone(_) => {
            let identity = keystone
                .ok_or_else(|| ApiError::internal(anyhow::anyhow!("keystone identity missing")))?;
            system_scope = identity.system_scope;
            is_admin_project = identity.is_admin_project;
            // As keystonemiddleware: a token scoped to a project, or to the whole system.
            let project = match identity.project_id {
                Some(project) => project,
                None if system_scope.is_some() => String::new(),
                None => {
                    return Err(ApiError::Unauthorized(
                        "The request you have made requires authentication. The token is not scoped to a project."
                            .into(),
                    ))
                }
            };
            (
                identity.user_id,
                project,
                identity.roles,
                identity.domain_id,
            )
        }
    };
    let roles: Vec<String> = roles.into_iter().map(|r| r.to_lowercase()).collect();
    let mut creds = Credentials {
        user_id: Some(user_id.clone()),
        project_id: Some(project_id.clone()),
        domain_id: domain_id.clone(),
        roles: roles.clone(),
        is_admin: false,
        system_scope: system_scope.clone(),
        is_admin_project,
    };
    if project_id.is_empty() {
        creds.project_id = None;
    }
    creds.is_admin = state.enforcer.is_admin(&creds);
    Ok(RequestContext {
        request_id,
        user_id,
        project_id,
        domain_id,
        roles,
        is_admin: creds.is_admin,
        system_scope,
        is_admin_project,
        version,
        enforcer: state.enforcer.clone(),
    })
}

impl FromRequest for RequestContext {
    type Error = ApiError;
    type Future = Either<
        Ready<Result<Self, Self::Error>>,
        LocalBoxFuture<'static, Result<Self, Self::Error>>,
    >;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        let keystone = req
            .app_data::<web::Data<crate::startup::AppState>>()
            .and_then(|state| match state.authenticator.as_ref() {
                Authenticator::Keystone(keystone) => Some(keystone.clone()),
                _ => None,
            });
        match keystone {
            None => Either::Left(ready(extract(req, None))),
            // Keystone is asked over the network: the only strategy that waits.
            Some(keystone) => {
                let req = req.clone();
                Either::Right(Box::pin(async move {
                    let identity = keystone.authenticate(&req).await?;
                    extract(&req, Some(identity))
                }))
            }
        }
    }
}
