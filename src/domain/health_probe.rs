//! The active health prober's view of a cluster: what it needs to probe one (a
//! [`ProbeCandidate`]), what one probe found ([`ProbeResult`]), and the per-cluster record the
//! store keeps across rounds, conductors and restarts ([`HealthProbe`]), which the cluster
//! registry also reads (`lastHeartbeatTime`, `lastTransitionTime`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::status::HealthStatus;
use super::ClusterId;

/// A cluster the prober may probe: only the columns a probe and its verdict need.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeCandidate {
    /// The cluster's integer id: the keyset of the prober's pages.
    pub id: i64,
    pub uuid: ClusterId,
    pub api_address: String,
    /// The Kubernetes CA certificate (PEM) from `x509keypair` (kind `ca`), the newest one.
    pub ca_certificate: Option<String>,
    pub health_status: Option<HealthStatus>,
    pub health_status_reason: BTreeMap<String, String>,
    pub version: i64,
}

/// What one probe found; `reason` says why it failed (`None` after a success).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub cluster_uuid: ClusterId,
    pub ok: bool,
    pub reason: Option<String>,
}

/// A cluster's probe record, as the `cluster_health_probe` table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthProbe {
    pub cluster_uuid: ClusterId,
    /// When the last probe started (a conductor's claim of it): `lastHeartbeatTime`.
    pub last_probe_at: Option<DateTime<Utc>>,
    /// The last probe that found the API ready.
    pub last_ok_at: Option<DateTime<Utc>>,
    /// The last health change the prober committed: `lastTransitionTime`.
    pub last_transition_at: Option<DateTime<Utc>>,
    pub consecutive_failures: i32,
    pub consecutive_successes: i32,
    /// Why the last probe failed; `None` after a success.
    pub last_reason: Option<String>,
}

/// The health a cluster should be given after its counters reached a threshold, if that is a
/// change: `UNHEALTHY` after `failure_threshold` consecutive failures, `HEALTHY` after
/// `success_threshold` consecutive successes; `None` while neither threshold is reached or
/// when the cluster already has that health.
pub fn verdict(
    current: Option<HealthStatus>,
    record: &HealthProbe,
    failure_threshold: u32,
    success_threshold: u32,
) -> Option<HealthStatus> {
    let reached = |count: i32, threshold: u32| u32::try_from(count).unwrap_or(0) >= threshold;
    let next = if reached(record.consecutive_failures, failure_threshold.max(1)) {
        HealthStatus::Unhealthy
    } else if reached(record.consecutive_successes, success_threshold.max(1)) {
        HealthStatus::Healthy
    } else {
        return None;
    };
    (current != Some(next)).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(failures: i32, successes: i32) -> HealthProbe {
        HealthProbe {
            cluster_uuid: ClusterId::from(uuid::Uuid::nil()),
            last_probe_at: None,
            last_ok_at: None,
            last_transition_at: None,
            consecutive_failures: failures,
            consecutive_successes: successes,
            last_reason: None,
        }
    }

    #[test]
    fn failures_below_the_threshold_change_nothing() {
        let h = Some(HealthStatus::Healthy);
        assert_eq!(verdict(h, &record(2, 0), 3, 1), None);
    }

    #[test]
    fn failures_at_the_threshold_make_a_healthy_cluster_unhealthy_once() {
        let h = Some(HealthStatus::Healthy);
        assert_eq!(
            verdict(h, &record(3, 0), 3, 1),
            Some(HealthStatus::Unhealthy)
        );
        let h = Some(HealthStatus::Unhealthy);
        assert_eq!(verdict(h, &record(4, 0), 3, 1), None);
    }

    #[test]
    fn successes_at_the_threshold_make_an_unknown_or_unhealthy_cluster_healthy() {
        assert_eq!(
            verdict(None, &record(0, 1), 3, 1),
            Some(HealthStatus::Healthy)
        );
        let h = Some(HealthStatus::Unhealthy);
        assert_eq!(verdict(h, &record(0, 1), 3, 2), None);
        assert_eq!(verdict(h, &record(0, 2), 3, 2), Some(HealthStatus::Healthy));
    }
}
