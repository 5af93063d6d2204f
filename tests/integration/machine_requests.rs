//! A machine's reboot and replacement asked on the Kubernetes face by request annotations
//! (`fleetyard.openstack.org/reboot-requested-at`, `…/replace-requested-at`, Cluster API's
//! `cluster.x-k8s.io/remediate-machine`): a new value asks once, through the `/v1` actions'
//! operation (the machine `Provisioning`, one job, one notification), and the conductor brings
//! the machine back `Running`; the same value again and a removal ask nothing; a busy machine
//! is a 409, two actions or an action with a spec change a 422, a dry run writes nothing. And
//! a server-side apply of a machine that does not exist creates it (201, an `Apply` entry).
//! Over HTTP on PostgreSQL and SQLite, and with the real kubectl.

use fleetyard::conductor::Conductor;
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{
    drain, events_of, machine_updates as update, project_a_with_kc, Backend, Resp, TestApp,
};

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machines";
const V: &str = "cluster.k8s.io/v1alpha1";
const W: &str = "kc-default-worker-1";
const REBOOT: &str = "fleetyard.openstack.org/reboot-requested-at";
const REPLACE: &str = "fleetyard.openstack.org/replace-requested-at";
const REMEDIATE: &str = "cluster.x-k8s.io/remediate-machine";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

struct Env {
    app: TestApp,
    conductor: Conductor,
    /// The worker machine's uuid.
    uuid: String,
}

impl Env {
    async fn new(backend: Backend) -> Env {
        let (app, conductor, _, _) = project_a_with_kc(backend).await;
        let mut env = Env {
            app,
            conductor,
            uuid: String::new(),
        };
        env.uuid = env.get(W).await["metadata"]["uid"]
            .as_str()
            .expect("a uid")
            .to_string();
        env
    }

    async fn call(&self, method: Method, path: &str, ct: &str, body: &str) -> Resp {
        crate::helpers::kube_call(&self.app, method, path, ct, body).await
    }

    async fn get(&self, name: &str) -> Value {
        let r = self
            .call(Method::GET, &format!("{BASE}/{name}"), "", "")
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    /// A merge patch of the worker's annotations (and `extra` of its object).
    async fn annotate(&self, query: &str, annotations: Value, extra: Value) -> Resp {
        let mut patch = json!({"metadata": {"annotations": annotations}});
        if let (Some(p), Some(e)) = (patch.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        self.call(
            Method::PATCH,
            &format!("{BASE}/{W}{query}"),
            MERGE,
            &patch.to_string(),
        )
        .await
    }

    /// `(event type, outcome)` of the worker's notifications, in order.
    async fn events(&self) -> Vec<(String, String)> {
        events_of(&self.app, &self.uuid)
            .await
            .into_iter()
            .map(|(t, o, _)| (t, o))
            .collect()
    }

    /// The names of the project's machines.
    async fn names(&self) -> Vec<String> {
        let r = self.call(Method::GET, BASE, "", "").await;
        assert_eq!(r.status, 200, "{}", r.text);
        let mut names: Vec<String> = r.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|m| m["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }
}

#[rstest]
#[tokio::test]
async fn kubectl_annotate_asks_for_a_reboot_once_and_the_same_value_again_asks_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let Some(bin) = kubectl_binary() else { return };
    let env = Env::new(backend).await;
    let k = Kubectl::new(&bin, &env.app, "project-a", None);
    let before = env.get(W).await;
    let provider = before["status"]["providerID"].clone();
    let first = format!("{REBOOT}=2026-11-28T10:00:00Z");

    let out = k
        .ok(&["annotate", "machine", W, &first, "--overwrite"])
        .await;
    assert!(
        out.contains(&format!("machine.cluster.k8s.io/{W} annotated")),
        "{out}"
    );
    let asked = env.get(W).await;
    assert_eq!(asked["status"]["phase"], "Provisioning", "{asked}");
    assert_eq!(
        asked["metadata"]["annotations"][REBOOT], "2026-11-28T10:00:00Z",
        "{asked}"
    );
    assert_eq!(asked["spec"], before["spec"], "a reboot changes no spec");
    assert_eq!(env.events().await, update(&["pending"]));
    assert_eq!(drain(&env.conductor).await.len(), 1, "one job");
    let rebooted = env.get(W).await;
    assert_eq!(rebooted["status"]["phase"], "Running", "{rebooted}");
    assert_eq!(
        rebooted["status"]["providerID"], provider,
        "the same server"
    );
    assert_eq!(
        rebooted["metadata"]["annotations"][REBOOT],
        "2026-11-28T10:00:00Z"
    );
    assert_eq!(env.events().await, update(&["pending", "success"]));

    // The same value again, by kubectl and by a server-side apply: nothing is asked.
    k.ok(&["annotate", "machine", W, &first, "--overwrite"])
        .await;
    let manifest = format!(
        "apiVersion: {V}\nkind: Machine\nmetadata:\n  name: {W}\n  annotations:\n    \
         {REBOOT}: \"2026-11-28T10:00:00Z\"\n  labels:\n    cluster.k8s.io/cluster-name: kc\n    \
         fleetyard.openstack.org/nodegroup: default-worker\n"
    );
    let file = k.file("machine.yaml", &manifest);
    let out = k.ok(&["apply", "--server-side", "-f", &file]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    assert!(drain(&env.conductor).await.is_empty(), "no job");
    let same = env.get(W).await;
    assert_eq!(same["status"]["phase"], "Running");
    assert_eq!(env.events().await, update(&["pending", "success"]));
    let shown = k
        .ok(&[
            "get",
            "machine",
            W,
            "-o",
            "jsonpath={.metadata.annotations}",
        ])
        .await;
    assert!(shown.contains("2026-11-28T10:00:00Z"), "{shown}");

    // A new value asks again; a removal asks nothing and shows it gone.
    k.ok(&[
        "annotate",
        "machine",
        W,
        &format!("{REBOOT}=2026-11-28T11:00:00Z"),
        "--overwrite",
    ])
    .await;
    assert_eq!(drain(&env.conductor).await.len(), 1, "one job");
    assert_eq!(
        env.events().await,
        update(&["pending", "success", "pending", "success"])
    );
    k.ok(&["annotate", "machine", W, &format!("{REBOOT}-")])
        .await;
    assert!(drain(&env.conductor).await.is_empty(), "no job");
    let removed = env.get(W).await;
    assert!(
        removed["metadata"]["annotations"].get(REBOOT).is_none(),
        "{removed}"
    );
    assert_eq!(removed["status"]["phase"], "Running");
    // Any other annotation stays refused, naming the request annotations.
    let err = k
        .fails(&["annotate", "machine", W, "team=blue", "--overwrite"])
        .await;
    assert!(err.contains("metadata.annotations: Forbidden"), "{err}");
    assert!(err.contains(REBOOT), "{err}");
}

#[rstest]
#[tokio::test]
async fn a_replacement_asked_by_annotation_ends_with_a_new_server_and_the_group_as_large(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let names = env.names().await;
    let from = env.get(W).await["metadata"]["resourceVersion"].clone();
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{W}?fieldManager=ops"),
            "application/json-patch+json",
            &json!([{"op": "add",
                "path": "/metadata/annotations/fleetyard.openstack.org~1replace-requested-at",
                "value": "r1"}])
            .to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning", "{}", r.text);
    assert_eq!(r.body["metadata"]["annotations"][REPLACE], "r1");
    assert_eq!(drain(&env.conductor).await.len(), 1, "one job");
    let replaced = env.get(W).await;
    assert_eq!(replaced["status"]["phase"], "Running", "{replaced}");
    assert_eq!(replaced["status"]["lastChange"], "Replace", "{replaced}");
    assert_eq!(
        replaced["status"]["providerID"],
        format!("fake://{}/2", env.uuid),
        "a new server"
    );
    assert_eq!(env.names().await, names, "the group is as large as before");
    // Watches from the change log show the annotation with each change since.
    let r = env
        .call(
            Method::GET,
            &format!(
                "{BASE}?watch=true&timeoutSeconds=1&resourceVersion={}",
                from.as_str().expect("a resourceVersion")
            ),
            "",
            "",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let watched: Vec<Value> = r
        .text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["object"]["metadata"]["name"] == W)
        .collect();
    assert!(!watched.is_empty(), "{}", r.text);
    for e in &watched {
        assert_eq!(e["type"], "MODIFIED", "{e}");
        assert_eq!(e["object"]["metadata"]["annotations"][REPLACE], "r1", "{e}");
    }

    // Cluster API's remediation request, by a replace (PUT) of the whole object: a
    // replacement too.
    let mut object = env.get(W).await;
    object["metadata"]["annotations"][REMEDIATE] = json!("");
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{W}"),
            "application/json",
            &object.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_eq!(r.body["metadata"]["annotations"][REMEDIATE], "");
    drain(&env.conductor).await;
    let remediated = env.get(W).await;
    assert_eq!(
        remediated["status"]["providerID"],
        format!("fake://{}/3", env.uuid)
    );
    assert_eq!(
        env.events().await,
        update(&["pending", "success", "pending", "success"])
    );
    assert_eq!(env.names().await, names);
}

#[rstest]
#[tokio::test]
async fn a_busy_machine_is_a_409_and_two_changes_at_once_a_422_and_nothing_is_written(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    // A dry run shows the machine Provisioning and writes nothing.
    let stored = env.get(W).await;
    let r = env
        .annotate("?dryRun=All", json!({REBOOT: "d1"}), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_eq!(r.body["metadata"]["annotations"][REBOOT], "d1");
    assert_eq!(env.get(W).await, stored);
    assert!(env.events().await.is_empty(), "no notification");

    // Two actions at once, or an action with a spec change: 422 naming the annotation.
    let r = env
        .annotate("", json!({REBOOT: "t1", REPLACE: "t1"}), json!({}))
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldValueForbidden",
            "message": format!("Forbidden: {REBOOT} and {REPLACE} ask for a reboot and a \
                replace at once: ask for one action at a time"),
            "field": "metadata.annotations"}])
    );
    let r = env
        .annotate(
            "",
            json!({REBOOT: "t1"}),
            json!({"spec": {"osImage": "fcos-41"}}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldValueForbidden",
            "message": "Forbidden: a reboot and a change of the spec cannot be asked in one \
                write: ask for one change at a time",
            "field": format!("metadata.annotations[{REBOOT}]")}])
    );
    // A value that is no string.
    let r = env.annotate("", json!({REBOOT: 3}), json!({})).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        format!("metadata.annotations[{REBOOT}]")
    );
    assert_eq!(env.get(W).await, stored, "nothing written");
    assert!(drain(&env.conductor).await.is_empty(), "no job");

    // Busy: the /v1 action's 409 sentence, and nothing written.
    let r = env.annotate("", json!({REBOOT: "t1"}), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let busy = env.get(W).await;
    let r = env.annotate("", json!({REPLACE: "t2"}), json!({})).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["reason"], "Conflict");
    assert_eq!(
        r.body["message"],
        "Machine default-worker-1 has an operation in progress (it is Provisioning); try \
         again when it is done."
    );
    assert_eq!(env.get(W).await, busy);
    // A removal asks nothing and changes nothing of the machine: taken while it is busy.
    let r = env.annotate("", json!({REBOOT: null}), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert!(
        r.body["metadata"]["annotations"].get(REBOOT).is_none(),
        "{}",
        r.text
    );
    assert_eq!(drain(&env.conductor).await.len(), 1, "one job");
    assert_eq!(env.events().await, update(&["pending", "success"]));
    assert_eq!(env.get(W).await["status"]["phase"], "Running");
}

#[rstest]
#[tokio::test]
async fn a_server_side_apply_of_a_missing_machine_creates_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let names = env.names().await;
    let applied = json!({"apiVersion": V, "kind": "Machine",
        "metadata": {"name": "kc-edge-1",
            "annotations": {REBOOT: "at-birth"},
            "labels": {"cluster.k8s.io/cluster-name": "kc",
                "fleetyard.openstack.org/nodegroup": "default-worker"}},
        "spec": {"osImage": "fcos-40"}})
    .to_string();
    let path = format!("{BASE}/kc-edge-1");
    // Not an apply: 404.
    let r = env.call(Method::PATCH, &path, MERGE, &applied).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.body["reason"], "NotFound");
    assert_eq!(
        r.body["message"],
        "machines.cluster.k8s.io \"kc-edge-1\" not found"
    );
    // A dry run answers 201 and writes nothing.
    let r = env
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=maker&dryRun=All"),
            APPLY,
            &applied,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(env.names().await, names);
    // A stated resourceVersion: nothing has it.
    let mut stale: Value = serde_json::from_str(&applied).expect("json");
    stale["metadata"]["resourceVersion"] = json!("5");
    let r = env
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=maker"),
            APPLY,
            &stale.to_string(),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict");
    // Another name than the URL's.
    let mut other: Value = serde_json::from_str(&applied).expect("json");
    other["metadata"]["name"] = json!("kc-edge-2");
    let r = env
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=maker"),
            APPLY,
            &other.to_string(),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "the name of the object (kc-edge-2) does not match the name on the URL (kc-edge-1)"
    );
    assert_eq!(env.names().await, names);

    let r = env
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=maker&force=true"),
            APPLY,
            &applied,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["metadata"]["name"], "kc-edge-1");
    assert_eq!(r.body["status"]["phase"], "Pending");
    assert_eq!(r.body["spec"]["osImage"], "fcos-40");
    assert_eq!(r.body["metadata"]["annotations"][REBOOT], "at-birth");
    let entries = r.body["metadata"]["managedFields"]
        .as_array()
        .expect("entries")
        .clone();
    assert_eq!(entries.len(), 1, "{}", r.text);
    assert_eq!(entries[0]["manager"], "maker");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(entries[0]["fieldsV1"]["f:spec"], json!({"f:osImage": {}}));
    assert_eq!(
        entries[0]["fieldsV1"]["f:metadata"]["f:annotations"],
        json!({format!("f:{REBOOT}"): {}})
    );
    let mut more = names.clone();
    more.push("kc-edge-1".into());
    more.sort();
    assert_eq!(env.names().await, more, "one machine more");
    // Made, not rebooted: the annotation it was made with asks nothing.
    drain(&env.conductor).await;
    let made = env.get("kc-edge-1").await;
    assert_eq!(made["status"]["phase"], "Running", "{made}");
    let uid = made["metadata"]["uid"].as_str().expect("uid").to_string();
    let kinds: Vec<String> = events_of(&env.app, &uid)
        .await
        .into_iter()
        .map(|(t, _, _)| t)
        .collect();
    assert!(
        !kinds.iter().any(|t| t == "magnum.machine.update"),
        "{kinds:?}"
    );
    // Applied again: nothing changes.
    let r = env
        .call(
            Method::PATCH,
            &format!("{path}?fieldManager=maker"),
            APPLY,
            &applied,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, made);
    assert!(drain(&env.conductor).await.is_empty(), "no job");
}

#[tokio::test]
async fn kubectl_apply_server_side_creates_a_new_machine() {
    let Some(bin) = kubectl_binary() else { return };
    let env = Env::new(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &env.app, "project-a", None);
    let names = env.names().await;
    let manifest = format!(
        "apiVersion: {V}\nkind: Machine\nmetadata:\n  name: kc-gpu-1\n  labels:\n    \
         cluster.k8s.io/cluster-name: kc\n    \
         fleetyard.openstack.org/nodegroup: default-worker\nspec:\n  osImage: fcos-40\n"
    );
    let file = k.file("new.yaml", &manifest);
    let out = k
        .ok(&["apply", "--server-side", "--validate=strict", "-f", &file])
        .await;
    assert!(
        out.contains("machine.cluster.k8s.io/kc-gpu-1 serverside-applied"),
        "{out}"
    );
    assert_eq!(env.names().await.len(), names.len() + 1);
    let made = env.get("kc-gpu-1").await;
    let entries = made["metadata"]["managedFields"]
        .as_array()
        .expect("entries");
    assert_eq!(entries.len(), 1, "{made}");
    assert_eq!(entries[0]["manager"], "kubectl");
    assert_eq!(entries[0]["operation"], "Apply");
    drain(&env.conductor).await;
    let running = env.get("kc-gpu-1").await;
    let out = k
        .ok(&["apply", "--server-side", "--validate=strict", "-f", &file])
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    assert!(drain(&env.conductor).await.is_empty(), "no job");
    assert_eq!(env.get("kc-gpu-1").await, running, "nothing changed");
}
