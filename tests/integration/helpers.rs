//! `spawn_app()`: the real application on port 0 with a fresh database, and a client with one
//! method per endpoint (`api`) and the resources tests start from (`fleet`). This is the only
//! module of the suite that names the application's start-up types.

mod api;
mod db_proxy;
pub mod endpoints;
mod fleet;
pub mod jwt;
pub mod kubectl;
pub mod managed;
mod stub;

pub(crate) use api::{join_ops, unjoin_ops, Api, Caller, CLUSTERS, FEDERATIONS, QUOTAS};
pub use db_proxy::{DbProxy, Link};
pub use fleet::*;
pub use stub::stub_server;

use std::sync::Arc;

/// The state the app is built from (tests that check start-up validation build one).
pub use fleetyard::api::AppState;
use fleetyard::config::Settings;
use fleetyard::startup::Application;
use fleetyard::store::Store;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

pub fn pg_admin_url() -> String {
    std::env::var("FLEETYARD_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// `host:port` of the test PostgreSQL server.
pub fn pg_host_port() -> String {
    let url = pg_admin_url();
    let after_scheme = url.split_once("://").map(|(_, r)| r).unwrap_or(&url);
    let host_part = after_scheme
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(after_scheme);
    host_part.split('/').next().unwrap_or(host_part).to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// A database made for one test and dropped afterwards.
pub struct TestDb {
    pub url: String,
    pg_name: Option<String>,
    sqlite_dir: Option<std::path::PathBuf>,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        match backend {
            Backend::Postgres => {
                let name = format!("fy_test_{}", uuid::Uuid::new_v4().simple());
                let admin = pg_admin_url();
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
                    .await
                    .expect("PostgreSQL must be reachable (./tox.sh starts it)");
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                let base = admin
                    .rsplit_once('/')
                    .map(|(b, _)| b.to_string())
                    .unwrap_or(admin);
                TestDb {
                    url: format!("{base}/{name}"),
                    pg_name: Some(name),
                    sqlite_dir: None,
                }
            }
            Backend::Sqlite => {
                let dir =
                    std::env::temp_dir().join(format!("fy-test-{}", uuid::Uuid::new_v4().simple()));
                std::fs::create_dir_all(&dir).expect("temp dir");
                let url = format!("sqlite://{}", dir.join("fleetyard.sqlite").display());
                TestDb {
                    url,
                    pg_name: None,
                    sqlite_dir: Some(dir),
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(name) = self.pg_name.take() {
            let admin = pg_admin_url();
            // Dropped on a plain thread: the test's runtime may be shutting down.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(rt) = rt {
                    rt.block_on(async move {
                        if let Ok(mut conn) =
                            <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await
                        {
                            let _ = sqlx::query(&format!(
                                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                            ))
                            .execute(&mut conn)
                            .await;
                        }
                    });
                }
            })
            .join();
        }
        if let Some(dir) = self.sqlite_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A migrated store on a fresh database of `backend`, without the app (the database lives as
/// long as the `TestDb`).
pub async fn open_store(backend: Backend) -> (Arc<dyn Store>, TestDb) {
    let db = TestDb::new(backend).await;
    let store = fleetyard::store::connect(&db.url, 5)
        .await
        .expect("connects");
    store.migrate().await.expect("migrates");
    (store, db)
}

pub fn test_settings(db_url: &str) -> Settings {
    let mut s = Settings::default();
    s.api.port = 0;
    s.api.workers = 2;
    s.database.connection = fleetyard::config::Secret::new(db_url);
    s.database.max_pool_size = 5;
    s.default.host = "test-host".into();
    s
}

pub struct TestApp {
    pub address: String,
    pub store: Arc<dyn Store>,
    pub client: reqwest::Client,
    /// Headers sent with every request (identity, microversion).
    pub headers: HeaderMap,
    pub db: TestDb,
}

pub async fn spawn_app() -> TestApp {
    spawn_with(Backend::Postgres, |_| {}).await
}

/// Spawns the app on `backend`, letting the test adjust settings first.
pub async fn spawn_with(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_with_state(backend, tweak, |_| {}).await
}

/// Spawns the app on `backend`, letting the test adjust the settings and then the state the
/// app is built from (e.g. to register a driver of its own).
pub async fn spawn_with_state(
    backend: Backend,
    tweak: impl FnOnce(&mut Settings),
    adjust: impl FnOnce(&mut AppState),
) -> TestApp {
    let db = TestDb::new(backend).await;
    let mut settings = test_settings(&db.url);
    tweak(&mut settings);
    let store = fleetyard::startup::open_store(&settings)
        .await
        .expect("store opens and migrates");
    let mut state = fleetyard::startup::build_state(settings, store.clone()).expect("valid state");
    adjust(&mut state);
    let app = Application::build(state).expect("binds");
    let address = format!("{}://127.0.0.1:{}", app.scheme(), app.port());
    tokio::spawn(app.run_until_stopped());
    let mut headers = HeaderMap::new();
    headers.insert("x-project-id", HeaderValue::from_static("project-a"));
    headers.insert("x-user-id", HeaderValue::from_static("user-a"));
    headers.insert("x-roles", HeaderValue::from_static("member,reader"));
    TestApp {
        address,
        store,
        client: reqwest::Client::new(),
        headers,
        db,
    }
}

pub async fn spawn_jwt(secret: &str) -> TestApp {
    spawn_jwt_on(Backend::Postgres, secret).await
}

/// An app on `backend` that takes HS256 JWTs signed with `secret` (audience `fleetyard`) and
/// sends no identity headers of its own.
pub async fn spawn_jwt_on(backend: Backend, secret: &str) -> TestApp {
    let mut app = spawn_with(backend, |s| jwt::hs256_settings(s, secret)).await;
    app.headers.clear();
    app
}

/// A response with its status, headers and JSON body (Null when empty or not JSON).
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    /// Reads a whole response.
    pub async fn read(resp: reqwest::Response) -> Resp {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            text,
        }
    }

    /// The single error entry of Magnum's error body.
    pub fn error(&self) -> &Value {
        &self.body["errors"][0]
    }
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    }
    /// Asserts Magnum's error body for `status` with exactly `detail`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, detail: &str) {
        assert_eq!(self.status, status, "status; body: {}", self.text);
        let e = self.error();
        assert_eq!(e["status"], status, "body: {}", self.text);
        assert_eq!(e["code"], if status >= 500 { "server" } else { "client" });
        assert_eq!(e["detail"], detail, "body: {}", self.text);
        let title = detail.split('.').next().unwrap_or(detail);
        assert_eq!(e["title"], title);
        assert_eq!(e["request_id"], "");
        assert_eq!(e["links"], serde_json::json!([]));
        assert_eq!(self.body["errors"].as_array().map(Vec::len), Some(1));
    }
    /// Asserts the empty framework-level error body.
    #[track_caller]
    pub fn assert_framework_error(&self, status: u16) {
        assert_eq!(self.status, status, "body: {}", self.text);
        assert_eq!(
            self.body,
            serde_json::json!({"errors": [{"request_id": "", "code": "", "status": status, "title": "", "detail": "", "links": []}]})
        );
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// Same app, other identity.
    pub fn as_identity(&self, project: &str, user: &str, roles: &str) -> HeaderMap {
        let mut h = self.headers.clone();
        h.insert(
            "x-project-id",
            HeaderValue::from_str(project).expect("header"),
        );
        h.insert("x-user-id", HeaderValue::from_str(user).expect("header"));
        h.insert("x-roles", HeaderValue::from_str(roles).expect("header"));
        h
    }

    pub fn admin(&self) -> HeaderMap {
        self.as_identity("admin-project", "admin-user", "admin,member,reader")
    }

    /// A member of project-b: the other project of the isolation tests.
    pub fn project_b(&self) -> HeaderMap {
        self.as_identity("project-b", "user-b", "member,reader")
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        Resp::read(req.send().await.expect("request sent")).await
    }

    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &HeaderMap,
        body: Option<&Value>,
    ) -> Resp {
        let mut req = self
            .client
            .request(method, self.url(path))
            .headers(headers.clone());
        if let Some(b) = body {
            req = req.json(b);
        }
        self.send(req).await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.request(reqwest::Method::GET, path, &self.headers, None)
            .await
    }
    pub async fn get_as(&self, path: &str, h: &HeaderMap) -> Resp {
        self.request(reqwest::Method::GET, path, h, None).await
    }
    pub async fn post(&self, path: &str, body: &Value) -> Resp {
        self.request(reqwest::Method::POST, path, &self.headers, Some(body))
            .await
    }
    pub async fn post_as(&self, path: &str, body: &Value, h: &HeaderMap) -> Resp {
        self.request(reqwest::Method::POST, path, h, Some(body))
            .await
    }
    pub async fn patch(&self, path: &str, body: &Value) -> Resp {
        self.request(reqwest::Method::PATCH, path, &self.headers, Some(body))
            .await
    }
    pub async fn patch_as(&self, path: &str, body: &Value, h: &HeaderMap) -> Resp {
        self.request(reqwest::Method::PATCH, path, h, Some(body))
            .await
    }
    pub async fn delete(&self, path: &str) -> Resp {
        self.request(reqwest::Method::DELETE, path, &self.headers, None)
            .await
    }
    pub async fn delete_as(&self, path: &str, h: &HeaderMap) -> Resp {
        self.request(reqwest::Method::DELETE, path, h, None).await
    }
}

/// `headers` at microversion `version` (`latest` allowed).
pub fn at(headers: &HeaderMap, version: &str) -> HeaderMap {
    let mut h = headers.clone();
    h.insert(
        "openstack-api-version",
        HeaderValue::from_str(&format!("container-infra {version}")).expect("header"),
    );
    h
}

pub fn header_map(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    h
}
