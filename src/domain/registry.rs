//! What the cluster registry (`clusterregistry.k8s.io/v1alpha1`) keeps on a cluster beyond
//! Magnum's columns: Kubernetes labels and annotations (not Magnum's COE labels), the endpoints
//! and CA of a registered cluster, pointers to its credentials, and the registry's counters.
//! Also the registry name of a cluster: its own name when that is a Kubernetes name and no
//! other object of its project holds it, else a name derived from it and its uuid.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::kube_names::is_dns1123_subdomain;
use super::TemplateId;

/// The hidden public template of clusters registered through the registry (driver `external`).
pub const EXTERNAL_TEMPLATE: TemplateId =
    TemplateId(uuid::uuid!("00000000-0000-4000-8000-00000000e7e7"));
/// The driver of registered clusters: it provisions nothing.
pub const EXTERNAL_DRIVER: &str = "external";
/// The annotation holding a cluster's own name when its registry name is derived.
pub const NAME_ANNOTATION: &str = "fleetyard.openstack.org/cluster-name";

/// `serverEndpoints[]`: where clients in `client_cidr` reach the cluster's API server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEndpoint {
    #[serde(rename = "clientCIDR", default)]
    pub client_cidr: String,
    #[serde(rename = "serverAddress", default)]
    pub server_address: String,
}

/// A pointer to where a credential lives (a Secret, say); never the credential.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// `spec.authInfo`: how a user and how a controller authenticate to the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthPointers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<ObjectRef>,
}

impl AuthPointers {
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.controller.is_none()
    }
}

/// `metadata.ownerReferences[]`: an object that owns the cluster (kept as the client wrote it;
/// the registry runs no garbage collector).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// A `status.conditions[]` entry of a registry cluster (the registry's own condition shape,
/// with `lastHeartbeatTime`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The condition type the service's health prober owns; outside controllers own the others
/// (but [`BLOCKED_CONDITION`]).
pub const PROBER_CONDITION: &str = "OK";

/// The condition type the service shows while an operation on the cluster waits on a
/// transient refusal of its driver; one written through the status subresource is not shown.
pub const BLOCKED_CONDITION: &str = "Blocked";

/// The registry's part of a cluster row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryMeta {
    /// `metadata.name`: one object per project and name, across both APIs. A registry create
    /// takes the name it is given; a `/v1` create the first free [`name_candidate`] (the
    /// store picks it, inside the create's transaction). It never changes.
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// The row's place in the registry's one increasing counter (set by the store).
    pub resource_version: i64,
    /// 1 at create, +1 for every change of the registry spec.
    pub generation: i64,
    /// Registered clusters' endpoints; provisioned clusters show their `api_address`.
    pub server_endpoints: Vec<ServerEndpoint>,
    /// PEM CA certificates of a registered cluster.
    pub ca_bundle: Option<String>,
    pub auth_info: AuthPointers,
    /// `metadata.finalizers`: while any is left, a deleted cluster stays (with
    /// [`RegistryMeta::deletion_timestamp`] set) and its deletion waits.
    pub finalizers: Vec<String>,
    pub owner_references: Vec<OwnerReference>,
    /// When the cluster's deletion was asked for (either API); `None` while it is not deleted.
    pub deletion_timestamp: Option<chrono::DateTime<chrono::Utc>>,
    pub deletion_grace_period_seconds: Option<i64>,
    /// The conditions outside controllers wrote through the status subresource.
    pub conditions: Vec<Condition>,
    /// `metadata.generateName` of a cluster registered with one; kept as it was at create.
    pub generate_name: Option<String>,
    /// `metadata.managedFields`: which field manager owns which fields.
    pub managed_fields: super::managed_fields::ManagedFields,
}

impl Default for RegistryMeta {
    fn default() -> Self {
        RegistryMeta {
            name: String::new(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            resource_version: 0,
            generation: 1,
            server_endpoints: Vec::new(),
            ca_bundle: None,
            auth_info: AuthPointers::default(),
            finalizers: Vec::new(),
            owner_references: Vec::new(),
            deletion_timestamp: None,
            deletion_grace_period_seconds: None,
            conditions: Vec::new(),
            generate_name: None,
            managed_fields: Default::default(),
        }
    }
}

impl RegistryMeta {
    /// Whether the cluster's deletion has been asked for.
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// Whether a deletion waits on finalizers: asked for, with finalizers left.
    pub fn deletion_waits(&self) -> bool {
        self.is_deleting() && !self.finalizers.is_empty()
    }

    /// Marks the cluster as being deleted at `now` (kept when it already is).
    pub fn mark_deleting(&mut self, now: chrono::DateTime<chrono::Utc>) {
        if self.deletion_timestamp.is_none() {
            self.deletion_timestamp = Some(now);
            self.deletion_grace_period_seconds = Some(0);
        }
    }

    /// The finalizers of `next` that this (deleting) object does not have: none may be added
    /// once a deletion is asked for.
    pub fn added_finalizers<'a>(&self, next: &'a [String]) -> Vec<&'a str> {
        next.iter()
            .filter(|f| !self.finalizers.contains(f))
            .map(String::as_str)
            .collect()
    }

    /// The `status_reason` of a cluster whose deletion waits on its finalizers.
    pub fn waiting_reason(&self) -> String {
        format!(
            "Deletion waits for the registry finalizers to be removed: {}",
            self.finalizers.join(", ")
        )
    }

    /// The API address a registered cluster is reached at: its first endpoint's server
    /// address, as an `https://` URL when it names no scheme.
    pub fn api_address(&self) -> Option<String> {
        let first = self.server_endpoints.first()?;
        let addr = first.server_address.trim();
        if addr.is_empty() {
            None
        } else if addr.contains("://") {
            Some(addr.to_string())
        } else {
            Some(format!("https://{addr}"))
        }
    }
}

/// The base of a derived registry name: `name` lower-cased, other characters as `-`, trimmed
/// to 200 characters, dashes off the edges of each dot-separated label, empty labels dropped
/// (`cluster` when nothing is left).
fn derived_base(name: &str) -> String {
    let mapped: String = name
        .chars()
        .take(200)
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    // Dots may not start, end or double up inside a subdomain; dashes may not edge a label.
    let base = mapped
        .split('.')
        .map(|l| l.trim_matches('-'))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    if base.is_empty() {
        "cluster".to_string()
    } else {
        base
    }
}

/// How many hex digits of the uuid the derived names of the first attempts end in.
const SUFFIX_DIGITS: [usize; 4] = [8, 12, 16, 32];

/// The registry name a `/v1` cluster tries at `attempt` (0, 1, …), the first free one in its
/// project being taken (a deterministic sequence, so the same rows get the same names):
/// 0 is its own name when that is a Kubernetes name, else `<base>-<first 8 of uuid>` (e.g.
/// `My_Cluster` with uuid `3f2a…` → `my-cluster-3f2a9c01`, the registry's name for it before
/// names were stored); then `<base>-<first 8, 12, 16, 32 hex digits of uuid>`, then
/// `<base>-<32 hex digits>-<n>` for n = 2, 3, … Every candidate is a Kubernetes name.
pub fn name_candidate(name: &str, uuid: &uuid::Uuid, attempt: u32) -> String {
    let own = is_dns1123_subdomain(name);
    let step = if own {
        match attempt.checked_sub(1) {
            None => return name.to_string(),
            Some(s) => s as usize,
        }
    } else {
        attempt as usize
    };
    let hex = uuid.simple().to_string();
    let base = derived_base(name);
    match SUFFIX_DIGITS.get(step) {
        Some(digits) => format!("{base}-{}", &hex[..*digits]),
        None => format!("{base}-{hex}-{}", step - SUFFIX_DIGITS.len() + 2),
    }
}

/// A cluster's natural registry name: [`name_candidate`]'s first.
pub fn registry_name(name: &str, uuid: &uuid::Uuid) -> String {
    name_candidate(name, uuid, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_names_are_dns_subdomains() {
        for ok in ["a", "prod-1", "a.b-c.d", "0abc"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in ["", "A", "a_b", "-a", "a-", "a..b", ".a", &"a".repeat(254)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn derived_names_are_kube_names_ending_in_the_uuid_prefix() {
        let id = uuid::uuid!("3f2a9c01-0000-4000-8000-000000000000");
        assert_eq!(registry_name("prod", &id), "prod");
        assert_eq!(registry_name("My_Cluster", &id), "my-cluster-3f2a9c01");
        assert_eq!(registry_name("A..b_", &id), "a.b-3f2a9c01");
        assert_eq!(registry_name("___", &id), "cluster-3f2a9c01");
        for n in ["My_Cluster", "X.-y", "A".repeat(242).as_str()] {
            let d = registry_name(n, &id);
            assert!(is_dns1123_subdomain(&d), "{d}");
            assert!(d.ends_with("-3f2a9c01"), "{d}");
        }
    }

    #[test]
    fn candidates_are_distinct_kube_names_in_a_fixed_order() {
        let id = uuid::uuid!("3f2a9c01-1234-4000-8000-00000000abcd");
        let own: Vec<String> = (0..7).map(|a| name_candidate("prod", &id, a)).collect();
        assert_eq!(
            own,
            [
                "prod",
                "prod-3f2a9c01",
                "prod-3f2a9c011234",
                "prod-3f2a9c0112344000",
                "prod-3f2a9c0112344000800000000000abcd",
                "prod-3f2a9c0112344000800000000000abcd-2",
                "prod-3f2a9c0112344000800000000000abcd-3",
            ]
        );
        assert_eq!(name_candidate("My_Cluster", &id, 0), "my-cluster-3f2a9c01");
        assert_eq!(
            name_candidate("My_Cluster", &id, 1),
            "my-cluster-3f2a9c011234"
        );
        let long = "a".repeat(253);
        let mut seen = std::collections::BTreeSet::new();
        for a in 0..40 {
            for n in ["prod", "My_Cluster", long.as_str(), "___", "x.-y"] {
                let c = name_candidate(n, &id, a);
                assert!(is_dns1123_subdomain(&c), "{c}");
                assert!(seen.insert((n, c)), "{n} {a}");
            }
        }
    }
}
