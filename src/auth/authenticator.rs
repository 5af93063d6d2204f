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

impl Identity {
    /// Why the service cannot take this identity as it is, if it cannot: an id longer than
    /// the columns holding it, or a control character (NUL among them, which PostgreSQL's text
    /// cannot hold) in an id or a role. Whatever the auth strategy, every backend alike.
    pub fn refusal(&self) -> Option<String> {
        let ids = [
            ("user id", Some(&self.user_id)),
            ("project id", Some(&self.project_id)),
            ("domain id", self.domain_id.as_ref()),
        ];
        for (what, value) in ids {
            let Some(value) = value else { continue };
            if value.chars().count() > MAX_ID_LENGTH {
                return Some(format!(
                    "The caller's {what} is longer than {MAX_ID_LENGTH} characters."
                ));
            }
            if value.chars().any(char::is_control) {
                return Some(format!(
                    "The caller's {what} must not hold control characters."
                ));
            }
        }
        if self.roles.iter().any(|r| r.chars().any(char::is_control)) {
            return Some("The caller's roles must not hold control characters.".into());
        }
        None
    }
}

/// Why a request has no identity: a sentence for the answer, never holding a token.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IdentifyError {
    /// 401: no credentials, or credentials that do not verify.
    #[error("{0}")]
    Unauthenticated(String),
    /// 400: identity headers that cannot be taken as they are.
    #[error("{0}")]
    Malformed(String),
}

/// A request header as the authenticator reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header<'r> {
    Absent,
    /// Present, with surrounding white space trimmed (possibly empty).
    Text(&'r str),
    /// Present, but not printable ASCII.
    Malformed,
}

impl<'r> Header<'r> {
    /// The value, when present and not empty.
    pub fn value(self) -> Option<&'r str> {
        match self {
            Header::Text(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }
}

const AUTHENTICATION_REQUIRED: &str = "The request you have made requires authentication.";

/// The headers that name a caller in no-auth mode.
const IDENTITY_HEADERS: [&str; 5] = [
    "X-User-Id",
    "X-Project-Id",
    "X-Tenant-Id",
    "X-Roles",
    "X-Domain-Id",
];

/// The longest user, project or domain id the store keeps (its columns are `VARCHAR(255)`).
pub const MAX_ID_LENGTH: usize = 255;

/// No-auth mode: the identity the headers give. Without any identity header the configured
/// default identity; with any, the headers alone (a missing `X-Roles` means no roles), so a
/// request can never fall back to the default's roles by leaving one header out or empty.
fn noauth_identity<'r>(
    defaults: &NoauthSection,
    header: &impl Fn(&str) -> Header<'r>,
) -> Result<(String, String, Vec<String>, Option<String>), IdentifyError> {
    if IDENTITY_HEADERS
        .iter()
        .all(|name| header(name) == Header::Absent)
    {
        return Ok((
            defaults.user_id.clone(),
            defaults.project_id.clone(),
            split_list(&defaults.roles),
            None,
        ));
    }
    let mut values = [None; IDENTITY_HEADERS.len()];
    for (slot, name) in values.iter_mut().zip(IDENTITY_HEADERS) {
        *slot = match header(name) {
            Header::Absent => None,
            Header::Malformed => {
                return Err(IdentifyError::Malformed(format!(
                    "The {name} header must be printable ASCII."
                )))
            }
            Header::Text(v) if v.chars().count() > MAX_ID_LENGTH && name != "X-Roles" => {
                return Err(IdentifyError::Malformed(format!(
                    "The {name} header is longer than {MAX_ID_LENGTH} characters."
                )))
            }
            Header::Text(v) => Some(v).filter(|v| !v.is_empty()),
        };
    }
    let [user, project, tenant, roles, domain] = values;
    let user = user.ok_or_else(|| {
        IdentifyError::Malformed(
            "The X-User-Id header is required when a request names its identity in headers.".into(),
        )
    })?;
    let project = project.or(tenant).ok_or_else(|| {
        IdentifyError::Malformed(
            "The X-Project-Id header is required when a request names its identity in headers."
                .into(),
        )
    })?;
    Ok((
        user.to_string(),
        project.to_string(),
        roles.map(split_list).unwrap_or_default(),
        domain.map(String::from),
    ))
}

impl Authenticator {
    /// The caller's identity from the request's headers.
    pub fn identify<'r>(
        &self,
        header: impl Fn(&str) -> Header<'r>,
    ) -> Result<Identity, IdentifyError> {
        let (user_id, project_id, roles, domain_id) = match self {
            Authenticator::Noauth(defaults) => noauth_identity(defaults, &header)?,
            Authenticator::Jwt(verifier) => {
                let token = header("x-auth-token").value().or_else(|| {
                    header("authorization").value().and_then(|v| {
                        v.strip_prefix("Bearer ")
                            .or_else(|| v.strip_prefix("bearer "))
                            .map(str::trim)
                    })
                });
                let Some(token) = token else {
                    return Err(IdentifyError::Unauthenticated(
                        AUTHENTICATION_REQUIRED.into(),
                    ));
                };
                let identity = verifier.verify(token).map_err(|e| {
                    IdentifyError::Unauthenticated(format!("{AUTHENTICATION_REQUIRED} {e}"))
                })?;
                let project = identity.project_id.ok_or_else(|| {
                    IdentifyError::Unauthenticated(format!(
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
                return Err(IdentifyError::Unauthenticated(
                    AUTHENTICATION_REQUIRED.into(),
                ))
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
