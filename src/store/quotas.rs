//! The `quotas` table, and the cluster quota check of a [`super::Write`] set.

use std::sync::LazyLock;

use super::db::{Pool, Tx};
use super::sql;
use super::{Dialect, PageRequest, QuotaRow, StoreError, StoreResult};

pub const QUOTA_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("project_id", false),
    ("resource", false),
    ("hard_limit", false),
    ("created_at", false),
    ("updated_at", true),
];

const QUOTA_COLUMNS: &str = "id, project_id, resource, hard_limit, created_at, updated_at";

/// The project's cluster quota row, locked (PostgreSQL) until the transaction ends.
static CLUSTER_LIMIT: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT hard_limit FROM quotas WHERE project_id = $1 AND resource = 'Cluster'{}",
            d.lock_rows()
        )
    })
});

#[tracing::instrument(level = "debug", skip_all, fields(project = %project_id, resource = %resource))]
pub(super) async fn get(
    pool: &Pool,
    project_id: &str,
    resource: &str,
) -> StoreResult<Option<QuotaRow>> {
    pool.sql(
        "SELECT id, project_id, resource, hard_limit, created_at, updated_at FROM quotas \
         WHERE project_id = $1 AND resource = $2",
    )
    .bind(project_id)
    .bind(resource)
    .fetch_optional(pool)
    .await
}

/// Quotas of one project (or all, with `None`), keyset-paged by integer id markers.
#[tracing::instrument(level = "debug", skip_all, fields(project = ?project_id, marker = ?marker))]
pub(super) async fn list(
    pool: &Pool,
    project_id: Option<&str>,
    marker: Option<i64>,
    page: &PageRequest,
) -> StoreResult<Vec<QuotaRow>> {
    let nullable = sql::nullable(QUOTA_SORT_KEYS, &page.sort_key)?;
    let vis = |alias: &str| sql::project_visible(project_id.is_none(), alias);
    let keyed = PageRequest {
        marker: None,
        ..page.clone()
    };
    let (_, order) = sql::keyset(&keyed, nullable);
    let mut cond = String::new();
    if marker.is_some() {
        let with_marker = PageRequest {
            marker: Some(uuid::Uuid::nil()),
            ..page.clone()
        };
        let (c, _) = sql::keyset(&with_marker, nullable);
        cond = format!(" AND {}", c.unwrap_or_else(|| "TRUE".into()));
    }
    let from = if marker.is_some() {
        format!(
            "quotas t, (SELECT * FROM quotas m WHERE {} AND m.id = $3) m",
            vis("m")
        )
    } else {
        "quotas t".to_string()
    };
    let text = format!(
        "SELECT {} FROM {from} WHERE {}{cond} ORDER BY {order} LIMIT $2",
        sql::aliased(QUOTA_COLUMNS, "t"),
        vis("t")
    );
    if let Some(m) = marker {
        let check = format!(
            "SELECT COUNT(*) FROM quotas m WHERE {} AND m.id = $2",
            vis("m")
        );
        let exists: i64 = pool
            .sql(&check)
            .bind(project_id.unwrap_or(""))
            .bind(m)
            .scalar_one(pool)
            .await?;
        if exists == 0 {
            return Err(StoreError::NotFound);
        }
    }
    let mut q = pool
        .sql(&text)
        .bind(project_id.unwrap_or(""))
        .bind(i64::from(page.limit));
    if let Some(m) = marker {
        q = q.bind(m);
    }
    q.fetch_all(pool).await
}

#[tracing::instrument(skip_all, fields(project = %project_id, resource = %resource))]
pub(super) async fn create(
    pool: &Pool,
    project_id: &str,
    resource: &str,
    hard_limit: i32,
) -> StoreResult<QuotaRow> {
    let mut tx = pool.begin_write().await?;
    let row = tx
        .sql(
            "INSERT INTO quotas (project_id, resource, hard_limit, created_at) \
             VALUES ($1, $2, $3, $4) \
             RETURNING id, project_id, resource, hard_limit, created_at, updated_at",
        )
        .bind(project_id)
        .bind(resource)
        .bind(hard_limit)
        .bind(sql::now())
        .fetch_one(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(row)
}

#[tracing::instrument(skip_all, fields(project = %project_id, resource = %resource))]
pub(super) async fn update(
    pool: &Pool,
    project_id: &str,
    resource: &str,
    hard_limit: i32,
) -> StoreResult<QuotaRow> {
    let mut tx = pool.begin_write().await?;
    let row: Option<QuotaRow> = tx
        .sql(
            "UPDATE quotas SET hard_limit = $1, updated_at = $2 WHERE project_id = $3 \
             AND resource = $4 \
             RETURNING id, project_id, resource, hard_limit, created_at, updated_at",
        )
        .bind(hard_limit)
        .bind(sql::now())
        .bind(project_id)
        .bind(resource)
        .fetch_optional(&mut tx)
        .await?;
    tx.commit().await?;
    row.ok_or(StoreError::NotFound)
}

#[tracing::instrument(skip_all, fields(project = %project_id, resource = %resource))]
pub(super) async fn delete(pool: &Pool, project_id: &str, resource: &str) -> StoreResult<()> {
    let mut tx = pool.begin_write().await?;
    let done = tx
        .sql("DELETE FROM quotas WHERE project_id = $1 AND resource = $2")
        .bind(project_id)
        .bind(resource)
        .execute(&mut tx)
        .await?;
    tx.commit().await?;
    if done == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}

/// [`StoreError::LimitExceeded`] when the project already has as many clusters as its quota
/// (its `quotas` row, else `default_limit`).
#[tracing::instrument(level = "debug", skip_all, fields(project = %project_id))]
pub(super) async fn check_clusters(
    tx: &mut Tx,
    project_id: &str,
    default_limit: i64,
) -> StoreResult<()> {
    // Creates in one project take turns, so two of them cannot both count room for one more,
    // whether or not a quota row exists to lock. (SQLite write transactions are serial
    // already.)
    if tx.dialect() == Dialect::Postgres {
        tx.sql("SELECT pg_advisory_xact_lock(hashtextextended('cluster-quota:' || $1, 0))")
            .bind(project_id)
            .execute(&mut *tx)
            .await?;
    }
    let limit: Option<i32> = tx
        .sql(tx.dialect().pick(&CLUSTER_LIMIT))
        .bind(project_id)
        .scalar_optional(&mut *tx)
        .await?;
    let limit = limit.map(i64::from).unwrap_or(default_limit);
    let count: i64 = tx
        .sql("SELECT COUNT(*) FROM cluster WHERE project_id = $1")
        .bind(project_id)
        .scalar_one(&mut *tx)
        .await?;
    if count >= limit {
        return Err(StoreError::LimitExceeded { limit });
    }
    Ok(())
}
