//! PostgreSQL's connection pool.
//!
//! At most `max_connections` connections. Idle ones are reused newest first, so a light load
//! keeps few of them warm. A connection goes back to the pool as soon as its statement has
//! been answered; nothing more is sent on it on the way back. (sqlx's own pool pings every
//! connection it takes back, a second round trip to the server for every statement.)
//!
//! What makes that safe:
//! - a statement answered, or refused by the server with an error, leaves the connection
//!   ready for the next one. sqlx reads up to the server's `ReadyForQuery` before it sends
//!   anything new;
//! - a connection whose statement was cut off (its future dropped by a timeout), or that
//!   failed with an I/O or protocol error, is closed, never reused;
//! - a transaction dropped without commit is rolled back on its own connection before that
//!   connection is reused. Failing that, the connection is closed;
//! - a connection idle for longer than [`IDLE_BEFORE_PING`] is pinged before it is handed out.
//!   Those are the ones a server restart or a failover leaves dead; a busy connection proves
//!   itself with every statement it runs. Idle connections past [`IDLE_TIMEOUT`] or
//!   [`MAX_LIFETIME`] are closed when next taken.
//!
//! Plans are not kept for ever: a connection whose prepared statements are older than
//! [`PLAN_REFRESH`] closes them (one round trip) before it is handed out, and prepares them
//! again as they are next used. PostgreSQL caches a prepared statement's generic plan once
//! five runs found it no worse than a custom one, and keeps it until the table is analyzed
//! or altered. A statement first run while its table held a few rows gets a sequential scan,
//! the cheapest plan then; with autovacuum off (or before it next analyzes) that plan stayed
//! as the table grew, and a single-row GET by uuid of a federation fell from 40,000 to 500 a
//! second after 70,000 federations were created. Planning every run instead
//! (`plan_cache_mode = force_custom_plan`) costs a third of the single-row GETs' rate.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection, Executor, Row};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::store::dialect::pg_constraint_name;
use crate::store::{map_sqlx, StoreError, StoreResult, WaitObserver};

/// A connection idle longer than this is pinged before it is handed out.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(2);
/// An idle connection older than this is closed rather than reused (as sqlx's default).
const IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// A connection older than this is closed rather than reused (as sqlx's default).
const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);
/// Prepared statements older than this are closed before their connection is handed out, so
/// their plans are made again for the tables as they are now.
const PLAN_REFRESH: Duration = Duration::from_secs(10);
/// The most a rollback of an abandoned transaction, or a ping, may take.
const HOUSEKEEPING_LIMIT: Duration = Duration::from_secs(2);
/// The first pause before a refused connection is tried again; it doubles up to the limit.
const RETRY_PAUSE: Duration = Duration::from_millis(10);
const RETRY_PAUSE_LIMIT: Duration = Duration::from_millis(500);

/// The pool; clones share it.
#[derive(Clone)]
pub(crate) struct PgConnections {
    inner: Arc<Inner>,
}

struct Inner {
    options: PgConnectOptions,
    max: u32,
    acquire_timeout: Duration,
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<Idle>>,
    open: AtomicU32,
    on_wait: WaitObserver,
    /// See [`PLAN_REFRESH`].
    plan_refresh: Duration,
}

struct Idle {
    conn: PgConnection,
    created: Instant,
    since: Instant,
    /// When its prepared statements were last closed (or the connection made).
    planned: Instant,
}

impl std::fmt::Debug for PgConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConnections")
            .field("max", &self.inner.max)
            .field("open", &self.inner.open.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn idle(&self) -> MutexGuard<'_, Vec<Idle>> {
        // The list is only pushed and popped: a panic elsewhere cannot leave it half-changed.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn forget_one(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PgConnections {
    /// A pool of at most `max` connections made with `options`; a caller waits at most
    /// `acquire_timeout` for one (connecting included). No connection is opened yet.
    pub fn new(
        options: PgConnectOptions,
        max: u32,
        acquire_timeout: Duration,
        on_wait: WaitObserver,
    ) -> PgConnections {
        let max = max.max(1);
        PgConnections {
            inner: Arc::new(Inner {
                options,
                max,
                acquire_timeout,
                permits: Arc::new(Semaphore::new(max as usize)),
                idle: Mutex::new(Vec::with_capacity(max as usize)),
                open: AtomicU32::new(0),
                on_wait,
                plan_refresh: PLAN_REFRESH,
            }),
        }
    }

    /// The pool with prepared statements refreshed after `every` rather than [`PLAN_REFRESH`].
    #[cfg(test)]
    fn with_plan_refresh(self, every: Duration) -> PgConnections {
        let inner = Arc::into_inner(self.inner).expect("a pool not yet shared");
        PgConnections {
            inner: Arc::new(Inner {
                plan_refresh: every,
                ..inner
            }),
        }
    }

    pub fn connect_options(&self) -> &PgConnectOptions {
        &self.inner.options
    }

    pub fn acquire_timeout(&self) -> Duration {
        self.inner.acquire_timeout
    }

    /// Open connections, idle ones, and the most there may be.
    pub fn status(&self) -> (u32, usize, u32) {
        let idle = self.inner.idle().len();
        (
            self.inner.open.load(Ordering::Relaxed),
            idle,
            self.inner.max,
        )
    }

    /// A connection of its own, outside the pool and its limit (for migrations).
    pub async fn connect_detached(&self) -> Result<PgConnection, sqlx::Error> {
        self.inner.options.connect().await
    }

    /// A connection: an idle one, or a new one while the pool is below its size. Waits for
    /// one at most the acquire timeout, then [`sqlx::Error::PoolTimedOut`].
    pub async fn acquire(&self) -> Result<Lease, sqlx::Error> {
        let started = Instant::now();
        let deadline = started + self.inner.acquire_timeout;
        let permit = match tokio::time::timeout_at(
            deadline.into(),
            self.inner.permits.clone().acquire_owned(),
        )
        .await
        {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(sqlx::Error::PoolClosed),
            Err(_) => return Err(sqlx::Error::PoolTimedOut),
        };
        let lease = self.lease(permit, deadline).await;
        if let Some(observe) = self.inner.on_wait {
            observe(started.elapsed());
        }
        lease
    }

    async fn lease(
        &self,
        permit: OwnedSemaphorePermit,
        deadline: Instant,
    ) -> Result<Lease, sqlx::Error> {
        loop {
            let idle = self.inner.idle().pop();
            let Some(mut idle) = idle else { break };
            let now = Instant::now();
            let stale = now.duration_since(idle.created) > MAX_LIFETIME
                || now.duration_since(idle.since) > IDLE_TIMEOUT;
            if stale {
                self.inner.forget_one();
                close_in_background(idle.conn);
                continue;
            }
            // Closing the statements also proves the connection alive, as a ping would.
            let refresh = now.duration_since(idle.planned) > self.inner.plan_refresh;
            let alive = if refresh {
                within_housekeeping_limit(idle.conn.clear_cached_statements()).await
            } else if now.duration_since(idle.since) > IDLE_BEFORE_PING {
                within_housekeeping_limit(idle.conn.ping()).await
            } else {
                true
            };
            if !alive {
                self.inner.forget_one();
                continue;
            }
            if refresh {
                idle.planned = Instant::now();
            }
            return Ok(Lease::new(
                idle.conn,
                idle.created,
                idle.planned,
                permit,
                &self.inner,
            ));
        }
        let conn = self.connect_until(deadline).await?;
        self.inner.open.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        Ok(Lease::new(conn, now, now, permit, &self.inner))
    }

    /// Connects, trying again after a refused or broken attempt until `deadline` (a server
    /// restarting refuses connections for a moment). An error the server itself sent (bad
    /// credentials, too many connections) is final.
    async fn connect_until(&self, deadline: Instant) -> Result<PgConnection, sqlx::Error> {
        let mut pause = RETRY_PAUSE;
        loop {
            let attempt =
                tokio::time::timeout_at(deadline.into(), self.inner.options.connect()).await;
            match attempt {
                Ok(Ok(conn)) => return Ok(conn),
                Ok(Err(e @ (sqlx::Error::Io(_) | sqlx::Error::Tls(_)))) => {
                    if Instant::now() + pause >= deadline {
                        return Err(e);
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(RETRY_PAUSE_LIMIT);
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(sqlx::Error::PoolTimedOut),
            }
        }
    }
}

/// Closes a connection politely (a `Terminate` message) without making anyone wait for it.
fn close_in_background(conn: PgConnection) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let _ = tokio::time::timeout(HOUSEKEEPING_LIMIT, conn.close()).await;
        });
    }
}

/// Whether housekeeping on a connection (a ping, closing its statements, a rollback)
/// succeeded within [`HOUSEKEEPING_LIMIT`].
async fn within_housekeeping_limit<T, E>(
    work: impl std::future::Future<Output = Result<T, E>>,
) -> bool {
    matches!(
        tokio::time::timeout(HOUSEKEEPING_LIMIT, work).await,
        Ok(Ok(_))
    )
}

/// A connection taken from the pool, and its place in it. Dropped, it goes back to the pool
/// if it was left ready ([`Lease::settle`], [`Lease::set_reusable`]), else it is closed.
pub(crate) struct Lease {
    conn: Option<PgConnection>,
    created: Instant,
    planned: Instant,
    reusable: bool,
    pool: Arc<Inner>,
    // Released after the connection is back in the idle list (fields drop after `drop`).
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    fn new(
        conn: PgConnection,
        created: Instant,
        planned: Instant,
        permit: OwnedSemaphorePermit,
        pool: &Arc<Inner>,
    ) -> Lease {
        Lease {
            conn: Some(conn),
            created,
            planned,
            reusable: false,
            pool: pool.clone(),
            _permit: permit,
        }
    }

    /// The connection.
    pub fn conn(&mut self) -> &mut PgConnection {
        // Present from `new` until `drop` takes it.
        self.conn
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }

    /// Marks the connection reusable or not after a statement ran on it outside a
    /// transaction: answered, or refused by the server, it is ready for the next one; cut off
    /// by an I/O or protocol error, it is not.
    pub fn settle<T>(&mut self, outcome: &Result<T, sqlx::Error>) {
        self.reusable = matches!(
            outcome,
            Ok(_) | Err(sqlx::Error::Database(_) | sqlx::Error::RowNotFound)
        );
    }

    pub fn set_reusable(&mut self, reusable: bool) {
        self.reusable = reusable;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.reusable {
            let now = Instant::now();
            self.pool.idle().push(Idle {
                conn,
                created: self.created,
                since: now,
                planned: self.planned,
            });
        } else {
            self.pool.forget_one();
            close_in_background(conn);
        }
    }
}

/// A transaction on a leased connection. Dropped without [`PgTx::commit`], it is rolled back
/// in the background, the connection held until then; if that fails, the connection is
/// closed (and the server rolls back).
///
/// It knows its transaction id from the start (`txid_current()`, sent with `BEGIN` in one
/// round trip), so that a COMMIT whose answer is lost can be looked up afterwards on another
/// connection ([`PgTx::outcome`]).
pub(crate) struct PgTx {
    lease: Option<Lease>,
    xid: i64,
    pool: PgConnections,
}

/// What the server says of a transaction whose COMMIT went unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Committed,
    Aborted,
    /// Still running (its COMMIT not yet arrived), or no longer known to the server.
    Unknown,
}

impl PgTx {
    /// Starts a transaction on `lease` and reads its id, in one round trip.
    pub async fn begin(mut lease: Lease) -> Result<PgTx, sqlx::Error> {
        lease.set_reusable(false);
        let pool = PgConnections {
            inner: lease.pool.clone(),
        };
        // Two statements in one simple-query message: one round trip, as `BEGIN` alone was.
        let rows = lease
            .conn()
            .fetch_all("BEGIN; SELECT txid_current()")
            .await?;
        let xid = match rows.first() {
            Some(row) => row.try_get::<i64, _>(0)?,
            None => {
                return Err(sqlx::Error::Protocol(
                    "BEGIN; SELECT txid_current() returned no row".into(),
                ))
            }
        };
        Ok(PgTx {
            lease: Some(lease),
            xid,
            pool,
        })
    }

    pub fn conn(&mut self) -> &mut PgConnection {
        self.lease
            .as_mut()
            .expect("a transaction holds its lease until it ends")
            .conn()
    }

    /// This transaction's id and the pool to ask about it, for [`PgTx::outcome`] once the
    /// transaction itself is gone.
    pub fn handle(&self) -> (PgConnections, i64) {
        (self.pool.clone(), self.xid)
    }

    /// Commits; the connection goes back to the pool only if the server confirmed.
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        let Some(mut lease) = self.lease.take() else {
            return Ok(());
        };
        lease.conn().execute("COMMIT").await?;
        lease.set_reusable(true);
        Ok(())
    }

    /// Asks the server, on another connection, what became of transaction `xid` (whose COMMIT
    /// was sent and never answered), until it is settled or `until` passes: `txid_status()`
    /// says `committed` or `aborted` once the server has seen the COMMIT or the broken
    /// connection, and `in progress` until then.
    pub async fn outcome(pool: &PgConnections, xid: i64, until: Instant) -> Outcome {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome::Unknown;
            }
            let asked = tokio::time::timeout(
                left,
                leased(pool, async |c| {
                    sqlx::query_scalar::<_, Option<String>>("SELECT txid_status($1)")
                        .bind(xid)
                        .fetch_one(c)
                        .await
                }),
            )
            .await;
            match asked {
                Ok(Ok(Some(status))) if status == "committed" => return Outcome::Committed,
                Ok(Ok(Some(status))) if status == "aborted" => return Outcome::Aborted,
                // Too old to be known (NULL): it cannot be settled any more.
                Ok(Ok(None)) => return Outcome::Unknown,
                // `in progress`, or the server could not be asked yet: again, shortly.
                Ok(Ok(Some(_))) | Ok(Err(_)) => {
                    let pause = OUTCOME_POLL.min(until.saturating_duration_since(Instant::now()));
                    tokio::time::sleep(pause).await;
                }
                Err(_) => return Outcome::Unknown,
            }
        }
    }
}

/// How often [`PgTx::outcome`] asks again while a transaction is still in progress.
const OUTCOME_POLL: Duration = Duration::from_millis(20);

impl Drop for PgTx {
    fn drop(&mut self) {
        let Some(mut lease) = self.lease.take() else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let rolled_back = within_housekeeping_limit(lease.conn().execute("ROLLBACK")).await;
                lease.set_reusable(rolled_back);
            });
        }
    }
}

// ---- Statements on the pool, bounded ----------------------------------------------------

/// A PostgreSQL error as the store reports it.
pub(crate) fn pg_err(e: sqlx::Error) -> StoreError {
    map_sqlx(e, pg_constraint_name)
}

/// A PostgreSQL operation, given `limit` to finish: past it the caller gets
/// [`StoreError::TimedOut`] at once (a partitioned network never answers; the server, told the
/// same timeout, cancels the statement or ends the idle transaction on its side).
pub(crate) async fn bounded<T>(
    limit: Duration,
    op: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> StoreResult<T> {
    match tokio::time::timeout(limit, op).await {
        Ok(done) => done.map_err(pg_err),
        Err(_) => Err(StoreError::TimedOut(limit)),
    }
}

/// The time a statement on the pool may take: waiting for a connection, then the statement.
pub(crate) fn pool_limit(pool: &PgConnections, statement: Duration) -> Duration {
    pool.acquire_timeout() + statement
}

/// Runs `op` on a leased connection, which goes back to the pool if `op` left it ready.
pub(crate) async fn leased<T>(
    pool: &PgConnections,
    op: impl AsyncFnOnce(&mut sqlx::PgConnection) -> Result<T, sqlx::Error>,
) -> Result<T, sqlx::Error> {
    let mut lease: Lease = pool.acquire().await?;
    let done = op(lease.conn()).await;
    lease.settle(&done);
    done
}

/// Runs `op` on a leased connection of `pool`, bounded as any statement on the pool is.
pub(crate) async fn on_lease<T>(
    pool: &PgConnections,
    limit: Duration,
    op: impl AsyncFnOnce(&mut sqlx::PgConnection) -> Result<T, sqlx::Error>,
) -> StoreResult<T> {
    bounded(pool_limit(pool, limit), leased(pool, op)).await
}

#[cfg(test)]
mod tests {
    //! On the test PostgreSQL server (`FLEETYARD_TEST_PG_URL`), with statements that need no
    //! table of the project's: backend ids, sleeps and temporary tables.

    use std::str::FromStr;
    use std::sync::atomic::AtomicU64;

    use super::*;

    fn options() -> PgConnectOptions {
        let url = std::env::var("FLEETYARD_TEST_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        PgConnectOptions::from_str(&url).expect("a valid test URL")
    }

    async fn backend_pid(pool: &PgConnections) -> i32 {
        let mut lease = pool.acquire().await.expect("a connection");
        let pid = sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()")
            .fetch_one(lease.conn())
            .await;
        lease.settle(&pid);
        pid.expect("a pid")
    }

    /// A transaction on the pool's connection that has created the temporary table `name`.
    async fn tx_with_table(pool: &PgConnections, name: &str) -> PgTx {
        let mut tx = PgTx::begin(pool.acquire().await.expect("a connection"))
            .await
            .expect("begins");
        sqlx::query(&format!("CREATE TEMPORARY TABLE {name} (x int)"))
            .execute(tx.conn())
            .await
            .expect("creates");
        tx
    }

    /// Whether the leased connection's session has the temporary table `name`.
    async fn has_table(lease: &mut Lease, name: &str) -> bool {
        let table: Option<String> = sqlx::query_scalar("SELECT to_regclass($1)::text")
            .bind(format!("pg_temp.{name}"))
            .fetch_one(lease.conn())
            .await
            .expect("reads");
        table.is_some()
    }

    #[tokio::test]
    async fn a_connection_answered_is_reused_and_counted_once() {
        let pool = PgConnections::new(options(), 4, Duration::from_secs(2), None);
        let first = backend_pid(&pool).await;
        for _ in 0..20 {
            assert_eq!(
                backend_pid(&pool).await,
                first,
                "the same connection serves"
            );
        }
        assert_eq!(pool.status(), (1, 1, 4));
    }

    /// How many times the leased connection's session has run its prepared statement `text`
    /// (`None`: not prepared on it).
    async fn prepared_runs(lease: &mut Lease, text: &str) -> Option<i64> {
        let runs: Option<i64> = sqlx::query_scalar(
            "SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE statement = $1",
        )
        .bind(text)
        .fetch_optional(lease.conn())
        .await
        .expect("reads");
        runs
    }

    #[tokio::test]
    async fn prepared_statements_are_made_again_after_the_plan_refresh() {
        let pool = PgConnections::new(options(), 1, Duration::from_secs(2), None)
            .with_plan_refresh(Duration::from_millis(300));
        let text = "SELECT $1::int + 1";
        async fn run(lease: &mut Lease, text: &str) {
            let two: i32 = sqlx::query_scalar(text)
                .bind(1)
                .fetch_one(lease.conn())
                .await
                .expect("runs");
            assert_eq!(two, 2);
        }
        let first = backend_pid(&pool).await;
        for _ in 0..6 {
            let mut lease = pool.acquire().await.expect("a connection");
            run(&mut lease, text).await;
            lease.set_reusable(true);
        }
        let mut lease = pool.acquire().await.expect("a connection");
        assert_eq!(prepared_runs(&mut lease, text).await, Some(6), "cached");
        lease.set_reusable(true);
        drop(lease);

        tokio::time::sleep(Duration::from_millis(400)).await;
        let mut lease = pool.acquire().await.expect("a connection");
        assert_eq!(
            prepared_runs(&mut lease, text).await,
            None,
            "closed before the connection was handed out"
        );
        run(&mut lease, text).await;
        assert_eq!(
            prepared_runs(&mut lease, text).await,
            Some(1),
            "prepared again"
        );
        lease.set_reusable(true);
        drop(lease);
        assert_eq!(backend_pid(&pool).await, first, "the same connection");
    }

    #[tokio::test]
    async fn a_server_error_leaves_the_connection_reusable() {
        let pool = PgConnections::new(options(), 1, Duration::from_secs(2), None);
        let first = backend_pid(&pool).await;
        let mut lease = pool.acquire().await.expect("a connection");
        let failed = sqlx::query("SELECT 1/0").execute(lease.conn()).await;
        assert!(
            matches!(failed, Err(sqlx::Error::Database(_))),
            "{failed:?}"
        );
        lease.settle(&failed);
        drop(lease);
        assert_eq!(backend_pid(&pool).await, first);
    }

    #[tokio::test]
    async fn a_statement_cut_off_closes_its_connection() {
        let pool = PgConnections::new(options(), 1, Duration::from_secs(2), None);
        let first = backend_pid(&pool).await;
        let cut = tokio::time::timeout(Duration::from_millis(50), async {
            let mut lease = pool.acquire().await.expect("a connection");
            let slept = sqlx::query("SELECT pg_sleep(5)")
                .execute(lease.conn())
                .await;
            lease.settle(&slept);
        })
        .await;
        assert!(cut.is_err(), "the sleep was cut off");
        assert_eq!(pool.status().0, 0, "the cut-off connection is gone");
        let next = backend_pid(&pool).await;
        assert_ne!(next, first, "a new connection serves the next statement");
    }

    #[tokio::test]
    async fn a_transaction_dropped_is_rolled_back_before_its_connection_is_reused() {
        let pool = PgConnections::new(options(), 1, Duration::from_secs(2), None);
        let first = backend_pid(&pool).await;
        let tx = tx_with_table(&pool, "dropped_tx").await;
        drop(tx);
        // The single connection comes back only once the rollback is done.
        let mut lease = pool.acquire().await.expect("the connection again");
        assert!(
            !has_table(&mut lease, "dropped_tx").await,
            "the transaction's table was rolled back"
        );
        // A savepoint is refused outside a transaction block (25P01).
        let savepoint = sqlx::query("SAVEPOINT probe").execute(lease.conn()).await;
        match savepoint {
            Err(sqlx::Error::Database(e)) => {
                assert_eq!(e.code().as_deref(), Some("25P01"), "{e}")
            }
            other => panic!("a transaction is still open on the reused connection: {other:?}"),
        }
        lease.set_reusable(true);
        drop(lease);
        assert_eq!(
            backend_pid(&pool).await,
            first,
            "the same connection serves"
        );
    }

    #[tokio::test]
    async fn a_transaction_committed_keeps_its_work_and_its_connection() {
        let pool = PgConnections::new(options(), 1, Duration::from_secs(2), None);
        let first = backend_pid(&pool).await;
        let tx = tx_with_table(&pool, "committed_tx").await;
        tx.commit().await.expect("commits");
        let mut lease = pool.acquire().await.expect("the connection again");
        assert!(
            has_table(&mut lease, "committed_tx").await,
            "the committed table is there"
        );
        lease.set_reusable(true);
        drop(lease);
        assert_eq!(backend_pid(&pool).await, first);
    }

    static WAITS: AtomicU64 = AtomicU64::new(0);
    static WAITED_MS: AtomicU64 = AtomicU64::new(0);

    fn observe(waited: Duration) {
        WAITS.fetch_add(1, Ordering::Relaxed);
        WAITED_MS.fetch_max(waited.as_millis() as u64, Ordering::Relaxed);
    }

    #[tokio::test]
    async fn callers_beyond_the_size_wait_their_turn_and_time_out_past_the_limit() {
        let pool = PgConnections::new(options(), 2, Duration::from_millis(300), Some(observe));
        let held = [
            pool.acquire().await.expect("first"),
            pool.acquire().await.expect("second"),
        ];
        let started = Instant::now();
        let third = pool.acquire().await;
        assert!(
            matches!(third, Err(sqlx::Error::PoolTimedOut)),
            "{:?}",
            third.err()
        );
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(2));
        assert_eq!(pool.status().0, 2, "never more than the size");

        // A caller waiting gets the connection the moment one is given back.
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { backend_pid(&pool).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let [mut a, b] = held;
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(a.conn())
            .await
            .expect("reads");
        a.set_reusable(true);
        drop(a);
        assert_eq!(waiter.await.expect("the waiter ends"), pid);
        drop(b);
        assert!(
            WAITS.load(Ordering::Relaxed) >= 3,
            "every served caller is observed"
        );
        assert!(
            WAITED_MS.load(Ordering::Relaxed) >= 90,
            "the wait was observed as such"
        );
    }

    #[tokio::test]
    async fn a_refused_server_is_tried_until_the_acquire_timeout_then_reported() {
        let refused = options().port(1);
        let pool = PgConnections::new(refused, 1, Duration::from_millis(300), None);
        let started = Instant::now();
        let failed = pool.acquire().await;
        let waited = started.elapsed();
        assert!(
            matches!(failed, Err(sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut)),
            "{:?}",
            failed.err()
        );
        assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(2));
        assert_eq!(pool.status(), (0, 0, 1));
    }
}
