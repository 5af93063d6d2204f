//! The wire form of a `cluster.k8s.io/v1alpha1` `MachineDeployment` (the historical Cluster
//! API v1alpha1 kind): one per node group, named `<cluster registry name>-<node group name>`
//! (the machines' rule; `nodegroup-<uuid>` when that is no Kubernetes object name), labelled
//! and owned as the group's machines are.
//!
//! * `spec.replicas` is the group's `node_count`; `spec.selector.matchLabels` and
//!   `spec.template.metadata.labels` the two labels; `spec.template.spec` the `MachineSpec` a
//!   new machine of the group gets, as the `Machine` kind shows it (`versions.kubelet` the
//!   group's Kubernetes version, `flavor` and `osImage`, the group's node taints and labels);
//!   `spec.strategy` a `RollingUpdate` with `maxUnavailable: 0` and `maxSurge` the batch of a
//!   roll (the one the last write that stated it kept, else 1).
//! * `status` counts the group's machines: `replicas` (not being deleted), `updatedReplicas`
//!   (on the group's flavor, image and version, and not failed), `readyReplicas`/`availableReplicas`
//!   (`Running`), `unavailableReplicas`; `conditions` say the group's status (`Available`,
//!   `Progressing`, and `ReplicaFailure` with the reason of a `*_FAILED` group).
//! * `metadata.managedFields` are the group's field managers ([`MACHINE_DEPLOYMENT`]).
//! * `metadata.resourceVersion` is the highest of the cluster row's and the group's machines'
//!   (every change of the group moves one of them).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ListMeta};
use serde::Serialize;

use crate::api::kube::machines::object::{spec_of, Spec as MachineSpecView};
use crate::api::kube::machines::object::{CLUSTER_LABEL, NODEGROUP_LABEL};
use crate::api::kube::objects::{ObjectMeta, OwnerReference};
use crate::api::kube::status::MACHINE_DEPLOYMENTS;
use crate::api::kube::view::meta_time;
use crate::domain::cluster::NodeGroup;
use crate::domain::kube_names::{dns1123_subdomain_errors, is_label_value};
use crate::domain::machine::count::spec_for;
use crate::domain::machine::{KubeVersion, MachinePhase, MachineRole};
use crate::store::NodeGroupEntry;

/// A `MachineDeployment` for field ownership: its labels and owner (its cluster's and group's
/// names, its cluster) are the server's.
pub(super) const MACHINE_DEPLOYMENT: crate::api::kube::managed::Kind =
    crate::api::kube::managed::Kind {
        resource: &MACHINE_DEPLOYMENTS,
        api_version: "cluster.k8s.io/v1alpha1",
        kind: "MachineDeployment",
        derived_annotations: &[],
        derived_metadata: &["labels", "ownerReferences"],
        server_conditions: &[],
        keeps_last_applied: false,
    };

/// The prefix of a name that cannot be `<cluster>-<node group>`.
const UUID_PREFIX: &str = "nodegroup-";

/// The object name of node group `nodegroup` (uuid `uuid`) of the cluster whose registry name
/// is `cluster`.
pub fn object_name(cluster: &str, nodegroup: &str, uuid: &uuid::Uuid) -> String {
    let name = format!("{cluster}-{nodegroup}");
    if dns1123_subdomain_errors(&name).is_empty() {
        name
    } else {
        format!("{UUID_PREFIX}{uuid}")
    }
}

/// The object name of an entry.
pub fn entry_name(e: &NodeGroupEntry) -> String {
    object_name(&e.cluster_name, &e.nodegroup.name, &e.nodegroup.uuid.0)
}

/// What an object name may stand for: every (cluster registry name, node group name) split at
/// a `-`, and the uuid of a `nodegroup-<uuid>` name.
pub fn name_candidates(name: &str) -> (Vec<(String, String)>, Option<String>) {
    let (pairs, _) = crate::api::kube::machines::object::name_candidates(name);
    let uuid = name
        .strip_prefix(UUID_PREFIX)
        .and_then(|u| uuid::Uuid::parse_str(u).ok())
        .map(|u| u.hyphenated().to_string());
    (pairs, uuid)
}

/// Of the entries a name may stand for, the one it names (the longest cluster name first).
pub fn pick(entries: Vec<NodeGroupEntry>, name: &str) -> Option<NodeGroupEntry> {
    entries
        .into_iter()
        .filter(|e| entry_name(e) == name)
        .max_by_key(|e| e.cluster_name.len())
}

/// The labels of a group's object (and its selector): its cluster's registry name and its
/// own name, each when it is a label value.
pub fn labels(e: &NodeGroupEntry) -> BTreeMap<String, String> {
    [
        (CLUSTER_LABEL, &e.cluster_name),
        (NODEGROUP_LABEL, &e.nodegroup.name),
    ]
    .into_iter()
    .filter(|(_, v)| is_label_value(v))
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect()
}

/// The kubelet version a group's machines should run: its recorded version, as Kubernetes
/// writes it.
pub fn group_version(ng: &NodeGroup) -> Option<KubeVersion> {
    ng.version
        .as_deref()
        .and_then(|v| KubeVersion::parse(v).ok())
}

/// A `MachineDeployment`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeployment {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: ObjectMeta,
    pub spec: Spec,
    pub status: Status,
}

/// A `MachineDeploymentList`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentList<'a> {
    pub api_version: String,
    pub kind: &'static str,
    pub metadata: ListMeta,
    pub items: &'a [MachineDeployment],
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    pub match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TemplateMeta {
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Template {
    pub metadata: TemplateMeta,
    pub spec: MachineSpecView,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdate {
    pub max_surge: i32,
    pub max_unavailable: i32,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    #[serde(rename = "type")]
    pub type_: &'static str,
    pub rolling_update: RollingUpdate,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub replicas: i32,
    pub selector: Selector,
    pub template: Template,
    pub strategy: Strategy,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub replicas: i64,
    pub updated_replicas: i64,
    pub ready_replicas: i64,
    pub available_replicas: i64,
    pub unavailable_replicas: i64,
    pub conditions: Vec<Condition>,
}

/// The machines of an entry, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub replicas: i64,
    pub updated: i64,
    pub ready: i64,
}

/// How many of the group's machines count, are on its flavor, image and version, and run.
pub fn counts(e: &NodeGroupEntry) -> Counts {
    let ng = &e.nodegroup;
    let some = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    let (flavor, image, version) = (some(&ng.flavor_id), some(&ng.image_id), group_version(ng));
    let mut c = Counts::default();
    for t in &e.machines {
        if !t.phase.counts_toward_node_count() {
            continue;
        }
        c.replicas += t.count;
        let kubelet = t
            .kubelet
            .as_deref()
            .and_then(|k| KubeVersion::parse(k).ok());
        let on_version = version.is_none() || kubelet == version;
        // A failed machine is still to replace, whatever its spec says.
        if t.flavor == flavor && t.image == image && on_version && t.phase != MachinePhase::Failed {
            c.updated += t.count;
        }
        if t.phase == MachinePhase::Running {
            c.ready += t.count;
        }
    }
    c
}

/// The resourceVersion of an entry's object.
pub fn resource_version(e: &NodeGroupEntry) -> i64 {
    e.machines
        .iter()
        .map(|t| t.resource_version)
        .fold(e.cluster_resource_version, i64::max)
}

/// The spec a group's machines are made with, as the `Machine` kind shows it.
pub fn template_spec(ng: &NodeGroup) -> MachineSpecView {
    let role = if ng.is_master() {
        MachineRole::Master
    } else {
        MachineRole::Worker
    };
    let mut spec = spec_for(
        role,
        (ng.flavor_id.as_deref(), ng.image_id.as_deref()),
        ng.version.as_deref(),
        &ng.node_taints,
        &ng.node_labels,
    );
    spec.provider_config = serde_json::Value::Null;
    spec_of(&spec)
}

fn condition(kind: &str, status: bool, reason: &str, message: String, ng: &NodeGroup) -> Condition {
    Condition {
        type_: kind.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message,
        last_transition_time: meta_time(ng.updated_at.unwrap_or(ng.created_at)),
        observed_generation: None,
    }
}

/// The conditions of a group in status `ng.status` with `available` of `wanted` machines up.
fn conditions(ng: &NodeGroup, available: i64, wanted: i64) -> Vec<Condition> {
    let status = ng.status.as_str();
    let reason = ng.status_reason.clone().unwrap_or_default();
    let enough = available >= wanted;
    let mut out = vec![condition(
        "Available",
        enough,
        if enough {
            "MinimumReplicasAvailable"
        } else {
            "MinimumReplicasUnavailable"
        },
        format!("{available} of {wanted} machines are running."),
        ng,
    )];
    let failed = ng.status.is_failed();
    let message = if reason.is_empty() {
        format!("The node group is {status}.")
    } else {
        reason.clone()
    };
    out.push(condition(
        "Progressing",
        !failed,
        status,
        message.clone(),
        ng,
    ));
    if failed {
        out.push(condition("ReplicaFailure", true, status, message, ng));
    }
    out
}

/// The `MachineDeployment` of an entry.
pub fn machine_deployment(e: &NodeGroupEntry) -> MachineDeployment {
    let ng = &e.nodegroup;
    let owner = OwnerReference {
        api_version: crate::api::kube::objects::API_VERSION.to_string(),
        kind: crate::api::kube::objects::KIND.to_string(),
        name: e.cluster_name.clone(),
        uid: ng.cluster_id.to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let labels = labels(e);
    let c = counts(e);
    let wanted = i64::from(ng.node_count);
    MachineDeployment {
        api_version: MACHINE_DEPLOYMENTS.api_version(),
        kind: MACHINE_DEPLOYMENTS.kind,
        metadata: ObjectMeta {
            name: Some(entry_name(e)),
            namespace: Some(ng.project_id.clone()),
            uid: Some(ng.uuid.to_string()),
            resource_version: Some(resource_version(e).to_string()),
            creation_timestamp: Some(meta_time(ng.created_at)),
            labels: Some(labels.clone()).filter(|l| !l.is_empty()),
            owner_references: Some(vec![owner]),
            deletion_timestamp: (ng.status
                == crate::domain::status::ClusterStatus::DeleteInProgress)
                .then(|| meta_time(ng.updated_at.unwrap_or(ng.created_at))),
            managed_fields: Some(crate::api::kube::managed::wire(&e.managed_fields))
                .filter(|m| !m.is_empty()),
            ..ObjectMeta::default()
        },
        spec: Spec {
            replicas: ng.node_count,
            selector: Selector {
                match_labels: labels.clone(),
            },
            template: Template {
                metadata: TemplateMeta { labels },
                spec: template_spec(ng),
            },
            strategy: Strategy {
                type_: "RollingUpdate",
                rolling_update: RollingUpdate {
                    max_surge: e.max_surge.unwrap_or(1),
                    max_unavailable: 0,
                },
            },
        },
        status: Status {
            replicas: c.replicas,
            updated_replicas: c.updated,
            ready_replicas: c.ready,
            available_replicas: c.ready,
            unavailable_replicas: (wanted - c.ready).max(0),
            conditions: conditions(ng, c.ready, wanted),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kube::managed::{tracked, Part};
    use serde_json::json;

    #[test]
    fn a_deployments_labels_owner_and_status_are_no_managers() {
        let shown = json!({"apiVersion": "cluster.k8s.io/v1alpha1", "kind": "MachineDeployment",
            "metadata": {"name": "kc-w", "namespace": "p", "uid": "u", "resourceVersion": "7",
                "labels": {"cluster.k8s.io/cluster-name": "kc"},
                "ownerReferences": [{"uid": "c"}], "managedFields": []},
            "spec": {"replicas": 3},
            "status": {"replicas": 3}});
        assert_eq!(
            tracked(&MACHINE_DEPLOYMENT, &shown, Part::Main),
            json!({"spec": {"replicas": 3}})
        );
    }

    #[test]
    fn a_deployment_is_named_after_its_cluster_and_group_or_its_uuid() {
        let u = uuid::Uuid::nil();
        assert_eq!(
            object_name("prod", "default-worker", &u),
            "prod-default-worker"
        );
        assert_eq!(
            object_name("prod", "GPU_pool", &u),
            format!("nodegroup-{u}")
        );
        assert_eq!(
            object_name(&"a".repeat(200), &"b".repeat(60), &u),
            format!("nodegroup-{u}")
        );
        let (pairs, uuid) = name_candidates(&format!("nodegroup-{u}"));
        assert_eq!(uuid, Some(u.to_string()));
        assert_eq!(pairs[0], ("nodegroup".to_string(), u.to_string()));
    }
}
