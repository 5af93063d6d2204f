//! Prometheus metrics: request latency per route template and status, the database pool,
//! pending jobs, the blocked ones by operation and the age of the oldest due one, conductor
//! job results, health probe rounds and probe outcomes, the outbox backlog and the relay's
//! lag, notification publishes. Served as Prometheus text on `[metrics] listen_address`, an
//! address of its own without authentication, never on the API's port.
//!
//! Counters and histograms are recorded where things happen (the request middleware, the
//! conductor, the relay) through the `metrics` facade; gauges that describe the shared
//! database (jobs, outbox) are read from it when Prometheus scrapes, so every process reports
//! the same truth whichever of them is scraped. Nothing is recorded until the exporter is
//! installed ([`install`]), so a process without `[metrics]` pays one atomic load per request.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::Context;
use chrono::Utc;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::store::Store;

/// Latency buckets, in seconds: a cached read takes well under a millisecond, a slow write
/// under a database outage is cut at a few seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Health probe round buckets, in seconds: a round of a few clusters takes milliseconds, one
/// of 100,000 with unreachable ones tens of seconds (it should stay under the interval).
const ROUND_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
];

/// How long a scrape waits for the database before it answers with what it has.
const SCRAPE_DB_TIMEOUT: Duration = Duration::from_secs(2);

static ENABLED: AtomicBool = AtomicBool::new(false);
static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's Prometheus recorder (once; later calls return the same handle).
pub fn install() -> anyhow::Result<PrometheusHandle> {
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("fleetyard_health_probe_round_seconds".into()),
            ROUND_BUCKETS,
        )
        .context("health probe round buckets")?
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
        .context("latency buckets")?
        .install_recorder()
        .context("installing the Prometheus recorder")?;
    let handle = HANDLE.get_or_init(|| handle).clone();
    describe();
    ENABLED.store(true, Ordering::Release);
    Ok(handle)
}

fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

fn describe() {
    metrics::describe_histogram!(
        "fleetyard_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "API requests by method, route template and status."
    );
    metrics::describe_gauge!(
        "fleetyard_db_pool_connections",
        "Database connections of this process by state (idle, in_use) and the pool's limit (max)."
    );
    metrics::describe_histogram!(
        "fleetyard_db_pool_wait_seconds",
        metrics::Unit::Seconds,
        "How long a caller waited for a database connection (connecting a new one included)."
    );
    metrics::describe_counter!(
        "fleetyard_db_shared_read_statements_total",
        "Single-row reads sent to PostgreSQL; the callers of one read at the same moment share one."
    );
    metrics::describe_counter!(
        "fleetyard_db_shared_read_callers_total",
        "Callers those single-row reads answered (callers / statements: how many shared one)."
    );
    metrics::describe_gauge!(
        "fleetyard_jobs",
        "Pending conductor jobs: due and not leased, or under a live lease."
    );
    metrics::describe_gauge!(
        "fleetyard_jobs_blocked",
        "Pending jobs refused transiently by their driver (a quota, an unreachable API, a \
         conflict) and waiting to try again, by operation."
    );
    metrics::describe_gauge!(
        "fleetyard_jobs_oldest_due_age_seconds",
        metrics::Unit::Seconds,
        "How long the oldest due job has waited for a conductor (0 when none is due)."
    );
    metrics::describe_counter!(
        "fleetyard_conductor_jobs_total",
        "Job attempts worked by this process's conductor, by result."
    );
    metrics::describe_gauge!(
        "fleetyard_outbox_backlog",
        "Notifications committed and not yet confirmed by the broker."
    );
    metrics::describe_gauge!(
        "fleetyard_outbox_oldest_pending_age_seconds",
        metrics::Unit::Seconds,
        "Age of the oldest unsent notification: the relay's lag (0 when none waits)."
    );
    metrics::describe_counter!(
        "fleetyard_notifications_published_total",
        "Notifications this process's relay handed to the sink, by result (confirmed, failed)."
    );
    metrics::describe_histogram!(
        "fleetyard_health_probe_round_seconds",
        metrics::Unit::Seconds,
        "How long one round of the conductor's health prober took."
    );
    metrics::describe_counter!(
        "fleetyard_health_probes_total",
        "Cluster API probes made by this process's health prober, by outcome (ok, failed)."
    );
    metrics::describe_gauge!(
        "fleetyard_scrape_database_up",
        "1 when the last scrape could read the database's gauges, 0 when it could not."
    );
}

/// One API request, answered; `route` is the matched route template (taken, not copied).
pub fn http_request(method: &str, route: Option<String>, status: u16, elapsed: Duration) {
    if !enabled() {
        return;
    }
    let route = route.map_or(metrics::SharedString::const_str("unmatched"), Into::into);
    metrics::histogram!(
        "fleetyard_http_request_duration_seconds",
        "method" => method.to_string(),
        "route" => route,
        "status" => status.to_string(),
    )
    .record(elapsed.as_secs_f64());
}

/// One job attempt worked by a conductor: `done`, `started`, `retried`, `failed`, `skipped`
/// or `lost_lease`.
pub fn job_worked(result: &'static str) {
    if enabled() {
        metrics::counter!("fleetyard_conductor_jobs_total", "result" => result).increment(1);
    }
}

/// Notifications handed to the sink: `confirmed` or `failed`.
pub fn published(result: &'static str, n: u64) {
    if enabled() && n > 0 {
        metrics::counter!("fleetyard_notifications_published_total", "result" => result)
            .increment(n);
    }
}

/// One caller's wait for a database connection (an idle one, or a new one connected).
pub fn pool_wait(waited: Duration) {
    if enabled() {
        metrics::histogram!("fleetyard_db_pool_wait_seconds").record(waited.as_secs_f64());
    }
}

/// One round of the health prober, finished.
pub fn health_probe_round(elapsed: Duration) {
    if enabled() {
        metrics::histogram!("fleetyard_health_probe_round_seconds").record(elapsed.as_secs_f64());
    }
}

/// Health probes made: `ok` or `failed`.
pub fn health_probes(outcome: &'static str, n: u64) {
    if enabled() && n > 0 {
        metrics::counter!("fleetyard_health_probes_total", "outcome" => outcome).increment(n);
    }
}

/// Reads the gauges that live in the database and this process's pool.
async fn refresh(store: &dyn Store) {
    let pool = store.pool_status();
    let in_use = pool.size.saturating_sub(pool.idle);
    metrics::gauge!("fleetyard_db_pool_connections", "state" => "idle").set(pool.idle);
    metrics::gauge!("fleetyard_db_pool_connections", "state" => "in_use").set(in_use);
    metrics::gauge!("fleetyard_db_pool_connections", "state" => "max").set(pool.max);
    metrics::counter!("fleetyard_db_shared_read_statements_total")
        .absolute(pool.shared_read_statements);
    metrics::counter!("fleetyard_db_shared_read_callers_total").absolute(pool.shared_read_callers);
    let read = async {
        let jobs = store.job_gauges().await?;
        let backlog = store.outbox_backlog().await?;
        Ok::<_, crate::store::StoreError>((jobs, backlog))
    };
    let now = Utc::now();
    let age = |t: Option<chrono::DateTime<Utc>>| {
        t.map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0)
            .unwrap_or(0.0)
    };
    match tokio::time::timeout(SCRAPE_DB_TIMEOUT, read).await {
        Ok(Ok((jobs, (backlog, oldest)))) => {
            metrics::gauge!("fleetyard_jobs", "state" => "due").set(jobs.due as f64);
            metrics::gauge!("fleetyard_jobs", "state" => "leased").set(jobs.leased as f64);
            metrics::gauge!("fleetyard_jobs_oldest_due_age_seconds").set(age(jobs.oldest_due));
            for (operation, n) in jobs.blocked {
                metrics::gauge!("fleetyard_jobs_blocked", "operation" => operation).set(n as f64);
            }
            metrics::gauge!("fleetyard_outbox_backlog").set(backlog as f64);
            metrics::gauge!("fleetyard_outbox_oldest_pending_age_seconds").set(age(oldest));
            metrics::gauge!("fleetyard_scrape_database_up").set(1.0);
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "metrics: cannot read the database's gauges");
            metrics::gauge!("fleetyard_scrape_database_up").set(0.0);
        }
        Err(_) => {
            tracing::warn!("metrics: the database's gauges took too long");
            metrics::gauge!("fleetyard_scrape_database_up").set(0.0);
        }
    }
}

struct Exporter {
    handle: PrometheusHandle,
    store: Arc<dyn Store>,
}

async fn scrape(exporter: web::Data<Exporter>) -> HttpResponse {
    refresh(exporter.store.as_ref()).await;
    exporter.handle.run_upkeep();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(exporter.handle.render())
}

/// The metrics endpoint, bound and ready to run.
pub struct MetricsServer {
    port: u16,
    server: actix_web::dev::Server,
    handle: PrometheusHandle,
}

impl MetricsServer {
    /// Installs the recorder and binds `address` (`host:port`; port 0 picks a free one).
    pub fn bind(address: &str, store: Arc<dyn Store>) -> anyhow::Result<MetricsServer> {
        let handle = install()?;
        let listener = TcpListener::bind(address)
            .with_context(|| format!("[metrics] cannot listen on {address}"))?;
        let port = listener.local_addr()?.port();
        let exporter = web::Data::new(Exporter {
            handle: handle.clone(),
            store,
        });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(exporter.clone())
                .route("/metrics", web::get().to(scrape))
        })
        .workers(1)
        .disable_signals()
        .listen(listener)?
        .run();
        Ok(MetricsServer {
            port,
            server,
            handle,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until the server stops; meanwhile folds the recorded histogram samples into
    /// their buckets every [`UPKEEP_INTERVAL`], so that they never pile up between scrapes.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        tokio::select! {
            stopped = self.server => stopped,
            () = upkeep(self.handle) => Ok(()),
        }
    }
}

/// How often recorded samples are folded into their histograms. The recorder keeps every
/// sample until then (at 30,000 requests a second, two histograms: about 0.5 MB a second).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(1);

async fn upkeep(handle: PrometheusHandle) {
    let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        handle.run_upkeep();
    }
}
