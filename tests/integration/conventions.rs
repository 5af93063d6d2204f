//! The OpenStack conventions every endpoint shares (contract sections 1, 2.0 and 3): version
//! discovery, microversion negotiation, the error bodies, request ids, path rerouting, the health
//! check, CORS, identity and policy in noauth and JWT mode, and configuration errors.

use std::collections::HashSet;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::Algorithm;
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::jwt::{claims, mint, now, token_header};
use crate::helpers::{
    header_map, spawn_app, spawn_jwt, spawn_with, template_body, Backend, Resp, TestApp,
};

const JWT_SECRET: &str = "s3cret-for-tests";
const DASHBOARD: &str = "https://dashboard.example";

// ------------------------------------------------------------------------------------------------
// Private helpers
// ------------------------------------------------------------------------------------------------

/// Asserts the `x-openstack-request-id: req-<uuid4>` header and returns it.
#[track_caller]
fn request_id(r: &Resp) -> String {
    let id = r
        .header("x-openstack-request-id")
        .unwrap_or_else(|| panic!("x-openstack-request-id missing (status {})", r.status));
    let uuid = id
        .strip_prefix("req-")
        .unwrap_or_else(|| panic!("request id {id:?} does not start with req-"));
    let parsed = uuid::Uuid::parse_str(uuid).unwrap_or_else(|_| panic!("{id:?} is not req-<uuid>"));
    assert_eq!(parsed.get_version_num(), 4, "{id}");
    assert_eq!(
        parsed.hyphenated().to_string(),
        uuid,
        "hyphenated lowercase uuid: {id}"
    );
    id
}

/// The value of a response header, which must be present.
#[track_caller]
fn header(r: &Resp, name: &str) -> String {
    r.header(name)
        .unwrap_or_else(|| panic!("header {name} missing; headers: {:?}", r.headers))
}

fn version_header(version: &str) -> HeaderMap {
    header_map(&[("openstack-api-version", version)])
}

fn with(mut base: HeaderMap, pairs: &[(&str, &str)]) -> HeaderMap {
    for (k, v) in header_map(pairs) {
        if let Some(k) = k {
            base.insert(k, v);
        }
    }
    base
}

async fn send_raw(
    app: &TestApp,
    method: Method,
    path: &str,
    headers: &HeaderMap,
    body: Option<&str>,
) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .headers(headers.clone());
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    app.send(req).await
}

fn self_and_bookmark(v: &Value) -> (String, String) {
    let links = v.as_array().expect("links are a list");
    assert_eq!(links.len(), 2, "{v}");
    assert_eq!(links[0]["rel"], "self", "{v}");
    assert_eq!(links[1]["rel"], "bookmark", "{v}");
    (
        links[0]["href"].as_str().expect("href").to_string(),
        links[1]["href"].as_str().expect("href").to_string(),
    )
}

// ------------------------------------------------------------------------------------------------
// 1. Version discovery
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_root_document_lists_v1_as_current_from_1_1_to_1_14_without_identity_headers() {
    let app = spawn_app().await;
    let r = app.get_as("/", &HeaderMap::new()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(header(&r, "content-type").starts_with("application/json"));
    assert_eq!(r.body["name"], "OpenStack Magnum API");
    assert_eq!(
        r.body["description"],
        "Magnum is an OpenStack project which aims to provide container cluster management."
    );
    let versions = r.body["versions"].as_array().expect("versions list");
    assert_eq!(versions.len(), 1, "{}", r.text);
    let v = &versions[0];
    assert_eq!(v["id"], "v1");
    assert_eq!(v["status"], "CURRENT");
    assert_eq!(v["min_version"], "1.1");
    assert_eq!(v["max_version"], "1.20");
    assert_eq!(
        v["links"],
        json!([{"href": app.url("/v1/"), "rel": "self"}])
    );
    assert!(
        v.get("created_at").is_none() && v.get("updated_at").is_none(),
        "{v}"
    );
}

#[tokio::test]
async fn the_root_document_has_no_version_headers_and_ignores_the_version_header() {
    let app = spawn_app().await;
    let r = app
        .get_as("/", &version_header("container-infra 9.9"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["versions"][0]["id"], "v1");
    for name in [
        "openstack-api-version",
        "openstack-api-minimum-version",
        "openstack-api-maximum-version",
    ] {
        assert!(r.header(name).is_none(), "{name} on GET /");
    }
}

#[tokio::test]
async fn the_v1_document_lists_every_collection_with_self_and_bookmark_links() {
    let app = spawn_app().await;
    let r = app.get_as("/v1", &HeaderMap::new()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let doc = &r.body;
    assert_eq!(doc["id"], "v1");
    assert_eq!(
        doc["media_types"],
        json!([{"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json"}])
    );
    assert_eq!(
        doc["links"],
        json!([
            {"href": app.url("/v1/"), "rel": "self"},
            {"href": "http://docs.openstack.org/developer/magnum/dev/api-spec-v1.html", "rel": "describedby", "type": "text/html"},
        ])
    );
    for name in [
        "clustertemplates",
        "clusters",
        "quotas",
        "certificates",
        "mservices",
        "stats",
        "federations",
        "credentials",
    ] {
        assert_eq!(
            doc[name],
            json!([
                {"href": app.url(&format!("/v1/{name}/")), "rel": "self"},
                {"href": app.url(&format!("/{name}/")), "rel": "bookmark"},
            ]),
            "{name}"
        );
    }
    let (self_href, bookmark) = self_and_bookmark(&doc["nodegroups"]);
    assert_eq!(self_href, app.url("/v1/clusters/{cluster_id}/nodegroups"));
    assert_eq!(bookmark, app.url("/clusters/{cluster_id}/nodegroups"));
    // id, media_types, links, eight collections and nodegroups: nothing else.
    assert_eq!(doc.as_object().map(|o| o.len()), Some(12), "{}", r.text);

    let slash = app.get_as("/v1/", &HeaderMap::new()).await;
    assert_eq!(slash.status, 200, "{}", slash.text);
    assert_eq!(slash.body, r.body);
}

/// The links of `/`, `/v1` and a template when the service is reached at `base`, and
/// `next` of a one-item page.
async fn links_seen(app: &TestApp, headers: &HeaderMap) -> (Value, Value, Value, Value) {
    let root = app.get_as("/", headers).await;
    assert_eq!(root.status, 200, "{}", root.text);
    let v1 = app.get_as("/v1", headers).await;
    assert_eq!(v1.status, 200, "{}", v1.text);
    let mut identity = app.headers.clone();
    identity.extend(headers.clone());
    let t = app
        .post_as("/v1/clustertemplates", &template_body("t1"), &identity)
        .await;
    assert_eq!(t.status, 201, "{}", t.text);
    app.post_as("/v1/clustertemplates", &template_body("t2"), &app.headers)
        .await;
    let page = app.get_as("/v1/clustertemplates?limit=1", &identity).await;
    (
        root.body["versions"][0]["links"].clone(),
        v1.body.clone(),
        t.body["links"].clone(),
        page.body["next"].clone(),
    )
}

#[track_caller]
fn assert_links_start_with(base: &str, seen: &(Value, Value, Value, Value), uuid_of_t1: &str) {
    let (root, v1, template, next) = seen;
    assert_eq!(
        root,
        &json!([{"href": format!("{base}/v1/"), "rel": "self"}])
    );
    assert_eq!(
        v1["links"][0],
        json!({"href": format!("{base}/v1/"), "rel": "self"})
    );
    assert_eq!(
        v1["clusters"],
        json!([{"href": format!("{base}/v1/clusters/"), "rel": "self"},
               {"href": format!("{base}/clusters/"), "rel": "bookmark"}])
    );
    assert_eq!(
        v1["nodegroups"][0]["href"],
        format!("{base}/v1/clusters/{{cluster_id}}/nodegroups")
    );
    assert_eq!(
        template,
        &json!([{"href": format!("{base}/v1/clustertemplates/{uuid_of_t1}"), "rel": "self"},
                {"href": format!("{base}/clustertemplates/{uuid_of_t1}"), "rel": "bookmark"}])
    );
    let next = next.as_str().unwrap_or_default();
    assert!(
        next.starts_with(&format!(
            "{base}/v1/clustertemplates?sort_key=id&sort_dir=asc&limit=1&marker="
        )),
        "{next}"
    );
}

fn uuid_in(links: &Value) -> String {
    links[0]["href"]
        .as_str()
        .and_then(|h| h.rsplit('/').next())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn with_a_public_endpoint_every_link_starts_with_it_whatever_the_request_says() {
    let app = spawn_with(Backend::Postgres, |s| {
        s.api.public_endpoint = "https://cloud.example/container-infra/".into();
    })
    .await;
    let forwarded = header_map(&[
        ("x-forwarded-host", "evil.example"),
        ("x-forwarded-prefix", "/elsewhere"),
    ]);
    let seen = links_seen(&app, &forwarded).await;
    let uuid = uuid_in(&seen.2);
    assert_links_start_with("https://cloud.example/container-infra", &seen, &uuid);
}

#[tokio::test]
async fn forwarded_headers_make_the_links_only_when_proxy_header_parsing_is_enabled() {
    let proxy = header_map(&[
        ("x-forwarded-proto", "https"),
        ("x-forwarded-host", "cloud.example"),
        ("x-forwarded-prefix", "/container-infra"),
    ]);
    let trusting = spawn_with(Backend::Postgres, |s| {
        s.oslo_middleware.enable_proxy_headers_parsing = true;
    })
    .await;
    let seen = links_seen(&trusting, &proxy).await;
    let uuid = uuid_in(&seen.2);
    assert_links_start_with("https://cloud.example/container-infra", &seen, &uuid);

    // By default (as oslo.middleware's) a client's forwarded headers change nothing.
    let app = spawn_app().await;
    let seen = links_seen(&app, &proxy).await;
    let uuid = uuid_in(&seen.2);
    assert_links_start_with(&app.address, &seen, &uuid);
    let rfc7239 = header_map(&[("forwarded", "proto=https;host=cloud.example")]);
    let root = app.get_as("/", &rfc7239).await;
    assert_eq!(
        root.body["versions"][0]["links"][0]["href"],
        app.url("/v1/")
    );
}

#[tokio::test]
async fn discovery_needs_no_token_in_jwt_mode_as_openstacksdk_sends_none() {
    let app = spawn_jwt(JWT_SECRET).await;
    let accept = header_map(&[("accept", "application/json")]);

    let root = app.get_as("/", &accept).await;
    assert_eq!(root.status, 200, "{}", root.text);
    assert_eq!(root.body["versions"][0]["id"], "v1");
    assert_eq!(root.body["versions"][0]["max_version"], "1.20");

    for path in ["/v1", "/v1/"] {
        let v1 = app.get_as(path, &accept).await;
        assert_eq!(v1.status, 200, "{path}: {}", v1.text);
        assert_eq!(v1.body["id"], "v1", "{path}");
        assert_eq!(v1.body["links"][0]["href"], app.url("/v1/"), "{path}");
        assert_eq!(
            header(&v1, "openstack-api-version"),
            "container-infrastructure-management 1.1"
        );
    }

    // The same app does require a token everywhere else.
    let list = app.get_as("/v1/clustertemplates", &accept).await;
    list.assert_error(401, "The request you have made requires authentication.");
}

#[tokio::test]
async fn the_v1_document_is_microversioned_so_a_bad_version_header_is_406_there_too() {
    let app = spawn_app().await;
    let ok = app
        .get_as("/v1", &version_header("container-infra 1.9"))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(
        header(&ok, "openstack-api-version"),
        "container-infrastructure-management 1.9"
    );
    let r = app
        .get_as("/v1", &version_header("container-infra 2.0"))
        .await;
    assert_eq!(r.status, 406, "{}", r.text);
    assert_eq!(
        r.body["errors"][0]["code"],
        "magnum.microversion-unsupported"
    );
    let r = app.get_as("/v1/", &version_header("compute 1.2")).await;
    r.assert_framework_error(406);
}

// ------------------------------------------------------------------------------------------------
// 2. Microversions
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_request_without_a_version_header_is_answered_at_1_1_with_the_range_and_vary() {
    let app = spawn_app().await;
    let r = app.get("/v1/clustertemplates").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"clustertemplates": []}));
    assert_eq!(
        header(&r, "openstack-api-version"),
        "container-infrastructure-management 1.1"
    );
    assert_eq!(
        header(&r, "openstack-api-minimum-version"),
        "container-infrastructure-management 1.1"
    );
    assert_eq!(
        header(&r, "openstack-api-maximum-version"),
        "container-infrastructure-management 1.20"
    );
    let vary: Vec<String> = r
        .headers
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_ascii_lowercase())
        .collect();
    assert!(
        vary.iter().any(|v| v == "openstack-api-version"),
        "Vary: {vary:?}"
    );
}

#[tokio::test]
async fn latest_and_every_service_type_alias_are_accepted_and_echoed_with_the_canonical_name() {
    let app = spawn_app().await;
    for (sent, answered) in [
        ("container-infra latest", "1.20"),
        ("container-infra LATEST", "1.20"),
        ("container-infrastructure-management 1.10", "1.10"),
        ("container-infrastructure 1.5", "1.5"),
        ("container-infra 1.1", "1.1"),
        ("container-infra 1.15", "1.15"),
        ("container-infra 1.16", "1.16"),
        ("container-infra 1.18", "1.18"),
        ("container-infra 1.19", "1.19"),
        ("container-infra 1.20", "1.20"),
    ] {
        let h = with(app.headers.clone(), &[("openstack-api-version", sent)]);
        let r = app.get_as("/v1/clustertemplates", &h).await;
        assert_eq!(r.status, 200, "{sent}: {}", r.text);
        assert_eq!(r.body, json!({"clustertemplates": []}), "{sent}");
        assert_eq!(
            header(&r, "openstack-api-version"),
            format!("container-infrastructure-management {answered}"),
            "{sent}"
        );
        assert_eq!(
            header(&r, "openstack-api-maximum-version"),
            "container-infrastructure-management 1.20"
        );
    }
}

#[tokio::test]
async fn versions_outside_the_range_are_406_with_the_microversion_body_and_range_headers() {
    let app = spawn_app().await;
    for sent in [
        "container-infra 1.21",
        "container-infra 2.0",
        "container-infra 1.0",
        "container-infra 0.9",
    ] {
        let h = with(app.headers.clone(), &[("openstack-api-version", sent)]);
        let r = app.get_as("/v1/clustertemplates", &h).await;
        assert_eq!(r.status, 406, "{sent}: {}", r.text);
        assert_eq!(
            r.body,
            json!({"errors": [{
                "code": "magnum.microversion-unsupported",
                "title": "Requested microversion is unsupported",
                "min_version": "1.1",
                "max_version": "1.20",
                "links": [{"rel": "help", "href": "http://docs.openstack.org/api-guide/compute/microversions.html"}],
            }]}),
            "{sent}"
        );
        assert!(r.body["errors"][0].get("status").is_none());
        assert_eq!(
            header(&r, "openstack-api-minimum-version"),
            "container-infrastructure-management 1.1"
        );
        assert_eq!(
            header(&r, "openstack-api-maximum-version"),
            "container-infrastructure-management 1.20"
        );
        request_id(&r);
    }
}

#[tokio::test]
async fn malformed_version_headers_are_406_with_the_empty_framework_body() {
    let app = spawn_app().await;
    for sent in [
        "container-infra",
        "compute 1.2",
        "container-infra 1.x",
        "container-infra 1",
        "container-infra 1.2 extra",
    ] {
        let h = with(app.headers.clone(), &[("openstack-api-version", sent)]);
        let r = app.get_as("/v1/clustertemplates", &h).await;
        r.assert_framework_error(406);
        assert!(r.header("openstack-api-version").is_none(), "{sent}");
        request_id(&r);
    }
}

#[tokio::test]
async fn handler_errors_carry_the_negotiated_version_header() {
    let app = spawn_app().await;
    let h = with(
        app.headers.clone(),
        &[("openstack-api-version", "container-infra 1.10")],
    );
    let r = app
        .post_as(
            "/v1/clustertemplates",
            &json!({"name": "t", "image_id": "img"}),
            &h,
        )
        .await;
    r.assert_error(
        400,
        "Invalid input for field/attribute coe. Value: 'None'. Mandatory field missing.",
    );
    assert_eq!(
        header(&r, "openstack-api-version"),
        "container-infrastructure-management 1.10"
    );
}

// ------------------------------------------------------------------------------------------------
// 3. Errors
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_unknown_route_is_a_framework_404_under_v1_and_at_the_root() {
    let app = spawn_app().await;
    for path in [
        "/v1/nothing",
        "/nothing",
        "/v1/clustertemplates/x/y/z",
        "/v2",
    ] {
        let r = app.get(path).await;
        r.assert_framework_error(404);
        assert!(
            header(&r, "content-type").starts_with("application/json"),
            "{path}"
        );
        request_id(&r);
    }
}

#[tokio::test]
async fn a_wrong_method_on_a_known_route_is_a_framework_405() {
    let app = spawn_app().await;
    let r = app
        .request(Method::PUT, "/v1/clustertemplates/x", &app.headers, None)
        .await;
    r.assert_framework_error(405);
    let r = app.delete("/v1/clustertemplates").await;
    r.assert_framework_error(405);
    let r = app
        .post("/v1/clustertemplates/detail", &template_body("t"))
        .await;
    r.assert_framework_error(405);
}

#[tokio::test]
async fn malformed_json_is_400_request_is_not_in_valid_json_format() {
    let app = spawn_app().await;
    let h = with(app.headers.clone(), &[("content-type", "application/json")]);
    let r = send_raw(
        &app,
        Method::POST,
        "/v1/clustertemplates",
        &h,
        Some("{\"name\": "),
    )
    .await;
    r.assert_error(400, "Request is not in valid JSON format.");
    assert_eq!(
        app.get("/v1/clustertemplates").await.body,
        json!({"clustertemplates": []})
    );
}

#[tokio::test]
async fn a_body_that_is_not_an_object_or_is_empty_is_400() {
    let app = spawn_app().await;
    let h = with(app.headers.clone(), &[("content-type", "application/json")]);
    let r = send_raw(
        &app,
        Method::POST,
        "/v1/clustertemplates",
        &h,
        Some("[1, 2]"),
    )
    .await;
    r.assert_error(
        400,
        "Invalid input for argument cluster_template: the request body must be a JSON object.",
    );
    let r = send_raw(&app, Method::POST, "/v1/clustertemplates", &h, Some("")).await;
    r.assert_error(400, "The request body is empty.");
}

#[tokio::test]
async fn a_body_sent_as_text_plain_is_415_unknown_mimetype() {
    let app = spawn_app().await;
    let h = with(app.headers.clone(), &[("content-type", "text/plain")]);
    let body = template_body("t").to_string();
    let r = send_raw(&app, Method::POST, "/v1/clustertemplates", &h, Some(&body)).await;
    r.assert_error(415, "Unknown mimetype: text/plain.");
    assert_eq!(
        app.get("/v1/clustertemplates").await.body,
        json!({"clustertemplates": []})
    );

    // A JSON suffix type and parameters are fine.
    let h = with(
        app.headers.clone(),
        &[("content-type", "application/json; charset=utf-8")],
    );
    let r = send_raw(&app, Method::POST, "/v1/clustertemplates", &h, Some(&body)).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn a_body_over_one_mebibyte_is_413_in_magnums_error_format() {
    let app = spawn_app().await;
    let h = with(app.headers.clone(), &[("content-type", "application/json")]);
    let big = json!({"name": "x".repeat(1024 * 1024), "coe": "kubernetes", "image_id": "i"});
    let r = send_raw(
        &app,
        Method::POST,
        "/v1/clustertemplates",
        &h,
        Some(&big.to_string()),
    )
    .await;
    r.assert_error(413, "Payload Too Large.");
    request_id(&r);
    assert_eq!(
        app.get("/v1/clustertemplates").await.body,
        json!({"clustertemplates": []})
    );
}

#[tokio::test]
async fn an_unknown_query_parameter_is_400_unknown_argument() {
    let app = spawn_app().await;
    let r = app.get("/v1/clustertemplates?name=x").await;
    r.assert_error(400, "Unknown argument: \"name\"");
    let r = app
        .get("/v1/clustertemplates/detail?limit=1&all_tenants=1")
        .await;
    r.assert_error(400, "Unknown argument: \"all_tenants\"");
}

#[tokio::test]
async fn a_limit_that_is_not_positive_or_not_a_number_is_400() {
    let app = spawn_app().await;
    app.get("/v1/clustertemplates?limit=0")
        .await
        .assert_error(400, "Limit must be positive");
    app.get("/v1/clustertemplates?limit=-3")
        .await
        .assert_error(400, "Limit must be positive");
    app.get("/v1/clustertemplates?limit=abc")
        .await
        .assert_error(400, "Invalid input for limit: abc is not an integer.");
}

#[tokio::test]
async fn a_bad_sort_dir_or_sort_key_is_400_with_magnums_sentences() {
    let app = spawn_app().await;
    app.get("/v1/clustertemplates?sort_dir=up")
        .await
        .assert_error(
            400,
            "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
        );
    app.get("/v1/clustertemplates?sort_key=node_count")
        .await
        .assert_error(
            400,
            "The sort_key value \"node_count\" is an invalid field for sorting",
        );
    app.get("/v1/clustertemplates?marker=nope")
        .await
        .assert_error(400, "Expected a uuid but received nope.");
}

// ------------------------------------------------------------------------------------------------
// 4. Request ids
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn every_response_carries_a_fresh_request_id_of_shape_req_uuid() {
    let app = spawn_app().await;
    let mut seen = HashSet::new();
    let created = app.post("/v1/clustertemplates", &template_body("t")).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let responses = [
        created,
        app.get("/v1/clustertemplates").await,
        app.get("/v1/clustertemplates").await,
        app.get("/v1/nothing").await,
        app.get_as("/v1", &version_header("container-infra 1.21"))
            .await,
        app.get_as("/v1", &version_header("container-infra")).await,
        app.get_as("/", &HeaderMap::new()).await,
        app.get_as("/healthcheck", &HeaderMap::new()).await,
        app.get("/v1/clustertemplates?limit=0").await,
    ];
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [201, 200, 200, 404, 406, 406, 200, 200, 400]);
    for r in &responses {
        assert!(seen.insert(request_id(r)), "request ids repeat");
    }
    // Never in the error body: there it is always the empty string.
    assert_eq!(responses[3].error()["request_id"], "");
}

// ------------------------------------------------------------------------------------------------
// 5. Rerouting and trailing slashes
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_path_without_v1_is_rerouted_under_v1() {
    let app = spawn_app().await;
    app.make_template("t1", json!({})).await;
    let plain = app.get("/clustertemplates").await;
    let versioned = app.get("/v1/clustertemplates").await;
    assert_eq!(plain.status, 200, "{}", plain.text);
    assert_eq!(plain.body, versioned.body);
    assert_eq!(
        plain.body["clustertemplates"].as_array().map(Vec::len),
        Some(1)
    );
    // Rerouted requests are microversioned too.
    assert_eq!(
        header(&plain, "openstack-api-version"),
        "container-infrastructure-management 1.1"
    );
    let detail = app.get("/clustertemplates/detail/").await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert_eq!(detail.body["clustertemplates"][0]["name"], "t1");
}

#[tokio::test]
async fn a_trailing_slash_with_a_query_string_works_as_the_cli_sends_it() {
    let app = spawn_app().await;
    for name in ["alpha", "gamma", "beta"] {
        app.make_template(name, json!({})).await;
    }
    let r = app
        .get("/v1/clustertemplates/?limit=1&sort_key=name&sort_dir=desc")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let items = r.body["clustertemplates"].as_array().expect("list");
    assert_eq!(items.len(), 1, "{}", r.text);
    assert_eq!(items[0]["name"], "gamma");
    let next = r.body["next"].as_str().expect("a full page has next");
    assert!(
        next.starts_with(&app.url("/v1/clustertemplates?")),
        "next: {next}"
    );
    assert!(
        next.contains("sort_key=name")
            && next.contains("sort_dir=desc")
            && next.contains("limit=1"),
        "{next}"
    );
    assert!(
        next.contains(&format!(
            "marker={}",
            items[0]["uuid"].as_str().expect("uuid")
        )),
        "{next}"
    );

    // The next link is followable and continues after the marker.
    let path = next.strip_prefix(&app.address).expect("same host");
    let r2 = app.get(path).await;
    assert_eq!(r2.status, 200, "{}", r2.text);
    assert_eq!(r2.body["clustertemplates"][0]["name"], "beta");
}

#[tokio::test]
async fn a_template_is_reachable_through_its_self_and_bookmark_links() {
    let app = spawn_app().await;
    let created = app.make_template("linked", json!({})).await;
    let uuid = created["uuid"].as_str().expect("uuid").to_string();
    let (self_href, bookmark) = self_and_bookmark(&created["links"]);
    assert_eq!(self_href, app.url(&format!("/v1/clustertemplates/{uuid}")));
    assert_eq!(bookmark, app.url(&format!("/clustertemplates/{uuid}")));
    for href in [&self_href, &bookmark] {
        let path = href.strip_prefix(&app.address).expect("same host");
        let r = app.get(path).await;
        assert_eq!(r.status, 200, "{href}: {}", r.text);
        assert_eq!(r.body["uuid"], uuid.as_str());
        assert_eq!(r.body["name"], "linked");
    }
    let r = app.get(&format!("/clustertemplates/{uuid}/")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["uuid"], uuid.as_str());
}

// ------------------------------------------------------------------------------------------------
// 6. Health check
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn healthcheck_answers_ok_in_plain_text_without_identity() {
    let app = spawn_app().await;
    let r = app.get_as("/healthcheck", &HeaderMap::new()).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.text, "OK");
    assert!(header(&r, "content-type").starts_with("text/plain"));
    assert!(r.header("openstack-api-version").is_none());
    let head = app
        .request(Method::HEAD, "/healthcheck", &HeaderMap::new(), None)
        .await;
    assert_eq!(head.status, 200);
    assert_eq!(head.text, "");
}

#[tokio::test]
async fn healthcheck_answers_draining_while_the_process_stops() {
    let mut draining = None;
    let app = crate::helpers::spawn_with_state(
        crate::helpers::Backend::Sqlite,
        |_| {},
        |state| draining = Some(state.draining.clone()),
    )
    .await;
    let draining = draining.expect("the state was built");
    let r = app.get_as("/healthcheck", &HeaderMap::new()).await;
    assert_eq!((r.status, r.text.as_str()), (200, "OK"));
    // What a SIGTERM raises before the server stops accepting connections.
    draining.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = app.get_as("/healthcheck", &HeaderMap::new()).await;
    assert_eq!((r.status, r.text.as_str()), (503, "DRAINING"));
    assert!(header(&r, "content-type").starts_with("text/plain"));
    // Requests in flight or on open connections are still served.
    let r = app.get_as("/v1/clusters", &app.headers).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test]
async fn healthcheck_needs_no_token_in_jwt_mode() {
    let app = spawn_jwt(JWT_SECRET).await;
    let r = app.get_as("/healthcheck", &HeaderMap::new()).await;
    assert_eq!((r.status, r.text.as_str()), (200, "OK"));
    request_id(&r);
}

// ------------------------------------------------------------------------------------------------
// 7. CORS
// ------------------------------------------------------------------------------------------------

async fn spawn_cors() -> TestApp {
    spawn_with(Backend::Postgres, |s| {
        s.cors.allowed_origin = DASHBOARD.into()
    })
    .await
}

#[tokio::test]
async fn a_preflight_from_the_allowed_origin_is_allowed() {
    let app = spawn_cors().await;
    let h = header_map(&[
        ("origin", DASHBOARD),
        ("access-control-request-method", "GET"),
        (
            "access-control-request-headers",
            "x-auth-token, openstack-api-version",
        ),
    ]);
    let r = app
        .request(Method::OPTIONS, "/v1/clustertemplates", &h, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(header(&r, "access-control-allow-origin"), DASHBOARD);
    let methods = header(&r, "access-control-allow-methods").to_ascii_uppercase();
    for m in ["GET", "POST", "PATCH", "DELETE"] {
        assert!(methods.contains(m), "{m} in {methods}");
    }
    let allowed = header(&r, "access-control-allow-headers").to_ascii_lowercase();
    assert!(
        allowed.contains("x-auth-token") && allowed.contains("openstack-api-version"),
        "{allowed}"
    );
    assert_eq!(header(&r, "access-control-max-age"), "3600");
    request_id(&r);
}

#[tokio::test]
async fn a_preflight_from_another_origin_is_not_echoed() {
    let app = spawn_cors().await;
    let h = header_map(&[
        ("origin", "https://evil.example"),
        ("access-control-request-method", "GET"),
    ]);
    let r = app
        .request(Method::OPTIONS, "/v1/clustertemplates", &h, None)
        .await;
    assert!(
        r.header("access-control-allow-origin").is_none(),
        "{:?}",
        r.headers
    );
    assert_ne!(r.status, 200, "{}", r.text);
    // Refusals are still in Magnum's error format.
    assert_eq!(r.error()["status"], r.status, "{}", r.text);

    let get = app
        .get_as(
            "/v1/clustertemplates",
            &with(app.headers.clone(), &[("origin", "https://evil.example")]),
        )
        .await;
    assert!(
        get.header("access-control-allow-origin").is_none(),
        "{:?}",
        get.headers
    );
}

#[tokio::test]
async fn a_simple_get_from_the_allowed_origin_exposes_the_request_id() {
    let app = spawn_cors().await;
    let h = with(app.headers.clone(), &[("origin", DASHBOARD)]);
    let r = app.get_as("/v1/clustertemplates", &h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"clustertemplates": []}));
    assert_eq!(header(&r, "access-control-allow-origin"), DASHBOARD);
    let exposed: Vec<String> = header(&r, "access-control-expose-headers")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    for name in ["x-openstack-request-id", "openstack-api-version"] {
        assert!(exposed.iter().any(|h| h == name), "{name} in {exposed:?}");
    }
    request_id(&r);
    // CORS adds to Vary; the microversion entry stays.
    let vary = header(&r, "vary").to_ascii_lowercase();
    assert!(
        vary.contains("openstack-api-version") && vary.contains("origin"),
        "{vary}"
    );
}

#[tokio::test]
async fn without_cors_configured_a_request_with_an_origin_works_without_cors_headers() {
    let app = spawn_app().await;
    let h = with(app.headers.clone(), &[("origin", DASHBOARD)]);
    let r = app.get_as("/v1/clustertemplates", &h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"clustertemplates": []}));
    assert!(r.header("access-control-allow-origin").is_none());
}

// ------------------------------------------------------------------------------------------------
// 8. Identity and policy in noauth mode
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn without_identity_headers_noauth_uses_the_configured_default_admin_identity() {
    let app = spawn_app().await;
    let created = app
        .make_template_as("anon", json!({}), &HeaderMap::new())
        .await;
    assert_eq!(created["project_id"], "admin");
    assert_eq!(created["user_id"], "admin");
    // The default identity is an admin: it may publish, which a member may not.
    let public = app
        .make_template_as("anon-public", json!({"public": true}), &HeaderMap::new())
        .await;
    assert_eq!(public["public"], true);
    let r = app
        .post(
            "/v1/clustertemplates",
            &json!({"name": "p", "coe": "kubernetes", "image_id": "i", "public": true}),
        )
        .await;
    r.assert_error(
        403,
        "Not authorized to set public or hidden flag for cluster template.",
    );
}

#[tokio::test]
async fn the_default_noauth_identity_comes_from_the_noauth_section() {
    let app = spawn_with(Backend::Postgres, |s| {
        s.noauth.user_id = "cli-user".into();
        s.noauth.project_id = "cli-project".into();
        s.noauth.roles = "member,reader".into();
    })
    .await;
    let created = app
        .make_template_as("cli", json!({}), &HeaderMap::new())
        .await;
    assert_eq!(
        (created["project_id"].clone(), created["user_id"].clone()),
        (json!("cli-project"), json!("cli-user"))
    );
    // Only member: the template is not visible to another project.
    let other = app.as_identity("project-b", "user-b", "member,reader");
    assert_eq!(
        app.get_as("/v1/clustertemplates", &other).await.body,
        json!({"clustertemplates": []})
    );
}

#[tokio::test]
async fn a_reader_cannot_create_a_template_but_can_list() {
    let app = spawn_app().await;
    let reader = app.as_identity("project-a", "user-r", "reader");
    let r = app
        .post_as("/v1/clustertemplates", &template_body("t"), &reader)
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow clustertemplate:create to be performed.",
    );
    let list = app.get_as("/v1/clustertemplates", &reader).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body, json!({"clustertemplates": []}));
}

#[tokio::test]
async fn a_policy_file_can_restrict_template_creation_to_admins() {
    let dir = std::env::temp_dir().join(format!("fy-policy-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("policy.yaml");
    std::fs::write(&path, "\"clustertemplate:create\": \"role:admin\"\n").expect("write policy");
    let app = spawn_with(Backend::Postgres, |s| {
        s.oslo_policy.policy_file = Some(path)
    })
    .await;

    let member = app
        .post("/v1/clustertemplates", &template_body("by-member"))
        .await;
    member.assert_error(
        403,
        "Policy doesn't allow clustertemplate:create to be performed.",
    );

    let admin = app
        .post_as(
            "/v1/clustertemplates",
            &template_body("by-admin"),
            &app.admin(),
        )
        .await;
    assert_eq!(admin.status, 201, "{}", admin.text);
    assert_eq!(admin.body["name"], "by-admin");
    assert_eq!(admin.body["project_id"], "admin-project");

    // Rules not in the file keep their defaults: the member still lists.
    let list = app.get("/v1/clustertemplates").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let _ = std::fs::remove_dir_all(dir);
}

// ------------------------------------------------------------------------------------------------
// 9. JWT
// ------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_valid_token_in_x_auth_token_identifies_the_caller_from_its_claims() {
    let app = spawn_jwt(JWT_SECRET).await;
    let token = mint(
        Algorithm::HS256,
        JWT_SECRET,
        &claims("jwt-user", "jwt-project", &["member", "reader"]),
    );
    let h = token_header(&token);
    let list = app.get_as("/v1/clustertemplates", &h).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body, json!({"clustertemplates": []}));

    let created = app.make_template_as("from-jwt", json!({}), &h).await;
    assert_eq!(created["project_id"], "jwt-project");
    assert_eq!(created["user_id"], "jwt-user");

    // Identity headers are ignored in JWT mode: they cannot override the token.
    let spoof = with(
        h.clone(),
        &[
            ("x-project-id", "other"),
            ("x-user-id", "other"),
            ("x-roles", "admin"),
        ],
    );
    let spoofed = app.make_template_as("spoofed", json!({}), &spoof).await;
    assert_eq!(spoofed["project_id"], "jwt-project");
    assert_eq!(spoofed["user_id"], "jwt-user");

    // Roles come from the token too: a reader may not create.
    let reader = mint(
        Algorithm::HS256,
        JWT_SECRET,
        &claims("jwt-reader", "jwt-project", &["reader"]),
    );
    let r = app
        .post_as(
            "/v1/clustertemplates",
            &template_body("nope"),
            &token_header(&reader),
        )
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow clustertemplate:create to be performed.",
    );
}

#[tokio::test]
async fn a_valid_bearer_token_in_authorization_is_accepted() {
    let app = spawn_jwt(JWT_SECRET).await;
    let token = mint(
        Algorithm::HS256,
        JWT_SECRET,
        &claims("bearer-user", "bearer-project", &["member"]),
    );
    let h = header_map(&[("authorization", &format!("Bearer {token}"))]);
    let created = app.make_template_as("bearer", json!({}), &h).await;
    assert_eq!(created["project_id"], "bearer-project");
    assert_eq!(created["user_id"], "bearer-user");
    let list = app.get_as("/v1/clustertemplates", &h).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body["clustertemplates"][0]["name"], "bearer");
}

#[tokio::test]
async fn a_request_without_a_token_is_401_with_a_bearer_challenge() {
    let app = spawn_jwt(JWT_SECRET).await;
    for (method, path) in [
        (Method::GET, "/v1/clustertemplates"),
        (Method::POST, "/v1/clustertemplates"),
    ] {
        let body = template_body("t");
        let r = app
            .request(
                method.clone(),
                path,
                &HeaderMap::new(),
                (method == Method::POST).then_some(&body),
            )
            .await;
        r.assert_error(401, "The request you have made requires authentication.");
        assert!(
            header(&r, "www-authenticate").starts_with("Bearer"),
            "{:?}",
            r.headers
        );
        request_id(&r);
    }
    // Nothing was created.
    let token = mint(Algorithm::HS256, JWT_SECRET, &claims("u", "p", &["admin"]));
    let list = app
        .get_as("/v1/clustertemplates", &token_header(&token))
        .await;
    assert_eq!(list.body, json!({"clustertemplates": []}));
}

#[tokio::test]
async fn expired_forged_misaddressed_unsigned_and_unpinned_tokens_are_401() {
    let app = spawn_jwt(JWT_SECRET).await;
    let good = claims("u", "p", &["member"]);

    let mut expired = good.clone();
    expired["exp"] = json!(now() - 3600);
    let mut wrong_audience = good.clone();
    wrong_audience["aud"] = json!("someone-else");
    let mut unscoped = good.clone();
    if let Some(o) = unscoped.as_object_mut() {
        o.remove("project_id");
    }
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(good.to_string())
    );

    let cases = [
        (
            "expired",
            mint(Algorithm::HS256, JWT_SECRET, &expired),
            "The token has expired.",
        ),
        (
            "another secret",
            mint(Algorithm::HS256, "not-the-secret", &good),
            "The token's signature is invalid.",
        ),
        (
            "wrong audience",
            mint(Algorithm::HS256, JWT_SECRET, &wrong_audience),
            "The token's audience is not accepted.",
        ),
        (
            "alg none",
            unsigned,
            "The token's signing algorithm none is not accepted.",
        ),
        (
            "HS384",
            mint(Algorithm::HS384, JWT_SECRET, &good),
            "The token's signing algorithm HS384 is not accepted.",
        ),
        (
            "no project",
            mint(Algorithm::HS256, JWT_SECRET, &unscoped),
            "The token is not scoped to a project.",
        ),
        (
            "garbage",
            "not-a-jwt".to_string(),
            "The token is malformed.",
        ),
    ];
    for (what, token, reason) in cases {
        for h in [
            token_header(&token),
            header_map(&[("authorization", &format!("Bearer {token}"))]),
        ] {
            let r = app.get_as("/v1/clustertemplates", &h).await;
            r.assert_error(
                401,
                &format!("The request you have made requires authentication. {reason}"),
            );
            let challenge = header(&r, "www-authenticate");
            assert!(challenge.starts_with("Bearer"), "{what}: {challenge}");
            assert!(
                !r.text.contains(&token),
                "{what}: the body echoes the token"
            );
            assert!(
                !challenge.contains(&token),
                "{what}: the challenge echoes the token"
            );
        }
    }
}

// ------------------------------------------------------------------------------------------------
// 10. Configuration
// ------------------------------------------------------------------------------------------------

#[test]
fn an_unknown_option_in_the_config_file_fails_naming_section_and_option() {
    let dir = std::env::temp_dir().join(format!("fy-conf-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("fleetyard.conf");
    for (text, message) in [
        (
            "[DEFAULT]\nhost = node-1\n[cors]\nallowed_origins = https://dashboard.example\n",
            "invalid configuration: [cors] allowed_origins: unknown option",
        ),
        (
            "[DEFAULT]\ndebug = true\n",
            "invalid configuration: [DEFAULT] debug: unknown option",
        ),
        (
            "[oslo_concurrency]\nlock_path = /tmp\n",
            "invalid configuration: unknown section [oslo_concurrency]",
        ),
    ] {
        std::fs::write(&path, text).expect("write config");
        let err =
            fleetyard::config::Settings::load(Some(&path)).expect_err("an unknown option fails");
        assert_eq!(err.to_string(), message, "{text:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
