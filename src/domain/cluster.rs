//! Clusters and their node groups: stored forms, label inheritance, node-count rules and the
//! status transitions Magnum allows.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::labels::Labels;
use super::names::ClusterName;
use super::registry::RegistryMeta;
use super::status::{ClusterStatus, HealthStatus, Verb};
use super::{ClusterId, NodeGroupId, TemplateId};

pub const ROLE_MASTER: &str = "master";
pub const ROLE_WORKER: &str = "worker";
pub const DEFAULT_MASTER_NAME: &str = "default-master";
pub const DEFAULT_WORKER_NAME: &str = "default-worker";

/// A stored cluster. Node counts and addresses live on its node groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    pub id: i64,
    pub uuid: ClusterId,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub cluster_template_id: TemplateId,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub stack_id: Option<String>,
    pub api_address: Option<String>,
    pub status: ClusterStatus,
    pub status_reason: Option<String>,
    pub health_status: Option<HealthStatus>,
    pub health_status_reason: BTreeMap<String, String>,
    pub create_timeout: Option<i32>,
    pub discovery_url: Option<String>,
    pub coe_version: Option<String>,
    pub container_version: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: bool,
    pub master_lb_enabled: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
    /// The cluster registry's part of the row.
    pub registry: RegistryMeta,
}

/// A cluster about to be inserted, with its two default node groups.
#[derive(Debug, Clone)]
pub struct NewCluster {
    pub uuid: ClusterId,
    pub project_id: String,
    pub user_id: String,
    pub name: ClusterName,
    pub cluster_template_id: TemplateId,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub create_timeout: i32,
    pub discovery_url: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: bool,
    pub master_lb_enabled: bool,
    pub nodegroups: Vec<NewNodeGroup>,
    /// `CREATE_IN_PROGRESS` for a cluster to provision; `CREATE_COMPLETE` for one registered.
    pub status: ClusterStatus,
    pub registry: RegistryMeta,
    /// A `/v1` create: when `registry.name` is taken in the project, the store gives the
    /// cluster the first free [`crate::domain::registry::name_candidate`] instead (a cluster
    /// whose name Magnum accepts is never refused for its registry name). A registry create
    /// (`false`) is refused when its name is taken.
    pub derive_registry_name: bool,
}

/// A cluster create request, parsed: what the client chose; the template fills the rest
/// ([`ClusterRequest::plan`]).
#[derive(Debug, Clone)]
pub struct ClusterRequest {
    pub name: ClusterName,
    pub keypair: Option<String>,
    pub node_count: i32,
    pub master_count: i32,
    pub docker_volume_size: Option<i32>,
    pub labels: Option<Labels>,
    pub merge_labels: bool,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: Option<bool>,
    pub master_lb_enabled: Option<bool>,
    pub create_timeout: i32,
    pub discovery_url: Option<String>,
}

/// Why a create request cannot become a cluster with its template (the API words each as
/// Magnum does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The template's storage driver is devicemapper and the volume is under 3 GB.
    DevicemapperVolume,
    /// The driver refused the number of masters (its own sentence).
    MasterCount(String),
    /// Several masters need a load balancer in front of them.
    MasterLbRequired,
    /// A node group's `max_node_count` label is above the service's limit.
    MaxNodeCountLabel { max: i32, limit: i32 },
}

/// Who a new cluster belongs to.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub project_id: &'a str,
    pub user_id: &'a str,
}

impl ClusterRequest {
    /// The cluster to insert: the request over the template's defaults, checked against the
    /// template, the driver's answer about the master count, and the node limit.
    pub fn plan(
        self,
        owner: Owner<'_>,
        template: &super::template::ClusterTemplate,
        masters_allowed: impl FnOnce(i32) -> Result<(), String>,
        node_limit: i32,
    ) -> Result<NewCluster, PlanError> {
        let spec = &template.spec;
        let docker_volume_size = self.docker_volume_size.or(spec.docker_volume_size);
        if !super::template::devicemapper_volume_ok(
            spec.docker_storage_driver.as_deref(),
            docker_volume_size,
        ) {
            return Err(PlanError::DevicemapperVolume);
        }
        masters_allowed(self.master_count).map_err(PlanError::MasterCount)?;
        let master_lb_enabled = self.master_lb_enabled.unwrap_or(spec.master_lb_enabled);
        if self.master_count > 1 && !master_lb_enabled {
            return Err(PlanError::MasterLbRequired);
        }
        let labels = effective_labels(self.labels, &spec.labels, self.merge_labels);
        let master_flavor_id = self
            .master_flavor_id
            .or_else(|| spec.master_flavor_id.clone());
        let flavor_id = self.flavor_id.or_else(|| spec.flavor_id.clone());
        let nodegroups = default_nodegroups(
            owner.project_id,
            &labels,
            &spec.image_id,
            master_flavor_id.clone(),
            flavor_id.clone(),
            docker_volume_size,
            self.master_count,
            self.node_count,
        );
        if let Some(max) = nodegroups
            .iter()
            .filter_map(|n| n.max_node_count)
            .find(|m| *m > node_limit)
        {
            return Err(PlanError::MaxNodeCountLabel {
                max,
                limit: node_limit,
            });
        }
        let uuid = ClusterId::new();
        Ok(NewCluster {
            registry: RegistryMeta {
                name: super::registry::registry_name(self.name.as_str(), &uuid.0),
                ..RegistryMeta::default()
            },
            derive_registry_name: true,
            uuid,
            project_id: owner.project_id.to_string(),
            user_id: owner.user_id.to_string(),
            name: self.name,
            cluster_template_id: template.uuid,
            keypair: self.keypair.or_else(|| spec.keypair_id.clone()),
            docker_volume_size,
            labels,
            master_flavor_id,
            flavor_id,
            create_timeout: self.create_timeout,
            discovery_url: self.discovery_url,
            fixed_network: self.fixed_network.or_else(|| spec.fixed_network.clone()),
            fixed_subnet: self.fixed_subnet.or_else(|| spec.fixed_subnet.clone()),
            floating_ip_enabled: self.floating_ip_enabled.unwrap_or(spec.floating_ip_enabled),
            master_lb_enabled,
            nodegroups,
            status: ClusterStatus::CreateInProgress,
        })
    }
}

/// A Kubernetes taint as node groups carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub effect: String,
}

pub const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    pub id: i64,
    pub uuid: NodeGroupId,
    pub name: String,
    pub cluster_id: ClusterId,
    pub project_id: String,
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    pub flavor_id: Option<String>,
    pub image_id: Option<String>,
    pub node_addresses: Vec<String>,
    pub node_count: i32,
    pub role: String,
    pub min_node_count: i32,
    pub max_node_count: Option<i32>,
    pub is_default: bool,
    pub stack_id: Option<String>,
    pub status: ClusterStatus,
    pub status_reason: Option<String>,
    pub version: Option<String>,
    pub node_labels: Labels,
    pub node_taints: Vec<Taint>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl NodeGroup {
    pub fn is_master(&self) -> bool {
        self.role == ROLE_MASTER
    }

    /// Work on the node group was accepted: `*_IN_PROGRESS`, the last failure's reason gone.
    pub fn begin(&mut self, verb: Verb) {
        self.status = verb.in_progress();
        self.status_reason = None;
    }
}

impl Cluster {
    /// Work on the cluster was accepted: `*_IN_PROGRESS`, the last failure's reason gone.
    pub fn begin(&mut self, verb: Verb) {
        self.status = verb.in_progress();
        self.status_reason = None;
    }

    /// Its deletion was asked for at `now`: `DELETE_IN_PROGRESS` and marked as being deleted
    /// (the registry's `deletionTimestamp`). `true` when the teardown may start; `false` while
    /// registry finalizers hold it back, with a reason naming them.
    pub fn begin_delete(&mut self, now: DateTime<Utc>) -> bool {
        self.begin(Verb::Delete);
        self.registry.mark_deleting(now);
        if self.registry.deletion_waits() {
            self.status_reason = Some(self.registry.waiting_reason());
            return false;
        }
        true
    }
}

impl NewCluster {
    /// The row a create inserts, built before the commit so that the notification committed
    /// with it carries what the row will hold.
    pub fn provisional(&self, now: DateTime<Utc>) -> Cluster {
        let n = self;
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
}

impl NewNodeGroup {
    /// The row an insert into `cluster` makes, built before the commit (see
    /// [`NewCluster::provisional`]).
    pub fn provisional(&self, cluster: ClusterId, now: DateTime<Utc>) -> NodeGroup {
        let n = self;
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
}

/// What a cluster's representation reads from one of its node groups: read in the same
/// statement as the cluster, so a `GET` of a cluster is one statement.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GroupFacts {
    pub name: String,
    pub role: String,
    pub node_count: i32,
    #[serde(default)]
    pub node_addresses: Vec<String>,
    pub status: String,
    pub status_reason: Option<String>,
}

impl GroupFacts {
    pub fn is_master(&self) -> bool {
        self.role == ROLE_MASTER
    }

    /// Whether the group is in a `*_FAILED` status.
    pub fn is_failed(&self) -> bool {
        ClusterStatus::parse(&self.status).is_some_and(|s| s.is_failed())
    }
}

impl From<&NodeGroup> for GroupFacts {
    fn from(ng: &NodeGroup) -> Self {
        GroupFacts {
            name: ng.name.clone(),
            role: ng.role.clone(),
            node_count: ng.node_count,
            node_addresses: ng.node_addresses.clone(),
            status: ng.status.as_str().to_string(),
            status_reason: ng.status_reason.clone(),
        }
    }
}

/// A cluster with what its full representation needs from other tables: its node groups'
/// facts (in id order) and its template's labels (`None` when the template is gone).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterWithGroups {
    pub cluster: Cluster,
    pub groups: Vec<GroupFacts>,
    pub template_labels: Option<Labels>,
}

/// What a node group's representation and policy check need of the cluster it belongs to:
/// the owner (the policy target) and the labels the group's view compares its own with.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterOwner {
    pub uuid: ClusterId,
    pub project_id: String,
    pub user_id: String,
    pub labels: Labels,
}

/// A node group read in the same statement as its cluster (named by uuid or name).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupOfCluster {
    pub cluster: ClusterOwner,
    pub nodegroup: NodeGroup,
}

/// What the summary representation shows of a cluster (`GET /v1/clusters`): its summary
/// columns only, with its worker and master node counts summed over its node groups,
/// saturating at `i32::MAX`. A page of summaries reads these columns and no others.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSummary {
    pub uuid: ClusterId,
    pub project_id: String,
    pub name: String,
    pub cluster_template_id: TemplateId,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub stack_id: Option<String>,
    pub status: ClusterStatus,
    pub health_status: Option<HealthStatus>,
    pub create_timeout: Option<i32>,
    pub node_count: i32,
    pub master_count: i32,
}

impl ClusterSummary {
    /// The summary of a whole cluster row with its counts (what the full representation
    /// starts from).
    pub fn of(c: &Cluster, node_count: i32, master_count: i32) -> Self {
        ClusterSummary {
            uuid: c.uuid,
            project_id: c.project_id.clone(),
            name: c.name.clone(),
            cluster_template_id: c.cluster_template_id,
            keypair: c.keypair.clone(),
            docker_volume_size: c.docker_volume_size,
            labels: c.labels.clone(),
            master_flavor_id: c.master_flavor_id.clone(),
            flavor_id: c.flavor_id.clone(),
            stack_id: c.stack_id.clone(),
            status: c.status,
            health_status: c.health_status,
            create_timeout: c.create_timeout,
            node_count,
            master_count,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewNodeGroup {
    pub uuid: NodeGroupId,
    pub name: String,
    pub project_id: String,
    pub docker_volume_size: Option<i32>,
    pub labels: Labels,
    pub flavor_id: Option<String>,
    pub image_id: Option<String>,
    pub node_count: i32,
    pub role: String,
    pub min_node_count: i32,
    pub max_node_count: Option<i32>,
    pub is_default: bool,
    pub status: ClusterStatus,
    pub node_labels: Labels,
    pub node_taints: Vec<Taint>,
}

/// The node groups Magnum gives every cluster: `default-master` and `default-worker`.
#[allow(clippy::too_many_arguments)]
pub fn default_nodegroups(
    project_id: &str,
    labels: &Labels,
    image_id: &str,
    master_flavor: Option<String>,
    flavor: Option<String>,
    docker_volume_size: Option<i32>,
    master_count: i32,
    node_count: i32,
) -> Vec<NewNodeGroup> {
    let min_workers = labels
        .get("min_node_count")
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|n| *n >= 0)
        .unwrap_or(0)
        .min(node_count);
    let max_workers = labels
        .get("max_node_count")
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|n| *n >= node_count);
    let group =
        |name: &str, role: &str, flavor: Option<String>, count: i32, min: i32, max: Option<i32>| {
            NewNodeGroup {
                uuid: NodeGroupId::new(),
                name: name.into(),
                project_id: project_id.into(),
                docker_volume_size,
                labels: labels.clone(),
                flavor_id: flavor,
                image_id: Some(image_id.into()),
                node_count: count,
                role: role.into(),
                min_node_count: min,
                max_node_count: max,
                is_default: true,
                status: ClusterStatus::CreateInProgress,
                node_labels: Labels::new(),
                node_taints: Vec::new(),
            }
        };
    vec![
        group(
            DEFAULT_MASTER_NAME,
            ROLE_MASTER,
            master_flavor,
            master_count,
            1,
            None,
        ),
        group(
            DEFAULT_WORKER_NAME,
            ROLE_WORKER,
            flavor,
            node_count,
            min_workers,
            max_workers,
        ),
    ]
}

/// The cluster's labels from the request and the template, as Magnum combines them: absent or
/// empty means the template's; `merge_labels` overlays the given ones on the template's.
pub fn effective_labels(given: Option<Labels>, template: &Labels, merge: bool) -> Labels {
    match given {
        None => template.clone(),
        Some(g) if g.is_empty() => template.clone(),
        Some(g) if merge => {
            let mut out = template.clone();
            out.extend(g);
            out
        }
        Some(g) => g,
    }
}

/// `labels_overridden` (template value), `labels_added` (own value), `labels_skipped` (parent
/// value), relative to the parent's labels.
pub fn label_diff(own: &Labels, parent: &Labels) -> (Labels, Labels, Labels) {
    let overridden = own
        .iter()
        .filter_map(|(k, v)| {
            parent
                .get(k)
                .filter(|pv| *pv != v)
                .map(|pv| (k.clone(), pv.clone()))
        })
        .collect();
    let added = own
        .iter()
        .filter(|(k, _)| !parent.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let skipped = parent
        .iter()
        .filter(|(k, _)| !own.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (overridden, added, skipped)
}

/// Checks a node group's count bounds; the sentence names the group as Magnum does.
pub fn check_counts(name: &str, node_count: i32, min: i32, max: Option<i32>) -> Result<(), String> {
    if let Some(max) = max {
        if max < min {
            return Err(format!(
                "max_node_count for {name} is invalid (min_node_count ({min}) should be less or equal to max_node_count ({max}))."
            ));
        }
        if node_count > max {
            return Err(format!(
                "node_count for {name} is invalid (node_count ({node_count}) should be less or equal to max_node_count ({max}))."
            ));
        }
    }
    if node_count < min {
        return Err(format!(
            "min_node_count for {name} is invalid (min_node_count ({min}) should be less or equal to node_count ({node_count}))."
        ));
    }
    Ok(())
}

/// Kubernetes reserves the `kubernetes.io` and `k8s.io` label namespaces; these keys and
/// prefixes are still allowed on nodes.
pub fn node_label_allowed(key: &str) -> bool {
    const ALLOWED_KEYS: &[&str] = &[
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "kubernetes.io/arch",
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "node.kubernetes.io/windows-build",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    ];
    let Some((prefix, _)) = key.split_once('/') else {
        return true;
    };
    let reserved = |p: &str| {
        p == "kubernetes.io"
            || p == "k8s.io"
            || p.ends_with(".kubernetes.io")
            || p.ends_with(".k8s.io")
    };
    if !reserved(prefix) {
        return true;
    }
    prefix == "kubelet.kubernetes.io"
        || prefix == "node.kubernetes.io"
        || ALLOWED_KEYS.contains(&key)
}

/// A new node group's labels, as Magnum derives them from its cluster's: absent means a copy of
/// the cluster's; `merge_labels` overlays the given ones on the cluster's.
pub fn nodegroup_labels(given: Option<Labels>, cluster: &Labels, merge: bool) -> Labels {
    match given {
        None => cluster.clone(),
        Some(g) if merge => {
            let mut out = cluster.clone();
            out.extend(g);
            out
        }
        Some(g) => g,
    }
}

/// Node group states in which a node group may be changed (Magnum's nodegroup conductor
/// refuses the others).
pub fn nodegroup_change_allowed(status: ClusterStatus) -> bool {
    status.is_complete_like()
        || matches!(
            status,
            ClusterStatus::UpdateInProgress | ClusterStatus::UpdateFailed
        )
}

/// Cluster states in which node group work is accepted: COMPLETE-like, or `UPDATE_FAILED` so
/// that a failed group can be fixed or removed. A delete is also accepted while the cluster is
/// `UPDATE_IN_PROGRESS`, as Magnum accepts it: the job waits behind the cluster's earlier jobs
/// (one cluster's jobs run in order), so `openstack coe nodegroup delete C NG1 NG2` deletes both.
pub fn cluster_accepts_nodegroup_work(status: ClusterStatus, delete: bool) -> bool {
    status.is_complete_like()
        || status == ClusterStatus::UpdateFailed
        || (delete && status == ClusterStatus::UpdateInProgress)
}

/// Why a node label key is refused, if it is: empty, or in a reserved Kubernetes namespace.
pub fn invalid_node_label(key: &str) -> Option<String> {
    if key.is_empty() {
        return Some("label key '' is invalid".into());
    }
    if !node_label_allowed(key) {
        return Some(format!(
            "label key '{key}' is in a reserved Kubernetes namespace"
        ));
    }
    None
}

/// Parses node taints: each one an object with a non-empty `key`, an `effect` among
/// [`TAINT_EFFECTS`] and an optional string `value`, and nothing else; a key and effect pair
/// may appear once. `Err` explains the first malformed taint.
pub fn parse_taints(items: &[serde_json::Value]) -> Result<Vec<Taint>, String> {
    use serde_json::Value;
    let mut out: Vec<Taint> = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(m) = item else {
            return Err("each taint must be an object with key, value and effect".into());
        };
        if let Some(extra) = m
            .keys()
            .find(|k| !["key", "value", "effect"].contains(&k.as_str()))
        {
            return Err(format!(
                "taint attribute '{extra}' is unknown; a taint has key, value and effect"
            ));
        }
        let key = match m.get("key") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err("each taint needs a non-empty key".into()),
        };
        let value = match m.get("value") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(format!("the value of taint '{key}' must be a string")),
        };
        let effect = match m.get("effect") {
            Some(Value::String(s)) if TAINT_EFFECTS.contains(&s.as_str()) => s.clone(),
            _ => {
                return Err(format!(
                    "the effect of taint '{key}' must be one of {}",
                    TAINT_EFFECTS.join(", ")
                ))
            }
        };
        if out.iter().any(|t| t.key == key && t.effect == effect) {
            return Err(format!(
                "taint '{key}' with effect {effect} is given more than once"
            ));
        }
        out.push(Taint { key, value, effect });
    }
    Ok(out)
}

/// The cluster status that follows from a set of node group statuses, with priority
/// IN_PROGRESS > FAILED > COMPLETE (the model Magnum's Heat driver used).
pub fn aggregate_status(statuses: &[ClusterStatus]) -> Option<ClusterStatus> {
    statuses
        .iter()
        .find(|s| s.is_in_progress())
        .or_else(|| statuses.iter().find(|s| s.is_failed()))
        .or_else(|| statuses.first())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_group_deletes_queue_behind_an_update_while_other_work_waits() {
        use ClusterStatus::*;
        for status in [CreateComplete, UpdateComplete, UpdateFailed] {
            assert!(cluster_accepts_nodegroup_work(status, false), "{status}");
            assert!(cluster_accepts_nodegroup_work(status, true), "{status}");
        }
        assert!(!cluster_accepts_nodegroup_work(UpdateInProgress, false));
        assert!(cluster_accepts_nodegroup_work(UpdateInProgress, true));
        for status in [
            CreateInProgress,
            CreateFailed,
            DeleteInProgress,
            DeleteFailed,
        ] {
            assert!(!cluster_accepts_nodegroup_work(status, false), "{status}");
            assert!(!cluster_accepts_nodegroup_work(status, true), "{status}");
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn labels_come_from_the_template_unless_given_and_merge_overlays() {
        let t = labels(&[("a", "1"), ("b", "2")]);
        assert_eq!(effective_labels(None, &t, false), t);
        assert_eq!(effective_labels(Some(Labels::new()), &t, false), t);
        assert_eq!(
            effective_labels(Some(labels(&[("b", "9")])), &t, false),
            labels(&[("b", "9")])
        );
        assert_eq!(
            effective_labels(Some(labels(&[("b", "9"), ("c", "3")])), &t, true),
            labels(&[("a", "1"), ("b", "9"), ("c", "3")])
        );
    }

    #[test]
    fn label_diff_shows_the_parents_value_when_overridden() {
        let own = labels(&[("a", "1"), ("b", "9"), ("c", "3")]);
        let parent = labels(&[("a", "1"), ("b", "2"), ("d", "4")]);
        let (o, a, s) = label_diff(&own, &parent);
        assert_eq!(o, labels(&[("b", "2")]));
        assert_eq!(a, labels(&[("c", "3")]));
        assert_eq!(s, labels(&[("d", "4")]));
    }

    #[test]
    fn cluster_names_follow_magnums_pattern() {
        assert!(ClusterName::parse("k8s-prod_1.a").is_ok());
        assert!(ClusterName::parse("1k8s").is_err());
        assert!(ClusterName::parse("k8s prod").is_err());
        assert!(ClusterName::parse("").is_err());
        assert!(ClusterName::parse(&"a".repeat(243)).is_err());
    }

    #[test]
    fn count_bounds_are_checked_with_magnums_sentences() {
        assert!(check_counts("ng", 3, 1, Some(5)).is_ok());
        assert_eq!(
            check_counts("ng1", 2, 3, Some(2)).expect_err("max < min"),
            "max_node_count for ng1 is invalid (min_node_count (3) should be less or equal to max_node_count (2))."
        );
        assert!(check_counts("ng", 6, 1, Some(5)).is_err());
        assert!(check_counts("ng", 0, 1, None).is_err());
    }

    #[test]
    fn reserved_kubernetes_label_namespaces_are_refused_except_the_allowed_ones() {
        assert!(node_label_allowed("tier"));
        assert!(node_label_allowed("example.com/tier"));
        assert!(node_label_allowed("kubernetes.io/os"));
        assert!(node_label_allowed("node.kubernetes.io/pool"));
        assert!(!node_label_allowed("kubernetes.io/role"));
        assert!(!node_label_allowed("node-role.kubernetes.io/master"));
        assert!(!node_label_allowed("k8s.io/x"));
    }

    #[test]
    fn default_nodegroups_follow_the_cluster() {
        let ngs = default_nodegroups(
            "p",
            &labels(&[("min_node_count", "1")]),
            "img",
            Some("m1.large".into()),
            Some("m1.small".into()),
            Some(10),
            3,
            2,
        );
        assert_eq!(ngs.len(), 2);
        assert_eq!(
            (
                ngs[0].name.as_str(),
                ngs[0].role.as_str(),
                ngs[0].node_count
            ),
            ("default-master", "master", 3)
        );
        assert_eq!(
            (
                ngs[1].name.as_str(),
                ngs[1].role.as_str(),
                ngs[1].node_count
            ),
            ("default-worker", "worker", 2)
        );
        assert_eq!(ngs[1].min_node_count, 1);
        assert!(ngs
            .iter()
            .all(|n| n.is_default && n.status == ClusterStatus::CreateInProgress));
    }

    #[test]
    fn nodegroup_labels_copy_the_clusters_unless_given_and_merge_overlays() {
        let c = labels(&[("a", "1"), ("b", "2")]);
        assert_eq!(nodegroup_labels(None, &c, false), c);
        assert_eq!(
            nodegroup_labels(Some(Labels::new()), &c, false),
            Labels::new()
        );
        assert_eq!(
            nodegroup_labels(Some(labels(&[("b", "9")])), &c, true),
            labels(&[("a", "1"), ("b", "9")])
        );
        assert_eq!(
            nodegroup_labels(Some(labels(&[("b", "9")])), &c, false),
            labels(&[("b", "9")])
        );
    }

    #[test]
    fn node_groups_change_only_in_magnums_allowed_states() {
        use ClusterStatus::*;
        for s in [
            CreateComplete,
            UpdateComplete,
            UpdateInProgress,
            UpdateFailed,
            CheckComplete,
        ] {
            assert!(nodegroup_change_allowed(s), "{s}");
        }
        for s in [
            CreateInProgress,
            CreateFailed,
            DeleteInProgress,
            DeleteFailed,
        ] {
            assert!(!nodegroup_change_allowed(s), "{s}");
        }
    }

    #[test]
    fn taints_need_a_key_and_a_known_effect() {
        use serde_json::json;
        let ok = parse_taints(&[
            json!({"key": "k", "value": "v", "effect": "NoSchedule"}),
            json!({"key": "k", "effect": "NoExecute"}),
        ])
        .expect("valid");
        assert_eq!(ok[0].value.as_deref(), Some("v"));
        assert_eq!(ok[1].value, None);
        assert_eq!(
            parse_taints(&[json!({"key": "", "effect": "NoSchedule"})]).expect_err("empty key"),
            "each taint needs a non-empty key"
        );
        assert_eq!(
            parse_taints(&[json!({"key": "k", "effect": "Sometimes"})]).expect_err("effect"),
            "the effect of taint 'k' must be one of NoSchedule, PreferNoSchedule, NoExecute"
        );
        assert!(parse_taints(&[json!({"key": "k"})]).is_err());
        assert!(parse_taints(&[json!("k=v:NoSchedule")]).is_err());
        assert!(parse_taints(&[json!({"key": "k", "effect": "NoSchedule", "x": 1})]).is_err());
        assert!(parse_taints(&[
            json!({"key": "k", "effect": "NoSchedule"}),
            json!({"key": "k", "value": "2", "effect": "NoSchedule"})
        ])
        .is_err());
    }

    #[test]
    fn node_label_keys_are_non_empty_and_outside_reserved_namespaces() {
        assert_eq!(invalid_node_label("tier"), None);
        assert!(invalid_node_label("").is_some());
        assert_eq!(
            invalid_node_label("kubernetes.io/role"),
            Some("label key 'kubernetes.io/role' is in a reserved Kubernetes namespace".into())
        );
    }

    #[test]
    fn aggregate_status_prefers_in_progress_then_failed() {
        use ClusterStatus::*;
        assert_eq!(
            aggregate_status(&[UpdateComplete, UpdateInProgress, UpdateFailed]),
            Some(UpdateInProgress)
        );
        assert_eq!(
            aggregate_status(&[UpdateComplete, UpdateFailed]),
            Some(UpdateFailed)
        );
        assert_eq!(aggregate_status(&[CreateComplete]), Some(CreateComplete));
        assert_eq!(aggregate_status(&[]), None);
    }
}
