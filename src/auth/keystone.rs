//! Keystone token validation (`auth_strategy = keystone`), as keystonemiddleware's auth_token
//! does it: the caller's `X-Auth-Token` (or `Authorization: Bearer`) is checked with
//! `GET /v3/auth/tokens` and `X-Subject-Token`, authenticated with the service's own token.
//!
//! The service's token is obtained once and renewed shortly before it expires, or at once when
//! Keystone refuses it. Validated tokens are cached until `token_cache_time` passes or the token
//! expires, whichever comes first; tokens Keystone refused are cached as refused for
//! `invalid_token_cache_time`, so a flood of bad tokens does not become a flood of Keystone
//! requests. Concurrent requests with the same uncached token share one validation, so a
//! client opening many connections with a fresh token costs Keystone one call. When Keystone
//! cannot be reached, an uncached token gets 503 and cached tokens keep working.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::header::HeaderValue;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;

use crate::config::{KeystoneAuthtokenSection, Secret};

/// keystonemiddleware's sentence for a missing or refused token.
pub const UNAUTHORIZED: &str = "The request you have made requires authentication.";
/// keystonemiddleware's sentence when Keystone cannot be asked.
pub const UNAVAILABLE: &str = "The Keystone service is temporarily unavailable.";
/// The service's own token is renewed when it has less than this left.
const RENEW_MARGIN: Duration = Duration::from_secs(120);

/// Who a validated token speaks for, as keystonemiddleware hands it to oslo.context.
#[derive(Debug, Clone, PartialEq)]
pub struct KeystoneIdentity {
    pub user_id: String,
    /// The project of a project-scoped token.
    pub project_id: Option<String>,
    /// The domain of a domain-scoped token.
    pub domain_id: Option<String>,
    /// Role names (Keystone expands implied roles: `member` brings `reader`).
    pub roles: Vec<String>,
    /// `all` for a system-scoped token.
    pub system_scope: Option<String>,
    /// Keystone's `is_admin_project` (true when Keystone has no admin project configured).
    pub is_admin_project: bool,
    pub expires_at: DateTime<Utc>,
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeystoneError {
    /// The request carries no token.
    #[error("no token")]
    Missing,
    /// Keystone does not know the token (unknown, expired or revoked).
    #[error("the token was refused")]
    Invalid,
    /// Keystone could not be asked, or answered unexpectedly; the cause is for the log.
    #[error("{0}")]
    Unavailable(String),
}

/// How the service proves who it is to Keystone.
enum ServiceAuth {
    Password {
        username: String,
        password: Secret,
        user_domain_name: String,
        project_name: String,
        project_domain_name: String,
    },
    ApplicationCredential {
        id: String,
        secret: Secret,
    },
}

struct ServiceToken {
    value: String,
    expires_at: DateTime<Utc>,
}

/// Validates Keystone tokens; one per process, shared by the API workers.
pub struct KeystoneAuth {
    http: reqwest::Client,
    /// The identity API root, ending in `/v3`.
    identity_url: String,
    challenge: HeaderValue,
    service_auth: ServiceAuth,
    service_token: tokio::sync::Mutex<Option<ServiceToken>>,
    cache: Mutex<TokenCache>,
    /// Validations under way, by token digest: later requests with the same token wait for
    /// the first one's answer instead of asking Keystone again.
    in_flight: Mutex<HashMap<String, Arc<Validation>>>,
    cache_time: Duration,
    invalid_cache_time: Duration,
}

/// One validation that concurrent requests with the same token share.
type Validation = tokio::sync::OnceCell<Result<KeystoneIdentity, KeystoneError>>;

impl KeystoneAuth {
    /// Checks `[keystone_authtoken]` and prepares the HTTP client; Keystone is first asked on
    /// the first request.
    pub fn from_settings(s: &KeystoneAuthtokenSection) -> Result<KeystoneAuth, String> {
        let auth_url = s.auth_url.trim().trim_end_matches('/');
        if !(auth_url.starts_with("http://") || auth_url.starts_with("https://")) {
            return Err(
                "[keystone_authtoken] auth_url: an http:// or https:// URL is needed with auth_strategy = keystone"
                    .into(),
            );
        }
        let identity_url = if auth_url.ends_with("/v3") {
            auth_url.to_string()
        } else {
            format!("{auth_url}/v3")
        };
        let required = |name: &str, value: &str| {
            if value.trim().is_empty() {
                Err(format!(
                    "[keystone_authtoken] {name}: must be set for auth_type = {}",
                    s.auth_type
                ))
            } else {
                Ok(value.trim().to_string())
            }
        };
        let service_auth = match s.auth_type.as_str() {
            "password" => ServiceAuth::Password {
                username: required("username", &s.username)?,
                password: Secret::new(required("password", s.password.expose())?),
                user_domain_name: required("user_domain_name", &s.user_domain_name)?,
                project_name: required("project_name", &s.project_name)?,
                project_domain_name: required("project_domain_name", &s.project_domain_name)?,
            },
            "v3applicationcredential" => ServiceAuth::ApplicationCredential {
                id: required("application_credential_id", &s.application_credential_id)?,
                secret: Secret::new(required(
                    "application_credential_secret",
                    s.application_credential_secret.expose(),
                )?),
            },
            other => {
                return Err(format!(
                    "[keystone_authtoken] auth_type: '{other}' is not supported (password or v3applicationcredential)"
                ))
            }
        };
        if s.http_connect_timeout == 0 {
            return Err(
                "[keystone_authtoken] http_connect_timeout: must be at least 1 second".into(),
            );
        }
        let www = match s.www_authenticate_uri.trim() {
            "" => auth_url,
            uri => uri,
        };
        let challenge =
            HeaderValue::from_str(&format!("Keystone uri=\"{www}\"")).map_err(|_| {
                "[keystone_authtoken] www_authenticate_uri: not usable in an HTTP header"
                    .to_string()
            })?;
        let timeout = Duration::from_secs(s.http_connect_timeout);
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("fleetyard/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("[keystone_authtoken]: cannot build the HTTP client: {e}"))?;
        Ok(KeystoneAuth {
            http,
            identity_url,
            challenge,
            service_auth,
            service_token: tokio::sync::Mutex::new(None),
            cache: Mutex::new(TokenCache::new(s.token_cache_size)),
            in_flight: Mutex::new(HashMap::new()),
            cache_time: Duration::from_secs(s.token_cache_time),
            invalid_cache_time: Duration::from_secs(s.invalid_token_cache_time),
        })
    }

    /// The `WWW-Authenticate` value of a 401.
    pub fn challenge(&self) -> &HeaderValue {
        &self.challenge
    }

    /// Validates a token, from the cache when it can; concurrent callers with the same
    /// uncached token share one request to Keystone.
    pub async fn validate(&self, token: &str) -> Result<KeystoneIdentity, KeystoneError> {
        let key = cache_key(token);
        if let Some(hit) = self.lock_cache().get(&key, Instant::now()) {
            return hit.ok_or(KeystoneError::Invalid);
        }
        let shared = self
            .lock_in_flight()
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Validation::new()))
            .clone();
        let _leave = LeaveInFlight {
            auth: self,
            key: &key,
            shared: &shared,
        };
        // The first caller asks Keystone and caches the answer before the others see it; if
        // it goes away first (its client disconnected), the next waiter asks instead.
        shared
            .get_or_init(|| async {
                let answer = self.ask_keystone(token).await;
                self.remember(&key, &answer);
                answer
            })
            .await
            .clone()
    }

    /// Caches Keystone's answer: an identity until `token_cache_time` or its expiry, a
    /// refusal for `invalid_token_cache_time`; an unavailable Keystone is not remembered.
    fn remember(&self, key: &str, answer: &Result<KeystoneIdentity, KeystoneError>) {
        let now = Instant::now();
        match answer {
            Ok(identity) => {
                let left = (identity.expires_at - Utc::now())
                    .to_std()
                    .unwrap_or(Duration::ZERO);
                let keep = self.cache_time.min(left);
                self.lock_cache()
                    .insert(key.to_string(), Some(identity.clone()), now + keep, now);
            }
            Err(KeystoneError::Invalid) => {
                self.lock_cache()
                    .insert(key.to_string(), None, now + self.invalid_cache_time, now);
            }
            Err(_) => {}
        }
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, TokenCache> {
        // The cache holds no invariant a panicking holder could break halfway.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Validation>>> {
        // A map of shared cells: nothing a panicking holder could leave half-done.
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether Keystone knows the project: `GET /v3/projects/{id}` with the service's own
    /// token, as Magnum looks a quota's project up before storing the quota. The service user
    /// needs a role Keystone lets read any project (`admin` in its project, as Magnum's install
    /// guide gives its service user).
    pub async fn project_exists(&self, project_id: &str) -> Result<bool, KeystoneError> {
        // "." and ".." would be steps in the path, not ids.
        if matches!(project_id, "" | "." | "..") {
            return Ok(false);
        }
        let unusable = |e: &dyn std::fmt::Display| {
            KeystoneError::Unavailable(format!("{}: {e}", self.identity_url))
        };
        let mut url = reqwest::Url::parse(&self.identity_url).map_err(|e| unusable(&e))?;
        url.path_segments_mut()
            .map_err(|()| unusable(&"not a base URL"))?
            .pop_if_empty()
            .push("projects")
            .push(project_id);
        let mut renewed = false;
        loop {
            let service = self.service_token(renewed).await?;
            let resp = self
                .http
                .get(url.clone())
                .header("X-Auth-Token", service)
                .header("Accept", "application/json")
                .send()
                .await
                .map_err(|e| KeystoneError::Unavailable(format!("GET {url}: {e}")))?;
            match resp.status() {
                reqwest::StatusCode::OK => return Ok(true),
                reqwest::StatusCode::NOT_FOUND => return Ok(false),
                reqwest::StatusCode::UNAUTHORIZED if !renewed => renewed = true,
                reqwest::StatusCode::FORBIDDEN => {
                    return Err(KeystoneError::Unavailable(format!(
                        "GET {url}: Keystone answered 403: the service user may not read projects \
                         (give it the admin role in its project)"
                    )))
                }
                status => {
                    return Err(KeystoneError::Unavailable(format!(
                        "GET {url}: Keystone answered {status}"
                    )))
                }
            }
        }
    }

    async fn ask_keystone(&self, token: &str) -> Result<KeystoneIdentity, KeystoneError> {
        let Ok(subject) = reqwest::header::HeaderValue::from_str(token) else {
            return Err(KeystoneError::Invalid);
        };
        let url = format!("{}/auth/tokens?nocatalog", self.identity_url);
        let mut renewed = false;
        loop {
            let service = self.service_token(renewed).await?;
            let resp = self
                .http
                .get(&url)
                .header("X-Auth-Token", service)
                .header("X-Subject-Token", subject.clone())
                .header("Accept", "application/json")
                .send()
                .await
                .map_err(|e| KeystoneError::Unavailable(format!("GET {url}: {e}")))?;
            match resp.status() {
                reqwest::StatusCode::OK => {
                    let body: TokenBody = resp.json().await.map_err(|e| {
                        KeystoneError::Unavailable(format!("GET {url}: unreadable answer: {e}"))
                    })?;
                    return Ok(body.token.into_identity());
                }
                reqwest::StatusCode::NOT_FOUND | reqwest::StatusCode::BAD_REQUEST => {
                    return Err(KeystoneError::Invalid)
                }
                // Keystone no longer accepts the service's own token: get a new one, once.
                reqwest::StatusCode::UNAUTHORIZED if !renewed => renewed = true,
                status => {
                    return Err(KeystoneError::Unavailable(format!(
                    "GET {url}: Keystone answered {status} (can the service user validate tokens?)"
                )))
                }
            }
        }
    }

    /// The service's own token: the one held, unless it is about to expire or `renew` is set.
    async fn service_token(&self, renew: bool) -> Result<String, KeystoneError> {
        let mut held = self.service_token.lock().await;
        if let Some(t) = held.as_ref() {
            let left = (t.expires_at - Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO);
            if !renew && left > RENEW_MARGIN {
                return Ok(t.value.clone());
            }
        }
        let fresh = self.issue_service_token().await?;
        let value = fresh.value.clone();
        *held = Some(fresh);
        Ok(value)
    }

    async fn issue_service_token(&self) -> Result<ServiceToken, KeystoneError> {
        let body = match &self.service_auth {
            ServiceAuth::Password {
                username,
                password,
                user_domain_name,
                project_name,
                project_domain_name,
            } => json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "name": username,
                    "domain": {"name": user_domain_name},
                    "password": password.expose(),
                }}},
                "scope": {"project": {"name": project_name, "domain": {"name": project_domain_name}}},
            }}),
            ServiceAuth::ApplicationCredential { id, secret } => json!({"auth": {
                "identity": {
                    "methods": ["application_credential"],
                    "application_credential": {"id": id, "secret": secret.expose()},
                },
            }}),
        };
        let url = format!("{}/auth/tokens?nocatalog", self.identity_url);
        let resp = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(|e| KeystoneError::Unavailable(format!("POST {url}: {e}")))?;
        let status = resp.status();
        if status != reqwest::StatusCode::CREATED && status != reqwest::StatusCode::OK {
            return Err(KeystoneError::Unavailable(format!(
                "POST {url}: the service's own authentication failed: Keystone answered {status}"
            )));
        }
        let value = resp
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .map(String::from)
            .ok_or_else(|| {
                KeystoneError::Unavailable(format!("POST {url}: no X-Subject-Token in the answer"))
            })?;
        let body: TokenBody = resp.json().await.map_err(|e| {
            KeystoneError::Unavailable(format!("POST {url}: unreadable answer: {e}"))
        })?;
        Ok(ServiceToken {
            value,
            expires_at: body.token.expires_at,
        })
    }
}

/// Takes a shared validation out of the in-flight map when its caller is done with it (also
/// when the caller is dropped mid-way): once it has an answer (later callers find the cache),
/// or when no other caller waits on it.
struct LeaveInFlight<'a> {
    auth: &'a KeystoneAuth,
    key: &'a str,
    shared: &'a Arc<Validation>,
}

impl Drop for LeaveInFlight<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.auth.lock_in_flight();
        let ours = in_flight
            .get(self.key)
            .is_some_and(|current| Arc::ptr_eq(current, self.shared));
        // Held by the map and by this caller only: nobody else waits.
        if ours && (self.shared.initialized() || Arc::strong_count(self.shared) <= 2) {
            in_flight.remove(self.key);
        }
    }
}

/// Tokens are remembered by digest, never in clear.
fn cache_key(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Keystone's token document (`GET`/`POST /v3/auth/tokens`), the parts used here.
#[derive(Debug, Deserialize)]
struct TokenBody {
    token: TokenData,
}

#[derive(Debug, Deserialize)]
struct TokenData {
    expires_at: DateTime<Utc>,
    #[serde(default)]
    user: Option<Named>,
    #[serde(default)]
    project: Option<Named>,
    #[serde(default)]
    domain: Option<Named>,
    #[serde(default)]
    roles: Vec<Named>,
    #[serde(default)]
    system: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    is_admin_project: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct Named {
    id: String,
    #[serde(default)]
    name: String,
}

impl TokenData {
    fn into_identity(self) -> KeystoneIdentity {
        let system_scope = self.system.and_then(|s| {
            s.get("all")
                .and_then(|v| v.as_bool())
                .filter(|all| *all)
                .map(|_| "all".to_string())
        });
        KeystoneIdentity {
            user_id: self.user.map(|u| u.id).unwrap_or_default(),
            project_id: self.project.map(|p| p.id),
            domain_id: self.domain.map(|d| d.id),
            roles: self.roles.into_iter().map(|r| r.name).collect(),
            system_scope,
            is_admin_project: self.is_admin_project.unwrap_or(true),
            expires_at: self.expires_at,
        }
    }
}

/// Validation results by token digest: `Some` accepted, `None` refused, each until its deadline.
struct TokenCache {
    capacity: usize,
    entries: HashMap<String, (Option<KeystoneIdentity>, Instant)>,
}

impl TokenCache {
    fn new(capacity: usize) -> TokenCache {
        TokenCache {
            capacity,
            entries: HashMap::new(),
        }
    }

    /// The remembered answer, unless it has expired (then it is forgotten).
    fn get(&mut self, key: &str, now: Instant) -> Option<Option<KeystoneIdentity>> {
        match self.entries.get(key) {
            Some((answer, until)) if *until > now => Some(answer.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers an answer until `until`; when full, drops expired entries, then the entries
    /// closest to expiry.
    fn insert(
        &mut self,
        key: String,
        answer: Option<KeystoneIdentity>,
        until: Instant,
        now: Instant,
    ) {
        if until <= now || self.capacity == 0 {
            self.entries.remove(&key);
            return;
        }
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.entries.retain(|_, (_, t)| *t > now);
            while self.entries.len() >= self.capacity {
                let Some(soonest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, t))| *t)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                self.entries.remove(&soonest);
            }
        }
        self.entries.insert(key, (answer, until));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(user: &str) -> KeystoneIdentity {
        KeystoneIdentity {
            user_id: user.into(),
            project_id: Some("p1".into()),
            domain_id: None,
            roles: vec!["member".into(), "reader".into()],
            system_scope: None,
            is_admin_project: true,
            expires_at: Utc::now() + chrono::Duration::hours(1),
        }
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn an_accepted_token_is_served_from_the_cache_until_its_deadline() {
        let mut cache = TokenCache::new(10);
        let t0 = Instant::now();
        cache.insert("a".into(), Some(identity("u1")), t0 + 5 * S, t0);
        let hit = cache.get("a", t0 + 4 * S).flatten().map(|i| i.user_id);
        assert_eq!(hit.as_deref(), Some("u1"));
        assert_eq!(cache.get("a", t0 + 5 * S), None, "expired at its deadline");
        assert_eq!(cache.len(), 0, "an expired entry is forgotten");
    }

    #[test]
    fn a_refused_token_is_refused_from_the_cache_until_its_deadline() {
        let mut cache = TokenCache::new(10);
        let t0 = Instant::now();
        cache.insert("bad".into(), None, t0 + 10 * S, t0);
        assert_eq!(cache.get("bad", t0 + 9 * S), Some(None));
        assert_eq!(cache.get("bad", t0 + 11 * S), None);
    }

    #[test]
    fn nothing_is_cached_with_a_zero_lifetime_or_capacity() {
        let t0 = Instant::now();
        let mut cache = TokenCache::new(10);
        cache.insert("a".into(), Some(identity("u1")), t0, t0);
        assert_eq!(cache.get("a", t0), None);
        let mut none = TokenCache::new(0);
        none.insert("a".into(), Some(identity("u1")), t0 + S, t0);
        assert_eq!(none.len(), 0);
    }

    #[test]
    fn a_full_cache_drops_expired_entries_then_those_closest_to_expiry() {
        let t0 = Instant::now();
        let mut cache = TokenCache::new(3);
        cache.insert("old".into(), None, t0 + S, t0);
        cache.insert("soon".into(), Some(identity("u1")), t0 + 20 * S, t0);
        cache.insert("late".into(), Some(identity("u2")), t0 + 60 * S, t0);
        // At t0+2s "old" has expired: it makes room.
        cache.insert("new1".into(), None, t0 + 30 * S, t0 + 2 * S);
        assert_eq!(cache.len(), 3);
        assert!(cache.get("old", t0 + 2 * S).is_none());
        // Full of live entries: the one closest to expiry ("soon") goes.
        cache.insert("new2".into(), Some(identity("u3")), t0 + 40 * S, t0 + 3 * S);
        assert_eq!(cache.len(), 3);
        assert!(cache.get("soon", t0 + 3 * S).is_none());
        for kept in ["late", "new1", "new2"] {
            assert!(cache.get(kept, t0 + 3 * S).is_some(), "{kept} kept");
        }
        // Replacing an entry already there never evicts another.
        cache.insert("late".into(), None, t0 + 50 * S, t0 + 3 * S);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get("late", t0 + 3 * S), Some(None));
    }

    #[test]
    fn tokens_are_cached_by_digest() {
        let key = cache_key("gAAAAAsecret");
        assert_eq!(key.len(), 64);
        assert!(!key.contains("secret"));
        assert_ne!(key, cache_key("gAAAAAsecreT"));
    }

    #[test]
    fn a_project_token_gives_user_project_and_role_names() {
        let body: TokenBody = serde_json::from_value(json!({"token": {
            "methods": ["password"],
            "user": {"id": "u1", "name": "alice", "domain": {"id": "default", "name": "Default"}},
            "project": {"id": "p1", "name": "A", "domain": {"id": "default", "name": "Default"}},
            "roles": [{"id": "r1", "name": "member"}, {"id": "r2", "name": "reader"}],
            "expires_at": "2026-11-23T22:50:39.000000Z",
            "issued_at": "2026-11-23T21:50:39.000000Z",
        }}))
        .expect("token document");
        let id = body.token.into_identity();
        assert_eq!(id.user_id, "u1");
        assert_eq!(id.project_id.as_deref(), Some("p1"));
        assert_eq!(id.roles, ["member", "reader"]);
        assert_eq!(id.system_scope, None);
        assert!(
            id.is_admin_project,
            "absent means true, as in keystonemiddleware"
        );
        assert_eq!(id.expires_at.to_rfc3339(), "2026-11-23T22:50:39+00:00");
    }

    #[test]
    fn a_system_token_has_system_scope_all() {
        let body: TokenBody = serde_json::from_value(json!({"token": {
            "user": {"id": "admin"},
            "system": {"all": true},
            "roles": [{"id": "r", "name": "admin"}],
            "is_admin_project": false,
            "expires_at": "2026-11-23T22:50:39Z",
        }}))
        .expect("token document");
        let id = body.token.into_identity();
        assert_eq!(id.system_scope.as_deref(), Some("all"));
        assert_eq!(id.project_id, None);
        assert!(!id.is_admin_project);
    }

    fn settings() -> KeystoneAuthtokenSection {
        KeystoneAuthtokenSection {
            auth_url: "http://127.0.0.1:5000/".into(),
            username: "fleetyard".into(),
            password: Secret::new("pw"),
            project_name: "service".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_settings_name_what_is_missing() {
        let auth = KeystoneAuth::from_settings(&settings()).expect("valid");
        assert_eq!(auth.identity_url, "http://127.0.0.1:5000/v3");
        assert_eq!(auth.challenge(), "Keystone uri=\"http://127.0.0.1:5000\"");
        let www = KeystoneAuthtokenSection {
            www_authenticate_uri: "https://keystone.example/v3".into(),
            auth_url: "http://127.0.0.1:5000/v3".into(),
            ..settings()
        };
        let auth = KeystoneAuth::from_settings(&www).expect("valid");
        assert_eq!(auth.identity_url, "http://127.0.0.1:5000/v3");
        assert_eq!(
            auth.challenge(),
            "Keystone uri=\"https://keystone.example/v3\""
        );
        let no_password = KeystoneAuthtokenSection {
            password: Secret::default(),
            ..settings()
        };
        let err = KeystoneAuth::from_settings(&no_password)
            .err()
            .unwrap_or_default();
        assert!(err.contains("[keystone_authtoken] password"), "{err}");
        let no_url = KeystoneAuthtokenSection {
            auth_url: String::new(),
            ..settings()
        };
        let err = KeystoneAuth::from_settings(&no_url)
            .err()
            .unwrap_or_default();
        assert!(err.contains("auth_url"), "{err}");
        let app_cred = KeystoneAuthtokenSection {
            auth_type: "v3applicationcredential".into(),
            application_credential_id: "id".into(),
            ..settings()
        };
        let err = KeystoneAuth::from_settings(&app_cred)
            .err()
            .unwrap_or_default();
        assert!(err.contains("application_credential_secret"), "{err}");
    }

    #[tokio::test]
    async fn keystone_unreachable_is_unavailable_and_not_cached() {
        // A port nothing listens on: the connection is refused at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let auth = KeystoneAuth::from_settings(&KeystoneAuthtokenSection {
            auth_url: format!("http://127.0.0.1:{port}/v3"),
            ..settings()
        })
        .expect("valid");
        let err = auth.validate("tok").await.expect_err("unreachable");
        assert!(matches!(err, KeystoneError::Unavailable(_)), "{err:?}");
        assert_eq!(auth.lock_cache().len(), 0);
    }
}
