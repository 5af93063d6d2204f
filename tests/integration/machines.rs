//! `/v1/clusters/{c}/machines` over HTTP (microversion 1.19): the machines a cluster create and
//! a resize make; then, with machines written as SQL fixtures in place of the cluster's own (so
//! the bodies are known exactly), the representation, the `nodegroup`, `role` and `phase`
//! filters, keyset pages and sorting with Magnum's 400s, 404s for unknown clusters and machines
//! and for another project's cluster, and the 406 below 1.19; on PostgreSQL and SQLite.

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::Api;
use crate::helpers::{
    at, complete_cluster_with, conductor_from, exec_sql, spawn_keeping, Backend, Resp, TestApp,
};

/// The app, a cluster of project A with four machines, and what the tests name.
struct Env {
    app: TestApp,
    h: HeaderMap,
    cluster: String,
    master_ng: String,
    worker_ng: String,
    /// A second cluster of A's, with one machine of its own.
    other_cluster: String,
}

/// The uuid of fixture machine `n`.
fn machine_id(n: u32) -> String {
    format!("a7000000-0000-4000-8000-{n:012}")
}

const M1: u32 = 1;
const W1: u32 = 2;
const W2: u32 = 3;
const W3: u32 = 4;
/// The machine of the second cluster.
const X1: u32 = 9;

const MASTER_SPEC: &str = r#"{"versions": {"kubelet": "v1.31.4", "controlPlane": "v1.31.4"},
    "containerRuntime": {"name": "containerd", "version": "1.7.22"},
    "osImage": "ubuntu-24.04", "flavor": "m1.large", "providerConfig": {"secret": [1]},
    "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
    "labels": {"tier": "cp"}}"#;
const MASTER_STATUS: &str = r#"{"nodeRef": "k8s-m-1",
    "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
    "versions": {"kubelet": "v1.31.4"}, "lastChange": "InPlace",
    "lastUpdated": "2026-11-27T10:00:00Z"}"#;
const FAILED_STATUS: &str = r#"{"errorReason": "CreateError", "errorMessage": "no capacity"}"#;

/// One machine row, as SQL.
#[allow(clippy::too_many_arguments)]
fn machine_row(
    n: u32,
    name: &str,
    role: &str,
    cluster: &str,
    group: &str,
    phase: &str,
    provider_id: Option<&str>,
    spec: &str,
    status: &str,
) -> String {
    let provider = provider_id.map_or("NULL".to_string(), |p| format!("'{p}'"));
    format!(
        "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
         phase, provider_id, status, created_at) VALUES ('{}', '{name}', '{role}', \
         'project-a', '{cluster}', '{group}', '{spec}', '{phase}', {provider}, '{status}', \
         CURRENT_TIMESTAMP)",
        machine_id(n)
    )
}

impl Env {
    async fn new(backend: Backend) -> Env {
        let (app, settings) = spawn_keeping(backend, crate::helpers::instant_settings).await;
        let conductor = conductor_from(&app, &settings);
        let h = at(&app.headers, "latest");
        let cluster = complete_cluster_with(&app, &conductor, "k8s", json!({}), &h).await;
        let other_cluster = complete_cluster_with(&app, &conductor, "k8s-2", json!({}), &h).await;
        let ng = |c: String, name: &'static str| {
            let (app, h) = (&app, &h);
            async move {
                let r = app
                    .get_as(&format!("/v1/clusters/{c}/nodegroups/{name}"), h)
                    .await;
                assert_eq!(r.status, 200, "{}", r.text);
                r.body["uuid"].as_str().expect("uuid").to_string()
            }
        };
        let master_ng = ng(cluster.clone(), "default-master").await;
        let worker_ng = ng(cluster.clone(), "default-worker").await;
        let other_worker = ng(other_cluster.clone(), "default-worker").await;
        let (c, m, w) = (&cluster, &master_ng, &worker_ng);
        let statements = vec![
            format!("DELETE FROM machine WHERE cluster_id IN ('{c}', '{other_cluster}')"),
            machine_row(
                M1,
                "m-1",
                "master",
                c,
                m,
                "Running",
                Some("openstack:///m1"),
                MASTER_SPEC,
                MASTER_STATUS,
            ),
            machine_row(
                W1,
                "w-1",
                "worker",
                c,
                w,
                "Running",
                Some("openstack:///w1"),
                "{}",
                "{}",
            ),
            machine_row(
                W2,
                "w-2",
                "worker",
                c,
                w,
                "Failed",
                None,
                "{}",
                FAILED_STATUS,
            ),
            machine_row(W3, "w-3", "worker", c, w, "Provisioning", None, "{}", "{}"),
            machine_row(
                X1,
                "w-1",
                "worker",
                &other_cluster,
                &other_worker,
                "Running",
                None,
                "{}",
                "{}",
            ),
        ];
        exec_sql(&app.db.url, &statements).await;
        Env {
            app,
            h,
            cluster,
            master_ng,
            worker_ng,
            other_cluster,
        }
    }

    async fn get(&self, path: &str) -> Resp {
        self.app.get_as(path, &self.h).await
    }

    /// `GET /v1/clusters/{cluster}/machines{query}` (200 expected); the body.
    async fn list(&self, query: &str) -> Value {
        let r = self
            .get(&format!("/v1/clusters/{}/machines{query}", self.cluster))
            .await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        r.body
    }

    /// The names of a list's machines, in order.
    async fn names(&self, query: &str) -> Vec<String> {
        names_of(&self.list(query).await)
    }

    /// The `next` link of `machines?{query}` made relative to the app.
    fn next_of(&self, body: &Value) -> Option<String> {
        body["next"].as_str().map(|n| {
            n.strip_prefix(&self.app.address)
                .unwrap_or_else(|| panic!("{n} is not on the app's address"))
                .to_string()
        })
    }
}

fn names_of(body: &Value) -> Vec<String> {
    body["machines"]
        .as_array()
        .expect("a machines list")
        .iter()
        .map(|m| m["name"].as_str().expect("name").to_string())
        .collect()
}

// ---- The representation ---------------------------------------------------------------------

async fn a_clusters_machines_are_listed_whole_and_shown_by_uuid_or_name(backend: Backend) {
    let env = Env::new(backend).await;
    let (c, a) = (&env.cluster, &env.app.address);
    let body = env.list("").await;
    assert_eq!(names_of(&body), ["m-1", "w-1", "w-2", "w-3"], "id order");
    assert!(body.get("next").is_none(), "{body}");
    let m1 = machine_id(M1);
    let first = &body["machines"][0];
    assert!(first["created_at"].is_string(), "{first}");
    assert_eq!(
        first,
        &json!({
            "uuid": m1,
            "name": "m-1",
            "cluster_id": c,
            "nodegroup_id": env.master_ng,
            "role": "master",
            "project_id": "project-a",
            "spec": {
                "versions": {"kubelet": "v1.31.4", "control_plane": "v1.31.4"},
                "container_runtime": {"name": "containerd", "version": "1.7.22"},
                "os_image": "ubuntu-24.04",
                "flavor": "m1.large",
                "taints": [{"key": "node-role.kubernetes.io/control-plane", "value": null,
                            "effect": "NoSchedule"}],
                "labels": {"tier": "cp"},
            },
            "status": {
                "phase": "Running",
                "provider_id": "openstack:///m1",
                "node_ref": "k8s-m-1",
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "versions": {"kubelet": "v1.31.4", "control_plane": null},
                "error_reason": null,
                "error_message": null,
                "last_updated": "2026-11-27T10:00:00+00:00",
                "last_change": "InPlace",
            },
            "created_at": first["created_at"],
            "updated_at": null,
            "links": [
                {"href": format!("{a}/v1/clusters/{c}/machines/{m1}"), "rel": "self"},
                {"href": format!("{a}/clusters/{c}/machines/{m1}"), "rel": "bookmark"},
            ],
        }),
        "the driver's providerConfig stays out of /v1"
    );
    // A machine with nothing recorded shows every field, null or empty.
    let w2 = &body["machines"][2];
    assert_eq!(
        (&w2["spec"], &w2["status"]),
        (
            &json!({"versions": {"kubelet": null, "control_plane": null},
                    "container_runtime": null, "os_image": null, "flavor": null,
                    "taints": [], "labels": {}}),
            &json!({"phase": "Failed", "provider_id": null, "node_ref": null, "addresses": [],
                    "versions": {"kubelet": null, "control_plane": null},
                    "error_reason": "CreateError", "error_message": "no capacity",
                    "last_updated": null, "last_change": null}),
        )
    );
    assert_eq!(w2["nodegroup_id"], env.worker_ng.as_str());

    // Shown by uuid (any spelling) or by name, through the cluster's uuid or name: the item.
    for path in [
        format!("/v1/clusters/{c}/machines/{m1}"),
        format!("/v1/clusters/{c}/machines/{}", m1.replace('-', "")),
        format!("/v1/clusters/{c}/machines/m-1"),
        "/v1/clusters/k8s/machines/m-1".to_string(),
    ] {
        let r = env.get(&path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert_eq!(&r.body, first, "{path}");
    }
    // The cluster by name lists the same machines; each cluster has its own `w-1`.
    assert_eq!(env.get("/v1/clusters/k8s/machines").await.body, body);
    let other = env
        .get(&format!("/v1/clusters/{}/machines/w-1", env.other_cluster))
        .await;
    assert_eq!(other.status, 200, "{}", other.text);
    assert_eq!(other.body["uuid"], machine_id(X1));
}

#[tokio::test]
async fn a_clusters_machines_are_listed_whole_and_shown_by_uuid_or_name_on_postgres() {
    a_clusters_machines_are_listed_whole_and_shown_by_uuid_or_name(Backend::Postgres).await;
}

#[tokio::test]
async fn a_clusters_machines_are_listed_whole_and_shown_by_uuid_or_name_on_sqlite() {
    a_clusters_machines_are_listed_whole_and_shown_by_uuid_or_name(Backend::Sqlite).await;
}

// ---- Filters --------------------------------------------------------------------------------

async fn machines_filter_by_nodegroup_role_and_phase(backend: Backend) {
    let env = Env::new(backend).await;
    let c = &env.cluster;
    for (query, expected) in [
        ("?nodegroup=default-worker", vec!["w-1", "w-2", "w-3"]),
        (
            &format!("?nodegroup={}", env.master_ng) as &str,
            vec!["m-1"],
        ),
        ("?role=master", vec!["m-1"]),
        ("?role=worker", vec!["w-1", "w-2", "w-3"]),
        ("?phase=Running", vec!["m-1", "w-1"]),
        ("?phase=Failed", vec!["w-2"]),
        ("?phase=Deleting", vec![]),
        ("?role=worker&phase=Running", vec!["w-1"]),
        ("?nodegroup=default-master&phase=Failed", vec![]),
    ] {
        assert_eq!(env.names(query).await, expected, "{query}");
    }
    // An unknown node group is Magnum's 404 for it; bad role and phase values are 400s that
    // name the accepted ones.
    env.get(&format!("/v1/clusters/{c}/machines?nodegroup=nope"))
        .await
        .assert_error(404, "Nodegroup nope could not be found.");
    env.get(&format!(
        "/v1/clusters/{c}/machines?nodegroup={}",
        other_worker_of(&env).await
    ))
    .await
    .assert_error(
        404,
        &format!(
            "Nodegroup {} could not be found.",
            other_worker_of(&env).await
        ),
    );
    env.get(&format!("/v1/clusters/{c}/machines?role=boss"))
        .await
        .assert_error(
            400,
            "Invalid machine role 'boss': must be one of master, worker.",
        );
    env.get(&format!("/v1/clusters/{c}/machines?phase=running"))
        .await
        .assert_error(
            400,
            "Invalid machine phase 'running': must be one of Pending, Provisioning, Running, \
             Deleting, Failed.",
        );
    env.get(&format!("/v1/clusters/{c}/machines?state=Running"))
        .await
        .assert_error(400, "Unknown argument: \"state\"");
    env.get(&format!("/v1/clusters/{c}/machines/m-1?role=master"))
        .await
        .assert_error(400, "Unknown argument: \"role\"");
}

/// The default worker group of the second cluster (not a group of the first).
async fn other_worker_of(env: &Env) -> String {
    let r = env
        .get(&format!(
            "/v1/clusters/{}/nodegroups/default-worker",
            env.other_cluster
        ))
        .await;
    r.body["uuid"].as_str().expect("uuid").to_string()
}

#[tokio::test]
async fn machines_filter_by_nodegroup_role_and_phase_on_postgres() {
    machines_filter_by_nodegroup_role_and_phase(Backend::Postgres).await;
}

#[tokio::test]
async fn machines_filter_by_nodegroup_role_and_phase_on_sqlite() {
    machines_filter_by_nodegroup_role_and_phase(Backend::Sqlite).await;
}

// ---- Pages and sorting ----------------------------------------------------------------------

async fn machines_page_by_marker_and_limit_and_sort_with_magnums_400s(backend: Backend) {
    let env = Env::new(backend).await;
    let c = &env.cluster;
    let a = &env.app.address;
    // Full pages carry the `next` link; following it walks the rest.
    let page = env.list("?limit=2").await;
    assert_eq!(names_of(&page), ["m-1", "w-1"]);
    assert_eq!(
        page["next"],
        format!(
            "{a}/v1/clusters/{c}/machines?sort_key=id&sort_dir=asc&limit=2&marker={}",
            machine_id(W1)
        )
    );
    let next = env.next_of(&page).expect("next");
    let page = env.get(&next).await.body;
    assert_eq!(names_of(&page), ["w-2", "w-3"]);
    let last = env.get(&env.next_of(&page).expect("next")).await.body;
    assert_eq!(last, json!({"machines": []}));
    assert_eq!(
        env.names(&format!("?marker={}", machine_id(W1))).await,
        ["w-2", "w-3"]
    );

    // The filters carry over to the next page (the node group by its uuid).
    let page = env.list("?role=worker&limit=2").await;
    assert_eq!(names_of(&page), ["w-1", "w-2"]);
    assert_eq!(
        page["next"],
        format!(
            "{a}/v1/clusters/{c}/machines?sort_key=id&sort_dir=asc&limit=2&marker={}&role=worker",
            machine_id(W2)
        )
    );
    let page = env.get(&env.next_of(&page).expect("next")).await.body;
    assert_eq!(names_of(&page), ["w-3"]);
    assert!(page.get("next").is_none(), "{page}");
    let page = env
        .list("?nodegroup=default-worker&phase=Running&limit=1")
        .await;
    assert_eq!(names_of(&page), ["w-1"]);
    assert!(
        page["next"]
            .as_str()
            .is_some_and(|n| n.ends_with(&format!("&nodegroup={}&phase=Running", env.worker_ng))),
        "{page}"
    );
    assert_eq!(
        names_of(&env.get(&env.next_of(&page).expect("next")).await.body),
        Vec::<String>::new()
    );

    // Sorting by any sortable column, either way (ties by id).
    for (query, expected) in [
        ("?sort_key=name&sort_dir=desc", ["w-3", "w-2", "w-1", "m-1"]),
        ("?sort_key=phase", ["w-2", "w-3", "m-1", "w-1"]),
        ("?sort_key=role&sort_dir=asc", ["m-1", "w-1", "w-2", "w-3"]),
        ("?sort_key=id&sort_dir=desc", ["w-3", "w-2", "w-1", "m-1"]),
    ] {
        assert_eq!(env.names(query).await, expected, "{query}");
    }
    let page = env.list("?sort_key=name&sort_dir=desc&limit=3").await;
    let page = env.get(&env.next_of(&page).expect("next")).await.body;
    assert_eq!(names_of(&page), ["m-1"]);

    // Magnum's 400s for bad page parameters, and its 404 for a marker that names no machine of
    // the cluster (another cluster's included).
    let list = |q: &str| format!("/v1/clusters/{c}/machines{q}");
    env.get(&list("?sort_key=spec")).await.assert_error(
        400,
        "The sort_key value \"spec\" is an invalid field for sorting",
    );
    env.get(&list("?sort_dir=up")).await.assert_error(
        400,
        "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
    );
    env.get(&list("?limit=0"))
        .await
        .assert_error(400, "Limit must be positive");
    env.get(&list("?limit=two"))
        .await
        .assert_error(400, "Invalid input for limit: two is not an integer.");
    env.get(&list("?marker=m-1"))
        .await
        .assert_error(400, "Expected a uuid but received m-1.");
    let elsewhere = machine_id(X1);
    env.get(&list(&format!("?marker={elsewhere}")))
        .await
        .assert_error(404, &format!("Machine {elsewhere} could not be found."));
}

#[tokio::test]
async fn machines_page_by_marker_and_limit_and_sort_with_magnums_400s_on_postgres() {
    machines_page_by_marker_and_limit_and_sort_with_magnums_400s(Backend::Postgres).await;
}

#[tokio::test]
async fn machines_page_by_marker_and_limit_and_sort_with_magnums_400s_on_sqlite() {
    machines_page_by_marker_and_limit_and_sort_with_magnums_400s(Backend::Sqlite).await;
}

// ---- Not found, other projects, microversions -----------------------------------------------

async fn unknown_clusters_and_machines_and_another_projects_cluster_are_404(backend: Backend) {
    let env = Env::new(backend).await;
    let c = &env.cluster;
    env.get("/v1/clusters/nope/machines")
        .await
        .assert_error(404, "Cluster nope could not be found.");
    env.get("/v1/clusters/nope/machines/m-1")
        .await
        .assert_error(404, "Cluster nope could not be found.");
    env.get(&format!("/v1/clusters/{c}/machines/nope"))
        .await
        .assert_error(404, "Machine nope could not be found.");
    // Another cluster's machine, by uuid, is not this cluster's.
    let x1 = machine_id(X1);
    env.get(&format!("/v1/clusters/{c}/machines/{x1}"))
        .await
        .assert_error(404, &format!("Machine {x1} could not be found."));

    // Project B gets exactly the answer for a cluster that does not exist.
    let b = at(&env.app.project_b(), "latest");
    for path in [
        format!("/v1/clusters/{c}/machines"),
        format!("/v1/clusters/{c}/machines/m-1"),
        format!("/v1/clusters/{c}/machines/{}", machine_id(M1)),
    ] {
        env.app
            .get_as(&path, &b)
            .await
            .assert_error(404, &format!("Cluster {c} could not be found."));
    }
    // A's reader reads them; an administrator reads every project's.
    let reader = at(
        &env.app.as_identity("project-a", "reader-a", "reader"),
        "latest",
    );
    let admin = at(&env.app.admin(), "latest");
    let mine = env.list("").await;
    for h in [&reader, &admin] {
        let r = env
            .app
            .get_as(&format!("/v1/clusters/{c}/machines"), h)
            .await;
        assert_eq!((r.status, &r.body), (200, &mine), "{}", r.text);
        let r = env
            .app
            .get_as(&format!("/v1/clusters/{c}/machines/m-1"), h)
            .await;
        assert_eq!((r.status, &r.body), (200, &mine["machines"][0]));
    }
}

#[tokio::test]
async fn unknown_clusters_and_machines_and_another_projects_cluster_are_404_on_postgres() {
    unknown_clusters_and_machines_and_another_projects_cluster_are_404(Backend::Postgres).await;
}

#[tokio::test]
async fn unknown_clusters_and_machines_and_another_projects_cluster_are_404_on_sqlite() {
    unknown_clusters_and_machines_and_another_projects_cluster_are_404(Backend::Sqlite).await;
}

#[tokio::test]
async fn below_1_19_the_machine_routes_are_406_with_the_empty_framework_body() {
    let env = Env::new(Backend::Postgres).await;
    let c = &env.cluster;
    let list = format!("/v1/clusters/{c}/machines");
    let show = format!("/v1/clusters/{c}/machines/m-1");
    for version in [None, Some("1.9"), Some("1.18")] {
        let h = match version {
            Some(v) => at(&env.app.headers, v),
            None => env.app.headers.clone(),
        };
        for path in [&list, &show] {
            let r = env.app.get_as(path, &h).await;
            r.assert_framework_error(406);
            // Even for a cluster that does not exist: the route itself is newer.
            let missing = env.app.get_as(&path.replace(c.as_str(), "nope"), &h).await;
            missing.assert_framework_error(406);
        }
    }
    let h = at(&env.app.headers, "1.19");
    assert_eq!(env.app.get_as(&list, &h).await.status, 200);
    assert_eq!(env.app.get_as(&show, &h).await.status, 200);
    // No other method is served on the list; a machine's delete is 406 below 1.19 too.
    let posted = env
        .app
        .request(reqwest::Method::POST, &list, &env.h, Some(&json!({})))
        .await;
    posted.assert_framework_error(405);
    let deleted = env
        .app
        .request(
            reqwest::Method::DELETE,
            &show,
            &at(&env.app.headers, "1.18"),
            None,
        )
        .await;
    deleted.assert_framework_error(406);
}

// ---- The machines the cluster's own writes make ---------------------------------------------

/// `(name, role, phase)` of a list's machines, in order.
fn rows_of(body: &Value) -> Vec<(String, String, String)> {
    body["machines"]
        .as_array()
        .expect("a machines list")
        .iter()
        .map(|m| {
            let text = |v: &Value| v.as_str().expect("a string").to_string();
            (
                text(&m["name"]),
                text(&m["role"]),
                text(&m["status"]["phase"]),
            )
        })
        .collect()
}

async fn the_machines_a_cluster_create_and_a_resize_make_are_served(backend: Backend) {
    let (app, settings) = spawn_keeping(backend, crate::helpers::instant_settings).await;
    let conductor = conductor_from(&app, &settings);
    let h = at(&app.headers, "latest");
    let c = complete_cluster_with(&app, &conductor, "k8s", json!({}), &h).await;
    let list = |query: &'static str| {
        let (app, h, c) = (&app, &h, &c);
        async move {
            let r = app
                .get_as(&format!("/v1/clusters/{c}/machines{query}"), h)
                .await;
            assert_eq!(r.status, 200, "{query}: {}", r.text);
            r.body
        }
    };
    let row = |name: &str, role: &str, phase: &str| {
        (name.to_string(), role.to_string(), phase.to_string())
    };
    let body = list("").await;
    assert_eq!(
        rows_of(&body),
        [
            row("default-master-1", "master", "Running"),
            row("default-worker-1", "worker", "Running"),
        ]
    );
    for (m, group) in body["machines"]
        .as_array()
        .expect("list")
        .iter()
        .zip(["default-master", "default-worker"])
    {
        let ng = app
            .get_as(&format!("/v1/clusters/{c}/nodegroups/{group}"), &h)
            .await;
        assert_eq!(m["nodegroup_id"], ng.body["uuid"], "{m}");
        assert_eq!(m["cluster_id"], c.as_str());
    }

    // A resize's new machines are Pending until the driver's work completes.
    let r = app
        .with_headers(&h)
        .resize_cluster(&c, &json!({"node_count": 3}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        rows_of(&list("?phase=Pending").await),
        [
            row("default-worker-2", "worker", "Pending"),
            row("default-worker-3", "worker", "Pending"),
        ]
    );
    crate::helpers::drain(&conductor).await;
    assert_eq!(
        rows_of(&list("?nodegroup=default-worker&sort_dir=desc").await),
        [
            row("default-worker-3", "worker", "Running"),
            row("default-worker-2", "worker", "Running"),
            row("default-worker-1", "worker", "Running"),
        ]
    );
}

#[tokio::test]
async fn the_machines_a_cluster_create_and_a_resize_make_are_served_on_postgres() {
    the_machines_a_cluster_create_and_a_resize_make_are_served(Backend::Postgres).await;
}

#[tokio::test]
async fn the_machines_a_cluster_create_and_a_resize_make_are_served_on_sqlite() {
    the_machines_a_cluster_create_and_a_resize_make_are_served(Backend::Sqlite).await;
}
