//! The cluster registry's API-server semantics over plain HTTP, as client-go, kubectl and the
//! Python client use them, on both backends and without kubectl: `DeleteOptions` from the body
//! and the query (a dry run writes nothing), finalizers and owner references kept, a deletion
//! that waits for the last finalizer (through either API) and shows `deletionTimestamp`
//! everywhere meanwhile.

use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{
    assert_status, conductor, drain, instant, spawn_with, template_as, Api, Backend, Resp, TestApp,
};

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

fn registered(name: &str, metadata: Value) -> Value {
    let mut meta = json!({"name": name});
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), metadata.as_object()) {
        m.extend(extra.clone());
    }
    json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": meta,
        "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.4.0.1:6443"}]}}})
}

/// A request with a raw body and content type, as Kubernetes clients send them.
async fn call(app: &TestApp, method: Method, path: &str, ct: &str, body: &str) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("Accept", "application/json");
    if !body.is_empty() {
        req = req.header("Content-Type", ct).body(body.to_string());
    }
    app.send(req).await
}

async fn create(app: &TestApp, body: &Value) -> Resp {
    let r = call(
        app,
        Method::POST,
        BASE,
        "application/json",
        &body.to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r
}

async fn get(app: &TestApp, name: &str) -> Resp {
    call(app, Method::GET, &format!("{BASE}/{name}"), "", "").await
}

async fn merge(app: &TestApp, name: &str, patch: Value) -> Resp {
    call(
        app,
        Method::PATCH,
        &format!("{BASE}/{name}"),
        "application/merge-patch+json",
        &patch.to_string(),
    )
    .await
}

#[track_caller]
fn assert_not_found(r: &Resp, name: &str) {
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.body["kind"], "Status", "{}", r.text);
    assert_eq!(r.body["reason"], "NotFound", "{}", r.text);
    assert_eq!(
        r.body["message"],
        format!("clusters.clusterregistry.k8s.io \"{name}\" not found")
    );
}

#[rstest]
#[tokio::test]
async fn a_dry_run_delete_in_the_body_or_the_query_deletes_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, &registered("keep", json!({"labels": {"env": "dev"}}))).await;
    let before = get(&app, "keep").await;

    // kubectl delete --dry-run=server: the options in the body.
    let r = call(
        &app,
        Method::DELETE,
        &format!("{BASE}/keep"),
        "application/json",
        r#"{"propagationPolicy":"Background","dryRun":["All"]}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["name"], "keep", "{}", r.text);
    assert!(
        r.body["metadata"]["deletionTimestamp"].is_string(),
        "the answer shows what the delete would do: {}",
        r.text
    );
    // ... and in the query, with a body that says nothing of it.
    let r = call(
        &app,
        Method::DELETE,
        &format!("{BASE}/keep?dryRun=All"),
        "application/json",
        r#"{"propagationPolicy":"Background"}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // deletecollection with a selector and a dry run in the body.
    let r = call(
        &app,
        Method::DELETE,
        &format!("{BASE}?labelSelector=env%3Ddev"),
        "application/json",
        r#"{"dryRun":["All"]}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["items"][0]["metadata"]["name"], "keep", "{}", r.text);

    let after = get(&app, "keep").await;
    assert_eq!(after.status, 200, "{}", after.text);
    assert_eq!(after.body, before.body, "the object did not change at all");
    assert!(after.body["metadata"].get("deletionTimestamp").is_none());
    let v1 = app.get_cluster("keep").await;
    assert_eq!(v1.status, 200, "{}", v1.text);
    assert_eq!(v1.body["status"], "CREATE_COMPLETE", "{}", v1.text);
}

#[rstest]
#[tokio::test]
async fn refused_delete_options_are_422_and_delete_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, &registered("stay", json!({}))).await;
    for (query, body, field) in [
        ("", r#"{"dryRun":["Everything"]}"#, "dryRun"),
        ("?dryRun=Some", "", "dryRun"),
        (
            "",
            r#"{"propagationPolicy":"Sideways"}"#,
            "propagationPolicy",
        ),
        (
            "",
            r#"{"orphanDependents":false,"propagationPolicy":"Orphan"}"#,
            "propagationPolicy",
        ),
    ] {
        let r = call(
            &app,
            Method::DELETE,
            &format!("{BASE}/stay{query}"),
            "application/json",
            body,
        )
        .await;
        assert_eq!(r.status, 422, "{query} {body}: {}", r.text);
        assert_eq!(r.body["kind"], "Status");
        assert_eq!(r.body["reason"], "Invalid", "{}", r.text);
        assert_eq!(r.body["details"]["kind"], "DeleteOptions", "{}", r.text);
        assert_eq!(r.body["details"]["causes"][0]["field"], field, "{}", r.text);
    }
    // A create with an unknown dry-run stage is refused too, not written for real.
    let r = call(
        &app,
        Method::POST,
        &format!("{BASE}?dryRun=Maybe"),
        "application/json",
        &registered("other", json!({})).to_string(),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["details"]["kind"], "CreateOptions", "{}", r.text);
    assert_not_found(&get(&app, "other").await, "other");
    assert_eq!(get(&app, "stay").await.status, 200);
}

#[rstest]
#[tokio::test]
async fn delete_preconditions_from_the_body_are_409_when_the_object_moved_on(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let made = create(&app, &registered("pre", json!({}))).await;
    let uid = made.body["metadata"]["uid"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let r = call(
        &app,
        Method::DELETE,
        &format!("{BASE}/pre"),
        "application/json",
        r#"{"preconditions":{"resourceVersion":"999999"}}"#,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict", "{}", r.text);
    assert!(
        r.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("the ResourceVersion in the precondition (999999)")),
        "{}",
        r.text
    );
    assert_eq!(get(&app, "pre").await.status, 200);
    let r = call(
        &app,
        Method::DELETE,
        &format!("{BASE}/pre"),
        "application/json",
        &json!({"preconditions": {"uid": uid}}).to_string(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_not_found(&get(&app, "pre").await, "pre");
}

#[rstest]
#[tokio::test]
async fn finalizers_hold_a_registry_delete_until_the_last_one_is_removed(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let owner = json!([{"apiVersion": "fleet.example.com/v1", "kind": "Fleet",
        "name": "blue", "uid": "6c1f3c52-3d3b-4f1a-9e53-0f2a3b4c5d6e", "controller": true}]);
    let made = create(
        &app,
        &registered(
            "held",
            json!({"finalizers": ["example.com/cleanup", "example.com/audit"],
                   "ownerReferences": owner}),
        ),
    )
    .await;
    assert_eq!(
        made.body["metadata"]["finalizers"],
        json!(["example.com/cleanup", "example.com/audit"]),
        "{}",
        made.text
    );
    assert_eq!(
        made.body["metadata"]["ownerReferences"], owner,
        "{}",
        made.text
    );
    let list = call(&app, Method::GET, BASE, "", "").await;
    let list_rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();

    let r = call(
        &app,
        Method::DELETE,
        &format!("{BASE}/held"),
        "application/json",
        r#"{"propagationPolicy":"Background"}"#,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let stamp = r.body["metadata"]["deletionTimestamp"].clone();
    assert!(stamp.is_string(), "{}", r.text);
    assert_eq!(
        r.body["metadata"]["deletionGracePeriodSeconds"], 0,
        "{}",
        r.text
    );

    // Still there, marked, in a GET, a list and a watch; /v1 says why it waits.
    let shown = get(&app, "held").await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_eq!(shown.body["metadata"]["deletionTimestamp"], stamp);
    let list = call(&app, Method::GET, BASE, "", "").await;
    assert_eq!(
        list.body["items"][0]["metadata"]["deletionTimestamp"], stamp,
        "{}",
        list.text
    );
    let v1 = app.get_cluster("held").await;
    assert_eq!(v1.body["status"], "DELETE_IN_PROGRESS", "{}", v1.text);
    assert_eq!(
        v1.body["status_reason"],
        "Deletion waits for the registry finalizers to be removed: example.com/cleanup, example.com/audit",
        "{}",
        v1.text
    );
    // A second delete changes nothing.
    let again = call(&app, Method::DELETE, &format!("{BASE}/held"), "", "").await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["metadata"]["deletionTimestamp"], stamp);

    // No finalizer may be added once deleting.
    let r = merge(
        &app,
        "held",
        json!({"metadata": {"finalizers": ["example.com/cleanup", "example.com/audit", "example.com/late"]}}),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/late\"}",
        "{}",
        r.text
    );

    // One removed: still there, the reason names the one left.
    let r = merge(
        &app,
        "held",
        json!({"metadata": {"finalizers": ["example.com/audit"]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["example.com/audit"])
    );
    assert_eq!(
        app.get_cluster("held").await.body["status_reason"],
        "Deletion waits for the registry finalizers to be removed: example.com/audit"
    );
    // The last removed: gone.
    let r = merge(&app, "held", json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_not_found(&get(&app, "held").await, "held");

    // A watch from before the delete saw the mark, then the end.
    let watch = call(
        &app,
        Method::GET,
        &format!("{BASE}?watch=true&resourceVersion={list_rv}&timeoutSeconds=1"),
        "",
        "",
    )
    .await;
    let events: Vec<Value> = watch
        .text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.last(), Some(&"DELETED"), "{}", watch.text);
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "MODIFIED")
            .all(|e| e["object"]["metadata"]["deletionTimestamp"] == stamp),
        "every change after the delete carries deletionTimestamp: {}",
        watch.text
    );
}

#[rstest]
#[tokio::test]
async fn a_v1_delete_waits_for_registry_finalizers_then_the_driver_tears_down(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let h = app.headers.clone();
    let t = template_as(&app, "fin-tpl", json!({}), &h).await;
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": "prov", "cluster_template_id": t}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let c = conductor(&app, instant());
    drain(&c).await;
    assert_status(&app, "prov", "CREATE_COMPLETE", &h).await;

    let r = merge(
        &app,
        "prov",
        json!({"metadata": {"finalizers": ["example.com/backup"]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.delete_cluster("prov").await;
    assert_eq!(r.status, 204, "{}", r.text);
    // The driver is not asked to tear down while the finalizer is there.
    drain(&c).await;
    let v1 = app.get_cluster("prov").await;
    assert_eq!(v1.body["status"], "DELETE_IN_PROGRESS", "{}", v1.text);
    assert_eq!(
        v1.body["status_reason"],
        "Deletion waits for the registry finalizers to be removed: example.com/backup"
    );
    let shown = get(&app, "prov").await;
    assert!(
        shown.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        shown.text
    );
    // A second /v1 delete is accepted and changes nothing.
    assert_eq!(app.delete_cluster("prov").await.status, 204);

    let r = merge(&app, "prov", json!({"metadata": {"finalizers": []}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.text
    );
    let v1 = app.get_cluster("prov").await;
    assert_eq!(v1.body["status"], "DELETE_IN_PROGRESS", "{}", v1.text);
    assert!(v1.body["status_reason"].is_null(), "{}", v1.text);
    drain(&c).await;
    assert_eq!(app.get_cluster("prov").await.status, 404);
    assert_not_found(&get(&app, "prov").await, "prov");
}

#[rstest]
#[tokio::test]
async fn a_forced_v1_delete_still_waits_for_registry_finalizers(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let h = app.headers.clone();
    let t = template_as(&app, "force-tpl", json!({}), &h).await;
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": "held", "cluster_template_id": t}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    let c = conductor(&app, instant());
    drain(&c).await;
    let r = merge(
        &app,
        "held",
        json!({"metadata": {"finalizers": ["example.com/backup"]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Forced by an administrator: it waits for the finalizer as a plain delete does, and
    // neither a job nor a status poll tears it down meanwhile.
    let admin = app.with_headers(&app.admin()).at("latest");
    let r = admin.force_delete_cluster(&uuid).await;
    assert_eq!(r.status, 204, "{}", r.text);
    drain(&c).await;
    c.sync_round().await.expect("sync");
    let waiting = "Deletion waits for the registry finalizers to be removed: example.com/backup";
    let v1 = app.at("latest").get_cluster(&uuid).await;
    assert_eq!(
        (v1.body["status"].clone(), v1.body["status_reason"].clone()),
        (json!("DELETE_IN_PROGRESS"), json!(waiting)),
        "{}",
        v1.text
    );
    // Forced again while it waits: still waiting.
    assert_eq!(admin.force_delete_cluster(&uuid).await.status, 204);
    drain(&c).await;
    assert_eq!(
        app.at("latest").get_cluster(&uuid).await.body["status_reason"],
        waiting
    );

    // The last finalizer goes: the teardown runs.
    let r = merge(&app, "held", json!({"metadata": {"finalizers": []}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    drain(&c).await;
    assert_eq!(app.get_cluster(&uuid).await.status, 404);
    assert_not_found(&get(&app, "held").await, "held");
}

#[rstest]
#[tokio::test]
async fn a_provisioned_cluster_being_deleted_shows_its_deletion_timestamp(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let h = app.headers.clone();
    let t = template_as(&app, "ts-tpl", json!({}), &h).await;
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": "gone", "cluster_template_id": t}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(app.delete_cluster("gone").await.status, 204);
    let first = get(&app, "gone").await;
    let stamp = first.body["metadata"]["deletionTimestamp"].clone();
    assert!(stamp.is_string(), "{}", first.text);
    let list = call(&app, Method::GET, BASE, "", "").await;
    assert_eq!(
        list.body["items"][0]["metadata"]["deletionTimestamp"],
        stamp
    );
    // The same timestamp on every read, not the time of the read.
    assert_eq!(
        get(&app, "gone").await.body["metadata"]["deletionTimestamp"],
        stamp
    );
}

#[rstest]
#[tokio::test]
async fn bad_finalizers_and_owner_references_are_422_with_the_api_server_causes(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    for (meta, field, message) in [
        (
            json!({"finalizers": ["not a name"]}),
            "metadata.finalizers[0]",
            "Invalid value: \"not a name\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}]}),
            "metadata.ownerReferences[0].uid",
            "Invalid value: \"\": uid must not be empty",
        ),
        (
            json!({"ownerReferences": [{"apiVersion": "example.com/", "kind": "K", "name": "x", "uid": "u"}]}),
            "metadata.ownerReferences[0].apiVersion",
            "Invalid value: \"example.com/\": version must not be empty",
        ),
    ] {
        let r = call(
            &app,
            Method::POST,
            BASE,
            "application/json",
            &registered("bad", meta.clone()).to_string(),
        )
        .await;
        assert_eq!(r.status, 422, "{meta}: {}", r.text);
        assert_eq!(r.body["reason"], "Invalid", "{}", r.text);
        assert_eq!(r.body["details"]["causes"][0]["field"], field, "{}", r.text);
        assert_eq!(
            r.body["details"]["causes"][0]["message"], message,
            "{}",
            r.text
        );
    }
    assert_not_found(&get(&app, "bad").await, "bad");
    // A finalizer without a domain is kept, with the API server's warning.
    let r = call(
        &app,
        Method::POST,
        BASE,
        "application/json",
        &registered("plain", json!({"finalizers": ["cleanup"]})).to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["cleanup"]));
    let warning = r.header("warning").unwrap_or_default();
    assert!(
        warning.contains("prefer a domain-qualified finalizer name"),
        "{warning}"
    );
}

#[rstest]
#[tokio::test]
async fn cluster_profiles_are_selected_by_their_own_labels(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, &registered("p1", json!({"labels": {"env": "prod"}}))).await;
    create(&app, &registered("p2", json!({"labels": {"env": "dev"}}))).await;
    let profiles = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/project-a/clusterprofiles";
    let names = |r: &Resp| -> Vec<String> {
        r.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
            .collect()
    };
    // The filter the ClusterProfile API tells consumers to use.
    let r = call(
        &app,
        Method::GET,
        &format!("{profiles}?labelSelector=x-k8s.io%2Fcluster-manager%3Dfleetyard"),
        "",
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(names(&r), vec!["p1", "p2"], "{}", r.text);
    let r = call(
        &app,
        Method::GET,
        &format!("{profiles}?labelSelector=x-k8s.io%2Fcluster-manager%3Dfleetyard,env%3Dprod"),
        "",
        "",
    )
    .await;
    assert_eq!(names(&r), vec!["p1"], "{}", r.text);
    let r = call(
        &app,
        Method::GET,
        &format!("{profiles}?labelSelector=x-k8s.io%2Fcluster-manager%3Dother"),
        "",
        "",
    )
    .await;
    assert_eq!(names(&r), Vec::<String>::new(), "{}", r.text);
    // The registry's clusters do not carry the profile's label.
    let r = call(
        &app,
        Method::GET,
        &format!("{BASE}?labelSelector=x-k8s.io%2Fcluster-manager%3Dfleetyard"),
        "",
        "",
    )
    .await;
    assert_eq!(names(&r), Vec::<String>::new(), "{}", r.text);
}

#[rstest]
#[tokio::test]
async fn a_label_selected_watch_sees_objects_enter_and_leave_its_selector(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(
        &app,
        &registered("mover", json!({"labels": {"env": "dev"}})),
    )
    .await;
    create(
        &app,
        &registered("other", json!({"labels": {"env": "dev"}})),
    )
    .await;
    let list = call(
        &app,
        Method::GET,
        &format!("{BASE}?labelSelector=env%3Dprod"),
        "",
        "",
    )
    .await;
    assert_eq!(list.body["items"], json!([]), "{}", list.text);
    let from = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    // In, changed while in, out, changed while out, in again; the other never matches.
    for labels in [
        json!({"env": "prod"}),
        json!({"env": "prod", "tier": "gold"}),
        json!({"env": "dev", "tier": null}),
        json!({"team": "a"}),
        json!({"env": "prod"}),
    ] {
        let r = merge(&app, "mover", json!({"metadata": {"labels": labels}})).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = merge(
        &app,
        "other",
        json!({"metadata": {"labels": {"team": "b"}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let watch = call(
        &app,
        Method::GET,
        &format!(
            "{BASE}?watch=true&labelSelector=env%3Dprod&resourceVersion={from}&timeoutSeconds=1"
        ),
        "",
        "",
    )
    .await;
    let events: Vec<Value> = watch
        .text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let seen: Vec<(String, String, Value)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                e["object"]["metadata"]["labels"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("ADDED".into(), "mover".into(), json!({"env": "prod"})),
            (
                "MODIFIED".into(),
                "mover".into(),
                json!({"env": "prod", "tier": "gold"})
            ),
            // It left: DELETED, showing the labels it had while it matched.
            (
                "DELETED".into(),
                "mover".into(),
                json!({"env": "prod", "tier": "gold"})
            ),
            (
                "ADDED".into(),
                "mover".into(),
                json!({"env": "prod", "team": "a"})
            ),
        ],
        "{}",
        watch.text
    );
    let versions: Vec<i64> = events
        .iter()
        .filter_map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()?
                .parse()
                .ok()
        })
        .collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
}

#[rstest]
#[tokio::test]
async fn the_status_subresource_takes_only_status_and_the_main_resource_ignores_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, &registered("st", json!({"labels": {"env": "dev"}}))).await;
    let status_path = format!("{BASE}/st/status");
    let got = call(&app, Method::GET, &status_path, "", "").await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.body["metadata"]["name"], "st");

    // A controller reports its own condition; the label it also sends is ignored.
    let r = call(
        &app,
        Method::PATCH,
        &status_path,
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"env": "prod"}},
                "status": {"conditions": [
                    {"type": "example.com/Backup", "status": "True", "reason": "Done",
                     "message": "nightly backup taken"}]}})
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let conditions = r.body["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let types: Vec<&str> = conditions
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, vec!["OK", "example.com/Backup"], "{}", r.text);
    assert!(
        conditions[1]["lastTransitionTime"].is_string(),
        "{}",
        r.text
    );
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"env": "dev"}),
        "{}",
        r.text
    );
    let shown = get(&app, "st").await;
    assert_eq!(
        shown.body["status"]["conditions"][1]["message"],
        "nightly backup taken"
    );

    // The prober's OK condition stays the service's: a value sent for it is ignored, said.
    let r = call(
        &app,
        Method::PUT,
        &status_path,
        "application/json",
        &json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "st"},
                "status": {"conditions": [
                    {"type": "OK", "status": "True", "reason": "Healthy"},
                    {"type": "example.com/Backup", "status": "False", "reason": "Failed"}]}})
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["status"]["conditions"][0]["status"], "Unknown",
        "{}",
        r.text
    );
    assert_eq!(
        r.body["status"]["conditions"][1]["status"], "False",
        "{}",
        r.text
    );
    assert!(
        r.header("warning")
            .unwrap_or_default()
            .contains("health prober"),
        "{:?}",
        r.headers
    );

    // Writes to the main resource ignore status.
    let r = merge(
        &app,
        "st",
        json!({"status": {"conditions": [{"type": "example.com/Backup", "status": "True"}]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["status"]["conditions"][1]["status"], "False",
        "{}",
        r.text
    );

    // Bad conditions are 422 with the field named; a stale resourceVersion is 409.
    let r = call(
        &app,
        Method::PATCH,
        &status_path,
        "application/merge-patch+json",
        &json!({"status": {"conditions": [{"type": "example.com/Backup", "status": "Maybe"}]}})
            .to_string(),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["field"], "status.conditions[0].status",
        "{}",
        r.text
    );
    let r = call(
        &app,
        Method::PUT,
        &status_path,
        "application/json",
        &json!({"metadata": {"name": "st", "resourceVersion": "1"},
                "status": {"conditions": []}})
        .to_string(),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict", "{}", r.text);

    // Discovery lists the subresource.
    let d = call(
        &app,
        Method::GET,
        "/apis/clusterregistry.k8s.io/v1alpha1",
        "",
        "",
    )
    .await;
    let names: Vec<&str> = d.body["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"clusters/status"), "{}", d.text);
}

#[tokio::test]
async fn a_reader_cannot_write_the_status_subresource() {
    let app = app_on(Backend::Postgres).await;
    create(&app, &registered("ro", json!({}))).await;
    let r = app
        .send(
            app.client
                .patch(app.url(&format!("{BASE}/ro/status")))
                .headers(app.as_identity("project-a", "user-r", "reader"))
                .header("Content-Type", "application/merge-patch+json")
                .body(r#"{"status":{"conditions":[{"type":"example.com/X","status":"True"}]}}"#),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.body["kind"], "Status", "{}", r.text);
    assert_eq!(r.body["reason"], "Forbidden", "{}", r.text);
}

#[tokio::test]
async fn the_edges_answer_as_an_api_server_does() {
    let app = app_on(Backend::Sqlite).await;
    for path in ["/healthz", "/readyz", "/livez"] {
        let r = call(&app, Method::GET, path, "", "").await;
        assert_eq!((r.status, r.text.as_str()), (200, "ok"), "{path}");
    }
    // Paths nothing serves, and bodies over the limit, are Status bodies, not Magnum's.
    for path in [
        "/apis/nope",
        "/apis/clusterregistry.k8s.io/v1alpha1/nope",
        "/api/v1/nodes",
    ] {
        let r = call(&app, Method::GET, path, "", "").await;
        assert_eq!(r.status, 404, "{path}: {}", r.text);
        assert_eq!(r.body["kind"], "Status", "{path}: {}", r.text);
        assert_eq!(r.body["reason"], "NotFound", "{path}: {}", r.text);
    }
    let big = format!(
        "{{\"metadata\":{{\"name\":\"x\",\"annotations\":{{\"a\":\"{}\"}}}}}}",
        "a".repeat(1_100_000)
    );
    let r = call(&app, Method::POST, BASE, "application/json", &big).await;
    assert_eq!(r.status, 413, "{}", &r.text[..r.text.len().min(300)]);
    assert_eq!(r.body["reason"], "RequestEntityTooLarge", "{}", r.text);
    // Protobuf only: 406; YAML in and out.
    let r = app
        .send(
            app.client
                .get(app.url(BASE))
                .header("Accept", "application/vnd.kubernetes.protobuf"),
        )
        .await;
    assert_eq!(r.status, 406, "{}", r.text);
    assert_eq!(r.body["reason"], "NotAcceptable", "{}", r.text);
    let yaml = "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: from-yaml\n  labels: {env: dev}\nspec:\n  kubernetesApiEndpoints:\n    serverEndpoints:\n    - {clientCIDR: 0.0.0.0/0, serverAddress: '10.4.0.9:6443'}\n";
    let r = call(&app, Method::POST, BASE, "application/yaml", yaml).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["metadata"]["labels"]["env"], "dev", "{}", r.text);
    let r = app
        .send(
            app.client
                .get(app.url(&format!("{BASE}/from-yaml")))
                .header("Accept", "application/yaml"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/yaml")
    );
    let back: Value = serde_norway::from_str(&r.text).unwrap_or(Value::Null);
    assert_eq!(back["metadata"]["name"], "from-yaml", "{}", r.text);

    // A create naming a resourceVersion is refused; a PUT without one is 422, as for a CRD.
    let mut stale = registered("with-rv", json!({}));
    stale["metadata"]["resourceVersion"] = json!("12");
    let r = call(
        &app,
        Method::POST,
        BASE,
        "application/json",
        &stale.to_string(),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "resourceVersion should not be set on objects to be created"
    );
    let r = call(
        &app,
        Method::PUT,
        &format!("{BASE}/from-yaml"),
        "application/json",
        &registered("from-yaml", json!({})).to_string(),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["field"], "metadata.resourceVersion",
        "{}",
        r.text
    );

    // `>` and `<` label requirements.
    create(&app, &registered("big", json!({"labels": {"size": "10"}}))).await;
    create(&app, &registered("small", json!({"labels": {"size": "2"}}))).await;
    let r = call(
        &app,
        Method::GET,
        &format!("{BASE}?labelSelector=size%3E5"),
        "",
        "",
    )
    .await;
    let names: Vec<&str> = r.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, vec!["big"], "{}", r.text);

    // Namespaces are listable: the caller's project.
    let r = call(&app, Method::GET, "/api/v1/namespaces", "", "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["kind"], "NamespaceList", "{}", r.text);
    assert_eq!(
        r.body["items"][0]["metadata"]["name"], "project-a",
        "{}",
        r.text
    );
}

#[tokio::test]
async fn discovery_needs_a_caller_when_authentication_is_on() {
    let app = crate::helpers::spawn_jwt_on(Backend::Sqlite, "discovery-secret").await;
    for path in [
        "/apis",
        "/api",
        "/apis/clusterregistry.k8s.io/v1alpha1",
        "/openapi/v3",
    ] {
        let r = call(&app, Method::GET, path, "", "").await;
        assert_eq!(r.status, 401, "{path}: {}", r.text);
        assert_eq!(r.body["kind"], "Status", "{path}: {}", r.text);
        assert_eq!(r.body["reason"], "Unauthorized", "{path}: {}", r.text);
    }
    for path in ["/version", "/healthz", "/livez"] {
        let r = call(&app, Method::GET, path, "", "").await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
}

#[rstest]
#[tokio::test]
async fn generate_name_is_kept_on_the_object(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let mut body = registered("", json!({"generateName": "edge-"}));
    if let Some(m) = body["metadata"].as_object_mut() {
        m.remove("name");
    }
    let made = create(&app, &body).await;
    let name = made.body["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        name.starts_with("edge-") && name.len() > "edge-".len(),
        "{}",
        made.text
    );
    assert_eq!(
        made.body["metadata"]["generateName"], "edge-",
        "{}",
        made.text
    );
    let shown = get(&app, &name).await;
    assert_eq!(
        shown.body["metadata"]["generateName"], "edge-",
        "{}",
        shown.text
    );
    // A later update neither drops nor changes it.
    let r = merge(
        &app,
        &name,
        json!({"metadata": {"generateName": "other-", "labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["generateName"], "edge-", "{}", r.text);
}

/// The items' names of a list answer.
fn names(r: &Resp) -> Vec<String> {
    r.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn list(app: &TestApp, query: &str) -> Resp {
    call(app, Method::GET, &format!("{BASE}?{query}"), "", "").await
}

fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[rstest]
#[tokio::test]
async fn a_continued_list_is_its_first_pages_snapshot_or_expires_with_a_token_that_goes_on(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    // Created out of order: listed by name.
    for name in ["delta", "alpha", "charlie", "bravo"] {
        create(&app, &registered(name, json!({"labels": {"env": "dev"}}))).await;
    }
    let first = list(&app, "limit=2").await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(names(&first), ["alpha", "bravo"], "{}", first.text);
    assert_eq!(
        first.body["metadata"]["remainingItemCount"], 2,
        "{}",
        first.text
    );
    let rv = first.body["metadata"]["resourceVersion"].clone();
    let token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(!token.is_empty(), "{}", first.text);

    // Nothing changed: the rest, at the first page's version.
    let next = list(&app, &format!("limit=2&continue={}", encoded(&token))).await;
    assert_eq!(next.status, 200, "{}", next.text);
    assert_eq!(names(&next), ["charlie", "delta"], "{}", next.text);
    assert_eq!(
        next.body["metadata"]["resourceVersion"], rv,
        "{}",
        next.text
    );
    assert!(
        next.body["metadata"].get("remainingItemCount").is_none(),
        "{}",
        next.text
    );
    assert!(
        next.body["metadata"].get("continue").is_none(),
        "{}",
        next.text
    );

    // A change to a page already served leaves the rest consistent.
    let r = merge(
        &app,
        "alpha",
        json!({"metadata": {"labels": {"env": "prod"}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let next = list(&app, &format!("limit=2&continue={}", encoded(&token))).await;
    assert_eq!(next.status, 200, "{}", next.text);
    assert_eq!(names(&next), ["charlie", "delta"], "{}", next.text);
    assert_eq!(
        next.body["metadata"]["resourceVersion"], rv,
        "{}",
        next.text
    );

    // A change to what is still to come: 410, and a token that goes on at the latest version.
    let r = merge(
        &app,
        "delta",
        json!({"metadata": {"labels": {"env": "prod"}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let latest = r.body["metadata"]["resourceVersion"].clone();
    let gone = list(&app, &format!("limit=2&continue={}", encoded(&token))).await;
    assert_eq!(gone.status, 410, "{}", gone.text);
    assert_eq!(gone.body["kind"], "Status", "{}", gone.text);
    assert_eq!(gone.body["reason"], "Expired", "{}", gone.text);
    assert_eq!(gone.body["code"], 410, "{}", gone.text);
    assert_eq!(
        gone.body["message"],
        "The provided continue parameter is too old to display a consistent list result. You \
         can start a new list without the continue parameter, or use the continue token in this \
         response to retrieve the remainder of the results. Continuing with the provided token \
         results in an inconsistent list - objects that were created, modified, or deleted \
         between the time the first chunk was returned and now may show up in the list.",
        "{}",
        gone.text
    );
    let onward = gone.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(!onward.is_empty(), "{}", gone.text);
    let rest = list(&app, &format!("limit=2&continue={}", encoded(&onward))).await;
    assert_eq!(rest.status, 200, "{}", rest.text);
    assert_eq!(names(&rest), ["charlie", "delta"], "{}", rest.text);
    assert_eq!(
        rest.body["metadata"]["resourceVersion"], latest,
        "{}",
        rest.text
    );
    assert_eq!(rest.body["items"][1]["metadata"]["labels"]["env"], "prod");

    // A selector filters: no count, as the apiserver.
    let filtered = list(&app, "limit=1&labelSelector=env%3Dprod").await;
    assert_eq!(names(&filtered), ["alpha"], "{}", filtered.text);
    assert!(!filtered.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .is_empty());
    assert!(
        filtered.body["metadata"]
            .get("remainingItemCount")
            .is_none(),
        "{}",
        filtered.text
    );

    // The same for ClusterProfiles, and the all-namespaces path is ordered by namespace.
    let profiles = call(
        &app,
        Method::GET,
        "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/project-a/clusterprofiles?limit=3",
        "",
        "",
    )
    .await;
    assert_eq!(
        names(&profiles),
        ["alpha", "bravo", "charlie"],
        "{}",
        profiles.text
    );
    assert_eq!(
        profiles.body["metadata"]["remainingItemCount"], 1,
        "{}",
        profiles.text
    );
    let all = call(
        &app,
        Method::GET,
        "/apis/clusterregistry.k8s.io/v1alpha1/clusters?limit=10",
        "",
        "",
    )
    .await;
    assert_eq!(
        names(&all),
        ["alpha", "bravo", "charlie", "delta"],
        "{}",
        all.text
    );
}

#[rstest]
#[tokio::test]
async fn list_resource_versions_follow_the_api_server(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, &registered("one", json!({}))).await;
    create(&app, &registered("two", json!({}))).await;
    let now = list(&app, "").await;
    let rv: i64 = now.body["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(rv > 0, "{}", now.text);

    // Refused combinations: 422 against ListOptions, with apimachinery's causes.
    for (query, reason, message) in [
        (
            "resourceVersionMatch=Exact".to_string(),
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact".into(),
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            format!("resourceVersion={rv}&resourceVersionMatch=Latest"),
            "FieldValueNotSupported",
            "Unsupported value: \"Latest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ),
        (
            format!("resourceVersion={rv}&resourceVersionMatch=Exact&continue=abc"),
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden when continue is provided",
        ),
    ] {
        let r = list(&app, &query).await;
        assert_eq!(r.status, 422, "{query}: {}", r.text);
        assert_eq!(r.body["reason"], "Invalid", "{}", r.text);
        assert_eq!(r.body["details"]["kind"], "ListOptions", "{}", r.text);
        assert_eq!(r.body["details"]["group"], "meta.k8s.io", "{}", r.text);
        assert_eq!(
            r.body["details"]["causes"],
            json!([{"reason": reason, "message": message, "field": "resourceVersionMatch"}]),
            "{query}: {}",
            r.text
        );
        assert_eq!(
            r.body["message"],
            format!("ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: {message}")
        );
    }
    let r = list(&app, "resourceVersion=soon").await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "resourceVersion: Invalid value: \"soon\": strconv.ParseUint: parsing \"soon\": invalid syntax"
    );

    // An exact read of the current version, and of a past one nothing has changed since.
    for query in [
        format!("resourceVersion={rv}&resourceVersionMatch=Exact"),
        format!(
            "resourceVersion={}&resourceVersionMatch=NotOlderThan",
            rv - 1
        ),
        format!("resourceVersion={rv}&limit=1"),
    ] {
        let r = list(&app, &query).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(
            r.body["metadata"]["resourceVersion"],
            rv.to_string(),
            "{query}"
        );
    }
    let page = list(
        &app,
        &format!("resourceVersion={rv}&resourceVersionMatch=Exact&limit=1"),
    )
    .await;
    assert_eq!(names(&page), ["one"], "{}", page.text);
    assert_eq!(
        page.body["metadata"]["remainingItemCount"], 1,
        "{}",
        page.text
    );

    // Once something changed, a past version cannot be read exactly: 410; NotOlderThan is
    // served at the latest.
    let r = merge(&app, "two", json!({"metadata": {"labels": {"x": "y"}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let latest = r.body["metadata"]["resourceVersion"].clone();
    let r = list(
        &app,
        &format!("resourceVersion={rv}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(r.status, 410, "{}", r.text);
    assert_eq!(r.body["reason"], "Expired", "{}", r.text);
    assert_eq!(
        r.body["message"],
        "The resourceVersion for the provided list is too old."
    );
    let r = list(
        &app,
        &format!("resourceVersion={rv}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["resourceVersion"], latest, "{}", r.text);

    // A version the server has not reached: 504, as the apiserver words it.
    let ahead = rv + 1000;
    for query in [
        format!("resourceVersion={ahead}"),
        format!("resourceVersion={ahead}&resourceVersionMatch=Exact"),
        format!("resourceVersion={ahead}&resourceVersionMatch=NotOlderThan"),
    ] {
        let r = list(&app, &query).await;
        assert_eq!(r.status, 504, "{query}: {}", r.text);
        assert_eq!(r.body["reason"], "Timeout", "{}", r.text);
        assert_eq!(
            r.body["message"],
            format!(
                "Timeout: Too large resource version: {ahead}, current: {}",
                latest.as_str().unwrap_or("")
            ),
            "{}",
            r.text
        );
        assert_eq!(
            r.body["details"],
            json!({"causes": [{"reason": "ResourceVersionTooLarge",
                "message": "Too large resource version"}], "retryAfterSeconds": 1})
        );
        assert_eq!(
            r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
            Some("1")
        );
    }

    // A resourceVersion beside a continue token is the apiserver's 400.
    let first = list(&app, "limit=1").await;
    let token = first.body["metadata"]["continue"].as_str().unwrap_or("");
    let r = list(
        &app,
        &format!("limit=1&resourceVersion={rv}&continue={}", encoded(token)),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "specifying resource version is not allowed when using continue"
    );
}

/// Reads a watch's events until `done` holds for one of them.
async fn events_until(
    resp: &mut reqwest::Response,
    seen: &mut Vec<Value>,
    done: impl Fn(&Value) -> bool,
) {
    let mut pending = String::new();
    loop {
        let chunk = resp.chunk().await.expect("the stream goes on");
        let Some(chunk) = chunk else {
            panic!("the stream ended before the awaited event: {seen:?}");
        };
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let event: Value = serde_json::from_str(line.trim()).expect("one event per line");
            let stop = done(&event);
            seen.push(event);
            if stop {
                return;
            }
        }
    }
}

#[rstest]
#[tokio::test]
async fn a_streaming_list_ends_its_initial_events_with_a_bookmark_then_goes_on_live(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    create(&app, &registered("beta", json!({}))).await;
    create(&app, &registered("alpha", json!({}))).await;
    let latest = get(&app, "alpha").await.body["metadata"]["resourceVersion"].clone();

    let mut resp = app
        .client
        .get(app.url(&format!(
            "{BASE}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true&timeoutSeconds=30"
        )))
        .send()
        .await
        .expect("watch started");
    assert_eq!(resp.status().as_u16(), 200);
    let mut seen = Vec::new();
    events_until(&mut resp, &mut seen, |e| e["type"] == "BOOKMARK").await;
    let kinds: Vec<(&str, &str)> = seen
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or(""),
                e["object"]["metadata"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("ADDED", "alpha"), ("ADDED", "beta"), ("BOOKMARK", "")]
    );
    assert_eq!(
        seen[2]["object"],
        json!({"kind": "Cluster", "apiVersion": "clusterregistry.k8s.io/v1alpha1",
            "metadata": {"resourceVersion": latest,
                "annotations": {"k8s.io/initial-events-end": "true"}}})
    );
    // Then the changes, live.
    let r = merge(&app, "beta", json!({"metadata": {"labels": {"x": "y"}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut live = Vec::new();
    events_until(&mut resp, &mut live, |e| e["type"] == "MODIFIED").await;
    let last = live.last().cloned().unwrap_or(Value::Null);
    assert_eq!(last["object"]["metadata"]["name"], "beta");
    assert_eq!(last["object"]["metadata"]["labels"], json!({"x": "y"}));
    drop(resp);

    // Without allowWatchBookmarks: the initial events and no bookmark.
    let r = call(
        &app,
        Method::GET,
        &format!(
            "{BASE}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
        ),
        "",
        "",
    )
    .await;
    let types: Vec<String> = r
        .text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(types, ["ADDED", "ADDED"], "{}", r.text);

    // sendInitialEvents=false: no initial events, from the latest version.
    let r = call(
        &app,
        Method::GET,
        &format!(
            "{BASE}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
        ),
        "",
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.text.trim(), "", "{}", r.text);

    // ClusterProfiles stream the same way.
    let r = call(
        &app,
        Method::GET,
        "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/project-a/clusterprofiles?watch=true\
         &sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true\
         &timeoutSeconds=1",
        "",
        "",
    )
    .await;
    let events: Vec<Value> = r
        .text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(events.len(), 3, "{}", r.text);
    assert_eq!(events[0]["object"]["kind"], "ClusterProfile", "{}", r.text);
    assert_eq!(events[2]["type"], "BOOKMARK", "{}", r.text);
    assert_eq!(events[2]["object"]["kind"], "ClusterProfile", "{}", r.text);
    assert_eq!(
        events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[rstest]
#[tokio::test]
async fn watch_options_the_api_server_refuses_are_422(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    for (query, causes) in [
        (
            "watch=true&sendInitialEvents=true",
            json!([{"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"}]),
        ),
        (
            "watch=true&resourceVersion=5&resourceVersionMatch=NotOlderThan",
            json!([{"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                "message": "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"}]),
        ),
        (
            "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact",
            json!([{"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
                {"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
                "message": "Unsupported value: \"Exact\": supported values: \"NotOlderThan\""}]),
        ),
        (
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1",
            json!([{"reason": "FieldValueForbidden", "field": "sendInitialEvents",
                "message": "Forbidden: sendInitialEvents is forbidden for list"}]),
        ),
    ] {
        let r = list(&app, query).await;
        assert_eq!(r.status, 422, "{query}: {}", r.text);
        assert_eq!(r.body["reason"], "Invalid", "{}", r.text);
        assert_eq!(r.body["details"]["causes"], causes, "{query}: {}", r.text);
    }
    // A streaming list from a version not reached yet: 504.
    let r = list(
        &app,
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=999999",
    )
    .await;
    assert_eq!(r.status, 504, "{}", r.text);
    assert_eq!(r.body["reason"], "Timeout", "{}", r.text);
}

/// The registry object named `name`, listed in project-a (its uid and own-name annotation).
async fn listed(app: &TestApp) -> Vec<(String, String, Value)> {
    let r = call(app, Method::GET, BASE, "", "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| {
                    (
                        i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                        i["metadata"]["uid"].as_str().unwrap_or("").to_string(),
                        i["metadata"]["annotations"]["fleetyard.openstack.org/cluster-name"]
                            .clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[rstest]
#[tokio::test]
async fn one_namespace_and_name_is_one_object_across_both_apis(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let h = app.headers.clone();
    let t = template_as(&app, "id-tpl", json!({}), &h).await;
    let registered_uid = create(&app, &registered("taken", json!({}))).await.body["metadata"]
        ["uid"]
        .as_str()
        .unwrap_or("")
        .to_string();

    // A /v1 cluster whose name the registry holds is not refused: it gets a derived name.
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": "taken", "cluster_template_id": t}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let v1_uid = r.body["uuid"].as_str().unwrap_or("").to_string();
    let derived = format!("taken-{}", &v1_uid[..8]);
    // A /v1 cluster literally named like that derived name gets one of its own.
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": derived, "cluster_template_id": t}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let literal_uid = r.body["uuid"].as_str().unwrap_or("").to_string();
    let literal_derived = format!("{derived}-{}", &literal_uid[..8]);

    let mut expected = vec![
        ("taken".to_string(), registered_uid.clone(), Value::Null),
        (derived.clone(), v1_uid.clone(), json!("taken")),
        (
            literal_derived.clone(),
            literal_uid.clone(),
            json!(derived.clone()),
        ),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(listed(&app).await, expected);
    for (name, uid, _) in &expected {
        let r = get(&app, name).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["uid"], json!(uid), "{}", r.text);
    }

    // A registry create of a taken name, natural or derived, is the API server's 409.
    for name in ["taken", derived.as_str()] {
        let r = call(
            &app,
            Method::POST,
            BASE,
            "application/json",
            &registered(name, json!({})).to_string(),
        )
        .await;
        assert_eq!(r.status, 409, "{}", r.text);
        assert_eq!(
            r.body,
            json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": format!("clusters.clusterregistry.k8s.io \"{name}\" already exists"),
                "reason": "AlreadyExists",
                "details": {"name": name, "group": "clusterregistry.k8s.io", "kind": "clusters"},
                "code": 409
            }),
            "{}",
            r.text
        );
    }
    assert_eq!(listed(&app).await, expected, "nothing was written");

    // /v1 names may repeat (Magnum's rule): the registered cluster's own name is `taken` too.
    let r = app.get_cluster("taken").await;
    r.assert_error(
        409,
        "Multiple clusters exist with same name. Please use the cluster uuid instead.",
    );
    // Registry reads and deletes address one object by its registry name.
    let r = call(&app, Method::DELETE, &format!("{BASE}/taken"), "", "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_not_found(&get(&app, "taken").await, "taken");
    let r = app.get_cluster("taken").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["uuid"], json!(v1_uid), "{}", r.text);
    // The freed name is not given to the /v1 cluster: registry names never change.
    assert_eq!(
        get(&app, &derived).await.body["metadata"]["uid"],
        json!(v1_uid)
    );
}

#[rstest]
#[tokio::test]
async fn a_replayed_watch_shows_each_change_as_it_was_and_deleted_with_its_last_object(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    // (resourceVersion 0 would mean "from now, with the current objects first")
    create(&app, &registered("earlier", json!({}))).await;
    let list = call(&app, Method::GET, BASE, "", "").await;
    let from = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut body = registered("snap", json!({"labels": {"env": "dev"}}));
    body["spec"]["authInfo"] = json!({"user": {"kind": "Secret", "name": "u1"}});
    create(&app, &body).await;
    let endpoints = |addr: &str| {
        json!({"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]}})
    };
    for addr in ["10.4.0.2:6443", "10.4.0.3:6443"] {
        let r = merge(&app, "snap", json!({"spec": endpoints(addr)})).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let last = get(&app, "snap").await.body;
    let r = call(&app, Method::DELETE, &format!("{BASE}/snap"), "", "").await;
    assert_eq!(r.status, 200, "{}", r.text);

    let watch = call(
        &app,
        Method::GET,
        &format!("{BASE}?watch=true&resourceVersion={from}&timeoutSeconds=1"),
        "",
        "",
    )
    .await;
    let events: Vec<Value> = watch
        .text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let seen: Vec<(&str, &Value)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or(""),
                &e["object"]["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]
                    ["serverAddress"],
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("ADDED", &json!("10.4.0.1:6443")),
            ("MODIFIED", &json!("10.4.0.2:6443")),
            ("MODIFIED", &json!("10.4.0.3:6443")),
            ("DELETED", &json!("10.4.0.3:6443")),
        ],
        "{}",
        watch.text
    );
    let versions: Vec<i64> = events
        .iter()
        .filter_map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(versions.len(), 4, "{}", watch.text);
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    // DELETED carries the last full object: its spec, status and metadata as last read, at
    // the deletion's own resourceVersion.
    let deleted = &events[3]["object"];
    assert_eq!(deleted["spec"], last["spec"], "{}", watch.text);
    assert_eq!(deleted["status"], last["status"], "{}", watch.text);
    assert_eq!(
        deleted["spec"]["authInfo"]["user"]["name"], "u1",
        "{}",
        watch.text
    );
    let mut meta = deleted["metadata"].clone();
    let mut last_meta = last["metadata"].clone();
    for m in [&mut meta, &mut last_meta] {
        if let Some(o) = m.as_object_mut() {
            o.remove("resourceVersion");
        }
    }
    assert_eq!(meta, last_meta, "{}", watch.text);
}
