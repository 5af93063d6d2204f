//! [`SqlStore`]: the one implementation of [`Store`] and [`ResourceStore`], for both
//! backends. Each method hands over to the module of its table.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::db::Pool;
use super::wakeup::{OutboxSignal, OutboxWakeups};
use super::{
    cluster_group_changes, cluster_group_reach, cluster_groups, clusters, federations,
    health_probes, jobs, keypairs, machine_changes, machine_listing, machines, nodegroup_listing,
    nodegroups, outbox, quotas, registry, services, templates, write,
};
use super::{
    ClusterChange, Dialect, GroupChange, JobGauges, MachineChange, MachineEntry, MachineFilter,
    MachinePage, NewEvent, NodeGroupEntry, NodeGroupPage, OutboxEvent, PageRequest, PoolStatus,
    QuotaRow, RegistryEntry, RegistryPage, ResourceStore, Scope, ServiceRecord, Store, StoreError,
    StoreResult, Write,
};
use crate::domain::cluster::{
    Cluster, ClusterSummary, ClusterWithGroups, NodeGroup, NodeGroupOfCluster,
};
use crate::domain::cluster_group::{
    ClusterGroup, ClusterGroupBinding, ClusterGroupMember, Grantee, GroupRight,
};
use crate::domain::federation::Federation;
use crate::domain::health_probe::{HealthProbe, ProbeCandidate, ProbeResult};
use crate::domain::job::{Job, JobResource};
use crate::domain::keypair::StoredKeyPair;
use crate::domain::machine::Machine;
use crate::domain::template::{ClusterTemplate, NewClusterTemplate, TemplateSpec};
use crate::domain::{ClusterGroupId, ClusterId, FederationId, Ident, NodeGroupId, TemplateId};

/// The store over a PostgreSQL or SQLite pool ([`super::PgStore`], [`super::SqliteStore`]).
pub struct SqlStore {
    pub(crate) pool: Pool,
    /// Wakes this process's relays after a commit that wrote an event.
    signal: OutboxSignal,
    /// Wakes this process's registry watches after a commit that changed a cluster row.
    registry_signal: OutboxSignal,
}

impl SqlStore {
    pub(crate) fn new(pool: Pool) -> SqlStore {
        SqlStore {
            pool,
            signal: OutboxSignal::default(),
            registry_signal: OutboxSignal::default(),
        }
    }

    /// Commits a write set; a set with an event wakes this process's relays (PostgreSQL
    /// notifies every process's from the transaction itself, see `outbox::insert`).
    async fn commit_set(&self, writes: &[Write]) -> StoreResult<Option<ClusterTemplate>> {
        let written = write::commit(&self.pool, writes).await?;
        if write::has_event(writes) {
            self.signal.committed();
        }
        if write::touches_clusters(writes) {
            self.registry_signal.committed();
        }
        Ok(written)
    }

    /// A template write set: the template write, then its events.
    fn template_writes(first: Write, events: &[NewEvent]) -> Vec<Write> {
        let mut writes = Vec::with_capacity(1 + events.len());
        writes.push(first);
        writes.extend(events.iter().cloned().map(Write::event));
        writes
    }

    /// Commits a set that writes a template and returns the template as written.
    async fn commit_template(&self, writes: &[Write]) -> StoreResult<ClusterTemplate> {
        self.commit_set(writes)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the template write returned no row".into()))
    }
}

#[async_trait]
impl ResourceStore for SqlStore {
    async fn commit(&self, writes: &[Write]) -> StoreResult<()> {
        self.commit_set(writes).await.map(|_| ())
    }

    async fn get_cluster(&self, scope: &Scope, ident: &Ident) -> StoreResult<Cluster> {
        clusters::get(&self.pool, scope, ident).await
    }

    async fn get_cluster_with_groups(
        &self,
        scope: &Scope,
        ident: &Ident,
    ) -> StoreResult<ClusterWithGroups> {
        clusters::get_with_groups(&self.pool, scope, ident).await
    }

    async fn find_cluster(&self, uuid: &ClusterId) -> StoreResult<Option<Cluster>> {
        clusters::find(&self.pool, uuid).await
    }

    async fn clusters_by_uuid(&self, uuids: &[ClusterId]) -> StoreResult<Vec<Cluster>> {
        clusters::by_uuids(&self.pool, uuids).await
    }

    async fn list_clusters(&self, scope: &Scope, page: &PageRequest) -> StoreResult<Vec<Cluster>> {
        clusters::list(&self.pool, scope, page).await
    }

    async fn list_cluster_summaries(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterSummary>> {
        clusters::list_summaries(&self.pool, scope, page).await
    }

    async fn list_clusters_with_groups(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterWithGroups>> {
        clusters::list_with_groups(&self.pool, scope, page).await
    }

    async fn nodegroups_of(&self, cluster_uuids: &[ClusterId]) -> StoreResult<Vec<NodeGroup>> {
        nodegroups::of_clusters(&self.pool, cluster_uuids).await
    }

    async fn list_nodegroups(
        &self,
        cluster_uuid: &ClusterId,
        scope: &Scope,
        role: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Vec<NodeGroup>> {
        nodegroups::list(&self.pool, cluster_uuid, scope, role, page).await
    }

    async fn get_nodegroup(&self, cluster_uuid: &ClusterId, ident: &str) -> StoreResult<NodeGroup> {
        nodegroups::get(&self.pool, cluster_uuid, ident).await
    }

    async fn get_nodegroup_of(
        &self,
        scope: &Scope,
        cluster_ident: &Ident,
        nodegroup_ident: &str,
    ) -> StoreResult<NodeGroupOfCluster> {
        nodegroups::get_of_cluster(&self.pool, scope, cluster_ident, nodegroup_ident).await
    }

    async fn list_machines(
        &self,
        cluster_uuid: &ClusterId,
        scope: &Scope,
        filter: &MachineFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Machine>> {
        machines::list(&self.pool, cluster_uuid, scope, filter, page).await
    }

    async fn get_machine(&self, cluster_uuid: &ClusterId, ident: &str) -> StoreResult<Machine> {
        machines::get(&self.pool, cluster_uuid, ident).await
    }

    async fn nodegroup_machines(&self, nodegroup: &NodeGroupId) -> StoreResult<Vec<Machine>> {
        machines::of_nodegroup(&self.pool, nodegroup).await
    }

    async fn cluster_machines(&self, clusters: &[ClusterId]) -> StoreResult<Vec<Machine>> {
        machines::of_clusters(&self.pool, clusters).await
    }

    async fn templates_by_uuid(&self, uuids: &[TemplateId]) -> StoreResult<Vec<ClusterTemplate>> {
        templates::by_uuids(&self.pool, uuids).await
    }

    async fn clusters_in_progress(&self, after_id: i64, limit: u32) -> StoreResult<Vec<Cluster>> {
        clusters::in_progress(&self.pool, after_id, limit).await
    }

    async fn get_federation(&self, scope: &Scope, ident: &Ident) -> StoreResult<Federation> {
        federations::get(&self.pool, scope, ident).await
    }

    async fn find_federation(&self, uuid: &FederationId) -> StoreResult<Option<Federation>> {
        federations::find(&self.pool, uuid).await
    }

    async fn list_federations(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<Federation>> {
        federations::list(&self.pool, scope, page).await
    }

    async fn federations_of_cluster(
        &self,
        cluster_uuid: &ClusterId,
    ) -> StoreResult<Vec<Federation>> {
        federations::of_cluster(&self.pool, cluster_uuid).await
    }

    async fn federations_in_progress(&self, limit: u32) -> StoreResult<Vec<Federation>> {
        federations::in_progress(&self.pool, limit).await
    }

    async fn claim_job(&self, owner: &str, lease: Duration) -> StoreResult<Option<Job>> {
        jobs::claim(&self.pool, owner, lease).await
    }

    async fn renew_lease(&self, job_id: i64, owner: &str, lease: Duration) -> StoreResult<bool> {
        jobs::renew_lease(&self.pool, job_id, owner, lease).await
    }

    async fn release_leases(&self, owner: &str) -> StoreResult<u64> {
        jobs::release_leases(&self.pool, owner).await
    }

    async fn other_pending_job(&self, resource: &JobResource, job_id: i64) -> StoreResult<bool> {
        jobs::other_pending(&self.pool, resource, job_id).await
    }

    async fn resources_with_pending_jobs(
        &self,
        uuids: &[uuid::Uuid],
    ) -> StoreResult<Vec<uuid::Uuid>> {
        jobs::resources_pending(&self.pool, uuids).await
    }

    async fn delete_deadlines(
        &self,
        uuids: &[uuid::Uuid],
    ) -> StoreResult<Vec<(uuid::Uuid, chrono::DateTime<chrono::Utc>)>> {
        jobs::delete_deadlines(&self.pool, uuids).await
    }

    async fn jobs_for(&self, resource_uuid: uuid::Uuid) -> StoreResult<Vec<(Job, String)>> {
        jobs::of_resource(&self.pool, resource_uuid).await
    }

    async fn get_keypairs(&self, cluster_uuid: &ClusterId) -> StoreResult<Vec<StoredKeyPair>> {
        keypairs::of_cluster(&self.pool, cluster_uuid).await
    }

    async fn probe_candidates(
        &self,
        drivers: &[String],
        due_before: DateTime<Utc>,
        after_id: i64,
        limit: u32,
    ) -> StoreResult<Vec<ProbeCandidate>> {
        health_probes::candidates(&self.pool, drivers, due_before, after_id, limit).await
    }

    async fn claim_health_probes(
        &self,
        uuids: &[ClusterId],
        due_before: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<ClusterId>> {
        health_probes::claim(&self.pool, uuids, due_before, now).await
    }

    async fn record_health_probes(
        &self,
        results: &[ProbeResult],
        at: DateTime<Utc>,
    ) -> StoreResult<Vec<HealthProbe>> {
        health_probes::record(&self.pool, results, at).await
    }

    async fn mark_health_transitions(
        &self,
        uuids: &[ClusterId],
        at: DateTime<Utc>,
    ) -> StoreResult<()> {
        health_probes::mark_transitions(&self.pool, uuids, at).await
    }

    async fn health_probes_of(&self, uuids: &[ClusterId]) -> StoreResult<Vec<HealthProbe>> {
        health_probes::of_clusters(&self.pool, uuids).await
    }

    async fn get_quota(&self, project_id: &str, resource: &str) -> StoreResult<Option<QuotaRow>> {
        quotas::get(&self.pool, project_id, resource).await
    }

    async fn list_quotas(
        &self,
        project_id: Option<&str>,
        marker: Option<i64>,
        page: &PageRequest,
    ) -> StoreResult<Vec<QuotaRow>> {
        quotas::list(&self.pool, project_id, marker, page).await
    }

    async fn create_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i32,
    ) -> StoreResult<QuotaRow> {
        quotas::create(&self.pool, project_id, resource, hard_limit).await
    }

    async fn update_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i32,
    ) -> StoreResult<QuotaRow> {
        quotas::update(&self.pool, project_id, resource, hard_limit).await
    }

    async fn delete_quota(&self, project_id: &str, resource: &str) -> StoreResult<()> {
        quotas::delete(&self.pool, project_id, resource).await
    }

    async fn stats(&self, project_id: Option<&str>) -> StoreResult<(i64, i64)> {
        clusters::stats(&self.pool, project_id).await
    }
}

#[async_trait]
impl Store for SqlStore {
    fn dialect(&self) -> Dialect {
        self.pool.dialect()
    }

    #[tracing::instrument(skip_all)]
    async fn migrate(&self) -> StoreResult<()> {
        self.pool.migrate().await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn schema_version(&self) -> StoreResult<Option<i64>> {
        let pool = &self.pool;
        let exists: bool = pool
            .sql(pool.dialect().migrations_table_exists())
            .scalar_one(pool)
            .await?;
        if !exists {
            return Ok(None);
        }
        pool.sql("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .scalar_one(pool)
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn ping(&self) -> StoreResult<()> {
        self.pool.sql("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_cluster_template(
        &self,
        template: &NewClusterTemplate,
        events: &[NewEvent],
    ) -> StoreResult<ClusterTemplate> {
        let first = Write::InsertTemplate(Box::new(template.clone()));
        self.commit_template(&Self::template_writes(first, events))
            .await
    }

    async fn get_cluster_template(
        &self,
        scope: &Scope,
        ident: &Ident,
    ) -> StoreResult<ClusterTemplate> {
        templates::get(&self.pool, scope, ident).await
    }

    async fn list_cluster_templates(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterTemplate>> {
        templates::list(&self.pool, scope, page).await
    }

    async fn update_cluster_template(
        &self,
        id: i64,
        expected_version: i64,
        spec: &TemplateSpec,
        refuse_if_referenced: bool,
        events: &[NewEvent],
    ) -> StoreResult<ClusterTemplate> {
        let first = Write::UpdateTemplate {
            id,
            expected_version,
            spec: Box::new(spec.clone()),
            refuse_if_referenced,
        };
        self.commit_template(&Self::template_writes(first, events))
            .await
    }

    async fn delete_cluster_template(&self, id: i64, events: &[NewEvent]) -> StoreResult<()> {
        let writes = Self::template_writes(Write::DeleteTemplate { id }, events);
        self.commit(&writes).await
    }

    async fn template_in_use(&self, uuid: &TemplateId) -> StoreResult<bool> {
        templates::in_use(&self.pool, uuid).await
    }

    async fn heartbeat_service(&self, host: &str, binary: &str) -> StoreResult<()> {
        services::heartbeat(&self.pool, host, binary).await
    }

    async fn list_services(&self) -> StoreResult<Vec<ServiceRecord>> {
        services::list(&self.pool).await
    }

    async fn pending_events(&self, limit: u32) -> StoreResult<Vec<OutboxEvent>> {
        outbox::pending(&self.pool, limit).await
    }

    async fn mark_events_sent(&self, ids: &[i64]) -> StoreResult<()> {
        outbox::mark_sent(&self.pool, ids).await
    }

    async fn prune_sent_events(&self, older_than: DateTime<Utc>) -> StoreResult<u64> {
        outbox::prune_sent(&self.pool, older_than).await
    }

    async fn claim_events(
        &self,
        owner: &str,
        limit: u32,
        claim: Duration,
    ) -> StoreResult<Vec<OutboxEvent>> {
        outbox::claim(&self.pool, owner, limit, claim).await
    }

    async fn release_events(&self, owner: &str, ids: &[i64], attempted: bool) -> StoreResult<()> {
        outbox::release(&self.pool, owner, ids, attempted).await
    }

    async fn outbox_backlog(&self) -> StoreResult<(i64, Option<DateTime<Utc>>)> {
        outbox::backlog(&self.pool).await
    }

    fn outbox_wakeups(&self) -> OutboxWakeups {
        match &self.pool {
            Pool::Pg(pool, _, _) => OutboxWakeups::listening(&self.signal, pool.connect_options()),
            Pool::Lite(..) => OutboxWakeups::in_process(&self.signal),
        }
    }

    async fn registry_page(&self, page: &RegistryPage) -> StoreResult<Vec<RegistryEntry>> {
        registry::page(&self.pool, page).await
    }

    async fn registry_get(&self, project: &str, name: &str) -> StoreResult<Option<RegistryEntry>> {
        registry::get(&self.pool, project, name).await
    }

    async fn registry_entries(&self, uuids: &[ClusterId]) -> StoreResult<Vec<RegistryEntry>> {
        registry::by_uuids(&self.pool, uuids).await
    }

    async fn registry_changes(&self, after: i64, limit: u32) -> StoreResult<Vec<ClusterChange>> {
        registry::changes(&self.pool, after, limit).await
    }

    async fn registry_count_after(
        &self,
        project: Option<&str>,
        after: Option<(&str, &str)>,
        cap: u32,
    ) -> StoreResult<super::ItemCount> {
        registry::count_after(&self.pool, project, after, cap).await
    }

    async fn registry_first_change_after(
        &self,
        since: i64,
        project: Option<&str>,
        after: Option<(&str, &str)>,
    ) -> StoreResult<Option<i64>> {
        registry::first_change_after(&self.pool, since, project, after).await
    }

    async fn machine_page(&self, page: &MachinePage) -> StoreResult<Vec<MachineEntry>> {
        machine_listing::page(&self.pool, page).await
    }

    async fn machines_by_names(
        &self,
        project: &str,
        pairs: &[(String, String)],
        uuid: Option<&str>,
    ) -> StoreResult<Vec<MachineEntry>> {
        machine_listing::by_names(&self.pool, project, pairs, uuid).await
    }

    async fn nodegroup_page(&self, page: &NodeGroupPage) -> StoreResult<Vec<NodeGroupEntry>> {
        nodegroup_listing::page(&self.pool, page).await
    }

    async fn nodegroups_by_names(
        &self,
        project: &str,
        pairs: &[(String, String)],
        uuid: Option<&str>,
    ) -> StoreResult<Vec<NodeGroupEntry>> {
        nodegroup_listing::by_names(&self.pool, project, pairs, uuid).await
    }

    async fn nodegroups_of_clusters(
        &self,
        clusters: &[ClusterId],
    ) -> StoreResult<Vec<NodeGroupEntry>> {
        nodegroup_listing::of_clusters(&self.pool, clusters).await
    }

    async fn machine_changes(&self, after: i64, limit: u32) -> StoreResult<Vec<MachineChange>> {
        machine_changes::changes(&self.pool, after, limit).await
    }

    async fn cluster_group_changes(&self, after: i64, limit: u32) -> StoreResult<Vec<GroupChange>> {
        cluster_group_changes::changes(&self.pool, after, limit).await
    }

    async fn registry_bounds(&self) -> StoreResult<(i64, i64)> {
        registry::bounds(&self.pool).await
    }

    async fn registry_projects(&self, limit: u32) -> StoreResult<Vec<String>> {
        registry::projects(&self.pool, limit).await
    }

    async fn prune_registry_changes(&self, keep_seconds: u64) -> StoreResult<u64> {
        registry::prune(&self.pool, keep_seconds).await
    }

    fn registry_wakeups(&self) -> OutboxWakeups {
        match &self.pool {
            Pool::Pg(pool, _, _) => OutboxWakeups::listening_on(
                registry::REGISTRY_CHANNEL,
                &self.registry_signal,
                pool.connect_options(),
            ),
            Pool::Lite(..) => OutboxWakeups::in_process(&self.registry_signal),
        }
    }

    async fn job_gauges(&self) -> StoreResult<JobGauges> {
        jobs::gauges(&self.pool).await
    }

    fn pool_status(&self) -> PoolStatus {
        self.pool.status()
    }

    async fn get_cluster_group(&self, scope: &Scope, ident: &Ident) -> StoreResult<ClusterGroup> {
        cluster_groups::get(&self.pool, scope, ident).await
    }

    async fn find_cluster_group(&self, uuid: &ClusterGroupId) -> StoreResult<Option<ClusterGroup>> {
        cluster_groups::find(&self.pool, uuid).await
    }

    async fn list_cluster_groups(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterGroup>> {
        cluster_groups::list(&self.pool, scope, page).await
    }

    async fn cluster_group_members(
        &self,
        group: &ClusterGroupId,
    ) -> StoreResult<Vec<ClusterGroupMember>> {
        cluster_groups::members_of(&self.pool, group).await
    }

    async fn cluster_group_member(
        &self,
        group: &ClusterGroupId,
        cluster: &ClusterId,
    ) -> StoreResult<Option<ClusterGroupMember>> {
        cluster_groups::member(&self.pool, group, cluster).await
    }

    async fn cluster_group_members_named(
        &self,
        groups: &[ClusterGroupId],
    ) -> StoreResult<Vec<(ClusterGroupMember, String)>> {
        cluster_groups::members_named(&self.pool, groups).await
    }

    async fn cluster_group_bindings_in(
        &self,
        scope: &Scope,
    ) -> StoreResult<Vec<(ClusterGroupBinding, String)>> {
        cluster_groups::bindings_in(&self.pool, scope).await
    }

    async fn cluster_group_proposals(&self, project: &str) -> StoreResult<Vec<ClusterGroupMember>> {
        cluster_groups::proposals_for(&self.pool, project).await
    }

    async fn cluster_group_matches(&self, group: &ClusterGroupId) -> StoreResult<Vec<ClusterId>> {
        cluster_groups::matches_of(&self.pool, group).await
    }

    async fn cluster_group_bindings(
        &self,
        group: &ClusterGroupId,
    ) -> StoreResult<Vec<ClusterGroupBinding>> {
        cluster_groups::bindings_of(&self.pool, group).await
    }

    async fn cluster_group_bindings_to(
        &self,
        project: &str,
    ) -> StoreResult<Vec<ClusterGroupBinding>> {
        cluster_groups::bindings_to(&self.pool, project).await
    }

    async fn clusters_through_groups(
        &self,
        caller: Grantee<'_>,
    ) -> StoreResult<Vec<(ClusterId, GroupRight)>> {
        cluster_group_reach::through_groups(&self.pool, caller).await
    }

    async fn group_right_over_cluster(
        &self,
        caller: Grantee<'_>,
        cluster: &ClusterId,
    ) -> StoreResult<Option<GroupRight>> {
        cluster_group_reach::right_over(&self.pool, caller, cluster).await
    }

    async fn list_cluster_summaries_through(
        &self,
        scope: &Scope,
        through: &[ClusterGroupId],
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterSummary>> {
        clusters::list_summaries_through(&self.pool, scope, through, page).await
    }

    async fn list_clusters_with_groups_through(
        &self,
        scope: &Scope,
        through: &[ClusterGroupId],
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterWithGroups>> {
        clusters::list_with_groups_through(&self.pool, scope, through, page).await
    }

    async fn clusters_named_through(
        &self,
        name: &str,
        through: &[ClusterGroupId],
    ) -> StoreResult<Vec<ClusterId>> {
        cluster_group_reach::named_through(&self.pool, name, through).await
    }

    async fn cluster_group_links(
        &self,
        clusters: &[ClusterId],
        through: &[ClusterGroupId],
    ) -> StoreResult<Vec<(ClusterId, ClusterGroupId)>> {
        cluster_group_reach::links(&self.pool, clusters, through).await
    }
}
