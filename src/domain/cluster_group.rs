//! Cluster groups: named sets of clusters one project shares with others, and the rights a
//! binding grants over them.
//!
//! A [`ClusterGroup`] belongs to one project and is named by a Kubernetes name unique in it. Its
//! clusters are the union of
//! - its **selector** matches: clusters *of the group's own project* whose registry labels match
//!   the group's label selector. A selector never reaches into another project, as a Kubernetes
//!   selector never reaches out of its namespace: labels are set by each cluster's owner, so a
//!   selector across projects would let any project pull in another's clusters by guessing
//!   labels;
//! - its **explicit members** that carry their owner's consent.
//!
//! ## Consent
//! A cluster of another project becomes a member only with its owner's consent, the way a
//! Glance image member or a Kubernetes CSR needs the other side's approval:
//! - the group's project **proposes** a cluster: the membership is [`MemberState::Proposed`] and
//!   grants nothing;
//! - the cluster's project **accepts** the proposal ([`ClusterGroupMember::accept`]), or
//!   **grants** the membership itself by adding its own cluster to the group: either way the
//!   membership is [`MemberState::Accepted`], with the time of the consent;
//! - a cluster of the group's own project is accepted at once (its owner is the one adding it);
//! - either side may remove the membership at any time: the owner withdraws its consent by
//!   removing it. Whether a project may propose, accept or grant is the API's policy check;
//!   what the state becomes is decided here.
//!
//! ## Rights
//! A [`ClusterGroupBinding`] grants one grantee project (optionally only its members holding one
//! of some roles) a [`GroupRight`] over the group's clusters: [`GroupRight::Read`] allows get,
//! list, watch, export and ClusterProfile; [`GroupRight::Write`] also update, label, annotate,
//! delete and joining a federation ([`ClusterAction`]). Rights add up over every binding that
//! applies; without one, a group grants nothing ([`right_over`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::ids::{ClusterGroupBindingId, ClusterGroupId, ClusterId};
use super::kube_names::dns1123_subdomain_errors;
use super::selector::LabelSelector;

/// A group's name: a Kubernetes object name (a DNS-1123 subdomain), unique in its project.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupName(String);

impl GroupName {
    /// The name, or the apiserver's messages of what is wrong with it.
    pub fn parse(text: &str) -> Result<GroupName, String> {
        if text.is_empty() {
            return Err("name or generateName is required".into());
        }
        let errors = dns1123_subdomain_errors(text);
        if errors.is_empty() {
            Ok(GroupName(text.to_string()))
        } else {
            Err(errors.join(", "))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A group's description: free text of at most 255 characters, shown back as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription(String);

impl GroupDescription {
    pub const MAX_CHARS: usize = 255;

    pub fn parse(text: &str) -> Result<GroupDescription, String> {
        if text.chars().count() > Self::MAX_CHARS {
            return Err(format!(
                "a description is at most {} characters",
                Self::MAX_CHARS
            ));
        }
        Ok(GroupDescription(text.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A group's label selector over registry labels: the text as the client wrote it (stored and
/// shown back), parsed once. It has at least one requirement; a group without a selector has
/// only explicit members.
#[derive(Debug, Clone)]
pub struct GroupSelector {
    text: String,
    parsed: LabelSelector,
}

impl PartialEq for GroupSelector {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for GroupSelector {}

impl GroupSelector {
    pub fn parse(text: &str) -> Result<GroupSelector, String> {
        let parsed = LabelSelector::parse(text).map_err(|e| e.0)?;
        if parsed.is_empty() {
            return Err(
                "a group's selector needs at least one requirement (leave it out to have \
                 only explicit members)"
                    .into(),
            );
        }
        Ok(GroupSelector {
            text: text.to_string(),
            parsed,
        })
    }
    pub fn as_str(&self) -> &str {
        &self.text
    }
    /// Whether a cluster with these registry labels matches.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.parsed.matches(labels)
    }
}

/// A group to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewClusterGroup {
    pub uuid: ClusterGroupId,
    pub project_id: String,
    pub user_id: String,
    pub name: GroupName,
    pub description: Option<GroupDescription>,
    pub selector: Option<GroupSelector>,
}

/// A stored group.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterGroup {
    pub id: i64,
    pub uuid: ClusterGroupId,
    pub project_id: String,
    pub user_id: String,
    pub name: GroupName,
    pub description: Option<GroupDescription>,
    pub selector: Option<GroupSelector>,
    /// Optimistic-concurrency counter, bumped by every update.
    pub version: i64,
    /// The registry's resourceVersion of the group's last change (its members' too).
    pub resource_version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl ClusterGroup {
    /// Whether the selector picks a cluster of `project` with `labels` (never one of another
    /// project).
    pub fn selects(&self, project: &str, labels: &BTreeMap<String, String>) -> bool {
        project == self.project_id && self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }
}

/// Where an explicit membership stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// Asked for by the group's project; grants nothing until the cluster's project accepts.
    Proposed,
    /// The cluster's project consented: the cluster is a member.
    Accepted,
}

impl MemberState {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberState::Proposed => "Proposed",
            MemberState::Accepted => "Accepted",
        }
    }
    pub fn parse(text: &str) -> Option<MemberState> {
        match text {
            "Proposed" => Some(MemberState::Proposed),
            "Accepted" => Some(MemberState::Accepted),
            _ => None,
        }
    }
}

/// Why a membership change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipError {
    /// Only the group's project and the cluster's project take part in a membership.
    #[error("project {0} owns neither the group nor the cluster")]
    NotAParty(String),
    /// Only the cluster's project consents.
    #[error("only the cluster's project {0} may accept its membership")]
    NotTheOwner(String),
}

/// An explicit membership to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewClusterGroupMember {
    pub group: ClusterGroupId,
    pub cluster: ClusterId,
    pub cluster_project_id: String,
    /// The project that asked (the group's or the cluster's).
    pub proposed_by: String,
    pub state: MemberState,
}

impl NewClusterGroupMember {
    /// `actor` adds the cluster (of `cluster_project`) to the group: accepted when the actor
    /// owns the cluster (it grants the membership), proposed when it owns only the group.
    pub fn add(
        group: &ClusterGroup,
        cluster: ClusterId,
        cluster_project: &str,
        actor: &str,
    ) -> Result<NewClusterGroupMember, MembershipError> {
        let state = if actor == cluster_project {
            MemberState::Accepted
        } else if actor == group.project_id {
            MemberState::Proposed
        } else {
            return Err(MembershipError::NotAParty(actor.to_string()));
        };
        Ok(NewClusterGroupMember {
            group: group.uuid,
            cluster,
            cluster_project_id: cluster_project.to_string(),
            proposed_by: actor.to_string(),
            state,
        })
    }
}

/// A stored explicit membership.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterGroupMember {
    pub group: ClusterGroupId,
    pub cluster: ClusterId,
    pub cluster_project_id: String,
    pub proposed_by: String,
    pub state: MemberState,
    /// When the cluster's project consented (set exactly when accepted).
    pub consented_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl ClusterGroupMember {
    /// `actor` accepts the proposal: only the cluster's project may. False when it was
    /// accepted already (nothing to write).
    pub fn accept(&self, actor: &str) -> Result<bool, MembershipError> {
        if actor != self.cluster_project_id {
            return Err(MembershipError::NotTheOwner(
                self.cluster_project_id.clone(),
            ));
        }
        Ok(self.state == MemberState::Proposed)
    }

    /// Whether `actor` may remove the membership: the cluster's project (withdrawing its
    /// consent) or the group's (`group_project`).
    pub fn removable_by(&self, actor: &str, group_project: &str) -> bool {
        actor == self.cluster_project_id || actor == group_project
    }
}

/// What a binding grants over a group's clusters. `Write` includes `Read`, so rights add up
/// by taking the greatest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupRight {
    Read,
    Write,
}

impl GroupRight {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupRight::Read => "read",
            GroupRight::Write => "write",
        }
    }
    pub fn parse(text: &str) -> Option<GroupRight> {
        match text {
            "read" => Some(GroupRight::Read),
            "write" => Some(GroupRight::Write),
            _ => None,
        }
    }
    pub fn allows(self, action: ClusterAction) -> bool {
        match self {
            GroupRight::Write => true,
            GroupRight::Read => action.reads(),
        }
    }
}

/// What a caller does to a cluster, on either face.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterAction {
    Get,
    List,
    Watch,
    /// The kubeconfig export.
    Export,
    /// The cluster's ClusterProfile (multicluster.x-k8s.io).
    ClusterProfile,
    Update,
    Label,
    Annotate,
    Delete,
    /// Joining the cluster to a federation, or removing it from one.
    FederationJoin,
}

impl ClusterAction {
    /// Whether the action only reads (what [`GroupRight::Read`] allows).
    pub fn reads(self) -> bool {
        matches!(
            self,
            ClusterAction::Get
                | ClusterAction::List
                | ClusterAction::Watch
                | ClusterAction::Export
                | ClusterAction::ClusterProfile
        )
    }
}

/// A binding to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewClusterGroupBinding {
    pub uuid: ClusterGroupBindingId,
    pub group: ClusterGroupId,
    /// The group's project.
    pub project_id: String,
    pub grantee_project_id: String,
    /// Only the grantee's members holding one of these roles; `None`: every member.
    pub roles: Option<Vec<String>>,
    pub right: GroupRight,
}

/// A stored binding.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterGroupBinding {
    pub id: i64,
    pub uuid: ClusterGroupBindingId,
    pub group: ClusterGroupId,
    pub project_id: String,
    pub grantee_project_id: String,
    pub roles: Option<Vec<String>>,
    pub right: GroupRight,
    /// The registry's resourceVersion of the binding's creation.
    pub resource_version: i64,
    pub created_at: DateTime<Utc>,
}

/// Whom a right is asked for: the project of the caller's token and its roles there.
#[derive(Debug, Clone, Copy)]
pub struct Grantee<'a> {
    pub project_id: &'a str,
    pub roles: &'a [String],
}

/// Whether a binding to `grantee_project` limited to `roles` applies to the caller. Role names
/// compare as Keystone's do, without regard to case.
pub fn binding_applies(grantee_project: &str, roles: Option<&[String]>, caller: Grantee) -> bool {
    if grantee_project != caller.project_id {
        return false;
    }
    match roles {
        None => true,
        Some(wanted) => wanted
            .iter()
            .any(|w| caller.roles.iter().any(|r| r.eq_ignore_ascii_case(w))),
    }
}

impl ClusterGroupBinding {
    pub fn applies_to(&self, caller: Grantee) -> bool {
        binding_applies(&self.grantee_project_id, self.roles.as_deref(), caller)
    }
}

/// The right `caller` has over a cluster, given the bindings of the groups the cluster is a
/// member of: the greatest right of the bindings that apply to the caller, none without one.
pub fn right_over<'b>(
    caller: Grantee,
    bindings: impl IntoIterator<Item = &'b ClusterGroupBinding>,
) -> Option<GroupRight> {
    bindings
        .into_iter()
        .filter(|b| b.applies_to(caller))
        .map(|b| b.right)
        .max()
}

/// Normalizes a binding's role list: sorted, without repeats, `None` for an empty list
/// refused (a binding to no role would grant nothing; leave the roles out to bind every
/// member).
pub fn binding_roles(roles: Option<Vec<String>>) -> Result<Option<Vec<String>>, String> {
    let Some(mut roles) = roles else {
        return Ok(None);
    };
    if roles.iter().any(|r| r.trim().is_empty() || r.len() > 255) {
        return Err("a role name is 1 to 255 characters".into());
    }
    roles.sort_by_key(|r| r.to_ascii_lowercase());
    roles.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    if roles.is_empty() {
        return Err(
            "a binding needs at least one role (leave roles out to bind every member)".into(),
        );
    }
    Ok(Some(roles))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(project: &str, selector: Option<&str>) -> ClusterGroup {
        ClusterGroup {
            id: 1,
            uuid: ClusterGroupId::new(),
            project_id: project.into(),
            user_id: "u".into(),
            name: GroupName::parse("prod").expect("name"),
            description: None,
            selector: selector.map(|s| GroupSelector::parse(s).expect("selector")),
            version: 0,
            resource_version: 0,
            created_at: Utc::now(),
            updated_at: None,
        }
    }

    fn binding(grantee: &str, roles: Option<&[&str]>, right: GroupRight) -> ClusterGroupBinding {
        ClusterGroupBinding {
            id: 1,
            uuid: ClusterGroupBindingId::new(),
            group: ClusterGroupId::new(),
            project_id: "a".into(),
            grantee_project_id: grantee.into(),
            roles: roles.map(|r| r.iter().map(|s| s.to_string()).collect()),
            right,
            resource_version: 0,
            created_at: Utc::now(),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn descriptions_are_at_most_255_characters() {
        assert_eq!(
            GroupDescription::parse("prod clusters").map(|d| d.as_str().to_string()),
            Ok("prod clusters".to_string())
        );
        assert!(GroupDescription::parse(&"é".repeat(255)).is_ok());
        assert!(GroupDescription::parse(&"a".repeat(256)).is_err());
    }

    #[test]
    fn group_names_are_kubernetes_names() {
        assert!(GroupName::parse("prod-eu.west").is_ok());
        assert!(GroupName::parse("").is_err());
        assert!(GroupName::parse("Prod").is_err());
        assert!(GroupName::parse(&"a".repeat(254)).is_err());
    }

    #[test]
    fn a_selector_needs_a_requirement_and_is_shown_as_written() {
        assert!(GroupSelector::parse("").is_err());
        assert!(GroupSelector::parse("env in (prod").is_err());
        let s = GroupSelector::parse("env in (prod,staging),!legacy").expect("selector");
        assert_eq!(s.as_str(), "env in (prod,staging),!legacy");
        assert!(s.matches(&labels(&[("env", "prod")])));
        assert!(!s.matches(&labels(&[("env", "prod"), ("legacy", "")])));
    }

    #[test]
    fn a_selector_picks_only_clusters_of_the_groups_own_project() {
        let g = group("a", Some("env=prod"));
        let prod = labels(&[("env", "prod")]);
        assert!(g.selects("a", &prod));
        assert!(!g.selects("b", &prod));
        assert!(!g.selects("a", &labels(&[("env", "dev")])));
        assert!(!group("a", None).selects("a", &prod));
    }

    #[test]
    fn the_group_side_proposes_and_the_owner_side_grants() {
        let g = group("a", None);
        let c = ClusterId::new();
        let proposed = NewClusterGroupMember::add(&g, c, "b", "a").expect("proposal");
        assert_eq!(proposed.state, MemberState::Proposed);
        let granted = NewClusterGroupMember::add(&g, c, "b", "b").expect("grant");
        assert_eq!(granted.state, MemberState::Accepted);
        let own = NewClusterGroupMember::add(&g, c, "a", "a").expect("own cluster");
        assert_eq!(own.state, MemberState::Accepted);
        assert_eq!(
            NewClusterGroupMember::add(&g, c, "b", "c"),
            Err(MembershipError::NotAParty("c".into()))
        );
    }

    #[test]
    fn only_the_clusters_project_accepts_a_proposal() {
        let m = ClusterGroupMember {
            group: ClusterGroupId::new(),
            cluster: ClusterId::new(),
            cluster_project_id: "b".into(),
            proposed_by: "a".into(),
            state: MemberState::Proposed,
            consented_at: None,
            created_at: Utc::now(),
        };
        assert_eq!(m.accept("a"), Err(MembershipError::NotTheOwner("b".into())));
        assert_eq!(m.accept("b"), Ok(true));
        let accepted = ClusterGroupMember {
            state: MemberState::Accepted,
            ..m.clone()
        };
        assert_eq!(accepted.accept("b"), Ok(false));
        assert!(m.removable_by("a", "a") && m.removable_by("b", "a"));
        assert!(!m.removable_by("c", "a"));
    }

    #[test]
    fn read_allows_reads_and_write_allows_everything() {
        use ClusterAction::*;
        for a in [Get, List, Watch, Export, ClusterProfile] {
            assert!(
                GroupRight::Read.allows(a) && GroupRight::Write.allows(a),
                "{a:?}"
            );
        }
        for a in [Update, Label, Annotate, Delete, FederationJoin] {
            assert!(!GroupRight::Read.allows(a), "{a:?}");
            assert!(GroupRight::Write.allows(a), "{a:?}");
        }
    }

    #[test]
    fn rights_add_up_over_bindings_and_nothing_is_granted_by_default() {
        let roles = vec!["member".to_string()];
        let caller = Grantee {
            project_id: "b",
            roles: &roles,
        };
        assert_eq!(right_over(caller, &[]), None);
        let read = binding("b", None, GroupRight::Read);
        let write_for_admins = binding("b", Some(&["admin"]), GroupRight::Write);
        let write_for_members = binding("b", Some(&["Member"]), GroupRight::Write);
        let other_project = binding("c", None, GroupRight::Write);
        assert_eq!(
            right_over(caller, [&read, &write_for_admins, &other_project]),
            Some(GroupRight::Read)
        );
        assert_eq!(
            right_over(caller, [&read, &write_for_members]),
            Some(GroupRight::Write)
        );
        assert_eq!(
            right_over(caller, [&other_project, &write_for_admins]),
            None
        );
    }

    #[test]
    fn binding_roles_are_sorted_without_repeats_and_never_empty() {
        assert_eq!(binding_roles(None), Ok(None));
        assert_eq!(
            binding_roles(Some(vec!["reader".into(), "Admin".into(), "READER".into()])),
            Ok(Some(vec!["Admin".into(), "reader".into()]))
        );
        assert!(binding_roles(Some(vec![])).is_err());
        assert!(binding_roles(Some(vec![" ".into()])).is_err());
    }
}
