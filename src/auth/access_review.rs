//! The delegated authorizer of the aggregated deployment (`[front_proxy] authorization_mode =
//! subject_access_review`): what a forwarded caller may do is asked of the kube-apiserver, one
//! `authorization.k8s.io/v1` `SubjectAccessReview` per distinct request, as a Kubernetes
//! extension API server's delegated authorizer does.
//!
//! Decisions are cached by the review's whole spec (user, uid, groups, extra and the resource
//! or non-resource attributes): an allowed one for `authorization_allowed_ttl`, a denied one
//! for `authorization_denied_ttl`, at most `authorization_cache_size` of them (the least
//! recently used goes first), each at most 16 KiB of JSON (a larger review is asked each
//! time). A review that cannot be had in `authorization_timeout` (the
//! kube-apiserver down, slow, or answering anything but a review) is an error, never a
//! decision, and is not cached.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hashlink::LruCache;
use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewSpec};

use crate::config::FrontProxySection;

/// The path of the reviews on the kube-apiserver.
pub const REVIEW_PATH: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// The largest review answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;
/// The largest review (as JSON) whose decision is cached, so that the cache's size in bytes is
/// bounded too; a larger one is asked each time, as the webhook authorizer skips caching
/// large attributes.
const MAX_CACHED_KEY_BYTES: usize = 16 * 1024;

/// What the kube-apiserver decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// Denied (or no opinion), with the reviewer's reason (possibly empty).
    Denied(String),
}

/// Why no decision could be had: a sentence for the log (it names no credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReviewError(pub String);

/// The decisions already had, by the review spec's JSON.
struct DecisionCache {
    entries: LruCache<String, (Decision, Instant)>,
}

impl DecisionCache {
    fn new(capacity: usize) -> DecisionCache {
        DecisionCache {
            entries: LruCache::new(capacity.max(1)),
        }
    }

    fn get(&mut self, key: &str, now: Instant) -> Option<Decision> {
        let (decision, expires) = self.entries.get(key)?;
        if *expires > now {
            return Some(decision.clone());
        }
        self.entries.remove(key);
        None
    }

    fn insert(&mut self, key: String, decision: Decision, expires: Instant) {
        if key.len() <= MAX_CACHED_KEY_BYTES {
            self.entries.insert(key, (decision, expires));
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The kube-apiserver's reviews, with the decisions already had.
pub struct Reviewer {
    client: reqwest::Client,
    url: String,
    token_file: Option<PathBuf>,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: Mutex<DecisionCache>,
}

impl std::fmt::Debug for Reviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reviewer")
            .field("url", &self.url)
            .field("allowed_ttl", &self.allowed_ttl)
            .field("denied_ttl", &self.denied_ttl)
            .finish_non_exhaustive()
    }
}

fn read(option: &str, path: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path.trim())
        .map_err(|e| anyhow::anyhow!("[front_proxy] {option}: cannot read {}: {e}", path.trim()))
}

impl Reviewer {
    /// The reviewer `[front_proxy]` configures (a validated section in `subject_access_review`
    /// mode); a file that cannot be read or parsed is an error naming its option.
    pub fn from_settings(s: &FrontProxySection) -> anyhow::Result<Reviewer> {
        let timeout = Duration::from_secs(s.authorization_timeout);
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout);
        if !s.kube_apiserver_ca_file.trim().is_empty() {
            let pem = read("kube_apiserver_ca_file", &s.kube_apiserver_ca_file)?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| anyhow::anyhow!("[front_proxy] kube_apiserver_ca_file: {e}"))?;
            if certs.is_empty() {
                anyhow::bail!("[front_proxy] kube_apiserver_ca_file: holds no PEM certificate");
            }
            builder = builder.tls_built_in_root_certs(false);
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if !s.kube_apiserver_cert_file.trim().is_empty() {
            let mut pem = read("kube_apiserver_cert_file", &s.kube_apiserver_cert_file)?;
            pem.push(b'\n');
            pem.extend(read("kube_apiserver_key_file", &s.kube_apiserver_key_file)?);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                anyhow::anyhow!(
                    "[front_proxy] kube_apiserver_cert_file, kube_apiserver_key_file: {e}"
                )
            })?;
            builder = builder.identity(identity);
        }
        let token_file = Some(s.kube_apiserver_token_file.trim())
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        if let Some(path) = &token_file {
            read_token(path).map_err(|e| anyhow::anyhow!("[front_proxy] {e}"))?;
        }
        let client = builder
            .build()
            .map_err(|e| anyhow::anyhow!("[front_proxy] the review client: {e}"))?;
        Ok(Reviewer {
            client,
            url: format!(
                "{}{REVIEW_PATH}",
                s.kube_apiserver_url.trim().trim_end_matches('/')
            ),
            token_file,
            allowed_ttl: Duration::from_secs(s.authorization_allowed_ttl),
            denied_ttl: Duration::from_secs(s.authorization_denied_ttl),
            cache: Mutex::new(DecisionCache::new(s.authorization_cache_size)),
        })
    }

    fn cached(&self, key: &str) -> Option<Decision> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(key, Instant::now())
    }

    fn remember(&self, key: String, decision: &Decision) {
        let ttl = match decision {
            Decision::Allowed => self.allowed_ttl,
            Decision::Denied(_) => self.denied_ttl,
        };
        if ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(key, decision.clone(), Instant::now() + ttl);
    }

    /// The decisions held now (expired ones included until they are looked up or pushed out).
    pub fn cached_decisions(&self) -> usize {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The kube-apiserver's decision on `spec`: a cached one while it is fresh, else a review.
    pub async fn review(&self, spec: SubjectAccessReviewSpec) -> Result<Decision, ReviewError> {
        let key = serde_json::to_string(&spec)
            .map_err(|e| ReviewError(format!("the review cannot be written: {e}")))?;
        if let Some(decision) = self.cached(&key) {
            return Ok(decision);
        }
        let decision = self.ask(spec).await?;
        self.remember(key, &decision);
        Ok(decision)
    }

    async fn ask(&self, spec: SubjectAccessReviewSpec) -> Result<Decision, ReviewError> {
        let body = SubjectAccessReview {
            spec,
            ..SubjectAccessReview::default()
        };
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(path) = &self.token_file {
            request = request.bearer_auth(read_token(path).map_err(ReviewError)?);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| ReviewError(format!("the review could not be sent: {}", chain(&e))))?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ReviewError(format!("the review's answer was cut: {}", chain(&e))))?
        {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(ReviewError(format!(
                    "the review's answer is over {MAX_ANSWER_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(ReviewError(format!(
                "the kube-apiserver answered the review with {status}"
            )));
        }
        let answer: SubjectAccessReview = serde_json::from_slice(&bytes).map_err(|e| {
            ReviewError(format!(
                "the review's answer is not a SubjectAccessReview: {e}"
            ))
        })?;
        let status = answer.status.unwrap_or_default();
        if status.allowed {
            return Ok(Decision::Allowed);
        }
        let reason = status
            .reason
            .filter(|r| !r.trim().is_empty())
            .or(status.evaluation_error)
            .unwrap_or_default();
        Ok(Decision::Denied(printable(&reason)))
    }
}

/// The bearer token in `path`, trimmed; an error naming the file, never the token.
fn read_token(path: &std::path::Path) -> Result<String, String> {
    let token = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "kube_apiserver_token_file: cannot read {}: {e}",
            path.display()
        )
    })?;
    let token = token.trim().to_string();
    if token.is_empty() || token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!(
            "kube_apiserver_token_file: {} holds no usable token",
            path.display()
        ));
    }
    Ok(token)
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A reviewer's sentence fit for a Status message: control characters dropped, at most 512
/// characters.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(512).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_forgets_an_expired_decision_and_the_least_recently_used_first() {
        let now = Instant::now();
        let later = now + Duration::from_secs(10);
        let mut cache = DecisionCache::new(2);
        cache.insert("a".into(), Decision::Allowed, later);
        cache.insert("b".into(), Decision::Denied("no".into()), later);
        assert_eq!(cache.get("a", now), Some(Decision::Allowed));
        // "b" is now the least recently used: a third decision pushes it out.
        cache.insert("c".into(), Decision::Allowed, later);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get("b", now), None);
        assert_eq!(cache.get("a", now), Some(Decision::Allowed));
        assert_eq!(cache.get("c", now), Some(Decision::Allowed));
        // Past its expiry a decision is gone.
        assert_eq!(cache.get("a", later), None);
        assert_eq!(cache.len(), 1);
        // A review too large to keep is not kept.
        let large = "x".repeat(MAX_CACHED_KEY_BYTES + 1);
        cache.insert(large.clone(), Decision::Allowed, later);
        assert_eq!(cache.get(&large, now), None);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_reviewer_sentence_is_kept_printable_and_short() {
        assert_eq!(printable("no\nway"), "noway");
        assert_eq!(printable(&"x".repeat(600)).len(), 512);
    }

    #[test]
    fn a_token_file_without_a_token_is_refused_without_showing_it() {
        let dir = std::env::temp_dir().join(format!("fy-token-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token");
        std::fs::write(&path, "  secret-token\n").expect("write");
        assert_eq!(read_token(&path).as_deref(), Ok("secret-token"));
        std::fs::write(&path, "two words").expect("write");
        let err = read_token(&path).expect_err("refused");
        assert!(!err.contains("two words"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
