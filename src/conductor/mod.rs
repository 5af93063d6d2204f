//! The conductor: claims due jobs under a lease (committed before the driver is called),
//! renews the lease while the driver works, retries transient failures with backoff, and moves
//! statuses through Magnum's state machine, each change committed with its notification.
//! A periodic sync polls drivers whose work converges later; a health poll refreshes health.
//! Any number of conductors may run against one PostgreSQL: a killed conductor's lease expires
//! and another one finishes its job.

mod certificates;
mod execute;
mod sync;

use std::sync::Arc;
use std::time::Duration;

use crate::certificates::Certificates;
use crate::config::ConductorSection;
use crate::domain::cluster::Cluster;
use crate::drivers::{ClusterContext, DriverRegistry};
use crate::store::{Store, StoreError, StoreResult};

pub use execute::Outcome;
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
    /// Makes and renews cluster certificates; without a key, clusters get no CA.
    pub(crate) certificates: Certificates,
}

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
            certificates: Certificates::disabled(),
        }
    }

    /// Gives the conductor the `[certificates]` key and settings (the same as the API's), so
    /// cluster creates make CAs and rotations work.
    pub fn with_certificates(mut self, certificates: Certificates) -> Conductor {
        self.certificates = certificates;
        self
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn lease(&self) -> Duration {
        Duration::from_secs(self.settings.lease_seconds.max(1))
    }

    /// A cluster with its node groups and template, as drivers see it.
    pub(crate) async fn context(
        &self,
        cluster: Cluster,
        attempt: i32,
    ) -> StoreResult<ClusterContext> {
        let uuid = cluster.uuid.to_string();
        let nodegroups = self
            .store
            .nodegroups_of(std::slice::from_ref(&uuid))
            .await?;
        let template = self
            .store
            .templates_by_uuid(&[cluster.cluster_template_id.to_string()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::Corrupt(format!("cluster {uuid} has no template")))?;
        Ok(ClusterContext {
            attempt,
            cluster,
            nodegroups,
            template,
            ca: None,
        })
    }

    /// Works jobs, polls statuses and heartbeats until the task is dropped.
    pub async fn run(self: Arc<Self>) {
        let mut tasks = Vec::new();
        for _ in 0..self.settings.workers.max(1) {
            let me = self.clone();
            tasks.push(tokio::spawn(async move { me.work_loop().await }));
        }
        let me = self.clone();
        tasks.push(tokio::spawn(async move { me.sync_loop().await }));
        let me = self.clone();
        tasks.push(tokio::spawn(async move { me.heartbeat_loop().await }));
        if self.settings.health_interval > 0 {
            let me = self.clone();
            tasks.push(tokio::spawn(async move { me.health_loop().await }));
        }
        let guard = AbortOnDrop(tasks);
        std::future::pending::<()>().await;
        drop(guard);
    }

    async fn work_loop(&self) {
        let mut idle = Duration::from_millis(50);
        loop {
            match self.try_execute_one().await {
                Ok(Outcome::Idle) => {
                    tokio::time::sleep(idle).await;
                    idle = (idle * 2).min(Duration::from_millis(500));
                }
                Ok(_) => idle = Duration::from_millis(50),
                Err(e) => {
                    tracing::warn!(error = %e, "conductor could not work a job; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    async fn sync_loop(&self) {
        let mut ticker =
            tokio::time::interval(Duration::from_secs(self.settings.sync_interval.max(1)));
        loop {
            ticker.tick().await;
            match self.sync_round().await {
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

struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}
