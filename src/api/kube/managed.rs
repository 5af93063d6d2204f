//! `metadata.managedFields` of the objects that keep them (registry clusters and machines), as
//! the API server keeps them: the field manager of a write (its `fieldManager`, or the
//! User-Agent's product), the part of an object a manager can own, apply bodies checked as the
//! API server checks them, conflicts as its 409, and the wire entries (`ManagedFieldsEntry`).
//! What differs by resource is its [`Kind`]; the rules are [`crate::domain::managed_fields`].

use actix_web::http::header;
use actix_web::HttpRequest;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
use serde_json::{Map, Value};

use super::objects::{API_VERSION, KIND};
use super::status::{quote, Cause, KubeError, Resource, CLUSTERS, PATCH_OPTIONS};
use crate::domain::managed_fields::{
    allowed_conflicts, conflict_message, last_applied_of, path_string, validate, Conflict,
    ManagedFields, ManagerId, Operation, Problem, Schema, KUBECTL_MANAGER, OBJECT_META_LISTS,
    UNTRACKED,
};
use crate::domain::registry::{BLOCKED_CONDITION, NAME_ANNOTATION, PROBER_CONDITION};

/// What the server itself owns of one kind of object: managers never own these fields
/// ([`CLUSTER`], and the machines' `MACHINE` in `machines/owners.rs`).
#[derive(Debug)]
pub struct Kind {
    pub resource: &'static Resource,
    /// `group/version`, as the entries and apply bodies name it.
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Annotations the server derives (never a manager's).
    pub derived_annotations: &'static [&'static str],
    /// Other metadata fields the server derives.
    pub derived_metadata: &'static [&'static str],
    /// Status conditions the server sets itself (not a `/status` writer's).
    pub server_conditions: &'static [&'static str],
    /// Whether the object keeps kubectl's last-applied annotation (a machine's annotations
    /// are derived, so it does not).
    pub keeps_last_applied: bool,
}

/// A registry `Cluster`: its derived-name annotation and the prober's conditions are the
/// server's.
pub const CLUSTER: Kind = Kind {
    resource: &CLUSTERS,
    api_version: API_VERSION,
    kind: KIND,
    derived_annotations: &[NAME_ANNOTATION],
    derived_metadata: &[],
    server_conditions: &[PROBER_CONDITION, BLOCKED_CONDITION],
    keeps_last_applied: true,
};

/// A `Cluster`'s (and a `Machine`'s) shape for field ownership: `metav1.ObjectMeta`'s lists (finalizers a set,
/// ownerReferences keyed by uid); the spec's lists are atomic, as a CRD's lists without
/// `x-kubernetes-list-type` are.
pub const SCHEMA: Schema = Schema {
    lists: OBJECT_META_LISTS,
    untracked: UNTRACKED,
};

/// The longest field manager name.
pub const MAX_MANAGER: usize = crate::domain::managed_fields::MAX_MANAGER_LENGTH;

/// The manager the API server creates for a write that names none: the User-Agent up to its
/// first `/`, without unprintable characters, at most 128 bytes.
fn from_user_agent(ua: &str) -> String {
    let mut out = String::new();
    for c in ua.split('/').next().unwrap_or("").chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MANAGER {
            break;
        }
        out.push(c);
    }
    out
}

/// The field manager of a write: `fieldManager`, checked (422 as the API server's
/// `ValidateFieldManager`), or the User-Agent's product.
pub fn manager(
    req: &HttpRequest,
    field_manager: Option<&str>,
    options: &'static super::status::Resource,
) -> Result<String, KubeError> {
    match field_manager.filter(|m| !m.is_empty()) {
        Some(m) => {
            let mut causes = Vec::new();
            if m.len() > MAX_MANAGER {
                causes.push(Cause::too_long("fieldManager", MAX_MANAGER));
            }
            if let Some((i, c)) = m.char_indices().find(|(_, c)| c.is_control()) {
                causes.push(Cause::invalid(
                    "fieldManager",
                    &m.chars().take(MAX_MANAGER).collect::<String>(),
                    &format!("invalid character U+{:04X} (at position {i})", c as u32),
                ));
            }
            if causes.is_empty() {
                Ok(m.to_string())
            } else {
                Err(KubeError::invalid(options, "", causes))
            }
        }
        None => Ok(from_user_agent(
            req.headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
        )),
    }
}

/// `force`: only for apply patches (422 otherwise, as `ValidatePatchOptions`); `true`/`false`.
pub fn force(force: Option<&str>, apply: bool) -> Result<bool, KubeError> {
    let Some(f) = force else {
        return Ok(false);
    };
    if !apply {
        return Err(KubeError::invalid(
            &PATCH_OPTIONS,
            "",
            vec![Cause::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        ));
    }
    match f {
        "true" | "1" | "True" => Ok(true),
        "" | "false" | "0" | "False" => Ok(false),
        other => Err(KubeError::BadRequest(format!(
            "invalid value for force: {}",
            quote(&other.chars().take(32).collect::<String>())
        ))),
    }
}

/// 422 when an apply names no field manager, as the API server answers it.
pub fn require_apply_manager(field_manager: Option<&str>) -> Result<(), KubeError> {
    if field_manager.unwrap_or("").is_empty() {
        return Err(KubeError::invalid(
            &PATCH_OPTIONS,
            "",
            vec![Cause::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    Ok(())
}

/// Checks an applied configuration as the API server does: its apiVersion and kind (400), no
/// `metadata.managedFields` (400).
pub fn check_applied(
    of: &Kind,
    applied: &Value,
    namespace: &str,
    name: &str,
) -> Result<(), KubeError> {
    let expected = of.api_version;
    let version = applied["apiVersion"].as_str().unwrap_or("");
    if version != expected {
        return Err(KubeError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {expected}"
        )));
    }
    let kind = applied["kind"].as_str().unwrap_or("");
    if kind != of.kind {
        return Err(KubeError::BadRequest(format!(
            "failed to create typed patch object ({namespace}/{name}; {expected}, Kind={kind}): no corresponding type for {expected}, Kind={kind}"
        )));
    }
    if applied["metadata"].get("managedFields").is_some() {
        return Err(KubeError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    Ok(())
}

/// Which part of an object a write reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: everything but `status`.
    Main,
    /// `/status`: `status` only (without the prober's `OK` condition).
    Status,
}

impl Part {
    pub fn subresource(self) -> &'static str {
        match self {
            Part::Main => "",
            Part::Status => "status",
        }
    }
}

/// The part of an object (a `Cluster` as JSON) whose fields managers own: without what the
/// server owns (apiVersion, kind, name, uid, resourceVersion, timestamps, the derived-name
/// annotation) and without what the write does not reach.
pub fn tracked(of: &Kind, object: &Value, part: Part) -> Value {
    let mut out = Map::new();
    let Some(o) = object.as_object() else {
        return Value::Object(out);
    };
    match part {
        Part::Main => {
            for (k, v) in o {
                match k.as_str() {
                    "apiVersion" | "kind" | "status" => {}
                    "metadata" => {
                        let mut meta = v.as_object().cloned().unwrap_or_default();
                        for server in [
                            "name",
                            "namespace",
                            "uid",
                            "resourceVersion",
                            "generation",
                            "creationTimestamp",
                            "deletionTimestamp",
                            "deletionGracePeriodSeconds",
                            "managedFields",
                            "selfLink",
                        ] {
                            meta.remove(server);
                        }
                        for server in of.derived_metadata {
                            meta.remove(*server);
                        }
                        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut)
                        {
                            for derived in of.derived_annotations {
                                a.remove(*derived);
                            }
                            if a.is_empty() {
                                meta.remove("annotations");
                            }
                        }
                        drop_empty(&mut meta);
                        if !meta.is_empty() {
                            out.insert(k.clone(), Value::Object(meta));
                        }
                    }
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Part::Status => {
            if let Some(status) = o.get("status").and_then(Value::as_object) {
                let mut status = status.clone();
                if let Some(cs) = status.get_mut("conditions").and_then(Value::as_array_mut) {
                    cs.retain(|c| {
                        let t = c["type"].as_str().unwrap_or("");
                        !of.server_conditions.contains(&t)
                    });
                }
                drop_empty(&mut status);
                if !status.is_empty() {
                    out.insert("status".into(), Value::Object(status));
                }
            }
        }
    }
    Value::Object(out)
}

/// Empty maps and lists are no fields of their own (the registry does not keep them).
fn drop_empty(m: &mut Map<String, Value>) {
    m.retain(|_, v| match v {
        Value::Object(o) => !o.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Null => false,
        _ => true,
    });
}

/// Server-side apply of `applied` by `id` to `part` of the object as it is (`live`; None when
/// it does not exist yet): the merged object, with `fields` recording who owns what now; 409
/// listing the conflicts when other managers own what it would change and `force` is off.
/// A `kubectl` apply to an object with kubectl's last-applied annotation does not conflict on
/// the fields the annotation still holds the values of (the API server's
/// `lastAppliedManager`): such an apply is forced when those are its only conflicts.
pub fn apply(
    of: &Kind,
    fields: &mut ManagedFields,
    live: Option<&Value>,
    applied: &Value,
    part: Part,
    id: &ManagerId,
    force: bool,
) -> Result<Value, KubeError> {
    let empty = Value::Object(Map::new());
    let (tracked_live, exists) = match live {
        Some(object) => (tracked(of, object, part), true),
        None => (empty, false),
    };
    let applied_part = tracked(of, applied, part);
    let now = chrono::Utc::now();
    let conflicts = match fields.apply(
        &SCHEMA,
        &tracked_live,
        exists,
        &applied_part,
        id,
        of.api_version,
        force,
        now,
    ) {
        Ok(merged) => return Ok(merged),
        Err(conflicts) => conflicts,
    };
    let last = live
        .filter(|_| id.manager == KUBECTL_MANAGER && part == Part::Main && of.keeps_last_applied)
        .and_then(last_applied_of);
    let Some(last) = last else {
        return Err(conflict_error(&conflicts));
    };
    let allowed = allowed_conflicts(&SCHEMA, &tracked_live, &tracked(of, &last, part));
    let left: Vec<Conflict> = conflicts
        .into_iter()
        .filter(|c| !allowed.contains(&c.path))
        .collect();
    if !left.is_empty() {
        return Err(conflict_error(&left));
    }
    fields
        .apply(
            &SCHEMA,
            &tracked_live,
            exists,
            &applied_part,
            id,
            of.api_version,
            true,
            now,
        )
        .map_err(|c| conflict_error(&c))
}

/// The 409 of an apply that would change other managers' fields.
pub fn conflict_error(conflicts: &[Conflict]) -> KubeError {
    KubeError::ApplyConflict {
        message: conflict_message(conflicts),
        causes: conflicts
            .iter()
            .map(|c| Cause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {}", c.manager),
                field: path_string(&c.path),
            })
            .collect(),
    }
}

/// 422 naming `metadata.managedFields[i]...` when the entries a write leaves on the object
/// `name` are not valid (`ValidateManagedFields`: a manager name too long or unprintable, a
/// subresource name too long).
pub fn check_entries(of: &Kind, m: &ManagedFields, name: &str) -> Result<(), KubeError> {
    let causes: Vec<Cause> = validate(m)
        .into_iter()
        .map(|(field, problem)| match problem {
            Problem::TooLong(max) => Cause::too_long(field, max),
            Problem::Invalid { value, detail } => Cause::invalid(
                field,
                &value.chars().take(MAX_MANAGER).collect::<String>(),
                &detail,
            ),
        })
        .collect();
    if causes.is_empty() {
        Ok(())
    } else {
        Err(KubeError::invalid(of.resource, name, causes))
    }
}

/// The operation of a write.
pub fn operation(apply: bool) -> Operation {
    if apply {
        Operation::Apply
    } else {
        Operation::Update
    }
}

/// The entries as `metadata.managedFields` shows them.
pub fn wire(m: &ManagedFields) -> Vec<ManagedFieldsEntry> {
    m.0.iter()
        .map(|e| ManagedFieldsEntry {
            api_version: Some(e.api_version.clone()),
            fields_type: Some(e.fields_type.clone()),
            fields_v1: Some(FieldsV1(e.fields.to_fields_v1())),
            manager: Some(e.manager.clone()),
            operation: Some(
                match e.operation {
                    Operation::Apply => "Apply",
                    Operation::Update => "Update",
                }
                .into(),
            ),
            subresource: Some(e.subresource.clone()).filter(|s| !s.is_empty()),
            time: e.time.and_then(|t| {
                k8s_openapi::jiff::Timestamp::from_second(t.timestamp())
                    .ok()
                    .map(Time)
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_manager_comes_from_the_user_agent_when_none_is_named() {
        assert_eq!(
            from_user_agent("kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"),
            "kubectl"
        );
        assert_eq!(
            from_user_agent("OpenAPI-Generator/31.0.0/python"),
            "OpenAPI-Generator"
        );
        assert_eq!(from_user_agent(&"x".repeat(300)).len(), 128);
        assert_eq!(from_user_agent(""), "");
    }

    #[test]
    fn force_is_for_apply_only() {
        assert_eq!(force(None, false).ok(), Some(false));
        assert_eq!(force(Some("true"), true).ok(), Some(true));
        assert_eq!(
            force(Some("true"), false).err().map(|e| e.to_string()),
            Some(
                "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
                    .to_string()
            )
        );
    }

    #[test]
    fn applied_objects_name_their_version_and_kind() {
        let ok = json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "a"}});
        assert!(check_applied(&CLUSTER, &ok, "p", "a").is_ok());
        let e = check_applied(&CLUSTER, &json!({"kind": KIND}), "p", "a").err();
        assert_eq!(
            e.map(|e| e.to_string()),
            Some("Incorrect version specified in apply patch. Specified patch version: , expected: clusterregistry.k8s.io/v1alpha1".to_string())
        );
        assert!(check_applied(&CLUSTER, &json!({"apiVersion": API_VERSION}), "p", "a").is_err());
        let mf =
            json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"managedFields": []}});
        assert!(check_applied(&CLUSTER, &mf, "p", "a").is_err());
    }

    #[test]
    fn tracked_parts_leave_out_what_the_server_owns() {
        let obj = json!({"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "3", "labels": {"x": "1"},
                "annotations": {NAME_ANNOTATION: "n"}},
            "spec": {"authInfo": {}},
            "status": {"conditions": [{"type": "OK", "status": "True"}, {"type": "R", "status": "True"}]}});
        assert_eq!(
            tracked(&CLUSTER, &obj, Part::Main),
            json!({"metadata": {"labels": {"x": "1"}}, "spec": {"authInfo": {}}})
        );
        assert_eq!(
            tracked(&CLUSTER, &obj, Part::Status),
            json!({"status": {"conditions": [{"type": "R", "status": "True"}]}})
        );
    }
}
