//! Row types of every table and their conversion into domain types. Shared by both backends.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use super::{OutboxEvent, ServiceRecord, StoreError, StoreResult};
use crate::domain::cluster::{
    Cluster, ClusterOwner, ClusterSummary, ClusterWithGroups, GroupFacts, NodeGroup, Taint,
};
use crate::domain::federation::Federation;
use crate::domain::job::{Job, JobPayload, JobResource, Operation};
use crate::domain::keypair::StoredKeyPair;
use crate::domain::labels::Labels;
use crate::domain::managed_fields::ManagedFields;
use crate::domain::registry::{
    AuthPointers, Condition, OwnerReference, RegistryMeta, ServerEndpoint,
};
use crate::domain::status::{ClusterStatus, FederationStatus, HealthStatus};
use crate::domain::template::{ClusterTemplate, TemplateSpec};
/// A uuid column read into the id type it holds.
pub(crate) fn uuid_of<I: From<uuid::Uuid>>(table: &str, text: &str) -> StoreResult<I> {
    uuid::Uuid::try_parse(text)
        .map(I::from)
        .map_err(|_| StoreError::Corrupt(format!("{table}.uuid {text}")))
}

fn cluster_status(table: &str, text: &str) -> StoreResult<ClusterStatus> {
    ClusterStatus::parse(text).ok_or_else(|| StoreError::Corrupt(format!("{table}.status {text}")))
}

fn health_status(text: Option<String>) -> StoreResult<Option<HealthStatus>> {
    text.map(|h| {
        HealthStatus::parse(&h)
            .ok_or_else(|| StoreError::Corrupt(format!("cluster.health_status {h}")))
    })
    .transpose()
}

pub(crate) const CLUSTER_COLUMNS: &str = "id, uuid, project_id, user_id, name, \
    cluster_template_id, keypair, docker_volume_size, labels, master_flavor_id, flavor_id, \
    stack_id, api_address, status, status_reason, health_status, health_status_reason, \
    create_timeout, discovery_url, coe_version, container_version, fixed_network, fixed_subnet, \
    floating_ip_enabled, master_lb_enabled, version, created_at, updated_at, registry_labels, \
    registry_annotations, resource_version, generation, server_endpoints, ca_bundle, auth_info, \
    registry_finalizers, registry_owner_references, deletion_timestamp, \
    deletion_grace_period_seconds, registry_conditions, registry_generate_name, \
    registry_managed_fields, registry_name";

/// A cluster row; also what a change-log line's snapshot (`cluster_change.object`, keyed by
/// column name) decodes into.
#[derive(sqlx::FromRow, serde::Deserialize)]
pub(crate) struct ClusterRow {
    pub id: i64,
    pub uuid: String,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub cluster_template_id: String,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i32>,
    pub labels: Json<Labels>,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub stack_id: Option<String>,
    pub api_address: Option<String>,
    pub status: String,
    pub status_reason: Option<String>,
    pub health_status: Option<String>,
    pub health_status_reason: Json<BTreeMap<String, String>>,
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
    pub registry_labels: Json<BTreeMap<String, String>>,
    pub registry_annotations: Json<BTreeMap<String, String>>,
    pub resource_version: i64,
    pub generation: i64,
    pub server_endpoints: Json<Vec<ServerEndpoint>>,
    pub ca_bundle: Option<String>,
    pub auth_info: Json<AuthPointers>,
    pub registry_finalizers: Json<Vec<String>>,
    pub registry_owner_references: Json<Vec<OwnerReference>>,
    pub deletion_timestamp: Option<DateTime<Utc>>,
    pub deletion_grace_period_seconds: Option<i64>,
    pub registry_conditions: Json<Vec<Condition>>,
    pub registry_generate_name: Option<String>,
    pub registry_managed_fields: Json<ManagedFields>,
    pub registry_name: String,
}

impl ClusterRow {
    pub fn into_domain(self) -> StoreResult<Cluster> {
        Ok(Cluster {
            id: self.id,
            uuid: uuid_of("cluster", &self.uuid)?,
            project_id: self.project_id,
            user_id: self.user_id,
            name: self.name,
            cluster_template_id: uuid_of("cluster.cluster_template_id", &self.cluster_template_id)?,
            keypair: self.keypair,
            docker_volume_size: self.docker_volume_size,
            labels: self.labels.0,
            master_flavor_id: self.master_flavor_id,
            flavor_id: self.flavor_id,
            stack_id: self.stack_id,
            api_address: self.api_address,
            status: cluster_status("cluster", &self.status)?,
            status_reason: self.status_reason,
            health_status: health_status(self.health_status)?,
            health_status_reason: self.health_status_reason.0,
            create_timeout: self.create_timeout,
            discovery_url: self.discovery_url,
            coe_version: self.coe_version,
            container_version: self.container_version,
            fixed_network: self.fixed_network,
            fixed_subnet: self.fixed_subnet,
            floating_ip_enabled: self.floating_ip_enabled,
            master_lb_enabled: self.master_lb_enabled,
            version: self.version,
            created_at: self.created_at,
            updated_at: self.updated_at,
            registry: RegistryMeta {
                name: self.registry_name,
                labels: self.registry_labels.0,
                annotations: self.registry_annotations.0,
                resource_version: self.resource_version,
                generation: self.generation,
                server_endpoints: self.server_endpoints.0,
                ca_bundle: self.ca_bundle,
                auth_info: self.auth_info.0,
                finalizers: self.registry_finalizers.0,
                owner_references: self.registry_owner_references.0,
                deletion_timestamp: self.deletion_timestamp,
                deletion_grace_period_seconds: self.deletion_grace_period_seconds,
                conditions: self.registry_conditions.0,
                generate_name: self.registry_generate_name,
                managed_fields: self.registry_managed_fields.0,
            },
        })
    }
}

/// A cluster row with [`super::clusters`]' node-group facts and template labels.
#[derive(sqlx::FromRow)]
pub(crate) struct ClusterGroupsRow {
    #[sqlx(flatten)]
    pub cluster: ClusterRow,
    pub group_facts: Json<Vec<GroupFacts>>,
    pub template_labels: Option<Json<Labels>>,
}

impl ClusterGroupsRow {
    pub fn into_domain(self) -> StoreResult<ClusterWithGroups> {
        Ok(ClusterWithGroups {
            cluster: self.cluster.into_domain()?,
            groups: self.group_facts.0,
            template_labels: self.template_labels.map(|l| l.0),
        })
    }
}

/// The columns of a cluster's summary representation ([`ClusterSummaryRow`]): a summary page
/// reads these and not the whole row.
pub(crate) const CLUSTER_SUMMARY_COLUMNS: &str = "uuid, project_id, name, cluster_template_id, \
    keypair, docker_volume_size, labels, master_flavor_id, flavor_id, stack_id, status, \
    health_status, create_timeout";

/// A cluster's summary columns with [`super::clusters`]' worker and master node sums.
#[derive(sqlx::FromRow)]
pub(crate) struct ClusterSummaryRow {
    pub uuid: String,
    pub project_id: String,
    pub name: String,
    pub cluster_template_id: String,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i32>,
    pub labels: Json<Labels>,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub stack_id: Option<String>,
    pub status: String,
    pub health_status: Option<String>,
    pub create_timeout: Option<i32>,
    pub worker_nodes: i64,
    pub master_nodes: i64,
}

impl ClusterSummaryRow {
    pub fn into_domain(self) -> StoreResult<ClusterSummary> {
        let clamp = |n: i64| i32::try_from(n.max(0)).unwrap_or(i32::MAX);
        Ok(ClusterSummary {
            uuid: uuid_of("cluster", &self.uuid)?,
            project_id: self.project_id,
            name: self.name,
            cluster_template_id: uuid_of("cluster.cluster_template_id", &self.cluster_template_id)?,
            keypair: self.keypair,
            docker_volume_size: self.docker_volume_size,
            labels: self.labels.0,
            master_flavor_id: self.master_flavor_id,
            flavor_id: self.flavor_id,
            stack_id: self.stack_id,
            status: cluster_status("cluster", &self.status)?,
            health_status: health_status(self.health_status)?,
            create_timeout: self.create_timeout,
            node_count: clamp(self.worker_nodes),
            master_count: clamp(self.master_nodes),
        })
    }
}

pub(crate) const NODEGROUP_COLUMNS: &str = "id, uuid, name, cluster_id, project_id, \
    docker_volume_size, labels, flavor_id, image_id, node_addresses, node_count, role, \
    min_node_count, max_node_count, is_default, stack_id, status, status_reason, version, \
    node_labels, node_taints, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(crate) struct NodeGroupRow {
    pub id: i64,
    pub uuid: String,
    pub name: String,
    pub cluster_id: String,
    pub project_id: String,
    pub docker_volume_size: Option<i32>,
    pub labels: Json<Labels>,
    pub flavor_id: Option<String>,
    pub image_id: Option<String>,
    pub node_addresses: Json<Vec<String>>,
    pub node_count: i32,
    pub role: String,
    pub min_node_count: i32,
    pub max_node_count: Option<i32>,
    pub is_default: bool,
    pub stack_id: Option<String>,
    pub status: String,
    pub status_reason: Option<String>,
    pub version: Option<String>,
    pub node_labels: Json<Labels>,
    pub node_taints: Json<Vec<Taint>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// What [`super::nodegroups`]' read of a node group with its cluster selects of the cluster:
/// how many visible clusters matched (at most 2) and the first one's owner and labels.
#[derive(sqlx::FromRow)]
pub(crate) struct ClusterOwnerRow {
    pub cluster_matches: i64,
    pub cluster_uuid: String,
    pub cluster_project_id: String,
    pub cluster_user_id: String,
    pub cluster_labels: Json<Labels>,
}

impl ClusterOwnerRow {
    pub fn into_domain(self) -> StoreResult<ClusterOwner> {
        Ok(ClusterOwner {
            uuid: uuid_of("cluster", &self.cluster_uuid)?,
            project_id: self.cluster_project_id,
            user_id: self.cluster_user_id,
            labels: self.cluster_labels.0,
        })
    }
}

/// A [`ClusterOwnerRow`] left-joined with a [`NodeGroupRow`]: the node group's columns are
/// all NULL when none matched, which its `id` tells.
pub(crate) struct NodeGroupOfClusterRow {
    pub cluster: ClusterOwnerRow,
    pub nodegroup: Option<NodeGroupRow>,
}

impl<'r, R> sqlx::FromRow<'r, R> for NodeGroupOfClusterRow
where
    R: sqlx::Row,
    &'r str: sqlx::ColumnIndex<R>,
    Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    ClusterOwnerRow: sqlx::FromRow<'r, R>,
    NodeGroupRow: sqlx::FromRow<'r, R>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        let cluster = ClusterOwnerRow::from_row(row)?;
        let id: Option<i64> = row.try_get("id")?;
        let nodegroup = match id {
            Some(_) => Some(NodeGroupRow::from_row(row)?),
            None => None,
        };
        Ok(NodeGroupOfClusterRow { cluster, nodegroup })
    }
}

impl NodeGroupRow {
    pub fn into_domain(self) -> StoreResult<NodeGroup> {
        Ok(NodeGroup {
            id: self.id,
            uuid: uuid_of("nodegroup", &self.uuid)?,
            name: self.name,
            cluster_id: uuid_of("nodegroup.cluster_id", &self.cluster_id)?,
            project_id: self.project_id,
            docker_volume_size: self.docker_volume_size,
            labels: self.labels.0,
            flavor_id: self.flavor_id,
            image_id: self.image_id,
            node_addresses: self.node_addresses.0,
            node_count: self.node_count,
            role: self.role,
            min_node_count: self.min_node_count,
            max_node_count: self.max_node_count,
            is_default: self.is_default,
            stack_id: self.stack_id,
            status: cluster_status("nodegroup", &self.status)?,
            status_reason: self.status_reason,
            version: self.version,
            node_labels: self.node_labels.0,
            node_taints: self.node_taints.0,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

pub(crate) const FEDERATION_COLUMNS: &str = "id, uuid, project_id, user_id, name, \
    hostcluster_id, member_ids, status, status_reason, properties, version, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(crate) struct FederationRow {
    pub id: i64,
    pub uuid: String,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub hostcluster_id: String,
    pub member_ids: Json<Vec<crate::domain::ClusterId>>,
    pub status: String,
    pub status_reason: Option<String>,
    pub properties: Json<BTreeMap<String, String>>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl FederationRow {
    pub fn into_domain(self) -> StoreResult<Federation> {
        Ok(Federation {
            id: self.id,
            uuid: uuid_of("federation", &self.uuid)?,
            project_id: self.project_id,
            user_id: self.user_id,
            name: self.name,
            hostcluster_id: uuid_of("federation.hostcluster_id", &self.hostcluster_id)?,
            member_ids: self.member_ids.0,
            status: FederationStatus::parse(&self.status)
                .ok_or_else(|| StoreError::Corrupt(format!("federation.status {}", self.status)))?,
            status_reason: self.status_reason,
            properties: self.properties.0,
            version: self.version,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

pub(crate) const JOB_COLUMNS: &str = "id, uuid, operation, resource_uuid, driver, payload, \
    attempts, max_attempts, deadline_at, lease_owner, lease_expires_at, last_error, \
    blocked_since, created_at";

#[derive(sqlx::FromRow)]
pub(crate) struct JobRow {
    pub id: i64,
    pub uuid: String,
    pub operation: String,
    pub resource_uuid: String,
    pub driver: String,
    pub payload: Json<serde_json::Value>,
    pub attempts: i32,
    pub max_attempts: i32,
    pub deadline_at: Option<DateTime<Utc>>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub blocked_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl JobRow {
    pub fn into_domain(self) -> StoreResult<Job> {
        let operation = Operation::parse(&self.operation)
            .ok_or_else(|| StoreError::Corrupt(format!("job.operation {}", self.operation)))?;
        let resource: uuid::Uuid = uuid_of("job.resource_uuid", &self.resource_uuid)?;
        Ok(Job {
            id: self.id,
            uuid: uuid_of("job", &self.uuid)?,
            operation,
            resource: JobResource::of(operation, resource),
            driver: self.driver,
            payload: JobPayload::from_stored(operation, self.payload.0)
                .map_err(|e| StoreError::Corrupt(format!("job.payload {e}")))?,
            attempts: self.attempts,
            max_attempts: self.max_attempts,
            deadline_at: self.deadline_at,
            lease_owner: self.lease_owner,
            lease_expires_at: self.lease_expires_at,
            last_error: self.last_error,
            blocked_since: self.blocked_since,
            created_at: self.created_at,
        })
    }
}

#[derive(sqlx::FromRow, Debug, Clone, PartialEq)]
pub struct QuotaRow {
    pub id: i64,
    pub project_id: String,
    pub resource: String,
    pub hard_limit: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

pub(crate) const TEMPLATE_COLUMNS: &str = "id, uuid, project_id, user_id, name, coe, image_id, \
    flavor_id, master_flavor_id, keypair_id, external_network_id, fixed_network, fixed_subnet, \
    network_driver, volume_driver, dns_nameserver, docker_storage_driver, cluster_distro, \
    http_proxy, https_proxy, no_proxy, insecure_registry, server_type, tags, driver, \
    apiserver_port, docker_volume_size, labels, registry_enabled, tls_disabled, public, \
    master_lb_enabled, floating_ip_enabled, hidden, version, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(crate) struct TemplateRow {
    pub id: i64,
    pub uuid: String,
    pub project_id: String,
    pub user_id: String,
    pub name: String,
    pub coe: String,
    pub image_id: String,
    pub flavor_id: Option<String>,
    pub master_flavor_id: Option<String>,
    pub keypair_id: Option<String>,
    pub external_network_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub network_driver: Option<String>,
    pub volume_driver: Option<String>,
    pub dns_nameserver: Option<String>,
    pub docker_storage_driver: Option<String>,
    pub cluster_distro: Option<String>,
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
    pub insecure_registry: Option<String>,
    pub server_type: String,
    pub tags: Option<String>,
    pub driver: Option<String>,
    pub apiserver_port: Option<i32>,
    pub docker_volume_size: Option<i32>,
    pub labels: Json<Labels>,
    pub registry_enabled: bool,
    pub tls_disabled: bool,
    pub public: bool,
    pub master_lb_enabled: bool,
    pub floating_ip_enabled: bool,
    pub hidden: bool,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl TemplateRow {
    pub fn into_domain(self) -> StoreResult<ClusterTemplate> {
        let template = ClusterTemplate {
            id: self.id,
            uuid: uuid_of("cluster_template", &self.uuid)?,
            project_id: self.project_id,
            user_id: self.user_id,
            spec: TemplateSpec {
                name: self.name,
                coe: self.coe,
                image_id: self.image_id,
                flavor_id: self.flavor_id,
                master_flavor_id: self.master_flavor_id,
                dns_nameserver: self.dns_nameserver,
                keypair_id: self.keypair_id,
                external_network_id: self.external_network_id,
                fixed_network: self.fixed_network,
                fixed_subnet: self.fixed_subnet,
                network_driver: self.network_driver,
                volume_driver: self.volume_driver,
                apiserver_port: self.apiserver_port,
                docker_volume_size: self.docker_volume_size,
                docker_storage_driver: self.docker_storage_driver,
                cluster_distro: self.cluster_distro,
                http_proxy: self.http_proxy,
                https_proxy: self.https_proxy,
                no_proxy: self.no_proxy,
                insecure_registry: self.insecure_registry,
                registry_enabled: self.registry_enabled,
                tls_disabled: self.tls_disabled,
                public: self.public,
                master_lb_enabled: self.master_lb_enabled,
                floating_ip_enabled: self.floating_ip_enabled,
                hidden: self.hidden,
                server_type: self.server_type,
                labels: self.labels.0,
                tags: self.tags,
                driver: self.driver,
            },
            version: self.version,
            created_at: self.created_at,
            updated_at: self.updated_at,
        };
        Ok(template)
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct ServiceRow {
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

impl From<ServiceRow> for ServiceRecord {
    fn from(r: ServiceRow) -> Self {
        ServiceRecord {
            id: r.id,
            host: r.host,
            binary: r.binary,
            disabled: r.disabled,
            disabled_reason: r.disabled_reason,
            last_seen_up: r.last_seen_up,
            forced_down: r.forced_down,
            report_count: r.report_count,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct OutboxRow {
    pub id: i64,
    pub message_id: String,
    pub resource_uuid: String,
    pub event_type: String,
    pub priority: String,
    pub message: Json<Box<serde_json::value::RawValue>>,
    pub created_at: DateTime<Utc>,
    pub attempts: i32,
}

pub(crate) const OUTBOX_COLUMNS: &str =
    "id, message_id, resource_uuid, event_type, priority, message, created_at, attempts";

impl OutboxRow {
    pub fn into_event(self) -> StoreResult<OutboxEvent> {
        let message_id = uuid::Uuid::try_parse(&self.message_id)
            .map_err(|_| StoreError::Corrupt(format!("outbox.message_id {}", self.message_id)))?;
        Ok(OutboxEvent {
            id: self.id,
            message_id,
            resource_uuid: self.resource_uuid,
            event_type: self.event_type,
            priority: self.priority,
            message: self.message.0,
            created_at: self.created_at,
            attempts: self.attempts,
        })
    }
}

pub(crate) const KEYPAIR_COLUMNS: &str =
    "uuid, cluster_uuid, kind, certificate, private_key, project_id, user_id, created_at";

#[derive(sqlx::FromRow)]
pub(crate) struct KeypairRow {
    pub uuid: String,
    pub cluster_uuid: String,
    pub kind: String,
    pub certificate: String,
    pub private_key: String,
    pub project_id: String,
    pub user_id: String,
    pub created_at: DateTime<Utc>,
}

impl From<KeypairRow> for StoredKeyPair {
    fn from(r: KeypairRow) -> Self {
        StoredKeyPair {
            uuid: r.uuid,
            cluster_uuid: r.cluster_uuid,
            kind: r.kind,
            certificate: r.certificate,
            private_key: r.private_key,
            project_id: r.project_id,
            user_id: r.user_id,
            created_at: r.created_at,
        }
    }
}

/// A job with its `state` column (`pending`, `done`, `failed`).
#[derive(sqlx::FromRow)]
pub(crate) struct JobStateRow {
    #[sqlx(flatten)]
    pub job: JobRow,
    pub state: String,
}
