//! Who is calling: the configured auth strategy turns a request's headers into an [`Identity`].

use std::sync::Arc;

use super::keystone::KeystoneAuth;
use super::token::TokenVerifier;
use crate::config::{split_list, NoauthSection};

/// How requests are authenticated.
pub enum Authenticator {
    /// Identity from `X-User-Id`/`X-Project-Id`/`X-Roles`, else the configured default.
    Noauth(NoauthSection),
    /// A JWT from `X-Auth-Token` or `Authorization: Bearer`.
    Jwt(Box<TokenVerifier>),
    /// A Keystone token from `X-Auth-Token` or `Authorization: Bearer`, validated by Keystone
    /// over the network (asynchronously, before [`Authenticator::identify`] would run).
    Keystone(Arc<KeystoneAuth>),
}

/// The caller, as the auth strategy tells it; roles are lower-cased.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub user_id: String,
    pub project_id: String,
    pub domain_id: Option<String>,
    pub roles: Vec<String>,
    /// `all` for a system-scoped Keystone token (its `project_id` is then empty).
    pub system_scope: Option<String>,
    /// Keystone's `is_admin_project`; true for the other strategies, as oslo.context defaults.
    pub is_admin_project: bool,
}

/// Why a request is not authenticated: a sentence for the 401 body, never holding the token.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unauthenticated(pub String);

const AUTHENTICATION_REQUIRED: &str = "The request you have made requires authentication.";

impl Authenticator {
    /// The caller's identity. `header` gives a request header's trimmed value, `None` when the
    /// header is absent or empty.
    pub fn identify<'r>(
        &self,
        header: impl Fn(&str) -> Option<&'r str>,
    ) -> Result<Identity, Unauthenticated> {
        let (user_id, project_id, roles, domain_id) = match self {
            Authenticator::Noauth(defaults) => {
                let user = header("x-user-id")
                    .map(String::from)
                    .unwrap_or_else(|| defaults.user_id.clone());
                let project = header("x-project-id")
                    .or_else(|| header("x-tenant-id"))
                    .map(String::from)
                    .unwrap_or_else(|| defaults.project_id.clone());
                let roles = split_list(header("x-roles").unwrap_or(&defaults.roles));
                let domain = header("x-domain-id").map(String::from);
                (user, project, roles, domain)
            }
            Authenticator::Jwt(verifier) => {
                let token = header("x-auth-token").or_else(|| {
                    header("authorization").and_then(|v| {
                        v.strip_prefix("Bearer ")
                            .or_else(|| v.strip_prefix("bearer "))
                            .map(str::trim)
                    })
                });
                let Some(token) = token else {
                    return Err(Unauthenticated(AUTHENTICATION_REQUIRED.into()));
                };
                let identity = verifier
                    .verify(token)
                    .map_err(|e| Unauthenticated(format!("{AUTHENTICATION_REQUIRED} {e}")))?;
                let project = identity.project_id.ok_or_else(|| {
                    Unauthenticated(format!(
                        "{AUTHENTICATION_REQUIRED} The token is not scoped to a project."
                    ))
                })?;
                (
                    identity.user_id,
                    project,
                    identity.roles,
                    identity.domain_id,
                )
            }
            // Needs a network round trip: the request context validates it asynchronously
            // and never asks for it here.
            Authenticator::Keystone(_) => {
                return Err(Unauthenticated(AUTHENTICATION_REQUIRED.into()))
            }
        };
        Ok(Identity {
            user_id,
            project_id,
            domain_id,
            roles: roles.into_iter().map(|r| r.to_lowercase()).collect(),
            system_scope: None,
            is_admin_project: true,
        })
    }
}
