//! Request annotations: how a machine's Kubernetes object asks for an action that changes no
//! spec, since kubectl has no verb for it. As `kubectl rollout restart` asks for a restart
//! with `kubectl.kubernetes.io/restartedAt`, an annotation added, or given a new value, asks
//! for its action once; the same value again (a second apply of one manifest) and a removal
//! ask nothing. The value is an opaque token (a timestamp, say) and stays on the object.
//!
//! - [`REBOOT_REQUESTED_AT`] asks for a reboot;
//! - [`REPLACE_REQUESTED_AT`] asks for a replacement (a new machine first, then the old one
//!   goes);
//! - [`REMEDIATE_MACHINE`], Cluster API's remediation request, asks for a replacement too, as
//!   Cluster API remediates a machine by replacing it.

use std::collections::BTreeMap;

/// Asks for a reboot of the machine.
pub const REBOOT_REQUESTED_AT: &str = "fleetyard.openstack.org/reboot-requested-at";
/// Asks for a replacement of the machine.
pub const REPLACE_REQUESTED_AT: &str = "fleetyard.openstack.org/replace-requested-at";
/// Cluster API's remediation request (any value): a replacement.
pub const REMEDIATE_MACHINE: &str = "cluster.x-k8s.io/remediate-machine";

/// Every request annotation, the only annotations a machine's object keeps of a caller's.
pub const REQUEST_ANNOTATIONS: &[&str] =
    &[REBOOT_REQUESTED_AT, REPLACE_REQUESTED_AT, REMEDIATE_MACHINE];

/// An operation on one machine that changes no spec: a replacement by a new machine (the new
/// one first) or a reboot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineAction {
    Replace,
    Reboot,
}

impl MachineAction {
    pub fn as_str(self) -> &'static str {
        match self {
            MachineAction::Replace => "replace",
            MachineAction::Reboot => "reboot",
        }
    }

    /// The action a request annotation asks for.
    pub fn of_annotation(key: &str) -> Option<MachineAction> {
        match key {
            REBOOT_REQUESTED_AT => Some(MachineAction::Reboot),
            REPLACE_REQUESTED_AT | REMEDIATE_MACHINE => Some(MachineAction::Replace),
            _ => None,
        }
    }
}

/// Whether `key` is a request annotation.
pub fn is_request(key: &str) -> bool {
    REQUEST_ANNOTATIONS.contains(&key)
}

/// An action the annotations ask for, with the annotations that ask it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub action: MachineAction,
    pub annotations: Vec<&'static str>,
}

/// What a write that takes the request annotations from `current` to `next` asks for: the
/// action of each annotation added or given a new value; nothing when none is. Two different
/// actions at once are refused with the sentence saying so.
pub fn asked(
    current: &BTreeMap<String, String>,
    next: &BTreeMap<String, String>,
) -> Result<Option<Request>, String> {
    let mut found: Option<Request> = None;
    for key in REQUEST_ANNOTATIONS {
        let Some(value) = next.get(*key) else {
            continue;
        };
        if current.get(*key) == Some(value) {
            continue;
        }
        let Some(action) = MachineAction::of_annotation(key) else {
            continue;
        };
        match &mut found {
            None => {
                found = Some(Request {
                    action,
                    annotations: vec![key],
                })
            }
            Some(r) if r.action == action => r.annotations.push(key),
            Some(r) => {
                return Err(format!(
                    "{} and {key} ask for a {} and a {} at once: ask for one action at a time",
                    r.annotations[0],
                    r.action.as_str(),
                    action.as_str()
                ))
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_new_or_changed_value_asks_once_and_the_same_value_or_a_removal_asks_nothing() {
        let none = map(&[]);
        let first = map(&[(REBOOT_REQUESTED_AT, "2026-11-28T10:00:00Z")]);
        let second = map(&[(REBOOT_REQUESTED_AT, "2026-11-28T11:00:00Z")]);
        let reboot = Some(Request {
            action: MachineAction::Reboot,
            annotations: vec![REBOOT_REQUESTED_AT],
        });
        assert_eq!(asked(&none, &first), Ok(reboot.clone()));
        assert_eq!(asked(&first, &second), Ok(reboot));
        assert_eq!(asked(&first, &first), Ok(None));
        assert_eq!(asked(&first, &none), Ok(None));
        assert_eq!(asked(&none, &map(&[("other", "x")])), Ok(None));
    }

    #[test]
    fn remediation_is_a_replacement_and_two_actions_at_once_are_refused() {
        let none = map(&[]);
        let both = map(&[(REPLACE_REQUESTED_AT, "1"), (REMEDIATE_MACHINE, "")]);
        assert_eq!(
            asked(&none, &both),
            Ok(Some(Request {
                action: MachineAction::Replace,
                annotations: vec![REPLACE_REQUESTED_AT, REMEDIATE_MACHINE],
            }))
        );
        let err = asked(
            &none,
            &map(&[(REBOOT_REQUESTED_AT, "1"), (REPLACE_REQUESTED_AT, "1")]),
        )
        .expect_err("two actions");
        assert!(err.contains("one action at a time"), "{err}");
        assert!(is_request(REMEDIATE_MACHINE) && !is_request("x/y"));
    }
}
