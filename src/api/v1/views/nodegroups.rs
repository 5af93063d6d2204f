//! Node group bodies: the summary of `GET .../nodegroups` (no links) and the full
//! representation of show, detail, create and update.

use serde::Serialize;
use utoipa::ToSchema;

use super::Link;
use crate::api::timestamp;
use crate::domain::cluster::{label_diff, NodeGroup, Taint};
use crate::domain::labels::Labels;

/// A Kubernetes taint of a node group's nodes (`value` is `null` when unset).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TaintView {
    pub key: String,
    #[schema(required = true)]
    pub value: Option<String>,
    pub effect: String,
}

impl From<&Taint> for TaintView {
    fn from(t: &Taint) -> Self {
        TaintView {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.clone(),
        }
    }
}

/// The summary representation (`GET /v1/clusters/{c}/nodegroups`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NodeGroupSummaryView {
    pub uuid: String,
    pub name: String,
    #[schema(required = true)]
    pub flavor_id: Option<String>,
    #[schema(required = true)]
    pub image_id: Option<String>,
    pub node_count: i32,
    pub role: String,
    pub is_default: bool,
    pub status: String,
    #[schema(required = true)]
    pub stack_id: Option<String>,
    pub min_node_count: i32,
    #[schema(required = true)]
    pub max_node_count: Option<i32>,
    /// Always `false`: Magnum's API type default.
    pub merge_labels: bool,
}

impl From<&NodeGroup> for NodeGroupSummaryView {
    fn from(ng: &NodeGroup) -> Self {
        NodeGroupSummaryView {
            uuid: ng.uuid.to_string(),
            name: ng.name.clone(),
            flavor_id: ng.flavor_id.clone(),
            image_id: ng.image_id.clone(),
            node_count: ng.node_count,
            role: ng.role.clone(),
            is_default: ng.is_default,
            status: ng.status.as_str().to_string(),
            stack_id: ng.stack_id.clone(),
            min_node_count: ng.min_node_count,
            max_node_count: ng.max_node_count,
            merge_labels: false,
        }
    }
}

/// The full representation; label differences are relative to the cluster's labels.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NodeGroupView {
    /// What the summary shows.
    #[serde(flatten)]
    pub summary: NodeGroupSummaryView,
    pub id: i64,
    pub cluster_id: String,
    pub project_id: String,
    #[schema(required = true)]
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    /// Labels whose value differs from the cluster's.
    pub labels_overridden: Labels,
    /// Labels the cluster does not have.
    pub labels_added: Labels,
    /// Cluster labels the node group does not have.
    pub labels_skipped: Labels,
    pub links: Vec<Link>,
    pub node_addresses: Vec<String>,
    #[schema(required = true)]
    pub status_reason: Option<String>,
    #[schema(required = true)]
    pub version: Option<String>,
    pub node_labels: Labels,
    pub node_taints: Vec<TaintView>,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
}

impl NodeGroupView {
    pub fn new(base: &str, ng: &NodeGroup, cluster_labels: &Labels) -> Self {
        let (labels_overridden, labels_added, labels_skipped) =
            label_diff(&ng.labels, cluster_labels);
        NodeGroupView {
            summary: NodeGroupSummaryView::from(ng),
            id: ng.id,
            cluster_id: ng.cluster_id.to_string(),
            project_id: ng.project_id.clone(),
            docker_volume_size: ng.docker_volume_size,
            labels: ng.labels.clone(),
            labels_overridden,
            labels_added,
            labels_skipped,
            links: Link::pair(
                base,
                &format!("clusters/{}/nodegroups/{}", ng.cluster_id, ng.uuid),
            ),
            node_addresses: ng.node_addresses.clone(),
            status_reason: ng.status_reason.clone(),
            version: ng.version.clone(),
            node_labels: ng.node_labels.clone(),
            node_taints: ng.node_taints.iter().map(TaintView::from).collect(),
            created_at: timestamp(ng.created_at),
            updated_at: ng.updated_at.map(timestamp),
        }
    }
}

/// `GET /v1/clusters/{c}/nodegroups`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NodeGroupCollection {
    pub nodegroups: Vec<NodeGroupSummaryView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `GET /v1/clusters/{c}/nodegroups/detail`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NodeGroupDetailCollection {
    pub nodegroups: Vec<NodeGroupView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
