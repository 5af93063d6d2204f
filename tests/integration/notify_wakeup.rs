//! The relay at broker speed: a commit wakes it (no short poll), and a batch is marked sent
//! only for what the broker confirmed. Consumed from the real RabbitMQ with lapin.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fleetyard::notify::relay::Relay;
use fleetyard::store::{Store, Write};
use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::ExchangeKind;
use serde_json::json;

use crate::helpers::{open_store, spawn_with, Backend};
use crate::notify::{amqp_url, raw_event, relay_settings, unique, Broker, Message};

/// Far longer than any wait below: an event that arrives in time was woken for.
const FALLBACK_POLL: Duration = Duration::from_secs(60);

impl Broker {
    /// Declares `exchange` as the relay does (oslo's topic exchange) and `queue` bound to it
    /// with `key`, with the given queue arguments.
    async fn bind(&self, exchange: &str, queue: &str, key: &str, args: FieldTable) {
        self.channel
            .exchange_declare(
                exchange.into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("exchange declared");
        self.channel
            .queue_declare(queue.into(), QueueDeclareOptions::default(), args)
            .await
            .expect("queue declared");
        self.channel
            .queue_bind(
                queue.into(),
                exchange.into(),
                key.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("queue bound");
    }
}

/// The next message, within 10 s.
async fn next(consumer: &mut lapin::Consumer) -> Message {
    let d = tokio::time::timeout(Duration::from_secs(10), consumer.next())
        .await
        .expect("the relay was not woken: an event waited for the fallback poll")
        .expect("the consumer is open")
        .expect("a delivery");
    Message::from(&d)
}

/// A running relay (fallback poll 60 s) on `relay_store`; templates created through the API
/// reach a consumer within a few seconds each, so the commit woke the relay.
async fn a_commit_wakes_the_relay(backend: Backend, separate_store: bool) {
    let app = spawn_with(backend, |_| {}).await;
    let exchange = unique("fy-test-wake");
    let topic = unique("notifications");
    let queue = format!("{topic}.info");
    let broker = Broker::connect().await;
    broker
        .bind(&exchange, &queue, &queue, FieldTable::default())
        .await;
    let mut consumer = broker
        .channel
        .basic_consume(
            queue.as_str().into(),
            "wake-test".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("consuming");
    // The relay of another process: its own pool, nothing shared with the API's store.
    let relay_store: Arc<dyn Store> = if separate_store {
        fleetyard::store::connect(&app.db.url, 2)
            .await
            .expect("a second store")
    } else {
        app.store.clone()
    };
    let mut settings = relay_settings(&app.db.url, &amqp_url(), &exchange, &topic);
    settings.poll_interval = FALLBACK_POLL;
    let relay = tokio::spawn(Relay::new(relay_store, settings).run());

    let mut latencies = Vec::new();
    for i in 0..6 {
        let started = Instant::now();
        let created = app.make_template(&format!("woken-{i}"), json!({})).await;
        let m = next(&mut consumer).await;
        let latency = started.elapsed();
        assert_eq!(m.inner["event_type"], "magnum.cluster_template.create");
        assert_eq!(
            m.inner["payload"]["target"]["id"], created["uuid"],
            "the event of this commit"
        );
        assert_eq!(
            m.inner["payload"]["target"]["name"],
            format!("woken-{i}").as_str()
        );
        latencies.push(latency);
        // An idle relay between two commits.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    relay.abort();
    broker.delete(&exchange, Some(&queue)).await;
    eprintln!("commit-to-consumer: {latencies:?}");
    // The first wakes a relay that may still be opening its connections.
    let slowest = latencies[1..].iter().max().copied().unwrap_or_default();
    assert!(
        slowest < Duration::from_secs(3),
        "woken by the commit, not the {FALLBACK_POLL:?} poll: {latencies:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_commit_wakes_a_relay_of_another_store_through_postgresql_notify() {
    a_commit_wakes_the_relay(Backend::Postgres, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_commit_wakes_the_relay_of_the_same_process_on_sqlite() {
    a_commit_wakes_the_relay(Backend::Sqlite, false).await;
}

/// A second queue bound to the relay's routing key refuses publishes past two messages
/// (`x-overflow: reject-publish`): the broker nacks the rest of the batch. Only the two
/// confirmed events are marked sent; the others stay pending and go out again, with their
/// own message ids, once that queue is gone.
#[tokio::test]
async fn nacked_events_of_a_batch_stay_pending_and_are_resent_with_their_message_ids() {
    let (store, db) = open_store(Backend::Postgres).await;
    let exchange = unique("fy-test-nack");
    let topic = unique("notifications");
    let queue = format!("{topic}.info");
    let full = unique("fy-test-full");
    let broker = Broker::connect().await;
    let mut args = FieldTable::default();
    args.insert(ShortString::from("x-max-length"), AMQPValue::LongInt(2));
    args.insert(
        ShortString::from("x-overflow"),
        AMQPValue::LongString("reject-publish".into()),
    );
    broker.bind(&exchange, &full, &queue, args).await;

    let events: Vec<_> = (0..5)
        .map(|i| raw_event(&format!("resource-{i}"), i))
        .collect();
    let ids: Vec<String> = events.iter().map(|e| e.message_id.to_string()).collect();
    store
        .commit(&events.into_iter().map(Write::event).collect::<Vec<_>>())
        .await
        .expect("written");
    let mut relay = Relay::new(
        store.clone(),
        relay_settings(&db.url, &amqp_url(), &exchange, &topic),
    );
    let report = relay.run_once().await.expect("a round");
    assert_eq!(
        (report.claimed, report.sent, report.failed, report.held),
        (5, 2, 3, 0),
        "one batch: two confirmed, three nacked"
    );
    let pending = store.pending_events(100).await.expect("outbox");
    let pending_ids: Vec<String> = pending.iter().map(|e| e.message_id.to_string()).collect();
    assert_eq!(pending_ids, ids[2..], "the nacked events wait, in order");
    assert!(
        pending.iter().all(|e| e.attempts == 1),
        "one failed attempt each: {pending:?}"
    );

    broker
        .channel
        .queue_delete(full.as_str().into(), QueueDeleteOptions::default())
        .await
        .expect("the full queue is gone");
    let report = relay.drain().await.expect("resent");
    assert_eq!((report.sent, report.failed), (3, 0));
    assert_eq!(store.outbox_backlog().await.expect("backlog"), (0, None));

    // The relay's own queue got every publish: the first round's five, then the three again.
    let got = broker
        .take(&queue, &exchange, 8, Duration::from_secs(10))
        .await;
    let extra = broker.rest(&queue, &exchange).await;
    broker.delete(&exchange, Some(&queue)).await;
    assert!(extra.is_empty(), "nothing more: {extra:?}");
    let seen: Vec<String> = got.iter().map(Message::message_id).collect();
    assert_eq!(seen[..5], ids[..], "the first round, in outbox order");
    assert_eq!(
        seen[5..],
        ids[2..],
        "the resend carries the same message ids"
    );
}
