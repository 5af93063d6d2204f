//! A node group's rolling replacement (`nodegroup.roll`): each attempt of the job reads the
//! group's machines, starts replacements up to `max_batch_size` under way (each machine's new
//! spec and `Provisioning` committed before the driver is asked), asks the driver about every
//! replacement under way, and commits each one that finished as it finishes. The job then goes
//! back to the queue until no machine is left; so the rows alone say what is left, and a
//! conductor killed at any point, or a roll stopped by a failure and retried, replaces only the
//! rest, never one machine twice. A driver's refusal stops the roll: the group and its cluster
//! go `UPDATE_FAILED` with the reason, the machines replaced stay replaced, and the ones under
//! way are `Failed` (replaced again by the retry).
//!
//! A driver that rolls a group as a whole ([`crate::drivers::Driver::rolls_whole_group`]: the
//! kubernetes driver's master group, which its KubeadmControlPlane renews) gets every machine
//! left at once, and one `roll_nodegroup` question per attempt stands for all of them; its
//! answer is each machine's. The driver keeps its own progress, so a restart asks it again.

use futures_util::future::join_all;

use super::execute::{complete, fail, now, Outcome};
use super::machine_ops::{done_machine, failed_machine};
use super::Conductor;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::job::{Job, JobPayload, JobResource, NextStep};
use crate::domain::machine::roll::{self, RollState, RollTarget};
use crate::domain::machine::{Machine, MachinePhase};
use crate::domain::status::{ClusterStatus, Verb};
use crate::domain::NodeGroupId;
use crate::drivers::{ClusterContext, DriverError, Progress};
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::{StoreError, StoreResult, Write};

/// What one machine's replacement answered in this attempt.
type Answer = (Machine, Result<Progress, DriverError>);

impl Conductor {
    pub(super) async fn execute_roll(&self, job: &Job) -> StoreResult<Outcome> {
        let JobPayload::NodegroupRoll {
            nodegroup,
            max_batch_size,
            ref kubelet,
        } = job.payload
        else {
            return self.skip_roll(job, "not a rolling replacement").await;
        };
        let cluster = match job.resource {
            JobResource::Cluster(id) => self.store.find_cluster(&id).await?,
            JobResource::Federation(_) => None,
        };
        let Some(cluster) = cluster else {
            return self.skip_roll(job, "the cluster no longer exists").await;
        };
        let ctx = self.context(cluster, job.attempts).await?;
        let rolling = ctx
            .nodegroups
            .iter()
            .find(|n| n.uuid == nodegroup && n.status == ClusterStatus::UpdateInProgress);
        let Some(ng) = rolling.cloned() else {
            return self
                .skip_roll(job, "the node group is gone or no longer being updated")
                .await;
        };
        let target = RollTarget::of(&ng).with_kubelet(kubelet.clone());
        let whole = self
            .drivers
            .get(&job.driver)
            .is_some_and(|d| d.rolls_whole_group(&ng));
        // A whole group's roll starts every machine left at once.
        let max_batch_size = if whole { i32::MAX } else { max_batch_size };
        let machines = self.store.nodegroup_machines(&nodegroup).await?;
        let plan = roll::plan(&machines, &target, max_batch_size);
        if plan.finished() {
            return self.commit_roll_end(job, &ctx, &ng, None).await;
        }
        let started = !plan.start.is_empty();
        if started {
            let writes = self.start_writes(&plan.start, &target);
            match self.store.commit(&writes).await {
                Ok(()) => {}
                // A machine changed meanwhile: look again at once.
                Err(StoreError::Stale) => return self.requeue_roll(job, true).await,
                Err(e) => return Err(e),
            }
        }
        // The replacements under way, the ones just started among them, as stored now.
        let machines = self.store.nodegroup_machines(&nodegroup).await?;
        let in_flight: Vec<Machine> = machines
            .into_iter()
            .filter(|m| roll::state(m, &target) == RollState::InFlight)
            .collect();
        let answers = self.ask_driver(job, &ctx, &ng, whole, in_flight).await;
        let mut progressed = started;
        let mut refusal: Option<(Machine, DriverError)> = None;
        let mut unfinished = Vec::new();
        for (m, answer) in answers {
            match answer {
                Ok(Progress::Done(obs)) => {
                    let payload = JobPayload::MachineReplace { machine: m.uuid };
                    let next = done_machine(&m, &payload, &obs);
                    let event = events::machine_event(
                        &self.host,
                        Action::Update,
                        EventOutcome::Success,
                        &next,
                        None,
                    );
                    let writes = vec![
                        Write::UpdateMachine {
                            machine: Box::new(next),
                            from: vec![MachinePhase::Provisioning],
                        },
                        Write::event(event),
                    ];
                    match self.store.commit(&writes).await {
                        Ok(()) | Err(StoreError::Stale) => progressed = true,
                        Err(e) => return Err(e),
                    }
                }
                Ok(Progress::Started(_)) => unfinished.push(m),
                Err(e) => {
                    if refusal.as_ref().is_none_or(|(_, r)| r.is_transient()) {
                        refusal = Some((m.clone(), e));
                    }
                    unfinished.push(m);
                }
            }
        }
        if let Some((m, e)) = refusal {
            return match job.next_step(e.failure(), now(), &self.retry_policy()) {
                NextStep::Retry { .. } if progressed => self.requeue_roll(job, true).await,
                NextStep::Retry { blocked } => {
                    let (writes, outcome) = self.retry(job, &blocked, &e);
                    self.commit_or_lost(job, &writes, outcome).await
                }
                NextStep::Fail { reason } => {
                    let failure = RollFailure {
                        machine: m,
                        whole,
                        reason,
                        unfinished,
                    };
                    self.commit_roll_end(job, &ctx, &ng, Some(failure)).await
                }
            };
        }
        let machines = self.store.nodegroup_machines(&nodegroup).await?;
        if roll::plan(&machines, &target, max_batch_size).finished() {
            return self.commit_roll_end(job, &ctx, &ng, None).await;
        }
        self.requeue_roll(job, progressed).await
    }

    /// Asks the driver about each replacement under way, all at once (at most a batch); or,
    /// for a whole group's roll, once for all of them.
    #[tracing::instrument(
        name = "driver",
        skip_all,
        fields(driver = %job.driver, operation = job.operation.as_str(), machines = in_flight.len())
    )]
    async fn ask_driver(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        whole: bool,
        in_flight: Vec<Machine>,
    ) -> Vec<Answer> {
        let Some(driver) = self.drivers.get(&job.driver) else {
            let missing = DriverError::Permanent(format!(
                "The cluster driver '{}' is not available in this conductor.",
                job.driver
            ));
            return in_flight
                .into_iter()
                .map(|m| (m, Err(missing.clone())))
                .collect();
        };
        if whole {
            let answer = driver.roll_nodegroup(ctx, ng, &in_flight).await;
            return in_flight.into_iter().map(|m| (m, answer.clone())).collect();
        }
        let calls = in_flight.into_iter().map(|m| {
            let driver = driver.clone();
            async move {
                let answer = driver.replace_machine(ctx, &m).await;
                (m, answer)
            }
        });
        join_all(calls).await
    }

    /// The writes that start the machines' replacements: each on the group's flavor and image,
    /// `Provisioning`, with its pending `magnum.machine.update`.
    fn start_writes(&self, start: &[Machine], target: &RollTarget) -> Vec<Write> {
        let mut writes = Vec::with_capacity(start.len() * 2);
        for m in start {
            let mut next = m.clone();
            next.spec = target.respec(&m.spec);
            next.status.phase = MachinePhase::Provisioning;
            next.status.error_reason = None;
            next.status.error_message = None;
            let event = events::machine_event(
                &self.host,
                Action::Update,
                EventOutcome::Pending,
                &next,
                None,
            );
            writes.push(Write::UpdateMachine {
                machine: Box::new(next),
                from: vec![m.status.phase],
            });
            writes.push(Write::event(event));
        }
        writes
    }

    /// The roll goes on: the job runs again at once after progress, else after the retry
    /// delay (the replacements under way need time).
    async fn requeue_roll(&self, job: &Job, progressed: bool) -> StoreResult<Outcome> {
        let wait = if progressed {
            chrono::Duration::zero()
        } else {
            self.retry_policy().first_delay
        };
        let writes = [Write::RequeueJob {
            id: job.id,
            owner: self.owner.clone(),
            run_after: now() + wait,
        }];
        let outcome = Outcome::Started {
            operation: job.operation,
            resource: job.resource.to_string(),
        };
        self.commit_or_lost(job, &writes, outcome).await
    }

    async fn commit_or_lost(
        &self,
        job: &Job,
        writes: &[Write],
        outcome: Outcome,
    ) -> StoreResult<Outcome> {
        match self.store.commit(writes).await {
            Ok(()) => Ok(outcome),
            Err(StoreError::Stale) => Ok(Outcome::LostLease {
                operation: job.operation,
                resource: job.resource.to_string(),
            }),
            Err(e) => Err(e),
        }
    }

    async fn skip_roll(&self, job: &Job, why: &str) -> StoreResult<Outcome> {
        let writes = [self.finish(job, false, Some(why.to_string()))];
        let outcome = Outcome::Skipped {
            operation: job.operation,
            resource: job.resource.to_string(),
        };
        self.commit_or_lost(job, &writes, outcome).await
    }

    /// Ends the roll: the group and its cluster `UPDATE_COMPLETE`, or (with a failure)
    /// `UPDATE_FAILED` with the reason and the replacements under way `Failed`; with the
    /// `magnum.nodegroup.update` and `magnum.cluster.update` outcome.
    async fn commit_roll_end(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        failure: Option<RollFailure>,
    ) -> StoreResult<Outcome> {
        let mut ctx = ctx.clone();
        for _ in 0..5 {
            let (writes, outcome) = self.roll_end_writes(job, &ctx, ng.uuid, failure.as_ref());
            match self.store.commit(&writes).await {
                Ok(()) => return Ok(outcome),
                Err(StoreError::Stale) => {
                    if !self
                        .store
                        .renew_lease(job.id, &self.owner, self.lease())
                        .await?
                    {
                        return Ok(Outcome::LostLease {
                            operation: job.operation,
                            resource: job.resource.to_string(),
                        });
                    }
                    match self.store.find_cluster(&ctx.cluster.uuid).await? {
                        Some(c) => ctx = self.context(c, job.attempts).await?,
                        None => return self.skip_roll(job, "the cluster no longer exists").await,
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Stale)
    }

    fn roll_end_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        nodegroup: NodeGroupId,
        failure: Option<&RollFailure>,
    ) -> (Vec<Write>, Outcome) {
        let mut c: Cluster = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        let mut writes: Vec<Write> = Vec::new();
        let (operation, resource) = (job.operation, job.resource.to_string());
        let outcome = match failure {
            None => {
                complete(&mut c, &mut ngs, Verb::Update);
                Outcome::Completed {
                    operation,
                    resource,
                }
            }
            Some(f) => {
                let name = ngs
                    .iter()
                    .find(|n| n.uuid == nodegroup)
                    .map_or_else(|| nodegroup.to_string(), |n| n.name.clone());
                let reason = if f.whole {
                    format!(
                        "The rolling replacement of node group {name} as a whole stopped: {} \
                         Updating the node group again resumes it.",
                        f.reason
                    )
                } else {
                    format!(
                        "The rolling replacement of node group {name} stopped at machine {}: {} \
                         The machines replaced stay replaced; updating the node group again \
                         replaces the rest.",
                        f.machine.name, f.reason
                    )
                };
                tracing::warn!(nodegroup = %nodegroup, reason = %reason, "rolling replacement failed");
                let payload = JobPayload::MachineReplace {
                    machine: f.machine.uuid,
                };
                let stopped = format!(
                    "The rolling replacement of node group {name} stopped before this \
                     machine's replacement finished: {}",
                    f.reason
                );
                let others = f.unfinished.iter().filter(|u| u.uuid != f.machine.uuid);
                for m in std::iter::once(&f.machine).chain(others) {
                    let why = if m.uuid == f.machine.uuid {
                        &f.reason
                    } else {
                        &stopped
                    };
                    let next = failed_machine(m, &payload, why);
                    writes.push(Write::event(events::machine_event(
                        &self.host,
                        Action::Update,
                        EventOutcome::Failure,
                        &next,
                        None,
                    )));
                    writes.push(Write::UpdateMachine {
                        machine: Box::new(next),
                        from: vec![MachinePhase::Provisioning],
                    });
                }
                fail(&mut c, &mut ngs, Verb::Update, &reason);
                Outcome::Failed {
                    operation,
                    resource,
                    reason,
                }
            }
        };
        let event_outcome = if failure.is_some() {
            EventOutcome::Failure
        } else {
            EventOutcome::Success
        };
        // The machines first: the cluster's end settles whatever is still `Provisioning`.
        let mut all = writes;
        all.extend(super::execute::cluster_writes(ctx, &c, &ngs));
        if let Some(ng) = ngs.iter().find(|n| n.uuid == nodegroup) {
            all.push(Write::event(events::nodegroup_event(
                &self.host,
                Action::Update,
                event_outcome,
                ng,
                None,
            )));
        }
        all.push(Write::event(events::cluster_event(
            &self.host,
            Action::Update,
            event_outcome,
            &c,
            &ngs,
            None,
        )));
        let error = match &outcome {
            Outcome::Failed { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        all.push(self.finish(job, error.is_some(), error));
        (all, outcome)
    }
}

/// Why a roll stopped: the machine whose replacement the driver refused, its reason, and the
/// other replacements under way then.
struct RollFailure {
    machine: Machine,
    /// The driver rolled the group as a whole: its reason is the group's, not the machine's.
    whole: bool,
    reason: String,
    unfinished: Vec<Machine>,
}
