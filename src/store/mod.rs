//! The only place with SQL. One [`Store`] trait and one implementation, [`SqlStore`], over a
//! PostgreSQL (production) or SQLite (the embedded default) pool chosen from the connection
//! URL. Both run the same SQL text (`$n` placeholders work on both); the few dialect
//! differences live in [`Dialect`]'s methods, the backend dispatch in `db`.
//!
//! One module per table holds its statements: `clusters`, `nodegroups`, `machines`,
//! `federations`, `templates`, `jobs`, `outbox`, `quotas`, `keypairs` (certificates) and `services`. A state
//! change is one transaction ([`Write`] sets, `write::commit`): a row, its job and its outbox
//! event commit together.

mod arg;
mod cluster_group_changes;
mod cluster_group_reach;
mod cluster_groups;
mod clusters;
mod db;
mod dialect;
mod federations;
mod health_probes;
mod jobs;
mod keypairs;
mod machine_changes;
mod machine_listing;
mod machine_writes;
mod machines;
mod nodegroup_listing;
mod nodegroups;
mod outbox;
mod pg;
mod postgres;
mod quotas;
mod registry;
mod rows;
mod services;
pub(crate) mod sql;
mod sql_store;
mod sqlite;
mod templates;
mod wakeup;
mod write;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use crate::domain::template::{ClusterTemplate, NewClusterTemplate, TemplateSpec};
use crate::domain::{ClusterGroupId, ClusterId, FederationId, Ident, NodeGroupId, TemplateId};

pub use cluster_group_changes::{GroupChange, GroupObject, MemberShown};
pub use cluster_groups::CLUSTER_GROUP_SORT_KEYS;
pub use clusters::CLUSTER_SORT_KEYS;
pub use federations::FEDERATION_SORT_KEYS;
pub use machine_changes::MachineChange;
pub use machine_listing::{KeyedPage, MachineEntry, MachineKey, MachinePage, NameFilter};
pub use machines::{MachineFilter, CONTEXT_MACHINES, MACHINE_SORT_KEYS};
pub use nodegroup_listing::{MachineTally, NodeGroupEntry, NodeGroupKey, NodeGroupPage};
pub use nodegroups::NODEGROUP_SORT_KEYS;
pub use postgres::PgStore;
pub use quotas::QUOTA_SORT_KEYS;
pub use registry::{ChangeKind, ClusterChange, ItemCount, RegistryEntry, RegistryPage};
pub use rows::QuotaRow;
pub use sql_store::SqlStore;
pub use sqlite::SqliteStore;
pub use templates::TEMPLATE_SORT_KEYS;
pub use wakeup::{OutboxWakeups, Wake};
pub use write::Write;

use crate::domain::cluster::{
    Cluster, ClusterOwner, ClusterSummary, ClusterWithGroups, NodeGroup, NodeGroupOfCluster,
};
use crate::domain::cluster_group::{
    ClusterGroup, ClusterGroupBinding, ClusterGroupMember, Grantee, GroupRight,
};
use crate::domain::federation::Federation;
use crate::domain::health_probe::{HealthProbe, ProbeCandidate, ProbeResult};
use crate::domain::job::{Job, JobResource};
use crate::domain::keypair::StoredKeyPair;
use crate::domain::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Sqlite,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No visible row matched.
    #[error("not found")]
    NotFound,
    /// A name matched more than one visible row.
    #[error("more than one row has that name")]
    Ambiguous,
    /// The cluster matched and no node group of it the caller may see did; the cluster's
    /// facts come along, so the caller can check its policy before answering.
    #[error("no such node group of cluster {}", .0.uuid)]
    NodeGroupNotFound(Box<ClusterOwner>),
    /// A named constraint refused the write.
    #[error("constraint {constraint} refused the write")]
    Conflict { constraint: String },
    /// An optimistic update lost against a concurrent writer.
    #[error("the row changed concurrently")]
    Stale,
    /// The database is unreachable or the pool is exhausted.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The database did not answer within the statement timeout (a network partition, an
    /// overloaded server).
    #[error("the database did not answer within {0:?}")]
    TimedOut(std::time::Duration),
    /// The COMMIT was sent and its answer never came: the change may have been applied.
    #[error("the database did not confirm the commit ({0}); it may have been applied")]
    CommitUnconfirmed(String),
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A quota refused the write.
    #[error("the quota of {limit} is reached")]
    LimitExceeded { limit: i64 },
    /// A stored value does not decode into its domain type.
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
}

impl StoreError {
    pub fn is_constraint(&self, name: &str) -> bool {
        matches!(self, StoreError::Conflict { constraint } if constraint == name)
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

pub use crate::domain::Scope;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    Asc,
    Desc,
}

impl SortDir {
    pub fn as_str(&self) -> &'static str {
        match self {
            SortDir::Asc => "asc",
            SortDir::Desc => "desc",
        }
    }
}

/// A validated page request: `sort_key` is one of the table's sortable columns.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub limit: u32,
    pub marker: Option<Uuid>,
    pub sort_key: String,
    pub sort_dir: SortDir,
}

/// One notification, written to the outbox in the transaction of the change it reports.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub message_id: Uuid,
    pub resource_type: String,
    pub resource_uuid: String,
    pub event_type: String,
    pub priority: String,
    /// The inner oslo message.
    pub message: Value,
}

/// An outbox row waiting to be (or already) delivered.
#[derive(Debug, Clone)]
pub struct OutboxEvent {
    pub id: i64,
    pub message_id: Uuid,
    pub resource_uuid: String,
    pub event_type: String,
    pub priority: String,
    /// The inner oslo message as stored: JSON text, published as it is (never parsed into a
    /// tree on the way from the outbox to the broker).
    pub message: Box<RawValue>,
    pub created_at: DateTime<Utc>,
    pub attempts: i32,
}

/// Equal when every field is, the message by its stored text.
impl PartialEq for OutboxEvent {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.message_id == other.message_id
            && self.resource_uuid == other.resource_uuid
            && self.event_type == other.event_type
            && self.priority == other.priority
            && self.message.get() == other.message.get()
            && self.created_at == other.created_at
            && self.attempts == other.attempts
    }
}

impl OutboxEvent {
    /// The inner message parsed, for readers that look into it (`Null` if it is not JSON).
    pub fn message_json(&self) -> Value {
        serde_json::from_str(self.message.get()).unwrap_or(Value::Null)
    }
}

/// A conductor or API process as `GET /v1/mservices` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceRecord {
    pub id: i64,
    pub host: String,
    pub binary: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub forced_down: bool,
    pub report_count: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// Clusters, node groups, federations, jobs, quotas and stats.
#[async_trait]
pub trait ResourceStore: Send + Sync {
    /// Commits every write in one transaction, or none of them.
    async fn commit(&self, writes: &[Write]) -> StoreResult<()>;

    async fn get_cluster(&self, scope: &Scope, ident: &Ident) -> StoreResult<Cluster>;
    /// A cluster with what its full representation needs: one statement.
    async fn get_cluster_with_groups(
        &self,
        scope: &Scope,
        ident: &Ident,
    ) -> StoreResult<ClusterWithGroups>;
    /// Any project's cluster by uuid (the conductor's view).
    async fn find_cluster(&self, uuid: &ClusterId) -> StoreResult<Option<Cluster>>;
    async fn clusters_by_uuid(&self, uuids: &[ClusterId]) -> StoreResult<Vec<Cluster>>;
    async fn list_clusters(&self, scope: &Scope, page: &PageRequest) -> StoreResult<Vec<Cluster>>;
    /// A page with what the summary representation needs: one statement.
    async fn list_cluster_summaries(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterSummary>>;
    /// A page with what the full representation needs: one statement.
    async fn list_clusters_with_groups(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterWithGroups>>;
    /// Every node group of the given clusters, in one query.
    async fn nodegroups_of(&self, cluster_uuids: &[ClusterId]) -> StoreResult<Vec<NodeGroup>>;
    async fn list_nodegroups(
        &self,
        cluster_uuid: &ClusterId,
        scope: &Scope,
        role: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Vec<NodeGroup>>;
    /// A node group of a cluster by uuid, name or integer id.
    async fn get_nodegroup(&self, cluster_uuid: &ClusterId, ident: &str) -> StoreResult<NodeGroup>;
    /// A node group by uuid, name or integer id (as [`Self::get_nodegroup`]) of a cluster by
    /// uuid or name (as [`Self::get_cluster`]), with the cluster's owner and labels: one
    /// statement. [`StoreError::NotFound`] and [`StoreError::Ambiguous`] are the cluster's;
    /// [`StoreError::NodeGroupNotFound`] says the cluster matched and the node group did not,
    /// or the group matched first belongs to another project and `scope` sees only its own.
    async fn get_nodegroup_of(
        &self,
        scope: &Scope,
        cluster_ident: &Ident,
        nodegroup_ident: &str,
    ) -> StoreResult<NodeGroupOfCluster>;
    /// One page of a cluster's machines the caller may see, filtered by node group, role and
    /// phase; the marker is any machine of the cluster, matching the filters or not.
    async fn list_machines(
        &self,
        cluster_uuid: &ClusterId,
        scope: &Scope,
        filter: &MachineFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Machine>>;
    /// A machine of a cluster by uuid or name.
    async fn get_machine(&self, cluster_uuid: &ClusterId, ident: &str) -> StoreResult<Machine>;
    /// Every machine of a node group (being deleted or not), in id order.
    async fn nodegroup_machines(&self, nodegroup: &NodeGroupId) -> StoreResult<Vec<Machine>>;
    /// The machines of the clusters, in id order: the first [`CONTEXT_MACHINES`] of each node
    /// group.
    async fn cluster_machines(&self, clusters: &[ClusterId]) -> StoreResult<Vec<Machine>>;
    async fn templates_by_uuid(&self, uuids: &[TemplateId]) -> StoreResult<Vec<ClusterTemplate>>;
    /// Clusters with a `*_IN_PROGRESS` status, by id after `after_id`.
    async fn clusters_in_progress(&self, after_id: i64, limit: u32) -> StoreResult<Vec<Cluster>>;

    async fn get_federation(&self, scope: &Scope, ident: &Ident) -> StoreResult<Federation>;
    async fn find_federation(&self, uuid: &FederationId) -> StoreResult<Option<Federation>>;
    async fn list_federations(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<Federation>>;
    /// Federations the cluster hosts or belongs to.
    async fn federations_of_cluster(
        &self,
        cluster_uuid: &ClusterId,
    ) -> StoreResult<Vec<Federation>>;
    async fn federations_in_progress(&self, limit: u32) -> StoreResult<Vec<Federation>>;

    /// Claims the next due job under a lease, committed before the caller starts work.
    async fn claim_job(&self, owner: &str, lease: std::time::Duration) -> StoreResult<Option<Job>>;
    /// Extends a held lease; false when the lease was lost.
    async fn renew_lease(
        &self,
        job_id: i64,
        owner: &str,
        lease: std::time::Duration,
    ) -> StoreResult<bool>;
    /// Gives back every pending job `owner` holds: unleased, claimable by any conductor at
    /// once (a stopping conductor's jobs it could not finish). How many.
    async fn release_leases(&self, owner: &str) -> StoreResult<u64>;
    /// Whether a job other than `job_id` waits for the resource.
    async fn other_pending_job(&self, resource: &JobResource, job_id: i64) -> StoreResult<bool>;
    /// Which of these resources have a job waiting.
    async fn resources_with_pending_jobs(&self, uuids: &[Uuid]) -> StoreResult<Vec<Uuid>>;
    /// The deadline of the latest delete job of each of these clusters that has one.
    async fn delete_deadlines(
        &self,
        uuids: &[Uuid],
    ) -> StoreResult<Vec<(Uuid, chrono::DateTime<chrono::Utc>)>>;
    /// Every job of a resource with its state (`pending`, `done`, `failed`).
    async fn jobs_for(&self, resource_uuid: Uuid) -> StoreResult<Vec<(Job, String)>>;

    /// A cluster's key pairs (CAs and the service's client certificate), private keys sealed.
    async fn get_keypairs(&self, cluster_uuid: &ClusterId) -> StoreResult<Vec<StoredKeyPair>>;

    // ---- The active health prober (`cluster_health_probe`) -----------------------------------
    /// Clusters the prober may probe, by id after `after_id`, at most `limit`: an
    /// `api_address`, a complete-like status, a template whose driver is in `drivers`, and no
    /// probe (nor claim of one) since `due_before`. Only the columns a probe needs.
    async fn probe_candidates(
        &self,
        drivers: &[String],
        due_before: DateTime<Utc>,
        after_id: i64,
        limit: u32,
    ) -> StoreResult<Vec<ProbeCandidate>>;
    /// Claims clusters for a probe, in one statement: those still not probed since
    /// `due_before` get `last_probe_at = now` and are returned; rows another conductor claimed
    /// meanwhile are not.
    async fn claim_health_probes(
        &self,
        uuids: &[ClusterId],
        due_before: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<ClusterId>>;
    /// Records a batch of probe results made at `at` in one statement (counters of
    /// consecutive failures and successes move in SQL) and returns the records as stored.
    async fn record_health_probes(
        &self,
        results: &[ProbeResult],
        at: DateTime<Utc>,
    ) -> StoreResult<Vec<HealthProbe>>;
    /// Sets `last_transition_at` of clusters whose health the prober just changed.
    async fn mark_health_transitions(
        &self,
        uuids: &[ClusterId],
        at: DateTime<Utc>,
    ) -> StoreResult<()>;
    /// The probe records of these clusters (those never probed have none), for the cluster
    /// registry: `last_probe_at` is `lastHeartbeatTime`, `last_transition_at`
    /// `lastTransitionTime`.
    async fn health_probes_of(&self, uuids: &[ClusterId]) -> StoreResult<Vec<HealthProbe>>;

    async fn get_quota(&self, project_id: &str, resource: &str) -> StoreResult<Option<QuotaRow>>;
    /// Quotas of one project (or all, with `None`), keyset-paged by integer id markers.
    async fn list_quotas(
        &self,
        project_id: Option<&str>,
        marker: Option<i64>,
        page: &PageRequest,
    ) -> StoreResult<Vec<QuotaRow>>;
    async fn create_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i32,
    ) -> StoreResult<QuotaRow>;
    async fn update_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i32,
    ) -> StoreResult<QuotaRow>;
    async fn delete_quota(&self, project_id: &str, resource: &str) -> StoreResult<()>;
    /// Number of clusters and total node count (masters included), of a project or everywhere.
    async fn stats(&self, project_id: Option<&str>) -> StoreResult<(i64, i64)>;
}

#[async_trait]
pub trait Store: ResourceStore + Send + Sync + 'static {
    fn dialect(&self) -> Dialect;
    /// Applies pending migrations.
    async fn migrate(&self) -> StoreResult<()>;
    /// The newest applied migration, if any.
    async fn schema_version(&self) -> StoreResult<Option<i64>>;
    async fn ping(&self) -> StoreResult<()>;

    // Cluster templates.
    async fn create_cluster_template(
        &self,
        template: &NewClusterTemplate,
        events: &[NewEvent],
    ) -> StoreResult<ClusterTemplate>;
    async fn get_cluster_template(
        &self,
        scope: &Scope,
        ident: &Ident,
    ) -> StoreResult<ClusterTemplate>;
    async fn list_cluster_templates(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterTemplate>>;
    /// Writes `spec` if the row is still at `expected_version`, else [`StoreError::Stale`].
    /// With `refuse_if_referenced`, the change is rolled back with [`StoreError::Conflict`]
    /// `cluster_template_referenced` when a cluster uses the template; the check runs inside
    /// the transaction after the row is locked, so a cluster create racing the update (it
    /// holds [`Write::GuardTemplate`]) is either seen or refused as stale.
    async fn update_cluster_template(
        &self,
        id: i64,
        expected_version: i64,
        spec: &TemplateSpec,
        refuse_if_referenced: bool,
        events: &[NewEvent],
    ) -> StoreResult<ClusterTemplate>;
    /// Deletes the template; [`StoreError::Conflict`] `fk_cluster_cluster_template` while a
    /// cluster uses it.
    async fn delete_cluster_template(&self, id: i64, events: &[NewEvent]) -> StoreResult<()>;
    async fn template_in_use(&self, uuid: &TemplateId) -> StoreResult<bool>;

    // Services.
    async fn heartbeat_service(&self, host: &str, binary: &str) -> StoreResult<()>;
    async fn list_services(&self) -> StoreResult<Vec<ServiceRecord>>;

    // Outbox.
    async fn pending_events(&self, limit: u32) -> StoreResult<Vec<OutboxEvent>>;
    async fn mark_events_sent(&self, ids: &[i64]) -> StoreResult<()>;
    async fn prune_sent_events(&self, older_than: DateTime<Utc>) -> StoreResult<u64>;
    /// Claims for `owner`, until `claim` elapses, up to `limit` unsent events in id order that
    /// nobody else holds, keeping each resource's order: an event is claimed only when every
    /// earlier unsent event of its resource is claimed with it (or already held by `owner`).
    /// PostgreSQL skips rows another relay is claiming (`FOR UPDATE SKIP LOCKED`); SQLite
    /// serializes claims (`BEGIN IMMEDIATE`). Returns nothing, without a write transaction,
    /// when no event is claimable.
    async fn claim_events(
        &self,
        owner: &str,
        limit: u32,
        claim: std::time::Duration,
    ) -> StoreResult<Vec<OutboxEvent>>;
    /// Gives claimed events back unsent; `attempted` counts a failed delivery attempt.
    async fn release_events(&self, owner: &str, ids: &[i64], attempted: bool) -> StoreResult<()>;
    /// Unsent events and the creation time of the oldest one.
    async fn outbox_backlog(&self) -> StoreResult<(i64, Option<DateTime<Utc>>)>;
    /// What wakes a relay of this store when an event is committed: this process's commits,
    /// and on PostgreSQL every process's (`LISTEN` on a connection of the relay's own).
    fn outbox_wakeups(&self) -> OutboxWakeups;

    // ---- Cluster registry ---------------------------------------------------------------------
    /// A page of clusters in (project, name) order, with driver and node count.
    async fn registry_page(&self, page: &RegistryPage) -> StoreResult<Vec<RegistryEntry>>;
    /// The cluster of `project` whose registry name is `name`.
    async fn registry_get(&self, project: &str, name: &str) -> StoreResult<Option<RegistryEntry>>;
    async fn registry_entries(&self, uuids: &[ClusterId]) -> StoreResult<Vec<RegistryEntry>>;
    /// Changes of cluster rows after resourceVersion `after`, oldest first.
    async fn registry_changes(&self, after: i64, limit: u32) -> StoreResult<Vec<ClusterChange>>;
    /// How many clusters of `project` (of every project when None) sort after `after` in
    /// (project, name) order: exact up to `cap`, an estimate past it where the database keeps
    /// one.
    async fn registry_count_after(
        &self,
        project: Option<&str>,
        after: Option<(&str, &str)>,
        cap: u32,
    ) -> StoreResult<ItemCount>;
    /// The first change logged after resourceVersion `since` to a cluster of `project` (of any
    /// project when None) whose (project, name) sorts after `after`; None when there is none.
    async fn registry_first_change_after(
        &self,
        since: i64,
        project: Option<&str>,
        after: Option<(&str, &str)>,
    ) -> StoreResult<Option<i64>>;
    /// The projects that have clusters, in order, at most `limit` (the registry's namespaces).
    async fn registry_projects(&self, limit: u32) -> StoreResult<Vec<String>>;
    /// A page of machines (the Kubernetes face's `machines`) in (project, cluster, id) order,
    /// with their clusters' registry names and node groups' names, filtered by those names.
    async fn machine_page(&self, page: &MachinePage) -> StoreResult<Vec<MachineEntry>>;
    /// The machines of `project` that are one of `pairs` (cluster registry name, machine name)
    /// or have the uuid `uuid`.
    async fn machines_by_names(
        &self,
        project: &str,
        pairs: &[(String, String)],
        uuid: Option<&str>,
    ) -> StoreResult<Vec<MachineEntry>>;
    /// A page of node groups (the Kubernetes face's `machinedeployments`) in (project,
    /// cluster registry name, name) order, with their clusters' registry names and
    /// resourceVersions and their machines' tallies, filtered by those names.
    async fn nodegroup_page(&self, page: &NodeGroupPage) -> StoreResult<Vec<NodeGroupEntry>>;
    /// The node groups of `project` that are one of `pairs` (cluster registry name, node group
    /// name) or have the uuid `uuid`, with their machines' tallies.
    async fn nodegroups_by_names(
        &self,
        project: &str,
        pairs: &[(String, String)],
        uuid: Option<&str>,
    ) -> StoreResult<Vec<NodeGroupEntry>>;
    /// Every node group of `clusters`, with their machines' tallies (what a watch of
    /// `machinedeployments` reads again when those clusters or their machines changed).
    async fn nodegroups_of_clusters(
        &self,
        clusters: &[ClusterId],
    ) -> StoreResult<Vec<NodeGroupEntry>>;
    /// Changes of machine rows after resourceVersion `after`, oldest first.
    async fn machine_changes(&self, after: i64, limit: u32) -> StoreResult<Vec<MachineChange>>;
    /// Changes of cluster groups and bindings after resourceVersion `after`, oldest first.
    async fn cluster_group_changes(&self, after: i64, limit: u32) -> StoreResult<Vec<GroupChange>>;
    /// The latest resourceVersion (of clusters, machines, groups and bindings), and the highest one pruned from
    /// the change logs.
    async fn registry_bounds(&self) -> StoreResult<(i64, i64)>;
    /// Drops changes older than `keep_seconds` (never the latest); returns how many.
    async fn prune_registry_changes(&self, keep_seconds: u64) -> StoreResult<u64>;
    /// What wakes a registry watch when a cluster row changes (this process's commits; on
    /// PostgreSQL every process's).
    fn registry_wakeups(&self) -> OutboxWakeups;

    // ---- Operations ---------------------------------------------------------------------------
    /// Pending jobs: due and unleased, leased, when the oldest due one became due, and the
    /// blocked ones (refused transiently) by operation.
    async fn job_gauges(&self) -> StoreResult<JobGauges>;
    /// The connection pool's size, idle connections and limit.
    fn pool_status(&self) -> PoolStatus;

    // ---- Cluster groups (written with the `Write::*ClusterGroup*` writes) ----------------------
    /// The group of the caller's project (of any project with `all_projects`) by uuid or name.
    async fn get_cluster_group(&self, scope: &Scope, ident: &Ident) -> StoreResult<ClusterGroup>;
    /// Any project's group by uuid (a cluster owner's side of a membership).
    async fn find_cluster_group(&self, uuid: &ClusterGroupId) -> StoreResult<Option<ClusterGroup>>;
    /// A keyset page of the caller's project's groups (every project's with `all_projects`).
    async fn list_cluster_groups(
        &self,
        scope: &Scope,
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterGroup>>;
    /// A group's explicit memberships, proposed and accepted, in cluster uuid order.
    async fn cluster_group_members(
        &self,
        group: &ClusterGroupId,
    ) -> StoreResult<Vec<ClusterGroupMember>>;
    async fn cluster_group_member(
        &self,
        group: &ClusterGroupId,
        cluster: &ClusterId,
    ) -> StoreResult<Option<ClusterGroupMember>>;
    /// The explicit memberships of `groups`, each with its cluster's registry name, in
    /// (group, cluster) order. One statement.
    async fn cluster_group_members_named(
        &self,
        groups: &[ClusterGroupId],
    ) -> StoreResult<Vec<(ClusterGroupMember, String)>>;
    /// The bindings of the groups of the scope's project (every project's with
    /// `all_projects`), each with its group's name. One statement.
    async fn cluster_group_bindings_in(
        &self,
        scope: &Scope,
    ) -> StoreResult<Vec<(ClusterGroupBinding, String)>>;
    /// The memberships proposed for `project`'s clusters that wait for its consent.
    async fn cluster_group_proposals(&self, project: &str) -> StoreResult<Vec<ClusterGroupMember>>;
    /// The clusters a group's selector matches (of the group's own project), in uuid order.
    async fn cluster_group_matches(&self, group: &ClusterGroupId) -> StoreResult<Vec<ClusterId>>;
    async fn cluster_group_bindings(
        &self,
        group: &ClusterGroupId,
    ) -> StoreResult<Vec<ClusterGroupBinding>>;
    /// The bindings that name `project` as grantee.
    async fn cluster_group_bindings_to(
        &self,
        project: &str,
    ) -> StoreResult<Vec<ClusterGroupBinding>>;
    /// Every cluster the caller reaches through groups (accepted members and selector matches
    /// of groups bound to its project, by bindings that apply to its roles), with the greatest
    /// right those bindings grant, in uuid order. One statement of index reads.
    async fn clusters_through_groups(
        &self,
        caller: Grantee<'_>,
    ) -> StoreResult<Vec<(ClusterId, GroupRight)>>;
    /// The right the caller has over one cluster through groups, if any. One statement.
    async fn group_right_over_cluster(
        &self,
        caller: Grantee<'_>,
        cluster: &ClusterId,
    ) -> StoreResult<Option<GroupRight>>;
    /// A page of cluster summaries: the caller's project's clusters and those the groups
    /// `through` reach (accepted members and selector matches). One statement.
    async fn list_cluster_summaries_through(
        &self,
        scope: &Scope,
        through: &[ClusterGroupId],
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterSummary>>;
    /// [`Self::list_cluster_summaries_through`] with what the full representation needs.
    async fn list_clusters_with_groups_through(
        &self,
        scope: &Scope,
        through: &[ClusterGroupId],
        page: &PageRequest,
    ) -> StoreResult<Vec<ClusterWithGroups>>;
    /// The clusters named `name` that the groups `through` reach (as an accepted member or a
    /// selector match), in uuid order. One statement of probes of `ix_cluster_name_id`.
    async fn clusters_named_through(
        &self,
        name: &str,
        through: &[ClusterGroupId],
    ) -> StoreResult<Vec<ClusterId>>;
    /// Which of the groups `through` reach each of `clusters` (as an accepted member or a
    /// selector match), in (cluster, group) order. One statement.
    async fn cluster_group_links(
        &self,
        clusters: &[ClusterId],
        through: &[ClusterGroupId],
    ) -> StoreResult<Vec<(ClusterId, ClusterGroupId)>>;
}

/// Pending jobs as `/metrics` shows them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobGauges {
    /// Due (`run_after` passed) and not held by a live lease.
    pub due: i64,
    /// Held by a conductor's live lease.
    pub leased: i64,
    /// When the oldest due job became due.
    pub oldest_due: Option<DateTime<Utc>>,
    /// Jobs refused transiently and waiting to try again (or trying), for every operation
    /// (0 for one with none).
    pub blocked: Vec<(&'static str, i64)>,
}

/// The connection pool, as `/metrics` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStatus {
    /// Open connections, idle or in use.
    pub size: u32,
    pub idle: u32,
    pub max: u32,
    /// Single-row reads sent since start (PostgreSQL shares one among the callers of the
    /// same read at the same moment), and the callers they answered. SQLite's are not
    /// counted.
    pub shared_read_statements: u64,
    pub shared_read_callers: u64,
}

/// Told how long each caller waited for a database connection (either backend's pool).
pub type WaitObserver = Option<fn(std::time::Duration)>;

/// How a PostgreSQL pool connects and how long it waits (SQLite, local, ignores the timeouts).
#[derive(Debug, Clone, Copy)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// The most a caller waits for a connection: an idle one, or a new one (TCP connect and
    /// authentication included; a refused connection is tried again until then).
    pub pool_timeout: std::time::Duration,
    /// The most one statement (a commit included) may take, on the client's side and the
    /// server's; the server also ends a transaction left idle for half as long.
    pub statement_timeout: std::time::Duration,
    /// Told how long each caller waited for a connection (the `/metrics` histogram).
    pub on_wait: WaitObserver,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            max_connections: 16,
            pool_timeout: std::time::Duration::from_secs(2),
            statement_timeout: std::time::Duration::from_secs(5),
            on_wait: None,
        }
    }
}

/// Opens the store named by a connection URL, with the default timeouts.
pub async fn connect(url: &str, max_connections: u32) -> StoreResult<std::sync::Arc<dyn Store>> {
    let settings = PoolSettings {
        max_connections,
        ..PoolSettings::default()
    };
    connect_with(url, &settings).await
}

/// Opens the store named by a connection URL.
pub async fn connect_with(
    url: &str,
    settings: &PoolSettings,
) -> StoreResult<std::sync::Arc<dyn Store>> {
    let store: SqlStore = if url.starts_with("sqlite:") {
        SqliteStore::connect_observed(url, settings.on_wait)
            .await?
            .into()
    } else {
        PgStore::connect(url, settings).await?.into()
    };
    Ok(std::sync::Arc::new(store))
}

/// PostgreSQL's codes for a server that cannot serve now: a connection exception (class 08),
/// too many connections, a statement cancelled by `statement_timeout`, a transaction ended by
/// `idle_in_transaction_session_timeout`, a server shutting down or starting up.
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08") || ["53300", "57014", "25P03", "57P01", "57P02", "57P03"].contains(&code)
}

/// Maps a sqlx error to a store error; constraint names come from `constraint_name`.
pub(crate) fn map_sqlx(
    err: sqlx::Error,
    constraint_name: fn(&str) -> Option<String>,
) -> StoreError {
    match err {
        sqlx::Error::RowNotFound => StoreError::NotFound,
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(err),
        sqlx::Error::Database(ref db) if db.code().is_some_and(|c| unavailable_code(&c)) => {
            StoreError::Unavailable(err)
        }
        sqlx::Error::Database(ref db) => {
            let named = db
                .constraint()
                .map(String::from)
                .or_else(|| constraint_name(db.message()));
            match named {
                Some(constraint) => StoreError::Conflict { constraint },
                None => StoreError::Database(err),
            }
        }
        other => StoreError::Database(other),
    }
}
