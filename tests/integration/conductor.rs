//! The conductor: leases, crash recovery across processes, job ordering, deadlines and the
//! status sync. The fake driver is a simulator; no real backend is involved.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::Settings;
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::{
    assert_status, cluster_as, conductor_from, drain, federation_body, id, make_federation_as,
    merged, spawn_keeping, spawn_pki, template_as, uuid_of, Api, Backend, TestApp,
};

fn conductor_for(app: &TestApp, s: &Settings) -> Conductor {
    conductor_from(app, s)
}

/// Spawns an app and keeps the settings it was built with (for in-process conductors).
async fn spawn_tuned(tweak: impl FnOnce(&mut Settings)) -> (TestApp, Settings) {
    spawn_keeping(Backend::Postgres, tweak).await
}

/// A cluster of the admin's project from a template of its own, posted at the default
/// microversion; its uuid.
async fn create_cluster(app: &TestApp, name: &str, extra: serde_json::Value) -> String {
    let admin = app.with_headers(&app.admin());
    let t = admin
        .create_template(
            &json!({"name": format!("tpl-{name}"), "coe": "kubernetes", "image_id": "img"}),
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.text);
    let base = json!({"name": name, "cluster_template_id": t.body["uuid"], "node_count": 1});
    let r = admin.create_cluster(&merged(base, extra, &[])).await;
    assert_eq!(r.status, 202, "{}", r.text);
    uuid_of(&r.body)
}

async fn status_of(app: &TestApp, uuid: &str) -> (u16, serde_json::Value) {
    let r = app.with_headers(&app.admin()).get_cluster(uuid).await;
    (r.status, r.body)
}

async fn count_events(pool: &PgPool, uuid: &str, event_type: &str, outcome: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM outbox WHERE resource_uuid = $1 AND event_type = $2 \
         AND message->'payload'->>'outcome' = $3",
    )
    .bind(uuid)
    .bind(event_type)
    .bind(outcome)
    .fetch_one(pool)
    .await
    .expect("count")
}

struct Killable(Child);

impl Drop for Killable {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `fleetyard conductor` process over `db_url`, with `key_file` as its `[certificates]
/// key_file` (the same file for every conductor of a deployment).
fn start_conductor(db_url: &str, key_file: &str, log: &std::path::Path) -> Killable {
    let log_file = std::fs::File::create(log).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_fleetyard"))
        .arg("conductor")
        .env("FLEETYARD__DATABASE__CONNECTION", db_url)
        .env("FLEETYARD__DATABASE__AUTO_MIGRATE", "false")
        .env("FLEETYARD__CERTIFICATES__KEY_FILE", key_file)
        .env("FLEETYARD__DEFAULT__HOST", "conductor-test")
        .env("FLEETYARD__CONDUCTOR__LEASE_SECONDS", "2")
        .env("FLEETYARD__CONDUCTOR__SYNC_INTERVAL", "1")
        .env("FLEETYARD__CONDUCTOR__WORKERS", "1")
        .env("FLEETYARD__FAKE_DRIVER__CREATE_SECONDS", "0")
        .env("FLEETYARD__FAKE_DRIVER__LATENCY_MS", "4000")
        .env("FLEETYARD__OSLO_MESSAGING_NOTIFICATIONS__DRIVER", "noop")
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .expect("conductor starts");
    Killable(child)
}

#[tokio::test]
async fn a_conductor_killed_mid_job_loses_nothing_and_another_finishes_it_once() {
    let (app, _s) = spawn_tuned(|_| {}).await;
    let uuid = create_cluster(&app, "crash", json!({})).await;
    let pool = PgPool::connect(&app.db.url).await.expect("pool");
    let dir = std::env::temp_dir().join(format!("fy-crash-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");

    // Conductor A claims the job and is inside the (4-second) driver call when it is killed.
    let key_file = crate::helpers::certificates_key_file();
    let mut a = start_conductor(&app.db.url, &key_file, &dir.join("a.log"));
    let a_pid = a.0.id();
    let started = Instant::now();
    let owner: String = loop {
        let owner: Option<String> =
            sqlx::query_scalar("SELECT lease_owner FROM job WHERE resource_uuid = $1")
                .bind(&uuid)
                .fetch_one(&pool)
                .await
                .expect("job");
        if let Some(o) = owner {
            break o;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "conductor A never claimed the job"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        owner.contains(&format!(":{a_pid}:")),
        "claimed by {owner}, not A ({a_pid})"
    );
    // Conductor B runs beside it; it cannot take the job while A's lease is alive.
    let _b = start_conductor(&app.db.url, &key_file, &dir.join("b.log"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.0.kill().expect("SIGKILL conductor A");
    let killed_at = Instant::now();

    // B takes over once the 2-second lease expires and finishes within lease + the 4-second call.
    let (status, body) = loop {
        let (code, body) = status_of(&app, &uuid).await;
        if body["status"] != "CREATE_IN_PROGRESS" {
            break (code, body);
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(20),
            "no conductor finished the job: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status, 200);
    assert_eq!(body["status"], "CREATE_COMPLETE", "{body}");
    assert!(
        killed_at.elapsed() < Duration::from_secs(2 + 4 + 4),
        "took {:?}",
        killed_at.elapsed()
    );

    let (state, attempts, last_owner): (String, i32, Option<String>) =
        sqlx::query_as("SELECT state, attempts, lease_owner FROM job WHERE resource_uuid = $1")
            .bind(&uuid)
            .fetch_one(&pool)
            .await
            .expect("job row");
    assert_eq!(state, "done");
    assert_eq!(attempts, 2, "A's attempt and B's");
    assert_eq!(last_owner, None);
    assert_eq!(
        count_events(&pool, &uuid, "magnum.cluster.create", "success").await,
        1
    );
    assert_eq!(
        count_events(&pool, &uuid, "magnum.cluster.create", "failure").await,
        0
    );
    let in_progress: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM cluster WHERE status LIKE '%_IN_PROGRESS'")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(in_progress, 0);
}

#[tokio::test]
async fn an_expired_lease_makes_the_job_claimable_by_another_conductor() {
    let (app, s) = spawn_tuned(|s| {
        s.fake_driver.create_seconds = 0;
        s.conductor.lease_seconds = 1;
    })
    .await;
    let uuid = create_cluster(&app, "lease", json!({})).await;
    // A conductor claims the job and then disappears without finishing it.
    let claimed = app
        .store
        .claim_job("vanished-conductor", Duration::from_secs(1))
        .await
        .expect("claim")
        .expect("a job");
    assert_eq!(claimed.resource.to_string(), uuid);
    let other = conductor_for(&app, &s);
    assert_eq!(
        other.try_execute_one().await.expect("try"),
        Outcome::Idle,
        "the lease is still held"
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let outcome = other.try_execute_one().await.expect("try");
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    assert_eq!(status_of(&app, &uuid).await.1["status"], "CREATE_COMPLETE");
    // The vanished conductor can no longer record anything for that job.
    let err = app
        .store
        .commit(&[fleetyard::store::Write::FinishJob {
            id: claimed.id,
            owner: "vanished-conductor".into(),
            failed: false,
            error: None,
        }])
        .await
        .expect_err("lease lost");
    assert!(
        matches!(err, fleetyard::store::StoreError::Stale),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_delete_requested_during_a_create_wins_and_the_cluster_goes() {
    let (app, s) = spawn_tuned(|s| {
        s.fake_driver.create_seconds = 0;
        s.fake_driver.delete_seconds = 0;
    })
    .await;
    let uuid = create_cluster(&app, "order", json!({})).await;
    let r = app
        .delete_as(&format!("/v1/clusters/{uuid}"), &app.admin())
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    let c = conductor_for(&app, &s);
    let first = c.try_execute_one().await.expect("create job");
    assert!(
        matches!(
            first,
            Outcome::Completed {
                operation: fleetyard::domain::job::Operation::ClusterCreate,
                ..
            }
        ),
        "{first:?}"
    );
    // The create finished, but the delete waiting behind it decides the status.
    assert_eq!(
        status_of(&app, &uuid).await.1["status"],
        "DELETE_IN_PROGRESS"
    );
    let second = c.try_execute_one().await.expect("delete job");
    assert!(
        matches!(
            second,
            Outcome::Completed {
                operation: fleetyard::domain::job::Operation::ClusterDelete,
                ..
            }
        ),
        "{second:?}"
    );
    assert_eq!(status_of(&app, &uuid).await.0, 404);
    assert_eq!(c.try_execute_one().await.expect("idle"), Outcome::Idle);
}

#[tokio::test]
async fn two_queued_resizes_both_reach_the_driver_and_the_last_one_decides() {
    let (app, s) = spawn_tuned(|s| {
        s.fake_driver.create_seconds = 0;
        s.fake_driver.update_seconds = 0;
    })
    .await;
    let uuid = create_cluster(&app, "resizes", json!({})).await;
    let c = conductor_for(&app, &s);
    while c.try_execute_one().await.expect("run") != Outcome::Idle {}
    let latest = crate::helpers::header_map(&[
        ("OpenStack-API-Version", "container-infra latest"),
        ("X-Project-Id", "admin-project"),
        ("X-User-Id", "admin-user"),
        ("X-Roles", "admin,member,reader"),
    ]);
    for n in [3, 5] {
        let r = app
            .post_as(
                &format!("/v1/clusters/{uuid}/actions/resize"),
                &json!({"node_count": n}),
                &latest,
            )
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
    }
    let first = c.try_execute_one().await.expect("first resize");
    assert!(matches!(first, Outcome::Completed { .. }), "{first:?}");
    assert_eq!(
        status_of(&app, &uuid).await.1["status"],
        "UPDATE_IN_PROGRESS",
        "a resize still waits"
    );
    let second = c.try_execute_one().await.expect("second resize");
    assert!(matches!(second, Outcome::Completed { .. }), "{second:?}");
    let (_, body) = status_of(&app, &uuid).await;
    assert_eq!(body["status"], "UPDATE_COMPLETE");
    assert_eq!(body["node_count"], 5);
    assert_eq!(body["node_addresses"].as_array().map(Vec::len), Some(5));
}

#[tokio::test]
async fn a_job_past_the_clusters_timeout_fails_it_with_a_reason() {
    let (app, s) = spawn_tuned(|_| {}).await;
    let uuid = create_cluster(&app, "late", json!({"create_timeout": 1})).await;
    let pool = PgPool::connect(&app.db.url).await.expect("pool");
    sqlx::query(
        "UPDATE job SET deadline_at = now() - interval '1 minute' WHERE resource_uuid = $1",
    )
    .bind(&uuid)
    .execute(&pool)
    .await
    .expect("expire");
    let outcome = conductor_for(&app, &s)
        .try_execute_one()
        .await
        .expect("run");
    assert!(matches!(outcome, Outcome::Failed { .. }), "{outcome:?}");
    let (_, body) = status_of(&app, &uuid).await;
    assert_eq!(body["status"], "CREATE_FAILED");
    assert_eq!(
        body["status_reason"],
        "The operation did not finish within the cluster's create_timeout of 1 minutes."
    );
    assert_eq!(body["faults"]["default-worker"], body["status_reason"]);
    assert_eq!(
        count_events(&pool, &uuid, "magnum.cluster.create", "failure").await,
        1
    );
}

#[tokio::test]
async fn the_status_sync_finishes_work_the_driver_reported_as_started() {
    let (app, s) = spawn_tuned(|s| s.fake_driver.create_seconds = 1).await;
    let uuid = create_cluster(&app, "synced", json!({})).await;
    let c = conductor_for(&app, &s);
    let outcome = c.try_execute_one().await.expect("run");
    assert!(matches!(outcome, Outcome::Started { .. }), "{outcome:?}");
    let (_, body) = status_of(&app, &uuid).await;
    assert_eq!(body["status"], "CREATE_IN_PROGRESS");
    assert_eq!(
        body["api_address"]
            .as_str()
            .map(|a| a.starts_with("https://10.")),
        Some(true),
        "{body}"
    );
    let early = c.sync_round().await.expect("sync");
    assert_eq!((early.polled, early.changed), (1, 0));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let late = c.sync_round().await.expect("sync");
    assert_eq!((late.polled, late.changed), (1, 1));
    assert_eq!(status_of(&app, &uuid).await.1["status"], "CREATE_COMPLETE");
    let pool = PgPool::connect(&app.db.url).await.expect("pool");
    assert_eq!(
        count_events(&pool, &uuid, "magnum.cluster.create", "success").await,
        1
    );
    // Nothing left to poll: another round changes nothing and emits nothing.
    assert_eq!(c.sync_round().await.expect("sync").polled, 0);
    assert_eq!(
        count_events(&pool, &uuid, "magnum.cluster.create", "success").await,
        1
    );
}

#[tokio::test]
async fn the_health_poll_records_health_of_complete_clusters() {
    let (app, s) = spawn_tuned(|s| s.fake_driver.create_seconds = 0).await;
    let uuid = create_cluster(&app, "healthy", json!({})).await;
    let c = conductor_for(&app, &s);
    while c.try_execute_one().await.expect("run") != Outcome::Idle {}
    assert_eq!(c.health_round().await.expect("health"), 1);
    let (_, body) = status_of(&app, &uuid).await;
    assert_eq!(body["health_status"], "HEALTHY");
    assert_eq!(body["health_status_reason"]["api"], "ok");
    assert_eq!(
        c.health_round().await.expect("health"),
        0,
        "unchanged health is not rewritten"
    );
}

// ---- Jobs queued before an upgrade ------------------------------------------------------------

/// Runs one statement on the test database (PostgreSQL or SQLite) outside the app.
async fn raw_execute(url: &str, text: &str) {
    use sqlx::Connection;
    if url.starts_with("sqlite") {
        let mut c = sqlx::SqliteConnection::connect(url).await.expect("sqlite");
        sqlx::raw_sql(text)
            .execute(&mut c)
            .await
            .expect("statement");
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.expect("postgres");
        sqlx::raw_sql(text)
            .execute(&mut c)
            .await
            .expect("statement");
    }
}

/// The operation and driver of the one pending job of `resource`.
async fn raw_pending_job(url: &str, resource: &str) -> (String, String) {
    use sqlx::Connection;
    let text = format!(
        "SELECT operation, driver FROM job WHERE resource_uuid = '{resource}' AND state = 'pending'"
    );
    let rows: Vec<(String, String)> = if url.starts_with("sqlite") {
        let mut c = sqlx::SqliteConnection::connect(url).await.expect("sqlite");
        sqlx::query_as(&text).fetch_all(&mut c).await.expect("jobs")
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.expect("postgres");
        sqlx::query_as(&text).fetch_all(&mut c).await.expect("jobs")
    };
    assert_eq!(rows.len(), 1, "one pending job of {resource}: {rows:?}");
    rows.into_iter().next().expect("job")
}

/// Replaces the pending job the API just wrote for `resource` with a row as the previous
/// release queued it: `payload` is the exact text that release's handlers wrote with `json!`.
async fn queue_as_previous_release(app: &TestApp, resource: &str, operation: &str, payload: &str) {
    let url = &app.db.url;
    let (queued, driver) = raw_pending_job(url, resource).await;
    assert_eq!(queued, operation);
    let resource_type = operation.split('.').next().expect("type");
    let at = "2020-01-01T00:00:00.000Z";
    raw_execute(
        url,
        &format!("DELETE FROM job WHERE resource_uuid = '{resource}' AND state = 'pending'"),
    )
    .await;
    raw_execute(
        url,
        &format!(
            "INSERT INTO job (uuid, operation, resource_type, resource_uuid, driver, payload, \
             state, attempts, max_attempts, run_after, created_at) VALUES ('{}', '{operation}', \
             '{resource_type}', '{resource}', '{driver}', '{payload}', 'pending', 0, 5, '{at}', \
             '{at}')",
            uuid::Uuid::new_v4()
        ),
    )
    .await;
}

/// Works every due job and expects each to complete.
async fn drain_completed(c: &Conductor) {
    for o in drain(c).await {
        assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    }
}

async fn jobs_queued_by_the_previous_release_are_executed(backend: Backend) {
    let pki = spawn_pki(backend, |_| {}).await;
    let (app, c) = (&pki.app, &pki.conductor);
    let h = app.headers.clone();
    let api = app.with_headers(&h).at("latest");
    let t = template_as(app, "legacy-tpl", json!({}), &h).await;

    // cluster.create: `json!({})`.
    let cluster = cluster_as(app, json!({"name": "legacy", "cluster_template_id": t}), &h).await;
    queue_as_previous_release(app, &cluster, "cluster.create", "{}").await;
    drain_completed(c).await;
    assert_status(app, &cluster, "CREATE_COMPLETE", &h).await;
    let ngs = api.list_nodegroups(&cluster, "").await;
    let worker = ngs.body["nodegroups"]
        .as_array()
        .expect("nodegroups")
        .iter()
        .find(|n| n["role"] == "worker")
        .map(uuid_of)
        .expect("worker");

    // cluster.resize: node group, old and new counts, nodes to remove.
    let r = api
        .resize_cluster(&cluster, &json!({"node_count": 3}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let resize = format!(
        r#"{{"nodegroup": "{worker}", "old_node_count": 1, "node_count": 3, "nodes_to_remove": []}}"#
    );
    queue_as_previous_release(app, &cluster, "cluster.resize", &resize).await;
    drain_completed(c).await;
    assert_status(app, &cluster, "UPDATE_COMPLETE", &h).await;
    assert_eq!(
        api.get_nodegroup(&cluster, &worker).await.body["node_count"],
        3
    );

    // cluster.update: a node count set by PATCH, with `rollback`.
    let r = api
        .patch_cluster(
            &cluster,
            &json!([{"op": "replace", "path": "/node_count", "value": 2}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let update = format!(
        r#"{{"nodegroup": "{worker}", "old_node_count": 3, "node_count": 2, "rollback": false}}"#
    );
    queue_as_previous_release(app, &cluster, "cluster.update", &update).await;
    drain_completed(c).await;
    assert_status(app, &cluster, "UPDATE_COMPLETE", &h).await;
    assert_eq!(
        api.get_nodegroup(&cluster, &worker).await.body["node_count"],
        2
    );

    // nodegroup.create and nodegroup.delete: the node group's uuid.
    let r = api
        .create_nodegroup(&cluster, &json!({"name": "extra", "node_count": 1}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let extra = uuid_of(&r.body);
    let payload = format!(r#"{{"nodegroup": "{extra}"}}"#);
    queue_as_previous_release(app, &cluster, "nodegroup.create", &payload).await;
    drain_completed(c).await;
    let shown = api.get_nodegroup(&cluster, &extra).await;
    assert_eq!(shown.body["status"], "CREATE_COMPLETE", "{}", shown.text);
    let r = api.delete_nodegroup(&cluster, &extra).await;
    assert_eq!(r.status, 204, "{}", r.text);
    queue_as_previous_release(app, &cluster, "nodegroup.delete", &payload).await;
    drain_completed(c).await;
    assert_eq!(api.get_nodegroup(&cluster, &extra).await.status, 404);

    // cluster.upgrade: both templates, the batch size, no single node group.
    let newer = template_as(app, "legacy-newer", json!({"image_id": "img-2"}), &h).await;
    let r = api
        .upgrade_cluster(&cluster, &json!({"cluster_template": newer}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let upgrade = format!(
        r#"{{"old_template": "{t}", "template": "{newer}", "max_batch_size": 1, "nodegroup": null}}"#
    );
    queue_as_previous_release(app, &cluster, "cluster.upgrade", &upgrade).await;
    drain_completed(c).await;
    assert_status(app, &cluster, "UPDATE_COMPLETE", &h).await;

    // cluster.rotate_ca: the new CA's row uuid, fixed by the request.
    let r = api.rotate_ca(&cluster).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let rotation = uuid::Uuid::new_v4().to_string();
    let payload = format!(r#"{{"rotation": "{rotation}"}}"#);
    queue_as_previous_release(app, &cluster, "cluster.rotate_ca", &payload).await;
    drain_completed(c).await;
    assert_status(app, &cluster, "UPDATE_COMPLETE", &h).await;
    let rows = app
        .store
        .get_keypairs(&id(&cluster))
        .await
        .expect("keypairs");
    assert!(
        rows.iter().any(|k| k.uuid == rotation),
        "the CA row took the queued rotation's uuid: {:?}",
        rows.iter().map(|k| &k.uuid).collect::<Vec<_>>()
    );

    // cluster.rotate_credential: the renewed client certificate's row uuid.
    let r = api.rotate_credentials(&cluster).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let client = uuid::Uuid::new_v4().to_string();
    let payload = format!(r#"{{"client": "{client}"}}"#);
    queue_as_previous_release(app, &cluster, "cluster.rotate_credential", &payload).await;
    drain_completed(c).await;
    let rows = app
        .store
        .get_keypairs(&id(&cluster))
        .await
        .expect("keypairs");
    assert!(
        rows.iter().any(|k| k.uuid == client),
        "the client row took the queued renewal's uuid"
    );

    // federation.create (`{}`) and federation.update: the members joined and unjoined.
    let member = cluster_as(app, json!({"name": "member", "cluster_template_id": t}), &h).await;
    drain_completed(c).await;
    let fed = make_federation_as(app, &federation_body(&cluster), &h).await;
    queue_as_previous_release(app, &fed, "federation.create", "{}").await;
    drain_completed(c).await;
    let r = api.join(&fed, &member).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let payload = format!(r#"{{"joined": ["{member}"], "unjoined": []}}"#);
    queue_as_previous_release(app, &fed, "federation.update", &payload).await;
    drain_completed(c).await;
    let shown = api.get_federation(&fed).await;
    assert_eq!(shown.body["status"], "UPDATE_COMPLETE", "{}", shown.text);
    assert_eq!(shown.body["member_ids"], json!([member]));

    // federation.delete and cluster.delete: `json!({})`.
    let r = api.delete_federation(&fed).await;
    assert_eq!(r.status, 204, "{}", r.text);
    queue_as_previous_release(app, &fed, "federation.delete", "{}").await;
    drain_completed(c).await;
    assert_eq!(api.get_federation(&fed).await.status, 404);
    let r = api.delete_cluster(&member).await;
    assert_eq!(r.status, 204, "{}", r.text);
    queue_as_previous_release(app, &member, "cluster.delete", "{}").await;
    drain_completed(c).await;
    assert_eq!(api.get_cluster(&member).await.status, 404);
}

#[tokio::test]
async fn jobs_queued_by_the_previous_release_are_executed_on_postgres() {
    jobs_queued_by_the_previous_release_are_executed(Backend::Postgres).await;
}

#[tokio::test]
async fn jobs_queued_by_the_previous_release_are_executed_on_sqlite() {
    jobs_queued_by_the_previous_release_are_executed(Backend::Sqlite).await;
}
