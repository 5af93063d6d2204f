//! No-auth mode takes the caller's identity from the headers alone once a request names any
//! identity header: leaving a header out or empty never falls back to the configured
//! default (an admin), and a malformed value is refused with 400.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rstest::rstest;
use serde_json::json;

use crate::helpers::{spawn_app, template_body};

/// One character more than the id columns hold.
const LONG_ID: [u8; 256] = [b'p'; 256];

fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("name"),
            HeaderValue::from_bytes(value).expect("value"),
        );
    }
    h
}

#[rstest]
#[case::an_empty_project_id(
    &[("x-user-id", b"u".as_slice()), ("x-project-id", b"".as_slice()), ("x-roles", b"member".as_slice())],
    "The X-Project-Id header is required when a request names its identity in headers."
)]
#[case::roles_without_a_user(
    &[("x-roles", b"admin".as_slice())],
    "The X-User-Id header is required when a request names its identity in headers."
)]
#[case::non_ascii_roles(
    &[("x-user-id", b"u".as_slice()), ("x-project-id", b"p".as_slice()), ("x-roles", b"adm\xe9n".as_slice())],
    "The X-Roles header must be printable ASCII."
)]
#[case::a_project_id_longer_than_the_column(
    &[("x-user-id", b"u".as_slice()), ("x-project-id", LONG_ID.as_slice()), ("x-roles", b"member".as_slice())],
    "The X-Project-Id header is longer than 255 characters."
)]
#[tokio::test]
async fn a_malformed_or_partial_identity_is_refused_with_400_and_writes_nothing(
    #[case] pairs: &[(&str, &[u8])],
    #[case] sentence: &str,
) {
    let app = spawn_app().await;
    let h = headers(pairs);
    let r = app
        .post_as("/v1/clustertemplates", &template_body("t"), &h)
        .await;
    r.assert_error(400, sentence);
    let all = app.get_as("/v1/clustertemplates", &HeaderMap::new()).await;
    assert_eq!(all.body, json!({"clustertemplates": []}), "{}", all.text);
}

#[tokio::test]
async fn empty_or_missing_roles_mean_no_roles_not_the_default_admin() {
    let app = spawn_app().await;
    // The default identity (an admin) makes a private template in project "admin".
    let made = app
        .post_as(
            "/v1/clustertemplates",
            &template_body("private"),
            &HeaderMap::new(),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    for roles in [Some(""), Some("  "), None] {
        let mut pairs: Vec<(&str, &[u8])> = vec![
            ("x-user-id", b"u".as_slice()),
            ("x-project-id", b"p".as_slice()),
        ];
        if let Some(r) = roles {
            pairs.push(("x-roles", r.as_bytes()));
        }
        let h = headers(&pairs);
        let r = app
            .post_as("/v1/clustertemplates", &template_body("t"), &h)
            .await;
        r.assert_error(
            403,
            "Policy doesn't allow clustertemplate:create to be performed.",
        );
        // No roles at all: not even a reader, so no list (the default admin would see the
        // private template of project "admin").
        let listed = app.get_as("/v1/clustertemplates", &h).await;
        listed.assert_error(
            403,
            "Policy doesn't allow clustertemplate:get_all to be performed.",
        );
    }
}
