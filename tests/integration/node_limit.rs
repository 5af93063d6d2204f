//! Node counts stop at `[cluster] max_node_count` on every way in (cluster create, resize,
//! `node_count` PATCH, node group create and PATCH), with Magnum's body and nothing written, on
//! both backends; and the fake driver builds nothing in proportion to a group's node count.

use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{
    at, complete_cluster_with, drain, spawn_fleet_on, template_as, Api, Backend, Fleet, CLUSTERS,
};

/// The node limit these tests configure.
const LIMIT: i32 = 10;

fn past(field: &str, value: &str) -> String {
    format!(
        "Invalid input for field/attribute {field}. Value: '{value}'. Value should be less or equal to {LIMIT}."
    )
}

async fn fleet(backend: Backend) -> (Fleet, HeaderMap) {
    let f = spawn_fleet_on(backend, |s| s.cluster.max_node_count = LIMIT).await;
    let h = at(&f.app.headers, "latest");
    (f, h)
}

/// The clusters the caller sees.
async fn cluster_names(f: &Fleet, h: &HeaderMap) -> Vec<Value> {
    let listed = f.app.with_headers(h).list_clusters("").await;
    listed.body["clusters"]
        .as_array()
        .map(|a| a.iter().map(|c| c["name"].clone()).collect())
        .unwrap_or_default()
}

#[rstest]
#[tokio::test]
async fn a_cluster_create_past_the_node_limit_is_refused_and_writes_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (f, h) = fleet(backend).await;
    let t = template_as(&f.app, "t", json!({"master_lb_enabled": true}), &h).await;
    let api = f.app.with_headers(&h);
    let cases = [
        (json!({"node_count": 11}), past("node_count", "11")),
        (
            json!({"node_count": 2147483647}),
            past("node_count", "2147483647"),
        ),
        (
            json!({"node_count": "99999999999"}),
            past("node_count", "99999999999"),
        ),
        (json!({"master_count": 11}), past("master_count", "11")),
        (
            json!({"labels": {"max_node_count": "11"}}),
            format!(
                "The max_node_count label (11) is more than the {LIMIT} nodes a node group may have."
            ),
        ),
    ];
    for (extra, sentence) in cases {
        let mut body = json!({"name": "big", "cluster_template_id": t});
        for (k, v) in extra.as_object().into_iter().flatten() {
            body[k] = v.clone();
        }
        api.create_cluster(&body).await.assert_error(400, &sentence);
    }
    assert!(cluster_names(&f, &h).await.is_empty());
    // At the limit is accepted.
    let at_limit = api
        .create_cluster(&json!({"name": "ok", "cluster_template_id": t, "node_count": LIMIT}))
        .await;
    assert_eq!(at_limit.status, 202, "{}", at_limit.text);
}

#[rstest]
#[tokio::test]
async fn a_resize_or_node_count_patch_past_the_node_limit_is_refused_and_changes_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (f, h) = fleet(backend).await;
    let c = complete_cluster_with(&f.app, &f.conductor, "k1", json!({}), &h).await;
    let api = f.app.with_headers(&h);
    api.resize_cluster(&c, &json!({"node_count": 11}))
        .await
        .assert_error(400, &past("node_count", "11"));
    api.resize_cluster(&c, &json!({"node_count": 2147483647}))
        .await
        .assert_error(400, &past("node_count", "2147483647"));
    let many: Vec<String> = (0..=LIMIT).map(|n| format!("node-{n}")).collect();
    api.resize_cluster(&c, &json!({"node_count": 1, "nodes_to_remove": many}))
        .await
        .assert_error(
            400,
            &format!("A resize may name at most {LIMIT} nodes_to_remove."),
        );
    for value in [json!(11), json!("11"), json!(2147483647)] {
        let shown = value
            .as_str()
            .map(str::to_string)
            .unwrap_or(value.to_string());
        api.patch_cluster(
            &c,
            &json!([{"op": "replace", "path": "/node_count", "value": value}]),
        )
        .await
        .assert_error(400, &past("node_count", &shown));
    }
    let shown = api.get_cluster(&c).await;
    assert_eq!(shown.body["status"], "CREATE_COMPLETE", "{}", shown.text);
    assert_eq!(shown.body["node_count"], 1, "{}", shown.text);
    assert_eq!(
        f.app
            .store
            .jobs_for(crate::helpers::id(&c))
            .await
            .expect("jobs")
            .len(),
        1
    );
}

#[rstest]
#[tokio::test]
async fn a_node_group_past_the_node_limit_is_refused_on_create_and_patch(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (f, h) = fleet(backend).await;
    let c = complete_cluster_with(&f.app, &f.conductor, "k1", json!({}), &h).await;
    let api = f.app.with_headers(&h);
    for (field, value) in [
        ("node_count", json!(11)),
        ("min_node_count", json!(11)),
        ("max_node_count", json!(11)),
        ("max_node_count", json!(2147483647)),
    ] {
        let mut body = json!({"name": "ng1"});
        body[field] = value.clone();
        api.create_nodegroup(&c, &body)
            .await
            .assert_error(400, &past(field, &value.to_string()));
    }
    let listed = api.list_nodegroups(&c, "").await;
    assert_eq!(
        listed.body["nodegroups"].as_array().map(Vec::len),
        Some(2),
        "{}",
        listed.text
    );
    for field in ["min_node_count", "max_node_count"] {
        api.patch_nodegroup(
            &c,
            "default-worker",
            &json!([{"op": "replace", "path": format!("/{field}"), "value": 11}]),
        )
        .await
        .assert_error(400, &past(field, "11"));
    }
    let worker = api.get_nodegroup(&c, "default-worker").await;
    assert_eq!(
        worker.body["max_node_count"],
        Value::Null,
        "{}",
        worker.text
    );
    assert_eq!(worker.body["status"], "CREATE_COMPLETE", "{}", worker.text);
}

#[tokio::test]
async fn the_fake_driver_lists_a_bounded_number_of_addresses_whatever_the_node_count() {
    let f = spawn_fleet_on(Backend::Postgres, |s| s.cluster.max_node_count = 100_000).await;
    let h = at(&f.app.headers, "latest");
    let t = template_as(&f.app, "t", json!({}), &h).await;
    let r = f
        .app
        .with_headers(&h)
        .create_cluster(&json!({"name": "big", "cluster_template_id": t, "node_count": 100_000}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    drain(&f.conductor).await;
    f.conductor.health_round().await.expect("health poll");
    let shown = f.app.get_as(&format!("{CLUSTERS}/{uuid}"), &h).await;
    assert_eq!(shown.body["status"], "CREATE_COMPLETE", "{}", shown.text);
    assert_eq!(shown.body["node_count"], 100_000);
    assert_eq!(
        shown.body["node_addresses"].as_array().map(Vec::len),
        Some(240)
    );
    let reasons = shown.body["health_status_reason"]
        .as_object()
        .map(|m| m.len())
        .unwrap_or_default();
    // "api", the master and the first 240 workers.
    assert_eq!(reasons, 1 + 1 + 240, "{}", shown.text.len());
}
