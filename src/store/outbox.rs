//! The `outbox` table: events written in the transaction of the change they report, and the
//! relay's claims. A resource's events are delivered in the order they were written.

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Tx};
use super::rows::{OutboxRow, OUTBOX_COLUMNS};
use super::sql;
use super::wakeup::OUTBOX_CHANNEL;
use super::{Dialect, NewEvent, OutboxEvent, StoreResult};

/// Unsent, and unclaimed, claimed by `$1`, or claimed by someone whose claim expired before `$2`.
const CLAIMABLE: &str = "sent_at IS NULL AND (claimed_by IS NULL \
    OR claimed_by = $1 OR claim_expires_at < $2)";

static ANY_CLAIMABLE: LazyLock<String> =
    LazyLock::new(|| format!("SELECT EXISTS (SELECT 1 FROM outbox WHERE {CLAIMABLE})"));

/// The first `$3` claimable rows; PostgreSQL skips rows another relay is claiming.
static CANDIDATES: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT {OUTBOX_COLUMNS} FROM outbox WHERE {CLAIMABLE} ORDER BY id LIMIT $3{}",
            d.skip_locked()
        )
    })
});

/// Batches keep the bind count far below both backends' limits.
const CHUNK: usize = 500;

fn events(rows: Vec<OutboxRow>) -> StoreResult<Vec<OutboxEvent>> {
    rows.into_iter().map(OutboxRow::into_event).collect()
}

/// The insert of one event. On PostgreSQL it also notifies [`OUTBOX_CHANNEL`] in the same
/// statement (no extra round trip): the server delivers the notification to every listening
/// relay when, and only if, the transaction commits (several in one transaction are one).
static INSERT: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        let notify = match d {
            Dialect::Postgres => format!(" RETURNING pg_notify('{OUTBOX_CHANNEL}', '')"),
            Dialect::Sqlite => String::new(),
        };
        format!(
            "INSERT INTO outbox (message_id, resource_type, resource_uuid, event_type, \
             priority, message, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7){notify}"
        )
    })
});

/// Writes one event in the caller's transaction.
#[tracing::instrument(level = "debug", skip_all, fields(event = %e.event_type, resource = %e.resource_uuid))]
pub(super) async fn insert(tx: &mut Tx, e: &NewEvent) -> StoreResult<()> {
    tx.sql(tx.dialect().pick(&INSERT))
        .bind(e.message_id.hyphenated().to_string())
        .bind(&e.resource_type)
        .bind(&e.resource_uuid)
        .bind(&e.event_type)
        .bind(&e.priority)
        .bind(Json(&e.message))
        .bind(sql::now())
        .execute(&mut *tx)
        .await?;
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
pub(super) async fn pending(pool: &Pool, limit: u32) -> StoreResult<Vec<OutboxEvent>> {
    let rows = pool
        .sql(
            "SELECT id, message_id, resource_uuid, event_type, priority, message, \
             created_at, attempts FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    events(rows)
}

#[tracing::instrument(level = "debug", skip_all, fields(count = ids.len()))]
pub(super) async fn mark_sent(pool: &Pool, ids: &[i64]) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let now = sql::now();
    let mut tx = pool.begin_write().await?;
    for chunk in ids.chunks(CHUNK) {
        let text = format!(
            "UPDATE outbox SET sent_at = $1, attempts = attempts + 1, \
             claimed_by = NULL, claim_expires_at = NULL \
             WHERE sent_at IS NULL AND id IN ({})",
            sql::placeholders(2, chunk.len())
        );
        tx.sql(&text)
            .bind(now)
            .bind_all(chunk.iter().copied())
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await
}

#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn prune_sent(pool: &Pool, older_than: DateTime<Utc>) -> StoreResult<u64> {
    pool.sql("DELETE FROM outbox WHERE sent_at IS NOT NULL AND sent_at < $1")
        .bind(older_than)
        .execute(pool)
        .await
}

/// Claims for `owner` up to `limit` unsent events in id order, keeping each resource's order
/// (see [`deliverable`]). An idle relay never opens a write transaction.
#[tracing::instrument(level = "debug", skip_all, fields(owner = %owner, limit = limit))]
pub(super) async fn claim(
    pool: &Pool,
    owner: &str,
    limit: u32,
    claim: Duration,
) -> StoreResult<Vec<OutboxEvent>> {
    let now = sql::now();
    // A plain read first: an idle relay never opens a write transaction.
    let any: bool = pool
        .sql(&ANY_CLAIMABLE)
        .bind(owner)
        .bind(now)
        .scalar_one(pool)
        .await?;
    if !any {
        return Ok(Vec::new());
    }
    let mut tx = pool.begin_write().await?;
    let rows: Vec<OutboxRow> = tx
        .sql(tx.dialect().pick(&CANDIDATES))
        .bind(owner)
        .bind(now)
        .bind(i64::from(limit.max(1)))
        .fetch_all(&mut tx)
        .await?;
    let Some(last) = rows.last().map(|r| r.id) else {
        return Ok(Vec::new());
    };
    // Every unsent row up to the last candidate, locked or claimed by others too: those hold
    // their resource's later rows back.
    let unsent: Vec<(i64, String)> = tx
        .sql(
            "SELECT id, resource_uuid FROM outbox WHERE sent_at IS NULL AND id <= $1 \
             ORDER BY id",
        )
        .bind(last)
        .fetch_all(&mut tx)
        .await?;
    let candidates = rows.iter().map(|r| r.id).collect();
    let kept = deliverable(&candidates, &unsent);
    let rows: Vec<_> = rows.into_iter().filter(|r| kept.contains(&r.id)).collect();
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let expires =
        now + chrono::Duration::from_std(claim).unwrap_or_else(|_| chrono::Duration::seconds(60));
    let text = format!(
        "UPDATE outbox SET claimed_by = $1, claim_expires_at = $2 WHERE id IN ({})",
        sql::placeholders(3, rows.len())
    );
    let mut q = tx.sql(&text).bind(owner).bind(expires);
    for r in &rows {
        q = q.bind(r.id);
    }
    q.execute(&mut tx).await?;
    tx.commit().await?;
    events(rows)
}

/// Gives claimed events back unsent; `attempted` counts a failed delivery attempt.
#[tracing::instrument(level = "debug", skip_all, fields(owner = %owner, count = ids.len(), attempted = attempted))]
pub(super) async fn release(
    pool: &Pool,
    owner: &str,
    ids: &[i64],
    attempted: bool,
) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut tx = pool.begin_write().await?;
    for chunk in ids.chunks(CHUNK) {
        let text = format!(
            "UPDATE outbox SET claimed_by = NULL, claim_expires_at = NULL, \
             attempts = attempts + $2 WHERE claimed_by = $1 AND sent_at IS NULL \
             AND id IN ({})",
            sql::placeholders(3, chunk.len())
        );
        tx.sql(&text)
            .bind(owner)
            .bind(i32::from(attempted))
            .bind_all(chunk.iter().copied())
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await
}

/// Unsent events and the creation time of the oldest one.
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn backlog(pool: &Pool) -> StoreResult<(i64, Option<DateTime<Utc>>)> {
    let count: i64 = pool
        .sql("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL")
        .scalar_one(pool)
        .await?;
    let oldest: Option<DateTime<Utc>> = pool
        .sql("SELECT created_at FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 1")
        .scalar_optional(pool)
        .await?;
    Ok((count, oldest))
}

/// The outbox rows a relay may deliver from the rows it could lock (`candidates`), given every
/// unsent row up to the last candidate, in id order (`unsent`: id and resource): a resource's
/// rows are kept up to its first unsent row that is not a candidate (held by another relay), so
/// a later event of a resource never overtakes an earlier one.
fn deliverable(candidates: &HashSet<i64>, unsent: &[(i64, String)]) -> HashSet<i64> {
    let mut blocked = HashSet::new();
    let mut kept = HashSet::new();
    for (id, resource) in unsent {
        if blocked.contains(resource) {
            continue;
        }
        if candidates.contains(id) {
            kept.insert(*id);
        } else {
            blocked.insert(resource.clone());
        }
    }
    kept
}
