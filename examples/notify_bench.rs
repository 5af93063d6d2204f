//! Notification delivery on the real broker: lapin's raw confirmed-publish rate, the relay's
//! throughput (claim, publish, confirm, mark sent) and commit-to-consumer latency.
//!
//!     cargo run --release --example notify_bench -- --pg-url postgres://postgres@127.0.0.1:5432/postgres
//!
//! It makes (and drops) its own database next to `--pg-url`, and its own exchange and queue on
//! `--amqp-url`. Figures are from one run on a shared machine: compare the ratios.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use fleetyard::config::{NotificationDriver, Secret, Settings};
use fleetyard::notify::events::{self, Action, Initiator, Outcome, Target};
use fleetyard::notify::relay::{Relay, RelaySettings};
use fleetyard::store::{Store, Write};
use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions,
    ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties, ExchangeKind};
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// An admin URL of the PostgreSQL server; the bench creates its own database beside it.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    amqp_url: String,
    /// Events for the throughput runs.
    #[arg(long, default_value_t = 20_000)]
    events: usize,
    /// Resources the events are spread over.
    #[arg(long, default_value_t = 1_000)]
    resources: usize,
    /// Relay batch (and the raw publisher's confirm window).
    #[arg(long, default_value_t = 100)]
    batch: u32,
    /// Events committed one at a time for the latency runs.
    #[arg(long, default_value_t = 1_000)]
    latency_events: usize,
    /// Commit rate of the latency runs, events per second.
    #[arg(long, default_value_t = 200)]
    rate: u32,
    /// Runs of each measurement; the figures are their medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

struct Bench {
    args: Args,
    store: Arc<dyn Store>,
    db_url: String,
    exchange: String,
    topic: String,
    conn: Connection,
    arrivals: Arrivals,
    /// Every delivery the consumer saw.
    delivered: Arc<AtomicUsize>,
}

fn sample_event(resource: &str, seq: usize) -> fleetyard::store::NewEvent {
    let initiator = Initiator {
        user_id: Some("bench-user".into()),
        project_id: Some("bench-project".into()),
        roles: vec!["member".into()],
        request_id: Some(format!("req-{seq}")),
        ..Initiator::default()
    };
    // A cluster-sized attachment, like Magnum's cluster_data.
    let content = json!({
        "status": "UPDATE_IN_PROGRESS", "status_reason": null, "project_id": "bench-project",
        "created_at": "2026-07-18T09:59:59.000000", "updated_at": null,
        "cluster_template_id": "0b6b7c3e-5a51-4a3e-9a0f-0f0f0f0f0f0f", "keypair": "bench",
        "docker_volume_size:": 10, "labels": {"kube_tag": "v1.30.1", "seq": seq.to_string()},
        "master_flavor_id": "m1.medium", "flavor_id": "m1.small", "stack_id": null,
        "health_status": null, "create_timeout": 60, "api_address": null, "discovery_url": null,
        "node_addresses": ["10.0.0.11", "10.0.0.12"], "master_addresses": ["10.0.0.10"],
        "node_count": 2, "master_count": 1
    });
    events::build(
        "bench-host",
        Action::Update,
        Outcome::Pending,
        Target {
            resource_type: "cluster",
            uuid: resource.to_string(),
            name: "bench".into(),
            content,
        },
        Some(&initiator),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Bench {
    fn queue(&self) -> String {
        format!("{}.info", self.topic)
    }

    /// A relay with the default settings but for the exchange, topic and batch, on `store`.
    fn relay(&self, store: Arc<dyn Store>) -> anyhow::Result<Relay> {
        let mut s = Settings::default();
        s.database.connection = Secret::new(&self.db_url);
        s.default.host = "bench-host".into();
        s.default.transport_url = Secret::new(&self.args.amqp_url);
        s.default.control_exchange = self.exchange.clone();
        s.oslo_messaging_notifications.driver = NotificationDriver::Messagingv2;
        s.oslo_messaging_notifications.topics = self.topic.clone();
        s.oslo_messaging_notifications.relay_batch_size = self.args.batch;
        let settings = RelaySettings::from_settings(&s)?;
        Ok(Relay::new(store, settings))
    }

    async fn fill(&self, n: usize) -> anyhow::Result<()> {
        let writes: Vec<Write> = (0..n)
            .map(|i| {
                let r = format!("00000000-0000-4000-8000-{:012}", i % self.args.resources);
                Write::event(sample_event(&r, i))
            })
            .collect();
        for chunk in writes.chunks(500) {
            self.store.commit(chunk).await?;
        }
        Ok(())
    }

    async fn wait_arrivals(&self, n: usize, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        while self.arrivals.lock().map(|a| a.len()).unwrap_or(0) < n {
            if Instant::now() > deadline {
                anyhow::bail!("only some messages arrived in {limit:?}");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    fn clear_arrivals(&self) {
        if let Ok(mut a) = self.arrivals.lock() {
            a.clear();
        }
    }

    /// lapin alone: confirmed publishes of the same bodies in windows of `batch`.
    async fn raw_publish(&self, n: usize) -> anyhow::Result<f64> {
        let channel = self.conn.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let body = serde_json::to_vec(&json!({
            "oslo.version": "2.0",
            "oslo.message": sample_event("00000000-0000-4000-8000-000000000000", 0).message.to_string(),
        }))?;
        let props = BasicProperties::default()
            .with_content_type("application/json".into())
            .with_content_encoding("utf-8".into())
            .with_delivery_mode(2)
            .with_priority(0)
            .with_headers(FieldTable::default());
        let key = self.queue();
        let started = Instant::now();
        let mut sent = 0;
        while sent < n {
            let window = (self.args.batch as usize).min(n - sent);
            let mut confirms = Vec::with_capacity(window);
            for _ in 0..window {
                confirms.push(
                    channel
                        .basic_publish(
                            self.exchange.as_str().into(),
                            key.as_str().into(),
                            BasicPublishOptions::default(),
                            &body,
                            props.clone(),
                        )
                        .await?,
                );
            }
            for c in confirms {
                anyhow::ensure!(c.await?.is_ack(), "nacked");
            }
            sent += window;
        }
        let rate = n as f64 / started.elapsed().as_secs_f64();
        channel.close(200, "done".into()).await?;
        Ok(rate)
    }

    /// Fills the outbox, then times `relays` relays draining it as a running relay does
    /// (`Relay::deliver_backlog`).
    async fn relay_throughput(&self, n: usize, relays: usize) -> anyhow::Result<(f64, f64)> {
        let mut set = Vec::new();
        for _ in 0..relays {
            let mut relay = self.relay(self.store.clone())?;
            // Connected before the clock starts, as a running relay is (the outbox is empty).
            relay.run_once().await?;
            set.push(relay);
        }
        self.fill(n).await?;
        self.clear_arrivals();
        let started = Instant::now();
        let mut tasks = Vec::new();
        for mut relay in set {
            let store = self.store.clone();
            tasks.push(tokio::spawn(async move {
                loop {
                    let r = relay.deliver_backlog().await?;
                    if r.claimed == 0 {
                        if store.outbox_backlog().await?.0 == 0 {
                            return Ok::<_, anyhow::Error>(());
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await??;
        }
        let relayed = started.elapsed();
        self.wait_arrivals(n, Duration::from_secs(120)).await?;
        let consumed = started.elapsed();
        Ok((
            n as f64 / relayed.as_secs_f64(),
            n as f64 / consumed.as_secs_f64(),
        ))
    }

    /// A running relay with the default settings on `store`; events committed one at a time
    /// at `rate`; commit-to-arrival times.
    async fn latency(&self, store: Arc<dyn Store>) -> anyhow::Result<Vec<Duration>> {
        self.clear_arrivals();
        let relay = self.relay(store)?;
        let task = tokio::spawn(relay.run());
        // Let the relay connect first.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut committed: Vec<(String, Instant)> = Vec::with_capacity(self.args.latency_events);
        let gap = Duration::from_secs_f64(1.0 / f64::from(self.args.rate.max(1)));
        let mut next = tokio::time::Instant::now();
        for i in 0..self.args.latency_events {
            tokio::time::sleep_until(next).await;
            next += gap;
            let r = format!("10000000-0000-4000-8000-{:012}", i % self.args.resources);
            let e = sample_event(&r, i);
            let id = e.message_id.to_string();
            self.store.commit(&[Write::event(e)]).await?;
            committed.push((id, Instant::now()));
        }
        self.wait_arrivals(committed.len(), Duration::from_secs(60))
            .await?;
        // Stop the relay between rounds: one stopped after publishing but before marking would
        // hold its claims (and those resources' next events) for the claim timeout.
        while self.store.outbox_backlog().await?.0 > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        task.abort();
        let arrivals = self
            .arrivals
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?;
        let mut lat: Vec<Duration> = committed
            .iter()
            .filter_map(|(id, t)| arrivals.get(id).map(|a| a.saturating_duration_since(*t)))
            .collect();
        lat.sort();
        Ok(lat)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // The relay's warnings (broker trouble) show on stderr; RUST_LOG overrides.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let name = format!(
        "fy_notify_bench_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&args.pg_url)
        .await
        .context("--pg-url: cannot connect")?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await?;
    let base = args
        .pg_url
        .rsplit_once('/')
        .map(|(b, _)| b)
        .unwrap_or(&args.pg_url);
    let db_url = format!("{base}/{name}");
    let result = run(args, db_url).await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    result
}

async fn run(args: Args, db_url: String) -> anyhow::Result<()> {
    let store = fleetyard::store::connect(&db_url, 8).await?;
    store.migrate().await?;
    let conn = Connection::connect(&args.amqp_url, ConnectionProperties::default())
        .await
        .context("--amqp-url: cannot connect")?;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let bench = Bench {
        args,
        store,
        db_url,
        exchange: format!("fy-bench-{}", &suffix[..12]),
        topic: format!("bench-{}", &suffix[..12]),
        conn,
        arrivals: Arc::new(Mutex::new(HashMap::new())),
        delivered: Arc::new(AtomicUsize::new(0)),
    };
    // The same exchange and queue the relay declares (oslo's arguments).
    let admin = bench.conn.create_channel().await?;
    admin
        .exchange_declare(
            bench.exchange.as_str().into(),
            ExchangeKind::Topic,
            ExchangeDeclareOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let queue = bench.queue();
    admin
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await?;
    admin
        .queue_bind(
            queue.as_str().into(),
            bench.exchange.as_str().into(),
            queue.as_str().into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    // The consumer: timestamps each arrival by message_id.
    let consumer_channel = bench.conn.create_channel().await?;
    let mut consumer = consumer_channel
        .basic_consume(
            queue.as_str().into(),
            "notify-bench".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    let arrivals = bench.arrivals.clone();
    let delivered = bench.delivered.clone();
    let consuming = tokio::spawn(async move {
        while let Some(Ok(d)) = consumer.next().await {
            let now = Instant::now();
            delivered.fetch_add(1, Ordering::SeqCst);
            let id = serde_json::from_slice::<serde_json::Value>(&d.data)
                .ok()
                .and_then(|b| b["oslo.message"].as_str().map(String::from))
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|m| m["message_id"].as_str().map(String::from));
            if let (Some(id), Ok(mut a)) = (id, arrivals.lock()) {
                a.insert(id, now);
            }
        }
    });

    let n = bench.args.events;
    let body_len = serde_json::to_vec(&json!({
        "oslo.version": "2.0",
        "oslo.message": sample_event("00000000-0000-4000-8000-000000000000", 0).message.to_string(),
    }))?
    .len();
    let runs = bench.args.runs.max(1);
    let (mut raw, mut one, mut one_e2e, mut two, mut two_e2e) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let before = bench.delivered.load(Ordering::SeqCst);
        raw.push(bench.raw_publish(n).await?);
        // The raw messages all carry one message id: wait until the consumer has them all.
        let deadline = Instant::now() + Duration::from_secs(120);
        while bench.delivered.load(Ordering::SeqCst) < before + n {
            anyhow::ensure!(Instant::now() < deadline, "raw messages did not all arrive");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (r, e) = bench.relay_throughput(n, 1).await?;
        one.push(r);
        one_e2e.push(e);
        let (r, e) = bench.relay_throughput(n, 2).await?;
        two.push(r);
        two_e2e.push(e);
    }
    // The relay of a `serve` process (the writer's own store, woken in process), and the
    // relay of a separate process (its own pool, woken through LISTEN/NOTIFY).
    let mut same = Vec::new();
    let mut other = Vec::new();
    for _ in 0..runs {
        same.extend(bench.latency(bench.store.clone()).await?);
        let own = fleetyard::store::connect(&bench.db_url, 2).await?;
        other.extend(bench.latency(own).await?);
    }
    same.sort();
    other.sort();
    let (raw, one, one_e2e, two, two_e2e) = (
        median(raw),
        median(one),
        median(one_e2e),
        median(two),
        median(two_e2e),
    );

    println!(
        "notification delivery (PostgreSQL + RabbitMQ on loopback, medians of {runs} runs)\n  \
         {n} events of {body_len} bytes over {} resources, batch/confirm window {}\n",
        bench.args.resources, bench.args.batch
    );
    println!(
        "  {:<58} {:>10}",
        "throughput to the same exchange", "msg/s"
    );
    println!(
        "  {:<58} {:>10.0}",
        "lapin raw confirmed publish (same window)", raw
    );
    println!(
        "  {:<58} {:>10.0}  ({:.2}x raw, target >= 0.80x; consumer saw all at {:.0}/s)",
        "relay, 1 process: claim + publish + confirm + mark sent",
        one,
        one / raw,
        one_e2e
    );
    println!(
        "  {:<58} {:>10.0}  ({:.2}x raw; consumer saw all at {:.0}/s)",
        "relay, 2 processes sharing the outbox",
        two,
        two / raw,
        two_e2e
    );
    println!(
        "\n  commit-to-consumer latency, default settings, {} events committed one by one at {}/s \
         ({runs} runs pooled; target p99 < 50 ms):",
        bench.args.latency_events, bench.args.rate
    );
    for (label, lat) in [
        ("relay in the writer's process (woken in process)", &same),
        ("relay in another process (woken by LISTEN/NOTIFY)", &other),
    ] {
        println!(
            "  {:<50} p50 {:>6.1} ms   p90 {:>6.1} ms   p99 {:>6.1} ms   max {:>7.1} ms   (n={})",
            label,
            ms(percentile(lat, 0.50)),
            ms(percentile(lat, 0.90)),
            ms(percentile(lat, 0.99)),
            ms(percentile(lat, 1.0)),
            lat.len()
        );
    }
    println!(
        "NOTIFY_JSON {}",
        json!({
            "raw_msgs_per_s": raw, "relay_msgs_per_s": one, "relay_ratio": one / raw,
            "relay2_msgs_per_s": two,
            "latency_same_p50_ms": ms(percentile(&same, 0.50)),
            "latency_same_p99_ms": ms(percentile(&same, 0.99)),
            "latency_listen_p50_ms": ms(percentile(&other, 0.50)),
            "latency_listen_p99_ms": ms(percentile(&other, 0.99)),
        })
    );

    consuming.abort();
    let _ = admin
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await;
    let _ = admin
        .exchange_delete(
            bench.exchange.as_str().into(),
            ExchangeDeleteOptions::default(),
        )
        .await;
    let _ = bench.conn.close(200, "done".into()).await;
    Ok(())
}
