//! Cluster bodies: the summary of `GET /v1/clusters`, the full representation of
//! `GET /v1/clusters/{c}` and `/detail`, and their collections.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::cluster_groups::AccessView;
use super::Link;
use crate::api::http::microversion::{CLUSTER_ID_FIELD, REGISTRY_METADATA};
use crate::api::timestamp;
use crate::api::RequestContext;
use crate::domain::cluster::{
    label_diff, ClusterSummary, ClusterWithGroups, GroupFacts, NodeGroup,
};
use crate::domain::labels::Labels;

/// Node counts and addresses of a cluster, summed over its node groups.
pub struct Counts {
    pub node_count: i32,
    pub master_count: i32,
    pub node_addresses: Vec<String>,
    pub master_addresses: Vec<String>,
}

impl Counts {
    /// Worker and master node counts only: what a summary shows (no address is copied). The
    /// sums saturate rather than overflow.
    pub fn totals(ngs: &[&NodeGroup]) -> (i32, i32) {
        ngs.iter().fold((0i32, 0i32), |(nodes, masters), ng| {
            if ng.is_master() {
                (nodes, masters.saturating_add(ng.node_count))
            } else {
                (nodes.saturating_add(ng.node_count), masters)
            }
        })
    }

    /// The counts and addresses of `groups`, taking their addresses.
    pub fn from_groups(groups: Vec<GroupFacts>) -> Counts {
        let mut c = Counts {
            node_count: 0,
            master_count: 0,
            node_addresses: vec![],
            master_addresses: vec![],
        };
        for g in groups {
            if g.is_master() {
                c.master_count = c.master_count.saturating_add(g.node_count);
                c.master_addresses.extend(g.node_addresses);
            } else {
                c.node_count = c.node_count.saturating_add(g.node_count);
                c.node_addresses.extend(g.node_addresses);
            }
        }
        c
    }
}

/// What the summary and the full representation of a cluster both show.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterBase {
    pub uuid: String,
    pub name: String,
    pub cluster_template_id: String,
    #[schema(required = true)]
    pub keypair: Option<String>,
    #[schema(required = true)]
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    pub node_count: i32,
    pub master_count: i32,
    pub status: String,
    #[schema(required = true)]
    pub health_status: Option<String>,
    #[schema(required = true)]
    pub master_flavor_id: Option<String>,
    #[schema(required = true)]
    pub flavor_id: Option<String>,
    #[schema(required = true)]
    pub create_timeout: Option<i32>,
    /// Always `false`: Magnum's API type default.
    pub merge_labels: bool,
    pub links: Vec<Link>,
    /// The orchestration handle, before microversion 1.13 (may be `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack_id: Option<Option<String>>,
    /// The orchestration handle, from microversion 1.13 (may be `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<Option<String>>,
    /// From microversion 1.20, on a cluster of another project only: the bound cluster
    /// groups the caller's right over it comes through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessView>,
}

/// The summary representation (`GET /v1/clusters`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterSummaryView {
    #[serde(flatten)]
    pub base: ClusterBase,
    /// Shown to admins only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

impl ClusterSummaryView {
    /// The summary of `c`, taking its fields.
    pub fn new(base: &str, ctx: &RequestContext, mut c: ClusterSummary) -> Self {
        let project_id = ctx.is_admin.then(|| std::mem::take(&mut c.project_id));
        ClusterSummaryView {
            base: ClusterBase::new(base, ctx, c),
            project_id,
        }
    }
}

impl ClusterBase {
    /// The fields of `c` both representations show, taking them.
    fn new(base: &str, ctx: &RequestContext, c: ClusterSummary) -> Self {
        let uuid = c.uuid.to_string();
        let handle = Some(c.stack_id);
        let at_cluster_id = ctx.version >= CLUSTER_ID_FIELD;
        ClusterBase {
            links: Link::pair(base, &format!("clusters/{uuid}")),
            uuid,
            name: c.name,
            cluster_template_id: c.cluster_template_id.to_string(),
            keypair: c.keypair,
            docker_volume_size: c.docker_volume_size,
            labels: c.labels,
            node_count: c.node_count,
            master_count: c.master_count,
            status: c.status.as_str().to_string(),
            health_status: c.health_status.map(|h| h.to_string()),
            master_flavor_id: c.master_flavor_id,
            flavor_id: c.flavor_id,
            create_timeout: c.create_timeout,
            merge_labels: false,
            stack_id: if at_cluster_id { None } else { handle.clone() },
            cluster_id: if at_cluster_id { handle } else { None },
            access: None,
        }
    }
}

/// The full representation (`GET /v1/clusters/{c}` and `GET /v1/clusters/detail`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterView {
    #[serde(flatten)]
    pub base: ClusterBase,
    pub project_id: String,
    pub user_id: String,
    pub node_addresses: Vec<String>,
    pub master_addresses: Vec<String>,
    /// Labels whose value differs from the template's.
    pub labels_overridden: Labels,
    /// Labels the template does not have.
    pub labels_added: Labels,
    /// Template labels the cluster does not have.
    pub labels_skipped: Labels,
    #[schema(required = true)]
    pub fixed_network: Option<String>,
    #[schema(required = true)]
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: bool,
    pub master_lb_enabled: bool,
    #[schema(required = true)]
    pub status_reason: Option<String>,
    pub health_status_reason: BTreeMap<String, String>,
    #[schema(required = true)]
    pub discovery_url: Option<String>,
    #[schema(required = true)]
    pub api_address: Option<String>,
    #[schema(required = true)]
    pub coe_version: Option<String>,
    #[schema(required = true)]
    pub container_version: Option<String>,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
    /// Failed node groups and their reasons, when the cluster is in a `*_FAILED` status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<BTreeMap<String, String>>,
    /// The cluster registry object's `metadata.labels` (Kubernetes labels, not the COE
    /// `labels` above), from microversion 1.15.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_labels: Option<BTreeMap<String, String>>,
    /// The cluster registry object's `metadata.annotations`, from microversion 1.15.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_annotations: Option<BTreeMap<String, String>>,
}

impl ClusterView {
    /// The full representation of `read`, taking the fields its summary part does not show (a
    /// page's reads are consumed as its views are built, so the two are not held whole at
    /// once).
    pub fn new(base: &str, ctx: &RequestContext, read: ClusterWithGroups) -> Self {
        let ClusterWithGroups {
            cluster: c,
            groups,
            template_labels,
        } = read;
        let empty = Labels::new();
        let parent = template_labels.as_ref().unwrap_or(&empty);
        let (labels_overridden, labels_added, labels_skipped) = label_diff(&c.labels, parent);
        let faults = c.status.is_failed().then(|| {
            groups
                .iter()
                .filter(|ng| ng.is_failed())
                .map(|ng| {
                    (
                        ng.name.clone(),
                        ng.status_reason.clone().unwrap_or_default(),
                    )
                })
                .collect()
        });
        let n = Counts::from_groups(groups);
        let registry = ctx.version >= REGISTRY_METADATA;
        let summary = ClusterSummary::of(&c, n.node_count, n.master_count);
        ClusterView {
            base: ClusterBase::new(base, ctx, summary),
            project_id: c.project_id,
            user_id: c.user_id,
            node_addresses: n.node_addresses,
            master_addresses: n.master_addresses,
            labels_overridden,
            labels_added,
            labels_skipped,
            fixed_network: c.fixed_network,
            fixed_subnet: c.fixed_subnet,
            floating_ip_enabled: c.floating_ip_enabled,
            master_lb_enabled: c.master_lb_enabled,
            status_reason: c.status_reason,
            health_status_reason: c.health_status_reason,
            discovery_url: c.discovery_url,
            api_address: c.api_address,
            coe_version: c.coe_version,
            container_version: c.container_version,
            created_at: timestamp(c.created_at),
            updated_at: c.updated_at.map(timestamp),
            faults,
            registry_labels: registry.then_some(c.registry.labels),
            registry_annotations: registry.then_some(c.registry.annotations),
        }
    }
}

/// `GET /v1/clusters`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterCollection {
    pub clusters: Vec<ClusterSummaryView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `GET /v1/clusters/detail`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterDetailCollection {
    pub clusters: Vec<ClusterView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
