//! The `cluster` table: reads, the cluster writes of a [`super::Write`] set, and stats.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Tx};
use super::nodegroups;
use super::rows::{
    ClusterGroupsRow, ClusterRow, ClusterSummaryRow, CLUSTER_COLUMNS, CLUSTER_SUMMARY_COLUMNS,
};
use super::sql::{self, ByIdent};
use super::{Dialect, PageRequest, Scope, StoreError, StoreResult};
use crate::domain::cluster::{Cluster, ClusterSummary, ClusterWithGroups, NewCluster, ROLE_MASTER};
use crate::domain::{registry, ClusterGroupId, ClusterId, Ident};

/// Sortable columns of the cluster table, with whether they may be NULL.
pub const CLUSTER_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("project_id", false),
    ("user_id", false),
    ("cluster_template_id", false),
    ("keypair", true),
    ("docker_volume_size", true),
    ("master_flavor_id", true),
    ("flavor_id", true),
    ("stack_id", true),
    ("api_address", true),
    ("status", false),
    ("status_reason", true),
    ("health_status", true),
    ("create_timeout", true),
    ("discovery_url", true),
    ("coe_version", true),
    ("container_version", true),
    ("fixed_network", true),
    ("fixed_subnet", true),
    ("floating_ip_enabled", false),
    ("master_lb_enabled", false),
    ("created_at", false),
    ("updated_at", true),
];

static BY_IDENT: ByIdent = LazyLock::new(|| {
    sql::by_ident_texts("cluster", CLUSTER_COLUMNS, "t.project_id = $1", "$1 = $1")
});

/// What the full representation reads from other tables, as select expressions over cluster
/// row `t`: its node groups' facts in id order (`group_facts`, a JSON array) and its
/// template's labels (`template_labels`). Correlated subqueries on indexed columns, so a read
/// with them stays one statement.
static GROUP_FACTS_SELECT: LazyLock<[String; 2]> =
    LazyLock::new(|| Dialect::both(group_facts_select));

fn group_facts_select(d: Dialect) -> String {
    let facts = match d {
        Dialect::Postgres => {
            "COALESCE((SELECT json_agg(json_build_object('name', g.name, 'role', g.role, \
             'node_count', g.node_count, 'node_addresses', g.node_addresses, 'status', g.status, \
             'status_reason', g.status_reason) ORDER BY g.id) FROM nodegroup g \
             WHERE g.cluster_id = t.uuid), '[]'::json)"
        }
        Dialect::Sqlite => {
            "COALESCE((SELECT json_group_array(json_object('name', g.name, 'role', g.role, \
             'node_count', g.node_count, 'node_addresses', json(g.node_addresses), \
             'status', g.status, 'status_reason', g.status_reason) ORDER BY g.id) \
             FROM nodegroup g WHERE g.cluster_id = t.uuid), '[]')"
        }
    };
    format!(
        "{facts} AS group_facts, (SELECT ct.labels FROM cluster_template ct \
         WHERE ct.uuid = t.cluster_template_id) AS template_labels"
    )
}

/// What the summary reads from the node groups: worker and master node counts.
static COUNTS_SELECT: LazyLock<String> = LazyLock::new(|| {
    let sum = |cmp: &str| {
        format!(
            "COALESCE((SELECT SUM(g.node_count) FROM nodegroup g WHERE g.cluster_id = t.uuid \
             AND g.role {cmp} '{ROLE_MASTER}'), 0)"
        )
    };
    format!(
        "{} AS worker_nodes, {} AS master_nodes",
        sum("<>"),
        sum("=")
    )
});

/// [`BY_IDENT`] with [`group_facts_select`], per dialect.
static BY_IDENT_WITH_GROUPS: LazyLock<[[String; 4]; 2]> = LazyLock::new(|| {
    let texts = |d: Dialect| {
        sql::by_ident_texts_with(
            "cluster",
            CLUSTER_COLUMNS,
            &group_facts_select(d),
            "t.project_id = $1",
            "$1 = $1",
        )
    };
    [texts(Dialect::Postgres), texts(Dialect::Sqlite)]
});

static BY_UUID: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {CLUSTER_COLUMNS} FROM cluster WHERE uuid = $1"));

static IN_PROGRESS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {CLUSTER_COLUMNS} FROM cluster WHERE status IN ('CREATE_IN_PROGRESS', \
         'UPDATE_IN_PROGRESS', 'DELETE_IN_PROGRESS', 'ROLLBACK_IN_PROGRESS') AND id > $1 \
         ORDER BY id LIMIT $2"
    )
});

/// Row `id` at `version`, shared-locked until the transaction ends.
static GUARD: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        format!(
            "SELECT id FROM cluster WHERE id = $1 AND version = $2{}",
            d.share_rows()
        )
    })
});

fn domain(rows: Vec<ClusterRow>) -> StoreResult<Vec<Cluster>> {
    rows.into_iter().map(ClusterRow::into_domain).collect()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, ident = ?ident))]
pub(super) async fn get(pool: &Pool, scope: &Scope, ident: &Ident) -> StoreResult<Cluster> {
    sql::one_by_ident::<ClusterRow>(pool, &BY_IDENT, scope, ident)
        .await?
        .into_domain()
}

/// A cluster with its node groups' facts and its template's labels: one statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, ident = ?ident))]
pub(super) async fn get_with_groups(
    pool: &Pool,
    scope: &Scope,
    ident: &Ident,
) -> StoreResult<ClusterWithGroups> {
    let texts = match pool.dialect() {
        Dialect::Postgres => &BY_IDENT_WITH_GROUPS[0],
        Dialect::Sqlite => &BY_IDENT_WITH_GROUPS[1],
    };
    sql::one_by_ident::<ClusterGroupsRow>(pool, texts, scope, ident)
        .await?
        .into_domain()
}

#[tracing::instrument(level = "debug", skip_all, fields(cluster = %uuid))]
pub(super) async fn find(pool: &Pool, uuid: &ClusterId) -> StoreResult<Option<Cluster>> {
    let row: Option<ClusterRow> = pool
        .sql(&BY_UUID)
        .bind_id(uuid)
        .fetch_optional(pool)
        .await?;
    row.map(ClusterRow::into_domain).transpose()
}

#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn by_uuids(pool: &Pool, uuids: &[ClusterId]) -> StoreResult<Vec<Cluster>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT {CLUSTER_COLUMNS} FROM cluster WHERE uuid IN ({})",
        sql::placeholders(1, uuids.len())
    );
    let q = pool.sql(&text).bind_ids(uuids);
    domain(q.fetch_all(pool).await?)
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, marker = ?page.marker))]
pub(super) async fn list(
    pool: &Pool,
    scope: &Scope,
    page: &PageRequest,
) -> StoreResult<Vec<Cluster>> {
    domain(page_of(pool, scope, &[], page, CLUSTER_COLUMNS, "").await?)
}

/// A page of cluster summaries (the summary columns and the node counts): one statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, marker = ?page.marker))]
pub(super) async fn list_summaries(
    pool: &Pool,
    scope: &Scope,
    page: &PageRequest,
) -> StoreResult<Vec<ClusterSummary>> {
    let rows: Vec<ClusterSummaryRow> = page_of(
        pool,
        scope,
        &[],
        page,
        CLUSTER_SUMMARY_COLUMNS,
        &COUNTS_SELECT,
    )
    .await?;
    rows.into_iter()
        .map(ClusterSummaryRow::into_domain)
        .collect()
}

/// A page of clusters with their node groups' facts and templates' labels: one statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, marker = ?page.marker))]
pub(super) async fn list_with_groups(
    pool: &Pool,
    scope: &Scope,
    page: &PageRequest,
) -> StoreResult<Vec<ClusterWithGroups>> {
    let select = pool.dialect().pick(&GROUP_FACTS_SELECT);
    let rows: Vec<ClusterGroupsRow> =
        page_of(pool, scope, &[], page, CLUSTER_COLUMNS, select).await?;
    rows.into_iter()
        .map(ClusterGroupsRow::into_domain)
        .collect()
}

/// [`list_summaries`] of the caller's project's clusters and those the cluster groups
/// `through` reach (their accepted members and selector matches): one statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, groups = through.len(), marker = ?page.marker))]
pub(super) async fn list_summaries_through(
    pool: &Pool,
    scope: &Scope,
    through: &[ClusterGroupId],
    page: &PageRequest,
) -> StoreResult<Vec<ClusterSummary>> {
    let rows: Vec<ClusterSummaryRow> = page_of(
        pool,
        scope,
        through,
        page,
        CLUSTER_SUMMARY_COLUMNS,
        &COUNTS_SELECT,
    )
    .await?;
    rows.into_iter()
        .map(ClusterSummaryRow::into_domain)
        .collect()
}

/// [`list_with_groups`] of the caller's project's clusters and those the cluster groups
/// `through` reach: one statement.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, groups = through.len(), marker = ?page.marker))]
pub(super) async fn list_with_groups_through(
    pool: &Pool,
    scope: &Scope,
    through: &[ClusterGroupId],
    page: &PageRequest,
) -> StoreResult<Vec<ClusterWithGroups>> {
    let select = pool.dialect().pick(&GROUP_FACTS_SELECT);
    let rows: Vec<ClusterGroupsRow> =
        page_of(pool, scope, through, page, CLUSTER_COLUMNS, select).await?;
    rows.into_iter()
        .map(ClusterGroupsRow::into_domain)
        .collect()
}

/// The visibility of a cluster row over `alias` for a caller of project `$1` reaching the
/// groups bound as `$2..$(n+1)`: its own project's rows, or a row that is an accepted member
/// or a selector match of one of those groups. Written as `EXISTS` probes by cluster, so that
/// PostgreSQL hashes the bound groups' clusters once (a bitmap read of
/// `uniq_cluster_group_member0group_id0cluster_id` by group) and walks `cluster_pkey` in the
/// page's order: with 100,000 clusters, 1,000 groups and 10,000 bindings, a 1,000-item page
/// in id order reads in about 10 ms (an `IN (SELECT ...)` form scanned every membership and
/// took five times as long); by name it walks `ix_cluster_name_id` the same way. A sort on
/// another column sorts what the caller reaches.
fn through_visible(alias: &str, groups: usize) -> String {
    let list = sql::placeholders(2, groups);
    format!(
        "({alias}.project_id = $1 OR EXISTS (SELECT 1 FROM cluster_group_member gm WHERE \
         gm.cluster_id = {alias}.uuid AND gm.state = 'Accepted' AND gm.group_id IN ({list})) \
         OR EXISTS (SELECT 1 FROM cluster_group_match gx WHERE gx.cluster_id = {alias}.uuid \
         AND gx.group_id IN ({list})))"
    )
}

/// A keyset page of the clusters `scope` sees, and of those the groups `through` reach (none
/// for an administrator's every-project scope, which sees them already).
async fn page_of<R: sql::Row>(
    pool: &Pool,
    scope: &Scope,
    through: &[ClusterGroupId],
    page: &PageRequest,
    columns: &str,
    select_extra: &str,
) -> StoreResult<Vec<R>> {
    let nullable = sql::nullable(CLUSTER_SORT_KEYS, &page.sort_key)?;
    let shared = !scope.all_projects && !through.is_empty();
    let vis = |alias: &str| {
        if shared {
            through_visible(alias, through.len())
        } else {
            sql::project_visible(scope.all_projects, alias)
        }
    };
    let extra: Vec<String> = if shared {
        through.iter().map(|g| g.to_string()).collect()
    } else {
        Vec::new()
    };
    sql::keyset_page(
        pool,
        "cluster",
        columns,
        select_extra,
        &vis("t"),
        &vis("mk"),
        &scope.project_id,
        &extra,
        page,
        nullable,
    )
    .await
}

#[tracing::instrument(level = "debug", skip_all, fields(after_id = after_id, limit = limit))]
pub(super) async fn in_progress(
    pool: &Pool,
    after_id: i64,
    limit: u32,
) -> StoreResult<Vec<Cluster>> {
    let rows = pool
        .sql(&IN_PROGRESS)
        .bind(after_id)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    domain(rows)
}

/// Number of clusters and total node count (masters included), of a project or everywhere.
#[tracing::instrument(level = "debug", skip_all, fields(project = ?project_id))]
pub(super) async fn stats(pool: &Pool, project_id: Option<&str>) -> StoreResult<(i64, i64)> {
    let (clusters, nodes): (i64, Option<i64>) = match project_id {
        Some(p) => {
            pool.sql(
                "SELECT (SELECT COUNT(*) FROM cluster WHERE project_id = $1), \
                 (SELECT CAST(SUM(node_count) AS BIGINT) FROM nodegroup WHERE project_id = $1)",
            )
            .bind(p)
            .fetch_one(pool)
            .await?
        }
        None => {
            pool.sql(
                "SELECT (SELECT COUNT(*) FROM cluster), \
                 (SELECT CAST(SUM(node_count) AS BIGINT) FROM nodegroup)",
            )
            .fetch_one(pool)
            .await?
        }
    };
    Ok((clusters, nodes.unwrap_or(0)))
}

/// Inserts the cluster (with its `status`: in progress, or complete for a registered one) and
/// its node groups.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %c.uuid))]
pub(super) async fn insert(tx: &mut Tx, c: &NewCluster, now: DateTime<Utc>) -> StoreResult<()> {
    let registry_name = if c.derive_registry_name {
        free_registry_name(tx, c).await?
    } else {
        c.registry.name.clone()
    };
    tx.sql(
        "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, \
         keypair, docker_volume_size, labels, master_flavor_id, flavor_id, \
         create_timeout, discovery_url, fixed_network, fixed_subnet, \
         floating_ip_enabled, master_lb_enabled, version, created_at, status, api_address, \
         registry_labels, registry_annotations, generation, server_endpoints, ca_bundle, \
         auth_info, registry_finalizers, registry_owner_references, registry_conditions, \
         registry_generate_name, registry_managed_fields, registry_name) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, \
         $13, $14, $15, $16, 0, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, \
         $30, $31)",
    )
    .bind_id(&c.uuid)
    .bind(&c.project_id)
    .bind(&c.user_id)
    .bind(c.name.as_str())
    .bind_id(&c.cluster_template_id)
    .bind(&c.keypair)
    .bind(c.docker_volume_size)
    .bind(Json(&c.labels))
    .bind(&c.master_flavor_id)
    .bind(&c.flavor_id)
    .bind(c.create_timeout)
    .bind(&c.discovery_url)
    .bind(&c.fixed_network)
    .bind(&c.fixed_subnet)
    .bind(c.floating_ip_enabled)
    .bind(c.master_lb_enabled)
    .bind(now)
    .bind(c.status.as_str())
    .bind(c.registry.api_address())
    .bind(Json(&c.registry.labels))
    .bind(Json(&c.registry.annotations))
    .bind(c.registry.generation)
    .bind(Json(&c.registry.server_endpoints))
    .bind(&c.registry.ca_bundle)
    .bind(Json(&c.registry.auth_info))
    .bind(Json(&c.registry.finalizers))
    .bind(Json(&c.registry.owner_references))
    .bind(Json(&c.registry.conditions))
    .bind(&c.registry.generate_name)
    .bind(Json(&c.registry.managed_fields))
    .bind(registry_name)
    .execute(&mut *tx)
    .await?;
    for ng in &c.nodegroups {
        nodegroups::insert(tx, &c.uuid, ng, now).await?;
    }
    Ok(())
}

/// Candidates tried per statement.
const NAME_BATCH: u32 = 8;

/// The first of the cluster's registry name candidates that no cluster of its project holds
/// (the set's transaction holds the cluster writes lock on PostgreSQL, and SQLite has one
/// writer: nobody takes it before the insert).
async fn free_registry_name(tx: &mut Tx, c: &NewCluster) -> StoreResult<String> {
    let mut first = 0u32;
    loop {
        let candidates: Vec<String> = (first..first + NAME_BATCH)
            .map(|a| registry::name_candidate(c.name.as_str(), &c.uuid.0, a))
            .collect();
        let text = format!(
            "SELECT registry_name FROM cluster WHERE project_id = $1 AND registry_name IN ({})",
            sql::placeholders(2, candidates.len())
        );
        let taken: Vec<(String,)> = tx
            .sql(&text)
            .bind(c.project_id.as_str())
            .bind_all(candidates.iter().map(String::as_str))
            .fetch_all(&mut *tx)
            .await?;
        if let Some(free) = candidates
            .into_iter()
            .find(|n| !taken.iter().any(|(t,)| t == n))
        {
            return Ok(free);
        }
        first += NAME_BATCH;
    }
}

/// Writes every mutable column; [`StoreError::Stale`] unless the row is still at
/// `c.version`.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %c.uuid, version = c.version))]
pub(super) async fn update(tx: &mut Tx, c: &Cluster, now: DateTime<Utc>) -> StoreResult<()> {
    let done = tx
        .sql(
            "UPDATE cluster SET name = $1, keypair = $2, docker_volume_size = $3, \
             labels = $4, master_flavor_id = $5, flavor_id = $6, stack_id = $7, \
             api_address = $8, status = $9, status_reason = $10, health_status = $11, \
             health_status_reason = $12, create_timeout = $13, discovery_url = $14, \
             coe_version = $15, container_version = $16, fixed_network = $17, \
             fixed_subnet = $18, floating_ip_enabled = $19, master_lb_enabled = $20, \
             cluster_template_id = $21, updated_at = $22, version = version + 1, \
             registry_labels = $25, registry_annotations = $26, generation = $27, \
             server_endpoints = $28, ca_bundle = $29, auth_info = $30, \
             registry_finalizers = $31, registry_owner_references = $32, \
             deletion_timestamp = $33, deletion_grace_period_seconds = $34, \
             registry_conditions = $35, registry_managed_fields = $36 \
             WHERE id = $23 AND version = $24",
        )
        .bind(&c.name)
        .bind(&c.keypair)
        .bind(c.docker_volume_size)
        .bind(Json(&c.labels))
        .bind(&c.master_flavor_id)
        .bind(&c.flavor_id)
        .bind(&c.stack_id)
        .bind(&c.api_address)
        .bind(c.status.as_str())
        .bind(&c.status_reason)
        .bind(c.health_status.map(|h| h.as_str()))
        .bind(Json(&c.health_status_reason))
        .bind(c.create_timeout)
        .bind(&c.discovery_url)
        .bind(&c.coe_version)
        .bind(&c.container_version)
        .bind(&c.fixed_network)
        .bind(&c.fixed_subnet)
        .bind(c.floating_ip_enabled)
        .bind(c.master_lb_enabled)
        .bind_id(&c.cluster_template_id)
        .bind(now)
        .bind(c.id)
        .bind(c.version)
        .bind(Json(&c.registry.labels))
        .bind(Json(&c.registry.annotations))
        .bind(c.registry.generation)
        .bind(Json(&c.registry.server_endpoints))
        .bind(&c.registry.ca_bundle)
        .bind(Json(&c.registry.auth_info))
        .bind(Json(&c.registry.finalizers))
        .bind(Json(&c.registry.owner_references))
        .bind(c.registry.deletion_timestamp)
        .bind(c.registry.deletion_grace_period_seconds)
        .bind(Json(&c.registry.conditions))
        .bind(Json(&c.registry.managed_fields))
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::Stale);
    }
    Ok(())
}

/// Deletes the cluster with its key pairs and node groups.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %uuid))]
pub(super) async fn delete(tx: &mut Tx, uuid: &ClusterId) -> StoreResult<()> {
    // The row first: its DELETED change-log line (written before the row goes) keeps the
    // node count and CA of the object as it was.
    let deleted = tx
        .sql("DELETE FROM cluster WHERE uuid = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    // Gone already: another conductor saw the same end first, and its event is written.
    if deleted == 0 {
        return Err(StoreError::Stale);
    }
    tx.sql("DELETE FROM x509keypair WHERE cluster_uuid = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    tx.sql("DELETE FROM nodegroup WHERE cluster_id = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// [`StoreError::Stale`] unless the cluster is still at `version`; its row stays
/// shared-locked until the transaction ends.
#[tracing::instrument(level = "debug", skip_all, fields(cluster_id = id, version = version))]
pub(super) async fn guard(tx: &mut Tx, id: i64, version: i64) -> StoreResult<()> {
    let found: Option<i64> = tx
        .sql(tx.dialect().pick(&GUARD))
        .bind(id)
        .bind(version)
        .scalar_optional(&mut *tx)
        .await?;
    found.map(|_| ()).ok_or(StoreError::Stale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SortDir;

    /// A `tools/bench/*.sql` anchor's statement: comments dropped, whitespace collapsed.
    fn anchor(file: &str) -> String {
        let path = format!("{}/tools/bench/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let statement: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect();
        collapse(statement.join(" ").trim_end().trim_end_matches(';'))
    }

    fn collapse(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// A statement of the service as the bench runs it for project `bench`: `$1` the project,
    /// then each further placeholder in order.
    fn as_run(text: &str, values: &[&str]) -> String {
        let mut text = text.replace("$1", "'bench'");
        for (i, v) in values.iter().enumerate() {
            text = text.replace(&format!("${}", i + 2), v);
        }
        collapse(&text)
    }

    fn first_page() -> PageRequest {
        PageRequest {
            limit: 100,
            marker: None,
            sort_key: "id".into(),
            sort_dir: SortDir::Asc,
        }
    }

    fn page_text(columns: &str, select_extra: &str) -> String {
        let vis = |alias: &str| sql::project_visible(false, alias);
        sql::keyset_page_text(
            "cluster",
            columns,
            select_extra,
            &vis("t"),
            &vis("mk"),
            0,
            &first_page(),
            false,
        )
    }

    /// The bench's anchors are the statements the service runs, so that a change to one is a
    /// change to the other.
    #[test]
    fn the_bench_anchors_are_the_services_own_statements() {
        assert_eq!(
            anchor("list_page.sql"),
            as_run(
                &page_text(CLUSTER_SUMMARY_COLUMNS, &COUNTS_SELECT),
                &["100"]
            )
        );
        assert_eq!(
            anchor("list_detail_page.sql"),
            as_run(
                &page_text(CLUSTER_COLUMNS, &GROUP_FACTS_SELECT[0]),
                &["100"]
            )
        );
        let uuid = Ident::Uuid(uuid::Uuid::nil());
        let scope = Scope {
            project_id: "bench".into(),
            all_projects: false,
        };
        let get = &BY_IDENT_WITH_GROUPS[0][sql::by_ident_index(&scope, &uuid)];
        assert_eq!(anchor("get_cluster.sql"), as_run(get, &[":uuid"]));
    }
}
