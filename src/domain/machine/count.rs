//! How a node group's machines follow its node count: the machines a group gets when it is
//! made or grows (their names and spec), which ones go when it shrinks, and how the names a
//! user gives (`nodes_to_remove`) are resolved to machines.

use std::collections::BTreeSet;

use super::{
    KubeVersion, Machine, MachineName, MachinePhase, MachineRole, MachineSpec, MachineVersions,
};
use crate::domain::cluster::{NewNodeGroup, NodeGroup, Taint};
use crate::domain::labels::Labels;
use crate::domain::{ClusterId, MachineId, NodeGroupId};

/// What every new machine of a node group is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineTemplate {
    pub cluster: ClusterId,
    pub nodegroup: NodeGroupId,
    pub nodegroup_name: String,
    pub project_id: String,
    pub role: MachineRole,
    pub spec: MachineSpec,
    /// The phase a new machine starts in: `Pending` while its node group is being worked on
    /// (the driver makes the node), `Running` for a group that is not (a registered cluster's).
    pub phase: MachinePhase,
}

impl MachineTemplate {
    pub fn of_nodegroup(ng: &NodeGroup) -> MachineTemplate {
        let role = role_of(&ng.role);
        MachineTemplate {
            cluster: ng.cluster_id,
            nodegroup: ng.uuid,
            nodegroup_name: ng.name.clone(),
            project_id: ng.project_id.clone(),
            role,
            spec: spec_for(
                role,
                (ng.flavor_id.as_deref(), ng.image_id.as_deref()),
                ng.version.as_deref(),
                &ng.node_taints,
                &ng.node_labels,
            ),
            phase: start_phase(ng.status.is_in_progress()),
        }
    }

    pub fn of_new(cluster: ClusterId, ng: &NewNodeGroup) -> MachineTemplate {
        let role = role_of(&ng.role);
        MachineTemplate {
            cluster,
            nodegroup: ng.uuid,
            nodegroup_name: ng.name.clone(),
            project_id: ng.project_id.clone(),
            role,
            spec: spec_for(
                role,
                (ng.flavor_id.as_deref(), ng.image_id.as_deref()),
                None,
                &ng.node_taints,
                &ng.node_labels,
            ),
            phase: start_phase(ng.status.is_in_progress()),
        }
    }

    /// The name of the group's `n`-th machine.
    pub fn name(&self, n: u32) -> MachineName {
        MachineName::for_nodegroup(&self.nodegroup_name, self.nodegroup, n)
    }
}

fn role_of(role: &str) -> MachineRole {
    if role == crate::domain::cluster::ROLE_MASTER {
        MachineRole::Master
    } else {
        MachineRole::Worker
    }
}

fn start_phase(in_progress: bool) -> MachinePhase {
    if in_progress {
        MachinePhase::Pending
    } else {
        MachinePhase::Running
    }
}

/// A node group's machine spec: its flavor, image, node taints and labels, and its Kubernetes
/// version as the kubelet's (and a master's control plane) when it is one.
pub fn spec_for(
    role: MachineRole,
    (flavor, image): (Option<&str>, Option<&str>),
    version: Option<&str>,
    taints: &[Taint],
    labels: &Labels,
) -> MachineSpec {
    let version = version.and_then(|v| KubeVersion::parse(v).ok());
    MachineSpec {
        versions: MachineVersions {
            control_plane: version.clone().filter(|_| role == MachineRole::Master),
            kubelet: version,
        },
        container_runtime: None,
        os_image: image.filter(|i| !i.is_empty()).map(str::to_string),
        flavor: flavor.filter(|f| !f.is_empty()).map(str::to_string),
        provider_config: serde_json::Value::Object(Default::default()),
        taints: taints.to_vec(),
        labels: labels.clone(),
    }
}

/// One of a node group's machines, as the count rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub id: i64,
    pub name: String,
    pub phase: MachinePhase,
}

/// What bringing a node group to its node count takes: machines to mark for deletion (by id)
/// and how many new ones to make.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountPlan {
    pub remove: Vec<i64>,
    pub add: usize,
}

/// The plan that leaves exactly `node_count` of the machines not being deleted: the newest
/// ones go first when there are too many (the ones a user named were marked before), new ones
/// are made when there are too few.
pub fn plan(node_count: i32, machines: &[Counted]) -> CountPlan {
    let want = usize::try_from(node_count).unwrap_or(0);
    let mut live: Vec<&Counted> = machines
        .iter()
        .filter(|m| m.phase.counts_toward_node_count())
        .collect();
    if live.len() > want {
        live.sort_by_key(|m| std::cmp::Reverse(m.id));
        let surplus = live.len() - want;
        CountPlan {
            remove: live.iter().take(surplus).map(|m| m.id).collect(),
            add: 0,
        }
    } else {
        CountPlan {
            remove: Vec::new(),
            add: want - live.len(),
        }
    }
}

/// `count` names for new machines of the group: the lowest indices whose names no machine in
/// `taken` has.
pub fn next_names(
    tmpl: &MachineTemplate,
    taken: &BTreeSet<String>,
    count: usize,
) -> Vec<MachineName> {
    (1u32..)
        .map(|n| tmpl.name(n))
        .filter(|name| !taken.contains(name.as_str()))
        .take(count)
        .collect()
}

/// Whether `ident` names the machine: its name, uuid, provider id, node name or an address.
pub fn names_machine(m: &Machine, ident: &str) -> bool {
    let as_uuid = crate::domain::ids::parse_uuid_like(ident).map(|u| u.hyphenated().to_string());
    m.name.as_str() == ident
        || as_uuid.is_some_and(|u| u == m.uuid.to_string())
        || m.status.provider_id.as_deref() == Some(ident)
        || m.status.node_ref.as_deref() == Some(ident)
        || m.status.addresses.iter().any(|a| a.address == ident)
}

/// The machines `idents` name among a node group's machines (being deleted ones count: naming
/// one again changes nothing), or Magnum's sentence for the first that names none of them.
pub fn resolve(
    machines: &[Machine],
    idents: &[String],
    nodegroup: &str,
) -> Result<Vec<MachineId>, String> {
    let mut found = Vec::new();
    for ident in idents {
        match machines.iter().find(|m| names_machine(m, ident)) {
            Some(m) => {
                if !found.contains(&m.uuid) {
                    found.push(m.uuid);
                }
            }
            None => {
                return Err(format!(
                    "nodes_to_remove names {ident}, which is not a machine of node group \
                     {nodegroup} (by name, uuid, provider id, node name or address)."
                ))
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(id: i64, phase: MachinePhase) -> Counted {
        Counted {
            id,
            name: format!("w-{id}"),
            phase,
        }
    }

    #[test]
    fn a_shrink_marks_the_newest_live_machines_and_a_grow_adds_the_difference() {
        let ms = vec![
            counted(1, MachinePhase::Running),
            counted(2, MachinePhase::Running),
            counted(3, MachinePhase::Deleting),
            counted(4, MachinePhase::Pending),
        ];
        assert_eq!(
            plan(1, &ms),
            CountPlan {
                remove: vec![4, 2],
                add: 0
            }
        );
        assert_eq!(plan(3, &ms), CountPlan::default());
        assert_eq!(
            plan(5, &ms),
            CountPlan {
                remove: vec![],
                add: 2
            }
        );
        assert_eq!(plan(0, &ms).remove, vec![4, 2, 1]);
    }

    #[test]
    fn new_names_take_the_lowest_free_indices() {
        let ng = NewNodeGroup {
            uuid: NodeGroupId::new(),
            name: "default-worker".into(),
            project_id: "p".into(),
            docker_volume_size: None,
            labels: Labels::default(),
            flavor_id: Some("m1.small".into()),
            image_id: None,
            node_count: 2,
            role: "worker".into(),
            min_node_count: 0,
            max_node_count: None,
            is_default: true,
            status: crate::domain::status::ClusterStatus::CreateInProgress,
            node_labels: Labels::default(),
            node_taints: Vec::new(),
        };
        let t = MachineTemplate::of_new(ClusterId::new(), &ng);
        assert_eq!(t.phase, MachinePhase::Pending);
        assert_eq!(t.spec.flavor.as_deref(), Some("m1.small"));
        let taken: BTreeSet<String> = ["default-worker-1", "default-worker-3"]
            .into_iter()
            .map(String::from)
            .collect();
        let names: Vec<String> = next_names(&t, &taken, 3)
            .into_iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(
            names,
            ["default-worker-2", "default-worker-4", "default-worker-5"]
        );
    }

    #[test]
    fn a_master_groups_version_is_its_machines_kubelet_and_control_plane() {
        let spec = spec_for(
            MachineRole::Master,
            (Some("f"), Some("img")),
            Some("v1.31.4"),
            &[],
            &Labels::default(),
        );
        assert_eq!(spec.versions.kubelet, KubeVersion::parse("1.31.4").ok());
        assert_eq!(spec.versions.control_plane, spec.versions.kubelet);
        let worker = spec_for(
            MachineRole::Worker,
            (None, None),
            Some("1.30.0"),
            &[],
            &Labels::default(),
        );
        assert_eq!(worker.versions.control_plane, None);
        assert_eq!(worker.os_image, None);
    }
}
