//! Outbox events for the notification modules' unit tests.

use serde_json::json;

use crate::store::OutboxEvent;

/// `v` as the raw JSON an outbox row holds.
pub(crate) fn raw(v: &serde_json::Value) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(v).expect("JSON")
}

/// An outbox event `id` about `resource`, with an empty message.
pub(crate) fn event(id: i64, resource: &str) -> OutboxEvent {
    OutboxEvent {
        id,
        message_id: uuid::Uuid::new_v4(),
        resource_uuid: resource.into(),
        event_type: "magnum.cluster.update".into(),
        priority: "INFO".into(),
        message: raw(&json!({})),
        created_at: chrono::Utc::now(),
        attempts: 0,
    }
}
