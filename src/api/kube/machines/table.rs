//! `kubectl get machines`: the Table's columns and rows (priority 1 only with `-o wide`).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::object::Machine;
use crate::api::kube::table::{age, cell, column, row, row_object, table, IncludeObject};
use crate::store::MachineEntry;

/// The columns of `kubectl get machines`.
pub fn columns() -> Value {
    json!([
        column("Name", "string", "name", "Name must be unique within a namespace: <cluster>-<machine>.", 0),
        column("Cluster", "string", "", "The cluster the machine belongs to (its registry name).", 0),
        column("NodeGroup", "string", "", "The node group the machine belongs to.", 0),
        column("Role", "string", "", "The machine's role: master or worker.", 0),
        column("Phase", "string", "", "status.phase: Pending, Provisioning, Running, Deleting or Failed.", 0),
        column("Kubelet", "string", "", "The kubelet version the node runs (status.versions.kubelet), or should run.", 0),
        column("Address", "string", "", "The node's first InternalIP address (else its first address).", 0),
        column("Age", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
        column("ProviderID", "string", "", "status.providerID: the machine's identity at its infrastructure provider.", 1),
        column("OS-Image", "string", "", "spec.osImage: the operating system image of the node.", 1),
        column("Runtime", "string", "", "spec.containerRuntime as <name>://<version>.", 1),
    ])
}

/// The `Address` cell: the first `InternalIP`, else the first address.
fn address(m: &Machine) -> &str {
    let a = &m.status.addresses;
    a.iter()
        .find(|a| a.type_ == "InternalIP")
        .or_else(|| a.first())
        .map_or("", |a| a.address.as_str())
}

/// One row.
pub fn machine_row(
    e: &MachineEntry,
    m: &Machine,
    include: IncludeObject,
    now: DateTime<Utc>,
) -> Value {
    let kubelet = m
        .status
        .versions
        .kubelet
        .as_deref()
        .or(m.spec.versions.kubelet.as_deref())
        .unwrap_or("");
    let runtime = m
        .spec
        .container_runtime
        .as_ref()
        .map(|r| match &r.version {
            Some(v) => format!("{}://{v}", r.name),
            None => r.name.clone(),
        })
        .unwrap_or_default();
    let cells = vec![
        json!(m.metadata.name.as_deref().unwrap_or("")),
        cell(&e.cluster_name),
        cell(&e.nodegroup_name),
        cell(e.machine.role.as_str()),
        cell(&m.status.phase),
        cell(kubelet),
        cell(address(m)),
        json!(age(m.metadata.creation_timestamp.as_ref(), now)),
        cell(m.status.provider_id.as_deref().unwrap_or("")),
        cell(m.spec.os_image.as_deref().unwrap_or("")),
        cell(&runtime),
    ];
    let full = serde_json::to_value(m).unwrap_or_else(|_| json!({}));
    row(cells, row_object(include, full))
}

/// The Table of a list or get of machines.
pub fn machine_table(
    rows: &[(&MachineEntry, &Machine)],
    include: IncludeObject,
    resource_version: &str,
    continue_token: &str,
    now: DateTime<Utc>,
) -> Value {
    let rows = rows
        .iter()
        .map(|(e, m)| machine_row(e, m, include, now))
        .collect();
    table(columns(), rows, resource_version, continue_token)
}
