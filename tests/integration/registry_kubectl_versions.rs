//! Every kubectl from 1.27 to 1.33 against the cluster registry and the self reviews: the
//! supported client skew.
//!
//! Debian's `kubectl` package installs `kubectl.1.27` … `kubectl.1.33` beside its dispatcher
//! (which picks one by the server's `/version`); `FLEETYARD_KUBECTL_DIR` names another
//! directory. A missing version is reported and passed over, unless
//! `FLEETYARD_REQUIRE_KUBECTL=1`, which makes it a failure. Each version gets its own app; the
//! versions run concurrently.

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::kubectl::Kubectl;
use crate::helpers::{spawn_with, Backend, TestApp};

const MINORS: std::ops::RangeInclusive<u32> = 27..=33;

/// The directory holding `kubectl.1.NN`: `FLEETYARD_KUBECTL_DIR`, or the one `kubectl` on the
/// `PATH` resolves into.
fn versions_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("FLEETYARD_KUBECTL_DIR") {
        return Some(PathBuf::from(d));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|k| k.is_file())
        .and_then(|k| std::fs::canonicalize(k).ok())
        .and_then(|k| k.parent().map(PathBuf::from))
}

/// The version binaries found, in order; panics on a missing one when they are required.
fn version_binaries() -> Vec<(u32, String)> {
    let required = std::env::var("FLEETYARD_REQUIRE_KUBECTL").as_deref() == Ok("1");
    let dir = versions_dir();
    let mut found = Vec::new();
    for minor in MINORS {
        let bin = dir.as_ref().map(|d| d.join(format!("kubectl.1.{minor}")));
        match bin.filter(|b| b.is_file()) {
            Some(b) => found.push((minor, b.display().to_string())),
            None => {
                assert!(
                    !required,
                    "kubectl.1.{minor} is required (FLEETYARD_REQUIRE_KUBECTL=1) but is not in {dir:?}"
                );
                eprintln!("SKIPPED: kubectl.1.{minor} is not in {dir:?}");
            }
        }
    }
    found
}

async fn noauth_app() -> TestApp {
    spawn_with(Backend::Sqlite, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

fn manifest(name: &str, labels: &str, server: &str) -> String {
    format!(
        "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n\
         {labels}spec:\n  kubernetesApiEndpoints:\n    serverEndpoints:\n    - clientCIDR: 0.0.0.0/0\n\
         \x20     serverAddress: {server}\n"
    )
}

/// The smoke subset for one kubectl; panics naming the version on the first failure.
async fn smoke(minor: u32, bin: String) {
    let app = noauth_app().await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let v = format!("kubectl 1.{minor}");

    // Discovery.
    let out = k
        .ok(&["api-resources", "--api-group=clusterregistry.k8s.io"])
        .await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("clusters") && l.contains("true") && l.contains("Cluster")),
        "{v}: {out}"
    );

    // create with the default validation, client-side apply (create, then configure), and
    // server-side apply.
    let one = k.file("one.yaml", &manifest("one", "", "10.0.0.1:6443"));
    let out = k.ok(&["create", "-f", &one]).await;
    assert!(
        out.contains("cluster.clusterregistry.k8s.io/one created"),
        "{v}: {out}"
    );
    let two = k.file("two.yaml", &manifest("two", "", "10.0.0.2:6443"));
    let out = k.ok(&["apply", "-f", &two]).await;
    assert!(
        out.contains("cluster.clusterregistry.k8s.io/two created"),
        "{v}: {out}"
    );
    let two = k.file(
        "two.yaml",
        &manifest("two", "  labels:\n    env: prod\n", "10.0.0.2:6443"),
    );
    let out = k.ok(&["apply", "-f", &two]).await;
    assert!(
        out.contains("cluster.clusterregistry.k8s.io/two configured"),
        "{v}: {out}"
    );
    let three = k.file("three.yaml", &manifest("three", "", "10.0.0.3:6443"));
    let out = k.ok(&["apply", "--server-side", "-f", &three]).await;
    assert!(
        out.contains("cluster.clusterregistry.k8s.io/three serverside-applied"),
        "{v}: {out}"
    );
    // Strict validation is on: an unknown field is refused.
    let bad = k.file(
        "bad.yaml",
        &manifest("bad", "", "10.0.0.9:6443").replace("spec:\n", "spec:\n  bogusField: 1\n"),
    );
    let (ok, out, err) = k.run(&["create", "-f", &bad]).await;
    assert!(!ok && err.contains("bogusField"), "{v}: {out}\n{err}");

    // get: the table and YAML.
    let out = k.ok(&["get", "clusters"]).await;
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, vec!["NAME", "one", "three", "two"], "{v}: {out}");
    let yaml = k.ok(&["get", "clusters", "-o", "yaml"]).await;
    assert!(yaml.starts_with("apiVersion: v1\nitems:\n"), "{v}: {yaml}");
    assert!(yaml.contains("kind: List"), "{v}: {yaml}");

    // The `kind: List` file applied back, validated against /openapi/v2.
    let list = k.file("list.yaml", &yaml);
    let out = k.ok(&["apply", "-f", &list]).await;
    for name in ["one", "two", "three"] {
        assert!(
            out.contains(&format!("cluster.clusterregistry.k8s.io/{name} ")),
            "{v}: {out}"
        );
    }
    let labels = k
        .ok(&[
            "get",
            "cluster",
            "two",
            "-o",
            "jsonpath={.metadata.labels.env}",
        ])
        .await;
    assert_eq!(labels, "prod", "{v}");

    // explain.
    let out = k.ok(&["explain", "clusters.spec"]).await;
    assert!(out.contains("kubernetesApiEndpoints"), "{v}: {out}");
    assert!(out.contains("authInfo"), "{v}: {out}");

    // A watch that sees a change.
    let mut child = k
        .command(&["get", "clusters", "--watch", "--request-timeout=60s"])
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen_one = 0;
    // The list: header and three rows.
    for _ in 0..4 {
        let l = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{v}: the list arrives"))
            .expect("reads")
            .unwrap_or_default();
        if l.starts_with("one ") {
            seen_one += 1;
        }
    }
    assert_eq!(seen_one, 1, "{v}");
    k.ok(&["label", "cluster", "one", "seen=yes"]).await;
    let changed = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(l) = lines.next_line().await.expect("reads") {
            if l.starts_with("one ") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(changed, "{v}: the watch shows the labelled cluster again");
    let _ = child.kill().await;

    // delete.
    let out = k.ok(&["delete", "cluster", "one", "two", "three"]).await;
    assert_eq!(out.matches("deleted").count(), 3, "{v}: {out}");
    let out = k.ok(&["get", "clusters", "-o", "name"]).await;
    assert_eq!(out.trim(), "", "{v}: {out}");
}

#[tokio::test]
async fn every_kubectl_from_1_27_to_1_33_creates_applies_lists_explains_watches_and_deletes() {
    let bins = version_binaries();
    if bins.is_empty() {
        eprintln!("SKIPPED: no kubectl.1.NN on this machine");
        return;
    }
    let runs = bins.into_iter().map(|(minor, bin)| smoke(minor, bin));
    futures_util::future::join_all(runs).await;
}

const ACCESS_REVIEW: &str = "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\n\
     spec:\n  resourceAttributes:\n    namespace: project-a\n    verb: list\n\
     \x20   group: clusterregistry.k8s.io\n    resource: clusters\n";

/// The self reviews for one kubectl: `explain` reads their schemas from the OpenAPI documents
/// (v3, or v2 in protobuf), `create -f` validates a review against them and sends it.
async fn reviews(minor: u32, bin: String) {
    let app = noauth_app().await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let v = format!("kubectl 1.{minor}");

    let out = k.ok(&["explain", "selfsubjectaccessreviews.spec"]).await;
    assert!(
        out.contains("resourceAttributes") && out.contains("nonResourceAttributes"),
        "{v}: {out}"
    );
    let out = k
        .ok(&["explain", "selfsubjectaccessreview.spec.resourceAttributes"])
        .await;
    assert!(out.contains("subresource"), "{v}: {out}");
    let out = k
        .ok(&["explain", "selfsubjectreviews.status.userInfo"])
        .await;
    assert!(out.contains("username"), "{v}: {out}");

    let file = k.file("ssar.yaml", ACCESS_REVIEW);
    let out = k.ok(&["create", "-f", &file, "-o", "json"]).await;
    let review: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{v}: {e}: {out}"));
    assert_eq!(review["status"]["allowed"], true, "{v}: {out}");
    // kubectl validates the review itself against the served schema: an unknown field is
    // refused before anything is sent.
    let bad = k.file(
        "bad.yaml",
        &ACCESS_REVIEW.replace("    verb: list\n", "    verb: list\n    bogusField: 1\n"),
    );
    let (ok, out, err) = k.run(&["create", "-f", &bad]).await;
    assert!(!ok && err.contains("bogusField"), "{v}: {out}\n{err}");
}

#[tokio::test]
async fn every_kubectl_from_1_27_to_1_33_explains_and_creates_the_self_reviews() {
    let bins = version_binaries();
    if bins.is_empty() {
        eprintln!("SKIPPED: no kubectl.1.NN on this machine");
        return;
    }
    let runs = bins.into_iter().map(|(minor, bin)| reviews(minor, bin));
    futures_util::future::join_all(runs).await;
}
