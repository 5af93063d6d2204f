//! Rows as they will be stored, for the registry handlers: the rule is
//! [`NewCluster::provisional`] in `domain/cluster.rs`.

use chrono::{DateTime, Utc};

use crate::domain::cluster::{Cluster, NewCluster};

/// The cluster row a create inserts ([`NewCluster::provisional`]).
pub fn cluster(n: &NewCluster, now: DateTime<Utc>) -> Cluster {
    n.provisional(now)
}
