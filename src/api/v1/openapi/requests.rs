//! Request bodies as the OpenAPI document describes them. Handlers read bodies through
//! [`Fields`](crate::api::http::body::Fields), which reproduces Magnum's coercions (numeric strings,
//! `yes`/`no` booleans, Python-literal label strings) and sentences; these types describe what
//! a client should send.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::v1::views::TaintView;

/// Labels as a request may give them: an object whose values are strings, numbers or
/// booleans (kept as their text), or that object written as JSON or Python-literal text.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LabelsRequest {
    Object(BTreeMap<String, LabelValue>),
    Text(String),
}

/// One label's value in a request.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LabelValue {
    Text(String),
    Number(f64),
    Flag(bool),
}

/// `POST /v1/clustertemplates`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterTemplateCreateRequest {
    /// Generated when absent.
    pub uuid: Option<String>,
    /// Generated when absent.
    pub name: Option<String>,
    /// `kubernetes`.
    pub coe: String,
    pub image_id: String,
    pub flavor_id: Option<String>,
    pub master_flavor_id: Option<String>,
    /// One IPv4 address or a comma-separated list.
    pub dns_nameserver: Option<String>,
    pub keypair_id: Option<String>,
    pub external_network_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub network_driver: Option<String>,
    pub volume_driver: Option<String>,
    /// 1024 to 65535.
    pub apiserver_port: Option<i32>,
    pub docker_volume_size: Option<i32>,
    pub docker_storage_driver: Option<String>,
    pub cluster_distro: Option<String>,
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
    pub insecure_registry: Option<String>,
    pub registry_enabled: Option<bool>,
    pub tls_disabled: Option<bool>,
    pub public: Option<bool>,
    pub master_lb_enabled: Option<bool>,
    pub floating_ip_enabled: Option<bool>,
    pub hidden: Option<bool>,
    /// `vm` or `bm`.
    pub server_type: Option<String>,
    pub labels: Option<LabelsRequest>,
    pub tags: Option<String>,
    /// The cluster driver; the configured default when absent.
    pub driver: Option<String>,
}

/// `POST /v1/clusters`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterCreateRequest {
    /// The template's uuid, name or integer id.
    pub cluster_template_id: String,
    /// Generated when absent.
    pub name: Option<String>,
    pub keypair: Option<String>,
    /// Workers of the default node group (0 from microversion 1.10).
    pub node_count: Option<i32>,
    pub master_count: Option<i32>,
    pub docker_volume_size: Option<i32>,
    pub labels: Option<LabelsRequest>,
    /// Merge `labels` into the template's instead of replacing them.
    pub merge_labels: Option<bool>,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: Option<bool>,
    pub master_lb_enabled: Option<bool>,
    /// Minutes; 0 means no timeout.
    pub create_timeout: Option<i32>,
    pub discovery_url: Option<String>,
}

/// `POST /v1/clusters/{cluster_ident}/actions/resize` (microversion 1.7).
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterResizeRequest {
    pub node_count: i32,
    pub nodes_to_remove: Option<Vec<String>>,
    /// The node group's uuid, name or id; the default worker group when absent.
    pub nodegroup: Option<String>,
}

/// `POST /v1/clusters/{cluster_ident}/actions/upgrade` (microversion 1.8).
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterUpgradeRequest {
    /// The new template's uuid or name.
    pub cluster_template: String,
    pub max_batch_size: Option<i32>,
    pub nodegroup: Option<String>,
}

/// `POST /v1/clusters/{cluster_ident}/nodegroups` (microversion 1.9).
#[derive(Debug, Serialize, ToSchema)]
pub struct NodeGroupCreateRequest {
    pub name: String,
    pub node_count: Option<i32>,
    pub min_node_count: Option<i32>,
    pub max_node_count: Option<i32>,
    /// `worker` when absent; `master` groups cannot be created.
    pub role: Option<String>,
    pub flavor_id: Option<String>,
    pub image_id: Option<String>,
    pub docker_volume_size: Option<i32>,
    pub labels: Option<LabelsRequest>,
    pub merge_labels: Option<bool>,
    pub node_labels: Option<LabelsRequest>,
    pub node_taints: Option<Vec<TaintView>>,
    /// Accepted for compatibility; a created group is never a default one.
    pub is_default: Option<bool>,
}

/// `POST /v1/federations`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FederationCreateRequest {
    /// Generated when absent.
    pub name: Option<String>,
    /// The host cluster's uuid or name.
    pub hostcluster_id: String,
    /// Must hold `dns-zone`.
    pub properties: BTreeMap<String, String>,
    /// Cluster uuids.
    pub member_ids: Option<Vec<String>>,
}

/// `POST /v1/certificates`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CertificateSignRequest {
    /// The cluster's uuid or name.
    pub cluster_uuid: String,
    /// A PEM certificate signing request.
    pub csr: String,
    /// Which of the cluster's CAs signs: `etcd` or `front_proxy`; anything else means the
    /// cluster CA.
    pub ca_cert_type: Option<String>,
}

/// `POST /v1/quotas` and `PATCH /v1/quotas/{project_id}/{resource}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuotaRequest {
    /// Required on create; ignored on update (the path names the quota).
    pub project_id: Option<String>,
    /// `Cluster`.
    pub resource: Option<String>,
    /// 1 when absent.
    pub hard_limit: Option<i32>,
}

/// `POST /v1/clustergroups` (microversion 1.20).
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterGroupCreateRequest {
    /// A Kubernetes object name (DNS-1123 subdomain), unique in the project.
    pub name: String,
    /// At most 255 characters.
    pub description: Option<String>,
    /// A label selector over registry labels (`env=prod,tier in (a,b)`); it picks clusters of
    /// the group's own project only.
    pub selector: Option<String>,
    /// Explicit members, by uuid or name: the project's own clusters join at once, a cluster of
    /// another project (by uuid) is proposed.
    pub clusters: Option<Vec<String>>,
}

/// `POST /v1/clustergroups/{clustergroup_ident}/members`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterGroupMemberRequest {
    /// The cluster's uuid or name (a cluster of another project by uuid).
    pub cluster: String,
}

/// `POST /v1/clustergroups/{clustergroup_ident}/bindings`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterGroupBindingRequest {
    /// The grantee project.
    pub project_id: String,
    /// Only the grantee's members holding one of these roles; every member when absent.
    pub roles: Option<Vec<String>>,
    /// `read` or `write`.
    pub access: String,
}

/// One JSON-Patch operation in Magnum's dialect (`add`, `replace`, `remove`).
#[derive(Debug, Serialize, ToSchema)]
pub struct PatchOperation {
    /// `add`, `replace` or `remove`.
    pub op: String,
    /// `/attribute[/key]`.
    pub path: String,
    /// A string or an integer; dictionaries and lists as JSON or Python-literal text.
    pub value: Option<serde_json::Value>,
}

/// The versions a created machine asks for.
#[derive(Debug, Serialize, ToSchema)]
pub struct MachineVersionsRequest {
    /// `v1.31.4` or `1.31.4`: within the skew policy of the cluster's control plane.
    pub kubelet: Option<String>,
}

/// A created machine's container runtime.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContainerRuntimeRequest {
    pub name: String,
    pub version: Option<String>,
}

/// `POST /v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines` (microversion
/// 1.20): everything left out is the node group's.
#[derive(Debug, Serialize, ToSchema)]
pub struct MachineCreateRequest {
    /// A Kubernetes object name unique in the cluster; `<group>-<n>` when absent.
    pub name: Option<String>,
    pub versions: Option<MachineVersionsRequest>,
    pub container_runtime: Option<ContainerRuntimeRequest>,
    pub os_image: Option<String>,
}

/// `POST /v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/replace|reboot`: an
/// empty object (or no body).
#[derive(Debug, Serialize, ToSchema)]
pub struct MachineActionRequest {}
