//! The drills' side of RabbitMQ: the broker's address, and everything a relay published to a
//! drill's own exchange, counted by message id.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, ExchangeDeleteOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use serde_json::Value;

pub fn amqp_url() -> String {
    std::env::var("FLEETYARD_TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// `host:port` of the test broker.
pub fn broker_host_port() -> String {
    amqp_url()
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("host:port in the test broker's URL")
        .to_string()
}

/// The test broker's URL with its address replaced by `host_port` (a proxy's).
pub fn amqp_url_via(host_port: &str) -> String {
    amqp_url().replacen(&broker_host_port(), host_port, 1)
}

/// A name no other run uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// The message id of an oslo.messaging v2 envelope.
fn message_id(body: &[u8]) -> Option<String> {
    let envelope: Value = serde_json::from_slice(body).ok()?;
    let inner: Value = serde_json::from_str(envelope["oslo.message"].as_str()?).ok()?;
    inner["message_id"].as_str().map(String::from)
}

/// Takes every message waiting in the notification queues of `topic` (`<topic>.info` and
/// `<topic>.error`, declared by the relay), until none arrives for `idle`; how many times each
/// message id arrived. The queues and `exchange` are deleted afterwards.
pub async fn collect(exchange: &str, topic: &str, idle: Duration) -> HashMap<String, usize> {
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .expect("RabbitMQ must be reachable (./tox.sh starts it)");
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for priority in ["info", "error"] {
        let queue = format!("{topic}.{priority}");
        let channel = conn.create_channel().await.expect("channel");
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        if channel
            .queue_declare(queue.as_str().into(), passive, FieldTable::default())
            .await
            .is_err()
        {
            continue; // never declared: nothing was published with that priority
        }
        let mut consumer = channel
            .basic_consume(
                queue.as_str().into(),
                "fy-drill".into(),
                BasicConsumeOptions {
                    no_ack: true,
                    ..BasicConsumeOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("consume");
        while let Ok(Some(delivery)) = tokio::time::timeout(idle, consumer.next()).await {
            let delivery = delivery.expect("delivery");
            let id = message_id(&delivery.data).expect("an oslo v2 envelope with a message id");
            *by_id.entry(id).or_default() += 1;
        }
        let _ = channel
            .queue_delete(queue.as_str().into(), QueueDeleteOptions::default())
            .await;
    }
    if let Ok(channel) = conn.create_channel().await {
        let _ = channel
            .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
            .await;
    }
    by_id
}
