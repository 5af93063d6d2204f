//! The active health prober's view of a cluster: what it needs to probe one (a
//! [`ProbeCandidate`]), what one probe found ([`ProbeResult`]), and the per-cluster record the
//! store keeps across rounds, conductors and restarts ([`HealthProbe`]), which the cluster
//! registry also reads (`lastHeartbeatTime`, `lastTransitionTime`); which addresses the
//! prober may connect to at all ([`AddressPolicy`]); and what a user is told when a probe
//! fails ([`ProbeFailure`]).

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

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

/// The networks the prober may connect to when `[health_probe] allowed_networks` is not set:
/// every address, less [`DEFAULT_DENIED_NETWORKS`].
pub const DEFAULT_ALLOWED_NETWORKS: &str = "0.0.0.0/0, ::/0";

/// The networks the prober never connects to unless a more specific allowed network holds the
/// address: "this host" and loopback (the conductor's own services), link-local (which holds
/// the cloud metadata service at 169.254.169.254), the metadata addresses outside it
/// (Alibaba's 100.100.100.200, Azure's host endpoint 168.63.129.16, AWS's IPv6
/// fd00:ec2::254), multicast and reserved ranges, and their IPv6 counterparts.
pub const DEFAULT_DENIED_NETWORKS: &str = "0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, \
     100.100.100.200/32, 168.63.129.16/32, 224.0.0.0/4, 240.0.0.0/4, \
     ::/128, ::1/128, fe80::/10, fd00:ec2::254/128, ff00::/8";

/// Which addresses the health prober may connect to: the most specific network (longest
/// prefix) of `allowed` and `denied` that holds the address decides; on a tie `denied` wins,
/// and an address in neither is refused. So `denied` carves holes in `allowed`, and an allowed
/// network narrower than a denied one (127.31.0.0/16 inside 127.0.0.0/8) opens that part
/// again. IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) are judged as the IPv4 address
/// they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressPolicy {
    allowed: Vec<IpNet>,
    denied: Vec<IpNet>,
}

impl AddressPolicy {
    /// Parses two comma-separated lists of networks in CIDR notation (`10.0.0.0/8`,
    /// `fd00::/8`); a bare address is a network of that one address. The error names the
    /// value that is not one.
    pub fn parse(allowed: &str, denied: &str) -> Result<AddressPolicy, String> {
        Ok(AddressPolicy {
            allowed: parse_networks(allowed).map_err(|e| format!("allowed_networks: {e}"))?,
            denied: parse_networks(denied).map_err(|e| format!("denied_networks: {e}"))?,
        })
    }

    /// The built-in default: [`DEFAULT_ALLOWED_NETWORKS`] less [`DEFAULT_DENIED_NETWORKS`].
    pub fn default_policy() -> AddressPolicy {
        AddressPolicy::parse(DEFAULT_ALLOWED_NETWORKS, DEFAULT_DENIED_NETWORKS)
            .unwrap_or_else(|_| AddressPolicy::deny_all())
    }

    /// A policy that permits no address.
    pub fn deny_all() -> AddressPolicy {
        AddressPolicy {
            allowed: Vec::new(),
            denied: Vec::new(),
        }
    }

    /// Whether the prober may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        let longest = |nets: &[IpNet]| {
            nets.iter()
                .filter(|n| n.contains(&ip))
                .map(IpNet::prefix_len)
                .max()
        };
        match (longest(&self.allowed), longest(&self.denied)) {
            (Some(allowed), Some(denied)) => allowed > denied,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

impl Default for AddressPolicy {
    fn default() -> Self {
        AddressPolicy::default_policy()
    }
}

fn parse_networks(list: &str) -> Result<Vec<IpNet>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                .map(|n| n.trunc())
                .map_err(|_| format!("'{s}' is not a network in CIDR notation (e.g. 10.0.0.0/8)"))
        })
        .collect()
}

/// Why a probe failed, as the cluster's owner sees it (`health_status_reason`, the registry's
/// condition): a short reason that says what to look at and nothing of the network behind it.
/// Whether a connection was refused or timed out, and the TLS or socket error itself, are for
/// the operator's log only: a user who registers a cluster at any address would otherwise
/// learn which hosts and ports answer inside the operator's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeFailure {
    /// The address is outside `[health_probe] allowed_networks` (or inside a denied network):
    /// nothing was connected to.
    AddressNotAllowed,
    /// No connection, no answer in time, or a name that does not resolve.
    Unreachable,
    /// The TLS handshake failed: the certificate does not chain to the cluster's CA or does
    /// not name the address, or the server does not speak TLS.
    TlsFailure,
    /// The cluster's CA bundle cannot be read as PEM certificates.
    InvalidCaBundle,
    /// `/readyz` (or `/healthz`) answered this status instead of 200.
    HttpStatus(u16),
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeFailure::AddressNotAllowed => f.write_str("address not allowed"),
            ProbeFailure::Unreachable => f.write_str("unreachable"),
            ProbeFailure::TlsFailure => f.write_str("TLS failure"),
            ProbeFailure::InvalidCaBundle => f.write_str("CA bundle unreadable"),
            ProbeFailure::HttpStatus(code) => write!(f, "HTTP status {code}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn the_default_policy_refuses_loopback_link_local_and_metadata_addresses() {
        let p = AddressPolicy::default_policy();
        for refused in [
            "127.0.0.1",
            "127.31.0.1",
            "0.0.0.0",
            "169.254.169.254",
            "169.254.1.1",
            "100.100.100.200",
            "168.63.129.16",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(!p.permits(ip(refused)), "{refused} must be refused");
        }
        for permitted in [
            "10.0.0.5",
            "192.168.1.10",
            "172.16.0.1",
            "203.0.113.7",
            "100.100.100.201",
            "2001:db8::1",
            "fd00::1",
            "::ffff:10.0.0.5",
        ] {
            assert!(p.permits(ip(permitted)), "{permitted} must be permitted");
        }
    }

    #[test]
    fn the_most_specific_network_decides_and_denied_wins_a_tie() {
        let p = AddressPolicy::parse("10.0.0.0/8, 127.31.0.0/16", "10.1.0.0/16, 127.0.0.0/8")
            .expect("valid");
        assert!(p.permits(ip("10.2.0.1")));
        assert!(!p.permits(ip("10.1.0.1")), "a hole in an allowed network");
        assert!(
            p.permits(ip("127.31.0.1")),
            "opened inside a denied network"
        );
        assert!(!p.permits(ip("127.32.0.1")));
        assert!(!p.permits(ip("192.168.0.1")), "in no network: refused");
        let tie = AddressPolicy::parse("10.0.0.0/8", "10.0.0.0/8").expect("valid");
        assert!(!tie.permits(ip("10.0.0.1")));
        let none = AddressPolicy::parse("", "").expect("valid");
        assert!(
            !none.permits(ip("10.0.0.1")),
            "nothing allowed: nothing probed"
        );
    }

    #[test]
    fn a_bare_address_is_a_network_of_one_and_nonsense_is_named() {
        let p = AddressPolicy::parse("127.0.0.1, ::1", "").expect("valid");
        assert!(p.permits(ip("127.0.0.1")));
        assert!(p.permits(ip("::1")));
        assert!(!p.permits(ip("127.0.0.2")));
        let err = AddressPolicy::parse("10.0.0.0/8, ten", "").expect_err("invalid");
        assert!(err.starts_with("allowed_networks: 'ten'"), "{err}");
        let err = AddressPolicy::parse("", "10.0.0.0/33").expect_err("invalid");
        assert!(err.starts_with("denied_networks: '10.0.0.0/33'"), "{err}");
    }

    #[test]
    fn failures_read_as_short_reasons() {
        assert_eq!(ProbeFailure::HttpStatus(503).to_string(), "HTTP status 503");
        assert_eq!(
            ProbeFailure::AddressNotAllowed.to_string(),
            "address not allowed"
        );
        assert_eq!(ProbeFailure::Unreachable.to_string(), "unreachable");
        assert_eq!(ProbeFailure::TlsFailure.to_string(), "TLS failure");
    }

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
