//! Field ownership of machines on the Kubernetes face, as registry clusters keep it:
//! `metadata.managedFields` per field manager, server-side apply conflicts as the API server's
//! 409 with a cause per field and manager, `force=true` taking the fields, `Update` entries
//! for merge and JSON patches, entries with subresource `status` for `/status` writes, a dry
//! run that stores nothing, `/v1` writes leaving the entries as they are, and watches showing
//! them. The OpenAPI documents list every verb machines serve. Over HTTP on PostgreSQL and
//! SQLite, and with the real kubectl (two field managers, `--force-conflicts`,
//! `--validate=strict`, `--show-managed-fields`).

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::managed::{entry, managers};
use crate::helpers::{drain, project_a_with_kc, Backend, Resp, TestApp};
use fleetyard::conductor::Conductor;

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machines";
const V: &str = "cluster.k8s.io/v1alpha1";
const APPLY: &str = "application/apply-patch+yaml";
const W: &str = "kc-default-worker-1";

struct Env {
    app: TestApp,
    conductor: Conductor,
    v1: HeaderMap,
    cluster: String,
}

impl Env {
    async fn new(backend: Backend) -> Env {
        let (app, conductor, v1, cluster) = project_a_with_kc(backend).await;
        Env {
            app,
            conductor,
            v1,
            cluster,
        }
    }

    async fn call(&self, method: Method, path: &str, ct: &str, body: &str) -> Resp {
        self.call_as(&self.app.headers, method, path, ct, body)
            .await
    }

    async fn call_as(
        &self,
        h: &HeaderMap,
        method: Method,
        path: &str,
        ct: &str,
        body: &str,
    ) -> Resp {
        let mut req = self
            .app
            .client
            .request(method, self.app.url(path))
            .headers(h.clone())
            .header("Accept", "application/json")
            .header(
                "User-Agent",
                "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07",
            );
        if !body.is_empty() {
            req = req.header("Content-Type", ct).body(body.to_string());
        }
        self.app.send(req).await
    }

    async fn get(&self) -> Value {
        let r = self.call(Method::GET, &format!("{BASE}/{W}"), "", "").await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn apply(&self, query: &str, kubelet: &str) -> Resp {
        let body = json!({"apiVersion": V, "kind": "Machine", "metadata": {"name": W},
            "spec": {"versions": {"kubelet": kubelet}}});
        self.call(
            Method::PATCH,
            &format!("{BASE}/{W}?{query}"),
            APPLY,
            &body.to_string(),
        )
        .await
    }
}

#[rstest]
#[tokio::test]
async fn machine_applies_keep_managed_fields_and_conflict_as_the_api_server(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    // Made through /v1: no entries yet.
    let shown = env.get().await;
    assert!(shown["metadata"].get("managedFields").is_none(), "{shown}");

    // An apply needs a field manager.
    let r = env.apply("", "v1.31.5").await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("fieldManager"), "{}", r.text);
    // The first apply gives the fields the machine has to before-first-apply (its spec
    // states no kubelet version yet, so the apply takes that one without a conflict).
    let r = env.apply("fieldManager=alice", "v1.31.5").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        entry(&r.body, "alice", "Apply")["fieldsV1"],
        json!({"f:spec": {"f:versions": {"f:kubelet": {}}}})
    );
    assert_eq!(entry(&r.body, "alice", "Apply")["apiVersion"], V);
    let before = &entry(&r.body, "before-first-apply", "Update")["fieldsV1"];
    assert_eq!(before["f:spec"]["f:osImage"], json!({}), "{}", r.text);
    assert!(
        before["f:metadata"]["f:labels"]["f:cluster.k8s.io/cluster-name"].is_object(),
        "{}",
        r.text
    );
    assert!(
        before["f:metadata"].get("f:annotations").is_none(),
        "{}",
        r.text
    );
    assert!(
        before["f:metadata"].get("f:ownerReferences").is_none(),
        "{}",
        r.text
    );
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    drain(&env.conductor).await;
    let shown = env.get().await;
    assert_eq!(shown["spec"]["versions"]["kubelet"], "v1.31.5");
    assert_eq!(
        managers(&shown),
        vec!["alice/Apply/", "before-first-apply/Update/"]
    );

    // A second manager's apply of alice's field: 409 naming the field and the manager.
    let r = env.apply("fieldManager=bob", "v1.31.6").await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict");
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.versions.kubelet"
    );
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict",
            "message": "conflict with \"alice\"",
            "field": ".spec.versions.kubelet"}])
    );
    // The same value is no conflict: both own it.
    let r = env.apply("fieldManager=bob", "v1.31.5").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(entry(&r.body, "bob", "Apply").is_object(), "{}", r.text);
    assert!(entry(&r.body, "alice", "Apply").is_object(), "{}", r.text);
    // A dry run shows the forced entries and stores nothing.
    let stored = env.get().await;
    let r = env
        .apply("fieldManager=carol&force=true&dryRun=All", "v1.31.6")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(entry(&r.body, "carol", "Apply").is_object(), "{}", r.text);
    assert!(entry(&r.body, "alice", "Apply").is_null(), "{}", r.text);
    assert_eq!(env.get().await, stored);

    // Forced: carol owns the field alone, and the change is made.
    let r = env.apply("fieldManager=carol&force=true", "v1.31.6").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        managers(&r.body),
        vec!["carol/Apply/", "before-first-apply/Update/"],
        "{}",
        r.text
    );
    drain(&env.conductor).await;

    // A merge patch records its manager's Update entry on what it changed.
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{W}?fieldManager=dave"),
            "application/merge-patch+json",
            r#"{"spec":{"osImage":"fcos-41"}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        entry(&r.body, "dave", "Update")["fieldsV1"],
        json!({"f:spec": {"f:osImage": {}}})
    );
    assert!(
        entry(&r.body, "before-first-apply", "Update")["fieldsV1"]["f:spec"]
            .get("f:osImage")
            .is_none(),
        "{}",
        r.text
    );
    drain(&env.conductor).await;
    // A JSON patch without a fieldManager: the User-Agent's product.
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{W}"),
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/spec/versions/kubelet","value":"v1.31.7"}]"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        entry(&r.body, "kubectl", "Update")["fieldsV1"],
        json!({"f:spec": {"f:versions": {"f:kubelet": {}}}})
    );
    assert!(entry(&r.body, "carol", "Apply").is_null(), "{}", r.text);
    drain(&env.conductor).await;

    // A /status write records an entry with subresource status.
    let mut admin = env
        .app
        .as_identity("project-a", "admin-a", "admin,member,reader");
    admin.insert("accept", HeaderValue::from_static("application/json"));
    let r = env
        .call_as(
            &admin,
            Method::PATCH,
            &format!("{BASE}/{W}/status?fieldManager=observer"),
            "application/merge-patch+json",
            r#"{"status":{"errorReason":"DiskPressure"}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let e = entry(&r.body, "observer", "Update");
    assert_eq!(e["subresource"], "status", "{}", r.text);
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:errorReason": {}}}));
    // An apply through /status conflicts there as on the main resource.
    let status_apply = json!({"apiVersion": V, "kind": "Machine", "metadata": {"name": W},
        "status": {"phase": "Running", "errorReason": "Other"}});
    let r = env
        .call_as(
            &admin,
            Method::PATCH,
            &format!("{BASE}/{W}/status?fieldManager=prober"),
            APPLY,
            &status_apply.to_string(),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap_or("")
            .contains("conflict with \"observer\""),
        "{}",
        r.text
    );

    // /v1 writes leave the entries as they are.
    let entries = env.get().await["metadata"]["managedFields"].clone();
    let r = env
        .app
        .patch_as(
            &format!("/v1/clusters/{}/machines/default-worker-1", env.cluster),
            &json!([{"op": "replace", "path": "/versions/kubelet", "value": "v1.31.8"}]),
            &env.v1,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&env.conductor).await;
    let shown = env.get().await;
    assert_eq!(shown["spec"]["versions"]["kubelet"], "v1.31.8");
    assert_eq!(shown["metadata"]["managedFields"], entries);

    // Watches show the entries.
    let r = env
        .call(
            Method::GET,
            &format!("{BASE}?watch=true&timeoutSeconds=1&resourceVersion=0"),
            "",
            "",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let watched = r
        .text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["object"]["metadata"]["name"] == W)
        .expect("the machine is watched");
    assert_eq!(watched["object"]["metadata"]["managedFields"], entries);
}

#[rstest]
#[tokio::test]
async fn a_machine_created_on_the_kubernetes_face_records_its_creator(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let body = json!({"apiVersion": V, "kind": "Machine",
        "metadata": {"name": "kc-edge-1", "labels": {
            "cluster.k8s.io/cluster-name": "kc",
            "fleetyard.openstack.org/nodegroup": "default-worker"}},
        "spec": {"osImage": "fcos-40"}});
    let r = env
        .call(
            Method::POST,
            &format!("{BASE}?fieldManager=maker&dryRun=All"),
            "application/json",
            &body.to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(entry(&r.body, "maker", "Update").is_object(), "{}", r.text);
    let r = env
        .call(
            Method::POST,
            &format!("{BASE}?fieldManager=maker"),
            "application/json",
            &body.to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let fields = &entry(&r.body, "maker", "Update")["fieldsV1"];
    assert_eq!(fields["f:spec"]["f:osImage"], json!({}), "{}", r.text);
    assert_eq!(
        fields["f:metadata"]["f:labels"]["f:cluster.k8s.io/cluster-name"],
        json!({}),
        "{}",
        r.text
    );
    // The derived annotation and owner are the server's.
    assert!(
        fields["f:metadata"].get("f:annotations").is_none(),
        "{}",
        r.text
    );
    assert!(
        fields["f:metadata"].get("f:ownerReferences").is_none(),
        "{}",
        r.text
    );
    let r = env
        .call(Method::GET, &format!("{BASE}/kc-edge-1"), "", "")
        .await;
    assert_eq!(managers(&r.body), vec!["maker/Update/"]);
    // Another manager's apply of the creator's field conflicts with it.
    drain(&env.conductor).await;
    let applied = json!({"apiVersion": V, "kind": "Machine", "metadata": {"name": "kc-edge-1"},
        "spec": {"osImage": "fcos-41"}});
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/kc-edge-1?fieldManager=other"),
            APPLY,
            &applied.to_string(),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"maker\" using cluster.k8s.io/v1alpha1: \
         .spec.osImage"
    );
}

#[rstest]
#[tokio::test]
async fn the_openapi_documents_list_every_machine_verb(
    #[values(Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let one = "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machines/{name}";
    let coll = "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machines";
    let r = env
        .call(
            Method::GET,
            "/openapi/v3/apis/cluster.k8s.io/v1alpha1",
            "",
            "",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let paths = &r.body["paths"];
    let verbs = |p: &str| -> Vec<String> {
        let mut v: Vec<String> = paths[p]
            .as_object()
            .map(|m| m.keys().filter(|k| *k != "parameters").cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    assert_eq!(verbs(coll), vec!["get", "post"]);
    assert_eq!(verbs(one), vec!["delete", "get", "patch", "put"]);
    assert_eq!(verbs(&format!("{one}/status")), vec!["get", "patch", "put"]);
    let patch = &paths[one]["patch"];
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "cluster.k8s.io", "version": "v1alpha1", "kind": "Machine"})
    );
    let mut types: Vec<&String> = patch["requestBody"]["content"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    types.sort();
    assert_eq!(
        types,
        vec![
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ]
    );
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        params,
        vec!["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    let list: Vec<&str> = paths[coll]["get"]["parameters"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(list.contains(&"watch"), "{list:?}");

    let r = env.call(Method::GET, "/openapi/v2", "", "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let p = &r.body["paths"];
    for (path, verbs) in [
        (coll, &["get", "post"][..]),
        (one, &["get", "put", "patch", "delete"][..]),
        (&format!("{one}/status"), &["get", "put", "patch"][..]),
    ] {
        for v in verbs {
            assert_eq!(
                p[path][v]["x-kubernetes-group-version-kind"]["kind"], "Machine",
                "{path} {v}"
            );
        }
    }
    assert_eq!(
        p[one]["patch"]["consumes"],
        json!([
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ])
    );
    assert!(p[coll].get("delete").is_none(), "no delete of a collection");
}

#[tokio::test]
async fn kubectl_applies_machines_by_two_field_managers() {
    let Some(bin) = kubectl_binary() else { return };
    let env = Env::new(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &env.app, "project-a", None);
    let manifest = |kubelet: &str| {
        format!(
            "apiVersion: cluster.k8s.io/v1alpha1\nkind: Machine\nmetadata:\n  name: {W}\n  \
             labels:\n    cluster.k8s.io/cluster-name: kc\n    \
             fleetyard.openstack.org/nodegroup: default-worker\nspec:\n  versions:\n    \
             kubelet: {kubelet}\n"
        )
    };
    let first = k.file("first.yaml", &manifest("v1.31.5"));
    let out = k
        .ok(&["apply", "--server-side", "--validate=strict", "-f", &first])
        .await;
    assert!(
        out.contains(&format!("machine.cluster.k8s.io/{W} serverside-applied")),
        "{out}"
    );
    drain(&env.conductor).await;
    let second = k.file("second.yaml", &manifest("v1.31.6"));
    let err = k
        .fails(&[
            "apply",
            "--server-side",
            "--validate=strict",
            "--field-manager=ops",
            "-f",
            &second,
        ])
        .await;
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.versions.kubelet"
        ),
        "{err}"
    );
    assert!(err.contains("--force-conflicts"), "kubectl's advice: {err}");
    let out = k
        .ok(&[
            "apply",
            "--server-side",
            "--validate=strict",
            "--field-manager=ops",
            "--force-conflicts",
            "-f",
            &second,
        ])
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    drain(&env.conductor).await;
    let hidden = k.ok(&["get", "machine", W, "-o", "yaml"]).await;
    assert!(!hidden.contains("managedFields"), "{hidden}");
    assert!(hidden.contains("kubelet: v1.31.6"), "{hidden}");
    let shown = k
        .ok(&["get", "machine", W, "-o", "json", "--show-managed-fields"])
        .await;
    let object: Value = serde_json::from_str(&shown).expect("json");
    assert_eq!(
        entry(&object, "ops", "Apply")["fieldsV1"]["f:spec"],
        json!({"f:versions": {"f:kubelet": {}}}),
        "{shown}"
    );
    // kubectl's entry keeps the labels it applied, no longer the kubelet.
    let kubectl = &entry(&object, "kubectl", "Apply")["fieldsV1"];
    assert!(kubectl["f:metadata"]["f:labels"].is_object(), "{shown}");
    assert!(kubectl.get("f:spec").is_none(), "{shown}");
    let explained = k.ok(&["explain", "machine.spec.versions"]).await;
    assert!(explained.contains("kubelet"), "{explained}");
}
