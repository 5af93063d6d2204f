//! A forced delete's end, after its one best-effort attempt: the record goes whatever the
//! driver answered, with the audit notification naming what the infrastructure may still hold.

use super::execute::{cluster_writes, complete};
use super::Conductor;
use crate::domain::federation::Federation;
use crate::domain::job::{ForcedBy, Job};
use crate::domain::leftover::{delete_failed_reason, Leftover};
use crate::domain::status::{FederationStatus, Verb};
use crate::domain::NodeGroupId;
use crate::drivers::{ClusterContext, DriverError, FederationProgress, Progress};
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::Write;

impl Conductor {
    /// A forced delete after its one best-effort attempt: the row goes whatever the driver
    /// answered, with the audit notification naming what the infrastructure may still hold
    /// (what a failed attempt left behind, or what a started teardown has yet to remove).
    pub(super) fn forced_delete_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        result: &Result<Progress, DriverError>,
        forced: &ForcedBy,
    ) -> Vec<Write> {
        let (leftovers, said) = what_was_left(result);
        let mut c = ctx.cluster.clone();
        c.status = Verb::Delete.complete();
        let reason = forced_reason(said.as_deref(), &leftovers);
        c.status_reason = Some(reason.clone());
        let initiator = initiator_of(forced);
        if !leftovers.is_empty() {
            tracing::warn!(cluster = %c.uuid, reason = %reason, "forced delete left objects behind");
        }
        vec![
            Write::DeleteCluster {
                uuid: ctx.cluster.uuid,
            },
            Write::event(events::cluster_forced_delete_event(
                &self.host,
                &c,
                &ctx.nodegroups,
                &leftovers,
                Some(&initiator),
            )),
            self.finish(job, false, Some(reason)),
        ]
    }

    /// A forced node group delete after its one best-effort attempt: the group's row goes
    /// whatever the driver answered, with its audit notification; the cluster completes its
    /// update as after a plain node group delete (unless another job waits behind this one,
    /// which then decides the cluster's status).
    pub(super) fn forced_nodegroup_delete_writes(
        &self,
        job: &Job,
        ctx: &ClusterContext,
        result: &Result<Progress, DriverError>,
        (nodegroup, forced): (NodeGroupId, &ForcedBy),
        others_pending: bool,
    ) -> Vec<Write> {
        let (leftovers, said) = what_was_left(result);
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        let Some(ng) = ngs.iter_mut().find(|n| n.uuid == nodegroup) else {
            return vec![self.finish(job, false, Some("the node group no longer exists".into()))];
        };
        ng.status = Verb::Delete.complete();
        let reason = forced_reason(said.as_deref(), &leftovers);
        ng.status_reason = Some(reason.clone());
        let removed = ng.clone();
        if !leftovers.is_empty() {
            tracing::warn!(nodegroup = %removed.uuid, reason = %reason, "forced delete left objects behind");
        }
        if !others_pending {
            complete(&mut c, &mut ngs, Verb::Update);
        }
        let mut writes = cluster_writes(ctx, &c, &ngs);
        writes.push(Write::event(events::nodegroup_forced_delete_event(
            &self.host,
            &removed,
            &leftovers,
            Some(&initiator_of(forced)),
        )));
        if !others_pending {
            writes.push(Write::event(events::cluster_event(
                &self.host,
                Action::Update,
                EventOutcome::Success,
                &c,
                &ngs,
                None,
            )));
        }
        writes.push(self.finish(job, false, Some(reason)));
        writes
    }
}

impl Conductor {
    /// A forced federation delete after its one best-effort attempt: the row goes whatever
    /// the driver answered, with its audit notification.
    pub(super) fn forced_federation_delete_writes(
        &self,
        job: &Job,
        f: &Federation,
        result: &Result<FederationProgress, DriverError>,
        forced: &ForcedBy,
    ) -> Vec<Write> {
        let (leftovers, said) = match result {
            Ok(FederationProgress::Started) => (
                Vec::new(),
                Some("The driver's teardown was still under way.".to_string()),
            ),
            Ok(_) => (Vec::new(), None),
            Err(e) => (e.leftovers().to_vec(), Some(e.to_string())),
        };
        let mut gone = f.clone();
        gone.status = FederationStatus::DeleteComplete;
        let reason = forced_reason(said.as_deref(), &leftovers);
        gone.status_reason = Some(reason.clone());
        vec![
            Write::DeleteFederation { id: f.id },
            Write::event(events::federation_forced_delete_event(
                &self.host,
                &gone,
                &leftovers,
                Some(&initiator_of(forced)),
            )),
            self.finish(job, false, Some(reason)),
        ]
    }
}

/// What the infrastructure may still hold after the last attempt, and what the driver said
/// when it did not finish.
fn what_was_left(result: &Result<Progress, DriverError>) -> (Vec<Leftover>, Option<String>) {
    match result {
        Ok(Progress::Done(obs)) => (obs.leftovers.clone(), None),
        Ok(Progress::Started(obs)) => (
            obs.leftovers.clone(),
            Some("The driver's teardown was still under way.".to_string()),
        ),
        Err(e) => (e.leftovers().to_vec(), Some(e.to_string())),
    }
}

/// The administrator who forced a delete, as its audit notification names them.
fn initiator_of(forced: &ForcedBy) -> events::Initiator {
    events::Initiator {
        user_id: Some(forced.user_id.clone()),
        project_id: Some(forced.project_id.clone()),
        is_admin: true,
        request_id: forced.request_id.clone(),
        ..events::Initiator::default()
    }
}

/// The reason a forced delete records: what the last clean-up answered, and what it left.
fn forced_reason(said: Option<&str>, leftovers: &[Leftover]) -> String {
    let head = match said {
        Some(said) => format!("Forced delete; the last clean-up answered: {said}"),
        None => "Forced delete; the last clean-up finished.".to_string(),
    };
    delete_failed_reason(&head, leftovers)
}
