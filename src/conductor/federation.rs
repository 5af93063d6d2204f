//! Working one federation job: the federation's context (host and members), the driver call,
//! and the result committed with its notification.

use tracing::Instrument;

use super::Conductor;
use crate::domain::federation::{undo_member_change, Federation};
use crate::domain::job::retry::Blocked;
use crate::domain::job::{Job, JobPayload, NextStep, Operation};
use crate::domain::status::{FederationStatus, Verb};
use crate::domain::ClusterId;
use crate::drivers::{DriverError, FederationContext, FederationProgress, MemberChange};
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::{StoreError, StoreResult, Write};

use super::execute::{action_of, now, verb_of, Outcome};

/// One attempt of a federation job: its own member change, the clusters of its context that
/// still exist, and what the driver answered.
#[derive(Clone, Copy)]
struct Attempted<'a> {
    change: &'a MemberChange,
    exist: &'a [ClusterId],
    result: &'a Result<FederationProgress, DriverError>,
}

impl Conductor {
    /// The federation's host and members as drivers see them; the host's context carries
    /// `attempt`, the job's attempt (1 for a status poll).
    pub(crate) async fn federation_context(
        &self,
        f: &Federation,
        extra_members: &[ClusterId],
        attempt: i32,
    ) -> StoreResult<FederationContext> {
        let host = match self.store.find_cluster(&f.hostcluster_id).await? {
            Some(c) => Some(self.context(c, attempt).await?),
            None => None,
        };
        let mut uuids = f.member_ids.clone();
        for m in extra_members {
            if !uuids.contains(m) {
                uuids.push(*m);
            }
        }
        let members = self.store.clusters_by_uuid(&uuids).await?;
        Ok(FederationContext {
            federation: f.clone(),
            host,
            members,
        })
    }

    pub(super) async fn execute_federation(&self, job: &Job) -> StoreResult<Outcome> {
        let op = job.operation;
        let resource = job.resource.to_string();
        let change = match &job.payload {
            JobPayload::FederationUpdate { joined, unjoined } => MemberChange {
                joined: joined.clone(),
                unjoined: unjoined.clone(),
            },
            _ => MemberChange::default(),
        };
        let Some(f) = self.find_federation_of(job).await? else {
            self.store
                .commit(&[Write::FinishJob {
                    id: job.id,
                    owner: self.owner.clone(),
                    failed: false,
                    error: Some("the federation no longer exists".into()),
                }])
                .await?;
            return Ok(Outcome::Skipped {
                operation: op,
                resource,
            });
        };
        // The job applies exactly its own change: the clusters it joins and unjoins are in its
        // context whatever later requests did to the row's member list since.
        let own: Vec<ClusterId> = change
            .joined
            .iter()
            .chain(&change.unjoined)
            .copied()
            .collect();
        let ctx = self.federation_context(&f, &own, job.attempts).await?;
        let result = self.call_federation_driver(job, &ctx, &change).await;
        let exist: Vec<ClusterId> = ctx.members.iter().map(|c| c.uuid).collect();
        let mut current = f;
        for _ in 0..5 {
            let others_pending = self.others_pending(job).await?;
            let attempt = Attempted {
                change: &change,
                exist: &exist,
                result: &result,
            };
            let (writes, outcome) =
                self.federation_result_writes(job, &current, &attempt, others_pending);
            match self.store.commit(&writes).await {
                Ok(()) => return Ok(outcome),
                Err(StoreError::Stale) => {
                    if !self
                        .store
                        .renew_lease(job.id, &self.owner, self.lease())
                        .await?
                    {
                        return Ok(Outcome::LostLease {
                            operation: op,
                            resource,
                        });
                    }
                    match self.find_federation_of(job).await? {
                        Some(f) => current = f,
                        None => {
                            return Ok(Outcome::Skipped {
                                operation: op,
                                resource,
                            })
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Stale)
    }

    /// Runs a federation job's operation on its driver (unless its deadline has passed).
    async fn call_federation_driver(
        &self,
        job: &Job,
        ctx: &FederationContext,
        change: &MemberChange,
    ) -> Result<FederationProgress, DriverError> {
        let op = job.operation;
        if Self::deadline_passed(job) {
            return Err(DriverError::Permanent(
                job.gave_up_waiting()
                    .unwrap_or_else(|| "The federation operation timed out.".into()),
            ));
        }
        let d = match self.drivers.get(&job.driver) {
            None => {
                return Err(DriverError::Permanent(format!(
                    "The cluster driver '{}' is not available in this conductor.",
                    job.driver
                )))
            }
            Some(d) if !d.capabilities().federation => {
                return Err(DriverError::Permanent(format!(
                    "The cluster driver '{}' does not support federations.",
                    job.driver
                )))
            }
            Some(d) => d,
        };
        let span = tracing::info_span!("driver", driver = %job.driver, operation = op.as_str());
        match op {
            Operation::FederationCreate => d.create_federation(ctx).instrument(span).await,
            Operation::FederationUpdate => d.update_federation(ctx, change).instrument(span).await,
            _ => d.delete_federation(ctx).instrument(span).await,
        }
    }

    /// What a federation job's attempt commits: with another job waiting, only its own end;
    /// otherwise the federation is deleted, completed (with the driver's note), left in
    /// progress, retried or failed, and the event carries the job's own member change.
    fn federation_result_writes(
        &self,
        job: &Job,
        f: &Federation,
        attempt: &Attempted<'_>,
        others_pending: bool,
    ) -> (Vec<Write>, Outcome) {
        let Attempted {
            change: member_change,
            exist,
            result,
        } = *attempt;
        let operation = job.operation;
        let resource = job.resource.to_string();
        let verb = verb_of(operation);
        let change = (operation == Operation::FederationUpdate).then_some((
            member_change.joined.as_slice(),
            member_change.unjoined.as_slice(),
        ));
        if let JobPayload::FederationDelete {
            forced: Some(forced),
        } = &job.payload
        {
            let writes = self.forced_federation_delete_writes(job, f, result, forced);
            let outcome = Outcome::Completed {
                operation,
                resource,
            };
            return (writes, outcome);
        }
        let superseded = others_pending && !matches!(result, Err(DriverError::Transient(_)));
        let (next, event_outcome, failure) = match result {
            _ if superseded => {
                let error = result.as_ref().err().map(|e| e.to_string());
                let writes = vec![self.finish(job, error.is_some(), error)];
                return (
                    writes,
                    Outcome::Completed {
                        operation,
                        resource,
                    },
                );
            }
            Ok(FederationProgress::Started) => {
                let mut writes = Vec::new();
                if Blocked::is_blocked_reason(f.status_reason.as_deref()) {
                    let mut next = f.clone();
                    next.status_reason = None;
                    writes.push(Write::update_federation(&next));
                }
                writes.push(self.finish(job, false, None));
                return (
                    writes,
                    Outcome::Started {
                        operation,
                        resource,
                    },
                );
            }
            Ok(_) if verb == Verb::Delete => {
                let mut gone = f.clone();
                gone.status = FederationStatus::DeleteComplete;
                let event = events::federation_event(
                    &self.host,
                    Action::Delete,
                    EventOutcome::Success,
                    &gone,
                    None,
                    None,
                );
                let writes = vec![
                    Write::DeleteFederation { id: f.id },
                    Write::event(event),
                    self.finish(job, false, None),
                ];
                return (
                    writes,
                    Outcome::Completed {
                        operation,
                        resource,
                    },
                );
            }
            Ok(done) => {
                let mut next = f.clone();
                next.status = verb.federation_complete();
                next.status_reason = match done {
                    FederationProgress::DoneWithNote(note) => Some(note.clone()),
                    _ => None,
                };
                (next, EventOutcome::Success, None)
            }
            Err(e) => match job.next_step(e.failure(), now(), &self.retry_policy()) {
                NextStep::Retry { blocked } => {
                    return self.federation_blocked_writes(job, f, &blocked, e)
                }
                NextStep::Fail { reason } => {
                    let mut next = f.clone();
                    // A failed join or unjoin is undone, so that the same one is accepted
                    // again from UPDATE_FAILED (the way forward).
                    if operation == Operation::FederationUpdate {
                        next.member_ids = undo_member_change(
                            &f.member_ids,
                            &member_change.joined,
                            &member_change.unjoined,
                            exist,
                        );
                    }
                    next.status = verb.federation_failed();
                    next.status_reason = Some(reason.clone());
                    (next, EventOutcome::Failure, Some(reason))
                }
            },
        };
        let event = events::federation_event(
            &self.host,
            action_of(verb),
            event_outcome,
            &next,
            change,
            None,
        );
        let writes = vec![
            Write::update_federation(&next),
            Write::event(event),
            self.finish(job, failure.is_some(), failure.clone()),
        ];
        let outcome = match failure {
            Some(reason) => Outcome::Failed {
                operation,
                resource,
                reason,
            },
            None => Outcome::Completed {
                operation,
                resource,
            },
        };
        (writes, outcome)
    }
}
