//! The wire forms of `ClusterGroup` and `ClusterGroupBinding` (`clusterregistry.k8s.io/v1alpha1`),
//! the selector between its two spellings, and the object name a binding is served under.
//!
//! A group's selector is stored as the text of a label selector (`env=prod,tier in (a,b)`);
//! the Kubernetes face writes it as a `metav1.LabelSelector` (`matchLabels` and
//! `matchExpressions`, with the `Gt`/`Lt` operators for the integer comparisons the text
//! allows). A binding has no name of its own: one group is bound to a project at most once,
//! so its object is named `<group name>.<grantee project>`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector as MetaSelector, LabelSelectorRequirement, ListMeta,
};
use serde::Serialize;

use crate::api::kube::objects::ObjectMeta;
use crate::api::kube::status::Resource;
use crate::api::kube::view::meta_time;
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupBinding, ClusterGroupMember};
use crate::domain::selector::{LabelSelector, Op};

pub use crate::api::kube::status::{CLUSTER_GROUPS, CLUSTER_GROUP_BINDINGS};

/// A cluster named by its namespace (project) and registry name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ClusterRef {
    pub namespace: String,
    pub name: String,
}

/// A `ClusterGroup`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: ObjectMeta,
    pub spec: GroupSpec,
    pub status: GroupStatus,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<MetaSelector>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterRef>,
}

/// One explicit member and where its owner's consent stands.
#[derive(Debug, Clone, Serialize)]
pub struct MemberStatus {
    pub namespace: String,
    pub name: String,
    pub state: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct GroupStatus {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberStatus>,
}

/// A `ClusterGroupBinding`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: ObjectMeta,
    pub spec: BindingSpec,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingSpec {
    pub group_ref: GroupRef,
    pub subject: Subject,
    pub access: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupRef {
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Subject {
    pub project: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

/// A `ClusterGroupList` or `ClusterGroupBindingList`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct List<'a, T> {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: ListMeta,
    pub items: &'a [T],
}

impl<'a, T> List<'a, T> {
    pub fn new(resource: &Resource, items: &'a [T]) -> Self {
        List {
            api_version: resource.api_version(),
            kind: resource.list_kind,
            metadata: ListMeta::default(),
            items,
        }
    }
}

/// The `metav1.LabelSelector` of a selector's text (`None` for no text, or text that does
/// not parse, which a stored selector never is).
pub fn meta_selector(text: Option<&str>) -> Option<MetaSelector> {
    let parsed = LabelSelector::parse(text?).ok()?;
    let mut labels = BTreeMap::new();
    let mut expressions = Vec::new();
    let expr = |key: &str, op: &str, values: Vec<String>| LabelSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values: Some(values).filter(|v| !v.is_empty()),
    };
    for r in parsed.requirements {
        match r.op {
            Op::Equals(v) if !labels.contains_key(&r.key) => {
                labels.insert(r.key, v);
            }
            Op::Equals(v) => expressions.push(expr(&r.key, "In", vec![v])),
            Op::In(vs) => expressions.push(expr(&r.key, "In", vs)),
            Op::NotEquals(v) => expressions.push(expr(&r.key, "NotIn", vec![v])),
            Op::NotIn(vs) => expressions.push(expr(&r.key, "NotIn", vs)),
            Op::Exists => expressions.push(expr(&r.key, "Exists", vec![])),
            Op::DoesNotExist => expressions.push(expr(&r.key, "DoesNotExist", vec![])),
            Op::GreaterThan(n) => expressions.push(expr(&r.key, "Gt", vec![n.to_string()])),
            Op::LessThan(n) => expressions.push(expr(&r.key, "Lt", vec![n.to_string()])),
        }
    }
    Some(MetaSelector {
        match_labels: Some(labels).filter(|l| !l.is_empty()),
        match_expressions: Some(expressions).filter(|e| !e.is_empty()),
    })
}

/// The text of one `matchExpressions` entry, or why it is none.
pub fn expression_text(key: &str, operator: &str, values: &[String]) -> Result<String, String> {
    let one = |sign: &str| match values {
        [v] => Ok(format!("{key}{sign}{v}")),
        _ => Err(format!("operator {operator} takes exactly one value")),
    };
    match operator {
        "In" | "NotIn" if values.is_empty() => {
            Err("values must be non-empty when operator is In or NotIn".into())
        }
        "In" => Ok(format!("{key} in ({})", values.join(","))),
        "NotIn" => Ok(format!("{key} notin ({})", values.join(","))),
        "Exists" | "DoesNotExist" if !values.is_empty() => {
            Err("values must be empty when operator is Exists or DoesNotExist".into())
        }
        "Exists" => Ok(key.to_string()),
        "DoesNotExist" => Ok(format!("!{key}")),
        "Gt" => one(">"),
        "Lt" => one("<"),
        _ => Err(format!(
            "{operator:?} is not a valid label selector operator (In, NotIn, Exists, \
             DoesNotExist, Gt, Lt)"
        )),
    }
}

/// The `ClusterGroup` of a stored group with its explicit members (each with its cluster's
/// registry name).
pub fn group(g: &ClusterGroup, members: &[(ClusterGroupMember, String)]) -> Group {
    let shown: Vec<MemberStatus> = members
        .iter()
        .filter(|(m, _)| m.group == g.uuid)
        .map(|(m, name)| MemberStatus {
            namespace: m.cluster_project_id.clone(),
            name: name.clone(),
            state: m.state.as_str().to_string(),
        })
        .collect();
    group_shown(g, shown)
}

/// The `ClusterGroup` of a group and its members as its object shows them (a change-log
/// line's).
pub fn group_shown(g: &ClusterGroup, mut status: Vec<MemberStatus>) -> Group {
    let mut clusters: Vec<ClusterRef> = status
        .iter()
        .map(|m| ClusterRef {
            namespace: m.namespace.clone(),
            name: m.name.clone(),
        })
        .collect();
    clusters.sort();
    status.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Group {
        api_version: CLUSTER_GROUPS.api_version(),
        kind: CLUSTER_GROUPS.kind,
        metadata: ObjectMeta {
            name: Some(g.name.as_str().to_string()),
            namespace: Some(g.project_id.clone()),
            uid: Some(g.uuid.to_string()),
            resource_version: Some(g.resource_version.to_string()),
            creation_timestamp: Some(meta_time(g.created_at)),
            ..ObjectMeta::default()
        },
        spec: GroupSpec {
            description: g.description.as_ref().map(|d| d.as_str().to_string()),
            selector: meta_selector(g.selector.as_ref().map(|s| s.as_str())),
            clusters,
        },
        status: GroupStatus { members: status },
    }
}

/// The object name of the binding of group `group` to project `grantee`.
pub fn binding_name(group: &str, grantee: &str) -> String {
    format!("{group}.{grantee}")
}

/// Every (group name, grantee project) a binding's object name may stand for: a split at each
/// `.` with both sides non-empty, the longest group name first.
pub fn binding_name_candidates(name: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = name
        .char_indices()
        .filter(|(i, c)| *c == '.' && *i > 0 && *i + 1 < name.len())
        .map(|(i, _)| (name[..i].to_string(), name[i + 1..].to_string()))
        .collect();
    out.reverse();
    out
}

/// The `ClusterGroupBinding` of a stored binding of the group named `group`.
pub fn binding(b: &ClusterGroupBinding, group: &str) -> Binding {
    Binding {
        api_version: CLUSTER_GROUP_BINDINGS.api_version(),
        kind: CLUSTER_GROUP_BINDINGS.kind,
        metadata: ObjectMeta {
            name: Some(binding_name(group, &b.grantee_project_id)),
            namespace: Some(b.project_id.clone()),
            uid: Some(b.uuid.to_string()),
            resource_version: Some(b.resource_version.to_string()),
            creation_timestamp: Some(meta_time(b.created_at)),
            ..ObjectMeta::default()
        },
        spec: BindingSpec {
            group_ref: GroupRef {
                name: group.to_string(),
            },
            subject: Subject {
                project: b.grantee_project_id.clone(),
                roles: b.roles.clone().unwrap_or_default(),
            },
            access: b.right.as_str(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &MetaSelector) -> Vec<String> {
        let mut out: Vec<String> = s
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for e in s.match_expressions.iter().flatten() {
            out.push(
                expression_text(&e.key, &e.operator, e.values.as_deref().unwrap_or(&[]))
                    .expect("text"),
            );
        }
        out
    }

    #[test]
    fn a_selector_text_becomes_match_labels_and_expressions_and_back() {
        let s = meta_selector(Some("env=prod,tier in (a,b),!legacy,gpu,zone!=x,n>3"))
            .expect("selector");
        assert_eq!(
            s.match_labels,
            Some(BTreeMap::from([("env".to_string(), "prod".to_string())]))
        );
        assert_eq!(
            texts(&s),
            [
                "env=prod",
                "tier in (a,b)",
                "!legacy",
                "gpu",
                "zone notin (x)",
                "n>3"
            ]
        );
        assert_eq!(meta_selector(None), None);
    }

    #[test]
    fn a_bad_expression_says_why() {
        assert!(expression_text("k", "In", &[]).is_err());
        assert!(expression_text("k", "Exists", &["x".into()]).is_err());
        assert!(expression_text("k", "Gt", &["1".into(), "2".into()]).is_err());
        assert!(expression_text("k", "Matches", &[]).is_err());
    }

    #[test]
    fn a_binding_name_splits_at_each_dot_longest_group_first() {
        assert_eq!(binding_name("web", "p1"), "web.p1");
        assert_eq!(
            binding_name_candidates("a.b.c"),
            vec![
                ("a.b".to_string(), "c".to_string()),
                ("a".to_string(), "b.c".to_string())
            ]
        );
        assert!(binding_name_candidates("nodot").is_empty());
    }
}
