//! The `federation` table.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Tx};
use super::rows::{FederationRow, FEDERATION_COLUMNS};
use super::sql::{self, ByIdent};
use super::{Dialect, PageRequest, Scope, StoreError, StoreResult};
use crate::domain::federation::{Federation, NewFederation};
use crate::domain::status::FederationStatus;
use crate::domain::{ClusterId, FederationId, Ident};

pub const FEDERATION_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("project_id", false),
    ("hostcluster_id", false),
    ("status", false),
    ("status_reason", true),
    ("created_at", false),
    ("updated_at", true),
];

static BY_IDENT: ByIdent = LazyLock::new(|| {
    sql::by_ident_texts(
        "federation",
        FEDERATION_COLUMNS,
        "t.project_id = $1",
        "$1 = $1",
    )
});

static BY_UUID: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {FEDERATION_COLUMNS} FROM federation WHERE uuid = $1"));

/// Federations the cluster `$1` hosts or belongs to.
static OF_CLUSTER: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT {FEDERATION_COLUMNS} FROM federation WHERE hostcluster_id = $1 OR {} \
             ORDER BY id",
            d.member_contains()
        )
    })
});

/// One federation the cluster `$1` hosts or belongs to, if any.
static ANY_OF_CLUSTER: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT id FROM federation WHERE hostcluster_id = $1 OR {} LIMIT 1",
            d.member_contains()
        )
    })
});

static IN_PROGRESS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {FEDERATION_COLUMNS} FROM federation WHERE status IN ('CREATE_IN_PROGRESS', \
         'UPDATE_IN_PROGRESS', 'DELETE_IN_PROGRESS') ORDER BY id LIMIT $1"
    )
});

fn domain(rows: Vec<FederationRow>) -> StoreResult<Vec<Federation>> {
    rows.into_iter().map(FederationRow::into_domain).collect()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, ident = ?ident))]
pub(super) async fn get(pool: &Pool, scope: &Scope, ident: &Ident) -> StoreResult<Federation> {
    sql::one_by_ident::<FederationRow>(pool, &BY_IDENT, scope, ident)
        .await?
        .into_domain()
}

#[tracing::instrument(level = "debug", skip_all, fields(federation = %uuid))]
pub(super) async fn find(pool: &Pool, uuid: &FederationId) -> StoreResult<Option<Federation>> {
    let row: Option<FederationRow> = pool
        .sql(&BY_UUID)
        .bind_id(uuid)
        .fetch_optional(pool)
        .await?;
    row.map(FederationRow::into_domain).transpose()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, marker = ?page.marker))]
pub(super) async fn list(
    pool: &Pool,
    scope: &Scope,
    page: &PageRequest,
) -> StoreResult<Vec<Federation>> {
    let nullable = sql::nullable(FEDERATION_SORT_KEYS, &page.sort_key)?;
    let vis = |alias: &str| sql::project_visible(scope.all_projects, alias);
    let rows = sql::keyset_page(
        pool,
        "federation",
        FEDERATION_COLUMNS,
        "",
        &vis("t"),
        &vis("mk"),
        &scope.project_id,
        &[],
        page,
        nullable,
    )
    .await?;
    domain(rows)
}

/// Federations the cluster hosts or belongs to.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid))]
pub(super) async fn of_cluster(
    pool: &Pool,
    cluster_uuid: &ClusterId,
) -> StoreResult<Vec<Federation>> {
    let rows = pool
        .sql(pool.dialect().pick(&OF_CLUSTER))
        .bind_id(cluster_uuid)
        .fetch_all(pool)
        .await?;
    domain(rows)
}

#[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
pub(super) async fn in_progress(pool: &Pool, limit: u32) -> StoreResult<Vec<Federation>> {
    let rows = pool
        .sql(&IN_PROGRESS)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    domain(rows)
}

/// [`StoreError::Conflict`] `federation_membership` when the cluster hosts or belongs to a
/// federation.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid))]
pub(super) async fn refuse_if_federated(tx: &mut Tx, cluster_uuid: &ClusterId) -> StoreResult<()> {
    let found: Option<i64> = tx
        .sql(tx.dialect().pick(&ANY_OF_CLUSTER))
        .bind_id(cluster_uuid)
        .scalar_optional(&mut *tx)
        .await?;
    match found {
        Some(_) => Err(StoreError::Conflict {
            constraint: "federation_membership".into(),
        }),
        None => Ok(()),
    }
}

#[tracing::instrument(level = "debug", skip_all, fields(federation = %f.uuid))]
pub(super) async fn insert(
    tx: &mut Tx,
    f: &NewFederation,
    status: FederationStatus,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql(
        "INSERT INTO federation (uuid, project_id, user_id, name, hostcluster_id, \
         member_ids, status, properties, version, created_at) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9)",
    )
    .bind_id(&f.uuid)
    .bind(&f.project_id)
    .bind(&f.user_id)
    .bind(f.name.as_str())
    .bind_id(&f.hostcluster_id)
    .bind(Json(&f.member_ids))
    .bind(status.as_str())
    .bind(Json(&f.properties))
    .bind(now)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Writes every mutable column; [`StoreError::Stale`] unless the row is still at
/// `f.version`.
#[tracing::instrument(level = "debug", skip_all, fields(federation = %f.uuid, version = f.version))]
pub(super) async fn update(tx: &mut Tx, f: &Federation, now: DateTime<Utc>) -> StoreResult<()> {
    let done = tx
        .sql(
            "UPDATE federation SET name = $1, hostcluster_id = $2, member_ids = $3, \
             status = $4, status_reason = $5, properties = $6, updated_at = $7, \
             version = version + 1 WHERE id = $8 AND version = $9",
        )
        .bind(&f.name)
        .bind_id(&f.hostcluster_id)
        .bind(Json(&f.member_ids))
        .bind(f.status.as_str())
        .bind(&f.status_reason)
        .bind(Json(&f.properties))
        .bind(now)
        .bind(f.id)
        .bind(f.version)
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::Stale);
    }
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all, fields(federation_id = id))]
pub(super) async fn delete(tx: &mut Tx, id: i64) -> StoreResult<()> {
    let deleted = tx
        .sql("DELETE FROM federation WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    // Gone already: another conductor saw the same end first, and its event is written.
    if deleted == 0 {
        return Err(StoreError::Stale);
    }
    Ok(())
}
