//! What a desired `MachineDeployment` asks of its node group, read against the object as
//! served: `spec.replicas` (a node count), `spec.template.spec.flavor`, `.osImage` and
//! `.versions.kubelet` (a roll), and `spec.strategy.rollingUpdate.maxSurge` (the roll's batch).
//! Any other change is a cause naming its field; the metadata must match the served object's
//! (a name or namespace other than the URL's is a 400, a uid or resourceVersion other than
//! the object's a 409, changed labels, annotations, finalizers or owners a cause).

use serde_json::{Map, Value};

use crate::api::kube::status::{quote, Cause, KubeError, MACHINE_DEPLOYMENTS};
use crate::domain::machine::KubeVersion;

/// How the desired object came: a replace states the whole object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    Replace,
    Patch,
}

/// What a write asks of the group.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Change {
    pub replicas: Option<i32>,
    pub flavor: Option<String>,
    pub image: Option<String>,
    pub kubelet: Option<KubeVersion>,
    /// The batch of the roll this write starts (or resumes), when it states one.
    pub max_surge: Option<i32>,
}

impl Change {
    /// Whether the template (a roll) changes.
    pub fn rolls(&self) -> bool {
        self.flavor.is_some() || self.image.is_some() || self.kubelet.is_some()
    }
}

const CHANGEABLE: &str = "a MachineDeployment's change may set spec.replicas, \
    spec.template.spec.flavor, spec.template.spec.osImage, spec.template.spec.versions.kubelet \
    and spec.strategy.rollingUpdate.maxSurge";

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
    .chars()
    .take(128)
    .collect()
}

fn field<'a>(obj: Option<&'a Map<String, Value>>, key: &str) -> &'a Value {
    obj.and_then(|o| o.get(key)).unwrap_or(&Value::Null)
}

fn keys<'a>(
    a: Option<&'a Map<String, Value>>,
    b: Option<&'a Map<String, Value>>,
) -> Vec<&'a String> {
    let mut k: Vec<&String> = a.into_iter().chain(b).flat_map(|m| m.keys()).collect();
    k.sort();
    k.dedup();
    k
}

/// A changed text field: its new value, or a cause when it is no non-empty string.
fn new_text(path: &str, v: &Value, causes: &mut Vec<Cause>) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Null => {
            causes.push(Cause::required(path, "it may be changed, not removed"));
            None
        }
        Value::String(_) => {
            causes.push(Cause::required(path, "it may not be empty"));
            None
        }
        other => {
            causes.push(Cause::type_invalid(path, &shown(other), "must be a string"));
            None
        }
    }
}

/// `maxSurge` as a number of machines of `replicas`: an integer of at least 1, or a
/// percentage of the replicas (rounded up, at least 1).
fn surge(v: &Value, replicas: i32, causes: &mut Vec<Cause>) -> Option<i32> {
    let path = "spec.strategy.rollingUpdate.maxSurge";
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => match s.strip_suffix('%') {
            Some(p) => p.parse::<i64>().ok().filter(|p| *p > 0).map(|p| {
                let total = i64::from(replicas.max(1)) * p;
                (total + 99) / 100
            }),
            None => s.parse::<i64>().ok(),
        },
        _ => None,
    };
    match n.and_then(|n| i32::try_from(n).ok()).filter(|n| *n >= 1) {
        Some(n) => Some(n),
        None => {
            causes.push(Cause::invalid(
                path,
                &shown(v),
                "must be an integer of at least 1 or a percentage of the replicas",
            ));
            None
        }
    }
}

/// The template spec's changes.
fn template_change(c: &Value, w: &Value, change: &mut Change, causes: &mut Vec<Cause>) {
    let (c, w) = (c.as_object(), w.as_object());
    for key in keys(c, w) {
        let (cv, wv) = (field(c, key), field(w, key));
        if cv == wv {
            continue;
        }
        let path = format!("spec.template.spec.{key}");
        match key.as_str() {
            "flavor" => change.flavor = new_text(&path, wv, causes),
            "osImage" => change.image = new_text(&path, wv, causes),
            "versions" => {
                let (cv, wv) = (cv.as_object(), wv.as_object());
                for k in keys(cv, wv) {
                    let (a, b) = (field(cv, k), field(wv, k));
                    if a == b {
                        continue;
                    }
                    let path = format!("spec.template.spec.versions.{k}");
                    if k != "kubelet" {
                        causes.push(Cause::forbidden(&path, CHANGEABLE));
                        continue;
                    }
                    if let Some(text) = new_text(&path, b, causes) {
                        match KubeVersion::parse(&text) {
                            Ok(v) => change.kubelet = Some(v),
                            Err(e) => causes.push(Cause::invalid(&path, &text, &e.0)),
                        }
                    }
                }
            }
            _ => causes.push(Cause::forbidden(&path, CHANGEABLE)),
        }
    }
}

/// The spec change from `current` to `desired`, every field that may not change a cause.
pub(super) fn spec_change(current: &Value, desired: &Value, causes: &mut Vec<Cause>) -> Change {
    let mut change = Change::default();
    let cur = current.get("spec").and_then(Value::as_object);
    let want = match desired.get("spec") {
        Some(Value::Object(m)) => Some(m),
        None | Some(Value::Null) => None,
        Some(other) => {
            causes.push(Cause::type_invalid(
                "spec",
                &shown(other),
                "must be an object",
            ));
            return change;
        }
    };
    let replicas_now = field(cur, "replicas").as_i64().unwrap_or(0);
    for key in keys(cur, want) {
        let (c, w) = (field(cur, key), field(want, key));
        if c == w {
            continue;
        }
        match key.as_str() {
            "replicas" => match w.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(n) if n >= 0 => change.replicas = Some(n),
                _ => causes.push(Cause::invalid(
                    "spec.replicas",
                    &shown(w),
                    "must be a non-negative integer",
                )),
            },
            "template" => {
                let (c, w) = (c.as_object(), w.as_object());
                for k in keys(c, w) {
                    let (a, b) = (field(c, k), field(w, k));
                    if a == b {
                        continue;
                    }
                    if k == "spec" {
                        template_change(a, b, &mut change, causes);
                    } else {
                        causes.push(Cause::forbidden(format!("spec.template.{k}"), CHANGEABLE));
                    }
                }
            }
            "strategy" => {
                let (c, w) = (c.as_object(), w.as_object());
                for k in keys(c, w) {
                    let (a, b) = (field(c, k), field(w, k));
                    if a == b {
                        continue;
                    }
                    if k != "rollingUpdate" {
                        causes.push(Cause::forbidden(format!("spec.strategy.{k}"), CHANGEABLE));
                        continue;
                    }
                    let (a, b) = (a.as_object(), b.as_object());
                    for r in keys(a, b) {
                        let (x, y) = (field(a, r), field(b, r));
                        if x == y {
                            continue;
                        }
                        let replicas = i32::try_from(replicas_now).unwrap_or(i32::MAX);
                        match r.as_str() {
                            "maxSurge" => change.max_surge = surge(y, replicas, causes),
                            "maxUnavailable" => causes.push(Cause::invalid(
                                "spec.strategy.rollingUpdate.maxUnavailable",
                                &shown(y),
                                "a node group's roll replaces each machine by a new one first: \
                                 maxUnavailable is always 0",
                            )),
                            other => causes.push(Cause::forbidden(
                                format!("spec.strategy.rollingUpdate.{other}"),
                                CHANGEABLE,
                            )),
                        }
                    }
                }
            }
            other => causes.push(Cause::forbidden(format!("spec.{other}"), CHANGEABLE)),
        }
    }
    change
}

/// The metadata `desired` states against the served object `current` (uid `uid`,
/// resourceVersion `rv`).
pub(super) fn check_metadata(
    verb: Verb,
    current: &Value,
    desired: &Value,
    causes: &mut Vec<Cause>,
) -> Result<(), KubeError> {
    let meta_now = current.get("metadata").and_then(Value::as_object);
    let name = field(meta_now, "name").as_str().unwrap_or("").to_string();
    for (key, want) in [
        ("apiVersion", MACHINE_DEPLOYMENTS.api_version()),
        ("kind", MACHINE_DEPLOYMENTS.kind.into()),
    ] {
        match desired.get(key) {
            None | Some(Value::Null) if verb == Verb::Patch => {}
            Some(Value::String(s)) if *s == want => {}
            other => {
                let what = if key == "kind" { "kind" } else { "API version" };
                return Err(KubeError::bad_request(format!(
                    "the {what} in the data ({}) does not match the expected {what} ({want})",
                    other.map(shown).unwrap_or_default(),
                )));
            }
        }
    }
    let meta = match desired.get("metadata") {
        Some(Value::Object(m)) => Some(m),
        None | Some(Value::Null) => None,
        Some(other) => {
            causes.push(Cause::type_invalid(
                "metadata",
                &shown(other),
                "must be an object",
            ));
            return Ok(());
        }
    };
    if let Some(n) = field(meta, "name").as_str().filter(|n| *n != name) {
        return Err(KubeError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            shown(&Value::String(n.into()))
        )));
    }
    if field(meta, "namespace")
        .as_str()
        .is_some_and(|ns| Some(ns) != field(meta_now, "namespace").as_str())
    {
        return Err(KubeError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let uid_now = field(meta_now, "uid").as_str().unwrap_or("");
    if let Some(uid) = field(meta, "uid").as_str().filter(|u| *u != uid_now) {
        return Err(KubeError::ConflictMessage(format!(
            "Operation cannot be fulfilled on {} {}: Precondition failed: UID in precondition: {}, UID in object meta: {uid_now}",
            MACHINE_DEPLOYMENTS.qualified(),
            quote(&name),
            shown(&Value::String(uid.into())),
        )));
    }
    match field(meta, "resourceVersion") {
        Value::Null if verb == Verb::Replace => causes.push(Cause::invalid_unquoted(
            "metadata.resourceVersion",
            "0x0: must be specified for an update",
        )),
        Value::Null => {}
        rv if rv != field(meta_now, "resourceVersion") => {
            return Err(KubeError::conflict(&MACHINE_DEPLOYMENTS, name));
        }
        _ => {}
    }
    let as_map = |v: &Value| v.as_object().cloned().unwrap_or_default();
    let as_list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    for key in ["labels", "annotations"] {
        if as_map(field(meta, key)) != as_map(field(meta_now, key)) {
            causes.push(Cause::forbidden(
                format!("metadata.{key}"),
                "a MachineDeployment's labels are derived (its cluster's and node group's \
                 names) and not stored; it has no annotations",
            ));
        }
    }
    for key in ["finalizers", "ownerReferences"] {
        if as_list(field(meta, key)) != as_list(field(meta_now, key)) {
            causes.push(Cause::forbidden(
                format!("metadata.{key}"),
                "a MachineDeployment's finalizers and owner (its cluster) are the service's",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn current() -> Value {
        json!({"spec": {"replicas": 4,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"versions": {"kubelet": "v1.31.4"}, "flavor": "m1.small",
                         "osImage": "fcos", "labels": {"tier": "x"}}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}})
    }

    fn change_of(f: impl Fn(&mut Value)) -> (Change, Vec<Cause>) {
        let mut desired = current();
        f(&mut desired);
        let mut causes = Vec::new();
        let c = spec_change(&current(), &desired, &mut causes);
        (c, causes)
    }

    #[test]
    fn replicas_flavor_image_kubelet_and_surge_become_the_change() {
        let (c, causes) = change_of(|d| {
            d["spec"]["template"]["spec"]["flavor"] = json!("m1.large");
            d["spec"]["template"]["spec"]["versions"]["kubelet"] = json!("1.31.6");
            d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!(2);
        });
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(c.flavor.as_deref(), Some("m1.large"));
        assert_eq!(c.kubelet.map(|k| k.to_string()).as_deref(), Some("v1.31.6"));
        assert_eq!((c.max_surge, c.replicas, c.image), (Some(2), None, None));
        let (c, _) = change_of(|d| d["spec"]["replicas"] = json!(6));
        assert_eq!(c.replicas, Some(6));
        assert!(!c.rolls());
        let (c, _) =
            change_of(|d| d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!("50%"));
        assert_eq!(c.max_surge, Some(2));
        assert_eq!(change_of(|_| {}).0, Change::default());
    }

    #[test]
    fn every_other_field_is_a_cause_naming_it() {
        let (_, causes) = change_of(|d| {
            d["spec"]["selector"] = json!({"matchLabels": {}});
            d["spec"]["template"]["spec"]["labels"] = json!({});
            d["spec"]["template"]["spec"]["versions"]["kubelet"] = json!("1.31");
            d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = json!(1);
            d["spec"]["replicas"] = json!(-1);
            d["spec"]["paused"] = json!(true);
        });
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.paused",
                "spec.replicas",
                "spec.selector",
                "spec.strategy.rollingUpdate.maxUnavailable",
                "spec.template.spec.labels",
                "spec.template.spec.versions.kubelet",
            ]
        );
    }
}
