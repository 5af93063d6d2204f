//! A write set: every state change is a list of [`Write`]s committed in one transaction.
//! Updates of clusters, federations and templates are optimistic (they name the version they
//! were computed from); job completions name the lease owner. Either check failing aborts the
//! whole set with [`super::StoreError::Stale`], so a lost race changes nothing.
//!
//! [`commit`] opens the write transaction and hands each write to the function of its table.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::db::{Pool, Tx};
use super::rows::TemplateRow;
use super::{
    cluster_groups, clusters, federations, jobs, keypairs, machine_writes, nodegroups, outbox,
    quotas, registry, sql, templates, NewEvent, StoreResult,
};
use crate::domain::cluster::{Cluster, NewCluster, NewNodeGroup, NodeGroup};
use crate::domain::cluster_group::{
    ClusterGroup, NewClusterGroup, NewClusterGroupBinding, NewClusterGroupMember,
};
use crate::domain::federation::{Federation, NewFederation};
use crate::domain::job::{JobResource, NewJob};
use crate::domain::keypair::NewKeyPair;
use crate::domain::machine::{Machine, MachinePhase, MachineStatus};
use crate::domain::managed_fields::ManagedFields;
use crate::domain::status::FederationStatus;
use crate::domain::template::{ClusterTemplate, NewClusterTemplate, TemplateSpec};
use crate::domain::{ClusterGroupBindingId, ClusterGroupId, ClusterId, MachineId, NodeGroupId};

#[derive(Debug, Clone)]
pub enum Write {
    /// Refuses the set with [`super::StoreError::LimitExceeded`] when the project already has
    /// as many clusters as its quota (its `quotas` row, else `default_limit`).
    CheckClusterQuota {
        project_id: String,
        default_limit: i64,
    },
    /// Inserts the cluster with status `CREATE_IN_PROGRESS` and its node groups.
    InsertCluster(Box<NewCluster>),
    /// Writes every mutable column; `cluster.version` is the version it was read at.
    UpdateCluster(Box<Cluster>),
    /// Deletes the cluster with its node groups and keys; [`super::StoreError::Stale`] when
    /// it is gone already, so two conductors that both saw a delete end write its event once.
    DeleteCluster {
        uuid: ClusterId,
    },
    /// Refuses the set with [`super::StoreError::Stale`] unless the cluster is still at
    /// `version`, holding a shared lock on its row until commit: a change that depends on the
    /// cluster as read (a federation join) and the cluster's delete cannot both commit, while
    /// concurrent joins of the same cluster do not conflict with each other.
    GuardCluster {
        id: i64,
        version: i64,
    },
    /// Refuses the set with [`super::StoreError::Stale`] unless the cluster template is still
    /// at `version`, holding a shared lock on its row until commit: a cluster created from the
    /// template as read and a change of the template that a referenced template may not take
    /// cannot both commit.
    GuardTemplate {
        id: i64,
        version: i64,
    },
    /// Refuses the set with [`super::StoreError::Conflict`] `federation_membership` when the
    /// cluster hosts or belongs to a federation (checked inside the transaction, after the
    /// cluster's row is locked by its update).
    RefuseIfFederated {
        cluster_uuid: ClusterId,
    },
    /// Inserts the node group with `node_count` machines.
    InsertNodeGroup {
        cluster_uuid: ClusterId,
        nodegroup: Box<NewNodeGroup>,
    },
    /// Writes every mutable column, and brings the group's machines to its node count.
    UpdateNodeGroup(Box<NodeGroup>),
    /// The Kubernetes face's own columns of node group `id` (its object's managed fields, and
    /// the batch of its rolls when `max_surge` is given), and the cluster row touched so the
    /// object's resourceVersion moves, only while the cluster is still at `resource_version`
    /// (else [`super::StoreError::Stale`]). Put first: the set's other writes move it.
    UpdateNodeGroupObject {
        id: i64,
        cluster_uuid: ClusterId,
        resource_version: i64,
        managed_fields: ManagedFields,
        max_surge: Option<i32>,
    },
    /// Deletes the node group with its machines.
    DeleteNodeGroup {
        id: i64,
    },
    /// Marks machines of the node group as being deleted (a user named them); put it before
    /// the node group's update that lowers its node count, so that these go and no others.
    RemoveMachines {
        nodegroup: NodeGroupId,
        machines: Vec<MachineId>,
    },
    /// Inserts a machine a user created in its node group; put it before the node group's
    /// update that raises its node count by one, so that the count finds it and makes no
    /// other. [`super::StoreError::Conflict`] `uniq_machine0cluster_id0name` when its name is
    /// taken in the cluster.
    InsertMachine(Box<crate::domain::machine::create::NewMachine>),
    /// The node group's machines being deleted run again: a failed change of its node count
    /// is undone (put it before the node group's update that restores the count).
    ReviveMachines {
        nodegroup: NodeGroupId,
    },
    /// The cluster's operation ended: its machines being deleted go, its new ones run, or
    /// have failed with it.
    SettleMachines {
        cluster: ClusterId,
        failed: bool,
    },
    /// Writes the status the driver reported of each machine (never its phase).
    ObserveMachines(Vec<(MachineId, MachineStatus)>),
    /// Writes one machine's spec and whole status (its phase too) if its phase is still one
    /// of `from`, else [`super::StoreError::Stale`]: two changes of one machine, or a change
    /// and its delete, cannot both commit.
    UpdateMachine {
        machine: Box<Machine>,
        from: Vec<MachinePhase>,
    },
    /// [`Write::UpdateMachine`] from the Kubernetes face: the machine's `managed_fields` and
    /// kept annotations too, and only while it is still at `resource_version` (else
    /// [`super::StoreError::Stale`]).
    UpdateMachineObject {
        machine: Box<Machine>,
        from: Vec<MachinePhase>,
        resource_version: i64,
        managed_fields: ManagedFields,
        annotations: BTreeMap<String, String>,
    },
    InsertFederation {
        federation: Box<NewFederation>,
        status: FederationStatus,
    },
    /// Writes every mutable column; `federation.version` is the version it was read at.
    UpdateFederation(Box<Federation>),
    /// Deletes the federation; [`super::StoreError::Stale`] when it is gone already.
    DeleteFederation {
        id: i64,
    },
    InsertJob(Box<NewJob>),
    /// Ends a job the caller holds the lease of.
    FinishJob {
        id: i64,
        owner: String,
        failed: bool,
        error: Option<String>,
    },
    /// Ends every pending job of the resource as failed with `error` (a forced delete takes
    /// over from them); a conductor working one of them finds its lease gone.
    SupersedeJobs {
        resource: JobResource,
        error: String,
    },
    /// Ends, as [`Write::SupersedeJobs`] does, the pending jobs of the cluster that work on
    /// one of its node groups (a forced node group delete takes over from them).
    SupersedeNodeGroupJobs {
        cluster: JobResource,
        nodegroup: crate::domain::NodeGroupId,
        error: String,
    },
    /// Releases a job the caller holds the lease of, to run again after `run_after`;
    /// `blocked_since` (the first refusal) is kept once set.
    RetryJob {
        id: i64,
        owner: String,
        run_after: DateTime<Utc>,
        error: String,
        blocked_since: DateTime<Utc>,
    },
    /// Releases a job the caller holds the lease of, to run again after `run_after`, as work
    /// still under way rather than a refusal: its last error and `blocked_since` are cleared.
    RequeueJob {
        id: i64,
        owner: String,
        run_after: DateTime<Utc>,
    },
    Event(Box<NewEvent>),
    /// Inserts a cluster's key pair (its private key already sealed).
    InsertKeypair(Box<NewKeyPair>),
    /// Deletes a cluster's key pairs, of one kind or (`kind: None`) all.
    DeleteKeypairs {
        cluster_uuid: ClusterId,
        kind: Option<String>,
    },
    InsertTemplate(Box<NewClusterTemplate>),
    /// Writes `spec` if the template is still at `expected_version`, else
    /// [`super::StoreError::Stale`]. With `refuse_if_referenced`, refuses the set with
    /// [`super::StoreError::Conflict`] `cluster_template_referenced` when a cluster uses the
    /// template (checked after the update locked the row).
    UpdateTemplate {
        id: i64,
        expected_version: i64,
        spec: Box<TemplateSpec>,
        refuse_if_referenced: bool,
    },
    /// Deletes the template: [`super::StoreError::NotFound`] when there is none,
    /// [`super::StoreError::Conflict`] `fk_cluster_cluster_template` while a cluster uses it.
    DeleteTemplate {
        id: i64,
    },
    /// Inserts the cluster group and writes its selector's matches;
    /// [`super::StoreError::Conflict`] `uniq_cluster_group0project_id0name` for a name taken
    /// in the project.
    InsertClusterGroup(Box<NewClusterGroup>),
    /// Writes the group's selector and description if it is still at `group.version` (else
    /// [`super::StoreError::Stale`]) and rewrites its matches.
    UpdateClusterGroup(Box<ClusterGroup>),
    /// Deletes the group with its members, matches and bindings;
    /// [`super::StoreError::NotFound`] when it is gone.
    DeleteClusterGroup {
        uuid: ClusterGroupId,
    },
    /// Inserts an explicit membership in the state the domain decided
    /// ([`NewClusterGroupMember::add`]); [`super::StoreError::NotFound`] unless the cluster
    /// exists and is of `cluster_project_id`, [`super::StoreError::Conflict`]
    /// `uniq_cluster_group_member0group_id0cluster_id` when the cluster has one already.
    InsertClusterGroupMember(Box<NewClusterGroupMember>),
    /// The cluster's project consents: a proposed membership becomes accepted;
    /// [`super::StoreError::NotFound`] when there is none.
    AcceptClusterGroupMember {
        group: ClusterGroupId,
        cluster: ClusterId,
    },
    /// Removes an explicit membership; [`super::StoreError::NotFound`] when there is none.
    DeleteClusterGroupMember {
        group: ClusterGroupId,
        cluster: ClusterId,
    },
    /// [`super::StoreError::Conflict`]
    /// `uniq_cluster_group_binding0group_id0grantee_project_id` when the group is bound to
    /// the project already.
    InsertClusterGroupBinding(Box<NewClusterGroupBinding>),
    /// Deletes a binding; [`super::StoreError::NotFound`] when it is gone.
    DeleteClusterGroupBinding {
        uuid: ClusterGroupBindingId,
    },
}

impl Write {
    pub fn event(e: NewEvent) -> Write {
        Write::Event(Box::new(e))
    }
    pub fn job(j: NewJob) -> Write {
        Write::InsertJob(Box::new(j))
    }
    pub fn update_cluster(c: &Cluster) -> Write {
        Write::UpdateCluster(Box::new(c.clone()))
    }
    pub fn update_nodegroup(n: &NodeGroup) -> Write {
        Write::UpdateNodeGroup(Box::new(n.clone()))
    }
    pub fn update_federation(f: &Federation) -> Write {
        Write::UpdateFederation(Box::new(f.clone()))
    }
}

/// Whether the set writes an outbox event (its commit wakes the relays).
pub(super) fn has_event(writes: &[Write]) -> bool {
    writes.iter().any(|w| matches!(w, Write::Event(_)))
}

/// Commits every write in one transaction, or none of them. Returns the template the set
/// inserted or updated last, if it wrote one.
#[tracing::instrument(skip_all, fields(writes = writes.len()))]
pub(super) async fn commit(pool: &Pool, writes: &[Write]) -> StoreResult<Option<ClusterTemplate>> {
    let mut tx = pool.begin_write().await?;
    if touches_clusters(writes) || writes_selectors(writes) {
        registry::serialize_cluster_writes(&mut tx).await?;
    }
    let now = sql::now();
    let mut template = None;
    for w in writes {
        if let Some(row) = apply(&mut tx, w, now).await? {
            template = Some(row);
        }
        rematch_written_cluster(&mut tx, w).await?;
    }
    tx.commit().await?;
    template.map(TemplateRow::into_domain).transpose()
}

/// Whether the set inserts, updates or deletes a cluster row or a machine row (and so moves
/// the registry's resourceVersion counter): a cluster write; a group, membership or binding
/// write, which touches the clusters whose readers it changes; or a node group's or machine's
/// write, which moves machines.
pub(super) fn touches_clusters(writes: &[Write]) -> bool {
    writes.iter().any(|w| {
        matches!(
            w,
            Write::InsertCluster(_)
                | Write::UpdateCluster(_)
                | Write::DeleteCluster { .. }
                | Write::UpdateClusterGroup(_)
                | Write::DeleteClusterGroup { .. }
                | Write::InsertClusterGroupMember(_)
                | Write::AcceptClusterGroupMember { .. }
                | Write::DeleteClusterGroupMember { .. }
                | Write::InsertClusterGroupBinding(_)
                | Write::DeleteClusterGroupBinding { .. }
                | Write::InsertNodeGroup { .. }
                | Write::UpdateNodeGroup(_)
                | Write::UpdateNodeGroupObject { .. }
                | Write::DeleteNodeGroup { .. }
                | Write::RemoveMachines { .. }
                | Write::InsertMachine(_)
                | Write::ReviveMachines { .. }
                | Write::SettleMachines { .. }
                | Write::ObserveMachines(_)
                | Write::UpdateMachine { .. }
                | Write::UpdateMachineObject { .. }
        )
    })
}

/// Brings the selector matches of a cluster the write inserted or updated (its labels may have
/// changed) up to date, in the same transaction; nothing for any other write.
async fn rematch_written_cluster(tx: &mut Tx, w: &Write) -> StoreResult<()> {
    match w {
        Write::InsertCluster(c) => {
            cluster_groups::rematch_cluster(tx, &c.uuid, &c.project_id, &c.registry.labels).await
        }
        Write::UpdateCluster(c) => {
            cluster_groups::rematch_cluster(tx, &c.uuid, &c.project_id, &c.registry.labels).await
        }
        _ => Ok(()),
    }
}

/// Whether the set writes a group's selector (and so reads every cluster of its project to
/// match them): it takes the cluster writes' lock too, so that a cluster relabelled at the
/// same time is matched by one of the two transactions, never missed by both.
fn writes_selectors(writes: &[Write]) -> bool {
    writes.iter().any(|w| {
        matches!(
            w,
            Write::InsertClusterGroup(_) | Write::UpdateClusterGroup(_)
        )
    })
}

/// One write inside the set's transaction.
async fn apply(tx: &mut Tx, w: &Write, now: DateTime<Utc>) -> StoreResult<Option<TemplateRow>> {
    match w {
        Write::CheckClusterQuota {
            project_id,
            default_limit,
        } => quotas::check_clusters(tx, project_id, *default_limit).await?,
        Write::InsertCluster(c) => clusters::insert(tx, c, now).await?,
        Write::UpdateCluster(c) => clusters::update(tx, c, now).await?,
        Write::DeleteCluster { uuid } => clusters::delete(tx, uuid).await?,
        Write::GuardCluster { id, version } => clusters::guard(tx, *id, *version).await?,
        Write::GuardTemplate { id, version } => templates::guard(tx, *id, *version).await?,
        Write::RefuseIfFederated { cluster_uuid } => {
            federations::refuse_if_federated(tx, cluster_uuid).await?
        }
        Write::InsertNodeGroup {
            cluster_uuid,
            nodegroup,
        } => nodegroups::insert(tx, cluster_uuid, nodegroup, now).await?,
        Write::UpdateNodeGroup(n) => nodegroups::update(tx, n, now).await?,
        Write::UpdateNodeGroupObject {
            id,
            cluster_uuid,
            resource_version,
            managed_fields,
            max_surge,
        } => {
            nodegroups::update_object(
                tx,
                (*id, cluster_uuid, *resource_version),
                managed_fields,
                *max_surge,
                now,
            )
            .await?
        }
        Write::DeleteNodeGroup { id } => nodegroups::delete(tx, *id).await?,
        Write::RemoveMachines {
            nodegroup,
            machines,
        } => machine_writes::mark_deleting(tx, nodegroup, machines, now).await?,
        Write::InsertMachine(m) => machine_writes::insert_one(tx, m, now).await?,
        Write::ReviveMachines { nodegroup } => machine_writes::revive(tx, nodegroup, now).await?,
        Write::SettleMachines { cluster, failed } => {
            machine_writes::settle(tx, cluster, *failed, now).await?
        }
        Write::ObserveMachines(observed) => machine_writes::observe(tx, observed, now).await?,
        Write::UpdateMachine { machine, from } => {
            machine_writes::update(tx, machine, from, now).await?
        }
        Write::UpdateMachineObject {
            machine,
            from,
            resource_version,
            managed_fields,
            annotations,
        } => {
            machine_writes::update_object(
                tx,
                machine,
                from,
                *resource_version,
                (managed_fields, annotations),
                now,
            )
            .await?
        }
        Write::InsertFederation { federation, status } => {
            federations::insert(tx, federation, *status, now).await?
        }
        Write::UpdateFederation(f) => federations::update(tx, f, now).await?,
        Write::DeleteFederation { id } => federations::delete(tx, *id).await?,
        Write::InsertJob(j) => jobs::insert(tx, j, now).await?,
        Write::FinishJob {
            id,
            owner,
            failed,
            error,
        } => jobs::finish(tx, *id, owner, *failed, error.as_deref(), now).await?,
        Write::RetryJob {
            id,
            owner,
            run_after,
            error,
            blocked_since,
        } => jobs::retry(tx, *id, owner, (*run_after, *blocked_since), error, now).await?,
        Write::RequeueJob {
            id,
            owner,
            run_after,
        } => jobs::requeue(tx, *id, owner, *run_after, now).await?,
        Write::SupersedeJobs { resource, error } => {
            jobs::supersede(tx, resource, error, now).await?
        }
        Write::SupersedeNodeGroupJobs {
            cluster,
            nodegroup,
            error,
        } => jobs::supersede_nodegroup(tx, cluster, *nodegroup, error, now).await?,
        Write::Event(e) => outbox::insert(tx, e).await?,
        Write::InsertKeypair(k) => keypairs::insert(tx, k, now).await?,
        Write::DeleteKeypairs { cluster_uuid, kind } => {
            keypairs::delete(tx, cluster_uuid, kind.as_deref()).await?
        }
        Write::InsertTemplate(t) => return templates::insert(tx, t, now).await.map(Some),
        Write::UpdateTemplate {
            id,
            expected_version,
            spec,
            refuse_if_referenced,
        } => {
            return templates::update(tx, *id, *expected_version, spec, *refuse_if_referenced, now)
                .await
                .map(Some)
        }
        Write::DeleteTemplate { id } => templates::delete(tx, *id).await?,
        Write::InsertClusterGroup(g) => cluster_groups::insert_group(tx, g, now).await?,
        Write::UpdateClusterGroup(g) => cluster_groups::update_group(tx, g, now).await?,
        Write::DeleteClusterGroup { uuid } => cluster_groups::delete_group(tx, uuid).await?,
        Write::InsertClusterGroupMember(m) => cluster_groups::insert_member(tx, m, now).await?,
        Write::AcceptClusterGroupMember { group, cluster } => {
            cluster_groups::accept_member(tx, group, cluster, now).await?
        }
        Write::DeleteClusterGroupMember { group, cluster } => {
            cluster_groups::delete_member(tx, group, cluster).await?
        }
        Write::InsertClusterGroupBinding(b) => cluster_groups::insert_binding(tx, b, now).await?,
        Write::DeleteClusterGroupBinding { uuid } => {
            cluster_groups::delete_binding(tx, uuid).await?
        }
    }
    Ok(None)
}
