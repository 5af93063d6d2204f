//! Cluster templates: the parsed, valid form and the rules Magnum applies to it.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::labels::Labels;
use super::TemplateId;

/// The network drivers a Kubernetes template may name.
pub const NETWORK_DRIVERS: &[&str] = &["flannel", "calico", "cilium"];
/// The only volume driver Magnum knows.
pub const VOLUME_DRIVERS: &[&str] = &["cinder"];
pub const COES: &[&str] = &["kubernetes"];
pub const SERVER_TYPES: &[&str] = &["vm", "bm"];

/// Every attribute a client may set on a template. Parsing a request (or a patched document)
/// into this type is the only way to obtain one, so it always satisfies the field constraints.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateSpec {
    pub name: String,
    pub coe: String,
    pub image_id: String,
    pub flavor_id: Option<String>,
    pub master_flavor_id: Option<String>,
    pub dns_nameserver: Option<String>,
    pub keypair_id: Option<String>,
    pub external_network_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub network_driver: Option<String>,
    pub volume_driver: Option<String>,
    pub apiserver_port: Option<i32>,
    pub docker_volume_size: Option<i32>,
    pub docker_storage_driver: Option<String>,
    pub cluster_distro: Option<String>,
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
    pub insecure_registry: Option<String>,
    pub registry_enabled: bool,
    pub tls_disabled: bool,
    pub public: bool,
    pub master_lb_enabled: bool,
    pub floating_ip_enabled: bool,
    pub hidden: bool,
    pub server_type: String,
    pub labels: Labels,
    pub tags: Option<String>,
    pub driver: Option<String>,
}

/// A stored template.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterTemplate {
    pub id: i64,
    pub uuid: TemplateId,
    pub project_id: String,
    pub user_id: String,
    pub spec: TemplateSpec,
    /// Optimistic-concurrency version, bumped by every update.
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// A template about to be inserted.
#[derive(Debug, Clone)]
pub struct NewClusterTemplate {
    pub uuid: TemplateId,
    pub project_id: String,
    pub user_id: String,
    pub spec: TemplateSpec,
}

/// Operator settings the rules depend on.
#[derive(Debug, Clone)]
pub struct TemplateRules {
    pub allowed_network_drivers: Vec<String>,
    pub default_network_driver: String,
}

impl TemplateRules {
    fn network_driver_allowed(&self, driver: &str) -> bool {
        NETWORK_DRIVERS.contains(&driver)
            && (self.allowed_network_drivers.iter().any(|d| d == "all")
                || self.allowed_network_drivers.iter().any(|d| d == driver))
    }
}

impl TemplateSpec {
    /// Magnum's cross-field rules: network and volume driver, devicemapper volume size.
    /// Returns the sentence for a 400.
    pub fn check_rules(&self, rules: &TemplateRules) -> Result<(), String> {
        if let Some(driver) = &self.network_driver {
            if !rules.network_driver_allowed(driver) {
                let allowed: Vec<&str> = NETWORK_DRIVERS
                    .iter()
                    .copied()
                    .filter(|d| rules.network_driver_allowed(d))
                    .collect();
                return Err(format!(
                    "Network driver type {driver} is not supported, expected: {}.",
                    allowed.join(", ")
                ));
            }
        }
        if let Some(driver) = &self.volume_driver {
            if !VOLUME_DRIVERS.contains(&driver.as_str()) {
                return Err(format!(
                    "Volume driver type {driver} is not supported, expected: {}.",
                    VOLUME_DRIVERS.join(", ")
                ));
            }
        }
        if !devicemapper_volume_ok(
            self.docker_storage_driver.as_deref(),
            self.docker_volume_size,
        ) {
            return Err(DEVICEMAPPER_VOLUME.into());
        }
        Ok(())
    }

    /// Fills defaults that depend on configuration (the network driver).
    pub fn apply_defaults(&mut self, rules: &TemplateRules) {
        if self.network_driver.is_none() {
            self.network_driver = Some(rules.default_network_driver.clone());
        }
    }

    /// The client-settable attributes as a JSON document, the form JSON-Patch applies to.
    pub fn to_document(&self) -> Map<String, Value> {
        let v = json!({
            "name": self.name,
            "coe": self.coe,
            "image_id": self.image_id,
            "flavor_id": self.flavor_id,
            "master_flavor_id": self.master_flavor_id,
            "dns_nameserver": self.dns_nameserver,
            "keypair_id": self.keypair_id,
            "external_network_id": self.external_network_id,
            "fixed_network": self.fixed_network,
            "fixed_subnet": self.fixed_subnet,
            "network_driver": self.network_driver,
            "volume_driver": self.volume_driver,
            "apiserver_port": self.apiserver_port,
            "docker_volume_size": self.docker_volume_size,
            "docker_storage_driver": self.docker_storage_driver,
            "cluster_distro": self.cluster_distro,
            "http_proxy": self.http_proxy,
            "https_proxy": self.https_proxy,
            "no_proxy": self.no_proxy,
            "insecure_registry": self.insecure_registry,
            "registry_enabled": self.registry_enabled,
            "tls_disabled": self.tls_disabled,
            "public": self.public,
            "master_lb_enabled": self.master_lb_enabled,
            "floating_ip_enabled": self.floating_ip_enabled,
            "hidden": self.hidden,
            "server_type": self.server_type,
            "labels": self.labels,
            "tags": self.tags,
            "driver": self.driver,
        });
        match v {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// Which top-level attributes differ between two specs.
    pub fn changed_fields(&self, other: &TemplateSpec) -> Vec<String> {
        let a = self.to_document();
        let b = other.to_document();
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// While clusters use a template, only these change sets are allowed: exactly the name; or
/// exactly one of `public` set to true, `hidden`, `tags`.
pub fn change_allowed_while_referenced(before: &TemplateSpec, after: &TemplateSpec) -> bool {
    let changed = before.changed_fields(after);
    match changed.as_slice() {
        [] => true,
        [one] => match one.as_str() {
            "name" | "hidden" | "tags" => true,
            "public" => after.public,
            _ => false,
        },
        _ => false,
    }
}

/// Validates Magnum's `dns_nameserver`: one IPv4 address or a comma-separated list of them.
pub fn valid_dns_list(value: &str) -> bool {
    value
        .split(',')
        .all(|part| part.trim().parse::<std::net::Ipv4Addr>().is_ok())
}

/// Why a devicemapper volume is refused (Magnum's sentence).
pub const DEVICEMAPPER_VOLUME: &str =
    "Docker volume size must be at least 3 GB when docker_storage_driver is devicemapper.";

/// Whether the Docker volume size suits the storage driver: devicemapper needs at least 3 GB.
pub fn devicemapper_volume_ok(storage_driver: Option<&str>, volume_size: Option<i32>) -> bool {
    storage_driver != Some("devicemapper") || volume_size.unwrap_or(0) >= 3
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn spec() -> TemplateSpec {
        TemplateSpec {
            name: "t".into(),
            coe: "kubernetes".into(),
            image_id: "fedora-coreos".into(),
            flavor_id: None,
            master_flavor_id: None,
            dns_nameserver: None,
            keypair_id: None,
            external_network_id: None,
            fixed_network: None,
            fixed_subnet: None,
            network_driver: None,
            volume_driver: None,
            apiserver_port: None,
            docker_volume_size: None,
            docker_storage_driver: None,
            cluster_distro: None,
            http_proxy: None,
            https_proxy: None,
            no_proxy: None,
            insecure_registry: None,
            registry_enabled: false,
            tls_disabled: false,
            public: false,
            master_lb_enabled: false,
            floating_ip_enabled: true,
            hidden: false,
            server_type: "vm".into(),
            labels: Labels::new(),
            tags: None,
            driver: None,
        }
    }

    fn rules() -> TemplateRules {
        TemplateRules {
            allowed_network_drivers: vec!["flannel".into(), "calico".into()],
            default_network_driver: "flannel".into(),
        }
    }

    #[test]
    fn a_network_driver_outside_the_allowed_list_is_refused() {
        let mut s = spec();
        s.network_driver = Some("cilium".into());
        let err = s.check_rules(&rules()).expect_err("cilium not allowed");
        assert_eq!(
            err,
            "Network driver type cilium is not supported, expected: flannel, calico."
        );
        let all = TemplateRules {
            allowed_network_drivers: vec!["all".into()],
            ..rules()
        };
        assert!(s.check_rules(&all).is_ok());
    }

    #[test]
    fn devicemapper_needs_three_gigabytes() {
        let mut s = spec();
        s.docker_storage_driver = Some("devicemapper".into());
        s.docker_volume_size = Some(2);
        assert!(s.check_rules(&rules()).is_err());
        s.docker_volume_size = Some(3);
        assert!(s.check_rules(&rules()).is_ok());
    }

    #[test]
    fn only_cinder_is_a_volume_driver() {
        let mut s = spec();
        s.volume_driver = Some("rexray".into());
        assert_eq!(
            s.check_rules(&rules()).expect_err("refused"),
            "Volume driver type rexray is not supported, expected: cinder."
        );
    }

    #[test]
    fn referenced_templates_allow_only_magnums_change_sets() {
        let before = spec();
        let mut renamed = before.clone();
        renamed.name = "u".into();
        assert!(change_allowed_while_referenced(&before, &renamed));
        let mut published = before.clone();
        published.public = true;
        assert!(change_allowed_while_referenced(&before, &published));
        let mut unpublished = published.clone();
        unpublished.public = false;
        assert!(!change_allowed_while_referenced(&published, &unpublished));
        let mut two = renamed.clone();
        two.tags = Some("x".into());
        assert!(!change_allowed_while_referenced(&before, &two));
        let mut image = before.clone();
        image.image_id = "other".into();
        assert!(!change_allowed_while_referenced(&before, &image));
    }

    #[test]
    fn dns_lists_are_ipv4_addresses() {
        assert!(valid_dns_list("8.8.8.8"));
        assert!(valid_dns_list("8.8.8.8,1.1.1.1"));
        assert!(!valid_dns_list("8.8.8"));
        assert!(!valid_dns_list("dns.example.com"));
    }
}
