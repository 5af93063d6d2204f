//! A node group's `node_count` is the number of its machines not being deleted, always: the
//! cluster and node group writes (create, resize, node count changes, deletes) carry the
//! machines along in their transactions, `nodes_to_remove` names the machines that go, and
//! the end of the conductor's operation settles them. On PostgreSQL and SQLite.

use fleetyard::domain::machine::MachinePhase;
use fleetyard::domain::ClusterId;
use fleetyard::store::{MachineFilter, PageRequest, Scope, SortDir};
use serde_json::json;

use crate::helpers::{
    complete_cluster_as, conductor, drain, id, instant, spawn_with, Api, Backend, TestApp,
};

/// `(name, phase)` of every machine of the cluster, by name (of one node group when given).
async fn machines(
    app: &TestApp,
    cluster: &str,
    nodegroup: Option<&str>,
) -> Vec<(String, MachinePhase)> {
    let uuid = ClusterId(id(cluster));
    let mut filter = MachineFilter::default();
    if let Some(ng) = nodegroup {
        let r = app.at("latest").get_nodegroup(cluster, ng).await;
        assert_eq!(r.status, 200, "{}", r.text);
        filter.nodegroup = Some(
            r.body["uuid"]
                .as_str()
                .expect("uuid")
                .parse()
                .expect("uuid"),
        );
    }
    let scope = Scope {
        project_id: String::new(),
        all_projects: true,
    };
    let page = PageRequest {
        limit: 1000,
        marker: None,
        sort_key: "name".into(),
        sort_dir: SortDir::Asc,
    };
    app.store
        .list_machines(&uuid, &scope, &filter, &page)
        .await
        .expect("machines")
        .into_iter()
        .map(|m| (m.name.to_string(), m.status.phase))
        .collect()
}

/// A resize of `cluster` with `body`, accepted (202).
async fn accepted_resize(app: &TestApp, cluster: &str, body: &serde_json::Value) {
    let r = app.at("latest").resize_cluster(cluster, body).await;
    assert_eq!(r.status, 202, "{}", r.text);
}

fn named(names: &[&str], phase: MachinePhase) -> Vec<(String, MachinePhase)> {
    names.iter().map(|n| (n.to_string(), phase)).collect()
}

const RUNNING: MachinePhase = MachinePhase::Running;
const PENDING: MachinePhase = MachinePhase::Pending;
const DELETING: MachinePhase = MachinePhase::Deleting;

async fn a_cluster_gets_a_machine_per_node_and_resizes_move_exactly_the_named_ones(
    backend: Backend,
) {
    let app = spawn_with(backend, |_| {}).await;
    let c = complete_cluster_as(&app, "m1", &app.headers).await;
    assert_eq!(
        machines(&app, &c, None).await,
        named(&["default-master-1", "default-worker-1"], RUNNING),
        "one machine per node of each default group, running once the create completed"
    );

    // Grow: the new machines are Pending until the driver's work completes.
    accepted_resize(&app, &c, &json!({"node_count": 3})).await;
    let mut want = named(&["default-master-1", "default-worker-1"], RUNNING);
    want.extend(named(&["default-worker-2", "default-worker-3"], PENDING));
    assert_eq!(machines(&app, &c, None).await, want);
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, Some("default-worker")).await,
        named(
            &["default-worker-1", "default-worker-2", "default-worker-3"],
            RUNNING
        )
    );

    // Shrink naming the middle one: that one goes, not the newest.
    accepted_resize(
        &app,
        &c,
        &json!({"node_count": 2, "nodes_to_remove": ["default-worker-2"]}),
    )
    .await;
    assert_eq!(
        machines(&app, &c, Some("default-worker")).await,
        vec![
            ("default-worker-1".to_string(), RUNNING),
            ("default-worker-2".into(), DELETING),
            ("default-worker-3".into(), RUNNING),
        ],
        "the named machine is being deleted and no longer counts"
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, Some("default-worker")).await,
        named(&["default-worker-1", "default-worker-3"], RUNNING)
    );

    // The next new machine takes the lowest free number.
    accepted_resize(&app, &c, &json!({"node_count": 3})).await;
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, Some("default-worker")).await,
        named(
            &["default-worker-1", "default-worker-2", "default-worker-3"],
            RUNNING
        )
    );

    // A name that is no machine of the group is Magnum's 400, and nothing changes.
    let r = app
        .at("latest")
        .resize_cluster(
            &c,
            &json!({"node_count": 1, "nodes_to_remove": ["default-worker-1", "node-x"]}),
        )
        .await;
    r.assert_error(
        400,
        "nodes_to_remove names node-x, which is not a machine of node group default-worker (by \
         name, uuid, provider id, node name or address).",
    );
    let master = app.at("latest").get_nodegroup(&c, "default-master").await;
    let r = app
        .at("latest")
        .resize_cluster(
            &c,
            &json!({"node_count": 1, "nodes_to_remove": ["default-master-1"]}),
        )
        .await;
    assert_eq!(
        r.status, 400,
        "a master machine is not a machine of the worker group: {}",
        r.text
    );
    assert_eq!(master.status, 200);
    let shown = app.at("latest").get_cluster(&c).await;
    assert_eq!(
        (
            shown.body["node_count"].clone(),
            shown.body["status"].clone()
        ),
        (json!(3), json!("UPDATE_COMPLETE"))
    );
    assert_eq!(machines(&app, &c, Some("default-worker")).await.len(), 3);

    // By uuid: the machine of that uuid goes.
    let uuid = app
        .store
        .get_machine(&ClusterId(id(&c)), "default-worker-3")
        .await
        .expect("machine")
        .uuid
        .to_string();
    accepted_resize(
        &app,
        &c,
        &json!({"node_count": 2, "nodes_to_remove": [uuid]}),
    )
    .await;
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, Some("default-worker")).await,
        named(&["default-worker-1", "default-worker-2"], RUNNING)
    );

    // The cluster's delete takes its machines with it.
    let r = app.at("latest").delete_cluster(&c).await;
    assert_eq!(r.status, 204, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(machines(&app, &c, None).await, vec![]);
}

#[tokio::test]
async fn a_cluster_gets_a_machine_per_node_and_resizes_move_exactly_the_named_ones_on_postgres() {
    a_cluster_gets_a_machine_per_node_and_resizes_move_exactly_the_named_ones(Backend::Postgres)
        .await;
}

#[tokio::test]
async fn a_cluster_gets_a_machine_per_node_and_resizes_move_exactly_the_named_ones_on_sqlite() {
    a_cluster_gets_a_machine_per_node_and_resizes_move_exactly_the_named_ones(Backend::Sqlite)
        .await;
}

async fn a_failed_resize_gives_back_the_machines_it_was_changing(backend: Backend) {
    let app = spawn_with(backend, |_| {}).await;
    let c = complete_cluster_as(&app, "m2", &app.headers).await;
    accepted_resize(&app, &c, &json!({"node_count": 3})).await;
    drain(&conductor(&app, instant())).await;
    let failing = || {
        conductor(
            &app,
            fleetyard::config::FakeDriverSection {
                fail_operations: "resize".into(),
                ..instant()
            },
        )
    };
    let before = machines(&app, &c, Some("default-worker")).await;

    // A shrink that fails: the machines it was removing run again, the count is back.
    accepted_resize(
        &app,
        &c,
        &json!({"node_count": 1, "nodes_to_remove": ["default-worker-1"]}),
    )
    .await;
    drain(&failing()).await;
    let shown = app.at("latest").get_cluster(&c).await;
    assert_eq!(
        (
            shown.body["node_count"].clone(),
            shown.body["status"].clone()
        ),
        (json!(3), json!("UPDATE_FAILED"))
    );
    assert_eq!(machines(&app, &c, Some("default-worker")).await, before);

    // A grow that fails: the machines it made are gone again.
    accepted_resize(&app, &c, &json!({"node_count": 5})).await;
    assert_eq!(machines(&app, &c, Some("default-worker")).await.len(), 5);
    drain(&failing()).await;
    assert_eq!(machines(&app, &c, Some("default-worker")).await, before);
}

#[tokio::test]
async fn a_failed_resize_gives_back_the_machines_it_was_changing_on_postgres() {
    a_failed_resize_gives_back_the_machines_it_was_changing(Backend::Postgres).await;
}

#[tokio::test]
async fn a_failed_resize_gives_back_the_machines_it_was_changing_on_sqlite() {
    a_failed_resize_gives_back_the_machines_it_was_changing(Backend::Sqlite).await;
}

async fn node_group_writes_carry_their_machines(backend: Backend) {
    let app = spawn_with(backend, |_| {}).await;
    let c = complete_cluster_as(&app, "m3", &app.headers).await;
    let r = app
        .at("latest")
        .create_nodegroup(&c, &json!({"name": "GPU_Pool", "node_count": 2}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let ng_uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    let pool = |n: u32| format!("nodegroup-{ng_uuid}-{n}");
    assert_eq!(
        machines(&app, &c, Some("GPU_Pool")).await,
        vec![(pool(1), PENDING), (pool(2), PENDING)],
        "a group whose name is no Kubernetes name names its machines by its uuid"
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, Some("GPU_Pool")).await,
        vec![(pool(1), RUNNING), (pool(2), RUNNING)]
    );

    // A resize of the group without names: the newest goes.
    accepted_resize(&app, &c, &json!({"node_count": 1, "nodegroup": "GPU_Pool"})).await;
    assert_eq!(
        machines(&app, &c, Some("GPU_Pool")).await,
        vec![(pool(1), RUNNING), (pool(2), DELETING)]
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, Some("GPU_Pool")).await,
        vec![(pool(1), RUNNING)]
    );

    // The cluster's node_count through PATCH moves the default worker group's machines.
    let r = app
        .at("latest")
        .patch_cluster(
            &c,
            &json!([{"op": "replace", "path": "/node_count", "value": 2}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        machines(&app, &c, Some("default-worker")).await,
        vec![
            ("default-worker-1".to_string(), RUNNING),
            ("default-worker-2".into(), PENDING)
        ]
    );
    drain(&conductor(&app, instant())).await;

    // The group's delete takes its machines, and only its own.
    let r = app.at("latest").delete_nodegroup(&c, "GPU_Pool").await;
    assert_eq!(r.status, 204, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        machines(&app, &c, None).await,
        named(
            &["default-master-1", "default-worker-1", "default-worker-2"],
            RUNNING
        )
    );
}

#[tokio::test]
async fn node_group_writes_carry_their_machines_on_postgres() {
    node_group_writes_carry_their_machines(Backend::Postgres).await;
}

#[tokio::test]
async fn node_group_writes_carry_their_machines_on_sqlite() {
    node_group_writes_carry_their_machines(Backend::Sqlite).await;
}

async fn the_driver_reports_each_machine_and_the_group_lists_their_addresses(backend: Backend) {
    let app = spawn_with(backend, |_| {}).await;
    let c = complete_cluster_as(&app, "m4", &app.headers).await;
    accepted_resize(&app, &c, &json!({"node_count": 3})).await;
    drain(&conductor(&app, instant())).await;
    accepted_resize(
        &app,
        &c,
        &json!({"node_count": 2, "nodes_to_remove": ["default-worker-2"]}),
    )
    .await;
    drain(&conductor(&app, instant())).await;

    let shown = app.at("latest").get_cluster(&c).await;
    let version = shown.body["coe_version"].as_str().expect("coe_version");
    let scope = Scope {
        project_id: String::new(),
        all_projects: true,
    };
    let page = PageRequest {
        limit: 10,
        marker: None,
        sort_key: "name".into(),
        sort_dir: SortDir::Asc,
    };
    let all = app
        .store
        .list_machines(&ClusterId(id(&c)), &scope, &MachineFilter::default(), &page)
        .await
        .expect("machines");
    let names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["default-master-1", "default-worker-1", "default-worker-3"]
    );
    for m in &all {
        assert_eq!(
            m.status.provider_id.as_deref(),
            Some(format!("fake://{}", m.uuid).as_str())
        );
        assert_eq!(m.status.node_ref.as_deref(), Some(m.name.as_str()));
        assert_eq!(
            m.status.versions.kubelet.as_ref().map(|v| v.to_string()),
            Some(version.to_string()),
            "{}",
            m.name
        );
        assert_eq!(
            m.status.versions.control_plane.is_some(),
            m.name.as_str() == "default-master-1"
        );
        assert!(m.status.last_updated.is_some());
    }
    // The worker group's node_addresses are its machines' addresses: the third machine's
    // address, not the second's, after the second went.
    let ng = app.at("latest").get_nodegroup(&c, "default-worker").await;
    let addresses: Vec<String> = all[1..]
        .iter()
        .map(|m| m.status.addresses[0].address.clone())
        .collect();
    assert_eq!(ng.body["node_addresses"], json!(addresses), "{}", ng.text);
    assert_ne!(addresses[0], addresses[1]);
}

#[tokio::test]
async fn the_driver_reports_each_machine_and_the_group_lists_their_addresses_on_postgres() {
    the_driver_reports_each_machine_and_the_group_lists_their_addresses(Backend::Postgres).await;
}

#[tokio::test]
async fn the_driver_reports_each_machine_and_the_group_lists_their_addresses_on_sqlite() {
    the_driver_reports_each_machine_and_the_group_lists_their_addresses(Backend::Sqlite).await;
}
