//! Kubernetes versions (`v1.31.4` or `1.31.4`) parsed into a typed value, and the version-skew
//! rules of the Kubernetes skew policy that Fleetyard checks before a machine or a node group
//! changes version: a kubelet is never newer than its control plane and at most three minor
//! versions older than it, and the control plane is upgraded before the workers that need it.
//! The rules compare minor versions, as the policy does: a kubelet on a newer patch release of
//! the control plane's minor version is within the policy.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
}
