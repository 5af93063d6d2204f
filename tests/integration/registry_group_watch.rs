//! `ClusterGroup` and `ClusterGroupBinding` watched and paged on the Kubernetes face: the
//! groups' change log behind `watch=true` (ADDED, MODIFIED and DELETED as a group is created,
//! changed, given members and deleted through either face, its bindings going with it; a
//! resume from a resourceVersion; 410 once the log is pruned past it; the initial events and
//! their bookmark; a caller sees only what its list shows), `limit` and `continue` as the
//! cluster list pages, and a member of another project named only when the caller reads it
//! (a missing cluster and an unreadable one are the same 422). On PostgreSQL and SQLite, and
//! with the real kubectl.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{at, complete_cluster_as, spawn_with, uuid_of, Backend, Resp, TestApp};

const KUBE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";
const GROUPS: &str = "/v1/clustergroups";

async fn app_on(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

fn a(app: &TestApp) -> HeaderMap {
    at(
        &app.as_identity("project-a", "user-a", "member,reader"),
        "latest",
    )
}

fn b(app: &TestApp) -> HeaderMap {
    at(
        &app.as_identity("project-b", "user-b", "member,reader"),
        "latest",
    )
}

async fn kube(
    app: &TestApp,
    method: Method,
    path: &str,
    h: &HeaderMap,
    body: Option<(&str, &Value)>,
) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(&format!("{KUBE}{path}")))
        .headers(h.clone())
        .header("Accept", "application/json");
    if let Some((ct, b)) = body {
        req = req.header("Content-Type", ct).body(b.to_string());
    }
    app.send(req).await
}

async fn get(app: &TestApp, path: &str, h: &HeaderMap) -> Resp {
    kube(app, Method::GET, path, h, None).await
}

async fn create_group(app: &TestApp, h: &HeaderMap, ns: &str, body: Value) -> Resp {
    kube(
        app,
        Method::POST,
        &format!("/namespaces/{ns}/clustergroups"),
        h,
        Some(("application/json", &body)),
    )
    .await
}

/// The lines of a watch of `path` (with `query`) that ends after a second.
async fn watched(app: &TestApp, path: &str, h: &HeaderMap, query: &str) -> Vec<Value> {
    let r = get(
        app,
        &format!("{path}?watch=true&timeoutSeconds=1&{query}"),
        h,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `(type, namespace/name)` of each event that is no bookmark.
fn seen(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] != "BOOKMARK")
        .map(|e| {
            let m = &e["object"]["metadata"];
            (
                e["type"].as_str().unwrap_or("").to_string(),
                format!(
                    "{}/{}",
                    m["namespace"].as_str().unwrap_or(""),
                    m["name"].as_str().unwrap_or("")
                ),
            )
        })
        .collect()
}

fn pair(t: &str, n: &str) -> (String, String) {
    (t.into(), n.into())
}

async fn list_version(app: &TestApp, path: &str, h: &HeaderMap) -> String {
    let r = get(app, path, h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list's resourceVersion")
        .to_string()
}

/// The registry name of the only cluster of `project`.
async fn registry_name(app: &TestApp, project: &str, h: &HeaderMap) -> String {
    let r = get(app, &format!("/namespaces/{project}/clusters"), h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["items"][0]["metadata"]["name"]
        .as_str()
        .expect("a cluster")
        .to_string()
}

#[rstest]
#[tokio::test]
async fn a_group_watch_replays_groups_members_and_bindings_and_expires(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c_a = complete_cluster_as(&app, "api", &a(&app)).await;
    let api = registry_name(&app, "project-a", &a(&app)).await;
    let groups = "/namespaces/project-a/clustergroups";
    let bindings = "/namespaces/project-a/clustergroupbindings";
    let from = list_version(&app, groups, &a(&app)).await;

    // Made on the Kubernetes face, given a member and bound through /v1, changed, deleted.
    let r = create_group(
        &app,
        &a(&app),
        "project-a",
        json!({"metadata": {"name": "web"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let gid = r.body["metadata"]["uid"].as_str().expect("uid").to_string();
    let created_rv = r.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    assert!(created_rv.parse::<i64>().expect("a number") > from.parse::<i64>().expect("n"));
    let r = app
        .post_as(
            &format!("{GROUPS}/{gid}/members"),
            &json!({"cluster": c_a}),
            &a(&app),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post_as(
            &format!("{GROUPS}/{gid}/bindings"),
            &json!({"project_id": "project-b", "access": "read"}),
            &a(&app),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mid = list_version(&app, groups, &a(&app)).await;
    let patch = json!({"spec": {"description": "changed"}});
    let r = kube(
        &app,
        Method::PATCH,
        &format!("{groups}/web"),
        &a(&app),
        Some(("application/merge-patch+json", &patch)),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let patched_rv = r.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    // B's group is none of A's watch's business.
    let r = create_group(
        &app,
        &b(&app),
        "project-b",
        json!({"metadata": {"name": "other"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = kube(
        &app,
        Method::DELETE,
        &format!("{groups}/web"),
        &a(&app),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let events = watched(&app, groups, &a(&app), &format!("resourceVersion={from}")).await;
    assert_eq!(
        seen(&events),
        vec![
            pair("ADDED", "project-a/web"),
            pair("MODIFIED", "project-a/web"),
            pair("MODIFIED", "project-a/web"),
            pair("DELETED", "project-a/web"),
        ],
        "{events:?}"
    );
    assert_eq!(
        events[0]["object"]["metadata"]["resourceVersion"],
        json!(created_rv)
    );
    assert_eq!(events[0]["object"]["kind"], "ClusterGroup");
    assert_eq!(
        events[1]["object"]["status"]["members"],
        json!([{"namespace": "project-a", "name": api, "state": "Accepted"}])
    );
    assert_eq!(events[2]["object"]["spec"]["description"], "changed");
    assert_eq!(
        events[2]["object"]["metadata"]["resourceVersion"],
        json!(patched_rv)
    );
    // The DELETED event carries the last state, members and all.
    assert_eq!(events[3]["object"]["spec"]["description"], "changed");
    assert_eq!(
        events[3]["object"]["spec"]["clusters"],
        json!([{"namespace": "project-a", "name": api}])
    );
    // Resumed from the middle: only what came after.
    let later = watched(&app, groups, &a(&app), &format!("resourceVersion={mid}")).await;
    assert_eq!(
        seen(&later),
        vec![
            pair("MODIFIED", "project-a/web"),
            pair("DELETED", "project-a/web")
        ],
        "{later:?}"
    );
    // The bindings' watch: the binding's creation, and its going with its group.
    let bound = watched(&app, bindings, &a(&app), &format!("resourceVersion={from}")).await;
    assert_eq!(
        seen(&bound),
        vec![
            pair("ADDED", "project-a/web.project-b"),
            pair("DELETED", "project-a/web.project-b")
        ],
        "{bound:?}"
    );
    assert_eq!(bound[1]["object"]["spec"]["groupRef"]["name"], "web");
    // Across namespaces: A's own only; an admin's: both projects'.
    let all = watched(
        &app,
        "/clustergroups",
        &a(&app),
        &format!("resourceVersion={from}"),
    )
    .await;
    assert!(
        seen(&all).iter().all(|(_, n)| n.starts_with("project-a/")),
        "{all:?}"
    );
    // A field selector keeps what the list's keeps.
    let named = watched(
        &app,
        groups,
        &a(&app),
        &format!("resourceVersion={from}&fieldSelector=metadata.name%3Dnosuch"),
    )
    .await;
    assert_eq!(seen(&named), vec![], "{named:?}");

    // Initial events: the current groups, then the bookmark ending them.
    let r = create_group(
        &app,
        &a(&app),
        "project-a",
        json!({"metadata": {"name": "db"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let initial = watched(
        &app,
        groups,
        &a(&app),
        "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
    )
    .await;
    assert_eq!(
        seen(&initial),
        vec![pair("ADDED", "project-a/db")],
        "{initial:?}"
    );
    let mark = initial.last().expect("a bookmark");
    assert_eq!(mark["type"], "BOOKMARK");
    assert_eq!(mark["object"]["kind"], "ClusterGroup");
    assert_eq!(
        mark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // A Table watch: rows with the list's columns.
    let r = app
        .send(
            app.client
                .get(app.url(&format!(
                    "{KUBE}{groups}?watch=true&timeoutSeconds=1&resourceVersion={from}"
                )))
                .headers(a(&app))
                .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"),
        )
        .await;
    let first: Value = serde_json::from_str(r.text.lines().next().expect("a line")).expect("json");
    assert_eq!(first["object"]["kind"], "Table", "{}", r.text);
    assert_eq!(first["object"]["columnDefinitions"][0]["name"], "Name");
    assert_eq!(first["object"]["rows"][0]["cells"][0], "web");

    // Pruned past `from`: the watch from it is told it expired.
    app.store.prune_registry_changes(0).await.expect("prune");
    let expired = watched(&app, groups, &a(&app), &format!("resourceVersion={from}")).await;
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["type"], "ERROR");
    assert_eq!(expired[0]["object"]["code"], 410);
    assert_eq!(expired[0]["object"]["reason"], "Expired");
}

#[rstest]
#[tokio::test]
async fn group_and_binding_lists_page_with_limit_and_continue(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    for name in ["c", "a", "b"] {
        let r = create_group(
            &app,
            &a(&app),
            "project-a",
            json!({"metadata": {"name": name}}),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let gid = r.body["metadata"]["uid"].as_str().expect("uid").to_string();
        let r = app
            .post_as(
                &format!("{GROUPS}/{gid}/bindings"),
                &json!({"project_id": "project-b", "access": "read"}),
                &a(&app),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    for (path, names) in [
        ("/namespaces/project-a/clustergroups", ["a", "b", "c"]),
        (
            "/namespaces/project-a/clustergroupbindings",
            ["a.project-b", "b.project-b", "c.project-b"],
        ),
    ] {
        let r = get(&app, &format!("{path}?limit=2"), &a(&app)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let items: Vec<&str> = r.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(items, names[..2], "{}", r.text);
        assert_eq!(r.body["metadata"]["remainingItemCount"], 1, "{}", r.text);
        let token = r.body["metadata"]["continue"]
            .as_str()
            .expect("a token")
            .to_string();
        let rv = r.body["metadata"]["resourceVersion"].clone();
        let r = get(&app, &format!("{path}?limit=2&continue={token}"), &a(&app)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            r.body["items"][0]["metadata"]["name"], names[2],
            "{}",
            r.text
        );
        assert_eq!(r.body["items"].as_array().map(Vec::len), Some(1));
        assert!(r.body["metadata"]["continue"].is_null(), "{}", r.text);
        assert_eq!(r.body["metadata"]["resourceVersion"], rv);
        // Without a limit: every item, no token.
        let r = get(&app, path, &a(&app)).await;
        assert_eq!(
            r.body["items"].as_array().map(Vec::len),
            Some(3),
            "{}",
            r.text
        );
        assert!(r.body["metadata"]["continue"].is_null());
        // A later page whose objects changed since the first: 410 with a token that goes on.
        if path.ends_with("clustergroups") {
            let patch = json!({"spec": {"description": "moved"}});
            let r = kube(
                &app,
                Method::PATCH,
                &format!("{path}/c"),
                &a(&app),
                Some(("application/merge-patch+json", &patch)),
            )
            .await;
            assert_eq!(r.status, 200, "{}", r.text);
            let r = get(&app, &format!("{path}?limit=2&continue={token}"), &a(&app)).await;
            assert_eq!(r.status, 410, "{}", r.text);
            assert_eq!(r.body["reason"], "Expired");
            let next = r.body["metadata"]["continue"].as_str().expect("a token");
            let r = get(&app, &format!("{path}?limit=2&continue={next}"), &a(&app)).await;
            assert_eq!(r.status, 200, "{}", r.text);
            assert_eq!(r.body["items"][0]["spec"]["description"], "moved");
        }
    }
    let r = get(&app, "/clustergroups?continue=bm90LWEtdG9rZW4=", &a(&app)).await;
    assert_eq!(r.status, 400, "{}", r.text);
}

#[rstest]
#[tokio::test]
async fn a_member_of_another_project_is_named_only_when_the_caller_reads_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = app_on(backend).await;
    let c_b = complete_cluster_as(&app, "web", &b(&app)).await;
    let web = registry_name(&app, "project-b", &b(&app)).await;
    let naming = |ns: &str, name: &str| json!({"metadata": {"name": "g"}, "spec": {"clusters": [{"namespace": ns, "name": name}]}});
    // B's cluster exists but A does not read it; a cluster of that name nowhere: the same 422.
    let hidden = create_group(&app, &a(&app), "project-a", naming("project-b", &web)).await;
    let missing = create_group(&app, &a(&app), "project-a", naming("project-b", "nosuch")).await;
    assert_eq!(hidden.status, 422, "{}", hidden.text);
    assert_eq!(missing.status, 422, "{}", missing.text);
    assert_eq!(
        hidden.body["details"]["causes"][0]["message"],
        format!(
            "Invalid value: \"project-b/{web}\": cluster {web} in namespace project-b not found"
        ),
        "{}",
        hidden.text
    );
    assert_eq!(hidden.text, missing.text.replace("nosuch", &web));
    // The same through a patch of an existing group.
    let r = create_group(
        &app,
        &a(&app),
        "project-a",
        json!({"metadata": {"name": "g"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let patch =
        |name: &str| json!({"spec": {"clusters": [{"namespace": "project-b", "name": name}]}});
    let mut bodies = Vec::new();
    for name in [web.as_str(), "nosuch"] {
        let r = kube(
            &app,
            Method::PATCH,
            "/namespaces/project-a/clustergroups/g",
            &a(&app),
            Some(("application/merge-patch+json", &patch(name))),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        bodies.push(r.text);
    }
    assert_eq!(bodies[0], bodies[1].replace("nosuch", &web));

    // Once B shares the cluster with A, A may propose it.
    let r = app
        .post_as(
            GROUPS,
            &json!({"name": "to-a", "clusters": [c_b]}),
            &b(&app),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post_as(
            &format!("{GROUPS}/{}/bindings", uuid_of(&r.body)),
            &json!({"project_id": "project-a", "access": "read"}),
            &b(&app),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = kube(
        &app,
        Method::PATCH,
        "/namespaces/project-a/clustergroups/g",
        &a(&app),
        Some(("application/merge-patch+json", &patch(&web))),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["status"]["members"],
        json!([{"namespace": "project-b", "name": web, "state": "Proposed"}])
    );
}

/// The next line of a `kubectl get -w` that holds `want` (20 s at most).
async fn next_line(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    want: &str,
) -> String {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let Some(l) = lines.next_line().await.expect("reads") else {
                return String::new();
            };
            if l.contains(want) {
                return l;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the watch shows {want}"))
}

#[tokio::test]
async fn kubectl_watches_groups_and_reads_them_in_chunks() {
    let Some(bin) = kubectl_binary() else { return };
    let app = app_on(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    for name in ["one", "two", "three"] {
        let r = create_group(
            &app,
            &a(&app),
            "project-a",
            json!({"metadata": {"name": name}}),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let out = k.ok(&["get", "cg", "--chunk-size=1"]).await;
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["one", "three", "two"], "{out}");
    let out = k
        .ok(&["auth", "can-i", "watch", "clustergroups", "-n", "project-a"])
        .await;
    assert_eq!(out.trim(), "yes");
    let out = k
        .ok(&[
            "auth",
            "can-i",
            "watch",
            "clustergroupbindings",
            "-n",
            "project-a",
        ])
        .await;
    assert_eq!(out.trim(), "yes");

    let mut child = k
        .command(&[
            "get",
            "clustergroups",
            "-w",
            "--output-watch-events",
            "--request-timeout=60s",
        ])
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let added = next_line(&mut lines, "three").await;
    assert!(added.starts_with("ADDED"), "{added}");
    let out = k
        .ok(&[
            "patch",
            "cg",
            "two",
            "--type=merge",
            "-p",
            r#"{"spec":{"description":"x"}}"#,
        ])
        .await;
    assert!(out.contains("patched"), "{out}");
    let modified = next_line(&mut lines, "MODIFIED").await;
    assert!(modified.contains("two"), "{modified}");
    let out = k.ok(&["delete", "cg", "one"]).await;
    assert!(out.contains("deleted"), "{out}");
    let deleted = next_line(&mut lines, "DELETED").await;
    assert!(deleted.contains("one"), "{deleted}");
    let _ = child.kill().await;
}
