//! The one retry policy of optimistic changes.
//!
//! A change reads its rows, plans, and commits guarded by the rows' versions; when another
//! request committed first, the store answers `Stale` and the change starts over from the read.
//! Every handler retries the same way: up to [`ATTEMPTS`] attempts, each retry after a random
//! pause of up to `2 + min(attempt, 20)` milliseconds, so that concurrent losers spread out
//! (64 concurrent joins of one federation each win within a few dozen rounds). When every
//! attempt lost, the answer is the store's `Stale` conflict (409, "retry").

use std::time::Duration;

use rand::Rng;

use crate::store::StoreError;

/// Attempts of one change, the first included.
pub const ATTEMPTS: u32 = 200;

/// How one attempt ended.
pub enum Attempt<T> {
    /// Committed, or nothing to commit: the answer.
    Done(T),
    /// Lost a race (the store answered `Stale`, or a guard failed): read again and retry.
    Retry,
}

/// Runs `attempt` until it is done, fails, or [`ATTEMPTS`] attempts lost their race.
pub async fn until_committed<T, E: From<StoreError>>(
    mut attempt: impl AsyncFnMut() -> Result<Attempt<T>, E>,
) -> Result<T, E> {
    for n in 0..ATTEMPTS {
        pause(n).await;
        if let Attempt::Done(answer) = attempt().await? {
            return Ok(answer);
        }
    }
    Err(StoreError::Stale.into())
}

/// Nothing before the first attempt; a short random pause before each retry.
async fn pause(attempt: u32) {
    if attempt > 0 {
        let ms = rand::thread_rng().gen_range(0..=2 + u64::from(attempt.min(20)));
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
