//! The real kubectl against cluster groups, on PostgreSQL and SQLite, as members of projects:
//! a member of project W, bound `write` to a group of project A, reads, relabels and deletes
//! A's clusters in the group, and nothing else of A; a member of project R, bound `read`,
//! reads them and changes nothing; `kubectl auth can-i` answers from the same rules; and
//! `kubectl get -w` sees A's clusters enter and leave as labels, members and bindings change.
//!
//! kubectl comes from the machine (see `registry_kubectl`); `FLEETYARD_REQUIRE_KUBECTL=1`
//! makes a missing one a failure.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{at, spawn_with, uuid_of, Backend, TestApp};

const GROUPS: &str = "/v1/clustergroups";

fn manifest(name: &str, share: &str, ip: &str) -> String {
    format!(
        "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n\
         \x20 labels:\n    share: \"{share}\"\nspec:\n  kubernetesApiEndpoints:\n\
         \x20   serverEndpoints:\n    - clientCIDR: 0.0.0.0/0\n      serverAddress: {ip}:6443\n"
    )
}

struct Fleet {
    app: TestApp,
    /// Project A's member, W's (bound write) and R's (bound read), each in namespace project-a.
    a: Kubectl,
    w: Kubectl,
    r: Kubectl,
    /// A's `/v1` headers.
    a_v1: HeaderMap,
    group: String,
    w_binding: String,
}

/// kubectl as `user`, a member of `project`: the app's no-auth identity is an administrator,
/// which kubectl impersonates the user through (its kubeconfig's `as`, `as-groups` and
/// `as-user-extra`), as a kube-apiserver front would; kubectl sends no token over plain HTTP.
fn kubectl_as(bin: &str, app: &TestApp, project: &str, user: &str) -> Kubectl {
    let k = Kubectl::new(bin, app, "project-a", None);
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fy\n  cluster:\n    server: {}\n\
         contexts:\n- name: fy\n  context: {{cluster: fy, user: fy, namespace: project-a}}\n\
         current-context: fy\nusers:\n- name: fy\n  user:\n    as: {user}\n\
         \x20   as-groups: [{project}]\n    as-user-extra:\n\
         \x20     alpha.kubernetes.io/identity/roles: [member, reader]\n",
        app.address
    );
    std::fs::write(k.dir.join("kubeconfig"), config).expect("kubeconfig");
    k
}

/// A registers `alpha` (share=yes), `beta` and `gamma` (share=no) with kubectl, and W its own
/// `w-own`; A's group selects share=yes and is bound write to W and read to R.
async fn fleet(backend: Backend) -> Option<Fleet> {
    let bin = kubectl_binary()?;
    let app = spawn_with(backend, |s| {
        s.noauth.project_id = "admin-project".into();
        s.noauth.user_id = "root".into();
        s.noauth.roles = "admin".into();
    })
    .await;
    let a = kubectl_as(&bin, &app, "project-a", "user-a");
    let w = kubectl_as(&bin, &app, "project-w", "user-w");
    let r = kubectl_as(&bin, &app, "project-r", "user-r");
    let who = a
        .ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .await;
    assert_eq!(who, "user-a");
    for (name, share, ip) in [
        ("alpha", "yes", "10.8.0.1"),
        ("beta", "no", "10.8.0.2"),
        ("gamma", "no", "10.8.0.3"),
    ] {
        let file = a.file(&format!("{name}.yaml"), &manifest(name, share, ip));
        a.ok(&["create", "-f", &file]).await;
    }
    let own = w.file("own.yaml", &manifest("w-own", "no", "10.8.0.9"));
    w.ok(&["create", "-n", "project-w", "-f", &own]).await;
    let a_v1 = at(
        &app.as_identity("project-a", "user-a", "member,reader"),
        "latest",
    );
    let g = app
        .post_as(
            GROUPS,
            &json!({"name": "fleet", "selector": "share=yes"}),
            &a_v1,
        )
        .await;
    assert_eq!(g.status, 201, "{}", g.text);
    let group = uuid_of(&g.body);
    let mut bindings = Vec::new();
    for (project, access) in [("project-w", "write"), ("project-r", "read")] {
        let b = app
            .post_as(
                &format!("{GROUPS}/{group}/bindings"),
                &json!({"project_id": project, "access": access}),
                &a_v1,
            )
            .await;
        assert_eq!(b.status, 201, "{}", b.text);
        bindings.push(uuid_of(&b.body));
    }
    Some(Fleet {
        app,
        a,
        w,
        r,
        a_v1,
        group,
        w_binding: bindings.remove(0),
    })
}

fn lines(out: &str) -> Vec<&str> {
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

async fn a_bound_writer_reads_relabels_and_deletes_the_groups_clusters_and_nothing_else(
    backend: Backend,
) {
    let Some(f) = fleet(backend).await else {
        return;
    };
    // get and list: only the group's cluster of A's.
    for k in [&f.w, &f.r] {
        let out = k.ok(&["get", "clusters", "-o", "name"]).await;
        assert_eq!(lines(&out), ["cluster.clusterregistry.k8s.io/alpha"]);
        let out = k
            .ok(&[
                "get",
                "cluster",
                "alpha",
                "-o",
                "jsonpath={.metadata.namespace}",
            ])
            .await;
        assert_eq!(out, "project-a");
        for hidden in ["beta", "nothing"] {
            let err = k.fails(&["get", "cluster", hidden]).await;
            assert!(
                err.contains("NotFound") && err.contains(&format!("\"{hidden}\" not found")),
                "{err}"
            );
        }
        let out = k.ok(&["get", "clusterprofiles", "-o", "name"]).await;
        assert_eq!(lines(&out), ["clusterprofile.multicluster.x-k8s.io/alpha"]);
    }
    let out =
        f.w.ok(&[
            "get",
            "clusters",
            "-A",
            "-o",
            "custom-columns=NS:.metadata.namespace,N:.metadata.name",
            "--no-headers",
        ])
        .await;
    let rows: Vec<Vec<&str>> = lines(&out)
        .into_iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [vec!["project-a", "alpha"], vec!["project-w", "w-own"]]
    );
    let out = f.a.ok(&["get", "clusters", "-o", "name"]).await;
    assert_eq!(lines(&out).len(), 3, "the owner sees its three: {out}");

    // can-i, from the same rules.
    let can = |k: &Kubectl, args: &[&str]| {
        let args: Vec<String> = ["auth", "can-i"]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        let mut cmd = k.command(&args.iter().map(String::as_str).collect::<Vec<_>>());
        async move {
            let out = cmd.output().await.expect("kubectl runs");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    assert_eq!(
        can(&f.w, &["delete", "clusters/alpha", "-n", "project-a"]).await,
        "yes"
    );
    assert_eq!(
        can(&f.w, &["patch", "clusters/alpha", "-n", "project-a"]).await,
        "yes"
    );
    assert!(can(&f.w, &["delete", "clusters/beta", "-n", "project-a"])
        .await
        .starts_with("no"));
    assert!(can(&f.r, &["delete", "clusters/alpha", "-n", "project-a"])
        .await
        .starts_with("no"));
    assert_eq!(
        can(&f.r, &["get", "clusters/alpha", "-n", "project-a"]).await,
        "yes"
    );

    // The reader changes nothing.
    let err = f.r.fails(&["label", "cluster", "alpha", "tier=gold"]).await;
    assert!(
        err.contains("Forbidden") && err.contains("\"alpha\""),
        "{err}"
    );
    let err = f.r.fails(&["delete", "cluster", "alpha"]).await;
    assert!(err.contains("Forbidden"), "{err}");

    // The writer relabels and annotates A's cluster; A sees it.
    f.w.ok(&["label", "cluster", "alpha", "tier=gold"]).await;
    f.w.ok(&["annotate", "cluster", "alpha", "note=by-w"]).await;
    let out =
        f.a.ok(&[
            "get",
            "cluster",
            "alpha",
            "-o",
            "jsonpath={.metadata.labels.tier} {.metadata.annotations.note}",
        ])
        .await;
    assert_eq!(out, "gold by-w");
    let err = f.w.fails(&["label", "cluster", "beta", "tier=gold"]).await;
    assert!(err.contains("NotFound"), "{err}");
    // Relabelled out of the selector, it is no longer the writer's.
    f.w.ok(&["label", "--overwrite", "cluster", "alpha", "share=no"])
        .await;
    let err = f.w.fails(&["get", "cluster", "alpha"]).await;
    assert!(err.contains("NotFound"), "{err}");
    f.a.ok(&["label", "--overwrite", "cluster", "alpha", "share=yes"])
        .await;

    // The writer deletes it; nothing else of A's can it delete.
    let err = f.w.fails(&["delete", "cluster", "beta"]).await;
    assert!(err.contains("NotFound"), "{err}");
    let out = f.w.ok(&["delete", "cluster", "alpha"]).await;
    assert!(out.contains("alpha"), "{out}");
    let err = f.a.fails(&["get", "cluster", "alpha"]).await;
    assert!(err.contains("NotFound"), "{err}");
    let out = f.a.ok(&["get", "clusters", "-o", "name"]).await;
    assert_eq!(
        lines(&out),
        [
            "cluster.clusterregistry.k8s.io/beta",
            "cluster.clusterregistry.k8s.io/gamma"
        ]
    );
}

#[tokio::test]
async fn kubectl_bound_writer_on_postgres() {
    a_bound_writer_reads_relabels_and_deletes_the_groups_clusters_and_nothing_else(
        Backend::Postgres,
    )
    .await;
}

#[tokio::test]
async fn kubectl_bound_writer_on_sqlite() {
    a_bound_writer_reads_relabels_and_deletes_the_groups_clusters_and_nothing_else(Backend::Sqlite)
        .await;
}

/// `kubectl get clusters -w --output-watch-events` as W, in A's namespace: the (event, name)
/// of every line but `MODIFIED`s (a touch of a cluster already shown).
struct Watching {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Watching {
    fn start(k: &Kubectl) -> Watching {
        let mut child = k
            .command(&[
                "get",
                "clusters",
                "--watch",
                "--output-watch-events",
                "--no-headers",
                "--request-timeout=60s",
            ])
            .spawn()
            .expect("kubectl get -w starts");
        let stdout = child.stdout.take().expect("stdout");
        Watching {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    async fn next(&mut self) -> (String, String) {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
                .await
                .expect("a watch line within 20 s")
                .expect("reads")
                .expect("the watch goes on");
            let mut words = line.split_whitespace();
            let (Some(event), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            if event != "MODIFIED" {
                return (event.to_string(), name.to_string());
            }
        }
    }
}

fn ev(kind: &str, name: &str) -> (String, String) {
    (kind.to_string(), name.to_string())
}

async fn kubectl_watch_sees_clusters_enter_and_leave(backend: Backend) {
    let Some(f) = fleet(backend).await else {
        return;
    };
    let mut watch = Watching::start(&f.w);
    assert_eq!(watch.next().await, ev("ADDED", "alpha"));

    // Labels.
    f.a.ok(&["label", "--overwrite", "cluster", "beta", "share=yes"])
        .await;
    assert_eq!(watch.next().await, ev("ADDED", "beta"));
    f.a.ok(&["label", "--overwrite", "cluster", "beta", "share=no"])
        .await;
    assert_eq!(watch.next().await, ev("DELETED", "beta"));

    // An explicit member (A's own cluster: accepted at once), then removed.
    let gamma =
        f.a.ok(&["get", "cluster", "gamma", "-o", "jsonpath={.metadata.uid}"])
            .await;
    let r = f
        .app
        .post_as(
            &format!("{GROUPS}/{}/members", f.group),
            &json!({"cluster": gamma}),
            &f.a_v1,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(watch.next().await, ev("ADDED", "gamma"));
    let r = f
        .app
        .delete_as(&format!("{GROUPS}/{}/members/{gamma}", f.group), &f.a_v1)
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(watch.next().await, ev("DELETED", "gamma"));

    // The binding goes, and comes back.
    let r = f
        .app
        .delete_as(
            &format!("{GROUPS}/{}/bindings/{}", f.group, f.w_binding),
            &f.a_v1,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(watch.next().await, ev("DELETED", "alpha"));
    let r = f
        .app
        .post_as(
            &format!("{GROUPS}/{}/bindings", f.group),
            &json!({"project_id": "project-w", "access": "write"}),
            &f.a_v1,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(watch.next().await, ev("ADDED", "alpha"));
    let _ = watch.child.kill().await;
}

#[tokio::test]
async fn kubectl_watch_of_a_bound_project_on_postgres() {
    kubectl_watch_sees_clusters_enter_and_leave(Backend::Postgres).await;
}

#[tokio::test]
async fn kubectl_watch_of_a_bound_project_on_sqlite() {
    kubectl_watch_sees_clusters_enter_and_leave(Backend::Sqlite).await;
}
