//! `[front_proxy]`: the aggregated deployment's front proxy (`crate::auth::front_proxy`).

use serde::{Deserialize, Serialize};

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
    /// The headers naming the user's groups (repeated or comma-free values).
    pub group_headers: String,
    /// The prefixes of the headers carrying the user's extra attributes.
    pub extra_headers_prefix: String,
    /// A Kubernetes group naming a Fleetyard project starts with this prefix (it is taken off);
    /// empty: every group not starting with `system:` is a project.
    pub project_group_prefix: String,
    /// The roles a caller has in the project its group names (more may come from the
    /// `alpha.kubernetes.io/identity/roles` extra).
    pub project_roles: String,
    /// Kubernetes groups whose members act with the `admin` role.
    pub admin_groups: String,
}

impl Default for FrontProxySection {
    fn default() -> Self {
        FrontProxySection {
            client_ca_file: String::new(),
            allowed_names: String::new(),
            username_headers: "X-Remote-User".into(),
            group_headers: "X-Remote-Group".into(),
            extra_headers_prefix: "X-Remote-Extra-".into(),
            project_group_prefix: String::new(),
            project_roles: "member,reader".into(),
            admin_groups: String::new(),
        }
    }
}
