//! What the Rust benches share: their own PostgreSQL database next to the admin URL, the
//! settings of the API they serve from it in process, and milliseconds and nearest-rank
//! percentiles of their samples.

use std::time::Duration;

use anyhow::Context;
use fleetyard::config::{Secret, Settings};

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile of sorted samples.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A fresh database `name` beside the admin URL (dropped first if a run left it); its URL.
pub async fn create_database(admin: &str, name: &str) -> anyhow::Result<String> {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(admin)
        .await
        .context("PostgreSQL must be reachable (./tox.sh starts it)")?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await?;
    let base = admin.rsplit_once('/').map_or(admin, |(b, _)| b);
    Ok(format!("{base}/{name}"))
}

pub async fn drop_database(admin: &str, name: &str) -> anyhow::Result<()> {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(admin).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await?;
    Ok(())
}

/// The in-process API of a bench: on 127.0.0.1 (any port), two workers, the bench's database
/// with a pool of ten.
pub fn bench_settings(db_url: &str) -> Settings {
    let mut settings = Settings::default();
    settings.api.host = "127.0.0.1".into();
    settings.api.port = 0;
    settings.api.workers = 2;
    settings.database.connection = Secret::new(db_url);
    settings.database.max_pool_size = 10;
    settings.default.host = "bench-host".into();
    settings
}
