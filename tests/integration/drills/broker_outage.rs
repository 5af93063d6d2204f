//! The broker refused, then partitioned, under a steady stream of writes to `fleetyard serve`
//! (a TCP proxy of the tests' own between the service and RabbitMQ; the machine's broker is
//! never touched). Writes answer as fast as with the broker up; once it is back, every event
//! reaches the queues, a duplicate only ever with its event's own message id.
//!
//! Each fault lasts `FLEETYARD_DRILL_BROKER_SECONDS` (5 by default; `./tox.sh drills` runs a
//! minute of each).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::bus::{amqp_url_via, broker_host_port, collect, unique};
use super::db::{eventually, Db};
use super::process::{Env, Process, Role};
use crate::helpers::{open_store, Backend, DbProxy, Link};

const WRITERS: usize = 4;

/// One answered write: the network's state while it ran, its status and how long it took.
type Sample = (Link, u16, Duration);

fn fault_seconds() -> u64 {
    std::env::var("FLEETYARD_DRILL_BROKER_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
}

/// The median and the largest of `d`.
fn median_max(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    if d.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    (d[d.len() / 2], d[d.len() - 1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_refused_then_partitioned_slows_no_write_and_loses_no_event() {
    let seconds = fault_seconds();
    let (store, test_db) = open_store(Backend::Postgres).await;
    drop(store);
    let db = Db::open(&test_db.url).await;
    let proxy = DbProxy::start(&broker_host_port()).await;
    let exchange = unique("fy-drill-broker");
    let topic = unique("notifications");
    let env = Env::new(&test_db.url)
        .set("OSLO_MESSAGING_NOTIFICATIONS__DRIVER", "messagingv2")
        .set("OSLO_MESSAGING_NOTIFICATIONS__TOPICS", &topic)
        .set("OSLO_MESSAGING_NOTIFICATIONS__RELAY_CLAIM_TIMEOUT", 3)
        .set(
            "DEFAULT__TRANSPORT_URL",
            amqp_url_via(&format!("127.0.0.1:{}", proxy.port)),
        )
        .set("DEFAULT__CONTROL_EXCHANGE", &exchange)
        .set("FAKE_DRIVER__CREATE_SECONDS", 0);
    let serve = Process::start(Role::Serve, "serve", &env).await;
    let base = serve.url.clone().expect("url");

    let link = Arc::new(Mutex::new(Link::Up));
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let template = {
        let r = client
            .post(format!("{base}/v1/clustertemplates"))
            .json(&json!({"name": "base", "coe": "kubernetes", "image_id": "fedora-coreos-40"}))
            .send()
            .await
            .expect("answered");
        assert_eq!(r.status(), 201);
        let body: serde_json::Value = r.json().await.expect("json");
        body["uuid"].as_str().expect("uuid").to_string()
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (client, base, template) = (client.clone(), base.clone(), template.clone());
            let (link, samples, stopped) = (link.clone(), samples.clone(), stopped.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    if *stopped.borrow() {
                        break;
                    }
                    let state = *link.lock().expect("link");
                    let started = Instant::now();
                    let (path, body) = if i % 2 == 0 {
                        (
                            "/v1/clustertemplates",
                            json!({"name": format!("t{w}-{i}"), "coe": "kubernetes",
                                   "image_id": "fedora-coreos-40"}),
                        )
                    } else {
                        (
                            "/v1/clusters",
                            json!({"name": format!("c{w}-{i}"), "cluster_template_id": template,
                                   "node_count": 1}),
                        )
                    };
                    let status = match client
                        .post(format!("{base}{path}"))
                        .json(&body)
                        .send()
                        .await
                    {
                        Ok(r) => r.status().as_u16(),
                        Err(_) => 0,
                    };
                    samples
                        .lock()
                        .expect("samples")
                        .push((state, status, started.elapsed()));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        })
        .collect();

    let set = |state: Link| {
        *link.lock().expect("link") = state;
        proxy.set(state);
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    set(Link::Refused);
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    set(Link::Up);
    tokio::time::sleep(Duration::from_secs(2)).await;
    set(Link::Partitioned);
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    set(Link::Up);
    let healed = Instant::now();
    stop.send_replace(true);
    for w in writers {
        w.await.expect("writer");
    }

    // ---- No write failed or slowed ---------------------------------------------------------
    let samples = samples.lock().expect("samples").clone();
    let failed: Vec<&Sample> = samples
        .iter()
        .filter(|s| !matches!(s.1, 201 | 202))
        .collect();
    assert!(failed.is_empty(), "writes failed: {failed:?}");
    let mut report = Vec::new();
    for state in [Link::Up, Link::Refused, Link::Partitioned] {
        let times: Vec<Duration> = samples
            .iter()
            .filter(|s| s.0 == state)
            .map(|s| s.2)
            .collect();
        let n = times.len();
        let (median, max) = median_max(times);
        assert!(n > 0, "no write ran while the broker was {state:?}");
        assert!(
            max < Duration::from_secs(2),
            "a write took {max:?} while the broker was {state:?}"
        );
        report.push(format!(
            "{state:?}: {n} writes, median {median:?}, max {max:?}"
        ));
    }

    // ---- Every event delivered ---------------------------------------------------------------
    let drained = eventually(Duration::from_secs(120), || async {
        db.count("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL")
            .await
            == 0
    })
    .await;
    let recovered = healed.elapsed();
    assert!(
        drained,
        "events still in the outbox two minutes after the heal"
    );
    let written: HashSet<String> = db
        .column("SELECT message_id FROM outbox")
        .await
        .into_iter()
        .collect();
    let got = collect(&exchange, &topic, Duration::from_secs(2)).await;
    let missing: Vec<&String> = written.iter().filter(|id| !got.contains_key(*id)).collect();
    assert!(missing.is_empty(), "{} events never arrived", missing.len());
    let strangers: Vec<&String> = got.keys().filter(|id| !written.contains(*id)).collect();
    assert!(
        strangers.is_empty(),
        "messages with no event's id: {strangers:?}"
    );
    let duplicates: usize = got.values().map(|n| n - 1).sum();
    println!(
        "broker drill ({seconds} s refused, {seconds} s partitioned): {}; {} events, all \
         delivered, {duplicates} duplicates (same message id); outbox empty {recovered:.1?} \
         after the heal",
        report.join("; "),
        written.len()
    );
    drop(serve);
}
