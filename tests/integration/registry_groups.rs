//! Cluster groups on the Kubernetes face, on PostgreSQL and SQLite: project A's cluster
//! `shared` is in A's group, bound `read` to project R and `write` to project W; A's `private`
//! is in no group; project U is bound nothing. Every registry endpoint is walked as the owner,
//! the bound reader, the bound writer and the unbound project (the matrix below), with the
//! status and the body each gets; a watch sees clusters enter and leave as labels, members,
//! bindings, selectors and groups change; `SelfSubjectAccessReview` answers from the same rules.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{at, spawn_with, uuid_of, Backend, Resp, TestApp};

/// Runs one test body against both backends.
macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn on_postgres() {
                ($body)(spawn_with(Backend::Postgres, |_| {}).await).await;
            }
            #[tokio::test]
            async fn on_sqlite() {
                ($body)(spawn_with(Backend::Sqlite, |_| {}).await).await;
            }
        }
    };
}

pub(super) const REG: &str = "/apis/clusterregistry.k8s.io/v1alpha1";
const PROFILES: &str = "/apis/multicluster.x-k8s.io/v1alpha1";
pub(super) const GROUPS: &str = "/v1/clustergroups";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The four callers of the matrix.
pub(super) struct Who {
    pub(super) owner: HeaderMap,
    pub(super) reader: HeaderMap,
    pub(super) writer: HeaderMap,
    pub(super) unbound: HeaderMap,
}

pub(super) fn who(app: &TestApp) -> Who {
    let latest = |p: &str, u: &str| at(&app.as_identity(p, u, "member,reader"), "latest");
    Who {
        owner: latest("project-a", "user-a"),
        reader: latest("project-r", "user-r"),
        writer: latest("project-w", "user-w"),
        unbound: latest("project-u", "user-u"),
    }
}

/// A registry request with a body sent as `content_type`.
async fn kube(
    app: &TestApp,
    method: Method,
    path: &str,
    h: &HeaderMap,
    accept: &str,
    body: Option<(&str, Value)>,
) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .headers(h.clone())
        .header("Accept", accept);
    if let Some((ct, body)) = body {
        req = req.header("Content-Type", ct).body(body.to_string());
    }
    app.send(req).await
}

pub(super) async fn get(app: &TestApp, path: &str, h: &HeaderMap) -> Resp {
    kube(app, Method::GET, path, h, "application/json", None).await
}

/// Registers `name` in the caller's project, with `labels` and a server of its own.
async fn register(app: &TestApp, h: &HeaderMap, ns: &str, name: &str, labels: Value, ip: &str) {
    let r = kube(
        app,
        Method::POST,
        &format!("{REG}/namespaces/{ns}/clusters"),
        h,
        "application/json",
        Some((
            "application/json",
            json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": name, "labels": labels},
                "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": format!("{ip}:6443")}]}}}),
        )),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// Sets a cluster's labels as `kubectl label --overwrite` does.
pub(super) async fn relabel(
    app: &TestApp,
    h: &HeaderMap,
    ns: &str,
    name: &str,
    labels: Value,
) -> Resp {
    kube(
        app,
        Method::PATCH,
        &format!("{REG}/namespaces/{ns}/clusters/{name}"),
        h,
        "application/json",
        Some((
            "application/merge-patch+json",
            json!({"metadata": {"labels": labels}}),
        )),
    )
    .await
}

/// A's group over `shared` (by the selector `share=yes`), bound read to R and write to W; the
/// group's uuid and the bindings' uuids.
pub(super) async fn share(app: &TestApp, w: &Who) -> (String, String, String) {
    register(
        app,
        &w.owner,
        "project-a",
        "shared",
        json!({"share": "yes"}),
        "10.9.0.1",
    )
    .await;
    register(
        app,
        &w.owner,
        "project-a",
        "private",
        json!({"share": "no"}),
        "10.9.0.2",
    )
    .await;
    register(app, &w.reader, "project-r", "r-own", json!({}), "10.9.0.3").await;
    let r = app
        .post_as(
            GROUPS,
            &json!({"name": "fleet", "selector": "share=yes"}),
            &w.owner,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let g = uuid_of(&r.body);
    let mut bindings = Vec::new();
    for (project, access) in [("project-r", "read"), ("project-w", "write")] {
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/bindings"),
                &json!({"project_id": project, "access": access}),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        bindings.push(uuid_of(&r.body));
    }
    (g, bindings.remove(0), bindings.remove(0))
}

/// The names of a list's items (of a Table's rows when it is one), in order.
fn names(body: &Value) -> Vec<String> {
    let items = body["items"]
        .as_array()
        .or_else(|| body["rows"].as_array())
        .unwrap_or_else(|| panic!("a list: {body}"));
    items
        .iter()
        .map(|i| {
            let o = if i["object"].is_object() {
                &i["object"]
            } else {
                i
            };
            o["metadata"]["name"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

/// The Status of a refusal: its code, reason and message.
fn status_of(r: &Resp, code: u16, reason: &str) -> String {
    assert_eq!(r.status, code, "{}", r.text);
    assert_eq!(r.body["kind"], "Status", "{}", r.text);
    assert_eq!(r.body["apiVersion"], "v1", "{}", r.text);
    assert_eq!(r.body["status"], "Failure", "{}", r.text);
    assert_eq!(r.body["reason"], reason, "{}", r.text);
    assert_eq!(r.body["code"], code, "{}", r.text);
    r.body["message"].as_str().unwrap_or("").to_string()
}

fn assert_not_found(r: &Resp, plural: &str, group: &str, name: &str) {
    let m = status_of(r, 404, "NotFound");
    assert_eq!(m, format!("{plural}.{group} \"{name}\" not found"));
    assert_eq!(r.body["details"]["name"], name, "{}", r.text);
}

fn assert_forbidden(r: &Resp, verb: &str, namespace: &str) {
    let m = status_of(r, 403, "Forbidden");
    assert!(
        m.contains(&format!("cannot {verb} resource")) && m.contains(namespace),
        "{m}"
    );
}

/// The events of a watch that ends after a second.
async fn watched(app: &TestApp, path: &str, h: &HeaderMap) -> Vec<(String, String)> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let r = get(app, &format!("{path}{sep}watch=true&timeoutSeconds=1"), h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let name = v["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            (v["type"].as_str().unwrap_or("").to_string(), name)
        })
        .collect()
}

both!(
    the_kube_face_matrix_of_owner_bound_reader_bound_writer_and_unbound_project,
    |app: TestApp| async move {
        let app = &app;
        let w = who(app);
        share(app, &w).await;
        let ns_a = format!("{REG}/namespaces/project-a/clusters");
        let group = "clusterregistry.k8s.io";

        // get: the owner and both bound projects read `shared`; `private` is unknown to the
        // bound projects, exactly as a name that does not exist; to the unbound project every
        // name is, exactly as to a bound project whose groups do not reach it.
        for h in [&w.owner, &w.reader, &w.writer] {
            let r = get(app, &format!("{ns_a}/shared"), h).await;
            assert_eq!(r.status, 200, "{}", r.text);
            assert_eq!(r.body["metadata"]["name"], "shared");
            assert_eq!(r.body["metadata"]["namespace"], "project-a");
        }
        let r = get(app, &format!("{ns_a}/private"), &w.owner).await;
        assert_eq!(r.status, 200, "{}", r.text);
        for h in [&w.reader, &w.writer] {
            for name in ["private", "ghost"] {
                let r = get(app, &format!("{ns_a}/{name}"), h).await;
                assert_not_found(&r, "clusters", group, name);
            }
        }
        for name in ["shared", "private", "ghost"] {
            let r = get(app, &format!("{ns_a}/{name}"), &w.unbound).await;
            assert_not_found(&r, "clusters", group, name);
        }

        // list -n project-a, JSON and Table.
        let r = get(app, &ns_a, &w.owner).await;
        assert_eq!(names(&r.body), ["private", "shared"]);
        for h in [&w.reader, &w.writer] {
            let r = get(app, &ns_a, h).await;
            assert_eq!(r.status, 200, "{}", r.text);
            assert_eq!(r.body["kind"], "ClusterList");
            assert_eq!(names(&r.body), ["shared"], "{}", r.text);
            let t = kube(app, Method::GET, &ns_a, h, TABLE, None).await;
            assert_eq!(t.status, 200, "{}", t.text);
            assert_eq!(t.body["kind"], "Table");
            let rows = t.body["rows"].as_array().expect("rows");
            assert_eq!(rows.len(), 1, "{}", t.text);
            assert_eq!(rows[0]["cells"][0], "shared");
        }
        let r = get(app, &ns_a, &w.unbound).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["kind"], "ClusterList");
        assert_eq!(names(&r.body), Vec::<String>::new(), "{}", r.text);

        // list -A: the caller's own clusters and what its groups reach.
        let all = format!("{REG}/clusters");
        let r = get(app, &all, &w.owner).await;
        assert_eq!(names(&r.body), ["private", "shared"]);
        let r = get(app, &all, &w.reader).await;
        assert_eq!(names(&r.body), ["shared", "r-own"], "{}", r.text);
        let r = get(app, &all, &w.writer).await;
        assert_eq!(names(&r.body), ["shared"], "{}", r.text);
        let r = get(app, &all, &w.unbound).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(names(&r.body), Vec::<String>::new());
        // One item a page: the pages go on through the shared cluster to the caller's own.
        let first = get(app, &format!("{all}?limit=1"), &w.reader).await;
        assert_eq!(names(&first.body), ["shared"]);
        let token = first.body["metadata"]["continue"]
            .as_str()
            .expect("a continue token");
        let next = get(app, &format!("{all}?limit=1&continue={token}"), &w.reader).await;
        assert_eq!(names(&next.body), ["r-own"], "{}", next.text);

        // watch (initial events), -n and -A.
        let added = |n: &[&str]| -> Vec<(String, String)> {
            n.iter()
                .map(|n| ("ADDED".to_string(), n.to_string()))
                .collect()
        };
        assert_eq!(
            watched(app, &ns_a, &w.owner).await,
            added(&["private", "shared"])
        );
        assert_eq!(watched(app, &ns_a, &w.reader).await, added(&["shared"]));
        assert_eq!(
            watched(app, &all, &w.reader).await,
            added(&["shared", "r-own"])
        );
        assert_eq!(watched(app, &ns_a, &w.unbound).await, added(&[]));

        // The kubeconfig export.
        let export = format!("{REG}/namespaces/project-a/kubeconfig");
        for (h, want) in [
            (&w.owner, vec!["10.9.0.1", "10.9.0.2"]),
            (&w.reader, vec!["10.9.0.1"]),
            (&w.writer, vec!["10.9.0.1"]),
        ] {
            let r = get(app, &export, h).await;
            assert_eq!(r.status, 200, "{}", r.text);
            for ip in ["10.9.0.1", "10.9.0.2"] {
                assert_eq!(r.text.contains(ip), want.contains(&ip), "{ip}: {}", r.text);
            }
        }
        let r = get(app, &export, &w.unbound).await;
        assert_eq!(r.status, 200, "{}", r.text);
        for ip in ["10.9.0.1", "10.9.0.2"] {
            assert!(!r.text.contains(ip), "{ip}: {}", r.text);
        }
        let r = get(app, &format!("{REG}/kubeconfig"), &w.reader).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            r.text.contains("project-a/shared") && r.text.contains("project-r/r-own"),
            "{}",
            r.text
        );
        assert!(!r.text.contains("private"), "{}", r.text);

        // ClusterProfiles.
        let profiles = format!("{PROFILES}/namespaces/project-a/clusterprofiles");
        for h in [&w.owner, &w.reader, &w.writer] {
            let r = get(app, &format!("{profiles}/shared"), h).await;
            assert_eq!(r.status, 200, "{}", r.text);
            assert_eq!(r.body["kind"], "ClusterProfile");
            assert_eq!(r.body["metadata"]["name"], "shared");
        }
        for h in [&w.reader, &w.writer] {
            let r = get(app, &format!("{profiles}/private"), h).await;
            assert_not_found(&r, "clusterprofiles", "multicluster.x-k8s.io", "private");
            let r = get(app, &profiles, h).await;
            assert_eq!(names(&r.body), ["shared"], "{}", r.text);
        }
        let r = get(app, &format!("{PROFILES}/clusterprofiles"), &w.reader).await;
        assert_eq!(names(&r.body), ["shared", "r-own"], "{}", r.text);
        assert_eq!(watched(app, &profiles, &w.reader).await, added(&["shared"]));
        assert_not_found(
            &get(app, &format!("{profiles}/shared"), &w.unbound).await,
            "clusterprofiles",
            "multicluster.x-k8s.io",
            "shared",
        );
        let r = get(app, &profiles, &w.unbound).await;
        assert_eq!(names(&r.body), Vec::<String>::new(), "{}", r.text);

        // Writes: the reader's binding grants none (403 naming the cluster), the writer's
        // grants label, annotate, spec changes and delete; `shared` is unknown to the unbound
        // project and `private` to the writer.
        let labels = json!({"share": "yes", "tier": "gold"});
        let r = relabel(app, &w.reader, "project-a", "shared", labels.clone()).await;
        assert_forbidden(&r, "update", "project-a");
        assert_eq!(r.body["details"]["name"], "shared", "{}", r.text);
        let r = relabel(app, &w.unbound, "project-a", "shared", labels.clone()).await;
        assert_not_found(&r, "clusters", group, "shared");
        let r = relabel(app, &w.writer, "project-a", "private", labels.clone()).await;
        assert_not_found(&r, "clusters", group, "private");
        let r = relabel(app, &w.writer, "project-a", "shared", labels.clone()).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["labels"], labels);
        let r = get(app, &format!("{ns_a}/shared"), &w.owner).await;
        assert_eq!(r.body["metadata"]["labels"], labels, "the owner sees it");
        let r = kube(
            app,
            Method::PATCH,
            &format!("{ns_a}/shared"),
            &w.writer,
            "application/json",
            Some((
                "application/merge-patch+json",
                json!({"metadata": {"annotations": {"note": "by w"}}}),
            )),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["annotations"]["note"], "by w");
        // A replace (PUT) of what the writer read.
        let mut current = get(app, &format!("{ns_a}/shared"), &w.writer).await.body;
        current["metadata"]["labels"]["tier"] = json!("silver");
        let put = |h: &HeaderMap, body: Value| {
            let h = h.clone();
            let path = format!("{ns_a}/shared");
            async move {
                kube(
                    app,
                    Method::PUT,
                    &path,
                    &h,
                    "application/json",
                    Some(("application/json", body)),
                )
                .await
            }
        };
        let r = put(&w.reader, current.clone()).await;
        assert_forbidden(&r, "update", "project-a");
        let r = put(&w.writer, current.clone()).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["labels"]["tier"], "silver");

        // delete.
        let r = kube(
            app,
            Method::DELETE,
            &format!("{ns_a}/shared"),
            &w.reader,
            "application/json",
            None,
        )
        .await;
        assert_forbidden(&r, "delete", "project-a");
        let r = kube(
            app,
            Method::DELETE,
            &format!("{ns_a}/shared"),
            &w.unbound,
            "application/json",
            None,
        )
        .await;
        assert_not_found(&r, "clusters", group, "shared");
        let r = kube(
            app,
            Method::DELETE,
            &format!("{ns_a}/private"),
            &w.writer,
            "application/json",
            None,
        )
        .await;
        assert_not_found(&r, "clusters", group, "private");
        let r = kube(
            app,
            Method::DELETE,
            &format!("{ns_a}/shared"),
            &w.writer,
            "application/json",
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["name"], "shared");
        let gone = get(app, &format!("{ns_a}/shared"), &w.owner).await;
        assert_not_found(&gone, "clusters", group, "shared");
        let r = get(app, &format!("{ns_a}/private"), &w.owner).await;
        assert_eq!(r.status, 200, "private is untouched: {}", r.text);
    }
);

/// A `SelfSubjectAccessReview` of `verb` on `resource` (`name`) in project-a.
async fn can_i(app: &TestApp, h: &HeaderMap, verb: &str, resource: &str, name: &str) -> Value {
    let r = app
        .post_as(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"namespace": "project-a", "verb": verb,
                    "group": if resource == "clusterprofiles" { "multicluster.x-k8s.io" }
                        else { "clusterregistry.k8s.io" },
                    "resource": resource, "name": name}}}),
            h,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["status"].clone()
}

both!(
    can_i_answers_from_the_bindings_in_another_projects_namespace,
    |app: TestApp| async move {
        let app = &app;
        let w = who(app);
        share(app, &w).await;
        let yes = |s: &Value| s["allowed"] == true;
        for (h, reads, writes) in [
            (&w.owner, true, true),
            (&w.reader, true, false),
            (&w.writer, true, true),
            (&w.unbound, false, false),
        ] {
            for verb in ["get", "list", "watch"] {
                assert_eq!(yes(&can_i(app, h, verb, "clusters", "shared").await), reads);
            }
            assert_eq!(
                yes(&can_i(app, h, "get", "clusterprofiles", "shared").await),
                reads
            );
            for verb in ["update", "patch", "delete"] {
                let s = can_i(app, h, verb, "clusters", "shared").await;
                assert_eq!(yes(&s), writes, "{verb}: {s}");
            }
        }
        // What no group reaches, and what a group never grants.
        for h in [&w.reader, &w.writer] {
            let s = can_i(app, h, "get", "clusters", "private").await;
            assert_eq!(s["allowed"], false, "{s}");
            assert!(
                s["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("no cluster group")),
                "{s}"
            );
            assert_eq!(can_i(app, h, "list", "clusters", "").await["allowed"], true);
            assert_eq!(can_i(app, h, "get", "clusters", "").await["allowed"], false);
            assert_eq!(
                can_i(app, h, "create", "clusters", "x").await["allowed"],
                false
            );
        }
        // The rules of A's namespace: list and watch of clusters and ClusterProfiles for a
        // bound project, marked incomplete (the named clusters' rights are not listed);
        // nothing for the unbound project.
        for (h, shared) in [(&w.reader, true), (&w.unbound, false)] {
            let r = app
                .post_as(
                    "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                    &json!({"apiVersion": "authorization.k8s.io/v1",
                        "kind": "SelfSubjectRulesReview", "spec": {"namespace": "project-a"}}),
                    h,
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.text);
            assert_eq!(r.body["status"]["incomplete"], shared, "{}", r.text);
            let rules: Vec<(Value, Value)> = r.body["status"]["resourceRules"]
                .as_array()
                .expect("resourceRules")
                .iter()
                .filter(|r| {
                    r["resources"] != json!(["selfsubjectaccessreviews"])
                        && r["resources"] != json!(["selfsubjectrulesreviews"])
                        && r["resources"] != json!(["selfsubjectreviews"])
                        && r["resources"] != json!(["namespaces"])
                })
                .map(|r| (r["resources"].clone(), r["verbs"].clone()))
                .collect();
            let want: Vec<(Value, Value)> = if shared {
                vec![
                    (json!(["clusters"]), json!(["list", "watch"])),
                    (json!(["clusterprofiles"]), json!(["list", "watch"])),
                ]
            } else {
                vec![]
            };
            assert_eq!(rules, want, "{}", r.text);
        }

        let s = can_i(app, &w.reader, "delete", "clusters", "shared").await;
        assert!(
            s["reason"]
                .as_str()
                .is_some_and(|r| r.contains("grant read access")),
            "{s}"
        );
    }
);

/// Reads a watch's lines as they come.
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    async fn open(app: &TestApp, path: &str, h: &HeaderMap) -> Stream {
        let sep = if path.contains('?') { '&' } else { '?' };
        let resp = app
            .client
            .get(app.url(&format!("{path}{sep}watch=true&timeoutSeconds=60")))
            .headers(h.clone())
            .send()
            .await
            .expect("the watch starts");
        assert_eq!(resp.status().as_u16(), 200);
        Stream {
            resp,
            buf: String::new(),
        }
    }

    /// The next event: (type, name).
    async fn next(&mut self) -> (String, String) {
        loop {
            if let Some(i) = self.buf.find('\n') {
                let line: String = self.buf.drain(..=i).collect();
                let v: Value = serde_json::from_str(line.trim()).expect("an event");
                return (
                    v["type"].as_str().unwrap_or("").to_string(),
                    v["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.resp.chunk())
                .await
                .expect("an event within 10 s")
                .expect("reads")
                .expect("the stream goes on");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next event that is not a `MODIFIED` (a touch of a cluster already shown).
    async fn next_change(&mut self) -> (String, String) {
        loop {
            let e = self.next().await;
            if e.0 != "MODIFIED" {
                return e;
            }
        }
    }
}

fn ev(kind: &str, name: &str) -> (String, String) {
    (kind.to_string(), name.to_string())
}

both!(
    a_watch_sees_clusters_enter_and_leave_as_labels_members_bindings_and_groups_change,
    |app: TestApp| async move {
        let app = &app;
        let w = who(app);
        let (g, read_binding, _) = share(app, &w).await;
        let ns_a = format!("{REG}/namespaces/project-a/clusters");
        let mut streams = vec![
            Stream::open(app, &ns_a, &w.reader).await,
            Stream::open(app, &format!("{REG}/clusters"), &w.reader).await,
            Stream::open(
                app,
                &format!("{PROFILES}/namespaces/project-a/clusterprofiles"),
                &w.reader,
            )
            .await,
        ];
        // The initial events: what the reader reaches (and, across namespaces, its own).
        for (i, s) in streams.iter_mut().enumerate() {
            assert_eq!(s.next().await, ev("ADDED", "shared"), "stream {i}");
            if i == 1 {
                assert_eq!(s.next().await, ev("ADDED", "r-own"));
            }
        }
        async fn expect(streams: &mut [Stream], e: (String, String)) {
            for (i, s) in streams.iter_mut().enumerate() {
                assert_eq!(s.next_change().await, e, "stream {i}");
            }
        }

        // A label change brings `private` under the selector, and takes it away again.
        let r = relabel(
            app,
            &w.owner,
            "project-a",
            "private",
            json!({"share": "yes"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        expect(&mut streams, ev("ADDED", "private")).await;
        let r = relabel(
            app,
            &w.owner,
            "project-a",
            "private",
            json!({"share": "no"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        expect(&mut streams, ev("DELETED", "private")).await;

        // An explicit member (A's own cluster: accepted at once), then removed.
        let private = get(app, &format!("{ns_a}/private"), &w.owner).await;
        let uid = private.body["metadata"]["uid"]
            .as_str()
            .expect("uid")
            .to_string();
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/members"),
                &json!({"cluster": uid}),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["state"], "Accepted");
        expect(&mut streams, ev("ADDED", "private")).await;
        let r = app
            .delete_as(&format!("{GROUPS}/{g}/members/{uid}"), &w.owner)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        expect(&mut streams, ev("DELETED", "private")).await;

        // The binding goes: `shared` leaves; a new binding brings it back.
        let r = app
            .delete_as(&format!("{GROUPS}/{g}/bindings/{read_binding}"), &w.owner)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        expect(&mut streams, ev("DELETED", "shared")).await;
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/bindings"),
                &json!({"project_id": "project-r", "access": "read"}),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        expect(&mut streams, ev("ADDED", "shared")).await;

        // The selector changes: `shared` leaves and `private` enters, in one commit.
        let r = app
            .patch_as(
                &format!("{GROUPS}/{g}"),
                &json!([{"op": "replace", "path": "/selector", "value": "share=no"}]),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        for (i, s) in streams.iter_mut().enumerate() {
            let mut got = vec![s.next_change().await, s.next_change().await];
            got.sort();
            assert_eq!(
                got,
                [ev("ADDED", "private"), ev("DELETED", "shared")],
                "stream {i}"
            );
        }
        let r = app
            .patch_as(
                &format!("{GROUPS}/{g}"),
                &json!([{"op": "replace", "path": "/selector", "value": "share=yes"}]),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        for (i, s) in streams.iter_mut().enumerate() {
            let mut got = vec![s.next_change().await, s.next_change().await];
            got.sort();
            assert_eq!(
                got,
                [ev("ADDED", "shared"), ev("DELETED", "private")],
                "stream {i}"
            );
        }

        // The group goes.
        let r = app.delete_as(&format!("{GROUPS}/{g}"), &w.owner).await;
        assert_eq!(r.status, 204, "{}", r.text);
        expect(&mut streams, ev("DELETED", "shared")).await;

        // Nothing of A's reaches the reader any more; its own cluster still streams.
        let r = relabel(app, &w.owner, "project-a", "shared", json!({"share": "no"})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = relabel(app, &w.reader, "project-r", "r-own", json!({"mine": "yes"})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(streams[1].next().await, ev("MODIFIED", "r-own"));
    }
);
