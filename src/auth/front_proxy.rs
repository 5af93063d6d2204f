//! The aggregated deployment's authentication: behind a kube-apiserver, the aggregation layer
//! (its front proxy) forwards each request with the caller in `X-Remote-User`,
//! `X-Remote-Group` and `X-Remote-Extra-<key>` headers, and proves itself with its front-proxy
//! client certificate, as Kubernetes' request-header authenticator expects
//! (`--requestheader-client-ca-file`, `--requestheader-allowed-names`).
//!
//! The headers are believed only on a connection whose client certificate chains to the
//! request-header CA, is meant for client authentication and has an allowed common name: the
//! connection is judged once, after its handshake ([`FrontProxy::judge`]), and each request on
//! it reads the judgement. Anywhere else the headers are ignored and logged; the caller is then
//! whoever the auth strategy names.
//!
//! A forwarded user becomes a Fleetyard caller by the rules of impersonation (the
//! `k8s-keystone-auth` mapping of [`super::impersonation`]): the user name is the user id, a
//! group that names a project (every group outside `system:`, or those starting with
//! `[front_proxy] project_group_prefix`) is the project, the `alpha.kubernetes.io/identity/…`
//! extras give roles, project and domain, and `[front_proxy] admin_groups` give `admin`.
//! Extras of other keys (kube-apiserver forwards its own, such as
//! `authentication.kubernetes.io/credential-id`) are left out.
//!
//! With `[front_proxy] authorization_mode = subject_access_review` the mapping does not
//! decide: each request of a forwarded caller is asked of the kube-apiserver
//! ([`super::access_review`], `crate::api::kube::delegated`), with the user, uid, groups and
//! every extra as forwarded, and an allowed request acts in the namespace it names
//! ([`FrontProxy::reviewed_identity`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;

use super::access_review::Reviewer;
use super::impersonation::{self, Malformed};
use super::Identity;
use crate::config::{split_list, FrontProxySection};

/// The most header values one forwarded caller may carry.
const MAX_VALUES: usize = 64;

/// What a connection's client certificate says about the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// A front proxy: the certificate's common name.
    Proxy(String),
    /// Not a front proxy, and why (no certificate, another CA, a name not allowed).
    Other(String),
}

/// The `[front_proxy]` configuration, loaded.
pub struct FrontProxy {
    roots: RootCertStore,
    verifier: Arc<dyn ClientCertVerifier>,
    allowed_names: Vec<String>,
    username_headers: Vec<String>,
    uid_headers: Vec<String>,
    group_headers: Vec<String>,
    extra_prefixes: Vec<String>,
    project_prefix: String,
    project_roles: Vec<String>,
    admin_groups: Vec<String>,
    /// The kube-apiserver's reviews (`authorization_mode = subject_access_review`).
    reviewer: Option<Reviewer>,
}

/// The caller a front proxy forwarded, as it forwarded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    pub user: String,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    /// Every extra, by its decoded key.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for FrontProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontProxy")
            .field("allowed_names", &self.allowed_names)
            .field("username_headers", &self.username_headers)
            .finish_non_exhaustive()
    }
}

fn lower_list(text: &str) -> Vec<String> {
    split_list(text)
        .into_iter()
        .map(|h| h.to_ascii_lowercase())
        .collect()
}

impl FrontProxy {
    /// The front proxy `[front_proxy]` configures, or `None` without a `client_ca_file`; a CA
    /// file that cannot be read or holds no certificate is an error naming it.
    pub fn from_settings(s: &FrontProxySection) -> anyhow::Result<Option<FrontProxy>> {
        let path = s.client_ca_file.trim();
        if path.is_empty() {
            return Ok(None);
        }
        let roots = crate::tls::client_roots(Path::new(path))
            .map_err(|e| anyhow::anyhow!("[front_proxy] client_ca_file: {e}"))?;
        let provider: Arc<CryptoProvider> = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots.clone()), provider)
                .build()
                .map_err(|e| anyhow::anyhow!("[front_proxy] client_ca_file: {e}"))?;
        let username_headers = lower_list(&s.username_headers);
        if username_headers.is_empty() {
            anyhow::bail!("[front_proxy] username_headers: at least one header is needed");
        }
        let reviewer = if s.reviews() {
            Some(Reviewer::from_settings(s)?)
        } else {
            None
        };
        Ok(Some(FrontProxy {
            roots,
            verifier,
            allowed_names: split_list(&s.allowed_names),
            username_headers,
            uid_headers: lower_list(&s.uid_headers),
            group_headers: lower_list(&s.group_headers),
            extra_prefixes: lower_list(&s.extra_headers_prefix),
            project_prefix: s.project_group_prefix.trim().to_string(),
            project_roles: split_list(&s.project_roles)
                .into_iter()
                .map(|r| r.to_lowercase())
                .collect(),
            admin_groups: split_list(&s.admin_groups),
            reviewer,
        }))
    }

    /// The kube-apiserver's reviews, when they decide what a forwarded caller may do.
    pub fn reviewer(&self) -> Option<&Reviewer> {
        self.reviewer.as_ref()
    }

    /// Who a forwarded `user` acts as once a review allowed its request: in `namespace` (its
    /// project) with `[front_proxy] project_roles`; without a namespace, a read the review
    /// allowed at the cluster scope (`everywhere`) also has the `admin` role, so that it sees
    /// every project as the review said it may.
    pub fn reviewed_identity(
        &self,
        user: &str,
        namespace: Option<&str>,
        everywhere: bool,
    ) -> Identity {
        let mut roles = match namespace {
            Some(_) => self.project_roles.clone(),
            None => Vec::new(),
        };
        if everywhere {
            roles.extend(self.project_roles.iter().cloned());
            roles.push("admin".into());
        }
        roles.sort();
        roles.dedup();
        Identity {
            user_id: user.to_string(),
            project_id: namespace.unwrap_or_default().to_string(),
            domain_id: None,
            roles,
            system_scope: None,
            is_admin_project: false,
        }
    }

    /// The request-header CA, which the TLS server also accepts client certificates from.
    pub fn roots(&self) -> &RootCertStore {
        &self.roots
    }

    /// Whether the certificates a client presented (leaf first) make it a front proxy.
    pub fn judge(&self, certificates: Option<&[CertificateDer<'_>]>) -> Peer {
        let Some((leaf, intermediates)) = certificates.and_then(<[_]>::split_first) else {
            return Peer::Other("no client certificate".into());
        };
        if let Err(e) = self
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
        {
            return Peer::Other(format!(
                "the client certificate is not from the request-header CA: {e}"
            ));
        }
        let name = common_name(leaf).unwrap_or_default();
        if self.allowed_names.is_empty() || self.allowed_names.contains(&name) {
            Peer::Proxy(name)
        } else {
            Peer::Other(format!(
                "the client certificate's common name {name:?} is not in [front_proxy] \
                 allowed_names"
            ))
        }
    }

    /// Whether a header is one the front proxy forwards the caller in.
    pub fn is_forwarding_header(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.username_headers.contains(&name)
            || self.uid_headers.contains(&name)
            || self.group_headers.contains(&name)
            || self.extra_prefixes.iter().any(|p| name.starts_with(p))
    }

    /// The caller a front proxy forwarded in `headers` (every name and value, a repeated
    /// header once per value), or `None` when no user header is present.
    pub fn forwarded<'a>(
        &self,
        headers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Option<Forwarded>, Malformed> {
        let mut user: Option<(usize, String)> = None;
        let mut uid: Option<(usize, String)> = None;
        let mut groups = Vec::new();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut count = 0usize;
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if !self.is_forwarding_header(&name) {
                continue;
            }
            count += 1;
            if count > MAX_VALUES {
                return Err(Malformed(format!(
                    "a forwarded request may carry at most {MAX_VALUES} caller headers"
                )));
            }
            let value = value
                .map(str::trim)
                .filter(|v| !v.chars().any(char::is_control))
                .ok_or_else(|| Malformed(format!("the {name} header must be printable text")))?
                .to_string();
            if let Some(rank) = self.username_headers.iter().position(|h| *h == name) {
                if user.as_ref().is_none_or(|(r, _)| rank < *r) {
                    user = Some((rank, value));
                }
            } else if let Some(rank) = self.uid_headers.iter().position(|h| *h == name) {
                if uid.as_ref().is_none_or(|(r, _)| rank < *r) {
                    uid = Some((rank, value));
                }
            } else if self.group_headers.contains(&name) {
                groups.push(value);
            } else if let Some(key) = self
                .extra_prefixes
                .iter()
                .find_map(|p| name.strip_prefix(p.as_str()))
            {
                let key = impersonation::percent_decode(key).ok_or_else(|| {
                    Malformed(format!("the header {name} has an invalid key encoding"))
                })?;
                extra.entry(key).or_default().push(value);
            }
        }
        let Some((_, user)) = user.filter(|(_, u)| !u.is_empty()) else {
            return Ok(None);
        };
        Ok(Some(Forwarded {
            user,
            uid: uid.map(|(_, u)| u).filter(|u| !u.is_empty()),
            groups,
            extra,
        }))
    }

    /// The Fleetyard caller a front proxy forwarded in `headers`, by the mapping, or `None`
    /// when no user header is present.
    pub fn identity<'a>(
        &self,
        headers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Option<Identity>, Malformed> {
        let Some(Forwarded {
            user,
            groups,
            mut extra,
            ..
        }) = self.forwarded(headers)?
        else {
            return Ok(None);
        };
        let admin = groups.iter().any(|g| self.admin_groups.contains(g));
        let projects: Vec<String> = groups
            .iter()
            .filter(|g| !g.starts_with("system:") && !self.admin_groups.contains(g))
            .filter_map(|g| g.strip_prefix(self.project_prefix.as_str()))
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect();
        extra.retain(|k, _| impersonation::is_understood_extra(k));
        let request = impersonation::Request {
            user: Some(user),
            uid: None,
            groups: projects,
            extra,
        };
        let mut identity = request.identity()?;
        if !identity.project_id.is_empty() {
            identity.roles.extend(self.project_roles.iter().cloned());
        }
        if admin {
            identity.roles.push("admin".into());
        }
        identity.roles.sort();
        identity.roles.dedup();
        Ok(Some(identity))
    }
}

/// The first common name of a DER certificate's subject.
fn common_name(der: &CertificateDer<'_>) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let name = cert
        .subject()
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(prefix: &str, admin: &str) -> FrontProxy {
        let ca = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&ca).expect("ca");
        let mut roots = RootCertStore::empty();
        roots.add(cert.der().clone()).expect("root");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots.clone()), provider)
                .build()
                .expect("verifier");
        FrontProxy {
            roots,
            verifier,
            allowed_names: Vec::new(),
            username_headers: vec!["x-remote-user".into()],
            uid_headers: vec!["x-remote-uid".into()],
            group_headers: vec!["x-remote-group".into()],
            extra_prefixes: vec!["x-remote-extra-".into()],
            project_prefix: prefix.into(),
            project_roles: vec!["member".into(), "reader".into()],
            admin_groups: split_list(admin),
            reviewer: None,
        }
    }

    #[test]
    fn a_forwarded_user_becomes_a_caller_by_the_impersonation_rules() {
        let p = proxy("", "ops");
        let who = p
            .identity([
                ("x-remote-user", Some("alice")),
                ("x-remote-group", Some("system:authenticated")),
                ("x-remote-group", Some("project-b")),
                (
                    "x-remote-extra-alpha.kubernetes.io%2fidentity%2froles",
                    Some("member,reader"),
                ),
                (
                    "x-remote-extra-authentication.kubernetes.io%2fcredential-id",
                    Some("X509SHA256=ab"),
                ),
                ("x-other", Some("ignored")),
            ])
            .expect("valid")
            .expect("a user");
        assert_eq!(who.user_id, "alice");
        assert_eq!(who.project_id, "project-b");
        assert_eq!(who.roles, ["member", "reader"]);
        let viewer = p
            .identity([
                ("x-remote-user", Some("vic")),
                (
                    "x-remote-extra-alpha.kubernetes.io%2fidentity%2froles",
                    Some("observer"),
                ),
            ])
            .expect("valid")
            .expect("a user");
        assert_eq!(viewer.project_id, "");
        assert_eq!(viewer.roles, ["observer"], "no project, no project roles");

        let admin = p
            .identity([
                ("x-remote-user", Some("bob")),
                ("x-remote-group", Some("ops")),
            ])
            .expect("valid")
            .expect("a user");
        assert_eq!(admin.project_id, "", "an admin group names no project");
        assert_eq!(admin.roles, ["admin"]);

        assert_eq!(
            p.identity([("x-remote-group", Some("g"))]).expect("valid"),
            None
        );
        let two = p.identity([
            ("x-remote-user", Some("carol")),
            ("x-remote-group", Some("a")),
            ("x-remote-group", Some("b")),
        ]);
        assert!(two.is_err(), "one project per caller: {two:?}");
    }

    #[test]
    fn a_reviewed_caller_keeps_every_forwarded_attribute() {
        let p = proxy("", "");
        let who = p
            .forwarded([
                ("x-remote-user", Some("alice")),
                ("x-remote-uid", Some("u-1")),
                ("x-remote-group", Some("developers")),
                ("x-remote-group", Some("system:authenticated")),
                (
                    "x-remote-extra-authentication.kubernetes.io%2fcredential-id",
                    Some("X509SHA256=ab"),
                ),
            ])
            .expect("valid")
            .expect("a user");
        assert_eq!(who.user, "alice");
        assert_eq!(who.uid.as_deref(), Some("u-1"));
        assert_eq!(who.groups, ["developers", "system:authenticated"]);
        assert_eq!(
            who.extra.get("authentication.kubernetes.io/credential-id"),
            Some(&vec!["X509SHA256=ab".to_string()])
        );
        let acting = p.reviewed_identity("alice", Some("project-a"), false);
        assert_eq!(
            (acting.project_id.as_str(), acting.roles.clone()),
            ("project-a", vec!["member".into(), "reader".into()])
        );
        let everywhere = p.reviewed_identity("alice", None, true);
        assert_eq!(everywhere.project_id, "");
        assert_eq!(everywhere.roles, ["admin", "member", "reader"]);
        assert!(p.reviewed_identity("alice", None, false).roles.is_empty());
    }

    #[test]
    fn a_project_prefix_picks_the_groups_that_name_projects() {
        let p = proxy("fleetyard:", "");
        let who = p
            .identity([
                ("x-remote-user", Some("alice")),
                ("x-remote-group", Some("oidc:developers")),
                ("x-remote-group", Some("fleetyard:project-b")),
            ])
            .expect("valid")
            .expect("a user");
        assert_eq!(who.project_id, "project-b");
    }

    #[test]
    fn no_certificate_or_another_cas_is_not_a_front_proxy() {
        let p = proxy("", "");
        assert!(matches!(p.judge(None), Peer::Other(_)));
        let other = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["front-proxy-client".into()]).expect("p");
        let cert = params.self_signed(&other).expect("cert");
        let certs = [cert.der().clone()];
        match p.judge(Some(&certs)) {
            Peer::Other(why) => assert!(why.contains("not from the request-header CA"), "{why}"),
            Peer::Proxy(name) => panic!("a foreign certificate passed as {name}"),
        }
    }
}
