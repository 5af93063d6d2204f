//! Who reaches which clusters through cluster groups: the reads that decide a right, as index
//! joins (a grantee's bindings, each bound group's accepted members and selector matches, or
//! for one cluster its groups and their bindings). See [`super::cluster_groups`] for the
//! tables and how the matches are kept.

use std::collections::HashMap;

use sqlx::types::Json;

use super::cluster_groups::right;
use super::db::Pool;
use super::rows::uuid_of;
use super::sql;
use super::StoreResult;
use crate::domain::cluster_group::{binding_applies, Grantee, GroupRight};
use crate::domain::{ClusterGroupId, ClusterId};

/// The clusters of the groups bound to project `$1` with each binding's roles and access: a
/// grantee's bindings, then each bound group's accepted members and selector matches.
const THROUGH_GROUPS: &str = "SELECT m.cluster_id, b.roles, b.access \
     FROM cluster_group_binding b \
     JOIN cluster_group_member m ON m.group_id = b.group_id AND m.state = 'Accepted' \
     WHERE b.grantee_project_id = $1 \
     UNION ALL \
     SELECT x.cluster_id, b.roles, b.access \
     FROM cluster_group_binding b \
     JOIN cluster_group_match x ON x.group_id = b.group_id \
     WHERE b.grantee_project_id = $1";

/// [`THROUGH_GROUPS`] for one cluster `$2`: its groups, then their bindings to `$1`.
const OVER_CLUSTER: &str = "SELECT m.cluster_id, b.roles, b.access \
     FROM cluster_group_member m \
     JOIN cluster_group_binding b ON b.group_id = m.group_id AND b.grantee_project_id = $1 \
     WHERE m.cluster_id = $2 AND m.state = 'Accepted' \
     UNION ALL \
     SELECT x.cluster_id, b.roles, b.access \
     FROM cluster_group_match x \
     JOIN cluster_group_binding b ON b.group_id = x.group_id AND b.grantee_project_id = $1 \
     WHERE x.cluster_id = $2";

type GrantRow = (String, Option<Json<Vec<String>>>, String);

/// The greatest right per cluster among the rows whose binding applies to the caller.
fn fold_rights(caller: Grantee, rows: Vec<GrantRow>) -> StoreResult<Vec<(ClusterId, GroupRight)>> {
    let mut best: HashMap<String, GroupRight> = HashMap::new();
    for (cluster, roles, access) in rows {
        if !binding_applies(
            caller.project_id,
            roles.as_ref().map(|r| r.0.as_slice()),
            caller,
        ) {
            continue;
        }
        let r = right(&access)?;
        let slot = best.entry(cluster).or_insert(r);
        *slot = (*slot).max(r);
    }
    let mut out = best
        .into_iter()
        .map(|(c, r)| Ok((uuid_of("cluster_group_member", &c)?, r)))
        .collect::<StoreResult<Vec<_>>>()?;
    out.sort();
    Ok(out)
}

/// Every cluster the caller reaches through groups, with the greatest right its bindings
/// grant, in uuid order. One statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %caller.project_id))]
pub(super) async fn through_groups(
    pool: &Pool,
    caller: Grantee<'_>,
) -> StoreResult<Vec<(ClusterId, GroupRight)>> {
    let rows: Vec<GrantRow> = pool
        .sql(THROUGH_GROUPS)
        .bind(caller.project_id)
        .fetch_all(pool)
        .await?;
    fold_rights(caller, rows)
}

/// The right the caller has over one cluster through groups. One statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %caller.project_id, cluster = %cluster))]
pub(super) async fn right_over(
    pool: &Pool,
    caller: Grantee<'_>,
    cluster: &ClusterId,
) -> StoreResult<Option<GroupRight>> {
    let rows: Vec<GrantRow> = pool
        .sql(OVER_CLUSTER)
        .bind(caller.project_id)
        .bind_id(cluster)
        .fetch_all(pool)
        .await?;
    Ok(fold_rights(caller, rows)?.first().map(|(_, r)| *r))
}

/// Which of the groups `through` reach each of `clusters`, in (cluster, group) order: one
/// statement of probes of `ix_cluster_group_member_cluster_id` and
/// `ix_cluster_group_match_cluster_id` by cluster.
#[tracing::instrument(level = "debug", skip_all, fields(clusters = clusters.len(), groups = through.len()))]
pub(super) async fn links(
    pool: &Pool,
    clusters: &[ClusterId],
    through: &[ClusterGroupId],
) -> StoreResult<Vec<(ClusterId, ClusterGroupId)>> {
    if clusters.is_empty() || through.is_empty() {
        return Ok(Vec::new());
    }
    let cs = sql::placeholders(1, clusters.len());
    let gs = sql::placeholders(1 + clusters.len(), through.len());
    let text = format!(
        "SELECT cluster_id, group_id FROM cluster_group_member WHERE state = 'Accepted' \
         AND cluster_id IN ({cs}) AND group_id IN ({gs}) \
         UNION SELECT cluster_id, group_id FROM cluster_group_match \
         WHERE cluster_id IN ({cs}) AND group_id IN ({gs}) ORDER BY 1, 2"
    );
    let rows: Vec<(String, String)> = pool
        .sql(&text)
        .bind_ids(clusters)
        .bind_ids(through)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|(c, g)| {
            Ok((
                uuid_of("cluster_group_member", c)?,
                uuid_of("cluster_group_member", g)?,
            ))
        })
        .collect()
}

/// The clusters named `name` that the groups `through` reach, in uuid order: the name's rows
/// of `ix_cluster_name_id`, each probed in the groups' members and matches.
#[tracing::instrument(level = "debug", skip_all, fields(groups = through.len()))]
pub(super) async fn named_through(
    pool: &Pool,
    name: &str,
    through: &[ClusterGroupId],
) -> StoreResult<Vec<ClusterId>> {
    if through.is_empty() {
        return Ok(Vec::new());
    }
    let gs = sql::placeholders(2, through.len());
    let text = format!(
        "SELECT c.uuid FROM cluster c WHERE c.name = $1 AND (\
         EXISTS (SELECT 1 FROM cluster_group_member m WHERE m.cluster_id = c.uuid \
             AND m.state = 'Accepted' AND m.group_id IN ({gs})) \
         OR EXISTS (SELECT 1 FROM cluster_group_match m WHERE m.cluster_id = c.uuid \
             AND m.group_id IN ({gs}))) ORDER BY c.uuid"
    );
    let rows: Vec<(String,)> = pool
        .sql(&text)
        .bind(name)
        .bind_ids(through)
        .fetch_all(pool)
        .await?;
    rows.iter().map(|(c,)| uuid_of("cluster", c)).collect()
}
