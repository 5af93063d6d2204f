//! The OpenAPI document (`GET /v1/openapi.json`) is served without a token, is OpenAPI 3.1, and
//! is true: every api-ref sample response and a real response of every operation it lists
//! validate against its schemas (JSON Schema 2020-12, the document's components resolved
//! locally), and its schemas are strict enough that a renamed, missing or extra field fails.

use std::collections::BTreeSet;

use fleetyard::conductor::{Conductor, Outcome};
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::spawn_pki;
use crate::helpers::{header_map, spawn_jwt, Backend, Resp, TestApp};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/api-ref/source/samples");

fn sample(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{SAMPLES}/{name}")).expect("sample exists");
    serde_json::from_str(&text).expect("sample is JSON")
}

/// Every api-ref response sample: the operation (method, path template) and status it shows.
const SAMPLE_OPERATIONS: &[(&str, &str, &str, u16)] = &[
    ("versions-get-resp.json", "get", "/", 200),
    ("version-v1-get-resp.json", "get", "/v1", 200),
    (
        "clustertemplate-create-resp.json",
        "post",
        "/v1/clustertemplates",
        201,
    ),
    (
        "clustertemplates-list-resp.json",
        "get",
        "/v1/clustertemplates",
        200,
    ),
    (
        "clustertemplate-get-resp.json",
        "get",
        "/v1/clustertemplates/{clustertemplate_ident}",
        200,
    ),
    (
        "clustertemplate-update-resp.json",
        "patch",
        "/v1/clustertemplates/{clustertemplate_ident}",
        200,
    ),
    (
        "error-not-found-resp.json",
        "get",
        "/v1/clustertemplates/{clustertemplate_ident}",
        404,
    ),
    (
        "error-microversion-resp.json",
        "get",
        "/v1/clustertemplates",
        406,
    ),
    ("cluster-create-resp.json", "post", "/v1/clusters", 202),
    ("clusters-list-resp.json", "get", "/v1/clusters", 200),
    (
        "cluster-get-resp.json",
        "get",
        "/v1/clusters/{cluster_ident}",
        200,
    ),
    (
        "cluster-update-resp.json",
        "patch",
        "/v1/clusters/{cluster_ident}",
        202,
    ),
    (
        "cluster-resize-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/actions/resize",
        202,
    ),
    (
        "cluster-upgrade-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/actions/upgrade",
        202,
    ),
    (
        "cluster-retry-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/actions/retry",
        202,
    ),
    (
        "nodegroup-retry-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry",
        202,
    ),
    (
        "federation-retry-resp.json",
        "post",
        "/v1/federations/{federation_ident}/actions/retry",
        202,
    ),
    (
        "nodegroup-create-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/nodegroups",
        202,
    ),
    (
        "nodegroups-list-resp.json",
        "get",
        "/v1/clusters/{cluster_ident}/nodegroups",
        200,
    ),
    (
        "nodegroup-get-resp.json",
        "get",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
        200,
    ),
    (
        "nodegroup-update-resp.json",
        "patch",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
        202,
    ),
    (
        "nodegroup-roll-resp.json",
        "patch",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
        202,
    ),
    (
        "machines-list-resp.json",
        "get",
        "/v1/clusters/{cluster_ident}/machines",
        200,
    ),
    (
        "machine-get-resp.json",
        "get",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}",
        200,
    ),
    (
        "machine-create-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines",
        202,
    ),
    (
        "machine-update-resp.json",
        "patch",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}",
        202,
    ),
    (
        "machine-replace-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/replace",
        202,
    ),
    (
        "machine-reboot-resp.json",
        "post",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/reboot",
        202,
    ),
    (
        "clustergroup-create-resp.json",
        "post",
        "/v1/clustergroups",
        201,
    ),
    (
        "clustergroup-update-resp.json",
        "patch",
        "/v1/clustergroups/{clustergroup_ident}",
        200,
    ),
    (
        "clustergroups-list-resp.json",
        "get",
        "/v1/clustergroups",
        200,
    ),
    (
        "clustergroup-member-add-resp.json",
        "post",
        "/v1/clustergroups/{clustergroup_ident}/members",
        201,
    ),
    (
        "clustergroup-members-list-resp.json",
        "get",
        "/v1/clustergroups/{clustergroup_ident}/members",
        200,
    ),
    (
        "clustergroup-binding-create-resp.json",
        "post",
        "/v1/clustergroups/{clustergroup_ident}/bindings",
        201,
    ),
    (
        "clustergroup-bindings-list-resp.json",
        "get",
        "/v1/clustergroups/{clustergroup_ident}/bindings",
        200,
    ),
    (
        "error-cluster-force-delete-resp.json",
        "delete",
        "/v1/clusters/{cluster_ident}",
        403,
    ),
    (
        "error-federation-force-delete-resp.json",
        "delete",
        "/v1/federations/{federation_ident}",
        403,
    ),
    (
        "error-nodegroup-force-delete-resp.json",
        "delete",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
        403,
    ),
    (
        "error-nodegroup-delete-default-resp.json",
        "delete",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
        400,
    ),
    (
        "federation-create-resp.json",
        "post",
        "/v1/federations",
        202,
    ),
    ("federation-list-resp.json", "get", "/v1/federations", 200),
    (
        "federation-get-resp.json",
        "get",
        "/v1/federations/{federation_ident}",
        200,
    ),
    (
        "federation-update-resp.json",
        "patch",
        "/v1/federations/{federation_ident}",
        202,
    ),
    (
        "federation-join-conflict-resp.json",
        "patch",
        "/v1/federations/{federation_ident}",
        409,
    ),
    (
        "certificate-get-resp.json",
        "get",
        "/v1/certificates/{cluster_ident}",
        200,
    ),
    (
        "certificate-sign-resp.json",
        "post",
        "/v1/certificates",
        201,
    ),
    (
        "certificate-rotate-resp.json",
        "patch",
        "/v1/certificates/{cluster_ident}",
        202,
    ),
    (
        "credential-rotate-resp.json",
        "patch",
        "/v1/credentials/{cluster_ident}",
        202,
    ),
    ("quota-create-resp.json", "post", "/v1/quotas", 201),
    ("quotas-list-resp.json", "get", "/v1/quotas", 200),
    (
        "quota-get-resp.json",
        "get",
        "/v1/quotas/{project_id}/{resource}",
        200,
    ),
    (
        "quota-get-default-resp.json",
        "get",
        "/v1/quotas/{project_id}/{resource}",
        200,
    ),
    (
        "quota-update-resp.json",
        "patch",
        "/v1/quotas/{project_id}/{resource}",
        202,
    ),
    ("stats-get-resp.json", "get", "/v1/stats", 200),
    ("mservices-list-resp.json", "get", "/v1/mservices", 200),
];

/// Every api-ref request sample: the operation (method, path template) it is sent to.
const REQUEST_SAMPLES: &[(&str, &str, &str)] = &[
    ("clustergroup-create-req.json", "post", "/v1/clustergroups"),
    (
        "clustergroup-update-req.json",
        "patch",
        "/v1/clustergroups/{clustergroup_ident}",
    ),
    (
        "clustergroup-member-add-req.json",
        "post",
        "/v1/clustergroups/{clustergroup_ident}/members",
    ),
    (
        "clustergroup-binding-create-req.json",
        "post",
        "/v1/clustergroups/{clustergroup_ident}/bindings",
    ),
    (
        "clustertemplate-create-req.json",
        "post",
        "/v1/clustertemplates",
    ),
    (
        "clustertemplate-update-req.json",
        "patch",
        "/v1/clustertemplates/{clustertemplate_ident}",
    ),
    ("cluster-create-req.json", "post", "/v1/clusters"),
    (
        "cluster-update-req.json",
        "patch",
        "/v1/clusters/{cluster_ident}",
    ),
    (
        "cluster-resize-req.json",
        "post",
        "/v1/clusters/{cluster_ident}/actions/resize",
    ),
    (
        "cluster-upgrade-req.json",
        "post",
        "/v1/clusters/{cluster_ident}/actions/upgrade",
    ),
    (
        "nodegroup-create-req.json",
        "post",
        "/v1/clusters/{cluster_ident}/nodegroups",
    ),
    (
        "machine-create-req.json",
        "post",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines",
    ),
    (
        "nodegroup-update-req.json",
        "patch",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
    ),
    (
        "nodegroup-roll-req.json",
        "patch",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
    ),
    (
        "machine-update-req.json",
        "patch",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}",
    ),
    (
        "machine-action-req.json",
        "post",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/replace",
    ),
    (
        "machine-action-req.json",
        "post",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/reboot",
    ),
    ("federation-create-req.json", "post", "/v1/federations"),
    (
        "federation-join-req.json",
        "patch",
        "/v1/federations/{federation_ident}",
    ),
    (
        "federation-unjoin-req.json",
        "patch",
        "/v1/federations/{federation_ident}",
    ),
    (
        "federation-update-req.json",
        "patch",
        "/v1/federations/{federation_ident}",
    ),
    ("certificate-sign-req.json", "post", "/v1/certificates"),
    ("quota-create-req.json", "post", "/v1/quotas"),
    (
        "quota-update-req.json",
        "patch",
        "/v1/quotas/{project_id}/{resource}",
    ),
];

/// The served document, and validators built from it.
struct Spec {
    doc: Value,
}

impl Spec {
    async fn fetch(app: &TestApp) -> Spec {
        let r = app.get_as("/v1/openapi.json", &HeaderMap::new()).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            r.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "content type"
        );
        Spec { doc: r.body }
    }

    /// Every (method, path template) the document lists.
    fn operations(&self) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for (path, item) in self.doc["paths"].as_object().expect("paths") {
            for method in ["get", "post", "patch", "put", "delete"] {
                if item.get(method).is_some() {
                    out.insert((method.to_string(), path.clone()));
                }
            }
        }
        out
    }

    fn resolve<'a>(&'a self, v: &'a Value) -> &'a Value {
        match v["$ref"].as_str() {
            Some(r) => {
                let pointer = r.strip_prefix('#').expect("local reference");
                self.doc.pointer(pointer).expect("reference resolves")
            }
            None => v,
        }
    }

    /// The response schema of an operation for a status (`default` when not listed), or None
    /// when that response has no body.
    #[track_caller]
    fn response_schema(&self, method: &str, path: &str, status: u16) -> Option<Value> {
        let op = &self.doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not in the document");
        let responses = &op["responses"];
        let response = responses
            .get(status.to_string())
            .or_else(|| responses.get("default"))
            .unwrap_or_else(|| panic!("{method} {path} lists no {status} response"));
        let response = self.resolve(response);
        response["content"]["application/json"]
            .get("schema")
            .cloned()
    }

    /// Validates a body against the operation's response schema, the document's components
    /// embedded so that `#/components/schemas/...` resolves locally.
    #[track_caller]
    fn check(&self, method: &str, path: &str, status: u16, body: &Value, what: &str) {
        let errors = self.errors(method, path, status, body);
        assert!(
            errors.is_empty(),
            "{what}: the {status} response of {method} {path} does not match the document:\n{}\nbody: {body}",
            errors.join("\n")
        );
    }

    #[track_caller]
    fn errors(&self, method: &str, path: &str, status: u16, body: &Value) -> Vec<String> {
        let Some(schema) = self.response_schema(method, path, status) else {
            assert!(
                body.is_null(),
                "{method} {path} {status} has no body: {body}"
            );
            return Vec::new();
        };
        self.validate(&schema, body, &format!("{method} {path} {status}"))
    }

    /// The request body schema of an operation.
    #[track_caller]
    fn request_schema(&self, method: &str, path: &str) -> Value {
        let op = &self.doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not in the document");
        let body = self.resolve(&op["requestBody"]);
        body["content"]["application/json"]["schema"]
            .as_object()
            .map(|o| Value::Object(o.clone()))
            .unwrap_or_else(|| panic!("{method} {path} documents no JSON request body"))
    }

    /// Why a request body does not match the operation's request schema (none when it does).
    #[track_caller]
    fn request_errors(&self, method: &str, path: &str, body: &Value) -> Vec<String> {
        let schema = self.request_schema(method, path);
        self.validate(&schema, body, &format!("{method} {path} request"))
    }

    /// Validates `body` against `schema`, the document's components embedded so that
    /// `#/components/schemas/...` resolves locally.
    fn validate(&self, schema: &Value, body: &Value, what: &str) -> Vec<String> {
        let mut root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.doc["components"].clone(),
        });
        match schema.as_object() {
            Some(obj) => {
                for (k, v) in obj {
                    root[k] = v.clone();
                }
            }
            None => root["allOf"] = json!([schema]),
        }
        let validator = jsonschema::draft202012::new(&root)
            .unwrap_or_else(|e| panic!("{what}: schema does not compile: {e}"));
        validator
            .iter_errors(body)
            .map(|e| format!("  {e} (at {})", e.instance_path()))
            .collect()
    }
}

#[tokio::test]
async fn the_document_is_openapi_3_1_and_served_without_a_token() {
    let app = spawn_jwt("a-secret-of-sufficient-length-for-hs256").await;
    let r = app.get_as("/v1/clustertemplates", &HeaderMap::new()).await;
    assert_eq!(r.status, 401, "{}", r.text);
    let spec = Spec::fetch(&app).await;
    assert_eq!(spec.doc["openapi"], "3.1.0");
    assert!(spec.doc["info"]["title"].is_string());
    let version = &spec.doc["components"]["parameters"]["OpenStackApiVersion"];
    assert_eq!(version["name"], "OpenStack-API-Version");
    assert_eq!(version["in"], "header");
    let ops = spec.operations();
    for (method, path) in [
        ("get", "/v1"),
        ("get", "/v1/openapi.json"),
        ("post", "/v1/clusters"),
        ("get", "/v1/clusters/detail"),
        ("post", "/v1/clusters/{cluster_ident}/actions/upgrade"),
        ("patch", "/v1/credentials/{cluster_ident}"),
        ("delete", "/v1/quotas/{project_id}/{resource}"),
    ] {
        assert!(
            ops.contains(&(method.to_string(), path.to_string())),
            "{method} {path} missing"
        );
    }
    // Every /v1 operation takes the version header and answers errors with Magnum's body.
    for (method, path) in ops.iter().filter(|(_, p)| p.starts_with("/v1")) {
        let op = &spec.doc["paths"][path][method];
        assert!(
            op["parameters"].as_array().is_some_and(|ps| ps
                .iter()
                .any(|p| p["$ref"] == "#/components/parameters/OpenStackApiVersion")),
            "{method} {path}: no version header"
        );
        assert_eq!(
            op["responses"]["default"]["$ref"], "#/components/responses/Error",
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn every_api_ref_sample_response_matches_the_document() {
    let app = crate::helpers::spawn_app().await;
    let spec = Spec::fetch(&app).await;
    let mapped: BTreeSet<&str> = SAMPLE_OPERATIONS.iter().map(|(s, ..)| *s).collect();
    for entry in std::fs::read_dir(SAMPLES).expect("samples") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        if name.ends_with("-resp.json") {
            assert!(
                mapped.contains(name.as_str()),
                "{name} is not mapped to an operation"
            );
        }
    }
    for (name, method, path, status) in SAMPLE_OPERATIONS {
        spec.check(method, path, *status, &sample(name), name);
    }
}

/// The request samples are what the handlers accept (`api_ref.rs` sends each one and expects
/// it answered as the sample shows), and each matches its operation's documented request
/// schema here: the parser, the samples and the document describe one request.
#[tokio::test]
async fn every_api_ref_request_sample_matches_the_document() {
    let app = crate::helpers::spawn_app().await;
    let spec = Spec::fetch(&app).await;
    let mapped: BTreeSet<&str> = REQUEST_SAMPLES.iter().map(|(s, ..)| *s).collect();
    for entry in std::fs::read_dir(SAMPLES).expect("samples") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        if name.ends_with("-req.json") {
            assert!(
                mapped.contains(name.as_str()),
                "{name} is not mapped to an operation"
            );
        }
    }
    for (name, method, path) in REQUEST_SAMPLES {
        let errors = spec.request_errors(method, path, &sample(name));
        assert!(
            errors.is_empty(),
            "{name} does not match the request schema of {method} {path}:\n{}",
            errors.join("\n")
        );
    }
}

#[tokio::test]
async fn a_renamed_or_extra_request_field_fails_validation() {
    let app = crate::helpers::spawn_app().await;
    let spec = Spec::fetch(&app).await;
    let (method, path) = ("post", "/v1/clusters");
    let good = sample("cluster-create-req.json");
    assert!(spec.request_errors(method, path, &good).is_empty());

    let mut renamed = good.clone();
    let obj = renamed.as_object_mut().expect("object");
    let keypair = obj.remove("keypair").expect("the sample has a keypair");
    obj.insert("key_pair".into(), keypair);
    assert!(
        !spec.request_errors(method, path, &renamed).is_empty(),
        "renamed"
    );

    let mut missing = good.clone();
    missing
        .as_object_mut()
        .expect("object")
        .remove("cluster_template_id");
    assert!(
        !spec.request_errors(method, path, &missing).is_empty(),
        "missing"
    );

    let mut nested = sample("nodegroup-create-req.json");
    nested["node_taints"] = json!([{"key": "k", "effect": "NoSchedule", "efect": "x"}]);
    assert!(
        !spec
            .request_errors("post", "/v1/clusters/{cluster_ident}/nodegroups", &nested)
            .is_empty(),
        "nested extra"
    );
    let patch = json!([{"op": "replace", "path": "/node_count", "value": 2, "from_": "x"}]);
    assert!(
        !spec
            .request_errors("patch", "/v1/clusters/{cluster_ident}", &patch)
            .is_empty(),
        "extra patch member"
    );
}

#[tokio::test]
async fn a_renamed_missing_or_extra_field_fails_validation() {
    let app = crate::helpers::spawn_app().await;
    let spec = Spec::fetch(&app).await;
    let (method, path) = ("get", "/v1/clusters/{cluster_ident}");
    let good = sample("cluster-get-resp.json");
    spec.check(method, path, 200, &good, "the sample");

    let mut renamed = good.clone();
    let keypair = renamed["keypair"].take();
    let obj = renamed.as_object_mut().expect("object");
    obj.remove("keypair");
    obj.insert("key_pair".into(), keypair);
    assert!(
        !spec.errors(method, path, 200, &renamed).is_empty(),
        "renamed"
    );

    let mut missing = good.clone();
    missing
        .as_object_mut()
        .expect("object")
        .remove("updated_at");
    assert!(
        !spec.errors(method, path, 200, &missing).is_empty(),
        "missing"
    );

    let mut extra = good.clone();
    extra["surprise"] = json!(1);
    assert!(!spec.errors(method, path, 200, &extra).is_empty(), "extra");

    let mut nested = sample("clusters-list-resp.json");
    nested["clusters"][0]["links"][0]["hreff"] = json!("x");
    assert!(
        !spec.errors("get", "/v1/clusters", 200, &nested).is_empty(),
        "nested extra"
    );
}

/// Drives the app through every operation the document lists and validates each answer.
struct Driver<'a> {
    app: &'a TestApp,
    spec: &'a Spec,
    conductor: &'a Conductor,
    headers: HeaderMap,
    seen: BTreeSet<(String, String)>,
}

impl Driver<'_> {
    /// Sends `method url` and validates the answer against the operation `path` (a template).
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        url: &str,
        body: Option<&Value>,
        status: u16,
    ) -> Resp {
        let r = self
            .app
            .request(method.clone(), url, &self.headers, body)
            .await;
        assert_eq!(r.status, status, "{method} {url}: {}", r.text);
        let m = method.as_str().to_lowercase();
        self.spec
            .check(&m, path, r.status, &r.body, &format!("{method} {url}"));
        if r.status < 300 {
            self.seen.insert((m, path.to_string()));
        }
        r
    }

    async fn drain(&self) {
        for _ in 0..10_000 {
            if self.conductor.try_execute_one().await.expect("job") == Outcome::Idle {
                return;
            }
        }
        panic!("the conductor did not become idle");
    }
}

#[tokio::test]
async fn a_real_response_of_every_operation_matches_the_document() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let spec = Spec::fetch(app).await;
    // The default no-auth identity (an admin) at the newest microversion.
    let mut d = Driver {
        app,
        spec: &spec,
        conductor: &pki.conductor,
        headers: header_map(&[("OpenStack-API-Version", "container-infra latest")]),
        seen: BTreeSet::new(),
    };
    let id = |r: &Resp| r.body["uuid"].as_str().expect("uuid").to_string();

    // Version discovery and this document.
    d.call(Method::GET, "/", "/", None, 200).await;
    d.call(Method::GET, "/v1", "/v1", None, 200).await;
    d.call(
        Method::GET,
        "/v1/openapi.json",
        "/v1/openapi.json",
        None,
        200,
    )
    .await;

    // Templates.
    let tpl = "/v1/clustertemplates/{clustertemplate_ident}";
    let body = json!({"name": "k8s", "coe": "kubernetes", "image_id": "fedora-coreos-40",
                      "labels": {"kube_tag": "v1.30.1"}});
    let t1 = id(&d
        .call(
            Method::POST,
            "/v1/clustertemplates",
            "/v1/clustertemplates",
            Some(&body),
            201,
        )
        .await);
    let body = json!({"name": "k8s-next", "coe": "kubernetes", "image_id": "fedora-coreos-41"});
    let t2 = id(&d
        .call(
            Method::POST,
            "/v1/clustertemplates",
            "/v1/clustertemplates",
            Some(&body),
            201,
        )
        .await);
    d.call(
        Method::GET,
        "/v1/clustertemplates",
        "/v1/clustertemplates",
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        "/v1/clustertemplates/detail",
        "/v1/clustertemplates/detail",
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        tpl,
        &format!("/v1/clustertemplates/{t1}"),
        None,
        200,
    )
    .await;
    let patch = json!([{"op": "replace", "path": "/name", "value": "k8s-renamed"}]);
    d.call(
        Method::PATCH,
        tpl,
        &format!("/v1/clustertemplates/{t1}"),
        Some(&patch),
        200,
    )
    .await;
    d.call(Method::GET, tpl, "/v1/clustertemplates/nope", None, 404)
        .await;
    let body = json!({"name": "gone", "coe": "kubernetes", "image_id": "fedora-coreos-40"});
    let t3 = id(&d
        .call(
            Method::POST,
            "/v1/clustertemplates",
            "/v1/clustertemplates",
            Some(&body),
            201,
        )
        .await);
    d.call(
        Method::DELETE,
        tpl,
        &format!("/v1/clustertemplates/{t3}"),
        None,
        204,
    )
    .await;

    // Clusters.
    let one = "/v1/clusters/{cluster_ident}";
    let body = json!({"name": "k8s-a", "cluster_template_id": t1, "node_count": 1});
    let c = id(&d
        .call(
            Method::POST,
            "/v1/clusters",
            "/v1/clusters",
            Some(&body),
            202,
        )
        .await);
    let body = json!({"name": "k8s-b", "cluster_template_id": t1});
    let member = id(&d
        .call(
            Method::POST,
            "/v1/clusters",
            "/v1/clusters",
            Some(&body),
            202,
        )
        .await);
    d.drain().await;
    d.call(Method::GET, "/v1/clusters", "/v1/clusters", None, 200)
        .await;
    d.call(
        Method::GET,
        "/v1/clusters/detail",
        "/v1/clusters/detail?limit=1",
        None,
        200,
    )
    .await;
    d.call(Method::GET, one, &format!("/v1/clusters/{c}"), None, 200)
        .await;
    // Below 1.13 the handle is `stack_id`; a project member sees no project_id in summaries.
    let saved = std::mem::replace(&mut d.headers, app.headers.clone());
    d.call(Method::GET, one, &format!("/v1/clusters/{c}"), None, 404)
        .await;
    d.call(Method::GET, "/v1/clusters", "/v1/clusters", None, 200)
        .await;
    d.headers = header_map(&[("OpenStack-API-Version", "container-infra 1.5")]);
    d.call(Method::GET, one, &format!("/v1/clusters/{c}"), None, 200)
        .await;
    d.call(Method::GET, "/v1/clusters", "/v1/clusters", None, 200)
        .await;
    d.call(
        Method::GET,
        "/v1/clusters/{cluster_ident}/nodegroups",
        &format!("/v1/clusters/{c}/nodegroups"),
        None,
        406,
    )
    .await;
    d.headers = header_map(&[("OpenStack-API-Version", "container-infra 1.99")]);
    d.call(Method::GET, "/v1/clusters", "/v1/clusters", None, 406)
        .await;
    d.headers = saved;
    let patch = json!([{"op": "replace", "path": "/node_count", "value": 2}]);
    d.call(
        Method::PATCH,
        one,
        &format!("/v1/clusters/{c}"),
        Some(&patch),
        202,
    )
    .await;
    d.drain().await;
    let resize = "/v1/clusters/{cluster_ident}/actions/resize";
    d.call(
        Method::POST,
        resize,
        &format!("/v1/clusters/{c}/actions/resize"),
        Some(&json!({"node_count": 3})),
        202,
    )
    .await;
    d.drain().await;

    // Node groups.
    let ngs = "/v1/clusters/{cluster_ident}/nodegroups";
    let ng_one = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}";
    let body = json!({"name": "gpu", "node_count": 1, "max_node_count": 3,
                      "node_labels": {"gpu": "true"},
                      "node_taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]});
    let ng = id(&d
        .call(
            Method::POST,
            ngs,
            &format!("/v1/clusters/{c}/nodegroups"),
            Some(&body),
            202,
        )
        .await);
    d.drain().await;
    d.call(
        Method::GET,
        ngs,
        &format!("/v1/clusters/{c}/nodegroups"),
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        "/v1/clusters/{cluster_ident}/nodegroups/detail",
        &format!("/v1/clusters/{c}/nodegroups/detail"),
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        ng_one,
        &format!("/v1/clusters/{c}/nodegroups/{ng}"),
        None,
        200,
    )
    .await;
    let patch = json!([{"op": "replace", "path": "/max_node_count", "value": 5}]);
    d.call(
        Method::PATCH,
        ng_one,
        &format!("/v1/clusters/{c}/nodegroups/{ng}"),
        Some(&patch),
        202,
    )
    .await;
    d.drain().await;
    d.call(
        Method::DELETE,
        ng_one,
        &format!("/v1/clusters/{c}/nodegroups/default-worker"),
        None,
        400,
    )
    .await;
    d.call(
        Method::DELETE,
        ng_one,
        &format!("/v1/clusters/{c}/nodegroups/{ng}"),
        None,
        204,
    )
    .await;
    d.drain().await;

    // Machines (a row written for the show; the list answers whatever the cluster has).
    let machines = "/v1/clusters/{cluster_ident}/machines";
    let machine = "/v1/clusters/{cluster_ident}/machines/{machine_ident}";
    let worker = d
        .call(
            Method::GET,
            ng_one,
            &format!("/v1/clusters/{c}/nodegroups/default-worker"),
            None,
            200,
        )
        .await;
    let text = |k: &str| worker.body[k].as_str().expect(k).to_string();
    let (worker, project) = (text("uuid"), text("project_id"));
    let m = "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f61";
    let m_spec = json!({"versions": {"kubelet": "v1.30.1"},
                      "taints": [{"key": "k", "effect": "NoSchedule"}]});
    let m_status = json!({"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                        "lastChange": "Replace", "lastUpdated": "2026-11-27T10:00:00Z"});
    crate::helpers::exec_sql(
        &app.db.url,
        &[format!(
            "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
             phase, provider_id, status, created_at) VALUES ('{m}', 'openapi-machine-1', \
             'worker', '{project}', '{c}', '{worker}', '{m_spec}', 'Running', 'openstack:///m', \
             '{m_status}', CURRENT_TIMESTAMP)"
        )],
    )
    .await;
    d.call(
        Method::GET,
        machines,
        &format!("/v1/clusters/{c}/machines?limit=1"),
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        machine,
        &format!("/v1/clusters/{c}/machines/{m}"),
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        machine,
        &format!("/v1/clusters/{c}/machines/nope"),
        None,
        404,
    )
    .await;
    // One machine's changes (microversion 1.20), each run to the end before the next.
    d.call(
        Method::PATCH,
        machine,
        &format!("/v1/clusters/{c}/machines/{m}"),
        Some(&json!([{"op": "replace", "path": "/os_image", "value": "fedora-coreos-41"}])),
        202,
    )
    .await;
    d.call(
        Method::PATCH,
        machine,
        &format!("/v1/clusters/{c}/machines/{m}"),
        Some(&json!([{"op": "replace", "path": "/flavor", "value": "m1.large"}])),
        400,
    )
    .await;
    d.drain().await;
    for action in ["replace", "reboot"] {
        let path =
            format!("/v1/clusters/{{cluster_ident}}/machines/{{machine_ident}}/actions/{action}");
        d.call(
            Method::POST,
            &path,
            &format!("/v1/clusters/{c}/machines/{m}/actions/{action}"),
            Some(&json!({})),
            202,
        )
        .await;
        d.call(
            Method::POST,
            &path,
            &format!("/v1/clusters/{c}/machines/{m}/actions/{action}"),
            Some(&json!({})),
            409,
        )
        .await;
        d.drain().await;
    }
    d.call(
        Method::DELETE,
        machine,
        &format!("/v1/clusters/{c}/machines/{m}"),
        None,
        204,
    )
    .await;
    d.call(
        Method::DELETE,
        machine,
        &format!("/v1/clusters/{c}/machines/{m}"),
        None,
        409,
    )
    .await;
    d.drain().await;
    let create = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines";
    let created = &format!("/v1/clusters/{c}/nodegroups/default-worker/machines");
    let body = sample("machine-create-req.json");
    d.call(Method::POST, create, created, Some(&body), 202)
        .await;
    d.call(Method::POST, create, created, Some(&body), 409)
        .await;
    d.drain().await;

    // Certificates and credentials.
    let cert = "/v1/certificates/{cluster_ident}";
    d.call(
        Method::GET,
        cert,
        &format!("/v1/certificates/{c}"),
        None,
        200,
    )
    .await;
    let mut csr = sample("certificate-sign-req.json");
    csr["cluster_uuid"] = Value::String(c.clone());
    d.call(
        Method::POST,
        "/v1/certificates",
        "/v1/certificates",
        Some(&csr),
        201,
    )
    .await;
    csr["ca_cert_type"] = json!("kubernetes");
    d.call(
        Method::POST,
        "/v1/certificates",
        "/v1/certificates",
        Some(&csr),
        201,
    )
    .await;
    d.call(
        Method::PATCH,
        cert,
        &format!("/v1/certificates/{c}"),
        None,
        202,
    )
    .await;
    d.drain().await;
    d.call(
        Method::PATCH,
        "/v1/credentials/{cluster_ident}",
        &format!("/v1/credentials/{c}"),
        None,
        202,
    )
    .await;
    d.drain().await;
    let upgrade = "/v1/clusters/{cluster_ident}/actions/upgrade";
    let body = json!({"cluster_template": t2, "max_batch_size": 1});
    d.call(
        Method::POST,
        upgrade,
        &format!("/v1/clusters/{c}/actions/upgrade"),
        Some(&body),
        202,
    )
    .await;
    d.drain().await;
    d.call(Method::GET, one, &format!("/v1/clusters/{c}"), None, 200)
        .await;
    // A create that fails, retried (the simulator fails it again).
    let body = json!({"name": "k8s-failed", "cluster_template_id": t1,
                      "labels": {"fake_fail": "create"}});
    let failed = id(&d
        .call(
            Method::POST,
            "/v1/clusters",
            "/v1/clusters",
            Some(&body),
            202,
        )
        .await);
    d.drain().await;
    d.call(
        Method::POST,
        "/v1/clusters/{cluster_ident}/actions/retry",
        &format!("/v1/clusters/{failed}/actions/retry"),
        None,
        202,
    )
    .await;
    d.drain().await;
    // A node group create and a federation create that fail, retried (1.17; the simulator
    // fails them again: the cluster's label fails node group work and federations).
    let body = json!({"name": "k8s-refusing", "cluster_template_id": t1,
                      "labels": {"fake_fail": "update,federation"}});
    let refusing = id(&d
        .call(
            Method::POST,
            "/v1/clusters",
            "/v1/clusters",
            Some(&body),
            202,
        )
        .await);
    d.drain().await;
    let failed_ng = id(&d
        .call(
            Method::POST,
            "/v1/clusters/{cluster_ident}/nodegroups",
            &format!("/v1/clusters/{refusing}/nodegroups"),
            Some(&json!({"name": "refused", "node_count": 1})),
            202,
        )
        .await);
    d.drain().await;
    d.call(
        Method::POST,
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry",
        &format!("/v1/clusters/{refusing}/nodegroups/{failed_ng}/actions/retry"),
        None,
        202,
    )
    .await;
    d.drain().await;
    let body = json!({"name": "fed-refused", "hostcluster_id": refusing,
                      "properties": {"dns-zone": "example.org."}});
    let failed_fed = id(&d
        .call(
            Method::POST,
            "/v1/federations",
            "/v1/federations",
            Some(&body),
            202,
        )
        .await);
    d.drain().await;
    d.call(
        Method::POST,
        "/v1/federations/{federation_ident}/actions/retry",
        &format!("/v1/federations/{failed_fed}/actions/retry"),
        None,
        202,
    )
    .await;
    d.drain().await;

    // Federations.
    let fed = "/v1/federations/{federation_ident}";
    let body =
        json!({"name": "fed", "hostcluster_id": c, "properties": {"dns-zone": "example.org."}});
    let f = id(&d
        .call(
            Method::POST,
            "/v1/federations",
            "/v1/federations",
            Some(&body),
            202,
        )
        .await);
    d.drain().await;
    let join = json!([{"op": "add", "path": "/member_ids", "value": member}]);
    d.call(
        Method::PATCH,
        fed,
        &format!("/v1/federations/{f}"),
        Some(&join),
        202,
    )
    .await;
    d.drain().await;
    d.call(
        Method::PATCH,
        fed,
        &format!("/v1/federations/{f}"),
        Some(&join),
        409,
    )
    .await;
    d.call(Method::GET, "/v1/federations", "/v1/federations", None, 200)
        .await;
    d.call(
        Method::GET,
        "/v1/federations/detail",
        "/v1/federations/detail",
        None,
        200,
    )
    .await;
    d.call(Method::GET, fed, &format!("/v1/federations/{f}"), None, 200)
        .await;
    d.call(
        Method::DELETE,
        fed,
        &format!("/v1/federations/{f}"),
        None,
        204,
    )
    .await;
    d.drain().await;

    // Quotas, stats, services.
    let quota = "/v1/quotas/{project_id}/{resource}";
    let body = json!({"project_id": "project-q", "resource": "Cluster", "hard_limit": 3});
    d.call(Method::POST, "/v1/quotas", "/v1/quotas", Some(&body), 201)
        .await;
    d.call(
        Method::GET,
        "/v1/quotas",
        "/v1/quotas?all_tenants=True",
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        quota,
        "/v1/quotas/project-q/Cluster",
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        quota,
        "/v1/quotas/project-none/Cluster",
        None,
        200,
    )
    .await;
    d.call(
        Method::PATCH,
        quota,
        "/v1/quotas/project-q/Cluster",
        Some(&json!({"hard_limit": 4})),
        202,
    )
    .await;
    d.call(
        Method::DELETE,
        quota,
        "/v1/quotas/project-q/Cluster",
        None,
        204,
    )
    .await;
    d.call(Method::GET, "/v1/stats", "/v1/stats", None, 200)
        .await;
    app.store
        .heartbeat_service("test-host", "fleetyard-conductor")
        .await
        .expect("heartbeat");
    d.call(Method::GET, "/v1/mservices", "/v1/mservices", None, 200)
        .await;

    // Cluster groups (1.20): a group with the cluster as a member, bound to another project.
    let group = "/v1/clustergroups/{clustergroup_ident}";
    let members = "/v1/clustergroups/{clustergroup_ident}/members";
    let bindings = "/v1/clustergroups/{clustergroup_ident}/bindings";
    let body = json!({"name": "prod", "description": "production", "selector": "env=prod"});
    let g = id(&d
        .call(
            Method::POST,
            "/v1/clustergroups",
            "/v1/clustergroups",
            Some(&body),
            201,
        )
        .await);
    d.call(
        Method::GET,
        "/v1/clustergroups",
        "/v1/clustergroups",
        None,
        200,
    )
    .await;
    d.call(
        Method::GET,
        group,
        &format!("/v1/clustergroups/{g}"),
        None,
        200,
    )
    .await;
    let patch = json!([{"op": "replace", "path": "/selector", "value": "env in (prod,staging)"}]);
    d.call(
        Method::PATCH,
        group,
        &format!("/v1/clustergroups/{g}"),
        Some(&patch),
        200,
    )
    .await;
    d.call(
        Method::POST,
        members,
        &format!("/v1/clustergroups/{g}/members"),
        Some(&json!({"cluster": member})),
        201,
    )
    .await;
    d.call(
        Method::GET,
        members,
        &format!("/v1/clustergroups/{g}/members"),
        None,
        200,
    )
    .await;
    d.call(
        Method::POST,
        "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}/actions/accept",
        &format!("/v1/clustergroups/{g}/members/{member}/actions/accept"),
        None,
        200,
    )
    .await;
    d.call(
        Method::DELETE,
        "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}",
        &format!("/v1/clustergroups/{g}/members/{member}"),
        None,
        204,
    )
    .await;
    let body = json!({"project_id": "project-q", "roles": ["reader"], "access": "read"});
    let b = id(&d
        .call(
            Method::POST,
            bindings,
            &format!("/v1/clustergroups/{g}/bindings"),
            Some(&body),
            201,
        )
        .await);
    d.call(
        Method::GET,
        bindings,
        &format!("/v1/clustergroups/{g}/bindings"),
        None,
        200,
    )
    .await;
    let binding = "/v1/clustergroups/{clustergroup_ident}/bindings/{binding_id}";
    d.call(
        Method::GET,
        binding,
        &format!("/v1/clustergroups/{g}/bindings/{b}"),
        None,
        200,
    )
    .await;
    d.call(
        Method::DELETE,
        binding,
        &format!("/v1/clustergroups/{g}/bindings/{b}"),
        None,
        204,
    )
    .await;
    d.call(
        Method::DELETE,
        group,
        &format!("/v1/clustergroups/{g}"),
        None,
        204,
    )
    .await;

    // Clusters go.
    d.call(
        Method::DELETE,
        one,
        &format!("/v1/clusters/{member}"),
        None,
        204,
    )
    .await;
    d.call(Method::DELETE, one, &format!("/v1/clusters/{c}"), None, 204)
        .await;
    d.drain().await;

    let missing: Vec<_> = spec.operations().difference(&d.seen).cloned().collect();
    assert!(
        missing.is_empty(),
        "operations never answered with success: {missing:?}"
    );
}
