//! Reading `ClusterGroup` and `ClusterGroupBinding` bodies: the strict decoding check (by
//! `fieldValidation`), then each field, every bad one a cause of one 422, into the domain's
//! parsed types.

use serde_json::{Map, Value};

use super::object::{
    binding_name, expression_text, ClusterRef, CLUSTER_GROUPS, CLUSTER_GROUP_BINDINGS,
};
use crate::api::kube::request::Params;
use crate::api::kube::status::{Cause, KubeError, Resource};
use crate::api::kube::validation::{self, FieldValidation};
use crate::domain::cluster_group::{
    binding_roles, GroupDescription, GroupName, GroupRight, GroupSelector,
};
use crate::domain::selector::LabelSelector;

const TOP: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
const META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
];
const GROUP_SPEC: &[&str] = &["description", "selector", "clusters"];
const SELECTOR: &[&str] = &["matchLabels", "matchExpressions"];
const EXPRESSION: &[&str] = &["key", "operator", "values"];
const CLUSTER_REF: &[&str] = &["namespace", "name"];
const BINDING_SPEC: &[&str] = &["groupRef", "subject", "access"];
const GROUP_REF: &[&str] = &["name"];
const SUBJECT: &[&str] = &["project", "roles"];
/// The annotation kubectl apply keeps; neither kind keeps annotations, so it is dropped
/// without a warning.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A group's spec, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupAsked {
    /// The name, or the `generateName` prefix when the body names none.
    pub name: Result<GroupName, String>,
    pub description: Option<GroupDescription>,
    pub selector: Option<GroupSelector>,
    pub clusters: Vec<ClusterRef>,
    pub warnings: Vec<String>,
}

/// A binding's spec, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingAsked {
    pub name: String,
    pub group: GroupName,
    pub project: String,
    pub roles: Option<Vec<String>>,
    pub right: GroupRight,
    pub warnings: Vec<String>,
}

fn unknown(obj: &Map<String, Value>, known: &[&str], path: &str, out: &mut Vec<String>) {
    out.extend(
        obj.keys()
            .filter(|k| !known.contains(&k.as_str()))
            .map(|k| format!("{path}.{k}")),
    );
}

fn object<'a>(
    v: Option<&'a Value>,
    field: &str,
    causes: &mut Vec<Cause>,
) -> Option<&'a Map<String, Value>> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            causes.push(Cause::type_invalid(
                field,
                &type_name(other),
                "must be an object",
            ));
            None
        }
    }
}

fn list<'a>(v: Option<&'a Value>, field: &str, causes: &mut Vec<Cause>) -> &'a [Value] {
    match v {
        None | Some(Value::Null) => &[],
        Some(Value::Array(a)) => a,
        Some(other) => {
            causes.push(Cause::type_invalid(
                field,
                &type_name(other),
                "must be a list",
            ));
            &[]
        }
    }
}

fn string<'a>(v: Option<&'a Value>, field: &str, causes: &mut Vec<Cause>) -> Option<&'a str> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            causes.push(Cause::type_invalid(
                field,
                &type_name(other),
                "must be a string",
            ));
            None
        }
    }
}

fn type_name(v: &Value) -> String {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
    .to_string()
}

/// The type meta, the namespace, the unknown fields (refused or warned of by
/// `fieldValidation`) and the metadata a kind does not keep (warned of). `extra` lists the
/// unknown fields below `spec`, which the caller walks.
fn check_common(
    value: &Value,
    resource: &'static Resource,
    namespace: &str,
    p: &Params,
    mut extra: Vec<String>,
) -> Result<Vec<String>, KubeError> {
    let Some(top) = value.as_object() else {
        return Err(KubeError::bad_request(format!(
            "the body of a {} must be a JSON or YAML object",
            resource.kind
        )));
    };
    validation::check_type_meta(value, resource)?;
    validation::check_namespace(value, namespace)?;
    unknown(top, TOP, "", &mut extra);
    if let Some(meta) = top.get("metadata").and_then(Value::as_object) {
        unknown(meta, META, ".metadata", &mut extra);
    }
    let mut warnings = Vec::new();
    if !extra.is_empty() {
        extra.sort();
        match FieldValidation::parse(p.field_validation.as_deref())? {
            FieldValidation::Strict => return Err(KubeError::strict_decoding(resource, &extra)),
            FieldValidation::Warn => {
                warnings.extend(extra.iter().map(|f| format!("unknown field \"{f}\"")))
            }
            FieldValidation::Ignore => {}
        }
    }
    let meta = &value["metadata"];
    let labelled = meta["labels"].as_object().is_some_and(|l| !l.is_empty());
    let annotated = meta["annotations"]
        .as_object()
        .is_some_and(|a| a.keys().any(|k| k != LAST_APPLIED));
    if labelled || annotated {
        warnings.push(format!(
            "a {} keeps no labels or annotations; metadata.labels and metadata.annotations \
             are not stored",
            resource.kind
        ));
    }
    Ok(warnings)
}

/// The selector's text of a `metav1.LabelSelector`; `None` for an empty one (a group without
/// a selector has only its explicit members).
fn selector(
    sel: &Map<String, Value>,
    causes: &mut Vec<Cause>,
    extra: &mut Vec<String>,
) -> Option<GroupSelector> {
    unknown(sel, SELECTOR, ".spec.selector", extra);
    let before = causes.len();
    let mut terms = Vec::new();
    if let Some(labels) = object(sel.get("matchLabels"), "spec.selector.matchLabels", causes) {
        for (k, v) in labels {
            let field = format!("spec.selector.matchLabels[{k}]");
            let Some(v) = string(Some(v), &field, causes) else {
                continue;
            };
            let term = format!("{k}={v}");
            match LabelSelector::parse(&term) {
                Ok(_) => terms.push(term),
                Err(e) => causes.push(Cause::invalid(field, v, &e.0)),
            }
        }
    }
    let exprs = list(
        sel.get("matchExpressions"),
        "spec.selector.matchExpressions",
        causes,
    );
    for (i, e) in exprs.iter().enumerate() {
        let field = format!("spec.selector.matchExpressions[{i}]");
        let Some(e) = object(Some(e), &field, causes) else {
            continue;
        };
        unknown(e, EXPRESSION, &format!(".{field}"), extra);
        let key = string(e.get("key"), &format!("{field}.key"), causes).unwrap_or("");
        let op = string(e.get("operator"), &format!("{field}.operator"), causes).unwrap_or("");
        let mut values = Vec::new();
        for (j, v) in list(e.get("values"), &format!("{field}.values"), causes)
            .iter()
            .enumerate()
        {
            if let Some(v) = string(Some(v), &format!("{field}.values[{j}]"), causes) {
                values.push(v.to_string());
            }
        }
        if key.is_empty() {
            causes.push(Cause::required(format!("{field}.key"), "a key is required"));
            continue;
        }
        match expression_text(key, op, &values)
            .and_then(|t| LabelSelector::parse(&t).map(|_| t).map_err(|e| e.0))
        {
            Ok(t) => terms.push(t),
            Err(why) => causes.push(Cause::invalid(format!("{field}.operator"), op, &why)),
        }
    }
    if causes.len() > before || terms.is_empty() {
        return None;
    }
    match GroupSelector::parse(&terms.join(",")) {
        Ok(s) => Some(s),
        Err(why) => {
            causes.push(Cause::invalid_unquoted("spec.selector", &why));
            None
        }
    }
}

/// Reads a `ClusterGroup` body (of a create, or a replace or patch's result) in `namespace`;
/// a cluster reference without a namespace is one of the group's own.
pub fn group(value: &Value, namespace: &str, p: &Params) -> Result<GroupAsked, KubeError> {
    let mut causes = Vec::new();
    let mut extra = Vec::new();
    let empty = Map::new();
    let spec = object(value.get("spec"), "spec", &mut causes).unwrap_or(&empty);
    unknown(spec, GROUP_SPEC, ".spec", &mut extra);
    let description = string(spec.get("description"), "spec.description", &mut causes)
        .filter(|d| !d.is_empty())
        .and_then(|d| match GroupDescription::parse(d) {
            Ok(d) => Some(d),
            Err(why) => {
                causes.push(Cause::invalid_unquoted("spec.description", &why));
                None
            }
        });
    let selector = object(spec.get("selector"), "spec.selector", &mut causes)
        .and_then(|s| selector(s, &mut causes, &mut extra));
    let mut clusters: Vec<ClusterRef> = Vec::new();
    for (i, c) in list(spec.get("clusters"), "spec.clusters", &mut causes)
        .iter()
        .enumerate()
    {
        let field = format!("spec.clusters[{i}]");
        let Some(c) = object(Some(c), &field, &mut causes) else {
            continue;
        };
        unknown(c, CLUSTER_REF, &format!(".{field}"), &mut extra);
        let ns = string(
            c.get("namespace"),
            &format!("{field}.namespace"),
            &mut causes,
        )
        .filter(|n| !n.is_empty())
        .unwrap_or(namespace);
        match string(c.get("name"), &format!("{field}.name"), &mut causes) {
            Some(n) if !n.is_empty() => {
                let r = ClusterRef {
                    namespace: ns.to_string(),
                    name: n.to_string(),
                };
                if !clusters.contains(&r) {
                    clusters.push(r);
                }
            }
            _ => causes.push(Cause::required(
                format!("{field}.name"),
                "a member is named by its namespace and name",
            )),
        }
    }
    let warnings = check_common(value, &CLUSTER_GROUPS, namespace, p, extra)?;
    let meta = &value["metadata"];
    let named = meta["name"].as_str().unwrap_or("");
    let generate = meta["generateName"].as_str().unwrap_or("");
    let name = if named.is_empty() && !generate.is_empty() {
        Err(generate.to_string())
    } else {
        match GroupName::parse(named) {
            Ok(n) => Ok(n),
            Err(why) => {
                let cause = if named.is_empty() {
                    Cause::required("metadata.name", &why)
                } else {
                    Cause::invalid("metadata.name", named, &why)
                };
                causes.insert(0, cause);
                Err(String::new())
            }
        }
    };
    if !causes.is_empty() {
        return Err(KubeError::invalid(&CLUSTER_GROUPS, named, causes));
    }
    Ok(GroupAsked {
        name,
        description,
        selector,
        clusters,
        warnings,
    })
}

/// Reads a `ClusterGroupBinding` body in `namespace`. Its name, when given, must be the one
/// it is served under: `<group>.<project>`.
pub fn binding(value: &Value, namespace: &str, p: &Params) -> Result<BindingAsked, KubeError> {
    let mut causes = Vec::new();
    let mut extra = Vec::new();
    let empty = Map::new();
    let spec = object(value.get("spec"), "spec", &mut causes).unwrap_or(&empty);
    unknown(spec, BINDING_SPEC, ".spec", &mut extra);
    let group_ref = object(spec.get("groupRef"), "spec.groupRef", &mut causes).unwrap_or(&empty);
    unknown(group_ref, GROUP_REF, ".spec.groupRef", &mut extra);
    let subject = object(spec.get("subject"), "spec.subject", &mut causes).unwrap_or(&empty);
    unknown(subject, SUBJECT, ".spec.subject", &mut extra);
    let group_name = string(group_ref.get("name"), "spec.groupRef.name", &mut causes).unwrap_or("");
    let group = match GroupName::parse(group_name) {
        Ok(g) => Some(g),
        Err(_) if group_name.is_empty() => {
            causes.push(Cause::required(
                "spec.groupRef.name",
                "the name of a ClusterGroup of this namespace",
            ));
            None
        }
        Err(why) => {
            causes.push(Cause::invalid("spec.groupRef.name", group_name, &why));
            None
        }
    };
    let project = string(subject.get("project"), "spec.subject.project", &mut causes)
        .unwrap_or("")
        .to_string();
    if project.is_empty() {
        causes.push(Cause::required(
            "spec.subject.project",
            "the project the binding grants access to",
        ));
    } else if project.len() > 255 {
        causes.push(Cause::too_long("spec.subject.project", 255));
    } else if project == namespace {
        causes.push(Cause::invalid(
            "spec.subject.project",
            &project,
            "a cluster group cannot be bound to its own project, which has its clusters already",
        ));
    }
    let roles = match subject.get("roles") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let items = list(Some(v), "spec.subject.roles", &mut causes);
            let mut roles = Vec::new();
            for (i, r) in items.iter().enumerate() {
                if let Some(r) = string(Some(r), &format!("spec.subject.roles[{i}]"), &mut causes) {
                    roles.push(r.to_string());
                }
            }
            // An empty list is the same as none: every member of the project.
            (!roles.is_empty() || !items.is_empty()).then_some(roles)
        }
    };
    let roles = binding_roles(roles).unwrap_or_else(|why| {
        causes.push(Cause::invalid_unquoted("spec.subject.roles", &why));
        None
    });
    let access = string(spec.get("access"), "spec.access", &mut causes).unwrap_or("");
    let right = GroupRight::parse(access);
    if right.is_none() {
        if access.is_empty() {
            causes.push(Cause::required("spec.access", "read or write"));
        } else {
            causes.push(Cause::not_supported(
                "spec.access",
                access,
                &["read", "write"],
            ));
        }
    }
    let warnings = check_common(value, &CLUSTER_GROUP_BINDINGS, namespace, p, extra)?;
    let named = value["metadata"]["name"].as_str().unwrap_or("");
    let name = binding_name(group_name, &project);
    if !named.is_empty() && named != name && causes.is_empty() {
        causes.push(Cause::invalid(
            "metadata.name",
            named,
            &format!("a binding of group {group_name} to project {project} is named {name}"),
        ));
    }
    match (group, right) {
        (Some(group), Some(right)) if causes.is_empty() => Ok(BindingAsked {
            name,
            group,
            project,
            roles,
            right,
            warnings,
        }),
        _ => Err(KubeError::invalid(
            &CLUSTER_GROUP_BINDINGS,
            if named.is_empty() {
                name.as_str()
            } else {
                named
            },
            causes,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(err: KubeError) -> Vec<String> {
        match err {
            KubeError::Invalid { causes, .. } => causes.into_iter().map(|c| c.field).collect(),
            other => panic!("an Invalid, not {other}"),
        }
    }

    #[test]
    fn a_group_body_reads_into_the_domains_types() {
        let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "ClusterGroup",
            "metadata": {"name": "prod"},
            "spec": {"description": "production", "selector": {"matchLabels": {"env": "prod"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                "clusters": [{"name": "c1"}, {"namespace": "other", "name": "c2"}, {"name": "c1"}]}});
        let g = group(&body, "p", &Params::default()).expect("valid");
        assert_eq!(g.name.as_ref().map(GroupName::as_str), Ok("prod"));
        assert_eq!(
            g.selector.as_ref().map(GroupSelector::as_str),
            Some("env=prod,tier in (a,b)")
        );
        assert_eq!(
            g.clusters,
            vec![
                ClusterRef {
                    namespace: "p".into(),
                    name: "c1".into()
                },
                ClusterRef {
                    namespace: "other".into(),
                    name: "c2".into()
                }
            ]
        );
    }

    #[test]
    fn every_bad_group_field_is_a_cause() {
        let body = json!({"metadata": {"name": "Bad_Name"},
            "spec": {"description": "x".repeat(256), "selector": {"matchLabels": {"env": "a b"},
                "matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "Near"}]},
                "clusters": [{"namespace": "x"}, 3]}});
        let fields = causes(group(&body, "p", &Params::default()).expect_err("invalid"));
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.description",
                "spec.selector.matchLabels[env]",
                "spec.selector.matchExpressions[0].operator",
                "spec.selector.matchExpressions[1].operator",
                "spec.clusters[0].name",
                "spec.clusters[1]",
            ]
        );
    }

    #[test]
    fn unknown_group_fields_are_refused_when_strict_and_warned_of_otherwise() {
        let body = json!({"metadata": {"name": "g", "labels": {"a": "b"}},
            "spec": {"selector": {"matchLabels": {"a": "b"}, "matchFields": {}}, "members": []}});
        let strict = Params {
            field_validation: Some("Strict".into()),
            ..Params::default()
        };
        let err = group(&body, "p", &strict).expect_err("strict");
        assert!(
            err.to_string().contains("unknown field \".spec.members\""),
            "{err}"
        );
        assert!(
            err.to_string().contains(".spec.selector.matchFields"),
            "{err}"
        );
        let g = group(&body, "p", &Params::default()).expect("warned");
        assert_eq!(g.warnings.len(), 3, "{:?}", g.warnings);
    }

    #[test]
    fn a_binding_body_is_named_after_its_group_and_project() {
        let body = json!({"spec": {"groupRef": {"name": "prod"},
            "subject": {"project": "b", "roles": ["Reader", "reader"]}, "access": "write"}});
        let b = binding(&body, "a", &Params::default()).expect("valid");
        assert_eq!(b.name, "prod.b");
        assert_eq!(b.roles, Some(vec!["Reader".to_string()]));
        assert_eq!(b.right, GroupRight::Write);
        let mut named = body.clone();
        named["metadata"] = json!({"name": "other"});
        assert_eq!(
            causes(binding(&named, "a", &Params::default()).expect_err("misnamed")),
            ["metadata.name"]
        );
        let bad = json!({"spec": {"subject": {"project": "a", "roles": [""]}, "access": "admin"}});
        assert_eq!(
            causes(binding(&bad, "a", &Params::default()).expect_err("invalid")),
            [
                "spec.groupRef.name",
                "spec.subject.project",
                "spec.subject.roles",
                "spec.access"
            ]
        );
    }
}
