//! The real kubectl against the cluster registry (`clusterregistry.k8s.io/v1alpha1`), with the
//! same rows seen through `/v1/clusters`.
//!
//! kubectl comes from the machine (`/usr/bin/kubectl`, or `FLEETYARD_KUBECTL`); `./tox.sh`
//! installs Debian's when none is there. Without one these tests say so and pass, unless
//! `FLEETYARD_REQUIRE_KUBECTL=1` (set by `./tox.sh` once it has one), which makes a missing
//! kubectl a failure.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::jwt::hs256;
use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{
    drain, federation_body, instant, join_ops, labelled_cluster_as, merged, spawn_jwt_on,
    spawn_with, template_as, Api, Backend, Resp, TestApp,
};

/// A CA certificate as a registered cluster's `caBundle` carries it (base64 of PEM).
fn ca_bundle() -> (String, String) {
    use base64::Engine;
    let ck = rcgen::generate_simple_self_signed(vec!["cluster.example".into()]).expect("cert");
    let pem = ck.cert.pem();
    (base64::engine::general_purpose::STANDARD.encode(&pem), pem)
}

fn manifest(name: &str, labels: &str, server: &str, ca: &str) -> String {
    format!(
        "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n\
         {labels}spec:\n  kubernetesApiEndpoints:\n    serverEndpoints:\n    - clientCIDR: 0.0.0.0/0\n\
         \x20     serverAddress: {server}\n    caBundle: {ca}\n  authInfo:\n    controller:\n\
         \x20     kind: Secret\n      name: {name}-kubeconfig\n      namespace: fleet-system\n"
    )
}

/// The app on `backend` in no-auth mode whose configured identity is project-a's member, as
/// the tests' own `/v1` calls are.
async fn noauth_app(backend: Backend) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await
}

async fn v1_cluster(app: &TestApp, ident: &str) -> Resp {
    app.get_cluster(ident).await
}

#[tokio::test]
async fn kubectl_creates_lists_labels_patches_applies_replaces_and_deletes_registered_clusters() {
    let Some(bin) = kubectl_binary() else { return };
    let app = noauth_app(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);

    // Discovery: the resource is namespaced, with its short name.
    let resources = k
        .ok(&["api-resources", "--api-group=clusterregistry.k8s.io"])
        .await;
    let line = resources
        .lines()
        .find(|l| l.starts_with("clusters"))
        .unwrap_or_else(|| panic!("no clusters in api-resources:\n{resources}"));
    for word in ["cr", "clusterregistry.k8s.io/v1alpha1", "true", "Cluster"] {
        assert!(
            line.split_whitespace().any(|w| w == word),
            "{word} in {line}"
        );
    }

    // create -f, validated strictly against the served OpenAPI.
    let (b64, pem) = ca_bundle();
    let alpha = k.file(
        "alpha.yaml",
        &manifest("alpha", "  labels:\n    env: prod\n", "10.0.0.1:6443", &b64),
    );
    let out = k.ok(&["create", "-f", &alpha]).await;
    assert_eq!(out.trim(), "cluster.clusterregistry.k8s.io/alpha created");

    // The same row through /v1: registered, complete at once, driver external.
    let v1 = v1_cluster(&app, "alpha").await;
    assert_eq!(v1.status, 200, "{}", v1.text);
    assert_eq!(v1.body["status"], "CREATE_COMPLETE", "{}", v1.text);
    assert_eq!(
        v1.body["api_address"], "https://10.0.0.1:6443",
        "{}",
        v1.text
    );
    assert_eq!(
        v1.body["cluster_template_id"], "00000000-0000-4000-8000-00000000e7e7",
        "{}",
        v1.text
    );
    assert_eq!(v1.body["node_count"], 0, "{}", v1.text);

    // get: the table, -o json, labels and selectors.
    let table = k.ok(&["get", "clusters"]).await;
    let header = table.lines().next().unwrap_or_default();
    for col in ["NAME", "STATUS", "HEALTH", "ENDPOINT", "AGE"] {
        assert!(header.contains(col), "{col} in {table}");
    }
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with("alpha"), "{table}");
    assert!(row.contains("CREATE_COMPLETE"), "{table}");
    assert!(row.contains("10.0.0.1:6443"), "{table}");
    let json: Value = serde_json::from_str(&k.ok(&["get", "clusters", "-o", "json"]).await)
        .expect("-o json is JSON");
    let item = &json["items"][0];
    assert_eq!(item["metadata"]["name"], "alpha");
    assert_eq!(item["metadata"]["namespace"], "project-a");
    assert_eq!(item["metadata"]["uid"], v1.body["uuid"]);
    assert_eq!(item["metadata"]["labels"], json!({"env": "prod"}));
    assert_eq!(
        item["spec"]["kubernetesApiEndpoints"]["serverEndpoints"],
        json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}])
    );
    assert_eq!(item["spec"]["kubernetesApiEndpoints"]["caBundle"], b64);
    assert_eq!(
        item["spec"]["authInfo"]["controller"],
        json!({"kind": "Secret", "name": "alpha-kubeconfig", "namespace": "fleet-system"})
    );
    assert_eq!(item["status"]["conditions"][0]["type"], "OK");
    assert!(pem.contains("BEGIN CERTIFICATE"));
    // All namespaces: a member's own project, with the NAMESPACE column.
    let all = k.ok(&["get", "clusters", "-A"]).await;
    let first = all.lines().next().unwrap_or_default();
    assert!(first.starts_with("NAMESPACE"), "{all}");
    assert!(
        all.lines()
            .nth(1)
            .unwrap_or_default()
            .starts_with("project-a"),
        "{all}"
    );
    let wide = k.ok(&["get", "clusters", "-o", "wide"]).await;
    for col in ["DRIVER", "NODES", "UID"] {
        assert!(
            wide.lines().next().unwrap_or_default().contains(col),
            "{col} in {wide}"
        );
    }
    assert!(wide.contains("external"), "{wide}");
    let shown = k.ok(&["get", "clusters", "--show-labels"]).await;
    assert!(shown.contains("env=prod"), "{shown}");
    let picked = k
        .ok(&["get", "clusters", "-l", "env=prod", "-o", "name"])
        .await;
    assert_eq!(picked.trim(), "cluster.clusterregistry.k8s.io/alpha");
    let (_, none_out, none_err) = k.run(&["get", "clusters", "-l", "env notin (prod)"]).await;
    assert!(
        none_err.contains("No resources found") && none_out.trim().is_empty(),
        "{none_out} {none_err}"
    );

    // label, annotate, merge and JSON patches.
    let out = k.ok(&["label", "cluster", "alpha", "tier=gold"]).await;
    assert!(out.contains("labeled"), "{out}");
    let out = k
        .ok(&["annotate", "cluster", "alpha", "owner=team-a"])
        .await;
    assert!(out.contains("annotated"), "{out}");
    k.ok(&[
        "patch",
        "cluster",
        "alpha",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"env":"dev"}}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cluster",
        "alpha",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/labels/tier"}]"#,
    ])
    .await;
    let labels = k
        .ok(&[
            "get",
            "cluster",
            "alpha",
            "-o",
            "jsonpath={.metadata.labels}",
        ])
        .await;
    let labels: Value = serde_json::from_str(&labels).expect("labels JSON");
    assert_eq!(labels, json!({"env": "dev"}));
    let owner = k
        .ok(&[
            "get",
            "cr",
            "alpha",
            "-o",
            "jsonpath={.metadata.annotations.owner}",
        ])
        .await;
    assert_eq!(owner, "team-a");
    // Registry labels are not Magnum's COE labels.
    let v1 = v1_cluster(&app, "alpha").await;
    assert_eq!(v1.body["labels"], json!({}), "{}", v1.text);
    // The default patch type is strategic merge, which the registry does not take.
    let err = k
        .fails(&[
            "patch",
            "cluster",
            "alpha",
            "-p",
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        ])
        .await;
    assert!(err.contains("not supported"), "{err}");

    // apply twice (created, then unchanged), then a change (configured).
    let beta_text = manifest("beta", "  labels:\n    env: test\n", "10.0.0.2:6443", &b64);
    let beta = k.file("beta.yaml", &beta_text);
    assert!(k.ok(&["apply", "-f", &beta]).await.contains("created"));
    assert!(k.ok(&["apply", "-f", &beta]).await.contains("unchanged"));
    let beta2 = k.file("beta2.yaml", &beta_text.replace("env: test", "env: stage"));
    assert!(k.ok(&["apply", "-f", &beta2]).await.contains("configured"));
    let env = k
        .ok(&[
            "get",
            "cluster",
            "beta",
            "-o",
            "jsonpath={.metadata.labels.env}",
        ])
        .await;
    assert_eq!(env, "stage");
    // From client-side to server-side apply: kubectl takes over the fields its client-side
    // apply last applied without a conflict, and the annotation follows what it applied.
    let beta3 = k.file("beta3.yaml", &beta_text.replace("env: test", "env: ssa"));
    let out = k.ok(&["apply", "--server-side", "-f", &beta3]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    let last = k
        .ok(&[
            "get",
            "cluster",
            "beta",
            "-o",
            r"jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}",
        ])
        .await;
    let last: Value = serde_json::from_str(last.trim()).expect("last-applied is JSON");
    assert_eq!(last["metadata"]["labels"]["env"], "ssa", "{last}");

    // Server-side apply creates, then updates.
    let gamma = k.file("gamma.yaml", &manifest("gamma", "", "10.0.0.3:6443", &b64));
    let out = k.ok(&["apply", "--server-side", "-f", &gamma]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    let gamma2 = k.file(
        "gamma2.yaml",
        &manifest(
            "gamma",
            "  labels:\n    ssa: yes-please\n",
            "10.0.0.4:6443",
            &b64,
        ),
    );
    k.ok(&["apply", "--server-side", "-f", &gamma2]).await;
    let v1 = v1_cluster(&app, "gamma").await;
    assert_eq!(
        v1.body["api_address"], "https://10.0.0.4:6443",
        "{}",
        v1.text
    );

    // replace with a stale resourceVersion: 409.
    let current: Value =
        serde_json::from_str(&k.ok(&["get", "cluster", "beta", "-o", "json"]).await).expect("json");
    let mut stale = current.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["metadata"]["labels"]["env"] = json!("prod");
    let stale_file = k.file("stale.json", &stale.to_string());
    let err = k.fails(&["replace", "-f", &stale_file]).await;
    assert!(err.contains("the object has been modified"), "{err}");
    let mut fresh = current;
    fresh["metadata"]["labels"]["env"] = json!("prod");
    let fresh_file = k.file("fresh.json", &fresh.to_string());
    assert!(k
        .ok(&["replace", "-f", &fresh_file])
        .await
        .contains("replaced"));

    // Credentials are refused with a reason.
    let secret = k.file(
        "secret.yaml",
        &manifest("delta", "", "10.0.0.5:6443", &b64).replace(
            "      namespace: fleet-system\n",
            "      namespace: fleet-system\n    user:\n      kind: Secret\n      name: x\n",
        ),
    );
    assert!(k.ok(&["create", "-f", &secret]).await.contains("created"));
    let token = k.file(
        "token.json",
        &json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "epsilon"},
                "spec": {"authInfo": {"user": {"kind": "Secret", "name": "x", "token": "s3cr3t"}}}})
        .to_string(),
    );
    let err = k.fails(&["create", "-f", &token, "--validate=false"]).await;
    assert!(!err.contains("s3cr3t"), "{err}");
    assert!(err.to_lowercase().contains("credential"), "{err}");
    assert_eq!(v1_cluster(&app, "epsilon").await.status, 404);

    // explain reads the served schema.
    let explained = k.ok(&["explain", "clusters.spec.authInfo"]).await;
    assert!(explained.contains("controller"), "{explained}");

    // delete (a registered cluster goes at once; kubectl's wait ends).
    let out = k.ok(&["delete", "cluster", "alpha"]).await;
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(v1_cluster(&app, "alpha").await.status, 404);
    let err = k.fails(&["get", "cluster", "alpha"]).await;
    assert!(
        err.contains("NotFound") && err.contains("\"alpha\" not found"),
        "{err}"
    );
}

#[tokio::test]
async fn kubectl_get_watch_sees_a_change_made_through_v1() {
    let Some(bin) = kubectl_binary() else { return };
    let app = noauth_app(Backend::Sqlite).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let (b64, _) = ca_bundle();
    let file = k.file("w.yaml", &manifest("watched", "", "10.1.0.1:6443", &b64));
    k.ok(&["create", "-f", &file]).await;
    let mut child = k
        .command(&["get", "clusters", "--watch", "--request-timeout=30s"])
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the list arrives")
        .expect("reads")
        .unwrap_or_default();
    assert!(first.contains("NAME"), "{first}");
    let row = lines.next_line().await.expect("reads").unwrap_or_default();
    assert!(
        row.starts_with("watched") && row.contains("CREATE_COMPLETE"),
        "{row}"
    );

    // Deleted through /v1: the delete job is written, and the watch shows the new status.
    let r = app.delete_cluster("watched").await;
    assert_eq!(r.status, 204, "{}", r.text);
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let Some(l) = lines.next_line().await.expect("reads") else {
                return String::new();
            };
            if l.contains("DELETE_IN_PROGRESS") {
                return l;
            }
        }
    })
    .await
    .expect("the watch shows the change made through /v1 within 10 s");
    assert!(seen.starts_with("watched"), "{seen}");
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_cluster_registered_with_kubectl_joins_a_federation_the_fake_driver_completes() {
    let Some(bin) = kubectl_binary() else { return };
    let app = noauth_app(Backend::Postgres).await;
    let conductor = crate::helpers::conductor(&app, instant());
    let template = template_as(&app, "k8s", json!({}), &app.headers).await;
    labelled_cluster_as(&app, &app.headers, &template, "host", json!({})).await;
    drain(&conductor).await;

    let k = Kubectl::new(&bin, &app, "project-a", None);
    let (b64, _) = ca_bundle();
    let file = k.file("edge.yaml", &manifest("edge", "", "10.2.0.1:6443", &b64));
    k.ok(&["create", "-f", &file]).await;
    let edge = v1_cluster(&app, "edge").await;
    let edge_uuid = edge.body["uuid"].as_str().expect("uuid").to_string();

    let fed = app
        .call(
            reqwest::Method::POST,
            "/v1/federations",
            Some(&merged(
                federation_body("host"),
                json!({"name": "fleet"}),
                &[],
            )),
        )
        .await;
    assert!(fed.status == 202 || fed.status == 201, "{}", fed.text);
    drain(&conductor).await;
    let join = app
        .call(
            reqwest::Method::PATCH,
            "/v1/federations/fleet",
            Some(&join_ops(&edge_uuid)),
        )
        .await;
    assert_eq!(join.status, 202, "{}", join.text);
    drain(&conductor).await;
    let shown = app
        .call(reqwest::Method::GET, "/v1/federations/fleet", None)
        .await;
    assert_eq!(shown.body["status"], "UPDATE_COMPLETE", "{}", shown.text);
    assert_eq!(
        shown.body["member_ids"],
        json!([edge_uuid]),
        "{}",
        shown.text
    );
    // A member of a federation is not deleted from under it.
    let err = k.fails(&["delete", "cluster", "edge"]).await;
    assert!(err.contains("federation"), "{err}");
}

/// A request with a bearer token (kubectl sends tokens only over HTTPS, which the test app does
/// not terminate: these calls are what kubectl would send).
async fn as_bearer(
    app: &TestApp,
    token: Option<&str>,
    method: reqwest::Method,
    path: &str,
) -> Resp {
    let mut req = app
        .client
        .request(method, format!("{}{path}", app.address))
        .header("Accept", "application/json");
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    Resp::read(req.send().await.expect("request")).await
}

#[tokio::test]
async fn a_member_of_one_project_lists_gets_and_watches_nothing_of_another() {
    use reqwest::Method;
    let secret = "registry-isolation-secret";
    let app = spawn_jwt_on(Backend::Postgres, secret).await;
    let a = hs256(secret, "ua", "proj-a", &["member", "reader"]);
    let b = hs256(secret, "ub", "proj-b", &["member", "reader"]);
    let admin = hs256(secret, "root", "proj-c", &["admin"]);
    let (b64, _) = ca_bundle();
    let base = "/apis/clusterregistry.k8s.io/v1alpha1";
    for (token, ns, name) in [(&a, "proj-a", "secret-a"), (&b, "proj-b", "mine-b")] {
        let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "labels": {"env": "prod"}},
            "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": format!("10.3.0.{}:6443", name.len())}],
                "caBundle": b64}}});
        let r = Resp::read(
            app.client
                .post(format!("{}{base}/namespaces/{ns}/clusters", app.address))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .expect("post"),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["metadata"]["namespace"], ns, "{}", r.text);
    }

    // B asks for A's namespace: nothing of A's in it. B is bound to no group, and is answered
    // as a bound project whose groups reach nothing there: empty lists and watches, 404 for a
    // name; the namespace object itself stays another project's (403).
    for (path, want) in [
        (format!("{base}/namespaces/proj-a/clusters"), 200),
        (format!("{base}/namespaces/proj-a/clusters/secret-a"), 404),
        (
            format!("{base}/namespaces/proj-a/clusters?watch=true&timeoutSeconds=1"),
            200,
        ),
        (format!("{base}/namespaces/proj-a/kubeconfig"), 200),
        (
            "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/proj-a/clusterprofiles".to_string(),
            200,
        ),
        (
            "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/proj-a/clusterprofiles/secret-a"
                .to_string(),
            404,
        ),
        ("/api/v1/namespaces/proj-a".to_string(), 403),
    ] {
        let r = as_bearer(&app, Some(&b), Method::GET, &path).await;
        assert_eq!(r.status, want, "{path}: {}", r.text);
        if want != 200 {
            assert_eq!(r.body["kind"], "Status", "{path}: {}", r.text);
        }
        assert!(
            !r.text.contains("secret-a") || path.ends_with("secret-a"),
            "{}",
            r.text
        );
        assert!(!r.text.contains("10.3.0"), "{}", r.text);
    }
    let r = as_bearer(
        &app,
        Some(&b),
        Method::DELETE,
        &format!("{base}/namespaces/proj-a/clusters/secret-a"),
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text);

    // All namespaces: a member sees its own project's clusters only; so does its watch.
    let r = as_bearer(&app, Some(&b), Method::GET, &format!("{base}/clusters")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let names: Vec<&str> = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, vec!["mine-b"], "{}", r.text);
    let watch = app
        .client
        .get(format!(
            "{}{base}/clusters?watch=true&timeoutSeconds=1",
            app.address
        ))
        .bearer_auth(&b)
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), 200);
    let events = watch.text().await.expect("events");
    assert!(
        events.contains("mine-b") && !events.contains("secret-a"),
        "{events}"
    );

    // An admin sees every project's, in (namespace, name) order.
    let r = as_bearer(&app, Some(&admin), Method::GET, &format!("{base}/clusters")).await;
    let seen: Vec<(String, String)> = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("proj-a".to_string(), "secret-a".to_string()),
            ("proj-b".to_string(), "mine-b".to_string())
        ],
        "{}",
        r.text
    );

    // The same in pages of one, following `continue` (kubectl's --chunk-size).
    let first = as_bearer(
        &app,
        Some(&admin),
        Method::GET,
        &format!("{base}/clusters?limit=1"),
    )
    .await;
    assert_eq!(
        first.body["items"][0]["metadata"]["name"], "secret-a",
        "{}",
        first.text
    );
    let token = first.body["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    let second = as_bearer(
        &app,
        Some(&admin),
        Method::GET,
        &format!("{base}/clusters?limit=1&continue={}", urlencode(&token)),
    )
    .await;
    assert_eq!(
        second.body["items"][0]["metadata"]["name"], "mine-b",
        "{}",
        second.text
    );
    assert_eq!(
        second.body["metadata"]["resourceVersion"],
        first.body["metadata"]["resourceVersion"]
    );
    assert!(
        second.body["metadata"].get("continue").is_none(),
        "{}",
        second.text
    );
    let bad = as_bearer(
        &app,
        Some(&admin),
        Method::GET,
        &format!("{base}/clusters?continue=nope"),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert_eq!(bad.body["reason"], "BadRequest", "{}", bad.text);

    // Without a token: 401 Status (kubectl: "You must be logged in to the server").
    let r = as_bearer(
        &app,
        None,
        Method::GET,
        &format!("{base}/namespaces/proj-a/clusters"),
    )
    .await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.body["reason"], "Unauthorized", "{}", r.text);
}

#[tokio::test]
async fn get_o_yaml_applies_into_an_empty_project_and_the_kubeconfig_export_works_directly() {
    let Some(bin) = kubectl_binary() else { return };
    let app = noauth_app(Backend::Sqlite).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let (b64, _) = ca_bundle();
    // One registered cluster whose API server is this very service (so the exported
    // kubeconfig can be used for real), one more in another environment.
    let own = app.address.clone();
    let prod = k.file(
        "prod.yaml",
        &manifest("fleet-prod", "  labels:\n    env: prod\n", &own, &b64),
    );
    let dev = k.file(
        "dev.yaml",
        &manifest(
            "fleet-dev",
            "  labels:\n    env: dev\n",
            "10.9.0.1:6443",
            &b64,
        ),
    );
    k.ok(&["create", "-f", &prod]).await;
    k.ok(&["create", "-f", &dev]).await;

    // The export of a label selector: one cluster and context, no credentials.
    let exported = k
        .ok(&[
            "get",
            "--raw",
            "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/kubeconfig?labelSelector=env%3Dprod",
        ])
        .await;
    assert!(
        !exported.contains("token") && !exported.contains("client-key"),
        "{exported}"
    );
    let config: Value = serde_norway::from_str(&exported).expect("the export is YAML");
    assert_eq!(
        config["clusters"].as_array().map(Vec::len),
        Some(1),
        "{exported}"
    );
    assert_eq!(config["clusters"][0]["cluster"]["server"], own.as_str());
    assert_eq!(
        config["clusters"][0]["cluster"]["certificate-authority-data"],
        b64.as_str()
    );
    assert_eq!(
        config["users"],
        json!([{"name": "fleetyard-user", "user": {}}])
    );
    let path = k.file("fleet.kubeconfig", &exported);
    let contexts = tokio::process::Command::new(&bin)
        .args([
            "--kubeconfig",
            &path,
            "config",
            "get-contexts",
            "-o",
            "name",
        ])
        .output()
        .await
        .expect("kubectl config");
    assert_eq!(
        String::from_utf8_lossy(&contexts.stdout).trim(),
        "fleet-prod"
    );
    // Used as it is: its one context reaches the cluster it names (this service).
    let listed = tokio::process::Command::new(&bin)
        .args([
            "--kubeconfig",
            &path,
            "--cache-dir",
            &k.dir.join("cache2").display().to_string(),
            "get",
            "clusters",
            "-n",
            "project-a",
            "-o",
            "name",
        ])
        .env("HOME", &k.dir)
        .output()
        .await
        .expect("kubectl with the exported kubeconfig");
    let names = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        names.contains("cluster.clusterregistry.k8s.io/fleet-prod")
            && names.contains("cluster.clusterregistry.k8s.io/fleet-dev"),
        "{names} {}",
        String::from_utf8_lossy(&listed.stderr)
    );

    // ClusterProfile: the same clusters, read-only.
    let profiles = k.ok(&["get", "clusterprofiles"]).await;
    assert!(
        profiles.contains("fleet-prod") && profiles.contains("fleetyard"),
        "{profiles}"
    );
    let profile: Value = serde_json::from_str(
        &k.ok(&["get", "clusterprofile", "fleet-dev", "-o", "json"])
            .await,
    )
    .expect("json");
    assert_eq!(profile["spec"]["clusterManager"]["name"], "fleetyard");
    assert_eq!(
        profile["metadata"]["labels"]["x-k8s.io/cluster-manager"],
        "fleetyard"
    );
    let conditions: Vec<&str> = profile["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(conditions, vec!["ControlPlaneHealthy", "Joined"]);
    assert_eq!(profile["status"]["conditions"][1]["status"], "True");

    // get -o yaml, then apply into an empty project of a fresh service: the same objects.
    let yaml = k.ok(&["get", "clusters", "-o", "yaml"]).await;
    let empty = noauth_app(Backend::Postgres).await;
    let k2 = Kubectl::new(&bin, &empty, "project-a", None);
    let file = k2.file("fleet.yaml", &yaml);
    // kubectl validates each item of a `kind: List` (what -o yaml writes) against
    // /openapi/v2 in protobuf; the default validation passes.
    let out = k2.ok(&["apply", "-f", &file]).await;
    assert_eq!(out.matches("created").count(), 2, "{out}");
    for name in ["fleet-prod", "fleet-dev"] {
        let a: Value = serde_json::from_str(&k.ok(&["get", "cluster", name, "-o", "json"]).await)
            .expect("json");
        let b: Value = serde_json::from_str(&k2.ok(&["get", "cluster", name, "-o", "json"]).await)
            .expect("json");
        assert_eq!(a["spec"], b["spec"], "{name}");
        assert_eq!(a["metadata"]["labels"], b["metadata"]["labels"], "{name}");
        assert_ne!(a["metadata"]["uid"], b["metadata"]["uid"], "a new object");
    }
    // Applying the same file again succeeds and changes nothing: its server-owned fields (the
    // old uid, resourceVersion, status) are ignored, so no write happens.
    let before = k2
        .ok(&[
            "get",
            "clusters",
            "-o",
            "jsonpath={.items[*].metadata.resourceVersion}",
        ])
        .await;
    k2.ok(&["apply", "-f", &file]).await;
    let after = k2
        .ok(&[
            "get",
            "clusters",
            "-o",
            "jsonpath={.items[*].metadata.resourceVersion}",
        ])
        .await;
    assert_eq!(before, after);
}

/// A registry list as JSON, through HTTP.
async fn registry_get(app: &TestApp, path: &str) -> Resp {
    Resp::read(
        app.client
            .get(format!("{}{path}", app.address))
            .header("Accept", "application/json")
            .send()
            .await
            .expect("get"),
    )
    .await
}

#[tokio::test]
async fn a_watch_replays_from_its_version_and_a_version_older_than_the_log_is_410() {
    let app = noauth_app(Backend::Postgres).await;
    let base = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
    let (b64, _) = ca_bundle();
    let create = |name: &str| {
        json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": name},
               "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                   {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.4.0.1:6443"}], "caBundle": b64}}})
    };
    let r = Resp::read(
        app.client
            .post(format!("{}{base}", app.address))
            .json(&create("w1"))
            .send()
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let listed = registry_get(&app, base).await;
    let from = listed.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("list rv")
        .to_string();
    assert_eq!(
        from,
        r.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default(),
        "{}",
        listed.text
    );

    // Changes after `from`: a label through the registry, then a delete through /v1.
    let patched = Resp::read(
        app.client
            .patch(format!("{}{base}/w1", app.address))
            .header("Content-Type", "application/merge-patch+json")
            .body(r#"{"metadata":{"labels":{"tier":"gold"}}}"#)
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(app.delete_cluster("w1").await.status, 204);
    let watch = app
        .client
        .get(format!(
            "{}{base}?watch=true&resourceVersion={from}&timeoutSeconds=1",
            app.address
        ))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), 200);
    let text = watch.text().await.expect("events");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON event"))
        .collect();
    // Two changes of one object made before the watch looked are replayed one by one, in
    // order, each with its own resourceVersion (the delete through /v1 only started, so the
    // object is there, marked as being deleted).
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, vec!["MODIFIED", "MODIFIED"], "{text}");
    assert_eq!(
        events[0]["object"]["metadata"]["labels"]["tier"], "gold",
        "{text}"
    );
    assert!(
        events[0]["object"]["metadata"]["deletionTimestamp"].is_null(),
        "{text}"
    );
    let now = registry_get(&app, &format!("{base}/w1")).await;
    assert_eq!(
        events[1]["object"]["metadata"]["resourceVersion"], now.body["metadata"]["resourceVersion"],
        "{text}"
    );
    assert!(
        events[1]["object"]["metadata"]["deletionTimestamp"].is_string(),
        "{text}"
    );
    let versions: Vec<i64> = events
        .iter()
        .filter_map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()?
                .parse()
                .ok()
        })
        .collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    assert!(
        versions[0] > from.parse::<i64>().expect("rv"),
        "{versions:?}"
    );

    // Once the log is pruned past it, the old version answers 410 in the stream.
    app.store.prune_registry_changes(0).await.expect("prunes");
    let old = app
        .client
        .get(format!(
            "{}{base}?watch=true&resourceVersion={from}",
            app.address
        ))
        .send()
        .await
        .expect("watch");
    let text = old.text().await.expect("body");
    let event: Value = serde_json::from_str(text.trim()).expect("one ERROR event");
    assert_eq!(event["type"], "ERROR", "{text}");
    assert_eq!(event["object"]["code"], 410, "{text}");
    assert_eq!(event["object"]["reason"], "Expired", "{text}");
}

#[tokio::test]
async fn a_v1_cluster_whose_name_is_not_a_kubernetes_name_has_a_derived_registry_name() {
    let app = noauth_app(Backend::Sqlite).await;
    let conductor = crate::helpers::conductor(&app, instant());
    let template = template_as(&app, "k8s", json!({}), &app.headers).await;
    let uuid = labelled_cluster_as(&app, &app.headers, &template, "My_Cluster", json!({})).await;
    drain(&conductor).await;
    let derived = format!("my-cluster-{}", &uuid.replace('-', "")[..8]);
    let base = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
    let r = registry_get(&app, &format!("{base}/{derived}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["uid"], uuid.as_str());
    assert_eq!(
        r.body["metadata"]["annotations"]["fleetyard.openstack.org/cluster-name"],
        "My_Cluster"
    );
    // A provisioned cluster shows its API address and its own CA.
    let addr = r.body["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]["serverAddress"]
        .as_str()
        .expect("address");
    assert!(addr.starts_with("https://"), "{}", r.text);
    let listed = registry_get(
        &app,
        &format!("{base}?fieldSelector=metadata.name%3D{derived}"),
    )
    .await;
    assert_eq!(
        listed.body["items"].as_array().map(Vec::len),
        Some(1),
        "{}",
        listed.text
    );
    // Its own name is not a registry name.
    let r = registry_get(&app, &format!("{base}/My_Cluster")).await;
    assert_eq!(r.status, 404, "{}", r.text);
    // Labels set through the registry show in /v1 from microversion 1.15.
    let patched = Resp::read(
        app.client
            .patch(format!("{}{base}/{derived}", app.address))
            .header("Content-Type", "application/merge-patch+json")
            .body(r#"{"metadata":{"labels":{"env":"prod"},"annotations":{"team":"a"}}}"#)
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    let shown = app.at("1.15").get_cluster(&uuid).await;
    assert_eq!(
        shown.body["registry_labels"],
        json!({"env": "prod"}),
        "{}",
        shown.text
    );
    assert_eq!(
        shown.body["registry_annotations"],
        json!({"team": "a"}),
        "{}",
        shown.text
    );
    let older = app.at("1.14").get_cluster(&uuid).await;
    assert!(
        older.body.get("registry_labels").is_none(),
        "{}",
        older.text
    );
    // Its endpoints are the service's: a patch that changes them is refused with 422.
    let refused = Resp::read(
        app.client
            .patch(format!("{}{base}/{derived}", app.address))
            .header("Content-Type", "application/merge-patch+json")
            .body(r#"{"spec":{"kubernetesApiEndpoints":{"serverEndpoints":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.9:6443"}]}}}"#)
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(refused.body["reason"], "Invalid", "{}", refused.text);
}

#[tokio::test]
async fn a_watch_on_one_api_process_sees_a_change_committed_by_another() {
    // Two API processes over one PostgreSQL database: the watch is on the first, the change is
    // made through /v1 of the second; the trigger's NOTIFY wakes the first one's feed.
    let app = noauth_app(Backend::Postgres).await;
    let mut settings = crate::helpers::test_settings(&app.db.url);
    settings.noauth.project_id = "project-a".into();
    settings.noauth.user_id = "user-a".into();
    settings.noauth.roles = "member,reader".into();
    let store = fleetyard::startup::open_store(&settings)
        .await
        .expect("second store");
    let state = fleetyard::startup::build_state(settings, store).expect("state");
    let second = fleetyard::startup::Application::build(state).expect("binds");
    let second_address = format!("http://127.0.0.1:{}", second.port());
    tokio::spawn(second.run_until_stopped());

    let base = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
    let (b64, _) = ca_bundle();
    let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "across"},
        "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.5.0.1:6443"}], "caBundle": b64}}});
    let r = app
        .client
        .post(format!("{}{base}", app.address))
        .json(&body)
        .send()
        .await
        .expect("create");
    assert_eq!(r.status(), 201);
    let rv = registry_get(&app, base).await.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let mut watch = app
        .client
        .get(format!(
            "{}{base}?watch=true&resourceVersion={rv}&timeoutSeconds=20",
            app.address
        ))
        .send()
        .await
        .expect("watch");
    // Let the watch reach its wait (and the feed its LISTEN) before the change.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let sent = std::time::Instant::now();
    let deleted = app
        .client
        .delete(format!("{second_address}/v1/clusters/across"))
        .send()
        .await
        .expect("delete through the second process");
    assert_eq!(deleted.status(), 204);
    let mut seen = String::new();
    let line = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = watch.chunk().await.expect("chunk") {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(l) = seen.lines().find(|l| l.contains("\"MODIFIED\"")) {
                return l.to_string();
            }
        }
        String::new()
    })
    .await
    .expect("the first process's watch sees the second's change");
    let waited = sent.elapsed();
    let event: Value = serde_json::from_str(&line).expect("event");
    assert_eq!(event["object"]["metadata"]["name"], "across", "{line}");
    // Woken by NOTIFY, not by the one-second fallback poll.
    assert!(waited < Duration::from_millis(900), "{waited:?}");
}

/// A query-string value, percent-encoded.
fn urlencode(v: &str) -> String {
    serde_urlencoded::to_string([("v", v)])
        .expect("encodes")
        .trim_start_matches("v=")
        .to_string()
}

/// The app on `backend` in no-auth mode whose configured identity is `user` in `project` with
/// `roles` (what kubectl, sending no identity headers, is).
async fn noauth_as(backend: Backend, project: &str, user: &str, roles: &str) -> TestApp {
    spawn_with(backend, |s| {
        s.noauth.project_id = project.into();
        s.noauth.user_id = user.into();
        s.noauth.roles = roles.into();
    })
    .await
}

#[tokio::test]
async fn kubectl_auth_can_i_answers_from_the_policy_for_a_member_and_a_reader() {
    let Some(bin) = kubectl_binary() else { return };
    let member = noauth_app(Backend::Sqlite).await;
    let k = Kubectl::new(&bin, &member, "project-a", None);
    let create = ["auth", "can-i", "create", "clusters.clusterregistry.k8s.io"];
    let out = k.ok(&[&create[..], &["-n", "project-a"]].concat()).await;
    assert_eq!(out.trim(), "yes");
    let (ok, out, err) = k.run(&[&create[..], &["-n", "project-b"]].concat()).await;
    assert!(!ok, "another project's namespace is a no:\n{out}\n{err}");
    assert!(out.starts_with("no"), "{out}\n{err}");
    let out = k
        .ok(&[
            "auth",
            "can-i",
            "patch",
            "clusters",
            "--subresource=status",
            "-n",
            "project-a",
        ])
        .await;
    assert_eq!(out.trim(), "yes");
    let out = k.ok(&["auth", "can-i", "list", "cr", "-A"]).await;
    assert_eq!(out.trim(), "yes");

    let reader = noauth_as(Backend::Sqlite, "project-a", "reader-a", "reader").await;
    let k = Kubectl::new(&bin, &reader, "project-a", None);
    let (ok, out, err) = k.run(&[&create[..], &["-n", "project-a"]].concat()).await;
    assert!(!ok, "a reader may not create:\n{out}\n{err}");
    assert!(
        out.contains("no - policy rule \"registry:create\" does not allow it"),
        "{out}\n{err}"
    );
    let out = k
        .ok(&["auth", "can-i", "watch", "clusters.clusterregistry.k8s.io"])
        .await;
    assert_eq!(out.trim(), "yes");
}

#[tokio::test]
async fn kubectl_auth_can_i_list_shows_the_namespaces_rules() {
    let Some(bin) = kubectl_binary() else { return };
    let app = noauth_as(Backend::Sqlite, "project-a", "reader-a", "reader").await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let out = k.ok(&["auth", "can-i", "--list", "-n", "project-a"]).await;
    let header = out.lines().next().unwrap_or_default();
    for col in ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"] {
        assert!(header.contains(col), "{col} in {out}");
    }
    let row = |resource: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(resource))
            .unwrap_or_else(|| panic!("no {resource} row in\n{out}"))
            .to_string()
    };
    assert!(
        row("clusters.clusterregistry.k8s.io").ends_with("[get list watch]"),
        "{out}"
    );
    assert!(
        row("clusters.clusterregistry.k8s.io/status").ends_with("[get]"),
        "{out}"
    );
    assert!(
        row("selfsubjectaccessreviews.authorization.k8s.io").ends_with("[create]"),
        "{out}"
    );
    assert!(out.contains("[/apis/*]"), "{out}");
    assert!(!out.contains("impersonate"), "{out}");
}

#[tokio::test]
async fn kubectl_auth_whoami_shows_the_caller_and_an_admin_may_impersonate() {
    let Some(bin) = kubectl_binary() else { return };
    let app = noauth_app(Backend::Sqlite).await;
    let k = Kubectl::new(&bin, &app, "project-a", None);
    let out = k.ok(&["auth", "whoami", "-o", "json"]).await;
    let v: Value = serde_json::from_str(&out).expect("whoami -o json is JSON");
    assert_eq!(v["kind"], "SelfSubjectReview", "{out}");
    assert_eq!(
        v["status"]["userInfo"],
        json!({"username": "user-a", "uid": "user-a",
            "groups": ["project-a", "system:authenticated"],
            "extra": {"alpha.kubernetes.io/identity/project/id": ["project-a"],
                "alpha.kubernetes.io/identity/roles": ["member", "reader"]}}),
        "{out}"
    );
    let table = k.ok(&["auth", "whoami"]).await;
    assert!(table.contains("user-a"), "{table}");

    // A member may not impersonate: kube-apiserver's refusal (whoami words any 403 its own way).
    let err = k
        .fails(&["auth", "whoami", "--as", "root", "--as-group", "project-x"])
        .await;
    assert!(err.contains("you do not have permission"), "{err}");
    // client-go reports a refused discovery request as "unknown": with discovery cached, the
    // list itself shows the Status's message.
    k.ok(&["api-resources"]).await;
    let err = k
        .fails(&["get", "clusters", "--as", "root", "--as-group", "project-x"])
        .await;
    assert!(
        err.contains(
            "users \"root\" is forbidden: User \"user-a\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        ),
        "{err}"
    );

    // An admin may: whoami and can-i answer for the impersonated user.
    let admin = noauth_as(Backend::Sqlite, "admin-project", "root", "admin").await;
    let k = Kubectl::new(&bin, &admin, "project-b", None);
    let out = k
        .ok(&[
            "auth",
            "whoami",
            "--as",
            "ub",
            "--as-group",
            "project-b",
            "-o",
            "json",
        ])
        .await;
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["status"]["userInfo"]["username"], "ub", "{out}");
    assert_eq!(
        v["status"]["userInfo"]["groups"],
        json!(["project-b", "system:authenticated"]),
        "{out}"
    );
    let out = k
        .ok(&[
            "auth",
            "can-i",
            "create",
            "clusters.clusterregistry.k8s.io",
            "-n",
            "project-b",
        ])
        .await;
    assert_eq!(out.trim(), "yes");
    // Impersonated without roles, the same question is a no.
    let (ok, out, _) = k
        .run(&[
            "auth",
            "can-i",
            "create",
            "clusters.clusterregistry.k8s.io",
            "-n",
            "project-b",
            "--as",
            "ub",
            "--as-group",
            "project-b",
        ])
        .await;
    assert!(!ok && out.starts_with("no"), "{out}");
}
