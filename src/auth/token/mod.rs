//! JWT bearer-token verification for the Fleetyard API.
//!
//! A [`TokenVerifier`] is built once at start-up from the `[jwt]` section of `fleetyard.conf`
//! ([`JwtSettings`]) and then shared by every worker. It checks a token's signature against the
//! configured key(s), its registered claims (`exp`, `nbf`, `iss`, `aud`) and maps the configured
//! identity claims to a [`TokenIdentity`].
//!
//! Security notes:
//! * Algorithms are pinned: the token header's `alg` must be one of `[jwt] algorithms`, and
//!   `none` is never supported.
//! * Every key is tied to an algorithm family (HMAC, RSA, EC P-256, EC P-384). A token is only
//!   verified with a key of its own family, so an HS256 token "signed" with an RSA public key
//!   (the RS/HS confusion attack) is refused; PEM files are never used as HMAC secrets.
//! * Keys embedded in or referenced by the token header (`jwk`, `jku`, `x5u`, `x5c`) are ignored.
//! * Error messages never contain the token or values taken from it, except a recognised
//!   algorithm name.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use crate::config::JwtSettings;

mod keys;

use keys::*;

/// Largest accepted leeway, in seconds (one day).
pub const MAX_LEEWAY_SECS: u64 = 86_400;

/// Largest token accepted by [`TokenVerifier::verify`], in bytes.
pub const MAX_TOKEN_LEN: usize = 64 * 1024;

/// Largest key or JWKS file read at start-up, in bytes.
const MAX_KEY_FILE_LEN: u64 = 1024 * 1024;

/// Algorithms that may be listed in `[jwt] algorithms`, with their canonical (header) names.
const SUPPORTED_ALGORITHMS: [(&str, Algorithm); 9] = [
    ("HS256", Algorithm::HS256),
    ("HS384", Algorithm::HS384),
    ("HS512", Algorithm::HS512),
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
];

/// The identity carried by a verified token.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenIdentity {
    pub user_id: String,
    pub project_id: Option<String>,
    pub roles: Vec<String>,
    pub domain_id: Option<String>,
}

/// Start-up configuration problems. The message is one line naming the `[jwt]` option at fault.
#[derive(Debug, thiserror::Error)]
pub enum TokenConfigError {
    /// Neither `key_file` nor `jwks_file` is set.
    #[error("[jwt] key_file: no verification key is configured; set key_file or jwks_file")]
    NoKey,
    /// A key or JWKS file could not be read.
    #[error("[jwt] {option}: cannot read {}: {reason}", path.display())]
    Unreadable {
        option: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// A key or JWKS file was read but holds no usable key.
    #[error("[jwt] {option}: {} is not usable: {reason}", path.display())]
    InvalidKey {
        option: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// `algorithms` lists something not supported (e.g. `none`).
    #[error("[jwt] algorithms: unsupported algorithm '{0}'")]
    UnsupportedAlgorithm(String),
    /// `algorithms` is empty.
    #[error("[jwt] algorithms: no algorithm is listed")]
    NoAlgorithms,
    /// An algorithm is listed but no configured key can verify it.
    #[error("[jwt] algorithms: no configured key (key_file or jwks_file) can verify {0} tokens")]
    NoKeyForAlgorithm(String),
    /// A claim-name option is empty.
    #[error("[jwt] {option}: must not be empty")]
    EmptyClaimName { option: &'static str },
    /// `leeway` is unreasonably large.
    #[error("[jwt] leeway: {value} seconds is too large (at most {max})")]
    LeewayTooLarge { value: u64, max: u64 },
}

/// Why a token was refused. The message is a sentence fit for an HTTP 401 body; it never
/// contains the token.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TokenError {
    /// Not three base64url parts, bad JSON, oversized, unsupported header, ...
    #[error("The token is malformed.")]
    Malformed,
    /// The header `alg` is not pinned, is `none`, or does not match the key's family.
    /// Holds the algorithm name when it is a recognisable one, else "(unknown)".
    #[error("The token's signing algorithm {0} is not accepted.")]
    AlgorithmNotAccepted(String),
    /// The header `kid` names no configured key.
    #[error("The token's signing key is not known.")]
    UnknownKey,
    /// Several keys are configured and the token has no `kid`.
    #[error("The token does not identify its signing key.")]
    KeyIdRequired,
    #[error("The token's signature is invalid.")]
    InvalidSignature,
    #[error("The token has expired.")]
    Expired,
    #[error("The token is not valid yet.")]
    NotYetValid,
    #[error("The token's issuer is not accepted.")]
    IssuerNotAccepted,
    #[error("The token's audience is not accepted.")]
    AudienceNotAccepted,
    /// A required claim is absent; holds the claim name (from configuration, never from the token).
    #[error("The token has no '{0}' claim.")]
    MissingClaim(String),
    /// A claim has the wrong type or an empty value; holds the claim name.
    #[error("The token's '{0}' claim is invalid.")]
    InvalidClaim(String),
    /// Anything else the verification library reported.
    #[error("The token could not be verified.")]
    VerificationFailed,
}

/// Verifies bearer tokens. Build once with [`TokenVerifier::from_settings`] and share it
/// (it is `Send + Sync`).
pub struct TokenVerifier {
    algorithms: Vec<Algorithm>,
    file_key: Option<VerifierKey>,
    jwks_keys: Vec<VerifierKey>,
    /// Validation template (`exp`, `nbf`, `iss`, `aud`); `algorithms` is set per token to the
    /// (pinned) header algorithm.
    validation: Validation,
    user_id_claim: String,
    project_id_claim: String,
    roles_claim: String,
    domain_id_claim: String,
}

impl fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("algorithms", &self.algorithm_names())
            .field("file_key", &self.file_key)
            .field("jwks_keys", &self.jwks_keys)
            .field("issuer", &self.validation.iss)
            .field("audience", &self.validation.aud)
            .field("leeway", &self.validation.leeway)
            .finish_non_exhaustive()
    }
}

/// Claim names must not be empty; the leeway is bounded.
fn check_claims_and_leeway(s: &JwtSettings) -> Result<(), TokenConfigError> {
    let claim_names = [
        ("user_id_claim", &s.user_id_claim),
        ("project_id_claim", &s.project_id_claim),
        ("roles_claim", &s.roles_claim),
        ("domain_id_claim", &s.domain_id_claim),
    ];
    for (option, name) in claim_names {
        if name.trim().is_empty() {
            return Err(TokenConfigError::EmptyClaimName { option });
        }
    }
    if s.leeway > MAX_LEEWAY_SECS {
        return Err(TokenConfigError::LeewayTooLarge {
            value: s.leeway,
            max: MAX_LEEWAY_SECS,
        });
    }
    Ok(())
}

/// The `key_file` key and the `jwks_file` keys; every pinned algorithm needs a key that can
/// verify it, and a `key_file` key must verify at least one of them.
fn load_keys(
    s: &JwtSettings,
    algorithms: &[Algorithm],
) -> Result<(Option<VerifierKey>, Vec<VerifierKey>), TokenConfigError> {
    let key_file = non_empty_path(s.key_file.as_deref());
    let jwks_file = non_empty_path(s.jwks_file.as_deref());
    if key_file.is_none() && jwks_file.is_none() {
        return Err(TokenConfigError::NoKey);
    }
    let file_key = key_file.map(load_key_file).transpose()?;
    let jwks_keys = match jwks_file {
        Some(path) => load_jwks(path)?,
        None => Vec::new(),
    };
    if let (Some(key), Some(path)) = (&file_key, key_file) {
        if !algorithms.iter().any(|alg| key.can_verify(*alg)) {
            return Err(TokenConfigError::InvalidKey {
                option: "key_file",
                path: path.to_path_buf(),
                reason: format!(
                    "it holds an {} which cannot verify any configured algorithm ({})",
                    key.kind.describe(),
                    names(algorithms)
                ),
            });
        }
    }
    for alg in algorithms {
        let usable = file_key
            .iter()
            .chain(jwks_keys.iter())
            .any(|k| k.can_verify(*alg));
        if !usable {
            return Err(TokenConfigError::NoKeyForAlgorithm(
                algorithm_name(*alg).to_string(),
            ));
        }
    }
    Ok((file_key, jwks_keys))
}

/// What jsonwebtoken checks: `exp` always, `nbf` when present, `iss` and `aud` when
/// configured (then also required), with the configured leeway.
fn validation(s: &JwtSettings, algorithms: &[Algorithm]) -> Validation {
    let issuer = non_empty_string(s.issuer.as_deref());
    let audience = non_empty_string(s.audience.as_deref());
    let mut validation = Validation::new(algorithms[0]);
    validation.leeway = s.leeway;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    let mut required: HashSet<String> = HashSet::from(["exp".to_string()]);
    if let Some(iss) = &issuer {
        validation.set_issuer(&[iss.as_str()]);
        required.insert("iss".to_string());
    }
    match &audience {
        Some(aud) => {
            validation.set_audience(&[aud.as_str()]);
            validation.validate_aud = true;
            required.insert("aud".to_string());
        }
        None => validation.validate_aud = false,
    }
    validation.required_spec_claims = required;
    validation
}

impl TokenVerifier {
    /// Builds a verifier, loading and checking the configured keys.
    pub fn from_settings(s: &JwtSettings) -> Result<TokenVerifier, TokenConfigError> {
        let algorithms = parse_algorithms(&s.algorithms)?;

        check_claims_and_leeway(s)?;
        let (file_key, jwks_keys) = load_keys(s, &algorithms)?;
        let validation = validation(s, &algorithms);
        Ok(TokenVerifier {
            algorithms,
            file_key,
            jwks_keys,
            validation,
            user_id_claim: s.user_id_claim.trim().to_string(),
            project_id_claim: s.project_id_claim.trim().to_string(),
            roles_claim: s.roles_claim.trim().to_string(),
            domain_id_claim: s.domain_id_claim.trim().to_string(),
        })
    }

    /// The pinned algorithms, by their canonical names.
    pub fn algorithm_names(&self) -> Vec<&'static str> {
        self.algorithms.iter().map(|a| algorithm_name(*a)).collect()
    }

    /// Verifies a bearer token (without the `Bearer ` prefix) and returns its identity.
    pub fn verify(&self, token: &str) -> Result<TokenIdentity, TokenError> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed);
        }
        let alg = self.pinned_header_algorithm(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.alg != alg {
            return Err(TokenError::Malformed);
        }
        let key = self.select_key(header.kid.as_deref(), alg)?;

        let mut validation = self.validation.clone();
        validation.algorithms = vec![alg];
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| map_library_error(e, token, alg))?;
        let claims = data.claims;

        self.check_registered_claims(&claims)?;
        self.identity(&claims)
    }

    /// Reads the header's `alg` as a plain string and checks it against the pinned list
    /// before anything else looks at the token.
    fn pinned_header_algorithm(&self, token: &str) -> Result<Algorithm, TokenError> {
        let mut parts = token.split('.');
        let (Some(header_b64), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let header_json = URL_SAFE_NO_PAD
            .decode(header_b64)
            .map_err(|_| TokenError::Malformed)?;
        let header: Map<String, Value> =
            serde_json::from_slice(&header_json).map_err(|_| TokenError::Malformed)?;
        let Some(Value::String(alg_name)) = header.get("alg") else {
            return Err(TokenError::Malformed);
        };
        let pinned = self
            .algorithms
            .iter()
            .copied()
            .find(|a| algorithm_name(*a) == alg_name.as_str());
        let Some(alg) = pinned else {
            return Err(TokenError::AlgorithmNotAccepted(printable_algorithm(
                alg_name,
            )));
        };
        // No header extensions are understood, so critical ones must be refused (RFC 7515 4.1.11).
        if header.contains_key("crit") {
            return Err(TokenError::Malformed);
        }
        Ok(alg)
    }

    /// Chooses the verification key:
    /// * a token with a `kid` uses the JWKS key with that id; if there is none, the `key_file`
    ///   key (which has no id) if configured, else the token is refused;
    /// * a token without a `kid` uses the `key_file` key if it fits the algorithm, else the
    ///   JWKS key if the JWKS holds exactly one.
    ///
    /// The chosen key must belong to the token's algorithm family (and match a JWK's own `alg`),
    /// which is what defeats the RS/HS confusion attack.
    fn select_key(&self, kid: Option<&str>, alg: Algorithm) -> Result<&VerifierKey, TokenError> {
        let refused = || TokenError::AlgorithmNotAccepted(algorithm_name(alg).to_string());
        let chosen = match kid {
            Some(kid) => match self
                .jwks_keys
                .iter()
                .find(|k| k.kid.as_deref() == Some(kid))
            {
                Some(key) => key,
                None => self.file_key.as_ref().ok_or(TokenError::UnknownKey)?,
            },
            None => match (&self.file_key, self.jwks_keys.as_slice()) {
                (Some(key), _) if key.can_verify(alg) => key,
                (_, [only]) => only,
                (Some(_), []) => return Err(refused()),
                (None, []) => return Err(TokenError::UnknownKey),
                (_, _) => return Err(TokenError::KeyIdRequired),
            },
        };
        if !chosen.can_verify(alg) {
            return Err(refused());
        }
        Ok(chosen)
    }

    /// Checks beyond what jsonwebtoken validates (which is the value of `exp`, `nbf`, `iss` and
    /// `aud`): `nbf` must be a number, and a required `iss` a single string, where jsonwebtoken
    /// skips an `nbf` it cannot read and accepts an array of issuers holding the expected one.
    fn check_registered_claims(&self, claims: &Map<String, Value>) -> Result<(), TokenError> {
        // jsonwebtoken reads `exp` and `nbf` as NumericDate seconds (a fraction is rounded, as
        // RFC 7519 allows) and refuses an `exp` it cannot read, but skips such an `nbf`: a
        // negative or overflowing `nbf` is refused here, as the same `exp` is.
        match claims.get("nbf") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if numeric_date(n) => {}
            Some(_) => return Err(TokenError::InvalidClaim("nbf".to_string())),
        }
        if self.validation.iss.is_some() && !claims.get("iss").is_some_and(Value::is_string) {
            return Err(TokenError::IssuerNotAccepted);
        }
        Ok(())
    }

    fn identity(&self, claims: &Map<String, Value>) -> Result<TokenIdentity, TokenError> {
        let user_id = match lookup_claim(claims, &self.user_id_claim) {
            None | Some(Value::Null) => {
                return Err(TokenError::MissingClaim(self.user_id_claim.clone()))
            }
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(_) => return Err(TokenError::InvalidClaim(self.user_id_claim.clone())),
        };
        let project_id = optional_string_claim(claims, &self.project_id_claim)?;
        let domain_id = optional_string_claim(claims, &self.domain_id_claim)?;
        let roles = roles_claim(claims, &self.roles_claim)?;
        Ok(TokenIdentity {
            user_id,
            project_id,
            roles,
            domain_id,
        })
    }
}

/// Whether a JSON number is a NumericDate jsonwebtoken reads: whole or fractional seconds, not
/// negative, below 2^64 (its own bound for `exp`).
fn numeric_date(n: &serde_json::Number) -> bool {
    n.as_u64().is_some()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f >= 0.0 && f < u64::MAX as f64)
}

/// Finds a claim by exact top-level name, or else by a dotted path into nested objects
/// (e.g. `realm_access.roles`).
fn lookup_claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(name) {
        return Some(v);
    }
    if !name.contains('.') {
        return None;
    }
    let mut segments = name.split('.');
    let first = segments.next()?;
    let mut current = claims.get(first)?;
    for segment in segments {
        current = current.as_object()?.get(segment)?;
    }
    Some(current)
}

fn optional_string_claim(
    claims: &Map<String, Value>,
    name: &str,
) -> Result<Option<String>, TokenError> {
    match lookup_claim(claims, name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(TokenError::InvalidClaim(name.to_string())),
    }
}

fn roles_claim(claims: &Map<String, Value>, name: &str) -> Result<Vec<String>, TokenError> {
    let mut roles: Vec<String> = Vec::new();
    let mut push = |role: &str| {
        let role = role.trim();
        if !role.is_empty() && !roles.iter().any(|r| r == role) {
            roles.push(role.to_string());
        }
    };
    match lookup_claim(claims, name) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => s.split(',').for_each(&mut push),
        Some(Value::Array(items)) => {
            for item in items {
                match item {
                    Value::String(s) => push(s),
                    _ => return Err(TokenError::InvalidClaim(name.to_string())),
                }
            }
        }
        Some(_) => return Err(TokenError::InvalidClaim(name.to_string())),
    }
    Ok(roles)
}

fn map_library_error(
    error: jsonwebtoken::errors::Error,
    token: &str,
    alg: Algorithm,
) -> TokenError {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::Json(_) => {
            // The header was already parsed successfully, so this is the payload: report a
            // registered claim of the wrong type by name when that is the cause.
            mistyped_registered_claim(token)
                .map(|claim| TokenError::InvalidClaim(claim.to_string()))
                .unwrap_or(TokenError::Malformed)
        }
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => {
            TokenError::Malformed
        }
        ErrorKind::InvalidSignature => TokenError::InvalidSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::IssuerNotAccepted,
        ErrorKind::InvalidAudience => TokenError::AudienceNotAccepted,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
            TokenError::AlgorithmNotAccepted(algorithm_name(alg).to_string())
        }
        ErrorKind::MissingRequiredClaim(claim) => {
            // Claims are only validated after the signature was verified, so looking at the
            // payload again here only refines the message.
            if claim_present(token, claim) {
                TokenError::InvalidClaim(claim.clone())
            } else {
                TokenError::MissingClaim(claim.clone())
            }
        }
        ErrorKind::InvalidSubject => TokenError::InvalidClaim("sub".to_string()),
        _ => TokenError::VerificationFailed,
    }
}

/// The token's payload as a JSON object, if it is one. Only used to refine error messages.
fn payload_object(token: &str) -> Option<Map<String, Value>> {
    let payload_b64 = token.split('.').nth(1)?;
    let payload = URL_SAFE_NO_PAD.decode(payload_b64).ok()?;
    serde_json::from_slice(&payload).ok()
}

fn claim_present(token: &str, claim: &str) -> bool {
    payload_object(token).is_some_and(|claims| claims.get(claim).is_some_and(|v| !v.is_null()))
}

/// The first registered claim whose JSON type jsonwebtoken cannot accept.
fn mistyped_registered_claim(token: &str) -> Option<&'static str> {
    let claims = payload_object(token)?;
    fn string_or_strings(v: &Value) -> bool {
        match v {
            Value::String(_) => true,
            Value::Array(items) => items.iter().all(Value::is_string),
            _ => false,
        }
    }
    type ClaimCheck = (&'static str, fn(&Value) -> bool);
    let checks: [ClaimCheck; 5] = [
        ("exp", Value::is_number),
        ("nbf", Value::is_number),
        ("sub", Value::is_string),
        ("iss", string_or_strings),
        ("aud", string_or_strings),
    ];
    checks
        .into_iter()
        .find_map(|(name, ok)| match claims.get(name) {
            Some(v) if !v.is_null() && !ok(v) => Some(name),
            _ => None,
        })
}

fn algorithm_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        Algorithm::RS256 => "RS256",
        Algorithm::RS384 => "RS384",
        Algorithm::RS512 => "RS512",
        Algorithm::PS256 => "PS256",
        Algorithm::PS384 => "PS384",
        Algorithm::PS512 => "PS512",
        Algorithm::EdDSA => "EdDSA",
    }
}

fn names(algorithms: &[Algorithm]) -> String {
    algorithms
        .iter()
        .map(|a| algorithm_name(*a))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An algorithm name from a token header, echoed only if it looks like an algorithm name.
fn printable_algorithm(name: &str) -> String {
    let plausible = !name.is_empty()
        && name.len() <= 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'+');
    if plausible {
        name.to_string()
    } else {
        "(unknown)".to_string()
    }
}

fn parse_algorithms(list: &str) -> Result<Vec<Algorithm>, TokenConfigError> {
    let mut algorithms = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let upper = entry.to_ascii_uppercase();
        let found = SUPPORTED_ALGORITHMS
            .iter()
            .find(|(name, _)| *name == upper)
            .map(|(_, alg)| *alg);
        let Some(alg) = found else {
            return Err(TokenConfigError::UnsupportedAlgorithm(
                entry.escape_debug().to_string(),
            ));
        };
        if !algorithms.contains(&alg) {
            algorithms.push(alg);
        }
    }
    if algorithms.is_empty() {
        return Err(TokenConfigError::NoAlgorithms);
    }
    Ok(algorithms)
}

fn non_empty_path(path: Option<&Path>) -> Option<&Path> {
    path.filter(|p| !p.as_os_str().is_empty())
}

fn non_empty_string(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::json;
    use std::time::{SystemTime, UNIX_EPOCH};

    macro_rules! fixture {
        ($file:literal) => {
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/", $file)
        };
    }

    fn now() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap()
    }

    fn read(path: &str) -> Vec<u8> {
        std::fs::read(path).unwrap()
    }

    fn settings(algorithms: &str) -> JwtSettings {
        JwtSettings {
            algorithms: algorithms.to_string(),
            ..JwtSettings::default()
        }
    }

    fn with_key(algorithms: &str, key_file: &str) -> JwtSettings {
        JwtSettings {
            key_file: Some(PathBuf::from(key_file)),
            ..settings(algorithms)
        }
    }

    fn with_jwks(algorithms: &str, jwks_file: &str) -> JwtSettings {
        JwtSettings {
            jwks_file: Some(PathBuf::from(jwks_file)),
            ..settings(algorithms)
        }
    }

    fn verifier(s: &JwtSettings) -> TokenVerifier {
        TokenVerifier::from_settings(s).unwrap()
    }

    fn config_error(s: &JwtSettings) -> String {
        let message = TokenVerifier::from_settings(s).unwrap_err().to_string();
        assert!(!message.contains('\n'), "not one line: {message}");
        message
    }

    fn claims() -> Value {
        json!({
            "sub": "user-1",
            "project_id": "project-1",
            "domain_id": "default",
            "roles": ["admin", "member"],
            "exp": now() + 600,
        })
    }

    fn hs_secret() -> Vec<u8> {
        let mut secret = read(fixture!("hs256.secret"));
        while secret.last() == Some(&b'\n') {
            secret.pop();
        }
        secret
    }

    fn sign(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_string);
        encode(&header, claims, key).unwrap()
    }

    fn hs256(claims: &Value) -> String {
        sign(
            Algorithm::HS256,
            None,
            &EncodingKey::from_secret(&hs_secret()),
            claims,
        )
    }

    fn rsa_key() -> EncodingKey {
        EncodingKey::from_rsa_pem(&read(fixture!("rsa_private.pem"))).unwrap()
    }

    fn rs256(kid: Option<&str>, claims: &Value) -> String {
        sign(Algorithm::RS256, kid, &rsa_key(), claims)
    }

    fn hs_verifier() -> TokenVerifier {
        verifier(&with_key("HS256", fixture!("hs256.secret")))
    }

    fn rs_verifier() -> TokenVerifier {
        verifier(&with_key("RS256", fixture!("rsa_public.pem")))
    }

    fn b64(value: &Value) -> String {
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    fn expected_identity() -> TokenIdentity {
        TokenIdentity {
            user_id: "user-1".to_string(),
            project_id: Some("project-1".to_string()),
            roles: vec!["admin".to_string(), "member".to_string()],
            domain_id: Some("default".to_string()),
        }
    }

    // ---- accepted tokens -------------------------------------------------------------------

    #[test]
    fn hs256_token_signed_with_the_shared_secret_is_accepted() {
        let identity = hs_verifier().verify(&hs256(&claims())).unwrap();
        assert_eq!(identity, expected_identity());
    }

    #[test]
    fn hs_secret_file_has_its_trailing_newline_trimmed() {
        // The fixture ends with a newline; signing with the secret including it must fail.
        let raw = read(fixture!("hs256.secret"));
        assert_eq!(raw.last(), Some(&b'\n'));
        let token = sign(
            Algorithm::HS256,
            None,
            &EncodingKey::from_secret(&raw),
            &claims(),
        );
        assert_eq!(
            hs_verifier().verify(&token),
            Err(TokenError::InvalidSignature)
        );
    }

    #[test]
    fn rs256_token_signed_with_the_rsa_key_is_accepted() {
        let identity = rs_verifier().verify(&rs256(None, &claims())).unwrap();
        assert_eq!(identity, expected_identity());
    }

    #[test]
    fn ps256_and_rs512_tokens_are_accepted_when_pinned() {
        let v = verifier(&with_key("PS256, rs512", fixture!("rsa_public.pem")));
        for alg in [Algorithm::PS256, Algorithm::RS512] {
            let token = sign(alg, None, &rsa_key(), &claims());
            assert_eq!(v.verify(&token).unwrap(), expected_identity());
        }
    }

    #[test]
    fn es256_token_signed_with_the_ec_key_is_accepted() {
        let v = verifier(&with_key("ES256", fixture!("ec_public.pem")));
        let key = EncodingKey::from_ec_pem(&read(fixture!("ec_private.pem"))).unwrap();
        let token = sign(Algorithm::ES256, None, &key, &claims());
        assert_eq!(v.verify(&token).unwrap(), expected_identity());
    }

    #[test]
    fn jwks_key_is_chosen_by_kid() {
        let v = verifier(&with_jwks("RS256", fixture!("jwks.json")));
        let identity = v.verify(&rs256(Some("k1"), &claims())).unwrap();
        assert_eq!(identity, expected_identity());
    }

    #[test]
    fn jwks_with_a_single_key_is_used_when_the_token_has_no_kid() {
        let v = verifier(&with_jwks("RS256", fixture!("jwks.json")));
        assert!(v.verify(&rs256(None, &claims())).is_ok());
    }

    #[test]
    fn jwks_unknown_kid_is_refused() {
        let v = verifier(&with_jwks("RS256", fixture!("jwks.json")));
        assert_eq!(
            v.verify(&rs256(Some("k9"), &claims())),
            Err(TokenError::UnknownKey)
        );
    }

    #[test]
    fn jwks_with_several_keys_picks_by_kid_and_skips_unusable_entries() {
        let v = verifier(&with_jwks("RS256,ES256", fixture!("jwks_multi.json")));
        // enc1 (use=enc) and ed1 (OKP) are skipped.
        assert_eq!(v.jwks_keys.len(), 2);
        assert!(v.verify(&rs256(Some("k1"), &claims())).is_ok());
        let ec = EncodingKey::from_ec_pem(&read(fixture!("ec_private.pem"))).unwrap();
        let token = sign(Algorithm::ES256, Some("k2"), &ec, &claims());
        assert!(v.verify(&token).is_ok());
        // A token naming the encryption key is refused.
        let rsa2 = EncodingKey::from_rsa_pem(&read(fixture!("rsa2_private.pem"))).unwrap();
        let token = sign(Algorithm::RS256, Some("enc1"), &rsa2, &claims());
        assert_eq!(v.verify(&token), Err(TokenError::UnknownKey));
    }

    #[test]
    fn jwks_with_several_keys_requires_a_kid() {
        let v = verifier(&with_jwks("RS256,ES256", fixture!("jwks_multi.json")));
        assert_eq!(
            v.verify(&rs256(None, &claims())),
            Err(TokenError::KeyIdRequired)
        );
    }

    #[test]
    fn token_whose_kid_names_a_key_of_another_family_is_refused() {
        let v = verifier(&with_jwks("RS256,ES256", fixture!("jwks_multi.json")));
        // RS256 token claiming the EC key k2.
        assert_eq!(
            v.verify(&rs256(Some("k2"), &claims())),
            Err(TokenError::AlgorithmNotAccepted("RS256".to_string()))
        );
    }

    // ---- time claims -----------------------------------------------------------------------

    #[test]
    fn expired_token_is_refused() {
        let mut c = claims();
        c["exp"] = json!(now() - 3600);
        assert_eq!(hs_verifier().verify(&hs256(&c)), Err(TokenError::Expired));
        assert_eq!(TokenError::Expired.to_string(), "The token has expired.");
    }

    #[test]
    fn token_without_exp_is_refused() {
        let mut c = claims();
        c.as_object_mut().unwrap().remove("exp");
        assert_eq!(
            hs_verifier().verify(&hs256(&c)),
            Err(TokenError::MissingClaim("exp".to_string()))
        );
    }

    #[test]
    fn token_with_a_non_numeric_exp_is_refused() {
        let mut c = claims();
        c["exp"] = json!("tomorrow");
        assert_eq!(
            hs_verifier().verify(&hs256(&c)),
            Err(TokenError::InvalidClaim("exp".to_string()))
        );
    }

    #[test]
    fn token_with_nbf_in_the_future_is_refused() {
        let mut c = claims();
        c["nbf"] = json!(now() + 600);
        assert_eq!(
            hs_verifier().verify(&hs256(&c)),
            Err(TokenError::NotYetValid)
        );
    }

    #[test]
    fn token_with_a_non_numeric_nbf_is_refused() {
        let mut c = claims();
        c["nbf"] = json!("yesterday");
        assert_eq!(
            hs_verifier().verify(&hs256(&c)),
            Err(TokenError::InvalidClaim("nbf".to_string()))
        );
    }

    #[test]
    fn nbf_and_exp_that_are_negative_or_overflow_64_bits_are_refused_alike() {
        let overflow: Value = serde_json::from_str("18446744073709551616").expect("number");
        for bad in [json!(-1), json!(-1.5), overflow] {
            let mut c = claims();
            c["nbf"] = bad.clone();
            assert_eq!(
                hs_verifier().verify(&hs256(&c)),
                Err(TokenError::InvalidClaim("nbf".to_string())),
                "nbf {bad}"
            );
            let mut c = claims();
            c["exp"] = bad.clone();
            assert!(hs_verifier().verify(&hs256(&c)).is_err(), "exp {bad}");
        }
    }

    #[test]
    fn fractional_nbf_exp_and_iat_are_accepted_alike() {
        // RFC 7519's NumericDate may carry a fraction in every time claim.
        let mut c = claims();
        c["nbf"] = json!(now() as f64 - 60.5);
        c["exp"] = json!(now() as f64 + 600.5);
        c["iat"] = json!(now() as f64 - 60.25);
        assert_eq!(hs_verifier().verify(&hs256(&c)), Ok(expected_identity()));

        let mut future = claims();
        future["nbf"] = json!(now() as f64 + 600.5);
        assert_eq!(
            hs_verifier().verify(&hs256(&future)),
            Err(TokenError::NotYetValid)
        );

        let mut expired = claims();
        expired["exp"] = json!(now() as f64 - 600.5);
        assert_eq!(
            hs_verifier().verify(&hs256(&expired)),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn token_with_nbf_in_the_past_is_accepted() {
        let mut c = claims();
        c["nbf"] = json!(now() - 60);
        assert!(hs_verifier().verify(&hs256(&c)).is_ok());
    }

    #[test]
    fn leeway_is_respected_for_exp_and_nbf() {
        let lenient = verifier(&JwtSettings {
            leeway: 30,
            ..with_key("HS256", fixture!("hs256.secret"))
        });
        let strict = verifier(&JwtSettings {
            leeway: 0,
            ..with_key("HS256", fixture!("hs256.secret"))
        });

        let mut just_expired = claims();
        just_expired["exp"] = json!(now() - 10);
        let token = hs256(&just_expired);
        assert!(lenient.verify(&token).is_ok());
        assert_eq!(strict.verify(&token), Err(TokenError::Expired));

        let mut almost_valid = claims();
        almost_valid["nbf"] = json!(now() + 10);
        let token = hs256(&almost_valid);
        assert!(lenient.verify(&token).is_ok());
        assert_eq!(strict.verify(&token), Err(TokenError::NotYetValid));

        let mut long_expired = claims();
        long_expired["exp"] = json!(now() - 120);
        assert_eq!(
            lenient.verify(&hs256(&long_expired)),
            Err(TokenError::Expired)
        );
    }

    // ---- issuer and audience ---------------------------------------------------------------

    fn hs_with(issuer: Option<&str>, audience: Option<&str>) -> TokenVerifier {
        verifier(&JwtSettings {
            issuer: issuer.map(str::to_string),
            audience: audience.map(str::to_string),
            ..with_key("HS256", fixture!("hs256.secret"))
        })
    }

    #[test]
    fn matching_issuer_is_accepted() {
        let mut c = claims();
        c["iss"] = json!("https://idp.example");
        let v = hs_with(Some("https://idp.example"), None);
        assert!(v.verify(&hs256(&c)).is_ok());
    }

    #[test]
    fn wrong_issuer_is_refused() {
        let v = hs_with(Some("https://idp.example"), None);
        let mut c = claims();
        c["iss"] = json!("https://evil.example");
        assert_eq!(v.verify(&hs256(&c)), Err(TokenError::IssuerNotAccepted));
        c["iss"] = json!(["https://idp.example"]);
        assert_eq!(v.verify(&hs256(&c)), Err(TokenError::IssuerNotAccepted));
    }

    #[test]
    fn missing_issuer_is_refused_when_an_issuer_is_required() {
        let v = hs_with(Some("https://idp.example"), None);
        assert_eq!(
            v.verify(&hs256(&claims())),
            Err(TokenError::MissingClaim("iss".to_string()))
        );
    }

    #[test]
    fn matching_audience_as_string_or_array_is_accepted() {
        let v = hs_with(None, Some("fleetyard"));
        let mut c = claims();
        c["aud"] = json!("fleetyard");
        assert!(v.verify(&hs256(&c)).is_ok());
        c["aud"] = json!(["other", "fleetyard"]);
        assert!(v.verify(&hs256(&c)).is_ok());
    }

    #[test]
    fn wrong_audience_is_refused() {
        let v = hs_with(None, Some("fleetyard"));
        let mut c = claims();
        c["aud"] = json!("other");
        assert_eq!(v.verify(&hs256(&c)), Err(TokenError::AudienceNotAccepted));
        c["aud"] = json!(["other", "another"]);
        assert_eq!(v.verify(&hs256(&c)), Err(TokenError::AudienceNotAccepted));
        c["aud"] = json!([]);
        assert_eq!(v.verify(&hs256(&c)), Err(TokenError::AudienceNotAccepted));
        assert_eq!(
            TokenError::AudienceNotAccepted.to_string(),
            "The token's audience is not accepted."
        );
    }

    #[test]
    fn missing_audience_is_refused_when_an_audience_is_required() {
        let v = hs_with(None, Some("fleetyard"));
        assert_eq!(
            v.verify(&hs256(&claims())),
            Err(TokenError::MissingClaim("aud".to_string()))
        );
    }

    #[test]
    fn any_audience_is_accepted_when_none_is_configured() {
        let mut c = claims();
        c["aud"] = json!("somebody-else");
        assert!(hs_verifier().verify(&hs256(&c)).is_ok());
    }

    // ---- algorithm attacks -----------------------------------------------------------------

    #[test]
    fn alg_none_token_is_refused() {
        let header = b64(&json!({"alg": "none", "typ": "JWT"}));
        let payload = b64(&claims());
        let token = format!("{header}.{payload}.");
        for v in [hs_verifier(), rs_verifier()] {
            let err = v.verify(&token).unwrap_err();
            assert_eq!(err, TokenError::AlgorithmNotAccepted("none".to_string()));
            assert_eq!(
                err.to_string(),
                "The token's signing algorithm none is not accepted."
            );
        }
        // Variants: capitalised, and with a garbage signature.
        let header = b64(&json!({"alg": "None", "typ": "JWT"}));
        let token = format!("{header}.{payload}.c2lnbmF0dXJl");
        assert!(matches!(
            rs_verifier().verify(&token),
            Err(TokenError::AlgorithmNotAccepted(_))
        ));
    }

    #[test]
    fn algorithm_not_in_the_pinned_list_is_refused() {
        let token = sign(Algorithm::RS512, None, &rsa_key(), &claims());
        let err = rs_verifier().verify(&token).unwrap_err();
        assert_eq!(err, TokenError::AlgorithmNotAccepted("RS512".to_string()));
        assert_eq!(
            err.to_string(),
            "The token's signing algorithm RS512 is not accepted."
        );
    }

    #[test]
    fn unprintable_algorithm_names_are_not_echoed() {
        let header = b64(&json!({"alg": "<script>alert(1)</script>"}));
        let token = format!("{header}.{}.", b64(&claims()));
        assert_eq!(
            rs_verifier().verify(&token),
            Err(TokenError::AlgorithmNotAccepted("(unknown)".to_string()))
        );
    }

    #[test]
    fn rs_hs_confusion_attack_is_refused() {
        // The attacker knows the RSA public key and uses its PEM text as an HMAC secret.
        let public_pem = read(fixture!("rsa_public.pem"));
        let mut trimmed = public_pem.clone();
        while trimmed.last() == Some(&b'\n') {
            trimmed.pop();
        }
        let forged: Vec<String> = [public_pem, trimmed]
            .iter()
            .map(|secret| {
                sign(
                    Algorithm::HS256,
                    None,
                    &EncodingKey::from_secret(secret),
                    &claims(),
                )
            })
            .collect();

        // 1. Only RS256 pinned: HS256 is refused outright.
        for token in &forged {
            assert_eq!(
                rs_verifier().verify(token),
                Err(TokenError::AlgorithmNotAccepted("HS256".to_string()))
            );
        }

        // 2. Pinning HS256 next to an RSA-only key is refused at start-up, so the forged
        //    token can never be checked against the public key as an HMAC secret.
        let message = config_error(&with_key("RS256,HS256", fixture!("rsa_public.pem")));
        assert_eq!(
            message,
            "[jwt] algorithms: no configured key (key_file or jwks_file) can verify HS256 tokens"
        );
        let message = config_error(&with_key("HS256", fixture!("rsa_public.pem")));
        assert!(message.starts_with("[jwt] key_file: "), "{message}");

        // 3. Both families legitimately configured (HMAC secret + RSA JWKS): the forged
        //    token is checked against the real HMAC secret only, and a forged token naming
        //    the RSA key's kid is refused for its algorithm.
        let mixed = verifier(&JwtSettings {
            jwks_file: Some(PathBuf::from(fixture!("jwks.json"))),
            ..with_key("RS256,HS256", fixture!("hs256.secret"))
        });
        for token in &forged {
            assert_eq!(mixed.verify(token), Err(TokenError::InvalidSignature));
        }
        let forged_with_kid = sign(
            Algorithm::HS256,
            Some("k1"),
            &EncodingKey::from_secret(&read(fixture!("rsa_public.pem"))),
            &claims(),
        );
        assert_eq!(
            mixed.verify(&forged_with_kid),
            Err(TokenError::AlgorithmNotAccepted("HS256".to_string()))
        );
        // The legitimate tokens of both kinds still pass.
        assert!(mixed.verify(&hs256(&claims())).is_ok());
        assert!(mixed.verify(&rs256(Some("k1"), &claims())).is_ok());
        assert!(mixed.verify(&rs256(None, &claims())).is_ok());
    }

    #[test]
    fn signature_from_a_different_key_is_refused() {
        let other = EncodingKey::from_rsa_pem(&read(fixture!("rsa2_private.pem"))).unwrap();
        let token = sign(Algorithm::RS256, None, &other, &claims());
        let err = rs_verifier().verify(&token).unwrap_err();
        assert_eq!(err, TokenError::InvalidSignature);
        assert_eq!(err.to_string(), "The token's signature is invalid.");

        let v = verifier(&with_jwks("RS256", fixture!("jwks.json")));
        let token = sign(Algorithm::RS256, Some("k1"), &other, &claims());
        assert_eq!(v.verify(&token), Err(TokenError::InvalidSignature));

        let wrong_secret = sign(
            Algorithm::HS256,
            None,
            &EncodingKey::from_secret(b"not-the-secret"),
            &claims(),
        );
        assert_eq!(
            hs_verifier().verify(&wrong_secret),
            Err(TokenError::InvalidSignature)
        );
    }

    #[test]
    fn tampered_payload_is_refused() {
        let token = rs256(None, &claims());
        let parts: Vec<&str> = token.split('.').collect();
        let mut evil = claims();
        evil["roles"] = json!(["admin", "cloud_admin"]);
        let forged = format!("{}.{}.{}", parts[0], b64(&evil), parts[2]);
        assert_eq!(
            rs_verifier().verify(&forged),
            Err(TokenError::InvalidSignature)
        );
    }

    #[test]
    fn garbage_tokens_are_refused_as_malformed() {
        let v = rs_verifier();
        let header = b64(&json!({"alg": "RS256"}));
        let long = "a".repeat(MAX_TOKEN_LEN + 1);
        let cases = [
            String::new(),
            "garbage".to_string(),
            "a.b".to_string(),
            "a.b.c.d".to_string(),
            "!!!.###.$$$".to_string(),
            format!("{}.{}.", b64(&json!("just a string")), b64(&claims())),
            format!("{}.{}.", b64(&json!({"typ": "JWT"})), b64(&claims())),
            format!("{header}.not-base64!.sig"),
            format!("{header}.{}.sig", URL_SAFE_NO_PAD.encode("not json")),
            long,
        ];
        for token in &cases {
            let err = v.verify(token).unwrap_err();
            assert!(
                matches!(err, TokenError::Malformed | TokenError::InvalidSignature),
                "{token:?} gave {err:?}"
            );
        }
        assert_eq!(v.verify("garbage"), Err(TokenError::Malformed));
        assert_eq!(TokenError::Malformed.to_string(), "The token is malformed.");
    }

    #[test]
    fn token_with_critical_header_extensions_is_refused() {
        let mut header = Header::new(Algorithm::HS256);
        header.typ = Some("JWT".to_string());
        let mut header_json = serde_json::to_value(&header).unwrap();
        header_json["crit"] = json!(["exp"]);
        let signing_input = format!("{}.{}", b64(&header_json), b64(&claims()));
        let signature = jsonwebtoken::crypto::sign(
            signing_input.as_bytes(),
            &EncodingKey::from_secret(&hs_secret()),
            Algorithm::HS256,
        )
        .unwrap();
        let token = format!("{signing_input}.{signature}");
        assert_eq!(hs_verifier().verify(&token), Err(TokenError::Malformed));
    }

    #[test]
    fn error_messages_never_contain_the_token() {
        let v = rs_verifier();
        let mut expired = claims();
        expired["exp"] = json!(now() - 3600);
        let tokens = [
            rs256(None, &expired),
            hs256(&claims()),
            "garbage.garbage.garbage".to_string(),
        ];
        for token in &tokens {
            let message = v.verify(token).unwrap_err().to_string();
            for part in token.split('.') {
                assert!(!message.contains(part), "{message}");
            }
        }
    }

    // ---- identity claims -------------------------------------------------------------------

    #[test]
    fn missing_sub_is_refused() {
        let mut c = claims();
        c.as_object_mut().unwrap().remove("sub");
        let err = hs_verifier().verify(&hs256(&c)).unwrap_err();
        assert_eq!(err, TokenError::MissingClaim("sub".to_string()));
        assert_eq!(err.to_string(), "The token has no 'sub' claim.");
    }

    #[test]
    fn non_string_or_empty_sub_is_refused() {
        for sub in [json!(42), json!(""), json!(["user-1"])] {
            let mut c = claims();
            c["sub"] = sub;
            assert_eq!(
                hs_verifier().verify(&hs256(&c)),
                Err(TokenError::InvalidClaim("sub".to_string()))
            );
        }
    }

    #[test]
    fn roles_as_an_array_are_trimmed_and_empty_entries_dropped() {
        let mut c = claims();
        c["roles"] = json!([" admin ", "", "reader", "admin"]);
        let identity = hs_verifier().verify(&hs256(&c)).unwrap();
        assert_eq!(identity.roles, vec!["admin", "reader"]);
    }

    #[test]
    fn roles_as_a_comma_separated_string_are_split() {
        let mut c = claims();
        c["roles"] = json!("admin, member,,  reader ");
        let identity = hs_verifier().verify(&hs256(&c)).unwrap();
        assert_eq!(identity.roles, vec!["admin", "member", "reader"]);
    }

    #[test]
    fn roles_of_another_type_are_refused() {
        for roles in [json!(5), json!(["admin", 5]), json!({"admin": true})] {
            let mut c = claims();
            c["roles"] = roles;
            assert_eq!(
                hs_verifier().verify(&hs256(&c)),
                Err(TokenError::InvalidClaim("roles".to_string()))
            );
        }
    }

    #[test]
    fn optional_claims_may_be_absent() {
        let c = json!({"sub": "user-1", "exp": now() + 600});
        let identity = hs_verifier().verify(&hs256(&c)).unwrap();
        assert_eq!(
            identity,
            TokenIdentity {
                user_id: "user-1".to_string(),
                project_id: None,
                roles: Vec::new(),
                domain_id: None,
            }
        );
    }

    #[test]
    fn non_string_project_id_is_refused() {
        let mut c = claims();
        c["project_id"] = json!(7);
        assert_eq!(
            hs_verifier().verify(&hs256(&c)),
            Err(TokenError::InvalidClaim("project_id".to_string()))
        );
    }

    #[test]
    fn custom_claim_names_are_used() {
        let v = verifier(&JwtSettings {
            user_id_claim: "uid".to_string(),
            project_id_claim: "tenant".to_string(),
            roles_claim: "realm_access.roles".to_string(),
            domain_id_claim: "dom".to_string(),
            ..with_key("HS256", fixture!("hs256.secret"))
        });
        let c = json!({
            "sub": "ignored",
            "uid": "alice",
            "tenant": "p-9",
            "realm_access": {"roles": ["operator"]},
            "dom": "d-1",
            "project_id": "ignored",
            "exp": now() + 600,
        });
        let identity = v.verify(&hs256(&c)).unwrap();
        assert_eq!(
            identity,
            TokenIdentity {
                user_id: "alice".to_string(),
                project_id: Some("p-9".to_string()),
                roles: vec!["operator".to_string()],
                domain_id: Some("d-1".to_string()),
            }
        );
        let c = json!({"sub": "bob", "exp": now() + 600});
        let err = v.verify(&hs256(&c)).unwrap_err();
        assert_eq!(err.to_string(), "The token has no 'uid' claim.");
    }

    // ---- configuration ---------------------------------------------------------------------

    #[test]
    fn config_without_any_key_names_key_file() {
        let message = config_error(&settings("RS256"));
        assert!(message.starts_with("[jwt] key_file: "), "{message}");
        let message = config_error(&JwtSettings {
            key_file: Some(PathBuf::new()),
            ..settings("RS256")
        });
        assert!(message.starts_with("[jwt] key_file: "), "{message}");
    }

    #[test]
    fn config_with_an_unreadable_key_file_names_key_file() {
        let path = fixture!("does-not-exist.pem");
        let message = config_error(&with_key("RS256", path));
        assert_eq!(
            message,
            format!("[jwt] key_file: cannot read {path}: No such file or directory")
        );
    }

    #[test]
    fn config_with_an_unreadable_jwks_file_names_jwks_file() {
        let path = fixture!("does-not-exist.json");
        let message = config_error(&with_jwks("RS256", path));
        assert_eq!(
            message,
            format!("[jwt] jwks_file: cannot read {path}: No such file or directory")
        );
    }

    #[test]
    fn config_with_an_unsupported_algorithm_names_algorithms() {
        let message = config_error(&with_key("RS256,none", fixture!("rsa_public.pem")));
        assert_eq!(message, "[jwt] algorithms: unsupported algorithm 'none'");
        let message = config_error(&with_key("EdDSA", fixture!("rsa_public.pem")));
        assert_eq!(message, "[jwt] algorithms: unsupported algorithm 'EdDSA'");
        let message = config_error(&with_key(" , ", fixture!("rsa_public.pem")));
        assert_eq!(message, "[jwt] algorithms: no algorithm is listed");
    }

    #[test]
    fn config_refuses_keys_that_do_not_fit_the_algorithms() {
        // EC P-256 key for ES384.
        let message = config_error(&with_key("ES384", fixture!("ec_public.pem")));
        assert!(message.starts_with("[jwt] key_file: "), "{message}");
        // RSA key for ES256.
        let message = config_error(&with_key("ES256", fixture!("rsa_public.pem")));
        assert!(message.starts_with("[jwt] key_file: "), "{message}");
        // The key fits one algorithm but another listed one has no key.
        let message = config_error(&with_key("RS256,ES256", fixture!("rsa_public.pem")));
        assert_eq!(
            message,
            "[jwt] algorithms: no configured key (key_file or jwks_file) can verify ES256 tokens"
        );
        // JWKS with only an RSA key for HS256.
        let message = config_error(&with_jwks("HS256", fixture!("jwks.json")));
        assert!(message.starts_with("[jwt] algorithms: "), "{message}");
    }

    #[test]
    fn config_refuses_private_keys_in_key_file() {
        for file in [fixture!("rsa_private.pem"), fixture!("ec_private.pem")] {
            let message = config_error(&with_key("RS256,ES256", file));
            assert!(message.starts_with("[jwt] key_file: "), "{message}");
            assert!(message.contains("private key"), "{message}");
        }
    }

    #[test]
    fn config_refuses_broken_key_and_jwks_files() {
        let dir = std::env::temp_dir().join(format!("fleetyard-jwt-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, content: &str| {
            let path = dir.join(name);
            std::fs::write(&path, content).unwrap();
            path
        };
        let cases = [
            (
                "key_file",
                write("bad.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
            ),
            ("key_file", write("empty.secret", "\n")),
            ("jwks_file", write("bad.json", "{not json")),
            ("jwks_file", write("nokeys.json", "{\"keys\": []}")),
            ("jwks_file", write("notjwks.json", "[1, 2]")),
            (
                "jwks_file",
                write(
                    "badrsa.json",
                    "{\"keys\": [{\"kty\": \"RSA\", \"kid\": \"x\", \"n\": \"AQAB\", \"e\": \"AQAB\"}]}",
                ),
            ),
        ];
        for (option, path) in &cases {
            let s = if *option == "key_file" {
                JwtSettings {
                    key_file: Some(path.clone()),
                    ..settings("HS256,RS256")
                }
            } else {
                JwtSettings {
                    jwks_file: Some(path.clone()),
                    ..settings("RS256")
                }
            };
            let message = config_error(&s);
            assert!(
                message.starts_with(&format!("[jwt] {option}: ")),
                "{message}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn config_refuses_empty_claim_names_and_huge_leeway() {
        let message = config_error(&JwtSettings {
            user_id_claim: " ".to_string(),
            ..with_key("RS256", fixture!("rsa_public.pem"))
        });
        assert_eq!(message, "[jwt] user_id_claim: must not be empty");
        let message = config_error(&JwtSettings {
            leeway: u64::MAX,
            ..with_key("RS256", fixture!("rsa_public.pem"))
        });
        assert!(message.starts_with("[jwt] leeway: "), "{message}");
    }

    #[test]
    fn verifier_is_send_and_sync_and_its_debug_hides_secrets() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<TokenVerifier>();
        let debug = format!("{:?}", hs_verifier());
        let secret = String::from_utf8(hs_secret()).unwrap();
        assert!(!debug.contains(&secret), "{debug}");
        assert!(debug.contains("HS256"), "{debug}");
    }
}
