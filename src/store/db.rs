//! The two backends behind one set of concrete types: a [`Pool`], a write [`Tx`], and a
//! statement ([`Stmt`]) whose arguments are encoded for the backend it will run on. Every
//! table module writes its SQL once against these; the match on the backend happens here and
//! nowhere else.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::Id;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqliteArguments, SqlitePool, SqliteRow};
use sqlx::{Arguments, Encode, FromRow, Type};

use super::arg::Arg;
use super::dialect::{pg_migrator, sqlite_constraint_name, sqlite_migrator};
use super::pg::batched::{self, Batcher};
use super::pg::pool::{bounded, leased, pg_err, pool_limit, Outcome, PgConnections, PgTx};
use super::{map_sqlx, Dialect, StoreError, StoreResult, WaitObserver};

/// A value both backends can bind.
pub(crate) trait Param<'q>:
    Encode<'q, Postgres> + Type<Postgres> + Encode<'q, Sqlite> + Type<Sqlite> + Send + 'q
{
}

impl<'q, T> Param<'q> for T where
    T: Encode<'q, Postgres> + Type<Postgres> + Encode<'q, Sqlite> + Type<Sqlite> + Send + 'q
{
}

/// A row type both backends can decode (every `#[derive(sqlx::FromRow)]` struct and tuple).
pub(crate) trait Row:
    for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow> + Send + Unpin
{
}

impl<T> Row for T where T: for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow> + Send + Unpin
{}

/// A connection pool of either backend: PostgreSQL's with the queues of its shared reads
/// ([`batched`]) beside it and its statement timeout, SQLite's with whom to tell how long a
/// caller waited for a connection.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Pg(PgConnections, Arc<Batcher>, Duration),
    Lite(SqlitePool, WaitObserver),
}

/// A write transaction; dropped without [`Tx::commit`], it rolls back.
pub(crate) enum Tx {
    Pg(PgTx, Duration),
    Lite(sqlx::Transaction<'static, Sqlite>),
}

/// Where a statement runs: on a pooled connection or inside a transaction.
pub(crate) enum Conn<'c> {
    Pool(&'c Pool),
    Tx(&'c mut Tx),
}

impl<'c> From<&'c Pool> for Conn<'c> {
    fn from(pool: &'c Pool) -> Self {
        Conn::Pool(pool)
    }
}

impl<'c> From<&'c mut Tx> for Conn<'c> {
    fn from(tx: &'c mut Tx) -> Self {
        Conn::Tx(tx)
    }
}

/// An SQLite connection from the pool, the wait told to `on_wait`.
async fn lite_conn(
    pool: &SqlitePool,
    on_wait: WaitObserver,
) -> StoreResult<sqlx::pool::PoolConnection<Sqlite>> {
    let started = std::time::Instant::now();
    let conn = pool.acquire().await.map_err(lite_err)?;
    if let Some(observe) = on_wait {
        observe(started.elapsed());
    }
    Ok(conn)
}

fn lite_err(e: sqlx::Error) -> StoreError {
    map_sqlx(e, sqlite_constraint_name)
}

impl Pool {
    pub fn dialect(&self) -> Dialect {
        match self {
            Pool::Pg(..) => Dialect::Postgres,
            Pool::Lite(..) => Dialect::Sqlite,
        }
    }

    /// Open, idle and most connections.
    pub fn status(&self) -> super::PoolStatus {
        let (size, idle, max, shared) = match self {
            Pool::Pg(p, batcher, _) => {
                let (size, idle, max) = p.status();
                (size, idle, max, batcher.counts())
            }
            Pool::Lite(p, _) => (
                p.size(),
                p.num_idle(),
                p.options().get_max_connections(),
                batched::BatchCounts::default(),
            ),
        };
        super::PoolStatus {
            size,
            idle: u32::try_from(idle).unwrap_or(u32::MAX),
            max,
            shared_read_statements: shared.statements,
            shared_read_callers: shared.callers,
        }
    }

    /// A statement for this pool's backend.
    pub fn sql<'q>(&self, text: &'q str) -> Stmt<'q> {
        Stmt::new(self.dialect(), text)
    }

    /// The rows of a read, its parameters `$1..` bound to `args` in order. On PostgreSQL
    /// the callers of one read at the same moment share a statement ([`batched`]); `text`
    /// is static because its address names the read.
    pub async fn read_shared<R: Row>(
        &self,
        text: &'static str,
        args: Vec<Arg>,
    ) -> StoreResult<Vec<R>> {
        match self {
            Pool::Pg(p, batcher, limit) => batched::fetch(p, batcher, *limit, text, args)
                .await?
                .iter()
                .map(|row| R::from_row(row).map_err(pg_err))
                .collect(),
            Pool::Lite(..) => {
                let q = args.into_iter().fold(self.sql(text), |q, a| match a {
                    Arg::Text(s) => q.bind(s),
                    Arg::Int(i) => q.bind(i),
                });
                q.fetch_all(self).await
            }
        }
    }

    /// Opens a write transaction. SQLite starts it with `BEGIN IMMEDIATE`: writers queue on
    /// the database lock instead of failing when a read transaction upgrades.
    pub async fn begin_write(&self) -> StoreResult<Tx> {
        match self {
            Pool::Pg(p, _, limit) => bounded(pool_limit(p, *limit), async {
                PgTx::begin(p.acquire().await?).await
            })
            .await
            .map(|tx| Tx::Pg(tx, *limit)),
            Pool::Lite(p, _) => p
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map(Tx::Lite)
                .map_err(lite_err),
        }
    }

    /// Applies pending migrations of the backend's migration folder.
    pub async fn migrate(&self) -> StoreResult<()> {
        match self {
            // Migrations may run long: on a connection of their own without the timeouts,
            // closed afterwards rather than returned to the pool.
            Pool::Pg(p, _, _) => {
                let mut conn = p.connect_detached().await.map_err(pg_err)?;
                for unbounded in [
                    "SET statement_timeout = 0",
                    "SET idle_in_transaction_session_timeout = 0",
                ] {
                    sqlx::query(unbounded)
                        .execute(&mut conn)
                        .await
                        .map_err(pg_err)?;
                }
                pg_migrator().run_direct(&mut conn).await?;
                sqlx::Connection::close(conn).await.map_err(pg_err)?;
            }
            Pool::Lite(p, _) => sqlite_migrator().run(p).await?,
        }
        Ok(())
    }
}

impl Tx {
    pub fn dialect(&self) -> Dialect {
        match self {
            Tx::Pg(..) => Dialect::Postgres,
            Tx::Lite(_) => Dialect::Sqlite,
        }
    }

    /// A statement for this transaction's backend.
    pub fn sql<'q>(&self, text: &'q str) -> Stmt<'q> {
        Stmt::new(self.dialect(), text)
    }

    /// Commits. On PostgreSQL, a COMMIT whose answer was lost with its connection (an I/O or
    /// protocol error) is looked up by its transaction id on another connection within the
    /// statement timeout: committed, it is a success; aborted, the change was not made and the
    /// error is [`StoreError::Unavailable`]. A COMMIT that is not settled by then, or one held
    /// past the statement timeout (a partition, whose other connections are held too), may have
    /// been applied or not: [`StoreError::CommitUnconfirmed`], never a plain failure, so that no
    /// caller is told a change failed that the database kept.
    ///
    /// On SQLite the commit happens in this process, on the database file: its outcome is
    /// always known (a failed commit rolls back through the journal).
    pub async fn commit(self) -> StoreResult<()> {
        match self {
            Tx::Pg(t, limit) => {
                let started = std::time::Instant::now();
                let (pool, xid) = t.handle();
                let lost = match tokio::time::timeout(limit, t.commit()).await {
                    Ok(Ok(())) => return Ok(()),
                    Err(_) => {
                        return Err(StoreError::CommitUnconfirmed(format!(
                            "no answer within {limit:?}"
                        )))
                    }
                    Ok(Err(e @ (sqlx::Error::Io(_) | sqlx::Error::Protocol(_)))) => e,
                    Ok(Err(e)) => return Err(pg_err(e)),
                };
                match PgTx::outcome(&pool, xid, started + limit).await {
                    Outcome::Committed => {
                        tracing::info!(xid, error = %lost, "a commit's answer was lost; the server committed it");
                        Ok(())
                    }
                    Outcome::Aborted => Err(StoreError::Unavailable(lost)),
                    Outcome::Unknown => Err(StoreError::CommitUnconfirmed(lost.to_string())),
                }
            }
            Tx::Lite(t) => t.commit().await.map_err(lite_err),
        }
    }
}

enum Args<'q> {
    Pg(PgArguments),
    Lite(SqliteArguments<'q>),
}

/// SQL text and its bound arguments. A value that fails to encode fails the statement when it
/// runs, as sqlx's own `bind` does.
pub(crate) struct Stmt<'q> {
    sql: &'q str,
    args: Result<Args<'q>, BoxDynError>,
}

/// The statement went to the other backend's connection: a bug in the caller, never data.
fn mismatch() -> StoreError {
    StoreError::Database(sqlx::Error::Protocol(
        "statement bound for one backend ran on the other".into(),
    ))
}

impl<'q> Stmt<'q> {
    pub fn new(dialect: Dialect, sql: &'q str) -> Self {
        let args = match dialect {
            Dialect::Postgres => Args::Pg(PgArguments::default()),
            Dialect::Sqlite => Args::Lite(SqliteArguments::default()),
        };
        Stmt {
            sql,
            args: Ok(args),
        }
    }

    pub fn bind<T: Param<'q>>(mut self, value: T) -> Self {
        if let Ok(args) = &mut self.args {
            let added = match args {
                Args::Pg(a) => a.add(value),
                Args::Lite(a) => a.add(value),
            };
            if let Err(e) = added {
                self.args = Err(e);
            }
        }
        self
    }

    /// Binds each value in turn (an `IN (...)` list made with [`super::sql::placeholders`]).
    pub fn bind_all<T: Param<'q>>(self, values: impl IntoIterator<Item = T>) -> Self {
        values.into_iter().fold(self, Stmt::bind)
    }

    /// Binds a resource id in its stored (hyphenated) form.
    pub fn bind_id<I: Id>(self, id: &I) -> Self {
        self.bind(id.to_string())
    }

    /// Binds every id of a list, in order (for `IN (...)` lists).
    pub fn bind_ids<'a, I: Id>(self, ids: impl IntoIterator<Item = &'a I>) -> Self {
        ids.into_iter().fold(self, Stmt::bind_id)
    }

    /// Every row.
    pub async fn fetch_all<'c, R: Row>(self, conn: impl Into<Conn<'c>>) -> StoreResult<Vec<R>> {
        let args = self
            .args
            .map_err(|e| StoreError::Database(sqlx::Error::Encode(e)))?;
        match (conn.into(), args) {
            (Conn::Pool(Pool::Pg(p, _, limit)), Args::Pg(a)) => {
                bounded(
                    pool_limit(p, *limit),
                    leased(p, async |c| {
                        sqlx::query_as_with(self.sql, a).fetch_all(c).await
                    }),
                )
                .await
            }
            (Conn::Tx(Tx::Pg(t, limit)), Args::Pg(a)) => {
                bounded(*limit, sqlx::query_as_with(self.sql, a).fetch_all(t.conn())).await
            }
            (Conn::Pool(Pool::Lite(p, on_wait)), Args::Lite(a)) => {
                let mut c = lite_conn(p, *on_wait).await?;
                sqlx::query_as_with(self.sql, a)
                    .fetch_all(&mut *c)
                    .await
                    .map_err(lite_err)
            }
            (Conn::Tx(Tx::Lite(t)), Args::Lite(a)) => sqlx::query_as_with(self.sql, a)
                .fetch_all(&mut **t)
                .await
                .map_err(lite_err),
            _ => Err(mismatch()),
        }
    }

    /// The first row, if any.
    pub async fn fetch_optional<'c, R: Row>(
        self,
        conn: impl Into<Conn<'c>>,
    ) -> StoreResult<Option<R>> {
        let args = self
            .args
            .map_err(|e| StoreError::Database(sqlx::Error::Encode(e)))?;
        match (conn.into(), args) {
            (Conn::Pool(Pool::Pg(p, _, limit)), Args::Pg(a)) => {
                bounded(
                    pool_limit(p, *limit),
                    leased(p, async |c| {
                        sqlx::query_as_with(self.sql, a).fetch_optional(c).await
                    }),
                )
                .await
            }
            (Conn::Tx(Tx::Pg(t, limit)), Args::Pg(a)) => {
                bounded(
                    *limit,
                    sqlx::query_as_with(self.sql, a).fetch_optional(t.conn()),
                )
                .await
            }
            (Conn::Pool(Pool::Lite(p, on_wait)), Args::Lite(a)) => {
                let mut c = lite_conn(p, *on_wait).await?;
                sqlx::query_as_with(self.sql, a)
                    .fetch_optional(&mut *c)
                    .await
                    .map_err(lite_err)
            }
            (Conn::Tx(Tx::Lite(t)), Args::Lite(a)) => sqlx::query_as_with(self.sql, a)
                .fetch_optional(&mut **t)
                .await
                .map_err(lite_err),
            _ => Err(mismatch()),
        }
    }

    /// The first row; [`StoreError::NotFound`] when there is none.
    pub async fn fetch_one<'c, R: Row>(self, conn: impl Into<Conn<'c>>) -> StoreResult<R> {
        self.fetch_optional(conn).await?.ok_or(StoreError::NotFound)
    }

    /// Runs the statement; the number of rows it changed.
    pub async fn execute<'c>(self, conn: impl Into<Conn<'c>>) -> StoreResult<u64> {
        let args = self
            .args
            .map_err(|e| StoreError::Database(sqlx::Error::Encode(e)))?;
        match (conn.into(), args) {
            (Conn::Pool(Pool::Pg(p, _, limit)), Args::Pg(a)) => bounded(
                pool_limit(p, *limit),
                leased(p, async |c| sqlx::query_with(self.sql, a).execute(c).await),
            )
            .await
            .map(|done| done.rows_affected()),
            (Conn::Tx(Tx::Pg(t, limit)), Args::Pg(a)) => {
                bounded(*limit, sqlx::query_with(self.sql, a).execute(t.conn()))
                    .await
                    .map(|done| done.rows_affected())
            }
            (Conn::Pool(Pool::Lite(p, on_wait)), Args::Lite(a)) => {
                let mut c = lite_conn(p, *on_wait).await?;
                sqlx::query_with(self.sql, a)
                    .execute(&mut *c)
                    .await
                    .map(|done| done.rows_affected())
                    .map_err(lite_err)
            }
            (Conn::Tx(Tx::Lite(t)), Args::Lite(a)) => sqlx::query_with(self.sql, a)
                .execute(&mut **t)
                .await
                .map(|done| done.rows_affected())
                .map_err(lite_err),
            _ => Err(mismatch()),
        }
    }

    /// The first column of the first row; [`StoreError::NotFound`] when there is no row.
    pub async fn scalar_one<'c, T>(self, conn: impl Into<Conn<'c>>) -> StoreResult<T>
    where
        (T,): Row,
    {
        self.fetch_one::<(T,)>(conn).await.map(|(v,)| v)
    }

    /// The first column of the first row, if there is one.
    pub async fn scalar_optional<'c, T>(self, conn: impl Into<Conn<'c>>) -> StoreResult<Option<T>>
    where
        (T,): Row,
    {
        Ok(self.fetch_optional::<(T,)>(conn).await?.map(|(v,)| v))
    }

    /// The first column of every row.
    pub async fn scalar_all<'c, T>(self, conn: impl Into<Conn<'c>>) -> StoreResult<Vec<T>>
    where
        (T,): Row,
    {
        Ok(self
            .fetch_all::<(T,)>(conn)
            .await?
            .into_iter()
            .map(|(v,)| v)
            .collect())
    }
}
