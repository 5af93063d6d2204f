//! Wakes an idle relay when an event is committed, so delivery waits for neither a short poll
//! nor the next round of one.
//!
//! - In this process (both backends): every commit of a write set with an event bumps a
//!   counter ([`OutboxSignal`]) that the store's relays watch.
//! - Across processes (PostgreSQL): the outbox insert calls `pg_notify` (see
//!   `outbox::insert`), delivered by the server when the transaction commits; each relay keeps
//!   one `LISTEN` connection of its own, reconnected with capped exponential backoff when it
//!   drops. A (re)connection counts as a wake-up: a commit made while nobody listened is
//!   claimed at once.
//!
//! A wake-up is a hint, never the record: a lost one costs at most the relay's fallback poll
//! (`relay_poll_interval`), because the outbox rows are what the relay claims.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use tokio::sync::watch;

/// The channel outbox inserts notify and relays listen on.
pub(crate) const OUTBOX_CHANNEL: &str = "fleetyard_outbox";

/// How long opening the `LISTEN` connection (connect, authenticate, `LISTEN`) may take.
const LISTEN_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The first pause after the `LISTEN` connection failed or dropped.
const LISTEN_MIN_BACKOFF: Duration = Duration::from_millis(500);
/// The longest pause between two attempts to open it.
const LISTEN_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The in-process side: bumped after every commit that wrote an event.
#[derive(Debug)]
pub(crate) struct OutboxSignal(watch::Sender<u64>);

impl Default for OutboxSignal {
    fn default() -> Self {
        OutboxSignal(watch::Sender::new(0))
    }
}

impl OutboxSignal {
    /// Tells this process's relays that an event was committed.
    pub(crate) fn committed(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// Why [`OutboxWakeups::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// An event was (or may have been) committed since [`OutboxWakeups::mark_seen`].
    Committed,
    /// The fallback poll interval passed without a wake-up.
    Poll,
}

/// One relay's view of the commits it should wake up for.
pub struct OutboxWakeups {
    local: watch::Receiver<u64>,
    remote: Option<Remote>,
}

/// The `LISTEN` side on PostgreSQL: a pool of one connection of its own (never one of the
/// store's), and the task holding it once [`OutboxWakeups::wait`] first ran.
struct Remote {
    channel: &'static str,
    pool: PgPool,
    running: Option<(watch::Receiver<u64>, AbortOnDrop)>,
}

/// Ends the listening task with the relay that owns it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl OutboxWakeups {
    pub(crate) fn in_process(signal: &OutboxSignal) -> OutboxWakeups {
        OutboxWakeups {
            local: signal.subscribe(),
            remote: None,
        }
    }

    /// Also listens on PostgreSQL, with a connection opened with the store's `options`.
    pub(crate) fn listening(signal: &OutboxSignal, options: &PgConnectOptions) -> OutboxWakeups {
        Self::listening_on(OUTBOX_CHANNEL, signal, options)
    }

    /// Also listens on `channel` on PostgreSQL.
    pub(crate) fn listening_on(
        channel: &'static str,
        signal: &OutboxSignal,
        options: &PgConnectOptions,
    ) -> OutboxWakeups {
        let options = options.clone();
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(LISTEN_CONNECT_TIMEOUT)
            // The LISTEN connection lives as long as it works; no idle reaping or recycling.
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options);
        OutboxWakeups {
            local: signal.subscribe(),
            remote: Some(Remote {
                channel,
                pool,
                running: None,
            }),
        }
    }

    /// Forgets the wake-ups so far: the caller is about to look at the outbox.
    pub fn mark_seen(&mut self) {
        self.local.borrow_and_update();
        if let Some((rx, _)) = self.remote.as_mut().and_then(|r| r.running.as_mut()) {
            rx.borrow_and_update();
        }
    }

    /// Waits until an event may have been committed since [`OutboxWakeups::mark_seen`] (in
    /// this process; on PostgreSQL in any process), or `fallback` passed. The first call on
    /// PostgreSQL starts listening, which itself counts as a wake-up.
    pub async fn wait(&mut self, fallback: Duration) -> Wake {
        let remote = self.remote.as_mut().map(|r| {
            let (rx, _) = r.running.get_or_insert_with(|| {
                let (tx, rx) = watch::channel(0u64);
                let task = tokio::spawn(listen(r.channel, r.pool.clone(), tx));
                (rx, AbortOnDrop(task))
            });
            rx
        });
        let local = changed(&mut self.local);
        let remote = async {
            match remote {
                Some(rx) => changed(rx).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = local => Wake::Committed,
            () = remote => Wake::Committed,
            () = tokio::time::sleep(fallback) => Wake::Poll,
        }
    }
}

/// Resolves when the value changed since last seen; never when the sender is gone.
async fn changed(rx: &mut watch::Receiver<u64>) {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Holds the `LISTEN` connection, bumping `wake` for every notification and for every
/// (re)connection; reopens it with capped exponential backoff. Ends when the relay is gone.
async fn listen(channel: &'static str, pool: PgPool, wake: watch::Sender<u64>) {
    let bump = || wake.send_modify(|n| *n = n.wrapping_add(1));
    let mut backoff = LISTEN_MIN_BACKOFF;
    while !wake.is_closed() {
        match tokio::time::timeout(LISTEN_CONNECT_TIMEOUT, open(channel, &pool)).await {
            Ok(Ok(mut listener)) => {
                tracing::debug!(channel, "listening for commits");
                backoff = LISTEN_MIN_BACKOFF;
                bump();
                loop {
                    match listener.try_recv().await {
                        Ok(Some(_)) => {
                            // A burst of commits is one wake-up.
                            while listener.next_buffered().is_some() {}
                            bump();
                        }
                        // The connection dropped and was opened again: a notification may
                        // have been missed meanwhile.
                        Ok(None) => bump(),
                        Err(e) => {
                            tracing::warn!(error = %e, retry_in = ?backoff, "the outbox LISTEN connection failed; relays poll until it is back");
                            break;
                        }
                    }
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "cannot LISTEN for outbox commits; relays poll until it works");
            }
            Err(_) => {
                tracing::warn!(retry_in = ?backoff, "opening the outbox LISTEN connection timed out; relays poll until it works");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(LISTEN_MAX_BACKOFF);
    }
}

async fn open(channel: &str, pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}
