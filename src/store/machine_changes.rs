//! The machines' change log (`machine_change`, written by the triggers of the machine change
//! migration): each line the machine as it was at the change (a `DELETED` line: its last
//! state), with its cluster's registry name and its node group's name, numbered by the
//! registry's one resourceVersion counter.

use std::sync::LazyLock;

use super::db::Pool;
use super::machine_listing::EntryRow;
use super::machines::MACHINE_COLUMNS;
use super::registry::ChangeKind;
use super::{MachineEntry, StoreError, StoreResult};

/// One line of the machines' change log.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineChange {
    pub change: ChangeKind,
    /// The machine as the line kept it, its `resource_version` the line's.
    pub entry: MachineEntry,
}

#[derive(sqlx::FromRow)]
struct ChangeRow {
    change: String,
    #[sqlx(flatten)]
    entry: EntryRow,
}

static CHANGES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT change, {MACHINE_COLUMNS}, cluster_name, nodegroup_name, resource_version, \
         managed_fields, annotations \
         FROM machine_change WHERE resource_version > $1 ORDER BY resource_version LIMIT $2"
    )
});

/// Changes after `after`, oldest first, at most `limit`.
#[tracing::instrument(level = "debug", skip_all, fields(after = after, limit = limit))]
pub(super) async fn changes(
    pool: &Pool,
    after: i64,
    limit: u32,
) -> StoreResult<Vec<MachineChange>> {
    let rows: Vec<ChangeRow> = pool
        .sql(&CHANGES)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|r| {
            let change = ChangeKind::parse(&r.change).ok_or_else(|| {
                StoreError::Corrupt(format!("machine_change.change {}", r.change))
            })?;
            Ok(MachineChange {
                change,
                entry: r.entry.into_entry()?,
            })
        })
        .collect()
}
