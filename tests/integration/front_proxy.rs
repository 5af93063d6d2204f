//! The aggregated deployment's front proxy (`[front_proxy]`). No kube-apiserver can run here,
//! so the test plays its aggregation layer honestly: a client presenting a front-proxy
//! certificate signed by a request-header CA made in the test, forwarding the caller in
//! `X-Remote-*` headers. The service runs with `auth_strategy = jwt`, so a request the headers
//! do not authenticate is a 401: a forged `X-Remote-User` on a connection without the
//! certificate, with a certificate of another CA, or with a name not allowed, gets nothing.

use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::json;

use crate::helpers::endpoints::Ca;
use crate::helpers::jwt::{hs256, hs256_settings};
use crate::helpers::{spawn_with, Backend, Resp, TestApp};

pub(crate) const SECRET: &str = "front-proxy-test-secret";
pub(crate) const REGISTRY: &str = "/apis/clusterregistry.k8s.io/v1alpha1";

/// The server's CA and certificate files, the request-header CA, and another CA.
pub(crate) struct Proxies {
    dir: PathBuf,
    server_ca: Ca,
    pub(crate) request_header_ca: Ca,
    other_ca: Ca,
}

impl Proxies {
    pub(crate) fn new() -> Proxies {
        let dir = std::env::temp_dir().join(format!("fy-fp-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = Proxies {
            dir,
            server_ca: Ca::new("fleetyard-test-ca"),
            request_header_ca: Ca::new("front-proxy-ca"),
            other_ca: Ca::new("someone-else"),
        };
        let (cert, key) = p.server_ca.issue(
            "fleetyard",
            &[IpAddr::from([127, 0, 0, 1])],
            &["localhost"],
            false,
        );
        std::fs::write(p.dir.join("tls.crt"), cert).expect("certificate");
        std::fs::write(p.dir.join("tls.key"), key).expect("key");
        std::fs::write(p.dir.join("requestheader-ca.pem"), &p.request_header_ca.pem)
            .expect("request-header CA");
        p
    }

    pub(crate) fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// A client trusting the server's CA, presenting a client certificate of `ca` named `cn`.
    pub(crate) fn client(&self, cert: Option<(&Ca, &str)>) -> reqwest::Client {
        let mut b = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(
                reqwest::Certificate::from_pem(self.server_ca.pem.as_bytes()).expect("CA"),
            );
        if let Some((ca, cn)) = cert {
            let (cert, key) = ca.issue(cn, &[], &[], true);
            b = b.identity(
                reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes()).expect("identity"),
            );
        }
        b.build().expect("client")
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn spawn(p: &Proxies, backend: Backend, admin_groups: &str) -> TestApp {
    spawn_with(backend, |s| {
        hs256_settings(s, SECRET);
        s.api.enabled_ssl = true;
        s.api.ssl_cert_file = p.path("tls.crt");
        s.api.ssl_key_file = p.path("tls.key");
        s.front_proxy.client_ca_file = p.path("requestheader-ca.pem");
        s.front_proxy.allowed_names = "front-proxy-client,aggregator".into();
        s.front_proxy.admin_groups = admin_groups.into();
    })
    .await
}

/// A GET forwarded as `user` in `groups` over `client`.
async fn forwarded(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
    user: &str,
    groups: &[&str],
) -> Result<Resp, reqwest::Error> {
    let mut r = client
        .get(format!("{}{path}", app.address))
        .header("X-Remote-User", user);
    for g in groups {
        r = r.header("X-Remote-Group", *g);
    }
    Ok(Resp::read(r.send().await?).await)
}

/// A cluster registered in `project` with a token of that project.
pub(crate) async fn register(app: &TestApp, client: &reqwest::Client, project: &str, name: &str) {
    let token = hs256(
        SECRET,
        &format!("owner-{project}"),
        project,
        &["member", "reader"],
    );
    let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.9.0.2:6443"}]}}});
    let r = Resp::read(
        client
            .post(format!(
                "{}{REGISTRY}/namespaces/{project}/clusters",
                app.address
            ))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

pub(crate) fn names(r: &Resp) -> Vec<String> {
    r.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_front_proxy_forwards_its_caller_and_a_forged_header_gets_nothing() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let p = Proxies::new();
        let app = spawn(&p, backend, "").await;
        let plain = p.client(None);
        register(&app, &plain, "project-a", "alpha").await;
        register(&app, &plain, "project-b", "beta").await;

        // The aggregation layer, with its front-proxy certificate: B's member sees B's clusters
        // and only them, and is who the request says.
        let proxy = p.client(Some((&p.request_header_ca, "front-proxy-client")));
        let groups = ["project-b", "system:authenticated"];
        let r = forwarded(
            &app,
            &proxy,
            &format!("{REGISTRY}/namespaces/project-b/clusters"),
            "alice",
            &groups,
        )
        .await
        .expect("served");
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(names(&r), ["beta"], "{}", r.text);
        let r = forwarded(
            &app,
            &proxy,
            &format!("{REGISTRY}/namespaces/project-a/clusters"),
            "alice",
            &groups,
        )
        .await
        .expect("served");
        // Another project's namespace: nothing of it (no group is bound to alice's project).
        assert_eq!(r.status, 200, "another project's namespace: {}", r.text);
        assert_eq!(names(&r), Vec::<String>::new(), "{}", r.text);
        let review = Resp::read(
            proxy
                .post(format!(
                    "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    app.address
                ))
                .header("X-Remote-User", "alice")
                .header("X-Remote-Group", "project-b")
                .json(
                    &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
                )
                .send()
                .await
                .expect("review"),
        )
        .await;
        assert_eq!(review.status, 201, "{}", review.text);
        assert_eq!(review.body["status"]["userInfo"]["username"], "alice");
        assert!(
            review.body["status"]["userInfo"]["groups"]
                .as_array()
                .is_some_and(|g| g.contains(&json!("project-b"))),
            "{}",
            review.text
        );
        // Without a user header the front proxy's connection authenticates nobody.
        let r = Resp::read(
            proxy
                .get(format!(
                    "{}{REGISTRY}/namespaces/project-b/clusters",
                    app.address
                ))
                .send()
                .await
                .expect("served"),
        )
        .await;
        assert_eq!(r.status, 401, "{}", r.text);

        // Forged headers: on a connection without a certificate, and with a certificate of the
        // right CA but a name not allowed, they are ignored: nobody is authenticated.
        let listing = format!("{REGISTRY}/namespaces/project-a/clusters");
        for (what, client) in [
            ("no certificate", p.client(None)),
            (
                "a name not allowed",
                p.client(Some((&p.request_header_ca, "mallory"))),
            ),
        ] {
            let r = forwarded(&app, &client, &listing, "alice", &["project-a"])
                .await
                .expect("served");
            assert_eq!(r.status, 401, "{what}: {}", r.text);
            assert_eq!(r.body["kind"], "Status", "{what}: {}", r.text);
            let r = forwarded(&app, &client, "/v1/clusters", "alice", &["project-a"])
                .await
                .expect("served");
            assert_eq!(r.status, 401, "{what} on /v1: {}", r.text);
        }
        // A certificate from another CA: the handshake itself is refused.
        let stranger = p.client(Some((&p.other_ca, "front-proxy-client")));
        let Err(err) = forwarded(&app, &stranger, &listing, "alice", &["project-a"]).await else {
            panic!("a certificate of another CA was served");
        };
        assert!(err.is_connect() || err.is_request(), "{err:?}");
    }
}

#[tokio::test]
async fn forwarded_groups_map_to_one_project_and_admin_groups_to_the_admin_role() {
    let p = Proxies::new();
    let app = spawn(&p, Backend::Sqlite, "ops-admins").await;
    let plain = p.client(None);
    register(&app, &plain, "project-a", "alpha").await;
    register(&app, &plain, "project-b", "beta").await;
    let proxy = p.client(Some((&p.request_header_ca, "aggregator")));

    // An admin group sees every project's clusters.
    let r = forwarded(
        &app,
        &proxy,
        &format!("{REGISTRY}/clusters"),
        "root",
        &["ops", "ops-admins"],
    )
    .await
    .expect("served");
    assert_eq!(r.status, 200, "{}", r.text);
    let mut all = names(&r);
    all.sort();
    assert_eq!(all, ["alpha", "beta"], "{}", r.text);
    // Two project groups: the caller acts in one project, so the request is refused.
    let r = forwarded(
        &app,
        &proxy,
        &format!("{REGISTRY}/namespaces/project-a/clusters"),
        "carol",
        &["project-a", "project-b"],
    )
    .await
    .expect("served");
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("acts in one project"), "{}", r.text);
}
