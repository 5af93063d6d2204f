//! Notifications end to end: the outbox, the relay and the real RabbitMQ (consumed with lapin).
//! Every test publishes to its own exchange; queues are per test too, except where a test checks
//! the literal `notifications.info` queue oslo listeners consume.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fleetyard::config::NotificationDriver;
use fleetyard::notify::relay::{Relay, RelayError, RelaySettings};
use fleetyard::store::{NewEvent, Store, Write};
use lapin::options::{BasicAckOptions, BasicGetOptions, ExchangeDeleteOptions, QueueDeleteOptions};
use lapin::{Channel, Connection, ConnectionProperties};
use serde_json::{json, Value};

use crate::helpers::{open_store, spawn_app, test_settings, Backend};

pub(crate) fn amqp_url() -> String {
    std::env::var("FLEETYARD_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A port nothing listens on: the broker "down".
const CLOSED_BROKER: &str = "amqp://guest:guest@127.0.0.1:1/%2f";

pub(crate) fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Relay settings for `messagingv2` to `exchange`/`topic` on `url`.
pub(crate) fn relay_settings(
    db_url: &str,
    url: &str,
    exchange: &str,
    topic: &str,
) -> RelaySettings {
    let mut s = test_settings(db_url);
    s.oslo_messaging_notifications.driver = NotificationDriver::Messagingv2;
    s.oslo_messaging_notifications.topics = topic.into();
    s.default.transport_url = fleetyard::config::Secret::new(url);
    s.default.control_exchange = exchange.into();
    RelaySettings::from_settings(&s).expect("valid relay settings")
}

/// A lapin connection for the test's side: consuming and cleaning up.
pub(crate) struct Broker {
    _conn: Connection,
    pub(crate) channel: Channel,
}

impl Broker {
    pub(crate) async fn connect() -> Broker {
        let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
            .await
            .expect("RabbitMQ must be reachable (./tox.sh starts it)");
        let channel = conn.create_channel().await.expect("channel");
        Broker {
            _conn: conn,
            channel,
        }
    }

    /// Takes up to `n` messages published to `exchange` from `queue`, waiting up to `wait`
    /// for them. Messages from other exchanges (other runs sharing an oslo queue) are left
    /// unacknowledged, so they go back to the queue when the channel closes.
    pub(crate) async fn take(
        &self,
        queue: &str,
        exchange: &str,
        n: usize,
        wait: Duration,
    ) -> Vec<Message> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut out = Vec::new();
        while out.len() < n && tokio::time::Instant::now() < deadline {
            let got = self
                .channel
                .basic_get(queue.into(), BasicGetOptions { no_ack: false })
                .await
                .expect("basic.get");
            let Some(m) = got else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let d = m.delivery;
            if d.exchange.as_str() != exchange {
                continue;
            }
            d.acker.ack(BasicAckOptions::default()).await.expect("ack");
            out.push(Message::from(&d));
        }
        out
    }

    /// Everything left in `queue` from `exchange` after a short settle.
    pub(crate) async fn rest(&self, queue: &str, exchange: &str) -> Vec<Message> {
        self.take(queue, exchange, usize::MAX, Duration::from_millis(500))
            .await
    }

    pub(crate) async fn delete(&self, exchange: &str, queue: Option<&str>) {
        if let Some(q) = queue {
            let _ = self
                .channel
                .queue_delete(q.into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = self
            .channel
            .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
            .await;
    }
}

/// One consumed message, decoded.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    routing_key: String,
    content_type: Option<String>,
    content_encoding: Option<String>,
    delivery_mode: Option<u8>,
    priority: Option<u8>,
    headers_len: Option<usize>,
    body: Value,
    /// `oslo.message`, parsed.
    pub(crate) inner: Value,
}

impl From<&lapin::message::Delivery> for Message {
    fn from(d: &lapin::message::Delivery) -> Message {
        let body: Value = serde_json::from_slice(&d.data).expect("the body is JSON");
        let inner = body["oslo.message"]
            .as_str()
            .map(|s| serde_json::from_str(s).expect("oslo.message holds JSON"))
            .unwrap_or(Value::Null);
        let p = &d.properties;
        Message {
            routing_key: d.routing_key.to_string(),
            content_type: p.content_type().as_ref().map(|s| s.to_string()),
            content_encoding: p.content_encoding().as_ref().map(|s| s.to_string()),
            delivery_mode: *p.delivery_mode(),
            priority: *p.priority(),
            headers_len: p.headers().as_ref().map(|h| h.inner().len()),
            body,
            inner,
        }
    }
}

impl Message {
    pub(crate) fn message_id(&self) -> String {
        self.inner["message_id"]
            .as_str()
            .expect("message_id")
            .to_string()
    }
    fn target_id(&self) -> String {
        self.inner["payload"]["target"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// Asserts what every oslo listener needs of a message, and that no token rides along.
#[track_caller]
pub(crate) fn assert_oslo_v2(m: &Message, routing_key: &str) {
    assert_eq!(m.routing_key, routing_key);
    assert_eq!(m.content_type.as_deref(), Some("application/json"));
    assert_eq!(m.content_encoding.as_deref(), Some("utf-8"));
    assert_eq!(m.delivery_mode, Some(2), "persistent");
    assert_eq!(m.priority, Some(0));
    assert_eq!(m.headers_len, Some(0), "an empty header table");
    assert_eq!(m.body["oslo.version"], "2.0");
    assert!(
        m.body["oslo.message"].is_string(),
        "oslo.message must be a JSON string: {}",
        m.body
    );
    assert_eq!(
        m.body.as_object().map(|o| o.len()),
        Some(2),
        "only the two envelope keys: {}",
        m.body
    );
    let inner = m.inner.as_object().expect("the inner message is an object");
    let id = inner["message_id"].as_str().expect("message_id");
    assert_eq!(
        uuid::Uuid::parse_str(id).expect("a uuid").get_version_num(),
        4
    );
    let ts = inner["timestamp"].as_str().expect("timestamp");
    assert!(
        chrono::NaiveDateTime::parse_from_str(ts, "%Y-%m-%d %H:%M:%S%.f").is_ok()
            && ts.len() == "2026-07-18 10:00:00.123456".len(),
        "oslo's timestamp format: {ts}"
    );
    for (k, v) in inner {
        if k.contains("token") {
            assert!(v.is_null(), "{k} carries a value: {v}");
        }
    }
}

#[tokio::test]
async fn cluster_template_create_update_and_delete_reach_notifications_info_as_oslo_v2() {
    let app = spawn_app().await;
    let exchange = unique("fy-test-ct");
    let created = app.make_template("notified", json!({})).await;
    let uuid = created["uuid"].as_str().expect("uuid").to_string();
    let r = app
        .patch(
            &format!("/v1/clustertemplates/{uuid}"),
            &json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.delete(&format!("/v1/clustertemplates/{uuid}")).await;
    assert_eq!(r.status, 204, "{}", r.text);
    let outbox: Vec<String> = app
        .store
        .pending_events(100)
        .await
        .expect("outbox")
        .iter()
        .map(|e| e.message_id.to_string())
        .collect();
    assert_eq!(outbox.len(), 3);

    let mut relay = Relay::new(
        app.store.clone(),
        relay_settings(&app.db.url, &amqp_url(), &exchange, "notifications"),
    );
    let report = relay.drain().await.expect("the relay delivers");
    assert_eq!((report.sent, report.failed, report.held), (3, 0, 0));
    assert!(app
        .store
        .pending_events(100)
        .await
        .expect("outbox")
        .is_empty());
    assert_eq!(
        app.store.outbox_backlog().await.expect("backlog"),
        (0, None)
    );

    // The queue oslo's notifier declares kept them, though no consumer was bound.
    let broker = Broker::connect().await;
    let got = broker
        .take("notifications.info", &exchange, 3, Duration::from_secs(10))
        .await;
    broker.delete(&exchange, None).await;
    assert_eq!(got.len(), 3, "three events: {got:?}");
    let ids: Vec<String> = got.iter().map(Message::message_id).collect();
    assert_eq!(ids, outbox, "the outbox's message ids, in order");
    for (m, action) in got.iter().zip(["create", "update", "delete"]) {
        assert_oslo_v2(m, "notifications.info");
        let i = &m.inner;
        assert_eq!(i["publisher_id"], "container-infra.test-host");
        assert_eq!(i["event_type"], format!("magnum.cluster_template.{action}"));
        assert_eq!(i["priority"], "INFO");
        assert_eq!(i["_context_project_id"], "project-a");
        assert_eq!(i["_context_user_id"], "user-a");
        let p = &i["payload"];
        assert_eq!(
            p["typeURI"],
            "http://schemas.dmtf.org/cloud/audit/1.0/event"
        );
        assert_eq!(p["eventType"], "activity");
        assert_eq!(p["action"], action);
        assert_eq!(p["outcome"], "success");
        assert!(
            chrono::DateTime::parse_from_str(
                p["eventTime"].as_str().expect("eventTime"),
                "%Y-%m-%dT%H:%M:%S%.f%z"
            )
            .is_ok(),
            "{}",
            p["eventTime"]
        );
        assert!(p["eventTime"]
            .as_str()
            .is_some_and(|t| t.ends_with("+0000")));
        assert_eq!(p["initiator"]["typeURI"], "service/security/account/user");
        assert_eq!(p["initiator"]["user_id"], "user-a");
        assert_eq!(p["initiator"]["project_id"], "project-a");
        assert_ne!(p["initiator"]["id"], "user-a", "a generated id");
        assert_eq!(p["target"]["typeURI"], "service/magnum/cluster_template");
        assert_eq!(p["target"]["id"], uuid.as_str());
        assert_eq!(p["observer"]["typeURI"], "service/magnum/cluster_template");
        let att = &p["target"]["attachments"][0];
        assert_eq!(att["typeURI"], "service/magnum/cluster_template");
        assert_eq!(att["name"], "cluster_template_data");
        assert_eq!(att["content"]["coe"], "kubernetes");
        assert_eq!(att["content"]["project_id"], "project-a");
    }
    assert_eq!(got[0].inner["payload"]["target"]["name"], "notified");
    assert_eq!(got[1].inner["payload"]["target"]["name"], "renamed");
    assert_eq!(
        got[1].inner["payload"]["target"]["attachments"][0]["content"]["name"],
        "renamed"
    );
}

#[tokio::test]
async fn events_written_while_the_broker_is_down_wait_and_then_arrive_once_in_order() {
    let app = spawn_app().await;
    let exchange = unique("fy-test-outage");
    let topic = unique("notifications");
    let mut down = Relay::new(
        app.store.clone(),
        relay_settings(&app.db.url, CLOSED_BROKER, &exchange, &topic),
    );
    assert!(
        matches!(down.run_once().await, Err(RelayError::Broker(_))),
        "an unreachable broker is an error"
    );

    // Writes go through while the broker is unreachable, and answer at once.
    let started = std::time::Instant::now();
    let a = app.make_template("a", json!({})).await["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    let b = app.make_template("b", json!({})).await["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    for (uuid, name) in [(&a, "a1"), (&b, "b1"), (&a, "a2"), (&a, "a3")] {
        let r = app
            .patch(
                &format!("/v1/clustertemplates/{uuid}"),
                &json!([{"op": "replace", "path": "/name", "value": name}]),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["name"], name);
        assert!(matches!(down.run_once().await, Err(RelayError::Broker(_))));
    }
    let r = app.delete(&format!("/v1/clustertemplates/{a}")).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the API never waits for the broker"
    );
    let pending = app.store.pending_events(100).await.expect("outbox");
    assert_eq!(pending.len(), 7);
    assert!(
        pending.iter().all(|e| e.attempts == 0),
        "nothing was claimed"
    );
    let (count, oldest) = app.store.outbox_backlog().await.expect("backlog");
    assert_eq!(count, 7);
    assert_eq!(oldest, Some(pending[0].created_at));

    // The broker is back.
    let mut up = Relay::new(
        app.store.clone(),
        relay_settings(&app.db.url, &amqp_url(), &exchange, &topic),
    );
    let report = up.drain().await.expect("delivered");
    assert_eq!((report.sent, report.failed), (7, 0));
    assert_eq!(up.drain().await.expect("idle").claimed, 0, "nothing twice");
    assert_eq!(
        app.store.outbox_backlog().await.expect("backlog"),
        (0, None)
    );

    let broker = Broker::connect().await;
    let queue = format!("{topic}.info");
    let got = broker
        .take(&queue, &exchange, 7, Duration::from_secs(10))
        .await;
    let extra = broker.rest(&queue, &exchange).await;
    broker.delete(&exchange, Some(&queue)).await;
    assert!(extra.is_empty(), "delivered once: {extra:?}");
    assert_eq!(got.len(), 7);
    for m in &got {
        assert_oslo_v2(m, &queue);
    }
    let mut delivered: Vec<String> = got.iter().map(Message::message_id).collect();
    delivered.sort();
    let mut expected: Vec<String> = pending.iter().map(|e| e.message_id.to_string()).collect();
    expected.sort();
    assert_eq!(delivered, expected, "every event, exactly once");
    for resource in [&a, &b] {
        let want: Vec<String> = pending
            .iter()
            .filter(|e| &e.resource_uuid == resource)
            .map(|e| e.message_id.to_string())
            .collect();
        let seen: Vec<String> = got
            .iter()
            .filter(|m| &m.target_id() == resource)
            .map(Message::message_id)
            .collect();
        assert_eq!(seen, want, "{resource}'s events in the order written");
    }
    let names: Vec<String> = got
        .iter()
        .filter(|m| m.target_id() == a)
        .map(|m| {
            m.inner["payload"]["target"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(names, ["a", "a1", "a2", "a3", "a3"]);
}

pub(crate) fn raw_event(resource: &str, seq: usize) -> NewEvent {
    let message_id = uuid::Uuid::new_v4();
    NewEvent {
        message_id,
        resource_type: "cluster".into(),
        resource_uuid: resource.into(),
        event_type: "magnum.cluster.update".into(),
        priority: "INFO".into(),
        message: json!({
            "message_id": message_id.to_string(),
            "publisher_id": "container-infra.test-host",
            "event_type": "magnum.cluster.update",
            "priority": "INFO",
            "payload": {"seq": seq, "resource": resource},
            "timestamp": "2026-07-18 10:00:00.000000",
        }),
    }
}

/// Two relays over one outbox: each event is delivered once, each resource's in order; each
/// relay goes round by round (`run_once`) or, as a running relay does, through its pipelined
/// backlog delivery (`deliver_backlog`).
async fn two_relays_race(backend: Backend, pipelined: bool) {
    let (store, db) = open_store(backend).await;
    let exchange = unique("fy-test-race");
    let topic = unique("notifications");
    const RESOURCES: usize = 12;
    const EVENTS: usize = 240;
    let resources: Vec<String> = (0..RESOURCES)
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    let writes: Vec<Write> = (0..EVENTS)
        .map(|i| Write::event(raw_event(&resources[(i * 7 + i / 5) % RESOURCES], i)))
        .collect();
    for chunk in writes.chunks(40) {
        store.commit(chunk).await.expect("events written");
    }
    let relay = |s: &Arc<dyn Store>| {
        let mut settings = relay_settings(&db.url, &amqp_url(), &exchange, &topic);
        settings.batch_size = 7;
        Relay::new(s.clone(), settings)
    };
    let run = |mut r: Relay, store: Arc<dyn Store>| async move {
        let mut sent = 0;
        loop {
            let report = if pipelined {
                r.deliver_backlog().await.expect("backlog")
            } else {
                r.run_once().await.expect("round")
            };
            sent += report.sent;
            assert_eq!(report.failed, 0);
            if report.claimed == 0 {
                if store.outbox_backlog().await.expect("backlog").0 == 0 {
                    return sent;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    let (first, second) = tokio::join!(
        tokio::spawn(run(relay(&store), store.clone())),
        tokio::spawn(run(relay(&store), store.clone())),
    );
    let (first, second) = (first.expect("relay 1"), second.expect("relay 2"));
    assert_eq!(first + second, EVENTS, "{first} + {second}");

    let broker = Broker::connect().await;
    let queue = format!("{topic}.info");
    let got = broker
        .take(&queue, &exchange, EVENTS, Duration::from_secs(20))
        .await;
    let extra = broker.rest(&queue, &exchange).await;
    broker.delete(&exchange, Some(&queue)).await;
    assert!(extra.is_empty(), "{} delivered twice", extra.len());
    assert_eq!(got.len(), EVENTS);
    let mut seen = vec![0usize; EVENTS];
    let mut last: HashMap<String, i64> = HashMap::new();
    for m in &got {
        let seq = m.inner["payload"]["seq"].as_u64().expect("seq") as usize;
        seen[seq] += 1;
        let resource = m.inner["payload"]["resource"].as_str().expect("resource");
        let prev = last.insert(resource.to_string(), seq as i64).unwrap_or(-1);
        assert!(prev < seq as i64, "{resource}: event {seq} after {prev}");
    }
    assert!(seen.iter().all(|n| *n == 1), "each event once: {seen:?}");
    eprintln!("relay 1 sent {first}, relay 2 sent {second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_racing_over_one_outbox_deliver_each_event_once_on_postgres() {
    two_relays_race(Backend::Postgres, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_delivering_their_backlog_pipelined_deliver_each_event_once_in_order_on_postgres(
) {
    two_relays_race(Backend::Postgres, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_delivering_their_backlog_pipelined_deliver_each_event_once_in_order_on_sqlite()
{
    two_relays_race(Backend::Sqlite, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_racing_over_one_outbox_deliver_each_event_once_on_sqlite() {
    two_relays_race(Backend::Sqlite, false).await;
}

/// Claims keep a resource's later events behind an earlier one another relay holds.
async fn claims_keep_resource_order(backend: Backend) {
    let (store, _db) = open_store(backend).await;
    let claim = Duration::from_secs(30);
    let (r1, r2) = ("r-1", "r-2");
    let events = [
        raw_event(r1, 1),
        raw_event(r1, 2),
        raw_event(r2, 3),
        raw_event(r1, 4),
    ];
    let writes: Vec<Write> = events.iter().cloned().map(Write::event).collect();
    store.commit(&writes).await.expect("written");
    let ids: Vec<i64> = store
        .pending_events(10)
        .await
        .expect("pending")
        .iter()
        .map(|e| e.id)
        .collect();
    let seqs = |v: &[fleetyard::store::OutboxEvent]| -> Vec<u64> {
        v.iter()
            .map(|e| e.message_json()["payload"]["seq"].as_u64().unwrap_or(0))
            .collect()
    };

    let a = store
        .claim_events("relay-a", 1, claim)
        .await
        .expect("claim");
    assert_eq!(seqs(&a), [1]);
    let b = store
        .claim_events("relay-b", 10, claim)
        .await
        .expect("claim");
    assert_eq!(
        seqs(&b),
        [3],
        "r-1's later events wait behind relay-a's claim"
    );
    assert!(store
        .claim_events("relay-c", 10, claim)
        .await
        .expect("claim")
        .is_empty());

    store
        .release_events("relay-a", &[ids[0]], true)
        .await
        .expect("released");
    let b = store
        .claim_events("relay-b", 10, claim)
        .await
        .expect("claim");
    assert_eq!(
        seqs(&b),
        [1, 2, 3, 4],
        "its own claim and the released rows"
    );
    assert_eq!(b[0].attempts, 1, "the failed attempt is counted");
    assert_eq!(b[1].attempts, 0);
    let (count, oldest) = store.outbox_backlog().await.expect("backlog");
    assert_eq!((count, oldest), (4, Some(b[0].created_at)));

    store
        .mark_events_sent(&[ids[0], ids[1]])
        .await
        .expect("sent");
    assert_eq!(store.outbox_backlog().await.expect("backlog").0, 2);
    // An expired claim is anyone's.
    store
        .release_events("relay-b", &[ids[2], ids[3]], false)
        .await
        .expect("released");
    let a = store
        .claim_events("relay-a", 10, Duration::ZERO)
        .await
        .expect("claim");
    assert_eq!(seqs(&a), [3, 4]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let c = store
        .claim_events("relay-c", 10, claim)
        .await
        .expect("claim");
    assert_eq!(seqs(&c), [3, 4], "relay-a's claim expired");
    // A release by someone who no longer holds the claim changes nothing.
    store
        .release_events("relay-a", &[ids[2], ids[3]], true)
        .await
        .expect("no-op");
    assert!(store
        .claim_events("relay-a", 10, claim)
        .await
        .expect("claim")
        .is_empty());
    store
        .mark_events_sent(&[ids[2], ids[3]])
        .await
        .expect("sent");
    assert_eq!(store.outbox_backlog().await.expect("backlog"), (0, None));
    assert!(store
        .claim_events("relay-a", 10, claim)
        .await
        .expect("claim")
        .is_empty());
}

#[tokio::test]
async fn claims_keep_a_resources_later_events_behind_an_earlier_claim_on_postgres() {
    claims_keep_resource_order(Backend::Postgres).await;
}

#[tokio::test]
async fn claims_keep_a_resources_later_events_behind_an_earlier_claim_on_sqlite() {
    claims_keep_resource_order(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_event_whose_queue_was_deleted_is_kept_and_delivered_after_redeclaring() {
    let (store, db) = open_store(Backend::Postgres).await;
    let exchange = unique("fy-test-returned");
    let topic = unique("notifications");
    let queue = format!("{topic}.info");
    let mut relay = Relay::new(
        store.clone(),
        relay_settings(&db.url, &amqp_url(), &exchange, &topic),
    );
    store
        .commit(&[Write::event(raw_event("r", 1))])
        .await
        .expect("written");
    assert_eq!(relay.drain().await.expect("sent").sent, 1);
    let broker = Broker::connect().await;
    assert_eq!(
        broker
            .take(&queue, &exchange, 1, Duration::from_secs(5))
            .await
            .len(),
        1
    );

    // Someone deletes the queue: the broker returns the next event as unroutable.
    broker
        .channel
        .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
        .await
        .expect("queue deleted");
    store
        .commit(&[
            Write::event(raw_event("r", 2)),
            Write::event(raw_event("r", 3)),
        ])
        .await
        .expect("written");
    let report = relay.run_once().await.expect("round");
    assert_eq!(
        (report.sent, report.failed, report.held),
        (0, 1, 1),
        "the later event of the resource waits too"
    );
    assert_eq!(store.outbox_backlog().await.expect("backlog").0, 2);
    let report = relay.drain().await.expect("round");
    assert_eq!(report.sent, 2, "declared again and delivered");
    let got = broker
        .take(&queue, &exchange, 2, Duration::from_secs(5))
        .await;
    broker.delete(&exchange, Some(&queue)).await;
    let seqs: Vec<u64> = got
        .iter()
        .map(|m| m.inner["payload"]["seq"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(seqs, [2, 3]);
}

#[tokio::test]
async fn the_log_and_noop_drivers_mark_events_sent() {
    for driver in [NotificationDriver::Log, NotificationDriver::Noop] {
        let (store, db) = open_store(Backend::Sqlite).await;
        store
            .commit(&[
                Write::event(raw_event("r", 1)),
                Write::event(raw_event("s", 2)),
            ])
            .await
            .expect("written");
        let mut s = test_settings(&db.url);
        s.oslo_messaging_notifications.driver = driver;
        let mut relay = Relay::new(
            store.clone(),
            RelaySettings::from_settings(&s).expect("settings"),
        );
        let report = relay.drain().await.expect("drained");
        assert_eq!((report.claimed, report.sent), (2, 2), "{driver:?}");
        assert_eq!(store.outbox_backlog().await.expect("backlog"), (0, None));
    }
}

#[tokio::test]
async fn the_first_reachable_broker_of_several_is_used() {
    let (store, db) = open_store(Backend::Sqlite).await;
    let exchange = unique("fy-test-hosts");
    let topic = unique("notifications");
    let queue = format!("{topic}.info");
    // oslo's form: the closed port first, then the real broker.
    let real = amqp_url();
    let rest = real.split_once("://").map(|(_, r)| r).unwrap_or("");
    let url = format!("rabbit://guest:guest@127.0.0.1:1,{rest}");
    let mut relay = Relay::new(
        store.clone(),
        relay_settings(&db.url, &url, &exchange, &topic),
    );
    store
        .commit(&[Write::event(raw_event("r", 1))])
        .await
        .expect("written");
    assert_eq!(relay.drain().await.expect("delivered").sent, 1);
    let broker = Broker::connect().await;
    let got = broker
        .take(&queue, &exchange, 1, Duration::from_secs(5))
        .await;
    broker.delete(&exchange, Some(&queue)).await;
    assert_eq!(got.len(), 1);
    assert_oslo_v2(&got[0], &queue);
}

#[tokio::test]
async fn sent_events_are_pruned_after_retention_and_pending_ones_never() {
    let (store, _db) = open_store(Backend::Postgres).await;
    store
        .commit(&[
            Write::event(raw_event("r", 1)),
            Write::event(raw_event("r", 2)),
        ])
        .await
        .expect("written");
    let first = store.pending_events(1).await.expect("pending")[0].id;
    store.mark_events_sent(&[first]).await.expect("sent");
    let later = chrono::Utc::now() + chrono::Duration::seconds(1);
    assert_eq!(store.prune_sent_events(later).await.expect("pruned"), 1);
    assert_eq!(store.outbox_backlog().await.expect("backlog").0, 1);
    assert_eq!(store.prune_sent_events(later).await.expect("pruned"), 0);
}

/// A message over PostgreSQL's TOAST threshold is stored compressed with lz4 where the server
/// has it, and comes back from the claim as written; after the claim and the "sent" update
/// it is stored in the same form. Half of each page is left for the claim's heap-only update.
#[tokio::test]
async fn a_large_message_is_stored_compressed_once_and_claimed_as_written() {
    let (store, db) = open_store(Backend::Postgres).await;
    let mut event = raw_event("big", 1);
    let labels: serde_json::Map<String, Value> = (0..60)
        .map(|i| {
            (
                format!("label_{i}"),
                json!(uuid::Uuid::new_v4().to_string()),
            )
        })
        .collect();
    event.message["payload"]["labels"] = Value::Object(labels);
    let written = event.message.clone();
    assert!(written.to_string().len() > 3000, "over the TOAST threshold");
    store.commit(&[Write::event(event)]).await.expect("written");

    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
        .await
        .expect("connects");
    let lz4: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_settings \
         WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))",
    )
    .fetch_one(&mut conn)
    .await
    .expect("settings");
    let stored = "SELECT pg_column_compression(message) FROM outbox WHERE resource_uuid = 'big'";
    let method: Option<String> = sqlx::query_scalar(stored)
        .fetch_one(&mut conn)
        .await
        .expect("stored form");
    if lz4 {
        assert_eq!(method.as_deref(), Some("lz4"));
    }

    let options: Vec<String> =
        sqlx::query_scalar("SELECT unnest(reloptions) FROM pg_class WHERE relname = 'outbox'")
            .fetch_all(&mut conn)
            .await
            .expect("options");
    assert_eq!(options, vec!["fillfactor=50".to_string()]);

    let claimed = store
        .claim_events("relay-a", 10, Duration::from_secs(30))
        .await
        .expect("claimed");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].message_json(), written);

    store
        .mark_events_sent(&[claimed[0].id])
        .await
        .expect("sent");
    let after: Option<String> = sqlx::query_scalar(stored)
        .fetch_one(&mut conn)
        .await
        .expect("stored form");
    assert_eq!(after, method, "the updates kept the stored form");
    let kept: Value = sqlx::query_scalar("SELECT message FROM outbox WHERE resource_uuid = 'big'")
        .fetch_one(&mut conn)
        .await
        .expect("message");
    assert_eq!(kept, written);
}

#[tokio::test]
async fn cluster_and_node_group_events_reach_the_broker_with_their_priority_routing() {
    use crate::helpers::{cluster_as, conductor, drain, instant, template_as, Api};
    let app = spawn_app().await;
    let h = app.headers.clone();
    let t = template_as(&app, "tpl", json!({}), &h).await;
    let c = cluster_as(&app, json!({"name": "k1", "cluster_template_id": t}), &h).await;
    drain(&conductor(&app, instant())).await;
    let r = app
        .with_headers(&h)
        .at("latest")
        .create_nodegroup(&c, &json!({"name": "ng1", "node_count": 1}))
        .await;
    assert!((200..300).contains(&r.status), "{}", r.text);
    drain(&conductor(&app, instant())).await;
    let failing = cluster_as(
        &app,
        json!({"name": "k2", "cluster_template_id": t, "labels": {"fake_fail": "create"}}),
        &h,
    )
    .await;
    drain(&conductor(&app, instant())).await;
    let r = app.with_headers(&h).at("latest").delete_cluster(&c).await;
    assert_eq!(r.status, 204, "{}", r.text);
    drain(&conductor(&app, instant())).await;

    let outbox = app.store.pending_events(10_000).await.expect("outbox");
    let types: std::collections::BTreeSet<&str> =
        outbox.iter().map(|e| e.event_type.as_str()).collect();
    eprintln!("event types: {types:?}");
    for t in [
        "magnum.cluster_template.create",
        "magnum.cluster.create",
        "magnum.cluster.delete",
        "magnum.nodegroup.create",
    ] {
        assert!(types.contains(t), "{t} among {types:?}");
    }
    assert!(
        outbox
            .iter()
            .any(|e| e.priority == "ERROR" && e.resource_uuid == failing),
        "the failed create is an ERROR event"
    );

    let exchange = unique("fy-test-clusters");
    let topic = unique("notifications");
    let mut relay = Relay::new(
        app.store.clone(),
        relay_settings(&app.db.url, &amqp_url(), &exchange, &topic),
    );
    let report = relay.drain().await.expect("delivered");
    assert_eq!((report.sent, report.failed), (outbox.len(), 0));

    let broker = Broker::connect().await;
    let mut got = Vec::new();
    for priority in ["info", "error"] {
        let queue = format!("{topic}.{priority}");
        let want = outbox
            .iter()
            .filter(|e| e.priority.to_lowercase() == priority)
            .count();
        let msgs = broker
            .take(&queue, &exchange, want, Duration::from_secs(10))
            .await;
        assert!(broker.rest(&queue, &exchange).await.is_empty(), "once");
        for m in &msgs {
            assert_oslo_v2(m, &queue);
        }
        got.extend(msgs);
        broker.delete(&exchange, Some(&queue)).await;
    }
    assert_eq!(got.len(), outbox.len());
    let by_id: HashMap<String, &Message> = got.iter().map(|m| (m.message_id(), m)).collect();
    for e in &outbox {
        let m = by_id
            .get(&e.message_id.to_string())
            .unwrap_or_else(|| panic!("{} {} not delivered", e.event_type, e.message_id));
        assert_eq!(m.inner["event_type"], e.event_type.as_str());
        assert_eq!(m.inner["priority"], e.priority.as_str());
        assert_eq!(m.inner["publisher_id"], "container-infra.test-host");
        assert_eq!(m.inner, e.message_json(), "the inner message as written");
        let p = &m.inner["payload"];
        let resource = e.event_type.split('.').nth(1).unwrap_or_default();
        assert_eq!(p["target"]["typeURI"], format!("service/magnum/{resource}"));
        let att = &p["target"]["attachments"][0];
        assert_eq!(att["name"], format!("{resource}_data"));
        if resource == "cluster" {
            assert!(
                att["content"].get("docker_volume_size:").is_some(),
                "Magnum's odd key: {}",
                att["content"]
            );
        }
        let outcome = p["outcome"].as_str().unwrap_or_default();
        assert_eq!(
            e.priority == "ERROR",
            outcome == "failure",
            "{} {outcome}",
            e.event_type
        );
    }
    // Per resource, the order written; across priorities too (one relay, rounds in order).
    for resource in outbox.iter().map(|e| &e.resource_uuid) {
        let written: Vec<String> = outbox
            .iter()
            .filter(|e| &e.resource_uuid == resource && e.priority == "INFO")
            .map(|e| e.message_id.to_string())
            .collect();
        let seen: Vec<String> = got
            .iter()
            .filter(|m| &m.target_id() == resource && m.inner["priority"] == "INFO")
            .map(Message::message_id)
            .collect();
        assert_eq!(seen, written, "{resource}");
    }
}

/// The drill of a network partition between the service and the broker (a TCP proxy of the
/// tests' own in front of RabbitMQ; the machine's broker is never touched): writes made during
/// the partition answer as fast as without one, and once the network heals every event is
/// delivered, duplicates (a publish the broker got but could not confirm) only ever with the
/// same message id.
#[tokio::test]
async fn a_broker_partition_slows_no_write_and_loses_no_event() {
    let app = spawn_app().await;
    let exchange = unique("fy-test-partition");
    let topic = unique("notifications");
    let upstream = amqp_url()
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("host:port in the test broker's URL")
        .to_string();
    let proxy = crate::helpers::DbProxy::start(&upstream).await;
    let through = amqp_url().replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
    let mut s = test_settings(&app.db.url);
    s.oslo_messaging_notifications.driver = NotificationDriver::Messagingv2;
    s.oslo_messaging_notifications.topics = topic.clone();
    // The shortest claim: a publish the partition swallows is given up after 1 s.
    s.oslo_messaging_notifications.relay_claim_timeout = 3;
    s.default.transport_url = fleetyard::config::Secret::new(&through);
    s.default.control_exchange = exchange.clone();
    let settings = RelaySettings::from_settings(&s).expect("valid relay settings");
    let mut relay = Relay::new(app.store.clone(), settings);

    // Connected and delivering before the partition.
    app.make_template("before", json!({})).await;
    let report = relay.drain().await.expect("delivered before the partition");
    assert_eq!((report.sent, report.failed), (1, 0));

    proxy.set(crate::helpers::Link::Partitioned);
    for i in 0..10 {
        let one = std::time::Instant::now();
        app.make_template(&format!("during-{i}"), json!({})).await;
        assert!(
            one.elapsed() < Duration::from_secs(2),
            "a write during the partition took {:?}",
            one.elapsed()
        );
    }
    // The relay keeps trying; a round ends within the confirm timeout (publish) plus the
    // connect timeout (the reconnection the partition also swallows).
    for _ in 0..2 {
        let attempt = tokio::time::timeout(Duration::from_secs(20), relay.run_once()).await;
        assert!(attempt.is_ok(), "a relay round hung during the partition");
    }
    let (backlog, _) = app.store.outbox_backlog().await.expect("backlog");
    assert!(
        backlog > 0,
        "events wait in the outbox during the partition"
    );

    proxy.set(crate::helpers::Link::Up);
    let mut sent = 0;
    for _ in 0..30 {
        if let Ok(Ok(r)) = tokio::time::timeout(Duration::from_secs(15), relay.drain()).await {
            sent += r.sent;
        }
        if app.store.outbox_backlog().await.expect("backlog").0 == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        app.store.outbox_backlog().await.expect("backlog"),
        (0, None),
        "every event is delivered once the network heals ({sent} sent after the heal)"
    );

    let broker = Broker::connect().await;
    let queue = format!("{topic}.info");
    let mut got = broker
        .take(&queue, &exchange, 11, Duration::from_secs(10))
        .await;
    got.extend(broker.rest(&queue, &exchange).await);
    broker.delete(&exchange, Some(&queue)).await;
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for m in &got {
        assert_oslo_v2(m, &queue);
        *by_id.entry(m.message_id()).or_default() += 1;
    }
    assert_eq!(
        by_id.len(),
        11,
        "each of the 11 events arrives (by message id): {by_id:?}"
    );
    let duplicates: usize = by_id.values().map(|n| n - 1).sum();
    assert_eq!(
        got.len(),
        11 + duplicates,
        "duplicates carry an event's own message id"
    );
}
