//! Federations: a host cluster running the federation control plane and member clusters
//! joined to it. Membership changes are computed here; the driver does the work.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::status::FederationStatus;
use super::ResourceId;

/// The property every federation needs (the DNS zone of its federated services).
pub const DNS_ZONE: &str = "dns-zone";

#[derive(Debug, Clone, PartialEq)]
pub struct Federation {
    pub id: i64,
    pub uuid: ResourceId,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    /// Always the host cluster's uuid.
    pub hostcluster_id: String,
    /// Member cluster uuids, in join order. A member whose cluster was deleted stays listed
    /// until it is unjoined.
    pub member_ids: Vec<String>,
    pub status: FederationStatus,
    pub status_reason: Option<String>,
    pub properties: BTreeMap<String, String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct NewFederation {
    pub uuid: ResourceId,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub hostcluster_id: String,
    pub member_ids: Vec<String>,
    pub properties: BTreeMap<String, String>,
}

impl Federation {
    /// Joins, unjoins and property edits are accepted unless the federation is being created
    /// or deleted (while `UPDATE_IN_PROGRESS` they queue behind the running update).
    pub fn accepts_changes(&self) -> bool {
        !matches!(
            self.status,
            FederationStatus::CreateInProgress | FederationStatus::DeleteInProgress
        )
    }
}

/// Why a federation name is refused, if it is: the cluster name rule (1-242 characters,
/// `^[a-zA-Z][a-zA-Z0-9_.-]*$`).
pub fn invalid_federation_name(name: &str) -> Option<&'static str> {
    super::cluster::invalid_cluster_name(name)
}

/// Members added and removed between two member lists.
pub fn member_diff(before: &[String], after: &[String]) -> (Vec<String>, Vec<String>) {
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
pub fn dedup_members(members: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(members.len());
    for m in members {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn member_diff_names_joins_and_unjoins() {
        let (added, removed) = member_diff(&v(&["a", "b"]), &v(&["b", "c"]));
        assert_eq!(added, v(&["c"]));
        assert_eq!(removed, v(&["a"]));
    }

    #[test]
    fn federation_names_follow_the_cluster_name_rule() {
        assert_eq!(invalid_federation_name("fed-1.a_b"), None);
        assert!(invalid_federation_name("1fed").is_some());
        assert!(invalid_federation_name(&"a".repeat(243)).is_some());
    }

    #[test]
    fn duplicate_members_collapse_in_order() {
        assert_eq!(
            dedup_members(v(&["a", "b", "a", "c", "b"])),
            v(&["a", "b", "c"])
        );
    }
}
