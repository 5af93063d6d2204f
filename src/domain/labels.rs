//! Labels: a map of strings. Magnum accepts string, integer, float and boolean values and
//! stores them as strings (`true` becomes `"True"`, as Python's `str()` writes it).

use std::collections::BTreeMap;

use serde_json::Value;

pub type Labels = BTreeMap<String, String>;

/// Converts one label value; `None` when the value is not a scalar Magnum accepts.
pub fn label_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(true) => Some("True".into()),
        Value::Bool(false) => Some("False".into()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Converts a JSON object into labels; `Err(key)` names the first key with an unacceptable value.
pub fn labels_from_object(map: &serde_json::Map<String, Value>) -> Result<Labels, String> {
    map.iter()
        .map(|(k, v)| {
            label_value(v)
                .map(|s| (k.clone(), s))
                .ok_or_else(|| k.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalar_values_are_stored_as_python_writes_them() {
        let obj = json!({"a": "x", "b": true, "c": 3, "d": 1.5, "e": false});
        let labels = labels_from_object(obj.as_object().expect("object")).expect("valid");
        assert_eq!(labels["a"], "x");
        assert_eq!(labels["b"], "True");
        assert_eq!(labels["c"], "3");
        assert_eq!(labels["d"], "1.5");
        assert_eq!(labels["e"], "False");
    }

    #[test]
    fn nested_values_are_refused_naming_the_key() {
        let obj = json!({"ok": "x", "bad": {"n": 1}});
        assert_eq!(
            labels_from_object(obj.as_object().expect("object")),
            Err("bad".to_string())
        );
    }
}
