//! Machine bodies (microversion 1.19): one representation for show and list, with Magnum's
//! snake_case keys. The spec leaves out the driver's opaque `providerConfig`; every other field
//! is always sent, `null` when unknown.

use serde::Serialize;
use utoipa::ToSchema;

use super::{Link, TaintView};
use crate::api::timestamp;
use crate::domain::labels::Labels;
use crate::domain::machine::{Machine, MachineAddress, MachineVersions};

/// Kubernetes versions (`v1.31.4`): the kubelet's, and a master's control plane.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineVersionsView {
    #[schema(required = true)]
    pub kubelet: Option<String>,
    /// A master's only; `null` on workers.
    #[schema(required = true)]
    pub control_plane: Option<String>,
}

impl From<&MachineVersions> for MachineVersionsView {
    fn from(v: &MachineVersions) -> Self {
        MachineVersionsView {
            kubelet: v.kubelet.as_ref().map(ToString::to_string),
            control_plane: v.control_plane.as_ref().map(ToString::to_string),
        }
    }
}

/// A container runtime and its version (`containerd`, `1.7.22`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContainerRuntimeView {
    pub name: String,
    #[schema(required = true)]
    pub version: Option<String>,
}

/// One address of the node: `InternalIP`, `ExternalIP`, `Hostname`...
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineAddressView {
    #[serde(rename = "type")]
    pub kind: String,
    pub address: String,
}

impl From<&MachineAddress> for MachineAddressView {
    fn from(a: &MachineAddress) -> Self {
        MachineAddressView {
            kind: a.kind.clone(),
            address: a.address.clone(),
        }
    }
}

/// What the machine should be.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineSpecView {
    pub versions: MachineVersionsView,
    #[schema(required = true)]
    pub container_runtime: Option<ContainerRuntimeView>,
    #[schema(required = true)]
    pub os_image: Option<String>,
    #[schema(required = true)]
    pub flavor: Option<String>,
    pub taints: Vec<TaintView>,
    pub labels: Labels,
}

/// What the driver last observed of the machine.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineStatusView {
    /// `Pending`, `Provisioning`, `Running`, `Deleting` or `Failed`.
    pub phase: String,
    #[schema(required = true)]
    pub provider_id: Option<String>,
    /// The name of the Kubernetes node the machine became.
    #[schema(required = true)]
    pub node_ref: Option<String>,
    pub addresses: Vec<MachineAddressView>,
    /// The versions the node actually runs.
    pub versions: MachineVersionsView,
    #[schema(required = true)]
    pub error_reason: Option<String>,
    #[schema(required = true)]
    pub error_message: Option<String>,
    #[schema(required = true)]
    pub last_updated: Option<String>,
    /// How the last change was applied: `InPlace` or `Replace`.
    #[schema(required = true)]
    pub last_change: Option<String>,
}

/// `GET /v1/clusters/{c}/machines/{m}`, and each item of the list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineView {
    pub uuid: String,
    pub name: String,
    /// The cluster's uuid.
    pub cluster_id: String,
    /// The node group's uuid.
    pub nodegroup_id: String,
    /// `master` or `worker`.
    pub role: String,
    pub project_id: String,
    pub spec: MachineSpecView,
    pub status: MachineStatusView,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
    pub links: Vec<Link>,
}

impl MachineView {
    pub fn new(base: &str, m: &Machine) -> Self {
        let spec = &m.spec;
        let status = &m.status;
        MachineView {
            uuid: m.uuid.to_string(),
            name: m.name.to_string(),
            cluster_id: m.cluster_id.to_string(),
            nodegroup_id: m.nodegroup_id.to_string(),
            role: m.role.as_str().to_string(),
            project_id: m.project_id.clone(),
            spec: MachineSpecView {
                versions: MachineVersionsView::from(&spec.versions),
                container_runtime: spec
                    .container_runtime
                    .as_ref()
                    .map(|r| ContainerRuntimeView {
                        name: r.name.clone(),
                        version: r.version.clone(),
                    }),
                os_image: spec.os_image.clone(),
                flavor: spec.flavor.clone(),
                taints: spec.taints.iter().map(TaintView::from).collect(),
                labels: spec.labels.clone(),
            },
            status: MachineStatusView {
                phase: status.phase.as_str().to_string(),
                provider_id: status.provider_id.clone(),
                node_ref: status.node_ref.clone(),
                addresses: status
                    .addresses
                    .iter()
                    .map(MachineAddressView::from)
                    .collect(),
                versions: MachineVersionsView::from(&status.versions),
                error_reason: status.error_reason.clone(),
                error_message: status.error_message.clone(),
                last_updated: status.last_updated.map(timestamp),
                last_change: status.last_change.map(|c| c.as_str().to_string()),
            },
            created_at: timestamp(m.created_at),
            updated_at: m.updated_at.map(timestamp),
            links: Link::pair(
                base,
                &format!("clusters/{}/machines/{}", m.cluster_id, m.uuid),
            ),
        }
    }
}

/// `GET /v1/clusters/{c}/machines`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineCollection {
    pub machines: Vec<MachineView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
