//! A machine created by a user in a node group (the group grows by one): what the request may
//! set over the group's own machine spec (the kubelet version, the container runtime, the OS
//! image), the control plane version its kubelet is checked against, and the new row.

use chrono::{DateTime, Utc};

use super::count::MachineTemplate;
use super::{
    check_kubelet_skew, ContainerRuntime, KubeVersion, Machine, MachineName, MachinePhase,
    MachineRole, MachineSpec, MachineStatus,
};
use crate::domain::{ClusterId, MachineId, NodeGroupId};

/// What a create asks for, parsed; everything left out is the node group's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineRequest {
    pub name: Option<MachineName>,
    pub kubelet: Option<KubeVersion>,
    pub container_runtime: Option<ContainerRuntime>,
    pub os_image: Option<String>,
}

/// A machine to insert: `Pending` until the driver has made its node.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMachine {
    pub uuid: MachineId,
    pub name: MachineName,
    pub role: MachineRole,
    pub project_id: String,
    pub cluster_id: ClusterId,
    pub nodegroup_id: NodeGroupId,
    pub spec: MachineSpec,
    pub phase: MachinePhase,
    /// `metadata.managedFields` of its Kubernetes object (none unless made there).
    pub managed_fields: crate::domain::managed_fields::ManagedFields,
    /// The annotations its Kubernetes object keeps (the request annotations it was made with).
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl NewMachine {
    /// The machine of node group `tmpl` that `request` asks for, named `name`: the group's
    /// spec with the request's versions, runtime and image. A kubelet version is checked by
    /// the skew policy against `control_plane` (the sentence is the refusal); a master's
    /// control plane version stays its group's.
    pub fn new(
        tmpl: &MachineTemplate,
        name: MachineName,
        request: &MachineRequest,
        control_plane: Option<&KubeVersion>,
    ) -> Result<NewMachine, String> {
        let mut spec = tmpl.spec.clone();
        if let Some(kubelet) = &request.kubelet {
            let cp = control_plane.ok_or_else(|| {
                format!(
                    "The control plane version of the cluster is not known, so kubelet version \
                     {kubelet} cannot be checked; create the machine without a kubelet version."
                )
            })?;
            check_kubelet_skew(kubelet, cp).map_err(|e| e.to_string())?;
            spec.versions.kubelet = Some(kubelet.clone());
        }
        if let Some(runtime) = &request.container_runtime {
            spec.container_runtime = Some(runtime.clone());
        }
        if let Some(image) = &request.os_image {
            spec.os_image = Some(image.clone());
        }
        spec.check(tmpl.role)?;
        Ok(NewMachine {
            uuid: MachineId::new(),
            name,
            role: tmpl.role,
            project_id: tmpl.project_id.clone(),
            cluster_id: tmpl.cluster,
            nodegroup_id: tmpl.nodegroup,
            spec,
            phase: MachinePhase::Pending,
            managed_fields: Default::default(),
            annotations: Default::default(),
        })
    }

    /// The machine as it will be stored (for its notification before the row exists).
    pub fn provisional(&self, now: DateTime<Utc>) -> Machine {
        let mut status = MachineStatus::pending();
        status.phase = self.phase;
        Machine {
            id: 0,
            uuid: self.uuid,
            name: self.name.clone(),
            role: self.role,
            project_id: self.project_id.clone(),
            cluster_id: self.cluster_id,
            nodegroup_id: self.nodegroup_id,
            spec: self.spec.clone(),
            status,
            created_at: now,
            updated_at: None,
        }
    }
}

/// The cluster's control plane version: the one its driver reported (`coe_version`), else its
/// master group's, else the `kube_tag` its labels or template name; `None` when none of them
/// is a Kubernetes version.
pub fn control_plane_version(candidates: &[Option<&str>]) -> Option<KubeVersion> {
    candidates
        .iter()
        .flatten()
        .find_map(|v| KubeVersion::parse(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::labels::Labels;
    use crate::domain::machine::count::spec_for;

    fn v(text: &str) -> KubeVersion {
        KubeVersion::parse(text).expect("valid version")
    }

    fn template(role: MachineRole) -> MachineTemplate {
        MachineTemplate {
            cluster: ClusterId::new(),
            nodegroup: NodeGroupId::new(),
            nodegroup_name: "workers".into(),
            project_id: "p".into(),
            role,
            spec: spec_for(
                role,
                (Some("m1.small"), Some("fedora")),
                Some("v1.31.4"),
                &[],
                &Labels::default(),
            ),
            phase: MachinePhase::Running,
        }
    }

    fn name(text: &str) -> MachineName {
        MachineName::parse(text).expect("valid name")
    }

    #[test]
    fn a_new_machine_takes_the_groups_spec_and_the_requests_versions() {
        let t = template(MachineRole::Worker);
        let request = MachineRequest {
            name: None,
            kubelet: Some(v("v1.30.2")),
            container_runtime: Some(ContainerRuntime {
                name: "containerd".into(),
                version: Some("1.7.22".into()),
            }),
            os_image: Some("ubuntu-24.04".into()),
        };
        let m = NewMachine::new(&t, name("w-9"), &request, Some(&v("v1.31.4"))).expect("valid");
        assert_eq!(m.phase, MachinePhase::Pending);
        assert_eq!(m.spec.versions.kubelet, Some(v("v1.30.2")));
        assert_eq!(m.spec.flavor.as_deref(), Some("m1.small"));
        assert_eq!(m.spec.os_image.as_deref(), Some("ubuntu-24.04"));
        assert_eq!(m.nodegroup_id, t.nodegroup);
        let plain = NewMachine::new(&t, name("w-10"), &MachineRequest::default(), None)
            .expect("no version to check");
        assert_eq!(plain.spec, t.spec);
        assert_eq!(
            plain.provisional(Utc::now()).status.phase,
            MachinePhase::Pending
        );
    }

    #[test]
    fn a_kubelet_outside_the_skew_policy_or_unchecked_is_refused() {
        let t = template(MachineRole::Worker);
        let newer = MachineRequest {
            kubelet: Some(v("v1.32.0")),
            ..MachineRequest::default()
        };
        let err = NewMachine::new(&t, name("w-1"), &newer, Some(&v("v1.31.4"))).expect_err("newer");
        assert!(err.starts_with("Kubelet version v1.32.0 is newer"), "{err}");
        let err = NewMachine::new(&t, name("w-1"), &newer, None).expect_err("unknown");
        assert!(err.contains("cannot be checked"), "{err}");
        let master = template(MachineRole::Master);
        let older = MachineRequest {
            kubelet: Some(v("v1.30.0")),
            ..MachineRequest::default()
        };
        let m = NewMachine::new(&master, name("m-2"), &older, Some(&v("v1.31.4")))
            .expect("a master's kubelet one minor older");
        assert_eq!(m.spec.versions.control_plane, Some(v("v1.31.4")));
    }

    #[test]
    fn the_control_plane_version_is_the_first_that_parses() {
        assert_eq!(
            control_plane_version(&[None, Some("latest"), Some("1.30.1"), Some("v1.31.0")]),
            Some(v("v1.30.1"))
        );
        assert_eq!(control_plane_version(&[None, Some("")]), None);
    }
}
