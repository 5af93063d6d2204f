//! The `cluster_group`, `cluster_group_member`, `cluster_group_match` and
//! `cluster_group_binding` tables.
//!
//! A group's selector matches are materialized in `cluster_group_match`: rewritten for one
//! group when its selector is written (one index read of its project's clusters), and for one
//! cluster when a write set inserts or updates it (one index read of its project's groups that
//! have a selector). Reads through groups are then joins on indexes: a grantee's bindings
//! (`ix_cluster_group_binding_grantee_project_id`), each bound group's accepted members
//! (`uniq_cluster_group_member0group_id0cluster_id`) and matches (`cluster_group_match_pkey`),
//! or, for one cluster, its groups (`ix_cluster_group_member_cluster_id`,
//! `ix_cluster_group_match_cluster_id`) and their bindings to the grantee. No request evaluates
//! a selector, and none reads the `cluster` table to decide a right.
//!
//! A write that changes who reaches a cluster through a bound group (a binding created or
//! deleted, a membership accepted or removed, a selector match started or ended, a bound group
//! deleted) touches the cluster row in the same transaction: it takes the next resourceVersion
//! and writes a `MODIFIED` line to the change log, which is how a registry watch learns that a
//! cluster entered or left what a caller sees ([`touch`]). A group nobody is bound to touches
//! nothing.
//!
//! At the scale the issue names (100,000 clusters, 1,000 groups, 10,000 bindings, so a grantee
//! bound to about 100 groups reaches about 10,000 clusters), the one-cluster right is two
//! index probes per side (well under a millisecond on PostgreSQL); the whole set of a grantee
//! is as large as what it reaches, so a page of a list must not start from it but scan the
//! clusters in the page's order and probe `(cluster_id, group_id)` for each.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Tx};
use super::rows::uuid_of;
use super::sql::{self, ByIdent};
use super::{PageRequest, Scope, StoreError, StoreResult};
use crate::domain::cluster_group::{
    ClusterGroup, ClusterGroupBinding, ClusterGroupMember, GroupDescription, GroupName, GroupRight,
    GroupSelector, MemberState, NewClusterGroup, NewClusterGroupBinding, NewClusterGroupMember,
};
use crate::domain::{ClusterGroupBindingId, ClusterGroupId, ClusterId, Ident};

pub const CLUSTER_GROUP_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("created_at", false),
    ("updated_at", true),
];

const GROUP_COLUMNS: &str = "id, uuid, project_id, user_id, name, description, selector, \
     version, resource_version, created_at, updated_at";
const MEMBER_COLUMNS: &str =
    "group_id, cluster_id, cluster_project_id, state, proposed_by, consented_at, created_at";
const BINDING_COLUMNS: &str = "id, uuid, group_id, project_id, grantee_project_id, roles, access, \
     resource_version, created_at";

#[derive(sqlx::FromRow)]
pub(super) struct GroupRow {
    pub id: i64,
    pub uuid: String,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub description: Option<String>,
    pub selector: Option<String>,
    pub version: i64,
    pub resource_version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl GroupRow {
    pub(super) fn into_domain(self) -> StoreResult<ClusterGroup> {
        let corrupt =
            |what: &str, e: String| StoreError::Corrupt(format!("cluster_group.{what}: {e}"));
        Ok(ClusterGroup {
            id: self.id,
            uuid: uuid_of("cluster_group", &self.uuid)?,
            project_id: self.project_id,
            user_id: self.user_id,
            name: GroupName::parse(&self.name).map_err(|e| corrupt("name", e))?,
            description: self
                .description
                .as_deref()
                .map(GroupDescription::parse)
                .transpose()
                .map_err(|e| corrupt("description", e))?,
            selector: self
                .selector
                .as_deref()
                .map(GroupSelector::parse)
                .transpose()
                .map_err(|e| corrupt("selector", e))?,
            version: self.version,
            resource_version: self.resource_version,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(sqlx::FromRow)]
struct MemberRow {
    group_id: String,
    cluster_id: String,
    cluster_project_id: String,
    state: String,
    proposed_by: String,
    consented_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl MemberRow {
    fn into_domain(self) -> StoreResult<ClusterGroupMember> {
        Ok(ClusterGroupMember {
            group: uuid_of("cluster_group_member", &self.group_id)?,
            cluster: uuid_of("cluster_group_member", &self.cluster_id)?,
            cluster_project_id: self.cluster_project_id,
            state: MemberState::parse(&self.state).ok_or_else(|| {
                StoreError::Corrupt(format!("cluster_group_member.state {}", self.state))
            })?,
            proposed_by: self.proposed_by,
            consented_at: self.consented_at,
            created_at: self.created_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct BindingRow {
    pub id: i64,
    pub uuid: String,
    pub group_id: String,
    pub project_id: String,
    pub grantee_project_id: String,
    pub roles: Option<Json<Vec<String>>>,
    pub access: String,
    pub resource_version: i64,
    pub created_at: DateTime<Utc>,
}

pub(super) fn right(text: &str) -> StoreResult<GroupRight> {
    GroupRight::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("cluster_group_binding.access {text}")))
}

impl BindingRow {
    pub(super) fn into_domain(self) -> StoreResult<ClusterGroupBinding> {
        Ok(ClusterGroupBinding {
            id: self.id,
            uuid: uuid_of("cluster_group_binding", &self.uuid)?,
            group: uuid_of("cluster_group_binding", &self.group_id)?,
            project_id: self.project_id,
            grantee_project_id: self.grantee_project_id,
            roles: self.roles.map(|r| r.0),
            right: right(&self.access)?,
            resource_version: self.resource_version,
            created_at: self.created_at,
        })
    }
}

fn groups(rows: Vec<GroupRow>) -> StoreResult<Vec<ClusterGroup>> {
    rows.into_iter().map(GroupRow::into_domain).collect()
}

fn members(rows: Vec<MemberRow>) -> StoreResult<Vec<ClusterGroupMember>> {
    rows.into_iter().map(MemberRow::into_domain).collect()
}

fn bindings(rows: Vec<BindingRow>) -> StoreResult<Vec<ClusterGroupBinding>> {
    rows.into_iter().map(BindingRow::into_domain).collect()
}

static BY_IDENT: ByIdent = LazyLock::new(|| {
    sql::by_ident_texts(
        "cluster_group",
        GROUP_COLUMNS,
        "t.project_id = $1",
        "$1 = $1",
    )
});

static BY_UUID: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {GROUP_COLUMNS} FROM cluster_group WHERE uuid = $1"));

static MEMBERS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM cluster_group_member WHERE group_id = $1 \
         ORDER BY cluster_id"
    )
});

static MEMBER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM cluster_group_member WHERE group_id = $1 \
         AND cluster_id = $2"
    )
});

static PROPOSALS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM cluster_group_member WHERE cluster_project_id = $1 \
         AND state = 'Proposed' ORDER BY id"
    )
});

static BINDINGS: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {BINDING_COLUMNS} FROM cluster_group_binding WHERE group_id = $1 ORDER BY id")
});

static BINDINGS_OF_GRANTEE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {BINDING_COLUMNS} FROM cluster_group_binding WHERE grantee_project_id = $1 \
         ORDER BY id"
    )
});

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, ident = ?ident))]
pub(super) async fn get(pool: &Pool, scope: &Scope, ident: &Ident) -> StoreResult<ClusterGroup> {
    sql::one_by_ident::<GroupRow>(pool, &BY_IDENT, scope, ident)
        .await?
        .into_domain()
}

#[tracing::instrument(level = "debug", skip_all, fields(group = %uuid))]
pub(super) async fn find(pool: &Pool, uuid: &ClusterGroupId) -> StoreResult<Option<ClusterGroup>> {
    let row: Option<GroupRow> = pool
        .sql(&BY_UUID)
        .bind_id(uuid)
        .fetch_optional(pool)
        .await?;
    row.map(GroupRow::into_domain).transpose()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id, marker = ?page.marker))]
pub(super) async fn list(
    pool: &Pool,
    scope: &Scope,
    page: &PageRequest,
) -> StoreResult<Vec<ClusterGroup>> {
    let nullable = sql::nullable(CLUSTER_GROUP_SORT_KEYS, &page.sort_key)?;
    let vis = |alias: &str| sql::project_visible(scope.all_projects, alias);
    let rows = sql::keyset_page(
        pool,
        "cluster_group",
        GROUP_COLUMNS,
        "",
        &vis("t"),
        &vis("mk"),
        &scope.project_id,
        &[],
        page,
        nullable,
    )
    .await?;
    groups(rows)
}

#[tracing::instrument(level = "debug", skip_all, fields(group = %group))]
pub(super) async fn members_of(
    pool: &Pool,
    group: &ClusterGroupId,
) -> StoreResult<Vec<ClusterGroupMember>> {
    members(pool.sql(&MEMBERS).bind_id(group).fetch_all(pool).await?)
}

#[tracing::instrument(level = "debug", skip_all, fields(group = %group, cluster = %cluster))]
pub(super) async fn member(
    pool: &Pool,
    group: &ClusterGroupId,
    cluster: &ClusterId,
) -> StoreResult<Option<ClusterGroupMember>> {
    let row: Option<MemberRow> = pool
        .sql(&MEMBER)
        .bind_id(group)
        .bind_id(cluster)
        .fetch_optional(pool)
        .await?;
    row.map(MemberRow::into_domain).transpose()
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %project))]
pub(super) async fn proposals_for(
    pool: &Pool,
    project: &str,
) -> StoreResult<Vec<ClusterGroupMember>> {
    members(pool.sql(&PROPOSALS).bind(project).fetch_all(pool).await?)
}

/// The clusters a group's selector matches now, in uuid order.
#[tracing::instrument(level = "debug", skip_all, fields(group = %group))]
pub(super) async fn matches_of(pool: &Pool, group: &ClusterGroupId) -> StoreResult<Vec<ClusterId>> {
    let rows: Vec<(String,)> = pool
        .sql("SELECT cluster_id FROM cluster_group_match WHERE group_id = $1 ORDER BY cluster_id")
        .bind_id(group)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|(c,)| uuid_of("cluster_group_match", c))
        .collect()
}

#[tracing::instrument(level = "debug", skip_all, fields(group = %group))]
pub(super) async fn bindings_of(
    pool: &Pool,
    group: &ClusterGroupId,
) -> StoreResult<Vec<ClusterGroupBinding>> {
    bindings(pool.sql(&BINDINGS).bind_id(group).fetch_all(pool).await?)
}

#[tracing::instrument(level = "debug", skip_all, fields(project = %project))]
pub(super) async fn bindings_to(
    pool: &Pool,
    project: &str,
) -> StoreResult<Vec<ClusterGroupBinding>> {
    bindings(
        pool.sql(&BINDINGS_OF_GRANTEE)
            .bind(project)
            .fetch_all(pool)
            .await?,
    )
}

/// The explicit memberships of `groups` with each member cluster's registry name, in (group,
/// cluster) order: one statement over `uniq_cluster_group_member0group_id0cluster_id` and the
/// cluster's uuid index.
#[tracing::instrument(level = "debug", skip_all, fields(groups = groups.len()))]
pub(super) async fn members_named(
    pool: &Pool,
    groups: &[ClusterGroupId],
) -> StoreResult<Vec<(ClusterGroupMember, String)>> {
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    let gs = sql::placeholders(1, groups.len());
    let text = format!(
        "SELECT m.group_id, m.cluster_id, m.cluster_project_id, m.state, m.proposed_by, \
         m.consented_at, m.created_at, c.registry_name FROM cluster_group_member m \
         JOIN cluster c ON c.uuid = m.cluster_id WHERE m.group_id IN ({gs}) \
         ORDER BY m.group_id, m.cluster_id"
    );
    let rows: Vec<NamedMemberRow> = pool.sql(&text).bind_ids(groups).fetch_all(pool).await?;
    rows.into_iter()
        .map(|r| Ok((r.member.into_domain()?, r.registry_name)))
        .collect()
}

#[derive(sqlx::FromRow)]
struct NamedMemberRow {
    #[sqlx(flatten)]
    member: MemberRow,
    registry_name: String,
}

#[derive(sqlx::FromRow)]
struct NamedBindingRow {
    #[sqlx(flatten)]
    binding: BindingRow,
    group_name: String,
}

/// The bindings of the groups of `scope`'s project (of every project with `all_projects`),
/// each with its group's name, in (project, group name, grantee) order.
#[tracing::instrument(level = "debug", skip_all, fields(project = %scope.project_id))]
pub(super) async fn bindings_in(
    pool: &Pool,
    scope: &Scope,
) -> StoreResult<Vec<(ClusterGroupBinding, String)>> {
    let filter = if scope.all_projects {
        "$1 = $1"
    } else {
        "b.project_id = $1"
    };
    let text = format!(
        "SELECT b.id, b.uuid, b.group_id, b.project_id, b.grantee_project_id, b.roles, \
         b.access, b.resource_version, b.created_at, g.name AS group_name FROM cluster_group_binding b \
         JOIN cluster_group g ON g.uuid = b.group_id WHERE {filter} \
         ORDER BY b.project_id, g.name, b.grantee_project_id"
    );
    let rows: Vec<NamedBindingRow> = pool
        .sql(&text)
        .bind(scope.project_id.as_str())
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|r| Ok((r.binding.into_domain()?, r.group_name)))
        .collect()
}

// ---- Writes --------------------------------------------------------------------------------

#[tracing::instrument(level = "debug", skip_all, fields(group = %g.uuid))]
pub(super) async fn insert_group(
    tx: &mut Tx,
    g: &NewClusterGroup,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql(
        "INSERT INTO cluster_group (uuid, project_id, user_id, name, selector, version, \
         created_at, description) VALUES ($1, $2, $3, $4, $5, 0, $6, $7)",
    )
    .bind_id(&g.uuid)
    .bind(&g.project_id)
    .bind(&g.user_id)
    .bind(g.name.as_str())
    .bind(g.selector.as_ref().map(GroupSelector::as_str))
    .bind(now)
    .bind(g.description.as_ref().map(GroupDescription::as_str))
    .execute(&mut *tx)
    .await?;
    rematch_group(tx, &g.uuid, &g.project_id, g.selector.as_ref()).await
}

/// Writes the group's selector and description if the row is still at `g.version` (else
/// [`StoreError::Stale`]), and rewrites its matches.
#[tracing::instrument(level = "debug", skip_all, fields(group = %g.uuid, version = g.version))]
pub(super) async fn update_group(
    tx: &mut Tx,
    g: &ClusterGroup,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let done = tx
        .sql(
            "UPDATE cluster_group SET selector = $1, updated_at = $2, version = version + 1, \
             description = $5 WHERE id = $3 AND version = $4",
        )
        .bind(g.selector.as_ref().map(GroupSelector::as_str))
        .bind(now)
        .bind(g.id)
        .bind(g.version)
        .bind(g.description.as_ref().map(GroupDescription::as_str))
        .execute(&mut *tx)
        .await?;
    if done == 0 {
        return Err(StoreError::Stale);
    }
    rematch_group(tx, &g.uuid, &g.project_id, g.selector.as_ref()).await
}

/// Deletes the group with its members, matches and bindings; [`StoreError::NotFound`] when it
/// is gone.
#[tracing::instrument(level = "debug", skip_all, fields(group = %uuid))]
pub(super) async fn delete_group(tx: &mut Tx, uuid: &ClusterGroupId) -> StoreResult<()> {
    touch_group(tx, uuid).await?;
    let changed = tx
        .sql("DELETE FROM cluster_group WHERE uuid = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    found(changed)
}

/// Rewrites a group's selector matches: one index read of its project's clusters. When the
/// group is bound, the clusters whose match started or ended are touched.
async fn rematch_group(
    tx: &mut Tx,
    group: &ClusterGroupId,
    project: &str,
    selector: Option<&GroupSelector>,
) -> StoreResult<()> {
    let bound = is_bound(tx, group).await?;
    let had: BTreeSet<String> = if bound {
        let rows: Vec<(String,)> = tx
            .sql("SELECT cluster_id FROM cluster_group_match WHERE group_id = $1")
            .bind_id(group)
            .fetch_all(&mut *tx)
            .await?;
        rows.into_iter().map(|(c,)| c).collect()
    } else {
        BTreeSet::new()
    };
    tx.sql("DELETE FROM cluster_group_match WHERE group_id = $1")
        .bind_id(group)
        .execute(&mut *tx)
        .await?;
    let mut now = BTreeSet::new();
    if let Some(selector) = selector {
        let clusters: Vec<(String, Json<BTreeMap<String, String>>)> = tx
            .sql("SELECT uuid, registry_labels FROM cluster WHERE project_id = $1")
            .bind(project)
            .fetch_all(&mut *tx)
            .await?;
        for (cluster, labels) in clusters {
            if selector.matches(&labels.0) {
                tx.sql("INSERT INTO cluster_group_match (group_id, cluster_id) VALUES ($1, $2)")
                    .bind_id(group)
                    .bind(cluster.as_str())
                    .execute(&mut *tx)
                    .await?;
                now.insert(cluster);
            }
        }
    }
    if bound {
        let changed: Vec<String> = had.symmetric_difference(&now).cloned().collect();
        touch(tx, &changed).await?;
    }
    Ok(())
}

/// Whether a binding names the group.
async fn is_bound(tx: &mut Tx, group: &ClusterGroupId) -> StoreResult<bool> {
    let rows: Vec<(i64,)> = tx
        .sql("SELECT id FROM cluster_group_binding WHERE group_id = $1 LIMIT 1")
        .bind_id(group)
        .fetch_all(&mut *tx)
        .await?;
    Ok(!rows.is_empty())
}

/// The clusters a group reaches: its accepted members and its selector matches.
async fn reached_by(tx: &mut Tx, group: &ClusterGroupId) -> StoreResult<Vec<String>> {
    let rows: Vec<(String,)> = tx
        .sql(
            "SELECT cluster_id FROM cluster_group_member WHERE group_id = $1 \
             AND state = 'Accepted' UNION SELECT cluster_id FROM cluster_group_match \
             WHERE group_id = $1",
        )
        .bind_id(group)
        .fetch_all(&mut *tx)
        .await?;
    Ok(rows.into_iter().map(|(c,)| c).collect())
}

/// How many clusters one touch statement names.
const TOUCH_CHUNK: usize = 500;

/// Gives each of `clusters` the next resourceVersion and a `MODIFIED` change-log line (the
/// cluster triggers write it), without changing anything else of the row: who reaches the
/// cluster through a group changed. The caller holds the cluster writes' lock.
async fn touch(tx: &mut Tx, clusters: &[String]) -> StoreResult<()> {
    for chunk in clusters.chunks(TOUCH_CHUNK) {
        let text = format!(
            "UPDATE cluster SET updated_at = updated_at WHERE uuid IN ({})",
            sql::placeholders(1, chunk.len())
        );
        tx.sql(&text)
            .bind_all(chunk.iter().map(String::as_str))
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Touches the clusters of `group` when it is bound.
async fn touch_group(tx: &mut Tx, group: &ClusterGroupId) -> StoreResult<()> {
    if is_bound(tx, group).await? {
        let reached = reached_by(tx, group).await?;
        touch(tx, &reached).await?;
    }
    Ok(())
}

/// Touches one cluster when `group` is bound.
async fn touch_member(tx: &mut Tx, group: &ClusterGroupId, cluster: &ClusterId) -> StoreResult<()> {
    if is_bound(tx, group).await? {
        touch(tx, &[cluster.to_string()]).await?;
    }
    Ok(())
}

/// Brings one cluster's selector matches up to date after its row was inserted or updated:
/// one index read of its project's groups that have a selector and one of the cluster's
/// matches; rows are written only where a match starts or ends (a status update writes none).
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster))]
pub(super) async fn rematch_cluster(
    tx: &mut Tx,
    cluster: &ClusterId,
    project: &str,
    labels: &BTreeMap<String, String>,
) -> StoreResult<()> {
    let selecting: Vec<(String, String)> = tx
        .sql(
            "SELECT uuid, selector FROM cluster_group WHERE project_id = $1 \
             AND selector IS NOT NULL",
        )
        .bind(project)
        .fetch_all(&mut *tx)
        .await?;
    let had: Vec<(String,)> = tx
        .sql("SELECT group_id FROM cluster_group_match WHERE cluster_id = $1")
        .bind_id(cluster)
        .fetch_all(&mut *tx)
        .await?;
    let had: BTreeSet<String> = had.into_iter().map(|(g,)| g).collect();
    let mut wanted = BTreeSet::new();
    for (group, text) in selecting {
        let selector = GroupSelector::parse(&text)
            .map_err(|e| StoreError::Corrupt(format!("cluster_group.selector: {e}")))?;
        if selector.matches(labels) {
            wanted.insert(group);
        }
    }
    for group in wanted.difference(&had) {
        tx.sql("INSERT INTO cluster_group_match (group_id, cluster_id) VALUES ($1, $2)")
            .bind(group.as_str())
            .bind_id(cluster)
            .execute(&mut *tx)
            .await?;
    }
    for group in had.difference(&wanted) {
        tx.sql("DELETE FROM cluster_group_match WHERE group_id = $1 AND cluster_id = $2")
            .bind(group.as_str())
            .bind_id(cluster)
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Inserts an explicit membership. The cluster's project is read from the cluster row in the
/// same statement: [`StoreError::NotFound`] when the cluster is gone or is not of
/// `m.cluster_project_id` (a consent is the real owner's or none).
#[tracing::instrument(level = "debug", skip_all, fields(group = %m.group, cluster = %m.cluster, state = m.state.as_str()))]
pub(super) async fn insert_member(
    tx: &mut Tx,
    m: &NewClusterGroupMember,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let consented_at = (m.state == MemberState::Accepted).then_some(now);
    let changed = tx
        .sql(
            "INSERT INTO cluster_group_member (group_id, cluster_id, cluster_project_id, state, \
             proposed_by, consented_at, created_at) \
             SELECT $1, c.uuid, c.project_id, $4, $5, $6, $7 FROM cluster c \
             WHERE c.uuid = $2 AND c.project_id = $3",
        )
        .bind_id(&m.group)
        .bind_id(&m.cluster)
        .bind(&m.cluster_project_id)
        .bind(m.state.as_str())
        .bind(&m.proposed_by)
        .bind(consented_at)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    found(changed)?;
    if m.state == MemberState::Accepted {
        touch_member(tx, &m.group, &m.cluster).await?;
    }
    Ok(())
}

/// The cluster's project accepts a proposed membership (an accepted one stays as it is);
/// [`StoreError::NotFound`] when there is none.
#[tracing::instrument(level = "debug", skip_all, fields(group = %group, cluster = %cluster))]
pub(super) async fn accept_member(
    tx: &mut Tx,
    group: &ClusterGroupId,
    cluster: &ClusterId,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let changed = tx
        .sql(
            "UPDATE cluster_group_member SET state = 'Accepted', \
             consented_at = COALESCE(consented_at, $3) WHERE group_id = $1 AND cluster_id = $2",
        )
        .bind_id(group)
        .bind_id(cluster)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    found(changed)?;
    touch_member(tx, group, cluster).await
}

/// Removes an explicit membership (proposed or accepted); [`StoreError::NotFound`] when there
/// is none.
#[tracing::instrument(level = "debug", skip_all, fields(group = %group, cluster = %cluster))]
pub(super) async fn delete_member(
    tx: &mut Tx,
    group: &ClusterGroupId,
    cluster: &ClusterId,
) -> StoreResult<()> {
    let changed = tx
        .sql("DELETE FROM cluster_group_member WHERE group_id = $1 AND cluster_id = $2")
        .bind_id(group)
        .bind_id(cluster)
        .execute(&mut *tx)
        .await?;
    found(changed)?;
    touch_member(tx, group, cluster).await
}

#[tracing::instrument(level = "debug", skip_all, fields(binding = %b.uuid, group = %b.group))]
pub(super) async fn insert_binding(
    tx: &mut Tx,
    b: &NewClusterGroupBinding,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql(
        "INSERT INTO cluster_group_binding (uuid, group_id, project_id, grantee_project_id, \
         roles, access, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind_id(&b.uuid)
    .bind_id(&b.group)
    .bind(&b.project_id)
    .bind(&b.grantee_project_id)
    .bind(b.roles.as_ref().map(Json))
    .bind(b.right.as_str())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let reached = reached_by(tx, &b.group).await?;
    touch(tx, &reached).await
}

/// Deletes a binding; [`StoreError::NotFound`] when it is gone.
#[tracing::instrument(level = "debug", skip_all, fields(binding = %uuid))]
pub(super) async fn delete_binding(tx: &mut Tx, uuid: &ClusterGroupBindingId) -> StoreResult<()> {
    let group: Vec<(String,)> = tx
        .sql("SELECT group_id FROM cluster_group_binding WHERE uuid = $1")
        .bind_id(uuid)
        .fetch_all(&mut *tx)
        .await?;
    let changed = tx
        .sql("DELETE FROM cluster_group_binding WHERE uuid = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    found(changed)?;
    if let Some((g,)) = group.first() {
        let group: ClusterGroupId = uuid_of("cluster_group_binding", g)?;
        let reached = reached_by(tx, &group).await?;
        touch(tx, &reached).await?;
    }
    Ok(())
}

/// A write that names one row: [`StoreError::NotFound`] when it changed none.
fn found(changed: u64) -> StoreResult<()> {
    if changed == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}
