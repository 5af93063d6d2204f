//! PostgreSQL, the system of record in production.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::ConnectOptions;

use super::db::Pool;
use super::{map_sqlx, SqlStore, StoreError, StoreResult};

/// A pooled connection idle longer than this is pinged before it is handed out.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(2);

/// The store on PostgreSQL: a [`SqlStore`] over a PostgreSQL pool.
pub struct PgStore(SqlStore);

impl PgStore {
    pub async fn connect(url: &str, max_connections: u32) -> StoreResult<PgStore> {
        let options: PgConnectOptions = url
            .parse::<PgConnectOptions>()
            .map_err(|e| map_sqlx(e, constraint_name))?
            .log_statements(tracing::log::LevelFilter::Trace)
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_millis(500));
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(10))
            // sqlx pings every connection it hands out by default: one extra round trip per
            // request to the database. Ping only connections that sat idle for a while (those are the ones a server restart or a failover leaves
            // dead); a busy connection proves itself with every query it runs.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for > IDLE_BEFORE_PING {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| match e {
                sqlx::Error::Database(_) => map_sqlx(e, constraint_name),
                other => StoreError::Unavailable(other),
            })?;
        Ok(PgStore::from_pool(pool))
    }

    pub fn from_pool(pool: PgPool) -> PgStore {
        PgStore(SqlStore {
            pool: Pool::Pg(pool),
        })
    }

    /// The store, to share as `Arc<dyn Store>`.
    pub fn into_inner(self) -> SqlStore {
        self.0
    }
}

impl std::ops::Deref for PgStore {
    type Target = SqlStore;
    fn deref(&self) -> &SqlStore {
        &self.0
    }
}

impl From<PgStore> for SqlStore {
    fn from(store: PgStore) -> SqlStore {
        store.0
    }
}

pub(super) fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// PostgreSQL reports constraint names itself.
pub(super) fn constraint_name(_message: &str) -> Option<String> {
    None
}
