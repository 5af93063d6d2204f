//! The oslo.messaging v2 envelope every notification is published in: the inner message (as
//! stored in the outbox) carried as a JSON *string* under `oslo.message`.

use serde_json::json;

use crate::store::OutboxEvent;

/// The oslo.messaging v2 envelope: the inner message as a JSON *string*.
pub fn envelope(event: &OutboxEvent) -> serde_json::Value {
    json!({"oslo.version": "2.0", "oslo.message": event.message.get()})
}

/// The same envelope as published: its JSON bytes, written in one pass with the stored inner
/// message escaped as it is copied (no parse, no intermediate string or map). JSON text holds
/// no raw control characters (serde_json and PostgreSQL's `jsonb` output both escape them), so
/// `"` and `\` are all a JSON string must escape in it.
pub fn envelope_bytes(event: &OutboxEvent) -> Result<Vec<u8>, serde_json::Error> {
    struct Escaped<'a>(&'a mut Vec<u8>);
    impl std::io::Write for Escaped<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            for &b in buf {
                if b == b'"' || b == b'\\' {
                    self.0.push(b'\\');
                }
                self.0.push(b);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let raw = event.message.get().as_bytes();
    let mut body = Vec::with_capacity(raw.len() + raw.len() / 8 + 48);
    // serde_json's map order, as `envelope` serialises.
    body.extend_from_slice(br#"{"oslo.message":""#);
    std::io::Write::write_all(&mut Escaped(&mut body), raw).map_err(serde_json::Error::io)?;
    body.extend_from_slice(br#"","oslo.version":"2.0"}"#);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::fixtures::{event, raw};

    #[test]
    fn the_envelope_bytes_are_the_serialised_envelope() {
        let mut e = event(1, "a");
        e.message = raw(&json!({
            "event_type": "magnum.cluster.create",
            "payload": {"name": "quote \" back \\ slash", "nl": "a\nb\tc\u{1}", "é": "ü🦀"},
            "n": [1, 2.5, null, true]
        }));
        let bytes = envelope_bytes(&e).expect("serialises");
        assert_eq!(
            bytes,
            serde_json::to_vec(&envelope(&e)).expect("serialises")
        );
        let back: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        let inner: serde_json::Value =
            serde_json::from_str(back["oslo.message"].as_str().expect("a string")).expect("JSON");
        assert_eq!(inner, e.message_json());
    }

    #[test]
    fn a_message_stored_as_postgresql_prints_jsonb_is_published_as_stored() {
        // `jsonb` output: spaces after separators, escaped control characters and quotes.
        let text = r#"{"event_type": "magnum.cluster.create", "payload": {"name": "a \"b\" \\ c\nd", "n": [1, 2.5, null]}}"#;
        let mut e = event(1, "a");
        e.message = serde_json::value::RawValue::from_string(text.to_string()).expect("JSON");
        let bytes = envelope_bytes(&e).expect("serialises");
        let back: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(back["oslo.version"], "2.0");
        assert_eq!(
            back["oslo.message"].as_str(),
            Some(text),
            "the stored text, unchanged"
        );
        let inner: serde_json::Value =
            serde_json::from_str(back["oslo.message"].as_str().expect("a string")).expect("JSON");
        assert_eq!(inner["payload"]["name"], "a \"b\" \\ c\nd");
    }

    #[test]
    fn the_envelope_carries_the_inner_message_as_a_string() {
        let mut e = event(1, "a");
        e.message = raw(&json!({"event_type": "magnum.cluster.create", "priority": "INFO"}));
        let env = envelope(&e);
        assert_eq!(env["oslo.version"], "2.0");
        let inner = env["oslo.message"].as_str().expect("a string");
        let parsed: serde_json::Value = serde_json::from_str(inner).expect("JSON");
        assert_eq!(parsed, e.message_json());
    }
}
