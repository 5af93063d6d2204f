//! `kubectl get clustergroups` and `kubectl get clustergroupbindings`: the Tables' columns and
//! rows (priority 1 only with `-o wide`).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::object::{expression_text, Binding, Group};
use crate::api::kube::table::{age, cell, column, row, row_object, table, IncludeObject};

/// The columns of `kubectl get clustergroups`.
pub fn group_columns() -> Value {
    json!([
        column("Name", "string", "name", "Name must be unique within a namespace.", 0),
        column("Selector", "string", "", "spec.selector as a label selector: the clusters of the group's own namespace it picks.", 0),
        column("Members", "string", "", "The explicit members whose owners accepted, of all explicit members (the others are proposed).", 0),
        column("Age", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
        column("Description", "string", "", "spec.description.", 1),
    ])
}

/// The columns of `kubectl get clustergroupbindings`.
pub fn binding_columns() -> Value {
    json!([
        column("Name", "string", "name", "Name is <group>.<project>: one binding per group and project.", 0),
        column("Group", "string", "", "spec.groupRef.name: the ClusterGroup whose clusters it shares.", 0),
        column("Project", "string", "", "spec.subject.project: the project it grants access to.", 0),
        column("Access", "string", "", "spec.access: read or write.", 0),
        column("Age", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
        column("Roles", "string", "", "spec.subject.roles: only the project's members holding one of them (all members when empty).", 1),
    ])
}

/// A selector as one line of label selector text.
fn selector_text(g: &Group) -> String {
    let Some(s) = &g.spec.selector else {
        return String::new();
    };
    let mut terms: Vec<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in s.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or(&[]);
        terms.push(expression_text(&e.key, &e.operator, values).unwrap_or_default());
    }
    terms.join(",")
}

fn group_row(g: &Group, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let members = &g.status.members;
    let accepted = members.iter().filter(|m| m.state == "Accepted").count();
    let cells = vec![
        json!(g.metadata.name.as_deref().unwrap_or("")),
        cell(&selector_text(g)),
        json!(format!("{accepted}/{}", members.len())),
        json!(age(g.metadata.creation_timestamp.as_ref(), now)),
        cell(g.spec.description.as_deref().unwrap_or("")),
    ];
    let full = serde_json::to_value(g).unwrap_or_else(|_| json!({}));
    row(cells, row_object(include, full))
}

fn binding_row(b: &Binding, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let cells = vec![
        json!(b.metadata.name.as_deref().unwrap_or("")),
        cell(&b.spec.group_ref.name),
        cell(&b.spec.subject.project),
        cell(b.spec.access),
        json!(age(b.metadata.creation_timestamp.as_ref(), now)),
        cell(&b.spec.subject.roles.join(",")),
    ];
    let full = serde_json::to_value(b).unwrap_or_else(|_| json!({}));
    row(cells, row_object(include, full))
}

/// The Table of a list or get of groups.
pub fn group_table(groups: &[Group], include: IncludeObject, now: DateTime<Utc>) -> Value {
    let rows = groups.iter().map(|g| group_row(g, include, now)).collect();
    table(group_columns(), rows, "", "")
}

/// The Table of a list or get of bindings.
pub fn binding_table(bindings: &[Binding], include: IncludeObject, now: DateTime<Utc>) -> Value {
    let rows = bindings
        .iter()
        .map(|b| binding_row(b, include, now))
        .collect();
    table(binding_columns(), rows, "", "")
}
