//! A job refused transiently: its resource stays `*_IN_PROGRESS` with the
//! [`Blocked`] sentence in `status_reason`, written in the transaction that puts the job
//! back in the queue; the sentence goes once the job moves on.

use super::execute::{cluster_writes, Outcome};
use super::Conductor;
use crate::domain::federation::Federation;
use crate::domain::job::retry::{block, Blocked, RetryPolicy};
use crate::domain::job::Job;
use crate::drivers::{ClusterContext, DriverError};
use crate::store::Write;

impl Conductor {
    /// This conductor's retry rule (`[conductor] retry_delay`, `retry_max_delay`,
    /// `operation_timeout`).
    pub(super) fn retry_policy(&self) -> RetryPolicy {
        self.settings.retry_policy()
    }

    /// A refused attempt that [`Job::next_step`] retries: the job goes back to the queue
    /// with the error, to run again at `blocked.next_attempt`, blocked since the first
    /// refusal.
    pub(super) fn retry(
        &self,
        job: &Job,
        blocked: &Blocked,
        error: &DriverError,
    ) -> (Vec<Write>, Outcome) {
        tracing::info!(
            since = %blocked.since,
            next_attempt = %blocked.next_attempt,
            gives_up_at = %blocked.gives_up_at,
            error = %error,
            "job blocked"
        );
        (
            vec![Write::RetryJob {
                id: job.id,
                owner: self.owner.clone(),
                run_after: blocked.next_attempt,
                error: error.to_string(),
                blocked_since: blocked.since,
            }],
            Outcome::Retried {
                operation: job.operation,
                resource: job.resource.to_string(),
                error: error.to_string(),
            },
        )
    }

    /// A refused cluster job: the cluster and its node groups in progress show the
    /// blocked sentence, committed with the job's retry.
    pub(super) fn cluster_blocked_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        blocked: &Blocked,
        error: &DriverError,
    ) -> (Vec<Write>, Outcome) {
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        block(&mut c, &mut ngs, &blocked.reason());
        let mut writes = cluster_writes(ctx, &c, &ngs);
        let (retry, outcome) = self.retry(job, blocked, error);
        writes.extend(retry);
        (writes, outcome)
    }

    /// A refused federation job: the federation in progress shows the blocked sentence,
    /// committed with the job's retry.
    pub(super) fn federation_blocked_writes(
        &self,
        job: &Job,
        f: &Federation,
        blocked: &Blocked,
        error: &DriverError,
    ) -> (Vec<Write>, Outcome) {
        let (retry, outcome) = self.retry(job, blocked, error);
        if !f.status.is_in_progress() {
            return (retry, outcome);
        }
        let mut next = f.clone();
        next.status_reason = Some(blocked.reason());
        let mut writes = vec![Write::update_federation(&next)];
        writes.extend(retry);
        (writes, outcome)
    }
}
