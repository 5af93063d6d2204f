//! `apidiscovery.k8s.io` `APIGroupDiscoveryList` (`v2`, and `v2beta1`, which has the same
//! shape): the aggregated discovery document of `/api` and `/apis`, written as kube-apiserver
//! writes it (`k8s.io/api/apidiscovery/v2`).
//!
//! kube-core 5 has these types (`kube_core::discovery::v2`), but for reading: they carry no
//! `kind`/`apiVersion`, and they write empty `shortNames`, `categories`, `subresources` and
//! `acceptedTypes` as `[]` where Go's `omitempty` leaves them out. k8s-openapi has none (the
//! group is not in the OpenAPI of kube-apiserver). Hence these few.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::Serialize;

/// The aggregated discovery version a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V2,
    V2Beta1,
}

impl Version {
    /// `apidiscovery.k8s.io/v2` or `apidiscovery.k8s.io/v2beta1`.
    pub fn api_version(self) -> &'static str {
        match self {
            Version::V2 => "apidiscovery.k8s.io/v2",
            Version::V2Beta1 => "apidiscovery.k8s.io/v2beta1",
        }
    }
}

/// `APIGroupDiscoveryList`: the groups, in priority order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupDiscoveryList {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub metadata: ListMeta,
    pub items: Vec<APIGroupDiscovery>,
}

impl APIGroupDiscoveryList {
    pub fn new(version: Version, items: Vec<APIGroupDiscovery>) -> Self {
        APIGroupDiscoveryList {
            kind: "APIGroupDiscoveryList",
            api_version: version.api_version(),
            metadata: ListMeta::default(),
            items,
        }
    }
}

/// `APIGroupDiscovery`: one group and its versions, the preferred one first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct APIGroupDiscovery {
    pub metadata: GroupMetadata,
    pub versions: Vec<APIVersionDiscovery>,
}

/// The `metadata` of a group: only its name.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupMetadata {
    pub name: String,
    /// `Some(())` writes `"creationTimestamp": null`, as Go writes a zero `metav1.Time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<()>,
}

/// `APIVersionDiscovery`: the resources of one version of a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct APIVersionDiscovery {
    pub version: String,
    pub resources: Vec<APIResourceDiscovery>,
    pub freshness: Freshness,
}

/// Whether a group-version's document is up to date; ours always are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Freshness {
    Current,
}

/// Whether a resource lives in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Scope {
    Cluster,
    Namespaced,
}

/// `APIResourceDiscovery`: one resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceDiscovery {
    pub resource: String,
    pub response_kind: GroupVersionKind,
    pub scope: Scope,
    pub singular_resource: String,
    pub verbs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<APISubresourceDiscovery>,
}

/// `APISubresourceDiscovery`: one subresource (`status`) of a resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct APISubresourceDiscovery {
    pub subresource: String,
    pub response_kind: GroupVersionKind,
    pub verbs: Vec<String>,
}

/// The kind a resource (or subresource) answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_lists_and_the_core_groups_timestamp_are_left_out_as_go_does() {
        let gvk = GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
        };
        let list = APIGroupDiscoveryList::new(
            Version::V2Beta1,
            vec![APIGroupDiscovery {
                metadata: GroupMetadata {
                    name: String::new(),
                    creation_timestamp: None,
                },
                versions: vec![APIVersionDiscovery {
                    version: "v1".into(),
                    freshness: Freshness::Current,
                    resources: vec![APIResourceDiscovery {
                        resource: "namespaces".into(),
                        response_kind: gvk,
                        scope: Scope::Cluster,
                        singular_resource: "namespace".into(),
                        verbs: vec!["get".into()],
                        short_names: vec![],
                        categories: vec![],
                        subresources: vec![],
                    }],
                }],
            }],
        );
        assert_eq!(
            serde_json::to_value(&list).ok(),
            Some(json!({"kind": "APIGroupDiscoveryList",
                "apiVersion": "apidiscovery.k8s.io/v2beta1", "metadata": {},
                "items": [{"metadata": {"name": ""}, "versions": [{"version": "v1",
                    "freshness": "Current", "resources": [{"resource": "namespaces",
                    "responseKind": {"group": "", "version": "v1", "kind": "Namespace"},
                    "scope": "Cluster", "singularResource": "namespace",
                    "verbs": ["get"]}]}]}]}))
        );
        let named = GroupMetadata {
            name: "g".into(),
            creation_timestamp: Some(()),
        };
        assert_eq!(
            serde_json::to_value(&named).ok(),
            Some(json!({"name": "g", "creationTimestamp": null}))
        );
    }
}
