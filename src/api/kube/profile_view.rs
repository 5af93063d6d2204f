//! The `multicluster.x-k8s.io/v1alpha1` `ClusterProfile` of a registry entry, as the list,
//! get and watch of [`super::profiles`] show it (the `Cluster` object is [`super::view`]'s).

use serde_json::{json, Value};

use super::view;
use crate::domain::status::HealthStatus;
use crate::store::RegistryEntry;

pub const API_VERSION: &str = "multicluster.x-k8s.io/v1alpha1";
pub const KIND: &str = "ClusterProfile";
/// The cluster manager every profile names, and the label the ClusterProfile API asks managers
/// to set.
pub const MANAGER: &str = "fleetyard";
pub const MANAGER_LABEL: &str = "x-k8s.io/cluster-manager";

/// A `metav1.Condition`.
fn condition(kind: &str, ok: Option<bool>, reason: &str, message: String, at: String) -> Value {
    let status = match ok {
        Some(true) => "True",
        Some(false) => "False",
        None => "Unknown",
    };
    json!({"type": kind, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": at})
}

/// The profile of a cluster.
pub fn profile(e: &RegistryEntry) -> Value {
    let c = &e.cluster;
    let object = view::cluster(e);
    let mut labels = object.metadata.labels.clone();
    labels.insert(MANAGER_LABEL.into(), MANAGER.into());
    let at = view::kube_time(e.last_transition.or(c.updated_at).unwrap_or(c.created_at));
    let healthy = match c.health_status {
        Some(HealthStatus::Healthy) => Some(true),
        Some(HealthStatus::Unhealthy) => Some(false),
        _ => None,
    };
    let health_message = if c.health_status_reason.is_empty() {
        format!(
            "health {}",
            c.health_status.map(|h| h.as_str()).unwrap_or("UNKNOWN")
        )
    } else {
        c.health_status_reason
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let status = c.status.as_str();
    let joined = status.ends_with("_COMPLETE") && !status.starts_with("DELETE");
    let mut properties = vec![
        json!({"name": "fleetyard.openstack.org/status", "value": status}),
        json!({"name": "fleetyard.openstack.org/driver", "value": e.driver}),
        json!({"name": "fleetyard.openstack.org/node-count", "value": e.node_count.to_string()}),
        json!({"name": "fleetyard.openstack.org/cluster-uuid", "value": c.uuid.to_string()}),
    ];
    if let Some(addr) = &c.api_address {
        properties.push(json!({"name": "fleetyard.openstack.org/api-address", "value": addr}));
    }
    let mut metadata = serde_json::to_value(&object.metadata).unwrap_or_else(|_| json!({}));
    metadata["labels"] = json!(labels);
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {"displayName": c.name, "clusterManager": {"name": MANAGER}},
        "status": {
            "conditions": [
                condition("ControlPlaneHealthy", healthy,
                    match healthy { Some(true) => "Healthy", Some(false) => "Unhealthy", None => "HealthUnknown" },
                    health_message, at.clone()),
                condition("Joined", Some(joined), if joined { "Joined" } else { "NotReady" },
                    format!("cluster status {status}"), at),
            ],
            "version": {"kubernetes": c.coe_version.clone().unwrap_or_default()},
            "properties": properties,
        }
    })
}
