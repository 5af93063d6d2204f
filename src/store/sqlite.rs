//! SQLite, the embedded zero-setup default. One writer at a time: write transactions start
//! with `BEGIN IMMEDIATE`, so they queue on the database lock instead of failing on upgrade.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::resources::impl_resource_store;
use super::sql::{impl_store, Backend};
use super::{map_sqlx, Dialect, StoreResult};

pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
}

impl Backend for SqliteStore {
    type Db = sqlx::Sqlite;
}

/// SQLite names no constraint in its errors; map the column lists of our unique constraints.
const UNIQUE_COLUMNS: &[(&str, &str)] = &[
    ("cluster_template.uuid", "uniq_cluster_template0uuid"),
    ("cluster.uuid", "uniq_cluster0uuid"),
    (
        "cluster.project_id, cluster.name",
        "uniq_cluster0project_id0name",
    ),
    ("nodegroup.uuid", "uniq_nodegroup0uuid"),
    (
        "nodegroup.cluster_id, nodegroup.name",
        "uniq_nodegroup0cluster_id0name",
    ),
    ("federation.uuid", "uniq_federation0uuid"),
    ("x509keypair.uuid", "uniq_x509keypair0uuid"),
    (
        "quotas.project_id, quotas.resource",
        "uniq_quotas0project_id0resource",
    ),
    (
        "magnum_service.host, magnum_service.binary",
        "uniq_magnum_service0host0binary",
    ),
    ("job.uuid", "uniq_job0uuid"),
    ("outbox.message_id", "uniq_outbox0message_id"),
];

impl SqliteStore {
    const DIALECT: Dialect = Dialect::Sqlite;
    /// SQLite has one writer at a time (`BEGIN IMMEDIATE`): no row locks needed.
    const LOCK_ROWS: &'static str = "";
    /// Shared row locks: rows a transaction depends on stay as read until it commits.
    const SHARE_ROWS: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    const MEMBER_CONTAINS: &'static str =
        "EXISTS (SELECT 1 FROM json_each(federation.member_ids) WHERE json_each.value = $1)";
    const MIGRATIONS_TABLE_EXISTS: &'static str =
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')";

    /// `sqlite://path` (created if missing) or `sqlite::memory:`.
    pub async fn connect(url: &str) -> StoreResult<SqliteStore> {
        let memory = url.contains(":memory:");
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| map_sqlx(e, Self::constraint_name))?
            .create_if_missing(true)
            .foreign_keys(true)
            .journal_mode(if memory {
                SqliteJournalMode::Memory
            } else {
                SqliteJournalMode::Wal
            })
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30));
        // An in-memory database exists once per connection: keep exactly one.
        let max = if memory { 1 } else { 8 };
        let pool = SqlitePoolOptions::new()
            .max_connections(max)
            .min_connections(if memory { 1 } else { 0 })
            .idle_timeout(if memory {
                None
            } else {
                Some(Duration::from_secs(600))
            })
            .max_lifetime(if memory {
                None
            } else {
                Some(Duration::from_secs(3600))
            })
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|e| map_sqlx(e, Self::constraint_name))?;
        Ok(SqliteStore { pool })
    }

    fn migrator() -> sqlx::migrate::Migrator {
        sqlx::migrate!("./migrations-sqlite")
    }

    fn constraint_name(message: &str) -> Option<String> {
        if let Some(cols) = message.strip_prefix("UNIQUE constraint failed: ") {
            return UNIQUE_COLUMNS
                .iter()
                .find(|(c, _)| *c == cols.trim())
                .map(|(_, name)| name.to_string());
        }
        if message.contains("FOREIGN KEY constraint failed") {
            return Some("foreign_key".into());
        }
        if let Some(rest) = message.strip_prefix("CHECK constraint failed: ") {
            return Some(rest.trim().to_string());
        }
        None
    }

    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(Self::err)
    }
}

impl_store!(SqliteStore);
impl_resource_store!(SqliteStore);
