//! `metadata`: name, labels, annotations, finalizers, owner references, worded as the
//! apiserver's `ValidateObjectMeta`.

use serde_json::Value;

use crate::api::kube::status::{quote, Cause};
use crate::domain::kube_names::{
    dns1123_subdomain_errors, label_value_errors, qualified_name_errors,
};

/// The largest total size (keys + values) of an object's annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Echoed values are cut to this many characters.
pub(super) const ECHO_MAX: usize = 256;

pub(super) fn echo(s: &str) -> String {
    s.chars().take(ECHO_MAX).collect()
}

pub(super) fn name_causes(meta: &Value, causes: &mut Vec<Cause>) {
    let name = meta["name"].as_str().unwrap_or("");
    let generate = meta["generateName"].as_str().unwrap_or("");
    if !name.is_empty() {
        for m in dns1123_subdomain_errors(name) {
            causes.push(Cause::invalid("metadata.name", &echo(name), &m));
        }
    } else if !generate.is_empty() {
        // A prefix may end with '-' (`maskTrailingDash`).
        let masked = match generate.strip_suffix('-') {
            Some(p) if !p.is_empty() => format!("{p}a"),
            _ => generate.to_string(),
        };
        for m in dns1123_subdomain_errors(&masked) {
            causes.push(Cause::invalid("metadata.generateName", &echo(generate), &m));
        }
    } else {
        causes.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    }
}

pub(super) fn label_causes(meta: &Value, causes: &mut Vec<Cause>) {
    if let Some(labels) = meta["labels"].as_object() {
        for (k, v) in labels {
            for m in qualified_name_errors(k) {
                causes.push(Cause::invalid("metadata.labels", &echo(k), &m));
            }
            if let Some(v) = v.as_str() {
                for m in label_value_errors(v) {
                    causes.push(Cause::invalid("metadata.labels", &echo(v), &m));
                }
            }
        }
    }
    if let Some(annotations) = meta["annotations"].as_object() {
        let mut total = 0usize;
        for (k, v) in annotations {
            for m in qualified_name_errors(&k.to_lowercase()) {
                causes.push(Cause::invalid("metadata.annotations", &echo(k), &m));
            }
            total = total.saturating_add(k.len() + v.as_str().map_or(0, str::len));
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            causes.push(Cause::too_long(
                "metadata.annotations",
                TOTAL_ANNOTATION_SIZE_LIMIT,
            ));
        }
    }
}

/// `metadata.finalizers`: each a qualified name (`ValidateFinalizerName`), none twice.
pub(super) fn finalizer_causes(meta: &Value, causes: &mut Vec<Cause>) {
    let Some(finalizers) = meta["finalizers"].as_array() else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, f) in finalizers.iter().enumerate() {
        let Some(f) = f.as_str() else { continue };
        let field = format!("metadata.finalizers[{i}]");
        for m in qualified_name_errors(f) {
            causes.push(Cause::invalid(field.clone(), &echo(f), &m));
        }
        if !seen.insert(f) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: {}", quote(&echo(f))),
                field,
            });
        }
    }
}

/// The warning the API server gives for a finalizer without a domain prefix.
pub fn finalizer_warnings(body: &Value) -> Vec<String> {
    body["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, f)| {
            let f = f.as_str()?;
            (!f.contains('/')).then(|| {
                format!(
                    "metadata.finalizers[{i}]: {}: prefer a domain-qualified finalizer name \
                     to avoid accidental conflicts with other finalizer writers",
                    quote(&echo(f))
                )
            })
        })
        .collect()
}

/// `metadata.ownerReferences` (`ValidateOwnerReferences`): apiVersion with a version, kind,
/// name and uid given, and at most one controller.
pub(super) fn owner_reference_causes(meta: &Value, causes: &mut Vec<Cause>) {
    let Some(refs) = meta["ownerReferences"].as_array() else {
        return;
    };
    let mut controllers = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let field = |f: &str| format!("metadata.ownerReferences[{i}].{f}");
        let text = |f: &str| r[f].as_str().unwrap_or("");
        let api_version = text("apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or("");
        if api_version.matches('/').count() > 1 {
            causes.push(Cause::invalid(
                field("apiVersion"),
                &echo(api_version),
                &format!("unexpected GroupVersion string: {}", echo(api_version)),
            ));
        } else if version.is_empty() {
            causes.push(Cause::invalid(
                field("apiVersion"),
                &echo(api_version),
                "version must not be empty",
            ));
        }
        for (f, what) in [("kind", "kind"), ("name", "name"), ("uid", "uid")] {
            if text(f).is_empty() {
                causes.push(Cause::invalid(
                    field(f),
                    "",
                    &format!("{what} must not be empty"),
                ));
            }
        }
        if r["controller"].as_bool() == Some(true) {
            controllers.push(format!("{}/{}", text("kind"), text("name")));
        }
    }
    if controllers.len() > 1 {
        causes.push(Cause::invalid_unquoted(
            "metadata.ownerReferences",
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
}

/// Name, labels, annotations, finalizers and owner references, with the apiserver's messages.
pub fn metadata_causes(body: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let meta = &body["metadata"];
    name_causes(meta, &mut causes);
    label_causes(meta, &mut causes);
    finalizer_causes(meta, &mut causes);
    owner_reference_causes(meta, &mut causes);
    causes
}

/// `metadata.clusterName` set: always refused (the design doc's rule).
pub fn cluster_name_cause(body: &Value) -> Option<Cause> {
    match &body["metadata"]["clusterName"] {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(Cause::invalid(
            "metadata.clusterName",
            &echo(s),
            "clusterName is not used and must not be set",
        )),
        _ => Some(Cause::invalid_unquoted(
            "metadata.clusterName",
            "clusterName is not used and must not be set",
        )),
    }
}
