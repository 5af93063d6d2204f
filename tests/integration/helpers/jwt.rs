//! JWTs as an identity provider would mint them for the app of `spawn_jwt` (HS256 over a
//! shared secret, audience `fleetyard`): one place for every test that signs a token.

use fleetyard::config::{AuthStrategy, Settings};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

/// The audience `spawn_jwt` apps require.
pub const AUDIENCE: &str = "fleetyard";

/// Now, in the seconds of `exp` and `iat`.
pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A member's claims: `sub`, `project_id`, `roles`, the audience, valid for ten minutes.
pub fn claims(sub: &str, project: &str, roles: &[&str]) -> Value {
    json!({"sub": sub, "project_id": project, "roles": roles, "aud": AUDIENCE, "exp": now() + 600})
}

/// `claims` over the audience and a ten-minute expiry (a key of `claims` wins).
pub fn with_defaults(claims: Value) -> Value {
    let mut full = json!({"aud": AUDIENCE, "exp": now() + 600});
    for (k, v) in claims.as_object().into_iter().flatten() {
        full[k] = v.clone();
    }
    full
}

/// `claims` signed with `secret` by the HMAC algorithm `alg`.
pub fn mint(alg: Algorithm, secret: &str, claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(alg),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("token signs")
}

/// An HS256 token of [`claims`].
pub fn hs256(secret: &str, sub: &str, project: &str, roles: &[&str]) -> String {
    mint(Algorithm::HS256, secret, &claims(sub, project, roles))
}

/// The headers that carry `token` (`X-Auth-Token`).
pub fn token_header(token: &str) -> HeaderMap {
    super::header_map(&[("x-auth-token", token)])
}

/// Settings that take HS256 tokens signed with `secret` (written to a key file of its own)
/// for [`AUDIENCE`]: what `spawn_jwt` apps run with.
pub fn hs256_settings(s: &mut Settings, secret: &str) {
    let dir = std::env::temp_dir().join(format!("fy-jwt-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let key = dir.join("secret");
    std::fs::write(&key, secret).expect("write secret");
    s.default.auth_strategy = AuthStrategy::Jwt;
    s.jwt.algorithms = "HS256".into();
    s.jwt.key_file = Some(key);
    s.jwt.audience = Some(AUDIENCE.into());
}
