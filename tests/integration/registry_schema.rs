//! The registry's OpenAPI v3 documents and the objects it serves cannot drift apart: every
//! object the service writes (a cluster with every part of its metadata, spec and status set,
//! its list, its ClusterProfile and their lists, an error Status) validates against the served
//! schema of its kind made strict (no property the schema does not name, every required one
//! present). A field added to the objects but not to the schema, or renamed in one of them,
//! fails here. The self reviews are in both OpenAPI documents (v3 and v2) with their GVKs, and
//! their answers validate against their served schemas the same way.

use reqwest::Method;
use serde_json::{json, Value};

use base64::Engine;

use crate::helpers::endpoints::Ca;
use crate::helpers::{spawn_with, Backend, Resp, TestApp};

const REGISTRY: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
const PROFILES: &str = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/project-a/clusterprofiles";

async fn call(app: &TestApp, method: Method, path: &str, ct: &str, body: &Value) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("Accept", "application/json");
    if !body.is_null() {
        req = req.header("Content-Type", ct).body(body.to_string());
    }
    app.send(req).await
}

/// The served v3 document of one group-version, its object schemas made strict.
async fn strict_document(app: &TestApp, group_version: &str) -> Value {
    let r = call(
        app,
        Method::GET,
        &format!("/openapi/v3/apis/{group_version}"),
        "",
        &Value::Null,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut doc = r.body;
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the document has component schemas");
    for schema in schemas.values_mut() {
        if let Some(obj) = schema.as_object_mut() {
            if obj.contains_key("properties") && !obj.contains_key("additionalProperties") {
                obj.insert("additionalProperties".into(), Value::Bool(false));
            }
        }
    }
    doc
}

/// The id of the component schema of `kind` (its `x-kubernetes-group-version-kind`).
fn schema_of(doc: &Value, group: &str, kind: &str) -> String {
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let found = schemas.iter().find(|(_, s)| {
        s["x-kubernetes-group-version-kind"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| g["group"] == group && g["kind"] == kind)
    });
    match found {
        Some((id, _)) => id.clone(),
        None => panic!("no schema for {group} {kind} in {:?}", schemas.keys()),
    }
}

/// The validation errors of `object` against the schema `id` of `doc`.
fn errors(doc: &Value, id: &str, object: &Value) -> Vec<String> {
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"].clone(),
        "$ref": format!("#/components/schemas/{id}"),
    });
    let validator = jsonschema::draft202012::new(&root)
        .unwrap_or_else(|e| panic!("the schema of {id} does not compile: {e}"));
    validator
        .iter_errors(object)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect()
}

#[track_caller]
fn assert_valid(doc: &Value, id: &str, object: &Value) {
    let found = errors(doc, id, object);
    assert!(
        found.is_empty(),
        "{id}: the served object does not match the served schema:\n{}\n{object:#}",
        found.join("\n")
    );
}

#[tokio::test]
async fn every_served_object_matches_the_served_schema_of_its_kind_field_for_field() {
    let app = spawn_with(Backend::Sqlite, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "admin,member,reader".into();
    })
    .await;
    let ca = base64::engine::general_purpose::STANDARD.encode(&Ca::new("schema-ca").pem);
    let owner = "6d3c1a52-3a5e-4f0e-9c1b-0a8e1f6a2b11";
    let created = call(
        &app,
        Method::POST,
        REGISTRY,
        "application/json",
        &json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "full", "labels": {"env": "dev"},
                "annotations": {"example.com/note": "every part set"},
                "finalizers": ["example.com/hold"],
                "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Fleet",
                    "name": "fleet-a", "uid": owner, "controller": true,
                    "blockOwnerDeletion": true}]},
            "spec": {
                "kubernetesApiEndpoints": {
                    "serverEndpoints": [{"clientCIDR": "0.0.0.0/0",
                                         "serverAddress": "10.4.0.1:6443"}],
                    "caBundle": ca},
                "authInfo": {
                    "controller": {"kind": "Secret", "name": "ctl", "namespace": "ops"},
                    "user": {"kind": "Secret", "name": "usr", "namespace": "ops"}}}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let reported = call(
        &app,
        Method::PATCH,
        &format!("{REGISTRY}/full/status"),
        "application/merge-patch+json",
        &json!({"status": {"conditions": [{"type": "example.com/Backup", "status": "True",
            "reason": "Done", "message": "nightly backup taken"}]}}),
    )
    .await;
    assert_eq!(reported.status, 200, "{}", reported.text);
    // Held by its finalizer: the object stays, with its deletion timestamp.
    let deleting = call(
        &app,
        Method::DELETE,
        &format!("{REGISTRY}/full"),
        "",
        &Value::Null,
    )
    .await;
    assert_eq!(deleting.status, 200, "{}", deleting.text);

    let registry = strict_document(&app, "clusterregistry.k8s.io/v1alpha1").await;
    let cluster = schema_of(&registry, "clusterregistry.k8s.io", "Cluster");
    let cluster_list = schema_of(&registry, "clusterregistry.k8s.io", "ClusterList");

    let shown = call(
        &app,
        Method::GET,
        &format!("{REGISTRY}/full"),
        "",
        &Value::Null,
    )
    .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let meta = &shown.body["metadata"];
    for part in [
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "deletionTimestamp",
        "resourceVersion",
        "uid",
        "creationTimestamp",
    ] {
        assert!(
            !meta[part].is_null(),
            "the object shows {part}: {}",
            shown.text
        );
    }
    assert!(
        shown.body["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.len() >= 2),
        "{}",
        shown.text
    );
    for object in [&created.body, &reported.body, &deleting.body, &shown.body] {
        assert_valid(&registry, &cluster, object);
    }
    let listed = call(&app, Method::GET, REGISTRY, "", &Value::Null).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body["items"][0]["metadata"]["name"], "full");
    assert_valid(&registry, &cluster_list, &listed.body);

    let multicluster = strict_document(&app, "multicluster.x-k8s.io/v1alpha1").await;
    let profile = schema_of(&multicluster, "multicluster.x-k8s.io", "ClusterProfile");
    let profile_list = schema_of(&multicluster, "multicluster.x-k8s.io", "ClusterProfileList");
    let profiles = call(&app, Method::GET, PROFILES, "", &Value::Null).await;
    assert_eq!(profiles.status, 200, "{}", profiles.text);
    assert_valid(&multicluster, &profile_list, &profiles.body);
    let name = profiles.body["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("a profile of the cluster: {}", profiles.text))
        .to_string();
    let one = call(
        &app,
        Method::GET,
        &format!("{PROFILES}/{name}"),
        "",
        &Value::Null,
    )
    .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_valid(&multicluster, &profile, &one.body);

    // A field the schema does not name is caught: the check is not vacuous.
    let mut drifted = shown.body.clone();
    drifted["spec"]["serverAddress"] = json!("10.4.0.1:6443");
    assert!(
        !errors(&registry, &cluster, &drifted).is_empty(),
        "an unknown spec field passes the strict schema"
    );
}

/// One self review: its group, resource, kind, schema id and a body to send.
struct Review {
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    id: &'static str,
    body: Value,
}

fn reviews() -> Vec<Review> {
    vec![
        Review {
            group: "authorization.k8s.io",
            plural: "selfsubjectaccessreviews",
            kind: "SelfSubjectAccessReview",
            id: "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
            body: json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"namespace": "project-a", "verb": "list",
                    "group": "clusterregistry.k8s.io", "resource": "clusters"}}}),
        },
        Review {
            group: "authorization.k8s.io",
            plural: "selfsubjectrulesreviews",
            kind: "SelfSubjectRulesReview",
            id: "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
            body: json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectRulesReview", "spec": {"namespace": "project-a"}}),
        },
        Review {
            group: "authentication.k8s.io",
            plural: "selfsubjectreviews",
            kind: "SelfSubjectReview",
            id: "io.k8s.api.authentication.v1.SelfSubjectReview",
            body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        },
    ]
}

#[tokio::test]
async fn the_self_reviews_are_in_both_openapi_documents_and_answer_as_their_schemas_say() {
    let app = spawn_with(Backend::Sqlite, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await;
    let index = call(&app, Method::GET, "/openapi/v3", "", &Value::Null).await;
    assert_eq!(index.status, 200, "{}", index.text);
    let v2 = call(&app, Method::GET, "/openapi/v2", "", &Value::Null).await;
    assert_eq!(v2.status, 200, "{}", v2.text);
    assert_eq!(v2.body["swagger"], "2.0");

    for r in reviews() {
        let gv = format!("{}/v1", r.group);
        let path = format!("/apis/{gv}/{}", r.plural);
        let gvk = json!({"group": r.group, "version": "v1", "kind": r.kind});

        // The v3 index points at the group-version's document, which has the create path.
        let url = index.body["paths"][format!("apis/{gv}")]["serverRelativeURL"]
            .as_str()
            .unwrap_or_else(|| panic!("the index lists {gv}: {}", index.text))
            .to_string();
        assert!(
            url.starts_with(&format!("/openapi/v3/apis/{gv}?hash=")),
            "{url}"
        );
        let doc = call(&app, Method::GET, &url, "", &Value::Null).await;
        assert_eq!(doc.status, 200, "{}", doc.text);
        let post = &doc.body["paths"][&path]["post"];
        assert_eq!(post["x-kubernetes-group-version-kind"], gvk, "{path}");
        let strict = strict_document(&app, &gv).await;
        assert_eq!(schema_of(&strict, r.group, r.kind), r.id);

        // The v2 document: the same path and definition, with the GVK.
        let post2 = &v2.body["paths"][&path]["post"];
        assert_eq!(post2["x-kubernetes-group-version-kind"], gvk, "{path}");
        assert_eq!(
            v2.body["definitions"][r.id]["x-kubernetes-group-version-kind"],
            json!([gvk]),
            "{}",
            r.id
        );

        // What is sent and what comes back match the served schema field for field.
        assert_valid(&strict, r.id, &r.body);
        let answer = call(&app, Method::POST, &path, "application/json", &r.body).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        assert_eq!(answer.body["kind"], r.kind);
        assert!(!answer.body["status"].is_null(), "{}", answer.text);
        assert_valid(&strict, r.id, &answer.body);
    }

    // Not vacuous: a field the review schema does not name fails it.
    let doc = strict_document(&app, "authorization.k8s.io/v1").await;
    let mut drifted = reviews()[0].body.clone();
    drifted["spec"]["resourceAttributes"]["bogusField"] = json!(1);
    assert!(!errors(
        &doc,
        "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        &drifted
    )
    .is_empty());
}
