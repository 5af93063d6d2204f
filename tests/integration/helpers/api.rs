//! One method per endpoint of `/v1`. `TestApp` speaks as its default identity (a member of
//! project-a at the default microversion); `app.with_headers(&h)` speaks as another identity
//! and `.at("1.10")` at another microversion. Each method answers the raw `Resp`, so a test
//! asserts the status and the body it expects; `make_*` in `fleet` are the asserting shortcuts.
//!
//! ```ignore
//! let r = app.create_cluster(&json!({"name": "k1", "cluster_template_id": t})).await;
//! app.with_headers(&app.project_b()).at("latest").get_cluster(&uuid).await.assert_error(404, ..);
//! ```

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use super::{at, Resp, TestApp};

pub const TEMPLATES: &str = "/v1/clustertemplates";
pub const CLUSTERS: &str = "/v1/clusters";
pub const FEDERATIONS: &str = "/v1/federations";
pub const CERTIFICATES: &str = "/v1/certificates";
pub const CREDENTIALS: &str = "/v1/credentials";
pub const QUOTAS: &str = "/v1/quotas";

/// The app seen through other headers: another identity, another microversion, or both.
pub struct Caller<'a> {
    app: &'a TestApp,
    headers: HeaderMap,
}

impl Caller<'_> {
    /// The same caller at microversion `version` (`latest` allowed).
    pub fn at(self, version: &str) -> Self {
        Caller {
            app: self.app,
            headers: at(&self.headers, version),
        }
    }
}

impl TestApp {
    /// The app as `headers` (an identity from `as_identity`, `admin()`, `project_b()`, ...).
    pub fn with_headers(&self, headers: &HeaderMap) -> Caller<'_> {
        Caller {
            app: self,
            headers: headers.clone(),
        }
    }

    /// The app as its default identity at microversion `version`.
    pub fn at(&self, version: &str) -> Caller<'_> {
        self.with_headers(&self.headers).at(version)
    }
}

/// The endpoints, for any caller. Bring it into scope (`use crate::helpers::Api`) to call them.
pub(crate) trait Api {
    fn app(&self) -> &TestApp;
    fn headers(&self) -> &HeaderMap;

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Resp {
        self.app().request(method, path, self.headers(), body).await
    }

    // ---- /v1/clustertemplates --------------------------------------------------------------

    async fn create_template(&self, body: &Value) -> Resp {
        self.call(Method::POST, TEMPLATES, Some(body)).await
    }
    async fn get_template(&self, ident: &str) -> Resp {
        self.call(Method::GET, &format!("{TEMPLATES}/{ident}"), None)
            .await
    }
    /// `query` is appended as given (`""`, `"?limit=2"`).
    async fn list_templates(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{TEMPLATES}{query}"), None)
            .await
    }
    async fn list_templates_detail(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{TEMPLATES}/detail{query}"), None)
            .await
    }
    async fn patch_template(&self, ident: &str, ops: &Value) -> Resp {
        self.call(Method::PATCH, &format!("{TEMPLATES}/{ident}"), Some(ops))
            .await
    }
    async fn delete_template(&self, ident: &str) -> Resp {
        self.call(Method::DELETE, &format!("{TEMPLATES}/{ident}"), None)
            .await
    }

    // ---- /v1/clusters ----------------------------------------------------------------------

    async fn create_cluster(&self, body: &Value) -> Resp {
        self.call(Method::POST, CLUSTERS, Some(body)).await
    }
    async fn get_cluster(&self, ident: &str) -> Resp {
        self.call(Method::GET, &format!("{CLUSTERS}/{ident}"), None)
            .await
    }
    async fn list_clusters(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{CLUSTERS}{query}"), None)
            .await
    }
    async fn list_clusters_detail(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{CLUSTERS}/detail{query}"), None)
            .await
    }
    async fn patch_cluster(&self, ident: &str, ops: &Value) -> Resp {
        self.call(Method::PATCH, &format!("{CLUSTERS}/{ident}"), Some(ops))
            .await
    }
    async fn delete_cluster(&self, ident: &str) -> Resp {
        self.call(Method::DELETE, &format!("{CLUSTERS}/{ident}"), None)
            .await
    }
    /// An administrator's forced delete (`?force=true`, microversion 1.18).
    async fn force_delete_cluster(&self, ident: &str) -> Resp {
        self.call(
            Method::DELETE,
            &format!("{CLUSTERS}/{ident}?force=true"),
            None,
        )
        .await
    }
    async fn resize_cluster(&self, ident: &str, body: &Value) -> Resp {
        let path = format!("{CLUSTERS}/{ident}/actions/resize");
        self.call(Method::POST, &path, Some(body)).await
    }
    async fn upgrade_cluster(&self, ident: &str, body: &Value) -> Resp {
        let path = format!("{CLUSTERS}/{ident}/actions/upgrade");
        self.call(Method::POST, &path, Some(body)).await
    }
    /// Retries a failed create in place (microversion 1.16), without a body.
    async fn retry_cluster(&self, ident: &str) -> Resp {
        let path = format!("{CLUSTERS}/{ident}/actions/retry");
        self.call(Method::POST, &path, None).await
    }

    // ---- /v1/clusters/{cluster}/nodegroups -------------------------------------------------

    async fn create_nodegroup(&self, cluster: &str, body: &Value) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups");
        self.call(Method::POST, &path, Some(body)).await
    }
    async fn get_nodegroup(&self, cluster: &str, ident: &str) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups/{ident}");
        self.call(Method::GET, &path, None).await
    }
    async fn list_nodegroups(&self, cluster: &str, query: &str) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups{query}");
        self.call(Method::GET, &path, None).await
    }
    async fn patch_nodegroup(&self, cluster: &str, ident: &str, ops: &Value) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups/{ident}");
        self.call(Method::PATCH, &path, Some(ops)).await
    }
    async fn delete_nodegroup(&self, cluster: &str, ident: &str) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups/{ident}");
        self.call(Method::DELETE, &path, None).await
    }
    /// An administrator's forced delete of a node group (microversion 1.18).
    async fn force_delete_nodegroup(&self, cluster: &str, ident: &str) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups/{ident}?force=true");
        self.call(Method::DELETE, &path, None).await
    }
    /// Retries a node group's failed create in place (microversion 1.17), without a body.
    async fn retry_nodegroup(&self, cluster: &str, ident: &str) -> Resp {
        let path = format!("{CLUSTERS}/{cluster}/nodegroups/{ident}/actions/retry");
        self.call(Method::POST, &path, None).await
    }

    // ---- /v1/federations -------------------------------------------------------------------

    async fn create_federation(&self, body: &Value) -> Resp {
        self.call(Method::POST, FEDERATIONS, Some(body)).await
    }
    /// An administrator's forced delete of a federation (microversion 1.18).
    async fn force_delete_federation(&self, ident: &str) -> Resp {
        let path = format!("{FEDERATIONS}/{ident}?force=true");
        self.call(Method::DELETE, &path, None).await
    }
    async fn get_federation(&self, ident: &str) -> Resp {
        self.call(Method::GET, &format!("{FEDERATIONS}/{ident}"), None)
            .await
    }
    async fn list_federations(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{FEDERATIONS}{query}"), None)
            .await
    }
    async fn list_federations_detail(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{FEDERATIONS}/detail{query}"), None)
            .await
    }
    async fn patch_federation(&self, ident: &str, ops: &Value) -> Resp {
        self.call(Method::PATCH, &format!("{FEDERATIONS}/{ident}"), Some(ops))
            .await
    }
    async fn delete_federation(&self, ident: &str) -> Resp {
        self.call(Method::DELETE, &format!("{FEDERATIONS}/{ident}"), None)
            .await
    }
    /// Retries a federation's failed create in place (microversion 1.17), without a body.
    async fn retry_federation(&self, ident: &str) -> Resp {
        let path = format!("{FEDERATIONS}/{ident}/actions/retry");
        self.call(Method::POST, &path, None).await
    }
    /// Adds `cluster` to the federation's members (Magnum's patch dialect).
    async fn join(&self, federation: &str, cluster: &str) -> Resp {
        self.patch_federation(federation, &join_ops(cluster)).await
    }
    /// Removes `cluster` from the federation's members.
    async fn unjoin(&self, federation: &str, cluster: &str) -> Resp {
        self.patch_federation(federation, &unjoin_ops(cluster))
            .await
    }

    // ---- /v1/certificates, /v1/credentials -------------------------------------------------

    async fn get_certificate(&self, cluster: &str) -> Resp {
        self.call(Method::GET, &format!("{CERTIFICATES}/{cluster}"), None)
            .await
    }
    async fn sign_certificate(&self, body: &Value) -> Resp {
        self.call(Method::POST, CERTIFICATES, Some(body)).await
    }
    /// Rotates the cluster's CA, with the JSON `null` body the client sends.
    async fn rotate_ca(&self, cluster: &str) -> Resp {
        let path = format!("{CERTIFICATES}/{cluster}");
        self.call(Method::PATCH, &path, Some(&Value::Null)).await
    }
    /// Rotates the cluster's credentials (from 1.12), with a JSON `null` body.
    async fn rotate_credentials(&self, cluster: &str) -> Resp {
        let path = format!("{CREDENTIALS}/{cluster}");
        self.call(Method::PATCH, &path, Some(&Value::Null)).await
    }

    // ---- /v1/quotas, /v1/stats, /v1/mservices ----------------------------------------------

    async fn create_quota(&self, body: &Value) -> Resp {
        self.call(Method::POST, QUOTAS, Some(body)).await
    }
    async fn get_quota(&self, project: &str, resource: &str) -> Resp {
        let path = format!("{QUOTAS}/{project}/{resource}");
        self.call(Method::GET, &path, None).await
    }
    async fn list_quotas(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("{QUOTAS}{query}"), None)
            .await
    }
    async fn patch_quota(&self, project: &str, resource: &str, body: &Value) -> Resp {
        let path = format!("{QUOTAS}/{project}/{resource}");
        self.call(Method::PATCH, &path, Some(body)).await
    }
    async fn delete_quota(&self, project: &str, resource: &str) -> Resp {
        let path = format!("{QUOTAS}/{project}/{resource}");
        self.call(Method::DELETE, &path, None).await
    }
    async fn get_stats(&self, query: &str) -> Resp {
        self.call(Method::GET, &format!("/v1/stats{query}"), None)
            .await
    }
    async fn list_services(&self) -> Resp {
        self.call(Method::GET, "/v1/mservices", None).await
    }
}

impl Api for TestApp {
    fn app(&self) -> &TestApp {
        self
    }
    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

impl Api for Caller<'_> {
    fn app(&self) -> &TestApp {
        self.app
    }
    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// The patch that adds `cluster` to a federation's members.
pub fn join_ops(cluster: &str) -> Value {
    json!([{"op": "add", "path": "/member_ids", "value": cluster}])
}

/// The patch that removes `cluster` from a federation's members.
pub fn unjoin_ops(cluster: &str) -> Value {
    json!([{"op": "remove", "path": "/member_ids", "value": cluster}])
}
