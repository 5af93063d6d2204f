//! SQLite, the embedded zero-setup default. One writer at a time: write transactions start
//! with `BEGIN IMMEDIATE`, so they queue on the database lock instead of failing on upgrade.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::db::Pool;
use super::dialect::sqlite_constraint_name as constraint_name;
use super::{map_sqlx, SqlStore, StoreResult, WaitObserver};

/// The store on SQLite: a [`SqlStore`] over an SQLite pool.
pub struct SqliteStore(SqlStore);

/// Rows a connection's thread may hand over before the reader takes them: a full page of the
/// largest `limit` the API accepts by default.
const ROW_BUFFER: usize = 1000;

impl SqliteStore {
    /// `sqlite://path` (created if missing) or `sqlite::memory:`.
    pub async fn connect(url: &str) -> StoreResult<SqliteStore> {
        Self::connect_observed(url, None).await
    }

    /// As [`SqliteStore::connect`], telling `on_wait` how long each caller waited for a
    /// connection.
    pub async fn connect_observed(url: &str, on_wait: WaitObserver) -> StoreResult<SqliteStore> {
        let memory = url.contains(":memory:");
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| map_sqlx(e, constraint_name))?
            .create_if_missing(true)
            .foreign_keys(true)
            .journal_mode(if memory {
                SqliteJournalMode::Memory
            } else {
                SqliteJournalMode::Wal
            })
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30))
            // A page's rows cross from the connection's thread in one go (the default buffer
            // of 50 made the thread wait mid-page for a 100-row page).
            .row_buffer_size(ROW_BUFFER)
            // At most 1 MiB of page cache per connection (2 MiB by default): eight
            // connections hold at most 8 MiB; the operating system caches the file as well.
            .pragma("cache_size", "-1024");
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
            .map_err(|e| map_sqlx(e, constraint_name))?;
        Ok(SqliteStore(SqlStore::new(Pool::Lite(pool, on_wait))))
    }

    /// The store, to share as `Arc<dyn Store>`.
    pub fn into_inner(self) -> SqlStore {
        self.0
    }
}

impl std::ops::Deref for SqliteStore {
    type Target = SqlStore;
    fn deref(&self) -> &SqlStore {
        &self.0
    }
}

impl From<SqliteStore> for SqlStore {
    fn from(store: SqliteStore) -> SqlStore {
        store.0
    }
}
