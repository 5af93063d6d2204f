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
//! At the scale the issue names (100,000 clusters, 1,000 groups, 10,000 bindings, so a grantee
//! bound to about 100 groups reaches about 10,000 clusters), the one-cluster right is two
//! index probes per side (well under a millisecond on PostgreSQL); the whole set of a grantee
//! is as large as what it reaches, so a page of a list must not start from it but scan the
//! clusters in the page's order and probe `(cluster_id, group_id)` for each.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::{Pool, Tx};
use super::rows::uuid_of;
use super::sql::{self, ByIdent};
use super::{PageRequest, Scope, StoreError, StoreResult};
use crate::domain::cluster_group::{
    binding_applies, ClusterGroup, ClusterGroupBinding, ClusterGroupMember, Grantee,
    GroupDescription, GroupName, GroupRight, GroupSelector, MemberState, NewClusterGroup,
    NewClusterGroupBinding, NewClusterGroupMember,
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
     version, created_at, updated_at";
const MEMBER_COLUMNS: &str =
    "group_id, cluster_id, cluster_project_id, state, proposed_by, consented_at, created_at";
const BINDING_COLUMNS: &str =
    "id, uuid, group_id, project_id, grantee_project_id, roles, access, created_at";

#[derive(sqlx::FromRow)]
struct GroupRow {
    id: i64,
    uuid: String,
    project_id: String,
    user_id: String,
    name: String,
    description: Option<String>,
    selector: Option<String>,
    version: i64,
    created_at: DateTime<Utc>,
    updated_at: Option<DateTime<Utc>>,
}

impl GroupRow {
    fn into_domain(self) -> StoreResult<ClusterGroup> {
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
struct BindingRow {
    id: i64,
    uuid: String,
    group_id: String,
    project_id: String,
    grantee_project_id: String,
    roles: Option<Json<Vec<String>>>,
    access: String,
    created_at: DateTime<Utc>,
}

fn right(text: &str) -> StoreResult<GroupRight> {
    GroupRight::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("cluster_group_binding.access {text}")))
}

impl BindingRow {
    fn into_domain(self) -> StoreResult<ClusterGroupBinding> {
        Ok(ClusterGroupBinding {
            id: self.id,
            uuid: uuid_of("cluster_group_binding", &self.uuid)?,
            group: uuid_of("cluster_group_binding", &self.group_id)?,
            project_id: self.project_id,
            grantee_project_id: self.grantee_project_id,
            roles: self.roles.map(|r| r.0),
            right: right(&self.access)?,
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
         b.access, b.created_at, g.name AS group_name FROM cluster_group_binding b \
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
    let changed = tx
        .sql("DELETE FROM cluster_group WHERE uuid = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    found(changed)
}

/// Rewrites a group's selector matches: one index read of its project's clusters.
async fn rematch_group(
    tx: &mut Tx,
    group: &ClusterGroupId,
    project: &str,
    selector: Option<&GroupSelector>,
) -> StoreResult<()> {
    tx.sql("DELETE FROM cluster_group_match WHERE group_id = $1")
        .bind_id(group)
        .execute(&mut *tx)
        .await?;
    let Some(selector) = selector else {
        return Ok(());
    };
    let clusters: Vec<(String, Json<BTreeMap<String, String>>)> = tx
        .sql("SELECT uuid, registry_labels FROM cluster WHERE project_id = $1")
        .bind(project)
        .fetch_all(&mut *tx)
        .await?;
    for (cluster, labels) in clusters {
        if selector.matches(&labels.0) {
            tx.sql("INSERT INTO cluster_group_match (group_id, cluster_id) VALUES ($1, $2)")
                .bind_id(group)
                .bind(cluster)
                .execute(&mut *tx)
                .await?;
        }
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
    found(changed)
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
    found(changed)
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
    found(changed)
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
    Ok(())
}

/// Deletes a binding; [`StoreError::NotFound`] when it is gone.
#[tracing::instrument(level = "debug", skip_all, fields(binding = %uuid))]
pub(super) async fn delete_binding(tx: &mut Tx, uuid: &ClusterGroupBindingId) -> StoreResult<()> {
    let changed = tx
        .sql("DELETE FROM cluster_group_binding WHERE uuid = $1")
        .bind_id(uuid)
        .execute(&mut *tx)
        .await?;
    found(changed)
}

/// A write that names one row: [`StoreError::NotFound`] when it changed none.
fn found(changed: u64) -> StoreResult<()> {
    if changed == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}
