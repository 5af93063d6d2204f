//! Cluster API's published types, held against the objects the kubernetes driver writes: the
//! `v1beta1` and `v1beta2` schemas of `tests/fixtures/capi-v1beta1-types.json` and
//! `capi-v1beta2-types.json` (the CustomResourceDefinitions' `openAPIV3Schema`, descriptions and
//! status left out; `tools/capi_types.py` writes them from a Cluster API commit). A field the type does not have, a
//! required field missing, or a value of the wrong type is a finding, as the API server's
//! pruning and validation would make it one.

use std::sync::OnceLock;

use serde_json::{Map, Value};

static SCHEMAS: OnceLock<Value> = OnceLock::new();

fn schemas() -> &'static Value {
    SCHEMAS.get_or_init(|| {
        let mut all = Map::new();
        for version in ["v1beta1", "v1beta2"] {
            let path = format!(
                "{}/tests/fixtures/capi-{version}-types.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).expect("the Cluster API types fixture");
            let doc: Value = serde_json::from_str(&text).expect("the fixture is JSON");
            let schemas = doc["schemas"].as_object().expect("schemas by kind");
            assert!(
                schemas.keys().all(|k| k.contains(&format!("/{version}/"))),
                "{path} holds only {version} types"
            );
            all.extend(schemas.clone());
        }
        Value::Object(all)
    })
}

/// Whether a Cluster API schema exists for the object's `apiVersion` and `kind` (the
/// infrastructure provider's kinds and core objects have none here).
pub fn is_cluster_api(obj: &Value) -> bool {
    schema_of(obj).is_some()
}

fn schema_of(obj: &Value) -> Option<&'static Value> {
    let api = obj["apiVersion"].as_str()?;
    let kind = obj["kind"].as_str()?;
    let s = &schemas()[format!("{api}/{kind}")];
    (!s.is_null()).then_some(s)
}

/// What is wrong with a whole object (`partial` = false) or a merge patch (`partial` = true:
/// only what it names is checked, so no required field is missed).
pub fn findings(obj: &Value, partial: bool) -> Vec<String> {
    let mut out = Vec::new();
    match schema_of(obj) {
        Some(schema) => {
            let mut body = obj.clone();
            if let Some(map) = body.as_object_mut() {
                map.remove("status");
            }
            walk(schema, &body, "", partial, &mut out);
        }
        None => out.push(format!(
            "no Cluster API type {}/{}",
            obj["apiVersion"], obj["kind"]
        )),
    }
    out
}

/// [`findings`] for a merge patch sent to an object of `api_version` and `kind`.
pub fn patch_findings(api_version: &str, kind: &str, patch: &Value) -> Vec<String> {
    let mut obj = patch.clone();
    if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".into(), Value::from(api_version));
        map.insert("kind".into(), Value::from(kind));
    }
    findings(&obj, true)
}

fn walk(schema: &Value, value: &Value, path: &str, partial: bool, out: &mut Vec<String>) {
    let here = if path.is_empty() { "." } else { path };
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            out.push(format!(
                "{here}: {value} is neither an integer nor a string"
            ));
        }
        return;
    }
    let kind = schema["type"].as_str().unwrap_or("");
    let fits = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        out.push(format!("{here}: {value} is not of type {kind}"));
        return;
    }
    match value {
        Value::Object(map) => object(schema, map, path, partial, out),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(
                    &schema["items"],
                    item,
                    &format!("{path}[{i}]"),
                    partial,
                    out,
                );
            }
        }
        _ => {}
    }
}

fn object(
    schema: &Value,
    map: &Map<String, Value>,
    path: &str,
    partial: bool,
    out: &mut Vec<String>,
) {
    if path == ".metadata" {
        // ObjectMeta: the API server validates it itself; the schema says only "object".
        return;
    }
    if !partial {
        for name in schema["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if !map.contains_key(name) {
                out.push(format!("{path}.{name}: required, missing"));
            }
        }
    }
    let properties = schema["properties"].as_object();
    let values = schema.get("additionalProperties").filter(|a| a.is_object());
    let open = schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
    for (name, v) in map {
        let child = format!("{path}.{name}");
        match properties.and_then(|p| p.get(name)).or(values) {
            Some(s) => walk(s, v, &child, partial, out),
            None if open => {}
            None => out.push(format!("{child}: not a field of the type")),
        }
    }
}
