//! The conductor: claims due jobs under a lease (committed before the driver is called),
//! renews the lease while the driver works, retries transient failures with backoff, and moves
//! statuses through Magnum's state machine, each change committed with its notification.
//! A periodic sync polls drivers whose work converges later; a health poll asks drivers for
//! health, and the active prober (`probe`) probes cluster API endpoints itself.
//! Any number of conductors may run against one PostgreSQL: a killed conductor's lease expires
//! and another one finishes its job.

mod blocked;
mod certificates;
mod execute;
mod federation;
mod forced;
mod machine_ops;
mod probe;
mod roll;
mod sync;

use std::sync::Arc;
use std::time::Duration;

use crate::certificates::Certificates;
use crate::config::{ConductorSection, HealthProbeSection};
use crate::domain::cluster::Cluster;
use crate::domain::health_probe::AddressPolicy;
use crate::drivers::{ClusterContext, DriverRegistry};
use crate::store::{Store, StoreError, StoreResult};

pub use execute::Outcome;
pub use probe::{probe, probe_target, ProbeError, ProbeRoundReport, ProbeTarget};
pub use sync::SyncReport;

/// The binary name conductors report in the services table: Magnum's, since clients and test
/// suites compare `GET /v1/mservices` rows with that string.
pub const BINARY: &str = "magnum-conductor";

pub struct Conductor {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) drivers: DriverRegistry,
    /// Lease owner name: `<host>:<pid>:<random>`, unique per conductor instance.
    pub(crate) owner: String,
    /// Publisher host of notifications.
    pub(crate) host: String,
    pub(crate) settings: ConductorSection,
    /// The active health prober's settings (`[health_probe]`); off unless given.
    pub(crate) probe: HealthProbeSection,
    /// The addresses the prober may connect to, parsed from `probe` once.
    pub(crate) probe_policy: Arc<AddressPolicy>,
    /// Makes and renews cluster certificates; without a key, clusters get no CA.
    pub(crate) certificates: Certificates,
    /// Raised when a driver started work it finishes on its own: the status sync then looks
    /// again soon instead of at its next tick.
    sync_soon: Arc<tokio::sync::Notify>,
}

/// The first early status poll after a driver started work, and the factor between early
/// polls: 0.2, 0.4, 0.8, ... seconds, until the regular `sync_interval` takes over. Work the
/// fake driver finishes in a second is seen within about a second, not up to a whole tick.
const EARLY_SYNC_FIRST: Duration = Duration::from_millis(200);
const EARLY_SYNC_FACTOR: u32 = 2;

impl Conductor {
    pub fn new(
        store: Arc<dyn Store>,
        drivers: DriverRegistry,
        host: &str,
        settings: ConductorSection,
    ) -> Conductor {
        let owner = format!(
            "{host}:{}:{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        Conductor {
            store,
            drivers,
            owner,
            host: host.to_string(),
            settings,
            probe: HealthProbeSection {
                enabled: false,
                ..HealthProbeSection::default()
            },
            probe_policy: Arc::new(AddressPolicy::default_policy()),
            certificates: Certificates::disabled(),
            sync_soon: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Gives the conductor the `[certificates]` key and settings (the same as the API's), so
    /// cluster creates make CAs and rotations work.
    pub fn with_certificates(mut self, certificates: Certificates) -> Conductor {
        self.certificates = certificates;
        self
    }

    /// Gives the conductor the `[health_probe]` settings; `run` starts the prober when they
    /// enable it. Networks that do not parse (settings loaded from a file were checked at
    /// start-up; these were made in code) permit no address at all.
    pub fn with_health_probe(mut self, probe: HealthProbeSection) -> Conductor {
        let policy = probe.address_policy().unwrap_or_else(|e| {
            tracing::error!(error = %e, "[health_probe]: no cluster will be probed");
            AddressPolicy::deny_all()
        });
        self.probe_policy = Arc::new(policy);
        self.probe = probe;
        self
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn lease(&self) -> Duration {
        Duration::from_secs(self.settings.lease_seconds.max(1))
    }

    /// A cluster with its node groups, machines and template, as drivers see it.
    pub(crate) async fn context(
        &self,
        cluster: Cluster,
        attempt: i32,
    ) -> StoreResult<ClusterContext> {
        let nodegroups = self.store.nodegroups_of(&[cluster.uuid]).await?;
        let template = self
            .store
            .templates_by_uuid(&[cluster.cluster_template_id])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                StoreError::Corrupt(format!("cluster {} has no template", cluster.uuid))
            })?;
        let machines = self.store.cluster_machines(&[cluster.uuid]).await?;
        Ok(ClusterContext {
            attempt,
            job: None,
            cluster,
            nodegroups,
            template,
            ca: None,
            machines,
        })
    }

    /// Works jobs, polls statuses and heartbeats until the task is dropped.
    pub async fn run(self: Arc<Self>) {
        self.run_until(std::future::pending(), Duration::ZERO).await;
    }

    /// Works jobs, polls statuses and heartbeats until `stop` completes; then stops cleanly:
    /// claims nothing more, lets the jobs it holds finish within `grace`, and gives back the
    /// leases of those that did not (another conductor claims them at once). What it did.
    pub async fn run_until(
        self: Arc<Self>,
        stop: impl std::future::Future<Output = ()>,
        grace: Duration,
    ) -> StopReport {
        let (stopping, stopped) = tokio::sync::watch::channel(false);
        // Guarded: a caller that drops this future stops everything at once.
        let mut workers = AbortOnDrop(Vec::new());
        for _ in 0..self.settings.workers.max(1) {
            let me = self.clone();
            let stopped = stopped.clone();
            workers
                .0
                .push(tokio::spawn(async move { me.work_loop(stopped).await }));
        }
        let background = self.clone().background_tasks();
        stop.await;
        stopping.send_replace(true);
        drop(background);
        tracing::info!(
            owner = %self.owner,
            grace_seconds = grace.as_secs_f64(),
            "conductor stopping: no new job is claimed; jobs in flight may finish within the grace period"
        );
        let deadline = tokio::time::Instant::now() + grace;
        let mut cut_short = 0;
        for worker in workers.0.iter_mut() {
            if tokio::time::timeout_at(deadline, &mut *worker)
                .await
                .is_err()
            {
                worker.abort();
                let _ = (&mut *worker).await;
                cut_short += 1;
            }
        }
        let released = match self.store.release_leases(&self.owner).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(owner = %self.owner, error = %e, "the leases of unfinished jobs could not be given back: they expire after lease_seconds");
                0
            }
        };
        tracing::info!(
            owner = %self.owner,
            workers_cut_short = cut_short,
            leases_released = released,
            "conductor stopped"
        );
        StopReport {
            workers_cut_short: cut_short,
            leases_released: released,
        }
    }

    /// The status sync, heartbeats and health polls, stopped when the guard is dropped.
    fn background_tasks(self: Arc<Self>) -> AbortOnDrop {
        let mut tasks = Vec::new();
        let me = self.clone();
        tasks.push(tokio::spawn(async move { me.sync_loop().await }));
        let me = self.clone();
        tasks.push(tokio::spawn(async move { me.heartbeat_loop().await }));
        if self.settings.health_interval > 0 {
            let me = self.clone();
            tasks.push(tokio::spawn(async move { me.health_loop().await }));
        }
        if self.probe.enabled {
            let me = self.clone();
            tasks.push(tokio::spawn(async move { me.health_probe_loop().await }));
        }
        AbortOnDrop(tasks)
    }

    /// Claims and works jobs one after another until `stopped` turns true (a job being worked
    /// is finished first).
    async fn work_loop(&self, mut stopped: tokio::sync::watch::Receiver<bool>) {
        let mut idle = Duration::from_millis(50);
        loop {
            if *stopped.borrow() {
                return;
            }
            match self.try_execute_one().await {
                Ok(Outcome::Idle) => {
                    tokio::select! {
                        _ = tokio::time::sleep(idle) => {}
                        _ = stopped.changed() => {}
                    }
                    idle = (idle * 2).min(Duration::from_millis(500));
                }
                Ok(Outcome::Started { .. }) => {
                    idle = Duration::from_millis(50);
                    self.sync_soon.notify_one();
                }
                Ok(_) => idle = Duration::from_millis(50),
                Err(e) => {
                    tracing::warn!(error = %e, "conductor could not work a job; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// The periodic status sync, plus early polls after a driver started work: the first
    /// [`EARLY_SYNC_FIRST`] after the start, each next one [`EARLY_SYNC_FACTOR`] times later,
    /// until a round finds nothing in progress or the step reaches the regular interval.
    async fn sync_loop(&self) {
        let interval = Duration::from_secs(self.settings.sync_interval.max(1));
        let mut ticker = tokio::time::interval(interval);
        // The next early poll and the step that led to it.
        let mut early: Option<(tokio::time::Instant, Duration)> = None;
        loop {
            let due = early.map(|(at, _)| at);
            tokio::select! {
                _ = ticker.tick() => {}
                () = self.sync_soon.notified() => {
                    let at = tokio::time::Instant::now() + EARLY_SYNC_FIRST;
                    early = Some((due.map_or(at, |d| d.min(at)), EARLY_SYNC_FIRST));
                    continue;
                }
                () = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => {
                    early = early.and_then(|(_, step)| {
                        let step = step * EARLY_SYNC_FACTOR;
                        (step < interval).then(|| (tokio::time::Instant::now() + step, step))
                    });
                }
            }
            let round = self.sync_round().await;
            if matches!(&round, Ok(report) if report.polled == 0) {
                early = None;
            }
            match round {
                Ok(report) if report.changed > 0 => tracing::info!(
                    polled = report.polled,
                    changed = report.changed,
                    "status sync"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "status sync failed"),
            }
        }
    }

    async fn health_loop(&self) {
        let mut ticker =
            tokio::time::interval(Duration::from_secs(self.settings.health_interval.max(1)));
        loop {
            ticker.tick().await;
            if let Err(e) = self.health_round().await {
                tracing::warn!(error = %e, "health sync failed");
            }
        }
    }

    async fn heartbeat_loop(&self) {
        let mut ticker =
            tokio::time::interval(Duration::from_secs(self.settings.heartbeat_interval.max(1)));
        loop {
            ticker.tick().await;
            if let Err(e) = self.store.heartbeat_service(&self.host, BINARY).await {
                tracing::warn!(error = %e, "conductor heartbeat failed");
            }
        }
    }
}

/// What a conductor's stop did: workers whose job outlived the grace period, and the leases
/// given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopReport {
    pub workers_cut_short: usize,
    pub leases_released: u64,
}

pub(crate) struct AbortOnDrop(pub(crate) Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}
