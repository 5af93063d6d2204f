//! Field ownership (`metadata.managedFields`) as the Kubernetes API server keeps it with
//! structured-merge-diff: every writer (a field manager, with its operation `Apply` or
//! `Update` and its subresource) owns a set of field paths.
//!
//! - An **apply** owns exactly the fields of its applied configuration. Changing a value
//!   another manager owns is a conflict unless forced (then the other manager loses it); a
//!   field the applier owned before, left out of its new configuration and owned by no one
//!   else, is removed from the object.
//! - An **update** (create, replace, merge or JSON patch) takes the fields it added or changed
//!   from every other manager, without conflicts.
//! - A field removed from the object is owned by no one.
//!
//! Objects are JSON trees with a [`Schema`]: objects are granular maps (each key its own
//! field, as struct fields and `labels`/`annotations` are); lists are atomic (owned as one
//! field) unless the schema names them a set (`metadata.finalizers`) or a map keyed by some
//! of their items' fields (`metadata.ownerReferences` by `uid`). Field sets are written in
//! the API server's `FieldsV1` form (`{"f:metadata":{"f:labels":{".":{},"f:env":{}}}}`) and
//! paths in its conflict form (`.metadata.labels.env`).

mod cap;
mod fieldset;
mod last_applied;
mod sent;
mod tree;

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

pub use cap::{ANCIENT_CHANGES, MAX_UPDATE_MANAGERS};
pub use fieldset::{path_string, FieldSet, Path, PathElement};
pub use last_applied::{
    allowed_conflicts, last_applied_of, refresh_last_applied, KUBECTL_MANAGER,
    LAST_APPLIED_ANNOTATION, TOTAL_ANNOTATION_SIZE_LIMIT,
};
pub use sent::{validate, Problem, Sent, MAX_MANAGER_LENGTH, MAX_SUBRESOURCE_LENGTH};
pub use tree::{
    compare, merge, remove_path, to_field_set, Comparison, ListKind, Schema, OBJECT_META_LISTS,
    UNTRACKED,
};

/// `Apply` or `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Operation {
    Apply,
    Update,
}

/// The name the API server gives the fields an object had before its first apply, when it
/// had no managed fields.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// A manager's identity: what makes two writes the same manager's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    /// Empty for the main resource.
    pub subresource: String,
}

impl ManagerId {
    pub fn new(manager: &str, operation: Operation, subresource: &str) -> ManagerId {
        ManagerId {
            manager: manager.to_string(),
            operation,
            subresource: subresource.to_string(),
        }
    }
}

fn is_empty_str(s: &str) -> bool {
    s.is_empty()
}

fn kube_time<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Secs, true)),
        None => s.serialize_none(),
    }
}

fn fields_v1_type() -> String {
    "FieldsV1".into()
}

/// One `metadata.managedFields` entry, in its wire form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedEntry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    #[serde(
        default,
        serialize_with = "kube_time",
        skip_serializing_if = "Option::is_none"
    )]
    pub time: Option<DateTime<Utc>>,
    #[serde(default = "fields_v1_type")]
    pub fields_type: String,
    #[serde(rename = "fieldsV1", default)]
    pub fields: FieldSet,
    #[serde(default, skip_serializing_if = "is_empty_str")]
    pub subresource: String,
}

impl ManagedEntry {
    fn is(&self, id: &ManagerId) -> bool {
        self.manager == id.manager
            && self.operation == id.operation
            && self.subresource == id.subresource
    }

    /// How a conflict names the manager: `"kubectl"`, or for an update
    /// `"kubectl-edit" using clusterregistry.k8s.io/v1alpha1`.
    pub fn printed(&self) -> String {
        let mut s = quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// One field another manager owns and an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The manager as a conflict names it ([`ManagedEntry::printed`]).
    pub manager: String,
    pub path: Path,
}

/// The API server's message for apply conflicts.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager,
            path_string(&one.path)
        );
    }
    let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in conflicts {
        by_manager
            .entry(&c.manager)
            .or_default()
            .push(path_string(&c.path));
    }
    let mut lines = Vec::new();
    for (m, paths) in by_manager {
        lines.push(format!("conflicts with {m}:"));
        lines.extend(paths.into_iter().map(|p| format!("- {p}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The managed fields of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ManagedFields(pub Vec<ManagedEntry>);

impl ManagedFields {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn position(&self, id: &ManagerId) -> Option<usize> {
        self.0.iter().position(|e| e.is(id))
    }

    /// In the API server's order: applies first, then by time, manager, version, subresource.
    fn sort(&mut self) {
        self.0.sort_by(|p, q| {
            p.operation
                .cmp(&q.operation)
                .then(
                    p.time
                        .map(|t| t.timestamp())
                        .cmp(&q.time.map(|t| t.timestamp())),
                )
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
    }

    /// Every manager but `except` loses `lost`; managers left with nothing are dropped.
    fn take_from_others(&mut self, except: Option<&ManagerId>, lost: &FieldSet) {
        for e in self.0.iter_mut() {
            if except.is_some_and(|id| e.is(id)) {
                continue;
            }
            e.fields = e.fields.difference(lost);
        }
        self.0.retain(|e| !e.fields.is_empty());
    }

    /// Records an update (create, replace, patch) by `id` from `old` to `new` at `now`: the
    /// fields it added or changed become its own and no one else's, removed fields no one's.
    /// `old` is `{}` for a create.
    pub fn update(
        &mut self,
        schema: &Schema,
        old: &Value,
        new: &Value,
        id: &ManagerId,
        api_version: &str,
        now: DateTime<Utc>,
    ) {
        let c = compare(schema, old, new);
        let taken = c.added.union(&c.modified);
        self.take_from_others(None, &taken.union(&c.removed));
        if !taken.is_empty() {
            match self.position(id) {
                Some(i) => {
                    let e = &mut self.0[i];
                    e.fields = e.fields.union(&taken);
                    e.api_version = api_version.to_string();
                    e.time = Some(now);
                }
                None => self.0.push(ManagedEntry {
                    manager: id.manager.clone(),
                    operation: id.operation,
                    api_version: api_version.to_string(),
                    time: Some(now),
                    fields_type: fields_v1_type(),
                    fields: taken,
                    subresource: id.subresource.clone(),
                }),
            }
        }
        self.sort();
        self.cap_updates(MAX_UPDATE_MANAGERS);
    }

    /// An update as the API server records it: from the entries the request `sent` (or the
    /// live ones), then, unless the object exists and has no entries (the API server tracks no
    /// fields of such an object until its first apply), [`ManagedFields::update`].
    #[allow(clippy::too_many_arguments)]
    pub fn record_update(
        live: &ManagedFields,
        sent: Sent,
        exists: bool,
        schema: &Schema,
        old: &Value,
        new: &Value,
        id: &ManagerId,
        api_version: &str,
        now: DateTime<Utc>,
    ) -> ManagedFields {
        let mut m = sent.base(live);
        if m.is_empty() && exists {
            return m;
        }
        m.update(schema, old, new, id, api_version, now);
        m
    }

    /// Server-side apply of `applied` by `id` to `live` (`{}` when the object does not exist
    /// yet, `exists` false): the merged object, with the fields the applier dropped and no one
    /// else owns removed, or the conflicts when it changes another manager's fields and
    /// `force` is off (with `force`, the other managers lose them). An existing object without
    /// managed fields first has its fields given to [`BEFORE_FIRST_APPLY`].
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        schema: &Schema,
        live: &Value,
        exists: bool,
        applied: &Value,
        id: &ManagerId,
        api_version: &str,
        force: bool,
        now: DateTime<Utc>,
    ) -> Result<Value, Vec<Conflict>> {
        let mut next = self.clone();
        if next.is_empty() && exists {
            next.update(
                schema,
                &Value::Object(Map::new()),
                live,
                &ManagerId::new(BEFORE_FIRST_APPLY, Operation::Update, ""),
                api_version,
                now,
            );
        }
        let last = next
            .position(id)
            .map(|i| next.0[i].fields.clone())
            .unwrap_or_default();
        let set = to_field_set(schema, applied);
        match next.position(id) {
            Some(i) => next.0[i].fields = set.clone(),
            None => next.0.push(ManagedEntry {
                manager: id.manager.clone(),
                operation: id.operation,
                api_version: api_version.to_string(),
                time: None,
                fields_type: fields_v1_type(),
                fields: set.clone(),
                subresource: id.subresource.clone(),
            }),
        }
        let mut merged = merge(schema, live, applied);
        // What the applier gave up and no one owns (itself included, or under it) goes.
        let dropped = last.difference(&set);
        for p in dropped.0.iter().rev() {
            if !next.0.iter().any(|e| e.fields.covers(p)) {
                remove_path(schema, &mut merged, p);
            }
        }
        let c = compare(schema, live, &merged);
        let changed = c.added.union(&c.modified);
        let mut conflicts = Vec::new();
        let mut lost: Vec<(usize, FieldSet)> = Vec::new();
        for (i, e) in next.0.iter().enumerate() {
            if e.is(id) {
                continue;
            }
            let hit = e.fields.intersection(&changed);
            if !hit.is_empty() {
                conflicts.extend(hit.0.iter().map(|p| Conflict {
                    manager: e.printed(),
                    path: p.clone(),
                }));
                lost.push((i, hit));
            }
        }
        if !force && !conflicts.is_empty() {
            conflicts.sort_by(|a, b| a.manager.cmp(&b.manager).then(a.path.cmp(&b.path)));
            return Err(conflicts);
        }
        for (i, hit) in lost {
            next.0[i].fields = next.0[i].fields.difference(&hit);
        }
        next.take_from_others(Some(id), &c.removed);
        let changed_object = merged != *live;
        if let Some(i) = next.position(id) {
            let before = self.position(id).map(|j| &self.0[j]);
            let entry = &mut next.0[i];
            let same = before.is_some_and(|b| b.fields == entry.fields);
            entry.time = if changed_object || !same {
                Some(now)
            } else {
                before.and_then(|b| b.time)
            };
            entry.api_version = api_version.to_string();
        }
        next.sort();
        *self = next;
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
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

    fn f(s: &str) -> PathElement {
        PathElement::Field(s.into())
    }

    fn applier(m: &str) -> ManagerId {
        ManagerId::new(m, Operation::Apply, "")
    }

    /// `manager`'s apply of `applied` onto `live` (`exists`: the object is stored), at `at`.
    fn apply(
        m: &mut ManagedFields,
        live: &Value,
        exists: bool,
        applied: &Value,
        manager: &str,
        force: bool,
        at: DateTime<Utc>,
    ) -> Result<Value, Vec<Conflict>> {
        m.apply(
            &SCHEMA,
            live,
            exists,
            applied,
            &applier(manager),
            V,
            force,
            at,
        )
    }

    fn fields_of(m: &ManagedFields, manager: &str) -> Value {
        m.0.iter()
            .find(|e| e.manager == manager)
            .map(|e| e.fields.to_fields_v1())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn field_sets_round_trip_through_fields_v1() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:env": {}},
            "f:finalizers": {".": {}, "v:\"a/b\"": {}},
            "f:ownerReferences": {"k:{\"uid\":\"u1\"}": {".": {}, "f:kind": {}}}},
            "f:spec": {"f:x": {}}});
        let set = FieldSet::from_fields_v1(&v).unwrap_or_default();
        assert!(set.contains(&[f("metadata"), f("labels")]));
        assert!(set.contains(&[
            f("metadata"),
            f("finalizers"),
            PathElement::Value("\"a/b\"".into())
        ]));
        assert!(!set.contains(&[f("metadata")]));
        assert_eq!(set.to_fields_v1(), v);
        assert_eq!(FieldSet::from_fields_v1(&json!({"x:y": {}})), None);
        assert_eq!(
            path_string(&[
                f("metadata"),
                f("ownerReferences"),
                PathElement::Key(vec![("uid".into(), "\"u1\"".into())]),
                f("kind")
            ]),
            ".metadata.ownerReferences[uid=\"u1\"].kind"
        );
    }

    #[test]
    fn an_applied_configuration_owns_its_leaves_and_list_items() {
        let set = to_field_set(
            &SCHEMA,
            &json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
                "spec": {"eps": [{"a": 1}], "auth": {"user": {"kind": "S"}}}}),
        );
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:a": {}}, "f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {"f:eps": {}, "f:auth": {"f:user": {"f:kind": {}}}}})
        );
    }

    #[test]
    fn an_update_owns_what_it_added_or_changed_with_the_maps_it_made() {
        let mut m = ManagedFields::default();
        let create = ManagerId::new("kubectl-create", Operation::Update, "");
        m.update(
            &SCHEMA,
            &json!({}),
            &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}}),
            &create,
            V,
            t(0),
        );
        assert_eq!(
            fields_of(&m, "kubectl-create"),
            json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {".": {}, "f:x": {}}})
        );
        let label = ManagerId::new("kubectl-label", Operation::Update, "");
        m.update(
            &SCHEMA,
            &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}}),
            &json!({"metadata": {"labels": {"a": "2", "b": "1"}}, "spec": {"x": 1}}),
            &label,
            V,
            t(1),
        );
        assert_eq!(
            fields_of(&m, "kubectl-label"),
            json!({"f:metadata": {"f:labels": {"f:a": {}, "f:b": {}}}})
        );
        assert_eq!(
            fields_of(&m, "kubectl-create"),
            json!({"f:metadata": {"f:labels": {}}, "f:spec": {".": {}, "f:x": {}}})
        );
        assert_eq!(m.0[1].time, Some(t(1)));
        // An update that changes nothing records nothing.
        let before = m.clone();
        m.update(
            &SCHEMA,
            &json!({"spec": {"x": 1}}),
            &json!({"spec": {"x": 1}}),
            &ManagerId::new("other", Operation::Update, ""),
            V,
            t(2),
        );
        assert_eq!(m, before);
    }

    #[test]
    fn two_appliers_share_equal_values_and_conflict_on_different_ones() {
        let mut m = ManagedFields::default();
        let live = apply(
            &mut m,
            &json!({}),
            false,
            &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}}),
            "one",
            false,
            t(0),
        )
        .unwrap_or_default();
        let live = apply(
            &mut m,
            &live,
            true,
            &json!({"metadata": {"labels": {"b": "2"}}, "spec": {"x": 1}}),
            "two",
            false,
            t(1),
        )
        .unwrap_or_default();
        assert_eq!(
            live,
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": 1}})
        );
        assert_eq!(
            fields_of(&m, "two"),
            json!({"f:metadata": {"f:labels": {"f:b": {}}}, "f:spec": {"f:x": {}}})
        );
        let err = apply(
            &mut m,
            &live,
            true,
            &json!({"spec": {"x": 2}}),
            "two",
            false,
            t(2),
        )
        .err()
        .unwrap_or_default();
        assert_eq!(
            conflict_message(&err),
            "Apply failed with 1 conflict: conflict with \"one\": .spec.x"
        );
        // Forced, the field moves: "one" keeps its label only.
        let live = apply(
            &mut m,
            &live,
            true,
            &json!({"spec": {"x": 2}}),
            "two",
            true,
            t(3),
        )
        .unwrap_or_default();
        assert_eq!(
            live,
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 2}})
        );
        assert_eq!(
            fields_of(&m, "one"),
            json!({"f:metadata": {"f:labels": {"f:a": {}}}})
        );
        assert_eq!(fields_of(&m, "two"), json!({"f:spec": {"f:x": {}}}));
    }

    #[test]
    fn a_dropped_field_goes_unless_someone_else_owns_it() {
        let mut m = ManagedFields::default();
        let live = apply(
            &mut m,
            &json!({}),
            false,
            &json!({"metadata": {"labels": {"a": "1", "s": "1"}}, "spec": {"x": 1}}),
            "one",
            false,
            t(0),
        )
        .unwrap_or_default();
        let live = apply(
            &mut m,
            &live,
            true,
            &json!({"metadata": {"labels": {"s": "1"}}}),
            "two",
            false,
            t(1),
        )
        .unwrap_or_default();
        let live = apply(
            &mut m,
            &live,
            true,
            &json!({"spec": {"x": 1}}),
            "one",
            false,
            t(2),
        )
        .unwrap_or_default();
        assert_eq!(
            live,
            json!({"metadata": {"labels": {"s": "1"}}, "spec": {"x": 1}})
        );
        assert_eq!(
            fields_of(&m, "two"),
            json!({"f:metadata": {"f:labels": {"f:s": {}}}})
        );
    }

    #[test]
    fn several_conflicts_are_listed_by_manager() {
        let mut m = ManagedFields::default();
        m.update(
            &SCHEMA,
            &json!({}),
            &json!({"spec": {"x": 1, "y": 1}}),
            &ManagerId::new("kubectl-client-side-apply", Operation::Update, ""),
            V,
            t(0),
        );
        let err = apply(
            &mut m,
            &json!({"spec": {"x": 1, "y": 1}}),
            true,
            &json!({"spec": {"x": 2, "y": 2}}),
            "kubectl",
            false,
            t(1),
        )
        .err()
        .unwrap_or_default();
        assert_eq!(
            conflict_message(&err),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using clusterregistry.k8s.io/v1alpha1:\n- .spec.x\n- .spec.y"
        );
    }

    #[test]
    fn an_object_without_managed_fields_is_first_given_to_before_first_apply() {
        let mut m = ManagedFields::default();
        let err = apply(
            &mut m,
            &json!({"spec": {"x": 1}}),
            true,
            &json!({"spec": {"x": 2}}),
            "kubectl",
            false,
            t(0),
        )
        .err()
        .unwrap_or_default();
        assert_eq!(
            conflict_message(&err),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using clusterregistry.k8s.io/v1alpha1: .spec.x"
        );
        assert!(m.is_empty());
    }

    #[test]
    fn finalizers_are_a_set_and_owner_references_keyed_by_uid() {
        let mut m = ManagedFields::default();
        let live = apply(
            &mut m,
            &json!({}),
            false,
            &json!({"metadata": {"finalizers": ["a"],
                    "ownerReferences": [{"uid": "u1", "kind": "K"}]}}),
            "one",
            false,
            t(0),
        )
        .unwrap_or_default();
        let live = apply(
            &mut m,
            &live,
            true,
            &json!({"metadata": {"finalizers": ["b"]}}),
            "two",
            false,
            t(1),
        )
        .unwrap_or_default();
        assert_eq!(live["metadata"]["finalizers"], json!(["a", "b"]));
        let live = apply(
            &mut m,
            &live,
            true,
            &json!({"metadata": {"ownerReferences": [{"uid": "u1", "kind": "K"}]}}),
            "one",
            false,
            t(2),
        )
        .unwrap_or_default();
        assert_eq!(
            live,
            json!({"metadata": {"finalizers": ["b"], "ownerReferences": [{"uid": "u1", "kind": "K"}]}})
        );
        assert_eq!(
            fields_of(&m, "one"),
            json!({"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u1\"}": {".": {}, "f:kind": {}, "f:uid": {}}}}})
        );
    }

    #[test]
    fn entries_serialize_as_managed_fields_entries_in_the_api_server_order() {
        let mut m = ManagedFields::default();
        m.update(
            &SCHEMA,
            &json!({}),
            &json!({"spec": {"y": 1}}),
            &ManagerId::new("status-writer", Operation::Update, "status"),
            V,
            t(0),
        );
        let _ = apply(
            &mut m,
            &json!({"spec": {"y": 1}}),
            true,
            &json!({"spec": {"x": 1}}),
            "kubectl",
            false,
            t(5),
        );
        let wire = serde_json::to_value(&m).unwrap_or_default();
        assert_eq!(
            wire,
            json!([
                {"manager": "kubectl", "operation": "Apply", "apiVersion": V,
                 "time": "2027-01-15T08:00:05Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:x": {}}}},
                {"manager": "status-writer", "operation": "Update", "apiVersion": V,
                 "time": "2027-01-15T08:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {".": {}, "f:y": {}}}, "subresource": "status"}
            ])
        );
        let back: ManagedFields = serde_json::from_value(wire).unwrap_or_default();
        assert_eq!(back, m);
    }
}
