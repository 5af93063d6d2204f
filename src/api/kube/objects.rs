//! The wire forms of `clusterregistry.k8s.io/v1alpha1` (`Cluster`, `ClusterList`) and of
//! `multicluster.x-k8s.io/v1alpha1` (`ClusterProfile`), with k8s-openapi's `metav1` types
//! (`ObjectMeta`, `ListMeta`, `Condition`, `Time`), as kubectl sends and reads them.

use serde::{Deserialize, Serialize};

use crate::domain::registry;

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

/// `metav1.ObjectMeta`, `metav1.OwnerReference` and `metav1.ManagedFieldsEntry`,
/// k8s-openapi's: a field the registry does not fill is `None` and not written (an empty map or
/// list is `None` too).
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ManagedFieldsEntry, ObjectMeta, OwnerReference,
};

/// A stored owner reference as the wire writes it.
impl From<registry::OwnerReference> for OwnerReference {
    fn from(r: registry::OwnerReference) -> Self {
        OwnerReference {
            api_version: r.api_version,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }
}

/// A client's owner reference as the registry keeps it.
impl From<OwnerReference> for registry::OwnerReference {
    fn from(r: OwnerReference) -> Self {
        registry::OwnerReference {
            api_version: r.api_version,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    fn at(s: &str) -> Option<Time> {
        DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| super::super::view::meta_time(t.with_timezone(&Utc)))
    }

    #[test]
    fn served_metadata_writes_every_field_as_kube_apiserver_writes_a_custom_resource() {
        let owner = registry::OwnerReference {
            api_version: "example.com/v1".into(),
            kind: "Fleet".into(),
            name: "f".into(),
            uid: "u-0".into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        let meta = ObjectMeta {
            name: Some("alpha".into()),
            generate_name: Some("al".into()),
            namespace: Some("p1".into()),
            uid: Some("u-1".into()),
            resource_version: Some("101".into()),
            generation: Some(2),
            creation_timestamp: at("2026-11-27T12:00:00.750Z"),
            deletion_timestamp: at("2026-11-27T12:05:09+01:00"),
            deletion_grace_period_seconds: Some(0),
            labels: Some([("env".to_string(), "prod".to_string())].into()),
            annotations: Some([("note".to_string(), "x".to_string())].into()),
            finalizers: Some(vec!["example.com/f".into()]),
            owner_references: Some(vec![owner.clone().into()]),
            ..ObjectMeta::default()
        };
        // Keys in order, as the API server writes an unstructured object; times in UTC with
        // whole seconds.
        assert_eq!(
            serde_json::to_string(&meta).unwrap_or_default(),
            "{\"annotations\":{\"note\":\"x\"},\"creationTimestamp\":\"2026-11-27T12:00:00Z\",\
             \"deletionGracePeriodSeconds\":0,\"deletionTimestamp\":\"2026-11-27T11:05:09Z\",\
             \"finalizers\":[\"example.com/f\"],\"generateName\":\"al\",\"generation\":2,\
             \"labels\":{\"env\":\"prod\"},\"name\":\"alpha\",\"namespace\":\"p1\",\
             \"ownerReferences\":[{\"apiVersion\":\"example.com/v1\",\"controller\":true,\
             \"kind\":\"Fleet\",\"name\":\"f\",\"uid\":\"u-0\"}],\"resourceVersion\":\"101\",\
             \"uid\":\"u-1\"}"
        );
        let back: registry::OwnerReference = OwnerReference::from(owner.clone()).into();
        assert_eq!(back, owner);
    }

    #[test]
    fn empty_metadata_is_an_empty_object_and_a_client_null_is_an_absent_field() {
        let c = Cluster::default();
        assert_eq!(
            serde_json::to_value(&c).unwrap_or_default(),
            serde_json::json!({"metadata": {}, "spec": {}})
        );
        let sent: Cluster = serde_json::from_value(serde_json::json!({"metadata": {
            "name": "a", "creationTimestamp": null, "labels": null, "finalizers": null,
            "selfLink": "/x", "somethingElse": 1}}))
        .unwrap_or_default();
        assert_eq!(sent.metadata.name.as_deref(), Some("a"));
        assert_eq!(sent.metadata.creation_timestamp, None);
        assert_eq!(sent.metadata.labels, None);
        assert_eq!(sent.metadata.finalizers, None);
    }
}
