//! `kubectl get machinedeployments`: the Table's columns and rows (priority 1 only with
//! `-o wide`).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::object::MachineDeployment;
use crate::api::kube::table::{age, cell, column, row, row_object, table, IncludeObject};
use crate::store::NodeGroupEntry;

/// The columns of `kubectl get machinedeployments`.
pub fn columns() -> Value {
    json!([
        column("Name", "string", "name", "Name must be unique within a namespace: <cluster>-<node group>.", 0),
        column("Cluster", "string", "", "The cluster the node group belongs to (its registry name).", 0),
        column("Role", "string", "", "The node group's role: master or worker.", 0),
        column("Replicas", "integer", "", "spec.replicas: how many machines the node group should have (its node count).", 0),
        column("Ready", "integer", "", "status.readyReplicas: the machines running.", 0),
        column("Updated", "integer", "", "status.updatedReplicas: the machines on the node group's flavor, image and version.", 0),
        column("Version", "string", "", "spec.template.spec.versions.kubelet: the node group's Kubernetes version.", 0),
        column("Age", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
        column("Flavor", "string", "", "spec.template.spec.flavor: the node group's compute flavor.", 1),
        column("Image", "string", "", "spec.template.spec.osImage: the node group's image.", 1),
        column("Status", "string", "", "The node group's status (e.g. UPDATE_IN_PROGRESS, UPDATE_FAILED).", 1),
    ])
}

/// One row.
pub fn deployment_row(
    e: &NodeGroupEntry,
    d: &MachineDeployment,
    include: IncludeObject,
    now: DateTime<Utc>,
) -> Value {
    let spec = &d.spec.template.spec;
    let cells = vec![
        json!(d.metadata.name.as_deref().unwrap_or("")),
        cell(&e.cluster_name),
        cell(&e.nodegroup.role),
        json!(d.spec.replicas),
        json!(d.status.ready_replicas),
        json!(d.status.updated_replicas),
        cell(spec.versions.kubelet.as_deref().unwrap_or("")),
        json!(age(d.metadata.creation_timestamp.as_ref(), now)),
        cell(spec.flavor.as_deref().unwrap_or("")),
        cell(spec.os_image.as_deref().unwrap_or("")),
        cell(e.nodegroup.status.as_str()),
    ];
    let full = serde_json::to_value(d).unwrap_or_else(|_| json!({}));
    row(cells, row_object(include, full))
}

/// The Table of a list or get of machine deployments.
pub fn deployment_table(
    rows: &[(&NodeGroupEntry, &MachineDeployment)],
    include: IncludeObject,
    resource_version: &str,
    continue_token: &str,
    now: DateTime<Utc>,
) -> Value {
    let rows = rows
        .iter()
        .map(|(e, d)| deployment_row(e, d, include, now))
        .collect();
    table(columns(), rows, resource_version, continue_token)
}
