//! Cluster API status, read back into Magnum's terms: the phase of the current operation,
//! `api_address`, node counts and addresses per node group, `coe_version`, and health.
//!
//! Complete means: the `Cluster` is `Provisioned` (and `Ready` when it reports that
//! condition), it has a control-plane endpoint, and the `KubeadmControlPlane` and every
//! `MachineDeployment` have observed their latest spec and have all their replicas updated
//! and ready. A failure Cluster API calls terminal (`failureMessage` on the Cluster, the
//! control plane or a Machine, a `Failed` phase) fails the operation with its message.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::domain::cluster::NodeGroup;
use crate::domain::leftover::Leftover;
use crate::domain::machine::{
    KubeVersion, Machine, MachineAddress, MachinePhase, MachineRole, MachineVersions,
};
use crate::domain::status::ClusterStatus;
use crate::drivers::{
    ClusterContext, ClusterObservation, HealthObservation, MachineObservation,
    NodeGroupObservation, Phase,
};

use super::render::{
    cluster_name, deployment_name, CAPI_CONTROL_PLANE_LABEL, CAPI_DEPLOYMENT_NAME_LABEL,
    DELETE_MACHINE,
};

/// The objects of one cluster as the management cluster returned them.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub cluster: Option<Value>,
    pub control_plane: Option<Value>,
    /// By MachineDeployment name.
    pub deployments: BTreeMap<String, Value>,
    pub machines: Vec<Value>,
}

fn int(v: &Value) -> Option<i64> {
    v.as_i64()
}

fn text(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// The `status` of a condition type, when the object reports it.
pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"].as_str() == Some(kind))
}

fn condition_true(obj: &Value, kind: &str) -> Option<bool> {
    condition(obj, kind).map(|c| c["status"].as_str() == Some("True"))
}

/// A status field Cluster API `v1beta2` moved under `status.deprecated.v1beta1`
/// (`failureReason`, `failureMessage`): read where either version keeps it.
fn status_text<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    text(&obj["status"][field]).or_else(|| text(&obj["status"]["deprecated"]["v1beta1"][field]))
}

/// `https://host:port` from the Cluster's `spec.controlPlaneEndpoint`.
pub fn api_address(cluster: &Value) -> Option<String> {
    let endpoint = &cluster["spec"]["controlPlaneEndpoint"];
    let host = text(&endpoint["host"])?;
    let port = int(&endpoint["port"]).filter(|p| *p > 0).unwrap_or(6443);
    if host.contains(':') && !host.starts_with('[') {
        Some(format!("https://[{host}]:{port}"))
    } else {
        Some(format!("https://{host}:{port}"))
    }
}

/// Whether a replicated object (KCP, MachineDeployment) has observed its spec and has every
/// replica updated and ready.
pub fn settled(obj: &Value) -> bool {
    let desired = int(&obj["spec"]["replicas"]).unwrap_or(1);
    let status = &obj["status"];
    let generation = int(&obj["metadata"]["generation"]).unwrap_or(0);
    let observed = int(&status["observedGeneration"]).unwrap_or(0);
    observed >= generation
        && int(&status["replicas"]).unwrap_or(0) == desired
        && int(&status["readyReplicas"]).unwrap_or(0) == desired
        // `v1beta2` counts the machines of the latest spec as `upToDateReplicas`.
        && int(&status["updatedReplicas"])
            .or_else(|| int(&status["upToDateReplicas"]))
            .unwrap_or(0)
            == desired
}

/// Cluster API's words for a terminal failure of `obj`, when it reports one.
pub fn failure(obj: &Value, what: &str) -> Option<String> {
    let status = &obj["status"];
    let message = status_text(obj, "failureMessage");
    let reason = status_text(obj, "failureReason");
    if message.is_none() && reason.is_none() && status["phase"].as_str() != Some("Failed") {
        return None;
    }
    let mut out = format!("Cluster API reports that {what} failed");
    if let Some(r) = reason {
        out.push_str(&format!(" ({r})"));
    }
    match message {
        Some(m) => out.push_str(&format!(": {m}")),
        None => {
            let messages: Vec<&str> = obj["status"]["conditions"]
                .as_array()
                .map(|cs| {
                    cs.iter()
                        .filter(|c| c["status"].as_str() == Some("False"))
                        .filter_map(|c| text(&c["message"]))
                        .collect()
                })
                .unwrap_or_default();
            if !messages.is_empty() {
                out.push_str(&format!(": {}", messages.join("; ")));
            }
        }
    }
    if !out.ends_with('.') {
        out.push('.');
    }
    Some(out)
}

fn addresses(machines: &[&Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in machines {
        let list = m["status"]["addresses"].as_array();
        let pick = |kind: &str| {
            list.and_then(|l| {
                l.iter()
                    .find(|a| a["type"].as_str() == Some(kind))
                    .and_then(|a| text(&a["address"]).map(str::to_string))
            })
        };
        if let Some(a) = pick("InternalIP").or_else(|| pick("ExternalIP")) {
            out.push(a);
        }
    }
    out.sort();
    out
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["labels"][key].as_str()
}

pub fn is_control_plane_machine(m: &Value) -> bool {
    label(m, CAPI_CONTROL_PLANE_LABEL).is_some()
}

pub fn machine_deployment(m: &Value) -> Option<&str> {
    label(m, CAPI_DEPLOYMENT_NAME_LABEL)
}

/// What the management cluster says about the cluster's current operation.
pub fn observe(ctx: &ClusterContext, observed: &Observed) -> ClusterObservation {
    let name = cluster_name(&ctx.cluster.uuid);
    let deleting = ctx.cluster.status == ClusterStatus::DeleteInProgress;
    let Some(cluster) = &observed.cluster else {
        let phase = if deleting {
            Phase::Gone
        } else {
            Phase::Failed(format!(
                "The Cluster API Cluster {name} is missing from the management cluster; it was deleted outside Fleetyard."
            ))
        };
        let mut obs = ClusterObservation::phase(phase);
        obs.stack_id = Some(name);
        return obs;
    };

    let mut nodegroups = BTreeMap::new();
    let mut machines = BTreeMap::new();
    let mut all_settled = true;
    let mut failures: Vec<String> = Vec::new();
    if let Some(f) = failure(cluster, &format!("the cluster {name}")) {
        failures.push(f);
    }
    let kcp = observed.control_plane.as_ref();
    let coe_version = kcp.and_then(|k| {
        text(&k["status"]["version"])
            .or_else(|| text(&k["spec"]["version"]))
            .map(str::to_string)
    });
    for ng in &ctx.nodegroups {
        let (observation, ready) =
            observe_nodegroup(&name, ng, observed, coe_version.as_ref(), &mut failures);
        all_settled &= ready;
        if let Some(o) = observation {
            nodegroups.insert(ng.uuid.to_string(), o);
        }
        let control_plane = coe_version
            .as_deref()
            .and_then(|v| KubeVersion::parse(v).ok());
        for (row, capi) in pair(
            &rows_of(ctx, ng),
            &capi_machines_of(&name, ng, &observed.machines),
        ) {
            machines.insert(row.uuid, read_back(row, capi, control_plane.as_ref()));
        }
    }

    let api_address = api_address(cluster);
    let provisioned = cluster["status"]["phase"].as_str() == Some("Provisioned")
        && condition_true(cluster, "Ready")
            .or_else(|| condition_true(cluster, "Available"))
            .unwrap_or(true)
        && api_address.is_some();
    let phase = if deleting {
        Phase::InProgress
    } else if let Some(first) = failures.first() {
        Phase::Failed(first.clone())
    } else if provisioned && all_settled {
        Phase::Complete
    } else {
        Phase::InProgress
    };
    let leftovers = if deleting {
        leftovers(&name, observed)
    } else {
        Vec::new()
    };
    ClusterObservation {
        phase,
        stack_id: Some(name),
        api_address,
        coe_version,
        container_version: None,
        nodegroups,
        leftovers,
        machines,
    }
}

/// Fleetyard's machines of one node group, in id order.
pub fn rows_of<'a>(ctx: &'a ClusterContext, ng: &NodeGroup) -> Vec<&'a Machine> {
    ctx.machines
        .iter()
        .filter(|m| m.nodegroup_id == ng.uuid)
        .collect()
}

/// The Cluster API Machines of one node group: the control plane's for the master group, the
/// MachineDeployment's for a worker group.
pub fn capi_machines_of<'a>(name: &str, ng: &NodeGroup, machines: &'a [Value]) -> Vec<&'a Value> {
    if ng.is_master() {
        machines
            .iter()
            .filter(|m| is_control_plane_machine(m))
            .collect()
    } else {
        let md = deployment_name(name, ng);
        machines
            .iter()
            .filter(|m| machine_deployment(m) == Some(md.as_str()))
            .collect()
    }
}

fn marked_for_deletion(m: &Value) -> bool {
    m["metadata"]["annotations"][DELETE_MACHINE].is_string()
        || m["metadata"]["deletionTimestamp"].is_string()
}

/// Which Cluster API Machine each of a node group's machines is. A machine already read back is
/// found again by its server (`spec.providerID`), then by its node; the rest are paired in
/// order: machines staying with the Machines Cluster API keeps (oldest first), machines being
/// deleted with those it is deleting. Each Machine is paired at most once; machines left
/// over have no Machine yet (Cluster API has not made it) and are not reported.
pub fn pair<'a, 'b>(rows: &[&'a Machine], capi: &[&'b Value]) -> Vec<(&'a Machine, &'b Value)> {
    let mut free: Vec<&'b Value> = capi.to_vec();
    free.sort_by(|a, b| {
        let key = |m: &Value| {
            (
                marked_for_deletion(m),
                m["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                m["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut out = Vec::new();
    let mut unpaired = Vec::new();
    for row in rows {
        let known = free.iter().position(|m| {
            row.status
                .provider_id
                .as_deref()
                .is_some_and(|p| text(&m["spec"]["providerID"]) == Some(p))
                || row
                    .status
                    .node_ref
                    .as_deref()
                    .is_some_and(|n| text(&m["status"]["nodeRef"]["name"]) == Some(n))
        });
        match known {
            Some(i) => out.push((*row, free.remove(i))),
            None => unpaired.push(*row),
        }
    }
    let (going, staying): (Vec<&Machine>, Vec<&Machine>) = unpaired
        .into_iter()
        .partition(|m| m.status.phase == MachinePhase::Deleting);
    for row in staying {
        match free.iter().position(|m| !marked_for_deletion(m)) {
            Some(i) => out.push((row, free.remove(i))),
            None => break,
        }
    }
    for row in going {
        if free.is_empty() {
            break;
        }
        out.push((row, free.remove(0)));
    }
    out
}

/// One machine as its Cluster API Machine shows it: the server, the node, the addresses, the
/// kubelet the node reports (else the version the Machine asks for), the control plane's
/// version on a master, and a failure Cluster API reports.
pub fn read_back(
    row: &Machine,
    capi: &Value,
    control_plane: Option<&KubeVersion>,
) -> MachineObservation {
    let addresses = capi["status"]["addresses"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    Some(MachineAddress {
                        kind: text(&a["type"])?.to_string(),
                        address: text(&a["address"])?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let kubelet = text(&capi["status"]["nodeInfo"]["kubeletVersion"])
        .or_else(|| text(&capi["spec"]["version"]))
        .and_then(|v| KubeVersion::parse(v).ok());
    MachineObservation {
        provider_id: text(&capi["spec"]["providerID"]).map(str::to_string),
        node_ref: text(&capi["status"]["nodeRef"]["name"]).map(str::to_string),
        addresses,
        versions: MachineVersions {
            kubelet,
            control_plane: control_plane
                .filter(|_| row.role == MachineRole::Master)
                .cloned(),
        },
        error_reason: status_text(capi, "failureReason").map(str::to_string),
        error_message: status_text(capi, "failureMessage").map(str::to_string),
    }
}

/// The most Machines a deleting cluster's leftovers name (the Cluster object owns the rest).
const LISTED_MACHINES: usize = 50;

/// What a cluster being deleted still has on the management cluster: its `Cluster` object and
/// the Machines not yet gone.
fn leftovers(name: &str, observed: &Observed) -> Vec<Leftover> {
    let mut out = vec![Leftover::new("Cluster.cluster.x-k8s.io", name)];
    out.extend(
        observed
            .machines
            .iter()
            .filter_map(|m| text(&m["metadata"]["name"]))
            .take(LISTED_MACHINES)
            .map(|m| Leftover::new("Machine.cluster.x-k8s.io", m)),
    );
    out
}

/// One node group as the management cluster shows it: its observation (none while its object
/// is missing), whether it has settled, and the failures its objects and machines report.
fn observe_nodegroup(
    name: &str,
    ng: &NodeGroup,
    observed: &Observed,
    coe_version: Option<&String>,
    failures: &mut Vec<String>,
) -> (Option<NodeGroupObservation>, bool) {
    let machines = capi_machines_of(name, ng, &observed.machines);
    let obj = if ng.is_master() {
        observed.control_plane.as_ref()
    } else {
        observed.deployments.get(&deployment_name(name, ng))
    };
    for m in &machines {
        let machine = m["metadata"]["name"].as_str().unwrap_or_default();
        if let Some(f) = failure(
            m,
            &format!("the machine {machine} of node group {}", ng.name),
        ) {
            failures.push(f);
        }
    }
    let deleting = ng.status == ClusterStatus::DeleteInProgress;
    let Some(obj) = obj else {
        // A node group being deleted is done once its MachineDeployment is gone.
        return (None, deleting);
    };
    if let Some(f) = failure(obj, &format!("node group {}", ng.name)) {
        failures.push(f);
    }
    let ready = settled(obj);
    let version = if ng.is_master() {
        coe_version.cloned()
    } else {
        text(&obj["spec"]["template"]["spec"]["version"]).map(str::to_string)
    };
    let observation = NodeGroupObservation {
        node_count: int(&obj["spec"]["replicas"]).map(|n| n as i32),
        node_addresses: addresses(&machines),
        ready,
        version,
    };
    (Some(observation), ready && !deleting)
}

/// Health in Magnum's shape: `api` plus `<node>.Ready` per machine.
pub fn health(cluster: Option<&Value>, machines: &[Value]) -> HealthObservation {
    let mut reason = BTreeMap::new();
    let Some(cluster) = cluster else {
        reason.insert(
            "api".into(),
            "The Cluster API Cluster is missing from the management cluster.".into(),
        );
        return HealthObservation {
            healthy: Some(false),
            reason,
        };
    };
    // `v1beta1` says ControlPlaneReady and Ready, `v1beta2` ControlPlaneAvailable and Available.
    let api_ok = condition_true(cluster, "ControlPlaneReady")
        .or_else(|| condition_true(cluster, "ControlPlaneAvailable"))
        .or_else(|| condition_true(cluster, "Ready"))
        .or_else(|| condition_true(cluster, "Available"))
        .unwrap_or(false);
    let api = if api_ok {
        "ok".to_string()
    } else {
        condition(cluster, "ControlPlaneReady")
            .or_else(|| condition(cluster, "ControlPlaneAvailable"))
            .or_else(|| condition(cluster, "Ready"))
            .or_else(|| condition(cluster, "Available"))
            .and_then(|c| text(&c["message"]).or_else(|| text(&c["reason"])))
            .unwrap_or("the control plane is not ready")
            .to_string()
    };
    reason.insert("api".into(), api);
    let mut healthy = api_ok;
    for m in machines {
        let node = text(&m["status"]["nodeRef"]["name"])
            .or_else(|| text(&m["metadata"]["name"]))
            .unwrap_or("machine");
        let ready = condition_true(m, "NodeHealthy")
            .or_else(|| condition_true(m, "Ready"))
            .unwrap_or(false);
        healthy &= ready;
        reason.insert(
            format!("{node}.Ready"),
            if ready { "True" } else { "False" }.into(),
        );
    }
    HealthObservation {
        healthy: Some(healthy),
        reason,
    }
}

/// Whether a Machine is the node a user named in `nodes_to_remove`: by machine name, node
/// name, server id (provider id) or address.
pub fn machine_matches(m: &Value, wanted: &str) -> bool {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return false;
    }
    let by_name = m["metadata"]["name"].as_str() == Some(wanted)
        || m["status"]["nodeRef"]["name"].as_str() == Some(wanted);
    let by_server = m["spec"]["providerID"]
        .as_str()
        .is_some_and(|p| p == wanted || p.rsplit('/').next() == Some(wanted));
    let by_address = m["status"]["addresses"]
        .as_array()
        .is_some_and(|l| l.iter().any(|a| a["address"].as_str() == Some(wanted)));
    by_name || by_server || by_address
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_api_address_comes_from_the_control_plane_endpoint() {
        assert_eq!(
            api_address(
                &json!({"spec": {"controlPlaneEndpoint": {"host": "203.0.113.7", "port": 6443}}})
            ),
            Some("https://203.0.113.7:6443".into())
        );
        assert_eq!(
            api_address(
                &json!({"spec": {"controlPlaneEndpoint": {"host": "2001:db8::1", "port": 443}}})
            ),
            Some("https://[2001:db8::1]:443".into())
        );
        assert_eq!(
            api_address(&json!({"spec": {"controlPlaneEndpoint": {"host": "", "port": 0}}})),
            None
        );
        assert_eq!(api_address(&json!({"spec": {}})), None);
    }

    #[test]
    fn a_replicated_object_is_settled_only_once_it_observed_its_latest_spec() {
        let mut md = json!({
            "metadata": {"generation": 2},
            "spec": {"replicas": 3},
            "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3},
        });
        assert!(!settled(&md));
        md["status"]["observedGeneration"] = json!(2);
        assert!(settled(&md));
        md["status"]["updatedReplicas"] = json!(2);
        assert!(!settled(&md));
    }

    #[test]
    fn failures_carry_the_reason_and_message() {
        let m = json!({"status": {"failureReason": "InsufficientResources", "failureMessage": "Quota exceeded for instances"}});
        assert_eq!(
            failure(&m, "the machine m1").as_deref(),
            Some("Cluster API reports that the machine m1 failed (InsufficientResources): Quota exceeded for instances.")
        );
        assert_eq!(failure(&json!({"status": {"phase": "Running"}}), "x"), None);
    }

    #[test]
    fn nodes_to_remove_match_by_name_node_server_or_address() {
        let m = json!({
            "metadata": {"name": "fy-1-md-abc"},
            "spec": {"providerID": "openstack:///0b5c4b7e-1f11-4c6a-a0c5-0d8c5d0b2d11"},
            "status": {"nodeRef": {"name": "node-1"}, "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]},
        });
        for wanted in [
            "fy-1-md-abc",
            "node-1",
            "0b5c4b7e-1f11-4c6a-a0c5-0d8c5d0b2d11",
            "10.0.0.5",
        ] {
            assert!(machine_matches(&m, wanted), "{wanted}");
        }
        assert!(!machine_matches(&m, "10.0.0.6"));
        assert!(!machine_matches(&m, ""));
    }
}
