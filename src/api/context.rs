//! The request context: identity, roles, admin flag and negotiated microversion, extracted
//! once per request from the configured auth strategy.

use std::future::{ready, Ready};
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use serde_json::{Map, Value};

use super::error::ApiError;
use super::microversion::{Version, MIN_VERSION};
use super::AppState;
use crate::auth::policy::{Credentials, Enforcer};
use crate::domain::Scope;

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
    pub version: Version,
    enforcer: Arc<Enforcer>,
}

impl RequestContext {
    pub fn credentials(&self) -> Credentials {
        Credentials {
            user_id: Some(self.user_id.clone()),
            project_id: Some(self.project_id.clone()),
            domain_id: self.domain_id.clone(),
            roles: self.roles.clone(),
            is_admin: self.is_admin,
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

fn extract(req: &HttpRequest) -> Result<RequestContext, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
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
    let identity = state
        .authenticator
        .identify(|name| header(req, name))
        .map_err(|e| ApiError::Unauthorized(e.0))?;
    let mut creds = Credentials {
        user_id: Some(identity.user_id.clone()),
        project_id: Some(identity.project_id.clone()),
        domain_id: identity.domain_id.clone(),
        roles: identity.roles.clone(),
        is_admin: false,
    };
    creds.is_admin = state.enforcer.is_admin(&creds);
    Ok(RequestContext {
        request_id,
        user_id: identity.user_id,
        project_id: identity.project_id,
        domain_id: identity.domain_id,
        roles: identity.roles,
        is_admin: creds.is_admin,
        version,
        enforcer: state.enforcer.clone(),
    })
}

impl FromRequest for RequestContext {
    type Error = ApiError;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        ready(extract(req))
    }
}
