//! The aggregated deployment's delegated authorizer (`[front_proxy] authorization_mode =
//! subject_access_review`). No kube-apiserver can run here, so the test plays both of its
//! parts: its aggregation layer (a client presenting a front-proxy certificate of a
//! request-header CA made in the test, see `front_proxy.rs`), and its
//! `authorization.k8s.io/v1` `SubjectAccessReview` endpoint: an HTTPS server with a certificate
//! of a CA made in the test, which checks the service's bearer token, records every review and
//! answers by a table the test sets.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::front_proxy::{names, register, Proxies, REGISTRY, SECRET};
use crate::helpers::endpoints::{Ca, Endpoint};
use crate::helpers::jwt::hs256_settings;
use crate::helpers::{spawn_with, Backend, Resp, TestApp};

const TOKEN: &str = "service-account-token-of-fleetyard";
const LOCALHOST: [u8; 4] = [127, 0, 0, 1];

/// One row of the stand-in's table: `user` doing `verb` on `target` (a resource, or a path
/// for a non-resource request) in `namespace` ("" at the cluster scope).
#[derive(Clone)]
struct Rule {
    user: &'static str,
    verb: &'static str,
    target: &'static str,
    namespace: &'static str,
    allowed: bool,
    reason: &'static str,
}

fn allow(user: &'static str, verb: &'static str, target: &'static str, ns: &'static str) -> Rule {
    Rule {
        user,
        verb,
        target,
        namespace: ns,
        allowed: true,
        reason: "RBAC: allowed by ClusterRoleBinding \"fleet-readers\"",
    }
}

fn deny(user: &'static str, verb: &'static str, target: &'static str, ns: &'static str) -> Rule {
    Rule {
        user,
        verb,
        target,
        namespace: ns,
        allowed: false,
        reason: "no RBAC policy matched",
    }
}

/// The kube-apiserver's review endpoint, played by the test.
struct ReviewEndpoint {
    addr: SocketAddr,
    ca: Ca,
    reviews: Arc<Mutex<Vec<Value>>>,
    task: Option<JoinHandle<()>>,
}

/// A TLS configuration serving a certificate of `ca` for 127.0.0.1 that requires a client
/// certificate of `clients`.
fn requiring_client_certificates(ca: &Ca, clients: &Ca) -> Arc<ServerConfig> {
    let (cert, key) = ca.issue("127.0.0.1", &[IpAddr::from(LOCALHOST)], &[], false);
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(clients.pem.as_bytes()).expect("client CA"))
        .expect("root");
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .expect("verifier");
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(cert.as_bytes()).expect("certificate")],
            PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key"),
        )
        .expect("server configuration");
    Arc::new(config)
}

impl ReviewEndpoint {
    async fn start(table: Vec<Rule>) -> ReviewEndpoint {
        Self::start_with(table, None).await
    }

    /// With `clients`, the endpoint requires a client certificate of that CA instead of the
    /// token.
    async fn start_with(table: Vec<Rule>, clients: Option<&Ca>) -> ReviewEndpoint {
        let ca = Ca::new("kube-apiserver-test-ca");
        let listener = TcpListener::bind(SocketAddr::from((LOCALHOST, 0)))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let config = match clients {
            Some(clients) => requiring_client_certificates(&ca, clients),
            None => ca.server_config(IpAddr::from(LOCALHOST)),
        };
        let token_needed = clients.is_none();
        let acceptor = TlsAcceptor::from(config);
        let table = Arc::new(Mutex::new(table));
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let (t, r) = (table.clone(), reviews.clone());
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let (acceptor, t, r) = (acceptor.clone(), t.clone(), r.clone());
                        conns.spawn(async move {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                answer(tls, &t, &r, token_needed).await;
                            }
                        });
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
        });
        ReviewEndpoint {
            addr,
            ca,
            reviews,
            task: Some(task),
        }
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The reviews received so far (their specs).
    fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().expect("reviews").clone()
    }

    fn count(&self) -> usize {
        self.reviews.lock().expect("reviews").len()
    }

    /// Closes the listener: connections to the address are refused from now on.
    async fn stop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
    }
}

impl Drop for ReviewEndpoint {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// Reads one request and answers it: 401 without the service's token, 404 on another path,
/// else the review with the table's decision (no row: no opinion).
async fn answer<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut tls: S,
    table: &Mutex<Vec<Rule>>,
    reviews: &Mutex<Vec<Value>>,
    token_needed: bool,
) {
    let mut data = Vec::new();
    let mut buf = [0_u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tls.read(&mut buf).await {
            Ok(n) if n > 0 && data.len() < 64 * 1024 => data.extend_from_slice(&buf[..n]),
            _ => return,
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        match tls.read(&mut buf).await {
            Ok(n) if n > 0 => data.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
    let body: Value =
        serde_json::from_slice(&data[head_end..head_end + length]).unwrap_or_default();
    let authorized = !token_needed
        || head
            .lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}")));
    let request_line = head.lines().next().unwrap_or("");
    let (status, reply) = if !authorized {
        (
            "401 Unauthorized",
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Unauthorized", "code": 401}),
        )
    } else if request_line != "POST /apis/authorization.k8s.io/v1/subjectaccessreviews HTTP/1.1" {
        (
            "404 Not Found",
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
        )
    } else {
        let spec = body["spec"].clone();
        reviews.lock().expect("reviews").push(spec.clone());
        let (verb, target, namespace) = match spec.get("resourceAttributes") {
            Some(a) => (
                &a["verb"],
                &a["resource"],
                a["namespace"].as_str().unwrap_or(""),
            ),
            None => (
                &spec["nonResourceAttributes"]["verb"],
                &spec["nonResourceAttributes"]["path"],
                "",
            ),
        };
        let rule = table
            .lock()
            .expect("table")
            .iter()
            .find(|r| {
                spec["user"] == r.user
                    && *verb == r.verb
                    && *target == r.target
                    && namespace == r.namespace
            })
            .cloned();
        let status = match rule {
            Some(r) if r.allowed => json!({"allowed": true, "reason": r.reason}),
            Some(r) => json!({"allowed": false, "denied": true, "reason": r.reason}),
            None => json!({"allowed": false}),
        };
        (
            "201 Created",
            json!({"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null}, "spec": spec, "status": status}),
        )
    };
    let text = reply.to_string();
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = tls.write_all(response.as_bytes()).await;
    let _ = tls.shutdown().await;
}

/// The service behind the front proxy, reviewing at `url` with the given cache lifetimes.
async fn spawn(p: &Proxies, backend: Backend, url: &str, kube_ca: &Ca, ttl: (u64, u64)) -> TestApp {
    std::fs::write(p.path("kube-ca.pem"), &kube_ca.pem).expect("kube CA");
    std::fs::write(p.path("token"), format!("{TOKEN}\n")).expect("token");
    spawn_with(backend, |s| {
        hs256_settings(s, SECRET);
        s.api.enabled_ssl = true;
        s.api.ssl_cert_file = p.path("tls.crt");
        s.api.ssl_key_file = p.path("tls.key");
        s.front_proxy.client_ca_file = p.path("requestheader-ca.pem");
        s.front_proxy.allowed_names = "front-proxy-client".into();
        s.front_proxy.authorization_mode = "subject_access_review".into();
        s.front_proxy.kube_apiserver_url = url.into();
        s.front_proxy.kube_apiserver_ca_file = p.path("kube-ca.pem");
        s.front_proxy.kube_apiserver_token_file = p.path("token");
        s.front_proxy.authorization_allowed_ttl = ttl.0;
        s.front_proxy.authorization_denied_ttl = ttl.1;
        s.front_proxy.authorization_timeout = 1;
    })
    .await
}

/// A request forwarded as alice (uid, two groups, an extra) over `client`.
async fn as_alice(
    app: &TestApp,
    client: &reqwest::Client,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Resp {
    let mut r = client
        .request(method, format!("{}{path}", app.address))
        .header("X-Remote-User", "alice")
        .header("X-Remote-Uid", "u-alice")
        .header("X-Remote-Group", "developers")
        .header("X-Remote-Group", "system:authenticated")
        .header(
            "X-Remote-Extra-authentication.kubernetes.io%2fcredential-id",
            "X509SHA256=ab",
        );
    if let Some(b) = body {
        r = r
            .header("Content-Type", "application/merge-patch+json")
            .body(b.to_string());
    }
    Resp::read(r.send().await.expect("served")).await
}

async fn get_as_alice(app: &TestApp, client: &reqwest::Client, path: &str) -> Resp {
    as_alice(app, client, reqwest::Method::GET, path, None).await
}

fn table() -> Vec<Rule> {
    vec![
        allow("alice", "list", "clusters", "project-b"),
        allow("alice", "patch", "clusters", "project-a"),
        allow("alice", "list", "clusters", ""),
        allow("alice", "get", "/apis", ""),
        deny("alice", "get", "clusters", "project-a"),
    ]
}

#[tokio::test]
async fn each_forwarded_request_is_a_subject_access_review_whose_decision_is_cached() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let p = Proxies::new();
        let kube = ReviewEndpoint::start(table()).await;
        // Allowed decisions live 2 s, denied ones 60 s.
        let app = spawn(&p, backend, &kube.url(), &kube.ca, (2, 60)).await;
        let plain = p.client(None);
        register(&app, &plain, "project-a", "alpha").await;
        register(&app, &plain, "project-b", "beta").await;
        let proxy = p.client(Some((&p.request_header_ca, "front-proxy-client")));
        let b_list = format!("{REGISTRY}/namespaces/project-b/clusters");

        // Allowed: the review carries the forwarded user, uid, groups and extra, and the
        // request's attributes; the list is the namespace's.
        let r = get_as_alice(&app, &proxy, &b_list).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(names(&r), ["beta"], "{}", r.text);
        assert_eq!(
            kube.reviews(),
            [json!({"user": "alice", "uid": "u-alice",
                "groups": ["developers", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab"]},
                "resourceAttributes": {"group": "clusterregistry.k8s.io", "version": "v1alpha1",
                    "resource": "clusters", "namespace": "project-b", "verb": "list"}})]
        );
        // Cached: the same request again asks nothing.
        let r = get_as_alice(&app, &proxy, &b_list).await;
        assert_eq!(
            (r.status, names(&r)),
            (200, vec!["beta".to_string()]),
            "{}",
            r.text
        );
        assert_eq!(
            kube.count(),
            1,
            "an allowed decision is reused within its TTL"
        );

        // Denied: kube-apiserver's 403 Status with the reviewer's reason, cached too.
        let alpha = format!("{REGISTRY}/namespaces/project-a/clusters/alpha");
        for _ in 0..2 {
            let r = get_as_alice(&app, &proxy, &alpha).await;
            assert_eq!(r.status, 403, "{}", r.text);
            assert_eq!(
                (&r.body["kind"], &r.body["reason"], &r.body["code"]),
                (&json!("Status"), &json!("Forbidden"), &json!(403)),
                "{}",
                r.text
            );
            assert_eq!(
                r.body["message"],
                "clusters.clusterregistry.k8s.io \"alpha\" is forbidden: User \"alice\" cannot \
                 get resource \"clusters\" in API group \"clusterregistry.k8s.io\" in the \
                 namespace \"project-a\": no RBAC policy matched",
                "{}",
                r.text
            );
        }
        assert_eq!(
            kube.count(),
            2,
            "a denied decision is reused within its TTL"
        );

        // A write the review allows acts in the namespace it names (another project's).
        let r = as_alice(
            &app,
            &proxy,
            reqwest::Method::PATCH,
            &alpha,
            Some(json!({"metadata": {"labels": {"env": "prod"}}})),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["metadata"]["labels"]["env"], "prod", "{}", r.text);
        assert_eq!(
            kube.reviews()[2]["resourceAttributes"],
            json!({"group": "clusterregistry.k8s.io", "version": "v1alpha1",
                "resource": "clusters", "namespace": "project-a", "name": "alpha",
                "verb": "patch"})
        );

        // A list across namespaces the review allows sees every project.
        let r = get_as_alice(&app, &proxy, &format!("{REGISTRY}/clusters")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let mut all = names(&r);
        all.sort();
        assert_eq!(all, ["alpha", "beta"], "{}", r.text);

        // Discovery is a non-resource request; a path the table does not allow has no opinion,
        // which is a denial without a reason.
        let r = get_as_alice(&app, &proxy, "/apis").await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            kube.reviews()
                .last()
                .map(|s| s["nonResourceAttributes"].clone()),
            Some(json!({"path": "/apis", "verb": "get"}))
        );
        let r = get_as_alice(&app, &proxy, "/openapi/v3").await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert_eq!(
            r.body["message"], "forbidden: User \"alice\" cannot get path \"/openapi/v3\"",
            "{}",
            r.text
        );

        // /v1 has nothing to ask: a forwarded caller is refused there, without a review.
        let asked = kube.count();
        let r = get_as_alice(&app, &proxy, "/v1/clusters").await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert!(
            r.body["errors"][0]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("SubjectAccessReview")),
            "{}",
            r.text
        );
        // Forged headers (no certificate; a name not allowed) are ignored: nobody is
        // authenticated, and nothing is asked.
        for client in [
            p.client(None),
            p.client(Some((&p.request_header_ca, "mallory"))),
        ] {
            let r = get_as_alice(&app, &client, &b_list).await;
            assert_eq!(r.status, 401, "{}", r.text);
            assert_eq!(r.body["kind"], "Status", "{}", r.text);
        }
        assert_eq!(
            kube.count(),
            asked,
            "only a front proxy's callers are reviewed"
        );

        // Past the allowed TTL the same request is asked again; the denial is still cached.
        tokio::time::sleep(Duration::from_millis(2200)).await;
        let r = get_as_alice(&app, &proxy, &b_list).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            kube.count(),
            asked + 1,
            "an expired decision is asked again"
        );
        let r = get_as_alice(&app, &proxy, &alpha).await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert_eq!(kube.count(), asked + 1, "the denial's own TTL holds");
    }
}

#[tokio::test]
async fn without_an_answer_from_the_kube_apiserver_a_request_is_a_prompt_503() {
    let p = Proxies::new();
    let mut kube = ReviewEndpoint::start(table()).await;
    let app = spawn(&p, Backend::Sqlite, &kube.url(), &kube.ca, (60, 60)).await;
    register(&app, &p.client(None), "project-b", "beta").await;
    let proxy = p.client(Some((&p.request_header_ca, "front-proxy-client")));
    let b_list = format!("{REGISTRY}/namespaces/project-b/clusters");
    let r = get_as_alice(&app, &proxy, &b_list).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let unavailable = |r: &Resp, what: &str| {
        assert_eq!(r.status, 503, "{what}: {}", r.text);
        assert_eq!(r.body["kind"], "Status", "{what}: {}", r.text);
        assert_eq!(r.body["reason"], "ServiceUnavailable", "{what}: {}", r.text);
        assert!(
            r.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("SubjectAccessReview")),
            "{what}: {}",
            r.text
        );
    };

    // A token the kube-apiserver refuses (read again for each review): no decision.
    std::fs::write(p.path("token"), "a-token-it-does-not-know").expect("token");
    let r = get_as_alice(&app, &proxy, "/apis").await;
    unavailable(&r, "a refused token");
    std::fs::write(p.path("token"), TOKEN).expect("token");
    let r = get_as_alice(&app, &proxy, "/apis").await;
    assert_eq!(r.status, 200, "the token rotated back: {}", r.text);

    // The kube-apiserver gone: connections refused.
    kube.stop().await;
    let started = Instant::now();
    let r = get_as_alice(&app, &proxy, &format!("{REGISTRY}/clusters")).await;
    unavailable(&r, "refused connections");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // A decision had before still holds within its TTL.
    let r = get_as_alice(&app, &proxy, &b_list).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // A kube-apiserver that accepts connections and never answers: the timeout (1 s) bounds it.
    let silent = Endpoint::hanging(IpAddr::from(LOCALHOST)).await;
    let q = Proxies::new();
    let app = spawn(&q, Backend::Sqlite, &silent.url(), &kube.ca, (60, 60)).await;
    let proxy = q.client(Some((&q.request_header_ca, "front-proxy-client")));
    let started = Instant::now();
    let r = get_as_alice(&app, &proxy, &b_list).await;
    unavailable(&r, "a silent kube-apiserver");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(2),
        "answered after {took:?}"
    );
}

#[tokio::test]
async fn a_client_certificate_is_a_credential_for_the_reviews() {
    let p = Proxies::new();
    let clients = Ca::new("kube-apiserver-client-ca");
    let kube = ReviewEndpoint::start_with(table(), Some(&clients)).await;
    let (cert, key) = clients.issue("fleetyard", &[], &[], true);
    std::fs::write(p.path("kube-client.crt"), cert).expect("certificate");
    std::fs::write(p.path("kube-client.key"), key).expect("key");
    std::fs::write(p.path("kube-ca.pem"), &kube.ca.pem).expect("kube CA");
    let app = spawn_with(Backend::Sqlite, |s| {
        hs256_settings(s, SECRET);
        s.api.enabled_ssl = true;
        s.api.ssl_cert_file = p.path("tls.crt");
        s.api.ssl_key_file = p.path("tls.key");
        s.front_proxy.client_ca_file = p.path("requestheader-ca.pem");
        s.front_proxy.authorization_mode = "subject_access_review".into();
        s.front_proxy.kube_apiserver_url = kube.url();
        s.front_proxy.kube_apiserver_ca_file = p.path("kube-ca.pem");
        s.front_proxy.kube_apiserver_cert_file = p.path("kube-client.crt");
        s.front_proxy.kube_apiserver_key_file = p.path("kube-client.key");
        s.front_proxy.authorization_timeout = 1;
    })
    .await;
    register(&app, &p.client(None), "project-b", "beta").await;
    let proxy = p.client(Some((&p.request_header_ca, "front-proxy-client")));
    // The endpoint refuses any handshake without a certificate of its client CA: an answer
    // means the service presented one.
    let r = get_as_alice(
        &app,
        &proxy,
        &format!("{REGISTRY}/namespaces/project-b/clusters"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(names(&r), ["beta"], "{}", r.text);
    assert_eq!(kube.count(), 1);
}
