//! Cluster group bodies (microversion 1.20): a group, its explicit members, its bindings, and
//! the `access` marker a cluster of another project carries in `/v1/clusters` bodies.

use serde::Serialize;
use utoipa::ToSchema;

use super::Link;
use crate::api::timestamp;
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupBinding, ClusterGroupMember};
use crate::domain::ClusterGroupId;

/// `GET /v1/clustergroups/{g}`, and each item of the list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterGroupView {
    pub uuid: String,
    pub name: String,
    #[schema(required = true)]
    pub description: Option<String>,
    /// The label selector over registry labels, as written; `null` when the group has only
    /// explicit members. It picks clusters of the group's own project only.
    #[schema(required = true)]
    pub selector: Option<String>,
    pub project_id: String,
    pub user_id: String,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
    pub links: Vec<Link>,
}

impl ClusterGroupView {
    pub fn new(base: &str, g: &ClusterGroup) -> Self {
        ClusterGroupView {
            uuid: g.uuid.to_string(),
            name: g.name.as_str().to_string(),
            description: g.description.as_ref().map(|d| d.as_str().to_string()),
            selector: g.selector.as_ref().map(|s| s.as_str().to_string()),
            project_id: g.project_id.clone(),
            user_id: g.user_id.clone(),
            created_at: timestamp(g.created_at),
            updated_at: g.updated_at.map(timestamp),
            links: Link::pair(base, &format!("clustergroups/{}", g.uuid)),
        }
    }
}

/// `GET /v1/clustergroups`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterGroupCollection {
    pub clustergroups: Vec<ClusterGroupView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One explicit member of a group.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterGroupMemberView {
    /// The group's uuid.
    pub clustergroup_id: String,
    /// The cluster's uuid.
    pub cluster_id: String,
    /// The cluster's project: whose consent the membership needs.
    pub cluster_project_id: String,
    /// `Proposed` (grants nothing yet) or `Accepted`.
    pub state: String,
    /// The project that added the cluster.
    pub proposed_by: String,
    /// When the cluster's project consented; `null` while proposed.
    #[schema(required = true)]
    pub consented_at: Option<String>,
    pub created_at: String,
}

impl From<&ClusterGroupMember> for ClusterGroupMemberView {
    fn from(m: &ClusterGroupMember) -> Self {
        ClusterGroupMemberView {
            clustergroup_id: m.group.to_string(),
            cluster_id: m.cluster.to_string(),
            cluster_project_id: m.cluster_project_id.clone(),
            state: m.state.as_str().to_string(),
            proposed_by: m.proposed_by.clone(),
            consented_at: m.consented_at.map(timestamp),
            created_at: timestamp(m.created_at),
        }
    }
}

/// `GET /v1/clustergroups/{g}/members`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterGroupMemberCollection {
    pub members: Vec<ClusterGroupMemberView>,
}

/// A binding: what one project gets over the group's clusters.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterGroupBindingView {
    pub uuid: String,
    /// The group's uuid.
    pub clustergroup_id: String,
    /// The grantee project.
    pub project_id: String,
    /// Only the grantee's members holding one of these roles; `null`: every member.
    #[schema(required = true)]
    pub roles: Option<Vec<String>>,
    /// `read` or `write`.
    pub access: String,
    pub created_at: String,
    pub links: Vec<Link>,
}

impl ClusterGroupBindingView {
    pub fn new(base: &str, b: &ClusterGroupBinding) -> Self {
        ClusterGroupBindingView {
            uuid: b.uuid.to_string(),
            clustergroup_id: b.group.to_string(),
            project_id: b.grantee_project_id.clone(),
            roles: b.roles.clone(),
            access: b.right.as_str().to_string(),
            created_at: timestamp(b.created_at),
            links: Link::pair(
                base,
                &format!("clustergroups/{}/bindings/{}", b.group, b.uuid),
            ),
        }
    }
}

/// `GET /v1/clustergroups/{g}/bindings`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterGroupBindingCollection {
    pub bindings: Vec<ClusterGroupBindingView>,
}

/// Where a caller's right over a cluster of another project comes from: one entry per bound
/// group the cluster is in (an accepted member or a selector match).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct AccessView {
    pub via: Vec<AccessVia>,
}

/// One group a right comes through.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct AccessVia {
    /// The group's uuid.
    pub group: String,
    /// `read` or `write`.
    pub access: String,
}

impl AccessView {
    /// The marker of a cluster reached through `groups` (with the right each grants).
    pub fn new(groups: &[(ClusterGroupId, &'static str)]) -> Self {
        AccessView {
            via: groups
                .iter()
                .map(|(g, access)| AccessVia {
                    group: g.to_string(),
                    access: (*access).to_string(),
                })
                .collect(),
        }
    }
}
