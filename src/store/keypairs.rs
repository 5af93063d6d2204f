//! The `x509keypair` table: a cluster's CAs and the service's client certificate, private
//! keys sealed before they get here.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};

use super::db::{Pool, Tx};
use super::rows::{KeypairRow, KEYPAIR_COLUMNS};
use super::StoreResult;
use crate::domain::keypair::{NewKeyPair, StoredKeyPair};
use crate::domain::ClusterId;

static OF_CLUSTER: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {KEYPAIR_COLUMNS} FROM x509keypair WHERE cluster_uuid = $1 ORDER BY id")
});

#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid))]
pub(super) async fn of_cluster(
    pool: &Pool,
    cluster_uuid: &ClusterId,
) -> StoreResult<Vec<StoredKeyPair>> {
    let rows: Vec<KeypairRow> = pool
        .sql(&OF_CLUSTER)
        .bind_id(cluster_uuid)
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

#[tracing::instrument(level = "debug", skip_all, fields(cluster = %k.cluster_uuid, kind = k.kind.as_str()))]
pub(super) async fn insert(tx: &mut Tx, k: &NewKeyPair, now: DateTime<Utc>) -> StoreResult<()> {
    tx.sql(
        "INSERT INTO x509keypair (uuid, cluster_uuid, kind, certificate, private_key, \
         project_id, user_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&k.uuid)
    .bind_id(&k.cluster_uuid)
    .bind(k.kind.as_str())
    .bind(&k.certificate)
    .bind(&k.private_key)
    .bind(&k.project_id)
    .bind(&k.user_id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Deletes a cluster's key pairs, of one kind or (`kind: None`) all.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid, kind = ?kind))]
pub(super) async fn delete(
    tx: &mut Tx,
    cluster_uuid: &ClusterId,
    kind: Option<&str>,
) -> StoreResult<()> {
    tx.sql("DELETE FROM x509keypair WHERE cluster_uuid = $1 AND ($2 IS NULL OR kind = $2)")
        .bind_id(cluster_uuid)
        .bind(kind)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
