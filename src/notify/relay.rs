//! The outbox relay: claims pending events, hands them to the configured sink and marks them
//! sent only once the sink has them (for AMQP: once the broker confirmed them). A crash between
//! the two resends the event with the same `message_id`, never loses it.
//!
//! Several relays (one per `serve` or `conductor` process) share one outbox: each claims a batch
//! under a short claim ([`Store::claim_events`]), so in normal operation an event is sent once.
//! A resource's events go out in outbox order: a claim never takes a later event while an
//! earlier one of the same resource is held elsewhere, and within a batch the events of one
//! resource are published in successive rounds, each after the previous one was confirmed;
//! when an event fails, the resource's later events wait for the next attempt.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::amqp::{self, AmqpError, AmqpPublisher, Delivery, PublisherSettings};
use crate::config::{NotificationDriver, Settings};
use crate::store::{OutboxEvent, OutboxWakeups, Store, StoreError};

/// The longest pause between two attempts to reach the broker: after an outage of any
/// length, the backlog starts to drain within this pause plus one connection attempt of the
/// broker's return.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The first pause after a failure.
const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// How often sent events past their retention are deleted.
const PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// How a relay runs; [`RelaySettings::from_settings`] reads it from the configuration.
#[derive(Debug, Clone)]
pub struct RelaySettings {
    pub driver: NotificationDriver,
    /// Who holds a claim: unique per relay (host, process, random suffix).
    pub owner: String,
    pub batch_size: u32,
    /// The fallback poll of an idle relay: a commit wakes the relay at once (see
    /// [`OutboxWakeups`]); this bounds the delay when a wake-up is lost (a dropped `LISTEN`
    /// connection, a writer in another process on SQLite).
    pub poll_interval: Duration,
    /// How long a claim holds before another relay may take the events.
    pub claim_timeout: Duration,
    /// How long sent events stay in the outbox.
    pub retention: chrono::Duration,
    /// How often the backlog status line is logged.
    pub status_interval: Duration,
    /// Where `messagingv2` publishes.
    pub publisher: Option<PublisherSettings>,
}

impl RelaySettings {
    /// The relay of this process; fails on an unusable `transport_url` with `messagingv2`.
    pub fn from_settings(s: &Settings) -> Result<RelaySettings, amqp::TransportUrlError> {
        let n = &s.oslo_messaging_notifications;
        let owner = format!(
            "{}:{}:{}",
            s.default.host,
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let claim_timeout = Duration::from_secs(n.relay_claim_timeout.max(3));
        let publisher = match n.driver {
            NotificationDriver::Messagingv2 => Some(PublisherSettings {
                transport: amqp::parse_transport_url(s.default.transport_url.expose())?,
                exchange: s.default.control_exchange.clone(),
                topics: s.notification_topics(),
                connection_name: format!("fleetyard-notifier:{owner}"),
                // Well inside the claim, so an unconfirmed batch is released by its own relay
                // before another one may take it.
                confirm_timeout: claim_timeout / 3,
            }),
            _ => None,
        };
        Ok(RelaySettings {
            driver: n.driver,
            owner,
            batch_size: n.relay_batch_size.max(1),
            poll_interval: Duration::from_secs_f64(n.relay_poll_interval.clamp(0.001, 3600.0)),
            claim_timeout,
            retention: chrono::Duration::days(i64::from(n.retention_days)),
            status_interval: Duration::from_secs(n.relay_status_interval.max(1)),
            publisher,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("outbox: {0}")]
    Store(#[from] StoreError),
    #[error("notification broker: {0}")]
    Broker(#[from] AmqpError),
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BatchReport {
    /// Events claimed from the outbox.
    pub claimed: usize,
    /// Delivered and marked sent.
    pub sent: usize,
    /// Attempted and failed; pending again.
    pub failed: usize,
    /// Not attempted because an earlier event of their resource failed; pending again.
    pub held: usize,
}

impl std::ops::AddAssign for BatchReport {
    fn add_assign(&mut self, o: BatchReport) {
        self.claimed += o.claimed;
        self.sent += o.sent;
        self.failed += o.failed;
        self.held += o.held;
    }
}

enum Sink {
    Log,
    Noop,
    Amqp(Box<AmqpPublisher>),
}

/// Where each claimed event of a round ended: confirmed, refused, or held back behind an
/// earlier refused event of its resource.
#[derive(Debug, Default)]
struct Deliveries {
    sent: Vec<i64>,
    failed: Vec<i64>,
    held: Vec<i64>,
}

impl Deliveries {
    fn report(&self, claimed: usize) -> BatchReport {
        BatchReport {
            claimed,
            sent: self.sent.len(),
            failed: self.failed.len(),
            held: self.held.len(),
        }
    }

    fn all_sent(events: &[OutboxEvent]) -> Deliveries {
        Deliveries {
            sent: events.iter().map(|e| e.id).collect(),
            ..Deliveries::default()
        }
    }
}

/// Publishes the events in rounds that keep each resource's order; once an event of a
/// resource fails, the resource's later events are held for the next claim.
async fn publish_in_rounds(publisher: &mut AmqpPublisher, events: &[OutboxEvent]) -> Deliveries {
    let mut out = Deliveries::default();
    let mut stopped: HashSet<&str> = HashSet::new();
    let mut first_failure: Option<String> = None;
    for round in rounds(events) {
        let (go, wait): (Vec<usize>, Vec<usize>) = round
            .into_iter()
            .partition(|i| !stopped.contains(events[*i].resource_uuid.as_str()));
        out.held.extend(wait.iter().map(|i| events[*i].id));
        if go.is_empty() {
            continue;
        }
        let batch: Vec<&OutboxEvent> = go.iter().map(|i| &events[*i]).collect();
        let results = publisher.publish(&batch).await;
        for (event, result) in batch.iter().zip(results) {
            match result {
                Delivery::Confirmed => out.sent.push(event.id),
                Delivery::Failed(reason) => {
                    out.failed.push(event.id);
                    stopped.insert(event.resource_uuid.as_str());
                    first_failure.get_or_insert(reason);
                }
            }
        }
    }
    if let Some(reason) = first_failure {
        tracing::warn!(
            failed = out.failed.len(),
            held = out.held.len(),
            reason = %reason,
            "notifications not confirmed by the broker stay in the outbox"
        );
    }
    out
}

/// One relay over one outbox.
pub struct Relay {
    store: Arc<dyn Store>,
    settings: RelaySettings,
    sink: Sink,
    wakeups: OutboxWakeups,
}

/// Splits a batch (in outbox order) into rounds: round `k` holds the `k`-th event of every
/// resource, so no round holds two events of one resource and a resource's events come in order.
pub fn rounds(events: &[OutboxEvent]) -> Vec<Vec<usize>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let k = seen.entry(e.resource_uuid.as_str()).or_insert(0);
        if rounds.len() <= *k {
            rounds.push(Vec::new());
        }
        rounds[*k].push(i);
        *k += 1;
    }
    rounds
}

/// Claims a batch for `owner`.
async fn claim(
    store: &dyn Store,
    settings: &RelaySettings,
    owner: &str,
) -> Result<Vec<OutboxEvent>, RelayError> {
    Ok(store
        .claim_events(owner, settings.batch_size, settings.claim_timeout)
        .await?)
}

/// Hands a claimed batch to the sink.
async fn deliver(sink: &mut Sink, events: &[OutboxEvent]) -> Deliveries {
    let d = deliver_to(sink, events).await;
    crate::metrics::published("confirmed", d.sent.len() as u64);
    crate::metrics::published("failed", d.failed.len() as u64);
    d
}

async fn deliver_to(sink: &mut Sink, events: &[OutboxEvent]) -> Deliveries {
    match sink {
        Sink::Log => {
            for e in events {
                tracing::info!(
                    target: "fleetyard::notification",
                    event_type = %e.event_type,
                    priority = %e.priority,
                    message_id = %e.message_id,
                    "{}",
                    super::envelope::envelope(e)
                );
            }
            Deliveries::all_sent(events)
        }
        Sink::Noop => Deliveries::all_sent(events),
        Sink::Amqp(publisher) => publish_in_rounds(publisher, events).await,
    }
}

/// Marks what was delivered sent (one statement) and gives `owner`'s other claims back.
async fn settle(store: &dyn Store, owner: &str, d: Deliveries) -> Result<(), RelayError> {
    store.mark_events_sent(&d.sent).await?;
    store.release_events(owner, &d.failed, true).await?;
    store.release_events(owner, &d.held, false).await?;
    Ok(())
}

impl Relay {
    pub fn new(store: Arc<dyn Store>, settings: RelaySettings) -> Relay {
        let sink = match (settings.driver, &settings.publisher) {
            (NotificationDriver::Messagingv2, Some(p)) => {
                Sink::Amqp(Box::new(AmqpPublisher::new(p.clone())))
            }
            (NotificationDriver::Messagingv2, None) | (NotificationDriver::Log, _) => Sink::Log,
            (NotificationDriver::Noop, _) => Sink::Noop,
        };
        let wakeups = store.outbox_wakeups();
        Relay {
            store,
            settings,
            sink,
            wakeups,
        }
    }

    pub fn settings(&self) -> &RelaySettings {
        &self.settings
    }

    /// One round: claim a batch, deliver it, mark what was delivered sent and give the rest
    /// back. With `messagingv2` and no reachable broker nothing is claimed and the broker's
    /// error is returned: events wait in the outbox.
    #[tracing::instrument(
        name = "relay_batch",
        skip_all,
        fields(owner = %self.settings.owner, claimed = tracing::field::Empty)
    )]
    pub async fn run_once(&mut self) -> Result<BatchReport, RelayError> {
        if let Sink::Amqp(publisher) = &mut self.sink {
            publisher.connect().await?;
        }
        let started = Instant::now();
        let events = claim(&*self.store, &self.settings, &self.settings.owner).await?;
        if events.is_empty() {
            return Ok(BatchReport::default());
        }
        tracing::Span::current().record("claimed", events.len());
        let claimed = started.elapsed();
        let deliveries = deliver(&mut self.sink, &events).await;
        let report = deliveries.report(events.len());
        let delivered = started.elapsed();
        settle(&*self.store, &self.settings.owner, deliveries).await?;
        tracing::debug!(
            claimed = report.claimed,
            sent = report.sent,
            failed = report.failed,
            held = report.held,
            claim_ms = claimed.as_secs_f64() * 1e3,
            deliver_ms = (delivered - claimed).as_secs_f64() * 1e3,
            mark_ms = (started.elapsed() - delivered).as_secs_f64() * 1e3,
            "notification relay round"
        );
        Ok(report)
    }

    /// Delivers the backlog batch after batch, the database work of one batch overlapping the
    /// broker's of another: while batch `n` is published and confirmed, batch `n - 1` is marked
    /// sent and batch `n + 1` is claimed. Consecutive batches are claimed under two alternating
    /// owner names, so the claim of `n + 1` treats `n`'s unsent events as held elsewhere: a
    /// resource with an event in flight has none in the next batch, and each resource's order
    /// is kept as in [`Relay::run_once`]. Stops at an empty claim, or after a batch with a
    /// failure (the caller backs off); the totals.
    pub async fn deliver_backlog(&mut self) -> Result<BatchReport, RelayError> {
        if let Sink::Amqp(publisher) = &mut self.sink {
            publisher.connect().await?;
        }
        let owners = [
            self.settings.owner.clone(),
            format!("{}+", self.settings.owner),
        ];
        let store = &*self.store;
        let settings = &self.settings;
        let sink = &mut self.sink;
        let mut total = BatchReport::default();
        let mut turn = 0;
        let mut current = claim(store, settings, &owners[turn]).await?;
        let mut previous: Option<Deliveries> = None;
        loop {
            if current.is_empty() {
                if let Some(done) = previous.take() {
                    settle(store, &owners[1 - turn], done).await?;
                }
                return Ok(total);
            }
            let next_owner = &owners[1 - turn];
            let prepare = async {
                if let Some(done) = previous.take() {
                    settle(store, next_owner, done).await?;
                }
                claim(store, settings, next_owner).await
            };
            let (deliveries, next) = tokio::join!(deliver(sink, &current), prepare);
            total += deliveries.report(current.len());
            let next = match next {
                Ok(next) => next,
                Err(e) => {
                    settle(store, &owners[turn], deliveries).await?;
                    return Err(e);
                }
            };
            if !deliveries.failed.is_empty() {
                settle(store, &owners[turn], deliveries).await?;
                let ids: Vec<i64> = next.iter().map(|e| e.id).collect();
                store.release_events(next_owner, &ids, false).await?;
                return Ok(total);
            }
            previous = Some(deliveries);
            current = next;
            turn = 1 - turn;
        }
    }

    /// Rounds until one claims nothing or delivers nothing; the totals.
    pub async fn drain(&mut self) -> Result<BatchReport, RelayError> {
        let mut total = BatchReport::default();
        loop {
            let r = self.run_once().await?;
            total += r;
            if r.claimed == 0 || r.sent == 0 {
                return Ok(total);
            }
        }
    }

    /// Logs the backlog: how many events wait and for how long the oldest has.
    pub async fn log_status(&self) {
        match self.store.outbox_backlog().await {
            Ok((pending, oldest)) => {
                let age = oldest
                    .map(|t| (chrono::Utc::now() - t).num_milliseconds().max(0) as f64 / 1000.0)
                    .unwrap_or(0.0);
                let connected = match &self.sink {
                    Sink::Amqp(p) => Some(p.is_connected()),
                    _ => None,
                };
                if pending > 0 {
                    tracing::info!(
                        backlog = pending,
                        oldest_pending_age_seconds = age,
                        broker_connected = ?connected,
                        "notification outbox status"
                    );
                } else {
                    tracing::debug!(backlog = 0, broker_connected = ?connected, "notification outbox status");
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the notification outbox backlog failed"),
        }
    }

    /// Runs until the task is dropped: delivers, backs off (capped, exponential) while the
    /// broker or the database fails, logs the backlog every `status_interval` and prunes sent
    /// events past their retention.
    pub async fn run(self) {
        let (_running, stop) = tokio::sync::watch::channel(false);
        self.run_until(stop).await
    }

    /// As [`Relay::run`], until `stop` turns true (checked between rounds, and waits are cut
    /// short): then one last round delivers what the process committed before it stopped.
    pub async fn run_until(mut self, mut stop: tokio::sync::watch::Receiver<bool>) {
        tracing::info!(
            driver = ?self.settings.driver,
            owner = %self.settings.owner,
            "notification relay started"
        );
        let mut backoff = MIN_BACKOFF;
        let mut last_status = Instant::now();
        let mut last_prune: Option<Instant> = None;
        loop {
            if *stop.borrow() {
                match self.deliver_backlog().await {
                    Ok(r) => tracing::info!(
                        sent = r.sent,
                        failed = r.failed,
                        "notification relay stopped after a last round"
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, "notification relay stopped: its last round failed; events wait in the outbox")
                    }
                }
                return;
            }
            if last_status.elapsed() >= self.settings.status_interval {
                self.log_status().await;
                last_status = Instant::now();
            }
            if last_prune.is_none_or(|t| t.elapsed() >= PRUNE_INTERVAL) {
                let cutoff = chrono::Utc::now() - self.settings.retention;
                match self.store.prune_sent_events(cutoff).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(pruned = n, "pruned sent notifications"),
                    Err(e) => tracing::warn!(error = %e, "pruning sent notifications failed"),
                }
                last_prune = Some(Instant::now());
            }
            // Wake-ups from here on are for commits this round may not see.
            self.wakeups.mark_seen();
            let pause = match self.deliver_backlog().await {
                Ok(r) if r.failed > 0 => {
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    backoff
                }
                Ok(r) => {
                    backoff = MIN_BACKOFF;
                    if r.claimed > 0 {
                        continue;
                    }
                    let next_status = self
                        .settings
                        .status_interval
                        .saturating_sub(last_status.elapsed());
                    tokio::select! {
                        wake = self.wakeups.wait(self.settings.poll_interval.min(next_status)) => {
                            tracing::trace!(?wake, "notification relay woke");
                        }
                        _ = stop.changed() => {}
                    }
                    continue;
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?backoff, "notification relay: events wait in the outbox");
                    let pause = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    pause
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

/// Runs the relay of this process until the task is dropped.
pub async fn relay_loop(store: Arc<dyn Store>, settings: RelaySettings) {
    Relay::new(store, settings).run().await
}

/// Runs the relay of this process until `stop` turns true, then one last round.
pub async fn relay_until(
    store: Arc<dyn Store>,
    settings: RelaySettings,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    Relay::new(store, settings).run_until(stop).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::fixtures::event;

    #[test]
    fn a_resources_events_go_out_in_successive_rounds() {
        let events = [
            event(1, "a"),
            event(2, "b"),
            event(3, "a"),
            event(4, "c"),
            event(5, "a"),
            event(6, "b"),
        ];
        assert_eq!(rounds(&events), vec![vec![0, 1, 3], vec![2, 5], vec![4]]);
        assert!(rounds(&[]).is_empty());
    }
}
