//! The `job` table: claims under a lease, and the job writes of a [`super::Write`] set.

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Tx};
use super::rows::{JobRow, JobStateRow, JOB_COLUMNS};
use super::sql;
use super::{Dialect, StoreError, StoreResult};
use crate::domain::job::{Job, JobResource, NewJob, Operation};
use crate::domain::NodeGroupId;
use uuid::Uuid;

/// The next claimable job: due, not leased (or the lease expired), and no earlier pending job
/// for the same resource, so a resource's jobs run one at a time, in order. PostgreSQL skips
/// a job another conductor is claiming.
static NEXT_DUE: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT id FROM job j WHERE j.state = 'pending' AND j.run_after <= $1 \
             AND (j.lease_expires_at IS NULL OR j.lease_expires_at < $1) \
             AND NOT EXISTS (SELECT 1 FROM job e WHERE e.resource_uuid = j.resource_uuid \
             AND e.state = 'pending' AND e.id < j.id) \
             ORDER BY j.run_after, j.id LIMIT 1{}",
            d.skip_locked()
        )
    })
});

static LEASE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE job SET lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1, \
         updated_at = $3 WHERE id = $4 RETURNING {JOB_COLUMNS}"
    )
});

static OF_RESOURCE: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {JOB_COLUMNS}, state FROM job WHERE resource_uuid = $1 ORDER BY id")
});

fn expiry(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60))
}

/// Claims the next due job under a lease, committed before the caller starts work.
#[tracing::instrument(
    level = "debug",
    skip_all,
    fields(owner = %owner, job_id = tracing::field::Empty)
)]
pub(super) async fn claim(pool: &Pool, owner: &str, lease: Duration) -> StoreResult<Option<Job>> {
    let now = sql::now();
    let expires = expiry(now, lease);
    let mut tx = pool.begin_write().await?;
    let id: Option<i64> = tx
        .sql(tx.dialect().pick(&NEXT_DUE))
        .bind(now)
        .scalar_optional(&mut tx)
        .await?;
    let Some(id) = id else {
        return Ok(None);
    };
    let row: JobRow = tx
        .sql(&LEASE)
        .bind(owner)
        .bind(expires)
        .bind(now)
        .bind(id)
        .fetch_one(&mut tx)
        .await?;
    tx.commit().await?;
    tracing::Span::current().record("job_id", id);
    row.into_domain().map(Some)
}

/// Extends a held lease; false when the lease was lost.
#[tracing::instrument(level = "debug", skip_all, fields(job_id = job_id, owner = %owner))]
pub(super) async fn renew_lease(
    pool: &Pool,
    job_id: i64,
    owner: &str,
    lease: Duration,
) -> StoreResult<bool> {
    let done = pool
        .sql(
            "UPDATE job SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3 \
             AND state = 'pending'",
        )
        .bind(expiry(sql::now(), lease))
        .bind(job_id)
        .bind(owner)
        .execute(pool)
        .await?;
    Ok(done == 1)
}

/// Gives back every pending job `owner` holds, claimable at once; how many.
#[tracing::instrument(level = "debug", skip_all, fields(owner = %owner))]
pub(super) async fn release_leases(pool: &Pool, owner: &str) -> StoreResult<u64> {
    let released = pool
        .sql(
            "UPDATE job SET lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 \
             WHERE lease_owner = $2 AND state = 'pending'",
        )
        .bind(sql::now())
        .bind(owner)
        .execute(pool)
        .await?;
    Ok(released)
}

/// Whether a job other than `job_id` waits for the resource.
#[tracing::instrument(level = "debug", skip_all, fields(resource = %resource, job_id = job_id))]
pub(super) async fn other_pending(
    pool: &Pool,
    resource: &JobResource,
    job_id: i64,
) -> StoreResult<bool> {
    pool.sql(
        "SELECT EXISTS (SELECT 1 FROM job WHERE resource_uuid = $1 AND state = 'pending' \
         AND id <> $2)",
    )
    .bind(resource.to_string())
    .bind(job_id)
    .scalar_one(pool)
    .await
}

/// Which of these resources have a job waiting.
#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn resources_pending(pool: &Pool, uuids: &[Uuid]) -> StoreResult<Vec<Uuid>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT DISTINCT resource_uuid FROM job WHERE state = 'pending' AND resource_uuid IN ({})",
        sql::placeholders(1, uuids.len())
    );
    let q = pool
        .sql(&text)
        .bind_all(uuids.iter().map(|u| u.hyphenated().to_string()));
    let found: Vec<String> = q.scalar_all(pool).await?;
    found
        .iter()
        .map(|text| {
            Uuid::try_parse(text)
                .map_err(|_| StoreError::Corrupt(format!("job.resource_uuid {text}")))
        })
        .collect()
}

/// The deadline of the latest delete of each of these clusters that has one (a delete the
/// driver started is failed by the status sync once it passes), in one statement.
#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn delete_deadlines(
    pool: &Pool,
    uuids: &[Uuid],
) -> StoreResult<Vec<(Uuid, DateTime<Utc>)>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT resource_uuid, MAX(deadline_at) FROM job WHERE operation = 'cluster.delete' \
         AND deadline_at IS NOT NULL AND resource_uuid IN ({}) GROUP BY resource_uuid",
        sql::placeholders(1, uuids.len())
    );
    let rows: Vec<(String, Option<DateTime<Utc>>)> = pool
        .sql(&text)
        .bind_all(uuids.iter().map(|u| u.hyphenated().to_string()))
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .filter_map(|(text, deadline)| deadline.map(|d| (text, d)))
        .map(|(text, deadline)| {
            Uuid::try_parse(&text)
                .map(|u| (u, deadline))
                .map_err(|_| StoreError::Corrupt(format!("job.resource_uuid {text}")))
        })
        .collect()
}

/// Every job of a resource with its state.
#[tracing::instrument(level = "debug", skip_all, fields(resource = %resource_uuid))]
pub(super) async fn of_resource(
    pool: &Pool,
    resource_uuid: Uuid,
) -> StoreResult<Vec<(Job, String)>> {
    let rows: Vec<JobStateRow> = pool
        .sql(&OF_RESOURCE)
        .bind(resource_uuid.hyphenated().to_string())
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|r| Ok((r.job.into_domain()?, r.state)))
        .collect()
}

#[tracing::instrument(level = "debug", skip_all, fields(job = %j.uuid, resource = %j.resource))]
pub(super) async fn insert(tx: &mut Tx, j: &NewJob, now: DateTime<Utc>) -> StoreResult<()> {
    tx.sql(
        "INSERT INTO job (uuid, operation, resource_type, resource_uuid, driver, \
         payload, state, attempts, max_attempts, run_after, deadline_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $9, $8)",
    )
    .bind_id(&j.uuid)
    .bind(j.operation().as_str())
    .bind(j.operation().resource_type())
    .bind(j.resource.to_string())
    .bind(&j.driver)
    .bind(Json(j.payload.stored()))
    .bind(j.max_attempts)
    .bind(now)
    .bind(j.deadline_at)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Ends a job the caller holds the lease of; [`StoreError::Stale`] when it does not.
#[tracing::instrument(level = "debug", skip_all, fields(job_id = id, owner = %owner, failed = failed))]
pub(super) async fn finish(
    tx: &mut Tx,
    id: i64,
    owner: &str,
    failed: bool,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let done = tx
        .sql(
            "UPDATE job SET state = $1, last_error = $2, lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = $3 WHERE id = $4 AND lease_owner = $5 \
             AND state = 'pending'",
        )
        .bind(if failed { "failed" } else { "done" })
        .bind(error)
        .bind(now)
        .bind(id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::Stale);
    }
    Ok(())
}

/// Ends every pending job of `resource` as failed with `error`.
#[tracing::instrument(level = "debug", skip_all, fields(resource = %resource))]
pub(super) async fn supersede(
    tx: &mut Tx,
    resource: &JobResource,
    error: &str,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql(
        "UPDATE job SET state = 'failed', last_error = $1, lease_owner = NULL, \
         lease_expires_at = NULL, updated_at = $2 WHERE resource_uuid = $3 \
         AND state = 'pending'",
    )
    .bind(error)
    .bind(now)
    .bind(resource.to_string())
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Ends every pending job of `cluster` that works on `nodegroup` as failed with `error`.
#[tracing::instrument(level = "debug", skip_all, fields(resource = %cluster, nodegroup = %nodegroup))]
pub(super) async fn supersede_nodegroup(
    tx: &mut Tx,
    cluster: &JobResource,
    nodegroup: NodeGroupId,
    error: &str,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let text = format!(
        "SELECT {JOB_COLUMNS} FROM job WHERE resource_uuid = $1 AND state = 'pending' ORDER BY id"
    );
    let rows: Vec<JobRow> = tx
        .sql(&text)
        .bind(cluster.to_string())
        .fetch_all(&mut *tx)
        .await?;
    for row in rows {
        let job = row.into_domain()?;
        if job.payload.nodegroup() != Some(nodegroup) {
            continue;
        }
        tx.sql(
            "UPDATE job SET state = 'failed', last_error = $1, lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = $2 WHERE id = $3 AND state = 'pending'",
        )
        .bind(error)
        .bind(now)
        .bind(job.id)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// Releases a job the caller holds the lease of, to run again after `run_after`, blocked
/// since the first refusal (kept once set); [`StoreError::Stale`] when it does not hold it.
#[tracing::instrument(level = "debug", skip_all, fields(job_id = id, owner = %owner))]
pub(super) async fn retry(
    tx: &mut Tx,
    id: i64,
    owner: &str,
    (run_after, blocked_since): (DateTime<Utc>, DateTime<Utc>),
    error: &str,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let done = tx
        .sql(
            "UPDATE job SET run_after = $1, last_error = $2, lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = $3, \
             blocked_since = COALESCE(blocked_since, $4) WHERE id = $5 AND lease_owner = $6 \
             AND state = 'pending'",
        )
        .bind(run_after)
        .bind(error)
        .bind(now)
        .bind(blocked_since)
        .bind(id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::Stale);
    }
    Ok(())
}

/// Releases a job `owner` holds, to run again at `run_after`, as work still under way: no
/// error, not blocked. [`StoreError::Stale`] when the lease was lost.
pub(super) async fn requeue(
    tx: &mut Tx,
    id: i64,
    owner: &str,
    run_after: DateTime<Utc>,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let done = tx
        .sql(
            "UPDATE job SET run_after = $1, last_error = NULL, lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = $2, blocked_since = NULL WHERE id = $3 \
             AND lease_owner = $4 AND state = 'pending'",
        )
        .bind(run_after)
        .bind(now)
        .bind(id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::Stale);
    }
    Ok(())
}

/// Pending jobs: due and unleased (with the oldest due time, in the same statement), under
/// a live lease, and blocked (refused transiently) by operation. Both read the pending rows only (the `ix_job_due` partial index), however many
/// jobs are done.
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn gauges(pool: &Pool) -> StoreResult<super::JobGauges> {
    let now = sql::now();
    let (due, oldest_due): (i64, Option<DateTime<Utc>>) = pool
        .sql(
            "SELECT COUNT(*), MIN(run_after) FROM job WHERE state = 'pending' \
             AND run_after <= $1 AND (lease_expires_at IS NULL OR lease_expires_at < $1)",
        )
        .bind(now)
        .fetch_one(pool)
        .await?;
    let leased: i64 = pool
        .sql("SELECT COUNT(*) FROM job WHERE state = 'pending' AND lease_expires_at >= $1")
        .bind(now)
        .scalar_one(pool)
        .await?;
    let counted: Vec<(String, i64)> = pool
        .sql(
            "SELECT operation, COUNT(*) FROM job WHERE state = 'pending' \
             AND blocked_since IS NOT NULL GROUP BY operation",
        )
        .fetch_all(pool)
        .await?;
    let blocked = Operation::ALL
        .iter()
        .map(|op| {
            let n = counted.iter().find(|(o, _)| o == op.as_str());
            (op.as_str(), n.map_or(0, |(_, n)| *n))
        })
        .collect();
    Ok(super::JobGauges {
        due,
        leased,
        oldest_due,
        blocked,
    })
}
