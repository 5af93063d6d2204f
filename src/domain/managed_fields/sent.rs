//! The `metadata.managedFields` an update (create, replace, merge or JSON patch; not an
//! apply, not a subresource) carries itself, read as the API server reads it
//! (`decodeLiveOrNew`): a list that decodes replaces the live one as the update's base; an
//! absent list, or one that does not decode, keeps the live one (clients unaware of the field
//! neither strip nor break it); an empty list or one empty entry (`[]`, `[{}]`) resets it.
//! Then the entries the object is left with are checked as `ValidateManagedFields` checks
//! them.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{fields_v1_type, FieldSet, ManagedEntry, ManagedFields, Operation};

/// The longest field manager name (`FieldManagerMaxLength`).
pub const MAX_MANAGER_LENGTH: usize = 128;
/// The longest subresource name of an entry (`MaxSubresourceNameLength`).
pub const MAX_SUBRESOURCE_LENGTH: usize = 256;

/// What an update's own `metadata.managedFields` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// Absent, or not decodable: the live entries stay the base.
    Keep,
    /// `[]` or `[{}]`: no entries at all.
    Reset,
    /// A list that decodes: it is the base.
    Replace(ManagedFields),
}

impl Sent {
    /// Reads the `metadata.managedFields` value of a request object (`None` when absent).
    pub fn read(list: Option<&Value>) -> Sent {
        let Some(Value::Array(items)) = list else {
            return Sent::Keep;
        };
        if items.is_empty() || (items.len() == 1 && is_zero_entry(&items[0])) {
            return Sent::Reset;
        }
        let mut out: Vec<ManagedEntry> = Vec::with_capacity(items.len());
        for item in items {
            let Some(e) = decode_entry(item) else {
                return Sent::Keep;
            };
            // One entry per manager identity; a later one replaces an earlier one.
            out.retain(|o| !same_identity(o, &e));
            out.push(e);
        }
        let mut m = ManagedFields(out);
        m.sort();
        Sent::Replace(m)
    }

    /// The entries an update starts from, given the live ones.
    pub fn base(self, live: &ManagedFields) -> ManagedFields {
        match self {
            Sent::Keep => live.clone(),
            Sent::Reset => ManagedFields::default(),
            // The live list read back (as a patch carries it) is the live list itself.
            Sent::Replace(m) if wire_equal(&m, live) => live.clone(),
            Sent::Replace(m) => m,
        }
    }
}

fn wire_equal(a: &ManagedFields, b: &ManagedFields) -> bool {
    match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Whether two entries are the same manager's: name, operation, subresource, and for an
/// update its apiVersion (an applier is one manager across versions).
fn same_identity(a: &ManagedEntry, b: &ManagedEntry) -> bool {
    a.manager == b.manager
        && a.operation == b.operation
        && a.subresource == b.subresource
        && (a.operation == Operation::Apply || a.api_version == b.api_version)
}

/// `{}`, or an entry whose every field is unset or empty (Go's zero `ManagedFieldsEntry`).
fn is_zero_entry(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.values().all(|v| match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            _ => false,
        })
    })
}

fn opt_str<'a>(o: &'a serde_json::Map<String, Value>, key: &str) -> Option<Option<&'a str>> {
    match o.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(s.as_str())),
        Some(_) => None,
    }
}

/// One entry as `DecodeManagedFields` takes it: operation `Apply` or `Update`, an apiVersion,
/// fieldsType `FieldsV1`, a `FieldsV1` set (absent: none) and an RFC 3339 time if any.
fn decode_entry(v: &Value) -> Option<ManagedEntry> {
    let o = v.as_object()?;
    let operation = match opt_str(o, "operation")? {
        Some("Apply") => Operation::Apply,
        Some("Update") => Operation::Update,
        _ => return None,
    };
    let api_version = opt_str(o, "apiVersion")?.filter(|s| !s.is_empty())?;
    if opt_str(o, "fieldsType")? != Some("FieldsV1") {
        return None;
    }
    let fields = match o.get("fieldsV1") {
        None | Some(Value::Null) => FieldSet::default(),
        Some(f) => FieldSet::from_fields_v1(f)?,
    };
    let time = match opt_str(o, "time")? {
        None => None,
        Some(t) => Some(DateTime::parse_from_rfc3339(t).ok()?.with_timezone(&Utc)),
    };
    Some(ManagedEntry {
        manager: opt_str(o, "manager")?.unwrap_or("").to_string(),
        operation,
        api_version: api_version.to_string(),
        time,
        fields_type: fields_v1_type(),
        fields,
        subresource: opt_str(o, "subresource")?.unwrap_or("").to_string(),
    })
}

/// What is wrong with one field of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Longer than this many bytes.
    TooLong(usize),
    /// The value is not allowed, for this reason.
    Invalid { value: String, detail: String },
}

/// The entries' problems as `ValidateManagedFields` finds them, each with its field path
/// (`metadata.managedFields[0].manager`), in order.
pub fn validate(m: &ManagedFields) -> Vec<(String, Problem)> {
    let mut out = Vec::new();
    for (i, e) in m.0.iter().enumerate() {
        let at = |f: &str| format!("metadata.managedFields[{i}].{f}");
        if !e.fields_type.is_empty() && e.fields_type != "FieldsV1" {
            out.push((
                at("fieldsType"),
                Problem::Invalid {
                    value: e.fields_type.clone(),
                    detail: "must be `FieldsV1`".into(),
                },
            ));
        }
        if e.manager.len() > MAX_MANAGER_LENGTH {
            out.push((at("manager"), Problem::TooLong(MAX_MANAGER_LENGTH)));
        }
        for (pos, c) in e.manager.char_indices() {
            if c.is_control() || (c.is_whitespace() && c != ' ') {
                out.push((
                    at("manager"),
                    Problem::Invalid {
                        value: e.manager.clone(),
                        detail: format!("invalid character U+{:04X} (at position {pos})", c as u32),
                    },
                ));
            }
        }
        if e.subresource.len() > MAX_SUBRESOURCE_LENGTH {
            out.push((at("subresource"), Problem::TooLong(MAX_SUBRESOURCE_LENGTH)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{ManagerId, Schema, OBJECT_META_LISTS, UNTRACKED};
    use super::*;
    use serde_json::json;

    const SCHEMA: Schema = Schema {
        lists: OBJECT_META_LISTS,
        untracked: UNTRACKED,
    };
    const V: &str = "clusterregistry.k8s.io/v1alpha1";

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap_or_default()
    }

    fn entry(manager: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": "Update", "apiVersion": V,
            "time": "2027-01-15T08:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn live() -> ManagedFields {
        let mut m = ManagedFields::default();
        m.update(
            &SCHEMA,
            &json!({}),
            &json!({"metadata": {"labels": {"a": "1"}}}),
            &ManagerId::new("creator", Operation::Update, ""),
            V,
            t(0),
        );
        m
    }

    fn managers(m: &ManagedFields) -> Vec<&str> {
        m.0.iter().map(|e| e.manager.as_str()).collect()
    }

    /// `manager`'s update of label `b` recorded on what `sent` leaves of [`live`].
    fn update_b(sent: Sent, manager: &str) -> ManagedFields {
        ManagedFields::record_update(
            &live(),
            sent,
            true,
            &SCHEMA,
            &json!({"metadata": {"labels": {"a": "1"}}}),
            &json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            &ManagerId::new(manager, Operation::Update, ""),
            V,
            t(5),
        )
    }

    #[test]
    fn a_sent_list_that_decodes_is_the_base_of_the_update() {
        let sent = Sent::read(Some(&json!([entry(
            "chosen",
            json!({"f:metadata": {"f:labels": {"f:a": {}}}})
        )])));
        let m = update_b(sent, "labeller");
        assert_eq!(managers(&m), ["chosen", "labeller"]);
        assert_eq!(
            m.0[0].fields.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:a": {}}}})
        );
        assert_eq!(m.0[0].time, Some(t(0)));
        assert_eq!(
            m.0[1].fields.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:b": {}}}})
        );
    }

    #[test]
    fn an_absent_or_undecodable_list_keeps_the_live_entries() {
        for sent in [
            None,
            Some(json!(null)),
            Some(
                json!([{"manager": "x", "operation": "Bogus", "apiVersion": V,
                "fieldsType": "FieldsV1", "fieldsV1": {}}]),
            ),
            Some(
                json!([{"manager": "x", "operation": "Update", "apiVersion": V,
                "fieldsType": "", "fieldsV1": {}}]),
            ),
            Some(json!([{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1"}])),
            Some(
                json!([{"manager": "x", "operation": "Update", "apiVersion": V,
                "fieldsType": "FieldsV1", "fieldsV1": {"x:y": {}}}]),
            ),
        ] {
            let read = Sent::read(sent.as_ref());
            assert_eq!(read, Sent::Keep, "{sent:?}");
            let m = update_b(read, "labeller");
            assert_eq!(managers(&m), ["creator", "labeller"], "{sent:?}");
        }
    }

    #[test]
    fn an_empty_list_or_one_empty_entry_resets_and_tracking_stops() {
        for sent in [
            json!([]),
            json!([{}]),
            json!([{"manager": "", "fieldsV1": null}]),
        ] {
            assert_eq!(Sent::read(Some(&sent)), Sent::Reset, "{sent}");
            // The object exists and has no entries left: the update is not tracked.
            assert!(update_b(Sent::Reset, "labeller").is_empty());
        }
        // Two empty entries are no reset: they do not decode, the live entries stay.
        assert_eq!(Sent::read(Some(&json!([{}, {}]))), Sent::Keep);
        // A create from a reset list is tracked.
        let created = ManagedFields::record_update(
            &ManagedFields::default(),
            Sent::Reset,
            false,
            &SCHEMA,
            &json!({}),
            &json!({"spec": {"x": 1}}),
            &ManagerId::new("creator", Operation::Update, ""),
            V,
            t(0),
        );
        assert_eq!(managers(&created), ["creator"]);
    }

    #[test]
    fn the_live_list_read_back_is_the_live_list() {
        let l = live();
        let wire = serde_json::to_value(&l).unwrap_or_default();
        assert_eq!(Sent::read(Some(&wire)).base(&l), l);
    }

    #[test]
    fn entries_are_validated_as_the_api_server_does() {
        let long = "m".repeat(129);
        let sent = Sent::read(Some(&json!([
            entry(&long, json!({"f:spec": {}})),
            entry("bell\u{7}", json!({"f:spec": {}})),
        ])));
        let Sent::Replace(m) = sent else {
            panic!("decodes: {sent:?}");
        };
        let problems = validate(&m);
        assert_eq!(
            problems,
            vec![
                (
                    "metadata.managedFields[0].manager".to_string(),
                    Problem::Invalid {
                        value: "bell\u{7}".into(),
                        detail: "invalid character U+0007 (at position 4)".into()
                    }
                ),
                (
                    "metadata.managedFields[1].manager".to_string(),
                    Problem::TooLong(MAX_MANAGER_LENGTH)
                ),
            ]
        );
        assert!(validate(&live()).is_empty());
    }
}
