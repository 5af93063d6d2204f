//! A node group's rolling replacement: after its flavor or image changed, each of its machines
//! still on another flavor or image is replaced by a new one (the new one first), at most
//! `max_batch_size` at a time. The machines themselves say how far the roll is: one whose
//! replacement is under way is `Provisioning` with the group's flavor and image already in its
//! spec, one replaced is `Running` with them; the rest are still to do. So a roll resumed after
//! a crash or a failure replaces only what is left, and never one machine twice.

use super::{KubeVersion, Machine, MachinePhase, MachineSpec};
use crate::domain::cluster::NodeGroup;

/// The flavor and image a node group's machines are rolled to, and the kubelet version when
/// the roll is a version change (the Kubernetes face's `MachineDeployment`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollTarget {
    pub flavor: Option<String>,
    pub image: Option<String>,
    /// The kubelet every machine ends on; None leaves each machine's versions as they are.
    pub kubelet: Option<KubeVersion>,
}

impl RollTarget {
    /// The group's flavor and image, as its machines' specs hold them (an empty one is none).
    pub fn of(ng: &NodeGroup) -> RollTarget {
        let some = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        RollTarget {
            flavor: some(&ng.flavor_id),
            image: some(&ng.image_id),
            kubelet: None,
        }
    }

    /// The same target, every machine also on kubelet `kubelet` (when given).
    pub fn with_kubelet(mut self, kubelet: Option<KubeVersion>) -> RollTarget {
        self.kubelet = kubelet;
        self
    }

    /// Whether the spec names this flavor and image (and kubelet, when the target has one).
    pub fn matches(&self, spec: &MachineSpec) -> bool {
        spec.flavor == self.flavor
            && spec.os_image == self.image
            && (self.kubelet.is_none() || spec.versions.kubelet == self.kubelet)
    }

    /// The spec a machine is replaced with: its own, on this flavor and image (and kubelet).
    pub fn respec(&self, spec: &MachineSpec) -> MachineSpec {
        let mut next = spec.clone();
        next.flavor = self.flavor.clone();
        next.os_image = self.image.clone();
        if let Some(k) = &self.kubelet {
            next.versions.kubelet = Some(k.clone());
        }
        next
    }
}

/// Where one machine is in the roll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollState {
    /// Not part of the roll: being deleted.
    Outside,
    /// On the group's flavor and image, running.
    Replaced,
    /// Its replacement is under way.
    InFlight,
    /// Still to replace: on another flavor or image, or failed (its node in no known state).
    Left,
}

/// Where `m` is in the roll to `target`.
pub fn state(m: &Machine, target: &RollTarget) -> RollState {
    let on_target = target.matches(&m.spec);
    match m.status.phase {
        MachinePhase::Deleting => RollState::Outside,
        MachinePhase::Provisioning if on_target => RollState::InFlight,
        MachinePhase::Running if on_target => RollState::Replaced,
        _ => RollState::Left,
    }
}

/// What the next step of a roll does.
#[derive(Debug, Clone, PartialEq)]
pub struct RollPlan {
    /// Machines whose replacement is under way, to ask the driver about.
    pub in_flight: Vec<Machine>,
    /// Machines whose replacement starts now (filling the batch), in id order.
    pub start: Vec<Machine>,
    /// Machines still to replace after those start.
    pub waiting: usize,
    /// Machines replaced already.
    pub replaced: usize,
}

impl RollPlan {
    /// Whether nothing is left to do.
    pub fn finished(&self) -> bool {
        self.in_flight.is_empty() && self.start.is_empty() && self.waiting == 0
    }
}

/// The next step of a roll of `machines` (a group's, in id order) to `target`, at most
/// `max_batch_size` (at least 1) replacements under way at once.
pub fn plan(machines: &[Machine], target: &RollTarget, max_batch_size: i32) -> RollPlan {
    let batch = usize::try_from(max_batch_size.max(1)).unwrap_or(1);
    let mut out = RollPlan {
        in_flight: Vec::new(),
        start: Vec::new(),
        waiting: 0,
        replaced: 0,
    };
    let mut left = Vec::new();
    for m in machines {
        match state(m, target) {
            RollState::Outside => {}
            RollState::Replaced => out.replaced += 1,
            RollState::InFlight => out.in_flight.push(m.clone()),
            RollState::Left => left.push(m),
        }
    }
    let free = batch.saturating_sub(out.in_flight.len());
    out.waiting = left.len().saturating_sub(free);
    out.start = left.into_iter().take(free).cloned().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::machine::{MachineName, MachineRole, MachineStatus};
    use crate::domain::{ClusterId, MachineId, NodeGroupId};
    use chrono::Utc;

    fn machine(n: i64, flavor: &str, phase: MachinePhase) -> Machine {
        let mut status = MachineStatus::pending();
        status.phase = phase;
        Machine {
            id: n,
            uuid: MachineId::new(),
            name: MachineName::parse(&format!("workers-{n}")).expect("name"),
            role: MachineRole::Worker,
            project_id: "p".into(),
            cluster_id: ClusterId::new(),
            nodegroup_id: NodeGroupId::new(),
            spec: MachineSpec {
                flavor: Some(flavor.into()),
                os_image: Some("img".into()),
                ..MachineSpec::default()
            },
            status,
            created_at: Utc::now(),
            updated_at: None,
        }
    }

    fn target(flavor: &str) -> RollTarget {
        RollTarget {
            flavor: Some(flavor.into()),
            image: Some("img".into()),
            kubelet: None,
        }
    }

    fn ids(ms: &[Machine]) -> Vec<i64> {
        ms.iter().map(|m| m.id).collect()
    }

    #[test]
    fn a_roll_starts_a_batch_of_the_machines_left_in_id_order() {
        let ms: Vec<Machine> = (1..=5)
            .map(|n| machine(n, "small", MachinePhase::Running))
            .collect();
        let p = plan(&ms, &target("large"), 2);
        assert_eq!(ids(&p.start), vec![1, 2]);
        assert!(p.in_flight.is_empty());
        assert_eq!((p.waiting, p.replaced), (3, 0));
        assert!(!p.finished());
        // Zero or less is one at a time.
        assert_eq!(ids(&plan(&ms, &target("large"), 0).start), vec![1]);
    }

    #[test]
    fn the_machines_say_how_far_the_roll_is() {
        let ms = vec![
            machine(1, "large", MachinePhase::Running),
            machine(2, "large", MachinePhase::Provisioning),
            machine(3, "small", MachinePhase::Running),
            machine(4, "large", MachinePhase::Failed),
            machine(5, "small", MachinePhase::Deleting),
            machine(6, "small", MachinePhase::Provisioning),
        ];
        let t = target("large");
        assert_eq!(state(&ms[0], &t), RollState::Replaced);
        assert_eq!(state(&ms[1], &t), RollState::InFlight);
        assert_eq!(state(&ms[2], &t), RollState::Left);
        assert_eq!(state(&ms[3], &t), RollState::Left, "a failed one again");
        assert_eq!(state(&ms[4], &t), RollState::Outside);
        assert_eq!(state(&ms[5], &t), RollState::Left, "another change's");
        let p = plan(&ms, &t, 2);
        assert_eq!(ids(&p.in_flight), vec![2]);
        assert_eq!(ids(&p.start), vec![3], "one free place in the batch");
        assert_eq!((p.waiting, p.replaced), (2, 1));
        let full = plan(&ms, &t, 1);
        assert!(full.start.is_empty(), "the batch is full");
        assert_eq!(full.waiting, 3);
    }

    #[test]
    fn a_roll_with_every_machine_on_the_target_is_finished() {
        let ms: Vec<Machine> = (1..=3)
            .map(|n| machine(n, "large", MachinePhase::Running))
            .collect();
        let p = plan(&ms, &target("large"), 1);
        assert!(p.finished());
        assert_eq!(p.replaced, 3);
        assert!(plan(&[], &target("large"), 1).finished());
    }

    #[test]
    fn a_respec_changes_only_the_flavor_and_image() {
        let m = machine(1, "small", MachinePhase::Running);
        let t = RollTarget {
            flavor: Some("large".into()),
            image: None,
            kubelet: None,
        };
        let next = t.respec(&m.spec);
        assert!(t.matches(&next));
        assert!(!t.matches(&m.spec));
        assert_eq!(next.os_image, None);
        assert_eq!(next.versions, m.spec.versions);
    }

    #[test]
    fn a_version_roll_replaces_the_machines_on_another_kubelet_and_respecs_it() {
        let v = |t: &str| KubeVersion::parse(t).expect("version");
        let mut on = machine(1, "small", MachinePhase::Running);
        on.spec.versions.kubelet = Some(v("v1.31.4"));
        let mut off = machine(2, "small", MachinePhase::Running);
        off.spec.versions.kubelet = Some(v("v1.30.2"));
        let unknown = machine(3, "small", MachinePhase::Running);
        let t = target("small").with_kubelet(Some(v("v1.31.4")));
        assert_eq!(state(&on, &t), RollState::Replaced);
        assert_eq!(state(&off, &t), RollState::Left);
        assert_eq!(state(&unknown, &t), RollState::Left, "a kubelet not named");
        assert_eq!(t.respec(&off.spec).versions.kubelet, Some(v("v1.31.4")));
        assert_eq!(state(&off, &target("small")), RollState::Replaced);
        let p = plan(&[on, off, unknown], &t, 5);
        assert_eq!(ids(&p.start), vec![2, 3]);
    }
}
