//! Creating one machine in a node group, through either face: the group grows by one with
//! exactly that machine (Pending, then Running when the driver is done), a failure gives the
//! group back its count without it, and every refusal (a bad body, a name taken, a kubelet
//! outside the skew policy, a group being worked on or at its maximum) changes nothing. On
//! PostgreSQL and SQLite.

use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{
    complete_cluster_as, conductor, drain, events_of, instant, spawn_with, Api, Backend, Resp,
    TestApp,
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

fn latest(app: &TestApp) -> HeaderMap {
    crate::helpers::at(&app.headers, "latest")
}

/// `(name, phase, kubelet)` of the machines of the cluster's `group`, in creation order.
async fn machines(app: &TestApp, cluster: &str, group: &str) -> Vec<(String, String, Value)> {
    let r = app
        .get_as(
            &format!("/v1/clusters/{cluster}/machines?nodegroup={group}"),
            &latest(app),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["machines"]
        .as_array()
        .expect("machines")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or("").to_string(),
                m["status"]["phase"].as_str().unwrap_or("").to_string(),
                m["spec"]["versions"]["kubelet"].clone(),
            )
        })
        .collect()
}

fn names(ms: &[(String, String, Value)]) -> Vec<(&str, &str)> {
    ms.iter()
        .map(|(n, p, _)| (n.as_str(), p.as_str()))
        .collect()
}

/// `(node_count, status)` of the cluster's node group `group`.
async fn group(app: &TestApp, cluster: &str, group: &str) -> (Value, Value) {
    let ng = app.at("latest").get_nodegroup(cluster, group).await;
    assert_eq!(ng.status, 200, "{}", ng.text);
    (ng.body["node_count"].clone(), ng.body["status"].clone())
}

async fn create(app: &TestApp, cluster: &str, group: &str, body: &Value, h: &HeaderMap) -> Resp {
    app.post_as(
        &format!("/v1/clusters/{cluster}/nodegroups/{group}/machines"),
        body,
        h,
    )
    .await
}

#[rstest]
#[tokio::test]
async fn a_v1_create_grows_the_group_by_exactly_that_machine(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c = complete_cluster_as(&app, "web", &app.headers).await;
    let before = machines(&app, &c, "default-worker").await;
    assert_eq!(names(&before), [("default-worker-1", "Running")]);

    let body = json!({"name": "gpu-1", "versions": {"kubelet": "1.29.5"},
                      "container_runtime": {"name": "containerd", "version": "1.7.22"},
                      "os_image": "ubuntu-24.04"});
    let r = create(&app, "web", "default-worker", &body, &latest(&app)).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("{}/v1/clusters/{c}/machines/{uuid}", app.address))
    );
    assert_eq!(r.body["name"], "gpu-1");
    assert_eq!(r.body["status"]["phase"], "Pending");
    assert_eq!(
        r.body["spec"]["versions"],
        json!({"kubelet": "v1.29.5", "control_plane": null})
    );
    assert_eq!(
        r.body["spec"]["container_runtime"],
        json!({"name": "containerd", "version": "1.7.22"})
    );
    assert_eq!(r.body["spec"]["os_image"], "ubuntu-24.04");
    let shown = app
        .get_as(&format!("/v1/clusters/{c}/machines/gpu-1"), &latest(&app))
        .await;
    assert_eq!(shown.body, r.body, "create and show agree");
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(2), json!("UPDATE_IN_PROGRESS"))
    );
    assert_eq!(
        names(&machines(&app, &c, "default-worker").await),
        [("default-worker-1", "Running"), ("gpu-1", "Pending")],
        "exactly that machine and no other"
    );
    assert_eq!(
        events_of(&app, &uuid)
            .await
            .into_iter()
            .map(|(t, o, _)| (t, o))
            .collect::<Vec<_>>(),
        [("magnum.machine.create".to_string(), "pending".to_string())]
    );
    // The notification shows the machine as created: Pending, with the spec asked for.
    let pending = app.store.pending_events(10_000).await.expect("events");
    let created = pending
        .iter()
        .find(|e| e.resource_uuid == uuid)
        .expect("the machine's event");
    let attachment = &created.message_json()["payload"]["target"]["attachments"][0];
    assert_eq!(attachment["name"], "machine_data");
    assert_eq!(
        (
            attachment["content"]["name"].clone(),
            attachment["content"]["phase"].clone(),
            attachment["content"]["nodegroup_id"].clone(),
            attachment["content"]["spec"]["versions"]["kubelet"].clone(),
        ),
        (
            json!("gpu-1"),
            json!("Pending"),
            r.body["nodegroup_id"].clone(),
            json!("v1.29.5")
        )
    );
    let cluster_events: Vec<String> = events_of(&app, &c)
        .await
        .into_iter()
        .map(|(t, o, _)| format!("{t} {o}"))
        .collect();
    assert_eq!(
        cluster_events.last().map(String::as_str),
        Some("magnum.cluster.update pending")
    );

    drain(&conductor(&app, instant())).await;
    let after = machines(&app, &c, "default-worker").await;
    assert_eq!(
        names(&after),
        [("default-worker-1", "Running"), ("gpu-1", "Running")]
    );
    assert_eq!(after[1].2, json!("v1.29.5"));
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(2), json!("UPDATE_COMPLETE"))
    );

    // Without a name: the group's next free one.
    let r = create(&app, &c, "default-worker", &json!({}), &latest(&app)).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["name"], "default-worker-2");
    drain(&conductor(&app, instant())).await;
    let shown = app.at("latest").get_cluster(&c).await;
    assert_eq!(
        (
            shown.body["status"].clone(),
            shown.body["node_count"].clone()
        ),
        (json!("UPDATE_COMPLETE"), json!(3))
    );
}

#[rstest]
#[tokio::test]
async fn refused_creates_say_why_and_change_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c = complete_cluster_as(&app, "db", &app.headers).await;
    let h = latest(&app);
    let r = app
        .at("latest")
        .create_nodegroup(
            &c,
            &json!({"name": "capped", "node_count": 1, "max_node_count": 1}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    let before = machines(&app, &c, "default-worker").await;

    let cases: &[(&str, Value, u16, &str)] = &[
        (
            "default-worker",
            json!({"flavor": "m1.large"}),
            400,
            "Unknown attribute for argument machine: flavor",
        ),
        (
            "default-worker",
            json!({"versions": {"kubelet": "v1.30.1", "control_plane": "v1.30.1"}}),
            400,
            "Unknown attribute for argument versions: control_plane",
        ),
        (
            "default-worker",
            json!({"name": "GPU_1"}),
            400,
            "Invalid machine name 'GPU_1': a lowercase RFC 1123 subdomain must consist of lower \
             case alphanumeric characters, '-' or '.', and must start and end with an \
             alphanumeric character (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "default-worker",
            json!({"versions": {"kubelet": "1.31"}}),
            400,
            "Invalid Kubernetes version '1.31': expected the form v<major>.<minor>.<patch>, \
             e.g. v1.31.4.",
        ),
        (
            "default-worker",
            json!({"versions": {"kubelet": "v1.31.0"}}),
            400,
            "Kubelet version v1.31.0 is newer than the control plane version v1.30.1; a kubelet \
             may not be newer than its control plane.",
        ),
        (
            "default-worker",
            json!({"versions": {"kubelet": "v1.26.0"}}),
            400,
            "Kubelet version v1.26.0 is more than 3 minor versions older than the control plane \
             version v1.30.1; the oldest supported kubelet is v1.27.",
        ),
        (
            "default-worker",
            json!({"name": "default-worker-1"}),
            409,
            "A machine with name default-worker-1 already exists in the cluster db.",
        ),
        (
            "default-worker",
            json!({"name": "default-master-1"}),
            409,
            "A machine with name default-master-1 already exists in the cluster db.",
        ),
        (
            "capped",
            json!({}),
            400,
            "Resizing capped outside the allowed range: min_node_count = 0, max_node_count = 1",
        ),
        (
            "default-master",
            json!({}),
            400,
            "Resizing the master nodegroup is not supported by this driver.",
        ),
        (
            "no-such-group",
            json!({}),
            404,
            "Nodegroup no-such-group could not be found.",
        ),
    ];
    for (ng, body, status, detail) in cases {
        let r = create(&app, &c, ng, body, &h).await;
        r.assert_error(*status, detail);
    }
    // Below microversion 1.20 the route is 406.
    let r = create(
        &app,
        &c,
        "default-worker",
        &json!({}),
        &crate::helpers::at(&app.headers, "1.19"),
    )
    .await;
    r.assert_framework_error(406);
    // Another project's cluster is a 404; a reader is refused by the policy.
    let other = crate::helpers::at(
        &app.as_identity("project-b", "user-b", "member,reader"),
        "latest",
    );
    let r = create(&app, &c, "default-worker", &json!({}), &other).await;
    r.assert_error(404, &format!("Cluster {c} could not be found."));
    let reader = crate::helpers::at(&app.as_identity("project-a", "r", "reader"), "latest");
    let r = create(&app, &c, "default-worker", &json!({}), &reader).await;
    r.assert_error(403, "Policy doesn't allow machine:create to be performed.");
    assert_eq!(machines(&app, &c, "default-worker").await, before);
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(1), json!("CREATE_COMPLETE"))
    );

    // A group being worked on: 409.
    let r = app
        .at("latest")
        .resize_cluster(&c, &json!({"node_count": 2}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let r = create(&app, &c, "default-worker", &json!({}), &h).await;
    r.assert_error(
        409,
        "Creating a machine in node group default-worker when its status is \
         \"UPDATE_IN_PROGRESS\" is not supported.",
    );
    assert_eq!(machines(&app, &c, "default-worker").await.len(), 2);

    // A cluster in a state no resize is accepted in: the resize's 409.
    let t = crate::helpers::template_as(&app, "failing", json!({}), &app.headers).await;
    let failed = crate::helpers::cluster_as(
        &app,
        json!({"name": "failed", "cluster_template_id": t, "labels": {"fake_fail": "create"}}),
        &app.headers,
    )
    .await;
    drain(&conductor(&app, instant())).await;
    let r = create(&app, &failed, "default-worker", &json!({}), &h).await;
    r.assert_error(
        409,
        "Resizing a cluster when status is \"CREATE_FAILED\" is not supported.",
    );
}

#[rstest]
#[tokio::test]
async fn a_failed_create_removes_the_machine_and_restores_the_count(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c = complete_cluster_as(&app, "api", &app.headers).await;
    let before = machines(&app, &c, "default-worker").await;
    let r = create(
        &app,
        &c,
        "default-worker",
        &json!({"name": "doomed"}),
        &latest(&app),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    let failing = conductor(
        &app,
        fleetyard::config::FakeDriverSection {
            fail_operations: "resize".into(),
            ..instant()
        },
    );
    drain(&failing).await;
    assert_eq!(machines(&app, &c, "default-worker").await, before);
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(1), json!("UPDATE_FAILED"))
    );
    let r = app
        .get_as(&format!("/v1/clusters/{c}/machines/{uuid}"), &latest(&app))
        .await;
    r.assert_error(404, &format!("Machine {uuid} could not be found."));
    // The group takes a create again after the failure.
    let r = create(
        &app,
        &c,
        "default-worker",
        &json!({"name": "doomed"}),
        &latest(&app),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        names(&machines(&app, &c, "default-worker").await),
        [("default-worker-1", "Running"), ("doomed", "Running")]
    );
}

fn machine_object(name: &str, cluster: &str, group: &str, kubelet: &str) -> Value {
    json!({
        "apiVersion": "cluster.k8s.io/v1alpha1", "kind": "Machine",
        "metadata": {"name": name, "labels": {
            "cluster.k8s.io/cluster-name": cluster, "fleetyard.openstack.org/nodegroup": group}},
        "spec": {"versions": {"kubelet": kubelet}}
    })
}

#[rstest]
#[tokio::test]
async fn a_registry_create_makes_the_same_writes_with_that_faces_semantics(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c = complete_cluster_as(&app, "web", &app.headers).await;
    let h = json_accept(&app.headers);
    let path = format!("{BASE}/namespaces/project-a/machines");
    let body = machine_object("web-gpu-1", "web", "default-worker", "v1.30.1");

    // A dry run checks and writes nothing.
    let r = app
        .request(
            reqwest::Method::POST,
            &format!("{path}?dryRun=All"),
            &h,
            Some(&body),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["metadata"]["name"], "web-gpu-1");
    assert_eq!(r.body["status"]["phase"], "Pending");
    assert_eq!(machines(&app, &c, "default-worker").await.len(), 1);
    assert_eq!(group(&app, &c, "default-worker").await.0, json!(1));

    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&body))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["kind"], "Machine");
    assert_eq!(r.body["metadata"]["name"], "web-gpu-1");
    assert_eq!(
        r.body["metadata"]["annotations"]["fleetyard.openstack.org/machine-name"],
        "gpu-1"
    );
    assert_eq!(r.body["spec"]["versions"]["kubelet"], "v1.30.1");
    let uid = r.body["metadata"]["uid"].as_str().expect("uid").to_string();
    assert_eq!(
        names(&machines(&app, &c, "default-worker").await),
        [("default-worker-1", "Running"), ("gpu-1", "Pending")]
    );
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(2), json!("UPDATE_IN_PROGRESS"))
    );
    assert_eq!(
        events_of(&app, &uid)
            .await
            .into_iter()
            .map(|(t, o, _)| (t, o))
            .collect::<Vec<_>>(),
        [("magnum.machine.create".to_string(), "pending".to_string())]
    );
    drain(&conductor(&app, instant())).await;

    // The same name again: 409 AlreadyExists, as a Status.
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&body))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        (
            r.body["kind"].clone(),
            r.body["reason"].clone(),
            r.body["message"].clone()
        ),
        (
            json!("Status"),
            json!("AlreadyExists"),
            json!("machines.cluster.k8s.io \"web-gpu-1\" already exists")
        )
    );

    // generateName: the cluster's prefix is added when it lacks it.
    let mut generated = machine_object("", "web", "default-worker", "v1.30.1");
    generated["metadata"]["generateName"] = json!("spot-");
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&generated))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let name = r.body["metadata"]["name"].as_str().expect("name");
    assert!(name.starts_with("web-spot-") && name.len() == 14, "{name}");
    drain(&conductor(&app, instant())).await;

    // Bad fields: one 422 Invalid with a cause for each.
    let mut bad = machine_object("web-x", "web", "nope", "v1.40.0");
    bad["spec"]["containerRuntime"] = json!({"version": "1"});
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&bad))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["reason"], "Invalid");
    let fields: Vec<&str> = r.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["field"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(fields, ["spec.containerRuntime.name"], "{}", r.text);
    let bad = machine_object("web-x", "web", "nope", "v1.30.1");
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&bad))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        "metadata.labels[fleetyard.openstack.org/nodegroup]"
    );
    let bad = machine_object("db-x", "web", "default-worker", "v1.30.1");
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&bad))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.name");
    let mut bad = machine_object("web-x", "web", "default-worker", "v1.30.1");
    bad["spec"]["flavor"] = json!("m1.huge");
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&bad))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.flavor");
    // The skew policy's sentence, as a Status.
    let newer = machine_object("web-x", "web", "default-worker", "v1.31.0");
    let r = app
        .request(reqwest::Method::POST, &path, &h, Some(&newer))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["kind"], "Status");
    assert!(
        r.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Kubelet version v1.31.0 is newer")),
        "{}",
        r.text
    );
    // Another project's namespace is forbidden.
    let b = json_accept(&app.as_identity("project-b", "user-b", "member,reader"));
    let r = app
        .request(reqwest::Method::POST, &path, &b, Some(&body))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        names(&machines(&app, &c, "default-worker").await).len(),
        3,
        "no refusal changed anything"
    );
}

#[tokio::test]
async fn kubectl_creates_a_machine_and_the_group_grows() {
    let Some(bin) = kubectl_binary() else { return };
    let app = app_on(Backend::Postgres).await;
    let c = complete_cluster_as(&app, "api", &app.headers).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let manifest = "apiVersion: cluster.k8s.io/v1alpha1\nkind: Machine\nmetadata:\n  \
                    name: api-edge-1\n  labels:\n    cluster.k8s.io/cluster-name: api\n    \
                    fleetyard.openstack.org/nodegroup: default-worker\nspec:\n  versions:\n    \
                    kubelet: v1.30.1\n  containerRuntime:\n    name: containerd\n";
    let file = k.file("machine.yaml", manifest);

    let out = k.ok(&["create", "-f", &file, "--dry-run=server"]).await;
    assert!(
        out.contains("machine.cluster.k8s.io/api-edge-1 created (server dry run)"),
        "{out}"
    );
    assert_eq!(machines(&app, &c, "default-worker").await.len(), 1);

    let out = k.ok(&["create", "-f", &file]).await;
    assert!(
        out.contains("machine.cluster.k8s.io/api-edge-1 created"),
        "{out}"
    );
    let err = k.fails(&["create", "-f", &file]).await;
    assert!(err.contains("AlreadyExists"), "{err}");
    assert!(err.contains("\"api-edge-1\" already exists"), "{err}");

    drain(&conductor(&app, instant())).await;
    let out = k
        .ok(&[
            "get",
            "machines",
            "-l",
            "fleetyard.openstack.org/nodegroup=default-worker",
        ])
        .await;
    let rows: Vec<(String, String)> = out
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[4].to_string())
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("api-default-worker-1".to_string(), "Running".to_string()),
            ("api-edge-1".into(), "Running".into()),
        ],
        "{out}"
    );
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(2), json!("UPDATE_COMPLETE"))
    );

    // kubectl apply of a new object creates it too.
    let applied = manifest.replace("api-edge-1", "api-edge-2");
    let file = k.file("applied.yaml", &applied);
    let out = k.ok(&["apply", "-f", &file]).await;
    assert!(
        out.contains("machine.cluster.k8s.io/api-edge-2 created"),
        "{out}"
    );
    drain(&conductor(&app, instant())).await;
    assert_eq!(
        names(&machines(&app, &c, "default-worker").await),
        [
            ("default-worker-1", "Running"),
            ("edge-1", "Running"),
            ("edge-2", "Running")
        ]
    );
}

#[tokio::test]
async fn a_group_at_the_services_node_limit_takes_no_machine() {
    let app = spawn_with(Backend::Sqlite, |s| {
        s.cluster.max_node_count = 1;
    })
    .await;
    let c = complete_cluster_as(&app, "small", &app.headers).await;
    let r = create(&app, &c, "default-worker", &json!({}), &latest(&app)).await;
    r.assert_error(
        400,
        "Node group default-worker has the most nodes a node group may have (1).",
    );
    assert_eq!(
        group(&app, &c, "default-worker").await,
        (json!(1), json!("CREATE_COMPLETE"))
    );
}
