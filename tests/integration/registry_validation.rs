//! One validation path for every registry write, over plain HTTP on both backends: create,
//! replace, merge and JSON patch, server-side apply and the `/status` subresource's writes all
//! report keys given twice under `fieldValidation=Strict` (400) and `Warn` (a `Warning`
//! header), ignore them under `Ignore`, answer a type error without quoting the rejected
//! value (it may be a credential in the wrong place), and set aside the server-owned times a
//! client sends, whatever they hold.

use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{spawn_with, Backend, Resp, TestApp};

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";
const JSON: &str = "application/json";
const STRICT_DUPLICATE: &str = "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: \
     strict decoding error: duplicate field \"metadata.labels.env\"";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

async fn call(app: &TestApp, method: Method, path: &str, ct: &str, body: &str) -> Resp {
    let req = app
        .client
        .request(method, app.url(path))
        .header("Accept", "application/json")
        .header("Content-Type", ct)
        .body(body.to_string());
    app.send(req).await
}

/// A whole Cluster whose `metadata.labels` says `env` twice (`dev`, then `prod`), as raw JSON:
/// a parsed value would keep only the last.
fn twice(name: &str, extra: &str) -> String {
    format!(
        r#"{{"apiVersion":"clusterregistry.k8s.io/v1alpha1","kind":"Cluster",
            "metadata":{{"name":"{name}","labels":{{"env":"dev","env":"prod"}}{extra}}},
            "spec":{{"kubernetesApiEndpoints":{{"serverEndpoints":[
                {{"clientCIDR":"0.0.0.0/0","serverAddress":"10.4.0.1:6443"}}]}}}}}}"#
    )
}

fn registered(name: &str) -> Value {
    json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.4.0.1:6443"}]}}})
}

async fn create(app: &TestApp, name: &str) -> Resp {
    let r = call(app, Method::POST, BASE, JSON, &registered(name).to_string()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r
}

#[track_caller]
fn assert_strict_duplicate(r: &Resp, what: &str) {
    assert_eq!(r.status, 400, "{what}: {}", r.text);
    assert_eq!(r.body["kind"], "Status", "{what}: {}", r.text);
    assert_eq!(r.body["reason"], "BadRequest", "{what}: {}", r.text);
    assert_eq!(r.body["message"], STRICT_DUPLICATE, "{what}: {}", r.text);
}

#[track_caller]
fn assert_duplicate_warning(r: &Resp, what: &str) {
    assert!(r.status == 200 || r.status == 201, "{what}: {}", r.text);
    let warnings: Vec<String> = r
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(String::from))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w == "299 - \"duplicate field \\\"metadata.labels.env\\\"\""),
        "{what}: {warnings:?}"
    );
    // The last value given is the one kept, as the API server's decoder keeps it.
    assert_eq!(
        r.body["metadata"]["labels"]["env"], "prod",
        "{what}: {}",
        r.text
    );
}

#[rstest]
#[tokio::test]
async fn keys_given_twice_are_400_in_strict_and_warnings_in_warn_on_every_write(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;

    // Create.
    let r = call(
        &app,
        Method::POST,
        &format!("{BASE}?fieldValidation=Strict"),
        JSON,
        &twice("dup", ""),
    )
    .await;
    assert_strict_duplicate(&r, "create");
    let r = call(&app, Method::POST, BASE, JSON, &twice("dup", "")).await;
    assert_duplicate_warning(&r, "create (Warn, the default)");
    let rv = r.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = call(
        &app,
        Method::POST,
        &format!("{BASE}?fieldValidation=Ignore"),
        JSON,
        &twice("quiet", ""),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.header("warning").is_none(), "{:?}", r.headers);

    // Replace.
    let path = format!("{BASE}/dup");
    let body = twice("dup", &format!(r#","resourceVersion":"{rv}""#));
    let r = call(
        &app,
        Method::PUT,
        &format!("{path}?fieldValidation=Strict"),
        JSON,
        &body,
    )
    .await;
    assert_strict_duplicate(&r, "replace");
    let r = call(&app, Method::PUT, &path, JSON, &body).await;
    assert_duplicate_warning(&r, "replace");

    // Merge patch.
    let patch = r#"{"metadata":{"labels":{"env":"dev","env":"prod"}}}"#;
    let r = call(
        &app,
        Method::PATCH,
        &format!("{path}?fieldValidation=Strict"),
        MERGE,
        patch,
    )
    .await;
    assert_strict_duplicate(&r, "merge patch");
    let r = call(&app, Method::PATCH, &path, MERGE, patch).await;
    assert_duplicate_warning(&r, "merge patch");

    // Server-side apply (kubectl sends the applied configuration as JSON).
    let applied = r#"{"apiVersion":"clusterregistry.k8s.io/v1alpha1","kind":"Cluster",
        "metadata":{"name":"dup","labels":{"env":"dev","env":"prod"}}}"#;
    let r = call(
        &app,
        Method::PATCH,
        &format!("{path}?fieldManager=ops&force=true&fieldValidation=Strict"),
        APPLY,
        applied,
    )
    .await;
    assert_strict_duplicate(&r, "apply");
    let r = call(
        &app,
        Method::PATCH,
        &format!("{path}?fieldManager=ops&force=true"),
        APPLY,
        applied,
    )
    .await;
    assert_duplicate_warning(&r, "apply");

    // The status subresource: a merge patch and a replace.
    let status = format!("{path}/status");
    let patch = r#"{"metadata":{"labels":{"env":"dev","env":"prod"}},
        "status":{"conditions":[{"type":"example.com/Backup","status":"True","reason":"Done"}]}}"#;
    let r = call(
        &app,
        Method::PATCH,
        &format!("{status}?fieldValidation=Strict"),
        MERGE,
        patch,
    )
    .await;
    assert_strict_duplicate(&r, "status merge patch");
    let r = call(&app, Method::PATCH, &status, MERGE, patch).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.header("warning")
            .is_some_and(|w| w.contains("duplicate field \\\"metadata.labels.env\\\"")),
        "status merge patch: {:?}",
        r.headers
    );
    assert_eq!(
        r.body["status"]["conditions"][1]["type"], "example.com/Backup",
        "{}",
        r.text
    );
    let r = call(
        &app,
        Method::PUT,
        &format!("{status}?fieldValidation=Strict"),
        JSON,
        &twice("dup", ""),
    )
    .await;
    assert_strict_duplicate(&r, "status replace");

    // Nothing a refused write sent was kept.
    let shown = call(&app, Method::GET, &path, "", "").await;
    assert_eq!(shown.body["metadata"]["labels"], json!({"env": "prod"}));
}

#[rstest]
#[tokio::test]
async fn unknown_fields_of_a_status_write_are_strict_errors_as_on_the_main_resource(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, "st").await;
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/st/status?fieldValidation=Strict"),
        MERGE,
        &json!({"status": {"conditions": [], "bogus": 1}}).to_string(),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: strict decoding error: \
         unknown field \"status.bogus\"",
        "{}",
        r.text
    );
    // Warn, the default: written, with the warning.
    let r = call(
        &app,
        Method::PATCH,
        &format!("{BASE}/st/status"),
        MERGE,
        &json!({"status": {"bogus": 1}}).to_string(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("warning").as_deref(),
        Some("299 - \"unknown field \\\"status.bogus\\\"\""),
        "{:?}",
        r.headers
    );
}

#[rstest]
#[tokio::test]
async fn a_type_error_is_400_without_the_rejected_value_on_every_write(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, "typed").await;
    let path = format!("{BASE}/typed");
    let cases: Vec<(&str, Method, String, &str, String)> = vec![
        (
            "create",
            Method::POST,
            BASE.to_string(),
            JSON,
            json!({"metadata": {"name": "other", "labels": "s3cr3t"}}).to_string(),
        ),
        (
            "replace",
            Method::PUT,
            path.clone(),
            JSON,
            json!({"metadata": {"name": "typed", "labels": "s3cr3t"}}).to_string(),
        ),
        (
            "merge patch",
            Method::PATCH,
            path.clone(),
            MERGE,
            json!({"metadata": {"labels": "s3cr3t"}}).to_string(),
        ),
        (
            "JSON patch",
            Method::PATCH,
            path.clone(),
            "application/json-patch+json",
            json!([{"op": "add", "path": "/metadata/labels", "value": "s3cr3t"}]).to_string(),
        ),
        (
            "apply",
            Method::PATCH,
            format!("{path}?fieldManager=ops"),
            APPLY,
            json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "typed", "labels": "s3cr3t"}})
            .to_string(),
        ),
        (
            "status merge patch",
            Method::PATCH,
            format!("{path}/status"),
            MERGE,
            json!({"status": {"conditions": "s3cr3t"}}).to_string(),
        ),
    ];
    for (what, method, url, ct, body) in cases {
        let r = call(&app, method, &url, ct, &body).await;
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        assert_eq!(r.body["kind"], "Status", "{what}: {}", r.text);
        let message = r.body["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("Cluster in version \"v1alpha1\" cannot be handled as a Cluster: "),
            "{what}: {message}"
        );
        assert!(!r.text.contains("s3cr3t"), "{what}: {}", r.text);
    }
    let shown = call(&app, Method::GET, &path, "", "").await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(
        shown.body["metadata"].get("labels").is_none(),
        "{}",
        shown.text
    );
}

/// The times the server owns are set aside on every write, whatever a client puts there (an
/// exported object's copy, or anything else): the write is not refused and what is shown keeps
/// the server's creation time and no deletion time.
#[rstest]
#[tokio::test]
async fn server_owned_times_a_client_sends_are_ignored_whatever_they_hold_on_every_write(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let made = create(&app, "timed").await;
    let created = made.body["metadata"]["creationTimestamp"].clone();
    assert!(
        created.as_str().is_some_and(|t| t.ends_with('Z')),
        "{}",
        made.text
    );
    let path = format!("{BASE}/timed");
    let times = json!({"creationTimestamp": "yesterday", "deletionTimestamp": 5});
    let with_times = |mut object: Value| {
        if let (Some(meta), Some(t)) = (object["metadata"].as_object_mut(), times.as_object()) {
            meta.extend(t.clone());
        }
        object
    };
    let mut replaced = registered("timed");
    replaced["metadata"]["resourceVersion"] = made.body["metadata"]["resourceVersion"].clone();
    let cases: Vec<(&str, Method, String, &str, String, u16)> = vec![
        (
            "create",
            Method::POST,
            BASE.to_string(),
            JSON,
            with_times(registered("other")).to_string(),
            201,
        ),
        (
            "replace",
            Method::PUT,
            path.clone(),
            JSON,
            with_times(replaced).to_string(),
            200,
        ),
        (
            "merge patch",
            Method::PATCH,
            path.clone(),
            MERGE,
            json!({"metadata": times}).to_string(),
            200,
        ),
        (
            "apply",
            Method::PATCH,
            format!("{path}?fieldManager=ops"),
            APPLY,
            with_times(registered("timed")).to_string(),
            200,
        ),
        (
            "status merge patch",
            Method::PATCH,
            format!("{path}/status"),
            MERGE,
            json!({"metadata": times, "status": {"conditions": []}}).to_string(),
            200,
        ),
    ];
    for (what, method, url, ct, body, status) in cases {
        let r = call(&app, method, &url, ct, &body).await;
        assert_eq!(r.status, status, "{what}: {}", r.text);
        let meta = &r.body["metadata"];
        let shown = meta["creationTimestamp"].as_str().unwrap_or_default();
        assert!(
            shown.len() == 20 && shown.ends_with('Z') && shown != "yesterday",
            "{what}: {}",
            r.text
        );
        if what != "create" {
            assert_eq!(meta["creationTimestamp"], created, "{what}: {}", r.text);
        }
        assert!(
            meta.get("deletionTimestamp").is_none(),
            "{what}: {}",
            r.text
        );
    }
}
