//! The active health prober: every `[health_probe] interval` a conductor probes the API of
//! each cluster of the `[health_probe] drivers` that has an `api_address` and a complete-like
//! status: `GET <api_address>/readyz` (then `/healthz` when `/readyz` is 404) over HTTPS,
//! trusting the cluster's CA only, with the address checked against the server's certificate.
//! A 200 is a success; any other status, a TLS failure, a refused connection or no answer
//! within `timeout` is a failure.
//!
//! **Only allowed addresses.** Anyone who may register a cluster chooses its address, so the
//! prober connects only to addresses inside `[health_probe] allowed_networks` and outside
//! `denied_networks` ([`AddressPolicy`]; by default everything but loopback, link-local and
//! cloud metadata addresses). A host name is resolved first, every address it resolves to is
//! checked, and the connection goes to those checked addresses only. The cluster's owner sees a
//! short reason ([`ProbeFailure`]: unreachable, TLS failure, HTTP status N, address not
//! allowed), never the error itself, so that the prober cannot be used to map which hosts and
//! ports answer inside the operator's network; the error goes to the log (debug for every
//! failed probe, info with each health change).
//!
//! Consecutive failures and successes are counted in the `cluster_health_probe` table, not in
//! memory, so several conductors and restarts agree. When failures reach `failure_threshold`
//! the cluster becomes `UNHEALTHY` with `{"api": "<why>"}`; when successes reach
//! `success_threshold` it becomes `HEALTHY`. Only such a change is committed, with its
//! `magnum.cluster.update` notification in the same transaction; a row changed meanwhile
//! ([`StoreError::Stale`]) is left to the next round, whose counters still pass the threshold.
//!
//! **Detection bound.** A cluster is probed at least once per `interval` (plus the length of a
//! round), each probe ends within `timeout`, so one whose API stops answering is `UNHEALTHY`
//! within `interval * failure_threshold + timeout`, and one that answers again is `HEALTHY`
//! within `interval * success_threshold + timeout` (`tests/integration/health_probe.rs` holds
//! this against real HTTPS endpoints that go down, hang and come back).
//!
//! **One round** pages through candidates by id (a fixed number of columns, never whole
//! clusters with their node groups), claims each page, and feeds one stream of probes that
//! run as tasks, at most `concurrency` at once: a hanging endpoint holds one slot for
//! `timeout` and never the others. Results are written back in batches, one statement each.
//!
//! **Several conductors.** A page is claimed with one conditional upsert that sets
//! `last_probe_at` to now where it is older than half an interval (or absent), returning the
//! rows won; a concurrent claim of the same row waits for the first and then finds it fresh.
//! So each cluster is probed by one conductor, about once per interval, whatever the number of
//! conductors; a conductor that dies after its claim leaves the cluster to the next round.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures_util::stream::{self, StreamExt};

use super::Conductor;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::health_probe::{
    verdict, AddressPolicy, HealthProbe, ProbeCandidate, ProbeFailure, ProbeResult,
};
use crate::domain::status::HealthStatus;
use crate::domain::ClusterId;
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::{StoreError, StoreResult, Write};

/// Candidates read, claimed and written back per statement.
const BATCH: u32 = 500;

/// Past a probe's timeout, how long the guard around it waits for reqwest's own timers.
const GUARD: Duration = Duration::from_millis(100);

/// Health changes committed at once (each is a transaction with its notification; a first
/// round after an upgrade may change thousands).
const COMMIT_CONCURRENCY: usize = 4;

/// Where and how to probe one cluster's API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    /// The API's base URL (`https://host:port`), without a trailing slash.
    pub url: String,
    /// The CA certificates (PEM) the server's certificate must chain to; nothing else is
    /// trusted.
    pub ca_pem: String,
}

/// What to probe for a cluster, or `None` when it cannot be probed: no address, an address
/// that is not HTTPS (`https://` is assumed when no scheme is given), or no CA. The CA is
/// read with the candidate: a registered cluster's own bundle (`cluster.ca_bundle`, from the
/// registry's `caBundle`), else the cluster's Kubernetes CA from `x509keypair` (the newest
/// `ca` row).
pub fn probe_target(c: &ProbeCandidate) -> Option<ProbeTarget> {
    let address = c.api_address.trim().trim_end_matches('/');
    if address.is_empty() {
        return None;
    }
    let url = match address.split_once("://") {
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => address.to_string(),
        Some(_) => return None,
        None => format!("https://{address}"),
    };
    let ca_pem = c
        .ca_certificate
        .as_deref()
        .map(str::trim)
        .filter(|pem| !pem.is_empty())?
        .to_string();
    Some(ProbeTarget { url, ca_pem })
}

/// Seconds as operators write them: `5s`, `0.5s`.
fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// A failed probe: the short reason the cluster's owner sees, and the error behind it, which
/// only the log gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeError {
    pub reason: ProbeFailure,
    /// The address and the innermost cause ("Connection refused (os error 111)", "invalid
    /// peer certificate: UnknownIssuer", "no answer within 5s").
    pub detail: String,
}

impl ProbeError {
    fn new(reason: ProbeFailure, detail: impl Into<String>) -> ProbeError {
        ProbeError {
            reason,
            detail: detail.into(),
        }
    }
}

/// The innermost cause of an error: "Connection refused (os error 111)", "invalid peer
/// certificate: UnknownIssuer", rather than reqwest's "error sending request for url ...".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let mut text = cause.to_string();
    if text.len() > 200 {
        let mut end = 200;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Whether a TLS error (rustls's) is among the causes of `e`, also inside an `io::Error`,
/// which does not give the error it wraps as its `source`.
fn is_tls_error(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<rustls::Error>() {
        return true;
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        if is_tls_error(inner) {
            return true;
        }
    }
    e.source().is_some_and(is_tls_error)
}

fn failure(e: &reqwest::Error, timeout: Duration) -> ProbeError {
    let (reason, detail) = if e.is_timeout() && e.is_connect() {
        (
            ProbeFailure::Unreachable,
            format!("connect timeout after {}", secs(timeout)),
        )
    } else if e.is_timeout() {
        (
            ProbeFailure::Unreachable,
            format!("no answer within {}", secs(timeout)),
        )
    } else if is_tls_error(e) {
        (
            ProbeFailure::TlsFailure,
            format!("TLS failure: {}", root_cause(e)),
        )
    } else if e.is_connect() {
        (
            ProbeFailure::Unreachable,
            format!("cannot connect: {}", root_cause(e)),
        )
    } else {
        (
            ProbeFailure::Unreachable,
            format!("request failed: {}", root_cause(e)),
        )
    };
    ProbeError::new(reason, detail)
}

/// The addresses a probe of `url` may connect to: the URL's own IP, or every address its host
/// name resolves to, each checked against `policy`. A name is resolved here, once, and the
/// client is then told to connect to these addresses only, so a name that resolves elsewhere
/// a moment later (DNS rebinding) cannot lead the probe past the check. `None` for an IP in
/// the URL (nothing to pin), else the name and its addresses.
async fn checked_addresses(
    url: &reqwest::Url,
    policy: &AddressPolicy,
    timeout: Duration,
) -> Result<Option<(String, Vec<SocketAddr>)>, ProbeError> {
    let refuse = |ip: IpAddr| {
        ProbeError::new(
            ProbeFailure::AddressNotAllowed,
            format!("{ip} is outside [health_probe] allowed_networks: not connected to"),
        )
    };
    let port = url.port_or_known_default().unwrap_or(443);
    match url.host() {
        Some(url::Host::Ipv4(ip)) if policy.permits(ip.into()) => Ok(None),
        Some(url::Host::Ipv6(ip)) if policy.permits(ip.into()) => Ok(None),
        Some(url::Host::Ipv4(ip)) => Err(refuse(ip.into())),
        Some(url::Host::Ipv6(ip)) => Err(refuse(ip.into())),
        Some(url::Host::Domain(name)) => {
            let resolved =
                tokio::time::timeout(timeout, tokio::net::lookup_host((name, port))).await;
            let addresses: Vec<SocketAddr> = match resolved {
                Ok(Ok(found)) => found.collect(),
                Ok(Err(e)) => {
                    return Err(ProbeError::new(
                        ProbeFailure::Unreachable,
                        format!("cannot resolve {name}: {e}"),
                    ))
                }
                Err(_) => {
                    return Err(ProbeError::new(
                        ProbeFailure::Unreachable,
                        format!("{name} did not resolve within {}", secs(timeout)),
                    ))
                }
            };
            if addresses.is_empty() {
                return Err(ProbeError::new(
                    ProbeFailure::Unreachable,
                    format!("{name} resolves to no address"),
                ));
            }
            if let Some(bad) = addresses.iter().find(|a| !policy.permits(a.ip())) {
                return Err(ProbeError::new(
                    ProbeFailure::AddressNotAllowed,
                    format!(
                        "{name} resolves to {}, outside [health_probe] allowed_networks: \
                         not connected to",
                        bad.ip()
                    ),
                ));
            }
            Ok(Some((name.to_string(), addresses)))
        }
        None => Err(ProbeError::new(
            ProbeFailure::Unreachable,
            format!("{url} has no host"),
        )),
    }
}

/// Probes one API: `Ok` when `/readyz` (or, when that is 404, `/healthz`) answers 200; else
/// why not. Connects only to addresses `policy` permits (see [`checked_addresses`]): any
/// other is refused before a socket is opened. Never takes longer than `timeout` (and
/// [`GUARD`]), name resolution, connection and handshake included.
pub async fn probe(
    target: &ProbeTarget,
    policy: &AddressPolicy,
    timeout: Duration,
) -> Result<(), ProbeError> {
    let deadline = Instant::now() + timeout;
    let url = reqwest::Url::parse(&target.url).map_err(|e| {
        ProbeError::new(
            ProbeFailure::Unreachable,
            format!("{} is not a URL: {e}", target.url),
        )
    })?;
    let pinned = checked_addresses(&url, policy, timeout).await?;
    let ca = reqwest::Certificate::from_pem(target.ca_pem.as_bytes()).map_err(|e| {
        ProbeError::new(
            ProbeFailure::InvalidCaBundle,
            format!("the cluster's CA is unreadable: {}", root_cause(&e)),
        )
    })?;
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .https_only(true)
        .no_proxy()
        .http1_only()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(deadline.saturating_duration_since(Instant::now()));
    if let Some((name, addresses)) = &pinned {
        builder = builder.resolve_to_addrs(name, addresses);
    }
    let client = builder.build().map_err(|e| {
        ProbeError::new(
            ProbeFailure::TlsFailure,
            format!("cannot build a client: {}", root_cause(&e)),
        )
    })?;
    // The connection (TCP and TLS) gets what is left of `timeout`, each request what is left
    // of it and a little more, so that reqwest says which phase ran out; the guard around
    // both only catches what reqwest's timers would not. A probe ends within `timeout` +
    // `GUARD`.
    let attempt = async {
        let mut last = 0;
        for path in ["/readyz", "/healthz"] {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProbeError::new(
                    ProbeFailure::Unreachable,
                    format!("no answer within {}", secs(timeout)),
                ));
            }
            let response = client
                .get(url.join(path).map_err(|e| {
                    ProbeError::new(ProbeFailure::Unreachable, format!("{url}{path}: {e}"))
                })?)
                .timeout(left + GUARD / 2)
                .send()
                .await
                .map_err(|e| failure(&e, timeout))?;
            let status = response.status();
            if status == reqwest::StatusCode::OK {
                return Ok(());
            }
            last = status.as_u16();
            if status != reqwest::StatusCode::NOT_FOUND {
                return Err(ProbeError::new(
                    ProbeFailure::HttpStatus(last),
                    format!("GET {path} answered {last}"),
                ));
            }
        }
        Err(ProbeError::new(
            ProbeFailure::HttpStatus(last),
            format!("GET /readyz and /healthz answered {last}"),
        ))
    };
    match tokio::time::timeout(timeout + GUARD, attempt).await {
        Ok(outcome) => outcome,
        Err(_) => Err(ProbeError::new(
            ProbeFailure::Unreachable,
            format!("no answer within {}", secs(timeout)),
        )),
    }
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeRoundReport {
    /// Clusters probed by this conductor in this round.
    pub probed: usize,
    /// Probes that failed.
    pub failed: usize,
    /// Clusters whose health this round changed (one notification each).
    pub changed: usize,
    /// Due clusters that cannot be probed (no CA, not HTTPS).
    pub unprobeable: usize,
    /// Due clusters another conductor claimed first.
    pub lost: usize,
    /// Batches whose results could not be written (logged; probed again next round).
    pub write_errors: usize,
    pub elapsed: Duration,
}

/// A claimed cluster with its target.
struct Claimed {
    candidate: ProbeCandidate,
    target: ProbeTarget,
}

/// A probe's outcome with the candidate it was about.
struct Probed {
    candidate: ProbeCandidate,
    result: Result<(), ProbeError>,
}

impl Conductor {
    /// Probes clusters every `[health_probe] interval` until the task is dropped. A round
    /// longer than the interval delays the next one rather than stacking rounds.
    pub async fn health_probe_loop(&self) {
        let mut ticker = tokio::time::interval(self.probe.interval());
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            match self.health_probe_round().await {
                Ok(r) if r.changed > 0 || r.write_errors > 0 => tracing::info!(
                    probed = r.probed,
                    failed = r.failed,
                    changed = r.changed,
                    write_errors = r.write_errors,
                    elapsed_ms = r.elapsed.as_millis() as u64,
                    "health probe round"
                ),
                Ok(r) if r.elapsed > self.probe.interval() => tracing::warn!(
                    probed = r.probed,
                    elapsed_ms = r.elapsed.as_millis() as u64,
                    "a health probe round took longer than [health_probe] interval: raise concurrency or lower timeout"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "health probe round failed"),
            }
        }
    }

    /// One round over every due cluster (see the module's documentation).
    #[tracing::instrument(skip_all, fields(
        probed = tracing::field::Empty,
        failed = tracing::field::Empty,
        changed = tracing::field::Empty,
    ))]
    pub async fn health_probe_round(&self) -> StoreResult<ProbeRoundReport> {
        let started = Instant::now();
        // Due: not claimed for half an interval, counted from the moment each page is read
        // (a page read late in a long round was claimed as late in the previous one).
        let half = chrono::Duration::from_std(self.probe.interval() / 2)
            .unwrap_or(chrono::Duration::seconds(15));
        let timeout = self.probe.timeout();
        let concurrency = self.probe.concurrency.max(1);
        let (claimed_tx, claimed_rx) = tokio::sync::mpsc::channel::<Claimed>(BATCH as usize * 2);
        // Results wait here for the writer, which takes all that are waiting (up to a batch)
        // in one statement: the slower the database, the larger the batches, and probes never
        // wait for a write unless a few batches are already waiting.
        let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<Probed>(BATCH as usize * 4);

        let produce = async move {
            let drivers = self.probe.driver_list();
            let (mut unprobeable, mut lost) = (0, 0);
            let mut after = 0_i64;
            loop {
                let due_before = Utc::now() - half;
                let page = self
                    .store
                    .probe_candidates(&drivers, due_before, after, BATCH)
                    .await?;
                let Some(last) = page.last() else { break };
                after = last.id;
                let full = page.len() == BATCH as usize;
                let mut targets: HashMap<ClusterId, Claimed> = HashMap::with_capacity(page.len());
                for candidate in page {
                    match probe_target(&candidate) {
                        Some(target) => {
                            targets.insert(candidate.uuid, Claimed { candidate, target });
                        }
                        None => unprobeable += 1,
                    }
                }
                let uuids: Vec<ClusterId> = targets.keys().copied().collect();
                let won = self
                    .store
                    .claim_health_probes(&uuids, due_before, Utc::now())
                    .await?;
                lost += uuids.len().saturating_sub(won.len());
                for uuid in won {
                    if let Some(claimed) = targets.remove(&uuid) {
                        if claimed_tx.send(claimed).await.is_err() {
                            return Ok((unprobeable, lost));
                        }
                    }
                }
                if !full {
                    break;
                }
            }
            Ok::<_, StoreError>((unprobeable, lost))
        };

        let policy: Arc<AddressPolicy> = self.probe_policy.clone();
        let run = async move {
            let probes = tokio_stream_of(claimed_rx)
                .map(move |c: Claimed| {
                    let policy = policy.clone();
                    tokio::spawn(async move {
                        let result = probe(&c.target, &policy, timeout).await;
                        if let Err(e) = &result {
                            tracing::debug!(
                                cluster = %c.candidate.uuid,
                                address = %c.target.url,
                                reason = %e.reason,
                                error = %e.detail,
                                "health probe failed"
                            );
                        }
                        Probed {
                            candidate: c.candidate,
                            result,
                        }
                    })
                })
                .buffer_unordered(concurrency)
                .filter_map(|joined| std::future::ready(joined.ok()));
            let mut probes = std::pin::pin!(probes);
            while let Some(probed) = probes.next().await {
                if done_tx.send(probed).await.is_err() {
                    break;
                }
            }
        };

        let write = async {
            let mut report = ProbeRoundReport::default();
            let mut waiting = Vec::with_capacity(BATCH as usize);
            while done_rx.recv_many(&mut waiting, BATCH as usize).await > 0 {
                let batch = std::mem::take(&mut waiting);
                report.probed += batch.len();
                let failed = batch.iter().filter(|p| p.result.is_err()).count();
                report.failed += failed;
                crate::metrics::health_probes("ok", (batch.len() - failed) as u64);
                crate::metrics::health_probes("failed", failed as u64);
                match self.write_back(batch).await {
                    Ok(changed) => report.changed += changed,
                    Err(e) => {
                        report.write_errors += 1;
                        tracing::warn!(error = %e, "health probe results could not be written");
                    }
                }
            }
            report
        };

        let (produced, (), mut report) = tokio::join!(produce, run, write);
        let (unprobeable, lost) = produced?;
        report.unprobeable = unprobeable;
        report.lost = lost;
        report.elapsed = started.elapsed();
        crate::metrics::health_probe_round(report.elapsed);
        let span = tracing::Span::current();
        span.record("probed", report.probed);
        span.record("failed", report.failed);
        span.record("changed", report.changed);
        Ok(report)
    }

    /// Records a batch of results in one statement, then commits the health changes they
    /// bring; the number of clusters changed.
    #[tracing::instrument(level = "debug", skip_all, fields(count = chunk.len()))]
    async fn write_back(&self, chunk: Vec<Probed>) -> StoreResult<usize> {
        let results: Vec<ProbeResult> = chunk
            .iter()
            .map(|p| ProbeResult {
                cluster_uuid: p.candidate.uuid,
                ok: p.result.is_ok(),
                reason: p.result.as_ref().err().map(|e| e.reason.to_string()),
            })
            .collect();
        let at = crate::store::sql::now();
        let records = self.store.record_health_probes(&results, at).await?;
        let by_uuid: HashMap<ClusterId, &Probed> =
            chunk.iter().map(|p| (p.candidate.uuid, p)).collect();
        let flips: Vec<Flip> = records
            .iter()
            .filter_map(|r| {
                let p = by_uuid.get(&r.cluster_uuid)?;
                let next = verdict(
                    p.candidate.health_status,
                    r,
                    self.probe.failure_threshold,
                    self.probe.success_threshold,
                )?;
                Some(Flip {
                    uuid: r.cluster_uuid,
                    next,
                    record: r,
                    detail: p.result.as_ref().err().map(|e| e.detail.as_str()),
                })
            })
            .collect();
        if flips.is_empty() {
            return Ok(0);
        }
        self.commit_health_changes(&flips).await
    }

    /// Commits each change with its notification; a cluster changed meanwhile is skipped (the
    /// next round sees it again).
    async fn commit_health_changes(&self, flips: &[Flip<'_>]) -> StoreResult<usize> {
        let uuids: Vec<ClusterId> = flips.iter().map(|f| f.uuid).collect();
        let clusters: HashMap<ClusterId, Cluster> = self
            .store
            .clusters_by_uuid(&uuids)
            .await?
            .into_iter()
            .map(|c| (c.uuid, c))
            .collect();
        let mut nodegroups: HashMap<ClusterId, Vec<_>> = HashMap::new();
        for ng in self.store.nodegroups_of(&uuids).await? {
            nodegroups.entry(ng.cluster_id).or_default().push(ng);
        }
        let mut work = Vec::with_capacity(flips.len());
        for f in flips {
            let Some(c) = clusters.get(&f.uuid).cloned() else {
                continue;
            };
            let ngs = nodegroups.remove(&f.uuid).unwrap_or_default();
            work.push((
                c,
                ngs,
                f.next,
                f.record.last_reason.clone(),
                f.detail.map(String::from),
            ));
        }
        let outcomes: Vec<StoreResult<Option<ClusterId>>> = stream::iter(work)
            .map(|(c, ngs, next, reason, detail)| {
                self.commit_health_change(c, ngs, next, reason, detail)
            })
            .buffer_unordered(COMMIT_CONCURRENCY)
            .collect()
            .await;
        let mut changed = Vec::with_capacity(outcomes.len());
        let mut failed = None;
        for outcome in outcomes {
            match outcome {
                Ok(Some(uuid)) => changed.push(uuid),
                Ok(None) => {}
                Err(e) => failed = Some(e),
            }
        }
        self.store
            .mark_health_transitions(&changed, crate::store::sql::now())
            .await?;
        match failed {
            Some(e) => Err(e),
            None => Ok(changed.len()),
        }
    }

    /// Gives one cluster its new health and commits it with its `magnum.cluster.update`
    /// notification; `None` when there is nothing to do or the row changed meanwhile. The
    /// cluster gets the short `reason`; the log line gets `detail`, the error behind it.
    async fn commit_health_change(
        &self,
        mut c: Cluster,
        ngs: Vec<NodeGroup>,
        next: HealthStatus,
        reason: Option<String>,
        detail: Option<String>,
    ) -> StoreResult<Option<ClusterId>> {
        if c.health_status == Some(next) || c.status.is_in_progress() {
            return Ok(None);
        }
        c.health_status = Some(next);
        c.health_status_reason = match next {
            HealthStatus::Unhealthy => [(
                "api".to_string(),
                reason.unwrap_or_else(|| "the API did not answer".into()),
            )]
            .into_iter()
            .collect(),
            _ => Default::default(),
        };
        let event = events::cluster_event(
            &self.host,
            Action::Update,
            EventOutcome::Success,
            &c,
            &ngs,
            None,
        );
        match self
            .store
            .commit(&[Write::update_cluster(&c), Write::event(event)])
            .await
        {
            Ok(()) => {
                tracing::info!(
                    cluster = %c.uuid,
                    address = c.api_address.as_deref().unwrap_or(""),
                    health = next.as_str(),
                    reason = ?c.health_status_reason,
                    error = detail.as_deref().unwrap_or(""),
                    "cluster health changed"
                );
                Ok(Some(c.uuid))
            }
            Err(StoreError::Stale) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A health change a batch of results brings: the cluster, its new health, its probe record
/// and the error behind a failure (for the log).
struct Flip<'a> {
    uuid: ClusterId,
    next: HealthStatus,
    record: &'a HealthProbe,
    detail: Option<&'a str>,
}

/// A receiver as a stream (without tokio-stream).
fn tokio_stream_of<T: Send + 'static>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> {
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn candidate(address: &str, ca: Option<&str>) -> ProbeCandidate {
        ProbeCandidate {
            id: 1,
            uuid: ClusterId::from(uuid::Uuid::nil()),
            api_address: address.into(),
            ca_certificate: ca.map(String::from),
            health_status: None,
            health_status_reason: BTreeMap::new(),
            version: 0,
        }
    }

    #[test]
    fn an_https_address_with_a_ca_is_probed_at_its_root() {
        let t = probe_target(&candidate("https://10.0.0.1:6443/", Some("PEM"))).expect("target");
        assert_eq!(t.url, "https://10.0.0.1:6443");
        assert_eq!(t.ca_pem, "PEM");
    }

    #[test]
    fn an_address_without_a_scheme_is_https() {
        let t = probe_target(&candidate("10.0.0.1:6443", Some("PEM"))).expect("target");
        assert_eq!(t.url, "https://10.0.0.1:6443");
    }

    #[test]
    fn plain_http_or_no_ca_is_not_probed() {
        assert_eq!(
            probe_target(&candidate("http://10.0.0.1:8080", Some("PEM"))),
            None
        );
        assert_eq!(
            probe_target(&candidate("https://10.0.0.1:6443", None)),
            None
        );
        assert_eq!(
            probe_target(&candidate("https://10.0.0.1:6443", Some(" "))),
            None
        );
        assert_eq!(probe_target(&candidate("", Some("PEM"))), None);
    }
}
