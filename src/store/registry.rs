//! The cluster registry's reads: pages of clusters in (project, registry name) order with what
//! the registry view needs from other tables in the same statement, one cluster by registry
//! name, and the change log (`cluster_change`) that watches follow, each line with the object
//! as it was at the change.

use std::sync::LazyLock;

use super::db::{Pool, Tx};
use super::rows::{ClusterRow, CLUSTER_COLUMNS};
use super::{Dialect, StoreResult};
use crate::domain::cluster::Cluster;
use crate::domain::{ClusterGroupId, ClusterId};

/// The channel the `cluster_changed` trigger notifies and registry watches listen on.
pub(crate) const REGISTRY_CHANNEL: &str = "fleetyard_registry";

/// The advisory lock every write set that touches a cluster row takes first (PostgreSQL): the
/// resourceVersion counter then moves in commit order, so a watch that has read up to N never
/// sees a later commit with a smaller number.
const CLUSTER_WRITES_LOCK: i64 = 0x466c_6565_7479_6172;

pub(super) async fn serialize_cluster_writes(tx: &mut Tx) -> StoreResult<()> {
    if tx.dialect() == Dialect::Postgres {
        tx.sql("SELECT pg_advisory_xact_lock($1)::text")
            .bind(CLUSTER_WRITES_LOCK)
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// How many items remain after a list page: counted, or estimated past a cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemCount {
    Exact(i64),
    Estimate(i64),
}

impl ItemCount {
    pub fn value(self) -> i64 {
        match self {
            ItemCount::Exact(n) | ItemCount::Estimate(n) => n,
        }
    }
}

/// A cluster as the registry shows it: the row, its template's driver and its node count.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryEntry {
    pub cluster: Cluster,
    pub driver: String,
    pub node_count: i64,
    /// The CA a client verifies the cluster with: a registered cluster's bundle, else the
    /// cluster's own CA certificate.
    pub ca_pem: Option<String>,
    /// When the health prober last reached a verdict on the cluster, and when that verdict
    /// last changed.
    pub last_heartbeat: Option<chrono::DateTime<chrono::Utc>>,
    pub last_transition: Option<chrono::DateTime<chrono::Utc>>,
}

/// Where a page starts and how long it is.
#[derive(Debug, Clone, Default)]
pub struct RegistryPage {
    /// One project's clusters, or every project's.
    pub project: Option<String>,
    /// The (project, registry name) the previous page ended at.
    pub after: Option<(String, String)>,
    pub limit: u32,
    /// A caller's view through cluster groups: its own project's clusters (named first) and
    /// those the groups reach (accepted members and selector matches). Across namespaces the
    /// walk keeps to the projects the groups reach ([`reached_projects`]); each row it reads
    /// is probed on `ix_cluster_group_member_cluster_id` and `ix_cluster_group_match_cluster_id`
    /// (one `EXISTS` over both, which the planner cannot turn into a hash of every reached
    /// cluster: a page reads what it shows, not all the groups reach).
    pub shared: Option<(String, Vec<ClusterGroupId>)>,
}

/// What a line of the change log records (the triggers of the registry migration write it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    /// The watch event type: `ADDED`, `MODIFIED` or `DELETED`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }

    pub(super) fn parse(text: &str) -> Option<ChangeKind> {
        match text {
            "ADDED" => Some(ChangeKind::Added),
            "MODIFIED" => Some(ChangeKind::Modified),
            "DELETED" => Some(ChangeKind::Deleted),
            _ => None,
        }
    }
}

/// One line of the change log.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterChange {
    pub resource_version: i64,
    pub change: ChangeKind,
    pub cluster_uuid: ClusterId,
    pub project_id: String,
    pub name: String,
    pub registry_labels: sqlx::types::Json<std::collections::BTreeMap<String, String>>,
    pub registry_annotations: sqlx::types::Json<std::collections::BTreeMap<String, String>>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// The labels before the change (a `MODIFIED` or `DELETED` line written since they are
    /// kept): what a label-selected watch decides an object's leaving or entering by.
    pub prev_registry_labels: Option<sqlx::types::Json<std::collections::BTreeMap<String, String>>>,
    /// The object's deletion timestamp at the change.
    pub deletion_timestamp: Option<chrono::DateTime<chrono::Utc>>,
    /// The object as it was at the change (a `DELETED` line: its last full state), with its
    /// `resource_version` set to the line's; `None` for lines written before the log kept
    /// objects.
    pub object: Option<Box<RegistryEntry>>,
}

/// A change log line as stored.
#[derive(sqlx::FromRow)]
struct ChangeRow {
    resource_version: i64,
    change: String,
    cluster_uuid: String,
    project_id: String,
    name: String,
    registry_labels: sqlx::types::Json<std::collections::BTreeMap<String, String>>,
    registry_annotations: sqlx::types::Json<std::collections::BTreeMap<String, String>>,
    created_at: chrono::DateTime<chrono::Utc>,
    prev_registry_labels: Option<sqlx::types::Json<std::collections::BTreeMap<String, String>>>,
    deletion_timestamp: Option<chrono::DateTime<chrono::Utc>>,
    object: Option<sqlx::types::Json<serde_json::Value>>,
}

/// A cluster row with what the registry view needs from other tables; also the snapshot a
/// change-log line keeps (`cluster_change.object`, written by the `cluster_snapshot` function
/// on PostgreSQL and view on SQLite, keyed by these names).
#[derive(sqlx::FromRow, serde::Deserialize)]
struct EntryRow {
    #[sqlx(flatten)]
    #[serde(flatten)]
    cluster: ClusterRow,
    driver: Option<String>,
    node_count: Option<i64>,
    ca_pem: Option<String>,
    last_heartbeat: Option<chrono::DateTime<chrono::Utc>>,
    last_transition: Option<chrono::DateTime<chrono::Utc>>,
}

impl EntryRow {
    fn into_entry(self) -> StoreResult<RegistryEntry> {
        Ok(RegistryEntry {
            cluster: self.cluster.into_domain()?,
            driver: self.driver.unwrap_or_default(),
            node_count: self.node_count.unwrap_or(0),
            ca_pem: self.ca_pem,
            last_heartbeat: self.last_heartbeat,
            last_transition: self.last_transition,
        })
    }
}

/// `c.`-qualified cluster columns, the template's driver and the node count.
static ENTRY_SELECT: LazyLock<String> = LazyLock::new(|| {
    let cols = CLUSTER_COLUMNS
        .split(',')
        .map(|c| format!("c.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT {cols}, t.driver AS driver, \
         (SELECT CAST(SUM(n.node_count) AS BIGINT) FROM nodegroup n WHERE n.cluster_id = c.uuid) \
         AS node_count, COALESCE(c.ca_bundle, (SELECT k.certificate FROM x509keypair k \
         WHERE k.cluster_uuid = c.uuid AND k.kind = 'ca' ORDER BY k.id DESC LIMIT 1)) AS ca_pem, \
         p.last_probe_at AS last_heartbeat, p.last_transition_at AS last_transition \
         FROM cluster c LEFT JOIN cluster_template t ON t.uuid = c.cluster_template_id \
         LEFT JOIN cluster_health_probe p ON p.cluster_uuid = c.uuid"
    )
});

fn entries(rows: Vec<EntryRow>) -> StoreResult<Vec<RegistryEntry>> {
    rows.into_iter().map(EntryRow::into_entry).collect()
}

/// The projects a caller of project `own` reaches through the groups `list` (placeholders):
/// its own, its bound groups' accepted members' (`ix_cluster_group_member_accepted`, from the
/// index alone) and the groups' own (a group's selector matches only its own project's
/// clusters). A page across namespaces walks only these projects' clusters in
/// (project, name) order: on PostgreSQL as `= ANY(ARRAY(...))`, an index condition on the
/// leading column that keeps the index's order (an `IN (SELECT ...)` would be a join and a
/// sort), so the first page of a member whose groups reach 10 of 100 projects reads about as
/// many rows as it shows instead of every cluster of the projects before them.
fn reached_projects(dialect: Dialect, own: &str, list: &str) -> String {
    let projects = format!(
        "SELECT CAST({own} AS VARCHAR(255)) UNION SELECT gm.cluster_project_id \
         FROM cluster_group_member gm WHERE gm.state = 'Accepted' AND gm.group_id IN ({list}) \
         UNION SELECT g.project_id FROM cluster_group g WHERE g.uuid IN ({list})"
    );
    match dialect {
        Dialect::Postgres => format!("c.project_id = ANY(ARRAY({projects}))"),
        Dialect::Sqlite => format!("c.project_id IN ({projects})"),
    }
}

/// One page in (project, registry name) order.
#[tracing::instrument(level = "debug", skip_all, fields(project = ?page.project, limit = page.limit))]
pub(super) async fn page(pool: &Pool, page: &RegistryPage) -> StoreResult<Vec<RegistryEntry>> {
    let mut text = ENTRY_SELECT.clone();
    let mut conds = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    if page.project.is_some() {
        conds.push(format!("c.project_id = {}", next()));
    }
    if page.after.is_some() {
        let (p, m) = (next(), next());
        conds.push(format!("(c.project_id, c.registry_name) > ({p}, {m})"));
    }
    if let Some((_, groups)) = &page.shared {
        let own = next();
        if groups.is_empty() {
            conds.push(format!("c.project_id = {own}"));
        } else {
            let list = (0..groups.len())
                .map(|_| next())
                .collect::<Vec<_>>()
                .join(", ");
            if page.project.is_none() {
                conds.push(reached_projects(pool.dialect(), &own, &list));
            }
            conds.push(format!(
                "(c.project_id = {own} OR EXISTS (SELECT 1 FROM cluster_group_member gm \
                 WHERE gm.cluster_id = c.uuid AND gm.state = 'Accepted' AND gm.group_id IN \
                 ({list}) UNION ALL SELECT 1 FROM cluster_group_match gx \
                 WHERE gx.cluster_id = c.uuid AND gx.group_id IN ({list})))"
            ));
        }
    }
    if !conds.is_empty() {
        text.push_str(" WHERE ");
        text.push_str(&conds.join(" AND "));
    }
    let limit = next();
    text.push_str(&format!(
        " ORDER BY c.project_id, c.registry_name LIMIT {limit}"
    ));
    let mut q = pool.sql(&text);
    if let Some(p) = &page.project {
        q = q.bind(p.as_str());
    }
    if let Some((p, m)) = &page.after {
        q = q.bind(p.as_str()).bind(m.as_str());
    }
    if let Some((own, groups)) = &page.shared {
        q = q.bind(own.as_str()).bind_ids(groups);
    }
    let rows = q.bind(i64::from(page.limit)).fetch_all(pool).await?;
    entries(rows)
}

/// The `WHERE` of a key range: one project's clusters (or every project's) that sort after a
/// (project, registry name), numbered from `$first`; the binds in order. `name` is the
/// expression of the registry name in the table read.
fn range_conds<'a>(
    name: &str,
    project: Option<&'a str>,
    after: Option<(&'a str, &'a str)>,
    first: usize,
) -> (Vec<String>, Vec<&'a str>) {
    let mut conds = Vec::new();
    let mut binds = Vec::new();
    let mut n = first;
    if let Some(p) = project {
        conds.push(format!("project_id = ${n}"));
        binds.push(p);
        n += 1;
    }
    if let Some((p, m)) = after {
        conds.push(format!("(project_id, {name}) > (${n}, ${})", n + 1));
        binds.push(p);
        binds.push(m);
    }
    (conds, binds)
}

/// How many clusters of `project` (of every project when None) sort after `after` in
/// (project, registry name) order (a list page's `remainingItemCount`): exact up to `cap`.
/// Past it, PostgreSQL gives the planner's estimate of the range (never less than `cap + 1`),
/// so a page of a large fleet does not count every cluster after it; `ListMeta` allows an
/// estimate there. SQLite, which keeps no such estimate, always counts.
#[tracing::instrument(level = "debug", skip_all, fields(project = ?project))]
pub(super) async fn count_after(
    pool: &Pool,
    project: Option<&str>,
    after: Option<(&str, &str)>,
    cap: u32,
) -> StoreResult<ItemCount> {
    let (conds, binds) = range_conds("registry_name", project, after, 1);
    let mut range = "SELECT 1 FROM cluster".to_string();
    if !conds.is_empty() {
        range.push_str(" WHERE ");
        range.push_str(&conds.join(" AND "));
    }
    if pool.dialect() == Dialect::Sqlite {
        let text = format!("SELECT COUNT(*) FROM ({range}) AS r");
        let n: i64 = pool.sql(&text).bind_all(binds).scalar_one(pool).await?;
        return Ok(ItemCount::Exact(n));
    }
    let capped = format!(
        "SELECT COUNT(*) FROM ({range} LIMIT {}) AS r",
        u64::from(cap) + 1
    );
    let n: i64 = pool
        .sql(&capped)
        .bind_all(binds.iter().copied())
        .scalar_one(pool)
        .await?;
    if n <= i64::from(cap) {
        return Ok(ItemCount::Exact(n));
    }
    // The plan's first line names the rows the planner expects: `… (cost=… rows=N width=…)`.
    let plan: Vec<String> = pool
        .sql(&format!("EXPLAIN {range}"))
        .bind_all(binds)
        .scalar_all(pool)
        .await?;
    let estimate = plan
        .first()
        .and_then(|l| l.split(" rows=").nth(1))
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse::<i64>().ok())
        .unwrap_or(0);
    Ok(ItemCount::Estimate(estimate.max(n)))
}

/// The first change after resourceVersion `since` to a cluster of `project` (of any project
/// when None) whose (project, registry name) sorts after `after`: what makes a later page of a
/// list read at `since` inconsistent. None when nothing there changed. A change-log line's
/// registry name is its snapshot's (a line written before snapshots were kept has the
/// cluster's name, which was its registry name for every name the registry could show).
#[tracing::instrument(level = "debug", skip_all, fields(since = since, project = ?project))]
pub(super) async fn first_change_after(
    pool: &Pool,
    since: i64,
    project: Option<&str>,
    after: Option<(&str, &str)>,
) -> StoreResult<Option<i64>> {
    let name = match pool.dialect() {
        Dialect::Postgres => "COALESCE(object->>'registry_name', name)",
        Dialect::Sqlite => "COALESCE(json_extract(object, '$.registry_name'), name)",
    };
    let (conds, binds) = range_conds(name, project, after, 2);
    let mut text =
        "SELECT MIN(resource_version) FROM cluster_change WHERE resource_version > $1".to_string();
    for c in conds {
        text.push_str(" AND ");
        text.push_str(&c);
    }
    let first: Option<i64> = pool
        .sql(&text)
        .bind(since)
        .bind_all(binds)
        .scalar_one(pool)
        .await?;
    Ok(first)
}

static BY_NAME: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} WHERE c.project_id = $1 AND c.registry_name = $2",
        *ENTRY_SELECT
    )
});

/// The cluster of `project` whose registry name is `name`.
#[tracing::instrument(level = "debug", skip_all, fields(project = %project, name = %name))]
pub(super) async fn get(
    pool: &Pool,
    project: &str,
    name: &str,
) -> StoreResult<Option<RegistryEntry>> {
    let row: Option<EntryRow> = pool
        .sql(&BY_NAME)
        .bind(project)
        .bind(name)
        .fetch_optional(pool)
        .await?;
    row.map(EntryRow::into_entry).transpose()
}

/// Entries of the given clusters (watch events render the rows their changes name).
#[tracing::instrument(level = "debug", skip_all, fields(count = uuids.len()))]
pub(super) async fn by_uuids(pool: &Pool, uuids: &[ClusterId]) -> StoreResult<Vec<RegistryEntry>> {
    if uuids.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "{} WHERE c.uuid IN ({})",
        *ENTRY_SELECT,
        super::sql::placeholders(1, uuids.len())
    );
    let rows = pool.sql(&text).bind_ids(uuids).fetch_all(pool).await?;
    entries(rows)
}

const CHANGE_COLUMNS: &str = "resource_version, change, cluster_uuid, project_id, name, \
    registry_labels, registry_annotations, created_at, prev_registry_labels, deletion_timestamp, \
    object";

static CHANGES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {CHANGE_COLUMNS} FROM cluster_change WHERE resource_version > $1 \
         ORDER BY resource_version LIMIT $2"
    )
});

/// Changes after `after`, oldest first.
#[tracing::instrument(level = "debug", skip_all, fields(after = after, limit = limit))]
pub(super) async fn changes(
    pool: &Pool,
    after: i64,
    limit: u32,
) -> StoreResult<Vec<ClusterChange>> {
    let rows: Vec<ChangeRow> = pool
        .sql(&CHANGES)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|r| {
            let change = ChangeKind::parse(&r.change).ok_or_else(|| {
                super::StoreError::Corrupt(format!("cluster_change.change {}", r.change))
            })?;
            let object = r
                .object
                .and_then(|o| snapshot(r.resource_version, o.0))
                .map(Box::new);
            Ok(ClusterChange {
                object,
                resource_version: r.resource_version,
                change,
                cluster_uuid: super::rows::uuid_of("cluster_change", &r.cluster_uuid)?,
                project_id: r.project_id,
                name: r.name,
                registry_labels: r.registry_labels,
                registry_annotations: r.registry_annotations,
                created_at: r.created_at,
                prev_registry_labels: r.prev_registry_labels,
                deletion_timestamp: r.deletion_timestamp,
            })
        })
        .collect()
}

/// The object a change-log line kept, at the line's resourceVersion (`None`, and a warning,
/// when it does not decode: the line is then shown as lines without a snapshot are).
fn snapshot(resource_version: i64, object: serde_json::Value) -> Option<RegistryEntry> {
    let decoded = serde_json::from_value::<EntryRow>(object)
        .map_err(|e| super::StoreError::Corrupt(e.to_string()))
        .and_then(EntryRow::into_entry);
    match decoded {
        Ok(mut entry) => {
            entry.cluster.registry.resource_version = resource_version;
            Some(entry)
        }
        Err(e) => {
            tracing::warn!(resource_version, error = %e, "cluster_change.object does not decode");
            None
        }
    }
}

/// The projects that have clusters, in order (the `(project_id, name)` index read once per
/// project), at most `limit`.
#[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
pub(super) async fn projects(pool: &Pool, limit: u32) -> StoreResult<Vec<String>> {
    let rows: Vec<(String,)> = pool
        .sql("SELECT DISTINCT project_id FROM cluster ORDER BY project_id LIMIT $1")
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(|(p,)| p).collect())
}

/// The latest resourceVersion and the highest one pruned from the log.
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn bounds(pool: &Pool) -> StoreResult<(i64, i64)> {
    let (latest, pruned): (i64, i64) = pool
        .sql(
            "SELECT COALESCE((SELECT MAX(rv) FROM (\
             SELECT MAX(resource_version) AS rv FROM cluster_change UNION ALL \
             SELECT MAX(resource_version) AS rv FROM machine_change UNION ALL \
             SELECT MAX(resource_version) AS rv FROM cluster_group_change) AS logs), \
             (SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0), \
             COALESCE((SELECT pruned_through FROM cluster_change_horizon WHERE id = 1), 0)",
        )
        .fetch_one(pool)
        .await?;
    Ok((latest, pruned))
}

/// The change logs, which share the registry's counter and horizon: clusters', machines',
/// and cluster groups' and bindings'.
const LOGS: [&str; 3] = ["cluster_change", "machine_change", "cluster_group_change"];

static PRUNE: LazyLock<[String; 2]> = LazyLock::new(|| {
    Dialect::both(|d| {
        let cutoff = match d {
            Dialect::Postgres => "now() - make_interval(secs => $1)".to_string(),
            Dialect::Sqlite => {
                "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || $1 || ' seconds')".to_string()
            }
        };
        let each = |f: &dyn Fn(&str) -> String| {
            LOGS.iter()
                .map(|log| f(log))
                .collect::<Vec<_>>()
                .join(" UNION ALL ")
        };
        // Over every log, which share the counter and the horizon.
        let latest = format!(
            "(SELECT MAX(rv) FROM ({}) AS logs)",
            each(&|log| format!("SELECT MAX(resource_version) AS rv FROM {log}"))
        );
        // Each log's newest old line below the latest of all: the latest stays, whichever
        // log holds it.
        format!(
            "SELECT MAX(rv) FROM ({}) AS old",
            each(&|log| format!(
                "SELECT MAX(resource_version) AS rv FROM {log} \
                 WHERE changed_at < {cutoff} AND resource_version < {latest}"
            ))
        )
    })
});

/// Deletes changes older than `keep_seconds` (never the latest) and moves the horizon.
#[tracing::instrument(level = "debug", skip_all)]
pub(super) async fn prune(pool: &Pool, keep_seconds: u64) -> StoreResult<u64> {
    let mut tx = pool.begin_write().await?;
    let through: Option<i64> = tx
        .sql(tx.dialect().pick(&PRUNE))
        .bind(keep_seconds as f64)
        .scalar_one(&mut tx)
        .await?;
    let Some(through) = through else {
        return Ok(0);
    };
    let mut gone = 0;
    for log in LOGS {
        gone += tx
            .sql(&format!("DELETE FROM {log} WHERE resource_version <= $1"))
            .bind(through)
            .execute(&mut tx)
            .await?;
    }
    tx.sql(
        "UPDATE cluster_change_horizon SET pruned_through = $1 WHERE id = 1 AND pruned_through < $1",
    )
    .bind(through)
    .execute(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(gone)
}
