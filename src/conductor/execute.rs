//! Working one job: claim, call the driver, commit the result with its notification.

use chrono::Utc;
use tracing::Instrument;

use super::Conductor;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::federation::Federation;
use crate::domain::job::retry::unblock;
use crate::domain::job::{Job, JobPayload, JobResource, NextStep, Operation};
use crate::domain::leftover::{delete_failed_reason, Leftover};
use crate::domain::machine::{Machine, MachinePhase, MachineStatus};
use crate::domain::status::Verb;
use crate::domain::{MachineId, NodeGroupId};
use crate::drivers::{ClusterContext, ClusterObservation, DriverError, Phase, Progress, Resize};
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::{StoreError, StoreResult, Write};

impl Outcome {
    /// The `result` label of `fleetyard_conductor_jobs_total`.
    pub fn result(&self) -> &'static str {
        match self {
            Outcome::Idle => "idle",
            Outcome::Completed { .. } => "done",
            Outcome::Started { .. } => "started",
            Outcome::Retried { .. } => "retried",
            Outcome::Failed { .. } => "failed",
            Outcome::Skipped { .. } => "skipped",
            Outcome::LostLease { .. } => "lost_lease",
        }
    }
}

/// What one call of [`Conductor::try_execute_one`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No job was due.
    Idle,
    /// The operation finished and the resource reached its terminal state.
    Completed {
        operation: Operation,
        resource: String,
    },
    /// The driver started the work; the status sync will see it finish.
    Started {
        operation: Operation,
        resource: String,
    },
    /// A transient failure; the job runs again later.
    Retried {
        operation: Operation,
        resource: String,
        error: String,
    },
    /// The operation failed for good; the resource is `*_FAILED`.
    Failed {
        operation: Operation,
        resource: String,
        reason: String,
    },
    /// The resource no longer exists; the job was closed.
    Skipped {
        operation: Operation,
        resource: String,
    },
    /// Another conductor took the job over (this one's lease expired).
    LostLease {
        operation: Operation,
        resource: String,
    },
}

pub(crate) fn verb_of(op: Operation) -> Verb {
    match op {
        Operation::ClusterCreate | Operation::FederationCreate => Verb::Create,
        Operation::ClusterDelete | Operation::FederationDelete => Verb::Delete,
        _ => Verb::Update,
    }
}

pub(crate) fn action_of(verb: Verb) -> Action {
    match verb {
        Verb::Create => Action::Create,
        Verb::Update => Action::Update,
        Verb::Delete => Action::Delete,
    }
}

/// Now, as the store keeps timestamps.
pub(super) fn now() -> chrono::DateTime<Utc> {
    crate::store::sql::now()
}

/// Copies what the backend reported onto the cluster and its node groups; the statuses of the
/// machines it reported on that changed come back as one write. A node group whose machines
/// were reported on lists their addresses (each one's first) as its `node_addresses`.
pub(crate) fn apply_observation(
    c: &mut Cluster,
    ngs: &mut [NodeGroup],
    obs: &ClusterObservation,
    machines: &[Machine],
) -> Option<Write> {
    if obs.stack_id.is_some() {
        c.stack_id = obs.stack_id.clone();
    }
    if obs.api_address.is_some() {
        c.api_address = obs.api_address.clone();
    }
    if obs.coe_version.is_some() {
        c.coe_version = obs.coe_version.clone();
    }
    if obs.container_version.is_some() {
        c.container_version = obs.container_version.clone();
    }
    for ng in ngs.iter_mut() {
        if let Some(o) = obs.nodegroups.get(&ng.uuid.to_string()) {
            ng.node_addresses = o.node_addresses.clone();
            if o.version.is_some() {
                ng.version = o.version.clone();
            }
            if ng.stack_id.is_none() {
                ng.stack_id = c.stack_id.clone();
            }
        }
        let reported: Vec<String> = machines
            .iter()
            .filter(|m| m.nodegroup_id == ng.uuid && m.status.phase != MachinePhase::Deleting)
            .filter_map(|m| obs.machines.get(&m.uuid))
            .filter_map(|o| o.addresses.first().map(|a| a.address.clone()))
            .collect();
        if !reported.is_empty() {
            ng.node_addresses = reported;
        }
    }
    let changed: Vec<(MachineId, MachineStatus)> = machines
        .iter()
        .filter_map(|m| {
            let o = obs.machines.get(&m.uuid)?;
            let mut next = m.status.clone();
            next.provider_id = o.provider_id.clone();
            next.node_ref = o.node_ref.clone();
            next.addresses = o.addresses.clone();
            next.versions = o.versions.clone();
            next.error_reason = o.error_reason.clone();
            next.error_message = o.error_message.clone();
            (next != m.status).then(|| {
                next.last_updated = Some(now());
                (m.uuid, next)
            })
        })
        .collect();
    (!changed.is_empty()).then_some(Write::ObserveMachines(changed))
}

/// Moves the cluster and its in-progress node groups to their complete states.
pub(crate) fn complete(c: &mut Cluster, ngs: &mut [NodeGroup], verb: Verb) {
    c.status = verb.complete();
    c.status_reason = None;
    for ng in ngs.iter_mut() {
        if ng.status.is_in_progress() {
            if let Some(v) = ng.status.verb() {
                ng.status = v.complete();
                ng.status_reason = None;
            }
        }
    }
}

/// Moves the cluster and its in-progress node groups to their failed states.
pub(crate) fn fail(c: &mut Cluster, ngs: &mut [NodeGroup], verb: Verb, reason: &str) {
    c.status = verb.failed();
    c.status_reason = Some(reason.to_string());
    for ng in ngs.iter_mut() {
        if ng.status.is_in_progress() {
            if let Some(v) = ng.status.verb() {
                ng.status = v.failed();
                ng.status_reason = Some(reason.to_string());
            }
        }
    }
}

/// The writes that store a changed cluster and its changed node groups; node groups that
/// finished deleting are removed.
pub(crate) fn cluster_writes(
    before: &ClusterContext,
    c: &Cluster,
    ngs: &[NodeGroup],
) -> Vec<Write> {
    let mut writes = Vec::new();
    if *c != before.cluster {
        writes.push(Write::update_cluster(c));
    }
    for ng in ngs {
        if ng.status == crate::domain::status::ClusterStatus::DeleteComplete {
            writes.push(Write::DeleteNodeGroup { id: ng.id });
        } else if before.nodegroups.iter().find(|b| b.id == ng.id) != Some(ng) {
            writes.push(Write::update_nodegroup(ng));
        }
    }
    // Node group rows carry no version of their own: the cluster's version guards them, so a
    // node group write computed from a stale view fails instead of overwriting a newer one.
    if !writes.is_empty() && *c == before.cluster {
        writes.insert(0, Write::update_cluster(c));
    }
    // The operation ended: the machines it removed go, the ones it made run (or failed).
    if before.cluster.status.is_in_progress() && !c.status.is_in_progress() {
        writes.push(Write::SettleMachines {
            cluster: c.uuid,
            failed: c.status.is_failed(),
        });
    }
    writes
}

impl Conductor {
    /// Claims and works one due job. Exposed so tests can drive the conductor step by step.
    pub async fn try_execute_one(&self) -> StoreResult<Outcome> {
        let Some(job) = self.store.claim_job(&self.owner, self.lease()).await? else {
            return Ok(Outcome::Idle);
        };
        let span = tracing::info_span!(
            "job",
            job = %job.uuid,
            operation = job.operation.as_str(),
            resource = %job.resource,
            attempt = job.attempts,
            driver = %job.driver,
        );
        let outcome = self.work(job).instrument(span).await?;
        crate::metrics::job_worked(outcome.result());
        Ok(outcome)
    }

    /// Works a claimed job under its lease, renewed while the driver runs.
    async fn work(&self, job: Job) -> StoreResult<Outcome> {
        tracing::info!("working job");
        // Aborted when the job is worked, or when a stopping conductor cuts it short.
        let renewer = {
            let store = self.store.clone();
            let owner = self.owner.clone();
            let lease = self.lease();
            let id = job.id;
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(lease / 3);
                ticker.tick().await;
                loop {
                    ticker.tick().await;
                    match store.renew_lease(id, &owner, lease).await {
                        Ok(true) => {}
                        Ok(false) => break,
                        Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
                    }
                }
            })
        };
        let renewer = super::AbortOnDrop(vec![renewer]);
        let result = if job.operation.resource_type() == "federation" {
            self.execute_federation(&job).await
        } else if matches!(job.payload, JobPayload::NodegroupRoll { .. }) {
            self.execute_roll(&job).await
        } else if job.payload.machine().is_some() {
            self.execute_machine(&job).await
        } else {
            self.execute_cluster(&job).await
        };
        drop(renewer);
        match &result {
            Ok(outcome) => tracing::info!(outcome = ?outcome, "job worked"),
            Err(e) => tracing::warn!(error = %e, "job could not be recorded"),
        }
        result
    }

    /// Whether another job waits for the same resource.
    pub(super) async fn others_pending(&self, job: &Job) -> StoreResult<bool> {
        self.store.other_pending_job(&job.resource, job.id).await
    }

    /// The cluster a cluster job works on, if it still exists.
    async fn find_cluster_of(&self, job: &Job) -> StoreResult<Option<Cluster>> {
        match job.resource {
            JobResource::Cluster(id) => self.store.find_cluster(&id).await,
            JobResource::Federation(_) => Ok(None),
        }
    }

    /// The federation a federation job works on, if it still exists.
    pub(super) async fn find_federation_of(&self, job: &Job) -> StoreResult<Option<Federation>> {
        match job.resource {
            JobResource::Federation(id) => self.store.find_federation(&id).await,
            JobResource::Cluster(_) => Ok(None),
        }
    }

    pub(super) fn deadline_passed(job: &Job) -> bool {
        job.deadline_passed(Utc::now())
    }

    async fn execute_cluster(&self, job: &Job) -> StoreResult<Outcome> {
        let op = job.operation;
        let resource = job.resource.to_string();
        let Some(cluster) = self.find_cluster_of(job).await? else {
            self.store
                .commit(&[Write::FinishJob {
                    id: job.id,
                    owner: self.owner.clone(),
                    failed: false,
                    error: Some("the cluster no longer exists".into()),
                }])
                .await?;
            return Ok(Outcome::Skipped {
                operation: op,
                resource,
            });
        };
        let mut ctx = self.context(cluster, job.attempts).await?;
        // Certificates first (a create's CA exists before the driver runs).
        let result = match self.prepare_certificates(job, &ctx.cluster).await {
            Ok(ca) => {
                ctx.ca = ca;
                self.call_cluster_driver(job, &ctx).await
            }
            Err(e) => Err(e),
        };
        for _ in 0..5 {
            let others_pending = self.others_pending(job).await?;
            let (writes, outcome) = self.cluster_result_writes(job, &ctx, &result, others_pending);
            match self.store.commit(&writes).await {
                Ok(()) => return Ok(outcome),
                Err(StoreError::Stale) => {
                    // Either the cluster changed under us (re-read and re-apply) or the lease
                    // was lost (another conductor owns the job now).
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
                    match self.find_cluster_of(job).await? {
                        Some(c) => ctx = self.context(c, job.attempts).await?,
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

    #[tracing::instrument(
        name = "driver",
        skip_all,
        fields(driver = %job.driver, operation = job.operation.as_str())
    )]
    async fn call_cluster_driver(
        &self,
        job: &Job,
        ctx: &ClusterContext,
    ) -> Result<Progress, DriverError> {
        // A delete is tried once more past its deadline: that last attempt says what is left.
        if Self::deadline_passed(job) && job.operation != Operation::ClusterDelete {
            return Err(DriverError::Permanent(job.gave_up_waiting().unwrap_or_else(|| {
                format!(
                    "The operation did not finish within the cluster's create_timeout of {} minutes.",
                    ctx.cluster.create_timeout.unwrap_or(60)
                )
            })));
        }
        let driver = self.drivers.get(&job.driver).ok_or_else(|| {
            DriverError::Permanent(format!(
                "The cluster driver '{}' is not available in this conductor.",
                job.driver
            ))
        })?;
        let nodegroup = |uuid: &NodeGroupId| -> Result<NodeGroup, DriverError> {
            ctx.nodegroups
                .iter()
                .find(|n| n.uuid == *uuid)
                .cloned()
                .ok_or_else(|| {
                    DriverError::Permanent(format!("The node group {uuid} no longer exists."))
                })
        };
        match &job.payload {
            JobPayload::ClusterCreate {} => driver.create_cluster(ctx).await,
            JobPayload::ClusterUpdate { .. } => driver.update_cluster(ctx).await,
            JobPayload::ClusterResize {
                nodegroup: uuid,
                nodes_to_remove,
                ..
            } => {
                let ng = nodegroup(uuid)?;
                let resize = Resize {
                    nodegroup: ng.uuid.to_string(),
                    node_count: ng.node_count,
                    nodes_to_remove: nodes_to_remove.clone(),
                };
                driver.resize_cluster(ctx, &resize).await
            }
            JobPayload::ClusterUpgrade {
                max_batch_size,
                nodegroup: ng,
                ..
            } => {
                let ng = ng.map(|u| u.to_string());
                driver
                    .upgrade_cluster(ctx, &ctx.template, *max_batch_size, ng.as_deref())
                    .await
            }
            JobPayload::ClusterDelete { .. } => driver.delete_cluster(ctx).await,
            JobPayload::NodegroupCreate { nodegroup: uuid } => {
                driver.create_nodegroup(ctx, &nodegroup(uuid)?).await
            }
            JobPayload::NodegroupUpdate { nodegroup: uuid } => {
                driver.update_nodegroup(ctx, &nodegroup(uuid)?).await
            }
            JobPayload::NodegroupDelete {
                nodegroup: uuid, ..
            } => driver.delete_nodegroup(ctx, &nodegroup(uuid)?).await,
            JobPayload::CaRotate { .. } => driver.rotate_ca(ctx).await,
            JobPayload::CredentialRotate { .. } => driver
                .rotate_credential(ctx)
                .await
                .map(|()| Progress::Done(ClusterObservation::phase(Phase::Complete))),
            other @ (JobPayload::FederationCreate {}
            | JobPayload::FederationUpdate { .. }
            | JobPayload::FederationDelete { .. }
            | JobPayload::MachineUpdate { .. }
            | JobPayload::MachineReplace { .. }
            | JobPayload::MachineReboot { .. }
            | JobPayload::NodegroupRoll { .. }) => Err(DriverError::Permanent(format!(
                "{} is not a cluster operation.",
                other.operation().as_str()
            ))),
        }
    }

    /// Ends the job this conductor holds the lease of.
    pub(super) fn finish(&self, job: &Job, failed: bool, error: Option<String>) -> Write {
        Write::FinishJob {
            id: job.id,
            owner: self.owner.clone(),
            failed,
            error,
        }
    }

    /// What a cluster job's attempt commits, by what the driver answered: a rotation of the
    /// credential records only its outcome; a job with another one waiting behind it records
    /// what the backend reported and leaves the status to the later job; otherwise the cluster
    /// is deleted, completed, left in progress, retried or failed.
    fn cluster_result_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        result: &Result<Progress, DriverError>,
        others_pending: bool,
    ) -> (Vec<Write>, Outcome) {
        let op = job.operation;
        let resource = job.resource.to_string();
        if op == Operation::CredentialRotate {
            return self.credential_rotation_writes(job, result);
        }
        if let JobPayload::ClusterDelete {
            forced: Some(forced),
        } = &job.payload
        {
            let writes = self.forced_delete_writes(job, ctx, result, forced);
            let outcome = Outcome::Completed {
                operation: op,
                resource,
            };
            return (writes, outcome);
        }
        if let JobPayload::NodegroupDelete {
            nodegroup,
            forced: Some(forced),
        } = &job.payload
        {
            let writes = self.forced_nodegroup_delete_writes(
                job,
                ctx,
                result,
                (*nodegroup, forced),
                others_pending,
            );
            let outcome = Outcome::Completed {
                operation: op,
                resource,
            };
            return (writes, outcome);
        }
        if others_pending && !result.as_ref().is_err_and(DriverError::is_transient) {
            return self.superseded_cluster_writes(job, ctx, result);
        }
        let completed = |writes| {
            let outcome = Outcome::Completed {
                operation: op,
                resource: resource.clone(),
            };
            (writes, outcome)
        };
        match result {
            Ok(Progress::Done(obs))
                if obs.phase == Phase::Gone || op == Operation::ClusterDelete =>
            {
                completed(self.cluster_deleted_writes(job, ctx))
            }
            Ok(Progress::Done(obs)) => completed(self.cluster_done_writes(job, ctx, obs)),
            Ok(Progress::Started(obs)) => {
                let mut c = ctx.cluster.clone();
                let mut ngs = ctx.nodegroups.clone();
                let seen = apply_observation(&mut c, &mut ngs, obs, &ctx.machines);
                unblock(&mut c, &mut ngs);
                let mut writes = cluster_writes(ctx, &c, &ngs);
                writes.extend(seen);
                writes.push(self.finish(job, false, None));
                let outcome = Outcome::Started {
                    operation: op,
                    resource,
                };
                (writes, outcome)
            }
            Err(e) => match job.next_step(e.failure(), now(), &self.retry_policy()) {
                NextStep::Retry { blocked } => self.cluster_blocked_writes(job, ctx, &blocked, e),
                NextStep::Fail { reason } => {
                    let reason = match op {
                        Operation::ClusterDelete | Operation::NodegroupDelete => {
                            delete_failed_reason(&reason, e.leftovers())
                        }
                        _ => reason,
                    };
                    let writes = self.cluster_failed_writes(job, ctx, &reason, e.leftovers());
                    let outcome = Outcome::Failed {
                        operation: op,
                        resource,
                        reason,
                    };
                    (writes, outcome)
                }
            },
        }
    }

    /// A credential rotation changes no status (as in Magnum): the job records the outcome,
    /// a failure is logged.
    fn credential_rotation_writes(
        &self,
        job: &Job,
        result: &Result<Progress, DriverError>,
    ) -> (Vec<Write>, Outcome) {
        let operation = job.operation;
        let resource = job.resource.to_string();
        let Err(e) = result else {
            let outcome = Outcome::Completed {
                operation,
                resource,
            };
            return (vec![self.finish(job, false, None)], outcome);
        };
        match job.next_step(e.failure(), now(), &self.retry_policy()) {
            NextStep::Retry { blocked } => self.retry(job, &blocked, e),
            NextStep::Fail { .. } => {
                tracing::error!(cluster = %resource, error = %e, "credential rotation failed");
                let outcome = Outcome::Failed {
                    operation,
                    resource,
                    reason: e.to_string(),
                };
                (vec![self.finish(job, true, Some(e.to_string()))], outcome)
            }
        }
    }

    /// Another request's job is waiting (a delete during a create, a second resize): that
    /// later job decides the status; this one records what the backend reported.
    fn superseded_cluster_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        result: &Result<Progress, DriverError>,
    ) -> (Vec<Write>, Outcome) {
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        let mut seen = None;
        let error = match result {
            Ok(Progress::Done(obs) | Progress::Started(obs)) => {
                if obs.phase != Phase::Gone {
                    seen = apply_observation(&mut c, &mut ngs, obs, &ctx.machines);
                }
                None
            }
            Err(e) => Some(e.to_string()),
        };
        unblock(&mut c, &mut ngs);
        let mut writes = cluster_writes(ctx, &c, &ngs);
        writes.extend(seen);
        writes.push(self.finish(job, error.is_some(), error));
        let outcome = Outcome::Completed {
            operation: job.operation,
            resource: job.resource.to_string(),
        };
        (writes, outcome)
    }

    /// The cluster is gone from the backend: its row goes, with the delete's success event.
    fn cluster_deleted_writes(&self, job: &Job, ctx: &ClusterContext) -> Vec<Write> {
        let mut c = ctx.cluster.clone();
        c.status = Verb::Delete.complete();
        let event = events::cluster_event(
            &self.host,
            Action::Delete,
            EventOutcome::Success,
            &c,
            &ctx.nodegroups,
            None,
        );
        vec![
            Write::DeleteCluster {
                uuid: ctx.cluster.uuid,
            },
            Write::event(event),
            self.finish(job, false, None),
        ]
    }

    /// The operation finished: the observation is applied and the status completes (a
    /// deleted node group is marked for its row to go).
    fn cluster_done_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        obs: &crate::drivers::ClusterObservation,
    ) -> Vec<Write> {
        let verb = verb_of(job.operation);
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        let seen = apply_observation(&mut c, &mut ngs, obs, &ctx.machines);
        if let JobPayload::NodegroupDelete { nodegroup, .. } = &job.payload {
            if let Some(ng) = ngs.iter_mut().find(|n| n.uuid == *nodegroup) {
                ng.status = Verb::Delete.complete();
            }
        }
        complete(&mut c, &mut ngs, verb);
        let mut writes = cluster_writes(ctx, &c, &ngs);
        writes.extend(seen);
        writes.push(Write::event(events::cluster_event(
            &self.host,
            action_of(verb),
            EventOutcome::Success,
            &c,
            &ngs,
            None,
        )));
        writes.push(self.finish(job, false, None));
        writes
    }

    /// The job failed for good: what the request changed ahead of the driver (a node count,
    /// an upgrade's template) is undone and the status fails with `reason`; a failed delete's
    /// notification lists what it left behind.
    fn cluster_failed_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        reason: &str,
        leftovers: &[Leftover],
    ) -> Vec<Write> {
        let verb = verb_of(job.operation);
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        match &job.payload {
            JobPayload::ClusterUpdate {
                nodegroup,
                old_node_count,
                ..
            }
            | JobPayload::ClusterResize {
                nodegroup,
                old_node_count,
                ..
            } => {
                if let Some(ng) = ngs.iter_mut().find(|n| n.uuid == *nodegroup) {
                    ng.node_count = *old_node_count;
                }
            }
            JobPayload::ClusterUpgrade { old_template, .. } => {
                c.cluster_template_id = *old_template;
            }
            _ => {}
        }
        fail(&mut c, &mut ngs, verb, reason);
        let mut writes = cluster_writes(ctx, &c, &ngs);
        // The node count went back: so do the machines the change was removing.
        if let JobPayload::ClusterUpdate { nodegroup, .. }
        | JobPayload::ClusterResize { nodegroup, .. } = &job.payload
        {
            writes.insert(
                0,
                Write::ReviveMachines {
                    nodegroup: *nodegroup,
                },
            );
        }
        let event = if verb == Verb::Delete {
            events::cluster_delete_failed_event(&self.host, &c, &ngs, leftovers)
        } else {
            events::cluster_event(
                &self.host,
                action_of(verb),
                EventOutcome::Failure,
                &c,
                &ngs,
                None,
            )
        };
        writes.push(Write::event(event));
        if let JobPayload::NodegroupDelete { nodegroup, .. } = &job.payload {
            if let Some(ng) = ngs.iter().find(|n| n.uuid == *nodegroup) {
                writes.push(Write::event(events::nodegroup_delete_failed_event(
                    &self.host, ng, leftovers,
                )));
            }
        }
        writes.push(self.finish(job, true, Some(reason.to_string())));
        writes
    }
}
