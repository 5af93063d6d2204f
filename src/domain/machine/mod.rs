//! Machines: one object per node, owned by its node group and cluster (the Machine of the
//! Cluster Management API). A machine has a spec (what the node should run: versions, container
//! runtime, OS image, flavor, the driver's opaque `providerConfig`, node taints and labels) and a
//! status (what the driver last observed and how it applied the last change).

pub mod count;
pub mod create;
pub mod requests;
pub mod roll;
pub mod version;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::cluster::Taint;
use super::kube_names::dns1123_subdomain_errors;
use super::labels::Labels;
use super::{ClusterId, MachineId, NodeGroupId};
pub use version::{check_kubelet_skew, check_nodegroup_version, KubeVersion, SkewError};

/// A machine's name: a Kubernetes object name (a DNS-1123 subdomain), unique in its cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct MachineName(String);

impl MachineName {
    /// The name, or apimachinery's messages for it joined into one sentence.
    pub fn parse(text: &str) -> Result<MachineName, String> {
        let errs = dns1123_subdomain_errors(text);
        if errs.is_empty() {
            Ok(MachineName(text.to_string()))
        } else {
            Err(format!(
                "Invalid machine name '{text}': {}",
                errs.join("; ")
            ))
        }
    }

    /// The name a node group's `n`-th machine gets when machines are made from a node count:
    /// `<node group name>-<n>` when the group's name is already lower case letters, digits and
    /// `-` starting with a letter or digit (and short enough), else `nodegroup-<uuid>-<n>`. Two
    /// groups of one cluster never get the same name: the part after the last `-` is `n`, so the
    /// rest is the group's name or uuid, and both are unique in a cluster. The migration that
    /// gives existing node groups their machines writes the same names in SQL.
    pub fn for_nodegroup(nodegroup: &str, uuid: NodeGroupId, n: u32) -> MachineName {
        let b = nodegroup.as_bytes();
        let usable = !b.is_empty()
            && nodegroup.len() <= 240
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
        if usable {
            MachineName(format!("{nodegroup}-{n}"))
        } else {
            MachineName(format!("nodegroup-{uuid}-{n}"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MachineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MachineName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        MachineName::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Generates `as_str`/`parse` for an enum stored and shown as fixed strings.
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value, or a sentence listing the accepted ones.
            pub fn parse(text: &str) -> Result<$name, String> {
                $name::ALL.iter().copied().find(|v| v.as_str() == text).ok_or_else(|| {
                    let all: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                    format!("Invalid {} '{text}': must be one of {}.", $what, all.join(", "))
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// A machine's role, its node group's.
    MachineRole, "machine role" {
        Master => "master",
        Worker => "worker",
    }
}

string_enum! {
    /// Where a machine is in its life.
    MachinePhase, "machine phase" {
        Pending => "Pending",
        Provisioning => "Provisioning",
        Running => "Running",
        Deleting => "Deleting",
        Failed => "Failed",
    }
}

string_enum! {
    /// How the driver applied a machine's last change: on the node, or by a new node.
    ChangeMode, "change mode" {
        InPlace => "InPlace",
        Replace => "Replace",
    }
}

impl MachinePhase {
    /// A machine counted in its node group's `node_count`: every one not being deleted.
    pub fn counts_toward_node_count(self) -> bool {
        self != MachinePhase::Deleting
    }
}

/// The versions a machine should run (spec) or runs (status). `control_plane` is a master's
/// only. Either is unknown for a machine made from a node group that never recorded a version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineVersions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<KubeVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<KubeVersion>,
}

/// A container runtime and its version, e.g. `containerd` `1.7.22`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerRuntime {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One address of a node, as Kubernetes' `NodeAddress`: `InternalIP`, `ExternalIP`, `Hostname`...
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineAddress {
    #[serde(rename = "type")]
    pub kind: String,
    pub address: String,
}

/// What the machine should be.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    #[serde(default)]
    pub versions: MachineVersions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_runtime: Option<ContainerRuntime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    /// Owned by the driver; Fleetyard stores it and never reads it.
    #[serde(default)]
    pub provider_config: serde_json::Value,
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub labels: Labels,
}

impl MachineSpec {
    /// The spec's rules for a machine of `role`: a control plane version only on a master, and
    /// a master's kubelet within the skew policy of its own control plane.
    pub fn check(&self, role: MachineRole) -> Result<(), String> {
        match (role, &self.versions.control_plane) {
            (MachineRole::Worker, Some(_)) => Err(
                "A worker machine has no control plane version; versions.controlPlane is for \
                 master machines only."
                    .to_string(),
            ),
            (MachineRole::Master, Some(cp)) => match &self.versions.kubelet {
                Some(kubelet) => check_kubelet_skew(kubelet, cp).map_err(|e| e.to_string()),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// What the driver last observed of the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    pub phase: MachinePhase,
    #[serde(
        default,
        rename = "providerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    /// The name of the Kubernetes node this machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<String>,
    #[serde(default)]
    pub addresses: Vec<MachineAddress>,
    #[serde(default)]
    pub versions: MachineVersions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<ChangeMode>,
}

impl MachineStatus {
    /// A machine not yet seen by its driver.
    pub fn pending() -> Self {
        MachineStatus {
            phase: MachinePhase::Pending,
            provider_id: None,
            node_ref: None,
            addresses: Vec::new(),
            versions: MachineVersions::default(),
            error_reason: None,
            error_message: None,
            last_updated: None,
            last_change: None,
        }
    }
}

/// One stored machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub id: i64,
    pub uuid: MachineId,
    pub name: MachineName,
    pub role: MachineRole,
    pub project_id: String,
    pub cluster_id: ClusterId,
    pub nodegroup_id: NodeGroupId,
    pub spec: MachineSpec,
    pub status: MachineStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(text: &str) -> KubeVersion {
        KubeVersion::parse(text).expect("valid version")
    }

    #[test]
    fn machine_names_follow_the_kubernetes_object_name_rule() {
        assert_eq!(
            MachineName::parse("workers-1").expect("valid").as_str(),
            "workers-1"
        );
        assert!(MachineName::parse("node.example-0").is_ok());
        let err = MachineName::parse("Workers_1").expect_err("upper case and underscore");
        assert!(
            err.starts_with("Invalid machine name 'Workers_1': a lowercase RFC 1123"),
            "{err}"
        );
        let long = "a".repeat(254);
        let err = MachineName::parse(&long).expect_err("too long");
        assert!(err.contains("must be no more than 253 characters"), "{err}");
        assert!(MachineName::parse("").is_err());
        assert!(serde_json::from_value::<MachineName>(json!("-x")).is_err());
    }

    #[test]
    fn nodegroup_machine_names_are_valid_and_fall_back_to_the_uuid() {
        let uuid = NodeGroupId::new();
        let name = MachineName::for_nodegroup("default-worker", uuid, 3);
        assert_eq!(name.as_str(), "default-worker-3");
        for odd in ["Default_Worker", "-x", "a.b", "", &"a".repeat(241)] {
            let name = MachineName::for_nodegroup(odd, uuid, 1);
            assert_eq!(name.as_str(), format!("nodegroup-{uuid}-1"));
            assert!(MachineName::parse(name.as_str()).is_ok(), "{name}");
        }
        let longest = MachineName::for_nodegroup(&"a".repeat(240), uuid, 4_000_000);
        assert!(MachineName::parse(longest.as_str()).is_ok());
    }

    #[test]
    fn enums_parse_their_own_strings_and_refuse_others() {
        for p in MachinePhase::ALL {
            assert_eq!(MachinePhase::parse(p.as_str()), Ok(*p));
        }
        assert_eq!(MachineRole::parse("master"), Ok(MachineRole::Master));
        assert_eq!(
            MachineRole::Master.as_str(),
            crate::domain::cluster::ROLE_MASTER
        );
        assert_eq!(
            MachineRole::Worker.as_str(),
            crate::domain::cluster::ROLE_WORKER
        );
        assert_eq!(
            MachinePhase::parse("running"),
            Err(
                "Invalid machine phase 'running': must be one of Pending, Provisioning, \
                 Running, Deleting, Failed."
                    .to_string()
            )
        );
        assert_eq!(ChangeMode::parse("InPlace"), Ok(ChangeMode::InPlace));
        assert_eq!(
            serde_json::to_value(ChangeMode::Replace).expect("json"),
            json!("Replace")
        );
        assert!(!MachinePhase::Deleting.counts_toward_node_count());
        assert!(MachinePhase::Failed.counts_toward_node_count());
    }

    #[test]
    fn a_worker_spec_may_not_name_a_control_plane_version() {
        let spec = MachineSpec {
            versions: MachineVersions {
                kubelet: Some(v("v1.31.4")),
                control_plane: Some(v("v1.31.4")),
            },
            ..MachineSpec::default()
        };
        let err = spec.check(MachineRole::Worker).expect_err("worker");
        assert!(
            err.contains("versions.controlPlane is for master machines only"),
            "{err}"
        );
        assert_eq!(spec.check(MachineRole::Master), Ok(()));
    }

    #[test]
    fn a_master_spec_keeps_its_kubelet_within_the_skew_policy() {
        let spec = MachineSpec {
            versions: MachineVersions {
                kubelet: Some(v("v1.32.0")),
                control_plane: Some(v("v1.31.4")),
            },
            ..MachineSpec::default()
        };
        let err = spec.check(MachineRole::Master).expect_err("newer kubelet");
        assert!(err.starts_with("Kubelet version v1.32.0 is newer"), "{err}");
    }

    #[test]
    fn spec_and_status_use_the_cluster_api_field_names() {
        let spec: MachineSpec = serde_json::from_value(json!({
            "versions": {"kubelet": "1.31.4", "controlPlane": "v1.31.4"},
            "containerRuntime": {"name": "containerd", "version": "1.7.22"},
            "osImage": "ubuntu-24.04",
            "providerConfig": {"anything": [1, 2]},
            "taints": [{"key": "k", "effect": "NoSchedule"}],
            "labels": {"tier": "gpu"}
        }))
        .expect("spec");
        assert_eq!(spec.versions.kubelet, Some(v("v1.31.4")));
        assert_eq!(spec.provider_config, json!({"anything": [1, 2]}));
        let back = serde_json::to_value(&spec).expect("json");
        assert_eq!(back["versions"]["kubelet"], json!("v1.31.4"));
        assert_eq!(back["containerRuntime"]["name"], json!("containerd"));
        let mut status = MachineStatus::pending();
        status.provider_id = Some("openstack:///abc".into());
        status.last_change = Some(ChangeMode::InPlace);
        let out = serde_json::to_value(&status).expect("json");
        assert_eq!(out["providerID"], json!("openstack:///abc"));
        assert_eq!(out["phase"], json!("Pending"));
        assert_eq!(out["lastChange"], json!("InPlace"));
        let bad = serde_json::from_value::<MachineSpec>(json!({"versions": {"kubelet": "1.31"}}));
        assert!(bad.is_err());
    }
}
