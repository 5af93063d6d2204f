//! The `machine` table: a cluster's machines, listed with filters and keyset pages, and one
//! machine by uuid or name. Machines are written by the migration that made them from node
//! groups and by the writes of `machine_writes`, in the transactions of their node groups.

use sqlx::types::Json;

use super::db::Pool;
use super::rows::uuid_of;
use super::sql;
use super::{PageRequest, Scope, StoreError, StoreResult};
use crate::domain::ids::parse_uuid_like;
use crate::domain::machine::{
    Machine, MachineName, MachinePhase, MachineRole, MachineSpec, MachineStatus,
};
use crate::domain::{ClusterId, NodeGroupId};

pub const MACHINE_SORT_KEYS: &[(&str, bool)] = &[
    ("id", false),
    ("uuid", false),
    ("name", false),
    ("role", false),
    ("nodegroup_id", false),
    ("phase", false),
    ("provider_id", true),
    ("created_at", false),
    ("updated_at", true),
];

pub(crate) const MACHINE_COLUMNS: &str = "id, uuid, name, role, project_id, cluster_id, \
    nodegroup_id, spec, phase, provider_id, status, created_at, updated_at";

/// What a machine list keeps: every filter given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineFilter {
    pub nodegroup: Option<NodeGroupId>,
    pub role: Option<MachineRole>,
    pub phase: Option<MachinePhase>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct MachineRow {
    pub id: i64,
    pub uuid: String,
    pub name: String,
    pub role: String,
    pub project_id: String,
    pub cluster_id: String,
    pub nodegroup_id: String,
    pub spec: Json<serde_json::Value>,
    pub phase: String,
    pub provider_id: Option<String>,
    pub status: Json<serde_json::Value>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl MachineRow {
    pub fn into_domain(self) -> StoreResult<Machine> {
        let corrupt = |what: &str, e: String| {
            StoreError::Corrupt(format!("machine {} {what}: {e}", self.uuid))
        };
        let spec: MachineSpec = serde_json::from_value(self.spec.0.clone())
            .map_err(|e| corrupt("spec", e.to_string()))?;
        // `phase` and `provider_id` are columns; the rest of the status is the JSON object.
        let mut status = match self.status.0.clone() {
            serde_json::Value::Object(m) => m,
            _ => return Err(corrupt("status", "not an object".into())),
        };
        status.insert("phase".into(), self.phase.clone().into());
        match &self.provider_id {
            Some(p) => status.insert("providerID".into(), p.clone().into()),
            None => status.remove("providerID"),
        };
        let status: MachineStatus =
            serde_json::from_value(status.into()).map_err(|e| corrupt("status", e.to_string()))?;
        Ok(Machine {
            id: self.id,
            uuid: uuid_of("machine", &self.uuid)?,
            name: MachineName::parse(&self.name).map_err(|e| corrupt("name", e))?,
            role: MachineRole::parse(&self.role).map_err(|e| corrupt("role", e))?,
            project_id: self.project_id,
            cluster_id: uuid_of("machine.cluster_id", &self.cluster_id)?,
            nodegroup_id: uuid_of("machine.nodegroup_id", &self.nodegroup_id)?,
            spec,
            status,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

fn domain(rows: Vec<MachineRow>) -> StoreResult<Vec<Machine>> {
    rows.into_iter().map(MachineRow::into_domain).collect()
}

/// One page of a cluster's machines the caller may see, filtered. `$1` the caller's project,
/// `$2` the cluster, then the filters. A marker is a position in the cluster's machines: it
/// need not match the filters (a machine's phase may change between two pages).
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid, filter = ?filter, marker = ?page.marker))]
pub(super) async fn list(
    pool: &Pool,
    cluster_uuid: &ClusterId,
    scope: &Scope,
    filter: &MachineFilter,
    page: &PageRequest,
) -> StoreResult<Vec<Machine>> {
    let nullable = sql::nullable(MACHINE_SORT_KEYS, &page.sort_key)?;
    let vis = |a: &str| {
        format!(
            "{a}.cluster_id = $2 AND {}",
            sql::project_visible(scope.all_projects, a)
        )
    };
    let mut extra = vec![cluster_uuid.to_string()];
    let mut vis_t = vis("t");
    let mut keep = |column: &str, value: String| {
        extra.push(value);
        vis_t.push_str(&format!(" AND t.{column} = ${}", extra.len() + 1));
    };
    if let Some(g) = filter.nodegroup {
        keep("nodegroup_id", g.to_string());
    }
    if let Some(r) = filter.role {
        keep("role", r.as_str().to_string());
    }
    if let Some(p) = filter.phase {
        keep("phase", p.as_str().to_string());
    }
    // The marker's predicate names the filter binds too, so every statement binds them.
    let mut vis_mk = vis("mk");
    for i in 3..=extra.len() + 1 {
        vis_mk.push_str(&format!(" AND ${i} = ${i}"));
    }
    let rows = sql::keyset_page(
        pool,
        "machine",
        MACHINE_COLUMNS,
        "",
        &vis_t,
        &vis_mk,
        &scope.project_id,
        &extra,
        page,
        nullable,
    )
    .await?;
    domain(rows)
}

/// A machine of a cluster by uuid or name (a uuid match wins over a name another machine
/// has). The cluster's visibility is the caller's to check, as for node groups.
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster_uuid, ident = %ident))]
pub(super) async fn get(
    pool: &Pool,
    cluster_uuid: &ClusterId,
    ident: &str,
) -> StoreResult<Machine> {
    let as_uuid = parse_uuid_like(ident)
        .map(|u| u.hyphenated().to_string())
        .unwrap_or_default();
    let text = format!(
        "SELECT {MACHINE_COLUMNS} FROM machine WHERE cluster_id = $1 AND (uuid = $2 OR \
         name = $3) ORDER BY (uuid = $2) DESC, id LIMIT 1"
    );
    let rows: Vec<MachineRow> = pool
        .sql(&text)
        .bind_id(cluster_uuid)
        .bind(as_uuid)
        .bind(ident)
        .fetch_all(pool)
        .await?;
    match rows.into_iter().next() {
        None => Err(StoreError::NotFound),
        Some(row) => row.into_domain(),
    }
}

/// Every machine of a node group, in id order (a group has at most `[cluster]
/// max_node_count` of them).
#[tracing::instrument(level = "debug", skip_all, fields(nodegroup = %nodegroup))]
pub(super) async fn of_nodegroup(
    pool: &Pool,
    nodegroup: &NodeGroupId,
) -> StoreResult<Vec<Machine>> {
    let text = format!("SELECT {MACHINE_COLUMNS} FROM machine WHERE nodegroup_id = $1 ORDER BY id");
    let rows: Vec<MachineRow> = pool.sql(&text).bind_id(nodegroup).fetch_all(pool).await?;
    domain(rows)
}

/// The machines of the clusters the conductor hands its drivers: the first
/// [`CONTEXT_MACHINES`] of each node group, in id order. A group of a hundred thousand nodes
/// does not load a hundred thousand rows into every job.
#[tracing::instrument(level = "debug", skip_all, fields(clusters = clusters.len()))]
pub(super) async fn of_clusters(pool: &Pool, clusters: &[ClusterId]) -> StoreResult<Vec<Machine>> {
    if clusters.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT {MACHINE_COLUMNS} FROM (SELECT m.*, row_number() OVER (PARTITION BY \
         m.nodegroup_id ORDER BY m.id) AS nth FROM machine m WHERE m.cluster_id IN ({})) AS w \
         WHERE nth <= {CONTEXT_MACHINES} ORDER BY id",
        sql::placeholders(1, clusters.len())
    );
    let rows: Vec<MachineRow> = pool.sql(&text).bind_ids(clusters).fetch_all(pool).await?;
    domain(rows)
}

/// The most machines of one node group a driver is handed with its cluster.
pub const CONTEXT_MACHINES: usize = 1000;
