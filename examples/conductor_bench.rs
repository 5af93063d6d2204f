//! Times one conductor's status-sync round over N in-progress clusters with the fake driver
//! (used by `./tox.sh bench`, which seeds the database first).
//!
//!     cargo run --release --example conductor_bench -- --database-url URL --clusters 10000 --rounds 3

use std::time::{Duration, Instant};

use clap::Parser;
use fleetyard::conductor::Conductor;
use fleetyard::config::{ConductorSection, DriversSection, FakeDriverSection};
use fleetyard::drivers::DriverRegistry;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    database_url: String,
    #[arg(long, default_value_t = 10_000)]
    clusters: i64,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn round(
    args: &Args,
    pool: &sqlx::PgPool,
    conductor: &Conductor,
    age: &str,
) -> anyhow::Result<(Duration, usize, usize, u64)> {
    sqlx::query("DELETE FROM job").execute(pool).await?;
    let marked = sqlx::query(&format!(
        "UPDATE cluster SET status = 'CREATE_IN_PROGRESS', updated_at = now() - interval '{age}' \
         WHERE id IN (SELECT id FROM cluster WHERE project_id = 'bench' ORDER BY id LIMIT $1)"
    ))
    .bind(args.clusters)
    .execute(pool)
    .await?
    .rows_affected();
    let started = Instant::now();
    let report = conductor.sync_round().await?;
    Ok((started.elapsed(), report.polled, report.changed, marked))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let store = fleetyard::store::connect(&args.database_url, 16).await?;
    let pool = sqlx::PgPool::connect(&args.database_url).await?;
    let settings = ConductorSection::default();
    // Completing round: every cluster's simulated create finished an hour ago.
    let completing = Conductor::new(
        store.clone(),
        DriverRegistry::build(&DriversSection::default(), &FakeDriverSection::default())
            .map_err(anyhow::Error::msg)?,
        "bench",
        settings.clone(),
    );
    // Polling-only round: creates take an hour, so every poll answers "in progress".
    let slow = FakeDriverSection {
        create_seconds: 3600,
        ..FakeDriverSection::default()
    };
    let polling = Conductor::new(
        store.clone(),
        DriverRegistry::build(&DriversSection::default(), &slow).map_err(anyhow::Error::msg)?,
        "bench",
        settings,
    );
    let mut complete = Vec::new();
    let mut poll = Vec::new();
    let mut counts = (0, 0, 0);
    // Fewer than asked when the database holds fewer clusters (a short bench run).
    let mut in_progress = 0;
    for _ in 0..args.rounds {
        let (t, polled, changed, marked) = round(&args, &pool, &completing, "1 hour").await?;
        in_progress = marked;
        complete.push(t);
        counts.0 = polled;
        counts.1 = changed;
        let (t, polled, _, _) = round(&args, &pool, &polling, "0 seconds").await?;
        poll.push(t);
        counts.2 = polled;
    }
    sqlx::query("UPDATE cluster SET status = 'CREATE_COMPLETE' WHERE project_id = 'bench'")
        .execute(&pool)
        .await?;
    println!(
        "conductor sync round, {} clusters in progress, median of {} rounds:\n  \
         all complete (poll + commit + event each): {:.2} s ({} polled, {} changed)\n  \
         all still in progress (poll only):        {:.2} s ({} polled)",
        in_progress,
        args.rounds,
        median(complete).as_secs_f64(),
        counts.0,
        counts.1,
        median(poll).as_secs_f64(),
        counts.2
    );
    Ok(())
}
