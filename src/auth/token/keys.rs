//! The keys a [`super::TokenVerifier`] checks signatures with: PEM public keys and HMAC
//! secrets from `[jwt] key_file`, JWK sets from `[jwt] jwks_file`, each classified by family
//! (RSA size, EC curve) so that a key only verifies the algorithms of its own family.

use std::fmt;
use std::io::{Cursor, Read};
use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use x509_parser::oid_registry::{OID_EC_P256, OID_NIST_EC_P384};
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;
use x509_parser::public_key::{PublicKey, RSAPublicKey};
use x509_parser::x509::SubjectPublicKeyInfo;

use super::{algorithm_name, TokenConfigError, MAX_KEY_FILE_LEN, SUPPORTED_ALGORITHMS};

/// What a key can verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    Hmac,
    Rsa,
    EcP256,
    EcP384,
}

impl KeyKind {
    pub(super) fn accepts(self, alg: Algorithm) -> bool {
        matches!(
            (self, alg),
            (
                KeyKind::Hmac,
                Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
            ) | (
                KeyKind::Rsa,
                Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512 | Algorithm::PS256
            ) | (KeyKind::EcP256, Algorithm::ES256)
                | (KeyKind::EcP384, Algorithm::ES384)
        )
    }

    pub(super) fn describe(self) -> &'static str {
        match self {
            KeyKind::Hmac => "HMAC secret",
            KeyKind::Rsa => "RSA public key",
            KeyKind::EcP256 => "EC P-256 public key",
            KeyKind::EcP384 => "EC P-384 public key",
        }
    }
}

pub(super) struct VerifierKey {
    pub(super) kid: Option<String>,
    pub(super) kind: KeyKind,
    /// A JWK's own `alg`, which restricts the key to that algorithm.
    pub(super) alg: Option<Algorithm>,
    pub(super) key: DecodingKey,
}

impl VerifierKey {
    pub(super) fn can_verify(&self, alg: Algorithm) -> bool {
        self.kind.accepts(alg) && self.alg.is_none_or(|own| own == alg)
    }
}

impl fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("VerifierKey")
            .field("kid", &self.kid)
            .field("kind", &self.kind)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// A single-line, OS-code-free rendering of an I/O error.
pub(super) fn io_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error ") {
        Some(i) => &text[..i],
        None => text.as_str(),
    };
    one_line(text)
}

pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn read_limited(option: &'static str, path: &Path) -> Result<Vec<u8>, TokenConfigError> {
    let unreadable = |e: &std::io::Error| TokenConfigError::Unreadable {
        option,
        path: path.to_path_buf(),
        reason: io_reason(e),
    };
    let file = std::fs::File::open(path).map_err(|e| unreadable(&e))?;
    let mut data = Vec::new();
    file.take(MAX_KEY_FILE_LEN + 1)
        .read_to_end(&mut data)
        .map_err(|e| unreadable(&e))?;
    if data.len() as u64 > MAX_KEY_FILE_LEN {
        return Err(TokenConfigError::InvalidKey {
            option,
            path: path.to_path_buf(),
            reason: format!("the file is larger than {MAX_KEY_FILE_LEN} bytes"),
        });
    }
    Ok(data)
}

/// Loads `key_file`: a PEM public key (RSA or EC), or else an HMAC shared secret.
pub(super) fn load_key_file(path: &Path) -> Result<VerifierKey, TokenConfigError> {
    let invalid = |reason: String| TokenConfigError::InvalidKey {
        option: "key_file",
        path: path.to_path_buf(),
        reason,
    };
    let data = read_limited("key_file", path)?;
    if data.trim_ascii_start().starts_with(b"-----BEGIN") {
        let (kind, key) = pem_public_key(&data).map_err(invalid)?;
        return Ok(VerifierKey {
            kid: None,
            kind,
            alg: None,
            key,
        });
    }
    let mut secret: &[u8] = &data;
    while let [rest @ .., b'\n' | b'\r'] = secret {
        secret = rest;
    }
    if secret.is_empty() {
        return Err(invalid("the shared secret is empty".to_string()));
    }
    Ok(VerifierKey {
        kid: None,
        kind: KeyKind::Hmac,
        alg: None,
        key: DecodingKey::from_secret(secret),
    })
}

/// Reads the first PEM block of `data` as a public key: x509-parser tells its type, curve and
/// size, jsonwebtoken builds the verification key.
pub(super) fn pem_public_key(data: &[u8]) -> Result<(KeyKind, DecodingKey), String> {
    let (pem, _) = Pem::read(Cursor::new(data)).map_err(|e| format!("not a PEM file: {e}"))?;
    let kind = match pem.label.as_str() {
        "PUBLIC KEY" => spki_kind(&pem.contents)?,
        "RSA PUBLIC KEY" => {
            let (_, rsa) = RSAPublicKey::from_der(&pem.contents)
                .map_err(|_| "the RSA public key is not valid DER".to_string())?;
            rsa_kind(rsa.modulus, rsa.exponent)?
        }
        "CERTIFICATE" => return Err(CERTIFICATE_GIVEN.to_string()),
        l if l.contains("PRIVATE") => return Err(PRIVATE_KEY_GIVEN.to_string()),
        other => return Err(format!("unsupported PEM block '{other}'")),
    };
    let key = match kind {
        KeyKind::Rsa => DecodingKey::from_rsa_pem(data),
        _ => DecodingKey::from_ec_pem(data),
    }
    .map_err(|_| MALFORMED_KEY.to_string())?;
    Ok((kind, key))
}

pub(super) const MALFORMED_KEY: &str = "the public key is not valid DER";
pub(super) const CERTIFICATE_GIVEN: &str =
    "it holds a certificate; extract its public key with `openssl x509 -pubkey -noout`";
pub(super) const PRIVATE_KEY_GIVEN: &str =
    "it holds a private key; configure the public key (`openssl pkey -pubout`)";

/// The kind of key a SubjectPublicKeyInfo (a "PUBLIC KEY" PEM block) holds.
pub(super) fn spki_kind(der: &[u8]) -> Result<KeyKind, String> {
    let malformed = || MALFORMED_KEY.to_string();
    let (_, spki) = SubjectPublicKeyInfo::from_der(der).map_err(|_| malformed())?;
    match spki.parsed().map_err(|_| malformed())? {
        PublicKey::RSA(rsa) => rsa_kind(rsa.modulus, rsa.exponent),
        PublicKey::EC(point) => {
            let curve = spki.algorithm.parameters.as_ref().map(|p| p.as_oid());
            let kind = match curve {
                Some(Ok(oid)) if oid == OID_EC_P256 => KeyKind::EcP256,
                Some(Ok(oid)) if oid == OID_NIST_EC_P384 => KeyKind::EcP384,
                Some(Ok(_)) => return Err(UNSUPPORTED_CURVE.to_string()),
                _ => return Err("the EC key does not name its curve".to_string()),
            };
            check_ec_point(kind, point.data())?;
            Ok(kind)
        }
        _ => Err("unsupported public key type (only RSA and EC keys are supported)".to_string()),
    }
}

pub(super) const UNSUPPORTED_CURVE: &str =
    "unsupported EC curve (only P-256 and P-384 are supported)";

/// Checks an RSA key's exponent and modulus size (ring verifies 2048..=8192 bits only).
pub(super) fn rsa_kind(modulus: &[u8], exponent: &[u8]) -> Result<KeyKind, String> {
    if exponent.iter().all(|b| *b == 0) {
        return Err("the RSA public exponent is zero".to_string());
    }
    let start = modulus
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(modulus.len());
    let significant = &modulus[start..];
    let bits = significant.first().map_or(0, |first| {
        significant.len() * 8 - first.leading_zeros() as usize
    });
    if !(2048..=8192).contains(&bits) {
        return Err(format!(
            "the RSA key has {bits} bits; 2048 to 8192 bits are supported"
        ));
    }
    Ok(KeyKind::Rsa)
}

pub(super) fn check_ec_point(kind: KeyKind, point: &[u8]) -> Result<(), String> {
    let coordinate = if kind == KeyKind::EcP384 { 48 } else { 32 };
    if point.len() != 1 + 2 * coordinate || point.first() != Some(&0x04) {
        return Err("the EC public key is not an uncompressed point on its curve".to_string());
    }
    Ok(())
}

/// Loads `jwks_file`. Keys meant for encryption (`use` other than `sig`), keys of unsupported
/// types (e.g. OKP) and keys whose `alg` is not a supported signing algorithm are skipped.
pub(super) fn load_jwks(path: &Path) -> Result<Vec<VerifierKey>, TokenConfigError> {
    let invalid = |reason: String| TokenConfigError::InvalidKey {
        option: "jwks_file",
        path: path.to_path_buf(),
        reason: one_line(&reason),
    };
    let data = read_limited("jwks_file", path)?;
    let document: Value =
        serde_json::from_slice(&data).map_err(|e| invalid(format!("not a JSON document: {e}")))?;
    let Some(Value::Array(entries)) = document.get("keys") else {
        return Err(invalid(
            "not a JWKS document (no \"keys\" array)".to_string(),
        ));
    };

    let mut keys: Vec<VerifierKey> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let label = match entry.get("kid").and_then(Value::as_str) {
            Some(kid) => format!("key '{}'", kid.escape_debug()),
            None => format!("key #{}", index + 1),
        };
        if !entry.is_object() {
            return Err(invalid(format!("{label} is not a JSON object")));
        }
        match parse_jwk(entry) {
            Ok(Some(key)) => {
                if let Some(kid) = &key.kid {
                    if keys.iter().any(|k| k.kid.as_ref() == Some(kid)) {
                        return Err(invalid(format!("{label} appears more than once")));
                    }
                }
                keys.push(key);
            }
            Ok(None) => {}
            Err(reason) => return Err(invalid(format!("{label}: {reason}"))),
        }
    }
    if keys.is_empty() {
        return Err(invalid("it holds no usable signing key".to_string()));
    }
    Ok(keys)
}

/// Parses one JWKS entry with jsonwebtoken's [`Jwk`]; `Ok(None)` means "skip this key".
///
/// The entry is first sorted on its raw fields, because `Jwk` refuses the `kty`, `crv` and `alg`
/// values it does not know, and a JWKS may well hold such keys next to the ones used here.
pub(super) fn parse_jwk(entry: &Value) -> Result<Option<VerifierKey>, String> {
    let field = |name: &str| entry.get(name).and_then(Value::as_str);
    if field("use").is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    if let Some(Value::Array(ops)) = entry.get("key_ops") {
        if !ops.iter().any(|op| op.as_str() == Some("verify")) {
            return Ok(None);
        }
    }
    let alg = match field("alg") {
        None => None,
        Some(name) => match SUPPORTED_ALGORITHMS.iter().find(|(n, _)| *n == name) {
            Some((_, alg)) => Some(*alg),
            None => return Ok(None),
        },
    };
    match (field("kty"), field("crv")) {
        (Some("EC"), Some(crv)) if crv != "P-256" && crv != "P-384" => return Ok(None),
        (Some(kty), _) if !matches!(kty, "RSA" | "EC" | "oct") => return Ok(None),
        _ => {}
    }

    // Padding is tolerated, as before jsonwebtoken decoded the values.
    let mut entry = entry.clone();
    for name in ["n", "e", "x", "y", "k"] {
        if let Some(Value::String(value)) = entry.get_mut(name) {
            value.truncate(value.trim_end_matches('=').len());
        }
    }
    let jwk: Jwk = serde_json::from_value(entry).map_err(|e| format!("not a usable JWK: {e}"))?;
    let decode = |name: &str, value: &str| {
        URL_SAFE_NO_PAD
            .decode(value)
            .map_err(|_| format!("\"{name}\" is not base64url"))
    };
    let kind = match &jwk.algorithm {
        AlgorithmParameters::RSA(rsa) => rsa_kind(&decode("n", &rsa.n)?, &decode("e", &rsa.e)?)?,
        AlgorithmParameters::EllipticCurve(ec) => {
            let kind = match ec.curve {
                EllipticCurve::P256 => KeyKind::EcP256,
                EllipticCurve::P384 => KeyKind::EcP384,
                _ => return Ok(None),
            };
            let mut point = vec![0x04];
            point.extend(decode("x", &ec.x)?);
            point.extend(decode("y", &ec.y)?);
            check_ec_point(kind, &point)?;
            kind
        }
        AlgorithmParameters::OctetKey(oct) => {
            if decode("k", &oct.value)?.is_empty() {
                return Err("\"k\" is empty".to_string());
            }
            KeyKind::Hmac
        }
        AlgorithmParameters::OctetKeyPair(_) => return Ok(None),
    };
    if let Some(alg) = alg {
        if !kind.accepts(alg) {
            return Err(format!(
                "its \"alg\" {} does not fit an {}",
                algorithm_name(alg),
                kind.describe()
            ));
        }
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| one_line(&e.to_string()))?;
    Ok(Some(VerifierKey {
        kid: jwk.common.key_id,
        kind,
        alg,
        key,
    }))
}
