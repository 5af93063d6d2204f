//! The conductor's active health prober against real local HTTPS endpoints (one loopback
//! address each, certificates signed by the cluster's CA): its detection bound when an
//! endpoint stops or hangs and when it returns, one notification per change and none
//! otherwise, the `/healthz` fallback and CA-only trust, counters kept in the table on both
//! backends, several conductors sharing a round, 10,000 clusters, a tenth of them hanging,
//! each probed once in one round (how long that takes is a figure of `./tox.sh bench`), and
//! that an address outside `[health_probe] allowed_networks` is never connected to.
//!
//! The endpoints live on loopback addresses, which the default networks refuse: [`fast`]
//! allows the blocks these tests use, and only those.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fleetyard::certificates::{self, Certificates, KeyPairKind};
use fleetyard::conductor::{probe, Conductor, ProbeTarget};
use fleetyard::config::{HealthProbeSection, Settings};
use fleetyard::domain::health_probe::{AddressPolicy, ProbeFailure, DEFAULT_ALLOWED_NETWORKS};
use fleetyard::domain::status::HealthStatus;
use fleetyard::domain::ClusterId;
use fleetyard::store::Write;
use serde_json::json;

use crate::helpers::endpoints::{loopback, Ca, Endpoint, Mode};
use crate::helpers::{
    complete_cluster_with, conductor_from, spawn_pki, template_as, Api, Backend, Pki, TestApp,
};

/// The loopback blocks (`127.<block>.0.0/16`) these tests put endpoints in: allowed by
/// [`fast`], more specific than the default denied `127.0.0.0/8`. Any other loopback address
/// stays refused.
const ENDPOINT_BLOCKS: [u8; 7] = [31, 32, 33, 34, 35, 36, 41];

/// Short settings for the bound tests: a round a second, half a second per probe; the default
/// networks and the loopback blocks of [`ENDPOINT_BLOCKS`] allowed.
fn fast() -> HealthProbeSection {
    let blocks: Vec<String> = ENDPOINT_BLOCKS
        .iter()
        .map(|b| format!("127.{b}.0.0/16"))
        .collect();
    HealthProbeSection {
        enabled: true,
        interval: 1,
        timeout: 0.5,
        concurrency: 16,
        failure_threshold: 3,
        success_threshold: 1,
        drivers: "fake".into(),
        allowed_networks: format!("{DEFAULT_ALLOWED_NETWORKS}, {}", blocks.join(", ")),
        ..HealthProbeSection::default()
    }
}

fn policy() -> AddressPolicy {
    fast().address_policy().expect("valid networks")
}

/// What the round's timing, the database and a loaded machine may add to a bound.
const SLACK: Duration = Duration::from_millis(1000);

fn cluster_id(uuid: &str) -> ClusterId {
    ClusterId(uuid::Uuid::parse_str(uuid).expect("uuid"))
}

/// A cluster made through `/v1` and completed by the conductor, its CA (with the private key
/// in clear, to sign endpoint certificates) and an endpoint at `ip` in `mode` its
/// `api_address` points to.
async fn probed_cluster(pki: &Pki, name: &str, ip: [u8; 4], mode: Mode) -> (String, Endpoint) {
    let h = pki.app.admin();
    let uuid = complete_cluster_with(&pki.app, &pki.conductor, name, json!({}), &h).await;
    let rows = pki
        .app
        .store
        .get_keypairs(&cluster_id(&uuid))
        .await
        .expect("key pairs");
    let ca_row = certificates::find(&rows, KeyPairKind::Ca).expect("the cluster has a CA");
    let key = Certificates::from_settings(&pki.settings)
        .expect("certificates")
        .open(ca_row)
        .expect("the CA key opens");
    let ca = Ca::from_pem(&ca_row.certificate, key.expose());
    let endpoint = Endpoint::start(ip.into(), &ca, mode).await;
    point_at(&pki.app, &uuid, &endpoint.url()).await;
    (uuid, endpoint)
}

/// Sets the cluster's `api_address` with a store write (no notification).
async fn point_at(app: &TestApp, uuid: &str, url: &str) {
    let mut c = app
        .store
        .find_cluster(&cluster_id(uuid))
        .await
        .expect("read")
        .expect("cluster");
    c.api_address = Some(url.to_string());
    app.store
        .commit(&[Write::update_cluster(&c)])
        .await
        .expect("api_address written");
}

async fn health_of(app: &TestApp, uuid: &str) -> (Option<HealthStatus>, String) {
    let c = app
        .store
        .find_cluster(&cluster_id(uuid))
        .await
        .expect("read")
        .expect("cluster");
    let reason = c
        .health_status_reason
        .get("api")
        .cloned()
        .unwrap_or_default();
    (c.health_status, reason)
}

/// Waits until the cluster has `want`; how long that took (panics past `limit` + 5 s).
async fn wait_for(app: &TestApp, uuid: &str, want: HealthStatus, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        if health_of(app, uuid).await.0 == Some(want) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit + Duration::from_secs(5),
            "{uuid} never became {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `magnum.cluster.update` notifications of the cluster in the outbox.
async fn updates(app: &TestApp, uuid: &str) -> usize {
    crate::helpers::events_of(app, uuid)
        .await
        .iter()
        .filter(|(t, _, _)| t == "magnum.cluster.update")
        .count()
}

/// A prober over the app's store with `probe` settings, running its loop until dropped.
struct Prober(tokio::task::JoinHandle<()>);

impl Drop for Prober {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn start_prober(app: &TestApp, s: &Settings, probe: HealthProbeSection) -> Prober {
    let c = Arc::new(conductor_from(app, s).with_health_probe(probe));
    Prober(tokio::spawn(async move { c.health_probe_loop().await }))
}

/// The down/up cycle of one endpoint: up → HEALTHY; `outage` → UNHEALTHY within
/// `interval * failure_threshold + timeout` (and not before the threshold allows); up again →
/// HEALTHY within `interval * success_threshold + timeout`; one notification per change.
async fn detection_cycle(outage: Mode, ip: [u8; 4], reason: &str) {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let (uuid, mut endpoint) = probed_cluster(&pki, "probed", ip, Mode::Ready).await;
    let p = fast();
    let _prober = start_prober(&pki.app, &pki.settings, p.clone());

    let took = wait_for(&pki.app, &uuid, HealthStatus::Healthy, p.recovery_bound()).await;
    assert!(
        took <= p.recovery_bound() + SLACK,
        "first HEALTHY after {took:?}"
    );
    assert_eq!(
        updates(&pki.app, &uuid).await,
        1,
        "one update for the first verdict"
    );
    // Rounds that find the same health notify nothing.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        health_of(&pki.app, &uuid).await.0,
        Some(HealthStatus::Healthy)
    );
    assert_eq!(
        updates(&pki.app, &uuid).await,
        1,
        "no update while health holds"
    );
    let record = pki
        .app
        .store
        .health_probes_of(&[cluster_id(&uuid)])
        .await
        .expect("records")
        .pop()
        .expect("a record");
    assert!(record.consecutive_successes >= 2, "{record:?}");
    assert!(record.last_transition_at.is_some() && record.last_ok_at.is_some());
    let heartbeat = record.last_probe_at.expect("probed");
    assert!(chrono::Utc::now() - heartbeat < chrono::Duration::milliseconds(1600));

    endpoint.set(outage).await;
    let bound = p.detection_bound();
    let took = wait_for(&pki.app, &uuid, HealthStatus::Unhealthy, bound).await;
    assert!(
        took <= bound + SLACK,
        "UNHEALTHY after {took:?}, bound {bound:?}"
    );
    let earliest = p.interval() * (p.failure_threshold - 1);
    assert!(
        took + Duration::from_millis(200) >= earliest,
        "UNHEALTHY after {took:?}, before {} failed probes could be made",
        p.failure_threshold
    );
    let (_, shown) = health_of(&pki.app, &uuid).await;
    assert_eq!(shown, reason, "only the short reason is shown");
    assert_eq!(
        updates(&pki.app, &uuid).await,
        2,
        "one update for the outage"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        updates(&pki.app, &uuid).await,
        2,
        "no update while it stays down"
    );

    endpoint.set(Mode::Ready).await;
    let bound = p.recovery_bound();
    let took = wait_for(&pki.app, &uuid, HealthStatus::Healthy, bound).await;
    assert!(
        took <= bound + SLACK,
        "HEALTHY after {took:?}, bound {bound:?}"
    );
    assert_eq!(
        health_of(&pki.app, &uuid).await.1,
        "",
        "the reason is cleared"
    );
    assert_eq!(
        updates(&pki.app, &uuid).await,
        3,
        "one update for the recovery"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_endpoint_is_unhealthy_within_the_detection_bound_and_healthy_once_back() {
    detection_cycle(Mode::Down, [127, 31, 0, 1], "unreachable").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_endpoint_is_unhealthy_within_the_detection_bound_and_healthy_once_back() {
    detection_cycle(Mode::Hanging, [127, 31, 0, 2], "unreachable").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_falls_back_to_healthz_and_trusts_only_the_cluster_ca_for_its_address() {
    let timeout = Duration::from_millis(500);
    let policy = policy();
    let ca = Ca::new("cluster-ca");
    let target = |e: &Endpoint, ca: &Ca| ProbeTarget {
        url: e.url(),
        ca_pem: ca.pem.clone(),
    };
    let reason = |r: Result<(), fleetyard::conductor::ProbeError>| r.map_err(|e| e.reason);

    let healthz = Endpoint::start([127, 32, 0, 1].into(), &ca, Mode::HealthzOnly).await;
    assert_eq!(
        probe(&target(&healthz, &ca), &policy, timeout).await,
        Ok(())
    );

    let mut e = Endpoint::start([127, 32, 0, 2].into(), &ca, Mode::Unavailable).await;
    let err = probe(&target(&e, &ca), &policy, timeout)
        .await
        .expect_err("503");
    assert_eq!(err.reason, ProbeFailure::HttpStatus(503));
    assert_eq!(err.detail, "GET /readyz answered 503");

    e.set(Mode::Ready).await;
    assert_eq!(probe(&target(&e, &ca), &policy, timeout).await, Ok(()));
    let other = Ca::new("another-ca");
    let err = probe(&target(&e, &other), &policy, timeout)
        .await
        .expect_err("other CA");
    assert_eq!(err.reason, ProbeFailure::TlsFailure, "{err:?}");
    assert!(err.detail.contains("certificate"), "{err:?}");
    // A certificate from the right CA for another address.
    let elsewhere = Endpoint::start_named(
        [127, 32, 0, 3].into(),
        [127, 32, 0, 4].into(),
        &ca,
        Mode::Ready,
    )
    .await;
    let err = probe(&target(&elsewhere, &ca), &policy, timeout)
        .await
        .expect_err("wrong address");
    assert_eq!(err.reason, ProbeFailure::TlsFailure, "{err:?}");
    assert!(err.detail.contains("certificate"), "{err:?}");
    // Not TLS at all: a plain HTTP server.
    let plain = tokio::net::TcpListener::bind("127.32.0.5:0")
        .await
        .expect("bind");
    let plain_url = format!("https://{}", plain.local_addr().expect("address"));
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = plain.accept().await {
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let plain_target = ProbeTarget {
        url: plain_url,
        ca_pem: ca.pem.clone(),
    };
    assert_eq!(
        reason(probe(&plain_target, &policy, timeout).await),
        Err(ProbeFailure::TlsFailure)
    );

    e.set(Mode::Down).await;
    let err = probe(&target(&e, &ca), &policy, timeout)
        .await
        .expect_err("refused");
    assert_eq!(err.reason, ProbeFailure::Unreachable);
    assert!(err.detail.starts_with("cannot connect"), "{err:?}");

    e.set(Mode::Hanging).await;
    let err = probe(&target(&e, &ca), &policy, timeout)
        .await
        .expect_err("hangs");
    assert_eq!(err.reason, ProbeFailure::Unreachable);
    assert!(err.detail.contains("timeout after 0.5s"), "{err:?}");
}

/// The prober never opens a connection to an address its networks refuse, whether the
/// address is written as an IP or as a name that resolves to one; what the owner sees is
/// "address not allowed", and nothing of the address or the error behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_cluster_outside_the_allowed_networks_is_never_connected_to() {
    use base64::Engine;
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let ca = Ca::new("outside");
    // 127.42.0.0/16 is in no block `fast` allows: the default 127.0.0.0/8 refuses it.
    let by_ip = Endpoint::start(loopback(42, 1), &ca, Mode::Ready).await;
    // localhost resolves to 127.0.0.1 (and perhaps ::1), refused as well.
    let by_name = Endpoint::start([127, 0, 0, 1].into(), &ca, Mode::Ready).await;
    let allowed = Endpoint::start(loopback(41, 9), &ca, Mode::Ready).await;
    let p = fast().address_policy().expect("valid");
    assert!(!p.permits(by_ip.addr.ip()) && !p.permits(by_name.addr.ip()));
    let path = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
    let mut uuids = Vec::new();
    for (name, address) in [
        ("by-ip", by_ip.url()),
        (
            "by-name",
            format!("https://localhost:{}", by_name.addr.port()),
        ),
        ("allowed", allowed.url()),
    ] {
        let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"kubernetesApiEndpoints": {
                "serverEndpoints": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
                "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca.pem)}}});
        let created = app
            .client
            .post(format!("{}{path}", app.address))
            .headers(app.headers.clone())
            .json(&body)
            .send()
            .await
            .expect("create");
        assert_eq!(created.status(), 201);
        let created: serde_json::Value = created.json().await.expect("json");
        uuids.push(
            created["metadata"]["uid"]
                .as_str()
                .expect("uid")
                .to_string(),
        );
    }

    let mut p = fast();
    p.drivers = "external".into();
    let _prober = start_prober(app, &pki.settings, p.clone());
    for uuid in &uuids[..2] {
        wait_for(app, uuid, HealthStatus::Unhealthy, p.detection_bound()).await;
    }
    wait_for(app, &uuids[2], HealthStatus::Healthy, p.recovery_bound()).await;
    assert!(allowed.connections() > 0, "the allowed endpoint is probed");
    assert_eq!(by_ip.connections(), 0, "nothing connects to a refused IP");
    assert_eq!(
        by_name.connections(),
        0,
        "nothing connects to a refused name"
    );

    for (uuid, name, port) in [
        (&uuids[0], "by-ip", by_ip.addr.port()),
        (&uuids[1], "by-name", by_name.addr.port()),
    ] {
        assert_eq!(
            health_of(app, uuid).await.1,
            "address not allowed",
            "{name}"
        );
        let shown = app
            .client
            .get(format!("{}{path}/{name}", app.address))
            .headers(app.headers.clone())
            .send()
            .await
            .expect("get")
            .json::<serde_json::Value>()
            .await
            .expect("json");
        let ok = &shown["status"]["conditions"][0];
        assert_eq!(ok["type"], "OK", "{ok}");
        assert_eq!(ok["status"], "False", "{ok}");
        let message = ok["message"].as_str().unwrap_or("");
        assert!(message.contains("address not allowed"), "{ok}");
        assert!(
            !message.contains("127.") && !message.contains(&port.to_string()),
            "{ok}"
        );
        let v1 = app.get_cluster(uuid).await;
        assert_eq!(
            v1.body["health_status_reason"],
            json!({"api": "address not allowed"}),
            "{}",
            v1.text
        );
    }
    let record = app
        .store
        .health_probes_of(&[cluster_id(&uuids[0])])
        .await
        .expect("records")
        .pop()
        .expect("a record");
    assert_eq!(record.last_reason.as_deref(), Some("address not allowed"));
    assert!(record.consecutive_failures >= 3, "{record:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_failures_are_counted_in_the_table_and_flip_health_once_at_the_threshold() {
    let pki = spawn_pki(Backend::Sqlite, |_| {}).await;
    let (uuid, mut endpoint) = probed_cluster(&pki, "lite", [127, 33, 0, 1], Mode::Ready).await;
    let p = HealthProbeSection {
        failure_threshold: 2,
        ..fast()
    };
    let c = conductor_from(&pki.app, &pki.settings).with_health_probe(p.clone());
    let round = || async {
        let r = c.health_probe_round().await.expect("round");
        // The next round finds the cluster due only half an interval later.
        tokio::time::sleep(p.interval() / 2 + Duration::from_millis(50)).await;
        r
    };
    let r = c.health_probe_round().await.expect("round");
    assert_eq!((r.probed, r.failed, r.changed), (1, 0, 1));
    assert_eq!(
        health_of(&pki.app, &uuid).await.0,
        Some(HealthStatus::Healthy)
    );
    // A round right away finds nothing due: the claim holds for half an interval.
    let again = c.health_probe_round().await.expect("round");
    assert_eq!(again.probed, 0);
    tokio::time::sleep(p.interval() / 2 + Duration::from_millis(50)).await;

    endpoint.set(Mode::Down).await;
    let r = round().await;
    assert_eq!((r.probed, r.failed, r.changed), (1, 1, 0));
    let r = round().await;
    assert_eq!((r.probed, r.failed, r.changed), (1, 1, 1));
    let (health, reason) = health_of(&pki.app, &uuid).await;
    assert_eq!(health, Some(HealthStatus::Unhealthy));
    assert_eq!(reason, "unreachable");
    let r = round().await;
    assert_eq!((r.probed, r.failed, r.changed), (1, 1, 0));
    let record = pki
        .app
        .store
        .health_probes_of(&[cluster_id(&uuid)])
        .await
        .expect("records")
        .pop()
        .expect("record");
    assert_eq!(record.consecutive_failures, 3);
    assert_eq!(record.consecutive_successes, 0);
    assert!(record.last_transition_at.is_some());
    assert_eq!(record.last_reason.as_deref(), Some(reason.as_str()));
    assert_eq!(updates(&pki.app, &uuid).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_conductors_share_a_round_and_probe_each_cluster_once() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let h = pki.app.admin();
    let ca = Ca::new("shared");
    let endpoint = Endpoint::start([127, 34, 0, 1].into(), &ca, Mode::Ready).await;
    let template = template_as(&pki.app, "shared-tpl", json!({}), &h).await;
    let n = bulk_clusters(&pki.app, &template, 60, &[endpoint.url()], &[], &ca.pem).await;
    let p = fast();
    let a = conductor_from(&pki.app, &pki.settings).with_health_probe(p.clone());
    let b = conductor_from(&pki.app, &pki.settings).with_health_probe(p);
    let (ra, rb) = tokio::join!(a.health_probe_round(), b.health_probe_round());
    let (ra, rb) = (ra.expect("round a"), rb.expect("round b"));
    assert_eq!(ra.probed + rb.probed, n, "{ra:?} {rb:?}");
    assert_eq!(ra.failed + rb.failed, 0);
}

/// Inserts `n` complete clusters of `template` in one statement, every tenth pointing at one
/// of `hanging` (when given), the others at one of `healthy`, already `HEALTHY` (the steady
/// state), each with `ca_pem` as its CA; how many.
async fn bulk_clusters(
    app: &TestApp,
    template: &str,
    n: i64,
    healthy: &[String],
    hanging: &[String],
    ca_pem: &str,
) -> usize {
    let pool = sqlx::PgPool::connect(&app.db.url).await.expect("connect");
    sqlx::query(
        "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, api_address, \
         status, health_status, created_at, registry_name) \
         SELECT gen_random_uuid()::text, 'bulk', 'bulk', 'bulk-' || i, $1, \
         CASE WHEN cardinality($3::text[]) > 0 AND i % 10 = 0 \
              THEN ($3::text[])[1 + (i / 10) % cardinality($3::text[])] \
              ELSE ($2::text[])[1 + i % cardinality($2::text[])] END, \
         'CREATE_COMPLETE', \
         CASE WHEN cardinality($3::text[]) > 0 AND i % 10 = 0 THEN NULL ELSE 'HEALTHY' END, \
         now(), 'bulk-' || i FROM generate_series(1, $4) AS i",
    )
    .bind(template)
    .bind(healthy)
    .bind(hanging)
    .bind(n)
    .execute(&pool)
    .await
    .expect("clusters");
    sqlx::query(
        "INSERT INTO x509keypair (uuid, cluster_uuid, kind, certificate, private_key, \
         project_id, user_id, created_at) \
         SELECT gen_random_uuid()::text, uuid, 'ca', $1, 'sealed-elsewhere', 'bulk', 'bulk', \
         now() FROM cluster WHERE project_id = 'bulk'",
    )
    .bind(ca_pem)
    .execute(&pool)
    .await
    .expect("CAs");
    pool.close().await;
    usize::try_from(n).expect("count")
}

/// 10,000 clusters, a tenth behind listeners that accept and never answer (spread over
/// several addresses), the rest behind a handful of HTTPS endpoints: one round probes every
/// one of them once, none lost, and fails exactly the hanging ones. How long the round takes against the interval is a figure of `./tox.sh bench`
/// (`examples/health_probe_bench.rs`), not an assertion here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_clusters_a_tenth_hanging_are_each_probed_once_in_one_round() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let h = pki.app.admin();
    let ca = Ca::new("bulk-ca");
    let mut endpoints = Vec::new();
    for i in 0..8 {
        endpoints.push(Endpoint::start(loopback(35, i), &ca, Mode::Ready).await);
    }
    let mut hanging = Vec::new();
    for i in 0..8 {
        hanging.push(Endpoint::hanging(loopback(36, i)).await);
    }
    let template = template_as(&pki.app, "bulk-tpl", json!({}), &h).await;
    let healthy_urls: Vec<String> = endpoints.iter().map(Endpoint::url).collect();
    let hanging_urls: Vec<String> = hanging.iter().map(Endpoint::url).collect();
    let n = bulk_clusters(
        &pki.app,
        &template,
        10_000,
        &healthy_urls,
        &hanging_urls,
        &ca.pem,
    )
    .await;
    // A timeout that leaves the reachable clusters' handshakes room on a loaded machine:
    // whether they all succeed is asserted, not how fast.
    let p = HealthProbeSection {
        interval: 30,
        timeout: 10.0,
        concurrency: 2048,
        ..fast()
    };
    let c: Conductor = conductor_from(&pki.app, &pki.settings).with_health_probe(p.clone());
    let started = chrono::Utc::now();
    let r = c.health_probe_round().await.expect("round");
    eprintln!("one round over {n} clusters (1,000 hanging): {r:?}");
    assert_eq!(r.probed, n, "{r:?}");
    assert_eq!(r.failed, n / 10, "{r:?}");
    assert_eq!(r.changed, 0, "{r:?}");
    assert_eq!((r.lost, r.unprobeable, r.write_errors), (0, 0, 0), "{r:?}");

    let pool = sqlx::PgPool::connect(&pki.app.db.url)
        .await
        .expect("connect");
    let (fresh, hanging_failed): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*) FILTER (WHERE h.last_probe_at >= $1), \
         COUNT(*) FILTER (WHERE c.api_address = ANY($2) AND h.consecutive_failures = 1 \
                          AND h.last_reason = 'unreachable') \
         FROM cluster_health_probe h JOIN cluster c ON c.uuid = h.cluster_uuid",
    )
    .bind(started)
    .bind(&hanging_urls)
    .fetch_one(&pool)
    .await
    .expect("records");
    let reasons: Vec<(Option<String>, i64)> = sqlx::query_as(
        "SELECT last_reason, COUNT(*) FROM cluster_health_probe GROUP BY last_reason",
    )
    .fetch_all(&pool)
    .await
    .expect("reasons");
    assert_eq!(
        fresh, 10_000,
        "every cluster has a last_probe_at from the round"
    );
    assert_eq!(
        hanging_failed, 1_000,
        "every hanging cluster failed, unreachable: {reasons:?}"
    );
}

#[tokio::test]
async fn the_driver_health_poll_leaves_the_clusters_the_prober_probes_to_it() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let h = pki.app.admin();
    let uuid = complete_cluster_with(&pki.app, &pki.conductor, "both", json!({}), &h).await;
    let probing = conductor_from(&pki.app, &pki.settings).with_health_probe(fast());
    assert_eq!(probing.health_round().await.expect("health"), 0);
    assert_eq!(health_of(&pki.app, &uuid).await.0, None);
    let elsewhere = conductor_from(&pki.app, &pki.settings).with_health_probe(HealthProbeSection {
        drivers: "kubernetes".into(),
        ..fast()
    });
    assert_eq!(elsewhere.health_round().await.expect("health"), 1);
    assert_eq!(
        health_of(&pki.app, &uuid).await.0,
        Some(HealthStatus::Healthy)
    );
}

/// A cluster registered through the cluster registry is probed with its own `caBundle`, and
/// the registry's `OK` condition follows: `True` with the prober's heartbeat, then `False`
/// once its endpoint is down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_cluster_is_probed_with_its_ca_bundle_and_the_registry_condition_follows() {
    use base64::Engine;
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let ca = Ca::new("registered-edge");
    let mut endpoint = Endpoint::start(loopback(41, 1), &ca, Mode::Ready).await;
    let body = json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "edge"},
        "spec": {"kubernetesApiEndpoints": {
            "serverEndpoints": [{"clientCIDR": "0.0.0.0/0", "serverAddress": endpoint.url()}],
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca.pem)}}});
    let app = &pki.app;
    let path = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/project-a/clusters";
    let created = app
        .client
        .post(format!("{}{path}", app.address))
        .headers(app.headers.clone())
        .json(&body)
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);
    let created: serde_json::Value = created.json().await.expect("json");
    let uuid = created["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();

    let mut p = fast();
    p.drivers = "external".into();
    let _prober = start_prober(app, &pki.settings, p.clone());
    wait_for(app, &uuid, HealthStatus::Healthy, p.recovery_bound()).await;
    let get = || async {
        app.client
            .get(format!("{}{path}/edge", app.address))
            .headers(app.headers.clone())
            .send()
            .await
            .expect("get")
            .json::<serde_json::Value>()
            .await
            .expect("json")
    };
    let ok = get().await["status"]["conditions"][0].clone();
    assert_eq!(ok["type"], "OK", "{ok}");
    assert_eq!(ok["status"], "True", "{ok}");
    assert!(ok["lastHeartbeatTime"].is_string(), "{ok}");

    endpoint.set(Mode::Down).await;
    wait_for(app, &uuid, HealthStatus::Unhealthy, p.detection_bound()).await;
    let ok = get().await["status"]["conditions"][0].clone();
    assert_eq!(ok["status"], "False", "{ok}");
    assert!(ok["message"].as_str().unwrap_or("").contains("api"), "{ok}");
}
