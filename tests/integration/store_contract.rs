//! The store contract: the same tests against PostgreSQL and SQLite.

use std::sync::Arc;

use fleetyard::domain::cluster::ClusterSummary;
use fleetyard::domain::labels::Labels;
use fleetyard::domain::names::FederationName;
use fleetyard::domain::template::{NewClusterTemplate, TemplateSpec};
use fleetyard::domain::{ClusterId, FederationId, Ident, TemplateId};
use fleetyard::store::{ItemCount, NewEvent, PageRequest, Scope, SortDir, Store, StoreError};
use serde_json::json;

use crate::helpers::{open_store, Backend};

pub(crate) fn spec(name: &str) -> TemplateSpec {
    TemplateSpec {
        name: name.into(),
        coe: "kubernetes".into(),
        image_id: "img".into(),
        flavor_id: None,
        master_flavor_id: None,
        dns_nameserver: None,
        keypair_id: None,
        external_network_id: None,
        fixed_network: None,
        fixed_subnet: None,
        network_driver: Some("flannel".into()),
        volume_driver: None,
        apiserver_port: None,
        docker_volume_size: None,
        docker_storage_driver: None,
        cluster_distro: None,
        http_proxy: None,
        https_proxy: None,
        no_proxy: None,
        insecure_registry: None,
        registry_enabled: false,
        tls_disabled: false,
        public: false,
        master_lb_enabled: false,
        floating_ip_enabled: true,
        hidden: false,
        server_type: "vm".into(),
        labels: Labels::new(),
        tags: None,
        driver: Some("fake".into()),
    }
}

pub(crate) fn new_template(project: &str, s: TemplateSpec) -> NewClusterTemplate {
    NewClusterTemplate {
        uuid: TemplateId::new(),
        project_id: project.into(),
        user_id: "u".into(),
        spec: s,
    }
}

fn event(uuid: &str) -> NewEvent {
    NewEvent {
        message_id: uuid::Uuid::new_v4(),
        resource_type: "cluster_template".into(),
        resource_uuid: uuid.into(),
        event_type: "magnum.cluster_template.create".into(),
        priority: "INFO".into(),
        message: json!({"event_type": "magnum.cluster_template.create"}),
    }
}

pub(crate) fn scope(project: &str) -> Scope {
    Scope {
        project_id: project.into(),
        all_projects: false,
    }
}

pub(crate) fn page(limit: u32, marker: Option<uuid::Uuid>, key: &str, dir: SortDir) -> PageRequest {
    PageRequest {
        limit,
        marker,
        sort_key: key.into(),
        sort_dir: dir,
    }
}

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

contract!(
    migrations_report_their_version,
    |store: Arc<dyn Store>, _url: String| async move {
        let v = store.schema_version().await.expect("version");
        assert_eq!(v, Some(20261128000025));
        store.migrate().await.expect("migrating twice is a no-op");
    }
);

contract!(
    a_created_template_reads_back_equal,
    |store: Arc<dyn Store>, _url: String| async move {
        let mut s = spec("t1");
        s.labels.insert("kube_tag".into(), "v1.30.1".into());
        s.apiserver_port = Some(6443);
        s.public = true;
        let new = new_template("p1", s.clone());
        let created = store
            .create_cluster_template(&new, &[])
            .await
            .expect("created");
        assert_eq!(created.spec, s);
        assert_eq!(created.uuid, new.uuid);
        assert_eq!(created.version, 0);
        let by_uuid = store
            .get_cluster_template(&scope("p1"), &Ident::Uuid(new.uuid.0))
            .await
            .expect("by uuid");
        assert_eq!(by_uuid, created);
        let by_name = store
            .get_cluster_template(&scope("p1"), &Ident::Name("t1".into()))
            .await
            .expect("by name");
        assert_eq!(by_name, created);
    }
);

contract!(
    a_duplicate_uuid_is_reported_by_constraint_name,
    |store: Arc<dyn Store>, _url: String| async move {
        let new = new_template("p1", spec("a"));
        store
            .create_cluster_template(&new, &[])
            .await
            .expect("first");
        let err = store
            .create_cluster_template(&new, &[])
            .await
            .expect_err("duplicate");
        assert!(err.is_constraint("uniq_cluster_template0uuid"), "{err:?}");
    }
);

contract!(
    private_templates_are_invisible_to_other_projects,
    |store: Arc<dyn Store>, _url: String| async move {
        let private = store
            .create_cluster_template(&new_template("p1", spec("private")), &[])
            .await
            .expect("p");
        let mut pub_spec = spec("shared");
        pub_spec.public = true;
        let public = store
            .create_cluster_template(&new_template("p1", pub_spec.clone()), &[])
            .await
            .expect("pub");
        let mut hidden_spec = pub_spec.clone();
        hidden_spec.name = "hidden".into();
        hidden_spec.hidden = true;
        store
            .create_cluster_template(&new_template("p1", hidden_spec), &[])
            .await
            .expect("hidden");
        let other = scope("p2");
        assert!(matches!(
            store
                .get_cluster_template(&other, &Ident::Uuid(private.uuid.0))
                .await,
            Err(StoreError::NotFound)
        ));
        assert_eq!(
            store
                .get_cluster_template(&other, &Ident::Uuid(public.uuid.0))
                .await
                .expect("public")
                .uuid,
            public.uuid
        );
        let listed = store
            .list_cluster_templates(&other, &page(100, None, "id", SortDir::Asc))
            .await
            .expect("list");
        let names: Vec<_> = listed.iter().map(|t| t.spec.name.as_str()).collect();
        assert_eq!(names, vec!["shared"]);
        let admin = Scope {
            project_id: "admin".into(),
            all_projects: true,
        };
        let all = store
            .list_cluster_templates(&admin, &page(100, None, "id", SortDir::Asc))
            .await
            .expect("all");
        assert_eq!(all.len(), 3);
    }
);

contract!(
    duplicate_names_are_ambiguous,
    |store: Arc<dyn Store>, _url: String| async move {
        store
            .create_cluster_template(&new_template("p1", spec("same")), &[])
            .await
            .expect("1");
        store
            .create_cluster_template(&new_template("p1", spec("same")), &[])
            .await
            .expect("2");
        assert!(matches!(
            store
                .get_cluster_template(&scope("p1"), &Ident::Name("same".into()))
                .await,
            Err(StoreError::Ambiguous)
        ));
    }
);

contract!(
    keyset_pages_visit_every_row_once_including_nulls,
    |store: Arc<dyn Store>, _url: String| async move {
        let flavors = [Some("b"), None, Some("a"), None, Some("b"), Some("c")];
        for (i, f) in flavors.iter().enumerate() {
            let mut s = spec(&format!("t{i}"));
            s.flavor_id = f.map(String::from);
            store
                .create_cluster_template(&new_template("p1", s), &[])
                .await
                .expect("create");
        }
        for dir in [SortDir::Asc, SortDir::Desc] {
            let full = store
                .list_cluster_templates(&scope("p1"), &page(100, None, "flavor_id", dir))
                .await
                .expect("full");
            let mut paged = Vec::new();
            let mut marker = None;
            loop {
                let p = store
                    .list_cluster_templates(&scope("p1"), &page(1, marker, "flavor_id", dir))
                    .await
                    .expect("page");
                let Some(last) = p.last() else { break };
                marker = Some(last.uuid.0);
                paged.extend(p);
            }
            let order = |v: &Vec<fleetyard::domain::template::ClusterTemplate>| {
                v.iter().map(|t| t.spec.name.clone()).collect::<Vec<_>>()
            };
            assert_eq!(order(&paged), order(&full), "{dir:?}");
            let expected = match dir {
                SortDir::Asc => vec!["t2", "t0", "t4", "t5", "t1", "t3"],
                SortDir::Desc => vec!["t3", "t1", "t5", "t4", "t0", "t2"],
            };
            assert_eq!(order(&full), expected, "{dir:?}");
        }
    }
);

contract!(
    an_unknown_marker_is_not_found,
    |store: Arc<dyn Store>, _url: String| async move {
        let r = store
            .list_cluster_templates(
                &scope("p1"),
                &page(10, Some(uuid::Uuid::new_v4()), "id", SortDir::Asc),
            )
            .await;
        assert!(matches!(r, Err(StoreError::NotFound)));
    }
);

contract!(
    updates_are_optimistic,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("v")), &[])
            .await
            .expect("create");
        let mut s = t.spec.clone();
        s.name = "v2".into();
        let updated = store
            .update_cluster_template(t.id, t.version, &s, false, &[])
            .await
            .expect("update");
        assert_eq!(updated.spec.name, "v2");
        assert_eq!(updated.version, 1);
        assert!(updated.updated_at.is_some());
        let stale = store
            .update_cluster_template(t.id, t.version, &s, false, &[])
            .await;
        assert!(matches!(stale, Err(StoreError::Stale)));
    }
);

contract!(
    events_commit_with_the_change_and_not_without_it,
    |store: Arc<dyn Store>, _url: String| async move {
        let new = new_template("p1", spec("e"));
        let uuid = new.uuid.to_string();
        store
            .create_cluster_template(&new, &[event(&uuid)])
            .await
            .expect("create");
        // A failing write (duplicate uuid) must not leave its event behind.
        let dup = store.create_cluster_template(&new, &[event(&uuid)]).await;
        assert!(dup.is_err());
        let pending = store.pending_events(10).await.expect("pending");
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].resource_uuid, uuid);
        store
            .mark_events_sent(&[pending[0].id])
            .await
            .expect("sent");
        assert!(store.pending_events(10).await.expect("pending").is_empty());
        let pruned = store
            .prune_sent_events(chrono::Utc::now() + chrono::Duration::seconds(1))
            .await
            .expect("prune");
        assert_eq!(pruned, 1);
    }
);

contract!(
    deleting_a_referenced_template_is_refused_by_the_foreign_key,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("ref")), &[])
            .await
            .expect("create");
        assert!(!store.template_in_use(&t.uuid).await.expect("in use"));
        // Clusters arrive with their own API; the store's referential rule is checked here directly.
        insert_cluster(&url, &t.uuid.to_string()).await;
        assert!(store.template_in_use(&t.uuid).await.expect("in use"));
        let err = store
            .delete_cluster_template(t.id, &[])
            .await
            .expect_err("referenced");
        assert!(
            err.is_constraint("fk_cluster_cluster_template") || err.is_constraint("foreign_key"),
            "{err:?}"
        );
    }
);

contract!(
    heartbeats_upsert_one_row_per_host_and_binary,
    |store: Arc<dyn Store>, _url: String| async move {
        store
            .heartbeat_service("h1", "fleetyard-conductor")
            .await
            .expect("1");
        store
            .heartbeat_service("h1", "fleetyard-conductor")
            .await
            .expect("2");
        store
            .heartbeat_service("h2", "fleetyard-conductor")
            .await
            .expect("3");
        let services = store.list_services().await.expect("list");
        assert_eq!(services.len(), 2);
        assert_eq!(services[0].host, "h1");
        assert_eq!(services[0].report_count, 2);
        assert!(services[0].last_seen_up.is_some());
    }
);

/// Inserts a cluster row directly (clusters have their own API; this checks the store's rule).
async fn insert_cluster(url: &str, template_uuid: &str) {
    let sql = "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, created_at, \
               registry_name) VALUES ($1, 'p1', 'u', 'c1', $2, 'CREATE_COMPLETE', $3, $1)";
    let id = uuid::Uuid::new_v4().to_string();
    let now = chrono::Utc::now();
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        sqlx::query(sql)
            .bind(&id)
            .bind(template_uuid)
            .bind(now)
            .execute(&pool)
            .await
            .expect("insert");
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("pg");
        sqlx::query(sql)
            .bind(&id)
            .bind(template_uuid)
            .bind(now)
            .execute(&pool)
            .await
            .expect("insert");
    }
}

contract!(
    a_cluster_guard_refuses_the_set_once_the_cluster_changed,
    |store: Arc<dyn Store>, url: String| async move {
        use fleetyard::store::Write;
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        insert_cluster(&url, &t.uuid.to_string()).await;
        let read = store
            .get_cluster(&scope("p1"), &Ident::Name("c1".into()))
            .await
            .expect("cluster");
        let guard = Write::GuardCluster {
            id: read.id,
            version: read.version,
        };
        store
            .commit(&[guard.clone(), Write::event(event("first"))])
            .await
            .expect("the cluster is as read");
        let after = store
            .find_cluster(&read.uuid)
            .await
            .expect("find")
            .expect("exists");
        assert_eq!(after, read, "a guard changes nothing");
        store
            .commit(&[guard.clone(), Write::event(event("first-again"))])
            .await
            .expect("guards of an unchanged cluster do not conflict with each other");
        let mut changed = read.clone();
        changed.status_reason = Some("changed".into());
        store
            .commit(&[Write::update_cluster(&changed)])
            .await
            .expect("update");
        let err = store
            .commit(&[guard, Write::event(event("second"))])
            .await
            .expect_err("the cluster changed since it was read");
        assert!(matches!(err, StoreError::Stale), "{err:?}");
        let events = store.pending_events(10).await.expect("events");
        let uuids: Vec<&str> = events.iter().map(|e| e.resource_uuid.as_str()).collect();
        assert_eq!(
            uuids,
            vec!["first", "first-again"],
            "nothing of the refused set was written"
        );
    }
);

contract!(
    a_second_delete_of_a_gone_cluster_is_refused_with_its_event,
    |store: Arc<dyn Store>, url: String| async move {
        use fleetyard::store::Write;
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        insert_cluster(&url, &t.uuid.to_string()).await;
        let c = store
            .get_cluster(&scope("p1"), &Ident::Name("c1".into()))
            .await
            .expect("cluster");
        // Two conductors polled the same delete and both saw it end.
        let delete = Write::DeleteCluster { uuid: c.uuid };
        store
            .commit(&[delete.clone(), Write::event(event("deleted"))])
            .await
            .expect("the first delete");
        let err = store
            .commit(&[delete, Write::event(event("deleted-again"))])
            .await
            .expect_err("the cluster is gone");
        assert!(matches!(err, StoreError::Stale), "{err:?}");
        let events = store.pending_events(10).await.expect("events");
        let uuids: Vec<&str> = events.iter().map(|e| e.resource_uuid.as_str()).collect();
        assert_eq!(uuids, vec!["deleted"], "the delete's event is written once");
        assert!(store.find_cluster(&c.uuid).await.expect("find").is_none());
    }
);

contract!(
    a_second_delete_of_a_gone_federation_is_refused_with_its_event,
    |store: Arc<dyn Store>, _url: String| async move {
        use fleetyard::domain::federation::NewFederation;
        use fleetyard::domain::status::FederationStatus;
        use fleetyard::store::Write;
        let uuid = FederationId::new();
        store
            .commit(&[Write::InsertFederation {
                federation: Box::new(NewFederation {
                    uuid,
                    project_id: "p1".into(),
                    user_id: "u".into(),
                    name: FederationName::parse("f").expect("a valid name"),
                    hostcluster_id: ClusterId::new(),
                    member_ids: vec![],
                    properties: Default::default(),
                }),
                status: FederationStatus::DeleteInProgress,
            }])
            .await
            .expect("federation");
        let f = store
            .get_federation(&scope("p1"), &Ident::Uuid(uuid.0))
            .await
            .expect("federation");
        let delete = Write::DeleteFederation { id: f.id };
        store
            .commit(&[delete.clone(), Write::event(event("deleted"))])
            .await
            .expect("the first delete");
        let err = store
            .commit(&[delete, Write::event(event("deleted-again"))])
            .await
            .expect_err("the federation is gone");
        assert!(matches!(err, StoreError::Stale), "{err:?}");
        let events = store.pending_events(10).await.expect("events");
        let uuids: Vec<&str> = events.iter().map(|e| e.resource_uuid.as_str()).collect();
        assert_eq!(uuids, vec!["deleted"], "the delete's event is written once");
    }
);

contract!(
    a_delete_refuses_inside_its_transaction_when_the_cluster_is_federated,
    |store: Arc<dyn Store>, url: String| async move {
        use fleetyard::domain::federation::NewFederation;
        use fleetyard::domain::status::{ClusterStatus, FederationStatus};
        use fleetyard::store::Write;
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        insert_cluster(&url, &t.uuid.to_string()).await;
        let c = store
            .get_cluster(&scope("p1"), &Ident::Name("c1".into()))
            .await
            .expect("cluster");
        let mut deleting = c.clone();
        deleting.status = ClusterStatus::DeleteInProgress;
        let delete = [
            Write::update_cluster(&deleting),
            Write::RefuseIfFederated {
                cluster_uuid: c.uuid,
            },
        ];
        store
            .commit(&[Write::InsertFederation {
                federation: Box::new(NewFederation {
                    uuid: FederationId::new(),
                    project_id: "p1".into(),
                    user_id: "u".into(),
                    name: FederationName::parse("f").expect("a valid name"),
                    hostcluster_id: ClusterId::new(),
                    member_ids: vec![c.uuid],
                    properties: Default::default(),
                }),
                status: FederationStatus::CreateComplete,
            }])
            .await
            .expect("federation");
        let err = store
            .commit(&delete)
            .await
            .expect_err("a member cannot be deleted");
        assert!(err.is_constraint("federation_membership"), "{err:?}");
        let after = store
            .find_cluster(&c.uuid)
            .await
            .expect("find")
            .expect("exists");
        assert_eq!(
            after.status,
            ClusterStatus::CreateComplete,
            "the refused set wrote nothing"
        );
    }
);

contract!(
    a_referenced_template_refuses_a_restricted_update_inside_its_transaction,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("r")), &[])
            .await
            .expect("create");
        let mut s = t.spec.clone();
        s.image_id = "image-2".into();
        let t = store
            .update_cluster_template(t.id, t.version, &s, true, &[event("free")])
            .await
            .expect("an unreferenced template takes any change");
        insert_cluster(&url, &t.uuid.to_string()).await;
        s.image_id = "image-3".into();
        let err = store
            .update_cluster_template(t.id, t.version, &s, true, &[event("refused")])
            .await
            .expect_err("referenced");
        assert!(err.is_constraint("cluster_template_referenced"), "{err:?}");
        let after = store
            .get_cluster_template(&scope("p1"), &Ident::Uuid(t.uuid.0))
            .await
            .expect("get");
        assert_eq!(
            after.spec.image_id, "image-2",
            "the refused change was rolled back"
        );
        assert_eq!(after.version, t.version);
        s.image_id = "image-2".into();
        s.name = "renamed".into();
        store
            .update_cluster_template(t.id, t.version, &s, false, &[event("allowed")])
            .await
            .expect("a change a referenced template may take");
        let events = store.pending_events(10).await.expect("events");
        let uuids: Vec<&str> = events.iter().map(|e| e.resource_uuid.as_str()).collect();
        assert_eq!(
            uuids,
            vec!["free", "allowed"],
            "the refused change left no event"
        );
    }
);

contract!(
    a_template_guard_refuses_the_set_once_the_template_changed,
    |store: Arc<dyn Store>, _url: String| async move {
        use fleetyard::store::Write;
        let t = store
            .create_cluster_template(&new_template("p1", spec("g")), &[])
            .await
            .expect("template");
        let guard = Write::GuardTemplate {
            id: t.id,
            version: t.version,
        };
        store
            .commit(&[guard.clone(), Write::event(event("first"))])
            .await
            .expect("the template is as read");
        let mut s = t.spec.clone();
        s.name = "g2".into();
        store
            .update_cluster_template(t.id, t.version, &s, false, &[])
            .await
            .expect("update");
        let err = store
            .commit(&[guard, Write::event(event("second"))])
            .await
            .expect_err("the template changed since it was read");
        assert!(matches!(err, StoreError::Stale), "{err:?}");
        let events = store.pending_events(10).await.expect("events");
        let uuids: Vec<&str> = events.iter().map(|e| e.resource_uuid.as_str()).collect();
        assert_eq!(
            uuids,
            vec!["first"],
            "nothing of the refused set was written"
        );
    }
);

/// The race the guard closes, on PostgreSQL where writers run concurrently: a cluster create
/// holds the template's row shared (as `Write::GuardTemplate` does) and inserts its cluster; a
/// restricted template update started meanwhile waits for it and then sees the cluster.
#[tokio::test]
async fn a_restricted_template_update_waits_for_a_racing_cluster_create_and_refuses() {
    let (store, db) = open_store(Backend::Postgres).await;
    let t = store
        .create_cluster_template(&new_template("p1", spec("race")), &[])
        .await
        .expect("template");
    let pool = sqlx::PgPool::connect(&db.url).await.expect("pg");
    let mut create = pool.begin().await.expect("begin");
    sqlx::query("SELECT id FROM cluster_template WHERE id = $1 AND version = $2 FOR SHARE")
        .bind(t.id)
        .bind(t.version)
        .fetch_one(&mut *create)
        .await
        .expect("guard");
    let mut s = t.spec.clone();
    s.image_id = "changed".into();
    let updater = {
        let store = store.clone();
        let s = s.clone();
        tokio::spawn(async move {
            store
                .update_cluster_template(t.id, t.version, &s, true, &[])
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !updater.is_finished(),
        "the update waits for the guarding create"
    );
    sqlx::query(
        "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, created_at, \
         registry_name) VALUES ($1, 'p1', 'u', 'c1', $2, 'CREATE_IN_PROGRESS', now(), $1)",
    )
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(t.uuid.to_string())
    .execute(&mut *create)
    .await
    .expect("insert cluster");
    create.commit().await.expect("commit create");
    let err = updater
        .await
        .expect("join")
        .expect_err("the cluster committed first");
    assert!(err.is_constraint("cluster_template_referenced"), "{err:?}");
    let after = store
        .get_cluster_template(&scope("p1"), &Ident::Uuid(t.uuid.0))
        .await
        .expect("get");
    assert_eq!(after.spec.image_id, t.spec.image_id);
}

/// Inserts a cluster row with an API address (when given) and, for each PEM of `cas` in
/// order, a Kubernetes CA row; its uuid.
async fn insert_probed_cluster(
    url: &str,
    template_uuid: &str,
    name: &str,
    status: &str,
    api_address: Option<&str>,
    cas: &[&str],
) -> ClusterId {
    let id = ClusterId::new();
    let now = chrono::Utc::now();
    let cluster = "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, \
                   status, api_address, created_at, registry_name) \
                   VALUES ($1, 'p1', 'u', $2, $3, $4, $5, $6, $1)";
    let ca = "INSERT INTO x509keypair (uuid, cluster_uuid, kind, certificate, private_key, \
              project_id, user_id, created_at) VALUES ($1, $2, 'ca', $3, 'sealed', 'p1', 'u', $4)";
    macro_rules! run {
        ($pool:expr) => {{
            let pool = $pool;
            sqlx::query(cluster)
                .bind(id.to_string())
                .bind(name)
                .bind(template_uuid)
                .bind(status)
                .bind(api_address)
                .bind(now)
                .execute(&pool)
                .await
                .expect("cluster");
            for pem in cas {
                sqlx::query(ca)
                    .bind(uuid::Uuid::new_v4().to_string())
                    .bind(id.to_string())
                    .bind(*pem)
                    .bind(now)
                    .execute(&pool)
                    .await
                    .expect("ca");
            }
        }};
    }
    if url.starts_with("sqlite") {
        run!(sqlx::SqlitePool::connect(url).await.expect("sqlite"));
    } else {
        run!(sqlx::PgPool::connect(url).await.expect("pg"));
    }
    id
}

contract!(
    health_probes_are_claimed_once_counted_in_sql_and_deleted_with_their_cluster,
    |store: Arc<dyn Store>, url: String| async move {
        use fleetyard::domain::health_probe::ProbeResult;
        use fleetyard::store::Write;
        let micros = |t: chrono::DateTime<chrono::Utc>| {
            chrono::DateTime::from_timestamp_micros(t.timestamp_micros()).expect("time")
        };
        let t = store
            .create_cluster_template(&new_template("p1", spec("probed")), &[])
            .await
            .expect("template");
        let tpl = t.uuid.to_string();
        let api = Some("https://127.0.0.1:6443");
        let probed =
            insert_probed_cluster(&url, &tpl, "c1", "CREATE_COMPLETE", api, &["OLD", "NEW"]).await;
        insert_probed_cluster(&url, &tpl, "c2", "CREATE_COMPLETE", None, &["PEM"]).await;
        insert_probed_cluster(&url, &tpl, "c3", "UPDATE_IN_PROGRESS", api, &["PEM"]).await;
        let fake = vec!["fake".to_string()];
        let now = micros(chrono::Utc::now());

        let found = store
            .probe_candidates(&fake, now, 0, 10)
            .await
            .expect("candidates");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].uuid, probed);
        assert_eq!(
            found[0].ca_certificate.as_deref(),
            Some("NEW"),
            "the newest CA"
        );
        assert_eq!(found[0].api_address, "https://127.0.0.1:6443");
        let other = vec!["kubernetes".to_string()];
        assert!(store
            .probe_candidates(&other, now, 0, 10)
            .await
            .expect("c")
            .is_empty());
        assert!(store
            .probe_candidates(&fake, now, found[0].id, 10)
            .await
            .expect("c")
            .is_empty());

        assert_eq!(
            store
                .claim_health_probes(&[probed], now, now)
                .await
                .expect("claim"),
            vec![probed]
        );
        // Claimed at `now`: not due before `now`, so neither listed nor claimable again.
        assert!(store
            .claim_health_probes(&[probed], now, now)
            .await
            .expect("claim")
            .is_empty());
        assert!(store
            .probe_candidates(&fake, now, 0, 10)
            .await
            .expect("c")
            .is_empty());

        let fail = ProbeResult {
            cluster_uuid: probed,
            ok: false,
            reason: Some("boom".into()),
        };
        let at = micros(chrono::Utc::now());
        store
            .record_health_probes(std::slice::from_ref(&fail), at)
            .await
            .expect("record");
        let after = store
            .record_health_probes(&[fail], at)
            .await
            .expect("record");
        assert_eq!(after.len(), 1);
        assert_eq!(
            (
                after[0].consecutive_failures,
                after[0].consecutive_successes
            ),
            (2, 0)
        );
        assert_eq!(after[0].last_reason.as_deref(), Some("boom"));
        assert_eq!(after[0].last_ok_at, None);
        assert_eq!(
            after[0].last_probe_at,
            Some(now),
            "the claim is the probe's time"
        );
        let ok = ProbeResult {
            cluster_uuid: probed,
            ok: true,
            reason: None,
        };
        let after = store.record_health_probes(&[ok], at).await.expect("record");
        assert_eq!(
            (
                after[0].consecutive_failures,
                after[0].consecutive_successes
            ),
            (0, 1)
        );
        assert_eq!(after[0].last_reason, None);
        assert_eq!(after[0].last_ok_at, Some(at));

        store
            .mark_health_transitions(&[probed], at)
            .await
            .expect("transition");
        let unknown = ClusterId::new();
        let records = store
            .health_probes_of(&[probed, unknown])
            .await
            .expect("records");
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].last_transition_at, Some(at));
        assert!(store.health_probes_of(&[]).await.expect("none").is_empty());

        store
            .commit(&[Write::DeleteCluster { uuid: probed }])
            .await
            .expect("delete");
        assert!(store
            .health_probes_of(&[probed])
            .await
            .expect("records")
            .is_empty());
    }
);

/// Runs statements with no binds on either backend (test fixtures written as SQL).
async fn exec_all(url: &str, statements: &[String]) {
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        for s in statements {
            sqlx::query(s).execute(&pool).await.expect(s);
        }
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("pg");
        for s in statements {
            sqlx::query(s).execute(&pool).await.expect(s);
        }
    }
}

/// A node group of [`cluster_fixture`]: name, role, count, addresses JSON, status, reason.
type GroupFixture<'a> = (&'a str, &'a str, i32, &'a str, &'a str, Option<&'a str>);

/// A cluster row of project `project` named `name` with the given node groups.
fn cluster_fixture(
    project: &str,
    name: &str,
    template_uuid: &str,
    status: &str,
    groups: &[GroupFixture],
) -> (uuid::Uuid, Vec<String>) {
    let id = uuid::Uuid::new_v4();
    let mut sql = vec![format!(
        "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, \
         labels, created_at, registry_name) VALUES ('{id}', '{project}', 'u', '{name}', \
         '{template_uuid}', '{status}', '{{\"kube_tag\": \"v1.31.0\", \"extra\": \"x\"}}', \
         CURRENT_TIMESTAMP, '{id}')"
    )];
    for (g, role, count, addrs, st, reason) in groups {
        let reason = reason.map_or("NULL".to_string(), |r| format!("'{r}'"));
        sql.push(format!(
            "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, node_addresses, \
             node_count, role, status, status_reason, created_at) VALUES ('{}', '{g}', '{id}', \
             '{project}', '{addrs}', {count}, '{role}', '{st}', {reason}, CURRENT_TIMESTAMP)",
            uuid::Uuid::new_v4()
        ));
    }
    (id, sql)
}

contract!(
    a_cluster_reads_with_its_groups_and_template_labels_in_one_statement,
    |store: Arc<dyn Store>, url: String| async move {
        use fleetyard::domain::cluster::GroupFacts;
        let mut s = spec("t1");
        s.labels.insert("kube_tag".into(), "v1.30.1".into());
        s.labels.insert("only_template".into(), "y".into());
        let t = store
            .create_cluster_template(&new_template("p1", s), &[])
            .await
            .expect("template");
        let tu = t.uuid.to_string();
        let (failed, mut sql) = cluster_fixture(
            "p1",
            "a-failed",
            &tu,
            "UPDATE_FAILED",
            &[
                (
                    "m",
                    "master",
                    3,
                    r#"["10.0.0.1", "10.0.0.2", "10.0.0.3"]"#,
                    "CREATE_COMPLETE",
                    None,
                ),
                (
                    "w",
                    "worker",
                    5,
                    r#"["10.1.0.1"]"#,
                    "UPDATE_FAILED",
                    Some("quota"),
                ),
                ("w2", "worker", 2, "[]", "CREATE_COMPLETE", None),
            ],
        );
        let (bare, more) = cluster_fixture("p1", "b-bare", &tu, "CREATE_COMPLETE", &[]);
        sql.extend(more);
        let (other, more) = cluster_fixture("p2", "c-other", &tu, "CREATE_COMPLETE", &[]);
        sql.extend(more);
        exec_all(&url, &sql).await;

        let read = store
            .get_cluster_with_groups(&scope("p1"), &Ident::Name("a-failed".into()))
            .await
            .expect("read");
        assert_eq!(read.cluster.uuid.0, failed);
        let names: Vec<&str> = read.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["m", "w", "w2"], "groups in id order");
        assert_eq!(
            read.groups[1],
            GroupFacts {
                name: "w".into(),
                role: "worker".into(),
                node_count: 5,
                node_addresses: vec!["10.1.0.1".into()],
                status: "UPDATE_FAILED".into(),
                status_reason: Some("quota".into()),
            }
        );
        assert!(read.groups[1].is_failed() && !read.groups[0].is_failed());
        assert!(read.groups[0].is_master());
        assert_eq!(read.groups[0].node_addresses.len(), 3);
        let tl = read.template_labels.as_ref().expect("template labels");
        assert_eq!(tl.get("only_template").map(String::as_str), Some("y"));
        assert!(
            matches!(
                store
                    .get_cluster_with_groups(&scope("p1"), &Ident::Name("c-other".into()))
                    .await,
                Err(StoreError::NotFound)
            ),
            "another project's cluster is not read"
        );

        let counted = store
            .list_cluster_summaries(&scope("p1"), &page(10, None, "name", SortDir::Asc))
            .await
            .expect("summary page");
        let got: Vec<(uuid::Uuid, i32, i32)> = counted
            .iter()
            .map(|c| (c.uuid.0, c.node_count, c.master_count))
            .collect();
        assert_eq!(got, [(failed, 7, 3), (bare, 0, 0)]);
        // A summary reads its own columns only: they are the row's, as the whole row says.
        for summary in &counted {
            let whole = store
                .get_cluster(&scope("p1"), &Ident::Uuid(summary.uuid.0))
                .await
                .expect("the whole row");
            assert_eq!(
                *summary,
                ClusterSummary::of(&whole, summary.node_count, summary.master_count)
            );
        }
        assert_eq!(counted[0].status.as_str(), "UPDATE_FAILED");
        assert_eq!(counted[0].name, "a-failed");
        let detailed = store
            .list_clusters_with_groups(&scope("p1"), &page(10, None, "name", SortDir::Asc))
            .await
            .expect("detail page");
        assert_eq!(detailed.len(), 2);
        assert_eq!(
            detailed[0], read,
            "the page reads what the single read reads"
        );
        assert!(detailed[1].groups.is_empty());

        // A page after the last row is empty; after a marker the caller may not see, or after
        // one that does not exist, it is NotFound, whatever the sort key and direction (a
        // nullable key sorted descending included).
        for (key, dir, last) in [
            ("name", SortDir::Asc, bare),
            ("id", SortDir::Desc, failed),
            ("keypair", SortDir::Desc, failed),
            ("keypair", SortDir::Asc, bare),
        ] {
            let rows = store
                .list_cluster_summaries(&scope("p1"), &page(10, Some(last), key, dir))
                .await
                .expect("after the last row");
            assert!(rows.is_empty(), "{key} {dir:?}");
            for marker in [other, uuid::Uuid::new_v4()] {
                let r = store
                    .list_clusters_with_groups(&scope("p1"), &page(10, Some(marker), key, dir))
                    .await
                    .map(|r| r.len());
                assert!(
                    matches!(r, Err(StoreError::NotFound)),
                    "{key} {dir:?}: {r:?}"
                );
            }
        }
    }
);

contract!(
    a_node_group_reads_with_its_cluster_in_one_statement,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        let tu = t.uuid.to_string();
        let (mine, mut sql) = cluster_fixture(
            "p1",
            "mine",
            &tu,
            "CREATE_COMPLETE",
            &[
                ("default-master", "master", 1, "[]", "CREATE_COMPLETE", None),
                ("default-worker", "worker", 2, "[]", "CREATE_COMPLETE", None),
            ],
        );
        let (theirs, more) = cluster_fixture(
            "p2",
            "theirs",
            &tu,
            "CREATE_COMPLETE",
            &[("default-worker", "worker", 1, "[]", "CREATE_COMPLETE", None)],
        );
        sql.extend(more);
        // A name is unique in a project: two clusters share it only across projects.
        for project in ["p1", "p3"] {
            let (_, more) = cluster_fixture(project, "twin", &tu, "CREATE_COMPLETE", &[]);
            sql.extend(more);
        }
        exec_all(&url, &sql).await;
        let groups = store
            .nodegroups_of(&[ClusterId::from(mine)])
            .await
            .expect("groups");
        let worker = groups
            .iter()
            .find(|g| g.name == "default-worker")
            .expect("worker")
            .clone();

        for cluster in [Ident::Name("mine".into()), Ident::Uuid(mine)] {
            for ng in [
                "default-worker".to_string(),
                worker.uuid.to_string(),
                worker.id.to_string(),
            ] {
                let read = store
                    .get_nodegroup_of(&scope("p1"), &cluster, &ng)
                    .await
                    .unwrap_or_else(|e| panic!("{cluster:?} {ng}: {e}"));
                assert_eq!(read.nodegroup, worker, "{cluster:?} {ng}");
                assert_eq!(read.cluster.uuid.0, mine);
                assert_eq!(read.cluster.project_id, "p1");
                assert_eq!(read.cluster.user_id, "u");
                assert_eq!(
                    read.cluster.labels.get("kube_tag").map(String::as_str),
                    Some("v1.31.0")
                );
                assert_eq!(read.cluster.labels.len(), 2);
            }
        }

        // A uuid match wins over a name another group has; else the first matching group.
        let master = groups
            .iter()
            .find(|g| g.name == "default-master")
            .expect("master")
            .clone();
        let group = |name: &str, project: &str| {
            format!(
                "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, node_addresses, \
                 node_count, role, status, created_at) VALUES ('{}', '{name}', '{mine}', \
                 '{project}', '[]', 1, 'worker', 'CREATE_COMPLETE', CURRENT_TIMESTAMP)",
                uuid::Uuid::new_v4()
            )
        };
        exec_all(
            &url,
            &[
                group(&master.uuid.to_string(), "p1"),
                group(&worker.id.to_string(), "p1"),
                group("foreign", "p2"),
            ],
        )
        .await;
        let by = |ng: String, sc: Scope| {
            let store = store.clone();
            async move {
                store
                    .get_nodegroup_of(&sc, &Ident::Uuid(mine), &ng)
                    .await
                    .map(|r| r.nodegroup.name)
            }
        };
        assert_eq!(
            by(master.uuid.to_string(), scope("p1"))
                .await
                .expect("uuid"),
            "default-master"
        );
        assert_eq!(
            by(worker.id.to_string(), scope("p1")).await.expect("id"),
            "default-worker"
        );
        // A group of another project in the caller's cluster: an admin's only.
        let r = by("foreign".into(), scope("p1")).await;
        assert!(matches!(r, Err(StoreError::NodeGroupNotFound(_))), "{r:?}");
        let admin = Scope {
            project_id: "p1".into(),
            all_projects: true,
        };
        assert_eq!(by("foreign".into(), admin).await.expect("admin"), "foreign");

        // Another project's cluster is not found, by name or uuid; an admin reads it.
        for cluster in [Ident::Name("theirs".into()), Ident::Uuid(theirs)] {
            let r = store
                .get_nodegroup_of(&scope("p1"), &cluster, "default-worker")
                .await;
            assert!(matches!(r, Err(StoreError::NotFound)), "{cluster:?}: {r:?}");
            let admin = Scope {
                project_id: "p1".into(),
                all_projects: true,
            };
            let read = store
                .get_nodegroup_of(&admin, &cluster, "default-worker")
                .await
                .expect("an admin sees every project");
            assert_eq!(read.cluster.uuid.0, theirs);
            assert_eq!(read.cluster.project_id, "p2");
        }

        // A name two visible clusters share is ambiguous, whatever the node group; seen from
        // one project, the name is its own cluster's.
        let admin = Scope {
            project_id: "p1".into(),
            all_projects: true,
        };
        for ng in ["default-worker", "nope"] {
            let twin = Ident::Name("twin".into());
            let r = store.get_nodegroup_of(&admin, &twin, ng).await;
            assert!(matches!(r, Err(StoreError::Ambiguous)), "{ng}: {r:?}");
            let r = store.get_nodegroup_of(&scope("p1"), &twin, ng).await;
            assert!(
                matches!(r, Err(StoreError::NodeGroupNotFound(ref c)) if c.project_id == "p1"),
                "{ng}: {r:?}"
            );
        }
        let r = store
            .get_nodegroup_of(
                &scope("p1"),
                &Ident::Name("nothing".into()),
                "default-worker",
            )
            .await;
        assert!(matches!(r, Err(StoreError::NotFound)), "{r:?}");

        // A missing node group of a found cluster says so, with the cluster's owner.
        let other_groups_uuid = store
            .nodegroups_of(&[ClusterId::from(theirs)])
            .await
            .expect("groups")[0]
            .uuid
            .to_string();
        for ng in [
            "nope".to_string(),
            uuid::Uuid::new_v4().to_string(),
            "999999".to_string(),
            other_groups_uuid,
        ] {
            match store
                .get_nodegroup_of(&scope("p1"), &Ident::Name("mine".into()), &ng)
                .await
            {
                Err(StoreError::NodeGroupNotFound(c)) => {
                    assert_eq!(c.uuid.0, mine);
                    assert_eq!((c.project_id.as_str(), c.user_id.as_str()), ("p1", "u"));
                    assert_eq!(c.labels.get("extra").map(String::as_str), Some("x"), "{ng}");
                }
                r => panic!("{ng}: {r:?}"),
            }
        }
    }
);

/// What one concurrent lookup should come to: the cluster's uuid, or the error's name.
fn outcome<T>(r: Result<T, StoreError>, uuid_of: impl Fn(&T) -> uuid::Uuid) -> String {
    match r {
        Ok(v) => uuid_of(&v).to_string(),
        Err(StoreError::NotFound) => "not found".into(),
        Err(StoreError::Ambiguous) => "ambiguous".into(),
        Err(StoreError::NodeGroupNotFound(c)) => format!("no group of {}", c.uuid),
        Err(e) => format!("error {e}"),
    }
}

contract!(
    concurrent_single_row_reads_each_get_their_own_answer,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        let tu = t.uuid.to_string();
        let mut sql = Vec::new();
        let mut mine = Vec::new();
        for i in 0..8 {
            let (id, more) = cluster_fixture(
                "p1",
                &format!("c{i}"),
                &tu,
                "CREATE_COMPLETE",
                &[("default-worker", "worker", 1, "[]", "CREATE_COMPLETE", None)],
            );
            mine.push(id);
            sql.extend(more);
        }
        let (theirs, more) = cluster_fixture("p2", "c0", &tu, "CREATE_COMPLETE", &[]);
        sql.extend(more);
        exec_all(&url, &sql).await;
        let before = store.pool_status();

        // Every kind of answer, each asked many times at once: found by name and by uuid,
        // another project's row (hidden, or seen with every project), a name two projects
        // use (ambiguous to a caller who sees both), none.
        type Case = (Scope, Ident, Option<&'static str>, String);
        let all = Scope {
            project_id: "p1".into(),
            all_projects: true,
        };
        let mut cases: Vec<Case> = Vec::new();
        for (i, id) in mine.iter().enumerate() {
            cases.push((
                scope("p1"),
                Ident::Name(format!("c{i}")),
                None,
                id.to_string(),
            ));
            cases.push((scope("p1"), Ident::Uuid(*id), None, id.to_string()));
            cases.push((scope("p2"), Ident::Uuid(*id), None, "not found".into()));
            cases.push((all.clone(), Ident::Uuid(*id), None, id.to_string()));
            cases.push((
                scope("p1"),
                Ident::Uuid(*id),
                Some("default-worker"),
                id.to_string(),
            ));
            cases.push((
                scope("p1"),
                Ident::Uuid(*id),
                Some("nope"),
                format!("no group of {id}"),
            ));
        }
        cases.push((
            scope("p2"),
            Ident::Name("c0".into()),
            None,
            theirs.to_string(),
        ));
        cases.push((
            all.clone(),
            Ident::Name("c0".into()),
            None,
            "ambiguous".into(),
        ));
        cases.push((
            scope("p1"),
            Ident::Name("nope".into()),
            None,
            "not found".into(),
        ));
        cases.push((
            all.clone(),
            Ident::Name("c0".into()),
            Some("default-worker"),
            "ambiguous".into(),
        ));
        let mut tasks = Vec::new();
        for round in 0..3 {
            for (scope, ident, group, want) in cases.iter().cloned() {
                let store = store.clone();
                tasks.push(tokio::spawn(async move {
                    let got = match (group, round % 2) {
                        (Some(g), _) => {
                            outcome(store.get_nodegroup_of(&scope, &ident, g).await, |r| {
                                r.cluster.uuid.0
                            })
                        }
                        (None, 0) => outcome(store.get_cluster(&scope, &ident).await, |c| c.uuid.0),
                        (None, _) => {
                            outcome(store.get_cluster_with_groups(&scope, &ident).await, |r| {
                                r.cluster.uuid.0
                            })
                        }
                    };
                    (format!("{scope:?} {ident:?} {group:?}"), got, want)
                }));
            }
        }
        let asked = tasks.len() as u64;
        for task in tasks {
            let (what, got, want) = task.await.expect("task");
            assert_eq!(got, want, "{what}");
        }
        let after = store.pool_status();
        if url.starts_with("postgres") {
            let callers = after.shared_read_callers - before.shared_read_callers;
            let statements = after.shared_read_statements - before.shared_read_statements;
            assert_eq!(callers, asked, "every lookup went through the shared reads");
            assert!(
                statements < callers / 4,
                "{callers} concurrent lookups took {statements} statements"
            );
        } else {
            assert_eq!(after.shared_read_callers, 0);
        }
    }
);

contract!(
    a_lookup_cut_off_leaves_the_others_of_its_statement_answered,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        let (id, sql) = cluster_fixture("p1", "kept", &t.uuid.to_string(), "CREATE_COMPLETE", &[]);
        exec_all(&url, &sql).await;
        // Sixty lookups at once; every other one is cut off (its request gone) while it
        // waits, the rest must each get the cluster.
        let mut kept = Vec::new();
        let mut cut = Vec::new();
        for i in 0..60 {
            let store = store.clone();
            let task = tokio::spawn(async move {
                store
                    .get_cluster(&scope("p1"), &Ident::Uuid(id))
                    .await
                    .map(|c| c.uuid.0)
            });
            if i % 2 == 0 {
                cut.push(task);
            } else {
                kept.push(task);
            }
        }
        tokio::task::yield_now().await;
        for task in &cut {
            task.abort();
        }
        for task in kept {
            assert_eq!(task.await.expect("task").expect("found"), id);
        }
        // And the read still works afterwards, alone.
        let again = store
            .get_cluster(&scope("p1"), &Ident::Name("kept".into()))
            .await
            .expect("found again");
        assert_eq!(again.uuid.0, id);
    }
);

contract!(
    the_registry_counts_a_key_range_and_finds_its_first_change,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        let tu = t.uuid.to_string();
        let mut sql = Vec::new();
        for (project, name) in [("p1", "a"), ("p1", "b"), ("p2", "a")] {
            // A fixture's registry name is its uuid; these are named as the registry shows them.
            let (id, rows) = cluster_fixture(project, name, &tu, "CREATE_COMPLETE", &[]);
            sql.extend(rows.into_iter().map(|s| {
                s.replace(
                    &format!("CURRENT_TIMESTAMP, '{id}')"),
                    &format!("CURRENT_TIMESTAMP, '{name}')"),
                )
            }));
        }
        exec_all(&url, &sql).await;
        let count = |project: Option<&'static str>, after: Option<(&'static str, &'static str)>| {
            let store = store.clone();
            async move {
                store
                    .registry_count_after(project, after, 100)
                    .await
                    .expect("count")
                    .value()
            }
        };
        assert_eq!(count(None, None).await, 3);
        assert_eq!(count(Some("p1"), None).await, 2);
        assert_eq!(count(Some("p1"), Some(("p1", "a"))).await, 1);
        assert_eq!(count(None, Some(("p1", "b"))).await, 1);
        assert_eq!(count(Some("p2"), Some(("p2", "a"))).await, 0);
        // Past the cap the count may be an estimate (PostgreSQL's planner), never below the
        // cap; within it, it is exact on both databases.
        let capped = store
            .registry_count_after(None, None, 1)
            .await
            .expect("count");
        match capped {
            ItemCount::Exact(n) if !url.starts_with("postgres") => {
                assert_eq!(n, 3, "SQLite counts every row")
            }
            ItemCount::Estimate(n) if url.starts_with("postgres") => {
                assert!(n >= 2, "an estimate past the cap is at least cap + 1: {n}")
            }
            other => panic!("{other:?} on {url}"),
        }
        assert_eq!(
            store
                .registry_count_after(Some("p1"), None, 2)
                .await
                .expect("count"),
            ItemCount::Exact(2)
        );

        let (since, _) = store.registry_bounds().await.expect("bounds");
        let first = |project: Option<&'static str>, after: Option<(&'static str, &'static str)>| {
            let store = store.clone();
            async move {
                store
                    .registry_first_change_after(since, project, after)
                    .await
                    .expect("change")
            }
        };
        assert_eq!(first(None, None).await, None);
        exec_all(
            &url,
            &["UPDATE cluster SET status = 'UPDATE_COMPLETE' WHERE project_id = 'p2' AND name = 'a'"
                .to_string()],
        )
        .await;
        let (latest, _) = store.registry_bounds().await.expect("bounds");
        assert!(latest > since);
        assert_eq!(first(None, None).await, Some(latest));
        assert_eq!(first(None, Some(("p1", "b"))).await, Some(latest));
        assert_eq!(first(Some("p1"), None).await, None);
        assert_eq!(first(None, Some(("p2", "a"))).await, None);
        // Earlier changes are found from an earlier version.
        assert!(store
            .registry_first_change_after(0, Some("p1"), Some(("p1", "a")))
            .await
            .expect("change")
            .is_some());
    }
);

/// A cluster to insert through the store: a `/v1` create (`derive`) or a registry create.
pub(crate) fn registry_cluster(
    project: &str,
    template: TemplateId,
    uuid: ClusterId,
    name: &str,
    derive: bool,
) -> fleetyard::domain::cluster::NewCluster {
    use fleetyard::domain::cluster::{NewCluster, NewNodeGroup};
    use fleetyard::domain::names::ClusterName;
    use fleetyard::domain::registry::{registry_name, RegistryMeta};
    use fleetyard::domain::status::ClusterStatus;
    NewCluster {
        uuid,
        project_id: project.into(),
        user_id: "u".into(),
        name: ClusterName::parse(name).expect("cluster name"),
        cluster_template_id: template,
        keypair: None,
        docker_volume_size: None,
        labels: Labels::new(),
        master_flavor_id: None,
        flavor_id: None,
        create_timeout: 60,
        discovery_url: None,
        fixed_network: None,
        fixed_subnet: None,
        floating_ip_enabled: true,
        master_lb_enabled: false,
        nodegroups: vec![NewNodeGroup {
            uuid: fleetyard::domain::NodeGroupId::new(),
            name: "default-worker".into(),
            project_id: project.into(),
            docker_volume_size: None,
            labels: Labels::new(),
            flavor_id: None,
            image_id: None,
            node_count: 3,
            role: "worker".into(),
            min_node_count: 0,
            max_node_count: None,
            is_default: true,
            status: ClusterStatus::CreateInProgress,
            node_labels: Labels::new(),
            node_taints: Vec::new(),
        }],
        status: ClusterStatus::CreateInProgress,
        registry: RegistryMeta {
            name: registry_name(name, &uuid.0),
            ..RegistryMeta::default()
        },
        derive_registry_name: derive,
    }
}

pub(crate) async fn insert(
    store: &Arc<dyn Store>,
    c: fleetyard::domain::cluster::NewCluster,
) -> Result<(), StoreError> {
    store
        .commit(&[fleetyard::store::Write::InsertCluster(Box::new(c))])
        .await
}

async fn registry_name_of(store: &Arc<dyn Store>, project: &str, uuid: ClusterId) -> String {
    store
        .get_cluster(&scope(project), &Ident::Uuid(uuid.0))
        .await
        .expect("cluster")
        .registry
        .name
}

contract!(
    registry_names_are_one_per_project_and_derived_ones_never_collide,
    |store: Arc<dyn Store>, _url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("t")), &[])
            .await
            .expect("template")
            .uuid;
        // A registry create takes its name, and a second one of the same name is refused by
        // the constraint (what the API answers 409 AlreadyExists for).
        insert(
            &store,
            registry_cluster("p1", t, ClusterId::new(), "x", false),
        )
        .await
        .expect("registered");
        let err = insert(
            &store,
            registry_cluster("p1", t, ClusterId::new(), "x", false),
        )
        .await
        .expect_err("taken");
        assert!(
            err.is_constraint("uniq_cluster0project_id0registry_name"),
            "{err:?}"
        );
        // /v1 creates of the same name are never refused: uuids sharing their first 16 hex
        // digits walk the candidates one by one.
        let ids = ["0a", "0b", "0c", "0d", "0e"].map(|tail| {
            ClusterId(
                uuid::Uuid::parse_str(&format!("3f2a9c01-1234-4000-8000-0000000000{tail}"))
                    .expect("uuid"),
            )
        });
        // The last one's 32-digit candidate is a registered cluster's name already.
        insert(
            &store,
            registry_cluster(
                "p1",
                t,
                ClusterId::new(),
                "x-3f2a9c0112344000800000000000000e",
                false,
            ),
        )
        .await
        .expect("registered");
        for id in ids {
            insert(&store, registry_cluster("p1", t, id, "x", true))
                .await
                .expect("a /v1 name is never refused");
        }
        let mut names = Vec::new();
        for id in ids {
            names.push(registry_name_of(&store, "p1", id).await);
        }
        assert_eq!(
            names,
            [
                "x-3f2a9c01",
                "x-3f2a9c011234",
                "x-3f2a9c0112344000",
                "x-3f2a9c0112344000800000000000000d",
                "x-3f2a9c0112344000800000000000000e-2",
            ]
        );
        // A /v1 cluster literally named like a derived name gets its own derived name; a
        // registry create of a derived name is refused.
        let literal = ClusterId::new();
        insert(
            &store,
            registry_cluster("p1", t, literal, "x-3f2a9c01", true),
        )
        .await
        .expect("literal");
        assert_eq!(
            registry_name_of(&store, "p1", literal).await,
            fleetyard::domain::registry::name_candidate("x-3f2a9c01", &literal.0, 1)
        );
        let err = insert(
            &store,
            registry_cluster("p1", t, ClusterId::new(), "x-3f2a9c011234", false),
        )
        .await
        .expect_err("taken");
        assert!(err.is_constraint("uniq_cluster0project_id0registry_name"));
        // Every registry name reads back its one cluster.
        for (id, name) in ids.iter().zip(&names) {
            let e = store
                .registry_get("p1", name)
                .await
                .expect("get")
                .expect("found");
            assert_eq!(e.cluster.uuid, *id);
            assert_eq!(e.cluster.registry.name, *name);
        }
        // Names repeat in /v1: a lookup by one several clusters share is ambiguous.
        let err = store
            .get_cluster(&scope("p1"), &Ident::Name("x".into()))
            .await
            .expect_err("ambiguous");
        assert!(matches!(err, StoreError::Ambiguous), "{err:?}");
        // Another project has names of its own.
        let other = ClusterId::new();
        insert(&store, registry_cluster("p2", t, other, "x", true))
            .await
            .expect("other project");
        assert_eq!(registry_name_of(&store, "p2", other).await, "x");
    }
);

contract!(
    each_change_keeps_the_object_as_it_was,
    |store: Arc<dyn Store>, _url: String| async move {
        use fleetyard::domain::registry::ServerEndpoint;
        use fleetyard::store::{ChangeKind, Write};
        let t = store
            .create_cluster_template(&new_template("p1", spec("t")), &[])
            .await
            .expect("template")
            .uuid;
        let (from, _) = store.registry_bounds().await.expect("bounds");
        let id = ClusterId::new();
        let mut new = registry_cluster("p1", t, id, "snap", true);
        new.registry.labels.insert("env".into(), "dev".into());
        new.registry.server_endpoints = vec![ServerEndpoint {
            client_cidr: "0.0.0.0/0".into(),
            server_address: "10.0.0.1:6443".into(),
        }];
        insert(&store, new).await.expect("insert");
        let mut c = store
            .get_cluster(&scope("p1"), &Ident::Uuid(id.0))
            .await
            .expect("cluster");
        c.registry.labels.insert("env".into(), "prod".into());
        c.registry.server_endpoints[0].server_address = "10.0.0.2:6443".into();
        c.status = fleetyard::domain::status::ClusterStatus::CreateComplete;
        store
            .commit(&[Write::UpdateCluster(Box::new(c))])
            .await
            .expect("update");
        store
            .commit(&[Write::DeleteCluster { uuid: id }])
            .await
            .expect("delete");

        let changes = store.registry_changes(from, 100).await.expect("changes");
        let kinds: Vec<ChangeKind> = changes.iter().map(|c| c.change).collect();
        assert_eq!(
            kinds,
            [ChangeKind::Added, ChangeKind::Modified, ChangeKind::Deleted]
        );
        let shown: Vec<(String, String, String, String, i64, i64)> = changes
            .iter()
            .map(|ch| {
                let o = ch.object.as_ref().expect("every line keeps its object");
                assert_eq!(o.cluster.uuid, id);
                assert_eq!(o.cluster.registry.resource_version, ch.resource_version);
                (
                    o.cluster.registry.name.clone(),
                    o.cluster.registry.labels["env"].clone(),
                    o.cluster.registry.server_endpoints[0]
                        .server_address
                        .clone(),
                    o.cluster.status.as_str().to_string(),
                    o.node_count,
                    o.cluster.registry.generation,
                )
            })
            .collect();
        let row = |env: &str, addr: &str, status: &str, nodes: i64| {
            (
                "snap".to_string(),
                env.to_string(),
                addr.to_string(),
                status.to_string(),
                nodes,
                1,
            )
        };
        // The ADDED line is written with the row, before its node groups.
        assert_eq!(
            shown,
            [
                row("dev", "10.0.0.1:6443", "CREATE_IN_PROGRESS", 0),
                row("prod", "10.0.0.2:6443", "CREATE_COMPLETE", 3),
                // DELETED: the last full object, node groups included.
                row("prod", "10.0.0.2:6443", "CREATE_COMPLETE", 3),
            ]
        );
        assert!(changes
            .iter()
            .all(|ch| ch.object.as_ref().is_some_and(|o| o.driver == "fake")));
    }
);

/// Migrates a fresh database up to (not including) the registry-identity migration, writes
/// rows as they were, then lets the store migrate the rest: the registry names the registry
/// showed those rows by are kept, and a derived name another row held is made unique.
async fn existing_rows_keep_their_registry_names(backend: Backend) {
    let db = crate::helpers::TestDb::new(backend).await;
    let (folder, url) = match backend {
        Backend::Postgres => ("migrations", db.url.clone()),
        Backend::Sqlite => ("migrations-sqlite", format!("{}?mode=rwc", db.url)),
    };
    let earlier = std::env::temp_dir().join(format!("fy-mig-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&earlier).expect("temp dir");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    for f in std::fs::read_dir(&source).expect("migrations") {
        let path = f.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name < "20261127000002" {
            std::fs::copy(&path, earlier.join(name)).expect("copy");
        }
    }
    let migrator = sqlx::migrate::Migrator::new(earlier.as_path())
        .await
        .expect("migrator");
    let rows = [
        ("3f2a9c01-0000-4000-8000-000000000001", "My_Cluster"),
        (
            "3f2a9c01-0000-4000-8000-000000000002",
            "my-cluster-3f2a9c01",
        ),
        ("4f2a9c01-0000-4000-8000-000000000003", "A..b_"),
        ("5f2a9c01-0000-4000-8000-000000000004", "___"),
        ("6f2a9c01-0000-4000-8000-000000000005", "prod"),
        ("8f2a9c01-0000-4000-8000-000000000007", "Ünï-Ωk.Z"),
    ];
    let insert = "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, \
                  status, created_at) VALUES ($1, 'p', 'u', $2, \
                  '00000000-0000-4000-8000-00000000e7e7', 'CREATE_COMPLETE', $3)";
    let now = chrono::Utc::now();
    match backend {
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&url).await.expect("pg");
            migrator.run(&pool).await.expect("earlier migrations");
            for (id, name) in rows {
                sqlx::query(insert)
                    .bind(id)
                    .bind(name)
                    .bind(now)
                    .execute(&pool)
                    .await
                    .expect("insert");
            }
            pool.close().await;
        }
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&url).await.expect("sqlite");
            migrator.run(&pool).await.expect("earlier migrations");
            for (id, name) in rows {
                sqlx::query(insert)
                    .bind(id)
                    .bind(name)
                    .bind(now)
                    .execute(&pool)
                    .await
                    .expect("insert");
            }
            pool.close().await;
        }
    }
    let _ = std::fs::remove_dir_all(&earlier);
    let store = fleetyard::store::connect(&db.url, 2).await.expect("store");
    store.migrate().await.expect("the rest");
    let mut names = Vec::new();
    for (id, name) in rows {
        let c = store
            .get_cluster(&scope("p"), &Ident::Uuid(id.parse().expect("uuid")))
            .await
            .expect("cluster");
        assert_eq!(c.name, name);
        names.push(c.registry.name);
    }
    assert_eq!(
        names,
        [
            // derived, but the name another cluster has as its own: made unique
            "my-cluster-3f2a9c01000040008000000000000001",
            "my-cluster-3f2a9c01",
            "a.b-4f2a9c01",
            "cluster-5f2a9c01",
            "prod",
            "n---k.z-8f2a9c01",
        ]
    );
    // The rule the service derives names by gives the same names where nothing collides.
    for (i, (id, name)) in rows.iter().enumerate().skip(1) {
        let uuid: uuid::Uuid = id.parse().expect("uuid");
        assert_eq!(
            names[i],
            fleetyard::domain::registry::registry_name(name, &uuid)
        );
    }
    drop(store);
}

#[tokio::test]
async fn existing_rows_keep_their_registry_names_on_postgres() {
    existing_rows_keep_their_registry_names(Backend::Postgres).await;
}

#[tokio::test]
async fn existing_rows_keep_their_registry_names_on_sqlite() {
    existing_rows_keep_their_registry_names(Backend::Sqlite).await;
}

// ---- machines -------------------------------------------------------------------------------

/// A machine row of cluster `cluster`'s node group `group` (uuid), written as SQL.
#[allow(clippy::too_many_arguments)]
fn machine_fixture(
    id: &str,
    name: &str,
    role: &str,
    project: &str,
    cluster: uuid::Uuid,
    group: &fleetyard::domain::NodeGroupId,
    phase: &str,
    provider_id: Option<&str>,
    spec: &str,
    status: &str,
) -> String {
    let provider = provider_id.map_or("NULL".to_string(), |p| format!("'{p}'"));
    format!(
        "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
         phase, provider_id, status, created_at) VALUES ('{id}', '{name}', '{role}', \
         '{project}', '{cluster}', '{group}', '{spec}', '{phase}', {provider}, '{status}', \
         CURRENT_TIMESTAMP)"
    )
}

fn machine_id(n: u32) -> uuid::Uuid {
    format!("a7000000-0000-4000-8000-{n:012}")
        .parse()
        .expect("uuid")
}

contract!(
    a_clusters_machines_list_by_filter_and_page_and_read_back_whole,
    |store: Arc<dyn Store>, url: String| async move {
        use fleetyard::domain::machine::{
            ChangeMode, KubeVersion, MachineAddress, MachinePhase, MachineRole,
        };
        use fleetyard::store::MachineFilter;
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        let tu = t.uuid.to_string();
        let (c1, mut sql) = cluster_fixture(
            "p1",
            "c1",
            &tu,
            "CREATE_COMPLETE",
            &[
                ("m", "master", 1, "[]", "CREATE_COMPLETE", None),
                ("w", "worker", 3, "[]", "CREATE_COMPLETE", None),
            ],
        );
        let (c2, more) = cluster_fixture(
            "p1",
            "c2",
            &tu,
            "CREATE_COMPLETE",
            &[("w", "worker", 1, "[]", "CREATE_COMPLETE", None)],
        );
        sql.extend(more);
        exec_all(&url, &sql).await;
        let cid1 = ClusterId(c1);
        let cid2 = ClusterId(c2);
        let m = store.get_nodegroup(&cid1, "m").await.expect("m").uuid;
        let w = store.get_nodegroup(&cid1, "w").await.expect("w").uuid;
        let w2 = store.get_nodegroup(&cid2, "w").await.expect("w of c2").uuid;
        let master_spec = r#"{"versions": {"kubelet": "v1.31.4", "controlPlane": "v1.31.4"},
            "containerRuntime": {"name": "containerd", "version": "1.7.22"},
            "osImage": "ubuntu-24.04", "flavor": "m1.large", "providerConfig": {"a": [1]},
            "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
            "labels": {"tier": "cp"}}"#;
        let master_status = r#"{"nodeRef": "c1-m-1",
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "versions": {"kubelet": "v1.31.4"}, "lastChange": "InPlace",
            "lastUpdated": "2026-11-27T10:00:00Z"}"#;
        let failed_status = r#"{"errorReason": "CreateError", "errorMessage": "no capacity"}"#;
        let sql = vec![
            machine_fixture(
                &machine_id(1).to_string(),
                "m-1",
                "master",
                "p1",
                c1,
                &m,
                "Running",
                Some("openstack:///m1"),
                master_spec,
                master_status,
            ),
            machine_fixture(
                &machine_id(2).to_string(),
                "w-1",
                "worker",
                "p1",
                c1,
                &w,
                "Running",
                Some("openstack:///w1"),
                "{}",
                "{}",
            ),
            machine_fixture(
                &machine_id(3).to_string(),
                "w-2",
                "worker",
                "p1",
                c1,
                &w,
                "Failed",
                None,
                "{}",
                failed_status,
            ),
            machine_fixture(
                &machine_id(4).to_string(),
                "w-3",
                "worker",
                "p1",
                c1,
                &w,
                "Provisioning",
                None,
                "{}",
                "{}",
            ),
            // the same name in another cluster
            machine_fixture(
                &machine_id(5).to_string(),
                "w-1",
                "worker",
                "p1",
                c2,
                &w2,
                "Running",
                None,
                "{}",
                "{}",
            ),
        ];
        exec_all(&url, &sql).await;

        let names = |ms: &[fleetyard::domain::machine::Machine]| -> Vec<String> {
            ms.iter().map(|m| m.name.to_string()).collect()
        };
        let all = MachineFilter::default();
        let list = |f: MachineFilter, p: PageRequest, s: Scope| {
            let store = store.clone();
            async move { store.list_machines(&cid1, &s, &f, &p).await }
        };
        let first = page(100, None, "id", SortDir::Asc);
        let got = list(all.clone(), first.clone(), scope("p1"))
            .await
            .expect("list");
        assert_eq!(
            names(&got),
            ["m-1", "w-1", "w-2", "w-3"],
            "c1's only, in id order"
        );

        let by_group = MachineFilter {
            nodegroup: Some(w),
            ..MachineFilter::default()
        };
        let got = list(by_group, first.clone(), scope("p1"))
            .await
            .expect("group");
        assert_eq!(names(&got), ["w-1", "w-2", "w-3"]);
        let masters = MachineFilter {
            role: Some(MachineRole::Master),
            ..MachineFilter::default()
        };
        let got = list(masters, first.clone(), scope("p1"))
            .await
            .expect("role");
        assert_eq!(names(&got), ["m-1"]);
        let failed = MachineFilter {
            phase: Some(MachinePhase::Failed),
            ..MachineFilter::default()
        };
        let got = list(failed, first.clone(), scope("p1"))
            .await
            .expect("phase");
        assert_eq!(names(&got), ["w-2"]);
        let none = MachineFilter {
            nodegroup: Some(m),
            role: Some(MachineRole::Worker),
            phase: None,
        };
        let got = list(none, first.clone(), scope("p1"))
            .await
            .expect("none match");
        assert!(got.is_empty());

        // Pages by marker; a marker not matching the filter is still a position.
        let p1 = list(all.clone(), page(2, None, "id", SortDir::Asc), scope("p1"))
            .await
            .expect("page 1");
        assert_eq!(names(&p1), ["m-1", "w-1"]);
        let p2 = list(
            all.clone(),
            page(2, Some(p1[1].uuid.0), "id", SortDir::Asc),
            scope("p1"),
        )
        .await
        .expect("page 2");
        assert_eq!(names(&p2), ["w-2", "w-3"]);
        let running = MachineFilter {
            phase: Some(MachinePhase::Running),
            ..MachineFilter::default()
        };
        let after_failed = page(10, Some(machine_id(3)), "id", SortDir::Asc);
        let got = list(running, after_failed, scope("p1"))
            .await
            .expect("after w-2");
        assert!(
            got.is_empty(),
            "only w-3 follows w-2 and it is provisioning"
        );
        let by_name = list(
            all.clone(),
            page(3, None, "name", SortDir::Desc),
            scope("p1"),
        )
        .await
        .expect("by name");
        assert_eq!(names(&by_name), ["w-3", "w-2", "w-1"]);
        let unknown = page(2, Some(uuid::Uuid::new_v4()), "id", SortDir::Asc);
        assert!(matches!(
            list(all.clone(), unknown, scope("p1")).await,
            Err(StoreError::NotFound)
        ));
        let other_cluster_marker = page(2, Some(machine_id(5)), "id", SortDir::Asc);
        assert!(matches!(
            list(all.clone(), other_cluster_marker, scope("p1")).await,
            Err(StoreError::NotFound)
        ));

        // Another project sees none of them; all projects, all of them.
        let got = list(all.clone(), first.clone(), scope("p2"))
            .await
            .expect("p2");
        assert!(got.is_empty());
        let admin = Scope {
            project_id: "p2".into(),
            all_projects: true,
        };
        let got = list(all.clone(), first.clone(), admin)
            .await
            .expect("all projects");
        assert_eq!(got.len(), 4);

        // One machine by name or uuid, spec and status whole.
        let m1 = store.get_machine(&cid1, "m-1").await.expect("by name");
        assert_eq!(m1.uuid.0, machine_id(1));
        assert_eq!(m1.role, MachineRole::Master);
        assert_eq!((m1.cluster_id, m1.nodegroup_id), (cid1, m));
        assert_eq!(m1.project_id, "p1");
        let v = |s: &str| KubeVersion::parse(s).expect("version");
        assert_eq!(m1.spec.versions.kubelet, Some(v("1.31.4")));
        assert_eq!(m1.spec.versions.control_plane, Some(v("v1.31.4")));
        let runtime = m1.spec.container_runtime.as_ref().expect("runtime");
        assert_eq!(
            (runtime.name.as_str(), runtime.version.as_deref()),
            ("containerd", Some("1.7.22"))
        );
        assert_eq!(m1.spec.os_image.as_deref(), Some("ubuntu-24.04"));
        assert_eq!(m1.spec.flavor.as_deref(), Some("m1.large"));
        assert_eq!(m1.spec.provider_config, json!({"a": [1]}));
        assert_eq!(m1.spec.taints[0].effect, "NoSchedule");
        assert_eq!(m1.spec.labels["tier"], "cp");
        assert_eq!(m1.status.phase, MachinePhase::Running);
        assert_eq!(m1.status.provider_id.as_deref(), Some("openstack:///m1"));
        assert_eq!(m1.status.node_ref.as_deref(), Some("c1-m-1"));
        assert_eq!(
            m1.status.addresses,
            [MachineAddress {
                kind: "InternalIP".into(),
                address: "10.0.0.5".into()
            }]
        );
        assert_eq!(m1.status.versions.kubelet, Some(v("v1.31.4")));
        assert_eq!(m1.status.last_change, Some(ChangeMode::InPlace));
        assert!(m1.status.last_updated.is_some());
        let w2_read = store
            .get_machine(&cid1, &machine_id(3).simple().to_string())
            .await
            .expect("by uuid, any uuid form");
        assert_eq!(w2_read.name.as_str(), "w-2");
        assert_eq!(w2_read.status.phase, MachinePhase::Failed);
        assert_eq!(w2_read.status.error_reason.as_deref(), Some("CreateError"));
        assert_eq!(w2_read.status.error_message.as_deref(), Some("no capacity"));
        assert_eq!(w2_read.status.provider_id, None);
        let in_c2 = store.get_machine(&cid2, "w-1").await.expect("c2's w-1");
        assert_eq!(in_c2.uuid.0, machine_id(5));
        assert!(matches!(
            store.get_machine(&cid2, "w-2").await,
            Err(StoreError::NotFound)
        ));
        assert!(
            matches!(
                store.get_machine(&cid2, &machine_id(1).to_string()).await,
                Err(StoreError::NotFound)
            ),
            "another cluster's machine by uuid is not found"
        );

        // A machine goes with its node group and its cluster.
        exec_all(&url, &[format!("DELETE FROM nodegroup WHERE uuid = '{w}'")]).await;
        let got = list(all.clone(), first.clone(), scope("p1"))
            .await
            .expect("after delete");
        assert_eq!(names(&got), ["m-1"]);
    }
);

// A second machine of the same name in one cluster runs into the named constraint.
contract!(
    a_machine_name_is_unique_in_its_cluster,
    |store: Arc<dyn Store>, url: String| async move {
        let t = store
            .create_cluster_template(&new_template("p1", spec("t1")), &[])
            .await
            .expect("template");
        let (c1, sql) = cluster_fixture(
            "p1",
            "c1",
            &t.uuid.to_string(),
            "CREATE_COMPLETE",
            &[("w", "worker", 2, "[]", "CREATE_COMPLETE", None)],
        );
        exec_all(&url, &sql).await;
        let w = store
            .get_nodegroup(&ClusterId(c1), "w")
            .await
            .expect("w")
            .uuid;
        let row = |n: u32| {
            machine_fixture(
                &machine_id(n).to_string(),
                "w-1",
                "worker",
                "p1",
                c1,
                &w,
                "Running",
                None,
                "{}",
                "{}",
            )
        };
        exec_all(&url, &[row(1)]).await;
        let err = if url.starts_with("sqlite") {
            let pool = sqlx::SqlitePool::connect(&url).await.expect("sqlite");
            sqlx::query(&row(2))
                .execute(&pool)
                .await
                .expect_err("dup")
                .to_string()
        } else {
            let pool = sqlx::PgPool::connect(&url).await.expect("pg");
            sqlx::query(&row(2))
                .execute(&pool)
                .await
                .expect_err("dup")
                .to_string()
        };
        assert!(
            err.contains("uniq_machine0cluster_id0name")
                || err.contains("machine.cluster_id, machine.name"),
            "{err}"
        );
    }
);

/// A fresh database migrated up to (not including) the migration named `cutoff`, then
/// `sql` run on it as the schema was, then the store's own migration of the rest.
async fn migrated_after(
    backend: Backend,
    cutoff: &str,
    sql: &[String],
) -> (
    crate::helpers::TestDb,
    std::sync::Arc<dyn fleetyard::store::Store>,
) {
    let db = crate::helpers::TestDb::new(backend).await;
    let (folder, url) = match backend {
        Backend::Postgres => ("migrations", db.url.clone()),
        Backend::Sqlite => ("migrations-sqlite", format!("{}?mode=rwc", db.url)),
    };
    let earlier = std::env::temp_dir().join(format!("fy-mig-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&earlier).expect("temp dir");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    for f in std::fs::read_dir(&source).expect("migrations") {
        let path = f.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name < cutoff {
            std::fs::copy(&path, earlier.join(name)).expect("copy");
        }
    }
    let migrator = sqlx::migrate::Migrator::new(earlier.as_path())
        .await
        .expect("migrator");
    match backend {
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&url).await.expect("pg");
            migrator.run(&pool).await.expect("earlier migrations");
            for s in sql {
                sqlx::query(s).execute(&pool).await.expect(s);
            }
            pool.close().await;
        }
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&url).await.expect("sqlite");
            migrator.run(&pool).await.expect("earlier migrations");
            for s in sql {
                sqlx::query(s).execute(&pool).await.expect(s);
            }
            pool.close().await;
        }
    }
    let _ = std::fs::remove_dir_all(&earlier);
    let store = fleetyard::store::connect(&db.url, 2).await.expect("store");
    store.migrate().await.expect("the rest");
    (db, store)
}

/// Migrates a fresh database up to (not including) the machine migration, writes clusters and
/// node groups as they were, then lets the store migrate the rest: every node group gets
/// `node_count` machines named by [`MachineName::for_nodegroup`]'s rule.
async fn existing_nodegroups_get_their_machines(backend: Backend) {
    use fleetyard::domain::machine::{MachineName, MachinePhase, MachineRole};
    use fleetyard::store::MachineFilter;
    let c1 = "b1000000-0000-4000-8000-000000000001";
    let c2 = "b1000000-0000-4000-8000-000000000002";
    let groups = [
        // uuid, name, cluster, role, count, flavor, image, labels, taints
        (
            "c0000000-0000-4000-8000-000000000001",
            "default-master",
            c1,
            "master",
            1,
            "m1.small",
            "img",
            "{}",
            "[]",
        ),
        (
            "c0000000-0000-4000-8000-000000000002",
            "default-worker",
            c1,
            "worker",
            3,
            "m1.large",
            "img",
            r#"{"tier": "gpu"}"#,
            r#"[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]"#,
        ),
        (
            "c0000000-0000-4000-8000-000000000003",
            "GPU_Pool",
            c1,
            "gpu",
            2,
            "g1",
            "img",
            "{}",
            "[]",
        ),
        (
            "c0000000-0000-4000-8000-000000000004",
            "empty",
            c1,
            "worker",
            0,
            "m1",
            "img",
            "{}",
            "[]",
        ),
        (
            "c0000000-0000-4000-8000-000000000005",
            "default-worker",
            c2,
            "worker",
            1,
            "m1",
            "img",
            "{}",
            "[]",
        ),
    ];
    let mut sql = Vec::new();
    for (c, name) in [(c1, "one"), (c2, "two")] {
        sql.push(format!(
            "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, \
             created_at, registry_name) VALUES ('{c}', 'p', 'u', '{name}', \
             '00000000-0000-4000-8000-00000000e7e7', 'CREATE_COMPLETE', CURRENT_TIMESTAMP, \
             '{name}')"
        ));
    }
    for (g, name, c, role, count, flavor, image, labels, taints) in groups {
        sql.push(format!(
            "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, flavor_id, image_id, \
             node_count, role, status, node_labels, node_taints, created_at) VALUES ('{g}', \
             '{name}', '{c}', 'p', '{flavor}', '{image}', {count}, '{role}', 'CREATE_COMPLETE', \
             '{labels}', '{taints}', CURRENT_TIMESTAMP)"
        ));
    }
    let (_db, store) = migrated_after(backend, "20261127000011", &sql).await;

    let all = MachineFilter::default();
    let first = page(100, None, "id", SortDir::Asc);
    let one = ClusterId(c1.parse().expect("uuid"));
    let got = store
        .list_machines(&one, &scope("p"), &all, &first)
        .await
        .expect("machines");
    let names: Vec<String> = got.iter().map(|m| m.name.to_string()).collect();
    let gpu = "nodegroup-c0000000-0000-4000-8000-000000000003";
    assert_eq!(
        names,
        [
            "default-master-1".to_string(),
            "default-worker-1".into(),
            "default-worker-2".into(),
            "default-worker-3".into(),
            format!("{gpu}-1"),
            format!("{gpu}-2"),
        ],
        "node_count machines per group, in group then number order; none for an empty group"
    );
    for (m, (g, name, _, role, _, flavor, image, _, _)) in got.iter().zip([
        groups[0], groups[1], groups[1], groups[1], groups[2], groups[2],
    ]) {
        assert_eq!(m.nodegroup_id.to_string(), g);
        let expected_role = if role == "master" {
            MachineRole::Master
        } else {
            MachineRole::Worker
        };
        assert_eq!(m.role, expected_role, "{}", m.name);
        assert_eq!(m.project_id, "p");
        assert_eq!(m.status.phase, MachinePhase::Running);
        assert_eq!(m.spec.flavor.as_deref(), Some(flavor));
        assert_eq!(m.spec.os_image.as_deref(), Some(image));
        assert_eq!(
            m.spec.versions.kubelet, None,
            "not recorded before machines existed"
        );
        let n: u32 = m
            .name
            .as_str()
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("n");
        assert_eq!(
            m.name,
            MachineName::for_nodegroup(name, g.parse().expect("uuid"), n),
            "the domain's rule names it the same"
        );
    }
    assert_eq!(got[1].spec.labels["tier"], "gpu");
    assert_eq!(got[1].spec.taints[0].value.as_deref(), Some("yes"));
    assert!(got[0].spec.taints.is_empty());
    let uuids: std::collections::BTreeSet<_> = got.iter().map(|m| m.uuid).collect();
    assert_eq!(uuids.len(), 6, "every machine its own uuid");

    let two = ClusterId(c2.parse().expect("uuid"));
    let got = store
        .list_machines(&two, &scope("p"), &all, &first)
        .await
        .expect("machines of two");
    let names: Vec<&str> = got.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["default-worker-1"],
        "the same name in another cluster"
    );
    drop(store);
}

#[tokio::test]
async fn existing_nodegroups_get_their_machines_on_postgres() {
    existing_nodegroups_get_their_machines(Backend::Postgres).await;
}

#[tokio::test]
async fn existing_nodegroups_get_their_machines_on_sqlite() {
    existing_nodegroups_get_their_machines(Backend::Sqlite).await;
}

/// Node groups written after the first backfill, as the schema between the two migrations
/// let them be (a group that shrank, one that grew, one with no machines yet), get exactly
/// `node_count` machines from the re-sync: the surplus goes, the missing are made, the rest
/// are kept as they were.
async fn the_resync_brings_every_node_group_to_its_node_count(backend: Backend) {
    use fleetyard::domain::machine::MachinePhase;
    use fleetyard::store::MachineFilter;
    let c = "b2000000-0000-4000-8000-000000000001";
    let mut sql = vec![format!(
        "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, \
         created_at, registry_name) VALUES ('{c}', 'p', 'u', 'one', \
         '00000000-0000-4000-8000-00000000e7e7', 'UPDATE_IN_PROGRESS', CURRENT_TIMESTAMP, 'one')"
    )];
    // uuid, name, count, status, the machines it has
    let groups = [
        (
            "c1000000-0000-4000-8000-000000000001",
            "shrank",
            2,
            "UPDATE_COMPLETE",
            3,
        ),
        (
            "c1000000-0000-4000-8000-000000000002",
            "grew",
            3,
            "UPDATE_COMPLETE",
            1,
        ),
        (
            "c1000000-0000-4000-8000-000000000003",
            "fresh",
            2,
            "CREATE_IN_PROGRESS",
            0,
        ),
    ];
    for (i, (g, name, count, status, has)) in groups.into_iter().enumerate() {
        sql.push(format!(
            "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, flavor_id, image_id, \
             node_count, role, status, node_labels, node_taints, created_at) VALUES ('{g}', \
             '{name}', '{c}', 'p', 'm1', 'img', {count}, 'worker', '{status}', '{{}}', '[]', \
             CURRENT_TIMESTAMP)"
        ));
        for n in 1..=has {
            sql.push(format!(
                "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, \
                 spec, phase, status, created_at) VALUES ('{}', '{name}-{n}', 'worker', 'p', \
                 '{c}', '{g}', '{{}}', 'Running', '{{}}', CURRENT_TIMESTAMP)",
                machine_uuid(i, n)
            ));
        }
    }
    let (_db, store) = migrated_after(backend, "20261127000012", &sql).await;
    let got = store
        .list_machines(
            &ClusterId(c.parse().expect("uuid")),
            &scope("p"),
            &MachineFilter::default(),
            &page(100, None, "name", SortDir::Asc),
        )
        .await
        .expect("machines");
    let shown: Vec<(String, MachinePhase)> = got
        .iter()
        .map(|m| (m.name.to_string(), m.status.phase))
        .collect();
    let running = MachinePhase::Running;
    let pending = MachinePhase::Pending;
    assert_eq!(
        shown,
        [
            ("fresh-1".to_string(), pending),
            ("fresh-2".into(), pending),
            ("grew-1".into(), running),
            ("grew-2".into(), running),
            ("grew-3".into(), running),
            ("shrank-1".into(), running),
            ("shrank-2".into(), running),
        ],
        "the surplus shrank-3 is gone; a group in progress gets Pending machines"
    );
    let kept = got
        .iter()
        .find(|m| m.name.as_str() == "grew-1")
        .expect("grew-1");
    assert_eq!(
        kept.uuid.to_string(),
        machine_uuid(1, 1),
        "an existing machine keeps its uuid"
    );
}

/// The uuid of the `n`-th machine of the `group`-th node group of a test.
fn machine_uuid(group: usize, n: i32) -> String {
    format!("d{group}000000-0000-4000-8000-0000000000{n:02}")
}

#[tokio::test]
async fn the_resync_brings_every_node_group_to_its_node_count_on_postgres() {
    the_resync_brings_every_node_group_to_its_node_count(Backend::Postgres).await;
}

#[tokio::test]
async fn the_resync_brings_every_node_group_to_its_node_count_on_sqlite() {
    the_resync_brings_every_node_group_to_its_node_count(Backend::Sqlite).await;
}
