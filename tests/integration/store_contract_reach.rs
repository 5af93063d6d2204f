//! The store contract of a registry page through cluster groups: what a caller's page across
//! namespaces (and in one namespace) holds is its own project's clusters and those its bound
//! groups reach, in (project, registry name) order, page after page, against PostgreSQL and
//! SQLite. The reference is read another way: every cluster in order, kept when it is the
//! caller's own or among the clusters `clusters_through_groups` grants it.

use std::collections::BTreeSet;
use std::sync::Arc;

use fleetyard::domain::cluster_group::{
    ClusterGroup, Grantee, GroupName, GroupRight, GroupSelector, NewClusterGroup,
    NewClusterGroupBinding, NewClusterGroupMember,
};
use fleetyard::domain::{ClusterGroupBindingId, ClusterGroupId, ClusterId, TemplateId};
use fleetyard::store::{RegistryPage, Store, Write};

use crate::helpers::{open_store, Backend};
use crate::store_contract::{new_template, registry_cluster, spec};

/// Runs one contract test body against both backends.
macro_rules! contract {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn on_postgres() {
                let (store, _db) = open_store(Backend::Postgres).await;
                ($body)(store).await;
            }
            #[tokio::test]
            async fn on_sqlite() {
                let (store, _db) = open_store(Backend::Sqlite).await;
                ($body)(store).await;
            }
        }
    };
}

const ME: &str = "p-me";

async fn cluster(
    store: &Arc<dyn Store>,
    t: TemplateId,
    project: &str,
    name: &str,
    team: &str,
) -> ClusterId {
    let uuid = ClusterId::new();
    let mut c = registry_cluster(project, t, uuid, name, false);
    c.registry.labels = [("team".to_string(), team.to_string())].into();
    store
        .commit(&[Write::InsertCluster(Box::new(c))])
        .await
        .expect("cluster");
    uuid
}

async fn group(
    store: &Arc<dyn Store>,
    project: &str,
    name: &str,
    selector: Option<&str>,
) -> ClusterGroup {
    let uuid = ClusterGroupId::new();
    store
        .commit(&[Write::InsertClusterGroup(Box::new(NewClusterGroup {
            uuid,
            project_id: project.into(),
            user_id: "u".into(),
            name: GroupName::parse(name).expect("name"),
            description: None,
            selector: selector.map(|s| GroupSelector::parse(s).expect("selector")),
        }))])
        .await
        .expect("group");
    store
        .find_cluster_group(&uuid)
        .await
        .expect("read")
        .expect("group")
}

async fn bind(store: &Arc<dyn Store>, g: &ClusterGroup, grantee: &str, roles: Option<&[&str]>) {
    store
        .commit(&[Write::InsertClusterGroupBinding(Box::new(
            NewClusterGroupBinding {
                uuid: ClusterGroupBindingId::new(),
                group: g.uuid,
                project_id: g.project_id.clone(),
                grantee_project_id: grantee.into(),
                roles: roles.map(|r| r.iter().map(|s| s.to_string()).collect()),
                right: GroupRight::Read,
            },
        ))])
        .await
        .expect("binding");
}

/// `actor` adds the cluster of `owner` to the group (accepted when the owner adds it,
/// proposed when the group's project does).
async fn add_member(
    store: &Arc<dyn Store>,
    g: &ClusterGroup,
    cluster: ClusterId,
    owner: &str,
    actor: &str,
) {
    let m = NewClusterGroupMember::add(g, cluster, owner, actor).expect("a party");
    store
        .commit(&[Write::InsertClusterGroupMember(Box::new(m))])
        .await
        .expect("member");
}

/// A small fleet of six projects around `ME`, each cluster named out of its insertion order:
/// a selecting group of p-a bound to `ME` (its team-x clusters), a group of p-c holding one of
/// its own clusters and, accepted by their owners, one of p-0's and one of p-e's (p-e owns no
/// group), a proposal of p-d's cluster never accepted, a group bound to `ME` only for a role
/// the caller lacks, and a group bound to another project.
async fn fleet(store: &Arc<dyn Store>) {
    let t = store
        .create_cluster_template(&new_template("a", spec("t")), &[])
        .await
        .expect("template")
        .uuid;
    let mut made = std::collections::BTreeMap::new();
    for project in ["p-0", "p-a", "p-b", "p-c", "p-d", "p-e", ME] {
        for (i, name) in ["m", "c", "x", "a", "q", "f"].iter().enumerate() {
            let team = if i % 2 == 0 { "x" } else { "y" };
            let id = cluster(store, t, project, &format!("{name}-{project}"), team).await;
            made.insert((project, i), id);
        }
    }
    let sel = group(store, "p-a", "team-x", Some("team=x")).await;
    bind(store, &sel, ME, None).await;
    let held = group(store, "p-c", "held", None).await;
    add_member(store, &held, made[&("p-c", 1)], "p-c", "p-c").await;
    add_member(store, &held, made[&("p-0", 3)], "p-0", "p-0").await;
    add_member(store, &held, made[&("p-e", 5)], "p-e", "p-e").await;
    add_member(store, &held, made[&("p-d", 0)], "p-d", "p-c").await;
    bind(store, &held, ME, None).await;
    let roles = group(store, "p-b", "admins-only", Some("team=y")).await;
    bind(store, &roles, ME, Some(&["admin"])).await;
    let other = group(store, "p-d", "elsewhere", Some("team=x")).await;
    bind(store, &other, "p-0", None).await;
}

/// The caller's bound groups as a request computes them: the bindings to its project that
/// apply to its roles.
async fn bound_groups(store: &Arc<dyn Store>, caller: Grantee<'_>) -> Vec<ClusterGroupId> {
    let groups: BTreeSet<ClusterGroupId> = store
        .cluster_group_bindings_to(caller.project_id)
        .await
        .expect("bindings")
        .iter()
        .filter(|b| b.applies_to(caller))
        .map(|b| b.group)
        .collect();
    groups.into_iter().collect()
}

/// Every cluster in (project, registry name) order that is the caller's own or that the
/// groups grant it, optionally of one project: (project, registry name) pairs.
async fn reference(
    store: &Arc<dyn Store>,
    caller: Grantee<'_>,
    project: Option<&str>,
) -> Vec<(String, String)> {
    let granted: BTreeSet<ClusterId> = store
        .clusters_through_groups(caller)
        .await
        .expect("through groups")
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    let all = store
        .registry_page(&RegistryPage {
            project: project.map(str::to_string),
            after: None,
            limit: 1_000,
            shared: None,
        })
        .await
        .expect("every cluster");
    all.into_iter()
        .filter(|e| e.cluster.project_id == caller.project_id || granted.contains(&e.cluster.uuid))
        .map(|e| (e.cluster.project_id, e.cluster.registry.name))
        .collect()
}

/// The caller's view read page by page of `limit`, each page continuing after the last.
async fn paged(
    store: &Arc<dyn Store>,
    groups: &[ClusterGroupId],
    project: Option<&str>,
    limit: u32,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .registry_page(&RegistryPage {
                project: project.map(str::to_string),
                after: after.clone(),
                limit,
                shared: Some((ME.to_string(), groups.to_vec())),
            })
            .await
            .expect("page");
        let n = page.len();
        for e in page {
            let key = (e.cluster.project_id, e.cluster.registry.name);
            after = Some(key.clone());
            out.push(key);
        }
        if n < limit as usize {
            return out;
        }
    }
}

contract!(
    a_page_through_groups_holds_the_own_and_reached_clusters_in_order,
    |store: Arc<dyn Store>| async move {
        fleet(&store).await;
        let roles = vec!["member".to_string()];
        let caller = Grantee {
            project_id: ME,
            roles: &roles,
        };
        let groups = bound_groups(&store, caller).await;
        assert_eq!(groups.len(), 2, "the role-bound group does not apply");
        let want = reference(&store, caller, None).await;
        // own 6, p-a's team-x 3, p-c's held one, p-0's and p-e's accepted members
        assert_eq!(want.len(), 12, "{want:?}");
        let projects: BTreeSet<&str> = want.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            projects,
            ["p-0", "p-a", "p-c", "p-e", ME].into_iter().collect(),
            "no proposed member (p-d), no role-bound group (p-b)"
        );
        assert!(want.contains(&("p-0".into(), "a-p-0".into())));
        assert!(want.contains(&("p-e".into(), "f-p-e".into())));
        for limit in [1, 2, 5, 500] {
            assert_eq!(
                paged(&store, &groups, None, limit).await,
                want,
                "limit {limit}"
            );
        }
        for ns in ["p-0", "p-a", "p-b", "p-d", "p-e", ME] {
            let want = reference(&store, caller, Some(ns)).await;
            for limit in [1, 3, 500] {
                assert_eq!(
                    paged(&store, &groups, Some(ns), limit).await,
                    want,
                    "namespace {ns}, limit {limit}"
                );
            }
        }
        // Without groups, only the caller's own project.
        let own = paged(&store, &[], None, 4).await;
        assert_eq!(
            own,
            want.iter()
                .filter(|(p, _)| p == ME)
                .cloned()
                .collect::<Vec<_>>()
        );
    }
);
