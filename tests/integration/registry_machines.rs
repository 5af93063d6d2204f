//! `cluster.k8s.io/v1alpha1` `machines` on the Kubernetes face, the reads: discovery, OpenAPI
//! for `kubectl explain`, list and get in JSON and Table (with the `-o wide` columns), label
//! selectors on the cluster and node-group labels, `limit`/`continue` paging, isolation
//! between projects, the methods not served refused with a Status, and the real kubectl.
//! Machines are written as SQL rows here (cluster creation does not make them).

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{labelled_cluster_as, spawn_with, template_as, Backend, Resp, TestApp};

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

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

/// One machine to write: name, node group, role, phase, provider id, spec, status.
struct M<'a> {
    name: &'a str,
    group: &'a str,
    role: &'a str,
    phase: &'a str,
    provider: Option<&'a str>,
    spec: Value,
    status: Value,
}

fn worker(name: &str) -> M<'_> {
    M {
        name,
        group: "default-worker",
        role: "worker",
        phase: "Running",
        provider: None,
        spec: json!({}),
        status: json!({}),
    }
}

/// A cluster of `h`'s project named `name` (its registry name too) whose machines are exactly
/// `machines`, written as SQL; its uuid.
async fn cluster_with_machines(
    app: &TestApp,
    h: &HeaderMap,
    name: &str,
    machines: &[M<'_>],
) -> String {
    let t = template_as(app, &format!("{name}-template"), json!({}), h).await;
    let uuid = labelled_cluster_as(app, h, &t, name, json!({})).await;
    let cid = fleetyard::domain::ClusterId(uuid.parse().expect("uuid"));
    let mut sql = vec![format!("DELETE FROM machine WHERE cluster_id = '{uuid}'")];
    for m in machines {
        let g = app
            .store
            .get_nodegroup(&cid, m.group)
            .await
            .expect("node group");
        let provider = m.provider.map_or("NULL".to_string(), |p| format!("'{p}'"));
        sql.push(format!(
            "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
             phase, provider_id, status, created_at) VALUES ('{}', '{}', '{}', '{}', '{uuid}', \
             '{}', '{}', '{}', {provider}, '{}', CURRENT_TIMESTAMP)",
            uuid::Uuid::new_v4(),
            m.name,
            m.role,
            g.project_id,
            g.uuid,
            m.spec,
            m.phase,
            m.status
        ));
    }
    exec_all(&app.db.url, &sql).await;
    uuid
}

fn with_accept(h: &HeaderMap, accept: &str) -> HeaderMap {
    let mut h = h.clone();
    h.insert("accept", HeaderValue::from_str(accept).expect("accept"));
    h
}

async fn get(app: &TestApp, path: &str) -> Resp {
    app.get_as(path, &with_accept(&app.headers, "application/json"))
        .await
}

fn names(r: &Resp) -> Vec<String> {
    r.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {}", r.text))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Project A's `alpha` (a master and two workers) and `beta` (one worker).
async fn fleet(app: &TestApp) -> (String, String) {
    let h = app.headers.clone();
    let master = M {
        name: "default-master-1",
        group: "default-master",
        role: "master",
        phase: "Running",
        provider: Some("openstack:///m1"),
        spec: json!({"versions": {"kubelet": "v1.31.4", "controlPlane": "v1.31.4"},
            "containerRuntime": {"name": "containerd", "version": "1.7.22"},
            "osImage": "ubuntu-24.04", "flavor": "m1.large", "providerConfig": {"zone": ["a", 1]},
            "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
            "labels": {"tier": "cp"}}),
        status: json!({"nodeRef": "alpha-master-0",
            "addresses": [{"type": "Hostname", "address": "alpha-master-0"},
                          {"type": "InternalIP", "address": "10.0.0.5"}],
            "versions": {"kubelet": "v1.31.4"}, "lastChange": "InPlace",
            "lastUpdated": "2026-11-27T10:00:00Z"}),
    };
    let failed = M {
        phase: "Failed",
        spec: json!({"versions": {"kubelet": "v1.30.2"}}),
        status: json!({"errorReason": "CreateError", "errorMessage": "no capacity"}),
        ..worker("default-worker-2")
    };
    let alpha = cluster_with_machines(
        app,
        &h,
        "alpha",
        &[master, worker("default-worker-1"), failed],
    )
    .await;
    let beta = cluster_with_machines(app, &h, "beta", &[worker("default-worker-1")]).await;
    (alpha, beta)
}

#[rstest]
#[tokio::test]
async fn machines_are_discovered_as_namespaced_with_their_verbs_and_status(
    #[values(Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let r = get(&app, "/apis").await;
    let groups: Vec<&str> = r.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(groups.contains(&"cluster.k8s.io"), "{}", r.text);
    let r = get(&app, "/apis/cluster.k8s.io").await;
    assert_eq!(
        r.body["preferredVersion"],
        json!({"groupVersion": "cluster.k8s.io/v1alpha1", "version": "v1alpha1"}),
        "{}",
        r.text
    );
    let r = get(&app, BASE).await;
    assert_eq!(r.body["kind"], "APIResourceList");
    assert_eq!(
        r.body["resources"],
        json!([{"name": "machines", "singularName": "machine", "namespaced": true,
            "kind": "Machine",
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
            {"name": "machines/status", "singularName": "", "namespaced": true,
            "kind": "Machine", "verbs": ["get", "patch", "update"]},
            {"name": "machinedeployments", "singularName": "machinedeployment",
            "namespaced": true, "kind": "MachineDeployment", "shortNames": ["md"],
            "verbs": ["delete", "get", "list", "patch", "update", "watch"]},
            {"name": "machinedeployments/scale", "singularName": "", "namespaced": true,
            "group": "autoscaling", "version": "v1", "kind": "Scale",
            "verbs": ["get", "patch", "update"]}]),
        "{}",
        r.text
    );
    let r = app
        .get_as("/apis", &with_accept(&app.headers, AGGREGATED))
        .await;
    let group = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == "cluster.k8s.io")
        .cloned()
        .unwrap_or_else(|| panic!("cluster.k8s.io in {}", r.text));
    let resource = &group["versions"][0]["resources"][0];
    assert_eq!(group["versions"][0]["version"], "v1alpha1");
    assert_eq!(resource["resource"], "machines");
    assert_eq!(resource["scope"], "Namespaced");
    assert_eq!(
        resource["verbs"],
        json!(["create", "delete", "get", "list", "patch", "update", "watch"])
    );
    assert_eq!(
        resource["subresources"],
        json!([{"subresource": "status", "verbs": ["get", "patch", "update"],
            "responseKind": {"group": "cluster.k8s.io", "version": "v1alpha1", "kind": "Machine"}}])
    );
    assert_eq!(
        resource["responseKind"],
        json!({"group": "cluster.k8s.io", "version": "v1alpha1", "kind": "Machine"})
    );
}

#[rstest]
#[tokio::test]
async fn the_openapi_documents_describe_the_machine_for_kubectl_explain(
    #[values(Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let index = get(&app, "/openapi/v3").await;
    let url = index.body["paths"]["apis/cluster.k8s.io/v1alpha1"]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("machines in the index: {}", index.text))
        .to_string();
    let doc = get(&app, &url).await;
    let schemas = &doc.body["components"]["schemas"];
    let machine = &schemas["io.k8s.cluster.v1alpha1.Machine"];
    assert_eq!(
        machine["x-kubernetes-group-version-kind"],
        json!([{"group": "cluster.k8s.io", "version": "v1alpha1", "kind": "Machine"}])
    );
    let spec = &schemas["io.k8s.cluster.v1alpha1.MachineSpec"]["properties"];
    assert_eq!(
        spec["versions"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.cluster.v1alpha1.MachineVersionInfo"
    );
    assert_eq!(
        spec["providerConfig"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    for field in ["containerRuntime", "osImage", "flavor", "taints", "labels"] {
        assert!(spec.get(field).is_some(), "spec.{field}");
    }
    let versions = &schemas["io.k8s.cluster.v1alpha1.MachineVersionInfo"]["properties"];
    assert_eq!(versions["kubelet"]["type"], "string");
    assert_eq!(versions["controlPlane"]["type"], "string");
    let status = &schemas["io.k8s.cluster.v1alpha1.MachineStatus"]["properties"];
    for field in [
        "phase",
        "providerID",
        "nodeRef",
        "addresses",
        "versions",
        "errorReason",
        "errorMessage",
        "lastUpdated",
        "lastChange",
    ] {
        assert!(status.get(field).is_some(), "status.{field}");
    }
    let paths = doc.body["paths"].as_object().expect("paths");
    let one = &paths["/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machines/{name}"];
    assert_eq!(one["get"]["operationId"], "readNamespacedMachine");
    // Every verb served: replace, patch and delete of one (and its status, machine_apply.rs).
    assert_eq!(one["put"]["operationId"], "replaceNamespacedMachine");
    assert_eq!(one["patch"]["operationId"], "patchNamespacedMachine");
    assert_eq!(one["delete"]["operationId"], "deleteNamespacedMachine");
    assert!(paths.contains_key("/apis/cluster.k8s.io/v1alpha1/machines"));
    let v2 = get(&app, "/openapi/v2").await;
    assert_eq!(
        v2.body["definitions"]["io.k8s.cluster.v1alpha1.MachineSpec"]["properties"]["versions"]
            ["$ref"],
        "#/definitions/io.k8s.cluster.v1alpha1.MachineVersionInfo"
    );
}

#[rstest]
#[tokio::test]
async fn a_namespace_lists_and_gets_its_machines_with_labels_owner_spec_and_status(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let (alpha, beta) = fleet(&app).await;
    let list = get(&app, &format!("{BASE}/namespaces/project-a/machines")).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body["kind"], "MachineList");
    assert_eq!(list.body["apiVersion"], "cluster.k8s.io/v1alpha1");
    let rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion");
    assert!(rv.parse::<i64>().expect("a number") > 0, "{rv}");
    assert!(list.body["metadata"].get("continue").is_none());
    assert_eq!(
        sorted(names(&list)),
        strings(&[
            "alpha-default-master-1",
            "alpha-default-worker-1",
            "alpha-default-worker-2",
            "beta-default-worker-1"
        ])
    );

    let r = get(
        &app,
        &format!("{BASE}/namespaces/project-a/machines/alpha-default-master-1"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let m = &r.body;
    assert_eq!(m["kind"], "Machine");
    assert_eq!(m["metadata"]["namespace"], "project-a");
    assert_eq!(
        m["metadata"]["labels"],
        json!({"cluster.k8s.io/cluster-name": "alpha",
            "fleetyard.openstack.org/nodegroup": "default-master"})
    );
    assert_eq!(
        m["metadata"]["annotations"],
        json!({"fleetyard.openstack.org/machine-name": "default-master-1"})
    );
    assert_eq!(
        m["metadata"]["ownerReferences"],
        json!([{"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "name": "alpha", "uid": alpha, "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(
        m["spec"],
        json!({"versions": {"kubelet": "v1.31.4", "controlPlane": "v1.31.4"},
            "containerRuntime": {"name": "containerd", "version": "1.7.22"},
            "osImage": "ubuntu-24.04", "flavor": "m1.large", "providerConfig": {"zone": ["a", 1]},
            "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
            "labels": {"tier": "cp"}})
    );
    assert_eq!(
        m["status"],
        json!({"phase": "Running", "providerID": "openstack:///m1",
            "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": "alpha-master-0"},
            "addresses": [{"type": "Hostname", "address": "alpha-master-0"},
                          {"type": "InternalIP", "address": "10.0.0.5"}],
            "versions": {"kubelet": "v1.31.4"}, "lastChange": "InPlace",
            "lastUpdated": "2026-11-27T10:00:00Z"})
    );
    let failed = get(
        &app,
        &format!("{BASE}/namespaces/project-a/machines/alpha-default-worker-2"),
    )
    .await;
    assert_eq!(
        failed.body["status"],
        json!({"phase": "Failed", "errorReason": "CreateError", "errorMessage": "no capacity"})
    );
    let b = get(
        &app,
        &format!("{BASE}/namespaces/project-a/machines/beta-default-worker-1"),
    )
    .await;
    assert_eq!(b.body["metadata"]["ownerReferences"][0]["uid"], json!(beta));

    for missing in [
        "alpha-default-worker-9",
        "gamma-default-worker-1",
        "alpha",
        "x",
    ] {
        let r = get(
            &app,
            &format!("{BASE}/namespaces/project-a/machines/{missing}"),
        )
        .await;
        assert_eq!(r.status, 404, "{}", r.text);
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("machines.cluster.k8s.io \"{missing}\" not found"),
                "reason": "NotFound", "details": {"name": missing, "group": "cluster.k8s.io",
                "kind": "machines"}, "code": 404})
        );
    }
    // A field selector on the name reads that one machine.
    let r = get(
        &app,
        &format!(
            "{BASE}/namespaces/project-a/machines?fieldSelector=metadata.name%3Dbeta-default-worker-1"
        ),
    )
    .await;
    assert_eq!(names(&r), strings(&["beta-default-worker-1"]));
}

#[rstest]
#[tokio::test]
async fn the_machine_table_has_the_columns_and_the_wide_ones(
    #[values(Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    fleet(&app).await;
    let h = with_accept(&app.headers, TABLE);
    let t = app
        .get_as(
            &format!(
                "{BASE}/namespaces/project-a/machines?labelSelector=cluster.k8s.io%2Fcluster-name%3Dalpha"
            ),
            &h,
        )
        .await;
    assert_eq!(t.status, 200, "{}", t.text);
    assert_eq!(t.body["kind"], "Table");
    let columns: Vec<(String, i64)> = t.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_uppercase(),
                c["priority"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    let want: Vec<(String, i64)> = [
        ("NAME", 0),
        ("CLUSTER", 0),
        ("NODEGROUP", 0),
        ("ROLE", 0),
        ("PHASE", 0),
        ("KUBELET", 0),
        ("ADDRESS", 0),
        ("AGE", 0),
        ("PROVIDERID", 1),
        ("OS-IMAGE", 1),
        ("RUNTIME", 1),
    ]
    .iter()
    .map(|(n, p)| (n.to_string(), *p))
    .collect();
    assert_eq!(columns, want);
    let rows = t.body["rows"].as_array().expect("rows");
    let master = rows
        .iter()
        .find(|r| r["cells"][0] == "alpha-default-master-1")
        .unwrap_or_else(|| panic!("master row in {}", t.text));
    let cells = master["cells"].as_array().expect("cells");
    assert_eq!(
        cells[..7],
        json!([
            "alpha-default-master-1",
            "alpha",
            "default-master",
            "master",
            "Running",
            "v1.31.4",
            "10.0.0.5"
        ])
        .as_array()
        .expect("cells")[..]
    );
    assert!(
        cells[7].as_str().is_some_and(|a| a.ends_with('s')),
        "{}",
        cells[7]
    );
    assert_eq!(
        cells[8..],
        json!(["openstack:///m1", "ubuntu-24.04", "containerd://1.7.22"])
            .as_array()
            .expect("cells")[..]
    );
    assert_eq!(master["object"]["kind"], "PartialObjectMetadata");
    let failed = rows
        .iter()
        .find(|r| r["cells"][0] == "alpha-default-worker-2")
        .expect("failed row");
    assert_eq!(failed["cells"][4], "Failed");
    assert_eq!(
        failed["cells"][5], "v1.30.2",
        "the spec's kubelet when none runs"
    );
    assert_eq!(failed["cells"][6], Value::Null);
    assert_eq!(rows.len(), 3);

    let one = app
        .get_as(
            &format!("{BASE}/namespaces/project-a/machines/beta-default-worker-1"),
            &h,
        )
        .await;
    assert_eq!(one.body["kind"], "Table");
    assert_eq!(one.body["rows"][0]["cells"][1], "beta");
}

#[rstest]
#[tokio::test]
async fn label_selectors_on_the_cluster_and_node_group_labels_pick_machines(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    fleet(&app).await;
    let alpha_all = strings(&[
        "alpha-default-master-1",
        "alpha-default-worker-1",
        "alpha-default-worker-2",
    ]);
    assert_eq!(
        select(&app, "cluster.k8s.io/cluster-name=alpha").await,
        alpha_all
    );
    assert_eq!(
        select(&app, "cluster.k8s.io/cluster-name==alpha").await,
        alpha_all
    );
    assert_eq!(
        select(&app, "cluster.k8s.io/cluster-name!=alpha").await,
        strings(&["beta-default-worker-1"])
    );
    assert_eq!(
        select(&app, "cluster.k8s.io/cluster-name in (beta,gamma)").await,
        strings(&["beta-default-worker-1"])
    );
    assert_eq!(
        select(&app, "cluster.k8s.io/cluster-name notin (beta)").await,
        alpha_all
    );
    assert_eq!(
        select(&app, "fleetyard.openstack.org/nodegroup=default-master").await,
        strings(&["alpha-default-master-1"])
    );
    assert_eq!(
        select(
            &app,
            "cluster.k8s.io/cluster-name=alpha,fleetyard.openstack.org/nodegroup!=default-master"
        )
        .await,
        strings(&["alpha-default-worker-1", "alpha-default-worker-2"])
    );
    assert_eq!(select(&app, "cluster.k8s.io/cluster-name").await.len(), 4);
    assert!(select(&app, "cluster.k8s.io/cluster-name=gamma")
        .await
        .is_empty());
    assert!(select(&app, "env=prod").await.is_empty());
    assert_eq!(select(&app, "!env").await.len(), 4);
    let bad = get(
        &app,
        &format!("{BASE}/namespaces/project-a/machines?labelSelector=a%20in"),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert_eq!(bad.body["kind"], "Status");
}

/// The names (sorted) of project A's machines that `selector` keeps.
async fn select(app: &TestApp, selector: &str) -> Vec<String> {
    let path = format!(
        "{BASE}/namespaces/project-a/machines?labelSelector={}",
        urlencoding(selector)
    );
    let r = get(app, &path).await;
    assert_eq!(r.status, 200, "{selector}: {}", r.text);
    sorted(names(&r))
}

/// The query-string form of a selector.
fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[rstest]
#[tokio::test]
async fn machine_lists_page_with_limit_and_continue(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    fleet(&app).await;
    let mut seen = Vec::new();
    let mut path = format!("{BASE}/namespaces/project-a/machines?limit=3");
    let mut pages = 0;
    loop {
        let r = get(&app, &path).await;
        assert_eq!(r.status, 200, "{}", r.text);
        pages += 1;
        seen.extend(names(&r));
        match r.body["metadata"]["continue"].as_str() {
            Some(token) => {
                assert_eq!(names(&r).len(), 3);
                path = format!(
                    "{BASE}/namespaces/project-a/machines?limit=3&continue={}",
                    urlencoding(token)
                );
            }
            None => break,
        }
    }
    assert_eq!(pages, 2);
    assert_eq!(seen.len(), 4);
    assert_eq!(sorted(seen.clone()), {
        let mut all = seen.clone();
        all.dedup();
        sorted(all)
    });
    // A page of one with a selector continues after the last one it showed.
    let r = get(
        &app,
        &format!(
            "{BASE}/machines?limit=1&labelSelector={}",
            urlencoding("cluster.k8s.io/cluster-name=alpha")
        ),
    )
    .await;
    assert_eq!(names(&r).len(), 1);
    let token = r.body["metadata"]["continue"].as_str().expect("continue");
    let r2 = get(
        &app,
        &format!(
            "{BASE}/machines?limit=5&labelSelector={}&continue={}",
            urlencoding("cluster.k8s.io/cluster-name=alpha"),
            urlencoding(token)
        ),
    )
    .await;
    assert_eq!(names(&r2).len(), 2, "{}", r2.text);
    assert!(r2.body["metadata"].get("continue").is_none());
    for bad in ["%%%", "bm9wZQ=="] {
        let r = get(
            &app,
            &format!("{BASE}/namespaces/project-a/machines?continue={bad}"),
        )
        .await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert_eq!(r.body["reason"], "BadRequest");
    }
}

#[rstest]
#[tokio::test]
async fn another_projects_machines_are_invisible_and_an_admin_sees_every_project(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    fleet(&app).await;
    let b = app.project_b();
    cluster_with_machines(&app, &b, "alpha", &[worker("default-worker-1")]).await;
    let b_json = with_accept(&b, "application/json");

    // B's own namespace and B's view of every namespace: B's machine only.
    let r = app
        .get_as(&format!("{BASE}/namespaces/project-b/machines"), &b_json)
        .await;
    assert_eq!(names(&r), strings(&["alpha-default-worker-1"]));
    assert_eq!(r.body["items"][0]["metadata"]["namespace"], "project-b");
    let r = app.get_as(&format!("{BASE}/machines"), &b_json).await;
    assert_eq!(names(&r), strings(&["alpha-default-worker-1"]));
    assert_eq!(r.body["items"][0]["metadata"]["namespace"], "project-b");
    // A's namespace is refused to B, and B's name does not reach A's machines.
    let r = app
        .get_as(&format!("{BASE}/namespaces/project-a/machines"), &b_json)
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.body["reason"], "Forbidden");
    let r = app
        .get_as(
            &format!("{BASE}/namespaces/project-a/machines/alpha-default-master-1"),
            &b_json,
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = app
        .get_as(
            &format!("{BASE}/namespaces/project-b/machines/alpha-default-master-1"),
            &b_json,
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    // A sees its own four across namespaces.
    let r = get(&app, &format!("{BASE}/machines")).await;
    assert_eq!(names(&r).len(), 4);
    // An admin sees all five, in every project.
    let r = app
        .get_as(
            &format!("{BASE}/machines"),
            &with_accept(&app.admin(), "application/json"),
        )
        .await;
    assert_eq!(names(&r).len(), 5, "{}", r.text);
    let namespaces: std::collections::BTreeSet<&str> = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["namespace"].as_str())
        .collect();
    assert_eq!(
        namespaces.into_iter().collect::<Vec<_>>(),
        ["project-a", "project-b"]
    );
}

#[rstest]
#[tokio::test]
async fn the_methods_not_served_on_machines_are_refused_with_a_status(
    #[values(Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    fleet(&app).await;
    let json_h = with_accept(&app.headers, "application/json");
    for (method, path) in [
        (Method::PUT, format!("{BASE}/namespaces/project-a/machines")),
        (Method::PATCH, format!("{BASE}/machines")),
        (
            Method::POST,
            format!("{BASE}/namespaces/project-a/machines/alpha-default-worker-1"),
        ),
        (
            Method::DELETE,
            format!("{BASE}/namespaces/project-a/machines/alpha-default-worker-1/status"),
        ),
    ] {
        let r = app
            .request(method.clone(), &path, &json_h, Some(&json!({})))
            .await;
        assert_eq!(r.status, 405, "{method} {path}: {}", r.text);
        assert_eq!(r.body["kind"], "Status");
        assert_eq!(r.body["reason"], "MethodNotAllowed");
    }
    let r = get(
        &app,
        &format!("{BASE}/namespaces/project-a/machines/alpha-default-worker-1"),
    )
    .await;
    assert_eq!(r.status, 200, "the machine is still there: {}", r.text);
}

#[tokio::test]
async fn kubectl_gets_explains_and_discovers_machines() {
    let Some(bin) = kubectl_binary() else { return };
    let app = app_on(Backend::Postgres).await;
    fleet(&app).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);

    let out = k.ok(&["api-resources", "--api-group=cluster.k8s.io"]).await;
    let line = out
        .lines()
        .find(|l| l.starts_with("machines"))
        .unwrap_or_else(|| panic!("no machines in api-resources:\n{out}"));
    for word in ["cluster.k8s.io/v1alpha1", "true", "Machine"] {
        assert!(
            line.split_whitespace().any(|w| w == word),
            "{word} in {line}"
        );
    }

    let out = k.ok(&["get", "machines", "-n", "project-a"]).await;
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "CLUSTER",
            "NODEGROUP",
            "ROLE",
            "PHASE",
            "KUBELET",
            "ADDRESS",
            "AGE"
        ],
        "{out}"
    );
    assert_eq!(out.lines().count(), 5, "{out}");
    let master = out
        .lines()
        .find(|l| l.starts_with("alpha-default-master-1"))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = master.split_whitespace().collect();
    assert_eq!(
        cells[..7],
        [
            "alpha-default-master-1",
            "alpha",
            "default-master",
            "master",
            "Running",
            "v1.31.4",
            "10.0.0.5"
        ]
    );

    let out = k
        .ok(&["get", "machines", "-l", "cluster.k8s.io/cluster-name=beta"])
        .await;
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert!(rows[0].starts_with("beta-default-worker-1 "), "{out}");

    let out = k.ok(&["get", "machines", "-A"]).await;
    assert!(out.starts_with("NAMESPACE"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("project-a ")).count(),
        4,
        "{out}"
    );

    let out = k.ok(&["get", "machines", "-o", "wide"]).await;
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header[8..], ["PROVIDERID", "OS-IMAGE", "RUNTIME"], "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("alpha-default-master-1")
            && l.contains("openstack:///m1")
            && l.contains("ubuntu-24.04")
            && l.contains("containerd://1.7.22")),
        "{out}"
    );

    let out = k
        .ok(&["get", "machine", "alpha-default-worker-1", "-o", "json"])
        .await;
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        v["metadata"]["labels"]["fleetyard.openstack.org/nodegroup"],
        "default-worker"
    );

    let out = k.ok(&["explain", "machines.spec.versions"]).await;
    assert!(out.contains("KIND:") && out.contains("Machine"), "{out}");
    assert!(
        out.contains("kubelet") && out.contains("controlPlane"),
        "{out}"
    );

    let out = k
        .ok(&["auth", "can-i", "list", "machines.cluster.k8s.io"])
        .await;
    assert_eq!(out.trim(), "yes");
    let out = k
        .ok(&[
            "auth",
            "can-i",
            "get",
            "machines.cluster.k8s.io",
            "-n",
            "project-a",
        ])
        .await;
    assert_eq!(out.trim(), "yes");
    let out = k
        .ok(&["auth", "can-i", "delete", "machines.cluster.k8s.io"])
        .await;
    assert_eq!(out.trim(), "yes", "a member deletes its project's machines");
    let out = k
        .ok(&["auth", "can-i", "patch", "machines.cluster.k8s.io"])
        .await;
    assert_eq!(out.trim(), "yes", "a member changes its project's machines");
    let (ok, out, err) = k
        .run(&[
            "auth",
            "can-i",
            "patch",
            "machines.cluster.k8s.io",
            "--subresource=status",
        ])
        .await;
    assert!(
        !ok && out.starts_with("no"),
        "a machine's status is an admin's to write:\n{out}\n{err}"
    );
    let (ok, out, err) = k
        .run(&[
            "auth",
            "can-i",
            "list",
            "machines.cluster.k8s.io",
            "-n",
            "project-b",
        ])
        .await;
    assert!(!ok && out.starts_with("no"), "{out}\n{err}");
}

#[rstest]
#[tokio::test]
async fn a_name_shared_by_two_machines_gets_the_longer_cluster_and_a_long_name_is_the_uuid(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let h = app.headers.clone();
    cluster_with_machines(&app, &h, "a", &[worker("b-1")]).await;
    let ab = cluster_with_machines(&app, &h, "a-b", &[worker("1")]).await;
    let list = get(&app, &format!("{BASE}/namespaces/project-a/machines")).await;
    assert_eq!(sorted(names(&list)), strings(&["a-b-1", "a-b-1"]));
    let r = get(&app, &format!("{BASE}/namespaces/project-a/machines/a-b-1")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["ownerReferences"][0]["uid"], json!(ab));
    assert_eq!(
        r.body["metadata"]["annotations"]["fleetyard.openstack.org/machine-name"],
        "1"
    );

    let cluster = "c".repeat(200);
    let machine = format!("w{}", "1".repeat(60));
    cluster_with_machines(&app, &h, &cluster, &[worker(&machine)]).await;
    // Too long a registry name for a label value: no cluster label, so `!` selects it.
    let r = get(
        &app,
        &format!(
            "{BASE}/namespaces/project-a/machines?labelSelector=%21cluster.k8s.io%2Fcluster-name"
        ),
    )
    .await;
    assert_eq!(names(&r).len(), 1, "{}", r.text);
    let name = names(&r).pop().unwrap_or_default();
    let item = &r.body["items"][0];
    let uid = item["metadata"]["uid"].as_str().unwrap_or("");
    assert_eq!(name, format!("machine-{uid}"), "{}", r.text);
    assert_eq!(
        item["metadata"]["labels"],
        json!({"fleetyard.openstack.org/nodegroup": "default-worker"})
    );
    assert_eq!(
        item["metadata"]["ownerReferences"][0]["name"],
        json!(cluster)
    );
    let r = get(
        &app,
        &format!(
            "{BASE}/namespaces/project-a/machines?labelSelector=cluster.k8s.io%2Fcluster-name"
        ),
    )
    .await;
    assert_eq!(names(&r).len(), 2, "{}", r.text);
    let one = get(
        &app,
        &format!("{BASE}/namespaces/project-a/machines/{name}"),
    )
    .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(
        one.body["metadata"]["annotations"]["fleetyard.openstack.org/machine-name"],
        json!(machine)
    );
}
