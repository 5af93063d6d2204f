//! Magnum's JSON-Patch dialect: `add` / `replace` / `remove` on `/attr[/key...]`, internal and
//! mandatory attributes protected, Python-literal strings accepted where the CLI sends them.
//! The patched document is then parsed again by the resource's own validator.

use serde_json::{Map, Value};

use crate::api::http::error::ApiError;
use crate::api::http::pyliteral::parse_request_literal;

/// Attributes no patch may touch, on every resource.
pub const INTERNAL: &[&str] = &[
    "/created_at",
    "/id",
    "/links",
    "/updated_at",
    "/uuid",
    "/project_id",
    "/user_id",
];

pub struct PatchRules<'a> {
    /// Extra internal attributes of this resource.
    pub internal: &'a [&'a str],
    /// Attributes that cannot be removed.
    pub non_removable: &'a [&'a str],
    /// Attributes whose string values are parsed as JSON or Python literals.
    pub literal: &'a [&'a str],
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Add,
    Replace,
    Remove,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PatchOp {
    pub op: Op,
    pub path: String,
    pub value: Option<Value>,
}

impl PatchOp {
    /// The top-level attribute (`/labels` for `/labels/foo`).
    pub fn root(&self) -> &str {
        match self.path[1..].find('/') {
            Some(i) => &self.path[..i + 1],
            None => &self.path,
        }
    }

    fn to_json(&self) -> Value {
        let op = match self.op {
            Op::Add => "add",
            Op::Replace => "replace",
            Op::Remove => "remove",
        };
        let mut m = Map::new();
        m.insert("op".into(), Value::String(op.into()));
        m.insert("path".into(), Value::String(self.path.clone()));
        if let Some(v) = &self.value {
            m.insert("value".into(), v.clone());
        }
        Value::Object(m)
    }
}

fn valid_path(path: &str) -> bool {
    path.starts_with('/')
        && path[1..].split('/').all(|seg| {
            !seg.is_empty()
                && seg
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
}

/// Parses and checks a patch document against the rules (not yet against the resource).
pub fn parse_patch(body: Value, rules: &PatchRules) -> Result<Vec<PatchOp>, ApiError> {
    let Value::Array(items) = body else {
        return Err(ApiError::bad_request(
            "Invalid input for argument patch: the request body must be a JSON-Patch array.",
        ));
    };
    if items.is_empty() {
        return Err(ApiError::bad_request(
            "The patch is empty: nothing to change.",
        ));
    }
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(mut obj) = item else {
            return Err(ApiError::bad_request(
                "Invalid input for argument patch: every operation must be a JSON object.",
            ));
        };
        let op = match obj.remove("op") {
            Some(Value::String(s)) if s == "add" => Op::Add,
            Some(Value::String(s)) if s == "replace" => Op::Replace,
            Some(Value::String(s)) if s == "remove" => Op::Remove,
            None | Some(Value::Null) => {
                return Err(ApiError::bad_request(
                    "Invalid input for field/attribute op. Value: 'None'. Mandatory field missing.",
                ))
            }
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Invalid input for field/attribute op. Value: '{}'. Value should be one of: add, replace, remove.",
                    crate::api::http::body::shown(&other)
                )))
            }
        };
        let path = match obj.remove("path") {
            Some(Value::String(s)) => s,
            None | Some(Value::Null) => return Err(ApiError::bad_request(
                "Invalid input for field/attribute path. Value: 'None'. Mandatory field missing.",
            )),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Invalid input for field/attribute path. Value: '{}'. Value should be string.",
                    crate::api::http::body::shown(&other)
                )))
            }
        };
        if !valid_path(&path) {
            return Err(ApiError::bad_request(format!(
                "Invalid input for field/attribute path. Value: '{path}'. Value should match the pattern ^(/[\\w-]+)+$."
            )));
        }
        let value = obj.remove("value");
        if let Some(extra) = obj.keys().next() {
            return Err(ApiError::bad_request(format!(
                "Unknown attribute for argument patch: {extra}"
            )));
        }
        if op != Op::Remove && value.is_none() {
            return Err(ApiError::bad_request(
                "'add' and 'replace' operations needs value",
            ));
        }
        let p = PatchOp { op, path, value };
        let root = p.root().to_string();
        if INTERNAL.contains(&root.as_str()) || rules.internal.contains(&root.as_str()) {
            return Err(ApiError::bad_request(format!(
                "'{root}' is an internal attribute and can not be updated"
            )));
        }
        // A null value removes the attribute too (null means absent), so it is refused alike.
        let removes = p.op == Op::Remove || p.value == Some(Value::Null);
        if removes && p.path == root && rules.non_removable.contains(&root.as_str()) {
            return Err(ApiError::bad_request(format!(
                "'{root}' is a mandatory attribute and can not be removed"
            )));
        }
        ops.push(p);
    }
    Ok(ops)
}

/// Applies the operations to a resource's document.
pub fn apply(
    doc: &Map<String, Value>,
    ops: &[PatchOp],
    rules: &PatchRules,
) -> Result<Map<String, Value>, ApiError> {
    let mut resolved = Vec::with_capacity(ops.len());
    for op in ops {
        let mut op = op.clone();
        let top_level = op.path == op.root();
        if top_level && op.op == Op::Add {
            match doc.get(&op.path[1..]) {
                None => {
                    return Err(ApiError::bad_request(format!(
                        "Adding a new attribute {} to the root of the resource is not allowed.",
                        op.path
                    )))
                }
                Some(v) if !v.is_null() => {
                    return Err(ApiError::bad_request(format!(
                        "The attribute {} has existed, please use 'replace' operation instead.",
                        op.path
                    )))
                }
                Some(_) => {}
            }
        }
        if top_level && rules.literal.contains(&op.path.as_str()) {
            if let Some(Value::String(text)) = &op.value {
                let parsed = parse_request_literal(text).map_err(|e| {
                    ApiError::bad_request(format!(
                        "Couldn't apply patch '{}'. Reason: {e}",
                        Value::Array(ops.iter().map(PatchOp::to_json).collect())
                    ))
                })?;
                op.value = Some(parsed);
            }
        }
        resolved.push(op);
    }
    let mut target = Value::Object(doc.clone());
    let patch_doc = Value::Array(resolved.iter().map(PatchOp::to_json).collect());
    let patch: json_patch::Patch = serde_json::from_value(patch_doc)
        .map_err(|e| ApiError::bad_request(format!("Couldn't apply patch. Reason: {e}")))?;
    json_patch::patch(&mut target, &patch).map_err(|e| {
        ApiError::bad_request(format!(
            "Couldn't apply patch '{}'. Reason: {e}",
            Value::Array(ops.iter().map(PatchOp::to_json).collect())
        ))
    })?;
    match target {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::bad_request(
            "Couldn't apply patch: the result is not an object.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RULES: PatchRules = PatchRules {
        internal: &[],
        non_removable: &["/coe"],
        literal: &["/labels"],
    };

    fn doc() -> Map<String, Value> {
        json!({"name": "a", "coe": "kubernetes", "flavor_id": null, "labels": {"x": "1"}})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    fn run(patch: Value) -> Result<Map<String, Value>, ApiError> {
        let ops = parse_patch(patch, &RULES)?;
        apply(&doc(), &ops, &RULES)
    }

    #[test]
    fn replace_add_and_remove_work_on_the_document() {
        let out = run(json!([
            {"op": "replace", "path": "/name", "value": "b"},
            {"op": "add", "path": "/labels/y", "value": "2"},
            {"op": "remove", "path": "/labels/x"},
            {"op": "add", "path": "/flavor_id", "value": "m1.small"}
        ]))
        .expect("applies");
        assert_eq!(out["name"], "b");
        assert_eq!(out["labels"], json!({"y": "2"}));
        assert_eq!(out["flavor_id"], "m1.small");
    }

    #[test]
    fn internal_attributes_cannot_be_updated() {
        let err =
            run(json!([{"op": "replace", "path": "/uuid", "value": "x"}])).expect_err("internal");
        assert_eq!(
            err.to_string(),
            "'/uuid' is an internal attribute and can not be updated"
        );
    }

    #[test]
    fn mandatory_attributes_cannot_be_removed() {
        let err = run(json!([{"op": "remove", "path": "/coe"}])).expect_err("mandatory");
        assert_eq!(
            err.to_string(),
            "'/coe' is a mandatory attribute and can not be removed"
        );
    }

    #[test]
    fn add_on_the_root_needs_an_existing_null_attribute() {
        let err = run(json!([{"op": "add", "path": "/bogus", "value": "x"}])).expect_err("new");
        assert_eq!(
            err.to_string(),
            "Adding a new attribute /bogus to the root of the resource is not allowed."
        );
        let err = run(json!([{"op": "add", "path": "/name", "value": "x"}])).expect_err("exists");
        assert_eq!(
            err.to_string(),
            "The attribute /name has existed, please use 'replace' operation instead."
        );
    }

    #[test]
    fn add_and_replace_need_a_value() {
        let err = run(json!([{"op": "replace", "path": "/name"}])).expect_err("value");
        assert_eq!(
            err.to_string(),
            "'add' and 'replace' operations needs value"
        );
    }

    #[test]
    fn python_literal_strings_replace_whole_maps() {
        let out = run(json!([{"op": "replace", "path": "/labels", "value": "{'a': 'b'}"}]))
            .expect("literal");
        assert_eq!(out["labels"], json!({"a": "b"}));
        let err = run(json!([{"op": "replace", "path": "/labels", "value": "{'a': "}]))
            .expect_err("bad literal");
        assert!(err.to_string().starts_with("Couldn't apply patch"));
    }

    #[test]
    fn removing_a_missing_path_is_a_patch_error() {
        let err = run(json!([{"op": "remove", "path": "/labels/zzz"}])).expect_err("missing");
        assert!(err.to_string().starts_with("Couldn't apply patch"), "{err}");
    }

    #[test]
    fn malformed_operations_are_refused() {
        assert!(run(json!({"op": "replace"})).is_err());
        assert!(run(json!([])).is_err());
        assert!(run(json!([{"op": "move", "path": "/name", "value": "x"}])).is_err());
        assert!(run(json!([{"op": "replace", "path": "name", "value": "x"}])).is_err());
        assert!(run(json!([{"path": "/name", "value": "x"}])).is_err());
    }
}
