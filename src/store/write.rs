//! A write set: every state change is a list of [`Write`]s committed in one transaction.
//! Updates of clusters and federations are optimistic (they name the version they were computed
//! from); job completions name the lease owner. Either check failing aborts the whole set with
//! [`super::StoreError::Stale`], so a lost race changes nothing.

use chrono::{DateTime, Utc};

use super::NewEvent;
use crate::domain::cluster::{Cluster, NewCluster, NewNodeGroup, NodeGroup};
use crate::domain::federation::{Federation, NewFederation};
use crate::domain::job::NewJob;
use crate::domain::status::FederationStatus;

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
    DeleteCluster {
        uuid: String,
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
        cluster_uuid: String,
    },
    InsertNodeGroup {
        cluster_uuid: String,
        nodegroup: Box<NewNodeGroup>,
    },
    UpdateNodeGroup(Box<NodeGroup>),
    DeleteNodeGroup {
        id: i64,
    },
    InsertFederation {
        federation: Box<NewFederation>,
        status: FederationStatus,
    },
    /// Writes every mutable column; `federation.version` is the version it was read at.
    UpdateFederation(Box<Federation>),
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
    /// Releases a job the caller holds the lease of, to run again after `run_after`.
    RetryJob {
        id: i64,
        owner: String,
        run_after: DateTime<Utc>,
        error: String,
    },
    Event(Box<NewEvent>),
    /// Inserts a cluster's key pair (its private key already sealed).
    InsertKeypair(Box<crate::certificates::NewKeyPair>),
    /// Deletes a cluster's key pairs, of one kind or (`kind: None`) all.
    DeleteKeypairs {
        cluster_uuid: String,
        kind: Option<String>,
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
