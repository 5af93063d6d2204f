//! No cluster, node group or federation is stranded: every `*_FAILED` status has a way forward
//! through the API. A `CREATE_FAILED` cluster is retried in place (`POST .../actions/retry`,
//! 1.16), a node group or federation likewise (1.17); an `UPDATE_FAILED` one accepts the change
//! that failed again, a `DELETE_FAILED` one is deleted again. The fake driver fails as a broken
//! infrastructure would (`[fake_driver] fail_operations` in one conductor), and a repaired
//! conductor (without it) finishes; the status and reason a user sees are asserted at each step,
//! with the notifications.

use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::FakeDriverSection;

use crate::helpers::{
    cluster_as, complete_cluster_as, conductor, drain, events_of, federation_body, instant,
    instant_settings, make_federation_as, spawn_with, template_as, Api, Backend, TestApp,
};

/// A conductor whose infrastructure fails `operations` for every cluster.
fn broken(app: &TestApp, operations: &str) -> Conductor {
    conductor(
        app,
        FakeDriverSection {
            fail_operations: operations.into(),
            ..instant()
        },
    )
}

fn failure(op: &str, setting: &str) -> String {
    format!(
        "The fake driver simulated a failure of '{op}' ([fake_driver] fail_operations = {setting})."
    )
}

/// `(status, status_reason)` of the cluster as `h` sees it at `latest`.
async fn seen(app: &TestApp, uuid: &str, h: &HeaderMap) -> (String, Value) {
    let r = app.with_headers(h).at("latest").get_cluster(uuid).await;
    assert_eq!(r.status, 200, "{}", r.text);
    (
        r.body["status"].as_str().unwrap_or_default().to_string(),
        r.body["status_reason"].clone(),
    )
}

/// `(name, status)` of the cluster's node groups.
async fn groups(app: &TestApp, uuid: &str, h: &HeaderMap) -> Vec<(String, String)> {
    let r = app
        .with_headers(h)
        .at("latest")
        .list_nodegroups(uuid, "")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut out: Vec<(String, String)> = r.body["nodegroups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["name"].as_str().unwrap_or_default().to_string(),
                g["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn events(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(t, o)| (t.to_string(), o.to_string()))
        .collect()
}

async fn outcomes(app: &TestApp, uuid: &str) -> Vec<(String, String)> {
    events_of(app, uuid)
        .await
        .into_iter()
        .map(|(t, o, _)| (t, o))
        .collect()
}

#[rstest]
#[tokio::test]
async fn a_create_failed_cluster_is_retried_in_place_and_completes_once_the_infrastructure_is_repaired(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    let uuid = cluster_as(&app, json!({"name": "k1", "cluster_template_id": t}), &h).await;
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("CREATE_IN_PROGRESS".to_string(), Value::Null)
    );

    // The infrastructure refuses: CREATE_FAILED with the driver's reason.
    let out = drain(&broken(&app, "create")).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Failed { .. }]),
        "{out:?}"
    );
    let reason = failure("create", "create");
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("CREATE_FAILED".to_string(), json!(reason))
    );
    assert_eq!(
        groups(&app, &uuid, &h).await,
        vec![
            ("default-master".to_string(), "CREATE_FAILED".to_string()),
            ("default-worker".to_string(), "CREATE_FAILED".to_string()),
        ]
    );

    // The action is new in 1.16.
    let r = app.at("1.15").retry_cluster(&uuid).await;
    assert_eq!(r.status, 406, "{}", r.text);
    // A reader may not retry.
    let reader = app.as_identity("project-a", "user-r", "reader");
    app.with_headers(&reader)
        .at("latest")
        .retry_cluster(&uuid)
        .await
        .assert_error(403, "Policy doesn't allow cluster:retry to be performed.");
    // Another project's cluster is unknown.
    let r = app
        .with_headers(&app.project_b())
        .at("latest")
        .retry_cluster(&uuid)
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    // A body other than an empty object is refused.
    let r = app
        .at("latest")
        .call(
            reqwest::Method::POST,
            &format!("/v1/clusters/{uuid}/actions/retry"),
            Some(&json!({"force": true})),
        )
        .await;
    r.assert_error(400, "Unknown attribute for argument retry: force");

    // Retried: in progress again, the old reason gone, the failed node groups too.
    let r = app.at("latest").retry_cluster(&uuid).await;
    assert_eq!((r.status, r.body.clone()), (202, json!({"uuid": uuid})));
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("CREATE_IN_PROGRESS".to_string(), Value::Null)
    );
    assert_eq!(
        groups(&app, &uuid, &h).await,
        vec![
            (
                "default-master".to_string(),
                "CREATE_IN_PROGRESS".to_string()
            ),
            (
                "default-worker".to_string(),
                "CREATE_IN_PROGRESS".to_string()
            ),
        ]
    );

    // The repaired infrastructure finishes it.
    let out = drain(&conductor(&app, instant())).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("CREATE_COMPLETE".to_string(), Value::Null)
    );
    assert_eq!(
        groups(&app, &uuid, &h).await,
        vec![
            ("default-master".to_string(), "CREATE_COMPLETE".to_string()),
            ("default-worker".to_string(), "CREATE_COMPLETE".to_string()),
        ]
    );
    assert_eq!(
        outcomes(&app, &uuid).await,
        events(&[
            ("magnum.cluster.create", "pending"),
            ("magnum.cluster.create", "failure"),
            ("magnum.cluster.create", "pending"),
            ("magnum.cluster.create", "success"),
        ])
    );

    // Only a failed create is retried; the answer says what the way forward is otherwise.
    app.at("latest").retry_cluster(&uuid).await.assert_error(
        409,
        "Retrying a cluster when status is \"CREATE_COMPLETE\" is not supported; only a cluster whose create failed (CREATE_FAILED) is retried.",
    );
}

#[rstest]
#[tokio::test]
async fn an_update_failed_cluster_accepts_the_same_upgrade_and_node_count_change_again(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let old_template =
        app.at("latest").get_cluster(&uuid).await.body["cluster_template_id"].clone();
    let t2 = template_as(&app, "t2", json!({"labels": {"kube_tag": "v1.31.0"}}), &h).await;
    let api = app.at("latest");

    // An upgrade the infrastructure refuses: UPDATE_FAILED, the old template restored.
    let r = api
        .upgrade_cluster(&uuid, &json!({"cluster_template": t2}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("UPDATE_IN_PROGRESS".to_string(), Value::Null)
    );
    drain(&broken(&app, "upgrade,update")).await;
    assert_eq!(
        seen(&app, &uuid, &h).await,
        (
            "UPDATE_FAILED".to_string(),
            json!(failure("upgrade", "upgrade,update"))
        )
    );
    assert_eq!(
        api.get_cluster(&uuid).await.body["cluster_template_id"],
        old_template
    );

    // The same upgrade again, accepted from UPDATE_FAILED, and finished once repaired.
    let r = api
        .upgrade_cluster(&uuid, &json!({"cluster_template": t2}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("UPDATE_IN_PROGRESS".to_string(), Value::Null)
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("UPDATE_COMPLETE".to_string(), Value::Null)
    );
    assert_eq!(
        api.get_cluster(&uuid).await.body["cluster_template_id"],
        json!(t2)
    );

    // A node count change (PATCH) the infrastructure refuses, then repeated.
    let ops = json!([{"op": "replace", "path": "/node_count", "value": 3}]);
    assert_eq!(api.patch_cluster(&uuid, &ops).await.status, 202);
    drain(&broken(&app, "upgrade,update")).await;
    let shown = api.get_cluster(&uuid).await;
    assert_eq!(
        (
            shown.body["status"].clone(),
            shown.body["node_count"].clone()
        ),
        (json!("UPDATE_FAILED"), json!(1)),
        "the old count is restored"
    );
    let r = api.patch_cluster(&uuid, &ops).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    let shown = api.get_cluster(&uuid).await;
    assert_eq!(
        (
            shown.body["status"].clone(),
            shown.body["node_count"].clone()
        ),
        (json!("UPDATE_COMPLETE"), json!(3))
    );
    assert_eq!(
        outcomes(&app, &uuid).await,
        events(&[
            ("magnum.cluster.create", "pending"),
            ("magnum.cluster.create", "success"),
            ("magnum.cluster.update", "pending"),
            ("magnum.cluster.update", "failure"),
            ("magnum.cluster.update", "pending"),
            ("magnum.cluster.update", "success"),
            ("magnum.cluster.update", "pending"),
            ("magnum.cluster.update", "failure"),
            ("magnum.cluster.update", "pending"),
            ("magnum.cluster.update", "success"),
        ])
    );
}

#[rstest]
#[tokio::test]
async fn a_delete_failed_cluster_is_deleted_again(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let api = app.at("latest");
    assert_eq!(api.delete_cluster(&uuid).await.status, 204);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_IN_PROGRESS".to_string(), Value::Null)
    );
    drain(&broken(&app, "delete")).await;
    // The reason names what was left behind (tests/integration/deletes.rs has the whole list).
    let (status, reason) = seen(&app, &uuid, &h).await;
    assert_eq!(status, "DELETE_FAILED");
    let left = format!(
        "{} Left behind on the infrastructure: stack fake-{uuid}, network fake-net-{uuid}, load_balancer fake-lb-{uuid}, server_group fake-sg-",
        failure("delete", "delete")
    );
    assert!(
        reason.as_str().is_some_and(|r| r.starts_with(&left)),
        "{reason}"
    );
    // A retry is for creates: the answer names the way forward from DELETE_FAILED.
    api.retry_cluster(&uuid).await.assert_error(
        409,
        "Retrying a cluster when status is \"DELETE_FAILED\" is not supported; only a cluster whose create failed (CREATE_FAILED) is retried: delete the cluster again, or have an administrator force its delete (DELETE /v1/clusters/{cluster}?force=true, microversion 1.18).",
    );
    assert_eq!(api.delete_cluster(&uuid).await.status, 204);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_IN_PROGRESS".to_string(), Value::Null)
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(api.get_cluster(&uuid).await.status, 404);
    assert_eq!(
        outcomes(&app, &uuid).await,
        events(&[
            ("magnum.cluster.create", "pending"),
            ("magnum.cluster.create", "success"),
            ("magnum.cluster.delete", "pending"),
            ("magnum.cluster.delete", "failure"),
            ("magnum.cluster.delete", "pending"),
            ("magnum.cluster.delete", "success"),
        ])
    );
}

// ---- Node groups (retry at 1.17) -----------------------------------------------------------

/// `(status, status_reason)` of a node group as `h` sees it at `latest`.
async fn ng_seen(app: &TestApp, cluster: &str, ng: &str, h: &HeaderMap) -> (String, Value) {
    let r = app
        .with_headers(h)
        .at("latest")
        .get_nodegroup(cluster, ng)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    (
        r.body["status"].as_str().unwrap_or_default().to_string(),
        r.body["status_reason"].clone(),
    )
}

fn state(status: &str, reason: Value) -> (String, Value) {
    (status.to_string(), reason)
}

#[rstest]
#[tokio::test]
async fn a_create_failed_node_group_is_retried_in_place_and_completes_once_the_infrastructure_is_repaired(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let api = app.at("latest");
    let r = api
        .create_nodegroup(&uuid, &json!({"name": "gpu", "node_count": 1}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let ng = r.body["uuid"].as_str().expect("uuid").to_string();
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("CREATE_IN_PROGRESS", Value::Null)
    );

    // The infrastructure refuses: the group CREATE_FAILED, its cluster UPDATE_FAILED, both with
    // the driver's reason.
    let out = drain(&broken(&app, "update")).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Failed { .. }]),
        "{out:?}"
    );
    let reason = json!(failure("update", "update"));
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("CREATE_FAILED", reason.clone())
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        state("UPDATE_FAILED", reason.clone())
    );

    // The action is new in 1.17.
    let r = app.at("1.16").retry_nodegroup(&uuid, &ng).await;
    assert_eq!(r.status, 406, "{}", r.text);
    // A reader may not retry.
    let reader = app.as_identity("project-a", "user-r", "reader");
    app.with_headers(&reader)
        .at("latest")
        .retry_nodegroup(&uuid, &ng)
        .await
        .assert_error(403, "Policy doesn't allow nodegroup:retry to be performed.");
    // Another project's cluster is unknown.
    app.with_headers(&app.project_b())
        .at("latest")
        .retry_nodegroup(&uuid, &ng)
        .await
        .assert_error(404, &format!("Cluster {uuid} could not be found."));
    // A missing group of a visible cluster.
    api.retry_nodegroup(&uuid, "nope")
        .await
        .assert_error(404, "Nodegroup nope could not be found.");
    // A body other than an empty object is refused.
    let r = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/clusters/{uuid}/nodegroups/{ng}/actions/retry"),
            Some(&json!({"force": true})),
        )
        .await;
    r.assert_error(400, "Unknown attribute for argument retry: force");
    // Only a failed create is retried.
    api.retry_nodegroup(&uuid, "default-worker").await.assert_error(
        409,
        "Retrying a nodegroup when status is \"CREATE_COMPLETE\" is not supported; only a nodegroup whose create failed (CREATE_FAILED) is retried.",
    );

    // Retried (by name): in progress again, the old reason gone, the cluster updating.
    let r = api.retry_nodegroup(&uuid, "gpu").await;
    assert_eq!((r.status, r.body.clone()), (202, json!({"uuid": ng})));
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("CREATE_IN_PROGRESS", Value::Null)
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        state("UPDATE_IN_PROGRESS", Value::Null)
    );

    // The repaired infrastructure finishes it.
    let out = drain(&conductor(&app, instant())).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("CREATE_COMPLETE", Value::Null)
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        state("UPDATE_COMPLETE", Value::Null)
    );
    assert_eq!(
        outcomes(&app, &ng).await,
        events(&[
            ("magnum.nodegroup.create", "pending"),
            ("magnum.nodegroup.create", "pending"),
        ])
    );
    assert_eq!(
        outcomes(&app, &uuid).await,
        events(&[
            ("magnum.cluster.create", "pending"),
            ("magnum.cluster.create", "success"),
            ("magnum.cluster.update", "failure"),
            ("magnum.cluster.update", "success"),
        ])
    );
    api.retry_nodegroup(&uuid, &ng).await.assert_error(
        409,
        "Retrying a nodegroup when status is \"CREATE_COMPLETE\" is not supported; only a nodegroup whose create failed (CREATE_FAILED) is retried.",
    );
}

#[rstest]
#[tokio::test]
async fn a_node_group_of_a_cluster_whose_create_failed_is_retried_with_the_cluster(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    let uuid = cluster_as(&app, json!({"name": "k1", "cluster_template_id": t}), &h).await;
    drain(&broken(&app, "create")).await;
    assert_eq!(
        ng_seen(&app, &uuid, "default-worker", &h).await,
        state("CREATE_FAILED", json!(failure("create", "create")))
    );
    app.at("latest")
        .retry_nodegroup(&uuid, "default-worker")
        .await
        .assert_error(
            409,
            "Retrying a nodegroup when its cluster's status is \"CREATE_FAILED\" is not supported: retry the create (POST /v1/clusters/{cluster}/actions/retry, microversion 1.16) or delete the cluster.",
        );
    assert_eq!(
        ng_seen(&app, &uuid, "default-worker", &h).await.0,
        "CREATE_FAILED"
    );
}

#[rstest]
#[tokio::test]
async fn an_update_failed_node_group_accepts_the_same_patch_and_resize_again_and_a_delete_failed_one_is_deleted_again(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let api = app.at("latest");
    let r = api
        .create_nodegroup(&uuid, &json!({"name": "gpu", "node_count": 1}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let ng = r.body["uuid"].as_str().expect("uuid").to_string();
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("CREATE_COMPLETE", Value::Null)
    );
    let shown = |r: crate::helpers::Resp| {
        (
            r.body["status"].clone(),
            r.body["max_node_count"].clone(),
            r.body["node_count"].clone(),
        )
    };

    // A node group update the infrastructure refuses.
    let ops = json!([{"op": "replace", "path": "/max_node_count", "value": 5}]);
    let r = api.patch_nodegroup(&uuid, &ng, &ops).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("UPDATE_IN_PROGRESS", Value::Null)
    );
    drain(&broken(&app, "update,resize")).await;
    let reason = json!(failure("update", "update,resize"));
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("UPDATE_FAILED", reason.clone())
    );
    assert_eq!(seen(&app, &uuid, &h).await, state("UPDATE_FAILED", reason));
    // A retry is for creates: the answer names the way forward from UPDATE_FAILED.
    api.retry_nodegroup(&uuid, &ng).await.assert_error(
        409,
        "Retrying a nodegroup when status is \"UPDATE_FAILED\" is not supported; only a nodegroup whose create failed (CREATE_FAILED) is retried: repeat the node group update or resize that failed, or delete the node group.",
    );
    // The same patch again runs the update again (it is no longer a no-op).
    let r = api.patch_nodegroup(&uuid, &ng, &ops).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("UPDATE_IN_PROGRESS", Value::Null)
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        shown(api.get_nodegroup(&uuid, &ng).await),
        (json!("UPDATE_COMPLETE"), json!(5), json!(1))
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        state("UPDATE_COMPLETE", Value::Null)
    );
    // Once complete, the same patch is a no-op again.
    assert_eq!(api.patch_nodegroup(&uuid, &ng, &ops).await.status, 202);
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("UPDATE_COMPLETE", Value::Null)
    );

    // A resize of the group the infrastructure refuses: the old count is restored; the same
    // resize again finishes.
    let resize = json!({"node_count": 2, "nodegroup": "gpu"});
    assert_eq!(api.resize_cluster(&uuid, &resize).await.status, 202);
    drain(&broken(&app, "update,resize")).await;
    assert_eq!(
        shown(api.get_nodegroup(&uuid, &ng).await),
        (json!("UPDATE_FAILED"), json!(5), json!(1))
    );
    let r = api.resize_cluster(&uuid, &resize).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        shown(api.get_nodegroup(&uuid, &ng).await),
        (json!("UPDATE_COMPLETE"), json!(5), json!(2))
    );

    // A delete the infrastructure refuses, then deleted again.
    assert_eq!(api.delete_nodegroup(&uuid, &ng).await.status, 204);
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("DELETE_IN_PROGRESS", Value::Null)
    );
    drain(&broken(&app, "update")).await;
    // The reason names what the refused delete left behind: the group's server group.
    let ng_uuid = api.get_nodegroup(&uuid, &ng).await.body["uuid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state(
            "DELETE_FAILED",
            json!(format!(
                "{} Left behind on the infrastructure: server_group fake-sg-{ng_uuid}.",
                failure("update", "update")
            ))
        )
    );
    api.retry_nodegroup(&uuid, &ng).await.assert_error(
        409,
        "Retrying a nodegroup when status is \"DELETE_FAILED\" is not supported; only a nodegroup whose create failed (CREATE_FAILED) is retried: delete the node group again.",
    );
    assert_eq!(api.delete_nodegroup(&uuid, &ng).await.status, 204);
    assert_eq!(
        ng_seen(&app, &uuid, &ng, &h).await,
        state("DELETE_IN_PROGRESS", Value::Null)
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(api.get_nodegroup(&uuid, &ng).await.status, 404);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        state("UPDATE_COMPLETE", Value::Null)
    );
    assert_eq!(
        outcomes(&app, &ng).await,
        events(&[
            ("magnum.nodegroup.create", "pending"),
            ("magnum.nodegroup.update", "pending"),
            ("magnum.nodegroup.update", "pending"),
            ("magnum.nodegroup.delete", "pending"),
            ("magnum.nodegroup.delete", "failure"),
            ("magnum.nodegroup.delete", "pending"),
        ])
    );
}

// ---- Federations (retry at 1.17) -----------------------------------------------------------

/// `(status, status_reason)` of a federation as `h` sees it.
async fn fed_seen(app: &TestApp, fed: &str, h: &HeaderMap) -> (String, Value) {
    let r = app.with_headers(h).get_federation(fed).await;
    assert_eq!(r.status, 200, "{}", r.text);
    (
        r.body["status"].as_str().unwrap_or_default().to_string(),
        r.body["status_reason"].clone(),
    )
}

async fn members(app: &TestApp, fed: &str) -> Value {
    app.get_federation(fed).await.body["member_ids"].clone()
}

#[rstest]
#[tokio::test]
async fn a_create_failed_federation_is_retried_in_place_and_completes_once_the_infrastructure_is_repaired(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let host = complete_cluster_as(&app, "host", &h).await;
    let fed = make_federation_as(&app, &federation_body(&host), &h).await;
    assert_eq!(
        fed_seen(&app, &fed, &h).await,
        state("CREATE_IN_PROGRESS", Value::Null)
    );
    let out = drain(&broken(&app, "federation")).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Failed { .. }]),
        "{out:?}"
    );
    assert_eq!(
        fed_seen(&app, &fed, &h).await,
        state("CREATE_FAILED", json!(failure("federation", "federation")))
    );

    // The action is new in 1.17 (the other federation routes are not gated).
    let r = app.at("1.16").retry_federation(&fed).await;
    assert_eq!(r.status, 406, "{}", r.text);
    let reader = app.as_identity("project-a", "user-r", "reader");
    app.with_headers(&reader)
        .at("latest")
        .retry_federation(&fed)
        .await
        .assert_error(
            403,
            "Policy doesn't allow federation:retry to be performed.",
        );
    app.with_headers(&app.project_b())
        .at("latest")
        .retry_federation(&fed)
        .await
        .assert_error(404, &format!("Federation {fed} could not be found."));
    let api = app.at("latest");
    let r = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/federations/{fed}/actions/retry"),
            Some(&json!({"force": true})),
        )
        .await;
    r.assert_error(400, "Unknown attribute for argument retry: force");

    let r = api.retry_federation("fed").await;
    assert_eq!((r.status, r.body.clone()), (202, json!({"uuid": fed})));
    assert_eq!(
        fed_seen(&app, &fed, &h).await,
        state("CREATE_IN_PROGRESS", Value::Null)
    );
    let out = drain(&conductor(&app, instant())).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    assert_eq!(
        fed_seen(&app, &fed, &h).await,
        state("CREATE_COMPLETE", Value::Null)
    );
    assert_eq!(
        outcomes(&app, &fed).await,
        events(&[
            ("magnum.federation.create", "pending"),
            ("magnum.federation.create", "failure"),
            ("magnum.federation.create", "pending"),
            ("magnum.federation.create", "success"),
        ])
    );
    api.retry_federation(&fed).await.assert_error(
        409,
        "Retrying a federation when status is \"CREATE_COMPLETE\" is not supported; only a federation whose create failed (CREATE_FAILED) is retried.",
    );
}

#[rstest]
#[tokio::test]
async fn an_update_failed_federation_accepts_the_same_join_unjoin_and_update_again_and_a_delete_failed_one_is_deleted_again(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let host = complete_cluster_as(&app, "host", &h).await;
    let member = complete_cluster_as(&app, "member", &h).await;
    let fed = make_federation_as(&app, &federation_body(&host), &h).await;
    drain(&conductor(&app, instant())).await;
    let api = app.at("latest");
    let failed = || state("UPDATE_FAILED", json!(failure("federation", "federation")));
    let updating = || state("UPDATE_IN_PROGRESS", Value::Null);
    let updated = || state("UPDATE_COMPLETE", Value::Null);

    // A join the infrastructure refuses is undone: the cluster is not a member.
    assert_eq!(api.join(&fed, &member).await.status, 202);
    assert_eq!(fed_seen(&app, &fed, &h).await, updating());
    assert_eq!(members(&app, &fed).await, json!([member]));
    drain(&broken(&app, "federation")).await;
    assert_eq!(fed_seen(&app, &fed, &h).await, failed());
    assert_eq!(members(&app, &fed).await, json!([]));
    api.retry_federation(&fed).await.assert_error(
        409,
        "Retrying a federation when status is \"UPDATE_FAILED\" is not supported; only a federation whose create failed (CREATE_FAILED) is retried: repeat the update, join or unjoin that failed, or delete the federation.",
    );
    // The same join again, finished once repaired.
    let r = api.join(&fed, &member).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(fed_seen(&app, &fed, &h).await, updating());
    drain(&conductor(&app, instant())).await;
    assert_eq!(fed_seen(&app, &fed, &h).await, updated());
    assert_eq!(members(&app, &fed).await, json!([member]));

    // A refused unjoin leaves the cluster a member; the same unjoin again removes it.
    assert_eq!(api.unjoin(&fed, &member).await.status, 202);
    assert_eq!(members(&app, &fed).await, json!([]));
    drain(&broken(&app, "federation")).await;
    assert_eq!(fed_seen(&app, &fed, &h).await, failed());
    assert_eq!(members(&app, &fed).await, json!([member]));
    let r = api.unjoin(&fed, &member).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(fed_seen(&app, &fed, &h).await, updated());
    assert_eq!(members(&app, &fed).await, json!([]));

    // A refused property change: the same patch again runs the update again.
    let ops = json!([{"op": "replace", "path": "/properties/dns-zone", "value": "b.example."}]);
    assert_eq!(api.patch_federation(&fed, &ops).await.status, 202);
    drain(&broken(&app, "federation")).await;
    assert_eq!(fed_seen(&app, &fed, &h).await, failed());
    let r = api.patch_federation(&fed, &ops).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(fed_seen(&app, &fed, &h).await, updating());
    drain(&conductor(&app, instant())).await;
    assert_eq!(fed_seen(&app, &fed, &h).await, updated());
    assert_eq!(
        api.get_federation(&fed).await.body["properties"],
        json!({"dns-zone": "b.example."})
    );
    // Once complete, the same patch is a no-op again.
    assert_eq!(api.patch_federation(&fed, &ops).await.status, 202);
    assert_eq!(fed_seen(&app, &fed, &h).await, updated());

    // A refused delete, then deleted again.
    assert_eq!(api.delete_federation(&fed).await.status, 204);
    drain(&broken(&app, "federation")).await;
    assert_eq!(
        fed_seen(&app, &fed, &h).await,
        state("DELETE_FAILED", json!(failure("federation", "federation")))
    );
    api.retry_federation(&fed).await.assert_error(
        409,
        "Retrying a federation when status is \"DELETE_FAILED\" is not supported; only a federation whose create failed (CREATE_FAILED) is retried: delete the federation again.",
    );
    assert_eq!(api.delete_federation(&fed).await.status, 204);
    assert_eq!(
        fed_seen(&app, &fed, &h).await,
        state("DELETE_IN_PROGRESS", Value::Null)
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(api.get_federation(&fed).await.status, 404);
    let updates = |o: &'static str| ("magnum.federation.update", o);
    assert_eq!(
        outcomes(&app, &fed).await,
        events(&[
            ("magnum.federation.create", "pending"),
            ("magnum.federation.create", "success"),
            updates("pending"),
            updates("failure"),
            updates("pending"),
            updates("success"),
            updates("pending"),
            updates("failure"),
            updates("pending"),
            updates("success"),
            updates("pending"),
            updates("failure"),
            updates("pending"),
            updates("success"),
            ("magnum.federation.delete", "pending"),
            ("magnum.federation.delete", "failure"),
            ("magnum.federation.delete", "pending"),
            ("magnum.federation.delete", "success"),
        ])
    );
}
