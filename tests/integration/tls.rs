//! The API over HTTPS (`[api] enabled_ssl`): served with a certificate from files made here
//! with rcgen, refused in plain HTTP, the certificate rotated on disk served on the next
//! connection, client certificates required with `ssl_client_ca_file`, dispatcher-made errors
//! still carrying Magnum's body over TLS, and the real kubectl sending its bearer token.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use fleetyard::config::{AuthStrategy, Settings};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::helpers::endpoints::Ca;
use crate::helpers::jwt::hs256 as jwt;
use crate::helpers::kubectl::kubectl_binary;
use crate::helpers::{spawn_with, Backend, Resp, TestApp};

const LOCALHOST: [u8; 4] = [127, 0, 0, 1];

/// A CA and the files `[api]` reads: a server certificate for 127.0.0.1 and localhost, its
/// key, and (to be named in `ssl_client_ca_file`) a client CA.
struct Files {
    dir: PathBuf,
    ca: Ca,
    client_ca: Ca,
}

impl Files {
    fn new() -> Files {
        let dir = std::env::temp_dir().join(format!("fy-tls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let files = Files {
            dir,
            ca: Ca::new("fleetyard-test-ca"),
            client_ca: Ca::new("fleetyard-client-ca"),
        };
        files.rotate("fleetyard-first");
        std::fs::write(files.path("client-ca.pem"), &files.client_ca.pem).expect("client CA");
        files
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes a new server certificate (named `name`) and key over the files; its PEM.
    fn rotate(&self, name: &str) -> String {
        let (cert, key) = self
            .ca
            .issue(name, &[IpAddr::from(LOCALHOST)], &["localhost"], false);
        // Key first, then the certificate: in between the server keeps the previous pair.
        std::fs::write(self.path("tls.key"), &key).expect("key");
        std::fs::write(self.path("tls.crt"), &cert).expect("certificate");
        cert
    }

    fn settings(&self, s: &mut Settings, client_ca: bool) {
        s.api.enabled_ssl = true;
        s.api.ssl_cert_file = self.path("tls.crt").display().to_string();
        s.api.ssl_key_file = self.path("tls.key").display().to_string();
        if client_ca {
            s.api.ssl_client_ca_file = self.path("client-ca.pem").display().to_string();
        }
    }

    /// A reqwest client trusting only the test CA, with a client certificate when given.
    fn client(&self, identity: Option<(String, String)>) -> reqwest::Client {
        let mut b = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(
                reqwest::Certificate::from_pem(self.ca.pem.as_bytes()).expect("CA"),
            );
        if let Some((cert, key)) = identity {
            b = b.identity(
                reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes()).expect("identity"),
            );
        }
        b.build().expect("client")
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The app over HTTPS on `backend`, its client trusting the test CA.
async fn spawn_tls(
    backend: Backend,
    files: &Files,
    client_ca: bool,
    tweak: impl FnOnce(&mut Settings),
) -> TestApp {
    let mut app = spawn_with(backend, |s| {
        files.settings(s, client_ca);
        tweak(s);
    })
    .await;
    assert!(
        app.address.starts_with("https://127.0.0.1:"),
        "{}",
        app.address
    );
    app.client = files.client(None);
    app
}

/// The certificate the server presents on a new connection.
async fn served_certificate(app: &TestApp, files: &Files) -> CertificateDer<'static> {
    let connector = tls_connector(files);
    let tcp = TcpStream::connect(app.address.trim_start_matches("https://"))
        .await
        .expect("connect");
    let tls = connector
        .connect(ServerName::IpAddress(IpAddr::from(LOCALHOST).into()), tcp)
        .await
        .expect("handshake");
    let (_, conn) = tls.get_ref();
    conn.peer_certificates().expect("a certificate")[0].clone()
}

/// The DER of a PEM certificate.
fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("a PEM certificate")
}

/// A TLS client trusting only the test CA.
fn tls_connector(files: &Files) -> tokio_rustls::TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(der(&files.ca.pem)).expect("CA");
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn https_with_the_ca_trusted_is_served_and_plain_http_to_the_port_is_refused() {
    let files = Files::new();
    let app = spawn_tls(Backend::Sqlite, &files, false, |_| {}).await;

    // HTTPS with the CA trusted: the API, with links made for https.
    let r = Resp::read(
        app.client
            .get(format!("{}/v1/", app.address))
            .headers(app.headers.clone())
            .send()
            .await
            .expect("https request"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let own = format!("{}/v1/", app.address);
    assert!(
        r.body["links"]
            .as_array()
            .is_some_and(|l| l.iter().any(|l| l["href"] == own.as_str())),
        "links start with https: {}",
        r.text
    );

    // A client that does not trust the CA fails the handshake.
    let untrusting = reqwest::Client::builder()
        .use_rustls_tls()
        .build()
        .expect("client");
    let err = untrusting
        .get(format!("{}/v1/", app.address))
        .send()
        .await
        .expect_err("an unknown issuer");
    assert!(err.is_connect(), "{err:?}");

    // Plain HTTP to the TLS port: a 400 saying so, in Magnum's body, and nothing served.
    let plain = app.address.replace("https://", "http://");
    let r = Resp::read(
        reqwest::Client::new()
            .get(format!("{plain}/v1/clustertemplates"))
            .headers(app.headers.clone())
            .send()
            .await
            .expect("an answer"),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["errors"][0]["status"], 400, "{}", r.text);
    assert_eq!(
        r.body["errors"][0]["detail"],
        "This port serves HTTPS: send the request over TLS (an https:// URL).",
        "{}",
        r.text
    );
    assert!(r.headers.get("x-openstack-request-id").is_some());
}

/// Errors actix-http's dispatcher answers itself get Magnum's body over TLS as well: the
/// connection wrapper sits on the TLS stream.
#[tokio::test]
async fn a_header_past_the_size_limit_gets_431_with_magnums_body_over_tls() {
    let files = Files::new();
    let app = spawn_tls(Backend::Sqlite, &files, false, |_| {}).await;
    let tcp = TcpStream::connect(app.address.trim_start_matches("https://"))
        .await
        .expect("connect");
    let mut tls = tls_connector(&files)
        .connect(ServerName::IpAddress(IpAddr::from(LOCALHOST).into()), tcp)
        .await
        .expect("handshake");
    let big = "a".repeat(129 * 1024);
    let head = format!("GET /v1/clustertemplates HTTP/1.1\r\nhost: x\r\nx-big: {big}\r\n\r\n");
    let _ = tls.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole answer");
    assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
    let body: Value = serde_json::from_str(body).expect("a JSON body");
    assert_eq!(body["errors"][0]["status"], 431, "{body}");
    assert!(
        body["errors"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("The request's headers are too large")),
        "{body}"
    );
}

#[tokio::test]
async fn a_certificate_rotated_on_disk_is_served_on_the_next_connection() {
    let files = Files::new();
    let first = std::fs::read_to_string(files.path("tls.crt")).expect("first");
    let app = spawn_tls(Backend::Sqlite, &files, false, |_| {}).await;
    assert_eq!(served_certificate(&app, &files).await, der(&first));

    let second = files.rotate("fleetyard-second");
    assert_ne!(der(&second), der(&first));
    assert_eq!(
        served_certificate(&app, &files).await,
        der(&second),
        "the next handshake uses the new certificate"
    );
    // And the service answers over it (a new client, so a new connection).
    let r = files
        .client(None)
        .get(format!("{}/v1/", app.address))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);

    // A broken file leaves the last good certificate in service.
    std::fs::write(
        files.path("tls.crt"),
        "-----BEGIN CERTIFICATE-----\nbroken\n",
    )
    .expect("write");
    assert_eq!(served_certificate(&app, &files).await, der(&second));
}

#[tokio::test]
async fn with_a_client_ca_only_clients_with_a_certificate_from_it_are_served() {
    let files = Files::new();
    let app = spawn_tls(Backend::Sqlite, &files, true, |_| {}).await;
    let get = |client: reqwest::Client| {
        let url = format!("{}/v1/clustertemplates", app.address);
        let headers = app.headers.clone();
        async move { client.get(url).headers(headers).send().await }
    };

    // No certificate: the handshake is refused, nothing is served.
    let err = get(files.client(None)).await.expect_err("no certificate");
    assert!(err.is_connect() || err.is_request(), "{err:?}");
    // A certificate from another CA (the server's own CA, not the client CA).
    let stranger = files.ca.issue("stranger", &[], &[], true);
    let err = get(files.client(Some(stranger)))
        .await
        .expect_err("another CA");
    assert!(err.is_connect() || err.is_request(), "{err:?}");
    // A certificate from the client CA.
    let member = files.client_ca.issue("member", &[], &[], true);
    let r = Resp::read(get(files.client(Some(member))).await.expect("served")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["clustertemplates"].is_array(), "{}", r.text);
}

/// kubectl against `auth_strategy = jwt` over HTTPS: with `certificate-authority-data` and a
/// `token` in its kubeconfig it sends the token, and a project's member creates and lists
/// their own clusters and nothing of another project's; a bad token gets kubectl's "You must
/// be logged in".
#[tokio::test]
async fn kubectl_over_https_sends_its_jwt_and_a_member_sees_only_their_own_clusters() {
    let Some(bin) = kubectl_binary() else { return };
    let secret = "kubectl-over-tls-secret";
    let files = Files::new();
    std::fs::write(files.path("jwt-secret"), secret).expect("secret");
    let app = spawn_tls(Backend::Postgres, &files, false, |s| {
        s.default.auth_strategy = AuthStrategy::Jwt;
        s.jwt.algorithms = "HS256".into();
        s.jwt.key_file = Some(files.path("jwt-secret"));
        s.jwt.audience = Some("fleetyard".into());
    })
    .await;
    let a = jwt(secret, "ua", "proj-a", &["member", "reader"]);
    let b = jwt(secret, "ub", "proj-b", &["member", "reader"]);

    // B's cluster, registered over HTTPS with B's token.
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&files.ca.pem);
    let base = "/apis/clusterregistry.k8s.io/v1alpha1";
    let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "theirs"},
        "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.9.0.2:6443"}],
            "caBundle": ca_bundle}}});
    let r = Resp::read(
        app.client
            .post(format!("{}{base}/namespaces/proj-b/clusters", app.address))
            .bearer_auth(&b)
            .json(&body)
            .send()
            .await
            .expect("post"),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);

    let kubeconfig = |token: &str| {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fy\n  cluster:\n    server: {}\n    \
             certificate-authority-data: {}\ncontexts:\n- name: fy\n  context: {{cluster: fy, \
             user: fy, namespace: proj-a}}\ncurrent-context: fy\nusers:\n- name: fy\n  user:\n    \
             token: {token}\n",
            app.address,
            base64::engine::general_purpose::STANDARD.encode(&files.ca.pem)
        )
    };
    let kubectl = |config: &str, args: &[&str]| {
        let path = files.path(&format!("kubeconfig-{}", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, config).expect("kubeconfig");
        let mut cmd = tokio::process::Command::new(&bin);
        cmd.arg("--kubeconfig")
            .arg(&path)
            .arg("--cache-dir")
            .arg(files.path("kube-cache"))
            .args(args)
            .env("HOME", &files.dir)
            .kill_on_drop(true);
        async move {
            let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
                .await
                .expect("kubectl finished within a minute")
                .expect("kubectl runs");
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };

    let manifest = files.path("mine.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: clusterregistry.k8s.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: mine\n\
             spec:\n  kubernetesApiEndpoints:\n    serverEndpoints:\n    - clientCIDR: 0.0.0.0/0\n\
             \x20     serverAddress: 10.9.0.1:6443\n    caBundle: {ca_bundle}\n"
        ),
    )
    .expect("manifest");
    let manifest = manifest.display().to_string();
    let (ok, out, err) = kubectl(&kubeconfig(&a), &["create", "-f", &manifest]).await;
    assert!(ok, "kubectl create failed:\n{out}\n{err}");
    assert_eq!(out.trim(), "cluster.clusterregistry.k8s.io/mine created");

    let (ok, out, err) = kubectl(&kubeconfig(&a), &["get", "clusters", "-A"]).await;
    assert!(ok, "kubectl get failed:\n{out}\n{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{out}");
    let columns: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(&columns[..2], &["proj-a", "mine"], "{out}");
    assert!(!out.contains("theirs") && !out.contains("proj-b"), "{out}");

    // The cluster is A's, created under A's identity.
    let r = Resp::read(
        app.client
            .get(format!(
                "{}{base}/namespaces/proj-a/clusters/mine",
                app.address
            ))
            .bearer_auth(&a)
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["namespace"], "proj-a", "{}", r.text);

    // A token signed with another secret: not honoured.
    let forged = jwt("another-secret", "ua", "proj-a", &["member", "reader"]);
    let (ok, out, err) = kubectl(&kubeconfig(&forged), &["get", "clusters", "-A"]).await;
    assert!(!ok, "a bad token must fail:\n{out}\n{err}");
    assert!(err.contains("You must be logged in to the server"), "{err}");
}
