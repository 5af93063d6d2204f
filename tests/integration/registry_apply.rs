//! Server-side apply and field ownership on the cluster registry, over plain HTTP on both
//! backends: `metadata.managedFields` per field manager, conflicts as the API server's 409,
//! `force=true` moving ownership, fields an applier drops removed unless someone else owns
//! them, updates and `/status` writes recorded as `Update` entries.

use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{spawn_with, Backend, Resp, TestApp};

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
const V: &str = "clusterregistry.k8s.io/v1alpha1";
const APPLY: &str = "application/apply-patch+yaml";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

async fn call(app: &TestApp, method: Method, path: &str, ct: &str, body: &str) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("Accept", "application/json")
        .header(
            "User-Agent",
            "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07",
        );
    if !body.is_empty() {
        req = req.header("Content-Type", ct).body(body.to_string());
    }
    app.send(req).await
}

fn object(name: &str, metadata: Value, spec: Value) -> Value {
    let mut meta = json!({"name": name});
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), metadata.as_object()) {
        m.extend(extra.clone());
    }
    json!({"apiVersion": V, "kind": "Cluster", "metadata": meta, "spec": spec})
}

fn endpoint(addr: &str) -> Value {
    json!({"kubernetesApiEndpoints": {"serverEndpoints": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]}})
}

async fn apply(app: &TestApp, name: &str, query: &str, body: &Value) -> Resp {
    call(
        app,
        Method::PATCH,
        &format!("{BASE}/{name}?{query}"),
        APPLY,
        &body.to_string(),
    )
    .await
}

/// The `fieldsV1` of `manager`'s entry (with `operation`), or null.
fn fields_of(r: &Resp, manager: &str, operation: &str) -> Value {
    r.body["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| {
            es.iter()
                .find(|e| e["manager"] == manager && e["operation"] == operation)
        })
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn managers(r: &Resp) -> Vec<(String, String, String)> {
    r.body["metadata"]["managedFields"]
        .as_array()
        .map(|es| {
            es.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_string(),
                        e["operation"].as_str().unwrap_or("").to_string(),
                        e["subresource"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn owned(list: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[rstest]
#[tokio::test]
async fn two_appliers_own_their_own_fields_side_by_side(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = apply(
        &app,
        "shared",
        "fieldManager=alice",
        &object(
            "shared",
            json!({"labels": {"a": "1"}}),
            endpoint("10.5.0.1:6443"),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let entries = r.body["metadata"]["managedFields"].clone();
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{}", r.text);
    assert_eq!(entries[0]["manager"], "alice");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(entries[0]["apiVersion"], V);
    assert_eq!(entries[0]["fieldsType"], "FieldsV1");
    assert!(entries[0]["time"].is_string(), "{}", r.text);
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:a": {}}},
            "f:spec": {"f:kubernetesApiEndpoints": {"f:serverEndpoints": {}}}})
    );

    let r = apply(
        &app,
        "shared",
        "fieldManager=bob",
        &object("shared", json!({"labels": {"b": "2"}}), json!({})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["labels"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        r.body["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]["serverAddress"],
        "10.5.0.1:6443"
    );
    assert_eq!(
        managers(&r),
        owned(&[("alice", "Apply", ""), ("bob", "Apply", "")])
    );
    assert_eq!(
        fields_of(&r, "bob", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:b": {}}}})
    );
    // Reads and lists show the same entries.
    let got = call(&app, Method::GET, &format!("{BASE}/shared"), "", "").await;
    assert_eq!(
        got.body["metadata"]["managedFields"],
        r.body["metadata"]["managedFields"]
    );
    let list = call(&app, Method::GET, BASE, "", "").await;
    assert_eq!(
        list.body["items"][0]["metadata"]["managedFields"], r.body["metadata"]["managedFields"],
        "{}",
        list.text
    );
    // Applying the same configuration again changes nothing.
    let again = apply(
        &app,
        "shared",
        "fieldManager=bob",
        &object("shared", json!({"labels": {"b": "2"}}), json!({})),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        r.body["metadata"]["resourceVersion"]
    );
}

#[rstest]
#[tokio::test]
async fn a_conflicting_apply_is_409_and_force_moves_the_fields(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    // kubectl's client-side apply creates the object: an Update by its manager.
    let body = object(
        "owned",
        json!({"labels": {"env": "dev"}}),
        endpoint("10.5.0.2:6443"),
    );
    let r = call(
        &app,
        Method::POST,
        &format!("{BASE}?fieldManager=kubectl-client-side-apply"),
        "application/json",
        &body.to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        managers(&r),
        owned(&[("kubectl-client-side-apply", "Update", "")])
    );
    assert_eq!(
        fields_of(&r, "kubectl-client-side-apply", "Update"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:env": {}}},
            "f:spec": {".": {}, "f:kubernetesApiEndpoints": {".": {},
                "f:serverEndpoints": {}}}})
    );
    let rv = r.body["metadata"]["resourceVersion"].clone();

    let changed = object(
        "owned",
        json!({"labels": {"env": "prod"}}),
        endpoint("10.5.0.2:6443"),
    );
    let r = apply(&app, "owned", "fieldManager=kubectl&force=false", &changed).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["reason"], "Conflict");
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using clusterregistry.k8s.io/v1alpha1: .metadata.labels.env"
    );
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict",
            "message": "conflict with \"kubectl-client-side-apply\" using clusterregistry.k8s.io/v1alpha1",
            "field": ".metadata.labels.env"}])
    );

    // Two fields: both listed, under their manager.
    let both = object(
        "owned",
        json!({"labels": {"env": "prod"}}),
        endpoint("10.5.0.3:6443"),
    );
    let r = apply(&app, "owned", "fieldManager=kubectl", &both).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using clusterregistry.k8s.io/v1alpha1:\n- .metadata.labels.env\n- .spec.kubernetesApiEndpoints.serverEndpoints"
    );
    assert_eq!(
        r.body["details"]["causes"].as_array().map(Vec::len),
        Some(2)
    );
    let unchanged = call(&app, Method::GET, &format!("{BASE}/owned"), "", "").await;
    assert_eq!(unchanged.body["metadata"]["resourceVersion"], rv);
    assert_eq!(unchanged.body["metadata"]["labels"], json!({"env": "dev"}));

    // --force-conflicts: the applier takes the field; the other manager keeps the rest.
    let r = apply(&app, "owned", "fieldManager=kubectl&force=true", &changed).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["labels"], json!({"env": "prod"}));
    assert_eq!(
        fields_of(&r, "kubectl", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:env": {}}},
            "f:spec": {"f:kubernetesApiEndpoints": {"f:serverEndpoints": {}}}})
    );
    assert_eq!(
        fields_of(&r, "kubectl-client-side-apply", "Update"),
        json!({"f:metadata": {"f:labels": {}},
            "f:spec": {".": {}, "f:kubernetesApiEndpoints": {".": {},
                "f:serverEndpoints": {}}}})
    );
    assert_eq!(
        managers(&r),
        owned(&[
            ("kubectl", "Apply", ""),
            ("kubectl-client-side-apply", "Update", "")
        ])
    );
}

#[rstest]
#[tokio::test]
async fn a_dropped_field_goes_unless_another_manager_owns_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = apply(
        &app,
        "prune",
        "fieldManager=alice",
        &object(
            "prune",
            json!({"labels": {"mine": "1", "shared": "1"}, "annotations": {"note": "x"}}),
            endpoint("10.5.0.4:6443"),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = apply(
        &app,
        "prune",
        "fieldManager=bob",
        &object("prune", json!({"labels": {"shared": "1"}}), json!({})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = apply(
        &app,
        "prune",
        "fieldManager=alice",
        &object("prune", json!({}), endpoint("10.5.0.4:6443")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"shared": "1"}),
        "{}",
        r.text
    );
    assert!(
        r.body["metadata"].get("annotations").is_none(),
        "{}",
        r.text
    );
    assert_eq!(
        fields_of(&r, "alice", "Apply"),
        json!({"f:spec": {"f:kubernetesApiEndpoints": {"f:serverEndpoints": {}}}})
    );
    assert_eq!(
        fields_of(&r, "bob", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:shared": {}}}})
    );
}

#[rstest]
#[tokio::test]
async fn updates_patches_and_status_writes_record_their_managers(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = apply(
        &app,
        "upd",
        "fieldManager=kubectl",
        &object(
            "upd",
            json!({"labels": {"env": "dev"}}),
            endpoint("10.5.0.5:6443"),
        ),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);

    // kubectl label: a merge patch by its manager takes the label it changes.
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/upd?fieldManager=kubectl-label"),
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"env":"prod","tier":"gold"}}}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        fields_of(&r, "kubectl-label", "Update"),
        json!({"f:metadata": {"f:labels": {"f:env": {}, "f:tier": {}}}})
    );
    assert_eq!(
        fields_of(&r, "kubectl", "Apply"),
        json!({"f:spec": {"f:kubernetesApiEndpoints": {"f:serverEndpoints": {}}}})
    );
    let entry = r.body["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["manager"] == "kubectl-label").cloned())
        .unwrap_or_default();
    assert_eq!(entry["apiVersion"], V);
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].is_string(), "{entry}");

    // No fieldManager: the User-Agent's product names the manager.
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/upd"),
        "application/json-patch+json",
        r#"[{"op":"add","path":"/metadata/annotations","value":{"owner":"team-a"}}]"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        fields_of(&r, "kubectl", "Update"),
        json!({"f:metadata": {"f:annotations": {".": {}, "f:owner": {}}}})
    );

    // A status write is its manager's own, apart from the main resource.
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/upd/status?fieldManager=backup-controller"),
        "application/merge-patch+json",
        &json!({"status": {"conditions": [
            {"type": "example.com/Backup", "status": "True", "reason": "Done"}]}})
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let entry = r.body["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| {
            es.iter()
                .find(|e| e["manager"] == "backup-controller")
                .cloned()
        })
        .unwrap_or_default();
    assert_eq!(entry["operation"], "Update", "{}", r.text);
    assert_eq!(entry["subresource"], "status", "{}", r.text);
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {".": {}, "f:conditions": {}}})
    );

    // A write that changes nothing records nothing.
    let before = call(&app, Method::GET, &format!("{BASE}/upd"), "", "").await;
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/upd?fieldManager=idle"),
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"env":"prod"}}}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["metadata"]["managedFields"],
        before.body["metadata"]["managedFields"]
    );
}

#[rstest]
#[tokio::test]
async fn apply_bodies_and_options_are_checked_as_the_api_server_checks_them(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let good = object(
        "chk",
        json!({"labels": {"env": "dev"}}),
        endpoint("10.5.0.6:6443"),
    );
    let r = apply(&app, "chk", "fieldManager=kubectl", &good).await;
    assert_eq!(r.status, 201, "{}", r.text);

    // A stale resourceVersion in the applied object: 409.
    let first_rv = r.body["metadata"]["resourceVersion"].clone();
    let moved = apply(
        &app,
        "chk",
        "fieldManager=kubectl",
        &object(
            "chk",
            json!({"labels": {"env": "prod"}}),
            endpoint("10.5.0.6:6443"),
        ),
    )
    .await;
    assert_eq!(moved.status, 200, "{}", moved.text);
    assert_ne!(moved.body["metadata"]["resourceVersion"], first_rv);
    let mut stale = good.clone();
    stale["metadata"]["resourceVersion"] = first_rv;
    let r = apply(&app, "chk", "fieldManager=kubectl", &stale).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict");
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on clusters.clusterregistry.k8s.io \"chk\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // No kind, no apiVersion: 400.
    let mut no_kind = good.clone();
    no_kind.as_object_mut().map(|o| o.remove("kind"));
    let r = apply(&app, "chk", "fieldManager=kubectl", &no_kind).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["reason"], "BadRequest");
    let mut no_version = good.clone();
    no_version.as_object_mut().map(|o| o.remove("apiVersion"));
    let r = apply(&app, "chk", "fieldManager=kubectl", &no_version).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Incorrect version specified in apply patch. Specified patch version: , expected: clusterregistry.k8s.io/v1alpha1"
    );
    // managedFields in an applied object: 400.
    let mut with_fields = good.clone();
    with_fields["metadata"]["managedFields"] = json!([]);
    let r = apply(&app, "chk", "fieldManager=kubectl", &with_fields).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["message"], "metadata.managedFields must be nil");

    // No fieldManager: 422, as PatchOptions validation says it.
    let r = apply(&app, "chk", "", &good).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    // force on a merge patch: 422.
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/chk?force=true"),
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );

    // YAML bodies are applied as JSON ones are.
    let yaml = "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: chk\n  labels:\n    yaml: \"yes\"\n";
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/chk?fieldManager=yaml-writer"),
        APPLY,
        yaml,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["labels"]["yaml"], "yes");
    assert_eq!(
        fields_of(&r, "yaml-writer", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:yaml": {}}}})
    );
}
