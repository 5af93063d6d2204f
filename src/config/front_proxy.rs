//! `[front_proxy]`: the aggregated deployment's front proxy (`crate::auth::front_proxy`) and,
//! when it asks the kube-apiserver, its delegated authorizer (`crate::auth::access_review`).

use serde::{Deserialize, Serialize};

/// `authorization_mode`: the forwarded caller's groups map to a project and roles.
pub const MAPPING: &str = "mapping";
/// `authorization_mode`: each forwarded request is asked as a `SubjectAccessReview`.
pub const SUBJECT_ACCESS_REVIEW: &str = "subject_access_review";

/// The longest a cached decision may be believed, in seconds.
pub const MAX_CACHE_TTL: u64 = 3600;
/// The longest a review may take, in seconds.
pub const MAX_TIMEOUT: u64 = 60;
/// The most decisions the cache may hold.
pub const MAX_CACHE_SIZE: usize = 1_000_000;

/// The aggregated deployment: a kube-apiserver's aggregation layer (its front proxy) forwards
/// requests with the caller in `X-Remote-*` headers, which are believed only on HTTPS
/// connections whose client certificate chains to `client_ca_file` and names an allowed
/// common name (kube-apiserver's `--requestheader-*` options).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FrontProxySection {
    /// The request-header CA (PEM): kube-apiserver's `--requestheader-client-ca-file`. Empty:
    /// `X-Remote-*` headers are never believed.
    pub client_ca_file: String,
    /// The common names a front-proxy certificate may have (`--requestheader-allowed-names`);
    /// empty allows any certificate of the CA, as kube-apiserver does.
    pub allowed_names: String,
    /// The headers naming the user, the first present wins.
    pub username_headers: String,
    /// The headers naming the user's uid (kube-apiserver's `--requestheader-uid-headers`).
    pub uid_headers: String,
    /// The headers naming the user's groups (repeated or comma-free values).
    pub group_headers: String,
    /// The prefixes of the headers carrying the user's extra attributes.
    pub extra_headers_prefix: String,
    /// A Kubernetes group naming a Fleetyard project starts with this prefix (it is taken off);
    /// empty: every group not starting with `system:` is a project.
    pub project_group_prefix: String,
    /// The roles a caller has in the project its group names (more may come from the
    /// `alpha.kubernetes.io/identity/roles` extra); with `subject_access_review`, the roles it
    /// has in the namespace a review allowed.
    pub project_roles: String,
    /// Kubernetes groups whose members act with the `admin` role.
    pub admin_groups: String,
    /// How a forwarded caller is authorized: `mapping` (its groups name its project and roles,
    /// the policy decides) or `subject_access_review` (the kube-apiserver decides each
    /// request, as Kubernetes' delegated authorizer).
    pub authorization_mode: String,
    /// The kube-apiserver the reviews go to (`https://host[:port]`).
    pub kube_apiserver_url: String,
    /// The CA bundle (PEM) the kube-apiserver's serving certificate chains to; empty: the
    /// public roots.
    pub kube_apiserver_ca_file: String,
    /// A file holding the bearer token of the reviews (a service account token); read again
    /// for each review, so a rotated token is picked up.
    pub kube_apiserver_token_file: String,
    /// A client certificate and its key (PEM) for the reviews, instead of or beside a token.
    pub kube_apiserver_cert_file: String,
    pub kube_apiserver_key_file: String,
    /// How long an allowed decision is reused, in seconds (0: never).
    pub authorization_allowed_ttl: u64,
    /// How long a denied decision is reused, in seconds (0: never).
    pub authorization_denied_ttl: u64,
    /// The longest a review may take, in seconds, connection included.
    pub authorization_timeout: u64,
    /// The most decisions kept; the least recently used goes first.
    pub authorization_cache_size: usize,
}

impl Default for FrontProxySection {
    fn default() -> Self {
        FrontProxySection {
            client_ca_file: String::new(),
            allowed_names: String::new(),
            username_headers: "X-Remote-User".into(),
            uid_headers: "X-Remote-Uid".into(),
            group_headers: "X-Remote-Group".into(),
            extra_headers_prefix: "X-Remote-Extra-".into(),
            project_group_prefix: String::new(),
            project_roles: "member,reader".into(),
            admin_groups: String::new(),
            authorization_mode: MAPPING.into(),
            kube_apiserver_url: String::new(),
            kube_apiserver_ca_file: String::new(),
            kube_apiserver_token_file: String::new(),
            kube_apiserver_cert_file: String::new(),
            kube_apiserver_key_file: String::new(),
            // As the delegated authorizer of a Kubernetes extension API server
            // (`DelegatingAuthorizationOptions`): 10 s allowed, 10 s denied, a 10 s client
            // timeout; and the webhook authorizer's 8192 cached decisions.
            authorization_allowed_ttl: 10,
            authorization_denied_ttl: 10,
            authorization_timeout: 10,
            authorization_cache_size: 8192,
        }
    }
}

impl FrontProxySection {
    /// Whether each forwarded request is asked as a `SubjectAccessReview`.
    pub fn reviews(&self) -> bool {
        self.authorization_mode.trim() == SUBJECT_ACCESS_REVIEW
    }

    /// What is wrong with the section, in a sentence naming the option.
    pub fn problem(&self) -> Option<String> {
        let mode = self.authorization_mode.trim();
        if mode != MAPPING && mode != SUBJECT_ACCESS_REVIEW {
            return Some(format!(
                "authorization_mode: expected {MAPPING} or {SUBJECT_ACCESS_REVIEW}, not '{mode}'"
            ));
        }
        if !self.reviews() {
            return None;
        }
        if self.client_ca_file.trim().is_empty() {
            return Some(
                "authorization_mode: subject_access_review needs client_ca_file (only a front \
                 proxy's callers are reviewed)"
                    .into(),
            );
        }
        let url = self.kube_apiserver_url.trim();
        match url::Url::parse(url) {
            Ok(u) if u.scheme() == "https" && u.host().is_some() => {}
            _ => {
                return Some(format!(
                    "kube_apiserver_url: expected an https:// URL of the kube-apiserver, not \
                     '{url}'"
                ))
            }
        }
        let cert = !self.kube_apiserver_cert_file.trim().is_empty();
        let key = !self.kube_apiserver_key_file.trim().is_empty();
        if cert != key {
            return Some(
                "kube_apiserver_cert_file and kube_apiserver_key_file: set both or neither".into(),
            );
        }
        if !cert && self.kube_apiserver_token_file.trim().is_empty() {
            return Some(
                "subject_access_review needs a credential for the kube-apiserver: \
                 kube_apiserver_token_file, or kube_apiserver_cert_file and \
                 kube_apiserver_key_file"
                    .into(),
            );
        }
        for (name, ttl) in [
            ("authorization_allowed_ttl", self.authorization_allowed_ttl),
            ("authorization_denied_ttl", self.authorization_denied_ttl),
        ] {
            if ttl > MAX_CACHE_TTL {
                return Some(format!(
                    "{name}: at most {MAX_CACHE_TTL} seconds, not {ttl}"
                ));
            }
        }
        if !(1..=MAX_TIMEOUT).contains(&self.authorization_timeout) {
            return Some(format!(
                "authorization_timeout: between 1 and {MAX_TIMEOUT} seconds, not {}",
                self.authorization_timeout
            ));
        }
        if !(1..=MAX_CACHE_SIZE).contains(&self.authorization_cache_size) {
            return Some(format!(
                "authorization_cache_size: between 1 and {MAX_CACHE_SIZE}, not {}",
                self.authorization_cache_size
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reviewing() -> FrontProxySection {
        FrontProxySection {
            client_ca_file: "/etc/fleetyard/requestheader-ca.pem".into(),
            authorization_mode: SUBJECT_ACCESS_REVIEW.into(),
            kube_apiserver_url: "https://kubernetes.default.svc".into(),
            kube_apiserver_token_file: "/var/run/secrets/kubernetes.io/serviceaccount/token".into(),
            ..FrontProxySection::default()
        }
    }

    #[test]
    fn the_defaults_map_and_a_complete_review_section_passes() {
        assert_eq!(FrontProxySection::default().problem(), None);
        assert!(!FrontProxySection::default().reviews());
        assert_eq!(reviewing().problem(), None);
        assert!(reviewing().reviews());
    }

    #[test]
    fn a_review_section_names_what_it_lacks() {
        let cases: Vec<(FrontProxySection, &str)> = vec![
            (
                FrontProxySection {
                    authorization_mode: "rbac".into(),
                    ..reviewing()
                },
                "authorization_mode: expected",
            ),
            (
                FrontProxySection {
                    client_ca_file: String::new(),
                    ..reviewing()
                },
                "needs client_ca_file",
            ),
            (
                FrontProxySection {
                    kube_apiserver_url: "http://kubernetes.default.svc".into(),
                    ..reviewing()
                },
                "kube_apiserver_url",
            ),
            (
                FrontProxySection {
                    kube_apiserver_token_file: String::new(),
                    ..reviewing()
                },
                "needs a credential",
            ),
            (
                FrontProxySection {
                    kube_apiserver_cert_file: "/c.pem".into(),
                    ..reviewing()
                },
                "set both or neither",
            ),
            (
                FrontProxySection {
                    authorization_allowed_ttl: MAX_CACHE_TTL + 1,
                    ..reviewing()
                },
                "authorization_allowed_ttl",
            ),
            (
                FrontProxySection {
                    authorization_timeout: 0,
                    ..reviewing()
                },
                "authorization_timeout",
            ),
            (
                FrontProxySection {
                    authorization_cache_size: 0,
                    ..reviewing()
                },
                "authorization_cache_size",
            ),
        ];
        for (section, want) in cases {
            let problem = section.problem().unwrap_or_default();
            assert!(problem.contains(want), "{want}: {problem:?}");
        }
    }
}
