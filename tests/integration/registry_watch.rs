//! What a registry watch's `DELETED` event carries, in every shape a client asks for (plain
//! `Cluster`s, `ClusterProfile`s, and the one-row Tables of `kubectl get -w`): the object as it
//! last was, as kube-apiserver sends it. A change-log line written before the log kept objects
//! still gives a `DELETED`, with what the line has (the metadata).

use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{spawn_with, Backend, Resp, TestApp};

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
const PROFILES: &str = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/project-a/clusterprofiles";
/// What `kubectl get` and `kubectl get -w` send.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,\
                     application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const JSON: &str = "application/json";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    accept: &str,
    body: Option<Value>,
) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("Accept", accept);
    if let Some(body) = body {
        let ct = if body["apiVersion"].is_null() {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        req = req.header("Content-Type", ct).body(body.to_string());
    }
    app.send(req).await
}

/// The events of a watch from `from` on `path` that ends after a second.
async fn replayed(app: &TestApp, path: &str, accept: &str, from: &str) -> (Vec<Value>, String) {
    let r = call(
        app,
        Method::GET,
        &format!("{path}?watch=true&resourceVersion={from}&timeoutSeconds=1"),
        accept,
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events: Vec<Value> = r
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (events, r.text)
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect()
}

/// An object's metadata without its resourceVersion.
fn meta_but_version(object: &Value) -> Value {
    let mut meta = object["metadata"].clone();
    if let Some(m) = meta.as_object_mut() {
        m.remove("resourceVersion");
    }
    meta
}

/// The cells of the only row of a Table but Age (the clock may tick between two reads).
fn cells_but_age(table: &Value, age: usize) -> Vec<Value> {
    let rows = table["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{table}");
    rows[0]["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != age)
        .map(|(_, c)| c.clone())
        .collect()
}

/// What was read of the cluster `gone` just before its delete.
struct Last {
    /// The list's resourceVersion before the cluster was created.
    from: String,
    cluster_row: Value,
    profile: Value,
    profile_row: Value,
}

/// Creates the cluster `gone`, changes its labels, reads it in every shape, then deletes it.
async fn create_change_read_and_delete(app: &TestApp) -> Last {
    // Another cluster first: the list of an empty registry is at resourceVersion 0, and a
    // watch from 0 starts from now.
    let earlier = call(
        app,
        Method::POST,
        BASE,
        JSON,
        Some(
            json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "earlier"}}),
        ),
    )
    .await;
    assert_eq!(earlier.status, 201, "{}", earlier.text);
    let list = call(app, Method::GET, BASE, JSON, None).await;
    let from = list.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list resourceVersion")
        .to_string();
    let created = call(
        app,
        Method::POST,
        BASE,
        JSON,
        Some(
            json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "gone", "labels": {"env": "dev"}},
            "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.4.0.1:6443"}]}}}),
        ),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let changed = call(
        app,
        Method::PATCH,
        &format!("{BASE}/gone"),
        JSON,
        Some(json!({"metadata": {"labels": {"env": "prod"}}})),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    let cluster_row = call(app, Method::GET, &format!("{BASE}/gone"), TABLE, None).await;
    assert_eq!(cluster_row.status, 200, "{}", cluster_row.text);
    let profile = call(app, Method::GET, &format!("{PROFILES}/gone"), JSON, None).await;
    assert_eq!(profile.status, 200, "{}", profile.text);
    let profile_row = call(app, Method::GET, &format!("{PROFILES}/gone"), TABLE, None).await;
    assert_eq!(profile_row.status, 200, "{}", profile_row.text);
    let deleted = call(app, Method::DELETE, &format!("{BASE}/gone"), JSON, None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    Last {
        from,
        cluster_row: cluster_row.body,
        profile: profile.body,
        profile_row: profile_row.body,
    }
}

#[rstest]
#[tokio::test]
async fn a_profile_watch_shows_a_deleted_cluster_as_its_last_full_profile(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let last = create_change_read_and_delete(&app).await;
    let (events, text) = replayed(&app, PROFILES, JSON, &last.from).await;
    assert_eq!(types(&events), ["ADDED", "MODIFIED", "DELETED"], "{text}");
    let deleted = &events[2]["object"];
    assert_eq!(deleted["kind"], "ClusterProfile", "{text}");
    assert_eq!(deleted["spec"]["displayName"], "gone", "{text}");
    assert_eq!(deleted["spec"], last.profile["spec"], "{text}");
    // Its status as last read: both conditions, the version and the properties.
    assert_eq!(deleted["status"], last.profile["status"], "{text}");
    let conditions: Vec<&str> = deleted["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(conditions, ["ControlPlaneHealthy", "Joined"], "{text}");
    let properties: Vec<&str> = deleted["status"]["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        properties.contains(&"fleetyard.openstack.org/status")
            && properties.contains(&"fleetyard.openstack.org/cluster-uuid"),
        "{text}"
    );
    // Its metadata as last read (the labels it had, the manager's label), at the delete's
    // own resourceVersion.
    assert_eq!(
        meta_but_version(deleted),
        meta_but_version(&last.profile),
        "{text}"
    );
    assert_eq!(
        deleted["metadata"]["labels"],
        json!({"env": "prod", "x-k8s.io/cluster-manager": "fleetyard"}),
        "{text}"
    );
    let rv = |o: &Value| -> i64 {
        o["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    assert!(rv(deleted) > rv(&last.profile), "{text}");
}

#[rstest]
#[tokio::test]
async fn a_table_watch_shows_a_deleted_cluster_as_its_last_row_for_clusters_and_profiles(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let last = create_change_read_and_delete(&app).await;

    let (events, text) = replayed(&app, BASE, TABLE, &last.from).await;
    assert_eq!(types(&events), ["ADDED", "MODIFIED", "DELETED"], "{text}");
    let deleted = &events[2]["object"];
    assert_eq!(deleted["kind"], "Table", "{text}");
    // Name, Status, Health, Endpoint, (Age), Driver, Nodes, COE Version, UID: as last read.
    let cells = cells_but_age(deleted, 4);
    assert_eq!(cells, cells_but_age(&last.cluster_row, 4), "{text}");
    assert_eq!(cells[0], "gone", "{text}");
    assert_ne!(cells[1], "DELETED", "{text}");
    assert!(cells[1].is_string(), "the status: {text}");
    assert!(cells[4].is_string(), "the driver: {text}");
    assert!(cells[5].is_i64(), "the node count: {text}");
    let object = &deleted["rows"][0]["object"];
    assert_eq!(object["kind"], "PartialObjectMetadata", "{text}");
    assert_eq!(
        object["metadata"]["labels"],
        json!({"env": "prod"}),
        "{text}"
    );
    assert_eq!(
        deleted["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"],
        "{text}"
    );

    let (events, text) = replayed(&app, PROFILES, TABLE, &last.from).await;
    assert_eq!(types(&events), ["ADDED", "MODIFIED", "DELETED"], "{text}");
    let deleted = &events[2]["object"];
    assert_eq!(deleted["kind"], "Table", "{text}");
    // Name, Manager, Healthy, Joined, Version, (Age): as last read.
    let cells = cells_but_age(deleted, 5);
    assert_eq!(cells, cells_but_age(&last.profile_row, 5), "{text}");
    assert_eq!(cells[0..2], [json!("gone"), json!("fleetyard")], "{text}");
    assert!(cells[2].is_string() && cells[3].is_string(), "{text}");
    assert_eq!(
        deleted["rows"][0]["object"]["metadata"]["labels"]["x-k8s.io/cluster-manager"], "fleetyard",
        "{text}"
    );
}

/// Takes the kept objects out of the change log's `DELETED` lines, as lines written before the
/// log kept objects are.
async fn forget_deleted_objects(app: &TestApp, backend: Backend) {
    let sql = "UPDATE cluster_change SET object = NULL WHERE change = 'DELETED'";
    let changed = match backend {
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.db.url).await.expect("pg");
            let r = sqlx::query(sql).execute(&pool).await;
            pool.close().await;
            r.expect("update").rows_affected()
        }
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&app.db.url)
                .await
                .expect("sqlite");
            let r = sqlx::query(sql).execute(&pool).await;
            pool.close().await;
            r.expect("update").rows_affected()
        }
    };
    assert_eq!(changed, 1);
}

#[rstest]
#[tokio::test]
async fn a_deleted_line_that_kept_no_object_still_shows_what_it_has_in_every_shape(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let last = create_change_read_and_delete(&app).await;
    forget_deleted_objects(&app, backend).await;

    let (events, text) = replayed(&app, PROFILES, JSON, &last.from).await;
    assert_eq!(types(&events), ["ADDED", "MODIFIED", "DELETED"], "{text}");
    let deleted = &events[2]["object"];
    assert_eq!(deleted["kind"], "ClusterProfile", "{text}");
    assert_eq!(
        meta_but_version(deleted)["labels"],
        json!({"env": "prod", "x-k8s.io/cluster-manager": "fleetyard"}),
        "{text}"
    );
    assert_eq!(deleted["metadata"]["name"], "gone", "{text}");
    assert_eq!(
        deleted["metadata"]["uid"], last.profile["metadata"]["uid"],
        "{text}"
    );
    // The spec is required and known; the status is not kept.
    assert_eq!(deleted["spec"], last.profile["spec"], "{text}");
    assert!(deleted.get("status").is_none(), "{text}");

    let (events, text) = replayed(&app, BASE, TABLE, &last.from).await;
    assert_eq!(types(&events), ["ADDED", "MODIFIED", "DELETED"], "{text}");
    let cells = &events[2]["object"]["rows"][0]["cells"];
    assert_eq!(cells[0], "gone", "{text}");
    assert_eq!(cells[1], "DELETED", "{text}");
    assert_eq!(cells[5], Value::Null, "{text}");

    let (events, text) = replayed(&app, PROFILES, TABLE, &last.from).await;
    assert_eq!(types(&events), ["ADDED", "MODIFIED", "DELETED"], "{text}");
    let cells = &events[2]["object"]["rows"][0]["cells"];
    assert_eq!(
        cells.as_array().map(|c| c[..5].to_vec()),
        Some(vec![
            json!("gone"),
            json!("fleetyard"),
            Value::Null,
            Value::Null,
            Value::Null
        ]),
        "{text}"
    );
}
