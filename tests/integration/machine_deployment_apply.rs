//! Field ownership of machine deployments on the Kubernetes face, as machines keep it:
//! `metadata.managedFields` per field manager, the first apply giving the fields the object had
//! to `before-first-apply`, server-side apply conflicts as the API server's 409 with a cause per
//! field and manager, `force=true` taking the fields, `Update` entries for merge patches and
//! for the `scale` subresource (naming it), a dry run that stores nothing, and a kept
//! `maxSurge`. Over HTTP on PostgreSQL and SQLite, and with the real kubectl (two field
//! managers, `--force-conflicts`, `--show-managed-fields`, `kubectl scale`).

use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::managed::entry;
use crate::helpers::{drain, Backend, KcEnv, Resp};

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machinedeployments";
const V: &str = "cluster.k8s.io/v1alpha1";
const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";
const W: &str = "kc-default-worker";

/// Project A's cluster `kc`, its `kc-default-worker` deployment read and applied.
struct Env(KcEnv);

impl std::ops::Deref for Env {
    type Target = KcEnv;
    fn deref(&self) -> &KcEnv {
        &self.0
    }
}

impl Env {
    async fn new(backend: Backend) -> Env {
        Env(KcEnv::new(backend).await)
    }

    async fn get(&self) -> Value {
        let r = self.call(Method::GET, &format!("{BASE}/{W}"), "", "").await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    /// A server-side apply of `replicas` with `query` (its field manager, force, dry run).
    async fn apply(&self, query: &str, replicas: i64) -> Resp {
        let body = json!({"apiVersion": V, "kind": "MachineDeployment",
            "metadata": {"name": W}, "spec": {"replicas": replicas}});
        self.call(
            Method::PATCH,
            &format!("{BASE}/{W}?{query}"),
            APPLY,
            &body.to_string(),
        )
        .await
    }

    /// The group's node count on /v1.
    async fn node_count(&self) -> i64 {
        let path = format!("/v1/clusters/{}/nodegroups/default-worker", self.cluster);
        let r = self.app.get_as(&path, &self.v1).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["node_count"].as_i64().unwrap_or(-1)
    }
}

/// `manager/operation/subresource` of each entry, sorted.
fn managers(object: &Value) -> Vec<String> {
    let mut out = crate::helpers::managed::managers(object);
    out.sort();
    out
}

#[rstest]
#[case::postgres(Backend::Postgres)]
#[case::sqlite(Backend::Sqlite)]
#[tokio::test]
async fn machine_deployment_applies_keep_managed_fields_and_conflict_as_the_api_server(
    #[case] backend: Backend,
) {
    let env = Env::new(backend).await;
    let before = env.get().await;
    assert!(
        before["metadata"].get("managedFields").is_none(),
        "{before}"
    );
    let n = before["spec"]["replicas"].as_i64().expect("replicas");

    // The first apply: what the object had goes to before-first-apply, the replicas to alice
    // (force: before-first-apply owned them at another value).
    let r = env.apply("fieldManager=alice&force=true", n + 1).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["replicas"], n + 1);
    assert_eq!(
        managers(&r.body),
        ["alice/Apply/", "before-first-apply/Update/"]
    );
    assert_eq!(
        entry(&r.body, "alice", "Apply")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(entry(&r.body, "alice", "Apply")["apiVersion"], V);
    let taken = &entry(&r.body, "before-first-apply", "Update")["fieldsV1"]["f:spec"];
    assert!(taken.get("f:replicas").is_none(), "{taken}");
    assert!(taken["f:template"].is_object(), "{taken}");
    drain(&env.conductor).await;
    assert_eq!(env.node_count().await, n + 1);
    assert_eq!(
        env.get().await["metadata"]["managedFields"],
        r.body["metadata"]["managedFields"]
    );

    // Another manager's change of alice's field: the API server's 409.
    let r = env.apply("fieldManager=bob", n + 2).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict");
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
    );
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"",
            "field": ".spec.replicas"}])
    );

    // A dry run of the forced apply answers the object it would be and stores nothing.
    let r = env
        .apply("fieldManager=bob&force=true&dryRun=All", n + 2)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["replicas"], n + 2);
    assert_eq!(
        managers(&r.body),
        ["before-first-apply/Update/", "bob/Apply/"]
    );
    let kept = env.get().await;
    assert_eq!(kept["spec"]["replicas"], n + 1);
    assert_eq!(
        managers(&kept),
        ["alice/Apply/", "before-first-apply/Update/"]
    );
    assert_eq!(
        drain(&env.conductor).await.len(),
        0,
        "a dry run starts nothing"
    );

    // Forced: bob takes the replicas, alice's entry (owning nothing else) goes.
    let r = env.apply("fieldManager=bob&force=true", n + 2).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        managers(&r.body),
        ["before-first-apply/Update/", "bob/Apply/"]
    );
    assert_eq!(
        entry(&r.body, "bob", "Apply")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    drain(&env.conductor).await;
    assert_eq!(env.node_count().await, n + 2);

    // A merge patch records its manager's Update entry on what it changed; maxSurge is kept.
    let patch = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}});
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{W}?fieldManager=carol"),
            MERGE,
            &patch.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 2);
    assert_eq!(
        entry(&r.body, "carol", "Update")["fieldsV1"],
        json!({"f:spec": {"f:strategy": {"f:rollingUpdate": {"f:maxSurge": {}}}}})
    );
    let shown = env.get().await;
    assert_eq!(shown["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 2);
    let rv = shown["metadata"]["resourceVersion"].clone();
    assert_ne!(rv, before["metadata"]["resourceVersion"]);

    // The scale subresource: an Update entry naming it, taking the replicas from bob (whose
    // entry, owning nothing else, goes), as an update takes what it changes.
    let scale = json!({"spec": {"replicas": n}});
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{W}/scale?fieldManager=dave"),
            MERGE,
            &scale.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["kind"], "Scale");
    let shown = env.get().await;
    assert_eq!(
        managers(&shown),
        [
            "before-first-apply/Update/",
            "carol/Update/",
            "dave/Update/scale"
        ]
    );
    assert_eq!(
        entry(&shown, "dave", "Update")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    drain(&env.conductor).await;
    assert_eq!(env.node_count().await, n);

    // A /v1 write (and the conductor's, above) leaves the entries as they are.
    let kept = env.get().await["metadata"]["managedFields"].clone();
    let path = format!("/v1/clusters/{}/nodegroups/default-worker", env.cluster);
    let max = json!([{"op": "replace", "path": "/max_node_count", "value": 9}]);
    let r = env.app.patch_as(&path, &max, &env.v1).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&env.conductor).await;
    assert_eq!(env.get().await["metadata"]["managedFields"], kept);
}

#[rstest]
#[tokio::test]
async fn kubectl_applies_machine_deployments_by_two_field_managers() {
    let Some(bin) = kubectl_binary() else { return };
    let env = Env::new(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &env.app, "project-a", None);
    let n = env.get().await["spec"]["replicas"]
        .as_i64()
        .expect("replicas");
    let manifest = |replicas: i64, surge: i64| {
        format!(
            "apiVersion: cluster.k8s.io/v1alpha1\nkind: MachineDeployment\nmetadata:\n  \
             name: {W}\nspec:\n  replicas: {replicas}\n  strategy:\n    rollingUpdate:\n      \
             maxSurge: {surge}\n"
        )
    };
    // The replicas it had and a batch of 2: the batch is before-first-apply's (at 1), so
    // forced; it is kept, so the same apply again changes nothing and conflicts with nothing.
    let first = k.file("first.yaml", &manifest(n, 2));
    let out = k
        .ok(&["apply", "--server-side", "--force-conflicts", "-f", &first])
        .await;
    assert!(
        out.contains(&format!(
            "machinedeployment.cluster.k8s.io/{W} serverside-applied"
        )),
        "{out}"
    );
    let out = k.ok(&["apply", "--server-side", "-f", &first]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    let kept = env.get().await;
    assert_eq!(kept["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 2);
    assert_eq!(kept["spec"]["replicas"], n);

    let second = k.file("second.yaml", &manifest(n + 1, 2));
    let err = k
        .fails(&[
            "apply",
            "--server-side",
            "--field-manager=ops",
            "-f",
            &second,
        ])
        .await;
    assert!(
        err.contains("Apply failed with 2 conflicts") && err.contains("conflicts with \"kubectl\""),
        "{err}"
    );
    assert!(err.contains("--force-conflicts"), "kubectl's advice: {err}");
    let out = k
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=ops",
            "--force-conflicts",
            "-f",
            &second,
        ])
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    drain(&env.conductor).await;

    let out = k
        .ok(&["scale", "machinedeployment", W, &format!("--replicas={n}")])
        .await;
    assert!(out.contains("scaled"), "{out}");
    drain(&env.conductor).await;

    let hidden = k.ok(&["get", "md", W, "-o", "yaml"]).await;
    assert!(!hidden.contains("managedFields"), "{hidden}");
    assert!(hidden.contains("maxSurge: 2"), "{hidden}");
    let shown = k
        .ok(&["get", "md", W, "-o", "json", "--show-managed-fields"])
        .await;
    let object: Value = serde_json::from_str(&shown).expect("json");
    // The scale took the replicas from ops and kubectl; both appliers keep the batch.
    for manager in ["ops", "kubectl"] {
        assert_eq!(
            entry(&object, manager, "Apply")["fieldsV1"]["f:spec"],
            json!({"f:strategy": {"f:rollingUpdate": {"f:maxSurge": {}}}}),
            "{shown}"
        );
    }
    let scaled: Vec<&Value> = object["metadata"]["managedFields"]
        .as_array()
        .map(|es| es.iter().filter(|e| e["subresource"] == "scale").collect())
        .unwrap_or_default();
    assert_eq!(scaled.len(), 1, "{shown}");
    assert_eq!(scaled[0]["operation"], "Update", "{shown}");
    assert_eq!(
        scaled[0]["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}}),
        "{shown}"
    );
    assert_eq!(env.node_count().await, n);
}

#[rstest]
#[case::postgres(Backend::Postgres)]
#[case::sqlite(Backend::Sqlite)]
#[tokio::test]
async fn a_kept_max_surge_is_the_batch_of_a_roll_whose_write_states_none(#[case] backend: Backend) {
    let env = Env::new(backend).await;
    let three = json!({"spec": {"replicas": 3}}).to_string();
    let r = env
        .call(Method::PATCH, &format!("{BASE}/{W}/scale"), MERGE, &three)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    drain(&env.conductor).await;

    // The batch alone: kept and shown, nothing to roll.
    let surge = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 2}}}}).to_string();
    let r = env
        .call(Method::PATCH, &format!("{BASE}/{W}"), MERGE, &surge)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 2);
    assert_eq!(drain(&env.conductor).await.len(), 0, "no roll");
    assert_eq!(
        env.get().await["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}})
    );

    // A flavor change stating no batch: one step replaces the kept two.
    let flavor = json!({"spec": {"template": {"spec": {"flavor": "m1.large"}}}}).to_string();
    let r = env
        .call(Method::PATCH, &format!("{BASE}/{W}"), MERGE, &flavor)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    env.conductor.try_execute_one().await.expect("a step");
    let machines = env
        .call(
            Method::GET,
            "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machines?labelSelector=fleetyard.openstack.org%2Fnodegroup%3Ddefault-worker",
            "",
            "",
        )
        .await;
    assert_eq!(machines.status, 200, "{}", machines.text);
    let items = machines.body["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let replaced = items
        .iter()
        .filter(|m| {
            m["spec"]["flavor"] == "m1.large"
                && m["status"]["providerID"]
                    == format!("fake://{}/2", m["metadata"]["uid"].as_str().unwrap_or(""))
        })
        .count();
    assert_eq!(
        replaced, 2,
        "one batch of the kept maxSurge: {}",
        machines.text
    );
    drain(&env.conductor).await;
    assert_eq!(
        env.get().await["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        2
    );
}
