//! The `nodegroup` table. A node group's writes carry its machines along: inserted with
//! `node_count` of them, updated to keep that many not being deleted.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::arg::Arg;
use super::db::{Pool, Tx};
use super::rows::{NodeGroupOfClusterRow, NodeGroupRow, NODEGROUP_COLUMNS};
use super::{machine_writes, sql};
use super::{PageRequest, Scope, StoreError, StoreResult};
use crate::domain::cluster::{NewNodeGroup, NodeGroup, NodeGroupOfCluster};
use crate::domain::ids::parse_uuid_like;
use crate::domain::machine::count::MachineTemplate;
use crate::domain::managed_fields::ManagedFields;
use crate::domain::{ClusterId, Ident};

pub const NODEGROUP_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("cluster_id", false),
    ("project_id", false),
    ("docker_volume_size", true),
    ("flavor_id", true),
    ("image_id", true),
    ("node_count", false),
    ("role", false),
    ("min_node_count", false),
    ("max_node_count", true),
    ("is_default", false),
    ("stack_id", true),
    ("status", false),
    ("status_reason", true),
    ("version", true),
    ("created_at", false),
    ("updated_at", true),
];

/// A node group of a cluster by uuid (`$2`), name (`$3`) or integer id (`$4`); a uuid match
/// wins over a name another group has.
static BY_IDENT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {NODEGROUP_COLUMNS} FROM nodegroup WHERE cluster_id = $1 AND (uuid = $2 OR \
         name = $3 OR id = $4) ORDER BY (uuid = $2) DESC, id LIMIT 2"
    )
});

/// A node group matched as [`BY_IDENT`] matches it (`$3` uuid, `$4` name, `$5` integer id)
/// of the cluster matched as [`super::sql::by_ident_texts`] match it (`$1` the caller's
/// project, `$2` the uuid or name), in one statement: at most 2 visible clusters in id order,
/// how many there are, and the first one's owner and labels left-joined with its node group.
/// No row: no such cluster. Indexed by [`sql::by_ident_index`].
static OF_CLUSTER: LazyLock<[String; 4]> = LazyLock::new(|| {
    let group = sql::aliased(NODEGROUP_COLUMNS, "g");
    let text = |vis: &str, col: &str| {
        format!(
            "WITH c AS (SELECT t.id, t.uuid, t.project_id, t.user_id, t.labels FROM cluster t \
             WHERE {vis} AND t.{col} = $2 ORDER BY t.id LIMIT 2) \
             SELECT (SELECT COUNT(*) FROM c) AS cluster_matches, c.uuid AS cluster_uuid, \
             c.project_id AS cluster_project_id, c.user_id AS cluster_user_id, \
             c.labels AS cluster_labels, {group} FROM c LEFT JOIN nodegroup g ON g.id = \
             (SELECT n.id FROM nodegroup n WHERE n.cluster_id = c.uuid AND (n.uuid = $3 OR \
             n.name = $4 OR n.id = $5) ORDER BY (n.uuid = $3) DESC, n.id LIMIT 1) \
             ORDER BY c.id LIMIT 1"
        )
    };
    let (own, all) = ("t.project_id = $1", "$1 = $1");
    [
        text(own, "uuid"),
        text(own, "name"),
        text(all, "uuid"),
        text(all, "name"),
    ]
});

/// How [`BY_IDENT`] binds a node group ident: as a uuid (empty if it is none) and as an
/// integer id (-1 if it is none).
fn ident_keys(ident: &str) -> (String, i64) {
    let as_uuid = parse_uuid_like(ident)
        .map(|u| u.hyphenated().to_string())
        .unwrap_or_default();
    (as_uuid, ident.parse().unwrap_or(-1))
}

fn domain(rows: Vec<NodeGroupRow>) -> StoreResult<Vec<NodeGroup>> {
    rows.into_iter().map(NodeGroupRow::into_domain).collect()
}

/// Every node group of the given clusters, in one query.
#[tracing::instrument(level = "debug", skip_all, fields(clusters = cluster_uuids.len()))]
pub(super) async fn of_clusters(
    pool: &Pool,
    cluster_uuids: &[ClusterId],
) -> StoreResult<Vec<NodeGroup>> {
    if cluster_uuids.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT {NODEGROUP_COLUMNS} FROM nodegroup WHERE cluster_id IN ({}) ORDER BY id",
        sql::placeholders(1, cluster_uuids.len())
    );
    let q = pool.sql(&text).bind_ids(cluster_uuids);
    domain(q.fetch_all(pool).await?)
}

#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid, role = ?role, marker = ?page.marker))]
pub(super) async fn list(
    pool: &Pool,
    cluster_uuid: &ClusterId,
    scope: &Scope,
    role: Option<&str>,
    page: &PageRequest,
) -> StoreResult<Vec<NodeGroup>> {
    let nullable = sql::nullable(NODEGROUP_SORT_KEYS, &page.sort_key)?;
    let vis = |a: &str| {
        let mut v = format!("{a}.cluster_id = $2");
        if !scope.all_projects {
            v.push_str(&format!(" AND {a}.project_id = $1"));
        } else {
            v.push_str(" AND $1 = $1");
        }
        if role.is_some() {
            v.push_str(&format!(" AND {a}.role = $3"));
        }
        v
    };
    let mut extra = vec![cluster_uuid.to_string()];
    if let Some(r) = role {
        extra.push(r.to_string());
    }
    let rows = sql::keyset_page(
        pool,
        "nodegroup",
        NODEGROUP_COLUMNS,
        "",
        &vis("t"),
        &vis("mk"),
        &scope.project_id,
        &extra,
        page,
        nullable,
    )
    .await?;
    domain(rows)
}

/// A node group of a cluster by uuid, name or integer id.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid, ident = %ident))]
pub(super) async fn get(
    pool: &Pool,
    cluster_uuid: &ClusterId,
    ident: &str,
) -> StoreResult<NodeGroup> {
    let (as_uuid, as_id) = ident_keys(ident);
    let rows: Vec<NodeGroupRow> = pool
        .sql(&BY_IDENT)
        .bind_id(cluster_uuid)
        .bind(as_uuid)
        .bind(ident)
        .bind(as_id)
        .fetch_all(pool)
        .await?;
    match rows.into_iter().next() {
        None => Err(StoreError::NotFound),
        Some(first) => first.into_domain(),
    }
}

/// A node group by uuid, name or integer id of a cluster by uuid or name, with the cluster's
/// owner and labels: one statement ([`OF_CLUSTER`]). The cluster's errors are those of
/// [`sql::one_by_ident`]; the node group's, [`StoreError::NodeGroupNotFound`], also when the
/// group matched first is another project's and `scope` sees only its own.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, cluster = ?cluster_ident, ident = %ident))]
pub(super) async fn get_of_cluster(
    pool: &Pool,
    scope: &Scope,
    cluster_ident: &Ident,
    ident: &str,
) -> StoreResult<NodeGroupOfCluster> {
    let (as_uuid, as_id) = ident_keys(ident);
    let rows: Vec<NodeGroupOfClusterRow> = pool
        .read_shared(
            &OF_CLUSTER[sql::by_ident_index(scope, cluster_ident)],
            vec![
                Arg::Text(scope.project_id.clone()),
                Arg::Text(sql::by_ident_value(cluster_ident)),
                Arg::Text(as_uuid),
                Arg::Text(ident.to_string()),
                Arg::Int(as_id),
            ],
        )
        .await?;
    let Some(row) = rows.into_iter().next() else {
        return Err(StoreError::NotFound);
    };
    if row.cluster.cluster_matches > 1 {
        return Err(StoreError::Ambiguous);
    }
    let cluster = row.cluster.into_domain()?;
    match row.nodegroup {
        Some(ng) => {
            let nodegroup = ng.into_domain()?;
            if scope.all_projects || nodegroup.project_id == scope.project_id {
                Ok(NodeGroupOfCluster { cluster, nodegroup })
            } else {
                Err(StoreError::NodeGroupNotFound(Box::new(cluster)))
            }
        }
        None => Err(StoreError::NodeGroupNotFound(Box::new(cluster))),
    }
}

#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid, nodegroup = %ng.uuid))]
pub(super) async fn insert(
    tx: &mut Tx,
    cluster_uuid: &ClusterId,
    ng: &NewNodeGroup,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql(
        "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, docker_volume_size, labels, \
         flavor_id, image_id, node_addresses, node_count, role, min_node_count, max_node_count, \
         is_default, status, node_labels, node_taints, created_at) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
    )
    .bind_id(&ng.uuid)
    .bind(&ng.name)
    .bind_id(cluster_uuid)
    .bind(&ng.project_id)
    .bind(ng.docker_volume_size)
    .bind(Json(&ng.labels))
    .bind(&ng.flavor_id)
    .bind(&ng.image_id)
    .bind(Json(Vec::<String>::new()))
    .bind(ng.node_count)
    .bind(&ng.role)
    .bind(ng.min_node_count)
    .bind(ng.max_node_count)
    .bind(ng.is_default)
    .bind(ng.status.as_str())
    .bind(Json(&ng.node_labels))
    .bind(Json(&ng.node_taints))
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let tmpl = MachineTemplate::of_new(*cluster_uuid, ng);
    machine_writes::follow_count(tx, &tmpl, ng.node_count, now).await
}

#[tracing::instrument(level = "debug", skip_all, fields(nodegroup = %n.uuid))]
pub(super) async fn update(tx: &mut Tx, n: &NodeGroup, now: DateTime<Utc>) -> StoreResult<()> {
    tx.sql(
        "UPDATE nodegroup SET docker_volume_size = $1, labels = $2, flavor_id = $3, \
         image_id = $4, node_addresses = $5, node_count = $6, min_node_count = $7, \
         max_node_count = $8, stack_id = $9, status = $10, status_reason = $11, \
         version = $12, node_labels = $13, node_taints = $14, updated_at = $15 \
         WHERE id = $16",
    )
    .bind(n.docker_volume_size)
    .bind(Json(&n.labels))
    .bind(&n.flavor_id)
    .bind(&n.image_id)
    .bind(Json(&n.node_addresses))
    .bind(n.node_count)
    .bind(n.min_node_count)
    .bind(n.max_node_count)
    .bind(&n.stack_id)
    .bind(n.status.as_str())
    .bind(&n.status_reason)
    .bind(&n.version)
    .bind(Json(&n.node_labels))
    .bind(Json(&n.node_taints))
    .bind(now)
    .bind(n.id)
    .execute(&mut *tx)
    .await?;
    machine_writes::follow_count(tx, &MachineTemplate::of_nodegroup(n), n.node_count, now).await
}

/// The Kubernetes face's columns of node group `id` (the managed fields; the roll batch when
/// given), and the cluster row touched so its resourceVersion (the object's) moves; stale
/// when the cluster has moved past `resource_version`.
#[tracing::instrument(level = "debug", skip_all, fields(nodegroup_id = id))]
pub(super) async fn update_object(
    tx: &mut Tx,
    (id, cluster, resource_version): (i64, &ClusterId, i64),
    managed_fields: &ManagedFields,
    max_surge: Option<i32>,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let touched = tx
        .sql("UPDATE cluster SET updated_at = $1 WHERE uuid = $2 AND resource_version = $3")
        .bind(now)
        .bind_id(cluster)
        .bind(resource_version)
        .execute(&mut *tx)
        .await?;
    if touched != 1 {
        return Err(StoreError::Stale);
    }
    tx.sql(
        "UPDATE nodegroup SET managed_fields = $1, max_surge = COALESCE($2, max_surge) \
         WHERE id = $3",
    )
    .bind(Json(managed_fields))
    .bind(max_surge)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[tracing::instrument(level = "debug", skip_all, fields(nodegroup_id = id))]
pub(super) async fn delete(tx: &mut Tx, id: i64) -> StoreResult<()> {
    tx.sql("DELETE FROM nodegroup WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
