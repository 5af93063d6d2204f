//! Status values, exactly Magnum's strings.

use std::fmt;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// Cluster and node group status (Heat stack states, as Magnum keeps them).
    ClusterStatus {
        CreateInProgress = "CREATE_IN_PROGRESS",
        CreateFailed = "CREATE_FAILED",
        CreateComplete = "CREATE_COMPLETE",
        UpdateInProgress = "UPDATE_IN_PROGRESS",
        UpdateFailed = "UPDATE_FAILED",
        UpdateComplete = "UPDATE_COMPLETE",
        DeleteInProgress = "DELETE_IN_PROGRESS",
        DeleteFailed = "DELETE_FAILED",
        DeleteComplete = "DELETE_COMPLETE",
        ResumeComplete = "RESUME_COMPLETE",
        ResumeFailed = "RESUME_FAILED",
        RestoreComplete = "RESTORE_COMPLETE",
        RollbackInProgress = "ROLLBACK_IN_PROGRESS",
        RollbackFailed = "ROLLBACK_FAILED",
        RollbackComplete = "ROLLBACK_COMPLETE",
        SnapshotComplete = "SNAPSHOT_COMPLETE",
        CheckComplete = "CHECK_COMPLETE",
        AdoptComplete = "ADOPT_COMPLETE",
    }
}

impl ClusterStatus {
    /// The "COMPLETE-like" states in which operations are allowed.
    pub fn is_complete_like(&self) -> bool {
        matches!(
            self,
            ClusterStatus::CreateComplete
                | ClusterStatus::UpdateComplete
                | ClusterStatus::ResumeComplete
                | ClusterStatus::RestoreComplete
                | ClusterStatus::RollbackComplete
                | ClusterStatus::SnapshotComplete
                | ClusterStatus::CheckComplete
                | ClusterStatus::AdoptComplete
        )
    }

    /// States in which a cluster's credential may be rotated (Magnum's list: COMPLETE-like,
    /// or an update under way or failed).
    pub fn allows_credential_rotation(&self) -> bool {
        self.is_complete_like()
            || matches!(
                self,
                ClusterStatus::UpdateInProgress | ClusterStatus::UpdateFailed
            )
    }

    pub fn is_failed(&self) -> bool {
        matches!(
            self,
            ClusterStatus::CreateFailed
                | ClusterStatus::UpdateFailed
                | ClusterStatus::DeleteFailed
                | ClusterStatus::RollbackFailed
                | ClusterStatus::ResumeFailed
        )
    }

    pub fn is_in_progress(&self) -> bool {
        self.as_str().ends_with("_IN_PROGRESS")
    }

    /// States in which a change (a resize, an upgrade, a node count) is accepted: COMPLETE-like,
    /// or `UPDATE_FAILED`, where repeating the change that failed is the way forward (the driver
    /// resumes from where it stopped).
    pub fn accepts_update(&self) -> bool {
        self.is_complete_like() || *self == ClusterStatus::UpdateFailed
    }

    /// The way forward from a failed state, through the API: what a user does next.
    pub fn way_forward(&self) -> Option<&'static str> {
        match self {
            ClusterStatus::CreateFailed => Some(
                "retry the create (POST /v1/clusters/{cluster}/actions/retry, microversion 1.16) or delete the cluster",
            ),
            ClusterStatus::UpdateFailed | ClusterStatus::RollbackFailed => Some(
                "repeat the resize, upgrade or node group change that failed, or delete the cluster",
            ),
            ClusterStatus::DeleteFailed => Some(
                "delete the cluster again, or have an administrator force its delete (DELETE /v1/clusters/{cluster}?force=true, microversion 1.18)",
            ),
            _ => None,
        }
    }

    /// The way forward from a node group's failed state, through the API.
    pub fn nodegroup_way_forward(&self) -> Option<&'static str> {
        match self {
            ClusterStatus::CreateFailed => Some(
                "retry the create (POST /v1/clusters/{cluster}/nodegroups/{nodegroup}/actions/retry, microversion 1.17) or delete the node group",
            ),
            ClusterStatus::UpdateFailed | ClusterStatus::RollbackFailed => Some(
                "repeat the node group update or resize that failed, or delete the node group",
            ),
            ClusterStatus::DeleteFailed => Some("delete the node group again"),
            _ => None,
        }
    }
}

string_enum! {
    /// Cluster health, null until the first poll.
    HealthStatus {
        Healthy = "HEALTHY",
        Unhealthy = "UNHEALTHY",
        Unknown = "UNKNOWN",
    }
}

/// A health verdict as the parts of a Kubernetes condition that says whether a cluster is
/// healthy (the registry's `OK`, the ClusterProfile's `ControlPlaneHealthy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCondition {
    /// `True` (healthy), `False` (unhealthy) or `Unknown` (`UNKNOWN`, or no verdict yet).
    pub status: &'static str,
    /// `Healthy`, `Unhealthy` or `HealthUnknown`.
    pub reason: &'static str,
    /// The verdict's reasons as `key: value` joined by `; ` (`None` when it gave none).
    pub message: Option<String>,
}

/// The condition of a cluster's health verdict (`None`: not probed yet) and its reasons.
pub fn health_condition(
    health: Option<HealthStatus>,
    reasons: &std::collections::BTreeMap<String, String>,
) -> HealthCondition {
    let (status, reason) = match health {
        Some(HealthStatus::Healthy) => ("True", "Healthy"),
        Some(HealthStatus::Unhealthy) => ("False", "Unhealthy"),
        Some(HealthStatus::Unknown) | None => ("Unknown", "HealthUnknown"),
    };
    let message = (!reasons.is_empty()).then(|| {
        reasons
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("; ")
    });
    HealthCondition {
        status,
        reason,
        message,
    }
}

string_enum! {
    FederationStatus {
        CreateInProgress = "CREATE_IN_PROGRESS",
        CreateFailed = "CREATE_FAILED",
        CreateComplete = "CREATE_COMPLETE",
        UpdateInProgress = "UPDATE_IN_PROGRESS",
        UpdateFailed = "UPDATE_FAILED",
        UpdateComplete = "UPDATE_COMPLETE",
        DeleteInProgress = "DELETE_IN_PROGRESS",
        DeleteFailed = "DELETE_FAILED",
        DeleteComplete = "DELETE_COMPLETE",
    }
}

/// The verb of an operation: what its in-progress, complete and failed states are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Create,
    Update,
    Delete,
}

impl Verb {
    pub fn in_progress(self) -> ClusterStatus {
        match self {
            Verb::Create => ClusterStatus::CreateInProgress,
            Verb::Update => ClusterStatus::UpdateInProgress,
            Verb::Delete => ClusterStatus::DeleteInProgress,
        }
    }
    pub fn complete(self) -> ClusterStatus {
        match self {
            Verb::Create => ClusterStatus::CreateComplete,
            Verb::Update => ClusterStatus::UpdateComplete,
            Verb::Delete => ClusterStatus::DeleteComplete,
        }
    }
    pub fn failed(self) -> ClusterStatus {
        match self {
            Verb::Create => ClusterStatus::CreateFailed,
            Verb::Update => ClusterStatus::UpdateFailed,
            Verb::Delete => ClusterStatus::DeleteFailed,
        }
    }
    pub fn federation_in_progress(self) -> FederationStatus {
        match self {
            Verb::Create => FederationStatus::CreateInProgress,
            Verb::Update => FederationStatus::UpdateInProgress,
            Verb::Delete => FederationStatus::DeleteInProgress,
        }
    }
    pub fn federation_complete(self) -> FederationStatus {
        match self {
            Verb::Create => FederationStatus::CreateComplete,
            Verb::Update => FederationStatus::UpdateComplete,
            Verb::Delete => FederationStatus::DeleteComplete,
        }
    }
    pub fn federation_failed(self) -> FederationStatus {
        match self {
            Verb::Create => FederationStatus::CreateFailed,
            Verb::Update => FederationStatus::UpdateFailed,
            Verb::Delete => FederationStatus::DeleteFailed,
        }
    }
}

impl ClusterStatus {
    /// The operation a status belongs to (rollbacks count as updates, as in Magnum's sync).
    pub fn verb(&self) -> Option<Verb> {
        let s = self.as_str();
        if s.starts_with("CREATE_") {
            Some(Verb::Create)
        } else if s.starts_with("UPDATE_") || s.starts_with("ROLLBACK_") {
            Some(Verb::Update)
        } else if s.starts_with("DELETE_") {
            Some(Verb::Delete)
        } else {
            None
        }
    }
}

impl FederationStatus {
    pub fn verb(&self) -> Verb {
        let s = self.as_str();
        if s.starts_with("CREATE_") {
            Verb::Create
        } else if s.starts_with("UPDATE_") {
            Verb::Update
        } else {
            Verb::Delete
        }
    }
    pub fn is_in_progress(&self) -> bool {
        self.as_str().ends_with("_IN_PROGRESS")
    }

    /// The way forward from a failed state, through the API: what a user does next.
    pub fn way_forward(&self) -> Option<&'static str> {
        match self {
            FederationStatus::CreateFailed => Some(
                "retry the create (POST /v1/federations/{federation}/actions/retry, microversion 1.17) or delete the federation",
            ),
            FederationStatus::UpdateFailed => Some(
                "repeat the update, join or unjoin that failed, or delete the federation",
            ),
            FederationStatus::DeleteFailed => Some("delete the federation again"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_string() {
        for s in ClusterStatus::ALL {
            assert_eq!(ClusterStatus::parse(s.as_str()), Some(*s));
        }
        for s in FederationStatus::ALL {
            assert_eq!(FederationStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(ClusterStatus::parse("create_complete"), None);
    }

    #[test]
    fn verbs_map_statuses_both_ways() {
        assert_eq!(ClusterStatus::RollbackInProgress.verb(), Some(Verb::Update));
        assert_eq!(ClusterStatus::CreateFailed.verb(), Some(Verb::Create));
        assert_eq!(ClusterStatus::CheckComplete.verb(), None);
        assert_eq!(Verb::Delete.in_progress(), ClusterStatus::DeleteInProgress);
        assert_eq!(FederationStatus::UpdateFailed.verb(), Verb::Update);
        assert_eq!(
            Verb::Create.federation_complete(),
            FederationStatus::CreateComplete
        );
    }

    #[test]
    fn complete_like_failed_and_in_progress_sets_match_magnum() {
        assert!(ClusterStatus::CreateComplete.is_complete_like());
        assert!(ClusterStatus::AdoptComplete.is_complete_like());
        assert!(!ClusterStatus::DeleteComplete.is_complete_like());
        assert!(ClusterStatus::RollbackFailed.is_failed());
        assert!(!ClusterStatus::UpdateComplete.is_failed());
        assert!(ClusterStatus::RollbackInProgress.is_in_progress());
    }

    #[test]
    fn every_failed_state_has_a_way_forward_and_update_failed_accepts_changes() {
        for s in ClusterStatus::ALL.iter().filter(|s| s.is_failed()) {
            if *s != ClusterStatus::ResumeFailed {
                assert!(s.way_forward().is_some(), "{s}");
            }
        }
        assert!(ClusterStatus::UpdateFailed.accepts_update());
        assert!(ClusterStatus::CreateComplete.accepts_update());
        assert!(!ClusterStatus::CreateFailed.accepts_update());
        assert!(!ClusterStatus::UpdateInProgress.accepts_update());
        assert_eq!(ClusterStatus::CreateComplete.way_forward(), None);
    }

    #[test]
    fn a_health_verdict_maps_to_one_condition_status_reason_and_message() {
        let none = std::collections::BTreeMap::new();
        let cases = [
            (Some(HealthStatus::Healthy), "True", "Healthy"),
            (Some(HealthStatus::Unhealthy), "False", "Unhealthy"),
            (Some(HealthStatus::Unknown), "Unknown", "HealthUnknown"),
            (None, "Unknown", "HealthUnknown"),
        ];
        for (health, status, reason) in cases {
            let c = health_condition(health, &none);
            assert_eq!((c.status, c.reason), (status, reason), "{health:?}");
            assert_eq!(c.message, None, "{health:?}");
        }
        let reasons = [
            ("api".to_string(), "unreachable".to_string()),
            ("nodes".to_string(), "2 of 3 ready".to_string()),
        ]
        .into();
        assert_eq!(
            health_condition(Some(HealthStatus::Unhealthy), &reasons).message,
            Some("api: unreachable; nodes: 2 of 3 ready".to_string())
        );
    }

    #[test]
    fn every_failed_node_group_and_federation_state_has_a_way_forward() {
        for s in ClusterStatus::ALL.iter().filter(|s| s.is_failed()) {
            if *s != ClusterStatus::ResumeFailed {
                assert!(s.nodegroup_way_forward().is_some(), "{s}");
            }
        }
        assert_eq!(ClusterStatus::UpdateComplete.nodegroup_way_forward(), None);
        for s in FederationStatus::ALL {
            let failed = s.as_str().ends_with("_FAILED");
            assert_eq!(s.way_forward().is_some(), failed, "{s}");
        }
        assert_eq!(
            FederationStatus::DeleteFailed.way_forward(),
            Some("delete the federation again")
        );
    }
}
