//! Database outages, drilled with a TCP proxy in front of PostgreSQL: a refused database and a
//! network partition get 503 with Magnum's body within the configured timeouts (never a hang),
//! `/healthcheck` reports them within a second, a commit held up by the partition is never
//! applied after its client was answered 503, and requests succeed again seconds after the
//! heal. A commit whose answer was lost with its connection is looked up by transaction id:
//! committed, it is answered as made; rolled back, it is a clean 503.

use std::time::{Duration, Instant};

use fleetyard::config::Secret;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{
    pg_host_port, spawn_with, template_body, Backend, DbProxy, Link, Resp, TestApp,
};

pub(crate) const UNAVAILABLE: &str = "The service is temporarily unavailable; try again shortly.";
pub(crate) const COMMIT_UNCONFIRMED: &str = "The database did not confirm the change in time; \
     it may have been applied. Check before retrying.";

/// The app on a fresh PostgreSQL database reached through a proxy, with the given
/// `[database]` timeouts.
pub(crate) async fn app_behind_proxy(
    pool_timeout: f64,
    statement_timeout: f64,
) -> (TestApp, DbProxy) {
    let upstream = pg_host_port();
    let proxy = DbProxy::start(&upstream).await;
    let app = spawn_with(Backend::Postgres, |s| {
        let url = proxy.url_for(s.database.connection.expose(), &upstream);
        s.database.connection = Secret::new(url);
        s.database.pool_timeout = pool_timeout;
        s.database.statement_timeout = statement_timeout;
    })
    .await;
    (app, proxy)
}

/// A request with a client that gives up after 20 s (a hang fails the test, it does not
/// stall it), and how long the answer took.
async fn timed(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (Resp, Duration) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let mut req = client
        .request(method, app.url(path))
        .headers(app.headers.clone());
    if let Some(b) = body {
        req = req.json(b);
    }
    let started = Instant::now();
    let resp = req
        .send()
        .await
        .expect("answered before the client gave up");
    (Resp::read(resp).await, started.elapsed())
}

/// `/healthcheck` answers 503 within a second.
async fn assert_health_reports_the_outage(app: &TestApp) {
    let (r, took) = timed(app, Method::GET, "/healthcheck", None).await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.text, "DATABASE UNAVAILABLE");
    assert!(took < Duration::from_secs(1), "healthcheck took {took:?}");
}

/// Requests succeed again within `within` of the heal; the time they took.
async fn recovers(app: &TestApp, within: Duration) -> Duration {
    let healed = Instant::now();
    loop {
        let (list, _) = timed(app, Method::GET, "/v1/clustertemplates", None).await;
        let (health, _) = timed(app, Method::GET, "/healthcheck", None).await;
        if list.status == 200 && health.status == 200 {
            return healed.elapsed();
        }
        assert!(
            healed.elapsed() < within,
            "still failing {:?} after the heal: {} / {}",
            healed.elapsed(),
            list.text,
            health.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn template_names(r: &Resp) -> Vec<String> {
    r.body["clustertemplates"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refused_database_gets_503_with_the_body_at_once_and_the_service_recovers() {
    let (app, proxy) = app_behind_proxy(2.0, 5.0).await;
    let made = app
        .post("/v1/clustertemplates", &template_body("before"))
        .await;
    assert_eq!(made.status, 201, "{}", made.text);

    proxy.set(Link::Refused);
    // Let the pooled connections go idle long enough to be checked before reuse.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (list, took) = timed(&app, Method::GET, "/v1/clustertemplates", None).await;
    list.assert_error(503, UNAVAILABLE);
    assert!(took < Duration::from_secs(3), "a GET took {took:?}");
    let body = template_body("during");
    let (post, took) = timed(&app, Method::POST, "/v1/clustertemplates", Some(&body)).await;
    post.assert_error(503, UNAVAILABLE);
    assert!(took < Duration::from_secs(3), "a POST took {took:?}");
    assert_health_reports_the_outage(&app).await;

    proxy.set(Link::Up);
    let took = recovers(&app, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(5), "recovered after {took:?}");
    let list = app.get("/v1/clustertemplates").await;
    assert_eq!(template_names(&list), ["before"], "{}", list.text);
}

#[tokio::test]
async fn a_partition_gets_503_within_the_timeouts_and_commits_nothing_behind_the_clients_back() {
    let (app, proxy) = app_behind_proxy(1.0, 2.0).await;
    let made = app
        .post("/v1/clustertemplates", &template_body("before"))
        .await;
    assert_eq!(made.status, 201, "{}", made.text);

    // The partition starts between the create's last statement and its commit: the request is
    // in flight, its commit held by the network.
    proxy.set(Link::PartitionAtCommit);
    let body = template_body("in-flight");
    let (post, took) = timed(&app, Method::POST, "/v1/clustertemplates", Some(&body)).await;
    assert_eq!(proxy.link(), Link::Partitioned, "the commit was held");
    // The service cannot know whether the held COMMIT will apply: it says so, and does not
    // call the change failed.
    post.assert_error(503, COMMIT_UNCONFIRMED);
    assert!(
        took < Duration::from_millis(2500),
        "the in-flight POST took {took:?} (statement timeout 2 s)"
    );

    // A request arriving during the partition: waiting for a connection, then a statement.
    let (list, took) = timed(&app, Method::GET, "/v1/clustertemplates", None).await;
    list.assert_error(503, UNAVAILABLE);
    assert!(took < Duration::from_millis(3500), "a GET took {took:?}");
    assert_health_reports_the_outage(&app).await;

    // The held commit reaches the server at the heal: it must not apply.
    proxy.set(Link::Up);
    let took = recovers(&app, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(5), "recovered after {took:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let list = app.get("/v1/clustertemplates").await;
    assert_eq!(template_names(&list), ["before"], "{}", list.text);
    let again = app
        .post(
            "/v1/clustertemplates",
            &json!({"name": "after", "coe": "kubernetes", "image_id": "img"}),
        )
        .await;
    assert_eq!(again.status, 201, "{}", again.text);
}

#[tokio::test]
async fn a_commit_whose_answer_is_lost_after_the_server_committed_it_is_answered_as_made() {
    let (app, proxy) = app_behind_proxy(2.0, 5.0).await;
    let made = app
        .post("/v1/clustertemplates", &template_body("before"))
        .await;
    assert_eq!(made.status, 201, "{}", made.text);

    // The COMMIT reaches the server and its connection is cut before the answer comes back:
    // the service looks the transaction up on another connection and finds it committed.
    proxy.set(Link::CutAfterCommit);
    let (post, _) = timed(
        &app,
        Method::POST,
        "/v1/clustertemplates",
        Some(&template_body("answer-lost")),
    )
    .await;
    assert_eq!(proxy.link(), Link::Up, "the cut happened at the commit");
    assert_eq!(post.status, 201, "{}", post.text);
    assert_eq!(post.body["name"], "answer-lost", "{}", post.text);

    let list = app.get("/v1/clustertemplates").await;
    let mut names = template_names(&list);
    names.sort();
    assert_eq!(names, ["answer-lost", "before"], "{}", list.text);
    let shown = app
        .get(&format!(
            "/v1/clustertemplates/{}",
            post.body["uuid"].as_str().unwrap_or_default()
        ))
        .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_eq!(shown.body["name"], "answer-lost", "{}", shown.text);
}

#[tokio::test]
async fn a_commit_cut_before_it_reached_the_server_is_a_clean_503_and_writes_nothing() {
    let (app, proxy) = app_behind_proxy(2.0, 5.0).await;
    let made = app
        .post("/v1/clustertemplates", &template_body("before"))
        .await;
    assert_eq!(made.status, 201, "{}", made.text);

    // The connection is cut as the COMMIT is sent and the COMMIT never arrives: the server
    // rolls the transaction back, the service finds it aborted and says the change was not
    // made (the unavailable body, not "it may have been applied").
    proxy.set(Link::CutBeforeCommit);
    let (post, _) = timed(
        &app,
        Method::POST,
        "/v1/clustertemplates",
        Some(&template_body("never-made")),
    )
    .await;
    assert_eq!(proxy.link(), Link::Up, "the cut happened at the commit");
    post.assert_error(503, UNAVAILABLE);

    let list = app.get("/v1/clustertemplates").await;
    assert_eq!(template_names(&list), ["before"], "{}", list.text);
    // The same request again is simply made.
    let again = app
        .post("/v1/clustertemplates", &template_body("never-made"))
        .await;
    assert_eq!(again.status, 201, "{}", again.text);
    let list = app.get("/v1/clustertemplates").await;
    let mut names = template_names(&list);
    names.sort();
    assert_eq!(names, ["before", "never-made"], "{}", list.text);
}

#[tokio::test]
async fn a_cluster_create_whose_commit_answer_is_lost_is_accepted_once_and_built() {
    let (app, proxy) = app_behind_proxy(2.0, 5.0).await;
    let template = app
        .post("/v1/clustertemplates", &template_body("tpl"))
        .await;
    assert_eq!(template.status, 201, "{}", template.text);

    proxy.set(Link::CutAfterCommit);
    let body = json!({"name": "lost-answer", "cluster_template_id": "tpl"});
    let (post, _) = timed(&app, Method::POST, "/v1/clusters", Some(&body)).await;
    assert_eq!(proxy.link(), Link::Up, "the cut happened at the commit");
    assert_eq!(post.status, 202, "{}", post.text);
    let uuid = post.body["uuid"].as_str().unwrap_or_default().to_string();
    assert!(!uuid.is_empty(), "{}", post.text);

    let list = app.get("/v1/clusters").await;
    let clusters = list.body["clusters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(clusters.len(), 1, "{}", list.text);
    assert_eq!(clusters[0]["uuid"], uuid.as_str(), "{}", list.text);
    assert_eq!(clusters[0]["name"], "lost-answer", "{}", list.text);
}
