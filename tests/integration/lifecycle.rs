//! No cluster is stranded: every `*_FAILED` status has a way forward through the API. A
//! `CREATE_FAILED` cluster is retried in place (`POST .../actions/retry`, 1.16), an
//! `UPDATE_FAILED` one accepts the change that failed again, a `DELETE_FAILED` one is deleted
//! again. The fake driver fails as a broken infrastructure would (`[fake_driver]
//! fail_operations` in one conductor), and a repaired conductor (without it) finishes; the
//! status and reason a user sees are asserted at each step, with the notifications.

use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::FakeDriverSection;

use crate::helpers::{
    cluster_as, complete_cluster_as, conductor, drain, events_of, instant, instant_settings,
    spawn_with, template_as, Api, Backend, TestApp,
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
