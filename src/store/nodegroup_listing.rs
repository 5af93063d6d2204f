//! The Kubernetes face's reads of node groups (`cluster.k8s.io/v1alpha1`
//! `machinedeployments`, one object per node group): pages of a project's node groups (or
//! every project's) in (project, cluster registry name, node group name) order, each with its
//! cluster's registry name and resourceVersion, filtered by those names in the same statement;
//! the node groups a served object name may be, by (cluster registry name, node group name)
//! pairs or by uuid; and, for the groups read, a tally of their machines (by phase, flavor,
//! image and kubelet) in one more statement, so a page costs two statements whatever its size.

use sqlx::types::Json;

use super::db::Pool;
use super::machine_listing::KeyedPage;
use super::rows::{uuid_of, NodeGroupRow, NODEGROUP_COLUMNS};
use super::{sql, Dialect, StoreResult};
use crate::domain::cluster::NodeGroup;
use crate::domain::machine::MachinePhase;
use crate::domain::managed_fields::ManagedFields;
use crate::domain::NodeGroupId;

/// A node group with what its Kubernetes object shows of its cluster and machines.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupEntry {
    pub nodegroup: NodeGroup,
    /// The cluster's registry name (its `metadata.name` on the registry face).
    pub cluster_name: String,
    /// The cluster row's resourceVersion.
    pub cluster_resource_version: i64,
    /// The group's machines, counted by what the object's status tells apart.
    pub machines: Vec<MachineTally>,
    /// Its object's `metadata.managedFields` on the Kubernetes face.
    pub managed_fields: ManagedFields,
    /// The batch its rolls take when the write that starts one names none.
    pub max_surge: Option<i32>,
}

impl NodeGroupEntry {
    /// Where this group is in the face's order.
    pub fn key(&self) -> NodeGroupKey {
        NodeGroupKey {
            project: self.nodegroup.project_id.clone(),
            cluster: self.cluster_name.clone(),
            name: self.nodegroup.name.clone(),
        }
    }
}

/// How many machines of a group are in one phase on one flavor, image and kubelet (the one
/// its spec names, else the one its driver reported), and the highest resourceVersion among
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineTally {
    pub phase: MachinePhase,
    pub flavor: Option<String>,
    pub image: Option<String>,
    pub kubelet: Option<String>,
    pub count: i64,
    pub resource_version: i64,
}

/// A position in (project, cluster registry name, node group name) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroupKey {
    pub project: String,
    pub cluster: String,
    pub name: String,
}

/// One page of node groups.
pub type NodeGroupPage = KeyedPage<NodeGroupKey>;

#[derive(sqlx::FromRow)]
struct EntryRow {
    #[sqlx(flatten)]
    nodegroup: NodeGroupRow,
    cluster_name: String,
    cluster_resource_version: i64,
    managed_fields: Json<ManagedFields>,
    max_surge: Option<i32>,
}

#[derive(sqlx::FromRow)]
struct TallyRow {
    nodegroup_id: String,
    phase: String,
    flavor: Option<String>,
    image: Option<String>,
    kubelet: Option<String>,
    machines: i64,
    resource_version: i64,
}

/// The select of a group with its cluster's registry name and resourceVersion.
fn entry_select() -> String {
    format!(
        "SELECT {}, COALESCE(c.registry_name, c.name) AS cluster_name, \
         c.resource_version AS cluster_resource_version, \
         g.managed_fields AS managed_fields, g.max_surge AS max_surge \
         FROM nodegroup g JOIN cluster c ON c.uuid = g.cluster_id",
        sql::aliased(NODEGROUP_COLUMNS, "g")
    )
}

/// Text parameters numbered in the order they are pushed.
#[derive(Default)]
struct Binds {
    texts: Vec<String>,
}

impl Binds {
    fn push(&mut self, v: &str) -> String {
        self.texts.push(v.to_string());
        format!("${}", self.texts.len())
    }
    fn list(&mut self, vs: &[String]) -> String {
        vs.iter()
            .map(|v| self.push(v))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The tallies of `groups`' machines, attached to their entries.
async fn with_tallies(pool: &Pool, rows: Vec<EntryRow>) -> StoreResult<Vec<NodeGroupEntry>> {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        out.push(NodeGroupEntry {
            nodegroup: r.nodegroup.into_domain()?,
            cluster_name: r.cluster_name,
            cluster_resource_version: r.cluster_resource_version,
            machines: Vec::new(),
            managed_fields: r.managed_fields.0,
            max_surge: r.max_surge,
        });
    }
    if out.is_empty() {
        return Ok(out);
    }
    let (flavor, image, kubelet) = match pool.dialect() {
        Dialect::Postgres => (
            "spec->>'flavor'",
            "spec->>'osImage'",
            "COALESCE(spec->'versions'->>'kubelet', status->'versions'->>'kubelet')",
        ),
        Dialect::Sqlite => (
            "json_extract(spec, '$.flavor')",
            "json_extract(spec, '$.osImage')",
            "COALESCE(json_extract(spec, '$.versions.kubelet'), \
             json_extract(status, '$.versions.kubelet'))",
        ),
    };
    let ids: Vec<NodeGroupId> = out.iter().map(|e| e.nodegroup.uuid).collect();
    let text = format!(
        "SELECT nodegroup_id, phase, {flavor} AS flavor, {image} AS image, {kubelet} AS kubelet, \
         COUNT(*) AS machines, MAX(resource_version) AS resource_version FROM machine \
         WHERE nodegroup_id IN ({}) GROUP BY nodegroup_id, phase, {flavor}, {image}, {kubelet}",
        sql::placeholders(1, ids.len())
    );
    let tallies: Vec<TallyRow> = pool.sql(&text).bind_ids(&ids).fetch_all(pool).await?;
    for t in tallies {
        let group: uuid::Uuid = uuid_of("machine.nodegroup_id", &t.nodegroup_id)?;
        let phase = MachinePhase::parse(&t.phase)
            .map_err(|e| super::StoreError::Corrupt(format!("machine.phase: {e}")))?;
        if let Some(e) = out.iter_mut().find(|e| e.nodegroup.uuid.0 == group) {
            e.machines.push(MachineTally {
                phase,
                flavor: t.flavor,
                image: t.image,
                kubelet: t.kubelet,
                count: t.machines,
                resource_version: t.resource_version,
            });
        }
    }
    Ok(out)
}

/// One page in (project, cluster registry name, node group name) order.
#[tracing::instrument(level = "debug", skip_all, fields(project = ?page.project, limit = page.limit))]
pub(super) async fn page(pool: &Pool, page: &NodeGroupPage) -> StoreResult<Vec<NodeGroupEntry>> {
    if page.clusters.keeps_nothing() || page.nodegroups.keeps_nothing() {
        return Ok(Vec::new());
    }
    let mut b = Binds::default();
    let mut conds = Vec::new();
    let cluster_name = "COALESCE(c.registry_name, c.name)";
    if let Some(p) = &page.project {
        conds.push(format!("g.project_id = {}", b.push(p)));
    }
    if let Some(only) = &page.clusters.only {
        conds.push(format!("{cluster_name} IN ({})", b.list(only)));
    }
    if !page.clusters.not.is_empty() {
        conds.push(format!(
            "{cluster_name} NOT IN ({})",
            b.list(&page.clusters.not)
        ));
    }
    if let Some(only) = &page.nodegroups.only {
        conds.push(format!("g.name IN ({})", b.list(only)));
    }
    if !page.nodegroups.not.is_empty() {
        conds.push(format!("g.name NOT IN ({})", b.list(&page.nodegroups.not)));
    }
    if let Some(k) = &page.after {
        let (p, c, n) = (b.push(&k.project), b.push(&k.cluster), b.push(&k.name));
        conds.push(format!(
            "(g.project_id, {cluster_name}, g.name) > ({p}, {c}, {n})"
        ));
    }
    let limit = format!("${}", b.texts.len() + 1);
    let mut text = entry_select();
    if !conds.is_empty() {
        text.push_str(" WHERE ");
        text.push_str(&conds.join(" AND "));
    }
    text.push_str(&format!(
        " ORDER BY g.project_id, {cluster_name}, g.name LIMIT {limit}"
    ));
    let rows: Vec<EntryRow> = pool
        .sql(&text)
        .bind_all(b.texts)
        .bind(i64::from(page.limit))
        .fetch_all(pool)
        .await?;
    with_tallies(pool, rows).await
}

/// The node groups of `project` that are group `name` of the cluster whose registry name is
/// `cluster`, for each (cluster, name) of `pairs`, or whose uuid is `uuid`: every one a served
/// object name may be, for the caller to pick by the naming rule. At most 128 pairs are read.
#[tracing::instrument(level = "debug", skip_all, fields(project = %project, pairs = pairs.len()))]
pub(super) async fn by_names(
    pool: &Pool,
    project: &str,
    pairs: &[(String, String)],
    uuid: Option<&str>,
) -> StoreResult<Vec<NodeGroupEntry>> {
    let mut b = Binds::default();
    let p = b.push(project);
    let mut alternatives: Vec<String> = pairs
        .iter()
        .take(128)
        .map(|(cluster, name)| {
            format!(
                "(COALESCE(c.registry_name, c.name) = {} AND g.name = {})",
                b.push(cluster),
                b.push(name)
            )
        })
        .collect();
    if let Some(u) = uuid {
        alternatives.push(format!("g.uuid = {}", b.push(u)));
    }
    if alternatives.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "{} WHERE g.project_id = {p} AND c.project_id = {p} AND ({}) ORDER BY g.id",
        entry_select(),
        alternatives.join(" OR ")
    );
    let rows: Vec<EntryRow> = pool.sql(&text).bind_all(b.texts).fetch_all(pool).await?;
    with_tallies(pool, rows).await
}

/// Every node group of `clusters` (with their machines' tallies), in (project, cluster
/// registry name, name) order: what a watch reads again when their clusters or machines
/// changed.
#[tracing::instrument(level = "debug", skip_all, fields(clusters = clusters.len()))]
pub(super) async fn of_clusters(
    pool: &Pool,
    clusters: &[crate::domain::ClusterId],
) -> StoreResult<Vec<NodeGroupEntry>> {
    if clusters.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "{} WHERE g.cluster_id IN ({}) ORDER BY g.project_id, COALESCE(c.registry_name, c.name), \
         g.name",
        entry_select(),
        sql::placeholders(1, clusters.len())
    );
    let rows: Vec<EntryRow> = pool.sql(&text).bind_ids(clusters).fetch_all(pool).await?;
    with_tallies(pool, rows).await
}
