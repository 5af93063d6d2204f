//! The `outbox` table: events written in the transaction of the change they report, and the
//! relay's claims. A resource's events are delivered in the order they were written.

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

/// Claims for `$1`, until `$4`, the first `$3` claimable rows, keeping each resource's order:
/// a resource's candidates are kept up to its first unsent row that is not a candidate (held
/// by another relay, or past the limit), so a later event never overtakes an earlier one. One
/// statement: PostgreSQL locks the candidates and skips rows another relay is claiming.
static CLAIM: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "WITH candidates AS (SELECT id, resource_uuid FROM outbox WHERE {CLAIMABLE} \
             ORDER BY id LIMIT $3{lock}), \
             blocked AS (SELECT o.resource_uuid, MIN(o.id) AS first_id FROM outbox o \
             WHERE o.sent_at IS NULL AND o.id <= (SELECT MAX(id) FROM candidates) \
             AND o.id NOT IN (SELECT id FROM candidates) GROUP BY o.resource_uuid) \
             UPDATE outbox SET claimed_by = $1, claim_expires_at = $4 WHERE id IN \
             (SELECT c.id FROM candidates c LEFT JOIN blocked b \
             ON b.resource_uuid = c.resource_uuid \
             WHERE b.first_id IS NULL OR c.id < b.first_id) \
             RETURNING {OUTBOX_COLUMNS}",
            lock = d.skip_locked()
        )
    })
});

/// Marks the rows of the id list `$2` sent at `$1`, in one statement.
static MARK_SENT: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "UPDATE outbox SET sent_at = $1, attempts = attempts + 1, \
             claimed_by = NULL, claim_expires_at = NULL \
             WHERE sent_at IS NULL AND id {}",
            d.in_id_list("$2")
        )
    })
});

/// Gives `$1`'s claims on the id list `$3` back, counting `$2` attempts.
static RELEASE: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "UPDATE outbox SET claimed_by = NULL, claim_expires_at = NULL, \
             attempts = attempts + $2 WHERE claimed_by = $1 AND sent_at IS NULL AND id {}",
            d.in_id_list("$3")
        )
    })
});

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

/// Marks delivered events sent: one statement, however many.
#[tracing::instrument(level = "debug", skip_all, fields(count = ids.len()))]
pub(super) async fn mark_sent(pool: &Pool, ids: &[i64]) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let d = pool.dialect();
    pool.sql(d.pick(&MARK_SENT))
        .bind(sql::now())
        .bind(d.id_list(ids))
        .execute(pool)
        .await?;
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn prune_sent(pool: &Pool, older_than: DateTime<Utc>) -> StoreResult<u64> {
    pool.sql("DELETE FROM outbox WHERE sent_at IS NOT NULL AND sent_at < $1")
        .bind(older_than)
        .execute(pool)
        .await
}

/// Claims for `owner` up to `limit` unsent events in id order, keeping each resource's order
/// (see [`CLAIM`]), in one statement. On SQLite, where a claim takes the database's write
/// lock, an idle relay first reads whether anything is claimable.
#[tracing::instrument(level = "debug", skip_all, fields(owner = %owner, limit = limit))]
pub(super) async fn claim(
    pool: &Pool,
    owner: &str,
    limit: u32,
    claim: Duration,
) -> StoreResult<Vec<OutboxEvent>> {
    let now = sql::now();
    let expires =
        now + chrono::Duration::from_std(claim).unwrap_or_else(|_| chrono::Duration::seconds(60));
    let d = pool.dialect();
    let stmt = pool
        .sql(d.pick(&CLAIM))
        .bind(owner)
        .bind(now)
        .bind(i64::from(limit.max(1)))
        .bind(expires);
    let mut rows: Vec<OutboxRow> = match d {
        Dialect::Postgres => stmt.fetch_all(pool).await?,
        Dialect::Sqlite => {
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
            let rows = stmt.fetch_all(&mut tx).await?;
            tx.commit().await?;
            rows
        }
    };
    rows.sort_unstable_by_key(|r| r.id);
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
    let d = pool.dialect();
    pool.sql(d.pick(&RELEASE))
        .bind(owner)
        .bind(i32::from(attempted))
        .bind(d.id_list(ids))
        .execute(pool)
        .await?;
    Ok(())
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
