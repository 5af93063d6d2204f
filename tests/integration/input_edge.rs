//! Text no store column can hold is refused at the edge with 400 and Magnum's body, on both
//! backends alike (PostgreSQL refuses NUL characters and over-long ids where SQLite takes
//! them): a NUL in any JSON string or key, in a Python-literal value, `%00` in the path or the
//! query, and identity values (JWT claims) longer than the id columns or holding control
//! characters. Nothing is written.

use jsonwebtoken::Algorithm;
use reqwest::header::HeaderMap;
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::jwt;
use crate::helpers::{
    at, complete_cluster_with, spawn_fleet_on, template_as, Backend, Fleet, TestApp,
};

const NUL_IN_BODY: &str =
    "The request body holds a NUL character (\\u0000), which no field accepts.";
const NUL_IN_URL: &str =
    "The request URL holds a NUL character (%00), which no name, id or parameter accepts.";

/// A fleet with a template `t` and a complete cluster `k1` of project-a, and member headers
/// at the latest microversion.
async fn world(backend: Backend) -> (Fleet, HeaderMap, String, String) {
    let f = spawn_fleet_on(backend, |_| {}).await;
    let h = at(&f.app.headers, "latest");
    let t = template_as(&f.app, "t", json!({}), &h).await;
    let c = complete_cluster_with(&f.app, &f.conductor, "k1", json!({}), &h).await;
    (f, h, t, c)
}

/// `{t}` and `{c}` in a path or body replaced by the template and cluster uuids.
fn fill(text: &str, t: &str, c: &str) -> String {
    text.replace("{t}", t).replace("{c}", c)
}

/// What the store holds that a request could have changed: templates, clusters and labels.
async fn snapshot(app: &TestApp, h: &HeaderMap) -> Value {
    let admin = at(&app.admin(), "latest");
    let templates = app.get_as("/v1/clustertemplates/detail", h).await.body;
    let clusters = app.get_as("/v1/clusters/detail", h).await.body;
    let federations = app.get_as("/v1/federations/detail", &admin).await.body;
    json!([templates, clusters, federations])
}

#[rstest]
#[case::a_template_name(
    Method::POST, "/v1/clustertemplates",
    json!({"name": "a\u{0}b", "coe": "kubernetes", "image_id": "img"}), NUL_IN_BODY)]
#[case::a_label_value(
    Method::POST, "/v1/clustertemplates",
    json!({"name": "n", "coe": "kubernetes", "image_id": "img", "labels": {"k": "v\u{0}"}}),
    NUL_IN_BODY)]
#[case::a_label_key(
    Method::POST, "/v1/clustertemplates",
    json!({"name": "n", "coe": "kubernetes", "image_id": "img", "labels": {"\u{0}k": "v"}}),
    NUL_IN_BODY)]
#[case::python_literal_labels(
    Method::POST, "/v1/clustertemplates",
    json!({"name": "n", "coe": "kubernetes", "image_id": "img", "labels": "{'k': 'v\\x00'}"}),
    "Invalid input for field/attribute labels. Value: '{'k': 'v\\x00'}'. Value should be a dictionary (a NUL character is not allowed, at position 8).")]
#[case::a_cluster_keypair(
    Method::POST, "/v1/clusters",
    json!({"name": "k2", "cluster_template_id": "{t}", "keypair": "\u{0}"}), NUL_IN_BODY)]
#[case::a_federation_host(
    Method::POST, "/v1/federations",
    json!({"name": "f", "hostcluster_id": "{c}\u{0}", "properties": {"dns-zone": "example.com."}}),
    NUL_IN_BODY)]
#[case::python_literal_federation_properties(
    Method::POST, "/v1/federations",
    json!({"name": "f", "hostcluster_id": "{c}", "properties": "{'dns-zone': 'x\\u0000'}"}),
    "Invalid input for field/attribute properties. Value: '{'dns-zone': 'x\\u0000'}'. Value should be a dictionary (a NUL character is not allowed, at position 15).")]
#[case::a_certificate_cluster(
    Method::POST, "/v1/certificates",
    json!({"cluster_uuid": "\u{0}", "csr": "-----BEGIN CERTIFICATE REQUEST-----"}), NUL_IN_BODY)]
#[case::a_patch_value(
    Method::PATCH, "/v1/clustertemplates/{t}",
    json!([{"op": "replace", "path": "/name", "value": "x\u{0}"}]), NUL_IN_BODY)]
#[case::a_python_literal_patch_value(
    Method::PATCH, "/v1/clustertemplates/{t}",
    json!([{"op": "replace", "path": "/labels", "value": "{'a': '\\x00'}"}]),
    r#"Couldn't apply patch '[{"op":"replace","path":"/labels","value":"{'a': '\\x00'}"}]'. Reason: a NUL character is not allowed, at position 7"#)]
#[case::python_literal_node_labels(
    Method::POST, "/v1/clusters/{c}/nodegroups",
    json!({"name": "ng", "node_labels": "{'tier': '\\U00000000'}"}),
    "Invalid input for field/attribute node_labels. Value: '{'tier': '\\U00000000'}'. Value should be a dictionary (a NUL character is not allowed, at position 10).")]
#[case::a_path_segment(Method::GET, "/v1/clusters/%00", Value::Null, NUL_IN_URL)]
#[case::a_path_segment_inside_a_name(
    Method::DELETE,
    "/v1/clustertemplates/a%00b",
    Value::Null,
    NUL_IN_URL
)]
#[case::a_query_value(
    Method::GET,
    "/v1/clusters/{c}/nodegroups?role=%00",
    Value::Null,
    NUL_IN_URL
)]
#[case::a_query_name(Method::GET, "/v1/clusters?%00=1", Value::Null, NUL_IN_URL)]
#[tokio::test]
async fn nul_characters_are_refused_with_400_and_write_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
    #[case] method: Method,
    #[case] path: &str,
    #[case] body: Value,
    #[case] sentence: &str,
) {
    let (f, h, t, c) = world(backend).await;
    let before = snapshot(&f.app, &h).await;
    let path = fill(path, &t, &c);
    let body: Option<Value> = (!body.is_null())
        .then(|| serde_json::from_str(&fill(&body.to_string(), &t, &c)).expect("json"));
    let r = f.app.request(method, &path, &h, body.as_ref()).await;
    r.assert_error(400, sentence);
    assert_eq!(snapshot(&f.app, &h).await, before);
}

#[rstest]
#[tokio::test]
async fn nul_in_the_url_is_refused_before_authentication_and_policy(
    #[values(
        "/v1/stats?project_id=%00",
        "/v1/quotas/%00/Cluster",
        "/v1/certificates/%00"
    )]
    path: &str,
) {
    let (f, _, _, _) = world(Backend::Postgres).await;
    let r = f.app.get_as(path, &at(&f.app.admin(), "latest")).await;
    r.assert_error(400, NUL_IN_URL);
}

// ---- Identity --------------------------------------------------------------------------------

const SECRET: &str = "identity-edge-secret";

async fn jwt_app(backend: Backend) -> TestApp {
    crate::helpers::spawn_jwt_on(backend, SECRET).await
}

fn token(claims: Value) -> HeaderMap {
    let t = jwt::mint(Algorithm::HS256, SECRET, &jwt::with_defaults(claims));
    jwt::token_header(&t)
}

#[rstest]
#[case::a_user_id_longer_than_the_column(
    json!({"sub": "u".repeat(256), "project_id": "p", "roles": ["member"]}),
    "The caller's user id is longer than 255 characters.")]
#[case::a_project_id_longer_than_the_column(
    json!({"sub": "u", "project_id": "p".repeat(256), "roles": ["member"]}),
    "The caller's project id is longer than 255 characters.")]
#[case::a_domain_id_longer_than_the_column(
    json!({"sub": "u", "project_id": "p", "roles": ["member"], "domain_id": "d".repeat(256)}),
    "The caller's domain id is longer than 255 characters.")]
#[case::a_nul_in_the_user_id(
    json!({"sub": "u\u{0}", "project_id": "p", "roles": ["member"]}),
    "The caller's user id must not hold control characters.")]
#[case::a_nul_in_the_project_id(
    json!({"sub": "u", "project_id": "\u{0}", "roles": ["member"]}),
    "The caller's project id must not hold control characters.")]
#[case::a_nul_in_a_role(
    json!({"sub": "u", "project_id": "p", "roles": ["member\u{0}"]}),
    "The caller's roles must not hold control characters.")]
#[tokio::test]
async fn identity_values_no_column_can_hold_are_refused_with_400(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
    #[case] claims: Value,
    #[case] sentence: &str,
) {
    let app = jwt_app(backend).await;
    let h = token(claims);
    let body = json!({"name": "t", "coe": "kubernetes", "image_id": "img"});
    app.request(Method::POST, "/v1/clustertemplates", &h, Some(&body))
        .await
        .assert_error(400, sentence);
    let admin = token(json!({"sub": "a", "project_id": "admin", "roles": ["admin"]}));
    let all = app.get_as("/v1/clustertemplates", &admin).await;
    assert_eq!(all.body, json!({"clustertemplates": []}), "{}", all.text);
    // The longest ids the columns hold are taken.
    let longest =
        token(json!({"sub": "u".repeat(255), "project_id": "p".repeat(255), "roles": ["member"]}));
    let made = app
        .request(Method::POST, "/v1/clustertemplates", &longest, Some(&body))
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
}
