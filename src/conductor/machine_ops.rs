//! Working one machine's job (`machine.update`, `machine.replace`, `machine.reboot`): the
//! driver applies it, then the machine runs with what the driver reported (the versions it
//! runs, its server, how the change was applied) or has failed with the driver's reason, with
//! its `magnum.machine.update` notification. A driver still at work is asked again later, as
//! a refused attempt is; the cluster's own status is not touched.

use super::execute::{now, Outcome};
use super::Conductor;
use crate::domain::job::{Job, JobPayload, JobResource, NextStep};
use crate::domain::machine::{ChangeMode, Machine, MachinePhase};
use crate::domain::MachineId;
use crate::drivers::{ClusterContext, DriverError, Progress};
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::{StoreError, StoreResult, Write};

/// Why a machine job ends without the driver.
const GONE: &str = "the machine is gone, being deleted, or no longer waits for this operation";

/// The `errorReason` of a machine whose operation failed.
fn error_reason(payload: &JobPayload) -> &'static str {
    match payload {
        JobPayload::MachineReplace { .. } => "ReplaceError",
        JobPayload::MachineReboot { .. } => "RebootError",
        _ => "UpdateError",
    }
}

/// How the operation applies its change, when it is one: an update as planned, a replacement
/// by a new machine; a reboot changes nothing.
fn change_mode(payload: &JobPayload) -> Option<ChangeMode> {
    match payload {
        JobPayload::MachineUpdate { mode, .. } => Some(*mode),
        JobPayload::MachineReplace { .. } => Some(ChangeMode::Replace),
        _ => None,
    }
}

/// The machine when the driver is done: running what it reported.
pub(crate) fn done_machine(
    m: &Machine,
    payload: &JobPayload,
    obs: &crate::drivers::ClusterObservation,
) -> Machine {
    let mut next = m.clone();
    let status = &mut next.status;
    status.phase = MachinePhase::Running;
    status.error_reason = None;
    status.error_message = None;
    if let Some(o) = obs.machines.get(&m.uuid) {
        status.provider_id = o.provider_id.clone().or(status.provider_id.take());
        status.node_ref = o.node_ref.clone().or(status.node_ref.take());
        if !o.addresses.is_empty() {
            status.addresses = o.addresses.clone();
        }
        status.versions = o.versions.clone();
        status.error_reason = o.error_reason.clone();
        status.error_message = o.error_message.clone();
    }
    if let Some(mode) = change_mode(payload) {
        status.last_change = Some(mode);
    }
    status.last_updated = Some(now());
    next
}

/// The machine when its operation failed for good.
pub(crate) fn failed_machine(m: &Machine, payload: &JobPayload, reason: &str) -> Machine {
    let mut next = m.clone();
    next.status.phase = MachinePhase::Failed;
    next.status.error_reason = Some(error_reason(payload).to_string());
    next.status.error_message = Some(reason.to_string());
    next.status.last_updated = Some(now());
    next
}

impl Conductor {
    pub(super) async fn execute_machine(&self, job: &Job) -> StoreResult<Outcome> {
        let cluster = match job.resource {
            JobResource::Cluster(id) => self.store.find_cluster(&id).await?,
            JobResource::Federation(_) => None,
        };
        let (Some(cluster), Some(uuid)) = (cluster, job.payload.machine()) else {
            return self
                .skip_machine_job(job, "the cluster no longer exists")
                .await;
        };
        let Some(m) = self.operated_machine(&cluster.uuid, &uuid).await? else {
            return self.skip_machine_job(job, GONE).await;
        };
        let mut ctx = self.context(cluster, job.attempts).await?;
        ctx.job = Some(job.uuid);
        let result = self.call_machine_driver(job, &ctx, &m).await;
        let mut m = m;
        for _ in 0..5 {
            let (writes, outcome) = self.machine_result_writes(job, &m, &result);
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
                    match self.operated_machine(&ctx.cluster.uuid, &uuid).await? {
                        Some(again) => m = again,
                        None => return self.skip_machine_job(job, GONE).await,
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Stale)
    }

    /// The machine a job works on, while it waits for the job (`Provisioning`): not once it
    /// is gone, being deleted, or settled by another operation.
    async fn operated_machine(
        &self,
        cluster: &crate::domain::ClusterId,
        uuid: &MachineId,
    ) -> StoreResult<Option<Machine>> {
        match self.store.get_machine(cluster, &uuid.to_string()).await {
            Ok(m) if m.status.phase == MachinePhase::Provisioning => Ok(Some(m)),
            Ok(_) | Err(StoreError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn skip_machine_job(&self, job: &Job, why: &str) -> StoreResult<Outcome> {
        self.store
            .commit(&[self.finish(job, false, Some(why.to_string()))])
            .await?;
        Ok(Outcome::Skipped {
            operation: job.operation,
            resource: job.resource.to_string(),
        })
    }

    #[tracing::instrument(
        name = "driver",
        skip_all,
        fields(driver = %job.driver, operation = job.operation.as_str(), machine = %m.uuid)
    )]
    async fn call_machine_driver(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        m: &Machine,
    ) -> Result<Progress, DriverError> {
        let driver = self.drivers.get(&job.driver).ok_or_else(|| {
            DriverError::Permanent(format!(
                "The cluster driver '{}' is not available in this conductor.",
                job.driver
            ))
        })?;
        match &job.payload {
            JobPayload::MachineUpdate { mode, .. } => driver.update_machine(ctx, m, *mode).await,
            JobPayload::MachineReplace { .. } => driver.replace_machine(ctx, m).await,
            JobPayload::MachineReboot { .. } => driver.reboot_machine(ctx, m).await,
            other => Err(DriverError::Permanent(format!(
                "{} is not a machine operation.",
                other.operation().as_str()
            ))),
        }
    }

    /// What an attempt commits: the machine running (done), the job back in the queue (the
    /// driver still at work, or refused transiently), or the machine failed.
    fn machine_result_writes(
        &self,
        job: &Job,
        m: &Machine,
        result: &Result<Progress, DriverError>,
    ) -> (Vec<Write>, Outcome) {
        let (operation, resource) = (job.operation, job.resource.to_string());
        let still = DriverError::Transient(format!(
            "The {} driver is still working on machine {}.",
            job.driver, m.name
        ));
        let error = match result {
            Ok(Progress::Done(obs)) => {
                let next = done_machine(m, &job.payload, obs);
                let writes = self.machine_writes(job, next, EventOutcome::Success, None);
                return (
                    writes,
                    Outcome::Completed {
                        operation,
                        resource,
                    },
                );
            }
            Ok(Progress::Started(_)) => &still,
            Err(e) => e,
        };
        match job.next_step(error.failure(), now(), &self.retry_policy()) {
            NextStep::Retry { blocked } => self.retry(job, &blocked, error),
            NextStep::Fail { reason } => {
                tracing::warn!(machine = %m.uuid, reason = %reason, "machine operation failed");
                let next = failed_machine(m, &job.payload, &reason);
                let writes =
                    self.machine_writes(job, next, EventOutcome::Failure, Some(reason.clone()));
                (
                    writes,
                    Outcome::Failed {
                        operation,
                        resource,
                        reason,
                    },
                )
            }
        }
    }

    fn machine_writes(
        &self,
        job: &Job,
        next: Machine,
        outcome: EventOutcome,
        error: Option<String>,
    ) -> Vec<Write> {
        let event = events::machine_event(&self.host, Action::Update, outcome, &next, None);
        vec![
            Write::UpdateMachine {
                machine: Box::new(next),
                from: vec![MachinePhase::Provisioning],
            },
            Write::event(event),
            self.finish(job, error.is_some(), error),
        ]
    }
}
