//! PostgreSQL, the system of record in production.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::ConnectOptions;

use super::resources::impl_resource_store;
use super::sql::{impl_store, Backend};
use super::{map_sqlx, Dialect, StoreError, StoreResult};

/// A pooled connection idle longer than this is pinged before it is handed out.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(2);

pub struct PgStore {
    pub(crate) pool: PgPool,
}

impl Backend for PgStore {
    type Db = sqlx::Postgres;
}

impl PgStore {
    const DIALECT: Dialect = Dialect::Postgres;
    /// Row locks for read-then-write inside a transaction.
    const LOCK_ROWS: &'static str = " FOR UPDATE";
    /// Conductors skip jobs another conductor is claiming.
    /// Shared row locks: rows a transaction depends on stay as read until it commits.
    const SHARE_ROWS: &'static str = " FOR SHARE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const MEMBER_CONTAINS: &'static str = "member_ids @> jsonb_build_array(CAST($1 AS TEXT))";
    const MIGRATIONS_TABLE_EXISTS: &'static str =
        "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_name = '_sqlx_migrations')";

    pub async fn connect(url: &str, max_connections: u32) -> StoreResult<PgStore> {
        let options: PgConnectOptions = url
            .parse::<PgConnectOptions>()
            .map_err(|e| map_sqlx(e, Self::constraint_name))?
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
                sqlx::Error::Database(_) => map_sqlx(e, Self::constraint_name),
                other => StoreError::Unavailable(other),
            })?;
        Ok(PgStore { pool })
    }

    pub fn from_pool(pool: PgPool) -> PgStore {
        PgStore { pool }
    }

    fn migrator() -> sqlx::migrate::Migrator {
        sqlx::migrate!("./migrations")
    }

    /// PostgreSQL reports constraint names itself.
    fn constraint_name(_message: &str) -> Option<String> {
        None
    }

    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Postgres>> {
        self.pool.begin().await.map_err(Self::err)
    }
}

impl_store!(PgStore);
impl_resource_store!(PgStore);
