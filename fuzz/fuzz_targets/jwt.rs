//! Bearer tokens, verified with an HS256 test key: the input as a whole token, and the input as
//! a header and a claims set (split at the first NUL byte) signed with the test key, so that the
//! claim checks (times, issuer, audience, identity claims) are reached past the signature.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use fleetyard::auth::token::TokenVerifier;
use fleetyard::config::JwtSettings;
use libfuzzer_sys::fuzz_target;

const SECRET: &[u8] = b"fleetyard-fuzz-hs256-secret-of-32-bytes!";

fn verifier() -> &'static TokenVerifier {
    static VERIFIER: OnceLock<TokenVerifier> = OnceLock::new();
    VERIFIER.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("fleetyard-fuzz-{}.key", std::process::id()));
        std::fs::write(&path, SECRET).expect("write the test key");
        let settings = JwtSettings {
            algorithms: "HS256,HS384".into(),
            key_file: Some(PathBuf::from(&path)),
            issuer: Some("https://issuer.example".into()),
            audience: Some("fleetyard".into()),
            roles_claim: "realm_access.roles".into(),
            ..JwtSettings::default()
        };
        let verifier = TokenVerifier::from_settings(&settings).expect("test verifier");
        let _ = std::fs::remove_file(&path);
        verifier
    })
}

fn signed(header: &[u8], claims: &[u8]) -> String {
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET);
    let tag = ring::hmac::sign(&key, signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

fuzz_target!(|data: &[u8]| {
    let verifier = verifier();
    if let Ok(token) = std::str::from_utf8(data) {
        let _ = verifier.verify(token);
    }
    let (header, claims): (&[u8], &[u8]) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (br#"{"alg":"HS256","typ":"JWT"}"#, data),
    };
    let _ = verifier.verify(&signed(header, claims));
});
