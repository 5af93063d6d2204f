//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-*` on the
//! Kubernetes face: honoured for a caller the `registry:impersonate` rule allows (the request
//! then acts as the identity the headers name, see [`crate::auth::impersonation`]), refused
//! with kube-apiserver's 403 otherwise, never ignored. `/v1` takes no such headers.

use actix_web::dev::ServiceRequest;
use actix_web::HttpMessage;

use super::access::{impersonation_target, IMPERSONATE};
use super::status::{KubeError, Resource};
use crate::api::http::context::Impersonated;
use crate::api::RequestContext;
use crate::auth::impersonation::Request;

/// Core `users`, what an impersonation is refused on.
pub const USERS: Resource = Resource {
    group: "",
    version: "v1",
    plural: "users",
    singular: "user",
    kind: "User",
    list_kind: "UserList",
};

/// When `req` carries impersonation headers: checks them and that the caller may impersonate,
/// and sets the impersonated identity as the request's context.
pub async fn apply(req: &mut ServiceRequest) -> Result<(), KubeError> {
    let headers = req
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str(), value.to_str().ok()));
    let asked = Request::from_headers(headers).map_err(|e| KubeError::BadRequest(e.0))?;
    let Some(asked) = asked else {
        return Ok(());
    };
    let ctx = req
        .extract::<RequestContext>()
        .await
        .map_err(KubeError::from)?;
    let identity = asked.identity().map_err(|e| KubeError::BadRequest(e.0))?;
    let target = impersonation_target(&identity.user_id, &identity.project_id);
    if !ctx.allowed(IMPERSONATE.rule, &target) {
        return Err(KubeError::Forbidden {
            resource: &USERS,
            verb: IMPERSONATE.verb.into(),
            name: Some(identity.user_id),
            namespace: None,
            user: ctx.user_id,
        });
    }
    tracing::info!(
        caller = %ctx.user_id,
        caller_project = %ctx.project_id,
        user = %identity.user_id,
        project = %identity.project_id,
        roles = %identity.roles.join(","),
        "impersonation"
    );
    let acting = ctx.acting_as(identity).map_err(KubeError::from)?;
    req.extensions_mut().insert(Impersonated(acting));
    Ok(())
}
