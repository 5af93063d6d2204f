//! The one description of the served types: OpenAPI v3 (`openapi.rs`) renders it (and
//! `/openapi/v2` is derived from that), field validation (`validation.rs`) walks it to find
//! unknown fields.

mod cluster;
mod group;
mod machine;
mod machine_deployment;
mod meta;
mod profile;
mod review;

pub use cluster::{
    AUTH_INFO, CLUSTER, CLUSTER_CONDITION, CLUSTER_LIST, CLUSTER_SPEC, CLUSTER_STATUS,
    KUBERNETES_API_ENDPOINTS, OBJECT_REFERENCE, SERVER_ADDRESS_BY_CLIENT_CIDR,
};
pub use group::{
    BINDING_SUBJECT, CLUSTER_GROUP, CLUSTER_GROUP_BINDING, CLUSTER_GROUP_BINDING_LIST,
    CLUSTER_GROUP_BINDING_SPEC, CLUSTER_GROUP_LIST, CLUSTER_GROUP_MEMBER, CLUSTER_GROUP_SPEC,
    CLUSTER_GROUP_STATUS, CLUSTER_REFERENCE, GROUP_REFERENCE, LABEL_SELECTOR,
};
pub use machine::{
    CONTAINER_RUNTIME_INFO, CORE_OBJECT_REFERENCE, MACHINE, MACHINE_LIST, MACHINE_SPEC,
    MACHINE_STATUS, MACHINE_VERSION_INFO, NODE_ADDRESS, TAINT,
};
pub use machine_deployment::{
    MACHINE_DEPLOYMENT, MACHINE_DEPLOYMENT_LIST, MACHINE_DEPLOYMENT_SPEC,
    MACHINE_DEPLOYMENT_STATUS, MACHINE_DEPLOYMENT_STRATEGY, MACHINE_TEMPLATE_SPEC, SCALE,
};
pub use meta::{
    CONDITION, DELETE_OPTIONS, FIELD_SELECTOR_REQUIREMENT, LABEL_SELECTOR_REQUIREMENT, LIST_META,
    MANAGED_FIELDS_ENTRY, OBJECT_META, OWNER_REFERENCE, PATCH, PRECONDITIONS, STATUS,
};
pub use profile::{
    CLUSTER_MANAGER, CLUSTER_PROFILE, CLUSTER_PROFILE_LIST, CLUSTER_PROFILE_SPEC,
    CLUSTER_PROFILE_STATUS, CLUSTER_VERSION, PROPERTY,
};
pub use review::{
    FIELD_SELECTOR_ATTRIBUTES, LABEL_SELECTOR_ATTRIBUTES, NON_RESOURCE_ATTRIBUTES,
    NON_RESOURCE_RULE, RESOURCE_ATTRIBUTES, RESOURCE_RULE, SELF_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_ACCESS_REVIEW_SPEC, SELF_SUBJECT_REVIEW, SELF_SUBJECT_REVIEW_STATUS,
    SELF_SUBJECT_RULES_REVIEW, SELF_SUBJECT_RULES_REVIEW_SPEC, SUBJECT_ACCESS_REVIEW_STATUS,
    SUBJECT_RULES_REVIEW_STATUS, USER_INFO,
};

use serde_json::{json, Map, Value};

/// The type of one property.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    String,
    /// A string holding base64 (`format: byte`).
    Byte,
    /// An RFC 3339 time (`format: date-time`).
    DateTime,
    Int64,
    /// An integer or a string (`intstr.IntOrString`: a count or a percentage).
    IntOrString,
    Bool,
    /// `map[string]string`.
    StringMap,
    /// `[]string`.
    StringList,
    /// `map[string][]string`.
    StringListMap,
    /// A nested object with its own schema.
    Object(&'static Schema),
    /// A list of objects with their own schema.
    ObjectList(&'static Schema),
    /// Any JSON object (not walked).
    FreeForm,
    /// Any JSON value kept as given (`x-kubernetes-preserve-unknown-fields`, not walked).
    Preserved,
}

/// One property of an object schema.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub description: &'static str,
    pub ty: Ty,
    pub required: bool,
}

/// One component schema (`components.schemas[id]`).
#[derive(Debug)]
pub struct Schema {
    pub id: &'static str,
    pub description: &'static str,
    pub fields: &'static [Field],
    /// `(group, version, kind)` for top-level kinds: `x-kubernetes-group-version-kind`.
    pub gvk: Option<(&'static str, &'static str, &'static str)>,
}

impl Schema {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

const fn f(name: &'static str, description: &'static str, ty: Ty) -> Field {
    Field {
        name,
        description,
        ty,
        required: false,
    }
}

const fn req(name: &'static str, description: &'static str, ty: Ty) -> Field {
    Field {
        name,
        description,
        ty,
        required: true,
    }
}

/// `#/components/schemas/<id>`.
pub fn ref_of(schema: &Schema) -> String {
    format!("#/components/schemas/{}", schema.id)
}

/// The OpenAPI v3 property of one field, as kube-apiserver writes it (`allOf` around `$ref`).
fn property(field: &Field) -> Value {
    let mut p = match field.ty {
        Ty::String => json!({"type": "string"}),
        Ty::Byte => json!({"type": "string", "format": "byte"}),
        Ty::DateTime => json!({"type": "string", "format": "date-time"}),
        Ty::Int64 => json!({"type": "integer", "format": "int64"}),
        Ty::IntOrString => json!({"x-kubernetes-int-or-string": true}),
        Ty::Bool => json!({"type": "boolean"}),
        Ty::StringMap => json!({"type": "object",
            "additionalProperties": {"type": "string", "default": ""}}),
        Ty::StringList => json!({"type": "array", "items": {"type": "string", "default": ""}}),
        Ty::StringListMap => json!({"type": "object", "additionalProperties": {"type": "array",
            "items": {"type": "string", "default": ""}}}),
        Ty::Object(s) => json!({"allOf": [{"$ref": ref_of(s)}], "default": {}}),
        Ty::ObjectList(s) => json!({"type": "array",
            "items": {"allOf": [{"$ref": ref_of(s)}], "default": {}}}),
        Ty::FreeForm => json!({"type": "object"}),
        Ty::Preserved => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    p["description"] = json!(field.description);
    p
}

/// The component schema of `schema`.
pub fn render(schema: &Schema) -> Value {
    let mut props = Map::new();
    for field in schema.fields {
        props.insert(field.name.to_string(), property(field));
    }
    let mut s = json!({"type": "object", "description": schema.description});
    if !props.is_empty() {
        s["properties"] = Value::Object(props);
    }
    let required: Vec<&str> = schema
        .fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name)
        .collect();
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    if let Some((g, v, k)) = schema.gvk {
        s["x-kubernetes-group-version-kind"] = json!([{"group": g, "version": v, "kind": k}]);
    }
    s
}

/// `schema` and every schema it reaches, each once, in a stable order.
pub fn closure(roots: &[&'static Schema]) -> Vec<&'static Schema> {
    let mut out: Vec<&'static Schema> = Vec::new();
    let mut stack: Vec<&'static Schema> = roots.iter().rev().copied().collect();
    while let Some(s) = stack.pop() {
        if out.iter().any(|o| o.id == s.id) {
            continue;
        }
        out.push(s);
        for field in s.fields.iter().rev() {
            if let Ty::Object(c) | Ty::ObjectList(c) = field.ty {
                stack.push(c);
            }
        }
    }
    out
}

/// Deepest nesting walked; deeper input is reported as one unknown field at the cut.
const MAX_WALK_DEPTH: usize = 32;

/// Most unknown fields reported.
pub const MAX_UNKNOWN_REPORTED: usize = 100;

/// Most values visited in one walk.
const MAX_WALK_NODES: usize = 100_000;

/// The paths (`spec.bogusField`, `spec.kubernetesApiEndpoints.serverEndpoints[0].x`) of the
/// fields of `body` that `schema` does not declare, in key order, at most
/// `MAX_UNKNOWN_REPORTED`.
pub fn unknown_fields(schema: &Schema, body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut budget = MAX_WALK_NODES;
    walk(schema, body, "", 0, &mut out, &mut budget);
    out
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn walk(
    schema: &Schema,
    v: &Value,
    path: &str,
    depth: usize,
    out: &mut Vec<String>,
    budget: &mut usize,
) {
    let Value::Object(map) = v else { return };
    for (k, child) in map {
        if out.len() >= MAX_UNKNOWN_REPORTED || *budget == 0 {
            return;
        }
        *budget -= 1;
        let here = join(path, k);
        let Some(field) = schema.field(k) else {
            out.push(here);
            continue;
        };
        if depth >= MAX_WALK_DEPTH {
            continue;
        }
        match field.ty {
            Ty::Object(s) => walk(s, child, &here, depth + 1, out, budget),
            Ty::ObjectList(s) => {
                if let Value::Array(items) = child {
                    for (i, item) in items.iter().enumerate() {
                        if out.len() >= MAX_UNKNOWN_REPORTED || *budget == 0 {
                            return;
                        }
                        *budget -= 1;
                        walk(s, item, &format!("{here}[{i}]"), depth + 1, out, budget);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_found_at_every_level_with_list_indexes() {
        let body = json!({
            "apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "a", "foo": 1, "labels": {"any": "thing"}},
            "spec": {"bogusField": true, "kubernetesApiEndpoints": {
                "serverEndpoints": [{"clientCIDR": "0.0.0.0/0"}, {"serverAddress": "h", "x": 1}]}},
            "status": {"conditions": [{"type": "OK", "status": "True", "y": 2}]},
            "extra": {}
        });
        assert_eq!(
            unknown_fields(&CLUSTER, &body),
            vec![
                "extra",
                "metadata.foo",
                "spec.bogusField",
                "spec.kubernetesApiEndpoints.serverEndpoints[1].x",
                "status.conditions[0].y",
            ]
        );
    }

    #[test]
    fn a_known_body_has_no_unknown_fields() {
        let body = json!({"metadata": {"name": "a", "managedFields": [{"manager": "m",
            "fieldsV1": {"f:spec": {}}}], "ownerReferences": [{"kind": "K"}]},
            "spec": {"authInfo": {"controller": {"kind": "Secret", "name": "s", "namespace": "n"}}}});
        assert!(unknown_fields(&CLUSTER, &body).is_empty());
    }

    #[test]
    fn rendered_schemas_use_all_of_refs_and_carry_descriptions() {
        let c = render(&CLUSTER);
        assert_eq!(
            c["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(
            c["x-kubernetes-group-version-kind"],
            json!([{"group": "clusterregistry.k8s.io", "version": "v1alpha1", "kind": "Cluster"}])
        );
        for s in closure(&[&CLUSTER, &CLUSTER_LIST, &CLUSTER_PROFILE]) {
            for field in s.fields {
                assert!(!field.description.is_empty(), "{}.{}", s.id, field.name);
            }
        }
        let ids: Vec<&str> = closure(&[&CLUSTER]).iter().map(|s| s.id).collect();
        assert!(ids.contains(&"io.k8s.clusterregistry.v1alpha1.AuthInfo"));
        assert!(ids.contains(&"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    }
}
