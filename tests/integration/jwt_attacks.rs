//! Attacks on JWT authentication (`auth_strategy = jwt`): every forged, stale, misaddressed,
//! malformed or oversized token gets 401 with Magnum's error body on a read
//! (`GET /v1/clusters`) and on a write (`POST /v1/clustertemplates`), in `X-Auth-Token` and in
//! `Authorization: Bearer`, and the write leaves nothing behind.
//!
//! The service under attack pins RS256 and HS256, verifies RS256 with an RSA public key file
//! and HS256 with the HMAC key of a JWKS, and requires an issuer and an audience. Accepting
//! HS256 at all is what makes the HS/RS confusion attack (an HS256 token whose HMAC secret is
//! the service's RSA public key PEM) worth trying: the PEM must never be used as a secret.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::HeaderMap;
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{header_map, spawn_with, template_body, Backend, Resp, TestApp};

const ISSUER: &str = "https://idp.example/realms/fleet";
const AUDIENCE: &str = "fleetyard";
/// The HMAC key of the service's JWKS (HS256 tokens are verified with it).
const HMAC_SECRET: &str = "jwt-attacks-hmac-secret-of-thirty-two-bytes-or-more";

const AUTH_REQUIRED: &str = "The request you have made requires authentication.";
const MALFORMED: &str = "The token is malformed.";
const BAD_SIGNATURE: &str = "The token's signature is invalid.";
const BAD_EXP: &str = "The token's 'exp' claim is invalid.";
const BAD_NBF: &str = "The token's 'nbf' claim is invalid.";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/jwt/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The app in JWT mode: RS256 (rsa_public.pem) and HS256 (an `oct` JWKS key), with an issuer
/// and an audience, and no identity headers of its own.
async fn spawn_jwt_service() -> TestApp {
    let dir = std::env::temp_dir().join(format!("fy-jwt-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let public_key = dir.join("rsa_public.pem");
    std::fs::write(&public_key, fixture("rsa_public.pem")).expect("write key");
    let jwks = dir.join("jwks.json");
    let document = json!({"keys": [{
        "kty": "oct", "kid": "hmac", "use": "sig", "alg": "HS256",
        "k": URL_SAFE_NO_PAD.encode(HMAC_SECRET),
    }]});
    std::fs::write(&jwks, document.to_string()).expect("write jwks");
    let mut app = spawn_with(Backend::Postgres, |s| {
        s.default.auth_strategy = fleetyard::config::AuthStrategy::Jwt;
        s.jwt.algorithms = "RS256,HS256".into();
        s.jwt.key_file = Some(public_key);
        s.jwt.jwks_file = Some(jwks);
        s.jwt.issuer = Some(ISSUER.into());
        s.jwt.audience = Some(AUDIENCE.into());
    })
    .await;
    app.headers.clear();
    app
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The claims of a valid member token, with `changes` applied (`null` removes a claim).
fn claims(changes: Value) -> Value {
    let mut c = json!({
        "sub": "attacker", "project_id": "project-a", "roles": ["member", "reader"],
        "iss": ISSUER, "aud": AUDIENCE, "iat": now(), "exp": now() + 600,
    });
    for (k, v) in changes.as_object().into_iter().flatten() {
        match (v, c.as_object_mut()) {
            (Value::Null, Some(o)) => {
                o.remove(k);
            }
            _ => c[k] = v.clone(),
        }
    }
    c
}

fn rsa_key(file: &str) -> EncodingKey {
    EncodingKey::from_rsa_pem(&fixture(file)).expect("RSA private key")
}

/// An RS256 token signed with the service's own private key.
fn rs256(claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        claims,
        &rsa_key("rsa_private.pem"),
    )
    .expect("token signs")
}

/// A token of `header` and `payload` JSON text exactly as given, signed with `key`.
fn signed_raw(header: &str, payload: &str, alg: Algorithm, key: &EncodingKey) -> String {
    signed_parts(&b64(header), &b64(payload), alg, key)
}

/// A token of the first two parts exactly as given (base64url or not), validly signed with
/// `key`, so that it gets past the signature check.
fn signed_parts(header: &str, payload: &str, alg: Algorithm, key: &EncodingKey) -> String {
    let message = format!("{header}.{payload}");
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, alg).expect("signs");
    format!("{message}.{signature}")
}

/// A valid RS256 token whose payload holds `registered` (raw JSON text, so that numbers no
/// JSON library would write, such as 2^64, can be sent) besides a valid identity.
fn rs256_with_raw(registered: &str) -> String {
    let payload = format!(
        r#"{{"sub":"attacker","project_id":"project-a","roles":["member"],"iss":"{ISSUER}","aud":"{AUDIENCE}",{registered}}}"#
    );
    signed_raw(
        r#"{"alg":"RS256","typ":"JWT"}"#,
        &payload,
        Algorithm::RS256,
        &rsa_key("rsa_private.pem"),
    )
}

fn b64(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// An unsigned token with `alg` in its header and `signature` as its third part.
fn unsigned(alg: &str, signature: &str) -> String {
    format!(
        "{}.{}.{signature}",
        b64(&format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#)),
        b64(&claims(json!({"roles": ["admin"]})).to_string())
    )
}

/// HS256 "signed" with the service's RSA public key PEM as the HMAC secret.
fn hs256_with_public_key_as_secret(kid: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = kid.map(String::from);
    jsonwebtoken::encode(
        &header,
        &claims(json!({})),
        &EncodingKey::from_secret(&fixture("rsa_public.pem")),
    )
    .expect("token signs")
}

/// A valid token's header and signature around another payload (admin of another project).
fn tampered_payload() -> String {
    let valid = rs256(&claims(json!({})));
    let parts: Vec<&str> = valid.split('.').collect();
    let forged = claims(json!({"project_id": "victim", "roles": ["admin", "member"]}));
    format!("{}.{}.{}", parts[0], b64(&forged.to_string()), parts[2])
}

/// A validly signed token padded to a little over 100 KiB: above the verifier's 64 KiB limit
/// on tokens, below the HTTP server's 128 KiB limit on a request's head.
fn token_of_100_kb() -> String {
    let token = rs256(&claims(json!({"padding": "x".repeat(76 * 1024)})));
    assert!(
        (100 * 1024..110 * 1024).contains(&token.len()),
        "{}",
        token.len()
    );
    token
}

/// The two ways a client sends a token.
fn carriers(token: &str) -> [(&'static str, HeaderMap); 2] {
    [
        ("X-Auth-Token", header_map(&[("x-auth-token", token)])),
        (
            "Authorization: Bearer",
            header_map(&[("authorization", &format!("Bearer {token}"))]),
        ),
    ]
}

#[track_caller]
fn assert_refused(r: &Resp, reason: &str, token: &str, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.text);
    r.assert_error(401, &format!("{AUTH_REQUIRED} {reason}"));
    assert_eq!(r.error()["code"], "client", "{what}");
    assert_eq!(
        r.error()["title"],
        "The request you have made requires authentication"
    );
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(challenge.starts_with("Bearer"), "{what}: {challenge:?}");
    // Nothing of the token comes back (its signature part is the least likely to occur by chance).
    let tail = token.rsplit('.').next().unwrap_or(token);
    if tail.len() >= 16 {
        assert!(!r.text.contains(tail), "{what}: the body echoes the token");
        assert!(!challenge.contains(tail), "{what}: the challenge echoes it");
    }
}

async fn template_rows(app: &TestApp) -> i64 {
    let pool = sqlx::PgPool::connect(&app.db.url).await.expect("connects");
    let (n,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM cluster_template WHERE project_id <> ''")
            .fetch_one(&pool)
            .await
            .expect("counts");
    pool.close().await;
    n
}

#[rstest]
#[case::an_unsigned_token_with_alg_none(
    unsigned("none", ""),
    "The token's signing algorithm none is not accepted."
)]
#[case::an_unsigned_token_with_alg_none_in_capitals(
    unsigned("NONE", ""),
    "The token's signing algorithm NONE is not accepted."
)]
#[case::an_alg_none_token_carrying_a_signature_anyway(
    unsigned("none", &b64("signature")),
    "The token's signing algorithm none is not accepted.")]
#[case::an_hs256_token_whose_secret_is_the_services_rsa_public_key(
    hs256_with_public_key_as_secret(None),
    BAD_SIGNATURE
)]
#[case::an_hs256_token_whose_secret_is_the_public_key_and_whose_kid_names_the_hmac_key(
    hs256_with_public_key_as_secret(Some("hmac")),
    BAD_SIGNATURE
)]
#[case::an_hs256_token_whose_secret_is_the_public_key_and_whose_kid_names_no_key(
    hs256_with_public_key_as_secret(Some("rsa")),
    "The token's signing algorithm HS256 is not accepted."
)]
#[case::an_expired_token(
    rs256(&claims(json!({"exp": now() - 3600}))),
    "The token has expired.")]
#[case::a_token_without_an_expiry(
    rs256(&claims(json!({"exp": null}))),
    "The token has no 'exp' claim.")]
#[case::a_token_not_valid_yet(
    rs256(&claims(json!({"nbf": now() + 3600}))),
    "The token is not valid yet.")]
#[case::a_token_not_valid_yet_by_a_fractional_not_before(
    rs256_with_raw(&format!(r#""exp":{},"nbf":{}.5"#, now() + 7200, now() + 3600)),
    "The token is not valid yet.")]
#[case::a_token_not_valid_before_the_largest_64_bit_time(
    rs256_with_raw(&format!(r#""exp":{},"nbf":18446744073709551615"#, now() + 600)),
    "The token is not valid yet.")]
#[case::an_expiry_of_1e30(rs256_with_raw(r#""exp":1e30"#), BAD_EXP)]
#[case::an_expiry_of_2_to_the_64(rs256_with_raw(r#""exp":18446744073709551616"#), BAD_EXP)]
#[case::a_negative_expiry(rs256_with_raw(r#""exp":-1"#), BAD_EXP)]
#[case::a_not_before_of_1e30(
    rs256_with_raw(&format!(r#""exp":{},"nbf":1e30"#, now() + 600)),
    BAD_NBF)]
#[case::a_not_before_of_2_to_the_64(
    rs256_with_raw(&format!(r#""exp":{},"nbf":18446744073709551616"#, now() + 600)),
    BAD_NBF)]
#[case::a_negative_not_before(
    rs256_with_raw(&format!(r#""exp":{},"nbf":-1"#, now() + 600)),
    BAD_NBF)]
#[case::a_token_of_another_issuer(
    rs256(&claims(json!({"iss": "https://evil.example"}))),
    "The token's issuer is not accepted.")]
#[case::a_token_naming_the_issuer_among_others(
    rs256(&claims(json!({"iss": [ISSUER, "https://evil.example"]}))),
    "The token's issuer is not accepted.")]
#[case::a_token_without_an_issuer(
    rs256(&claims(json!({"iss": null}))),
    "The token has no 'iss' claim.")]
#[case::a_token_for_another_audience(
    rs256(&claims(json!({"aud": "another-service"}))),
    "The token's audience is not accepted.")]
#[case::a_token_for_other_audiences_only(
    rs256(&claims(json!({"aud": ["another-service", "fleetyard-admin"]}))),
    "The token's audience is not accepted.")]
#[case::a_token_without_an_audience(
    rs256(&claims(json!({"aud": null}))),
    "The token has no 'aud' claim.")]
#[case::a_valid_signature_over_another_payload(tampered_payload(), BAD_SIGNATURE)]
#[case::a_token_signed_by_another_rsa_key(
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims(json!({})),
        &rsa_key("rsa2_private.pem")).expect("signs"),
    BAD_SIGNATURE)]
#[case::an_hs256_token_signed_with_another_secret(
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims(json!({})),
        &EncodingKey::from_secret(b"not-the-services-secret")).expect("signs"),
    BAD_SIGNATURE)]
#[case::a_token_of_two_parts(
    { let t = rs256(&claims(json!({}))); t[..t.rfind('.').expect("dot")].to_string() },
    MALFORMED)]
#[case::a_token_of_four_parts(format!("{}.{}", rs256(&claims(json!({}))), b64("x")), MALFORMED)]
#[case::a_token_of_one_word("not-a-jwt".to_string(), MALFORMED)]
#[case::a_token_of_three_parts_that_are_not_base64("!!!.@@@.$$$".to_string(), MALFORMED)]
#[case::a_token_whose_header_is_not_json(
    format!("{}.{}.{}", b64("{not json"), b64(&claims(json!({})).to_string()), b64("sig")),
    MALFORMED)]
#[case::a_validly_signed_token_whose_payload_is_not_base64(
    signed_parts(&b64(r#"{"alg":"RS256"}"#), "%%%not-base64%%%", Algorithm::RS256,
        &rsa_key("rsa_private.pem")),
    MALFORMED)]
#[case::a_token_whose_payload_was_replaced_by_text_that_is_not_base64(
    { let t = rs256(&claims(json!({}))); let p: Vec<&str> = t.split('.').collect();
      format!("{}.%%%not-base64%%%.{}", p[0], p[2]) },
    BAD_SIGNATURE)]
#[case::a_token_whose_payload_is_not_json(
    signed_raw(r#"{"alg":"RS256"}"#, "not json", Algorithm::RS256, &rsa_key("rsa_private.pem")),
    MALFORMED)]
#[case::a_token_of_100_kb(token_of_100_kb(), MALFORMED)]
#[tokio::test]
async fn an_attack_token_is_refused_with_401_and_magnums_body_and_writes_nothing(
    #[case] token: String,
    #[case] reason: &str,
) {
    let app = spawn_jwt_service().await;
    for (carrier, h) in carriers(&token) {
        let read = app.get_as("/v1/clusters", &h).await;
        assert_refused(&read, reason, &token, &format!("GET via {carrier}"));

        let write = app
            .request(
                Method::POST,
                "/v1/clustertemplates",
                &h,
                Some(&template_body("forged")),
            )
            .await;
        assert_refused(&write, reason, &token, &format!("POST via {carrier}"));
    }
    assert_eq!(template_rows(&app).await, 0, "a refused POST wrote a row");
}

/// The positive control: the same service accepts a valid token of each pinned algorithm, for
/// reads and writes, so the refusals above are the tokens' doing.
#[rstest]
#[case::a_valid_rs256_token(rs256(&claims(json!({}))))]
#[case::a_valid_hs256_token_signed_with_the_jwks_secret(
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims(json!({})),
        &EncodingKey::from_secret(HMAC_SECRET.as_bytes())).expect("signs"))]
#[case::a_valid_rs256_token_not_valid_before_now(rs256(&claims(json!({"nbf": now() - 10}))))]
#[case::a_valid_rs256_token_with_fractional_nbf_iat_and_exp(rs256_with_raw(&format!(
    r#""exp":{}.5,"nbf":{}.5,"iat":{}.25"#, now() + 600, now() - 10, now() - 10)))]
#[tokio::test]
async fn a_valid_token_is_accepted_for_reads_and_writes(#[case] token: String) {
    let app = spawn_jwt_service().await;
    for (carrier, h) in carriers(&token) {
        let read = app.get_as("/v1/clusters", &h).await;
        assert_eq!(read.status, 200, "GET via {carrier}: {}", read.text);
        assert_eq!(read.body, json!({"clusters": []}), "GET via {carrier}");
    }
    let [(_, h), _] = carriers(&token);
    let write = app
        .request(
            Method::POST,
            "/v1/clustertemplates",
            &h,
            Some(&template_body("genuine")),
        )
        .await;
    assert_eq!(write.status, 201, "{}", write.text);
    assert_eq!(write.body["project_id"], "project-a");
    assert_eq!(write.body["user_id"], "attacker");
    assert_eq!(template_rows(&app).await, 1);
}
