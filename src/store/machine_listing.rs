//! The Kubernetes face's reads of machines (`cluster.k8s.io/v1alpha1` `machines`): pages of a
//! project's machines (or every project's) in (project, cluster, id) order, each with its
//! cluster's registry name and its node group's name, filtered by those names in the same
//! statement; and the machines a served object name may be, by (cluster registry name,
//! machine name) pairs or by uuid. Pages are keyset reads on
//! `ix_machine_project_id_cluster_id_id`; the names come from the joins.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use sqlx::types::Json;

use super::db::Pool;
use super::machines::{MachineRow, MACHINE_COLUMNS};
use super::StoreResult;
use crate::domain::machine::Machine;
use crate::domain::managed_fields::ManagedFields;

/// A machine with what its Kubernetes object shows of its cluster and node group.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineEntry {
    pub machine: Machine,
    /// The cluster's registry name (its `metadata.name` on the registry face).
    pub cluster_name: String,
    pub nodegroup_name: String,
    /// The machine's resourceVersion: the registry counter's value at its last change.
    pub resource_version: i64,
    /// `metadata.managedFields` of its object.
    pub managed_fields: ManagedFields,
    /// The annotations its object keeps that are not derived (the request annotations).
    pub annotations: BTreeMap<String, String>,
}

impl MachineEntry {
    /// Where this machine is in the face's order.
    pub fn key(&self) -> MachineKey {
        MachineKey {
            project: self.machine.project_id.clone(),
            cluster: self.machine.cluster_id.to_string(),
            id: self.machine.id,
        }
    }
}

/// A position in (project, cluster uuid, id) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineKey {
    pub project: String,
    pub cluster: String,
    pub id: i64,
}

/// Names a page keeps: only `only` when given (an empty list keeps nothing), never `not`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameFilter {
    pub only: Option<Vec<String>>,
    pub not: Vec<String>,
}

impl NameFilter {
    /// Whether the filter keeps nothing at all.
    pub fn keeps_nothing(&self) -> bool {
        self.only.as_ref().is_some_and(|o| o.is_empty())
    }
}

/// One page of rows in an order keyed by `K` (machines, node groups): whose, after where,
/// which clusters and node groups, how many.
#[derive(Debug, Clone)]
pub struct KeyedPage<K> {
    /// One project's rows, or every project's.
    pub project: Option<String>,
    pub after: Option<K>,
    /// By the cluster's registry name.
    pub clusters: NameFilter,
    /// By the node group's name.
    pub nodegroups: NameFilter,
    pub limit: u32,
}

/// One page of machines.
pub type MachinePage = KeyedPage<MachineKey>;

#[derive(sqlx::FromRow)]
pub(super) struct EntryRow {
    #[sqlx(flatten)]
    pub machine: MachineRow,
    pub cluster_name: String,
    pub nodegroup_name: String,
    pub resource_version: i64,
    pub managed_fields: Json<ManagedFields>,
    pub annotations: Json<BTreeMap<String, String>>,
}

impl EntryRow {
    pub fn into_entry(self) -> StoreResult<MachineEntry> {
        Ok(MachineEntry {
            machine: self.machine.into_domain()?,
            cluster_name: self.cluster_name,
            nodegroup_name: self.nodegroup_name,
            resource_version: self.resource_version,
            managed_fields: self.managed_fields.0,
            annotations: self.annotations.0,
        })
    }
}

fn entries(rows: Vec<EntryRow>) -> StoreResult<Vec<MachineEntry>> {
    rows.into_iter().map(EntryRow::into_entry).collect()
}

/// `m.`-qualified machine columns, the cluster's registry name and the node group's name.
static ENTRY_SELECT: LazyLock<String> = LazyLock::new(|| {
    let cols = MACHINE_COLUMNS
        .split(',')
        .map(|c| format!("m.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT {cols}, c.registry_name AS cluster_name, g.name AS nodegroup_name, \
         m.resource_version AS resource_version, m.managed_fields AS managed_fields, \
         m.annotations AS annotations \
         FROM machine m JOIN cluster c ON c.uuid = m.cluster_id \
         JOIN nodegroup g ON g.uuid = m.nodegroup_id"
    )
});

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

/// One page in (project, cluster uuid, id) order. A cluster-name filter that keeps some names
/// reads only those clusters' machines (the clusters by their unique (project, registry
/// name), then their machines through the (project, cluster, id) index).
#[tracing::instrument(level = "debug", skip_all, fields(project = ?page.project, limit = page.limit))]
pub(super) async fn page(pool: &Pool, page: &MachinePage) -> StoreResult<Vec<MachineEntry>> {
    if page.clusters.keeps_nothing() || page.nodegroups.keeps_nothing() {
        return Ok(Vec::new());
    }
    let mut b = Binds::default();
    let mut conds = Vec::new();
    if let Some(p) = &page.project {
        conds.push(format!("m.project_id = {}", b.push(p)));
    }
    if let Some(only) = &page.clusters.only {
        let mut sub = format!(
            "m.cluster_id IN (SELECT k.uuid FROM cluster k WHERE k.registry_name IN ({})",
            b.list(only)
        );
        if let Some(p) = &page.project {
            sub.push_str(&format!(" AND k.project_id = {}", b.push(p)));
        }
        sub.push(')');
        conds.push(sub);
    }
    if !page.clusters.not.is_empty() {
        conds.push(format!(
            "c.registry_name NOT IN ({})",
            b.list(&page.clusters.not)
        ));
    }
    if let Some(only) = &page.nodegroups.only {
        conds.push(format!("g.name IN ({})", b.list(only)));
    }
    if !page.nodegroups.not.is_empty() {
        conds.push(format!("g.name NOT IN ({})", b.list(&page.nodegroups.not)));
    }
    let mut ints: Vec<i64> = Vec::new();
    if let Some(k) = &page.after {
        let (p, c) = (b.push(&k.project), b.push(&k.cluster));
        ints.push(k.id);
        let id = format!("${}", b.texts.len() + ints.len());
        conds.push(format!(
            "(m.project_id, m.cluster_id, m.id) > ({p}, {c}, {id})"
        ));
    }
    ints.push(i64::from(page.limit));
    let limit = format!("${}", b.texts.len() + ints.len());
    let mut text = ENTRY_SELECT.clone();
    if !conds.is_empty() {
        text.push_str(" WHERE ");
        text.push_str(&conds.join(" AND "));
    }
    text.push_str(&format!(
        " ORDER BY m.project_id, m.cluster_id, m.id LIMIT {limit}"
    ));
    let rows = pool
        .sql(&text)
        .bind_all(b.texts)
        .bind_all(ints)
        .fetch_all(pool)
        .await?;
    entries(rows)
}

/// The machines of `project` that are machine `name` of the cluster whose registry name is
/// `cluster`, for each (cluster, name) of `pairs`, or whose uuid is `uuid`: every one a served
/// object name may be, for the caller to pick by the naming rule. At most 128 pairs are read.
#[tracing::instrument(level = "debug", skip_all, fields(project = %project, pairs = pairs.len()))]
pub(super) async fn by_names(
    pool: &Pool,
    project: &str,
    pairs: &[(String, String)],
    uuid: Option<&str>,
) -> StoreResult<Vec<MachineEntry>> {
    let mut b = Binds::default();
    let p = b.push(project);
    let mut alternatives: Vec<String> = pairs
        .iter()
        .take(128)
        .map(|(cluster, name)| {
            format!(
                "(c.registry_name = {} AND m.name = {})",
                b.push(cluster),
                b.push(name)
            )
        })
        .collect();
    if let Some(u) = uuid {
        alternatives.push(format!("m.uuid = {}", b.push(u)));
    }
    if alternatives.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "{} WHERE m.project_id = {p} AND c.project_id = {p} AND ({}) \
         ORDER BY m.cluster_id, m.id",
        *ENTRY_SELECT,
        alternatives.join(" OR ")
    );
    let rows = pool.sql(&text).bind_all(b.texts).fetch_all(pool).await?;
    entries(rows)
}
