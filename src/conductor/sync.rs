//! Periodic polling: statuses of `*_IN_PROGRESS` clusters and federations whose work
//! converges after the job (as Magnum's 10-second `sync_cluster_status`), and cluster health.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use super::execute::{action_of, apply_observation, cluster_writes, complete, fail};
use super::Conductor;
use crate::domain::cluster::Cluster;
use crate::domain::leftover::delete_failed_reason;
use crate::domain::status::{ClusterStatus, FederationStatus, HealthStatus, Verb};
use crate::domain::{ClusterId, Id, TemplateId};
use crate::drivers::{ClusterContext, ClusterObservation, Phase};
use crate::notify::events::{self, Action, Outcome as EventOutcome};
use crate::store::{PageRequest, Scope, SortDir, StoreError, StoreResult, Write};
use uuid::Uuid;

/// Clusters polled at once per conductor.
const CONCURRENCY: usize = 16;
const BATCH: u32 = 500;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncReport {
    /// Resources asked about.
    pub polled: usize,
    /// Resources whose stored state changed.
    pub changed: usize,
}

impl Conductor {
    /// Contexts for many clusters with two queries (node groups and templates), and a third
    /// for their machines when `with_machines` (status polls report on them; health polls do
    /// not, and leave them empty).
    pub(crate) async fn contexts_for(
        &self,
        clusters: Vec<Cluster>,
        with_machines: bool,
    ) -> StoreResult<Vec<ClusterContext>> {
        let uuids: Vec<ClusterId> = clusters.iter().map(|c| c.uuid).collect();
        let mut template_ids: Vec<TemplateId> =
            clusters.iter().map(|c| c.cluster_template_id).collect();
        template_ids.sort();
        template_ids.dedup();
        let mut by_cluster: BTreeMap<ClusterId, Vec<_>> = BTreeMap::new();
        for ng in self.store.nodegroups_of(&uuids).await? {
            by_cluster.entry(ng.cluster_id).or_default().push(ng);
        }
        let mut machines: BTreeMap<ClusterId, Vec<_>> = BTreeMap::new();
        let listed = if with_machines {
            self.store.cluster_machines(&uuids).await?
        } else {
            Vec::new()
        };
        for m in listed {
            machines.entry(m.cluster_id).or_default().push(m);
        }
        let templates: BTreeMap<TemplateId, _> = self
            .store
            .templates_by_uuid(&template_ids)
            .await?
            .into_iter()
            .map(|t| (t.uuid, t))
            .collect();
        let mut out = Vec::with_capacity(clusters.len());
        for c in clusters {
            let Some(template) = templates.get(&c.cluster_template_id).cloned() else {
                continue;
            };
            let nodegroups = by_cluster.remove(&c.uuid).unwrap_or_default();
            let machines = machines.remove(&c.uuid).unwrap_or_default();
            out.push(ClusterContext {
                attempt: 1,
                job: None,
                cluster: c,
                nodegroups,
                template,
                ca: None,
                machines,
            });
        }
        Ok(out)
    }

    /// One round of status polling over every in-progress cluster and federation that has no
    /// job waiting (a waiting job will move it itself).
    #[tracing::instrument(skip_all)]
    pub async fn sync_round(&self) -> StoreResult<SyncReport> {
        let mut report = SyncReport::default();
        let mut after = 0_i64;
        loop {
            let batch = self.store.clusters_in_progress(after, BATCH).await?;
            let Some(last) = batch.last() else { break };
            after = last.id;
            let uuids: Vec<Uuid> = batch.iter().map(|c| c.uuid.uuid()).collect();
            let busy: HashSet<Uuid> = self
                .store
                .resources_with_pending_jobs(&uuids)
                .await?
                .into_iter()
                .collect();
            // A deletion held by registry finalizers has no driver work to poll yet.
            let idle: Vec<Cluster> = batch
                .into_iter()
                .filter(|c| !busy.contains(&c.uuid.uuid()) && !c.registry.deletion_waits())
                .collect();
            let deleting: Vec<Uuid> = idle
                .iter()
                .filter(|c| c.status == ClusterStatus::DeleteInProgress)
                .map(|c| c.uuid.uuid())
                .collect();
            let deadlines: BTreeMap<Uuid, DateTime<Utc>> = self
                .store
                .delete_deadlines(&deleting)
                .await?
                .into_iter()
                .collect();
            let contexts = self.contexts_for(idle, true).await?;
            report.polled += contexts.len();
            let deadlines = &deadlines;
            let changed: Vec<bool> = stream::iter(contexts)
                .map(|ctx| async move {
                    let deadline = deadlines.get(&ctx.cluster.uuid.uuid()).copied();
                    self.sync_cluster(ctx, deadline).await
                })
                .buffer_unordered(CONCURRENCY)
                .collect::<Vec<StoreResult<bool>>>()
                .await
                .into_iter()
                .map(|r| {
                    r.unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "cluster status sync failed");
                        false
                    })
                })
                .collect();
            report.changed += changed.into_iter().filter(|c| *c).count();
        }
        let feds = self.store.federations_in_progress(BATCH).await?;
        let uuids: Vec<Uuid> = feds.iter().map(|f| f.uuid.uuid()).collect();
        let busy: HashSet<Uuid> = self
            .store
            .resources_with_pending_jobs(&uuids)
            .await?
            .into_iter()
            .collect();
        for f in feds.into_iter().filter(|f| !busy.contains(&f.uuid.uuid())) {
            report.polled += 1;
            match self.sync_federation(&f).await {
                Ok(true) => report.changed += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, federation = %f.uuid, "federation status sync failed")
                }
            }
        }
        Ok(report)
    }

    /// Polls one cluster; `delete_deadline` is when its delete (if it is being deleted) must
    /// have finished: past it, a delete still under way (or whose poll fails) fails with what
    /// the backend still holds.
    #[tracing::instrument(level = "debug", skip_all, fields(cluster = %ctx.cluster.uuid))]
    async fn sync_cluster(
        &self,
        ctx: ClusterContext,
        delete_deadline: Option<DateTime<Utc>>,
    ) -> StoreResult<bool> {
        let Some(driver) = self
            .drivers
            .get(ctx.template.spec.driver.as_deref().unwrap_or_default())
        else {
            return Ok(false);
        };
        let overdue = delete_deadline.filter(|d| Utc::now() > *d);
        let obs = match driver.cluster_status(&ctx).await {
            Ok(obs) => obs,
            Err(e) => {
                tracing::warn!(cluster = %ctx.cluster.uuid, error = %e, "status poll failed");
                let Some(deadline) = overdue else {
                    return Ok(false);
                };
                let mut obs = ClusterObservation::phase(Phase::InProgress);
                obs.leftovers = e.leftovers().to_vec();
                return self
                    .delete_overdue(&ctx, &obs, deadline, Some(&e.to_string()))
                    .await;
            }
        };
        let Some(verb) = ctx.cluster.status.verb() else {
            return Ok(false);
        };
        if let (Some(deadline), Verb::Delete, Phase::InProgress) = (overdue, verb, &obs.phase) {
            return self.delete_overdue(&ctx, &obs, deadline, None).await;
        }
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        if obs.phase == Phase::Gone && verb == Verb::Delete {
            c.status = ClusterStatus::DeleteComplete;
            let e = events::cluster_event(
                &self.host,
                Action::Delete,
                EventOutcome::Success,
                &c,
                &ngs,
                None,
            );
            return self
                .commit_sync(vec![Write::DeleteCluster { uuid: c.uuid }, Write::event(e)])
                .await;
        }
        let mut seen = None;
        let ended = match &obs.phase {
            Phase::Gone => {
                let reason = "The backend no longer has this cluster.";
                fail(&mut c, &mut ngs, verb, reason);
                Some(EventOutcome::Failure)
            }
            Phase::Complete => {
                seen = apply_observation(&mut c, &mut ngs, &obs, &ctx.machines);
                for ng in ngs
                    .iter_mut()
                    .filter(|n| n.status == ClusterStatus::DeleteInProgress)
                {
                    ng.status = ClusterStatus::DeleteComplete;
                }
                complete(&mut c, &mut ngs, verb);
                Some(EventOutcome::Success)
            }
            Phase::Failed(reason) => {
                seen = apply_observation(&mut c, &mut ngs, &obs, &ctx.machines);
                fail(&mut c, &mut ngs, verb, reason);
                Some(EventOutcome::Failure)
            }
            Phase::InProgress => {
                seen = apply_observation(&mut c, &mut ngs, &obs, &ctx.machines);
                None
            }
        };
        let mut writes = cluster_writes(&ctx, &c, &ngs);
        writes.extend(seen);
        if let Some(outcome) = ended {
            writes.push(Write::event(events::cluster_event(
                &self.host,
                action_of(verb),
                outcome,
                &c,
                &ngs,
                None,
            )));
        }
        self.commit_sync(writes).await
    }

    /// A delete the driver started has not finished by its deadline: `DELETE_FAILED`, the
    /// reason naming the deadline (and the poll's error, if it failed) and what the backend
    /// still holds, with the failure notification listing it.
    async fn delete_overdue(
        &self,
        ctx: &ClusterContext,
        obs: &ClusterObservation,
        deadline: DateTime<Utc>,
        poll_error: Option<&str>,
    ) -> StoreResult<bool> {
        let mut reason = format!(
            "The delete did not finish by its deadline, {} ([conductor] delete_timeout after it was asked for).",
            deadline.format("%Y-%m-%dT%H:%M:%SZ")
        );
        if let Some(e) = poll_error {
            reason = format!("{reason} The last status poll failed: {e}");
        }
        let reason = delete_failed_reason(&reason, &obs.leftovers);
        let mut c = ctx.cluster.clone();
        let mut ngs = ctx.nodegroups.clone();
        fail(&mut c, &mut ngs, Verb::Delete, &reason);
        let mut writes = cluster_writes(ctx, &c, &ngs);
        writes.push(Write::event(events::cluster_delete_failed_event(
            &self.host,
            &c,
            &ngs,
            &obs.leftovers,
        )));
        self.commit_sync(writes).await
    }

    /// Commits what a status poll found; false when there was nothing to write or the row
    /// changed meanwhile (a request or another conductor: the next round sees it).
    async fn commit_sync(&self, writes: Vec<Write>) -> StoreResult<bool> {
        if writes.is_empty() {
            return Ok(false);
        }
        match self.store.commit(&writes).await {
            Ok(()) => Ok(true),
            Err(StoreError::Stale) => Ok(false),
            Err(e) => Err(e),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(federation = %f.uuid))]
    async fn sync_federation(
        &self,
        f: &crate::domain::federation::Federation,
    ) -> StoreResult<bool> {
        let ctx = self.federation_context(f, &[], 1).await?;
        let driver_name = ctx
            .host
            .as_ref()
            .and_then(|h| h.template.spec.driver.clone())
            .unwrap_or_default();
        let Some(driver) = self.drivers.get(&driver_name) else {
            return Ok(false);
        };
        let phase = match driver.federation_status(&ctx).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(federation = %f.uuid, error = %e, "federation status poll failed");
                return Ok(false);
            }
        };
        let verb = f.status.verb();
        let mut next = f.clone();
        let writes = match phase {
            Phase::InProgress => return Ok(false),
            Phase::Gone if verb == Verb::Delete => {
                next.status = FederationStatus::DeleteComplete;
                let e = events::federation_event(
                    &self.host,
                    Action::Delete,
                    EventOutcome::Success,
                    &next,
                    None,
                    None,
                );
                vec![Write::DeleteFederation { id: f.id }, Write::event(e)]
            }
            Phase::Complete => {
                next.status = verb.federation_complete();
                next.status_reason = None;
                let e = events::federation_event(
                    &self.host,
                    action_of(verb),
                    EventOutcome::Success,
                    &next,
                    None,
                    None,
                );
                vec![Write::update_federation(&next), Write::event(e)]
            }
            Phase::Failed(reason) => {
                next.status = verb.federation_failed();
                next.status_reason = Some(reason);
                let e = events::federation_event(
                    &self.host,
                    action_of(verb),
                    EventOutcome::Failure,
                    &next,
                    None,
                    None,
                );
                vec![Write::update_federation(&next), Write::event(e)]
            }
            Phase::Gone => {
                next.status = verb.federation_failed();
                next.status_reason = Some("The federation control plane is gone.".into());
                let e = events::federation_event(
                    &self.host,
                    action_of(verb),
                    EventOutcome::Failure,
                    &next,
                    None,
                    None,
                );
                vec![Write::update_federation(&next), Write::event(e)]
            }
        };
        match self.store.commit(&writes).await {
            Ok(()) => Ok(true),
            Err(StoreError::Stale) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// One round of health polling. Clusters that run magnum-auto-healer report their own
    /// health through PATCH and are skipped, as in Magnum; so are the clusters the active
    /// prober probes (`[health_probe] drivers`, when enabled), which has the last word.
    #[tracing::instrument(skip_all)]
    pub async fn health_round(&self) -> StoreResult<usize> {
        let scope = Scope {
            project_id: String::new(),
            all_projects: true,
        };
        let mut marker = None;
        let mut changed = 0;
        let probed: Vec<String> = if self.probe.enabled {
            self.probe.driver_list()
        } else {
            Vec::new()
        };
        loop {
            let page = PageRequest {
                limit: BATCH,
                marker,
                sort_key: "id".into(),
                sort_dir: SortDir::Asc,
            };
            let batch = self.store.list_clusters(&scope, &page).await?;
            let Some(last) = batch.last() else { break };
            marker = Some(last.uuid.0);
            let full = batch.len() == BATCH as usize;
            let polled: Vec<Cluster> = batch
                .into_iter()
                .filter(|c| {
                    let healer = c
                        .labels
                        .get("auto_healing_enabled")
                        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                        && c.labels
                            .get("auto_healing_controller")
                            .is_some_and(|v| v == "magnum-auto-healer");
                    !healer && !c.status.is_in_progress() && c.status.is_complete_like()
                })
                .collect();
            for ctx in self.contexts_for(polled, false).await? {
                let name = ctx.template.spec.driver.as_deref().unwrap_or_default();
                if probed.iter().any(|d| d == name) {
                    continue;
                }
                let Some(driver) = self.drivers.get(name) else {
                    continue;
                };
                let Ok(Some(h)) = driver.cluster_health(&ctx).await else {
                    continue;
                };
                let status = match h.healthy {
                    Some(true) => HealthStatus::Healthy,
                    Some(false) => HealthStatus::Unhealthy,
                    None => HealthStatus::Unknown,
                };
                if ctx.cluster.health_status == Some(status)
                    && ctx.cluster.health_status_reason == h.reason
                {
                    continue;
                }
                let mut c = ctx.cluster.clone();
                c.health_status = Some(status);
                c.health_status_reason = h.reason;
                match self.store.commit(&[Write::update_cluster(&c)]).await {
                    Ok(()) => changed += 1,
                    Err(StoreError::Stale) => {}
                    Err(e) => return Err(e),
                }
            }
            if !full {
                break;
            }
        }
        Ok(changed)
    }
}
