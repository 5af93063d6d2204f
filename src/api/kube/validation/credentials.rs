//! No credentials, ever: a body holding a token, a password, a private key or a client
//! certificate's key anywhere is refused without echoing it; the registry stores pointers.

use base64::Engine;
use serde_json::Value;

use crate::api::kube::status::{Cause, KubeError, CLUSTERS};

/// Deepest nesting scanned; deeper bodies are refused (nothing goes unscanned).
pub const MAX_DEPTH: usize = 64;

/// Most values scanned in one body.
pub(super) const MAX_NODES: usize = 200_000;

/// The longest string decoded to look for a base64 PEM private key inside.
pub(super) const MAX_DECODE: usize = 1 << 20;

pub(super) const POINTERS_ONLY: &str = "the registry stores pointers to credentials (kind, name, \
     namespace), never credentials";

pub(super) fn credential_noun(key: &str) -> Option<&'static str> {
    let name = key.rsplit('/').next().unwrap_or(key);
    let norm: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    match norm.as_str() {
        "token" | "bearertoken" | "accesstoken" | "refreshtoken" | "idtoken" | "apitoken" => {
            Some("token")
        }
        "password" | "passwd" => Some("password"),
        "clientkeydata" | "clientkey" | "privatekey" | "privatekeydata" | "tlskey" => {
            Some("private key")
        }
        "secret" | "clientsecret" | "apikey" | "secretkey" => Some("secret"),
        _ => None,
    }
}

pub(super) fn refuse(path: &str, noun: &str) -> Cause {
    Cause::forbidden(
        path,
        &format!("{POINTERS_ONLY}; put the {noun} in a Secret and reference it"),
    )
}

pub(super) fn holds_private_key(s: &str) -> bool {
    if s.contains("PRIVATE KEY-----") {
        return true;
    }
    // base64 of "-----BEGIN": a PEM block hidden in base64 (caBundle, annotations).
    if let Some(i) = s.find("LS0tLS1CRUdJTi") {
        let b64: String = s[i..]
            .chars()
            .take(MAX_DECODE)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '\n' | '\r'))
            .filter(|c| !c.is_whitespace())
            .collect();
        let engine = base64::engine::general_purpose::STANDARD;
        let trimmed = &b64[..b64.len() - b64.len() % 4];
        if let Ok(bytes) = engine.decode(trimmed) {
            return String::from_utf8_lossy(&bytes).contains("PRIVATE KEY-----");
        }
    }
    false
}

pub(super) fn child_path(parent: &str, key: &str) -> String {
    if parent == "metadata.labels" || parent == "metadata.annotations" {
        format!("{parent}[{key}]")
    } else if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

pub(super) struct Scan {
    causes: Vec<Cause>,
    nodes: usize,
    too_deep: bool,
}

pub(super) fn scan(v: &Value, path: &str, depth: usize, s: &mut Scan) {
    if s.causes.len() >= 20 || s.too_deep {
        return;
    }
    s.nodes += 1;
    if depth > MAX_DEPTH || s.nodes > MAX_NODES {
        s.too_deep = true;
        return;
    }
    match v {
        Value::String(text) if holds_private_key(text) => {
            s.causes.push(refuse(path, "private key"));
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Array(_)
            if path == "spec.authInfo"
                || path == "spec.authInfo.user"
                || path == "spec.authInfo.controller" =>
        {
            s.causes.push(Cause::forbidden(
                path,
                &format!(
                    "must be an object reference (kind, name, namespace): {POINTERS_ONLY}; put \
                     the credential in a Secret and reference it"
                ),
            ));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                scan(item, &format!("{path}[{i}]"), depth + 1, s);
            }
        }
        Value::Object(map) => {
            let is_ref = path == "spec.authInfo.user" || path == "spec.authInfo.controller";
            for (k, child) in map {
                let here = child_path(path, k);
                if let Some(noun) = credential_noun(k) {
                    s.causes.push(refuse(&here, noun));
                    continue;
                }
                if is_ref && !matches!(k.as_str(), "kind" | "name" | "namespace") {
                    s.causes.push(Cause::forbidden(
                        &here,
                        &format!(
                            "an authInfo reference may only hold kind, name and namespace: \
                             {POINTERS_ONLY}; put the credential in a Secret and reference it"
                        ),
                    ));
                    continue;
                }
                scan(child, &here, depth + 1, s);
            }
        }
        _ => {}
    }
}

/// Causes for every credential-looking key or value in the body (values never echoed).
pub fn credential_causes(body: &Value) -> Result<Vec<Cause>, KubeError> {
    let mut s = Scan {
        causes: vec![],
        nodes: 0,
        too_deep: false,
    };
    scan(body, "", 0, &mut s);
    if s.too_deep {
        return Err(KubeError::undecodable(
            &CLUSTERS,
            &format!(
                "the object is nested deeper than {MAX_DEPTH} levels or holds too many values"
            ),
        ));
    }
    Ok(s.causes)
}
