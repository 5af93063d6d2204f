//! Times one full round of the conductor's active health prober over N registered clusters
//! (`./tox.sh bench`, `BENCH_ONLY=health_probe`): most behind real local HTTPS endpoints
//! (certificates signed by the clusters' CA, one loopback address each), every tenth behind a
//! listener that accepts connections and never answers. It makes (and drops) its own
//! database next to `--pg-url`. Its last line, `PROBE_JSON {...}`, gives the figures the
//! bench's goals table reads (`probe:round_s` against `probe:interval_s`).
//!
//!     cargo run --release --example health_probe_bench -- --clusters 100000 --concurrency 2048

#[path = "../tests/integration/helpers/endpoints.rs"]
mod endpoints;

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use endpoints::{loopback, Ca, Endpoint, Mode};
use fleetyard::conductor::Conductor;
use fleetyard::config::{ConductorSection, DriversSection, FakeDriverSection, HealthProbeSection};
use fleetyard::drivers::DriverRegistry;

#[derive(Parser)]
struct Args {
    /// A PostgreSQL URL whose user may create databases.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    #[arg(long, default_value_t = 100_000)]
    clusters: i64,
    /// One cluster in this many points at a hanging listener.
    #[arg(long, default_value_t = 10)]
    hanging_every: i64,
    /// `[health_probe] concurrency`.
    #[arg(long, default_value_t = 2048)]
    concurrency: usize,
    /// `[health_probe] timeout`, seconds.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// `[health_probe] interval`, seconds (the round should take less).
    #[arg(long, default_value_t = 30)]
    interval: u64,
    /// HTTPS endpoints, and hanging listeners, the clusters are spread over.
    #[arg(long, default_value_t = 16)]
    endpoints: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let name = format!(
        "fy_probe_bench_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&args.pg_url)
        .await
        .context("--pg-url: cannot connect")?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await?;
    let base = args
        .pg_url
        .rsplit_once('/')
        .map(|(b, _)| b)
        .unwrap_or(&args.pg_url);
    let db_url = format!("{base}/{name}");
    let result = run(&args, &db_url).await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    result
}

async fn run(args: &Args, db_url: &str) -> anyhow::Result<()> {
    let store = fleetyard::store::connect(db_url, 16).await?;
    store.migrate().await?;
    let pool = sqlx::PgPool::connect(db_url).await?;

    let ca = Ca::new("bench-ca");
    let mut healthy = Vec::new();
    let mut hanging = Vec::new();
    for i in 0..args.endpoints.max(1) {
        healthy.push(Endpoint::start(loopback(60, i), &ca, Mode::Ready).await);
        hanging.push(Endpoint::hanging(loopback(61, i)).await);
    }
    let healthy_urls: Vec<String> = healthy.iter().map(Endpoint::url).collect();
    let hanging_urls: Vec<String> = hanging.iter().map(Endpoint::url).collect();

    let template = uuid::Uuid::new_v4().to_string();
    sqlx::query(
        "INSERT INTO cluster_template (uuid, project_id, user_id, name, coe, image_id, driver, \
         created_at) VALUES ($1, 'bench', 'bench', 'bench', 'kubernetes', 'img', 'fake', now())",
    )
    .bind(&template)
    .execute(&pool)
    .await?;
    // The steady state: reachable clusters are HEALTHY already, hanging ones not yet judged.
    sqlx::query(
        "INSERT INTO cluster (uuid, project_id, user_id, name, registry_name, cluster_template_id, \
         api_address, status, health_status, created_at) \
         SELECT gen_random_uuid()::text, 'bench', 'bench', 'bench-' || i, 'bench-' || i, $1, \
         CASE WHEN i % $5 = 0 THEN ($3::text[])[1 + (i / $5) % cardinality($3::text[])] \
              ELSE ($2::text[])[1 + i % cardinality($2::text[])] END, \
         'CREATE_COMPLETE', CASE WHEN i % $5 = 0 THEN NULL ELSE 'HEALTHY' END, now() \
         FROM generate_series(1, $4) AS i",
    )
    .bind(&template)
    .bind(&healthy_urls)
    .bind(&hanging_urls)
    .bind(args.clusters)
    .bind(args.hanging_every.max(1))
    .execute(&pool)
    .await?;
    sqlx::query(
        "INSERT INTO x509keypair (uuid, cluster_uuid, kind, certificate, private_key, \
         project_id, user_id, created_at) \
         SELECT gen_random_uuid()::text, uuid, 'ca', $1, 'sealed-elsewhere', 'bench', 'bench', \
         now() FROM cluster",
    )
    .bind(&ca.pem)
    .execute(&pool)
    .await?;
    sqlx::query("ANALYZE").execute(&pool).await?;

    let settings = HealthProbeSection {
        enabled: true,
        interval: args.interval,
        timeout: args.timeout,
        concurrency: args.concurrency,
        failure_threshold: 3,
        success_threshold: 1,
        drivers: "fake".into(),
        // The endpoints' loopback blocks, which the default networks refuse.
        allowed_networks: format!(
            "{}, 127.60.0.0/16, 127.61.0.0/16",
            fleetyard::domain::health_probe::DEFAULT_ALLOWED_NETWORKS
        ),
        ..HealthProbeSection::default()
    };
    let conductor = Conductor::new(
        store.clone(),
        DriverRegistry::build(&DriversSection::default(), &FakeDriverSection::default())
            .map_err(anyhow::Error::msg)?,
        "bench",
        ConductorSection::default(),
    )
    .with_health_probe(settings.clone());
    let report = conductor.health_probe_round().await?;
    let hanging_n = args.clusters / args.hanging_every.max(1);
    let floor =
        Duration::from_secs_f64(hanging_n as f64 * args.timeout / args.concurrency.max(1) as f64);
    println!(
        "health probe round: {} clusters ({} hanging) over {} HTTPS endpoints and {} hanging \
         listeners, concurrency {}, timeout {}s: {:.1} s (probed {}, failed {}, changed {}, \
         write errors {}); {:.0} probes/s; the hanging ones alone need {:.1} s \
         (hanging * timeout / concurrency); interval {} s: {}",
        args.clusters,
        hanging_n,
        healthy.len(),
        hanging.len(),
        args.concurrency,
        args.timeout,
        report.elapsed.as_secs_f64(),
        report.probed,
        report.failed,
        report.changed,
        report.write_errors,
        report.probed as f64 / report.elapsed.as_secs_f64().max(1e-9),
        floor.as_secs_f64(),
        args.interval,
        if report.elapsed < settings.interval() {
            "within one interval"
        } else {
            "LONGER than one interval"
        }
    );
    let fresh: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM cluster_health_probe WHERE last_probe_at IS NOT NULL",
    )
    .fetch_one(&pool)
    .await?;
    println!("clusters with a last_probe_at: {fresh}");
    println!(
        "PROBE_JSON {}",
        serde_json::json!({
            "round_s": report.elapsed.as_secs_f64(),
            "interval_s": args.interval as f64,
            "clusters": args.clusters as f64,
            "probed": report.probed as f64,
            "failed": report.failed as f64,
            "hanging": hanging_n as f64,
            "probes_per_s": report.probed as f64 / report.elapsed.as_secs_f64().max(1e-9),
            "hanging_floor_s": floor.as_secs_f64(),
        })
    );
    pool.close().await;
    Ok(())
}
