//! The app with a conductor driven in-process, and the resources most tests start from: a
//! template, a cluster taken to `CREATE_COMPLETE`, a federation, their bodies. Every test
//! module takes them from here.

use fleetyard::certificates::{Certificates, KeyCipher};
use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::{DriversSection, FakeDriverSection, Settings};
use fleetyard::drivers::DriverRegistry;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::api::{Api, CLUSTERS, TEMPLATES};
use super::{at, spawn_with, Backend, TestApp};

// ---- Conductors -----------------------------------------------------------------------------

/// A fake-driver simulator that finishes every operation within its job.
pub fn instant() -> FakeDriverSection {
    FakeDriverSection {
        create_seconds: 0,
        update_seconds: 0,
        delete_seconds: 0,
        federation_seconds: 0,
        ..FakeDriverSection::default()
    }
}

/// Settings whose fake driver finishes every operation within its job.
pub fn instant_settings(s: &mut Settings) {
    s.fake_driver.create_seconds = 0;
    s.fake_driver.update_seconds = 0;
    s.fake_driver.delete_seconds = 0;
    s.fake_driver.federation_seconds = 0;
}

/// A conductor over the app's store with the fake driver configured as given.
pub fn conductor(app: &TestApp, fake: FakeDriverSection) -> Conductor {
    Conductor::new(
        app.store.clone(),
        DriverRegistry::build(&DriversSection::default(), &fake).expect("drivers"),
        "test-host",
        fleetyard::config::ConductorSection::default(),
    )
}

/// A conductor over the app's store built from `settings` (drivers, fake driver, conductor).
pub fn conductor_from(app: &TestApp, settings: &Settings) -> Conductor {
    Conductor::new(
        app.store.clone(),
        DriverRegistry::build(&settings.drivers, &settings.fake_driver).expect("drivers"),
        "test-host",
        settings.conductor.clone(),
    )
}

/// Spawns the app on `backend` after `tweak`, and keeps the settings it was built with.
pub async fn spawn_keeping(
    backend: Backend,
    tweak: impl FnOnce(&mut Settings),
) -> (TestApp, Settings) {
    let mut kept = None;
    let app = spawn_with(backend, |s| {
        tweak(s);
        kept = Some(s.clone());
    })
    .await;
    (app, kept.expect("settings were adjusted"))
}

/// Works jobs until none is due (a driver that only started its work is left to the sync).
pub async fn drain(c: &Conductor) -> Vec<Outcome> {
    let mut out = Vec::new();
    loop {
        match c.try_execute_one().await.expect("job worked") {
            Outcome::Idle => return out,
            o => out.push(o),
        }
    }
}

/// Works every due job, polling once whenever a driver only started its work, until idle.
pub async fn drain_polling(c: &Conductor) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for _ in 0..10_000 {
        match c.try_execute_one().await.expect("conductor works a job") {
            Outcome::Idle => return outcomes,
            o @ Outcome::Started { .. } => {
                c.sync_round().await.expect("status sync");
                outcomes.push(o);
            }
            o => outcomes.push(o),
        }
    }
    panic!("the conductor never went idle");
}

/// Works jobs and status polls until a poll leaves nothing due (for drivers that take more
/// than one job to finish).
pub async fn drain_settled(c: &Conductor) -> Vec<Outcome> {
    let mut out = Vec::new();
    loop {
        match c.try_execute_one().await.expect("job worked") {
            Outcome::Idle => {
                c.sync_round().await.expect("sync");
                if let Outcome::Idle = c.try_execute_one().await.expect("job") {
                    return out;
                }
            }
            o @ Outcome::Started { .. } => {
                out.push(o);
                c.sync_round().await.expect("sync");
            }
            o => out.push(o),
        }
    }
}

/// The app on PostgreSQL or SQLite with a fake driver that finishes every operation within its
/// job, and a conductor built from the same settings.
pub struct Fleet {
    pub app: TestApp,
    pub conductor: Conductor,
}

pub async fn spawn_fleet(tweak: impl FnOnce(&mut Settings)) -> Fleet {
    spawn_fleet_on(Backend::Postgres, tweak).await
}

pub async fn spawn_fleet_on(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> Fleet {
    let (app, s) = spawn_keeping(backend, |s| {
        instant_settings(s);
        tweak(s);
    })
    .await;
    let conductor = conductor_from(&app, &s);
    Fleet { app, conductor }
}

/// The app and a conductor sharing one `[certificates]` key, with an instant fake driver.
pub struct Pki {
    pub app: TestApp,
    pub settings: Settings,
    pub conductor: Conductor,
}

/// A fresh `[certificates] key_file` of its own (a conductor on PostgreSQL needs one).
pub fn certificates_key_file() -> String {
    let dir = std::env::temp_dir().join(format!("fy-certs-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("certificates.key");
    KeyCipher::generate_file(&path).expect("key file");
    path.display().to_string()
}

/// Spawns the app with a key file of its own (PostgreSQL), or the embedded default's key
/// beside the database (SQLite, `key_file` left empty).
pub async fn spawn_pki(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> Pki {
    let key_file = if backend == Backend::Postgres {
        certificates_key_file()
    } else {
        String::new()
    };
    let (app, settings) = spawn_keeping(backend, |s| {
        s.certificates.key_file = key_file;
        instant_settings(s);
        tweak(s);
    })
    .await;
    let conductor = conductor_from(&app, &settings)
        .with_certificates(Certificates::from_settings(&settings).expect("certificates"));
    Pki {
        app,
        settings,
        conductor,
    }
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/csr");

/// A CSR (or key) from `tests/fixtures/csr`.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture")
}

// ---- Bodies ---------------------------------------------------------------------------------

/// The uuid of a representation.
pub fn uuid_of(v: &Value) -> String {
    v["uuid"].as_str().expect("uuid is a string").to_string()
}

/// `base` with the keys of `extra` set and the keys in `drop` removed.
pub fn merged(mut base: Value, extra: Value, drop: &[&str]) -> Value {
    let obj = base.as_object_mut().expect("object");
    if let Some(e) = extra.as_object() {
        for (k, v) in e {
            obj.insert(k.clone(), v.clone());
        }
    }
    for k in drop {
        obj.remove(*k);
    }
    base
}

/// The minimal valid template create body.
pub fn template_body(name: &str) -> Value {
    json!({"name": name, "coe": "kubernetes", "image_id": "fedora-coreos-40"})
}

/// The keys of an object, sorted.
pub fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

/// The names, sorted, as owned strings (to compare with `keys`).
pub fn sorted(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

// ---- Resources ------------------------------------------------------------------------------

impl TestApp {
    /// Creates a template (201) as `h` with the minimal valid body plus `extra`; its body.
    pub async fn make_template_as(&self, name: &str, extra: Value, h: &HeaderMap) -> Value {
        let r = self
            .with_headers(h)
            .create_template(&merged(template_body(name), extra, &[]))
            .await;
        assert_eq!(r.status, 201, "create template: {}", r.text);
        r.body
    }

    /// Creates a template (201) as the default member; its body.
    pub async fn make_template(&self, name: &str, extra: Value) -> Value {
        self.make_template_as(name, extra, &self.headers).await
    }
}

/// Creates a template for the caller; its uuid.
pub async fn template_as(app: &TestApp, name: &str, extra: Value, h: &HeaderMap) -> String {
    uuid_of(&app.make_template_as(name, extra, h).await)
}

/// Creates a cluster (202) at `latest` as `h`; its uuid.
pub async fn cluster_as(app: &TestApp, body: Value, h: &HeaderMap) -> String {
    let r = app.with_headers(h).at("latest").create_cluster(&body).await;
    assert_eq!(r.status, 202, "create cluster: {}", r.text);
    uuid_of(&r.body)
}

/// Posts a cluster named `name` from `template` (202) as `h`, at `h`'s own microversion; its
/// uuid. Labels go to the driver (`fake_fail=...`).
pub async fn labelled_cluster_as(
    app: &TestApp,
    h: &HeaderMap,
    template: &str,
    name: &str,
    labels: Value,
) -> String {
    let body = json!({"name": name, "cluster_template_id": template, "labels": labels});
    let r = app.with_headers(h).create_cluster(&body).await;
    assert_eq!(r.status, 202, "create cluster {name}: {}", r.text);
    uuid_of(&r.body)
}

/// Creates a template and a cluster from it, and completes the cluster through `conductor`
/// (see `drain`); its uuid.
pub async fn complete_cluster_with(
    app: &TestApp,
    conductor: &Conductor,
    name: &str,
    labels: Value,
    h: &HeaderMap,
) -> String {
    let t = template_as(app, &format!("{name}-tpl"), json!({}), h).await;
    let body = json!({"name": name, "cluster_template_id": t, "labels": labels});
    let uuid = cluster_as(app, body, h).await;
    drain(conductor).await;
    assert_status(app, &uuid, "CREATE_COMPLETE", h).await;
    uuid
}

/// Creates a template and a cluster from it, and completes the cluster through an instant
/// conductor; its uuid.
pub async fn complete_cluster_as(app: &TestApp, name: &str, h: &HeaderMap) -> String {
    let t = template_as(app, &format!("{name}-template"), json!({}), h).await;
    let uuid = cluster_as(app, json!({"name": name, "cluster_template_id": t}), h).await;
    drain(&conductor(app, instant())).await;
    assert_status(app, &uuid, "CREATE_COMPLETE", h).await;
    uuid
}

/// The cluster's status, as `h` sees it at `latest`, is `status`.
pub async fn assert_status(app: &TestApp, cluster: &str, status: &str, h: &HeaderMap) {
    let shown = app
        .get_as(&format!("{CLUSTERS}/{cluster}"), &at(h, "latest"))
        .await;
    assert_eq!(shown.body["status"], status, "{}", shown.text);
}

/// A federation create body hosted on `host`.
pub fn federation_body(host: &str) -> Value {
    json!({"name": "fed", "hostcluster_id": host, "properties": {"dns-zone": "example.com."}})
}

/// Creates a federation (202, only its uuid in the body) as `h`; its uuid.
pub async fn make_federation_as(app: &TestApp, body: &Value, h: &HeaderMap) -> String {
    let r = app.with_headers(h).create_federation(body).await;
    assert_eq!(r.status, 202, "create federation: {}", r.text);
    assert_eq!(keys(&r.body), vec!["uuid"], "{}", r.text);
    uuid_of(&r.body)
}

/// The machine tests' start on the Kubernetes face: an app whose caller is `user-a`, a member
/// of `project-a`, with a fake driver that finishes every operation within its job, its
/// conductor, `/v1` headers at the latest microversion and the uuid of a complete cluster `kc`
/// (`kube_tag` v1.31.4, one worker machine `kc-default-worker-1`).
pub async fn project_a_with_kc(backend: Backend) -> (TestApp, Conductor, HeaderMap, String) {
    let (app, settings) = spawn_keeping(backend, |s| {
        instant_settings(s);
        s.noauth.project_id = "project-a".into();
        s.noauth.user_id = "user-a".into();
        s.noauth.roles = "member,reader".into();
    })
    .await;
    let conductor = conductor_from(&app, &settings);
    let v1 = at(&app.headers, "latest");
    let cluster =
        complete_cluster_with(&app, &conductor, "kc", json!({"kube_tag": "v1.31.4"}), &v1).await;
    (app, conductor, v1, cluster)
}

/// Project A's complete cluster `kc` ([`project_a_with_kc`]) with its app, conductor and
/// `/v1` headers.
pub struct KcEnv {
    pub app: TestApp,
    pub conductor: Conductor,
    pub v1: HeaderMap,
    pub cluster: String,
}

impl KcEnv {
    pub async fn new(backend: Backend) -> KcEnv {
        let (app, conductor, v1, cluster) = project_a_with_kc(backend).await;
        KcEnv {
            app,
            conductor,
            v1,
            cluster,
        }
    }

    /// [`kube_call`] on this app.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        ct: &str,
        body: &str,
    ) -> super::Resp {
        kube_call(&self.app, method, path, ct, body).await
    }
}

/// A request to the Kubernetes face with the app's headers accepting JSON, carrying `body`
/// (of content type `ct`) unless it is empty.
pub async fn kube_call(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    ct: &str,
    body: &str,
) -> super::Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .headers(app.headers.clone())
        .header("Accept", "application/json");
    if !body.is_empty() {
        req = req.header("Content-Type", ct).body(body.to_string());
    }
    app.send(req).await
}

/// `(magnum.machine.update, outcome)` for each outcome, as a machine's notifications show.
pub fn machine_updates(outcomes: &[&str]) -> Vec<(String, String)> {
    outcomes
        .iter()
        .map(|o| ("magnum.machine.update".to_string(), o.to_string()))
        .collect()
}

/// `(event_type, outcome, priority)` of the outbox events about a resource, in order.
pub async fn events_of(app: &TestApp, uuid: &str) -> Vec<(String, String, String)> {
    app.store
        .pending_events(10_000)
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.resource_uuid == uuid)
        .map(|e| {
            (
                e.event_type.clone(),
                e.message_json()["payload"]["outcome"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e.priority.clone(),
            )
        })
        .collect()
}

/// Paths that have no endpoint method of their own.
pub fn template_path(ident: &str) -> String {
    format!("{TEMPLATES}/{ident}")
}
pub fn cluster_path(ident: &str) -> String {
    format!("{CLUSTERS}/{ident}")
}

/// A uuid text (as responses carry it) parsed into the id type a store call takes.
pub fn id<I: std::str::FromStr>(text: &str) -> I
where
    I::Err: std::fmt::Debug,
{
    text.parse().expect("a canonical uuid")
}

/// Runs statements without binds on the app's database, either backend (fixtures written as
/// SQL, such as machine rows).
pub async fn exec_sql(url: &str, statements: &[String]) {
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
        for s in statements {
            sqlx::query(s).execute(&pool).await.expect(s);
        }
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("pg");
        for s in statements {
            sqlx::query(s).execute(&pool).await.expect(s);
        }
        pool.close().await;
    }
}
