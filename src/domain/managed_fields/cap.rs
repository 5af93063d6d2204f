//! The cap on `Update` entries (the API server's `capManagersManager`): past
//! [`MAX_UPDATE_MANAGERS`], the oldest update entries are merged into one `Update` entry named
//! [`ANCIENT_CHANGES`] per apiVersion. Apply entries are never merged.

use std::collections::BTreeMap;

use super::{ManagedEntry, ManagedFields, Operation};

/// How many `Update` entries an object keeps (`DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The entry the oldest updates are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// The manager identifier the API server sorts equal times by: the entry's JSON without its
/// fields and time, keys in `ManagedFieldsEntry`'s order, empty ones left out.
fn identifier(e: &ManagedEntry) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut parts = Vec::new();
    if !e.manager.is_empty() {
        parts.push(format!("\"manager\":{}", q(&e.manager)));
    }
    parts.push("\"operation\":\"Update\"".to_string());
    if !e.api_version.is_empty() {
        parts.push(format!("\"apiVersion\":{}", q(&e.api_version)));
    }
    if !e.subresource.is_empty() {
        parts.push(format!("\"subresource\":{}", q(&e.subresource)));
    }
    format!("{{{}}}", parts.join(","))
}

fn is_bucket(e: &ManagedEntry, version: &str) -> bool {
    e.manager == ANCIENT_CHANGES
        && e.operation == Operation::Update
        && e.subresource.is_empty()
        && e.api_version == version
}

impl ManagedFields {
    /// Merges the oldest `Update` entries (by time, then identifier) into
    /// [`ANCIENT_CHANGES`] of their apiVersion until at most `max` are left. As the API
    /// server does, the first entry of a version is kept until a second one of that version
    /// is merged; the bucket takes the time of the last entry merged into it.
    pub fn cap_updates(&mut self, max: usize) {
        let mut updaters: Vec<(i64, String)> = self
            .0
            .iter()
            .filter(|e| e.operation == Operation::Update)
            .map(|e| (e.time.map_or(0, |t| t.timestamp()), identifier(e)))
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort();
        let find = |m: &ManagedFields, id: &str| {
            m.0.iter()
                .position(|e| e.operation == Operation::Update && identifier(e) == id)
        };
        let mut first_of: BTreeMap<String, String> = BTreeMap::new();
        let mut length = updaters.len();
        for (_, id) in &updaters {
            if length <= max {
                break;
            }
            let Some(i) = find(self, id) else { continue };
            let version = self.0[i].api_version.clone();
            if is_bucket(&self.0[i], &version) {
                // The bucket is never merged into itself.
                first_of.entry(version).or_insert_with(|| id.clone());
                continue;
            }
            let Some(first) = first_of.get(&version).cloned() else {
                first_of.insert(version, id.clone());
                continue;
            };
            if !self.0.iter().any(|e| is_bucket(e, &version)) {
                // The first entry of the version becomes the bucket.
                if let Some(f) = find(self, &first) {
                    let e = &mut self.0[f];
                    e.manager = ANCIENT_CHANGES.to_string();
                    e.subresource = String::new();
                }
            }
            let Some(i) = find(self, id) else { continue };
            let Some(bucket) = self.0.iter().position(|e| is_bucket(e, &version)) else {
                continue;
            };
            let entry = self.0.remove(i);
            let bucket = if bucket > i { bucket - 1 } else { bucket };
            let b = &mut self.0[bucket];
            b.fields = b.fields.union(&entry.fields);
            b.time = entry.time;
            length -= 1;
        }
        self.sort();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FieldSet, PathElement};
    use super::*;
    use chrono::DateTime;

    const V: &str = "clusterregistry.k8s.io/v1alpha1";

    fn e(manager: &str, operation: Operation, at: i64) -> ManagedEntry {
        ManagedEntry {
            manager: manager.into(),
            operation,
            api_version: V.into(),
            time: DateTime::from_timestamp(1_800_000_000 + at, 0),
            fields_type: "FieldsV1".into(),
            fields: FieldSet(
                [vec![
                    PathElement::Field("metadata".into()),
                    PathElement::Field("labels".into()),
                    PathElement::Field(manager.into()),
                ]]
                .into_iter()
                .collect(),
            ),
            subresource: String::new(),
        }
    }

    fn names(m: &ManagedFields) -> Vec<String> {
        m.0.iter().map(|e| e.manager.clone()).collect()
    }

    #[test]
    fn ten_updates_are_kept_as_they_are() {
        let mut m = ManagedFields(
            (0..10)
                .map(|i| e(&format!("u{i:02}"), Operation::Update, i))
                .collect(),
        );
        let before = m.clone();
        m.cap_updates(MAX_UPDATE_MANAGERS);
        assert_eq!(m, before);
    }

    #[test]
    fn the_oldest_updates_merge_into_ancient_changes_and_applies_stay() {
        let mut entries: Vec<ManagedEntry> = (0..12)
            .map(|i| e(&format!("u{i:02}"), Operation::Update, i))
            .collect();
        entries.push(e("applier", Operation::Apply, 0));
        entries.push(e("late-applier", Operation::Apply, 20));
        let mut m = ManagedFields(entries);
        m.sort();
        m.cap_updates(MAX_UPDATE_MANAGERS);
        let updates: Vec<&ManagedEntry> =
            m.0.iter()
                .filter(|e| e.operation == Operation::Update)
                .collect();
        assert_eq!(updates.len(), 10, "{:?}", names(&m));
        // u00, u01, u02 are the oldest: one bucket holds their fields, at u02's time.
        let bucket = m.0.iter().find(|e| e.manager == ANCIENT_CHANGES);
        let Some(bucket) = bucket else {
            panic!("no bucket: {:?}", names(&m));
        };
        assert_eq!(
            bucket.fields.to_fields_v1(),
            serde_json::json!({"f:metadata": {"f:labels": {"f:u00": {}, "f:u01": {}, "f:u02": {}}}})
        );
        assert_eq!(bucket.time, DateTime::from_timestamp(1_800_000_002, 0));
        assert_eq!(bucket.api_version, V);
        for gone in ["u00", "u01", "u02"] {
            assert!(!names(&m).contains(&gone.to_string()), "{gone}");
        }
        assert_eq!(
            m.0.iter()
                .filter(|e| e.operation == Operation::Apply)
                .count(),
            2
        );
        // Another update past the cap goes into the same bucket.
        m.0.push(e("u99", Operation::Update, 30));
        m.cap_updates(MAX_UPDATE_MANAGERS);
        assert_eq!(
            m.0.iter()
                .filter(|e| e.operation == Operation::Update)
                .count(),
            10
        );
        assert_eq!(
            m.0.iter().filter(|e| e.manager == ANCIENT_CHANGES).count(),
            1
        );
        let bucket = m.0.iter().find(|e| e.manager == ANCIENT_CHANGES);
        assert!(
            bucket.is_some_and(|b| b.fields.0.len() == 4),
            "{:?}",
            names(&m)
        );
    }

    #[test]
    fn equal_times_are_ordered_by_manager() {
        let mut m = ManagedFields(
            ["k", "b", "j", "a", "c", "d", "e", "f", "g", "h", "i"]
                .iter()
                .map(|n| e(n, Operation::Update, 0))
                .collect(),
        );
        m.cap_updates(MAX_UPDATE_MANAGERS);
        let mut left = names(&m);
        left.sort();
        assert_eq!(
            left,
            [
                "ancient-changes",
                "c",
                "d",
                "e",
                "f",
                "g",
                "h",
                "i",
                "j",
                "k"
            ]
        );
    }
}
