//! `ClusterGroup` and `ClusterGroupBinding` on the Kubernetes face, against the same rows as
//! `/v1/clustergroups`: what kubectl makes `/v1` shows and the other way round, each write
//! with the notification its `/v1` twin commits; a cluster of another project stays `Proposed`
//! until its owner accepts it through `/v1`; bad bodies are one 422 with a cause per field;
//! another project's groups are neither listed nor readable; discovery, `kubectl explain` and
//! `kubectl auth can-i` know both kinds. On PostgreSQL and SQLite.

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{
    at, complete_cluster_as, events_of, spawn_with, uuid_of, Backend, Resp, TestApp,
};

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

/// A request to the Kubernetes face with a JSON body of `content_type`.
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

async fn kube_get(app: &TestApp, path: &str, h: &HeaderMap) -> Resp {
    kube(app, Method::GET, path, h, None).await
}

async fn kube_post(app: &TestApp, path: &str, h: &HeaderMap, body: &Value) -> Resp {
    kube(app, Method::POST, path, h, Some(("application/json", body))).await
}

/// The registry name of the only cluster of `project`.
async fn registry_name(app: &TestApp, project: &str, h: &HeaderMap) -> String {
    let r = kube_get(app, &format!("/namespaces/{project}/clusters"), h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["items"][0]["metadata"]["name"]
        .as_str()
        .expect("a cluster")
        .to_string()
}

/// Project B shares its cluster `cluster` with project A (read, through a `/v1` group of B's
/// bound to A), so that A may name it as a member of its own groups.
async fn share_with_a(app: &TestApp, cluster: &str) {
    let r = app
        .post_as(
            GROUPS,
            &json!({"name": "to-a", "clusters": [cluster]}),
            &b(app),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post_as(
            &format!("{GROUPS}/{}/bindings", uuid_of(&r.body)),
            &json!({"project_id": "project-a", "access": "read"}),
            &b(app),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

fn kinds(events: Vec<(String, String, String)>) -> Vec<String> {
    events
        .into_iter()
        .map(|(t, o, _)| format!("{t} {o}"))
        .collect()
}

/// `(namespace, name, state)` of a group object's `status.members`.
fn members(object: &Value) -> Vec<(String, String, String)> {
    object["status"]["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["namespace"].as_str().unwrap_or("").to_string(),
                m["name"].as_str().unwrap_or("").to_string(),
                m["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn owned(t: (&str, &str, &str)) -> (String, String, String) {
    (t.0.to_string(), t.1.to_string(), t.2.to_string())
}

#[tokio::test]
async fn kubectl_creates_reads_patches_and_deletes_groups_and_bindings_that_v1_sees() {
    let Some(bin) = kubectl_binary() else { return };
    let app = app_on(Backend::Postgres).await;
    let c_a = complete_cluster_as(&app, "api", &a(&app)).await;
    let c_b = complete_cluster_as(&app, "web", &b(&app)).await;
    let api = registry_name(&app, "project-a", &a(&app)).await;
    let web = registry_name(&app, "project-b", &b(&app)).await;
    share_with_a(&app, &c_b).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);

    let out = k
        .ok(&["api-resources", "--api-group=clusterregistry.k8s.io"])
        .await;
    let row = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(
        row("clustergroups"),
        [
            "clustergroups",
            "cg",
            "clusterregistry.k8s.io/v1alpha1",
            "true",
            "ClusterGroup"
        ],
        "{out}"
    );
    assert_eq!(
        row("clustergroupbindings"),
        [
            "clustergroupbindings",
            "cgb",
            "clusterregistry.k8s.io/v1alpha1",
            "true",
            "ClusterGroupBinding"
        ],
        "{out}"
    );
    let out = k.ok(&["explain", "clustergroup.spec.selector"]).await;
    assert!(out.contains("KIND:       ClusterGroup"), "{out}");
    assert!(out.contains("matchExpressions"), "{out}");
    assert!(out.contains("matchLabels"), "{out}");
    let out = k.ok(&["explain", "clustergroupbinding.spec"]).await;
    assert!(out.contains("groupRef"), "{out}");
    assert!(out.contains("read (get, list, watch"), "{out}");

    let manifest = format!(
        "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: ClusterGroup\nmetadata:\n  \
         name: prod\nspec:\n  description: production clusters\n  selector:\n    \
         matchLabels:\n      env: prod\n  clusters:\n  - name: {api}\n  - namespace: project-b\n    \
         name: {web}\n"
    );
    let file = k.file("group.yaml", &manifest);
    let out = k.ok(&["create", "-f", &file, "--dry-run=server"]).await;
    assert!(
        out.contains("clustergroup.clusterregistry.k8s.io/prod created (server dry run)"),
        "{out}"
    );
    let listed = app.get_as(GROUPS, &a(&app)).await;
    assert_eq!(listed.body["clustergroups"], json!([]), "{}", listed.text);

    let out = k.ok(&["create", "-f", &file]).await;
    assert!(
        out.contains("clustergroup.clusterregistry.k8s.io/prod created"),
        "{out}"
    );
    let err = k.fails(&["create", "-f", &file]).await;
    assert!(err.contains("AlreadyExists"), "{err}");
    assert!(err.contains("\"prod\" already exists"), "{err}");

    // /v1 sees the group kubectl made, with both memberships: A's joined, B's proposed.
    let listed = app.get_as(GROUPS, &a(&app)).await;
    let g = &listed.body["clustergroups"][0];
    assert_eq!(g["name"], "prod", "{}", listed.text);
    assert_eq!(g["selector"], "env=prod");
    assert_eq!(g["description"], "production clusters");
    let gid = uuid_of(g);
    let r = app
        .get_as(&format!("{GROUPS}/{gid}/members"), &a(&app))
        .await;
    let mut states: Vec<(String, String)> = r.body["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["cluster_id"].as_str().unwrap_or("").to_string(),
                m["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    states.sort();
    let mut expected = vec![
        (c_a.clone(), "Accepted".to_string()),
        (c_b.clone(), "Proposed".to_string()),
    ];
    expected.sort();
    assert_eq!(states, expected, "{}", r.text);

    let out = k.ok(&["get", "cg"]).await;
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "SELECTOR", "MEMBERS", "AGE"], "{out}");
    assert_eq!(lines[1][..3], ["prod", "env=prod", "1/2"], "{out}");
    let out = k.ok(&["get", "clustergroup", "prod", "-o", "json"]).await;
    let object: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        members(&object),
        vec![
            owned(("project-a", &api, "Accepted")),
            owned(("project-b", &web, "Proposed"))
        ]
    );
    let out = k.ok(&["get", "cg", "-A"]).await;
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[1][..3], ["project-a", "prod", "env=prod"], "{out}");
    // kubectl apply of the changed manifest patches the group.
    let file = k.file(
        "applied.yaml",
        &manifest.replace("production clusters", "applied"),
    );
    let out = k.ok(&["apply", "-f", &file]).await;
    assert!(
        out.contains("clustergroup.clusterregistry.k8s.io/prod configured"),
        "{out}"
    );
    let r = app
        .get_as(&format!("{GROUPS}/{}", uuid_of(g)), &a(&app))
        .await;
    assert_eq!(r.body["description"], "applied", "{}", r.text);
    let out = k.ok(&["describe", "clustergroup", "prod"]).await;
    assert!(out.contains("Name:         prod"), "{out}");
    assert!(out.contains("Proposed"), "{out}");

    // B's owner accepts through /v1; the Kubernetes face shows it.
    let r = app
        .post_as(
            &format!("{GROUPS}/{gid}/members/{c_b}/actions/accept"),
            &json!({}),
            &b(&app),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let out = k.ok(&["get", "cg"]).await;
    assert!(out.lines().nth(1).unwrap_or("").contains(" 2/2 "), "{out}");

    let binding = "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: ClusterGroupBinding\n\
                   metadata:\n  name: prod.project-b\nspec:\n  groupRef:\n    name: prod\n  \
                   subject:\n    project: project-b\n  access: read\n";
    let file = k.file("binding.yaml", binding);
    let out = k.ok(&["create", "-f", &file]).await;
    assert!(
        out.contains("clustergroupbinding.clusterregistry.k8s.io/prod.project-b created"),
        "{out}"
    );
    let out = k.ok(&["get", "cgb"]).await;
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "GROUP", "PROJECT", "ACCESS", "AGE"],
        "{out}"
    );
    assert_eq!(
        lines[1][..4],
        ["prod.project-b", "prod", "project-b", "read"],
        "{out}"
    );
    let r = app
        .get_as(&format!("{GROUPS}/{gid}/bindings"), &a(&app))
        .await;
    let bound = &r.body["bindings"][0];
    assert_eq!(
        (&bound["project_id"], &bound["access"]),
        (&json!("project-b"), &json!("read")),
        "{}",
        r.text
    );
    let bid = uuid_of(bound);

    let out = k
        .ok(&[
            "patch",
            "cg",
            "prod",
            "--type=merge",
            "-p",
            "{\"spec\":{\"description\":\"changed\",\"selector\":{\"matchLabels\":null,\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"In\",\"values\":[\"prod\",\"stage\"]}]}}}",
        ])
        .await;
    assert!(
        out.contains("clustergroup.clusterregistry.k8s.io/prod patched"),
        "{out}"
    );
    let r = app.get_as(&format!("{GROUPS}/{gid}"), &a(&app)).await;
    assert_eq!(
        (&r.body["description"], &r.body["selector"]),
        (&json!("changed"), &json!("env in (prod,stage)")),
        "{}",
        r.text
    );

    assert_eq!(
        k.ok(&["auth", "can-i", "create", "clustergroups"])
            .await
            .trim(),
        "yes"
    );
    let (_, out, _) = k
        .run(&[
            "auth",
            "can-i",
            "create",
            "clustergroups",
            "-n",
            "project-b",
        ])
        .await;
    assert_eq!(
        out.trim(),
        "no - create \"clustergroups\" in namespace \"project-b\" is not granted through cluster groups"
    );
    assert_eq!(
        k.ok(&["auth", "can-i", "delete", "clustergroupbindings"])
            .await
            .trim(),
        "yes"
    );

    let out = k.ok(&["delete", "cgb", "prod.project-b"]).await;
    assert!(out.contains("\"prod.project-b\" deleted"), "{out}");
    let out = k.ok(&["delete", "cg", "prod"]).await;
    assert!(out.contains("\"prod\" deleted"), "{out}");
    let listed = app.get_as(GROUPS, &a(&app)).await;
    assert_eq!(listed.body["clustergroups"], json!([]), "{}", listed.text);
    assert_eq!(
        kinds(events_of(&app, &gid).await),
        [
            "magnum.clustergroup.create success",
            "magnum.clustergroup.update success",
            "magnum.clustergroup.update success",
            "magnum.clustergroup.delete success"
        ]
    );
    assert_eq!(
        kinds(events_of(&app, &bid).await),
        [
            "magnum.clustergroupbinding.create success",
            "magnum.clustergroupbinding.delete success"
        ]
    );
}

/// Runs one test body against both backends.
macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn on_postgres() {
                ($body)(app_on(Backend::Postgres).await).await;
            }
            #[tokio::test]
            async fn on_sqlite() {
                ($body)(app_on(Backend::Sqlite).await).await;
            }
        }
    };
}

both!(
    a_group_made_through_v1_is_served_with_its_selector_members_and_bindings,
    |app: TestApp| async move {
        complete_cluster_as(&app, "api", &a(&app)).await;
        let c_b = complete_cluster_as(&app, "web", &b(&app)).await;
        let api = registry_name(&app, "project-a", &a(&app)).await;
        let web = registry_name(&app, "project-b", &b(&app)).await;
        let r = app
            .post_as(
                GROUPS,
                &json!({"name": "mixed", "selector": "env in (a,b),!legacy",
                    "clusters": ["api", c_b]}),
                &a(&app),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let gid = uuid_of(&r.body);
        let r = app
            .post_as(
                &format!("{GROUPS}/{gid}/bindings"),
                &json!({"project_id": "project-b", "access": "write", "roles": ["member"]}),
                &a(&app),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);

        let r = kube_get(&app, "/namespaces/project-a/clustergroups/mixed", &a(&app)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["uid"], json!(gid));
        assert_eq!(
            r.body["spec"]["selector"],
            json!({"matchExpressions": [
                {"key": "env", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"}]})
        );
        assert_eq!(
            members(&r.body),
            vec![
                owned(("project-a", &api, "Accepted")),
                owned(("project-b", &web, "Proposed"))
            ]
        );
        let r = kube_get(&app, "/namespaces/project-a/clustergroupbindings", &a(&app)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["kind"], "ClusterGroupBindingList");
        let item = &r.body["items"][0];
        assert_eq!(item["metadata"]["name"], "mixed.project-b", "{}", r.text);
        assert_eq!(
            item["spec"],
            json!({"groupRef": {"name": "mixed"},
                "subject": {"project": "project-b", "roles": ["member"]}, "access": "write"})
        );
        let r = kube_get(
            &app,
            "/namespaces/project-a/clustergroupbindings/mixed.project-b",
            &a(&app),
        )
        .await;
        assert_eq!(r.body["spec"]["access"], "write", "{}", r.text);

        // Project B sees none of A's groups or bindings, and may not read A's namespace.
        let r = kube_get(&app, "/clustergroups", &b(&app)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["items"], json!([]));
        let r = kube_get(&app, "/clustergroupbindings", &b(&app)).await;
        assert_eq!(r.body["items"], json!([]), "{}", r.text);
        let r = kube_get(&app, "/namespaces/project-a/clustergroups/mixed", &b(&app)).await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert_eq!(r.body["kind"], "Status");
        assert_eq!(r.body["reason"], "Forbidden");
        let r = kube_get(&app, "/namespaces/project-a/clustergroups/nosuch", &a(&app)).await;
        assert_eq!(r.status, 404, "{}", r.text);
        assert_eq!(
            r.body["message"],
            "clustergroups.clusterregistry.k8s.io \"nosuch\" not found"
        );
        let r = kube_get(&app, "/clustergroups?watch=true&timeoutSeconds=1", &a(&app)).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
);

both!(
    bad_bodies_are_one_422_with_a_cause_per_field_and_write_nothing,
    |app: TestApp| async move {
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroups",
            &a(&app),
            &json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "ClusterGroup",
                "metadata": {"name": "Bad_Name"},
                "spec": {"description": "x".repeat(256),
                    "selector": {"matchExpressions": [{"key": "k", "operator": "Near"}]},
                    "clusters": [{"namespace": "project-a"}]}}),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert_eq!(r.body["reason"], "Invalid");
        let fields: Vec<&str> = r.body["details"]["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| c["field"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.description",
                "spec.selector.matchExpressions[0].operator",
                "spec.clusters[0].name"
            ],
            "{}",
            r.text
        );
        // A member that does not exist is a cause too, and nothing is written.
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroups",
            &a(&app),
            &json!({"metadata": {"name": "g"}, "spec": {"clusters": [{"name": "ghost"}]}}),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert_eq!(r.body["details"]["causes"][0]["field"], "spec.clusters[0]");
        let listed = app.get_as(GROUPS, &a(&app)).await;
        assert_eq!(listed.body["clustergroups"], json!([]), "{}", listed.text);

        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroups",
            &a(&app),
            &json!({"metadata": {"name": "g"}}),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroupbindings",
            &a(&app),
            &json!({"spec": {"groupRef": {"name": "g"}, "subject": {"project": "project-a"},
                "access": "admin"}}),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        let fields: Vec<&str> = r.body["details"]["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| c["field"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            fields,
            ["spec.subject.project", "spec.access"],
            "{}",
            r.text
        );
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroupbindings",
            &a(&app),
            &json!({"spec": {"groupRef": {"name": "nosuch"}, "subject": {"project": "project-b"},
                "access": "read"}}),
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert_eq!(
            r.body["details"]["causes"][0]["field"],
            "spec.groupRef.name"
        );
        let body = json!({"spec": {"groupRef": {"name": "g"}, "subject": {"project": "project-b"},
            "access": "read"}});
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroupbindings",
            &a(&app),
            &body,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["metadata"]["name"], "g.project-b");
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroupbindings",
            &a(&app),
            &body,
        )
        .await;
        assert_eq!(r.status, 409, "{}", r.text);
        assert_eq!(r.body["reason"], "AlreadyExists");
        // Another project's namespace: 403 before anything is read.
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroupbindings",
            &b(&app),
            &body,
        )
        .await;
        assert_eq!(r.status, 403, "{}", r.text);
        // A reader of project A reads, and is refused every write by the same rules as on /v1.
        let reader = at(
            &app.as_identity("project-a", "reader-a", "reader"),
            "latest",
        );
        let r = kube_get(&app, "/namespaces/project-a/clustergroups/g", &reader).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroups",
            &reader,
            &json!({"metadata": {"name": "by-reader"}}),
        )
        .await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert_eq!(
            r.body["message"],
            "clustergroups.clusterregistry.k8s.io is forbidden: User \"reader-a\" cannot create \
             resource \"clustergroups\" in API group \"clusterregistry.k8s.io\" in the namespace \
             \"project-a\""
        );
        let r = kube(
            &app,
            Method::DELETE,
            "/namespaces/project-a/clustergroupbindings/g.project-b",
            &reader,
            None,
        )
        .await;
        assert_eq!(r.status, 403, "{}", r.text);
        let r = kube(
            &app,
            Method::DELETE,
            "/namespaces/project-a/clustergroups/g",
            &a(&app),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["kind"], "ClusterGroup", "{}", r.text);
        let listed = app.get_as(GROUPS, &a(&app)).await;
        assert_eq!(listed.body["clustergroups"], json!([]), "{}", listed.text);
        let r = kube_get(&app, "/namespaces/project-a/clustergroupbindings", &a(&app)).await;
        assert_eq!(r.body["items"], json!([]), "{}", r.text);
    }
);

both!(
    a_member_of_another_project_added_by_a_patch_stays_proposed_until_its_owner_accepts,
    |app: TestApp| async move {
        let c_b = complete_cluster_as(&app, "web", &b(&app)).await;
        let web = registry_name(&app, "project-b", &b(&app)).await;
        share_with_a(&app, &c_b).await;
        let r = kube_post(
            &app,
            "/namespaces/project-a/clustergroups",
            &a(&app),
            &json!({"metadata": {"name": "shared"}}),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let gid = r.body["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let patch = json!({"spec": {"clusters": [{"namespace": "project-b", "name": web}]}});
        let r = kube(
            &app,
            Method::PATCH,
            "/namespaces/project-a/clustergroups/shared",
            &a(&app),
            Some(("application/merge-patch+json", &patch)),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            members(&r.body),
            vec![owned(("project-b", &web, "Proposed"))]
        );
        // B does not see A's group's member list; it accepts by the group's uuid.
        let r = app
            .get_as(&format!("{GROUPS}/{gid}/members"), &b(&app))
            .await;
        assert_eq!(r.status, 404, "{}", r.text);
        let r = app
            .post_as(
                &format!("{GROUPS}/{gid}/members/{c_b}/actions/accept"),
                &json!({}),
                &b(&app),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = kube_get(&app, "/namespaces/project-a/clustergroups/shared", &a(&app)).await;
        assert_eq!(
            members(&r.body),
            vec![owned(("project-b", &web, "Accepted"))]
        );
        // Leaving the member out of the list removes it.
        let patch = json!({"spec": {"clusters": null}});
        let r = kube(
            &app,
            Method::PATCH,
            "/namespaces/project-a/clustergroups/shared",
            &a(&app),
            Some(("application/merge-patch+json", &patch)),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(members(&r.body), vec![]);
        let r = app
            .get_as(&format!("{GROUPS}/{gid}/members"), &a(&app))
            .await;
        assert_eq!(r.body["members"], json!([]), "{}", r.text);
    }
);
