//! PATCH bodies by Content-Type: JSON merge patch (RFC 7396), JSON patch (RFC 6902) and
//! server-side apply. The handlers apply an applied configuration ([`parse_applied`]) with field
//! ownership ([`super::managed`]); [`apply_patch`]'s own apply is the merge without it (objects
//! merged recursively, lists replaced). Strategic merge patch is a 415, as for custom
//! resources.

use serde_json::Value;

use super::status::{Cause, KubeError, CLUSTERS};

/// The largest patch body taken.
pub const MAX_PATCH_BODY: usize = 1 << 20;
/// The deepest nesting of a patch body.
pub const MAX_PATCH_DEPTH: usize = 64;
/// The most operations in one JSON patch.
pub const MAX_JSON_PATCH_OPS: usize = 10_000;

/// The patch types, from the request's Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` (server-side apply; kubectl sends JSON).
    Apply,
}

impl PatchType {
    /// The patch type of a Content-Type (parameters ignored); anything else, strategic merge
    /// patch included, is a 415.
    pub fn from_content_type(content_type: &str) -> Result<Self, KubeError> {
        let media = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(PatchType::Apply),
            _ => Err(KubeError::UnsupportedMediaType),
        }
    }
}

fn depth_exceeds(v: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        if d > max {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    false
}

fn decode_error(why: impl std::fmt::Display) -> KubeError {
    KubeError::bad_request(format!("error decoding patch: {why}"))
}

fn parse_json(body: &[u8]) -> Result<Value, KubeError> {
    let v: Value = serde_json::from_slice(body).map_err(decode_error)?;
    if depth_exceeds(&v, MAX_PATCH_DEPTH) {
        return Err(decode_error(format!(
            "the patch is nested deeper than {MAX_PATCH_DEPTH} levels"
        )));
    }
    Ok(v)
}

/// JSON first (what kubectl sends), YAML otherwise.
fn parse_json_or_yaml(body: &[u8]) -> Result<Value, KubeError> {
    if let Ok(v) = parse_json(body) {
        return Ok(v);
    }
    let v: Value = serde_norway::from_slice(body).map_err(decode_error)?;
    if depth_exceeds(&v, MAX_PATCH_DEPTH) {
        return Err(decode_error(format!(
            "the patch is nested deeper than {MAX_PATCH_DEPTH} levels"
        )));
    }
    Ok(v)
}

/// Server-side apply, approximated: objects merged key by key, everything else (lists,
/// scalars, nulls) replaced by the applied value.
fn apply_merge(target: &mut Value, applied: &Value) {
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, av) in a {
                match t.get_mut(k) {
                    Some(tv) if tv.is_object() && av.is_object() => apply_merge(tv, av),
                    _ => {
                        t.insert(k.clone(), av.clone());
                    }
                }
            }
        }
        (t, a) => *t = a.clone(),
    }
}

/// The applied configuration of a server-side apply (`application/apply-patch+yaml`, in YAML
/// or JSON): 413 over `MAX_PATCH_BODY`, 400 when it is not an object.
pub fn parse_applied(body: &[u8]) -> Result<Value, KubeError> {
    if body.len() > MAX_PATCH_BODY {
        return Err(KubeError::RequestEntityTooLarge(MAX_PATCH_BODY));
    }
    let applied = parse_json_or_yaml(body)?;
    if !applied.is_object() {
        return Err(decode_error("an applied configuration must be an object"));
    }
    Ok(applied)
}

fn name_of(current: &Value) -> String {
    current["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .chars()
        .take(253)
        .collect()
}

/// Applies `body` (of `content_type`) to `current` and returns the patched object.
/// For server-side apply of an object that does not exist, pass `Value::Null` as `current`.
/// 415 for strategic merge patch and unknown types, 413 over `MAX_PATCH_BODY`, 400 for an
/// undecodable or too deep body, 422 for a JSON patch operation that fails.
pub fn apply_patch(content_type: &str, current: &Value, body: &[u8]) -> Result<Value, KubeError> {
    let kind = PatchType::from_content_type(content_type)?;
    if body.len() > MAX_PATCH_BODY {
        return Err(KubeError::RequestEntityTooLarge(MAX_PATCH_BODY));
    }
    match kind {
        PatchType::Merge => {
            let patch = parse_json(body)?;
            if !patch.is_object() {
                return Err(decode_error("a merge patch must be a JSON object"));
            }
            let mut doc = current.clone();
            json_patch::merge(&mut doc, &patch);
            Ok(doc)
        }
        PatchType::Json => {
            let raw = parse_json(body)?;
            if raw
                .as_array()
                .is_some_and(|ops| ops.len() > MAX_JSON_PATCH_OPS)
            {
                return Err(decode_error(format!(
                    "a JSON patch may hold at most {MAX_JSON_PATCH_OPS} operations"
                )));
            }
            let patch: json_patch::Patch = serde_json::from_value(raw).map_err(decode_error)?;
            let mut doc = current.clone();
            json_patch::patch(&mut doc, &patch).map_err(|e| {
                KubeError::invalid(
                    &CLUSTERS,
                    name_of(current),
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        message: e.to_string(),
                        field: String::new(),
                    }],
                )
            })?;
            Ok(doc)
        }
        PatchType::Apply => {
            let applied = parse_json_or_yaml(body)?;
            if !applied.is_object() {
                return Err(decode_error("an applied configuration must be an object"));
            }
            let mut doc = if current.is_object() {
                current.clone()
            } else {
                Value::Object(Default::default())
            };
            apply_merge(&mut doc, &applied);
            Ok(doc)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::ResponseError;
    use serde_json::json;

    fn current() -> Value {
        json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "alpha", "labels": {"env": "prod", "a": "b"}},
            "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"},
                {"clientCIDR": "10.0.0.0/8", "serverAddress": "10.0.0.2:6443"}]}}})
    }

    fn code(r: Result<Value, KubeError>) -> u16 {
        r.err().map_or(200, |e| e.status_code().as_u16())
    }

    #[test]
    fn merge_patch_sets_deletes_and_replaces_lists() {
        let body = br#"{"metadata":{"labels":{"a":null,"w":"1"}},"spec":{"kubernetesApiEndpoints":{"serverEndpoints":[{"serverAddress":"h:1"}]}}}"#;
        let out = apply_patch("application/merge-patch+json", &current(), body).ok();
        assert_eq!(
            out,
            Some(
                json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "alpha", "labels": {"env": "prod", "w": "1"}},
                "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [{"serverAddress": "h:1"}]}}})
            )
        );
        assert_eq!(
            code(apply_patch(
                "application/merge-patch+json",
                &current(),
                b"{nope"
            )),
            400
        );
        assert_eq!(
            code(apply_patch(
                "application/merge-patch+json",
                &current(),
                b"[1]"
            )),
            400
        );
    }

    #[test]
    fn json_patch_applies_operations_and_a_failing_one_is_422() {
        let body = br#"[{"op":"test","path":"/metadata/labels/env","value":"prod"},
            {"op":"replace","path":"/spec/kubernetesApiEndpoints/serverEndpoints/1/serverAddress","value":"h:2"},
            {"op":"remove","path":"/metadata/labels/a"}]"#;
        let out = apply_patch("application/json-patch+json", &current(), body).ok();
        let out = out.unwrap_or_default();
        assert_eq!(out["metadata"]["labels"], json!({"env": "prod"}));
        assert_eq!(
            out["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][1]["serverAddress"],
            "h:2"
        );
        let failing = br#"[{"op":"test","path":"/metadata/labels/env","value":"dev"}]"#;
        let e = apply_patch("application/json-patch+json", &current(), failing).err();
        assert_eq!(e.as_ref().map(|e| e.status_code().as_u16()), Some(422));
        assert!(e
            .map(|e| e.to_string())
            .unwrap_or_default()
            .starts_with("Cluster.clusterregistry.k8s.io \"alpha\" is invalid: "));
        let missing = br#"[{"op":"remove","path":"/spec/nope"}]"#;
        assert_eq!(
            code(apply_patch(
                "application/json-patch+json",
                &current(),
                missing
            )),
            422
        );
        assert_eq!(
            code(apply_patch(
                "application/json-patch+json",
                &current(),
                br#"{"op":"add"}"#
            )),
            400
        );
        assert_eq!(
            code(apply_patch(
                "application/json-patch+json",
                &current(),
                br#"[{"op":"jump"}]"#
            )),
            400
        );
    }

    #[test]
    fn apply_merges_objects_and_replaces_lists_in_json_or_yaml() {
        let body = br#"{"metadata":{"name":"alpha","labels":{"tier":"gold"}},"spec":{"kubernetesApiEndpoints":{"serverEndpoints":[{"serverAddress":"h:3"}]}}}"#;
        let out = apply_patch("application/apply-patch+yaml", &current(), body)
            .ok()
            .unwrap_or_default();
        assert_eq!(
            out["metadata"]["labels"],
            json!({"env": "prod", "a": "b", "tier": "gold"})
        );
        assert_eq!(
            out["spec"]["kubernetesApiEndpoints"]["serverEndpoints"],
            json!([{"serverAddress": "h:3"}])
        );
        let yaml =
            b"metadata:\n  name: fresh\nspec:\n  authInfo:\n    controller:\n      kind: Secret\n";
        let out = apply_patch("application/apply-patch+yaml", &Value::Null, yaml).ok();
        assert_eq!(
            out,
            Some(json!({"metadata": {"name": "fresh"},
                "spec": {"authInfo": {"controller": {"kind": "Secret"}}}}))
        );
        assert_eq!(
            code(apply_patch(
                "application/apply-patch+yaml",
                &current(),
                b"- a\n- b\n"
            )),
            400
        );
    }

    #[test]
    fn strategic_merge_and_unknown_types_are_415() {
        let e = apply_patch("application/strategic-merge-patch+json", &current(), b"{}").err();
        assert_eq!(
            e.map(|e| (e.status_code().as_u16(), e.to_string())),
            Some((
                415,
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml"
                    .to_string()
            ))
        );
        assert_eq!(code(apply_patch("text/plain", &current(), b"{}")), 415);
        assert_eq!(
            code(apply_patch(
                "application/merge-patch+json; charset=utf-8",
                &current(),
                b"{}"
            )),
            200
        );
    }

    #[test]
    fn bodies_are_bounded_in_size_and_depth() {
        let big = vec![b' '; MAX_PATCH_BODY + 1];
        assert_eq!(
            code(apply_patch(
                "application/merge-patch+json",
                &current(),
                &big
            )),
            413
        );
        let deep = format!("{}1{}", "{\"a\":".repeat(70), "}".repeat(70));
        assert_eq!(
            code(apply_patch(
                "application/merge-patch+json",
                &current(),
                deep.as_bytes()
            )),
            400
        );
        assert_eq!(
            code(apply_patch(
                "application/apply-patch+yaml",
                &current(),
                deep.as_bytes()
            )),
            400
        );
    }
}
