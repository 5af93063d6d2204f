//! The wire forms of `clusterregistry.k8s.io/v1alpha1`: `Cluster`, `ClusterList` and the parts
//! of `metav1.ObjectMeta` the registry keeps, as kubectl sends and reads them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const GROUP: &str = "clusterregistry.k8s.io";
pub const VERSION: &str = "v1alpha1";
pub const API_VERSION: &str = "clusterregistry.k8s.io/v1alpha1";
pub const KIND: &str = "Cluster";
pub const LIST_KIND: &str = "ClusterList";
pub const RESOURCE: &str = "clusters";
pub const SINGULAR: &str = "cluster";
/// `kubectl get cr`: a short name no core Kubernetes resource uses.
pub const SHORT_NAME: &str = "cr";
/// `kubectl get all-clusters`.
pub const CATEGORY: &str = "all-clusters";
/// `<resource>.<group>`, as Status messages name the resource.
pub const QUALIFIED_RESOURCE: &str = "clusters.clusterregistry.k8s.io";

/// A registry `Cluster`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ClusterSpec,
    #[serde(default, skip_serializing_if = "ClusterStatus::is_empty")]
    pub status: ClusterStatus,
}

/// The `metav1.ObjectMeta` fields the registry stores or fills in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

pub use crate::domain::registry::OwnerReference;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_api_endpoints: Option<KubernetesApiEndpoints>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_info: Option<AuthInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesApiEndpoints {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_endpoints: Vec<ServerAddressByClientCidr>,
    /// PEM CA certificates, base64 on the wire (OpenAPI format `byte`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerAddressByClientCidr {
    #[serde(
        rename = "clientCIDR",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub client_cidr: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_address: String,
}

/// Pointers to where credentials live; never credentials themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<ObjectReference>,
}

/// The registry's own three-field reference (not `core/v1.ObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterCondition>,
}

impl ClusterStatus {
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }
}

pub use crate::domain::registry::Condition as ClusterCondition;

/// `metav1.ListMeta`, k8s-openapi's.
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

/// The `ListMeta` of a list answer: its resourceVersion always, `continue` when there is more.
pub fn list_meta(resource_version: i64, next: String, remaining: Option<i64>) -> ListMeta {
    ListMeta {
        resource_version: Some(resource_version.to_string()),
        continue_: Some(next).filter(|c| !c.is_empty()),
        remaining_item_count: remaining,
        self_link: None,
    }
}

/// `ClusterList`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterList<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: ListMeta,
    pub items: &'a [Cluster],
}

// ---- multicluster.x-k8s.io/v1alpha1 ---------------------------------------------------------

pub const PROFILE_API_VERSION: &str = "multicluster.x-k8s.io/v1alpha1";
pub const PROFILE_KIND: &str = "ClusterProfile";
pub const PROFILE_LIST_KIND: &str = "ClusterProfileList";

/// `metav1.Condition`, k8s-openapi's (every field but `observedGeneration` always written).
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
/// `metav1.Time`, k8s-openapi's (RFC 3339 in UTC with seconds).
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A SIG-multicluster `ClusterProfile` (cluster-inventory-api `v1alpha1`), read-only here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfile {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ClusterProfileSpec,
    /// `None` only for a profile known by its metadata alone (a watch's `DELETED` of a change
    /// recorded without its object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ClusterProfileStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(default)]
    pub cluster_manager: ClusterManager,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterManager {
    #[serde(default)]
    pub name: String,
}

/// As the upstream Go type writes it: `conditions` and `version` always, `properties` when
/// there are some.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub version: ClusterVersion,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

impl ClusterProfileStatus {
    /// The `status` of the condition of type `type_`, if there is one.
    pub fn condition_status(&self, type_: &str) -> Option<&str> {
        self.conditions
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| c.status.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersion {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes: String,
}

/// A name/value property of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    pub name: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<Time>,
}

/// `ClusterProfileList`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileList<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: ListMeta,
    pub items: &'a [ClusterProfile],
}

/// The `ListMeta` of a custom resource's list as kube-apiserver writes it (an unstructured
/// list, whose `SetContinue` always sets the field): `continue` present also when empty, on
/// the last page, as ClusterProfile clients read it from a real hub.
pub fn custom_list_meta(resource_version: i64, next: String, remaining: Option<i64>) -> ListMeta {
    ListMeta {
        continue_: Some(next),
        ..list_meta(resource_version, String::new(), remaining)
    }
}
