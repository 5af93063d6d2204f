//! List paging as kube-apiserver does it: `?limit=` and an opaque `continue` token holding the
//! list's resourceVersion and where the next page starts.

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::status::KubeError;

/// The largest page served whatever `?limit=` asks (kubectl sends 500).
pub const MAX_LIMIT: usize = 1000;
/// The longest `continue` token taken.
const MAX_TOKEN_LEN: usize = 2048;

/// The sentence of a 410 on a continue token older than what the server can still serve.
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a \
     consistent list result. You can start a new list without the continue parameter, or use \
     the continue token in this response to retrieve the remainder of the results. Continuing \
     with the provided token results in an inconsistent list - objects that were created, \
     modified, or deleted between the time the first chunk was returned and now may show up in \
     the list.";

/// `?limit=`: None (everything) when absent, empty or ≤ 0, as the apiserver; capped at
/// `MAX_LIMIT`; 400 when not a number.
pub fn parse_limit(v: Option<&str>) -> Result<Option<usize>, KubeError> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let n: i64 = s.parse().map_err(|_| {
        KubeError::bad_request(format!(
            "limit: Invalid value: {}: must be an integer",
            super::status::quote(&s.chars().take(32).collect::<String>())
        ))
    })?;
    if n <= 0 {
        return Ok(None);
    }
    Ok(Some(usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT)))
}

/// What a `continue` token carries: the resourceVersion of the first page's list and the
/// (namespace, name) of the last object served, the next page starting after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// Always `meta.k8s.io/v1`, as the apiserver's.
    pub v: String,
    pub rv: u64,
    /// The namespace of the last object served (empty on a namespaced list).
    #[serde(default)]
    pub ns: String,
    /// The name of the last object served.
    pub start: String,
}

impl ContinueToken {
    pub fn new(rv: u64, namespace: &str, last_name: &str) -> Self {
        ContinueToken {
            v: "meta.k8s.io/v1".into(),
            rv,
            ns: namespace.into(),
            start: last_name.into(),
        }
    }

    /// The opaque token (base64 of JSON).
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::STANDARD.encode(json)
    }

    /// Parses `?continue=` (400 when it is not one of ours).
    pub fn decode(token: &str) -> Result<Self, KubeError> {
        let bad = |why: &str| KubeError::bad_request(format!("invalid continue token: {why}"));
        if token.len() > MAX_TOKEN_LEN {
            return Err(bad("too long"));
        }
        let engine = base64::engine::general_purpose::STANDARD;
        let bytes = engine.decode(token.trim()).map_err(|_| bad("not base64"))?;
        let t: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| bad("malformed"))?;
        if t.v != "meta.k8s.io/v1" {
            return Err(bad("unknown version"));
        }
        Ok(t)
    }
}

/// The 410 of a continue token whose resourceVersion the server can no longer serve.
pub fn continue_expired() -> KubeError {
    KubeError::Expired(CONTINUE_EXPIRED.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::ResponseError;

    #[test]
    fn limits_follow_the_apiserver_and_are_capped() {
        assert_eq!(parse_limit(None).ok(), Some(None));
        assert_eq!(parse_limit(Some("")).ok(), Some(None));
        assert_eq!(parse_limit(Some("0")).ok(), Some(None));
        assert_eq!(parse_limit(Some("-3")).ok(), Some(None));
        assert_eq!(parse_limit(Some("500")).ok(), Some(Some(500)));
        assert_eq!(parse_limit(Some("99999999999")).ok(), Some(Some(MAX_LIMIT)));
        assert_eq!(
            parse_limit(Some("ten"))
                .err()
                .map(|e| e.status_code().as_u16()),
            Some(400)
        );
    }

    #[test]
    fn continue_tokens_round_trip_and_garbage_is_400() {
        let t = ContinueToken::new(102, "p1", "alpha");
        assert_eq!(ContinueToken::decode(&t.encode()).ok(), Some(t));
        for bad in ["%%%", "bm9wZQ==", &"A".repeat(MAX_TOKEN_LEN + 1)] {
            assert_eq!(
                ContinueToken::decode(bad)
                    .err()
                    .map(|e| e.status_code().as_u16()),
                Some(400),
                "{bad}"
            );
        }
        let e = continue_expired();
        assert_eq!(e.status_code().as_u16(), 410);
        assert!(e
            .to_string()
            .starts_with("The provided continue parameter is too old"));
    }
}
