//! The Cluster API version the driver speaks (`[kubernetes_driver] cluster_api_version`):
//! `v1beta1`, or `v1beta2` (Cluster API 1.11 and later serve both and convert between them).
//!
//! The renderer builds every object in its `v1beta1` shape; [`CapiVersion::convert`] turns it
//! into the `v1beta2` shape as Cluster API's own conversion does for the fields Fleetyard
//! writes: references name an `apiGroup` instead of an `apiVersion`, the roll-out settings move
//! under `spec.rollout.strategy`, the control plane's machine template reference under
//! `spec.machineTemplate.spec`, and kubeadm's extra arguments become lists of `name`/`value`.
//! Reads accept both shapes (see `status`).

use serde_json::{json, Map, Value};

/// The Cluster API version of the objects written and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapiVersion {
    #[default]
    V1beta1,
    V1beta2,
}

impl CapiVersion {
    /// The setting's value, or the sentence refusing it.
    pub fn parse(text: &str) -> Result<CapiVersion, String> {
        match text.trim() {
            "v1beta1" => Ok(CapiVersion::V1beta1),
            "v1beta2" => Ok(CapiVersion::V1beta2),
            other => Err(format!(
                "[kubernetes_driver] cluster_api_version: unknown version '{other}' (known: v1beta1, v1beta2)"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CapiVersion::V1beta1 => "v1beta1",
            CapiVersion::V1beta2 => "v1beta2",
        }
    }

    /// `cluster.x-k8s.io/<version>`: Cluster, MachineDeployment, Machine.
    pub fn core(self) -> &'static str {
        match self {
            CapiVersion::V1beta1 => "cluster.x-k8s.io/v1beta1",
            CapiVersion::V1beta2 => "cluster.x-k8s.io/v1beta2",
        }
    }

    /// `controlplane.cluster.x-k8s.io/<version>`: KubeadmControlPlane.
    pub fn control_plane(self) -> &'static str {
        match self {
            CapiVersion::V1beta1 => "controlplane.cluster.x-k8s.io/v1beta1",
            CapiVersion::V1beta2 => "controlplane.cluster.x-k8s.io/v1beta2",
        }
    }

    /// `bootstrap.cluster.x-k8s.io/<version>`: KubeadmConfigTemplate.
    pub fn bootstrap(self) -> &'static str {
        match self {
            CapiVersion::V1beta1 => "bootstrap.cluster.x-k8s.io/v1beta1",
            CapiVersion::V1beta2 => "bootstrap.cluster.x-k8s.io/v1beta2",
        }
    }

    /// A rendered `v1beta1` object in this version's shape. Objects of other groups (the
    /// infrastructure provider's, Secrets) are returned as they are.
    pub fn convert(self, mut obj: Value) -> Value {
        if self == CapiVersion::V1beta1 {
            return obj;
        }
        let api = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let to = match api.as_str() {
            "cluster.x-k8s.io/v1beta1" => self.core(),
            "controlplane.cluster.x-k8s.io/v1beta1" => self.control_plane(),
            "bootstrap.cluster.x-k8s.io/v1beta1" => self.bootstrap(),
            _ => return obj,
        };
        obj["apiVersion"] = json!(to);
        if let Some(spec) = obj.get_mut("spec") {
            v1beta2_spec(spec);
        }
        obj
    }
}

/// The `v1beta2` moves of a spec's fields, then its references and extra arguments.
fn v1beta2_spec(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    // MachineDeployment's spec.strategy and KubeadmControlPlane's spec.rolloutStrategy ->
    // spec.rollout.strategy; spec.rolloutAfter -> spec.rollout.after.
    let mut rollout = Map::new();
    for (from, to) in [
        ("strategy", "strategy"),
        ("rolloutStrategy", "strategy"),
        ("rolloutAfter", "after"),
    ] {
        if let Some(v) = map.remove(from) {
            rollout.insert(to.into(), v);
        }
    }
    if !rollout.is_empty() {
        map.insert("rollout".into(), Value::Object(rollout));
    }
    // KubeadmControlPlane: spec.machineTemplate.infrastructureRef -> ….spec.infrastructureRef.
    if let Some(Value::Object(template)) = map.get_mut("machineTemplate") {
        if let Some(infra) = template.remove("infrastructureRef") {
            let spec = template
                .entry("spec")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("infrastructureRef".into(), infra);
            }
        }
    }
    walk(spec);
}

/// References (`apiVersion`, `kind`, `name`) become `apiGroup` references; `extraArgs` and
/// `kubeletExtraArgs` maps become lists of `name`/`value`, in name order.
fn walk(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "extraArgs" || key == "kubeletExtraArgs" {
                    if let Value::Object(args) = child {
                        let mut list: Vec<(String, Value)> =
                            args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                        list.sort_by(|a, b| a.0.cmp(&b.0));
                        *child = Value::Array(
                            list.into_iter()
                                .map(|(name, value)| json!({"name": name, "value": value}))
                                .collect(),
                        );
                        continue;
                    }
                }
                if is_reference(child) {
                    to_group_reference(child);
                    continue;
                }
                walk(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(walk),
        _ => {}
    }
}

fn is_reference(value: &Value) -> bool {
    value.as_object().is_some_and(|m| {
        m.contains_key("apiVersion") && m.contains_key("kind") && m.contains_key("name")
    })
}

fn to_group_reference(value: &mut Value) {
    let group = value["apiVersion"]
        .as_str()
        .map(|api| api.split_once('/').map_or("", |(g, _)| g).to_string())
        .unwrap_or_default();
    *value = json!({"apiGroup": group, "kind": value["kind"], "name": value["name"]});
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_names_a_known_version() {
        assert_eq!(CapiVersion::parse("v1beta2"), Ok(CapiVersion::V1beta2));
        assert_eq!(
            CapiVersion::parse("v1alpha4"),
            Err("[kubernetes_driver] cluster_api_version: unknown version 'v1alpha4' (known: v1beta1, v1beta2)".to_string())
        );
    }

    #[test]
    fn a_machine_deployment_moves_its_strategy_and_refers_by_api_group() {
        let md = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
            "metadata": {"name": "md"},
            "spec": {
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "template": {"spec": {
                    "bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": "b"}},
                    "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachineTemplate", "name": "t"},
                }},
            },
        });
        let out = CapiVersion::V1beta2.convert(md.clone());
        assert_eq!(out["apiVersion"], "cluster.x-k8s.io/v1beta2");
        assert_eq!(
            out["spec"]["rollout"],
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}})
        );
        assert!(out["spec"]["strategy"].is_null());
        assert_eq!(
            out["spec"]["template"]["spec"]["bootstrap"]["configRef"],
            json!({"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "b"})
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["infrastructureRef"]["apiGroup"],
            "infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(CapiVersion::V1beta1.convert(md.clone()), md);
    }

    #[test]
    fn a_control_plane_moves_its_template_reference_and_lists_its_arguments() {
        let kcp = json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
            "spec": {
                "machineTemplate": {"infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachineTemplate", "name": "t"}},
                "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "kubeadmConfigSpec": {"initConfiguration": {"nodeRegistration": {"kubeletExtraArgs": {"provider-id": "p", "cloud-provider": "external"}}}},
            },
        });
        let out = CapiVersion::V1beta2.convert(kcp);
        assert_eq!(
            out["spec"]["machineTemplate"],
            json!({"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachineTemplate", "name": "t"}}})
        );
        assert_eq!(out["spec"]["rollout"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(
            out["spec"]["kubeadmConfigSpec"]["initConfiguration"]["nodeRegistration"]
                ["kubeletExtraArgs"],
            json!([{"name": "cloud-provider", "value": "external"}, {"name": "provider-id", "value": "p"}])
        );
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "data": {}});
        assert_eq!(CapiVersion::V1beta2.convert(secret.clone()), secret);
    }
}
