//! Single-row reads on PostgreSQL, batched under load.
//!
//! A GET reads one row with one statement. Under load, many callers run the same read at
//! once, each statement a round trip with its own two wake-ups and its own executor start-up
//! in the server. Here the callers of one read queue up while [`RUNNING_PER_READ`] of its
//! statements are out; when one comes back, everyone who queued meanwhile goes in the next
//! statement together (up to [`MOST_PER_STATEMENT`]). One caller alone runs the read's own
//! text with its own arguments, so an idle service sends exactly what it did before; several
//! run the read's batched form ([`batch_text`]): the same text as a `LATERAL` subquery over
//! the callers' arguments, unnested from one array per parameter, which keeps every caller's
//! visibility rule, order and `LIMIT` as its own.
//!
//! A statement runs in a task of its own, so a caller that goes away (its request cut off)
//! never leaves the others in its statement without an answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use sqlx::postgres::PgRow;
use sqlx::Row as _;
use tokio::sync::oneshot;
use tracing::Instrument;

use super::pool::{on_lease, PgConnections};
use crate::store::arg::Arg;
use crate::store::{StoreError, StoreResult};

/// How many statements of one read may be out at once (one per core of a small machine).
const RUNNING_PER_READ: usize = 2;
/// The most callers one statement answers.
pub(crate) const MOST_PER_STATEMENT: usize = 64;

/// The PostgreSQL type of an argument's array in the batched form.
fn sql_type(arg: &Arg) -> &'static str {
    match arg {
        Arg::Text(_) => "text",
        Arg::Int(_) => "int8",
    }
}

/// The batched form of a read whose parameters are `$1..$n` of the given types: the read as
/// a `LATERAL` subquery once per row of the unnested argument arrays, each result row tagged
/// with its caller's 1-based `batch_index`.
pub(crate) fn batch_text(single: &str, args: &[Arg]) -> String {
    debug_assert!(args.len() < 10, "placeholders are rewritten one digit long");
    let mut body = single.to_string();
    for n in (1..=args.len()).rev() {
        body = body.replace(&format!("${n}"), &format!("r.p{n}"));
    }
    let arrays: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| format!("${}::{}[]", i + 1, sql_type(a)))
        .collect();
    let names: Vec<String> = (1..=args.len()).map(|n| format!("p{n}")).collect();
    format!(
        "SELECT r.batch_index, b.* FROM unnest({}) WITH ORDINALITY AS r({}, batch_index) \
         CROSS JOIN LATERAL ({body}) b",
        arrays.join(", "),
        names.join(", ")
    )
}

/// A caller waiting for its rows.
struct Waiter {
    args: Vec<Arg>,
    reply: oneshot::Sender<StoreResult<Vec<PgRow>>>,
}

/// The callers of one read.
struct Queue {
    /// The read's batched text, made when the read is first queued.
    batch: Arc<str>,
    running: usize,
    waiting: Vec<Waiter>,
}

/// Counts of what the batcher sent, for tests and the operator's curiosity.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchCounts {
    /// Statements sent.
    pub statements: u64,
    /// Callers those statements answered.
    pub callers: u64,
}

/// The queues of every read, by the address of its (static) text.
#[derive(Default)]
pub(crate) struct Batcher {
    queues: Mutex<HashMap<usize, Queue>>,
    statements: AtomicU64,
    callers: AtomicU64,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

impl Batcher {
    fn queues(&self) -> MutexGuard<'_, HashMap<usize, Queue>> {
        // Every change under the lock is a push, a drain or a counter step: a panic elsewhere
        // cannot leave the map half-changed.
        self.queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn counts(&self) -> BatchCounts {
        BatchCounts {
            statements: self.statements.load(Ordering::Relaxed),
            callers: self.callers.load(Ordering::Relaxed),
        }
    }

    fn counted(&self, callers: usize) {
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.callers.fetch_add(callers as u64, Ordering::Relaxed);
    }
}

/// The rows `single` returns for `args`, read alone or with other callers of the same text.
/// A statement may take the wait for a connection and then `limit` (the statement timeout);
/// a caller waits at most for two: the one out when it came, then its own.
pub(crate) async fn fetch(
    conns: &PgConnections,
    batcher: &Arc<Batcher>,
    limit: Duration,
    single: &'static str,
    args: Vec<Arg>,
) -> StoreResult<Vec<PgRow>> {
    let key = single.as_ptr() as usize;
    let (reply, answer) = oneshot::channel();
    let start = {
        let mut queues = batcher.queues();
        let queue = queues.entry(key).or_insert_with(|| Queue {
            batch: Arc::from(batch_text(single, &args)),
            running: 0,
            waiting: Vec::new(),
        });
        queue.waiting.push(Waiter { args, reply });
        let start = queue.running < RUNNING_PER_READ;
        if start {
            queue.running += 1;
        }
        start
    };
    if start {
        let (conns, batcher) = (conns.clone(), batcher.clone());
        tokio::spawn(
            drain(conns, batcher, limit, single, key)
                .instrument(tracing::debug_span!("store.batched_read")),
        );
    }
    // The statement out when this caller came, then its own: each bounded by the wait for a
    // connection and the statement timeout.
    let bound = 2 * (conns.acquire_timeout() + limit);
    match tokio::time::timeout(bound, answer).await {
        Ok(Ok(rows)) => rows,
        Ok(Err(_)) => Err(StoreError::Unavailable(sqlx::Error::WorkerCrashed)),
        Err(_) => Err(StoreError::TimedOut(limit)),
    }
}

/// Gives back a running slot if a drain ends without emptying its queue (its task dropped).
struct Slot<'a> {
    batcher: &'a Batcher,
    key: usize,
    held: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.held {
            if let Some(q) = self.batcher.queues().get_mut(&self.key) {
                q.running = q.running.saturating_sub(1);
            }
        }
    }
}

/// Runs statements for the read's queue until nobody waits.
async fn drain(
    conns: PgConnections,
    batcher: Arc<Batcher>,
    limit: Duration,
    single: &'static str,
    key: usize,
) {
    let mut slot = Slot {
        batcher: &batcher,
        key,
        held: true,
    };
    loop {
        let (batch, text) = {
            let mut queues = batcher.queues();
            let Some(queue) = queues.get_mut(&key) else {
                slot.held = false;
                return;
            };
            queue.waiting.retain(|w| !w.reply.is_closed());
            if queue.waiting.is_empty() {
                queue.running -= 1;
                slot.held = false;
                return;
            }
            let n = queue.waiting.len().min(MOST_PER_STATEMENT);
            let batch: Vec<Waiter> = queue.waiting.drain(..n).collect();
            (batch, queue.batch.clone())
        };
        batcher.counted(batch.len());
        if batch.len() == 1 {
            if let Some(Waiter { args, reply }) = batch.into_iter().next() {
                let rows = run(&conns, limit, single, args).await;
                let _ = reply.send(rows);
            }
            continue;
        }
        let (argsets, replies): (Vec<Vec<Arg>>, Vec<_>) =
            batch.into_iter().map(|w| (w.args, w.reply)).unzip();
        match run_batch(&conns, limit, &text, &argsets).await {
            Ok(per_caller) => {
                for (reply, rows) in replies.into_iter().zip(per_caller) {
                    let _ = reply.send(Ok(rows));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(shared(&e)));
                }
            }
        }
    }
}

/// One caller's read: its own text, its own arguments.
async fn run(
    conns: &PgConnections,
    limit: Duration,
    single: &str,
    args: Vec<Arg>,
) -> StoreResult<Vec<PgRow>> {
    let mut q = sqlx::query(single);
    for a in args {
        q = match a {
            Arg::Text(s) => q.bind(s),
            Arg::Int(i) => q.bind(i),
        };
    }
    on_lease(conns, limit, async |c| q.fetch_all(c).await).await
}

/// Several callers' reads in one statement: their rows, in the callers' order.
async fn run_batch(
    conns: &PgConnections,
    limit: Duration,
    text: &str,
    argsets: &[Vec<Arg>],
) -> StoreResult<Vec<Vec<PgRow>>> {
    let first = argsets.first().map(Vec::as_slice).unwrap_or_default();
    let same_shape = argsets.iter().all(|a| {
        a.len() == first.len() && a.iter().zip(first).all(|(x, y)| sql_type(x) == sql_type(y))
    });
    if !same_shape {
        return Err(StoreError::Corrupt(
            "callers of one read bound different arguments".into(),
        ));
    }
    let mut q = sqlx::query(text);
    for (p, kind) in first.iter().enumerate() {
        q = match kind {
            Arg::Text(_) => q.bind(
                argsets
                    .iter()
                    .map(|a| match &a[p] {
                        Arg::Text(s) => s.as_str(),
                        Arg::Int(_) => "",
                    })
                    .collect::<Vec<&str>>(),
            ),
            Arg::Int(_) => q.bind(
                argsets
                    .iter()
                    .map(|a| match &a[p] {
                        Arg::Int(i) => *i,
                        Arg::Text(_) => 0,
                    })
                    .collect::<Vec<i64>>(),
            ),
        };
    }
    let rows = on_lease(conns, limit, async |c| q.fetch_all(c).await).await?;
    let mut per_caller: Vec<Vec<PgRow>> = (0..argsets.len()).map(|_| Vec::new()).collect();
    for row in rows {
        let index: i64 = row
            .try_get("batch_index")
            .map_err(|e| StoreError::Corrupt(format!("batched read without its index: {e}")))?;
        let slot = usize::try_from(index - 1)
            .ok()
            .and_then(|i| per_caller.get_mut(i))
            .ok_or_else(|| {
                StoreError::Corrupt(format!("batched read index {index} out of range"))
            })?;
        slot.push(row);
    }
    Ok(per_caller)
}

/// What each caller of a failed statement is told: the same kind of failure (a timeout, an
/// outage, an error), described.
fn shared(e: &StoreError) -> StoreError {
    match e {
        StoreError::TimedOut(d) => StoreError::TimedOut(*d),
        StoreError::Unavailable(inner) => {
            StoreError::Unavailable(sqlx::Error::Protocol(inner.to_string()))
        }
        StoreError::Corrupt(s) => StoreError::Corrupt(s.clone()),
        other => StoreError::Database(sqlx::Error::Protocol(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batched_text_reads_the_single_text_once_per_callers_arguments() {
        let single = "SELECT t.a FROM x t WHERE t.p = $1 AND (t.k = $2 OR t.id = $3) LIMIT 2";
        let args = [Arg::Text("p".into()), Arg::Text("k".into()), Arg::Int(1)];
        assert_eq!(
            batch_text(single, &args),
            "SELECT r.batch_index, b.* FROM unnest($1::text[], $2::text[], $3::int8[]) \
             WITH ORDINALITY AS r(p1, p2, p3, batch_index) CROSS JOIN LATERAL (SELECT t.a \
             FROM x t WHERE t.p = r.p1 AND (t.k = r.p2 OR t.id = r.p3) LIMIT 2) b"
        );
    }
}
