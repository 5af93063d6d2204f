//! The store contract of cluster groups: groups, consented memberships, selector matches,
//! bindings and the rights they add up to, against PostgreSQL and SQLite.

use std::sync::Arc;

use fleetyard::domain::cluster_group::{
    ClusterGroup, Grantee, GroupName, GroupRight, GroupSelector, MemberState, NewClusterGroup,
    NewClusterGroupBinding, NewClusterGroupMember,
};
use fleetyard::domain::{ClusterGroupBindingId, ClusterGroupId, ClusterId, Ident, TemplateId};
use fleetyard::store::{SortDir, Store, StoreError, Write};

use crate::helpers::{open_store, Backend};
use crate::store_contract::{new_template, page, registry_cluster, scope, spec};

/// Runs one contract test body against both backends.
macro_rules! contract {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn on_postgres() {
                let (store, db) = open_store(Backend::Postgres).await;
                ($body)(store, db.url.clone()).await;
            }
            #[tokio::test]
            async fn on_sqlite() {
                let (store, db) = open_store(Backend::Sqlite).await;
                ($body)(store, db.url.clone()).await;
            }
        }
    };
}

async fn template(store: &Arc<dyn Store>) -> TemplateId {
    store
        .create_cluster_template(&new_template("a", spec("t")), &[])
        .await
        .expect("template")
        .uuid
}

/// A cluster of `project` named `name` with these registry labels.
async fn cluster(
    store: &Arc<dyn Store>,
    t: TemplateId,
    project: &str,
    name: &str,
    labels: &[(&str, &str)],
) -> ClusterId {
    let uuid = ClusterId::new();
    let mut c = registry_cluster(project, t, uuid, name, false);
    c.registry.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    store
        .commit(&[Write::InsertCluster(Box::new(c))])
        .await
        .expect("cluster");
    uuid
}

/// Sets a cluster's registry labels through the cluster's own update.
async fn relabel(store: &Arc<dyn Store>, project: &str, uuid: ClusterId, labels: &[(&str, &str)]) {
    let mut c = store
        .get_cluster(&scope(project), &Ident::Uuid(uuid.0))
        .await
        .expect("cluster");
    c.registry.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    store
        .commit(&[Write::update_cluster(&c)])
        .await
        .expect("relabelled");
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

async fn bind(
    store: &Arc<dyn Store>,
    g: &ClusterGroup,
    grantee: &str,
    roles: Option<&[&str]>,
    right: GroupRight,
) -> Result<ClusterGroupBindingId, StoreError> {
    let uuid = ClusterGroupBindingId::new();
    store
        .commit(&[Write::InsertClusterGroupBinding(Box::new(
            NewClusterGroupBinding {
                uuid,
                group: g.uuid,
                project_id: g.project_id.clone(),
                grantee_project_id: grantee.into(),
                roles: roles.map(|r| r.iter().map(|s| s.to_string()).collect()),
                right,
            },
        ))])
        .await
        .map(|_| uuid)
}

/// `actor` adds the cluster of `owner` to the group, in the state the domain decides.
async fn add_member(
    store: &Arc<dyn Store>,
    g: &ClusterGroup,
    cluster: ClusterId,
    owner: &str,
    actor: &str,
) -> Result<(), StoreError> {
    let m = NewClusterGroupMember::add(g, cluster, owner, actor).expect("a party");
    store
        .commit(&[Write::InsertClusterGroupMember(Box::new(m))])
        .await
}

async fn seen_by(
    store: &Arc<dyn Store>,
    project: &str,
    roles: &[&str],
) -> Vec<(ClusterId, GroupRight)> {
    let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
    store
        .clusters_through_groups(Grantee {
            project_id: project,
            roles: &roles,
        })
        .await
        .expect("through groups")
}

async fn right_of(
    store: &Arc<dyn Store>,
    project: &str,
    roles: &[&str],
    cluster: ClusterId,
) -> Option<GroupRight> {
    let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
    store
        .group_right_over_cluster(
            Grantee {
                project_id: project,
                roles: &roles,
            },
            &cluster,
        )
        .await
        .expect("right")
}

fn sorted(mut v: Vec<ClusterId>) -> Vec<ClusterId> {
    v.sort();
    v
}

contract!(
    a_group_reads_back_by_uuid_and_name_only_in_its_project_and_its_name_is_unique_there,
    |store: Arc<dyn Store>, _url: String| async move {
        let g = group(&store, "a", "prod", Some("env=prod")).await;
        assert_eq!(g.project_id, "a");
        assert_eq!(g.name.as_str(), "prod");
        assert_eq!(g.selector.as_ref().map(|s| s.as_str()), Some("env=prod"));
        assert_eq!(g.version, 0);
        for ident in [Ident::Uuid(g.uuid.0), Ident::Name("prod".into())] {
            assert_eq!(
                store
                    .get_cluster_group(&scope("a"), &ident)
                    .await
                    .expect("own"),
                g
            );
            assert!(matches!(
                store.get_cluster_group(&scope("b"), &ident).await,
                Err(StoreError::NotFound)
            ));
        }
        let taken = store
            .commit(&[Write::InsertClusterGroup(Box::new(NewClusterGroup {
                uuid: ClusterGroupId::new(),
                project_id: "a".into(),
                user_id: "u".into(),
                name: GroupName::parse("prod").expect("name"),
                description: None,
                selector: None,
            }))])
            .await;
        assert!(
            matches!(&taken, Err(e) if e.is_constraint("uniq_cluster_group0project_id0name")),
            "{taken:?}"
        );
        let other = group(&store, "b", "prod", None).await;
        let second = group(&store, "a", "staging", None).await;
        let listed = store
            .list_cluster_groups(&scope("a"), &page(10, None, "name", SortDir::Asc))
            .await
            .expect("list");
        assert_eq!(listed, vec![g.clone(), second.clone()]);
        let after = store
            .list_cluster_groups(&scope("a"), &page(10, Some(g.uuid.0), "name", SortDir::Asc))
            .await
            .expect("next page");
        assert_eq!(after, vec![second]);

        let mut changed = g.clone();
        changed.selector = None;
        store
            .commit(&[Write::UpdateClusterGroup(Box::new(changed.clone()))])
            .await
            .expect("update");
        let stale = store
            .commit(&[Write::UpdateClusterGroup(Box::new(changed))])
            .await;
        assert!(matches!(stale, Err(StoreError::Stale)), "{stale:?}");
        let updated = store
            .get_cluster_group(&scope("a"), &Ident::Uuid(g.uuid.0))
            .await
            .expect("updated");
        assert_eq!((updated.selector, updated.version), (None, 1));
        assert!(updated.updated_at.is_some());

        store
            .commit(&[Write::DeleteClusterGroup { uuid: g.uuid }])
            .await
            .expect("delete");
        assert!(matches!(
            store
                .get_cluster_group(&scope("a"), &Ident::Uuid(g.uuid.0))
                .await,
            Err(StoreError::NotFound)
        ));
        let again = store
            .commit(&[Write::DeleteClusterGroup { uuid: g.uuid }])
            .await;
        assert!(matches!(again, Err(StoreError::NotFound)), "{again:?}");
        assert_eq!(
            store.find_cluster_group(&other.uuid).await.expect("b's"),
            Some(other)
        );
    }
);

contract!(
    a_cluster_of_another_project_is_a_member_only_once_its_owner_accepts,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = template(&store).await;
        let theirs = cluster(&store, t, "b", "theirs", &[]).await;
        let g = group(&store, "a", "shared", None).await;
        bind(&store, &g, "c", None, GroupRight::Read)
            .await
            .expect("binding");

        add_member(&store, &g, theirs, "b", "a")
            .await
            .expect("proposed");
        let proposed = store
            .cluster_group_member(&g.uuid, &theirs)
            .await
            .expect("read")
            .expect("membership");
        assert_eq!(proposed.state, MemberState::Proposed);
        assert_eq!(proposed.consented_at, None);
        assert_eq!(
            (
                proposed.cluster_project_id.as_str(),
                proposed.proposed_by.as_str()
            ),
            ("b", "a")
        );
        assert_eq!(
            store.cluster_group_proposals("b").await.expect("proposals"),
            vec![proposed.clone()]
        );
        assert!(store
            .cluster_group_proposals("a")
            .await
            .expect("none")
            .is_empty());
        assert!(
            seen_by(&store, "c", &[]).await.is_empty(),
            "a proposal grants nothing"
        );
        assert_eq!(right_of(&store, "c", &[], theirs).await, None);

        store
            .commit(&[Write::AcceptClusterGroupMember {
                group: g.uuid,
                cluster: theirs,
            }])
            .await
            .expect("accepted");
        let accepted = store
            .cluster_group_member(&g.uuid, &theirs)
            .await
            .expect("read")
            .expect("membership");
        assert_eq!(accepted.state, MemberState::Accepted);
        assert!(accepted.consented_at.is_some());
        assert!(store
            .cluster_group_proposals("b")
            .await
            .expect("none")
            .is_empty());
        assert_eq!(
            seen_by(&store, "c", &[]).await,
            vec![(theirs, GroupRight::Read)]
        );
        assert_eq!(
            right_of(&store, "c", &[], theirs).await,
            Some(GroupRight::Read)
        );

        // The owner withdraws its consent by removing the membership.
        store
            .commit(&[Write::DeleteClusterGroupMember {
                group: g.uuid,
                cluster: theirs,
            }])
            .await
            .expect("removed");
        assert!(seen_by(&store, "c", &[]).await.is_empty());
        let gone = store
            .commit(&[Write::AcceptClusterGroupMember {
                group: g.uuid,
                cluster: theirs,
            }])
            .await;
        assert!(matches!(gone, Err(StoreError::NotFound)), "{gone:?}");

        // The owner grants the membership itself: accepted at once.
        add_member(&store, &g, theirs, "b", "b")
            .await
            .expect("granted");
        let granted = store.cluster_group_members(&g.uuid).await.expect("members");
        assert_eq!(granted.len(), 1);
        assert_eq!(granted[0].state, MemberState::Accepted);
        let twice = add_member(&store, &g, theirs, "b", "b").await;
        assert!(
            matches!(&twice, Err(e) if e.is_constraint("uniq_cluster_group_member0group_id0cluster_id")),
            "{twice:?}"
        );
    }
);

contract!(
    a_membership_claiming_the_wrong_owner_or_a_missing_cluster_is_refused,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = template(&store).await;
        let theirs = cluster(&store, t, "b", "theirs", &[]).await;
        let g = group(&store, "a", "shared", None).await;
        bind(&store, &g, "a", None, GroupRight::Write)
            .await
            .expect("binding");
        // Project a says the cluster is its own, so that its add would be accepted at once.
        let claimed = add_member(&store, &g, theirs, "a", "a").await;
        assert!(matches!(claimed, Err(StoreError::NotFound)), "{claimed:?}");
        let missing = add_member(&store, &g, ClusterId::new(), "a", "a").await;
        assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
        assert!(store
            .cluster_group_members(&g.uuid)
            .await
            .expect("none")
            .is_empty());
        assert!(seen_by(&store, "a", &[]).await.is_empty());
    }
);

contract!(
    selector_matches_follow_labels_and_selectors_and_stay_in_the_groups_project,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = template(&store).await;
        let prod = cluster(&store, t, "a", "prod", &[("env", "prod")]).await;
        let dev = cluster(&store, t, "a", "dev", &[("env", "dev")]).await;
        let elsewhere = cluster(&store, t, "b", "prod", &[("env", "prod")]).await;
        let g = group(&store, "a", "prod", Some("env=prod")).await;
        assert_eq!(
            store.cluster_group_matches(&g.uuid).await.expect("matches"),
            vec![prod]
        );

        relabel(&store, "a", dev, &[("env", "prod")]).await;
        let later = cluster(&store, t, "a", "later", &[("env", "prod")]).await;
        assert_eq!(
            store.cluster_group_matches(&g.uuid).await.expect("matches"),
            sorted(vec![prod, dev, later])
        );
        relabel(&store, "a", prod, &[("env", "retired")]).await;
        // A status-only update leaves the matches as they are.
        relabel(&store, "a", later, &[("env", "prod")]).await;
        assert_eq!(
            store.cluster_group_matches(&g.uuid).await.expect("matches"),
            sorted(vec![dev, later])
        );

        let mut g2 = store
            .find_cluster_group(&g.uuid)
            .await
            .expect("read")
            .expect("group");
        g2.selector = Some(GroupSelector::parse("env in (retired)").expect("selector"));
        store
            .commit(&[Write::UpdateClusterGroup(Box::new(g2))])
            .await
            .expect("update");
        assert_eq!(
            store.cluster_group_matches(&g.uuid).await.expect("matches"),
            vec![prod]
        );
        bind(&store, &g, "c", None, GroupRight::Read)
            .await
            .expect("binding");
        let seen = seen_by(&store, "c", &[]).await;
        assert_eq!(seen, vec![(prod, GroupRight::Read)]);
        assert!(!seen.iter().any(|(c, _)| *c == elsewhere));
        assert_eq!(right_of(&store, "c", &[], elsewhere).await, None);
    }
);

contract!(
    deleting_a_cluster_or_a_group_removes_its_memberships_matches_and_bindings,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = template(&store).await;
        let matched = cluster(&store, t, "a", "matched", &[("env", "prod")]).await;
        let member = cluster(&store, t, "b", "member", &[]).await;
        let g = group(&store, "a", "prod", Some("env=prod")).await;
        add_member(&store, &g, member, "b", "b")
            .await
            .expect("granted");
        bind(&store, &g, "c", None, GroupRight::Write)
            .await
            .expect("binding");
        assert_eq!(seen_by(&store, "c", &[]).await, {
            let mut v = vec![(matched, GroupRight::Write), (member, GroupRight::Write)];
            v.sort();
            v
        });

        for uuid in [matched, member] {
            store
                .commit(&[Write::DeleteCluster { uuid }])
                .await
                .expect("cluster deleted");
        }
        assert!(store
            .cluster_group_matches(&g.uuid)
            .await
            .expect("none")
            .is_empty());
        assert!(store
            .cluster_group_members(&g.uuid)
            .await
            .expect("none")
            .is_empty());
        assert!(seen_by(&store, "c", &[]).await.is_empty());

        let kept = cluster(&store, t, "a", "kept", &[("env", "prod")]).await;
        assert_eq!(
            seen_by(&store, "c", &[]).await,
            vec![(kept, GroupRight::Write)]
        );
        store
            .commit(&[Write::DeleteClusterGroup { uuid: g.uuid }])
            .await
            .expect("group deleted");
        assert!(store
            .cluster_group_bindings_to("c")
            .await
            .expect("none")
            .is_empty());
        assert!(store
            .cluster_group_matches(&g.uuid)
            .await
            .expect("none")
            .is_empty());
        assert!(seen_by(&store, "c", &[]).await.is_empty());
        assert!(store
            .get_cluster(&scope("a"), &Ident::Uuid(kept.0))
            .await
            .is_ok());
    }
);

contract!(
    rights_add_up_over_overlapping_bindings_and_reach_no_other_project,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = template(&store).await;
        let both = cluster(&store, t, "a", "both", &[("tier", "gold")]).await;
        let only_read = cluster(&store, t, "a", "only-read", &[]).await;
        let unshared = cluster(&store, t, "a", "unshared", &[("tier", "gold")]).await;
        let readers = group(&store, "a", "readers", None).await;
        let gold = group(&store, "a", "gold", Some("tier=gold,!private")).await;
        relabel(&store, "a", unshared, &[("tier", "gold"), ("private", "")]).await;
        for c in [both, only_read] {
            add_member(&store, &readers, c, "a", "a")
                .await
                .expect("own");
        }
        bind(&store, &readers, "b", None, GroupRight::Read)
            .await
            .expect("read for b");
        bind(&store, &gold, "b", Some(&["admin"]), GroupRight::Write)
            .await
            .expect("write for b's admins");
        let twice = bind(&store, &gold, "b", None, GroupRight::Read).await;
        assert!(
            matches!(&twice, Err(e) if e.is_constraint("uniq_cluster_group_binding0group_id0grantee_project_id")),
            "{twice:?}"
        );

        let mut expected_member = vec![(both, GroupRight::Read), (only_read, GroupRight::Read)];
        expected_member.sort();
        assert_eq!(seen_by(&store, "b", &["member"]).await, expected_member);
        let mut expected_admin = vec![(both, GroupRight::Write), (only_read, GroupRight::Read)];
        expected_admin.sort();
        assert_eq!(
            seen_by(&store, "b", &["member", "Admin"]).await,
            expected_admin
        );
        assert_eq!(
            right_of(&store, "b", &["admin"], both).await,
            Some(GroupRight::Write)
        );
        assert_eq!(
            right_of(&store, "b", &["member"], both).await,
            Some(GroupRight::Read)
        );
        assert_eq!(right_of(&store, "b", &["admin"], unshared).await, None);

        // Nothing by default: not the owner (its own rights are not the groups'), not a third
        // project.
        assert!(seen_by(&store, "a", &["admin"]).await.is_empty());
        assert!(seen_by(&store, "c", &["admin"]).await.is_empty());
        assert_eq!(right_of(&store, "c", &["admin"], both).await, None);

        let of_group = store
            .cluster_group_bindings(&gold.uuid)
            .await
            .expect("bindings");
        assert_eq!(of_group.len(), 1);
        assert_eq!(of_group[0].roles, Some(vec!["admin".to_string()]));
        assert_eq!(of_group[0].right, GroupRight::Write);
        assert_eq!(of_group[0].grantee_project_id, "b");
        let to_b = store
            .cluster_group_bindings_to("b")
            .await
            .expect("bindings");
        assert_eq!(to_b.len(), 2);
        assert!(store
            .cluster_group_bindings_to("c")
            .await
            .expect("none")
            .is_empty());

        store
            .commit(&[Write::DeleteClusterGroupBinding {
                uuid: of_group[0].uuid,
            }])
            .await
            .expect("unbound");
        assert_eq!(
            right_of(&store, "b", &["admin"], both).await,
            Some(GroupRight::Read)
        );
        let again = store
            .commit(&[Write::DeleteClusterGroupBinding {
                uuid: of_group[0].uuid,
            }])
            .await;
        assert!(matches!(again, Err(StoreError::NotFound)), "{again:?}");
    }
);

/// Runs one statement with no binds on either backend; the database's error text if refused.
async fn try_exec(url: &str, statement: &str) -> Result<(), String> {
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        sqlx::query(statement).execute(&pool).await.map(|_| ())
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("pg");
        sqlx::query(statement).execute(&pool).await.map(|_| ())
    }
    .map_err(|e| e.to_string())
}

contract!(
    the_database_refuses_an_accepted_membership_without_a_consent,
    |store: Arc<dyn Store>, url: String| async move {
        let t = template(&store).await;
        let theirs = cluster(&store, t, "b", "theirs", &[]).await;
        let g = group(&store, "a", "shared", None).await;
        let row = |state: &str, consented: &str| {
            format!(
                "INSERT INTO cluster_group_member (group_id, cluster_id, cluster_project_id, \
                 state, proposed_by, consented_at, created_at) VALUES ('{}', '{theirs}', 'b', \
                 '{state}', 'a', {consented}, CURRENT_TIMESTAMP)",
                g.uuid
            )
        };
        for (state, consented) in [
            ("Accepted", "NULL"),
            ("Proposed", "CURRENT_TIMESTAMP"),
            ("Granted", "CURRENT_TIMESTAMP"),
        ] {
            let refused = try_exec(&url, &row(state, consented)).await;
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|e| e.contains("ck_cluster_group_member_")),
                "{state} {consented}: {refused:?}"
            );
        }
        assert!(store
            .cluster_group_members(&g.uuid)
            .await
            .expect("none")
            .is_empty());
        try_exec(&url, &row("Accepted", "CURRENT_TIMESTAMP"))
            .await
            .expect("a consented row");
        assert_eq!(seen_by(&store, "a", &[]).await, vec![]);
    }
);

contract!(
    members_come_with_their_clusters_registry_names_and_bindings_with_their_groups_names,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = template(&store).await;
        let own = cluster(&store, t, "pa", "own-one", &[]).await;
        let other = cluster(&store, t, "pb", "their-one", &[]).await;
        let g1 = group(&store, "pa", "first", None).await;
        let g2 = group(&store, "pa", "second", None).await;
        let g3 = group(&store, "pc", "elsewhere", None).await;
        add_member(&store, &g1, own, "pa", "pa").await.expect("own");
        add_member(&store, &g1, other, "pb", "pa")
            .await
            .expect("proposed");
        add_member(&store, &g2, other, "pb", "pb")
            .await
            .expect("granted");
        let named = store
            .cluster_group_members_named(&[g1.uuid, g2.uuid])
            .await
            .expect("members");
        let mut got: Vec<(ClusterGroupId, String, MemberState)> = named
            .iter()
            .map(|(m, n)| (m.group, n.clone(), m.state))
            .collect();
        got.sort_by(|a, b| (a.0.to_string(), &a.1).cmp(&(b.0.to_string(), &b.1)));
        let mut want = vec![
            (g1.uuid, "own-one".to_string(), MemberState::Accepted),
            (g1.uuid, "their-one".to_string(), MemberState::Proposed),
            (g2.uuid, "their-one".to_string(), MemberState::Accepted),
        ];
        want.sort_by(|a, b| (a.0.to_string(), &a.1).cmp(&(b.0.to_string(), &b.1)));
        assert_eq!(got, want);
        assert!(store
            .cluster_group_members_named(&[])
            .await
            .expect("none")
            .is_empty());

        bind(&store, &g2, "pz", None, GroupRight::Read)
            .await
            .expect("b1");
        bind(&store, &g1, "py", Some(&["member"]), GroupRight::Write)
            .await
            .expect("b2");
        bind(&store, &g3, "pa", None, GroupRight::Read)
            .await
            .expect("b3");
        let of = |all: bool| {
            let store = store.clone();
            async move {
                let mut s = scope("pa");
                s.all_projects = all;
                store
                    .cluster_group_bindings_in(&s)
                    .await
                    .expect("bindings")
                    .into_iter()
                    .map(|(b, g)| (b.project_id, g, b.grantee_project_id, b.right))
                    .collect::<Vec<_>>()
            }
        };
        let row = |p: &str, g: &str, to: &str, r: GroupRight| {
            (p.to_string(), g.to_string(), to.to_string(), r)
        };
        assert_eq!(
            of(false).await,
            vec![
                row("pa", "first", "py", GroupRight::Write),
                row("pa", "second", "pz", GroupRight::Read)
            ]
        );
        assert_eq!(
            of(true).await,
            vec![
                row("pa", "first", "py", GroupRight::Write),
                row("pa", "second", "pz", GroupRight::Read),
                row("pc", "elsewhere", "pa", GroupRight::Read)
            ]
        );
    }
);
