//! Blocked, with the reason: while a job waits on a transient refusal of its driver (a quota,
//! an unreachable infrastructure API, a conflict), the cluster, node group or federation stays
//! `*_IN_PROGRESS` and its `status_reason` says what it waits on, since when, which attempt
//! was refused, when the next one is and when it gives up; the registry shows a `Blocked`
//! condition and `/metrics` the `fleetyard_jobs_blocked` gauge. Past the operation's deadline
//! it fails with the last reason; a permanent refusal fails at once. The fake driver refuses
//! the first N attempts of each operation (label `fake_transient_failures=N`); the conductor
//! retries after 20 to 50 ms, so the waits are short.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::Settings;
use fleetyard::domain::job::retry::Blocked;
use fleetyard::domain::job::Job;

use crate::helpers::{
    at, cluster_as, conductor_from, events_of, federation_body, instant_settings,
    make_federation_as, spawn_keeping, template_as, Api, Backend, TestApp,
};

/// Settings whose conductor retries a refused job after 20 ms, then 40, then every 50.
fn fast(s: &mut Settings) {
    instant_settings(s);
    s.conductor.retry_delay = 0.02;
    s.conductor.retry_max_delay = 0.05;
}

async fn spawn(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> (TestApp, Conductor) {
    let (app, s) = spawn_keeping(backend, |s| {
        fast(s);
        tweak(s);
    })
    .await;
    let c = conductor_from(&app, &s);
    (app, c)
}

/// The next attempt the conductor makes, once a job is due (waiting out a backoff).
async fn next_attempt(c: &Conductor) -> Outcome {
    for _ in 0..1000 {
        match c.try_execute_one().await.expect("job worked") {
            Outcome::Idle => tokio::time::sleep(Duration::from_millis(10)).await,
            o => return o,
        }
    }
    panic!("no job became due");
}

/// The latest job of a resource and its state.
async fn job_of(app: &TestApp, uuid: &str) -> (Job, String) {
    let uuid = uuid.parse().expect("a uuid");
    let mut jobs = app.store.jobs_for(uuid).await.expect("jobs");
    jobs.pop().expect("a job")
}

/// A time as the sentences show it: RFC 3339, to the second.
fn secs(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn refused(op: &str, attempt: i32, of: i32) -> String {
    format!(
        "The fake driver simulated a transient failure of '{op}' (attempt {attempt} of the first {of})."
    )
}

/// `(status, status_reason)` of a cluster at `latest`.
async fn seen(app: &TestApp, uuid: &str) -> (String, Value) {
    let r = app.at("latest").get_cluster(uuid).await;
    assert_eq!(r.status, 200, "{}", r.text);
    (
        r.body["status"].as_str().unwrap_or_default().to_string(),
        r.body["status_reason"].clone(),
    )
}

/// `(name, status, status_reason)` of a cluster's node groups, by name.
async fn groups(app: &TestApp, uuid: &str) -> Vec<(String, String, Value)> {
    let r = app.at("latest").list_nodegroups(uuid, "/detail").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut out: Vec<(String, String, Value)> = r.body["nodegroups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["name"].as_str().unwrap_or_default().to_string(),
                g["status"].as_str().unwrap_or_default().to_string(),
                g["status_reason"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The cluster's registry object's conditions (project-a's namespace).
async fn conditions(app: &TestApp, name: &str) -> Vec<Value> {
    let r = app
        .get(&format!(
            "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters/{name}"
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn condition_types(cs: &[Value]) -> Vec<&str> {
    cs.iter().filter_map(|c| c["type"].as_str()).collect()
}

/// The blocked sentence a status_reason holds, checked against the job that wrote it: since
/// its first refusal, the attempt refused, until its deadline, the next attempt between.
fn blocked_by(reason: &Value, job: &Job, deadline: DateTime<Utc>) -> Blocked {
    let text = reason.as_str().expect("a status_reason");
    let b = Blocked::parse(text).unwrap_or_else(|| panic!("not a blocked sentence: {text}"));
    let since = job.blocked_since.expect("the job was refused");
    assert_eq!(secs(b.since), secs(since), "{text}");
    assert_eq!(b.attempt, job.attempts, "{text}");
    assert_eq!(b.max_attempts, None, "no limit but the deadline: {text}");
    assert_eq!(secs(b.gives_up_at), secs(deadline), "{text}");
    assert!(
        b.since <= b.next_attempt && b.next_attempt <= b.gives_up_at,
        "{text}"
    );
    assert_eq!(b.reason(), text, "one sentence, written by the rule");
    b
}

#[rstest]
#[tokio::test]
async fn a_create_refused_for_a_while_shows_what_it_waits_on_then_completes_with_the_reason_cleared(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, c) = spawn(backend, |_| {}).await;
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "quota", "cluster_template_id": t,
               "labels": {"fake_transient_failures": "2"}}),
        &h,
    )
    .await;
    assert_eq!(
        seen(&app, &uuid).await,
        ("CREATE_IN_PROGRESS".into(), Value::Null)
    );
    assert_eq!(
        condition_types(&conditions(&app, "quota").await),
        vec!["OK"]
    );

    // The first refusal: in progress, blocked since now, until the create_timeout.
    let first = next_attempt(&c).await;
    assert!(
        matches!(&first, Outcome::Retried { error, .. } if *error == refused("create", 1, 2)),
        "{first:?}"
    );
    let (job, state) = job_of(&app, &uuid).await;
    assert_eq!((job.attempts, state.as_str()), (1, "pending"));
    let deadline = job.deadline_at.expect("create_timeout");
    let minutes = (deadline - job.created_at).num_seconds() as f64 / 60.0;
    assert!((59.9..60.1).contains(&minutes), "60 minutes: {minutes}");
    let (status, reason) = seen(&app, &uuid).await;
    assert_eq!(status, "CREATE_IN_PROGRESS");
    let blocked = blocked_by(&reason, &job, deadline);
    assert_eq!(blocked.message, refused("create", 1, 2));
    assert_eq!(blocked.attempt, 1);
    let since = blocked.since;
    // The node groups being created say the same.
    assert_eq!(
        groups(&app, &uuid).await,
        vec![
            (
                "default-master".into(),
                "CREATE_IN_PROGRESS".into(),
                reason.clone()
            ),
            (
                "default-worker".into(),
                "CREATE_IN_PROGRESS".into(),
                reason.clone()
            ),
        ]
    );
    // The registry shows it as a Blocked condition.
    let cs = conditions(&app, "quota").await;
    assert_eq!(condition_types(&cs), vec!["OK", "Blocked"]);
    assert_eq!(cs[1]["status"], "True");
    assert_eq!(cs[1]["reason"], "CreateBlocked");
    assert_eq!(cs[1]["message"], reason);
    assert_eq!(cs[1]["lastTransitionTime"], secs(since).as_str());
    assert!(cs[1]["lastHeartbeatTime"].is_string(), "{}", cs[1]);

    // The second refusal: the same since, the next attempt number, the new message.
    let second = next_attempt(&c).await;
    assert!(matches!(second, Outcome::Retried { .. }), "{second:?}");
    let (job, _) = job_of(&app, &uuid).await;
    assert_eq!(job.attempts, 2);
    let (status, reason) = seen(&app, &uuid).await;
    assert_eq!(status, "CREATE_IN_PROGRESS");
    let blocked = blocked_by(&reason, &job, deadline);
    assert_eq!(blocked.since, since, "since the first refusal");
    assert_eq!(blocked.attempt, 2);
    assert_eq!(blocked.message, refused("create", 2, 2));
    let cs = conditions(&app, "quota").await;
    assert_eq!(cs[1]["message"], reason);
    assert_eq!(cs[1]["lastTransitionTime"], secs(since).as_str());

    // Accepted: complete, the reason gone everywhere.
    let third = next_attempt(&c).await;
    assert!(matches!(third, Outcome::Completed { .. }), "{third:?}");
    assert_eq!(
        seen(&app, &uuid).await,
        ("CREATE_COMPLETE".into(), Value::Null)
    );
    assert_eq!(
        groups(&app, &uuid).await,
        vec![
            (
                "default-master".into(),
                "CREATE_COMPLETE".into(),
                Value::Null
            ),
            (
                "default-worker".into(),
                "CREATE_COMPLETE".into(),
                Value::Null
            ),
        ]
    );
    assert_eq!(
        condition_types(&conditions(&app, "quota").await),
        vec!["OK"]
    );
    let (job, state) = job_of(&app, &uuid).await;
    assert_eq!((job.attempts, state.as_str()), (3, "done"));
    let events: Vec<(String, String)> = events_of(&app, &uuid)
        .await
        .into_iter()
        .map(|(t, o, _)| (t, o))
        .collect();
    assert_eq!(
        events,
        vec![
            ("magnum.cluster.create".into(), "pending".into()),
            ("magnum.cluster.create".into(), "success".into()),
        ],
        "refusals are not notified"
    );
}

/// Moves a resource's job's deadline (`create_timeout` from the request) to `to`.
async fn move_deadline(app: &TestApp, backend: Backend, uuid: &str, to: DateTime<Utc>) {
    let sql = "UPDATE job SET deadline_at = $1 WHERE resource_uuid = $2 AND state = 'pending'";
    let changed = match backend {
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.db.url).await.expect("pg");
            let r = sqlx::query(sql).bind(to).bind(uuid).execute(&pool).await;
            pool.close().await;
            r.expect("update").rows_affected()
        }
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&app.db.url)
                .await
                .expect("sqlite");
            let r = sqlx::query(sql).bind(to).bind(uuid).execute(&pool).await;
            pool.close().await;
            r.expect("update").rows_affected()
        }
    };
    assert_eq!(changed, 1);
}

#[rstest]
#[tokio::test]
async fn a_create_still_refused_at_its_create_timeout_fails_with_the_last_reason(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, c) = spawn(backend, |_| {}).await;
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "starved", "cluster_template_id": t, "create_timeout": 1,
               "labels": {"fake_transient_failures": "100"}}),
        &h,
    )
    .await;
    let first = next_attempt(&c).await;
    assert!(matches!(first, Outcome::Retried { .. }), "{first:?}");
    let (job, _) = job_of(&app, &uuid).await;
    let since = job.blocked_since.expect("refused");
    let (status, reason) = seen(&app, &uuid).await;
    assert_eq!(status, "CREATE_IN_PROGRESS");
    blocked_by(&reason, &job, job.deadline_at.expect("create_timeout"));

    // The create_timeout passes (moved, rather than waited for).
    let passed = DateTime::from_timestamp(Utc::now().timestamp() - 60, 0).expect("a time");
    move_deadline(&app, backend, &uuid, passed).await;
    let last = next_attempt(&c).await;
    let expected = format!(
        "Gave up after 1 attempt, refused since {}, once the cluster's create_timeout passed \
         at {}: {}",
        secs(since),
        secs(passed),
        refused("create", 1, 100)
    );
    assert_eq!(
        last,
        Outcome::Failed {
            operation: fleetyard::domain::job::Operation::ClusterCreate,
            resource: uuid.clone(),
            reason: expected.clone(),
        }
    );
    assert_eq!(
        seen(&app, &uuid).await,
        ("CREATE_FAILED".into(), json!(expected))
    );
    assert_eq!(
        groups(&app, &uuid).await,
        vec![
            (
                "default-master".into(),
                "CREATE_FAILED".into(),
                json!(expected)
            ),
            (
                "default-worker".into(),
                "CREATE_FAILED".into(),
                json!(expected)
            ),
        ]
    );
    assert_eq!(
        condition_types(&conditions(&app, "starved").await),
        vec!["OK"]
    );
    let (job, state) = job_of(&app, &uuid).await;
    assert_eq!(state, "failed");
    assert_eq!(job.last_error.as_deref(), Some(expected.as_str()));
    let outcomes: Vec<String> = events_of(&app, &uuid)
        .await
        .into_iter()
        .map(|(_, o, _)| o)
        .collect();
    assert_eq!(outcomes, vec!["pending", "failure"]);
}

#[rstest]
#[tokio::test]
async fn without_a_create_timeout_refusals_are_bounded_by_the_operation_timeout(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, c) = spawn(backend, |s| s.conductor.operation_timeout = 0.3).await;
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "bounded", "cluster_template_id": t, "create_timeout": 0,
               "labels": {"fake_transient_failures": "10000"}}),
        &h,
    )
    .await;
    let first = next_attempt(&c).await;
    assert!(matches!(first, Outcome::Retried { .. }), "{first:?}");
    let (job, _) = job_of(&app, &uuid).await;
    assert_eq!(job.deadline_at, None, "no deadline of its own");
    let since = job.blocked_since.expect("refused");
    let deadline = since + chrono::Duration::milliseconds(300);
    blocked_by(&seen(&app, &uuid).await.1, &job, deadline);

    // Refused on every attempt until 0.3 s after the first refusal.
    let mut retried = 1;
    let reason = loop {
        match next_attempt(&c).await {
            Outcome::Retried { .. } => retried += 1,
            Outcome::Failed { reason, .. } => break reason,
            other => panic!("{other:?}"),
        }
        assert!(retried < 100, "the operation_timeout ends it");
    };
    let (job, state) = job_of(&app, &uuid).await;
    assert_eq!(state, "failed");
    assert_eq!(job.attempts, retried + 1);
    assert_eq!(
        reason,
        format!(
            "Gave up after {} attempts, refused since {}, once [conductor] operation_timeout \
             passed at {}: {}",
            job.attempts,
            secs(since),
            secs(deadline),
            refused("create", job.attempts, 10000)
        )
    );
    assert_eq!(
        seen(&app, &uuid).await,
        ("CREATE_FAILED".into(), json!(reason))
    );
}

#[rstest]
#[tokio::test]
async fn a_permanent_refusal_fails_the_create_at_once_with_the_drivers_reason(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, c) = spawn(backend, |_| {}).await;
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "no-image", "cluster_template_id": t,
               "labels": {"fake_fail": "create"}}),
        &h,
    )
    .await;
    let reason = "The fake driver simulated a failure of 'create' (label fake_fail=create).";
    let only = next_attempt(&c).await;
    assert!(
        matches!(&only, Outcome::Failed { reason: r, .. } if r == reason),
        "{only:?}"
    );
    assert_eq!(c.try_execute_one().await.expect("idle"), Outcome::Idle);
    assert_eq!(
        seen(&app, &uuid).await,
        ("CREATE_FAILED".into(), json!(reason))
    );
    let (job, state) = job_of(&app, &uuid).await;
    assert_eq!((job.attempts, state.as_str()), (1, "failed"));
    assert_eq!(job.blocked_since, None, "never blocked");
    assert_eq!(
        condition_types(&conditions(&app, "no-image").await),
        vec!["OK"]
    );
}

/// A cluster taken to `CREATE_COMPLETE` through its first refusal (label
/// `fake_transient_failures=1`: every operation is refused once).
async fn refused_once_cluster(app: &TestApp, c: &Conductor, name: &str, h: &HeaderMap) -> String {
    let t = template_as(app, &format!("{name}-t"), json!({}), h).await;
    let uuid = cluster_as(
        app,
        json!({"name": name, "cluster_template_id": t,
               "labels": {"fake_transient_failures": "1"}}),
        h,
    )
    .await;
    assert!(matches!(next_attempt(c).await, Outcome::Retried { .. }));
    assert!(matches!(next_attempt(c).await, Outcome::Completed { .. }));
    assert_eq!(
        seen(app, &uuid).await,
        ("CREATE_COMPLETE".into(), Value::Null)
    );
    uuid
}

#[rstest]
#[tokio::test]
async fn a_node_group_create_refused_once_shows_blocked_on_the_group_and_its_cluster(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, c) = spawn(backend, |_| {}).await;
    let h = app.headers.clone();
    let uuid = refused_once_cluster(&app, &c, "grown", &h).await;
    let api = app.with_headers(&at(&h, "latest"));
    let r = api
        .create_nodegroup(&uuid, &json!({"name": "gpu", "node_count": 1}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);

    let first = next_attempt(&c).await;
    assert!(
        matches!(&first, Outcome::Retried { error, .. } if *error == refused("update", 1, 1)),
        "{first:?}"
    );
    let (job, _) = job_of(&app, &uuid).await;
    // A node group operation has no deadline of its own: operation_timeout (an hour).
    assert_eq!(job.deadline_at, None);
    let deadline = job.blocked_since.expect("refused") + chrono::Duration::hours(1);
    let (status, reason) = seen(&app, &uuid).await;
    assert_eq!(status, "UPDATE_IN_PROGRESS");
    let blocked = blocked_by(&reason, &job, deadline);
    assert_eq!(blocked.message, refused("update", 1, 1));
    let ng = api.get_nodegroup(&uuid, "gpu").await;
    assert_eq!(ng.status, 200, "{}", ng.text);
    assert_eq!(ng.body["status"], "CREATE_IN_PROGRESS");
    assert_eq!(ng.body["status_reason"], reason);
    let cs = conditions(&app, "grown").await;
    assert_eq!(condition_types(&cs), vec!["OK", "Blocked"]);
    assert_eq!(cs[1]["reason"], "UpdateBlocked");
    assert_eq!(cs[1]["message"], reason);

    let second = next_attempt(&c).await;
    assert!(matches!(second, Outcome::Completed { .. }), "{second:?}");
    assert_eq!(
        seen(&app, &uuid).await,
        ("UPDATE_COMPLETE".into(), Value::Null)
    );
    let ng = api.get_nodegroup(&uuid, "gpu").await;
    assert_eq!(ng.body["status"], "CREATE_COMPLETE");
    assert_eq!(ng.body["status_reason"], Value::Null);
    assert_eq!(
        condition_types(&conditions(&app, "grown").await),
        vec!["OK"]
    );
}

#[rstest]
#[tokio::test]
async fn a_federation_create_refused_once_shows_blocked_then_completes(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let (app, c) = spawn(backend, |_| {}).await;
    let h = app.headers.clone();
    let host = refused_once_cluster(&app, &c, "host", &h).await;
    let fed = make_federation_as(&app, &federation_body(&host), &h).await;

    let first = next_attempt(&c).await;
    assert!(
        matches!(&first, Outcome::Retried { error, .. } if *error == refused("federation", 1, 1)),
        "{first:?}"
    );
    let (job, _) = job_of(&app, &fed).await;
    let r = app.get_federation(&fed).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "CREATE_IN_PROGRESS");
    let blocked = blocked_by(
        &r.body["status_reason"],
        &job,
        job.deadline_at.expect("a federation create's own deadline"),
    );
    assert_eq!(blocked.message, refused("federation", 1, 1));

    let second = next_attempt(&c).await;
    assert!(matches!(second, Outcome::Completed { .. }), "{second:?}");
    let r = app.get_federation(&fed).await;
    assert_eq!(r.body["status"], "CREATE_COMPLETE");
    assert_eq!(r.body["status_reason"], Value::Null);
}

#[tokio::test]
async fn metrics_count_the_blocked_jobs_by_operation() {
    let (app, c) = spawn(Backend::Postgres, |_| {}).await;
    let server = fleetyard::metrics::MetricsServer::bind("127.0.0.1:0", app.store.clone())
        .expect("the metrics address binds");
    let port = server.port();
    tokio::spawn(server.run_until_stopped());
    let blocked = |text: &str, op: &str| -> Option<f64> {
        let series = format!("fleetyard_jobs_blocked{{operation=\"{op}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|v| v.trim().parse().ok())
    };
    let scrape = move || async move {
        let r = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
            .await
            .expect("metrics answer");
        r.text().await.expect("body")
    };
    let h = app.headers.clone();
    let t = template_as(&app, "t", json!({}), &h).await;
    cluster_as(
        &app,
        json!({"name": "m", "cluster_template_id": t,
               "labels": {"fake_transient_failures": "1"}}),
        &h,
    )
    .await;
    let text = scrape().await;
    assert_eq!(blocked(&text, "cluster.create"), Some(0.0), "{text}");
    assert!(text.contains("# HELP fleetyard_jobs_blocked"), "{text}");

    assert!(matches!(next_attempt(&c).await, Outcome::Retried { .. }));
    let text = scrape().await;
    assert_eq!(blocked(&text, "cluster.create"), Some(1.0), "{text}");
    assert_eq!(blocked(&text, "cluster.resize"), Some(0.0), "{text}");

    assert!(matches!(next_attempt(&c).await, Outcome::Completed { .. }));
    let text = scrape().await;
    assert_eq!(blocked(&text, "cluster.create"), Some(0.0), "{text}");
}
