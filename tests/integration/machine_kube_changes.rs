//! Machines change on the Kubernetes face and are watched there: the machines' change log
//! behind `kubectl get machines -w` (ADDED, MODIFIED and DELETED as a machine is created,
//! changed and deleted through either face; a resume from a resourceVersion; 410 once the log
//! is pruned past it; the initial events and their bookmark), and the update, patch and apply
//! of a `Machine` through the same operation as `/v1`'s PATCH (a patch-level kubelet change in
//! place, the refusals as 422 with causes naming the fields, 409 on a stale resourceVersion or
//! a busy machine, 415 for a strategic merge patch), and the status subresource. On
//! PostgreSQL and SQLite, and with the real kubectl.

use std::time::Duration;

use fleetyard::conductor::Conductor;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{drain, project_a_with_kc, Backend, Resp, TestApp};

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machines";

struct Env {
    app: TestApp,
    conductor: Conductor,
    /// /v1 headers at the latest microversion.
    v1: HeaderMap,
    cluster: String,
    /// The worker machine's object name on the Kubernetes face.
    worker: String,
}

impl Env {
    async fn new(backend: Backend) -> Env {
        let (app, conductor, v1, cluster) = project_a_with_kc(backend).await;
        let env = Env {
            app,
            conductor,
            v1,
            cluster,
            worker: "kc-default-worker-1".into(),
        };
        let shown = env.get(&env.worker).await;
        assert_eq!(shown.status, 200, "{}", shown.text);
        env
    }

    async fn call(&self, method: Method, path: &str, ct: &str, body: Option<&Value>) -> Resp {
        let body = body.map(Value::to_string).unwrap_or_default();
        crate::helpers::kube_call(&self.app, method, path, ct, &body).await
    }

    async fn get(&self, name: &str) -> Resp {
        self.call(Method::GET, &format!("{BASE}/{name}"), "", None)
            .await
    }

    async fn merge(&self, name: &str, patch: &Value) -> Resp {
        self.call(
            Method::PATCH,
            &format!("{BASE}/{name}"),
            "application/merge-patch+json",
            Some(patch),
        )
        .await
    }

    async fn list_version(&self) -> String {
        let r = self.call(Method::GET, BASE, "", None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("a list's resourceVersion")
            .to_string()
    }

    /// The lines of a watch of `query` that ends after a second.
    async fn watched(&self, query: &str) -> Vec<Value> {
        let r = self
            .call(
                Method::GET,
                &format!("{BASE}?watch=true&timeoutSeconds=1&{query}"),
                "",
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}

/// `(type, name, phase)` of each event.
fn seen(events: &[Value]) -> Vec<(String, String, String)> {
    events
        .iter()
        .map(|e| {
            let o = &e["object"];
            (
                e["type"].as_str().unwrap_or("").to_string(),
                o["metadata"]["name"].as_str().unwrap_or("").to_string(),
                o["status"]["phase"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn triple(t: &str, n: &str, p: &str) -> (String, String, String) {
    (t.into(), n.into(), p.into())
}

#[rstest]
#[tokio::test]
async fn a_machine_watch_replays_its_changes_through_either_face_and_expires(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let from = env.list_version().await;

    // Created through /v1, changed through the Kubernetes face, deleted through /v1.
    let r = env
        .app
        .post_as(
            &format!(
                "/v1/clusters/{}/nodegroups/default-worker/machines",
                env.cluster
            ),
            &json!({"name": "edge-1"}),
            &env.v1,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    drain(&env.conductor).await;
    let r = env
        .merge(
            "kc-edge-1",
            &json!({"spec": {"versions": {"kubelet": "v1.31.6"}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    drain(&env.conductor).await;
    let r = env
        .app
        .delete_as(
            &format!("/v1/clusters/{}/machines/{uuid}", env.cluster),
            &env.v1,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    drain(&env.conductor).await;

    let events = env.watched(&format!("resourceVersion={from}")).await;
    let edge: Vec<_> = seen(&events)
        .into_iter()
        .filter(|(_, n, _)| n == "kc-edge-1")
        .collect();
    assert_eq!(
        edge.first(),
        Some(&triple("ADDED", "kc-edge-1", "Pending")),
        "{events:?}"
    );
    assert_eq!(
        edge.last(),
        Some(&triple("DELETED", "kc-edge-1", "Deleting")),
        "{events:?}"
    );
    for phase in ["Running", "Provisioning", "Deleting"] {
        assert!(
            edge.contains(&triple("MODIFIED", "kc-edge-1", phase)),
            "a MODIFIED {phase} in {edge:?}"
        );
    }
    let versions: Vec<i64> = events
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .expect("a resourceVersion")
        })
        .collect();
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]) && versions[0] > from.parse().unwrap_or(0),
        "{versions:?}"
    );
    let upgraded = events
        .iter()
        .find(|e| e["object"]["status"]["phase"] == "Provisioning")
        .expect("the change");
    assert_eq!(upgraded["object"]["spec"]["versions"]["kubelet"], "v1.31.6");
    assert_eq!(
        upgraded["object"]["metadata"]["labels"],
        json!({"cluster.k8s.io/cluster-name": "kc",
            "fleetyard.openstack.org/nodegroup": "default-worker"})
    );

    // A resume from the middle sees only what followed; a selector on another cluster nothing.
    let mid = &versions[versions.len() / 2].to_string();
    let later = env.watched(&format!("resourceVersion={mid}")).await;
    assert_eq!(
        later.len(),
        events.len() - versions.len() / 2 - 1,
        "{later:?}"
    );
    let other = env
        .watched(&format!(
            "resourceVersion={from}&labelSelector=cluster.k8s.io%2Fcluster-name%3Dother"
        ))
        .await;
    assert!(other.is_empty(), "{other:?}");
    let mine = env
        .watched(&format!(
            "resourceVersion={from}&labelSelector=cluster.k8s.io%2Fcluster-name%3Dkc"
        ))
        .await;
    assert_eq!(mine.len(), events.len());

    // The initial events of a streaming list, and the bookmark that ends them.
    let initial = env
        .watched(
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        )
        .await;
    let mut names: Vec<_> = seen(&initial[..initial.len() - 1])
        .into_iter()
        .map(|(t, n, _)| (t, n))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("ADDED".to_string(), "kc-default-master-1".to_string()),
            ("ADDED".into(), "kc-default-worker-1".into())
        ],
        "{initial:?}"
    );
    let mark = initial.last().expect("a bookmark");
    assert_eq!(mark["type"], "BOOKMARK");
    assert_eq!(
        mark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    // Pruned past `from`: the watch from it is told it expired.
    env.app
        .store
        .prune_registry_changes(0)
        .await
        .expect("prune");
    let expired = env.watched(&format!("resourceVersion={from}")).await;
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["type"], "ERROR");
    assert_eq!(expired[0]["object"]["code"], 410);
    assert_eq!(expired[0]["object"]["reason"], "Expired");
}

#[rstest]
#[tokio::test]
async fn a_merge_patch_upgrades_a_machine_in_place_and_the_refusals_name_the_fields(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let before = env.get(&w).await.body;

    // Refusals first: nothing changes.
    let r = env
        .merge(
            &w,
            &json!({"metadata": {"labels": {"tier": "edge"}},
                "spec": {"flavor": "m1.huge", "versions": {"kubelet": "1.31"}}}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["reason"], "Invalid");
    let fields: Vec<&str> = r.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        ["metadata.labels", "spec.flavor", "spec.versions.kubelet"],
        "{}",
        r.text
    );
    let r = env
        .merge(&w, &json!({"spec": {"versions": {"kubelet": "v1.32.0"}}}))
        .await;
    assert_eq!(
        r.status, 422,
        "a kubelet newer than the control plane: {}",
        r.text
    );
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec");
    let r = env
        .merge(
            &w,
            &json!({"metadata": {"resourceVersion": "1"},
                "spec": {"versions": {"kubelet": "v1.31.6"}}}),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict");
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{w}"),
            "application/strategic-merge-patch+json",
            Some(&json!({"spec": {"versions": {"kubelet": "v1.31.6"}}})),
        )
        .await;
    assert_eq!(r.status, 415, "{}", r.text);
    assert_eq!(r.body["reason"], "UnsupportedMediaType");
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{w}?dryRun=All"),
            "application/merge-patch+json",
            Some(&json!({"spec": {"versions": {"kubelet": "v1.31.6"}}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_eq!(
        env.get(&w).await.body,
        before,
        "no refusal nor dry run changed it"
    );

    // The change: Provisioning with its job, then Running with the new kubelet, in place.
    let r = env
        .merge(&w, &json!({"spec": {"versions": {"kubelet": "v1.31.6"}}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["versions"]["kubelet"], "v1.31.6");
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_ne!(
        r.body["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    let r2 = env
        .merge(&w, &json!({"spec": {"osImage": "fedora-coreos-41"}}))
        .await;
    assert_eq!(r2.status, 409, "a busy machine: {}", r2.text);
    drain(&env.conductor).await;
    let after = env.get(&w).await.body;
    assert_eq!(after["status"]["phase"], "Running", "{after}");
    assert_eq!(after["status"]["versions"]["kubelet"], "v1.31.6");
    assert_eq!(after["status"]["lastChange"], "InPlace");

    // A replace states the whole object, with its resourceVersion.
    let mut replaced = after.clone();
    replaced["spec"]["osImage"] = json!("fedora-coreos-41");
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{w}"),
            "application/json",
            Some(&replaced),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["osImage"], "fedora-coreos-41");
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{w}"),
            "application/json",
            Some(&replaced),
        )
        .await;
    assert_eq!(r.status, 409, "a stale replace: {}", r.text);
    if let Some(m) = replaced["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{w}"),
            "application/json",
            Some(&replaced),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        "metadata.resourceVersion"
    );
    drain(&env.conductor).await;
    let after = env.get(&w).await.body;
    assert_eq!(after["status"]["phase"], "Running", "{after}");
    assert_eq!(after["status"]["lastChange"], "Replace");

    // The status subresource: read by a member, written by an admin only.
    let r = env.get(&format!("{w}/status")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["name"], w.as_str());
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{w}/status"),
            "application/merge-patch+json",
            Some(&json!({"status": {"errorMessage": "disk"}})),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.body["reason"], "Forbidden");
}

#[rstest]
#[tokio::test]
async fn an_admin_writes_a_machines_observed_status_but_not_its_phase(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let mut admin = env
        .app
        .as_identity("project-a", "admin-a", "admin,member,reader");
    admin.insert("accept", HeaderValue::from_static("application/json"));
    let status = |body: Value| {
        env.app
            .client
            .request(Method::PATCH, env.app.url(&format!("{BASE}/{w}/status")))
            .headers(admin.clone())
            .header("Content-Type", "application/merge-patch+json")
            .body(body.to_string())
    };
    let r = env
        .app
        .send(status(json!({"spec": {"osImage": "ignored"},
            "status": {"errorReason": "UpdateError", "errorMessage": "disk full"}})))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["errorMessage"], "disk full");
    assert_eq!(
        r.body["spec"]["osImage"],
        env.get(&w).await.body["spec"]["osImage"]
    );
    assert_eq!(
        env.get(&w).await.body["status"]["errorReason"],
        "UpdateError"
    );
    let r = env
        .app
        .send(status(json!({"status": {"phase": "Failed"}})))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["details"]["causes"][0]["field"], "status.phase");
    assert_eq!(env.get(&w).await.body["status"]["phase"], "Running");
}

#[tokio::test]
async fn kubectl_watches_and_patches_machines() {
    let Some(bin) = kubectl_binary() else { return };
    let env = Env::new(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &env.app, "project-a", None);
    let w = env.worker.clone();

    let mut child = k
        .command(&[
            "get",
            "machines",
            "--watch",
            "-l",
            "cluster.k8s.io/cluster-name=kc",
            "--request-timeout=60s",
        ])
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let header = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the list arrives")
        .expect("reads")
        .unwrap_or_default();
    assert!(
        header.starts_with("NAME") && header.contains("KUBELET"),
        "{header}"
    );

    let out = k
        .ok(&[
            "patch",
            "machine",
            &w,
            "--type=merge",
            "-p",
            r#"{"spec":{"versions":{"kubelet":"v1.31.6"}}}"#,
        ])
        .await;
    assert!(
        out.contains(&format!("machine.cluster.k8s.io/{w} patched")),
        "{out}"
    );
    let provisioning = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let Some(l) = lines.next_line().await.expect("reads") else {
                return String::new();
            };
            if l.starts_with(&w) && l.contains("Provisioning") {
                return l;
            }
        }
    })
    .await
    .expect("the watch shows the change");
    assert!(
        provisioning.contains("v1.31.4"),
        "still the old kubelet: {provisioning}"
    );
    drain(&env.conductor).await;
    let running = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let Some(l) = lines.next_line().await.expect("reads") else {
                return String::new();
            };
            if l.starts_with(&w) && l.contains("Running") {
                return l;
            }
        }
    })
    .await
    .expect("the watch shows the machine running again");
    assert!(running.contains("v1.31.6"), "{running}");
    let _ = child.kill().await;

    let err = k
        .fails(&[
            "patch",
            "machine",
            &w,
            "--type=merge",
            "-p",
            r#"{"spec":{"flavor":"m1.huge"}}"#,
        ])
        .await;
    assert!(err.contains("spec.flavor: Forbidden"), "{err}");
    let err = k
        .fails(&["patch", "machine", &w, "-p", r#"{"spec":{"osImage":"x"}}"#])
        .await;
    assert!(
        err.contains(
            "application/strategic-merge-patch+json is not supported by \
             cluster.k8s.io/v1alpha1, Kind=Machine"
        ),
        "kubectl's default patch type is the apiserver's 415 for a custom resource: {err}"
    );
    let out = k
        .ok(&[
            "patch",
            "machine",
            &w,
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/versions/kubelet","value":"v1.31.7"}]"#,
        ])
        .await;
    assert!(out.contains("patched"), "{out}");
    drain(&env.conductor).await;
    let out = k
        .ok(&[
            "get",
            "machine",
            &w,
            "-o",
            "jsonpath={.status.versions.kubelet} {.status.lastChange}",
        ])
        .await;
    assert_eq!(out.trim(), "v1.31.7 InPlace");

    // Server-side apply of an existing machine changes what the applied configuration names
    // (taking the fields other managers own only when forced).
    let manifest = format!(
        "apiVersion: cluster.k8s.io/v1alpha1\nkind: Machine\nmetadata:\n  name: {w}\n  \
         labels:\n    cluster.k8s.io/cluster-name: kc\n    \
         fleetyard.openstack.org/nodegroup: default-worker\nspec:\n  versions:\n    \
         kubelet: v1.31.8\n"
    );
    let file = k.file("applied.yaml", &manifest);
    // Its first apply gives the machine's fields to before-first-apply (as the API server
    // does for an object whose fields no one tracked yet): a conflict until it forces.
    let err = k.fails(&["apply", "--server-side", "-f", &file]).await;
    assert!(
        err.contains(
            "conflict with \"before-first-apply\" using cluster.k8s.io/v1alpha1: \
             .spec.versions.kubelet"
        ),
        "{err}"
    );
    let out = k
        .ok(&["apply", "--server-side", "--force-conflicts", "-f", &file])
        .await;
    assert!(
        out.contains(&format!("machine.cluster.k8s.io/{w} serverside-applied")),
        "{out}"
    );
    drain(&env.conductor).await;
    let out = k
        .ok(&[
            "get",
            "machine",
            &w,
            "-o",
            "jsonpath={.status.versions.kubelet}",
        ])
        .await;
    assert_eq!(out.trim(), "v1.31.8");

    let out = k
        .ok(&["auth", "can-i", "patch", "machines", "-n", "project-a"])
        .await;
    assert_eq!(out.trim(), "yes");
    let out = k
        .ok(&["auth", "can-i", "watch", "machines", "-n", "project-a"])
        .await;
    assert_eq!(out.trim(), "yes");
}
