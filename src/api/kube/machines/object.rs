//! The wire form of a `cluster.k8s.io/v1alpha1` `Machine` (k8s-openapi's `ObjectMeta`,
//! `OwnerReference`, `Taint`, `NodeAddress` and `ObjectReference`), and the object name a
//! machine is served under.
//!
//! A machine's name is unique in its cluster, not in its project (the namespace), so its
//! object is named `<cluster registry name>-<machine name>`; when that is longer than a
//! Kubernetes name may be (253 characters), `machine-<machine uuid>`. Two machines of one
//! project could only share a name when one cluster's registry name is another's followed by
//! `-` and the start of a machine name; then a get by that name answers the machine of the
//! cluster with the longer registry name.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeAddress, ObjectReference, Taint};
use serde::Serialize;

use crate::api::kube::objects::{ObjectMeta, OwnerReference};
use crate::api::kube::status::MACHINES;
use crate::api::kube::view::meta_time;
use crate::domain::kube_names::is_label_value;
use crate::domain::machine::{MachinePhase, MachineSpec, MachineStatus, MachineVersions};
use crate::store::MachineEntry;

/// The label naming a machine's cluster (its registry name), as Cluster API names it.
pub const CLUSTER_LABEL: &str = "cluster.k8s.io/cluster-name";
/// The label naming a machine's node group.
pub const NODEGROUP_LABEL: &str = "fleetyard.openstack.org/nodegroup";
/// The annotation holding the machine's own name (unique in its cluster).
pub const MACHINE_NAME_ANNOTATION: &str = "fleetyard.openstack.org/machine-name";

/// The longest Kubernetes object name.
const MAX_NAME: usize = 253;
/// The prefix of a name too long to be `<cluster>-<machine>`.
const UUID_PREFIX: &str = "machine-";

/// The object name of machine `machine` (uuid `uuid`) of the cluster whose registry name is
/// `cluster`.
pub fn object_name(cluster: &str, machine: &str, uuid: &uuid::Uuid) -> String {
    if cluster.len() + 1 + machine.len() <= MAX_NAME {
        format!("{cluster}-{machine}")
    } else {
        format!("{UUID_PREFIX}{uuid}")
    }
}

/// The object name of an entry.
pub fn entry_name(e: &MachineEntry) -> String {
    object_name(&e.cluster_name, e.machine.name.as_str(), &e.machine.uuid.0)
}

/// What an object name may stand for: every (cluster registry name, machine name) split at a
/// `-` with both sides non-empty, and the uuid of a `machine-<uuid>` name.
pub fn name_candidates(name: &str) -> (Vec<(String, String)>, Option<String>) {
    let pairs = name
        .char_indices()
        .filter(|(i, c)| *c == '-' && *i > 0 && *i + 1 < name.len())
        .map(|(i, _)| (name[..i].to_string(), name[i + 1..].to_string()))
        .collect();
    let uuid = name
        .strip_prefix(UUID_PREFIX)
        .and_then(|u| uuid::Uuid::parse_str(u).ok())
        .map(|u| u.hyphenated().to_string());
    (pairs, uuid)
}

/// Of the entries a name may stand for, the one it names: its object name is `name`, the
/// cluster with the longest registry name first.
pub fn pick(entries: Vec<MachineEntry>, name: &str) -> Option<MachineEntry> {
    entries
        .into_iter()
        .filter(|e| entry_name(e) == name)
        .max_by_key(|e| e.cluster_name.len())
}

/// The labels of a machine's object: its cluster's registry name and its node group's name,
/// each when it is a label value (at most 63 characters, and the label value's characters).
pub fn labels(e: &MachineEntry) -> BTreeMap<String, String> {
    [
        (CLUSTER_LABEL, &e.cluster_name),
        (NODEGROUP_LABEL, &e.nodegroup_name),
    ]
    .into_iter()
    .filter(|(_, v)| is_label_value(v))
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect()
}

/// The annotations of a machine's object: its own name, and the request annotations it keeps
/// ([`crate::domain::machine::requests`]).
pub fn annotations(e: &MachineEntry) -> BTreeMap<String, String> {
    let mut out = e.annotations.clone();
    out.insert(
        MACHINE_NAME_ANNOTATION.to_string(),
        e.machine.name.to_string(),
    );
    out
}

/// A `Machine`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: ObjectMeta,
    pub spec: Spec,
    pub status: Status,
}

/// A `MachineList`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineList<'a> {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta,
    pub items: &'a [Machine],
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<String>,
}

impl Versions {
    fn is_empty(&self) -> bool {
        self.kubelet.is_none() && self.control_plane.is_none()
    }
}

fn versions(v: &MachineVersions) -> Versions {
    Versions {
        kubelet: v.kubelet.as_ref().map(|k| k.to_string()),
        control_plane: v.control_plane.as_ref().map(|k| k.to_string()),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ContainerRuntime {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(skip_serializing_if = "Versions::is_empty")]
    pub versions: Versions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_runtime: Option<ContainerRuntime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub provider_config: serde_json::Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub phase: String,
    #[serde(rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<NodeAddress>,
    #[serde(skip_serializing_if = "Versions::is_empty")]
    pub versions: Versions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_change: Option<String>,
}

/// The wire form of a machine spec (a machine's, or the one a node group's machines are made
/// with).
pub fn spec_of(s: &MachineSpec) -> Spec {
    Spec {
        versions: versions(&s.versions),
        container_runtime: s.container_runtime.as_ref().map(|r| ContainerRuntime {
            name: r.name.clone(),
            version: r.version.clone(),
        }),
        os_image: s.os_image.clone(),
        flavor: s.flavor.clone(),
        provider_config: s.provider_config.clone(),
        taints: s
            .taints
            .iter()
            .map(|t| Taint {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
                time_added: None,
            })
            .collect(),
        labels: s.labels.clone(),
    }
}

fn status(s: &MachineStatus) -> Status {
    Status {
        phase: s.phase.as_str().to_string(),
        provider_id: s.provider_id.clone(),
        node_ref: s.node_ref.as_ref().map(|n| ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(n.clone()),
            ..ObjectReference::default()
        }),
        addresses: s
            .addresses
            .iter()
            .map(|a| NodeAddress {
                type_: a.kind.clone(),
                address: a.address.clone(),
            })
            .collect(),
        versions: versions(&s.versions),
        error_reason: s.error_reason.clone(),
        error_message: s.error_message.clone(),
        last_updated: s.last_updated.map(meta_time),
        last_change: s.last_change.map(|c| c.as_str().to_string()),
    }
}

/// The `Machine` of an entry, at the entry's own resourceVersion.
pub fn machine(e: &MachineEntry) -> Machine {
    let m = &e.machine;
    let owner = OwnerReference {
        api_version: crate::api::kube::objects::API_VERSION.to_string(),
        kind: crate::api::kube::objects::KIND.to_string(),
        name: e.cluster_name.clone(),
        uid: m.cluster_id.to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    Machine {
        api_version: MACHINES.api_version(),
        kind: MACHINES.kind,
        metadata: ObjectMeta {
            name: Some(entry_name(e)),
            namespace: Some(m.project_id.clone()),
            uid: Some(m.uuid.to_string()),
            resource_version: Some(e.resource_version.to_string()),
            creation_timestamp: Some(meta_time(m.created_at)),
            labels: Some(labels(e)).filter(|l| !l.is_empty()),
            annotations: Some(annotations(e)),
            owner_references: Some(vec![owner]),
            // A machine being deleted shows since when, as any object a delete waits on.
            deletion_timestamp: (m.status.phase == MachinePhase::Deleting)
                .then(|| meta_time(m.updated_at.unwrap_or(m.created_at))),
            managed_fields: Some(crate::api::kube::managed::wire(&e.managed_fields))
                .filter(|m| !m.is_empty()),
            ..ObjectMeta::default()
        },
        spec: spec_of(&m.spec),
        status: status(&m.status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_is_named_after_its_cluster_and_itself_or_its_uuid_when_too_long() {
        let u = uuid::Uuid::nil();
        assert_eq!(
            object_name("prod", "default-worker-1", &u),
            "prod-default-worker-1"
        );
        let long = "a".repeat(200);
        assert_eq!(
            object_name(&long, &"b".repeat(60), &u),
            format!("machine-{u}")
        );
        assert_eq!(object_name(&long, &"b".repeat(52), &u).len(), 253);
    }

    #[test]
    fn a_name_splits_at_every_dash_and_a_uuid_name_is_recognised() {
        let (pairs, uuid) = name_candidates("a-b-c");
        assert_eq!(
            pairs,
            vec![
                ("a".to_string(), "b-c".to_string()),
                ("a-b".to_string(), "c".to_string())
            ]
        );
        assert_eq!(uuid, None);
        assert!(name_candidates("-a-").0.is_empty());
        let u = uuid::Uuid::new_v4();
        assert_eq!(
            name_candidates(&format!("machine-{u}")).1,
            Some(u.to_string())
        );
    }
}
