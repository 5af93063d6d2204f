//! Deletes always end. A delete the infrastructure refuses for good, one that keeps failing
//! transiently past its deadline, and a teardown the driver started that never finishes all
//! end `DELETE_FAILED`, naming what was left behind (by kind and id) in `status_reason` and in
//! the notification. An administrator's forced delete (`?force=true`, microversion 1.18)
//! removes the record after one last best-effort attempt, with an audit notification listing
//! the leftovers; a member may not force, and a federated cluster is still refused. The fake
//! driver fails as a broken infrastructure would; every case runs on both backends.

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::FakeDriverSection;

use crate::helpers::{
    complete_cluster_as, conductor, drain, federation_body, instant, instant_settings,
    make_federation_as, spawn_with, Api, Backend, TestApp,
};

/// A conductor whose infrastructure refuses `operations` for good (`fail`) or answers that it
/// is unreachable on every attempt (`transient`).
fn infrastructure(app: &TestApp, fail: &str, transient: &str) -> Conductor {
    conductor(
        app,
        FakeDriverSection {
            fail_operations: fail.into(),
            transient_operations: transient.into(),
            ..instant()
        },
    )
}

const REFUSED: &str =
    "The fake driver simulated a failure of 'delete' ([fake_driver] fail_operations = delete).";
const UNREACHABLE: &str = "The fake driver simulated a transient failure of 'delete' ([fake_driver] transient_operations = delete).";

/// `(status, status_reason)` of the cluster as `h` sees it at `latest`.
async fn seen(app: &TestApp, uuid: &str, h: &HeaderMap) -> (String, Value) {
    let r = app.with_headers(h).at("latest").get_cluster(uuid).await;
    assert_eq!(r.status, 200, "{}", r.text);
    (
        r.body["status"].as_str().unwrap_or_default().to_string(),
        r.body["status_reason"].clone(),
    )
}

/// What the fake driver leaves behind of a cluster: its stack, network and load balancer,
/// and a server group per node group.
async fn expected_leftovers(app: &TestApp, uuid: &str, h: &HeaderMap) -> Vec<Value> {
    let groups = app
        .with_headers(h)
        .at("latest")
        .list_nodegroups(uuid, "")
        .await;
    assert_eq!(groups.status, 200, "{}", groups.text);
    let mut out = vec![
        json!({"kind": "stack", "id": format!("fake-{uuid}")}),
        json!({"kind": "network", "id": format!("fake-net-{uuid}")}),
        json!({"kind": "load_balancer", "id": format!("fake-lb-{uuid}")}),
    ];
    for g in groups.body["nodegroups"].as_array().into_iter().flatten() {
        let id = g["uuid"].as_str().unwrap_or_default();
        out.push(json!({"kind": "server_group", "id": format!("fake-sg-{id}")}));
    }
    out
}

/// The same objects, in any order.
fn same_objects(a: &[Value], b: &[Value]) -> bool {
    let key = |v: &Value| v.to_string();
    let mut a: Vec<String> = a.iter().map(key).collect();
    let mut b: Vec<String> = b.iter().map(key).collect();
    a.sort();
    b.sort();
    a == b
}

/// The sentence naming the leftovers, in the order the notification lists them.
fn left_behind(listed: &[Value]) -> String {
    let named: Vec<String> = listed
        .iter()
        .map(|l| {
            format!(
                "{} {}",
                l["kind"].as_str().unwrap_or_default(),
                l["id"].as_str().unwrap_or_default()
            )
        })
        .collect();
    format!("Left behind on the infrastructure: {}.", named.join(", "))
}

/// The inner messages of the outbox events about a resource, in order.
async fn messages(app: &TestApp, uuid: &str) -> Vec<Value> {
    app.store
        .pending_events(10_000)
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.resource_uuid == uuid)
        .map(|e| e.message_json())
        .collect()
}

/// `(event_type, outcome, priority)` of each message.
fn kinds(messages: &[Value]) -> Vec<(String, String, String)> {
    messages
        .iter()
        .map(|m| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&m["event_type"]),
                text(&m["payload"]["outcome"]),
                text(&m["priority"]),
            )
        })
        .collect()
}

fn kind(event: &str, outcome: &str, priority: &str) -> (String, String, String) {
    (event.into(), outcome.into(), priority.into())
}

/// An attachment of an event's CADF target, by name.
fn attachment<'a>(message: &'a Value, name: &str) -> &'a Value {
    message["payload"]["target"]["attachments"]
        .as_array()
        .and_then(|list| list.iter().find(|a| a["name"] == name))
        .map(|a| &a["content"])
        .unwrap_or(&Value::Null)
}

/// Moves the deadline of the cluster's delete jobs to `when` (and a pending one's next run
/// to now), as if `[conductor] delete_timeout` had passed.
async fn expire_delete(app: &TestApp, uuid: &str, when: DateTime<Utc>) {
    let sql = "UPDATE job SET deadline_at = $1, run_after = CASE WHEN state = 'pending' \
               THEN $1 ELSE run_after END WHERE resource_uuid = $2 AND operation = 'cluster.delete'";
    let changed = if app.db.url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&app.db.url)
            .await
            .expect("sqlite");
        let done = sqlx::query(sql).bind(when).bind(uuid).execute(&pool).await;
        pool.close().await;
        done.expect("expire").rows_affected()
    } else {
        let pool = sqlx::PgPool::connect(&app.db.url).await.expect("postgres");
        let done = sqlx::query(sql).bind(when).bind(uuid).execute(&pool).await;
        pool.close().await;
        done.expect("expire").rows_affected()
    };
    assert!(changed >= 1, "the cluster has a delete job");
}

fn a_minute_ago() -> DateTime<Utc> {
    let t = Utc::now() - chrono::Duration::minutes(1);
    // Whole seconds, so that the reason's timestamp is exactly this one.
    DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)
}

#[rstest]
#[tokio::test]
async fn a_delete_refused_for_ever_ends_delete_failed_naming_what_it_left_behind(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let expected = expected_leftovers(&app, &uuid, &h).await;
    assert_eq!(app.at("latest").delete_cluster(&uuid).await.status, 204);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_IN_PROGRESS".to_string(), Value::Null)
    );

    let out = drain(&infrastructure(&app, "delete", "")).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Failed { .. }]),
        "{out:?}"
    );
    let all = messages(&app, &uuid).await;
    assert_eq!(
        kinds(&all),
        vec![
            kind("magnum.cluster.create", "pending", "INFO"),
            kind("magnum.cluster.create", "success", "INFO"),
            kind("magnum.cluster.delete", "pending", "INFO"),
            kind("magnum.cluster.delete", "failure", "ERROR"),
        ]
    );
    let failure = &all[3];
    let listed = attachment(failure, "leftovers")
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(same_objects(&listed, &expected), "{listed:?}");
    let reason = format!("{REFUSED} {}", left_behind(&listed));
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_FAILED".to_string(), json!(reason))
    );
    let data = attachment(failure, "cluster_data");
    assert_eq!(
        (data["status"].clone(), data["status_reason"].clone()),
        (json!("DELETE_FAILED"), json!(reason))
    );
    let job_states: Vec<String> = app
        .store
        .jobs_for(uuid.parse().expect("uuid"))
        .await
        .expect("jobs")
        .into_iter()
        .map(|(_, state)| state)
        .collect();
    assert_eq!(job_states, vec!["done", "failed"]);
}

#[rstest]
#[tokio::test]
async fn a_delete_failing_transiently_ends_at_its_deadline_with_the_last_reason_and_leftovers(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let expected = expected_leftovers(&app, &uuid, &h).await;
    assert_eq!(app.at("latest").delete_cluster(&uuid).await.status, 204);
    let unreachable = infrastructure(&app, "", "delete");

    // The first attempt fails transiently: still deleting, the job waits for its next try.
    let out = drain(&unreachable).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Retried { error, .. }] if error == UNREACHABLE),
        "{out:?}"
    );
    let (status, blocked) = seen(&app, &uuid, &h).await;
    assert_eq!(status, "DELETE_IN_PROGRESS");
    let blocked = blocked.as_str().unwrap_or_default().to_string();
    assert!(
        blocked.starts_with("Blocked since ") && blocked.ends_with(&format!("): {UNREACHABLE}")),
        "{blocked}"
    );

    // Past the deadline, one last attempt fails too: DELETE_FAILED with its reason.
    expire_delete(&app, &uuid, a_minute_ago()).await;
    let out = drain(&unreachable).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Failed { .. }]),
        "{out:?}"
    );
    let all = messages(&app, &uuid).await;
    let failure = all.last().expect("a failure event");
    assert_eq!(
        kinds(std::slice::from_ref(failure)),
        vec![kind("magnum.cluster.delete", "failure", "ERROR")]
    );
    let listed = attachment(failure, "leftovers")
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(same_objects(&listed, &expected), "{listed:?}");
    let (status, reason) = seen(&app, &uuid, &h).await;
    assert_eq!(status, "DELETE_FAILED");
    let reason = reason.as_str().unwrap_or_default().to_string();
    assert!(
        reason.starts_with("Gave up after 2 attempts, refused since ")
            && reason.contains(", once [conductor] delete_timeout passed at ")
            && reason.ends_with(&format!(": {UNREACHABLE} {}", left_behind(&listed))),
        "{reason}"
    );

    // DELETE_FAILED is deleted again; the repaired infrastructure finishes it.
    assert_eq!(app.at("latest").delete_cluster(&uuid).await.status, 204);
    drain(&conductor(&app, instant())).await;
    assert_eq!(app.at("latest").get_cluster(&uuid).await.status, 404);
}

#[rstest]
#[tokio::test]
async fn a_teardown_that_never_finishes_fails_at_the_delete_deadline(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let expected = expected_leftovers(&app, &uuid, &h).await;
    assert_eq!(app.at("latest").delete_cluster(&uuid).await.status, 204);
    // The driver starts a teardown that takes an hour.
    let slow = conductor(
        &app,
        FakeDriverSection {
            delete_seconds: 3600,
            ..instant()
        },
    );
    let out = drain(&slow).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Started { .. }]),
        "{out:?}"
    );
    slow.sync_round().await.expect("sync");
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_IN_PROGRESS".to_string(), Value::Null)
    );

    let deadline = a_minute_ago();
    expire_delete(&app, &uuid, deadline).await;
    let report = slow.sync_round().await.expect("sync");
    assert_eq!(report.changed, 1, "{report:?}");
    let all = messages(&app, &uuid).await;
    let failure = all.last().expect("a failure event");
    assert_eq!(
        kinds(std::slice::from_ref(failure)),
        vec![kind("magnum.cluster.delete", "failure", "ERROR")]
    );
    let listed = attachment(failure, "leftovers")
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(same_objects(&listed, &expected), "{listed:?}");
    let reason = format!(
        "The delete did not finish by its deadline, {} ([conductor] delete_timeout after it was asked for). {}",
        deadline.format("%Y-%m-%dT%H:%M:%SZ"),
        left_behind(&listed)
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_FAILED".to_string(), json!(reason))
    );
}

#[rstest]
#[tokio::test]
async fn an_admin_forces_the_delete_of_a_cluster_the_infrastructure_will_not_let_go(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let admin = app.admin();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let expected = expected_leftovers(&app, &uuid, &h).await;
    let broken = infrastructure(&app, "delete", "");
    assert_eq!(app.at("latest").delete_cluster(&uuid).await.status, 204);
    drain(&broken).await;
    let (status, failed_reason) = seen(&app, &uuid, &h).await;
    assert_eq!(status, "DELETE_FAILED");

    // The owner may not force it.
    app.at("latest")
        .force_delete_cluster(&uuid)
        .await
        .assert_error(
            403,
            "Policy doesn't allow cluster:delete_force to be performed.",
        );
    // Before 1.18, force is an unknown argument, for an administrator too.
    app.with_headers(&admin)
        .at("1.17")
        .force_delete_cluster(&uuid)
        .await
        .assert_error(400, "Unknown argument: \"force\"");
    app.with_headers(&admin)
        .at("latest")
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/clusters/{uuid}?force=maybe"),
            None,
        )
        .await
        .assert_error(400, "Invalid input for force: maybe is not a boolean.");
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("DELETE_FAILED".to_string(), failed_reason)
    );

    // An administrator forces it: DELETE_IN_PROGRESS, saying who forced it.
    let r = app
        .with_headers(&admin)
        .at("latest")
        .force_delete_cluster(&uuid)
        .await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    assert_eq!(
        seen(&app, &uuid, &h).await,
        (
            "DELETE_IN_PROGRESS".to_string(),
            json!("Forced delete requested by admin-user (project admin-project).")
        )
    );

    // The infrastructure still refuses; the record goes anyway, with the audit notification.
    let out = drain(&broken).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    app.at("latest")
        .get_cluster(&uuid)
        .await
        .assert_error(404, &format!("Cluster {uuid} could not be found."));
    let all = messages(&app, &uuid).await;
    assert_eq!(
        kinds(&all[4..]),
        vec![
            kind("magnum.cluster.delete", "pending", "INFO"),
            kind("magnum.cluster.force_delete", "success", "WARN"),
        ]
    );
    let audit = &all[5];
    assert_eq!(audit["payload"]["action"], "delete");
    assert_eq!(audit["payload"]["initiator"]["user_id"], "admin-user");
    assert_eq!(audit["payload"]["initiator"]["project_id"], "admin-project");
    assert_eq!(audit["_context_is_admin"], true);
    let listed = attachment(audit, "leftovers")
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(same_objects(&listed, &expected), "{listed:?}");
    let data = attachment(audit, "cluster_data");
    assert_eq!(data["status"], "DELETE_COMPLETE");
    assert_eq!(
        data["status_reason"],
        format!(
            "Forced delete; the last clean-up answered: {REFUSED} {}",
            left_behind(&listed)
        )
    );
}

#[rstest]
#[tokio::test]
async fn a_forced_delete_takes_over_from_a_delete_that_keeps_retrying(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    assert_eq!(app.at("latest").delete_cluster(&uuid).await.status, 204);
    let unreachable = infrastructure(&app, "", "delete");
    let out = drain(&unreachable).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Retried { .. }]),
        "{out:?}"
    );

    // Forced while the delete waits for its next attempt: that job ends, the forced one runs
    // at once and makes one attempt only.
    let r = app
        .with_headers(&app.admin())
        .at("latest")
        .force_delete_cluster(&uuid)
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    let jobs: Vec<(String, Option<String>)> = app
        .store
        .jobs_for(uuid.parse().expect("uuid"))
        .await
        .expect("jobs")
        .into_iter()
        .map(|(j, state)| (state, j.last_error))
        .collect();
    assert_eq!(
        jobs[1..],
        [
            (
                "failed".to_string(),
                Some("Superseded by a forced delete.".to_string())
            ),
            ("pending".to_string(), None),
        ]
    );
    let out = drain(&unreachable).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    assert_eq!(app.at("latest").get_cluster(&uuid).await.status, 404);
    let all = messages(&app, &uuid).await;
    let audit = all.last().expect("the audit event");
    assert_eq!(audit["event_type"], "magnum.cluster.force_delete");
    assert_eq!(
        attachment(audit, "cluster_data")["status_reason"]
            .as_str()
            .map(|r| r.starts_with(&format!("Forced delete; the last clean-up answered: {UNREACHABLE} Left behind on the infrastructure: stack fake-{uuid}"))),
        Some(true),
        "{audit}"
    );
}

#[rstest]
#[tokio::test]
async fn a_forced_delete_of_a_federated_cluster_is_still_refused(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let host = complete_cluster_as(&app, "host", &h).await;
    let member = complete_cluster_as(&app, "member", &h).await;
    let mut body = federation_body(&host);
    body["member_ids"] = json!([member]);
    let fed = make_federation_as(&app, &body, &h).await;
    drain(&conductor(&app, instant())).await;

    let admin = app.with_headers(&app.admin()).at("latest");
    for (uuid, name) in [(&member, "member"), (&host, "host")] {
        admin.force_delete_cluster(uuid).await.assert_error(
            409,
            &format!(
                "Cluster {name} hosts or belongs to federation(s) fed ({fed}); unjoin it or delete the federation first."
            ),
        );
        assert_eq!(seen(&app, uuid, &h).await.0, "CREATE_COMPLETE");
    }
}

const UPDATE_REFUSED: &str =
    "The fake driver simulated a failure of 'update' ([fake_driver] fail_operations = update).";
const UPDATE_UNREACHABLE: &str = "The fake driver simulated a transient failure of 'update' ([fake_driver] transient_operations = update).";

/// A complete cluster with a complete extra node group `ng1`: `(cluster, node group)` uuids.
async fn cluster_with_group(app: &TestApp, h: &HeaderMap) -> (String, String) {
    let uuid = complete_cluster_as(app, "k1", h).await;
    let r = app
        .with_headers(h)
        .at("latest")
        .create_nodegroup(&uuid, &json!({"name": "ng1", "node_count": 1}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let ng = r.body["uuid"].as_str().expect("uuid").to_string();
    drain(&conductor(app, instant())).await;
    let got = app
        .with_headers(h)
        .at("latest")
        .get_nodegroup(&uuid, &ng)
        .await;
    assert_eq!(got.body["status"], "CREATE_COMPLETE", "{}", got.text);
    (uuid, ng)
}

/// `(status, status_reason)` of a node group as `h` sees it at `latest`.
async fn seen_group(app: &TestApp, cluster: &str, ng: &str, h: &HeaderMap) -> (String, Value) {
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

#[rstest]
#[tokio::test]
async fn an_admin_forces_the_delete_of_a_node_group_the_infrastructure_will_not_let_go(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let admin = app.admin();
    let (uuid, ng) = cluster_with_group(&app, &h).await;
    let broken = infrastructure(&app, "update", "");
    assert_eq!(
        app.at("latest").delete_nodegroup(&uuid, &ng).await.status,
        204
    );
    drain(&broken).await;
    let left = format!("Left behind on the infrastructure: server_group fake-sg-{ng}.");
    let failed = (
        "DELETE_FAILED".to_string(),
        json!(format!("{UPDATE_REFUSED} {left}")),
    );
    assert_eq!(seen_group(&app, &uuid, &ng, &h).await, failed);
    assert_eq!(seen(&app, &uuid, &h).await.0, "UPDATE_FAILED");

    // The owner may not force it.
    app.at("latest")
        .force_delete_nodegroup(&uuid, &ng)
        .await
        .assert_error(
            403,
            "Policy doesn't allow nodegroup:delete_force to be performed.",
        );
    // Before 1.18, force is an unknown argument, for an administrator too.
    app.with_headers(&admin)
        .at("1.17")
        .force_delete_nodegroup(&uuid, &ng)
        .await
        .assert_error(400, "Unknown argument: \"force\"");
    app.with_headers(&admin)
        .at("latest")
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/clusters/{uuid}/nodegroups/{ng}?force=maybe"),
            None,
        )
        .await
        .assert_error(400, "Invalid input for force: maybe is not a boolean.");
    // The default groups stay undeletable, forced or not.
    for group in ["default-worker", "default-master"] {
        app.with_headers(&admin)
            .at("latest")
            .force_delete_nodegroup(&uuid, group)
            .await
            .assert_error(400, "Deleting a default nodegroup is not supported.");
    }
    assert_eq!(seen_group(&app, &uuid, &ng, &h).await, failed);

    // An administrator forces it: DELETE_IN_PROGRESS, saying who forced it.
    let r = app
        .with_headers(&admin)
        .at("latest")
        .force_delete_nodegroup(&uuid, &ng)
        .await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    assert_eq!(
        seen_group(&app, &uuid, &ng, &h).await,
        (
            "DELETE_IN_PROGRESS".to_string(),
            json!("Forced delete requested by admin-user (project admin-project).")
        )
    );
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("UPDATE_IN_PROGRESS".to_string(), Value::Null)
    );

    // The infrastructure still refuses; the group's record goes anyway and the cluster
    // completes its update, with the audit notification.
    let out = drain(&broken).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    app.at("latest")
        .get_nodegroup(&uuid, &ng)
        .await
        .assert_error(404, &format!("Nodegroup {ng} could not be found."));
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("UPDATE_COMPLETE".to_string(), Value::Null)
    );
    let groups = app.at("latest").list_nodegroups(&uuid, "").await;
    let names: Vec<&str> = groups.body["nodegroups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(!names.contains(&"ng1"), "{names:?}");

    let all = messages(&app, &ng).await;
    let n = all.len();
    assert!(n >= 4, "{all:?}");
    assert_eq!(
        kinds(&all[n - 4..]),
        vec![
            kind("magnum.nodegroup.delete", "pending", "INFO"),
            kind("magnum.nodegroup.delete", "failure", "ERROR"),
            kind("magnum.nodegroup.delete", "pending", "INFO"),
            kind("magnum.nodegroup.force_delete", "success", "WARN"),
        ]
    );
    let audit = &all[n - 1];
    let reason = format!("Forced delete; the last clean-up answered: {UPDATE_REFUSED} {left}");
    assert_eq!(audit["event_type"], "magnum.nodegroup.force_delete");
    assert_eq!(audit["priority"], "WARN");
    assert_eq!(audit["_context_is_admin"], true);
    assert_eq!(audit["_context_user_id"], "admin-user", "{audit}");
    assert_eq!(audit["_context_project_id"], "admin-project", "{audit}");
    let payload = &audit["payload"];
    assert_eq!(
        payload["typeURI"],
        "http://schemas.dmtf.org/cloud/audit/1.0/event"
    );
    assert_eq!(payload["eventType"], "activity");
    assert_eq!(payload["action"], "delete");
    assert_eq!(payload["outcome"], "success");
    assert_eq!(payload["initiator"]["user_id"], "admin-user");
    assert_eq!(payload["initiator"]["project_id"], "admin-project");
    assert_eq!(payload["target"]["typeURI"], "service/magnum/nodegroup");
    assert_eq!(payload["target"]["id"], ng.as_str());
    assert_eq!(payload["target"]["name"], "ng1");
    let data = attachment(audit, "nodegroup_data");
    assert_eq!(
        (&data["name"], &data["role"], &data["node_count"]),
        (&json!("ng1"), &json!("worker"), &json!(1)),
        "{data}"
    );
    assert_eq!(data["cluster_id"], uuid.as_str(), "{data}");
    assert_eq!(data["project_id"], "project-a", "{data}");
    assert_eq!(data["status"], "DELETE_COMPLETE");
    assert_eq!(data["status_reason"], reason);
    assert_eq!(
        payload["target"]["attachments"][1],
        json!({"typeURI": "service/magnum/nodegroup/leftovers", "name": "leftovers",
               "content": [{"kind": "server_group", "id": format!("fake-sg-{ng}")}]})
    );
    assert_eq!(
        payload["target"]["attachments"].as_array().map(Vec::len),
        Some(2)
    );
    // The forced job ended with the same reason.
    let jobs = app
        .store
        .jobs_for(uuid.parse().expect("uuid"))
        .await
        .expect("jobs");
    let (last, state) = jobs.last().expect("the forced job");
    assert_eq!(
        (state.as_str(), last.last_error.as_deref()),
        ("done", Some(reason.as_str()))
    );
}

#[rstest]
#[tokio::test]
async fn a_forced_node_group_delete_takes_over_from_a_delete_that_keeps_retrying(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let (uuid, ng) = cluster_with_group(&app, &h).await;
    assert_eq!(
        app.at("latest").delete_nodegroup(&uuid, &ng).await.status,
        204
    );
    let unreachable = infrastructure(&app, "", "update");
    let out = drain(&unreachable).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Retried { .. }]),
        "{out:?}"
    );

    // Forced while the delete waits for its next attempt: that job ends, the forced one runs
    // at once and makes one attempt only.
    let before = app
        .store
        .jobs_for(uuid.parse().expect("uuid"))
        .await
        .expect("jobs")
        .len();
    let r = app
        .with_headers(&app.admin())
        .at("latest")
        .force_delete_nodegroup(&uuid, &ng)
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    let jobs: Vec<(String, Option<String>)> = app
        .store
        .jobs_for(uuid.parse().expect("uuid"))
        .await
        .expect("jobs")
        .into_iter()
        .map(|(j, state)| (state, j.last_error))
        .collect();
    assert_eq!(
        jobs[before - 1..],
        [
            (
                "failed".to_string(),
                Some("Superseded by a forced delete.".to_string())
            ),
            ("pending".to_string(), None),
        ]
    );
    let out = drain(&unreachable).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    assert_eq!(app.at("latest").get_nodegroup(&uuid, &ng).await.status, 404);
    assert_eq!(
        seen(&app, &uuid, &h).await,
        ("UPDATE_COMPLETE".to_string(), Value::Null)
    );
    let all = messages(&app, &ng).await;
    let audit = all.last().expect("the audit event");
    assert_eq!(audit["event_type"], "magnum.nodegroup.force_delete");
    assert_eq!(
        attachment(audit, "nodegroup_data")["status_reason"],
        format!(
            "Forced delete; the last clean-up answered: {UPDATE_UNREACHABLE} Left behind on the infrastructure: server_group fake-sg-{ng}."
        ),
        "{audit}"
    );
}

#[rstest]
#[tokio::test]
async fn an_admin_forces_the_delete_of_a_federation_the_driver_will_not_let_go(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_with(backend, instant_settings).await;
    let h = app.headers.clone();
    let admin = app.admin();
    let host = complete_cluster_as(&app, "host", &h).await;
    let fed = make_federation_as(&app, &federation_body(&host), &h).await;
    drain(&conductor(&app, instant())).await;
    let refused = "The fake driver simulated a failure of 'federation' ([fake_driver] fail_operations = federation).";
    let broken = infrastructure(&app, "federation", "");
    assert_eq!(app.at("latest").delete_federation(&fed).await.status, 204);
    drain(&broken).await;
    let state =
        |r: &crate::helpers::Resp| (r.body["status"].clone(), r.body["status_reason"].clone());
    let failed = (json!("DELETE_FAILED"), json!(refused));
    assert_eq!(state(&app.at("latest").get_federation(&fed).await), failed);

    app.at("latest")
        .force_delete_federation(&fed)
        .await
        .assert_error(
            403,
            "Policy doesn't allow federation:delete_force to be performed.",
        );
    app.with_headers(&admin)
        .at("1.17")
        .force_delete_federation(&fed)
        .await
        .assert_error(400, "Unknown argument: \"force\"");
    assert_eq!(state(&app.at("latest").get_federation(&fed).await), failed);

    let r = app
        .with_headers(&admin)
        .at("latest")
        .force_delete_federation(&fed)
        .await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    assert_eq!(
        state(&app.at("latest").get_federation(&fed).await),
        (
            json!("DELETE_IN_PROGRESS"),
            json!("Forced delete requested by admin-user (project admin-project).")
        )
    );

    // The driver still refuses; the record goes anyway, with the audit notification.
    let out = drain(&broken).await;
    assert!(
        matches!(out.as_slice(), [Outcome::Completed { .. }]),
        "{out:?}"
    );
    app.at("latest")
        .get_federation(&fed)
        .await
        .assert_error(404, &format!("Federation {fed} could not be found."));
    // The host cluster is untouched and can be deleted now.
    assert_eq!(seen(&app, &host, &h).await.0, "CREATE_COMPLETE");
    let all = messages(&app, &fed).await;
    let n = all.len();
    assert!(n >= 4, "{all:?}");
    assert_eq!(
        kinds(&all[n - 4..]),
        vec![
            kind("magnum.federation.delete", "pending", "INFO"),
            kind("magnum.federation.delete", "failure", "ERROR"),
            kind("magnum.federation.delete", "pending", "INFO"),
            kind("magnum.federation.force_delete", "success", "INFO"),
        ]
    );
    let audit = &all[n - 1];
    let payload = &audit["payload"];
    assert_eq!(audit["_context_is_admin"], true);
    assert_eq!(payload["action"], "delete");
    assert_eq!(payload["initiator"]["user_id"], "admin-user");
    assert_eq!(payload["initiator"]["project_id"], "admin-project");
    assert_eq!(payload["target"]["typeURI"], "service/magnum/federation");
    assert_eq!(payload["target"]["id"], fed.as_str());
    let data = attachment(audit, "federation_data");
    assert_eq!(data["status"], "DELETE_COMPLETE", "{data}");
    assert_eq!(
        data["status_reason"],
        format!("Forced delete; the last clean-up answered: {refused}")
    );
    assert_eq!(attachment(audit, "leftovers"), &json!([]));
}
