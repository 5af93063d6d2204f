//! `auth_strategy = keystone` against a stub Keystone over HTTP: the parts of Keystone's v3 API
//! the service calls (`POST /v3/auth/tokens` for its own token, `GET /v3/auth/tokens` to
//! validate a caller's, `GET /v3/projects/{id}`), counting what it is asked. `./tox.sh keystone`
//! runs the same behaviour against a real Keystone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use actix_web::{web, HttpRequest, HttpResponse};
use fleetyard::config::{AuthStrategy, Secret};
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::{
    header_map, spawn_with, stub_server, template_body, Backend, Resp, TestApp, QUOTAS,
};

const SERVICE_TOKEN: &str = "service-token";

/// A token the stub accepts: who it speaks for.
#[derive(Clone)]
struct StubToken {
    user: &'static str,
    project: &'static str,
    roles: &'static [&'static str],
}

#[derive(Default)]
struct StubState {
    tokens: BTreeMap<String, StubToken>,
    projects: Vec<String>,
    /// Project ids Keystone answers 500 for.
    broken_projects: Vec<String>,
    /// Service tokens issued (`POST /v3/auth/tokens`).
    issued: usize,
    /// Token validations (`GET /v3/auth/tokens`).
    validations: usize,
    /// Project paths asked (`GET /v3/projects/...`), as the request sent them.
    project_lookups: Vec<String>,
    /// How long a validation takes, so that concurrent requests overlap.
    validation_delay: std::time::Duration,
}

struct StubKeystone {
    url: String,
    state: Arc<Mutex<StubState>>,
}

fn token_document(user: &str, project: Option<&str>, roles: &[&str]) -> Value {
    let expires = chrono::Utc::now() + chrono::Duration::hours(1);
    let mut token = json!({
        "methods": ["password"],
        "user": {"id": user, "name": user, "domain": {"id": "default", "name": "Default"}},
        "roles": roles.iter().map(|r| json!({"id": format!("id-{r}"), "name": r})).collect::<Vec<_>>(),
        "expires_at": expires.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        "issued_at": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
    });
    if let Some(p) = project {
        token["project"] =
            json!({"id": p, "name": p, "domain": {"id": "default", "name": "Default"}});
    }
    json!({ "token": token })
}

fn header<'r>(req: &'r HttpRequest, name: &str) -> &'r str {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .json(json!({"error": {"code": 404, "title": "Not Found", "message": "Could not find."}}))
}

async fn dispatch(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Arc<Mutex<StubState>>>,
) -> HttpResponse {
    if req.uri().path() == "/v3/auth/tokens" && req.method() == actix_web::http::Method::GET {
        let delay = state.lock().expect("stub state").validation_delay;
        tokio::time::sleep(delay).await;
    }
    let mut st = state.lock().expect("stub state");
    let path = req.uri().path().to_string();
    match (req.method().as_str(), path.as_str()) {
        ("POST", "/v3/auth/tokens") => {
            let sent: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let user = &sent["auth"]["identity"]["password"]["user"];
            if user["name"] != "fleetyard" || user["password"] != "service-secret" {
                return HttpResponse::Unauthorized().finish();
            }
            st.issued += 1;
            HttpResponse::Created()
                .insert_header(("X-Subject-Token", SERVICE_TOKEN))
                .json(token_document("fleetyard", Some("service"), &["service"]))
        }
        _ if header(&req, "x-auth-token") != SERVICE_TOKEN => HttpResponse::Unauthorized().finish(),
        ("GET", "/v3/auth/tokens") => {
            st.validations += 1;
            match st.tokens.get(header(&req, "x-subject-token")) {
                Some(t) => {
                    HttpResponse::Ok().json(token_document(t.user, Some(t.project), t.roles))
                }
                None => not_found(),
            }
        }
        ("GET", p) if p.starts_with("/v3/projects/") => {
            st.project_lookups.push(p.to_string());
            let id = &p["/v3/projects/".len()..];
            if st.broken_projects.iter().any(|b| b == id) {
                HttpResponse::InternalServerError().finish()
            } else if st.projects.iter().any(|known| known == id) {
                HttpResponse::Ok()
                    .json(json!({"project": {"id": id, "name": id, "domain_id": "default"}}))
            } else {
                not_found()
            }
        }
        _ => not_found(),
    }
}

impl StubKeystone {
    async fn start() -> StubKeystone {
        let state = Arc::new(Mutex::new(StubState::default()));
        let (port, _) = stub_server(web::Data::new(state.clone()), dispatch);
        StubKeystone {
            url: format!("http://127.0.0.1:{port}/v3"),
            state,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut StubState) -> T) -> T {
        f(&mut self.state.lock().expect("stub state"))
    }

    fn add_token(
        &self,
        token: &str,
        user: &'static str,
        project: &'static str,
        roles: &'static [&'static str],
    ) {
        self.with(|s| {
            s.tokens.insert(
                token.into(),
                StubToken {
                    user,
                    project,
                    roles,
                },
            );
        });
    }

    fn add_project(&self, id: &str) {
        self.with(|s| s.projects.push(id.into()));
    }
}

/// The app with `auth_strategy = keystone` against `stub`, sending no identity headers.
async fn spawn_keystone(stub: &StubKeystone) -> TestApp {
    let url = stub.url.clone();
    let mut app = spawn_with(Backend::Postgres, move |s| {
        s.default.auth_strategy = AuthStrategy::Keystone;
        s.keystone_authtoken.auth_url = url;
        s.keystone_authtoken.username = "fleetyard".into();
        s.keystone_authtoken.password = Secret::new("service-secret");
        s.keystone_authtoken.project_name = "service".into();
    })
    .await;
    app.headers.clear();
    app
}

fn token(value: &str) -> HeaderMap {
    header_map(&[("x-auth-token", value)])
}

/// A stub with an admin of `p-admin` and members of `p-member` and `p-other`, and the app.
async fn cloud() -> (StubKeystone, TestApp) {
    let stub = StubKeystone::start().await;
    stub.add_token(
        "admin-token",
        "admin",
        "p-admin",
        &["admin", "member", "reader"],
    );
    stub.add_token("member-token", "alice", "p-member", &["member", "reader"]);
    stub.add_token("other-token", "bob", "p-other", &["member", "reader"]);
    stub.add_project("p-admin");
    stub.add_project("p-member");
    let app = spawn_keystone(&stub).await;
    (stub, app)
}

#[tokio::test]
async fn quota_create_stores_a_project_keystone_knows() {
    let (stub, app) = cloud().await;
    let r = app
        .post_as(
            QUOTAS,
            &json!({"project_id": "p-member", "resource": "Cluster", "hard_limit": 4}),
            &token("admin-token"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["project_id"], "p-member");
    assert_eq!(r.body["hard_limit"], 4);
    assert_eq!(
        stub.with(|s| s.project_lookups.clone()),
        ["/v3/projects/p-member"]
    );
    let shown = app
        .get_as(&format!("{QUOTAS}/p-member/Cluster"), &token("admin-token"))
        .await;
    assert_eq!(shown.body["hard_limit"], 4, "{}", shown.text);
    assert_eq!(shown.body["id"], r.body["id"]);
}

#[tokio::test]
async fn quota_create_for_a_project_keystone_does_not_know_is_magnums_404() {
    let (stub, app) = cloud().await;
    let admin = token("admin-token");
    app.post_as(
        QUOTAS,
        &json!({"project_id": "no-such-project", "hard_limit": 3}),
        &admin,
    )
    .await
    .assert_error(404, "The project_id no-such-project could not be found.");
    // An id that is not one path segment is looked up as one, and is not found either.
    app.post_as(
        QUOTAS,
        &json!({"project_id": "../auth/tokens", "hard_limit": 3}),
        &admin,
    )
    .await
    .assert_error(404, "The project_id ../auth/tokens could not be found.");
    assert_eq!(
        stub.with(|s| s.project_lookups.clone()),
        [
            "/v3/projects/no-such-project",
            "/v3/projects/..%2Fauth%2Ftokens"
        ]
    );
    // Nothing was stored.
    let all = app
        .get_as(&format!("{QUOTAS}?all_tenants=True"), &admin)
        .await;
    assert_eq!(all.body, json!({"quotas": []}), "{}", all.text);
    assert!(app
        .store
        .get_quota("no-such-project", "Cluster")
        .await
        .expect("store")
        .is_none());
}

#[tokio::test]
async fn quota_create_asks_keystone_only_for_an_authorised_request_with_a_project() {
    let (stub, app) = cloud().await;
    app.post_as(
        QUOTAS,
        &json!({"project_id": "p-member"}),
        &token("member-token"),
    )
    .await
    .assert_error(403, "Policy doesn't allow quota:create to be performed.");
    app.post_as(QUOTAS, &json!({"hard_limit": 3}), &token("admin-token"))
        .await
        .assert_error(400, "Must provide a valid project ID.");
    assert!(stub.with(|s| s.project_lookups.is_empty()));
}

#[tokio::test]
async fn quota_create_when_keystone_cannot_answer_is_503_and_stores_nothing() {
    let (stub, app) = cloud().await;
    stub.with(|s| s.broken_projects.push("p-broken".into()));
    app.post_as(
        QUOTAS,
        &json!({"project_id": "p-broken"}),
        &token("admin-token"),
    )
    .await
    .assert_error(503, "The Keystone service is temporarily unavailable.");
    assert!(app
        .store
        .get_quota("p-broken", "Cluster")
        .await
        .expect("store")
        .is_none());
}

/// `n` GETs of the template list with `headers`, `at_once` at a time; their answers.
async fn many_gets(app: &TestApp, headers: &HeaderMap, n: usize, at_once: usize) -> Vec<Resp> {
    let mut answers = Vec::with_capacity(n);
    while answers.len() < n {
        let batch = at_once.min(n - answers.len());
        let requests = (0..batch).map(|_| app.get_as("/v1/clustertemplates", headers));
        answers.extend(futures_util::future::join_all(requests).await);
    }
    answers
}

#[tokio::test]
async fn a_thousand_requests_with_one_token_cost_keystone_one_validation() {
    let (stub, app) = cloud().await;
    // Slow validations: the first 50 requests all arrive before Keystone has answered.
    stub.with(|s| s.validation_delay = std::time::Duration::from_millis(300));
    let answers = many_gets(&app, &token("member-token"), 1000, 50).await;
    for r in &answers {
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body, json!({"clustertemplates": []}));
    }
    assert_eq!(
        stub.with(|s| s.validations),
        1,
        "validations for 1,000 requests"
    );
    assert_eq!(stub.with(|s| s.issued), 1, "service tokens issued");
}

#[tokio::test]
async fn concurrent_requests_with_one_bad_token_cost_keystone_one_validation() {
    let (stub, app) = cloud().await;
    stub.with(|s| s.validation_delay = std::time::Duration::from_millis(300));
    let answers = many_gets(&app, &token("gAAAAA-unknown"), 200, 50).await;
    for r in &answers {
        r.assert_error(401, "The request you have made requires authentication.");
        assert_eq!(
            r.header("www-authenticate").as_deref(),
            Some(format!("Keystone uri=\"{}\"", stub.url).as_str())
        );
    }
    assert_eq!(stub.with(|s| s.validations), 1);
}

#[tokio::test]
async fn each_token_is_validated_once_and_answers_for_its_own_project() {
    let (stub, app) = cloud().await;
    let member = token("member-token");
    let created = app
        .post_as("/v1/clustertemplates", &template_body("t-member"), &member)
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["project_id"], "p-member");
    assert_eq!(created.body["user_id"], "alice");
    for _ in 0..5 {
        let mine = app.get_as("/v1/clustertemplates", &member).await;
        assert_eq!(
            mine.body["clustertemplates"].as_array().map(Vec::len),
            Some(1)
        );
        let other = app
            .get_as("/v1/clustertemplates", &token("other-token"))
            .await;
        assert_eq!(
            other.body,
            json!({"clustertemplates": []}),
            "{}",
            other.text
        );
    }
    assert_eq!(stub.with(|s| s.validations), 2, "one per token");
}
