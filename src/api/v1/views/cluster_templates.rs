//! Cluster template bodies: one representation for create, show, list, detail and update.

use serde::Serialize;
use utoipa::ToSchema;

use super::Link;
use crate::api::timestamp;
use crate::domain::labels::Labels;
use crate::domain::template::ClusterTemplate;

/// A cluster template (every attribute always present, `null` when unset).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterTemplateView {
    pub uuid: String,
    pub links: Vec<Link>,
    pub name: String,
    pub coe: String,
    pub image_id: String,
    #[schema(required = true)]
    pub flavor_id: Option<String>,
    #[schema(required = true)]
    pub master_flavor_id: Option<String>,
    #[schema(required = true)]
    pub dns_nameserver: Option<String>,
    #[schema(required = true)]
    pub keypair_id: Option<String>,
    #[schema(required = true)]
    pub external_network_id: Option<String>,
    #[schema(required = true)]
    pub fixed_network: Option<String>,
    #[schema(required = true)]
    pub fixed_subnet: Option<String>,
    #[schema(required = true)]
    pub network_driver: Option<String>,
    #[schema(required = true)]
    pub volume_driver: Option<String>,
    #[schema(required = true)]
    pub apiserver_port: Option<i32>,
    #[schema(required = true)]
    pub docker_volume_size: Option<i32>,
    #[schema(required = true)]
    pub docker_storage_driver: Option<String>,
    #[schema(required = true)]
    pub cluster_distro: Option<String>,
    #[schema(required = true)]
    pub http_proxy: Option<String>,
    #[schema(required = true)]
    pub https_proxy: Option<String>,
    #[schema(required = true)]
    pub no_proxy: Option<String>,
    #[schema(required = true)]
    pub insecure_registry: Option<String>,
    pub registry_enabled: bool,
    pub tls_disabled: bool,
    pub public: bool,
    pub master_lb_enabled: bool,
    pub floating_ip_enabled: bool,
    pub hidden: bool,
    pub server_type: String,
    pub labels: Labels,
    #[schema(required = true)]
    pub tags: Option<String>,
    #[schema(required = true)]
    pub driver: Option<String>,
    pub project_id: String,
    pub user_id: String,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
}

impl ClusterTemplateView {
    pub fn new(base: &str, t: &ClusterTemplate) -> Self {
        let uuid = t.uuid.to_string();
        let s = &t.spec;
        ClusterTemplateView {
            links: Link::pair(base, &format!("clustertemplates/{uuid}")),
            uuid,
            name: s.name.clone(),
            coe: s.coe.clone(),
            image_id: s.image_id.clone(),
            flavor_id: s.flavor_id.clone(),
            master_flavor_id: s.master_flavor_id.clone(),
            dns_nameserver: s.dns_nameserver.clone(),
            keypair_id: s.keypair_id.clone(),
            external_network_id: s.external_network_id.clone(),
            fixed_network: s.fixed_network.clone(),
            fixed_subnet: s.fixed_subnet.clone(),
            network_driver: s.network_driver.clone(),
            volume_driver: s.volume_driver.clone(),
            apiserver_port: s.apiserver_port,
            docker_volume_size: s.docker_volume_size,
            docker_storage_driver: s.docker_storage_driver.clone(),
            cluster_distro: s.cluster_distro.clone(),
            http_proxy: s.http_proxy.clone(),
            https_proxy: s.https_proxy.clone(),
            no_proxy: s.no_proxy.clone(),
            insecure_registry: s.insecure_registry.clone(),
            registry_enabled: s.registry_enabled,
            tls_disabled: s.tls_disabled,
            public: s.public,
            master_lb_enabled: s.master_lb_enabled,
            floating_ip_enabled: s.floating_ip_enabled,
            hidden: s.hidden,
            server_type: s.server_type.clone(),
            labels: s.labels.clone(),
            tags: s.tags.clone(),
            driver: s.driver.clone(),
            project_id: t.project_id.clone(),
            user_id: t.user_id.clone(),
            created_at: timestamp(t.created_at),
            updated_at: t.updated_at.map(timestamp),
        }
    }
}

/// `GET /v1/clustertemplates` and `/detail` (the same full representation).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterTemplateCollection {
    pub clustertemplates: Vec<ClusterTemplateView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
