//! `/v1/certificates` and `/v1/credentials` over HTTP, with the conductor driven in-process:
//! every cluster gets its CA before the driver runs, CSRs are signed under the subject policy
//! (privileged subjects for the cluster's project members and admins, as in Magnum, unless
//! the operator's policy restricts them; key types and sizes, validity cap), another project's
//! cluster is as unknown as a missing one, rotation replaces the CA, and no private key is
//! ever stored in clear, logged, notified or returned.

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetyard::certificates::{Certificates, KeyCipher, StoredKeyPair};
use fleetyard::conductor::Outcome;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::helpers::{
    at, cluster_as, cluster_path, complete_cluster_with, drain, events_of, fixture, spawn_pki,
    template_as, Api, Backend, Pki, TestApp,
};

const CERTS: &str = "/v1/certificates";

/// A completed cluster of `h`'s project (template with TLS); its uuid.
async fn tls_cluster(pki: &Pki, name: &str, labels: Value, h: &HeaderMap) -> String {
    complete_cluster_with(&pki.app, &pki.conductor, name, labels, h).await
}

fn one(ident: &str) -> String {
    cluster_path(ident)
}

fn der_of(pem: &str) -> Vec<u8> {
    let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("pem");
    assert_eq!(p.label, "CERTIFICATE");
    p.contents
}

/// Whether `cert_pem` is signed by the key of `ca_pem`.
fn chains_to(cert_pem: &str, ca_pem: &str) -> bool {
    let cert_der = der_of(cert_pem);
    let ca_der = der_of(ca_pem);
    let (_, cert) = X509Certificate::from_der(&cert_der).expect("cert");
    let (_, ca) = X509Certificate::from_der(&ca_der).expect("ca");
    cert.issuer() == ca.subject() && cert.verify_signature(Some(ca.public_key())).is_ok()
}

fn subject_of(cert_pem: &str) -> String {
    let der = der_of(cert_pem);
    let (_, cert) = X509Certificate::from_der(&der).expect("cert");
    cert.subject().to_string()
}

fn admin_of_a(app: &TestApp) -> HeaderMap {
    app.as_identity("project-a", "admin-a", "admin,member,reader")
}

fn csr_body(cluster: &str, csr: &str) -> Value {
    json!({"cluster_uuid": cluster, "csr": csr})
}

/// A fresh ECDSA P-256 CSR with the given subject (CN first).
fn ec_csr(cn: &str, org: Option<&str>) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut p = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, cn);
    if let Some(o) = org {
        dn.push(rcgen::DnType::OrganizationName, o);
    }
    p.distinguished_name = dn;
    p.serialize_request(&key).expect("csr").pem().expect("pem")
}

async fn raw_keypairs(app: &TestApp, cluster: &str) -> Vec<(String, String, String)> {
    let pool = sqlx::PgPool::connect(&app.db.url).await.expect("connect");
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT kind, certificate, private_key FROM x509keypair WHERE cluster_uuid = $1 ORDER BY id",
    )
    .bind(cluster)
    .fetch_all(&pool)
    .await
    .expect("rows");
    pool.close().await;
    rows
}

/// Log lines written on this thread (the conductor runs on the test's thread).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn a_cluster_gets_its_ca_before_the_driver_runs_and_no_private_key_is_stored_in_clear() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(logs.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    let uuid = tls_cluster(&pki, "k8s-ca", json!({}), &app.headers).await;
    drop(guard);

    let r = app.get_certificate(&uuid).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ca = r.body["pem"].as_str().expect("pem").to_string();
    assert_eq!(subject_of(&ca), "CN=k8s-ca");
    assert_eq!(r.body["cluster_uuid"], uuid.as_str());
    let links = r.body["links"].as_array().expect("links");
    assert_eq!(
        links[0]["href"],
        app.url(&format!("/v1/certificates/{uuid}"))
    );
    assert_eq!(links[1]["href"], app.url(&format!("/certificates/{uuid}")));
    assert_eq!(
        r.body.as_object().map(|o| o.len()),
        Some(3),
        "cluster_uuid, pem, links only: {}",
        r.text
    );
    for (t, cn) in [
        ("etcd", "CN=etcd-ca"),
        ("front_proxy", "CN=front-proxy-ca"),
        ("front-proxy", "CN=front-proxy-ca"),
        ("kubernetes", "CN=k8s-ca"),
    ] {
        let r = app.get(&format!("{CERTS}/{uuid}?ca_cert_type={t}")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(subject_of(r.body["pem"].as_str().expect("pem")), cn, "{t}");
    }

    // The raw rows: four key pairs, every private key sealed.
    let rows = raw_keypairs(app, &uuid).await;
    let kinds: Vec<&str> = rows.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(kinds, ["ca", "etcd_ca", "front_proxy_ca", "client"]);
    for (kind, cert, key) in &rows {
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{kind}");
        assert!(!key.contains("PRIVATE KEY"), "{kind} key stored in clear");
        assert!(!key.contains("BEGIN"), "{kind} key stored in clear");
        assert!(key.starts_with("fy-aes256gcm:"), "{kind}: {key}");
    }
    let client = &rows[3].1;
    assert_eq!(subject_of(client), "CN=admin, O=system:masters");
    assert!(
        chains_to(client, &ca),
        "the service's client certificate chains to the CA"
    );

    // Decrypting needs the key: the configured one opens them, another one does not.
    let stored: Vec<StoredKeyPair> = app
        .store
        .get_keypairs(&crate::helpers::id(&uuid))
        .await
        .expect("rows");
    let right = Certificates::from_settings(&pki.settings).expect("certificates");
    let opened = right
        .open(&stored[0])
        .expect("opens with the configured key");
    assert!(opened.expose().contains("BEGIN PRIVATE KEY"));
    let wrong = Certificates::new(
        Some(Arc::new(
            KeyCipher::from_bytes(&[7; 32], "other").expect("key"),
        )),
        pki.settings.certificates.clone(),
    );
    let err = wrong
        .open(&stored[0])
        .expect_err("another key cannot open it");
    assert!(
        err.to_string().contains("restore the original key file"),
        "{err}"
    );
    let none = Certificates::new(None, pki.settings.certificates.clone());
    let err = none.open(&stored[0]).expect_err("no key");
    assert!(err.to_string().contains("[certificates] key_file"), "{err}");

    // Nothing secret in the notifications or the conductor's log.
    let events = app.store.pending_events(10_000).await.expect("events");
    assert!(!events.is_empty());
    let key_text = opened.expose().to_string();
    let body_of_key: String = key_text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    for e in &events {
        let text = e.message.to_string();
        assert!(!text.contains("PRIVATE KEY"), "{}", e.event_type);
        assert!(!text.contains("fy-aes256gcm"), "{}", e.event_type);
        assert!(!text.contains(&body_of_key[..40]), "{}", e.event_type);
    }
    let logged = String::from_utf8(logs.0.lock().expect("lock").clone()).expect("utf8");
    assert!(
        logged.contains("made the cluster's CAs and client certificate"),
        "the conductor made the CA: {logged}"
    );
    assert!(!logged.contains("PRIVATE KEY"), "{logged}");
    assert!(!logged.contains("fy-aes256gcm"), "{logged}");
    assert!(!logged.contains(&body_of_key[..40]), "{logged}");
}

#[tokio::test]
async fn a_member_has_the_cluster_config_subject_signed_as_in_magnum() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-priv", json!({}), &app.headers).await;
    let ca = app.get_certificate(&uuid).await.body["pem"]
        .as_str()
        .expect("pem")
        .to_string();
    // What `openstack coe cluster config` and Horizon's Get Cluster Config send, as the member
    // who created the cluster: CN=admin, O=system:masters, RSA-2048. Magnum signs it, and so
    // does the default certificate:create_privileged (the cluster's project members and admins).
    let admin_csr = fixture("admin-system-masters-rsa2048.csr");
    let r = app.sign_certificate(&csr_body(&uuid, &admin_csr)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["csr"], admin_csr.as_str());
    assert_eq!(r.body["cluster_uuid"], uuid.as_str());
    let pem = r.body["pem"].as_str().expect("pem");
    assert_eq!(subject_of(pem), "CN=admin, O=system:masters");
    assert!(chains_to(pem, &ca));
    assert!(!r.text.contains("PRIVATE KEY"));
    // Every privileged group and system: user, for another member of the project too.
    let colleague = app.as_identity("project-a", "user-a2", "member,reader");
    for (cn, group, subject) in [
        ("system:node:n1", "dev", "CN=system:node:n1, O=dev"),
        (
            "mallory",
            "kubeadm:cluster-admins",
            "CN=mallory, O=kubeadm:cluster-admins",
        ),
        ("mallory", "system:nodes", "CN=mallory, O=system:nodes"),
    ] {
        let r = app
            .with_headers(&colleague)
            .sign_certificate(&csr_body(&uuid, &ec_csr(cn, Some(group))))
            .await;
        assert_eq!(r.status, 201, "{subject}: {}", r.text);
        let pem = r.body["pem"].as_str().expect("pem");
        assert_eq!(subject_of(pem), subject);
        assert!(chains_to(pem, &ca), "{subject}");
    }
    // An admin of the project, too.
    let r = app
        .with_headers(&admin_of_a(app))
        .sign_certificate(&csr_body(&uuid, &admin_csr))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        subject_of(r.body["pem"].as_str().expect("pem")),
        "CN=admin, O=system:masters"
    );
    // A reader of the project may not sign it: certificate:create refuses first.
    let reader = app.as_identity("project-a", "user-r", "reader");
    let r = app
        .with_headers(&reader)
        .sign_certificate(&csr_body(&uuid, &admin_csr))
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow certificate:create to be performed.",
    );
    // The other CSR checks still hold for privileged subjects: the key (RSA-1024 is refused).
    let r = app
        .sign_certificate(&csr_body(&uuid, &fixture("bob-rsa1024.csr")))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
}

#[tokio::test]
async fn an_operator_can_restrict_privileged_subjects_to_admins() {
    let dir = std::env::temp_dir().join(format!("fy-policy-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("policy.yaml");
    std::fs::write(
        &path,
        "\"certificate:create_privileged\": \"rule:context_is_admin\"\n",
    )
    .expect("write policy");
    let pki = spawn_pki(Backend::Postgres, |s| {
        s.oslo_policy.policy_file = Some(path)
    })
    .await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-tight", json!({}), &app.headers).await;
    let ca = app.get_certificate(&uuid).await.body["pem"]
        .as_str()
        .expect("pem")
        .to_string();
    let admin_csr = fixture("admin-system-masters-rsa2048.csr");
    let r = app.sign_certificate(&csr_body(&uuid, &admin_csr)).await;
    r.assert_error(
        403,
        "The CSR subject names the privileged group system:masters (O=system:masters), which only callers allowed certificate:create_privileged may have signed.",
    );
    let r = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("system:node:n1", Some("dev"))))
        .await;
    r.assert_error(
        403,
        "The CSR subject names the privileged user system:node:n1 (CN starting with system:), which only callers allowed certificate:create_privileged may have signed.",
    );
    for group in ["kubeadm:cluster-admins", "system:nodes"] {
        let r = app
            .sign_certificate(&csr_body(&uuid, &ec_csr("mallory", Some(group))))
            .await;
        r.assert_error(
            403,
            &format!("The CSR subject names the privileged group {group} (O={group}), which only callers allowed certificate:create_privileged may have signed."),
        );
    }
    // The member still has ordinary subjects signed; an admin has the privileged one signed.
    let r = app
        .sign_certificate(&csr_body(&uuid, &fixture("dave-rsa2048.csr")))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        subject_of(r.body["pem"].as_str().expect("pem")),
        "CN=dave, O=developers"
    );
    let r = app
        .with_headers(&admin_of_a(app))
        .sign_certificate(&csr_body(&uuid, &admin_csr))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let pem = r.body["pem"].as_str().expect("pem");
    assert_eq!(subject_of(pem), "CN=admin, O=system:masters");
    assert!(chains_to(pem, &ca));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn ordinary_subjects_are_signed_for_any_member_and_readers_only_read() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-priv", json!({}), &app.headers).await;
    // An ordinary subject is signed for a member, by name too, and another member of the
    // project (not the cluster's creator) may do it: access follows the project.
    let colleague = app.as_identity("project-a", "user-a2", "member,reader");
    let r = app
        .with_headers(&colleague)
        .sign_certificate(&csr_body("k8s-priv", &fixture("dave-rsa2048.csr")))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        subject_of(r.body["pem"].as_str().expect("pem")),
        "CN=dave, O=developers"
    );
    assert!(r.body.get("ca_cert_type").is_none());
    let r = app.get_as(&format!("{CERTS}/k8s-priv"), &colleague).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A reader may read the CA but not sign.
    let reader = app.as_identity("project-a", "user-r", "reader");
    assert_eq!(
        app.with_headers(&reader)
            .get_certificate(&uuid)
            .await
            .status,
        200
    );
    let r = app
        .with_headers(&reader)
        .sign_certificate(&csr_body(&uuid, &ec_csr("erin", None)))
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow certificate:create to be performed.",
    );

    // ca_cert_type picks the CA and is echoed.
    let etcd = app
        .get(&format!("{CERTS}/{uuid}?ca_cert_type=etcd"))
        .await
        .body["pem"]
        .as_str()
        .expect("pem")
        .to_string();
    let r = app
        .sign_certificate(&json!({"cluster_uuid": uuid, "csr": ec_csr("etcd-client", None), "ca_cert_type": "etcd"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["ca_cert_type"], "etcd");
    assert!(chains_to(r.body["pem"].as_str().expect("pem"), &etcd));
}

#[tokio::test]
async fn another_projects_cluster_is_404_like_an_unknown_one() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-a", json!({}), &app.headers).await;
    let other = app.project_b();
    let csr = ec_csr("bob", None);
    let r = app
        .with_headers(&other)
        .sign_certificate(&csr_body(&uuid, &csr))
        .await;
    r.assert_error(404, &format!("Cluster {uuid} could not be found."));
    let missing = uuid::Uuid::new_v4().to_string();
    let r = app
        .with_headers(&other)
        .sign_certificate(&csr_body(&missing, &csr))
        .await;
    r.assert_error(404, &format!("Cluster {missing} could not be found."));
    let r = app
        .with_headers(&other)
        .sign_certificate(&csr_body("k8s-a", &csr))
        .await;
    r.assert_error(404, "Cluster k8s-a could not be found.");
    let r = app.with_headers(&other).get_certificate(&uuid).await;
    r.assert_error(404, &format!("Cluster {uuid} could not be found."));
    let r = app
        .patch_as(&format!("{CERTS}/{uuid}"), &json!(null), &other)
        .await;
    r.assert_error(404, &format!("Cluster {uuid} could not be found."));
    // Certificates are project-scoped for admins too (as in Magnum).
    let foreign_admin = app.as_identity("project-b", "admin-b", "admin,member,reader");
    let r = app
        .with_headers(&foreign_admin)
        .sign_certificate(&csr_body(&uuid, &csr))
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
}

#[tokio::test]
async fn malformed_csrs_and_unsupported_keys_are_400_with_a_sentence() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-bad", json!({}), &app.headers).await;
    let accepted =
        "Accepted keys: RSA of 2048 to 8192 bits, ECDSA on P-256, ECDSA on P-384, Ed25519.";
    let cases = [
        (
            "not a csr".to_string(),
            "Received invalid csr: it is not a PEM-encoded certificate request.".to_string(),
        ),
        (
            fixture("bob-rsa1024.csr"),
            format!("The CSR's key is not accepted: RSA of 1024 bits. {accepted}"),
        ),
        (
            fixture("carol-p521.csr"),
            format!("The CSR's key is not accepted: ECDSA on curve 1.3.132.0.35. {accepted}"),
        ),
        (
            ec_csr("", None).replace("CERTIFICATE REQUEST", "CERTIFICATE"),
            "Received invalid csr: expected a PEM block of type CERTIFICATE REQUEST, got CERTIFICATE."
                .to_string(),
        ),
    ];
    for (csr, detail) in cases {
        let r = app.sign_certificate(&csr_body(&uuid, &csr)).await;
        r.assert_error(400, &detail);
    }
    // A CSR whose signature does not match its key (one byte of the signature flipped).
    let good = ec_csr("frank", None);
    let (_, pem) = x509_parser::pem::parse_x509_pem(good.as_bytes()).expect("pem");
    let mut der = pem.contents.clone();
    let last = der.len() - 3;
    der[last] ^= 0x01;
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(&der);
    let tampered = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        body
    );
    let r = app.sign_certificate(&csr_body(&uuid, &tampered)).await;
    r.assert_error(
        400,
        "Received invalid csr: its signature does not verify with its own key.",
    );
    // Body validation: missing fields and unknown attributes.
    let r = app.sign_certificate(&json!({"cluster_uuid": uuid})).await;
    r.assert_error(
        400,
        "Invalid input for field/attribute csr. Value: 'None'. Mandatory field missing.",
    );
    let r = app
        .sign_certificate(&json!({"cluster_uuid": uuid, "csr": good, "bay_uuid": uuid}))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
}

#[tokio::test]
async fn key_types_the_operator_did_not_allow_are_refused() {
    let pki = spawn_pki(Backend::Postgres, |s| {
        s.certificates.allowed_key_types = "rsa".into();
        s.certificates.min_rsa_key_bits = 3072;
    })
    .await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-rsa", json!({}), &app.headers).await;
    let r = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("h", None)))
        .await;
    r.assert_error(
        400,
        "The CSR's key is not accepted: ECDSA on P-256. Accepted keys: RSA of 3072 to 8192 bits.",
    );
    let r = app
        .sign_certificate(&csr_body(&uuid, &fixture("dave-rsa2048.csr")))
        .await;
    r.assert_error(
        400,
        "The CSR's key is not accepted: RSA of 2048 bits. Accepted keys: RSA of 3072 to 8192 bits.",
    );
}

#[tokio::test]
async fn signed_certificates_are_valid_no_longer_than_the_configured_maximum() {
    let pki = spawn_pki(Backend::Postgres, |s| s.certificates.max_validity_days = 30).await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-days", json!({}), &app.headers).await;
    let r = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("ivan", None)))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let der = der_of(r.body["pem"].as_str().expect("pem"));
    let (_, cert) = X509Certificate::from_der(&der).expect("cert");
    let now = chrono::Utc::now().timestamp();
    let left = cert.validity().not_after.timestamp() - now;
    assert!(left <= 30 * 86_400 && left > 29 * 86_400, "{left} seconds");
    assert!(cert.validity().not_before.timestamp() <= now);
    // And never past the CA: with a CA of 10 days, a 30-day request ends with the CA.
    let pki = spawn_pki(Backend::Postgres, |s| {
        s.certificates.max_validity_days = 30;
        s.certificates.ca_validity_days = 10;
    })
    .await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-short", json!({}), &app.headers).await;
    let r = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("judy", None)))
        .await;
    let der = der_of(r.body["pem"].as_str().expect("pem"));
    let (_, cert) = X509Certificate::from_der(&der).expect("cert");
    let left = cert.validity().not_after.timestamp() - chrono::Utc::now().timestamp();
    assert!(left <= 10 * 86_400, "{left} seconds");
}

#[tokio::test]
async fn after_rotation_signatures_chain_to_the_new_ca_and_the_old_ca_is_gone() {
    // One transient failure per operation: the create and the rotation each run twice, and
    // the retry must not make the CA again.
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let t = template_as(app, "rot-tpl", json!({}), &app.headers).await;
    let uuid = cluster_as(
        app,
        json!({"name": "k8s-rot", "cluster_template_id": t, "labels": {"fake_transient_failures": "1"}}),
        &app.headers,
    )
    .await;
    let c = &pki.conductor;
    assert!(matches!(
        c.try_execute_one().await.expect("job"),
        Outcome::Retried { .. }
    ));
    let first = app.get_certificate(&uuid).await.body["pem"].clone();
    assert!(
        first.is_string(),
        "the CA exists before the driver succeeded"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    drain(c).await;
    let old = app.get_certificate(&uuid).await.body["pem"]
        .as_str()
        .expect("pem")
        .to_string();
    assert_eq!(first, old, "the retried create kept its CA");
    let before = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("kim", None)))
        .await;
    assert!(chains_to(before.body["pem"].as_str().expect("pem"), &old));

    // The CLI sends no body, with Content-Type application/octet-stream.
    let r = app
        .send(
            app.client
                .patch(app.url(&format!("{CERTS}/{uuid}")))
                .headers(app.headers.clone())
                .header("content-type", "application/octet-stream"),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, json!({"uuid": uuid}));
    let shown = app.get_as(&one(&uuid), &at(&app.headers, "latest")).await;
    assert_eq!(shown.body["status"], "UPDATE_IN_PROGRESS");
    // A second rotation while one is under way is refused.
    let r = app.rotate_ca(&uuid).await;
    r.assert_error(
        400,
        "Rotating the CA certificate of a cluster when status is \"UPDATE_IN_PROGRESS\" is not supported.",
    );
    assert!(matches!(
        c.try_execute_one().await.expect("job"),
        Outcome::Retried { .. }
    ));
    let rotated = app.get_certificate(&uuid).await.body["pem"].clone();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    drain(c).await;
    let shown = app.get_as(&one(&uuid), &at(&app.headers, "latest")).await;
    assert_eq!(shown.body["status"], "UPDATE_COMPLETE", "{}", shown.text);
    let new = app.get_certificate(&uuid).await.body["pem"]
        .as_str()
        .expect("pem")
        .to_string();
    assert_eq!(rotated, json!(new), "the retried rotation kept its new CA");
    assert_ne!(new, old, "the CA was replaced");
    for t in ["kubernetes", "etcd", "front_proxy"] {
        let r = app.get(&format!("{CERTS}/{uuid}?ca_cert_type={t}")).await;
        assert_ne!(r.body["pem"], json!(old), "{t}");
    }
    let after = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("kim", None)))
        .await;
    let pem = after.body["pem"].as_str().expect("pem");
    assert!(chains_to(pem, &new), "new signatures chain to the new CA");
    assert!(!chains_to(pem, &old), "and not to the old one");
    let rows = raw_keypairs(app, &uuid).await;
    assert_eq!(rows.len(), 4, "the old key pairs are gone");
    assert!(rows.iter().all(|(_, cert, _)| *cert != old));
    assert!(
        chains_to(&rows[3].1, &new),
        "the client certificate was renewed too"
    );
    // The rotation was announced like any update.
    let events = events_of(app, &uuid).await;
    let updates: Vec<_> = events
        .iter()
        .filter(|(t, _, _)| t.ends_with("cluster.update"))
        .map(|(_, o, _)| o.as_str())
        .collect();
    assert_eq!(updates, ["pending", "success"]);
}

#[tokio::test]
async fn rotation_is_refused_for_non_tls_and_busy_clusters() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let t = template_as(app, "notls", json!({"tls_disabled": true}), &app.headers).await;
    let plain = cluster_as(
        app,
        json!({"name": "plain", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let r = app.rotate_ca(&plain).await;
    r.assert_error(
        400,
        "Rotating the CA certificate on a non-TLS cluster is not supported.",
    );
    let t = template_as(app, "tls", json!({}), &app.headers).await;
    let busy = cluster_as(
        app,
        json!({"name": "busy", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let r = app.rotate_ca(&busy).await;
    r.assert_error(
        400,
        "Rotating the CA certificate of a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
    );
    // Before the conductor made it, the cluster has no CA to show.
    let r = app.get_certificate(&busy).await;
    r.assert_error(
        409,
        "Cluster busy has no CA certificate yet: the conductor makes it when it starts creating the cluster.",
    );
    let reader = app.as_identity("project-a", "user-r", "reader");
    drain(&pki.conductor).await;
    let r = app
        .patch_as(&format!("{CERTS}/{busy}"), &json!(null), &reader)
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow certificate:rotate_ca to be performed.",
    );
}

#[tokio::test]
async fn credential_rotation_needs_1_12_and_renews_the_services_client_certificate() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let uuid = tls_cluster(&pki, "k8s-cred", json!({}), &app.headers).await;
    let r = app.at("1.11").rotate_credentials(&uuid).await;
    r.assert_framework_error(406);
    let client_before = raw_keypairs(app, &uuid).await[3].1.clone();
    let r = app.at("1.12").rotate_credentials(&uuid).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, json!({"uuid": uuid}));
    let outcomes = drain(&pki.conductor).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Completed { .. }]),
        "{outcomes:?}"
    );
    let shown = app.get_as(&one(&uuid), &at(&app.headers, "latest")).await;
    assert_eq!(shown.body["status"], "CREATE_COMPLETE", "no status change");
    let rows = raw_keypairs(app, &uuid).await;
    let ca = rows[0].1.clone();
    assert_ne!(
        rows[3].1, client_before,
        "the client certificate was renewed"
    );
    assert!(chains_to(&rows[3].1, &ca));
    // By name, and the CLI's PATCH with Content-Type application/json and no body.
    let r = app
        .send(
            app.client
                .patch(app.url("/v1/credentials/k8s-cred"))
                .headers(at(&app.headers, "latest"))
                .header("content-type", "application/json"),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&pki.conductor).await;
    // Wrong state, another project, a reader.
    let t = template_as(app, "cred-tpl", json!({}), &app.headers).await;
    let busy = cluster_as(
        app,
        json!({"name": "cred-busy", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let r = app.at("latest").rotate_credentials(&busy).await;
    r.assert_error(
        400,
        "Rotating the credential of a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
    );
    let r = app
        .with_headers(&app.project_b())
        .at("latest")
        .rotate_credentials(&uuid)
        .await;
    r.assert_error(404, &format!("Cluster {uuid} could not be found."));
    let reader = app.as_identity("project-a", "user-r", "reader");
    let r = app
        .with_headers(&reader)
        .at("latest")
        .rotate_credentials(&uuid)
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow credential:rotate to be performed.",
    );
}

#[tokio::test]
async fn the_embedded_default_keeps_its_key_beside_the_sqlite_database() {
    let pki = spawn_pki(Backend::Sqlite, |_| {}).await;
    let app = &pki.app;
    let db = app.db.url.trim_start_matches("sqlite://").to_string();
    let key = std::path::Path::new(&db).with_file_name("certificates.key");
    assert!(key.exists(), "{} was generated", key.display());
    let uuid = tls_cluster(&pki, "k8s-lite", json!({}), &app.headers).await;
    let r = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("lee", None)))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let pool = sqlx::SqlitePool::connect(&app.db.url)
        .await
        .expect("connect");
    let keys: Vec<String> = sqlx::query_scalar("SELECT private_key FROM x509keypair")
        .fetch_all(&pool)
        .await
        .expect("rows");
    pool.close().await;
    assert_eq!(keys.len(), 4);
    assert!(keys.iter().all(|k| !k.contains("PRIVATE KEY")));
    // Without the key file nothing decrypts, and the error says why.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&key)
        .expect("key");
    f.write_all(b"not base64!").expect("write");
    let err = Certificates::from_settings(&pki.settings).expect_err("unusable key");
    assert!(err.contains("is not base64"), "{err}");
}

/// Runs `fleetyard <role>` against `db_url` without `[certificates] key_file` until it exits.
async fn run_without_key_file(role: &str, db_url: &str) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetyard"))
        .arg(role)
        .env("FLEETYARD__DATABASE__CONNECTION", db_url)
        .env("FLEETYARD__DATABASE__AUTO_MIGRATE", "false")
        .env("FLEETYARD__API__HOST", "127.0.0.1")
        .env("FLEETYARD__API__PORT", "0")
        .env_remove("FLEETYARD__CERTIFICATES__KEY_FILE")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("fleetyard runs")
}

/// On PostgreSQL without `[certificates] key_file`, no cluster could ever get a CA: a conductor
/// (alone or in `serve`) refuses to start with a line naming the setting and a non-zero exit,
/// and every certificate answer about a cluster made without a CA names the setting too.
#[tokio::test]
async fn without_a_key_file_on_postgresql_a_conductor_refuses_to_start_and_certificate_answers_name_the_setting(
) {
    let app = crate::helpers::spawn_with(Backend::Postgres, crate::helpers::instant_settings).await;
    for role in ["conductor", "serve"] {
        let out = run_without_key_file(role, &app.db.url).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{role}: {stderr}");
        assert!(
            stderr.contains(
                "a conductor cannot start: certificates are unavailable: [certificates] key_file is not set (required with PostgreSQL)"
            ),
            "{role}: {stderr}"
        );
    }

    // A cluster made by a conductor without the key (as an earlier release did) has no CA.
    let uuid = crate::helpers::complete_cluster_as(&app, "no-ca", &app.headers).await;
    let r = app.get_certificate(&uuid).await;
    let missing = format!(
        "Cluster no-ca has no CA certificate, and none can be made: this service has no [certificates] key_file (required with PostgreSQL); an operator must set it in every API and conductor process, then the cluster's CA can be rotated (PATCH /v1/certificates/{uuid}) to make one."
    );
    r.assert_error(409, &missing);
    let r = app
        .sign_certificate(&csr_body(&uuid, &ec_csr("ann", None)))
        .await;
    r.assert_error(409, &missing);
    let r = app.rotate_ca(&uuid).await;
    r.assert_error(
        503,
        "Certificates are unavailable: the service has no [certificates] key_file to decrypt private keys with; an operator must configure it.",
    );
}
