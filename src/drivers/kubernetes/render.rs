//! Cluster API objects for one Fleetyard cluster, as pure functions of the cluster, its node
//! groups and its template: a `Cluster`, the infrastructure cluster, a `KubeadmControlPlane`
//! for the master node group and, per worker node group, a `KubeadmConfigTemplate`, a machine
//! template and a `MachineDeployment`.
//!
//! Names are derived from the cluster's uuid, so a retried job renders (and server-side
//! applies) exactly the same objects. Machine and bootstrap templates are immutable in
//! Cluster API's practice, so their names end with a hash of their spec: a new image or
//! version gives a new template and the referencing object rolls its machines.
//!
//! KEP-3's ProviderConfig (provider-specific machine settings next to the portable ones) maps
//! to template fields and labels; the labels read here are listed in [`LABELS_READ`].

use serde_json::{json, Map, Value};

use crate::config::KubernetesDriverSection;
use crate::domain::cluster::NodeGroup;
use crate::domain::template::ClusterTemplate;
use crate::domain::ClusterId;

use crate::drivers::{CaMaterial, ClusterContext};

use super::capi::CapiVersion;

// The shape objects are built in; `[kubernetes_driver] cluster_api_version` converts them.
pub const CAPI_API_VERSION: &str = "cluster.x-k8s.io/v1beta1";
pub const CONTROL_PLANE_API_VERSION: &str = "controlplane.cluster.x-k8s.io/v1beta1";
pub const BOOTSTRAP_API_VERSION: &str = "bootstrap.cluster.x-k8s.io/v1beta1";

/// Labels tying every object to Fleetyard and to its cluster / node group / federation.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "fleetyard";
pub const LABEL_CLUSTER_UUID: &str = "fleetyard/cluster-uuid";
pub const LABEL_NODEGROUP_UUID: &str = "fleetyard/nodegroup-uuid";
pub const LABEL_FEDERATION_UUID: &str = "fleetyard/federation-uuid";
/// The template's network driver, for a ClusterResourceSet the operator installs to add the CNI.
pub const LABEL_NETWORK_DRIVER: &str = "fleetyard/network-driver";
pub const ANNOTATION_CLUSTER_NAME: &str = "fleetyard/cluster-name";
pub const CAPI_CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const CAPI_DEPLOYMENT_NAME_LABEL: &str = "cluster.x-k8s.io/deployment-name";
pub const CAPI_CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
pub const AUTOSCALER_MIN: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
pub const AUTOSCALER_MAX: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
pub const DELETE_MACHINE: &str = "cluster.x-k8s.io/delete-machine";

/// Labels (cluster labels, falling back to the template's; node-group labels for per-group
/// settings) that shape the rendered objects.
pub const LABELS_READ: &[(&str, &str)] = &[
    (
        "kube_tag",
        "Kubernetes version of the control plane and machines",
    ),
    (
        "calico_ipv4pool",
        "pod network CIDR (also read as pods_network_cidr)",
    ),
    ("service_cluster_ip_range", "service CIDR"),
    ("dns_cluster_domain", "cluster DNS domain"),
    (
        "fixed_subnet_cidr",
        "CIDR of the subnet CAPO creates when the template names no fixed_network",
    ),
    (
        "availability_zone",
        "failure domain of a node group's machines",
    ),
    (
        "boot_volume_size",
        "root volume size in GiB (boot from volume)",
    ),
    ("boot_volume_type", "root volume type"),
];

const DEFAULT_PODS_CIDR: &str = "10.100.0.0/16";
const DEFAULT_SERVICES_CIDR: &str = "10.254.0.0/16";
const DEFAULT_DNS_DOMAIN: &str = "cluster.local";
const DEFAULT_SUBNET_CIDR: &str = "10.0.0.0/24";

/// The Cluster API name of a Fleetyard cluster (also its `stack_id`): `fy-` and the first 16
/// hex digits of its uuid, short enough for every derived name to stay a DNS label.
pub fn cluster_name(uuid: &ClusterId) -> String {
    let hex = uuid.0.simple().to_string();
    format!("fy-{}", &hex[..16])
}

pub fn control_plane_name(cluster: &str) -> String {
    format!("{cluster}-control-plane")
}

/// The MachineDeployment of a worker node group: readable, unique and at most 47 characters.
pub fn deployment_name(cluster: &str, ng: &NodeGroup) -> String {
    let mut part = dns_label(&ng.name);
    part.truncate(20);
    let part = part.trim_end_matches('-');
    let id = ng.uuid.0.simple().to_string();
    if part.is_empty() {
        format!("{cluster}-{}", &id[..6])
    } else {
        format!("{cluster}-{part}-{}", &id[..6])
    }
}

/// The Secret in which Cluster API keeps a cluster's admin kubeconfig (key `value`).
pub fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// Lower-case letters, digits and single hyphens, starting with a letter or digit.
pub fn dns_label(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// A string made acceptable as a label value (63 characters of `[A-Za-z0-9_.-]`, alphanumeric
/// at both ends).
pub fn label_value(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    cleaned
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// What an upgrade changes for the node groups it targets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Overrides {
    /// Kubernetes version (from the new template's `kube_tag`).
    pub version: Option<String>,
    /// Image (from the new template's `image_id`).
    pub image: Option<String>,
    /// `max_batch_size`: machines replaced at once during the roll-out.
    pub max_surge: Option<i32>,
}

/// Everything the renderer needs, borrowed.
pub struct Renderer<'a> {
    pub settings: &'a KubernetesDriverSection,
    pub ctx: &'a ClusterContext,
    /// The template the objects are rendered from: the cluster's, or the new one of an upgrade.
    pub template: &'a ClusterTemplate,
}

/// A rendered object, with its kind and name for messages and tests.
pub type Object = Value;

impl<'a> Renderer<'a> {
    pub fn new(settings: &'a KubernetesDriverSection, ctx: &'a ClusterContext) -> Renderer<'a> {
        Renderer {
            settings,
            ctx,
            template: &ctx.template,
        }
    }

    pub fn name(&self) -> String {
        cluster_name(&self.ctx.cluster.uuid)
    }

    /// The Cluster API version the objects are written in.
    pub fn capi(&self) -> CapiVersion {
        CapiVersion::parse(&self.settings.cluster_api_version).unwrap_or_default()
    }

    fn converted(&self, objects: Vec<Object>) -> Vec<Object> {
        let capi = self.capi();
        objects.into_iter().map(|o| capi.convert(o)).collect()
    }

    fn label(&self, key: &str) -> Option<&'a str> {
        self.ctx
            .cluster
            .labels
            .get(key)
            .or_else(|| self.template.spec.labels.get(key))
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    fn group_label(&self, ng: &'a NodeGroup, key: &str) -> Option<&'a str> {
        ng.labels
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
            .or_else(|| self.label(key))
    }

    /// The Kubernetes version the cluster asks for: `kube_tag` of the cluster, else of the
    /// template, else the configured default; always with its leading `v`.
    pub fn version(&self) -> String {
        normalize_version(
            self.label("kube_tag")
                .unwrap_or(&self.settings.default_kube_tag),
        )
    }

    fn openstack(&self) -> bool {
        self.settings.infrastructure_cluster_kind == "OpenStackCluster"
            && self.settings.infrastructure_machine_template_kind == "OpenStackMachineTemplate"
    }

    fn metadata(&self, name: &str, ng: Option<&NodeGroup>) -> Map<String, Value> {
        let mut labels = Map::new();
        labels.insert(LABEL_MANAGED_BY.into(), json!(MANAGED_BY));
        labels.insert(CAPI_CLUSTER_NAME_LABEL.into(), json!(self.name()));
        labels.insert(
            LABEL_CLUSTER_UUID.into(),
            json!(self.ctx.cluster.uuid.to_string()),
        );
        if let Some(ng) = ng {
            labels.insert(LABEL_NODEGROUP_UUID.into(), json!(ng.uuid.to_string()));
        }
        let mut meta = Map::new();
        meta.insert("name".into(), json!(name));
        meta.insert("namespace".into(), json!(self.settings.namespace));
        meta.insert("labels".into(), Value::Object(labels));
        meta
    }

    fn infra_ref(&self, kind: &str, name: &str) -> Value {
        json!({"apiVersion": self.settings.infrastructure_api_version, "kind": kind, "name": name})
    }

    /// Every object of a cluster, referenced objects before the ones referring to them, the
    /// `Cluster` last.
    pub fn all(&self) -> Result<Vec<Object>, String> {
        let mut out = vec![self.infrastructure_cluster()];
        let master = self.master_group()?;
        out.extend(self.control_plane(master, &Overrides::default())?);
        for ng in self.ctx.nodegroups.iter().filter(|ng| !ng.is_master()) {
            out.extend(self.worker(ng, &Overrides::default(), None)?);
        }
        out.push(self.cluster());
        Ok(self.converted(out))
    }

    pub fn master_group(&self) -> Result<&'a NodeGroup, String> {
        self.ctx
            .nodegroups
            .iter()
            .find(|ng| ng.is_master())
            .ok_or_else(|| {
                format!(
                    "The cluster {} has no master node group.",
                    self.ctx.cluster.name
                )
            })
    }

    /// The cluster's CAs in the Secrets Cluster API looks up before generating its own
    /// (`<cluster>-ca`, `-etcd`, `-proxy`; `tls.crt`/`tls.key`), so the cluster trusts the CA
    /// Fleetyard keeps for `/v1/certificates`.
    pub fn ca_secrets(&self, ca: &CaMaterial) -> Vec<Object> {
        let name = self.name();
        let mut pairs = vec![("ca", ca.certificate.as_str(), ca.private_key.expose())];
        if let Some(etcd) = &ca.etcd {
            pairs.push(("etcd", etcd.certificate.as_str(), etcd.private_key.expose()));
        }
        if let Some(proxy) = &ca.front_proxy {
            pairs.push((
                "proxy",
                proxy.certificate.as_str(),
                proxy.private_key.expose(),
            ));
        }
        pairs
            .into_iter()
            .map(|(suffix, cert, key)| {
                json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "cluster.x-k8s.io/secret",
                    "metadata": self.metadata(&format!("{name}-{suffix}"), None),
                    "data": {"tls.crt": base64(cert), "tls.key": base64(key)},
                })
            })
            .collect()
    }

    /// The Cluster API `Cluster`.
    pub fn cluster(&self) -> Object {
        self.capi().convert(self.cluster_v1beta1())
    }

    fn cluster_v1beta1(&self) -> Object {
        let name = self.name();
        let mut meta = self.metadata(&name, None);
        if let Some(driver) = self.template.spec.network_driver.as_deref() {
            if let Some(Value::Object(labels)) = meta.get_mut("labels") {
                labels.insert(LABEL_NETWORK_DRIVER.into(), json!(label_value(driver)));
            }
        }
        meta.insert(
            "annotations".into(),
            json!({ANNOTATION_CLUSTER_NAME: self.ctx.cluster.name}),
        );
        let pods = self
            .label("calico_ipv4pool")
            .or_else(|| self.label("pods_network_cidr"))
            .unwrap_or(DEFAULT_PODS_CIDR);
        let services = self
            .label("service_cluster_ip_range")
            .unwrap_or(DEFAULT_SERVICES_CIDR);
        let mut network = json!({
            "pods": {"cidrBlocks": [pods]},
            "services": {"cidrBlocks": [services]},
            "serviceDomain": self.label("dns_cluster_domain").unwrap_or(DEFAULT_DNS_DOMAIN),
        });
        if let Some(port) = self.template.spec.apiserver_port {
            network["apiServerPort"] = json!(port);
        }
        json!({
            "apiVersion": CAPI_API_VERSION,
            "kind": "Cluster",
            "metadata": meta,
            "spec": {
                "clusterNetwork": network,
                "controlPlaneRef": {
                    "apiVersion": CONTROL_PLANE_API_VERSION,
                    "kind": "KubeadmControlPlane",
                    "name": control_plane_name(&name),
                },
                "infrastructureRef": self.infra_ref(&self.settings.infrastructure_cluster_kind, &name),
            },
        })
    }

    /// The infrastructure cluster (`OpenStackCluster` by default).
    pub fn infrastructure_cluster(&self) -> Object {
        let name = self.name();
        let spec = if self.openstack() {
            self.openstack_cluster_spec()
        } else {
            json!({})
        };
        json!({
            "apiVersion": self.settings.infrastructure_api_version,
            "kind": self.settings.infrastructure_cluster_kind,
            "metadata": self.metadata(&name, None),
            "spec": spec,
        })
    }

    fn openstack_cluster_spec(&self) -> Value {
        let t = &self.template.spec;
        let c = &self.ctx.cluster;
        let mut spec = Map::new();
        spec.insert(
            "identityRef".into(),
            json!({"name": self.settings.cloud_credentials_secret, "cloudName": self.settings.cloud_name}),
        );
        if let Some(net) = t.external_network_id.as_deref() {
            spec.insert("externalNetwork".into(), by_id_or_name(net));
        }
        let dns: Vec<&str> = t.dns_nameserver.iter().map(String::as_str).collect();
        let fixed_network = c.fixed_network.as_deref().or(t.fixed_network.as_deref());
        let fixed_subnet = c.fixed_subnet.as_deref().or(t.fixed_subnet.as_deref());
        match fixed_network {
            Some(net) => {
                spec.insert("network".into(), by_id_or_name(net));
                if let Some(subnet) = fixed_subnet {
                    spec.insert("subnets".into(), json!([by_id_or_name(subnet)]));
                }
            }
            None => {
                let cidr = self
                    .label("fixed_subnet_cidr")
                    .unwrap_or(DEFAULT_SUBNET_CIDR);
                spec.insert(
                    "managedSubnets".into(),
                    json!([{"cidr": cidr, "dnsNameservers": dns}]),
                );
            }
        }
        spec.insert(
            "apiServerLoadBalancer".into(),
            json!({"enabled": c.master_lb_enabled}),
        );
        spec.insert(
            "disableAPIServerFloatingIP".into(),
            json!(!c.floating_ip_enabled),
        );
        spec.insert(
            "managedSecurityGroups".into(),
            json!({"allowAllInClusterTraffic": true}),
        );
        Value::Object(spec)
    }

    fn machine_template(
        &self,
        base: &str,
        ng: &NodeGroup,
        image: Option<&str>,
    ) -> Result<Object, String> {
        let spec = if self.openstack() {
            self.openstack_machine_spec(ng, image)?
        } else {
            json!({})
        };
        let spec = json!({"template": {"spec": spec}});
        let name = format!("{base}-{}", spec_hash(&spec));
        Ok(json!({
            "apiVersion": self.settings.infrastructure_api_version,
            "kind": self.settings.infrastructure_machine_template_kind,
            "metadata": self.metadata(&name, Some(ng)),
            "spec": spec,
        }))
    }

    fn openstack_machine_spec(&self, ng: &NodeGroup, image: Option<&str>) -> Result<Value, String> {
        let t = &self.template.spec;
        let c = &self.ctx.cluster;
        let flavor = if ng.is_master() {
            ng.flavor_id
                .as_deref()
                .or(c.master_flavor_id.as_deref())
                .or(t.master_flavor_id.as_deref())
        } else {
            ng.flavor_id
                .as_deref()
                .or(c.flavor_id.as_deref())
                .or(t.flavor_id.as_deref())
        };
        let Some(flavor) = flavor else {
            return Err(format!(
                "The node group {} has no flavor: set {} on the cluster template or the node group.",
                ng.name,
                if ng.is_master() { "master_flavor_id" } else { "flavor_id" }
            ));
        };
        let image = image
            .or(ng.image_id.as_deref())
            .unwrap_or(t.image_id.as_str());
        let mut spec = Map::new();
        if is_uuid(flavor) {
            spec.insert("flavorID".into(), json!(flavor));
        } else {
            spec.insert("flavor".into(), json!(flavor));
        }
        spec.insert("image".into(), by_id_or_name(image));
        if let Some(key) = c.keypair.as_deref().or(t.keypair_id.as_deref()) {
            spec.insert("sshKeyName".into(), json!(key));
        }
        if let Some(size) = self
            .group_label(ng, "boot_volume_size")
            .and_then(|v| v.parse::<u32>().ok())
        {
            let mut root = json!({"sizeGiB": size});
            if let Some(kind) = self.group_label(ng, "boot_volume_type") {
                root["type"] = json!(kind);
            }
            spec.insert("rootVolume".into(), root);
        }
        Ok(Value::Object(spec))
    }

    fn node_registration(&self, ng: &NodeGroup) -> Value {
        let mut node_labels = vec![
            format!("magnum.openstack.org/role={}", label_value(&ng.role)),
            format!("magnum.openstack.org/nodegroup={}", label_value(&ng.name)),
        ];
        node_labels.extend(ng.node_labels.iter().map(|(k, v)| format!("{k}={v}")));
        let mut kubelet = Map::new();
        if self.openstack() {
            kubelet.insert("cloud-provider".into(), json!("external"));
            kubelet.insert(
                "provider-id".into(),
                json!("openstack:///{{ instance_id }}"),
            );
        }
        kubelet.insert("node-labels".into(), json!(node_labels.join(",")));
        let mut reg = json!({"name": "{{ local_hostname }}", "kubeletExtraArgs": kubelet});
        if !ng.node_taints.is_empty() {
            let taints: Vec<Value> = ng
                .node_taints
                .iter()
                .map(|t| {
                    let mut v = json!({"key": t.key, "effect": t.effect});
                    if let Some(value) = &t.value {
                        v["value"] = json!(value);
                    }
                    v
                })
                .collect();
            reg["taints"] = json!(taints);
        }
        reg
    }

    /// The control plane: its machine template and the `KubeadmControlPlane`.
    pub fn control_plane(&self, master: &NodeGroup, o: &Overrides) -> Result<Vec<Object>, String> {
        let name = control_plane_name(&self.name());
        let template = self.machine_template(&name, master, o.image.as_deref())?;
        let template_name = object_name(&template).to_string();
        let mut cluster_config = json!({});
        if self.openstack() {
            cluster_config = json!({
                "apiServer": {"extraArgs": {"cloud-provider": "external"}},
                "controllerManager": {"extraArgs": {"cloud-provider": "external"}},
            });
        }
        let registration = self.node_registration(master);
        let kcp = json!({
            "apiVersion": CONTROL_PLANE_API_VERSION,
            "kind": "KubeadmControlPlane",
            "metadata": self.metadata(&name, Some(master)),
            "spec": {
                "replicas": master.node_count,
                "version": o.version.clone().unwrap_or_else(|| self.version()),
                "machineTemplate": {
                    "infrastructureRef": self.infra_ref(&self.settings.infrastructure_machine_template_kind, &template_name),
                },
                "rolloutStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": o.max_surge.unwrap_or(1).clamp(0, 1)},
                },
                "kubeadmConfigSpec": {
                    "clusterConfiguration": cluster_config,
                    "initConfiguration": {"nodeRegistration": registration},
                    "joinConfiguration": {"nodeRegistration": registration},
                },
            },
        });
        Ok(self.converted(vec![template, kcp]))
    }

    /// A worker node group: bootstrap template, machine template and `MachineDeployment`.
    /// `version` overrides the cluster's (a node group added later joins at the version the
    /// control plane runs).
    pub fn worker(
        &self,
        ng: &NodeGroup,
        o: &Overrides,
        version: Option<&str>,
    ) -> Result<Vec<Object>, String> {
        let cluster = self.name();
        let name = deployment_name(&cluster, ng);
        let bootstrap_spec = json!({"template": {"spec": {
            "joinConfiguration": {"nodeRegistration": self.node_registration(ng)},
        }}});
        let bootstrap_name = format!("{name}-{}", spec_hash(&bootstrap_spec));
        let bootstrap = json!({
            "apiVersion": BOOTSTRAP_API_VERSION,
            "kind": "KubeadmConfigTemplate",
            "metadata": self.metadata(&bootstrap_name, Some(ng)),
            "spec": bootstrap_spec,
        });
        let template = self.machine_template(&name, ng, o.image.as_deref())?;
        let version = o
            .version
            .clone()
            .or_else(|| version.map(normalize_version))
            .unwrap_or_else(|| self.version());
        let mut meta = self.metadata(&name, Some(ng));
        let max = ng
            .max_node_count
            .unwrap_or(ng.node_count)
            .max(ng.node_count);
        meta.insert(
            "annotations".into(),
            json!({AUTOSCALER_MIN: ng.min_node_count.to_string(), AUTOSCALER_MAX: max.to_string()}),
        );
        let mut machine_spec = json!({
            "clusterName": cluster,
            "version": version,
            "bootstrap": {"configRef": {
                "apiVersion": BOOTSTRAP_API_VERSION,
                "kind": "KubeadmConfigTemplate",
                "name": bootstrap_name,
            }},
            "infrastructureRef": self.infra_ref(&self.settings.infrastructure_machine_template_kind, object_name(&template)),
        });
        if let Some(az) = self.group_label(ng, "availability_zone") {
            machine_spec["failureDomain"] = json!(az);
        }
        let md = json!({
            "apiVersion": CAPI_API_VERSION,
            "kind": "MachineDeployment",
            "metadata": meta,
            "spec": {
                "clusterName": cluster,
                "replicas": ng.node_count,
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": o.max_surge.unwrap_or(1).max(1), "maxUnavailable": 0},
                },
                // The selector Cluster API's defaulting would give, stated: it is required.
                "selector": {"matchLabels": {
                    CAPI_CLUSTER_NAME_LABEL: cluster,
                    CAPI_DEPLOYMENT_NAME_LABEL: name,
                }},
                "template": {
                    "metadata": {"labels": {
                        CAPI_CLUSTER_NAME_LABEL: cluster,
                        CAPI_DEPLOYMENT_NAME_LABEL: name,
                        LABEL_CLUSTER_UUID: self.ctx.cluster.uuid.to_string(),
                        LABEL_NODEGROUP_UUID: ng.uuid.to_string(),
                    }},
                    "spec": machine_spec,
                },
            },
        });
        Ok(self.converted(vec![bootstrap, template, md]))
    }
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// `v1.30.1` from `v1.30.1` or `1.30.1`.
pub fn normalize_version(v: &str) -> String {
    let v = v.trim();
    if v.starts_with('v') {
        v.to_string()
    } else {
        format!("v{v}")
    }
}

pub fn object_name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

pub fn object_kind(obj: &Value) -> &str {
    obj["kind"].as_str().unwrap_or_default()
}

fn is_uuid(text: &str) -> bool {
    uuid::Uuid::parse_str(text).is_ok()
}

/// CAPO's reference to a Neutron or Glance resource: by id when the value is a uuid, else by
/// name (Magnum templates accept both).
fn by_id_or_name(value: &str) -> Value {
    if is_uuid(value) {
        json!({"id": value})
    } else {
        json!({"filter": {"name": value}})
    }
}

/// Eight hex digits of a 64-bit FNV-1a over the value's canonical JSON (object keys sorted),
/// stable across builds and serde_json features.
pub fn spec_hash(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:08x}", (hash >> 32) as u32 ^ hash as u32)
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                canonical(&map[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_labels_derived_from_the_uuid() {
        let id: ClusterId = "746e779a-751a-456b-a3e9-c883d734946f"
            .parse()
            .expect("uuid");
        assert_eq!(cluster_name(&id), "fy-746e779a751a456b");
        assert_eq!(dns_label("Default_Worker.Pool"), "default-worker-pool");
        assert_eq!(dns_label("--a--b--"), "a-b");
        assert_eq!(label_value("-my name!-"), "my-name");
    }

    #[test]
    fn the_spec_hash_ignores_key_order_and_sees_values() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b: Value =
            serde_json::from_str(r#"{"a": {"x": "s", "y": [1, 2]}, "b": 1}"#).expect("json");
        assert_eq!(spec_hash(&a), spec_hash(&b));
        assert_ne!(
            spec_hash(&a),
            spec_hash(&json!({"b": 2, "a": {"y": [1, 2], "x": "s"}}))
        );
        assert_eq!(spec_hash(&a).len(), 8);
    }

    #[test]
    fn versions_get_their_leading_v() {
        assert_eq!(normalize_version("1.30.1"), "v1.30.1");
        assert_eq!(normalize_version("v1.29.0"), "v1.29.0");
    }
}
