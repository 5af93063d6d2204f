//! Prometheus metrics on `[metrics] listen_address`: request latency by route template and
//! status, jobs and the outbox read from the database at scrape time, the pool, conductor
//! results; never on the API's own port.

use std::collections::BTreeMap;

use serde_json::json;

use crate::helpers::{cluster_as, conductor, drain, instant, spawn_with, Backend, TestApp};

/// A uuid nobody has.
const MISSING: &str = "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b4c";

/// Every sample of the exposition: `name{labels}` → value, labels as `k=v` pairs sorted.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let key = match series.split_once('{') {
            Some((name, labels)) => {
                let mut pairs: Vec<String> = labels
                    .trim_end_matches('}')
                    .split(',')
                    .map(|p| p.replace('"', ""))
                    .collect();
                pairs.sort();
                format!("{name}{{{}}}", pairs.join(","))
            }
            None => series.to_string(),
        };
        out.insert(key, value.parse().expect("a number"));
    }
    out
}

async fn scrape(port: u16) -> (String, BTreeMap<String, f64>) {
    let r = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .expect("metrics answer");
    assert_eq!(r.status(), 200);
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = r.text().await.expect("body");
    let parsed = samples(&text);
    (text, parsed)
}

fn value(s: &BTreeMap<String, f64>, key: &str, text: &str) -> f64 {
    *s.get(key)
        .unwrap_or_else(|| panic!("no sample {key} in:\n{text}"))
}

async fn serve_metrics(app: &TestApp) -> u16 {
    let server = fleetyard::metrics::MetricsServer::bind("127.0.0.1:0", app.store.clone())
        .expect("the metrics address binds");
    let port = server.port();
    tokio::spawn(server.run_until_stopped());
    port
}

#[tokio::test]
async fn metrics_show_requests_by_route_and_status_jobs_outbox_and_pool() {
    let app = spawn_with(Backend::Postgres, |_| {}).await;
    let port = serve_metrics(&app).await;
    let template = app.make_template("m", json!({})).await;
    let template = template["uuid"].as_str().expect("uuid").to_string();
    cluster_as(
        &app,
        json!({"name": "m1", "cluster_template_id": template}),
        &app.headers,
    )
    .await;
    let missing = app.get(&format!("/v1/clusters/{MISSING}")).await;
    assert_eq!(missing.status, 404);
    // Forty GETs of the cluster at once: each answered with the cluster, the concurrent ones
    // sharing statements.
    let path = "/v1/clusters/m1";
    let gets = (0..40).map(|_| app.get(path));
    for got in futures_util::future::join_all(gets).await {
        assert_eq!(got.status, 200, "{}", got.body);
        assert_eq!(got.body["name"], "m1");
        assert_eq!(got.body["cluster_template_id"], template.as_str());
    }

    let (text, s) = scrape(port).await;
    for (method, route, status) in [
        ("POST", "/v1/clustertemplates", 201),
        ("POST", "/v1/clusters", 202),
        ("GET", "/v1/clusters/{cluster_ident}", 404),
    ] {
        let count = value(
            &s,
            &format!(
                "fleetyard_http_request_duration_seconds_count{{method={method},\
                 route={route},status={status}}}"
            ),
            &text,
        );
        assert!(count >= 1.0, "{method} {route} {status}: {count}");
        let inf = value(
            &s,
            &format!(
                "fleetyard_http_request_duration_seconds_bucket{{le=+Inf,method={method},\
                 route={route},status={status}}}"
            ),
            &text,
        );
        assert_eq!(
            inf, count,
            "a histogram: the +Inf bucket holds every request"
        );
    }
    assert!(
        !text.contains(MISSING),
        "routes are templates, never the identifiers requested"
    );
    // The database's gauges, as the store sees them.
    let (backlog, _) = app.store.outbox_backlog().await.expect("backlog");
    assert!(backlog >= 2, "template and cluster events wait: {backlog}");
    assert_eq!(value(&s, "fleetyard_outbox_backlog", &text), backlog as f64);
    assert!(value(&s, "fleetyard_outbox_oldest_pending_age_seconds", &text) >= 0.0);
    assert_eq!(
        value(&s, "fleetyard_jobs{state=due}", &text),
        1.0,
        "the create"
    );
    assert_eq!(value(&s, "fleetyard_jobs{state=leased}", &text), 0.0);
    assert!(value(&s, "fleetyard_jobs_oldest_due_age_seconds", &text) >= 0.0);
    assert_eq!(value(&s, "fleetyard_scrape_database_up", &text), 1.0);
    assert_eq!(
        value(&s, "fleetyard_db_pool_connections{state=max}", &text),
        5.0,
        "the test settings' pool size"
    );
    // The pool has opened connections by now; how many are idle at the scrape depends on
    // what else holds one at that instant (the scrape's own queries included).
    let idle = value(&s, "fleetyard_db_pool_connections{state=idle}", &text);
    let in_use = value(&s, "fleetyard_db_pool_connections{state=in_use}", &text);
    assert!(
        idle + in_use >= 1.0 && idle + in_use <= 5.0,
        "{idle} + {in_use}"
    );
    // Every statement waited for its connection: the waits are a histogram, at least one per
    // request above, each bucketed.
    let waits = value(&s, "fleetyard_db_pool_wait_seconds_count", &text);
    assert!(waits >= 3.0, "one wait per statement at least: {waits}");
    assert_eq!(
        value(&s, "fleetyard_db_pool_wait_seconds_bucket{le=+Inf}", &text),
        waits
    );
    let waited = value(&s, "fleetyard_db_pool_wait_seconds_sum", &text);
    assert!(
        (0.0..waits * 2.0).contains(&waited),
        "no wait beyond the pool timeout: {waited} s over {waits}"
    );
    assert!(text.contains("# TYPE fleetyard_db_pool_wait_seconds histogram"));
    // The single-row reads: the 404 and the forty GETs at least, in fewer statements than
    // callers.
    let callers = value(&s, "fleetyard_db_shared_read_callers_total", &text);
    let statements = value(&s, "fleetyard_db_shared_read_statements_total", &text);
    assert!(callers >= 41.0, "{callers}");
    assert!(
        statements >= 1.0 && statements < callers,
        "{callers} callers in {statements} statements"
    );
    assert!(text.contains("# TYPE fleetyard_db_shared_read_callers_total counter"));
    assert!(text.contains("# TYPE fleetyard_http_request_duration_seconds histogram"));
    assert!(text.contains("# HELP fleetyard_jobs_oldest_due_age_seconds"));

    // The conductor works the job: nothing due any more, one attempt done.
    drain(&conductor(&app, instant())).await;
    let (text, s) = scrape(port).await;
    assert_eq!(value(&s, "fleetyard_jobs{state=due}", &text), 0.0);
    assert_eq!(
        value(&s, "fleetyard_jobs_oldest_due_age_seconds", &text),
        0.0
    );
    assert!(value(&s, "fleetyard_conductor_jobs_total{result=done}", &text) >= 1.0);

    // A relay (the log driver) sends the backlog: counted as confirmed, the backlog gone.
    let (backlog, _) = app.store.outbox_backlog().await.expect("backlog");
    assert!(
        backlog >= 3,
        "the conductor's event joined the backlog: {backlog}"
    );
    let mut settings = crate::helpers::test_settings(&app.db.url);
    settings.oslo_messaging_notifications.driver = fleetyard::config::NotificationDriver::Log;
    let relay_settings =
        fleetyard::notify::relay::RelaySettings::from_settings(&settings).expect("settings");
    let mut relay = fleetyard::notify::relay::Relay::new(app.store.clone(), relay_settings);
    let report = relay.drain().await.expect("the log driver delivers");
    assert_eq!(report.sent as i64, backlog);
    let (text, s) = scrape(port).await;
    assert!(
        value(
            &s,
            "fleetyard_notifications_published_total{result=confirmed}",
            &text
        ) >= backlog as f64
    );
    assert_eq!(value(&s, "fleetyard_outbox_backlog", &text), 0.0);
    assert_eq!(
        value(&s, "fleetyard_outbox_oldest_pending_age_seconds", &text),
        0.0
    );
}

#[tokio::test]
async fn metrics_are_not_served_on_the_api_port() {
    let app = spawn_with(Backend::Sqlite, |_| {}).await;
    let _port = serve_metrics(&app).await;
    let r = app.get("/metrics").await;
    r.assert_framework_error(404);
}
