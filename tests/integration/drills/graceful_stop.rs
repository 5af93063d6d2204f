//! A conductor stopped with SIGTERM in the middle of ten jobs: it claims nothing more, lets its
//! jobs finish within `[DEFAULT] graceful_shutdown_timeout`, gives back the leases of those
//! that do not, and exits 0; another conductor takes the given-back jobs at once (long before
//! their 300 s leases would have expired) and every job's effect happens exactly once.

use std::time::Duration;

use serde_json::json;

use super::db::{eventually, Db};
use super::process::{Env, Process, Role};
use crate::helpers::{cluster_as, spawn_with, Backend, TestApp};

const JOBS: usize = 10;

/// Ten cluster creates, posted; their uuids.
async fn ten_creates(app: &TestApp) -> Vec<String> {
    let template = app.make_template("drill", json!({})).await["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    let mut clusters = Vec::new();
    for i in 0..JOBS {
        let body =
            json!({"name": format!("c{i:02}"), "cluster_template_id": template, "node_count": 1});
        clusters.push(cluster_as(app, body, &app.headers).await);
    }
    clusters
}

/// Conductor settings over `base` (one `[certificates] key_file` for every conductor, as
/// deployed): ten workers, leases of 300 s, the given grace period and driver latency.
fn conductor_env(base: &Env, grace_seconds: u64, latency_ms: u64) -> Env {
    base.clone()
        .set("DEFAULT__LOG_LEVEL", "info")
        .set("DEFAULT__GRACEFUL_SHUTDOWN_TIMEOUT", grace_seconds)
        .set("CONDUCTOR__LEASE_SECONDS", 300)
        .set("CONDUCTOR__WORKERS", JOBS)
        .set("FAKE_DRIVER__CREATE_SECONDS", 0)
        .set("FAKE_DRIVER__LATENCY_MS", latency_ms)
        .set("OSLO_MESSAGING_NOTIFICATIONS__DRIVER", "noop")
}

/// Waits until `owner` (a conductor's `[DEFAULT] host`) holds all ten jobs.
async fn all_claimed_by(db: &Db, p: &Process) {
    let sql = format!(
        "SELECT COUNT(*) FROM job WHERE state = 'pending' AND lease_owner LIKE '{}:%'",
        p.name
    );
    let claimed = eventually(Duration::from_secs(60), || async {
        db.count(&sql).await == JOBS as i64
    })
    .await;
    assert!(
        claimed,
        "{} did not claim the ten jobs: {}",
        p.name,
        p.log_tail()
    );
}

/// Every cluster is `CREATE_COMPLETE`, its job done after `attempts` claims, its create
/// notified once as pending and once as a success published by `finisher`.
async fn each_effect_once(db: &Db, clusters: &[String], attempts: &str, finisher: &str) {
    for c in clusters {
        assert_eq!(
            db.rows(&format!(
                "SELECT status, COALESCE(status_reason, '') FROM cluster WHERE uuid = '{c}'"
            ))
            .await,
            vec![vec!["CREATE_COMPLETE".to_string(), String::new()]],
            "{c}"
        );
        assert_eq!(
            db.rows(&format!(
                "SELECT state, CAST(attempts AS TEXT), COALESCE(lease_owner, '') FROM job \
                 WHERE resource_uuid = '{c}'"
            ))
            .await,
            vec![vec![
                "done".to_string(),
                attempts.to_string(),
                String::new()
            ]],
            "the job of {c}"
        );
        assert_eq!(
            db.rows(&format!(
                "SELECT message->'payload'->>'outcome', message->>'publisher_id' FROM outbox \
                 WHERE resource_uuid = '{c}' AND event_type = 'magnum.cluster.create' \
                 ORDER BY id"
            ))
            .await,
            vec![
                vec!["pending".to_string(), db_publisher(db, c).await],
                vec!["success".to_string(), format!("container-infra.{finisher}")],
            ],
            "the create notifications of {c}"
        );
    }
    db.assert_each_event_written_once().await;
}

/// The publisher of the API's pending notification (the test app's host).
async fn db_publisher(db: &Db, c: &str) -> String {
    db.column(&format!(
        "SELECT message->>'publisher_id' FROM outbox WHERE resource_uuid = '{c}' \
         AND message->'payload'->>'outcome' = 'pending'"
    ))
    .await
    .into_iter()
    .next()
    .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conductor_stopped_with_sigterm_gives_its_ten_jobs_back_and_another_finishes_each_once() {
    let app = spawn_with(Backend::Postgres, |_| {}).await;
    let db = Db::open(&app.db.url).await;
    let clusters = ten_creates(&app).await;

    // The first conductor's driver calls take a minute: none finishes within the 1 s grace.
    let base = Env::new(&app.db.url);
    let mut first =
        Process::start(Role::Conductor, "first", &conductor_env(&base, 1, 60_000)).await;
    all_claimed_by(&db, &first).await;
    let exit = first.terminate(Duration::from_secs(30)).await;
    let log = first.log_tail();
    assert!(
        exit.is_some_and(|s| s.success()),
        "the stopped conductor exits 0 within the grace period: {exit:?}\n{log}"
    );
    // Given back: pending, unleased, claimable by anyone now; the clusters still creating.
    assert_eq!(
        db.rows(
            "SELECT CAST(COUNT(*) AS TEXT) FROM job WHERE state = 'pending' \
             AND lease_owner IS NULL AND lease_expires_at IS NULL AND attempts = 1"
        )
        .await,
        vec![vec![JOBS.to_string()]]
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM cluster WHERE status = 'CREATE_IN_PROGRESS'")
            .await,
        JOBS as i64
    );

    // The second conductor takes them at once: its leases of 300 s are not waited out.
    let second = Process::start(Role::Conductor, "second", &conductor_env(&base, 60, 0)).await;
    // Well within the 300 s leases: only given-back jobs can be finished this soon.
    let finished = eventually(Duration::from_secs(240), || async {
        db.count("SELECT COUNT(*) FROM job WHERE state = 'done'")
            .await
            == JOBS as i64
    })
    .await;
    assert!(
        finished,
        "the second conductor finished the given-back jobs long before their leases would have expired: {}",
        second.log_tail()
    );
    each_effect_once(&db, &clusters, "2", "second").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conductor_stopped_with_sigterm_finishes_the_jobs_it_holds_within_the_grace_period() {
    let app = spawn_with(Backend::Postgres, |_| {}).await;
    let db = Db::open(&app.db.url).await;
    let clusters = ten_creates(&app).await;

    // Driver calls of 2 s against a grace period of 120 s: every held job finishes.
    let base = Env::new(&app.db.url);
    let mut first =
        Process::start(Role::Conductor, "first", &conductor_env(&base, 120, 2_000)).await;
    all_claimed_by(&db, &first).await;
    let exit = first.terminate(Duration::from_secs(120)).await;
    let log = first.log_tail();
    assert!(
        exit.is_some_and(|s| s.success()),
        "the stopped conductor exits 0: {exit:?}\n{log}"
    );
    each_effect_once(&db, &clusters, "1", "first").await;
}

/// `fleetyard api` and `fleetyard serve` stop on SIGTERM with exit status 0 (the relay of
/// `serve` after one last round).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_and_serve_exit_0_on_sigterm() {
    let app = spawn_with(Backend::Postgres, |_| {}).await;
    let env = Env::new(&app.db.url)
        .set("DEFAULT__GRACEFUL_SHUTDOWN_TIMEOUT", 5)
        .set("OSLO_MESSAGING_NOTIFICATIONS__DRIVER", "noop");
    for (role, name) in [(Role::Api, "api"), (Role::Serve, "serve")] {
        let mut p = Process::start(role, name, &env).await;
        let exit = p.terminate(Duration::from_secs(30)).await;
        assert!(
            exit.is_some_and(|s| s.success()),
            "{name} exits 0 on SIGTERM: {exit:?}\n{}",
            p.log_tail()
        );
    }
}
