//! `/v1/quotas`, `/v1/stats` and `/v1/mservices` over HTTP: every code and sentence of the
//! contract (2.8–2.10), the cluster quota enforced on create, and the services table fed by a
//! running conductor's heartbeats.

use std::sync::Arc;
use std::time::Duration;

use fleetyard::config::ConductorSection;
use fleetyard::drivers::DriverRegistry;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::{
    cluster_as, instant, spawn_app, spawn_with, template_as, Api, Backend, Resp, TestApp, QUOTAS,
};

fn project_b(app: &TestApp) -> HeaderMap {
    app.project_b()
}

fn quota(project: &str, resource: &str) -> String {
    format!("{QUOTAS}/{project}/{resource}")
}

async fn make_quota(app: &TestApp, project: &str, hard_limit: i64) -> Value {
    let r = app
        .with_headers(&app.admin())
        .create_quota(
            &json!({"project_id": project, "resource": "Cluster", "hard_limit": hard_limit}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

/// Asserts a stored quota's representation, with timestamps of the right kinds.
#[track_caller]
fn assert_quota(v: &Value, project: &str, hard_limit: i64, updated: bool) {
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            "created_at",
            "hard_limit",
            "id",
            "project_id",
            "resource",
            "updated_at"
        ]
    );
    assert!(v["id"].as_i64().is_some_and(|id| id > 0), "{v}");
    assert_eq!(v["project_id"], project);
    assert_eq!(v["resource"], "Cluster");
    assert_eq!(v["hard_limit"], hard_limit);
    assert!(v["created_at"]
        .as_str()
        .is_some_and(|t| t.ends_with("+00:00")));
    assert_eq!(v["updated_at"].is_string(), updated, "{v}");
}

fn member_of(app: &TestApp, project: &str) -> HeaderMap {
    app.as_identity(project, &format!("user-{project}"), "member,reader")
}

// ---------------------------------------------------------------------------------------------
// Quotas
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_admin_creates_a_quota_with_201_and_defaults() {
    let app = spawn_app().await;
    let q = make_quota(&app, "project-a", 5).await;
    assert_quota(&q, "project-a", 5, false);
    // resource defaults to Cluster, hard_limit to 1; a project id is not looked up anywhere.
    let r = app
        .with_headers(&app.admin())
        .create_quota(&json!({"project_id": "made-up"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_quota(&r.body, "made-up", 1, false);
    assert!(r.header("location").is_none());
    let r = app
        .with_headers(&app.admin())
        .create_quota(&json!({"project_id": "zero", "hard_limit": 0}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["hard_limit"], 0);
}

#[tokio::test]
async fn quota_create_validation_has_magnums_sentences() {
    let app = spawn_app().await;
    let inv = |f: &str, v: &str, reason: &str| {
        format!("Invalid input for field/attribute {f}. Value: '{v}'. {reason}")
    };
    for (body, detail) in [
        (
            json!({"hard_limit": 3}),
            "Must provide a valid project ID.".to_string(),
        ),
        (
            json!({"project_id": ""}),
            "Must provide a valid project ID.".to_string(),
        ),
        (
            json!({"project_id": null}),
            "Must provide a valid project ID.".to_string(),
        ),
        (
            json!({"project_id": "p", "resource": "Node"}),
            inv("resource", "Node", "Value should be one of: Cluster."),
        ),
        (
            json!({"project_id": "p", "resource": "cluster"}),
            inv("resource", "cluster", "Value should be one of: Cluster."),
        ),
        (
            json!({"project_id": "p", "hard_limit": -1}),
            inv("hard_limit", "-1", "Value should be greater or equal to 0."),
        ),
        (
            json!({"project_id": "p", "hard_limit": "many"}),
            inv("hard_limit", "many", "Value should be an integer."),
        ),
        (
            json!({"project_id": 7}),
            inv("project_id", "7", "Value should be string."),
        ),
        (
            json!({"project_id": "p".repeat(256)}),
            inv(
                "project_id",
                &"p".repeat(256),
                "Value should have a maximum character requirement of 255.",
            ),
        ),
        (
            json!({"project_id": "p", "bogus": 1}),
            "Unknown attribute for argument quota: bogus".to_string(),
        ),
        (
            json!({"project_id": "p", "id": 4}),
            inv("id", "4", "Cannot set read only field."),
        ),
        (
            json!({"project_id": "p", "created_at": "x"}),
            inv("created_at", "x", "Cannot set read only field."),
        ),
    ] {
        app.with_headers(&app.admin())
            .create_quota(&body)
            .await
            .assert_error(400, &detail);
    }
    app.with_headers(&app.admin())
        .create_quota(&json!([]))
        .await
        .assert_error(
            400,
            "Invalid input for argument quota: the request body must be a JSON object.",
        );
    // A numeric string is coerced, as the framework does for integers.
    let r = app
        .with_headers(&app.admin())
        .create_quota(&json!({"project_id": "p", "hard_limit": "4"}))
        .await;
    assert_eq!((r.status, r.body["hard_limit"].clone()), (201, json!(4)));
}

#[tokio::test]
async fn a_duplicate_quota_is_409_and_only_admins_create() {
    let app = spawn_app().await;
    make_quota(&app, "project-a", 5).await;
    app.with_headers(&app.admin())
        .create_quota(&json!({"project_id": "project-a", "resource": "Cluster", "hard_limit": 9}))
        .await
        .assert_error(
            409,
            "Quota for project project-a already exists for resource Cluster.",
        );
    app.create_quota(&json!({"project_id": "project-a"}))
        .await
        .assert_error(403, "Policy doesn't allow quota:create to be performed.");
    // The policy is checked after the body is valid, as Magnum's framework does.
    app.create_quota(&json!({"bogus": 1}))
        .await
        .assert_error(400, "Unknown attribute for argument quota: bogus");
}

#[tokio::test]
async fn show_returns_the_row_or_the_configured_default_and_403_across_projects() {
    let app = spawn_with(Backend::Postgres, |s| s.quotas.max_clusters_per_project = 7).await;
    let q = make_quota(&app, "project-a", 5).await;
    // A member of the project and an admin see the row.
    for h in [app.headers.clone(), app.admin()] {
        let r = app.with_headers(&h).get_quota("project-a", "Cluster").await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body, q);
    }
    // No row: the default, without id or timestamps, and always reported as Cluster.
    let r = app
        .with_headers(&app.admin())
        .get_quota("project-x", "Cluster")
        .await;
    assert_eq!(
        r.body,
        json!({"project_id": "project-x", "hard_limit": 7, "resource": "Cluster"})
    );
    let r = app.get_quota("project-a", "Node").await;
    assert_eq!(
        r.body,
        json!({"project_id": "project-a", "hard_limit": 7, "resource": "Cluster"})
    );
    let r = app
        .with_headers(&project_b(&app))
        .get_quota("project-b", "Cluster")
        .await;
    assert_eq!(
        r.body,
        json!({"project_id": "project-b", "hard_limit": 7, "resource": "Cluster"})
    );
    // Another project's quota, with or without a row: 403.
    for p in ["project-a", "project-x"] {
        app.with_headers(&project_b(&app))
            .get_quota(p, "Cluster")
            .await
            .assert_error(403, "Not authorized.");
    }
    // quota:get needs a role.
    let nobody = app.as_identity("project-a", "u", "observer");
    app.with_headers(&nobody)
        .get_quota("project-a", "Cluster")
        .await
        .assert_error(403, "Policy doesn't allow quota:get to be performed.");
    app.get(&format!("{}?x=1", quota("project-a", "Cluster")))
        .await
        .assert_error(400, "Unknown argument: \"x\"");
}

#[tokio::test]
async fn update_takes_a_plain_quota_document_and_answers_202() {
    let app = spawn_app().await;
    make_quota(&app, "project-a", 5).await;
    // What `openstack coe quotas update` sends.
    let r = app
        .with_headers(&app.admin())
        .patch_quota(
            "project-a",
            "Cluster",
            &json!({"project_id": "project-a", "resource": "Cluster", "hard_limit": 10}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_quota(&r.body, "project-a", 10, true);
    assert_eq!(app.get_quota("project-a", "Cluster").await.body, r.body);
    // The path names the quota: a different project in the body changes nothing else.
    let r = app
        .with_headers(&app.admin())
        .patch_quota(
            "project-a",
            "Cluster",
            &json!({"project_id": "project-b", "hard_limit": 11}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_quota(&r.body, "project-a", 11, true);
    assert!(app
        .store
        .get_quota("project-b", "Cluster")
        .await
        .expect("read")
        .is_none());
    // An omitted hard_limit silently becomes 1, as in Magnum.
    let r = app
        .with_headers(&app.admin())
        .patch_quota("project-a", "Cluster", &json!({}))
        .await;
    assert_eq!((r.status, r.body["hard_limit"].clone()), (202, json!(1)));
}

#[tokio::test]
async fn update_refusals() {
    let app = spawn_app().await;
    make_quota(&app, "project-a", 5).await;
    let path = quota("project-a", "Cluster");
    app.with_headers(&app.admin())
        .patch_quota("project-x", "Cluster", &json!({"hard_limit": 3}))
        .await
        .assert_error(
            404,
            "Quota could not be found: project_id project-x resource Cluster.",
        );
    app.with_headers(&app.admin())
        .patch_quota("project-a", "Node", &json!({"hard_limit": 3}))
        .await
        .assert_error(
            404,
            "Quota could not be found: project_id project-a resource Node.",
        );
    app.patch(&path, &json!({"hard_limit": 50}))
        .await
        .assert_error(403, "Policy doesn't allow quota:update to be performed.");
    for (body, detail) in [
        (
            json!({"hard_limit": -2}),
            "Invalid input for field/attribute hard_limit. Value: '-2'. Value should be greater or equal to 0.",
        ),
        (
            json!({"resource": "Node", "hard_limit": 2}),
            "Invalid input for field/attribute resource. Value: 'Node'. Value should be one of: Cluster.",
        ),
        (
            json!({"hard_limit": 2, "extra": true}),
            "Unknown attribute for argument quotapatch: extra",
        ),
    ] {
        app.patch_as(&path, &body, &app.admin())
            .await
            .assert_error(400, detail);
    }
    // A JSON-Patch array is not a quota document.
    app.patch_as(
        &path,
        &json!([{"op": "replace", "path": "/hard_limit", "value": 3}]),
        &app.admin(),
    )
    .await
    .assert_error(
        400,
        "Invalid input for argument quotapatch: the request body must be a JSON object.",
    );
    assert_eq!(app.get(&path).await.body["hard_limit"], 5);
}

#[tokio::test]
async fn delete_answers_204_then_the_default_shows_and_a_second_delete_is_404() {
    let app = spawn_app().await;
    make_quota(&app, "project-a", 5).await;
    let path = quota("project-a", "Cluster");
    app.delete(&path)
        .await
        .assert_error(403, "Policy doesn't allow quota:delete to be performed.");
    let r = app.delete_as(&path, &app.admin()).await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    assert_eq!(
        app.get(&path).await.body,
        json!({"project_id": "project-a", "hard_limit": 20, "resource": "Cluster"})
    );
    app.delete_as(&path, &app.admin()).await.assert_error(
        404,
        "Quota could not be found: project_id project-a resource Cluster.",
    );
}

#[tokio::test]
async fn list_is_for_admins_and_all_tenants_widens_it_to_every_project() {
    let app = spawn_app().await;
    let qa = make_quota(&app, "project-a", 5).await;
    let qb = make_quota(&app, "project-b", 6).await;
    let qadm = make_quota(&app, "admin-project", 7).await;
    app.list_quotas("")
        .await
        .assert_error(403, "Policy doesn't allow quota:get_all to be performed.");
    // Without all_tenants an admin sees its own project's quotas.
    let r = app.with_headers(&app.admin()).list_quotas("").await;
    assert_eq!(r.body, json!({"quotas": [qadm]}));
    let r = app
        .get_as(&format!("{QUOTAS}?all_tenants=True"), &app.admin())
        .await;
    assert_eq!(r.body, json!({"quotas": [qa, qb, qadm]}));
    let r = app
        .get_as(&format!("{QUOTAS}?all_tenants=false"), &app.admin())
        .await;
    assert_eq!(r.body, json!({"quotas": [qadm]}));
    // all_tenants does nothing for someone allowed quota:get_all who is not an admin.
    let policy = std::env::temp_dir().join(format!("fy-policy-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(&policy, "\"quota:get_all\": \"role:member\"\n").expect("policy");
    let open = spawn_with(Backend::Postgres, |s| {
        s.oslo_policy.policy_file = Some(policy.clone())
    })
    .await;
    make_quota(&open, "project-a", 5).await;
    make_quota(&open, "project-b", 6).await;
    let r = open.get(&format!("{QUOTAS}?all_tenants=True")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let projects: Vec<&str> = r.body["quotas"]
        .as_array()
        .expect("list")
        .iter()
        .map(|q| q["project_id"].as_str().expect("project"))
        .collect();
    assert_eq!(projects, vec!["project-a"]);
    let _ = std::fs::remove_file(policy);
}

#[tokio::test]
async fn the_quota_list_pages_by_integer_id_markers() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for (i, p) in ["p1", "p2", "p3", "p4", "p5"].iter().enumerate() {
        ids.push(
            make_quota(&app, p, 10 - i as i64).await["id"]
                .as_i64()
                .expect("id"),
        );
    }
    // What `openstack coe quotas list --all-tenants --limit 2` sends, following next.
    let mut url = app.url(&format!(
        "{QUOTAS}?limit=2&sort_key=id&sort_dir=asc&all_tenants=True"
    ));
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let r = app.send(app.client.get(&url).headers(app.admin())).await;
        assert_eq!(r.status, 200, "{}", r.text);
        pages += 1;
        for q in r.body["quotas"].as_array().expect("list") {
            seen.push(q["id"].as_i64().expect("id"));
        }
        let Some(next) = r.body.get("next") else {
            break;
        };
        let last = seen.last().expect("last");
        assert_eq!(
            next.as_str().expect("next"),
            app.url(&format!(
                "/v1/quotas?sort_key=id&sort_dir=asc&limit=2&marker={last}&all_tenants=True"
            ))
        );
        url = next.as_str().expect("next").to_string();
    }
    assert_eq!((seen, pages), (ids.clone(), 3));
    // Sorted by another column, descending, from a marker.
    let r = app
        .get_as(
            &format!(
                "{QUOTAS}?all_tenants=1&sort_key=hard_limit&sort_dir=asc&marker={}",
                ids[3]
            ),
            &app.admin(),
        )
        .await;
    let limits: Vec<i64> = r.body["quotas"]
        .as_array()
        .expect("list")
        .iter()
        .map(|q| q["hard_limit"].as_i64().expect("limit"))
        .collect();
    assert_eq!(limits, vec![8, 9, 10]);
    for (query, status, detail) in [
        (
            "marker=x",
            400,
            "Invalid input for marker: x is not an integer.".to_string(),
        ),
        (
            "marker=999",
            404,
            "Quota could not be found: quota id 999.".to_string(),
        ),
        // A marker outside the listing (another project's row without all_tenants) is unknown.
        (
            &format!("marker={}", ids[0]) as &str,
            404,
            format!("Quota could not be found: quota id {}.", ids[0]),
        ),
        ("limit=0", 400, "Limit must be positive".to_string()),
        (
            "sort_key=name",
            400,
            "The sort_key value \"name\" is an invalid field for sorting".to_string(),
        ),
        (
            "sort_dir=sideways",
            400,
            "Invalid sort direction: sideways. Acceptable values are 'asc' or 'desc'".to_string(),
        ),
        (
            "all_tenants=maybe",
            400,
            "Invalid input for all_tenants: maybe is not a boolean.".to_string(),
        ),
        (
            "project_id=p1",
            400,
            "Unknown argument: \"project_id\"".to_string(),
        ),
    ] {
        app.get_as(&format!("{QUOTAS}?{query}"), &app.admin())
            .await
            .assert_error(status, &detail);
    }
}

// ---------------------------------------------------------------------------------------------
// Quota enforcement on cluster create
// ---------------------------------------------------------------------------------------------

fn limit_exceeded(limit: i64) -> String {
    format!(
        "Resource limit exceeded: You have reached the maximum clusters per project, {limit}. Ask an administrator to raise the quota or delete clusters you no longer need."
    )
}

async fn try_cluster(app: &TestApp, name: &str, t: &str, h: &HeaderMap) -> Resp {
    app.with_headers(h)
        .at("latest")
        .create_cluster(&json!({"name": name, "cluster_template_id": t}))
        .await
}

#[tokio::test]
async fn a_quota_of_one_allows_one_cluster_and_refuses_the_second_with_403() {
    let app = spawn_app().await;
    let q = member_of(&app, "project-q");
    make_quota(&app, "project-q", 1).await;
    let t = template_as(&app, "t", json!({}), &q).await;
    let first = try_cluster(&app, "one", &t, &q).await;
    assert_eq!(first.status, 202, "{}", first.text);
    try_cluster(&app, "two", &t, &q)
        .await
        .assert_error(403, &limit_exceeded(1));
    // Nothing of the refused create was written.
    let listed = app.with_headers(&q).list_clusters("").await;
    assert_eq!(listed.body["clusters"].as_array().map(Vec::len), Some(1));
    // Other projects are not limited by it; raising the quota lets the project go on.
    let tb = template_as(&app, "tb", json!({}), &project_b(&app)).await;
    cluster_as(
        &app,
        json!({"name": "b1", "cluster_template_id": tb}),
        &project_b(&app),
    )
    .await;
    let r = app
        .with_headers(&app.admin())
        .patch_quota("project-q", "Cluster", &json!({"hard_limit": 2}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(try_cluster(&app, "two", &t, &q).await.status, 202);
    try_cluster(&app, "three", &t, &q)
        .await
        .assert_error(403, &limit_exceeded(2));
}

#[tokio::test]
async fn a_zero_quota_refuses_every_cluster_and_without_a_row_the_default_limits() {
    let app = spawn_with(Backend::Postgres, |s| s.quotas.max_clusters_per_project = 2).await;
    let z = member_of(&app, "project-z");
    make_quota(&app, "project-z", 0).await;
    let t = template_as(&app, "t", json!({}), &z).await;
    try_cluster(&app, "one", &t, &z)
        .await
        .assert_error(403, &limit_exceeded(0));
    let d = member_of(&app, "project-d");
    let td = template_as(&app, "t", json!({}), &d).await;
    for name in ["one", "two"] {
        assert_eq!(try_cluster(&app, name, &td, &d).await.status, 202);
    }
    try_cluster(&app, "three", &td, &d)
        .await
        .assert_error(403, &limit_exceeded(2));
    // Deleting the quota row of project-z falls back to the default of 2.
    assert_eq!(
        app.with_headers(&app.admin())
            .delete_quota("project-z", "Cluster")
            .await
            .status,
        204
    );
    assert_eq!(try_cluster(&app, "one", &t, &z).await.status, 202);
}

#[tokio::test]
async fn concurrent_creates_never_exceed_the_quota() {
    let app = spawn_app().await;
    let q = member_of(&app, "project-q");
    make_quota(&app, "project-q", 3).await;
    let t = template_as(&app, "t", json!({}), &q).await;
    let names: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
    let results =
        futures_util::future::join_all(names.iter().map(|n| try_cluster(&app, n, &t, &q))).await;
    let accepted = results.iter().filter(|r| r.status == 202).count();
    let refused = results.iter().filter(|r| r.status == 403).count();
    assert_eq!((accepted, refused), (3, 9));
    let listed = app.with_headers(&q).list_clusters("").await;
    assert_eq!(listed.body["clusters"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn concurrent_creates_never_exceed_the_default_limit_either() {
    let app = spawn_with(Backend::Postgres, |s| {
        s.quotas.max_clusters_per_project = 3;
        s.database.max_pool_size = 12;
    })
    .await;
    let q = member_of(&app, "project-q");
    let t = template_as(&app, "t", json!({}), &q).await;
    let names: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
    let results =
        futures_util::future::join_all(names.iter().map(|n| try_cluster(&app, n, &t, &q))).await;
    let accepted = results.iter().filter(|r| r.status == 202).count();
    let refused = results.iter().filter(|r| r.status == 403).count();
    assert_eq!((accepted, refused), (3, 9));
    let listed = app.with_headers(&q).list_clusters("").await;
    assert_eq!(listed.body["clusters"].as_array().map(Vec::len), Some(3));
}

// ---------------------------------------------------------------------------------------------
// Stats
// ---------------------------------------------------------------------------------------------

async fn stats(app: &TestApp, query: &str, h: &HeaderMap) -> Resp {
    app.with_headers(h).get_stats(query).await
}

#[tokio::test]
async fn stats_count_clusters_and_nodes_with_masters_per_project_or_cloud() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({"master_lb_enabled": true}), &app.headers).await;
    cluster_as(
        &app,
        json!({"name": "a1", "cluster_template_id": t, "node_count": 2}),
        &app.headers,
    )
    .await;
    cluster_as(
        &app,
        json!({"name": "a2", "cluster_template_id": t, "node_count": 1, "master_count": 3}),
        &app.headers,
    )
    .await;
    let tb = template_as(&app, "tb", json!({}), &project_b(&app)).await;
    cluster_as(
        &app,
        json!({"name": "b1", "cluster_template_id": tb}),
        &project_b(&app),
    )
    .await;
    let a = json!({"clusters": 2, "nodes": 7});
    let b = json!({"clusters": 1, "nodes": 2});
    for query in [
        "",
        "?project_id=project-a",
        "?type=cluster",
        "?type=Cluster&project_id=project-a",
    ] {
        let r = stats(&app, query, &app.headers).await;
        assert_eq!((r.status, &r.body), (200, &a), "{query}");
    }
    assert_eq!(stats(&app, "", &project_b(&app)).await.body, b);
    // Admins: the whole cloud by default, any project on request.
    assert_eq!(
        stats(&app, "", &app.admin()).await.body,
        json!({"clusters": 3, "nodes": 9})
    );
    assert_eq!(
        stats(&app, "?project_id=project-b", &app.admin())
            .await
            .body,
        b
    );
    assert_eq!(
        stats(&app, "?project_id=empty", &app.admin()).await.body,
        json!({"clusters": 0, "nodes": 0})
    );
}

#[tokio::test]
async fn stats_refusals() {
    let app = spawn_app().await;
    stats(&app, "?project_id=project-b", &app.headers)
        .await
        .assert_error(403, "Not authorized.");
    for query in ["?type=node", "?type=clusters&project_id=project-a"] {
        stats(&app, query, &app.headers)
            .await
            .assert_error(400, "Invalid stats type. Allowed values are 'cluster'");
    }
    stats(&app, "?all_tenants=1", &app.headers)
        .await
        .assert_error(400, "Unknown argument: \"all_tenants\"");
    stats(&app, "", &app.as_identity("project-a", "u", "observer"))
        .await
        .assert_error(403, "Policy doesn't allow stats:get_all to be performed.");
    let r = app
        .request(
            reqwest::Method::POST,
            "/v1/stats",
            &app.headers,
            Some(&json!({})),
        )
        .await;
    r.assert_framework_error(405);
}

// ---------------------------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------------------------

async fn mservices(app: &TestApp) -> Value {
    let r = app.with_headers(&app.admin()).list_services().await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn set_service(app: &TestApp, host: &str, assignments: &str) {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&app.db.url)
        .await
        .expect("connect");
    sqlx::query(&format!(
        "UPDATE magnum_service SET {assignments} WHERE host = $1"
    ))
    .bind(host)
    .execute(&mut conn)
    .await
    .expect("update service");
}

#[tokio::test]
async fn services_are_listed_from_heartbeats_with_their_state() {
    let app = spawn_app().await;
    assert_eq!(mservices(&app).await, json!({"mservices": []}));
    let binary = fleetyard::conductor::BINARY;
    app.store
        .heartbeat_service("conductor-1", binary)
        .await
        .expect("heartbeat");
    app.store
        .heartbeat_service("conductor-1", binary)
        .await
        .expect("heartbeat");
    app.store
        .heartbeat_service("conductor-2", binary)
        .await
        .expect("heartbeat");
    let body = mservices(&app).await;
    assert_eq!(
        body.as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["mservices".to_string()]),
        "no next, ever"
    );
    let list = body["mservices"].as_array().expect("list");
    assert_eq!(list.len(), 2);
    let first = &list[0];
    let created_at = first["created_at"].clone();
    let updated_at = first["updated_at"].clone();
    assert!(created_at.is_string() && updated_at.is_string(), "{first}");
    assert_eq!(
        first,
        &json!({
            "id": first["id"], "host": "conductor-1", "binary": binary, "state": "up",
            "report_count": 2, "disabled": false, "disabled_reason": null,
            "created_at": created_at, "updated_at": updated_at,
        })
    );
    assert_eq!(list[1]["host"], "conductor-2");
    assert_eq!(list[1]["report_count"], 1);
    assert!(list[0]["id"].as_i64() < list[1]["id"].as_i64());

    // Silent for longer than [conductor] service_down_time (60 s): down.
    set_service(
        &app,
        "conductor-1",
        "last_seen_up = now() - interval '61 seconds'",
    )
    .await;
    assert_eq!(mservices(&app).await["mservices"][0]["state"], "down");
    // Forced down, however fresh; disabled is shown as stored.
    set_service(
        &app,
        "conductor-2",
        "forced_down = TRUE, disabled = TRUE, disabled_reason = 'maintenance'",
    )
    .await;
    let s = &mservices(&app).await["mservices"][1];
    assert_eq!(
        (
            s["state"].clone(),
            s["disabled"].clone(),
            s["disabled_reason"].clone()
        ),
        (json!("down"), json!(true), json!("maintenance"))
    );
    // A new heartbeat brings the silent one back up.
    app.store
        .heartbeat_service("conductor-1", binary)
        .await
        .expect("heartbeat");
    let s = &mservices(&app).await["mservices"][0];
    assert_eq!(
        (s["state"].clone(), s["report_count"].clone()),
        (json!("up"), json!(3))
    );
}

#[tokio::test]
async fn the_down_time_is_configurable() {
    let app = spawn_with(Backend::Postgres, |s| s.conductor.service_down_time = 180).await;
    app.store
        .heartbeat_service("c", fleetyard::conductor::BINARY)
        .await
        .expect("heartbeat");
    set_service(&app, "c", "last_seen_up = now() - interval '120 seconds'").await;
    assert_eq!(mservices(&app).await["mservices"][0]["state"], "up");
    set_service(&app, "c", "last_seen_up = now() - interval '181 seconds'").await;
    assert_eq!(mservices(&app).await["mservices"][0]["state"], "down");
}

#[tokio::test]
async fn services_are_for_admins_and_take_no_parameters() {
    let app = spawn_app().await;
    app.list_services().await.assert_error(
        403,
        "Policy doesn't allow magnum-service:get_all to be performed.",
    );
    app.get_as("/v1/mservices?limit=1", &app.admin())
        .await
        .assert_error(400, "Unknown argument: \"limit\"");
}

#[tokio::test]
async fn a_running_conductor_shows_up_through_its_heartbeats() {
    let app = spawn_app().await;
    let conductor = Arc::new(fleetyard::conductor::Conductor::new(
        app.store.clone(),
        DriverRegistry::build(&fleetyard::config::DriversSection::default(), &instant())
            .expect("drivers"),
        "conductor-host",
        ConductorSection {
            heartbeat_interval: 1,
            ..ConductorSection::default()
        },
    ));
    let running = tokio::spawn(conductor.run());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let service = loop {
        let body = mservices(&app).await;
        if let Some(s) = body["mservices"]
            .as_array()
            .and_then(|l| l.first())
            .filter(|s| s["report_count"].as_i64() >= Some(2))
        {
            break s.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no heartbeats: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    running.abort();
    assert_eq!(service["host"], "conductor-host");
    assert_eq!(
        service["binary"], "magnum-conductor",
        "Magnum's binary name"
    );
    assert_eq!(service["state"], "up");
}
