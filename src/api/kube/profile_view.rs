//! The `multicluster.x-k8s.io/v1alpha1` `ClusterProfile` of a registry entry, as the list,
//! get and watch of [`super::profiles`] show it (the `Cluster` object is [`super::view`]'s).

use super::objects::{
    Cluster, ClusterManager, ClusterProfile, ClusterProfileSpec, ClusterProfileStatus,
    ClusterVersion, Condition, ObjectMeta, Property, PROFILE_API_VERSION, PROFILE_KIND,
};
use super::view;
use crate::domain::status::{self, ClusterStatus};
use crate::store::RegistryEntry;

/// The cluster manager every profile names, and the label the ClusterProfile API asks managers
/// to set.
pub const MANAGER: &str = "fleetyard";
pub const MANAGER_LABEL: &str = "x-k8s.io/cluster-manager";

/// The condition saying whether the cluster's control plane is healthy.
pub const HEALTHY_CONDITION: &str = "ControlPlaneHealthy";
/// The condition saying whether the cluster is ready for work.
pub const JOINED_CONDITION: &str = "Joined";

/// Whether a cluster in `status` has joined the fleet: it is in a COMPLETE-like state (created
/// and not being deleted, no operation under way or failed).
pub fn joined(status: ClusterStatus) -> bool {
    status.is_complete_like()
}

/// The profile's metadata: its cluster's, with the cluster manager's label and without the
/// cluster's managed fields (they describe the `Cluster`'s fields, not the profile's).
fn metadata(cluster: &ObjectMeta) -> ObjectMeta {
    let mut metadata = cluster.clone();
    metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(MANAGER_LABEL.into(), MANAGER.into());
    metadata.managed_fields = None;
    metadata
}

fn spec(display_name: &str) -> ClusterProfileSpec {
    ClusterProfileSpec {
        display_name: display_name.to_string(),
        cluster_manager: ClusterManager {
            name: MANAGER.into(),
        },
    }
}

/// The profile of a cluster.
pub fn profile(e: &RegistryEntry) -> ClusterProfile {
    let c = &e.cluster;
    let object = view::cluster(e);
    let at = view::meta_time(view::last_transition(e));
    let health = status::health_condition(c.health_status, &c.health_status_reason);
    let status = c.status.as_str();
    let joined = joined(c.status);
    let property = |name: &str, value: String| Property {
        name: format!("fleetyard.openstack.org/{name}"),
        value,
        last_observed_time: None,
    };
    let properties = [
        property("status", status.to_string()),
        property("driver", e.driver.clone()),
        property("node-count", e.node_count.to_string()),
        property("cluster-uuid", c.uuid.to_string()),
    ]
    .into_iter()
    .chain(c.api_address.clone().map(|a| property("api-address", a)))
    // A property's value is at least one character long.
    .filter(|p| !p.value.is_empty())
    .collect();
    ClusterProfile {
        api_version: PROFILE_API_VERSION.into(),
        kind: PROFILE_KIND.into(),
        metadata: metadata(&object.metadata),
        spec: spec(&c.name),
        status: Some(ClusterProfileStatus {
            conditions: vec![
                Condition {
                    type_: HEALTHY_CONDITION.into(),
                    status: health.status.into(),
                    reason: health.reason.into(),
                    message: health.message.unwrap_or_else(|| {
                        format!(
                            "health {}",
                            c.health_status.map_or("UNKNOWN", |h| h.as_str())
                        )
                    }),
                    last_transition_time: at.clone(),
                    observed_generation: None,
                },
                Condition {
                    type_: JOINED_CONDITION.into(),
                    status: if joined { "True" } else { "False" }.into(),
                    reason: if joined { "Joined" } else { "NotReady" }.into(),
                    message: format!("cluster status {status}"),
                    last_transition_time: at,
                    observed_generation: None,
                },
            ],
            version: ClusterVersion {
                kubernetes: c.coe_version.clone().unwrap_or_default(),
            },
            properties,
        }),
    }
}

/// What a change-log line that kept no object shows of a profile that is gone: the metadata
/// the line kept ([`view::deleted`]) and the spec, whose display name is the cluster's own
/// name as it was then.
pub fn deleted(gone: &Cluster, display_name: &str) -> ClusterProfile {
    ClusterProfile {
        api_version: PROFILE_API_VERSION.into(),
        kind: PROFILE_KIND.into(),
        metadata: metadata(&gone.metadata),
        spec: spec(display_name),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    #[test]
    fn a_cluster_has_joined_in_exactly_the_complete_like_states() {
        let joined: Vec<&str> = ClusterStatus::ALL
            .iter()
            .filter(|s| joined(**s))
            .map(|s| s.as_str())
            .collect();
        assert_eq!(
            joined,
            [
                "CREATE_COMPLETE",
                "UPDATE_COMPLETE",
                "RESUME_COMPLETE",
                "RESTORE_COMPLETE",
                "ROLLBACK_COMPLETE",
                "SNAPSHOT_COMPLETE",
                "CHECK_COMPLETE",
                "ADOPT_COMPLETE",
            ]
        );
    }

    #[test]
    fn a_profile_known_by_its_metadata_alone_keeps_the_manager_label_and_spec() {
        let gone = Cluster {
            metadata: ObjectMeta {
                name: Some("alpha".into()),
                namespace: Some("p1".into()),
                labels: Some([("env".to_string(), "prod".to_string())].into()),
                ..ObjectMeta::default()
            },
            ..Cluster::default()
        };
        let p = serde_json::to_value(deleted(&gone, "alpha")).unwrap_or_default();
        assert_eq!(
            p,
            serde_json::json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1",
                "kind": "ClusterProfile",
                "metadata": {"name": "alpha", "namespace": "p1",
                    "labels": {"env": "prod", "x-k8s.io/cluster-manager": "fleetyard"}},
                "spec": {"displayName": "alpha", "clusterManager": {"name": "fleetyard"}}})
        );
    }

    #[test]
    fn condition_times_are_written_as_the_registry_writes_times() {
        let t = DateTime::parse_from_rfc3339("2026-11-22T01:54:51.750Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        assert_eq!(
            serde_json::to_value(view::meta_time(t)).unwrap_or_default(),
            serde_json::json!(view::kube_time(t))
        );
    }
}
