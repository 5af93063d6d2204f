//! The active health prober: every `[health_probe] interval` a conductor probes the API of
//! each cluster of the `[health_probe] drivers` that has an `api_address` and a complete-like
//! status: `GET <api_address>/readyz` (then `/healthz` when `/readyz` is 404) over HTTPS,
//! trusting the cluster's CA only, with the address checked against the server's certificate.
//! A 200 is a success; any other status, a TLS failure, a refused connection or no answer
//! within `timeout` is a failure.
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
use std::time::{Duration, Instant};

use chrono::Utc;
use futures_util::stream::{self, StreamExt};

use super::Conductor;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::health_probe::{verdict, HealthProbe, ProbeCandidate, ProbeResult};
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

fn failure(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() && e.is_connect() {
        format!("connect timeout after {}", secs(timeout))
    } else if e.is_timeout() {
        format!("no answer within {}", secs(timeout))
    } else if e.is_connect() {
        format!("cannot connect: {}", root_cause(e))
    } else {
        format!("request failed: {}", root_cause(e))
    }
}

/// Probes one API: `Ok` when `/readyz` (or, when that is 404, `/healthz`) answers 200; else
/// why not. Never takes longer than `timeout` (and [`GUARD`]), connection and handshake
/// included.
pub async fn probe(target: &ProbeTarget, timeout: Duration) -> Result<(), String> {
    let ca = reqwest::Certificate::from_pem(target.ca_pem.as_bytes())
        .map_err(|e| format!("the cluster's CA is unreadable: {}", root_cause(&e)))?;
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .https_only(true)
        .no_proxy()
        .http1_only()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout)
        .build()
        .map_err(|e| format!("cannot build a client: {}", root_cause(&e)))?;
    // The connection (TCP and TLS) gets `timeout`, each request what is left of it and a
    // little more, so that reqwest says which phase ran out; the guard around both only
    // catches what reqwest's timers would not. A probe ends within `timeout` + `GUARD`.
    let deadline = Instant::now() + timeout;
    let attempt = async {
        let mut last = 0;
        for path in ["/readyz", "/healthz"] {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no answer within {}", secs(timeout)));
            }
            let response = client
                .get(format!("{}{path}", target.url))
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
                return Err(format!("GET {path} answered {last}"));
            }
        }
        Err(format!("GET /readyz and /healthz answered {last}"))
    };
    match tokio::time::timeout(timeout + GUARD, attempt).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("no answer within {}", secs(timeout))),
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
    result: Result<(), String>,
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

        let run = async move {
            let probes = tokio_stream_of(claimed_rx)
                .map(|c: Claimed| {
                    tokio::spawn(async move {
                        let result = probe(&c.target, timeout).await;
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
                reason: p.result.as_ref().err().cloned(),
            })
            .collect();
        let at = crate::store::sql::now();
        let records = self.store.record_health_probes(&results, at).await?;
        let by_uuid: HashMap<ClusterId, &ProbeCandidate> = chunk
            .iter()
            .map(|p| (p.candidate.uuid, &p.candidate))
            .collect();
        let flips: Vec<(ClusterId, HealthStatus, &HealthProbe)> = records
            .iter()
            .filter_map(|r| {
                let c = by_uuid.get(&r.cluster_uuid)?;
                let next = verdict(
                    c.health_status,
                    r,
                    self.probe.failure_threshold,
                    self.probe.success_threshold,
                )?;
                Some((r.cluster_uuid, next, r))
            })
            .collect();
        if flips.is_empty() {
            return Ok(0);
        }
        self.commit_health_changes(&flips).await
    }

    /// Commits each change with its notification; a cluster changed meanwhile is skipped (the
    /// next round sees it again).
    async fn commit_health_changes(
        &self,
        flips: &[(ClusterId, HealthStatus, &HealthProbe)],
    ) -> StoreResult<usize> {
        let uuids: Vec<ClusterId> = flips.iter().map(|(u, _, _)| *u).collect();
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
        for (uuid, next, record) in flips {
            let Some(c) = clusters.get(uuid).cloned() else {
                continue;
            };
            let ngs = nodegroups.remove(uuid).unwrap_or_default();
            work.push((c, ngs, *next, record.last_reason.clone()));
        }
        let outcomes: Vec<StoreResult<Option<ClusterId>>> = stream::iter(work)
            .map(|(c, ngs, next, reason)| self.commit_health_change(c, ngs, next, reason))
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
    /// notification; `None` when there is nothing to do or the row changed meanwhile.
    async fn commit_health_change(
        &self,
        mut c: Cluster,
        ngs: Vec<NodeGroup>,
        next: HealthStatus,
        reason: Option<String>,
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
                tracing::info!(cluster = %c.uuid, health = next.as_str(), reason = ?c.health_status_reason, "cluster health changed");
                Ok(Some(c.uuid))
            }
            Err(StoreError::Stale) => Ok(None),
            Err(e) => Err(e),
        }
    }
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
