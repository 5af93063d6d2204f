//! Federations: a host cluster running the federation control plane and member clusters
//! joined to it. Membership changes are computed here; the driver does the work.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::names::FederationName;
use super::status::{FederationStatus, Verb};
use super::{ClusterId, FederationId};

/// The property every federation needs (the DNS zone of its federated services).
pub const DNS_ZONE: &str = "dns-zone";

/// Magnum hard-codes `create_timeout=15` (minutes) for federations.
pub const CREATE_TIMEOUT_MINUTES: i64 = 15;

#[derive(Debug, Clone, PartialEq)]
pub struct Federation {
    pub id: i64,
    pub uuid: FederationId,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    /// Always the host cluster's uuid.
    pub hostcluster_id: ClusterId,
    /// Member cluster uuids, in join order. A member whose cluster was deleted stays listed
    /// until it is unjoined.
    pub member_ids: Vec<ClusterId>,
    pub status: FederationStatus,
    pub status_reason: Option<String>,
    pub properties: BTreeMap<String, String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewFederation {
    pub uuid: FederationId,
    pub project_id: String,
    pub user_id: String,
    pub name: FederationName,
    pub hostcluster_id: ClusterId,
    pub member_ids: Vec<ClusterId>,
    pub properties: BTreeMap<String, String>,
}

impl NewFederation {
    /// The row a create will store, for the event committed with it.
    pub fn provisional(&self, now: DateTime<Utc>) -> Federation {
        Federation {
            id: 0,
            uuid: self.uuid,
            project_id: self.project_id.clone(),
            user_id: self.user_id.clone(),
            name: self.name.to_string(),
            hostcluster_id: self.hostcluster_id,
            member_ids: self.member_ids.clone(),
            status: FederationStatus::CreateInProgress,
            status_reason: None,
            properties: self.properties.clone(),
            version: 0,
            created_at: now,
            updated_at: None,
        }
    }
}

impl Federation {
    /// Work on the federation was accepted: `*_IN_PROGRESS`, the last failure's reason gone.
    pub fn begin(&mut self, verb: Verb) {
        self.status = verb.federation_in_progress();
        self.status_reason = None;
    }

    /// Joins, unjoins and property edits are accepted unless the federation is being created
    /// or deleted (while `UPDATE_IN_PROGRESS` they queue behind the running update).
    pub fn accepts_changes(&self) -> bool {
        !matches!(
            self.status,
            FederationStatus::CreateInProgress | FederationStatus::DeleteInProgress
        )
    }
}

/// Members added and removed between two member lists.
pub fn member_diff(before: &[ClusterId], after: &[ClusterId]) -> (Vec<ClusterId>, Vec<ClusterId>) {
    let added = after
        .iter()
        .filter(|m| !before.contains(m))
        .cloned()
        .collect();
    let removed = before
        .iter()
        .filter(|m| !after.contains(m))
        .cloned()
        .collect();
    (added, removed)
}

/// A member list without duplicates, keeping first occurrences.
pub fn dedup_members(members: Vec<ClusterId>) -> Vec<ClusterId> {
    let mut out: Vec<ClusterId> = Vec::with_capacity(members.len());
    for m in members {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// The member list after a failed update is undone: the clusters it joined leave again, and
/// those it unjoined (the ones that still `exist`) are members again, so that the same join or
/// unjoin is accepted again as the way forward from `UPDATE_FAILED`.
pub fn undo_member_change(
    members: &[ClusterId],
    joined: &[ClusterId],
    unjoined: &[ClusterId],
    exist: &[ClusterId],
) -> Vec<ClusterId> {
    let mut out: Vec<ClusterId> = members
        .iter()
        .filter(|m| !joined.contains(m))
        .copied()
        .collect();
    for m in unjoined {
        if exist.contains(m) && !out.contains(m) {
            out.push(*m);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct ids named by letters, the same letter giving the same id.
    fn v(items: &[&str]) -> Vec<ClusterId> {
        items
            .iter()
            .map(|s| ClusterId(uuid::Uuid::from_u128(u128::from(s.as_bytes()[0]))))
            .collect()
    }

    #[test]
    fn member_diff_names_joins_and_unjoins() {
        let (added, removed) = member_diff(&v(&["a", "b"]), &v(&["b", "c"]));
        assert_eq!(added, v(&["c"]));
        assert_eq!(removed, v(&["a"]));
    }

    #[test]
    fn federation_names_follow_the_cluster_name_rule() {
        assert!(FederationName::parse("fed-1.a_b").is_ok());
        assert!(FederationName::parse("1fed").is_err());
        assert!(FederationName::parse(&"a".repeat(243)).is_err());
    }

    #[test]
    fn duplicate_members_collapse_in_order() {
        assert_eq!(
            dedup_members(v(&["a", "b", "a", "c", "b"])),
            v(&["a", "b", "c"])
        );
    }

    #[test]
    fn a_failed_member_change_is_undone_without_bringing_back_deleted_clusters() {
        let id = |n: u128| ClusterId(uuid::Uuid::from_u128(n));
        let members = [id(1), id(2), id(3)];
        // 3 was joined, 4 and 5 unjoined; 5 no longer exists.
        let undone = undo_member_change(&members, &[id(3)], &[id(4), id(5)], &[id(1), id(4)]);
        assert_eq!(undone, vec![id(1), id(2), id(4)]);
        assert_eq!(
            undo_member_change(&members, &[], &[], &[]),
            members.to_vec()
        );
    }
}
