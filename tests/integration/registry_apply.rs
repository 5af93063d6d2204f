//! Server-side apply and field ownership on the cluster registry, over plain HTTP on both
//! backends: `metadata.managedFields` per field manager, conflicts as the API server's 409,
//! `force=true` moving ownership, fields an applier drops removed unless someone else owns
//! them, updates and `/status` writes recorded as `Update` entries; the lists updates send
//! (a base, a reset, or a 422), kubectl's last-applied annotation kept in step by its
//! server-side applies, and the cap of ten `Update` entries.

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

/// A cluster created by a server-side apply of `manager` (asserted 201).
async fn created(app: &TestApp, name: &str, manager: &str, metadata: Value, addr: &str) -> Resp {
    let r = apply(
        app,
        name,
        &format!("fieldManager={manager}"),
        &object(name, metadata, endpoint(addr)),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r
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
    let r = created(
        &app,
        "shared",
        "alice",
        json!({"labels": {"a": "1"}}),
        "10.5.0.1:6443",
    )
    .await;
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
    created(
        &app,
        "prune",
        "alice",
        json!({"labels": {"mine": "1", "shared": "1"}, "annotations": {"note": "x"}}),
        "10.5.0.4:6443",
    )
    .await;
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
    created(
        &app,
        "upd",
        "kubectl",
        json!({"labels": {"env": "dev"}}),
        "10.5.0.5:6443",
    )
    .await;

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

/// `call` with a JSON body: a PUT of `body` to `name` as `manager`.
async fn put(app: &TestApp, name: &str, manager: &str, body: &Value) -> Resp {
    call(
        app,
        Method::PUT,
        &format!("{BASE}/{name}?fieldManager={manager}"),
        "application/json",
        &body.to_string(),
    )
    .await
}

/// A `managedFields` entry as a client writes it.
fn entry(manager: &str, operation: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": V, "time": time,
        "fieldsType": "FieldsV1", "fieldsV1": fields})
}

#[rstest]
#[tokio::test]
async fn managed_fields_sent_on_an_update_are_its_base(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = created(
        &app,
        "mf",
        "kubectl",
        json!({"labels": {"env": "dev"}}),
        "10.5.1.1:6443",
    )
    .await;

    // A PUT carrying a list of its own: that list, then the PUT's manager for what it changed.
    let mut body = r.body.clone();
    body["metadata"]["managedFields"] = json!([entry(
        "chosen",
        "Update",
        "2026-01-01T00:00:00Z",
        json!({"f:metadata": {"f:labels": {"f:env": {}}}})
    )]);
    body["metadata"]["labels"]["tier"] = json!("gold");
    let r = put(&app, "mf", "editor", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        managers(&r),
        owned(&[("chosen", "Update", ""), ("editor", "Update", "")])
    );
    assert_eq!(
        r.body["metadata"]["managedFields"][0]["time"],
        "2026-01-01T00:00:00Z"
    );
    assert_eq!(
        fields_of(&r, "editor", "Update"),
        json!({"f:metadata": {"f:labels": {"f:tier": {}}}})
    );

    // A PUT without the field keeps the live entries.
    let mut body = r.body.clone();
    body["metadata"]
        .as_object_mut()
        .map(|m| m.remove("managedFields"));
    body["metadata"]["labels"]["zone"] = json!("a");
    let r = put(&app, "mf", "zoner", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        managers(&r),
        owned(&[
            ("chosen", "Update", ""),
            ("editor", "Update", ""),
            ("zoner", "Update", "")
        ])
    );

    // A list that does not decode (no such operation) is ignored, as the API server does.
    let mut body = r.body.clone();
    body["metadata"]["managedFields"] =
        json!([entry("odd", "Bogus", "2026-01-01T00:00:00Z", json!({}))]);
    let r = put(&app, "mf", "zoner", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(managers(&r).len(), 3, "{}", r.text);

    // A status write's list is never its base.
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/mf/status?fieldManager=status-writer"),
        "application/merge-patch+json",
        &json!({"metadata": {"managedFields": [entry("sneaky", "Update",
                "2026-01-01T00:00:00Z", json!({"f:spec": {}}))]},
            "status": {"conditions": [{"type": "example.com/Ready", "status": "True"}]}})
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut left = managers(&r);
    left.sort();
    assert_eq!(
        left,
        owned(&[
            ("chosen", "Update", ""),
            ("editor", "Update", ""),
            ("status-writer", "Update", "status"),
            ("zoner", "Update", "")
        ])
    );
}

#[rstest]
#[tokio::test]
async fn an_empty_list_or_one_empty_entry_resets_the_managed_fields(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    for (name, reset) in [("reset-empty", json!([])), ("reset-one", json!([{}]))] {
        let r = apply(
            &app,
            name,
            "fieldManager=kubectl",
            &object(
                name,
                json!({"labels": {"env": "dev"}}),
                endpoint("10.5.1.2:6443"),
            ),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let r = call(
            &app,
            Method::PATCH,
            &format!("{BASE}/{name}?fieldManager=resetter"),
            "application/merge-patch+json",
            &json!({"metadata": {"managedFields": reset}}).to_string(),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            r.body["metadata"].get("managedFields").is_none(),
            "{name}: {}",
            r.text
        );
        assert_eq!(r.body["metadata"]["labels"]["env"], "dev");
        // No fields are tracked again until the next apply.
        let r = call(
            &app,
            Method::PATCH,
            &format!("{BASE}/{name}?fieldManager=labeller"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"tier":"gold"}}}"#,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            r.body["metadata"].get("managedFields").is_none(),
            "{}",
            r.text
        );
        let r = apply(
            &app,
            name,
            "fieldManager=kubectl",
            &object(name, json!({"labels": {"env": "dev"}}), json!({})),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            managers(&r),
            owned(&[
                ("kubectl", "Apply", ""),
                ("before-first-apply", "Update", "")
            ])
        );
    }
}

#[rstest]
#[tokio::test]
async fn an_invalid_managed_fields_entry_is_422_naming_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = apply(
        &app,
        "bad-mf",
        "fieldManager=kubectl",
        &object("bad-mf", json!({}), endpoint("10.5.1.3:6443")),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rv = r.body["metadata"]["resourceVersion"].clone();
    let mut body = r.body.clone();
    body["metadata"]["managedFields"] = json!([entry(
        &"m".repeat(129),
        "Update",
        "2026-01-01T00:00:00Z",
        json!({"f:spec": {"f:kubernetesApiEndpoints": {"f:serverEndpoints": {}}}})
    )]);
    body["metadata"]["labels"] = json!({"x": "y"});
    let r = put(&app, "bad-mf", "editor", &body).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        "metadata.managedFields[0].manager"
    );
    assert_eq!(
        r.body["message"],
        "Cluster.clusterregistry.k8s.io \"bad-mf\" is invalid: metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"
    );
    let after = call(&app, Method::GET, &format!("{BASE}/bad-mf"), "", "").await;
    assert_eq!(after.body["metadata"]["resourceVersion"], rv);
    assert!(
        after.body["metadata"].get("labels").is_none(),
        "{}",
        after.text
    );
}

#[rstest]
#[tokio::test]
async fn a_kubectl_apply_refreshes_the_last_applied_annotation(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    const LAST: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let app = app_on(backend).await;
    // As kubectl's client-side apply leaves it: created with the annotation.
    let r = call(
        &app,
        Method::POST,
        &format!("{BASE}?fieldManager=kubectl-client-side-apply"),
        "application/json",
        &object(
            "la",
            json!({"annotations": {LAST: "{\"stale\":true}"}}),
            endpoint("10.5.1.4:6443"),
        )
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);

    let applied = object(
        "la",
        json!({"labels": {"env": "prod"}}),
        endpoint("10.5.1.4:6443"),
    );
    let r = apply(&app, "la", "fieldManager=kubectl", &applied).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let text = r.body["metadata"]["annotations"][LAST]
        .as_str()
        .unwrap_or("");
    let last: Value = serde_json::from_str(text).unwrap_or_default();
    assert_eq!(last, applied, "{}", r.text);

    // Another manager's apply leaves it as it is.
    let r = apply(
        &app,
        "la",
        "fieldManager=helm",
        &object("la", json!({"labels": {"team": "a"}}), json!({})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["annotations"][LAST], text);

    // An object without the annotation does not get one.
    let r = apply(
        &app,
        "la-bare",
        "fieldManager=kubectl",
        &object("la-bare", json!({}), endpoint("10.5.1.5:6443")),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(
        r.body["metadata"].get("annotations").is_none(),
        "{}",
        r.text
    );
}

#[rstest]
#[tokio::test]
async fn past_ten_update_managers_the_oldest_become_ancient_changes(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = created(
        &app,
        "cap",
        "applier",
        json!({"labels": {"base": "1"}}),
        "10.5.1.6:6443",
    )
    .await;
    let mut last = r;
    for i in 0..11 {
        last = call(
            &app,
            Method::PATCH,
            &format!("{BASE}/cap?fieldManager=m{i:02}"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {format!("l{i:02}"): "x"}}}).to_string(),
        )
        .await;
        assert_eq!(last.status, 200, "{}", last.text);
    }
    let all = managers(&last);
    let updates: Vec<_> = all.iter().filter(|(_, op, _)| op == "Update").collect();
    assert_eq!(updates.len(), 10, "{all:?}");
    assert_eq!(
        all.iter()
            .filter(|(m, _, _)| m == "ancient-changes")
            .count(),
        1,
        "{all:?}"
    );
    assert_eq!(
        fields_of(&last, "applier", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:base": {}}},
            "f:spec": {"f:kubernetesApiEndpoints": {"f:serverEndpoints": {}}}})
    );
    // Every label set by an update is still owned by some update entry.
    let mut labels: Vec<String> = last.body["metadata"]["managedFields"]
        .as_array()
        .map(|es| {
            es.iter()
                .filter(|e| e["operation"] == "Update")
                .filter_map(|e| e["fieldsV1"]["f:metadata"]["f:labels"].as_object())
                .flat_map(|l| l.keys().cloned().collect::<Vec<_>>())
                .filter(|k| k != ".")
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let expected: Vec<String> = (0..11).map(|i| format!("f:l{i:02}")).collect();
    assert_eq!(labels, expected);
}

#[rstest]
#[tokio::test]
async fn a_kubectl_apply_takes_over_what_client_side_apply_last_applied(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    const LAST: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let app = app_on(backend).await;
    // Client-side apply last applied team=old; the object holds team=a since.
    let last = object(
        "csa",
        json!({"labels": {"env": "dev", "team": "old"}}),
        endpoint("10.5.1.7:6443"),
    );
    let r = call(
        &app,
        Method::POST,
        &format!("{BASE}?fieldManager=kubectl-client-side-apply"),
        "application/json",
        &object(
            "csa",
            json!({"labels": {"env": "dev", "team": "a"},
                "annotations": {LAST: last.to_string()}}),
            endpoint("10.5.1.7:6443"),
        )
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);

    // team's value is not the last-applied one: that conflict stays, alone.
    let r = apply(
        &app,
        "csa",
        "fieldManager=kubectl",
        &object(
            "csa",
            json!({"labels": {"env": "prod", "team": "b"}}),
            json!({}),
        ),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using clusterregistry.k8s.io/v1alpha1: .metadata.labels.team"
    );

    // env still has its last-applied value: kubectl takes it without force.
    let r = apply(
        &app,
        "csa",
        "fieldManager=kubectl",
        &object("csa", json!({"labels": {"env": "prod"}}), json!({})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["labels"]["env"], "prod");
    assert_eq!(
        fields_of(&r, "kubectl", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:env": {}}}})
    );
    // A different manager gets no such allowance.
    let r = apply(
        &app,
        "csa",
        "fieldManager=other",
        &object("csa", json!({"labels": {"team": "c"}}), json!({})),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text);
}
