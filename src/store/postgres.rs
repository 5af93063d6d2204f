//! PostgreSQL, the system of record in production.

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::ConnectOptions;

use super::db::Pool;
use super::dialect::pg_constraint_name as constraint_name;
use super::pg::batched::Batcher;
use super::pg::pool::PgConnections;
use super::{map_sqlx, PoolSettings, SqlStore, StoreError, StoreResult};

/// TCP keepalive on the server's side of every connection (sqlx 0.8 sets no socket option on
/// its side): a PostgreSQL server probes a connection silent for 30 s every 10 s and drops it
/// after 3 unanswered probes, so the transaction and locks of a service cut off by a network
/// partition are released.
const SERVER_KEEPALIVE: [(&str, &str); 3] = [
    ("tcp_keepalives_idle", "30"),
    ("tcp_keepalives_interval", "10"),
    ("tcp_keepalives_count", "3"),
];

/// The store on PostgreSQL: a [`SqlStore`] over a PostgreSQL pool.
pub struct PgStore(SqlStore);

impl PgStore {
    /// Connects with the settings' pool size and timeouts. Every connection asks the server
    /// to cancel a statement after `statement_timeout` and to end a transaction left idle for
    /// half as long: a commit held up by a network partition past the client's own timeout is
    /// then never applied after the client was answered 503.
    pub async fn connect(url: &str, settings: &PoolSettings) -> StoreResult<PgStore> {
        let statement_ms = settings.statement_timeout.as_millis().max(1);
        let idle_ms = (statement_ms / 2).max(1);
        let mut server_options = vec![
            ("statement_timeout", statement_ms.to_string()),
            ("idle_in_transaction_session_timeout", idle_ms.to_string()),
        ];
        server_options.extend(SERVER_KEEPALIVE.map(|(k, v)| (k, v.to_string())));
        let options: PgConnectOptions = url
            .parse::<PgConnectOptions>()
            .map_err(|e| map_sqlx(e, constraint_name))?
            .options(server_options)
            .log_statements(tracing::log::LevelFilter::Trace)
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_millis(500));
        let pool = PgConnections::new(
            options,
            settings.max_connections,
            settings.pool_timeout,
            settings.on_wait,
        );
        // One connection now, kept for the first statement: a wrong URL or a server that is
        // down fails here rather than on the first request.
        pool.acquire()
            .await
            .map_err(|e| match e {
                sqlx::Error::Database(_) => map_sqlx(e, constraint_name),
                other => StoreError::Unavailable(other),
            })?
            .set_reusable(true);
        Ok(PgStore(SqlStore::new(Pool::Pg(
            pool,
            std::sync::Arc::new(Batcher::default()),
            settings.statement_timeout,
        ))))
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
