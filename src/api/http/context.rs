//! The request context: identity, roles, admin flag and negotiated microversion, extracted
//! once per request from the configured auth strategy.

use std::future::{ready, Ready};
use std::sync::Arc;

use futures_util::future::{Either, LocalBoxFuture};

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use serde_json::{Map, Value};

use super::error::ApiError;
use super::microversion::{Version, MIN_VERSION};
use crate::api::AppState;
use crate::auth::authenticator::Identity;
use crate::auth::front_proxy::Peer;
use crate::auth::policy::{Credentials, Enforcer};
use crate::auth::{Authenticator, Header, IdentifyError};
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

    /// The caller's identity, as the auth strategy told it.
    pub fn identity(&self) -> Identity {
        Identity {
            user_id: self.user_id.clone(),
            project_id: self.project_id.clone(),
            domain_id: self.domain_id.clone(),
            roles: self.roles.clone(),
            system_scope: self.system_scope.clone(),
            is_admin_project: self.is_admin_project,
        }
    }

    /// The same request acting as `identity` (an impersonation the caller was allowed), its
    /// admin flag decided by the policy as for any caller; 400 for an identity the service
    /// cannot take.
    pub fn acting_as(&self, identity: Identity) -> Result<RequestContext, ApiError> {
        if let Some(why) = identity.refusal() {
            return Err(ApiError::bad_request(why));
        }
        Ok(context(
            self.request_id.clone(),
            self.version,
            identity,
            self.enforcer.clone(),
        ))
    }
}

/// The context a request acts under when the Kubernetes face honoured its `Impersonate-*`
/// headers: set in the request's extensions, it replaces the caller the auth strategy names.
#[derive(Debug, Clone)]
pub struct Impersonated(pub RequestContext);

/// The context a front proxy's request acts under once the kube-apiserver's review allowed it
/// (`[front_proxy] authorization_mode = subject_access_review`): set in the request's
/// extensions by the Kubernetes face.
#[derive(Debug, Clone)]
pub struct Reviewed(pub RequestContext);

impl Reviewed {
    /// The context of `identity` for `req` (its request id and microversion), its admin flag
    /// decided by the policy; 400 for an identity the service cannot take.
    pub fn of(req: &HttpRequest, identity: Identity) -> Result<Reviewed, ApiError> {
        let state = req
            .app_data::<web::Data<AppState>>()
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("application state missing")))?;
        if let Some(why) = identity.refusal() {
            return Err(ApiError::bad_request(why));
        }
        let (request_id, version) = request_of(req);
        Ok(Reviewed(context(
            request_id,
            version,
            identity,
            state.enforcer.clone(),
        )))
    }
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Header<'a> {
    match req.headers().get(name).map(|v| v.to_str()) {
        None => Header::Absent,
        Some(Ok(v)) => Header::Text(v.trim()),
        Some(Err(_)) => Header::Malformed,
    }
}

/// `keystone`: the identity a Keystone token gives, validated before [`extract`] runs; the
/// other strategies identify the caller from the headers here.
fn extract(req: &HttpRequest, keystone: Option<Identity>) -> Result<RequestContext, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("application state missing")))?;
    let (request_id, version) = request_of(req);
    let identity = match keystone {
        Some(identity) => identity,
        None => state
            .authenticator
            .identify(|name| header(req, name))
            .map_err(|e| match e {
                IdentifyError::Unauthenticated(why) => ApiError::Unauthorized(why),
                IdentifyError::Malformed(why) => ApiError::bad_request(why),
            })?,
    };
    if let Some(why) = identity.refusal() {
        return Err(ApiError::bad_request(why));
    }
    Ok(context(
        request_id,
        version,
        identity,
        state.enforcer.clone(),
    ))
}

/// The request's id and negotiated microversion, as the middleware recorded them.
fn request_of(req: &HttpRequest) -> (String, Version) {
    let extensions = req.extensions();
    let request_id = extensions
        .get::<RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_default();
    let version = extensions.get::<Version>().copied().unwrap_or(MIN_VERSION);
    (request_id, version)
}

/// The caller a front proxy forwarded (`[front_proxy]`): on a connection judged a front
/// proxy, a request naming a user in the forwarding headers acts as that user, whatever the
/// auth strategy; without a user header the strategy decides. On any other connection the
/// forwarding headers are ignored, and logged.
fn forwarded(req: &HttpRequest) -> Option<Result<RequestContext, ApiError>> {
    let state = req.app_data::<web::Data<AppState>>()?;
    let front_proxy = state.front_proxy.as_deref()?;
    let headers = || {
        req.headers()
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().ok()))
    };
    match req.conn_data::<Peer>() {
        Some(Peer::Proxy(_)) if front_proxy.reviewer().is_some() => {
            // A reviewed request carries its context ([`Reviewed`]); one that names a user and
            // was not reviewed is outside the Kubernetes face, where nothing asks.
            match front_proxy.forwarded(headers()) {
                Ok(None) => None,
                Ok(Some(_)) => Some(Err(ApiError::Forbidden(
                    "A caller forwarded by the kube-apiserver is authorized by a \
                     SubjectAccessReview, on the Kubernetes API only."
                        .into(),
                ))),
                Err(e) => Some(Err(ApiError::bad_request(e.to_string()))),
            }
        }
        Some(Peer::Proxy(_)) => {
            let identity = match front_proxy.identity(headers()) {
                Ok(identity) => identity?,
                Err(e) => return Some(Err(ApiError::bad_request(e.to_string()))),
            };
            if let Some(why) = identity.refusal() {
                return Some(Err(ApiError::bad_request(why)));
            }
            let (request_id, version) = request_of(req);
            Some(Ok(context(
                request_id,
                version,
                identity,
                state.enforcer.clone(),
            )))
        }
        other => {
            if headers().any(|(name, _)| front_proxy.is_forwarding_header(name)) {
                let why = match other {
                    Some(Peer::Other(why)) => why.as_str(),
                    _ => "the connection is not HTTPS",
                };
                tracing::warn!(
                    reason = why,
                    "forwarded-caller headers ignored: the connection is not a front proxy's"
                );
            }
            None
        }
    }
}

/// The context of `identity`, its admin flag decided by `enforcer`.
fn context(
    request_id: String,
    version: Version,
    identity: Identity,
    enforcer: Arc<Enforcer>,
) -> RequestContext {
    let mut creds = Credentials {
        user_id: Some(identity.user_id.clone()),
        // A system-scoped token has no project.
        project_id: Some(identity.project_id.clone()).filter(|p| !p.is_empty()),
        domain_id: identity.domain_id.clone(),
        roles: identity.roles.clone(),
        is_admin: false,
        system_scope: identity.system_scope.clone(),
        is_admin_project: identity.is_admin_project,
    };
    creds.is_admin = enforcer.is_admin(&creds);
    RequestContext {
        request_id,
        user_id: identity.user_id,
        project_id: identity.project_id,
        domain_id: identity.domain_id,
        roles: identity.roles,
        is_admin: creds.is_admin,
        system_scope: identity.system_scope,
        is_admin_project: identity.is_admin_project,
        version,
        enforcer,
    }
}

impl FromRequest for RequestContext {
    type Error = ApiError;
    type Future = Either<
        Ready<Result<Self, Self::Error>>,
        LocalBoxFuture<'static, Result<Self, Self::Error>>,
    >;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        if let Some(Impersonated(ctx)) = req.extensions().get::<Impersonated>() {
            return Either::Left(ready(Ok(ctx.clone())));
        }
        if let Some(Reviewed(ctx)) = req.extensions().get::<Reviewed>() {
            return Either::Left(ready(Ok(ctx.clone())));
        }
        if let Some(forwarded) = forwarded(req) {
            return Either::Left(ready(forwarded));
        }
        let keystone = req.app_data::<web::Data<AppState>>().and_then(|state| {
            match state.authenticator.as_ref() {
                Authenticator::Keystone(keystone) => Some(keystone.clone()),
                _ => None,
            }
        });
        match keystone {
            None => Either::Left(ready(extract(req, None))),
            // Keystone is asked over the network: the only strategy that waits.
            Some(keystone) => {
                let req = req.clone();
                Either::Right(Box::pin(async move {
                    let identity = super::keystone::authenticate(&keystone, &req).await?;
                    extract(&req, Some(identity))
                }))
            }
        }
    }
}
