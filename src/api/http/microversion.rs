//! `OpenStack-API-Version: container-infra X.Y` negotiation for every `/v1` request: the
//! versions and the header's parsing (the middleware that applies it is
//! [`super::microversion_middleware`]).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
}

impl Version {
    pub const fn new(major: u16, minor: u16) -> Self {
        Version { major, minor }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

pub const MIN_VERSION: Version = Version::new(1, 1);
pub const MAX_VERSION: Version = Version::new(1, 20);

// The versions at which behaviour changes, named after what they bring.

/// The `rollback` query parameter of `PATCH /v1/clusters/{c}` (an unknown argument before).
pub const CLUSTER_ROLLBACK: Version = Version::new(1, 3);
/// `POST /v1/clusters/{c}/actions/resize` and the `upgrade` route (406 before).
pub const CLUSTER_RESIZE: Version = Version::new(1, 7);
/// A working `POST /v1/clusters/{c}/actions/upgrade` (at 1.7 it always answers 400).
pub const CLUSTER_UPGRADE: Version = Version::new(1, 8);
/// The node group API `/v1/clusters/{c}/nodegroups` (406 before).
pub const NODEGROUPS: Version = Version::new(1, 9);
/// `node_count = 0` on cluster create, cluster PATCH and resize (400 before).
pub const ZERO_NODE_COUNT: Version = Version::new(1, 10);
/// A cluster create naming a missing template is a 404 (a 400 before).
pub const MISSING_TEMPLATE_IS_404: Version = Version::new(1, 10);
/// `PATCH /v1/credentials/{c}`, credential rotation (406 before).
pub const CREDENTIAL_ROTATION: Version = Version::new(1, 12);
/// Cluster bodies name the orchestration handle `cluster_id` instead of `stack_id`.
pub const CLUSTER_ID_FIELD: Version = Version::new(1, 13);
/// Cluster detail bodies carry the cluster registry's `registry_labels` and
/// `registry_annotations` (the Kubernetes object's `metadata.labels`/`annotations`).
pub const REGISTRY_METADATA: Version = Version::new(1, 15);
/// `POST /v1/clusters/{c}/actions/retry` (a `CREATE_FAILED` cluster created again in place;
/// 406 before).
pub const CLUSTER_RETRY: Version = Version::new(1, 16);
/// `POST /v1/clusters/{c}/nodegroups/{ng}/actions/retry` and
/// `POST /v1/federations/{f}/actions/retry` (a `CREATE_FAILED` node group or federation
/// created again in place; 406 before). Nothing else changes at 1.17.
pub const NODEGROUP_FEDERATION_RETRY: Version = Version::new(1, 17);
/// The administrator's forced delete `DELETE /v1/clusters/{c}?force=true` (`force` is an
/// unknown argument, 400, before).
pub const FORCED_DELETE: Version = Version::new(1, 18);
/// A cluster's machines, one per node: `GET /v1/clusters/{c}/machines` and
/// `GET /v1/clusters/{c}/machines/{m}` (406 before, as node groups are below 1.9).
pub const MACHINES: Version = Version::new(1, 19);
/// Machine writes: `POST /v1/clusters/{c}/nodegroups/{ng}/machines`,
/// `PATCH /v1/clusters/{c}/machines/{m}` and `POST …/machines/{m}/actions/replace|reboot`
/// (406 before; reading and deleting machines needs only 1.19).
pub const MACHINE_WRITES: Version = Version::new(1, 20);
/// A node group's flavor and image change by `PATCH /v1/clusters/{c}/nodegroups/{ng}`
/// (`/flavor_id`, `/image_id`, `/max_batch_size`): a rolling replacement of its machines (the
/// paths are internal, a 400, before).
pub const NODEGROUP_ROLL: Version = Version::new(1, 20);
/// Cluster groups and their bindings: `/v1/clustergroups` (406 before).
pub const CLUSTER_GROUPS: Version = Version::new(1, 20);
/// The service type written in response headers.
pub const SERVICE_TYPE: &str = "container-infrastructure-management";
/// The service types accepted in the request header.
pub const SERVICE_ALIASES: &[&str] = &[
    "container-infrastructure-management",
    "container-infrastructure",
    "container-infra",
];
pub const HEADER: &str = "openstack-api-version";

/// Why a header was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum VersionError {
    /// Not `<service> <X.Y>`: a framework-level 406 with an empty body.
    Malformed,
    /// Parsed, but outside `MIN_VERSION..=MAX_VERSION`.
    Unsupported,
}

/// Negotiates the version from the header value (absent means 1.1, `latest` the maximum).
pub fn negotiate(header: Option<&str>) -> Result<Version, VersionError> {
    let Some(value) = header else {
        return Ok(MIN_VERSION);
    };
    let tokens: Vec<&str> = value.split_whitespace().collect();
    let [service, version] = tokens.as_slice() else {
        return Err(VersionError::Malformed);
    };
    if !SERVICE_ALIASES
        .iter()
        .any(|alias| alias.eq_ignore_ascii_case(service))
    {
        return Err(VersionError::Malformed);
    }
    if version.eq_ignore_ascii_case("latest") {
        return Ok(MAX_VERSION);
    }
    let (major, minor) = version.split_once('.').ok_or(VersionError::Malformed)?;
    let all_digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if !all_digits(major) || !all_digits(minor) {
        return Err(VersionError::Malformed);
    }
    let parsed = match (major.parse::<u16>(), minor.parse::<u16>()) {
        (Ok(a), Ok(b)) => Version::new(a, b),
        // Digits too large for a version are simply out of range.
        _ => return Err(VersionError::Unsupported),
    };
    if parsed < MIN_VERSION || parsed > MAX_VERSION {
        return Err(VersionError::Unsupported);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_header_means_one_point_one() {
        assert_eq!(negotiate(None), Ok(Version::new(1, 1)));
    }

    #[test]
    fn latest_means_the_maximum_for_every_alias() {
        for alias in SERVICE_ALIASES {
            assert_eq!(negotiate(Some(&format!("{alias} latest"))), Ok(MAX_VERSION));
            assert_eq!(negotiate(Some(&format!("{alias} LATEST"))), Ok(MAX_VERSION));
        }
        assert_eq!(
            negotiate(Some("container-infra 1.10")),
            Ok(Version::new(1, 10))
        );
    }

    #[test]
    fn malformed_headers_are_refused() {
        for bad in [
            "container-infra",
            "compute 1.2",
            "container-infra 1",
            "container-infra 1.x",
            "container-infra 1.2 extra",
            "container-infra -1.2",
        ] {
            assert_eq!(negotiate(Some(bad)), Err(VersionError::Malformed), "{bad}");
        }
    }

    #[test]
    fn versions_outside_the_range_are_unsupported() {
        for bad in ["1.0", "0.9", "2.0", "1.999", "1.21", "99999999.1"] {
            assert_eq!(
                negotiate(Some(&format!("container-infra {bad}"))),
                Err(VersionError::Unsupported),
                "{bad}"
            );
        }
    }
}
