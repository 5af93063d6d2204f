//! The registry's change feed in one process: one task follows the latest resourceVersion
//! (woken by the `cluster_changed` trigger's `NOTIFY` on PostgreSQL, by this process's commits
//! on both backends, and by a one-second poll when neither is heard) and prunes the change log;
//! every watch of the process waits on it, then reads the log itself from where it stands.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::store::Store;

/// How long changes stay in the log: a watch from an older resourceVersion answers 410.
pub const WATCH_WINDOW: Duration = Duration::from_secs(3600);
/// The poll that bounds a lost wake-up.
const FALLBACK_POLL: Duration = Duration::from_secs(1);
/// How often the log is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

pub struct RegistryFeed {
    store: Arc<dyn Store>,
    latest: OnceLock<watch::Receiver<i64>>,
}

impl RegistryFeed {
    pub fn new(store: Arc<dyn Store>) -> RegistryFeed {
        RegistryFeed {
            store,
            latest: OnceLock::new(),
        }
    }

    /// The latest resourceVersion this process has seen; starts the feed on first use.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.latest
            .get_or_init(|| {
                let (tx, rx) = watch::channel(0);
                tokio::spawn(follow(self.store.clone(), tx));
                rx
            })
            .clone()
    }
}

#[tracing::instrument(name = "registry_feed", skip_all)]
async fn follow(store: Arc<dyn Store>, latest: watch::Sender<i64>) {
    let mut wakeups = store.registry_wakeups();
    let mut pruned_at = Instant::now();
    loop {
        wakeups.mark_seen();
        match store.registry_bounds().await {
            Ok((rv, _)) => {
                latest.send_if_modified(|v| {
                    let moved = *v != rv;
                    *v = rv;
                    moved
                });
            }
            Err(e) => tracing::warn!(error = %e, "registry feed: cannot read the change log"),
        }
        if pruned_at.elapsed() >= PRUNE_EVERY {
            pruned_at = Instant::now();
            match store.prune_registry_changes(WATCH_WINDOW.as_secs()).await {
                Ok(n) if n > 0 => tracing::debug!(pruned = n, "registry change log pruned"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "registry feed: prune failed"),
            }
        }
        wakeups.wait(FALLBACK_POLL).await;
    }
}
