//! The writes of the `machine` table, each inside the transaction of the change it follows:
//! a node group's machines follow its node count when the group is inserted or updated
//! ([`follow_count`]), the machines a user named are marked for deletion ([`mark_deleting`]),
//! a failed change that is undone gives its marked machines back ([`revive`]), and the end of
//! the cluster's operation settles them ([`settle`]): the ones being deleted go, the new ones
//! run (or failed with the operation). What the driver reports of each machine is its status
//! ([`observe`]). One machine's own change writes its spec and status ([`update`]); a change through the
//! Kubernetes face writes its managed fields with them ([`update_object`]).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::db::Tx;
use super::{sql, StoreError, StoreResult};
use crate::domain::machine::count::{self, Counted, MachineTemplate};
use crate::domain::machine::create::NewMachine;
use crate::domain::machine::{Machine, MachinePhase, MachineStatus};
use crate::domain::managed_fields::ManagedFields;
use crate::domain::{ClusterId, MachineId, NodeGroupId};

/// Rows per multi-row statement (9 bound values a row on insert).
const BATCH: usize = 200;
/// Name rounds before giving up on names that other machines of the cluster hold.
const NAME_ROUNDS: usize = 8;

/// Brings the node group's machines to `node_count` not being deleted: the newest go when
/// there are too many, new ones (named `<group>-<n>`, lowest free `n`) when too few.
#[tracing::instrument(level = "debug", skip_all, fields(nodegroup = %tmpl.nodegroup, node_count))]
pub(super) async fn follow_count(
    tx: &mut Tx,
    tmpl: &MachineTemplate,
    node_count: i32,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let rows: Vec<(i64, String, String)> = tx
        .sql("SELECT id, name, phase FROM machine WHERE nodegroup_id = $1")
        .bind_id(&tmpl.nodegroup)
        .fetch_all(&mut *tx)
        .await?;
    let mut counted = Vec::with_capacity(rows.len());
    for (id, name, phase) in rows {
        let phase = MachinePhase::parse(&phase)
            .map_err(|e| StoreError::Corrupt(format!("machine {id} phase: {e}")))?;
        counted.push(Counted { id, name, phase });
    }
    let plan = count::plan(node_count, &counted);
    for ids in plan.remove.chunks(BATCH) {
        let text = format!(
            "UPDATE machine SET phase = 'Deleting', updated_at = $1 WHERE id IN ({})",
            sql::placeholders(2, ids.len())
        );
        tx.sql(&text)
            .bind(now)
            .bind_all(ids.iter().copied())
            .execute(&mut *tx)
            .await?;
    }
    if plan.add > 0 {
        let taken = counted.into_iter().map(|c| c.name).collect();
        insert_new(tx, tmpl, taken, plan.add, now).await?;
    }
    Ok(())
}

/// Inserts `count` new machines of the group. A name another group's machine holds in the
/// cluster is skipped (the insert ignores it) and the next free one taken.
async fn insert_new(
    tx: &mut Tx,
    tmpl: &MachineTemplate,
    mut taken: BTreeSet<String>,
    mut count: usize,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let spec = serde_json::to_value(&tmpl.spec)
        .map_err(|e| StoreError::Corrupt(format!("machine spec: {e}")))?;
    for _ in 0..NAME_ROUNDS {
        let names = count::next_names(tmpl, &taken, count);
        for chunk in names.chunks(BATCH) {
            let values: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let b = i * 9;
                    format!(
                        "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, '{{}}', ${})",
                        b + 1,
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5,
                        b + 6,
                        b + 7,
                        b + 8,
                        b + 9
                    )
                })
                .collect();
            let text = format!(
                "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, \
                 spec, phase, status, created_at) VALUES {} ON CONFLICT DO NOTHING",
                values.join(", ")
            );
            let mut stmt = tx.sql(&text);
            for name in chunk {
                stmt = stmt
                    .bind_id(&MachineId::new())
                    .bind(name.as_str().to_string())
                    .bind(tmpl.role.as_str())
                    .bind(tmpl.project_id.clone())
                    .bind_id(&tmpl.cluster)
                    .bind_id(&tmpl.nodegroup)
                    .bind(Json(spec.clone()))
                    .bind(tmpl.phase.as_str())
                    .bind(now);
            }
            let inserted = stmt.execute(&mut *tx).await?;
            count = count.saturating_sub(usize::try_from(inserted).unwrap_or(usize::MAX));
        }
        if count == 0 {
            return Ok(());
        }
        taken.extend(names.into_iter().map(|n| n.to_string()));
    }
    Err(StoreError::Conflict {
        constraint: "uniq_machine0cluster_id0name".into(),
    })
}

/// Inserts one machine a user created (its status empty until the driver reports on it).
#[tracing::instrument(level = "debug", skip_all, fields(machine = %m.uuid, nodegroup = %m.nodegroup_id))]
pub(super) async fn insert_one(tx: &mut Tx, m: &NewMachine, now: DateTime<Utc>) -> StoreResult<()> {
    let spec = serde_json::to_value(&m.spec)
        .map_err(|e| StoreError::Corrupt(format!("machine spec: {e}")))?;
    tx.sql(
        "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
         phase, status, created_at, managed_fields, annotations) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '{}', $9, $10, $11)",
    )
    .bind_id(&m.uuid)
    .bind(m.name.as_str().to_string())
    .bind(m.role.as_str())
    .bind(m.project_id.clone())
    .bind_id(&m.cluster_id)
    .bind_id(&m.nodegroup_id)
    .bind(Json(spec))
    .bind(m.phase.as_str())
    .bind(now)
    .bind(Json(&m.managed_fields))
    .bind(Json(&m.annotations))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Marks the named machines of the node group as being deleted (they stop counting toward
/// its node count).
#[tracing::instrument(level = "debug", skip_all, fields(nodegroup = %nodegroup, machines = machines.len()))]
pub(super) async fn mark_deleting(
    tx: &mut Tx,
    nodegroup: &NodeGroupId,
    machines: &[MachineId],
    now: DateTime<Utc>,
) -> StoreResult<()> {
    for ids in machines.chunks(BATCH) {
        let text = format!(
            "UPDATE machine SET phase = 'Deleting', updated_at = $2 WHERE nodegroup_id = $1 \
             AND uuid IN ({})",
            sql::placeholders(3, ids.len())
        );
        tx.sql(&text)
            .bind_id(nodegroup)
            .bind(now)
            .bind_ids(ids)
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Gives the node group back the machines it was deleting (a failed change of its node
/// count is undone): they run again.
#[tracing::instrument(level = "debug", skip_all, fields(nodegroup = %nodegroup))]
pub(super) async fn revive(
    tx: &mut Tx,
    nodegroup: &NodeGroupId,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql(
        "UPDATE machine SET phase = 'Running', updated_at = $2 WHERE nodegroup_id = $1 AND \
         phase = 'Deleting'",
    )
    .bind_id(nodegroup)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The cluster's operation ended: the machines being deleted are gone, and the new ones run
/// (or, when it failed, have failed).
#[tracing::instrument(level = "debug", skip_all, fields(cluster = %cluster, failed))]
pub(super) async fn settle(
    tx: &mut Tx,
    cluster: &ClusterId,
    failed: bool,
    now: DateTime<Utc>,
) -> StoreResult<()> {
    tx.sql("DELETE FROM machine WHERE cluster_id = $1 AND phase = 'Deleting'")
        .bind_id(cluster)
        .execute(&mut *tx)
        .await?;
    let phase = if failed {
        MachinePhase::Failed
    } else {
        MachinePhase::Running
    };
    // In batches along the cluster's id index, so that no one statement of a cluster of a
    // hundred thousand new nodes runs past the statement timeout.
    let mut after = 0_i64;
    loop {
        let text = format!(
            "UPDATE machine SET phase = $2, updated_at = $3 WHERE id IN (SELECT id FROM machine \
             WHERE cluster_id = $1 AND id > $4 AND phase IN ('Pending', 'Provisioning') \
             ORDER BY id LIMIT {SETTLE_BATCH}) RETURNING id"
        );
        let ids: Vec<i64> = tx
            .sql(&text)
            .bind_id(cluster)
            .bind(phase.as_str())
            .bind(now)
            .bind(after)
            .scalar_all(&mut *tx)
            .await?;
        match ids.iter().max() {
            Some(last) if ids.len() >= SETTLE_BATCH => after = *last,
            _ => return Ok(()),
        }
    }
}

/// Machines settled per statement.
const SETTLE_BATCH: usize = 5000;

/// Writes what the driver reported of the machines: `provider_id` and the rest of the status
/// (the phase stays the count's and the operations' to set). A machine gone meanwhile is
/// skipped.
#[tracing::instrument(level = "debug", skip_all, fields(machines = observed.len()))]
pub(super) async fn observe(
    tx: &mut Tx,
    observed: &[(MachineId, MachineStatus)],
    now: DateTime<Utc>,
) -> StoreResult<()> {
    for (uuid, status) in observed {
        let mut rest = match serde_json::to_value(status) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return Err(StoreError::Corrupt(format!("machine {uuid} status"))),
        };
        rest.remove("phase");
        rest.remove("providerID");
        tx.sql("UPDATE machine SET provider_id = $2, status = $3, updated_at = $4 WHERE uuid = $1")
            .bind_id(uuid)
            .bind(status.provider_id.clone())
            .bind(Json(serde_json::Value::Object(rest)))
            .bind(now)
            .execute(&mut *tx)
            .await?;
    }
    Ok(())
}

/// Writes the machine's spec and status (its phase and provider id too) if its phase is still
/// one of `from`; [`StoreError::Stale`] otherwise (changed or gone meanwhile).
#[tracing::instrument(level = "debug", skip_all, fields(machine = %m.uuid, phase = %m.status.phase))]
pub(super) async fn update(
    tx: &mut Tx,
    m: &Machine,
    from: &[MachinePhase],
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("machine {} {what}", m.uuid));
    let spec = serde_json::to_value(&m.spec).map_err(|_| corrupt("spec"))?;
    let mut rest = match serde_json::to_value(&m.status) {
        Ok(serde_json::Value::Object(rest)) => rest,
        _ => return Err(corrupt("status")),
    };
    rest.remove("phase");
    rest.remove("providerID");
    let text = format!(
        "UPDATE machine SET spec = $2, phase = $3, provider_id = $4, status = $5, \
         updated_at = $6 WHERE uuid = $1 AND phase IN ({})",
        sql::placeholders(7, from.len())
    );
    let updated = tx
        .sql(&text)
        .bind_id(&m.uuid)
        .bind(Json(spec))
        .bind(m.status.phase.as_str())
        .bind(m.status.provider_id.clone())
        .bind(Json(serde_json::Value::Object(rest)))
        .bind(now)
        .bind_all(from.iter().map(|p| p.as_str()))
        .execute(&mut *tx)
        .await?;
    if updated == 1 {
        Ok(())
    } else {
        Err(StoreError::Stale)
    }
}

/// Writes one machine's object as the Kubernetes face changed it: its spec, status (phase and
/// provider id too) and managed fields, in one statement (one new resourceVersion), if it is
/// still at `resource_version` and its phase one of `from`; [`StoreError::Stale`] otherwise.
#[tracing::instrument(level = "debug", skip_all, fields(machine = %m.uuid, phase = %m.status.phase))]
pub(super) async fn update_object(
    tx: &mut Tx,
    m: &Machine,
    from: &[MachinePhase],
    resource_version: i64,
    (managed_fields, annotations): (&ManagedFields, &BTreeMap<String, String>),
    now: DateTime<Utc>,
) -> StoreResult<()> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("machine {} {what}", m.uuid));
    let spec = serde_json::to_value(&m.spec).map_err(|_| corrupt("spec"))?;
    let mut rest = match serde_json::to_value(&m.status) {
        Ok(serde_json::Value::Object(rest)) => rest,
        _ => return Err(corrupt("status")),
    };
    rest.remove("phase");
    rest.remove("providerID");
    let text = format!(
        "UPDATE machine SET spec = $2, phase = $3, provider_id = $4, status = $5, \
         updated_at = $6, managed_fields = $7, annotations = $8 WHERE uuid = $1 \
         AND resource_version = $9 AND phase IN ({})",
        sql::placeholders(10, from.len())
    );
    let updated = tx
        .sql(&text)
        .bind_id(&m.uuid)
        .bind(Json(spec))
        .bind(m.status.phase.as_str())
        .bind(m.status.provider_id.clone())
        .bind(Json(serde_json::Value::Object(rest)))
        .bind(now)
        .bind(Json(managed_fields))
        .bind(Json(annotations))
        .bind(resource_version)
        .bind_all(from.iter().map(|p| p.as_str()))
        .execute(&mut *tx)
        .await?;
    if updated == 1 {
        Ok(())
    } else {
        Err(StoreError::Stale)
    }
}
