//! Deleting one machine, through either face: that node goes and its node group shrinks by
//! one, never a different node; the refusals (already going, the group at its minimum, a
//! cluster in a state no resize is accepted in) change nothing. On PostgreSQL and SQLite.

use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::json;

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{
    complete_cluster_as, conductor, drain, events_of, instant, spawn_with, Api, Backend, TestApp,
};

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

fn json_accept(h: &HeaderMap) -> HeaderMap {
    let mut h = h.clone();
    h.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    h
}

/// A complete cluster named `name` whose worker group has three running machines.
async fn three_workers(app: &TestApp, name: &str) -> String {
    let c = complete_cluster_as(app, name, &app.headers).await;
    let r = app
        .at("latest")
        .resize_cluster(&c, &json!({"node_count": 3}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(app, instant())).await;
    c
}

/// The worker group's machine names (and phases) as the Kubernetes face lists them.
async fn workers(app: &TestApp, cluster: &str) -> Vec<(String, String)> {
    let path = format!(
        "{BASE}/namespaces/project-a/machines?labelSelector=cluster.k8s.io%2Fcluster-name%3D{cluster},fleetyard.openstack.org%2Fnodegroup%3Ddefault-worker"
    );
    let r = app.get_as(&path, &json_accept(&app.headers)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|m| {
            (
                m["metadata"]["name"].as_str().unwrap_or("").to_string(),
                m["status"]["phase"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn named(names: &[&str], phase: &str) -> Vec<(String, String)> {
    names
        .iter()
        .map(|n| (n.to_string(), phase.to_string()))
        .collect()
}

#[rstest]
#[tokio::test]
async fn a_registry_delete_removes_exactly_that_machine(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c = three_workers(&app, "web").await;
    let one = format!("{BASE}/namespaces/project-a/machines/web-default-worker-2");
    let h = json_accept(&app.headers);

    // A dry run checks and writes nothing.
    let r = app
        .request(
            reqwest::Method::DELETE,
            &format!("{one}?dryRun=All"),
            &h,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Deleting");
    assert_eq!(
        workers(&app, "web").await,
        named(
            &[
                "web-default-worker-1",
                "web-default-worker-2",
                "web-default-worker-3"
            ],
            "Running"
        )
    );

    let r = app.request(reqwest::Method::DELETE, &one, &h, None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["kind"], "Machine");
    assert_eq!(r.body["metadata"]["name"], "web-default-worker-2");
    assert_eq!(r.body["status"]["phase"], "Deleting");
    assert!(
        r.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.text
    );
    let uid = r.body["metadata"]["uid"].as_str().expect("uid").to_string();
    let shown = app.at("latest").get_nodegroup(&c, "default-worker").await;
    assert_eq!(
        (
            shown.body["node_count"].clone(),
            shown.body["status"].clone()
        ),
        (json!(2), json!("UPDATE_IN_PROGRESS"))
    );
    assert_eq!(
        workers(&app, "web").await,
        vec![
            ("web-default-worker-1".to_string(), "Running".to_string()),
            ("web-default-worker-2".into(), "Deleting".into()),
            ("web-default-worker-3".into(), "Running".into()),
        ]
    );
    // A machine already going: 409, nothing more changes.
    let r = app.request(reqwest::Method::DELETE, &one, &h, None).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(
        r.body["message"],
        "Machine default-worker-2 is already being deleted."
    );
    let machine_events: Vec<(String, String)> = events_of(&app, &uid)
        .await
        .into_iter()
        .map(|(t, o, _)| (t, o))
        .collect();
    assert_eq!(
        machine_events,
        [("magnum.machine.delete".to_string(), "pending".to_string())],
        "one notification, from the delete that was accepted"
    );

    drain(&conductor(&app, instant())).await;
    assert_eq!(
        workers(&app, "web").await,
        named(&["web-default-worker-1", "web-default-worker-3"], "Running")
    );
    let r = app.get_as(&one, &h).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.body["reason"], "NotFound");

    // A master machine of a driver that does not resize masters: the resize's 400, as a
    // Status, and nothing changes.
    let master = format!("{BASE}/namespaces/project-a/machines/web-default-master-1");
    let r = app
        .request(reqwest::Method::DELETE, &master, &h, None)
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Resizing the master nodegroup is not supported by this driver."
    );
    let r = app.get_as(&master, &h).await;
    assert_eq!(r.body["status"]["phase"], "Running", "{}", r.text);

    // Another project's machine is not found, and stays.
    let b = app.as_identity("project-b", "user-b", "member,reader");
    let theirs = format!("{BASE}/namespaces/project-b/machines/web-default-worker-1");
    let r = app
        .request(reqwest::Method::DELETE, &theirs, &json_accept(&b), None)
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = app
        .request(
            reqwest::Method::DELETE,
            &one.replace("worker-2", "worker-1"),
            &json_accept(&b),
            None,
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        workers(&app, "web").await,
        named(&["web-default-worker-1", "web-default-worker-3"], "Running")
    );
}

#[tokio::test]
async fn kubectl_deletes_a_machine_and_that_node_goes() {
    let Some(bin) = kubectl_binary() else { return };
    let app = app_on(Backend::Postgres).await;
    three_workers(&app, "api").await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let out = k
        .ok(&["delete", "machine", "api-default-worker-3", "--wait=false"])
        .await;
    assert!(
        out.contains("machine.cluster.k8s.io \"api-default-worker-3\" deleted"),
        "{out}"
    );
    let out = k
        .ok(&[
            "get",
            "machines",
            "-l",
            "fleetyard.openstack.org/nodegroup=default-worker",
        ])
        .await;
    let phases: Vec<(String, String)> = out
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[4].to_string())
        })
        .collect();
    assert_eq!(
        phases,
        vec![
            ("api-default-worker-1".to_string(), "Running".to_string()),
            ("api-default-worker-2".into(), "Running".into()),
            ("api-default-worker-3".into(), "Deleting".into()),
        ],
        "{out}"
    );
    drain(&conductor(&app, instant())).await;
    let (ok, out, err) = k.run(&["get", "machine", "api-default-worker-3"]).await;
    assert!(!ok, "{out}");
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
}

#[rstest]
#[tokio::test]
async fn a_v1_delete_removes_exactly_that_machine(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c = three_workers(&app, "db").await;
    let path = format!("/v1/clusters/{c}/machines/default-worker-1");
    let at = |v: &str| crate::helpers::at(&app.headers, v);

    let r = app.delete_as(&path, &at("1.18")).await;
    r.assert_framework_error(406);
    let reader = at_identity(&app, "project-a", "reader");
    let r = app.delete_as(&path, &reader).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let other = at_identity(&app, "project-b", "member,reader");
    let r = app.delete_as(&path, &other).await;
    r.assert_error(404, &format!("Cluster {c} could not be found."));
    let r = app
        .delete_as(&format!("/v1/clusters/{c}/machines/no-such"), &at("latest"))
        .await;
    r.assert_error(404, "Machine no-such could not be found.");
    assert_eq!(
        workers(&app, "db").await,
        named(
            &[
                "db-default-worker-1",
                "db-default-worker-2",
                "db-default-worker-3"
            ],
            "Running"
        ),
        "no refusal changed anything"
    );

    let r = app.delete_as(&path, &at("latest")).await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    let shown = app.get_as(&path, &at("latest")).await;
    assert_eq!(shown.body["status"]["phase"], "Deleting", "{}", shown.text);
    let r = app.delete_as(&path, &at("latest")).await;
    r.assert_error(409, "Machine default-worker-1 is already being deleted.");
    let ng = app.at("latest").get_nodegroup(&c, "default-worker").await;
    assert_eq!(ng.body["node_count"], 2, "{}", ng.text);

    drain(&conductor(&app, instant())).await;
    assert_eq!(
        workers(&app, "db").await,
        named(&["db-default-worker-2", "db-default-worker-3"], "Running")
    );
    let r = app.get_as(&path, &at("latest")).await;
    r.assert_error(404, "Machine default-worker-1 could not be found.");
    let shown = app.at("latest").get_cluster(&c).await;
    assert_eq!(
        (
            shown.body["status"].clone(),
            shown.body["node_count"].clone()
        ),
        (json!("UPDATE_COMPLETE"), json!(2))
    );
}

/// `roles` of `project` at the latest microversion (no-auth identity headers).
fn at_identity(app: &TestApp, project: &str, roles: &str) -> HeaderMap {
    crate::helpers::at(&app.as_identity(project, "someone", roles), "latest")
}
