//! Kubernetes versions (`v1.31.4` or `1.31.4`) parsed into a typed value, and the version-skew
//! rules of the Kubernetes skew policy that Fleetyard checks before a machine or a node group
//! changes version: a kubelet is never newer than its control plane and at most three minor
//! versions older than it, and the control plane is upgraded before the workers that need it.
//! The rules compare minor versions, as the policy does: a kubelet on a newer patch release of
//! the control plane's minor version is within the policy.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::template::ClusterTemplate;

/// How many minor versions a kubelet may be older than its control plane.
pub const MAX_KUBELET_MINOR_SKEW: u32 = 3;

/// A Kubernetes release version: `major.minor.patch`, with an optional pre-release
/// (`-rc.1`) kept for display. Always shown with the leading `v`, as Kubernetes writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KubeVersion {
    major: u32,
    minor: u32,
    patch: u32,
    pre: Option<String>,
}

/// Why a version string is not a Kubernetes version; the sentence names the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionError(pub String);

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VersionError {}

fn number(part: &str) -> Option<u32> {
    let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let no_leading_zero = part == "0" || !part.starts_with('0');
    if digits && no_leading_zero {
        part.parse().ok()
    } else {
        None
    }
}

fn is_pre_release(pre: &str) -> bool {
    !pre.is_empty()
        && pre
            .split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

impl KubeVersion {
    pub fn new(major: u32, minor: u32, patch: u32) -> Self {
        KubeVersion {
            major,
            minor,
            patch,
            pre: None,
        }
    }

    /// `v1.31.4`, `1.31.4` or `v1.32.0-rc.1`; anything else is refused with a sentence naming it.
    pub fn parse(text: &str) -> Result<KubeVersion, VersionError> {
        let bad = || {
            VersionError(format!(
                "Invalid Kubernetes version '{text}': expected the form v<major>.<minor>.<patch>, \
                 e.g. v1.31.4."
            ))
        };
        let body = text.strip_prefix('v').unwrap_or(text);
        let (core, pre) = match body.split_once('-') {
            Some((core, pre)) if is_pre_release(pre) => (core, Some(pre.to_string())),
            Some(_) => return Err(bad()),
            None => (body, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts.as_slice() else {
            return Err(bad());
        };
        Ok(KubeVersion {
            major: number(major).ok_or_else(bad)?,
            minor: number(minor).ok_or_else(bad)?,
            patch: number(patch).ok_or_else(bad)?,
            pre,
        })
    }

    pub fn major(&self) -> u32 {
        self.major
    }
    pub fn minor(&self) -> u32 {
        self.minor
    }
    pub fn patch(&self) -> u32 {
        self.patch
    }

    /// `v1.31`, the release line the skew policy speaks of.
    pub fn minor_line(&self) -> String {
        format!("v{}.{}", self.major, self.minor)
    }

    /// The order of release lines (major, minor), patch and pre-release ignored.
    fn cmp_minor(&self, other: &KubeVersion) -> Ordering {
        (self.major, self.minor).cmp(&(other.major, other.minor))
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for KubeVersion {
    type Err = VersionError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        KubeVersion::parse(text)
    }
}

impl Serialize for KubeVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KubeVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        KubeVersion::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A version change the skew policy refuses; the sentence is the 400's detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkewError {
    /// The kubelet would be on a newer release line than the control plane.
    KubeletNewer {
        kubelet: KubeVersion,
        control_plane: KubeVersion,
    },
    /// The kubelet would be more than [`MAX_KUBELET_MINOR_SKEW`] minors older.
    KubeletTooOld {
        kubelet: KubeVersion,
        control_plane: KubeVersion,
    },
    /// A different major version: no skew is supported across majors.
    MajorMismatch {
        kubelet: KubeVersion,
        control_plane: KubeVersion,
    },
    /// A control plane upgrade would leave a node group's kubelets outside the policy.
    LeftBehind {
        nodegroup: String,
        kubelet: KubeVersion,
        control_plane: KubeVersion,
        cause: Box<SkewError>,
    },
    /// A node group asked for a version its cluster's control plane does not run yet.
    ControlPlaneFirst {
        nodegroup: String,
        target: KubeVersion,
        control_plane: KubeVersion,
    },
}

impl fmt::Display for SkewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkewError::KubeletNewer {
                kubelet,
                control_plane,
            } => write!(
                f,
                "Kubelet version {kubelet} is newer than the control plane version \
                 {control_plane}; a kubelet may not be newer than its control plane."
            ),
            SkewError::KubeletTooOld {
                kubelet,
                control_plane,
            } => write!(
                f,
                "Kubelet version {kubelet} is more than {MAX_KUBELET_MINOR_SKEW} minor versions \
                 older than the control plane version {control_plane}; the oldest supported \
                 kubelet is {}.",
                oldest_line(control_plane)
            ),
            SkewError::MajorMismatch {
                kubelet,
                control_plane,
            } => write!(
                f,
                "Kubelet version {kubelet} and control plane version {control_plane} have \
                 different major versions; a kubelet must run the control plane's major version."
            ),
            SkewError::LeftBehind {
                nodegroup,
                kubelet,
                control_plane,
                cause,
            } => write!(
                f,
                "The control plane cannot be upgraded to {control_plane}: node group \
                 {nodegroup} would stay on {kubelet}. {cause}"
            ),
            SkewError::ControlPlaneFirst {
                nodegroup,
                target,
                control_plane,
            } => write!(
                f,
                "Node group {nodegroup} cannot be upgraded to {target}: the control plane runs \
                 {control_plane}. Upgrade the control plane to {} first.",
                target.minor_line()
            ),
        }
    }
}

impl std::error::Error for SkewError {}

fn oldest_line(control_plane: &KubeVersion) -> String {
    let minor = control_plane.minor.saturating_sub(MAX_KUBELET_MINOR_SKEW);
    format!("v{}.{minor}", control_plane.major)
}

/// The kubelet rule: the same major version, a release line not newer than the control plane's
/// and at most [`MAX_KUBELET_MINOR_SKEW`] minors older.
pub fn check_kubelet_skew(
    kubelet: &KubeVersion,
    control_plane: &KubeVersion,
) -> Result<(), SkewError> {
    let pair = || (kubelet.clone(), control_plane.clone());
    if kubelet.major != control_plane.major {
        let (kubelet, control_plane) = pair();
        return Err(SkewError::MajorMismatch {
            kubelet,
            control_plane,
        });
    }
    if kubelet.cmp_minor(control_plane) == Ordering::Greater {
        let (kubelet, control_plane) = pair();
        return Err(SkewError::KubeletNewer {
            kubelet,
            control_plane,
        });
    }
    if control_plane.minor - kubelet.minor > MAX_KUBELET_MINOR_SKEW {
        let (kubelet, control_plane) = pair();
        return Err(SkewError::KubeletTooOld {
            kubelet,
            control_plane,
        });
    }
    Ok(())
}

/// A worker node group's version change to `target`: refused when the control plane is on an
/// older release line than the target (the control plane is upgraded first), then held to the
/// kubelet rule, since every machine of the group would run `target`.
pub fn check_nodegroup_version(
    nodegroup: &str,
    target: &KubeVersion,
    control_plane: &KubeVersion,
) -> Result<(), SkewError> {
    if target.major == control_plane.major && target.cmp_minor(control_plane) == Ordering::Greater {
        return Err(SkewError::ControlPlaneFirst {
            nodegroup: nodegroup.to_string(),
            target: target.clone(),
            control_plane: control_plane.clone(),
        });
    }
    check_kubelet_skew(target, control_plane)
}

/// The Kubernetes version a template's `kube_tag` label names, when it names a valid one.
fn kube_tag(labels: &crate::domain::labels::Labels) -> Option<KubeVersion> {
    labels
        .get("kube_tag")
        .and_then(|t| KubeVersion::parse(t).ok())
}

/// [`check_upgrade`] for an upgrade of cluster `c` from its template `current` to `target`,
/// moving the node groups `moves` picks. The control plane runs the version the driver
/// reported (`coe_version`), else the one the cluster's or its template's `kube_tag` names; a
/// node group the one its driver reported, else the control plane's. Without a version on
/// either side (no `kube_tag`) there is nothing to hold the upgrade to.
pub fn check_cluster_upgrade(
    c: &Cluster,
    nodegroups: &[NodeGroup],
    moves: impl Fn(&NodeGroup) -> bool,
    current: &ClusterTemplate,
    target: &ClusterTemplate,
) -> Result<(), SkewError> {
    let Some(target) = kube_tag(&target.spec.labels) else {
        return Ok(());
    };
    let control_plane = c
        .coe_version
        .as_deref()
        .and_then(|v| KubeVersion::parse(v).ok())
        .or_else(|| kube_tag(&c.labels))
        .or_else(|| kube_tag(&current.spec.labels));
    let Some(control_plane) = control_plane else {
        return Ok(());
    };
    let groups: Vec<UpgradeGroup<'_>> = nodegroups
        .iter()
        .map(|ng| UpgradeGroup {
            name: &ng.name,
            master: ng.is_master(),
            version: ng
                .version
                .as_deref()
                .and_then(|v| KubeVersion::parse(v).ok())
                .unwrap_or_else(|| control_plane.clone()),
            moves: moves(ng),
        })
        .collect();
    check_upgrade(&target, &control_plane, &groups)
}

/// One node group of a cluster upgrade: the version its kubelets run now and whether the
/// upgrade moves it to the target.
#[derive(Debug, Clone)]
pub struct UpgradeGroup<'a> {
    pub name: &'a str,
    pub master: bool,
    pub version: KubeVersion,
    pub moves: bool,
}

/// A cluster upgrade to `target` (every group it moves runs `target` afterwards), held to the
/// skew policy before anything changes: a worker group moved without the control plane may
/// not pass it ([`check_nodegroup_version`]), and a control plane that moves must leave every
/// worker group it does not move within the kubelet rule of its new version.
pub fn check_upgrade(
    target: &KubeVersion,
    control_plane: &KubeVersion,
    groups: &[UpgradeGroup<'_>],
) -> Result<(), SkewError> {
    let masters_move = groups.iter().any(|g| g.master && g.moves);
    let next_control_plane = if masters_move { target } else { control_plane };
    for g in groups.iter().filter(|g| !g.master) {
        if g.moves && !masters_move {
            check_nodegroup_version(g.name, target, control_plane)?;
        } else if !g.moves {
            check_kubelet_skew(&g.version, next_control_plane).map_err(|cause| {
                SkewError::LeftBehind {
                    nodegroup: g.name.to_string(),
                    kubelet: g.version.clone(),
                    control_plane: next_control_plane.clone(),
                    cause: Box::new(cause),
                }
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> KubeVersion {
        KubeVersion::parse(text).expect("valid version")
    }

    #[test]
    fn versions_parse_with_or_without_the_leading_v() {
        assert_eq!(v("v1.31.4"), KubeVersion::new(1, 31, 4));
        assert_eq!(v("1.31.4"), KubeVersion::new(1, 31, 4));
        assert_eq!(v("1.31.4").to_string(), "v1.31.4");
        assert_eq!(v("v1.32.0-rc.1").to_string(), "v1.32.0-rc.1");
        assert_eq!(v("v1.0.0").minor_line(), "v1.0");
    }

    #[test]
    fn malformed_versions_are_refused_naming_the_input() {
        for bad in [
            "",
            "v",
            "1.31",
            "v1.31",
            "1.31.4.5",
            "V1.31.4",
            "vv1.31.4",
            "1.x.4",
            "1.31.-4",
            "01.31.4",
            "1.031.4",
            "1.31.4-",
            "1.31.4-rc..1",
            " 1.31.4",
            "1.31.4 ",
            "1..4",
            "1.31.4+build",
            "99999999999.1.1",
        ] {
            let err = KubeVersion::parse(bad).expect_err(bad);
            assert_eq!(
                err.0,
                format!(
                    "Invalid Kubernetes version '{bad}': expected the form \
                     v<major>.<minor>.<patch>, e.g. v1.31.4."
                )
            );
        }
    }

    #[test]
    fn versions_round_trip_through_json_as_strings() {
        let json = serde_json::to_string(&v("1.31.4")).expect("serialize");
        assert_eq!(json, "\"v1.31.4\"");
        let back: KubeVersion = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, v("v1.31.4"));
        let bad = serde_json::from_str::<KubeVersion>("\"1.31\"").expect_err("refused");
        assert!(
            bad.to_string()
                .contains("Invalid Kubernetes version '1.31'"),
            "{bad}"
        );
    }

    #[test]
    fn a_kubelet_equal_to_the_control_plane_is_allowed() {
        assert_eq!(check_kubelet_skew(&v("v1.31.4"), &v("v1.31.4")), Ok(()));
    }

    #[test]
    fn a_kubelet_on_a_newer_patch_of_the_same_minor_is_allowed() {
        assert_eq!(check_kubelet_skew(&v("v1.31.5"), &v("v1.31.4")), Ok(()));
        assert_eq!(check_kubelet_skew(&v("v1.31.0"), &v("v1.31.4")), Ok(()));
    }

    #[test]
    fn a_kubelet_on_a_newer_minor_is_refused() {
        let err = check_kubelet_skew(&v("v1.32.0"), &v("v1.31.4")).expect_err("newer");
        assert_eq!(
            err.to_string(),
            "Kubelet version v1.32.0 is newer than the control plane version v1.31.4; a kubelet \
             may not be newer than its control plane."
        );
    }

    #[test]
    fn a_kubelet_three_minors_older_is_allowed_four_is_refused() {
        assert_eq!(check_kubelet_skew(&v("v1.28.15"), &v("v1.31.4")), Ok(()));
        let err = check_kubelet_skew(&v("v1.27.16"), &v("v1.31.4")).expect_err("too old");
        assert_eq!(
            err.to_string(),
            "Kubelet version v1.27.16 is more than 3 minor versions older than the control plane \
             version v1.31.4; the oldest supported kubelet is v1.28."
        );
    }

    #[test]
    fn a_kubelet_of_another_major_is_refused() {
        let err = check_kubelet_skew(&v("v2.0.0"), &v("v1.31.4")).expect_err("major");
        assert!(matches!(err, SkewError::MajorMismatch { .. }), "{err:?}");
        let err = check_kubelet_skew(&v("v1.31.4"), &v("v2.0.0")).expect_err("major");
        assert!(
            err.to_string().contains("different major versions"),
            "{err}"
        );
    }

    #[test]
    fn a_nodegroup_upgrade_waits_for_the_control_plane() {
        let err = check_nodegroup_version("workers", &v("v1.32.1"), &v("v1.31.4"))
            .expect_err("control plane first");
        assert_eq!(
            err.to_string(),
            "Node group workers cannot be upgraded to v1.32.1: the control plane runs v1.31.4. \
             Upgrade the control plane to v1.32 first."
        );
    }

    #[test]
    fn a_nodegroup_may_move_to_the_control_plane_version_or_a_supported_older_one() {
        assert_eq!(
            check_nodegroup_version("w", &v("v1.31.4"), &v("v1.31.4")),
            Ok(())
        );
        assert_eq!(
            check_nodegroup_version("w", &v("v1.31.6"), &v("v1.31.4")),
            Ok(())
        );
        assert_eq!(
            check_nodegroup_version("w", &v("v1.28.0"), &v("v1.31.4")),
            Ok(())
        );
        let err = check_nodegroup_version("w", &v("v1.27.0"), &v("v1.31.4")).expect_err("old");
        assert!(matches!(err, SkewError::KubeletTooOld { .. }), "{err:?}");
    }

    #[test]
    fn early_release_lines_are_checked_like_any_other() {
        assert_eq!(check_kubelet_skew(&v("v1.0.0"), &v("v1.2.0")), Ok(()));
        let err = check_kubelet_skew(&v("v1.0.9"), &v("v1.4.0")).expect_err("too old");
        assert!(
            err.to_string()
                .ends_with("the oldest supported kubelet is v1.1."),
            "{err}"
        );
    }

    fn group<'a>(name: &'a str, master: bool, version: &str, moves: bool) -> UpgradeGroup<'a> {
        UpgradeGroup {
            name,
            master,
            version: v(version),
            moves,
        }
    }

    #[test]
    fn an_upgrade_moves_the_control_plane_first_and_leaves_no_group_behind() {
        let cp = v("v1.30.2");
        // Everything moves: nothing is left behind.
        let all = [
            group("default-master", true, "v1.30.2", true),
            group("default-worker", false, "v1.30.2", true),
        ];
        assert_eq!(check_upgrade(&v("v1.31.0"), &cp, &all), Ok(()));
        // The control plane alone, three minors ahead of a worker group: within the policy.
        let masters = [
            group("default-master", true, "v1.30.2", true),
            group("default-worker", false, "v1.30.2", false),
        ];
        assert_eq!(check_upgrade(&v("v1.33.1"), &cp, &masters), Ok(()));
        // Four minors ahead: refused, naming the group left behind.
        let err = check_upgrade(&v("v1.34.0"), &cp, &masters).expect_err("left behind");
        assert_eq!(
            err.to_string(),
            "The control plane cannot be upgraded to v1.34.0: node group default-worker would \
             stay on v1.30.2. Kubelet version v1.30.2 is more than 3 minor versions older than \
             the control plane version v1.34.0; the oldest supported kubelet is v1.31."
        );
        // A control plane moved below a worker group's version leaves a newer kubelet.
        let err = check_upgrade(&v("v1.29.0"), &cp, &masters).expect_err("newer kubelet");
        assert!(matches!(err, SkewError::LeftBehind { .. }), "{err}");
        // A worker group alone may not pass the control plane.
        let workers = [
            group("default-master", true, "v1.30.2", false),
            group("default-worker", false, "v1.30.2", true),
        ];
        assert_eq!(check_upgrade(&v("v1.30.5"), &cp, &workers), Ok(()));
        let err = check_upgrade(&v("v1.31.0"), &cp, &workers).expect_err("control plane first");
        assert_eq!(
            err.to_string(),
            "Node group default-worker cannot be upgraded to v1.31.0: the control plane runs \
             v1.30.2. Upgrade the control plane to v1.31 first."
        );
    }
}
