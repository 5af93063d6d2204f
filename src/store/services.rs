//! The `magnum_service` table: conductor and API processes and their heartbeats.

use super::db::Pool;
use super::rows::ServiceRow;
use super::{sql, ServiceRecord, StoreResult};

#[tracing::instrument(level = "debug", skip_all, fields(host = %host, binary = %binary))]
pub(super) async fn heartbeat(pool: &Pool, host: &str, binary: &str) -> StoreResult<()> {
    let now = sql::now();
    let mut tx = pool.begin_write().await?;
    tx.sql(
        "INSERT INTO magnum_service (host, \"binary\", disabled, forced_down, \
         report_count, last_seen_up, created_at) VALUES ($1, $2, FALSE, FALSE, 1, $3, $3) \
         ON CONFLICT (host, \"binary\") DO UPDATE SET \
         report_count = magnum_service.report_count + 1, \
         last_seen_up = excluded.last_seen_up, updated_at = excluded.last_seen_up",
    )
    .bind(host)
    .bind(binary)
    .bind(now)
    .execute(&mut tx)
    .await?;
    tx.commit().await
}

#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn list(pool: &Pool) -> StoreResult<Vec<ServiceRecord>> {
    let rows: Vec<ServiceRow> = pool
        .sql(
            "SELECT id, host, \"binary\", disabled, disabled_reason, last_seen_up, \
             forced_down, report_count, created_at, updated_at FROM magnum_service ORDER BY id",
        )
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}
