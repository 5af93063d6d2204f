//! kubectl's client-side apply annotation kept in step with its server-side applies, as the
//! API server's `lastAppliedUpdater` does: after an apply by the field manager `kubectl` to an
//! object that has the annotation, the annotation holds the applied configuration (as JSON,
//! without the annotation itself), or is dropped when the annotations would pass their size
//! limit. And, as its `lastAppliedManager`, a kubectl server-side apply to an object that
//! kubectl's client-side apply managed does not conflict on the fields the annotation sets
//! to the values the object still has.

use serde_json::Value;

use super::{compare, to_field_set, FieldSet, Schema};

/// kubectl's client-side apply annotation.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The field manager of kubectl's server-side applies.
pub const KUBECTL_MANAGER: &str = "kubectl";
/// The largest total size (keys and values) of an object's annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The annotations' total size as the API server counts it.
fn annotations_size(a: &serde_json::Map<String, Value>) -> usize {
    a.iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .fold(0usize, usize::saturating_add)
}

/// After `manager`'s apply of `applied` left `object`: rewrites `object`'s last-applied
/// annotation to `applied` when the manager is `kubectl` and the object has a non-empty one;
/// otherwise leaves `object` as it is.
pub fn refresh_last_applied(object: &mut Value, applied: &Value, manager: &str) {
    if manager != KUBECTL_MANAGER {
        return;
    }
    let Some(annotations) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let present = annotations
        .get(LAST_APPLIED_ANNOTATION)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !present {
        return;
    }
    let mut config = applied.clone();
    if let Some(a) = config
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    annotations.insert(
        LAST_APPLIED_ANNOTATION.to_string(),
        Value::String(config.to_string()),
    );
    if annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// The object kubectl's client-side apply last applied to `object`, if it has the annotation
/// and the annotation is a JSON object.
pub fn last_applied_of(object: &Value) -> Option<Value> {
    let text = object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].as_str()?;
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

/// The fields a kubectl server-side apply may take without conflict from an object whose
/// last client-side apply was `last_applied`: those `last_applied` sets to the value they
/// still have in `live` (both as far as managers own them).
pub fn allowed_conflicts(schema: &Schema, live: &Value, last_applied: &Value) -> FieldSet {
    to_field_set(schema, last_applied).difference(&compare(schema, last_applied, live).modified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(last: &str) -> Value {
        json!({"metadata": {"annotations": {LAST_APPLIED_ANNOTATION: last, "other": "x"}},
            "spec": {"a": 1}})
    }

    #[test]
    fn a_kubectl_apply_rewrites_an_existing_annotation_to_what_it_applied() {
        let applied = json!({"apiVersion": "v", "kind": "K",
            "metadata": {"name": "n", "annotations": {LAST_APPLIED_ANNOTATION: "stale", "k": "v"}},
            "spec": {"b": 2}});
        let mut o = object("{\"old\":true}");
        refresh_last_applied(&mut o, &applied, "kubectl");
        let text = o["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap_or("");
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap_or_default(),
            json!({"apiVersion": "v", "kind": "K",
                "metadata": {"name": "n", "annotations": {"k": "v"}}, "spec": {"b": 2}})
        );
        assert_eq!(o["metadata"]["annotations"]["other"], "x");
    }

    #[test]
    fn other_managers_and_objects_without_the_annotation_are_left_alone() {
        let applied = json!({"spec": {"b": 2}});
        let mut o = object("{\"old\":true}");
        refresh_last_applied(&mut o, &applied, "helm");
        assert_eq!(o, object("{\"old\":true}"));
        let mut o = object("");
        refresh_last_applied(&mut o, &applied, "kubectl");
        assert_eq!(o, object(""));
        let mut bare = json!({"metadata": {"labels": {"a": "b"}}});
        refresh_last_applied(&mut bare, &applied, "kubectl");
        assert_eq!(bare, json!({"metadata": {"labels": {"a": "b"}}}));
    }

    #[test]
    fn fields_still_as_last_applied_may_be_taken_without_conflict() {
        let schema = Schema {
            lists: super::super::OBJECT_META_LISTS,
            untracked: super::super::UNTRACKED,
        };
        let live = json!({"metadata": {"annotations": {LAST_APPLIED_ANNOTATION: "x"}},
            "spec": {"a": 1, "b": 2, "c": 3}});
        let last = json!({"spec": {"a": 1, "b": 5}});
        let allowed = allowed_conflicts(&schema, &live, &last);
        assert_eq!(allowed.to_fields_v1(), json!({"f:spec": {"f:a": {}}}));
        assert_eq!(last_applied_of(&live), None);
        let with = json!({"metadata": {"annotations": {LAST_APPLIED_ANNOTATION: "{\"spec\":{}}"}}});
        assert_eq!(last_applied_of(&with), Some(json!({"spec": {}})));
    }

    #[test]
    fn an_annotation_past_the_size_limit_is_dropped() {
        let applied = json!({"spec": {"big": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)}});
        let mut o = object("{\"old\":true}");
        refresh_last_applied(&mut o, &applied, "kubectl");
        assert_eq!(o["metadata"]["annotations"], json!({"other": "x"}));
    }
}
