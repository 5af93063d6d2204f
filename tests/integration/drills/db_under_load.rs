//! The database refused, then partitioned, while sixteen clients write (a TCP proxy of the
//! tests' own in front of PostgreSQL; the machine's server is never stopped). Every answer
//! comes within the configured timeouts, a failure is a 503 with Magnum's body, the service
//! writes again within seconds of each heal, every write answered 201 is in the database and
//! none answered "unavailable" is: nothing lost, nothing committed behind a client's back. A
//! write whose COMMIT was sent and never answered gets its own 503 sentence saying it may have
//! been applied (the service cannot know; the database may have committed it before the
//! network broke): those are counted, and the client was never told they failed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::db::Db;
use crate::db_outage::{app_behind_proxy, COMMIT_UNCONFIRMED, UNAVAILABLE};
use crate::helpers::{template_body, Link};

const WRITERS: usize = 16;

/// One write: the network's state when it was sent, its name, the answer, how long it took.
#[derive(Debug, Clone)]
struct Write {
    link: Link,
    name: String,
    status: u16,
    detail: String,
    took: Duration,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_under_writes_answers_fast_and_commits_exactly_what_was_answered() {
    // pool_timeout 1 s, statement_timeout 2 s: every answer within about 3 s.
    let (app, proxy) = app_behind_proxy(1.0, 2.0).await;
    let db = Db::open(&app.db.url).await;
    let link = Arc::new(Mutex::new(Link::Up));
    let log: Arc<Mutex<Vec<Write>>> = Arc::default();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (client, url, headers) = (
                client.clone(),
                app.url("/v1/clustertemplates"),
                app.headers.clone(),
            );
            let (link, log, stopped) = (link.clone(), log.clone(), stopped.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    if *stopped.borrow() {
                        break;
                    }
                    let name = format!("w{w}-{i}");
                    let state = *link.lock().expect("link");
                    let started = Instant::now();
                    let r = client
                        .post(&url)
                        .headers(headers.clone())
                        .json(&template_body(&name))
                        .send()
                        .await
                        .expect("answered before the client gave up");
                    let status = r.status().as_u16();
                    let body: serde_json::Value = r.json().await.unwrap_or_default();
                    let detail = body["errors"][0]["detail"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let took = started.elapsed();
                    log.lock().expect("log").push(Write {
                        link: state,
                        name,
                        status,
                        detail,
                        took,
                    });
                    if status != 201 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            })
        })
        .collect();

    let set = |state: Link| {
        *link.lock().expect("link") = state;
        proxy.set(state);
    };
    let mut first_201_after_heal = Vec::new();
    for (fault, seconds) in [(Link::Refused, 4), (Link::Partitioned, 4)] {
        tokio::time::sleep(Duration::from_secs(2)).await;
        set(fault);
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        let healed = Instant::now();
        let before = log.lock().expect("log").len();
        set(Link::Up);
        // Recovered when a write sent after the heal is answered 201.
        loop {
            let recovered = log.lock().expect("log")[before..]
                .iter()
                .any(|w| w.link == Link::Up && w.status == 201);
            if recovered {
                first_201_after_heal.push(healed.elapsed());
                break;
            }
            assert!(
                healed.elapsed() < Duration::from_secs(10),
                "no write succeeded within 10 s of the heal after {fault:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.send_replace(true);
    for w in writers {
        w.await.expect("writer");
    }
    // Anything a held commit could still do, it has done by now (the server ends a
    // transaction left idle for half the statement timeout).
    tokio::time::sleep(Duration::from_secs(2)).await;

    let log = log.lock().expect("log").clone();
    let slowest = log.iter().map(|w| w.took).max().unwrap_or_default();
    assert!(
        slowest < Duration::from_millis(3500),
        "an answer took {slowest:?} (pool timeout 1 s + statement timeout 2 s)"
    );
    for w in &log {
        match (w.status, w.detail.as_str()) {
            (201, _) | (503, UNAVAILABLE | COMMIT_UNCONFIRMED) => {}
            _ => panic!("neither 201 nor a 503 with Magnum's body: {w:?}"),
        }
    }
    let failed: Vec<&Write> = log
        .iter()
        .filter(|w| w.status == 503 && w.detail == UNAVAILABLE)
        .collect();
    let unconfirmed: Vec<&Write> = log
        .iter()
        .filter(|w| w.detail == COMMIT_UNCONFIRMED)
        .collect();
    let done: Vec<&Write> = log.iter().filter(|w| w.status == 201).collect();
    for fault in [Link::Refused, Link::Partitioned] {
        assert!(
            failed.iter().any(|w| w.link == fault),
            "no write felt the {fault:?} database"
        );
    }
    let stored: std::collections::HashSet<String> = db
        .column("SELECT name FROM cluster_template")
        .await
        .into_iter()
        .collect();
    let lost: Vec<&str> = done
        .iter()
        .filter(|w| !stored.contains(&w.name))
        .map(|w| w.name.as_str())
        .collect();
    assert!(lost.is_empty(), "answered 201 and not stored: {lost:?}");
    let sneaked: Vec<&str> = failed
        .iter()
        .filter(|w| stored.contains(&w.name))
        .map(|w| w.name.as_str())
        .collect();
    assert!(
        sneaked.is_empty(),
        "answered 503 unavailable and committed anyway: {sneaked:?}"
    );
    let unconfirmed_stored = unconfirmed
        .iter()
        .filter(|w| stored.contains(&w.name))
        .count();
    println!(
        "database drill: {} writes by {WRITERS} clients, {} answered 201 (all stored), {} \
         answered 503 unavailable (none stored), {} answered 503 unconfirmed ({} of them \
         stored); slowest answer {slowest:.2?}; first success {:.2?} after the refused \
         database came back, {:.2?} after the partition healed",
        log.len(),
        done.len(),
        failed.len(),
        unconfirmed.len(),
        unconfirmed_stored,
        first_201_after_heal[0],
        first_201_after_heal[1],
    );
}
