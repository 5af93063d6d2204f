//! Rows as they will be stored, built before the commit so that the notification committed with
//! them carries what the row will hold.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::domain::cluster::{Cluster, NewCluster, NewNodeGroup, NodeGroup};
use crate::domain::ClusterId;

/// The cluster row a create inserts.
pub fn cluster(n: &NewCluster, now: DateTime<Utc>) -> Cluster {
    Cluster {
        id: 0,
        uuid: n.uuid,
        project_id: n.project_id.clone(),
        user_id: n.user_id.clone(),
        name: n.name.to_string(),
        cluster_template_id: n.cluster_template_id,
        keypair: n.keypair.clone(),
        docker_volume_size: n.docker_volume_size,
        labels: n.labels.clone(),
        master_flavor_id: n.master_flavor_id.clone(),
        flavor_id: n.flavor_id.clone(),
        stack_id: None,
        api_address: n.registry.api_address(),
        status: n.status,
        status_reason: None,
        health_status: None,
        health_status_reason: BTreeMap::new(),
        create_timeout: Some(n.create_timeout),
        discovery_url: n.discovery_url.clone(),
        coe_version: None,
        container_version: None,
        fixed_network: n.fixed_network.clone(),
        fixed_subnet: n.fixed_subnet.clone(),
        floating_ip_enabled: n.floating_ip_enabled,
        master_lb_enabled: n.master_lb_enabled,
        version: 0,
        created_at: now,
        updated_at: None,
        registry: n.registry.clone(),
    }
}

/// The node group row an insert makes.
pub fn nodegroup(n: &NewNodeGroup, cluster: ClusterId, now: DateTime<Utc>) -> NodeGroup {
    NodeGroup {
        id: 0,
        uuid: n.uuid,
        name: n.name.to_string(),
        cluster_id: cluster,
        project_id: n.project_id.clone(),
        docker_volume_size: n.docker_volume_size,
        labels: n.labels.clone(),
        flavor_id: n.flavor_id.clone(),
        image_id: n.image_id.clone(),
        node_addresses: vec![],
        node_count: n.node_count,
        role: n.role.clone(),
        min_node_count: n.min_node_count,
        max_node_count: n.max_node_count,
        is_default: n.is_default,
        stack_id: None,
        status: n.status,
        status_reason: None,
        version: None,
        node_labels: n.node_labels.clone(),
        node_taints: n.node_taints.clone(),
        created_at: now,
        updated_at: None,
    }
}
