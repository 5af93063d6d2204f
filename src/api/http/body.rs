//! Reading request bodies and query strings, with Magnum's validation sentences.

use std::collections::BTreeMap;

use actix_web::web::Bytes;
use actix_web::HttpRequest;
use serde_json::{Map, Value};

use super::error::ApiError;
use crate::domain::labels::{labels_from_object, Labels};

/// Parses a request body as JSON. A non-empty body must be `application/json` (415 otherwise);
/// malformed JSON, or a string or key holding a NUL character, is a 400.
pub fn json_body(req: &HttpRequest, body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("The request body is empty."));
    }
    if let Some(ct) = req.headers().get(actix_web::http::header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("");
        let mime = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if !(mime == "application/json"
            || (mime.starts_with("application/") && mime.ends_with("+json")))
        {
            return Err(ApiError::UnsupportedMediaType(format!(
                "Unknown mimetype: {mime}."
            )));
        }
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::bad_request("Request is not in valid JSON format."))?;
    if super::pyliteral::holds_nul(&value) {
        return Err(ApiError::bad_request(NUL_IN_BODY));
    }
    Ok(value)
}

/// No stored field can hold a NUL character (PostgreSQL's text cannot), so no request may
/// carry one.
const NUL_IN_BODY: &str =
    "The request body holds a NUL character (\\u0000), which no field accepts.";

/// The body as an object, else 400.
pub fn json_object(
    req: &HttpRequest,
    body: &Bytes,
    argument: &str,
) -> Result<Map<String, Value>, ApiError> {
    match json_body(req, body)? {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::bad_request(format!(
            "Invalid input for argument {argument}: the request body must be a JSON object."
        ))),
    }
}

/// Python's `repr`-like rendering of a value inside validation messages.
pub fn shown(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        other => super::pyliteral::python_str(other),
    }
}

pub fn invalid(field: &str, value: &Value, reason: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Invalid input for field/attribute {field}. Value: '{}'. {reason}",
        shown(value)
    ))
}

/// Strict boolean parsing as Magnum does it: JSON booleans, or the strings
/// `1/0, t/f, true/false, on/off, y/n, yes/no` in any case.
pub fn parse_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_i64() {
            Some(1) => Some(true),
            Some(0) => Some(false),
            _ => None,
        },
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "1" | "t" | "true" | "on" | "y" | "yes" => Some(true),
            "0" | "f" | "false" | "off" | "n" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Takes typed fields out of a request object; whatever is left at the end is an unknown
/// attribute.
pub struct Fields {
    argument: &'static str,
    obj: Map<String, Value>,
    node_limit: i32,
}

impl Fields {
    pub fn new(argument: &'static str, obj: Map<String, Value>) -> Self {
        Fields {
            argument,
            obj,
            node_limit: i32::MAX,
        }
    }

    /// The most nodes a node group may have (`[cluster] max_node_count`): [`Fields::nodes`]
    /// refuses more.
    pub fn with_node_limit(mut self, limit: i32) -> Self {
        self.node_limit = limit;
        self
    }

    /// A node count: an integer from `min` to the node limit.
    pub fn nodes(&mut self, key: &str, min: i64) -> Result<Option<i32>, ApiError> {
        let limit = i64::from(self.node_limit);
        self.int32(key, Some(min), Some(limit))
    }

    /// Refuses read-only attributes that are present.
    pub fn read_only(&mut self, keys: &[&str]) -> Result<(), ApiError> {
        for key in keys {
            if let Some(v) = self.obj.get(*key) {
                return Err(invalid(key, v, "Cannot set read only field."));
            }
        }
        Ok(())
    }

    /// Drops attributes that are ignored on input.
    pub fn ignore(&mut self, keys: &[&str]) {
        for key in keys {
            self.obj.remove(*key);
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        match self.obj.remove(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    /// The raw value of a field with its own parser (`null` counts as absent).
    pub fn value(&mut self, key: &str) -> Option<Value> {
        self.take(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.obj.get(key).is_some_and(|v| !v.is_null())
    }

    pub fn string(
        &mut self,
        key: &str,
        min: usize,
        max: usize,
    ) -> Result<Option<String>, ApiError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let Value::String(s) = &v else {
            return Err(invalid(key, &v, "Value should be string."));
        };
        let len = s.chars().count();
        if len < min {
            return Err(invalid(
                key,
                &v,
                &format!("Value should have a minimum character requirement of {min}."),
            ));
        }
        if len > max {
            return Err(invalid(
                key,
                &v,
                &format!("Value should have a maximum character requirement of {max}."),
            ));
        }
        Ok(Some(s.clone()))
    }

    pub fn required_string(
        &mut self,
        key: &str,
        min: usize,
        max: usize,
    ) -> Result<String, ApiError> {
        match self.string(key, min, max)? {
            Some(s) => Ok(s),
            None => Err(invalid(key, &Value::Null, "Mandatory field missing.")),
        }
    }

    /// An integer; numeric strings are accepted as the framework coerces them.
    pub fn int(
        &mut self,
        key: &str,
        min: Option<i64>,
        max: Option<i64>,
    ) -> Result<Option<i64>, ApiError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let n = match &v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        let Some(n) = n else {
            return Err(invalid(key, &v, "Value should be an integer."));
        };
        if let Some(min) = min {
            if n < min {
                return Err(invalid(
                    key,
                    &v,
                    &format!("Value should be greater or equal to {min}."),
                ));
            }
        }
        if let Some(max) = max {
            if n > max {
                return Err(invalid(
                    key,
                    &v,
                    &format!("Value should be less or equal to {max}."),
                ));
            }
        }
        Ok(Some(n))
    }

    pub fn int32(
        &mut self,
        key: &str,
        min: Option<i64>,
        max: Option<i64>,
    ) -> Result<Option<i32>, ApiError> {
        let max = Some(max.unwrap_or(i64::from(i32::MAX)).min(i64::from(i32::MAX)));
        let min = Some(min.unwrap_or(i64::from(i32::MIN)).max(i64::from(i32::MIN)));
        Ok(self.int(key, min, max)?.and_then(|n| i32::try_from(n).ok()))
    }

    pub fn bool(&mut self, key: &str) -> Result<Option<bool>, ApiError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        parse_bool(&v)
            .map(Some)
            .ok_or_else(|| invalid(key, &v, "Value should be a boolean."))
    }

    pub fn one_of(&mut self, key: &str, allowed: &[&str]) -> Result<Option<String>, ApiError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        match &v {
            Value::String(s) if allowed.contains(&s.as_str()) => Ok(Some(s.clone())),
            _ => Err(invalid(
                key,
                &v,
                &format!("Value should be one of: {}.", allowed.join(", ")),
            )),
        }
    }

    /// A list of strings.
    pub fn string_list(&mut self, key: &str) -> Result<Option<Vec<String>>, ApiError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        match &v {
            Value::Array(items) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(invalid(key, &v, "Value should be a list of strings.")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            _ => Err(invalid(key, &v, "Value should be a list of strings.")),
        }
    }

    /// Labels: an object (or a JSON / Python-literal string of one) of scalar values.
    pub fn labels(&mut self, key: &str) -> Result<Option<Labels>, ApiError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        labels_value(key, &v).map(Some)
    }

    /// Fails on any attribute nobody took.
    pub fn finish(self) -> Result<(), ApiError> {
        match self.obj.keys().next() {
            None => Ok(()),
            Some(key) => Err(ApiError::bad_request(format!(
                "Unknown attribute for argument {}: {key}",
                self.argument
            ))),
        }
    }
}

/// Parses a labels value: an object, or a string holding a JSON or Python-literal object.
pub fn labels_value(key: &str, v: &Value) -> Result<Labels, ApiError> {
    let parsed;
    let obj = match v {
        Value::Object(map) => map,
        Value::String(s) => {
            parsed = super::pyliteral::parse_request_literal(s)
                .map_err(|e| invalid(key, v, &format!("Value should be a dictionary ({e}).")))?;
            match &parsed {
                Value::Object(map) => map,
                _ => return Err(invalid(key, v, "Value should be a dictionary.")),
            }
        }
        _ => return Err(invalid(key, v, "Value should be a dictionary.")),
    };
    labels_from_object(obj).map_err(|bad| {
        invalid(
            key,
            v,
            &format!("The value of label {bad} should be a string, number or boolean."),
        )
    })
}

/// The query string as pairs; any parameter not in `allowed` is a 400 "Unknown argument".
pub fn query_params(
    req: &HttpRequest,
    allowed: &[&str],
) -> Result<BTreeMap<String, String>, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| ApiError::bad_request("The query string is malformed."))?;
    let mut out = BTreeMap::new();
    for (k, v) in pairs {
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::bad_request(format!("Unknown argument: \"{k}\"")));
        }
        out.insert(k, v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        Fields::new(
            "cluster_template",
            v.as_object().cloned().unwrap_or_default(),
        )
    }

    #[test]
    fn strict_booleans_accept_magnums_spellings_only() {
        for t in ["1", "t", "TRUE", "on", "y", "Yes"] {
            assert_eq!(parse_bool(&json!(t)), Some(true), "{t}");
        }
        for f in ["0", "f", "False", "off", "n", "NO"] {
            assert_eq!(parse_bool(&json!(f)), Some(false), "{f}");
        }
        assert_eq!(parse_bool(&json!("maybe")), None);
        assert_eq!(parse_bool(&json!(2)), None);
    }

    #[test]
    fn a_missing_mandatory_field_says_so() {
        let err = fields(json!({}))
            .required_string("image_id", 1, 255)
            .expect_err("missing");
        assert_eq!(
            err.to_string(),
            "Invalid input for field/attribute image_id. Value: 'None'. Mandatory field missing."
        );
    }

    #[test]
    fn integers_accept_numeric_strings_and_check_bounds() {
        let mut f = fields(json!({"a": "4", "b": 1000, "c": "x"}));
        assert_eq!(f.int("a", Some(1), None).expect("ok"), Some(4));
        let err = f.int("b", Some(1024), Some(65535)).expect_err("too small");
        assert_eq!(
            err.to_string(),
            "Invalid input for field/attribute b. Value: '1000'. Value should be greater or equal to 1024."
        );
        assert!(f.int("c", None, None).is_err());
    }

    #[test]
    fn node_counts_stop_at_the_node_limit() {
        let mut f =
            fields(json!({"a": 1000, "b": 1001, "c": "2147483648", "d": -1})).with_node_limit(1000);
        assert_eq!(f.nodes("a", 0).expect("at the limit"), Some(1000));
        assert_eq!(
            f.nodes("b", 0).expect_err("past it").to_string(),
            "Invalid input for field/attribute b. Value: '1001'. Value should be less or equal to 1000."
        );
        assert_eq!(
            f.nodes("c", 0).expect_err("past i32").to_string(),
            "Invalid input for field/attribute c. Value: '2147483648'. Value should be less or equal to 1000."
        );
        assert!(f.nodes("d", 0).is_err());
    }

    #[test]
    fn strings_given_numbers_are_refused() {
        let err = fields(json!({"name": 5}))
            .string("name", 1, 255)
            .expect_err("not a string");
        assert!(err.to_string().ends_with("Value should be string."));
    }

    #[test]
    fn unknown_attributes_are_named() {
        let mut f = fields(json!({"name": "x", "bogus": 1}));
        f.string("name", 1, 255).expect("ok");
        assert_eq!(
            f.finish().expect_err("unknown").to_string(),
            "Unknown attribute for argument cluster_template: bogus"
        );
    }

    #[test]
    fn read_only_fields_are_refused() {
        let mut f = fields(json!({"project_id": "p"}));
        assert_eq!(
            f.read_only(&["project_id"]).expect_err("ro").to_string(),
            "Invalid input for field/attribute project_id. Value: 'p'. Cannot set read only field."
        );
    }

    #[test]
    fn labels_accept_objects_and_python_literal_strings() {
        let mut f = fields(json!({"a": {"x": 1, "y": true}, "b": "{'k': 'v'}", "c": [1]}));
        let a = f.labels("a").expect("ok").expect("present");
        assert_eq!(a["x"], "1");
        assert_eq!(a["y"], "True");
        let b = f.labels("b").expect("ok").expect("present");
        assert_eq!(b["k"], "v");
        assert!(f.labels("c").is_err());
    }
}
