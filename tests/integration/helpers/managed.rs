//! `metadata.managedFields` as tests read them back.

use serde_json::Value;

/// The entry of `manager` with `operation`, or null.
pub fn entry<'a>(object: &'a Value, manager: &str, operation: &str) -> &'a Value {
    object["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| {
            es.iter()
                .find(|e| e["manager"] == manager && e["operation"] == operation)
        })
        .unwrap_or(&Value::Null)
}

/// `manager/operation/subresource` of each entry, in the object's order.
pub fn managers(object: &Value) -> Vec<String> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|es| {
            es.iter()
                .map(|e| {
                    format!(
                        "{}/{}/{}",
                        e["manager"].as_str().unwrap_or(""),
                        e["operation"].as_str().unwrap_or(""),
                        e["subresource"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}
