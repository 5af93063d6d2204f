//! A machine's reboot through its workload cluster's own API, as kured (the Kubernetes Reboot
//! Daemon) and `kubectl drain` do it, whatever the infrastructure: Cluster API has no reboot.
//!
//! 1. The machine's Node (its `nodeRef`) gets its current `status.nodeInfo.bootID` recorded in
//!    [`BOOT_ID`], the time in [`STARTED`] and the job in [`REQUEST`], and is cordoned
//!    (`spec.unschedulable`), in one merge patch. A Node an administrator had cordoned is
//!    marked [`WAS_CORDONED`] and stays cordoned afterwards.
//! 2. Drain: its pods are evicted through the Eviction API (policy/v1), except DaemonSet pods
//!    and mirror pods (`kubernetes.io/config.mirror`), as `kubectl drain --ignore-daemonsets
//!    --delete-emptydir-data --force` does (pods that finished hold nothing and are left). A
//!    429 (a PodDisruptionBudget allows no disruption now) is asked again at the next poll.
//! 3. A privileged Pod pinned to the node (`nodeName`, `hostPID`, every taint tolerated,
//!    `restartPolicy: Never`) in `kube-system`, named after the machine so a retry finds it
//!    instead of making a second, runs `nsenter -t 1 -m -u -i -n -p -- systemctl reboot`
//!    (`[kubernetes_driver] reboot_image`).
//! 4. Done once the Node's boot ID differs from the recorded one and it is Ready: the Pod is
//!    deleted, the Node uncordoned, the annotations dropped and [`LAST_REBOOT`] set to the job,
//!    so that a retry of the finished job (its answer lost) reboots nothing again.
//!
//! Every call reads where the reboot is from the Node and its Pods, never from memory, so a
//! conductor restarted in the middle goes on. A reboot not done within `[kubernetes_driver]
//! reboot_timeout` fails with the node and the step it was stuck at; the reboot Pod goes and
//! the node is uncordoned. A master is rebooted only while every other master is Ready and
//! none is being rebooted, one at a time.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::domain::machine::{Machine, MachineRole};
use crate::drivers::{
    ClusterContext, ClusterObservation, DriverError, DriverResult, MachineAction,
    MachineObservation, Phase, Progress,
};

use super::client::{Eviction, Kube};
use super::render::{cluster_name, CAPI_CLUSTER_NAME_LABEL};
use super::{machines, KubernetesDriver};

/// On the Node while it is rebooted: its boot ID before the reboot.
pub const BOOT_ID: &str = "fleetyard.openstack.org/reboot-boot-id";
/// On the Node while it is rebooted: when the reboot began (RFC 3339).
pub const STARTED: &str = "fleetyard.openstack.org/reboot-started-at";
/// On the Node while it is rebooted: the job that asked for it.
pub const REQUEST: &str = "fleetyard.openstack.org/reboot-request";
/// On the Node while it is rebooted: it was cordoned before, and stays so.
pub const WAS_CORDONED: &str = "fleetyard.openstack.org/reboot-was-cordoned";
/// On the Node after a reboot: the job that rebooted it last.
pub const LAST_REBOOT: &str = "fleetyard.openstack.org/last-reboot";
/// The namespace of the reboot Pods.
pub const POD_NAMESPACE: &str = "kube-system";
const MIRROR: &str = "kubernetes.io/config.mirror";
const CONTROL_PLANE_ROLE: &str = "node-role.kubernetes.io/control-plane";

/// Checks `reboot_image` and `reboot_timeout` of `[kubernetes_driver]`.
pub fn check_settings(settings: &crate::config::KubernetesDriverSection) -> Result<(), String> {
    if settings.reboot_image.trim().is_empty() {
        return Err("[kubernetes_driver] reboot_image: must not be empty".into());
    }
    if settings.reboot_timeout == 0 {
        return Err("[kubernetes_driver] reboot_timeout: must be at least 1 second".into());
    }
    Ok(())
}

/// The reboot Pod of a machine: `fleetyard-reboot-<machine uuid>`.
pub fn pod_name(m: &Machine) -> String {
    format!("fleetyard-reboot-{}", m.uuid)
}

/// The reboot Pod of `m` on `node`.
pub fn reboot_pod(m: &Machine, node: &str, image: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(m),
            "namespace": POD_NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "fleetyard", "fleetyard.openstack.org/reboot": "true"},
        },
        "spec": {
            "nodeName": node,
            "hostPID": true,
            "restartPolicy": "Never",
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            "containers": [{
                "name": "reboot",
                "image": image,
                "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "systemctl", "reboot"],
                "securityContext": {"privileged": true},
            }],
        },
    })
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

fn boot_id(node: &Value) -> Option<&str> {
    node["status"]["nodeInfo"]["bootID"]
        .as_str()
        .filter(|b| !b.is_empty())
}

/// Whether the Node's `Ready` condition is `True`.
pub fn ready(node: &Value) -> bool {
    node["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

fn name_of(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

/// Whether a drain evicts the Pod: not a DaemonSet's, not a mirror pod, not finished.
pub fn evicted_by_drain(pod: &Value) -> bool {
    let daemon = pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|o| o.iter().any(|r| r["kind"] == "DaemonSet"));
    let finished = matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    !daemon && annotation(pod, MIRROR).is_none() && !finished
}

impl KubernetesDriver {
    /// One step of `m`'s reboot (see the module's text).
    pub(super) async fn reboot(&self, ctx: &ClusterContext, m: &Machine) -> DriverResult<Progress> {
        machines::check_action(m, MachineAction::Reboot).map_err(DriverError::Permanent)?;
        let node_name = self.node_of(ctx, m).await?;
        let access = self.cluster_access(&ctx.cluster).await?;
        let kube = &access.kube;
        let Some(mut node) = kube.get("v1", "Node", None, &node_name).await? else {
            return Err(DriverError::Permanent(format!(
                "The node {node_name} of machine {} is not in cluster {}.",
                m.name, ctx.cluster.name
            )));
        };
        let job = ctx.job.map(|j| j.to_string());
        if annotation(&node, BOOT_ID).is_none() {
            if job.is_some() && annotation(&node, LAST_REBOOT) == job.as_deref() {
                return Ok(rebooted(m, &node_name));
            }
            if m.role == MachineRole::Master {
                self.other_masters_ready(kube, &node_name).await?;
            }
            node = self.begin(kube, &node, job.as_deref()).await?;
        }
        let recorded = annotation(&node, BOOT_ID).unwrap_or_default().to_string();
        let was_cordoned = annotation(&node, WAS_CORDONED).is_some();
        if boot_id(&node).is_some_and(|b| b != recorded) && ready(&node) {
            kube.delete("v1", "Pod", Some(POD_NAMESPACE), &pod_name(m))
                .await?;
            let mut patch = end_patch(was_cordoned);
            patch["metadata"]["annotations"][LAST_REBOOT] = json!(job);
            patch_node(kube, &node_name, &patch).await?;
            return Ok(rebooted(m, &node_name));
        }
        let started = annotation(&node, STARTED)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(Utc::now);
        let limit = self.settings.reboot_timeout;
        let spent = (Utc::now() - started).num_seconds();
        // Past the timeout, nothing more is started: only where it stopped is told.
        let expired = spent >= 0 && spent as u64 >= limit;
        let step = if boot_id(&node).is_some_and(|b| b != recorded) {
            format!("the node {node_name} rebooted but is not Ready yet")
        } else {
            self.drain_and_reboot(kube, m, &node_name, !expired).await?
        };
        if expired {
            kube.delete("v1", "Pod", Some(POD_NAMESPACE), &pod_name(m))
                .await?;
            patch_node(kube, &node_name, &end_patch(was_cordoned)).await?;
            let after = if was_cordoned {
                "the node stays cordoned, as it was before"
            } else {
                "the node was uncordoned"
            };
            return Err(DriverError::Permanent(format!(
                "The reboot of machine {} did not finish within {limit} seconds ([kubernetes_driver] reboot_timeout), at the step where {step}; {after}.",
                m.name
            )));
        }
        let mut obs = ClusterObservation::phase(Phase::InProgress);
        obs.stack_id = Some(cluster_name(&ctx.cluster.uuid));
        Ok(Progress::Started(obs))
    }

    /// The machine's Node: its `nodeRef`, else its Cluster API Machine's `status.nodeRef`.
    async fn node_of(&self, ctx: &ClusterContext, m: &Machine) -> DriverResult<String> {
        if let Some(node) = m.status.node_ref.as_deref().filter(|n| !n.is_empty()) {
            return Ok(node.to_string());
        }
        let no_node = || {
            DriverError::Permanent(format!(
                "The machine {} has no node yet, so there is nothing to reboot.",
                m.name
            ))
        };
        let server = m.status.provider_id.as_deref().ok_or_else(no_node)?;
        let selector = format!(
            "{CAPI_CLUSTER_NAME_LABEL}={}",
            cluster_name(&ctx.cluster.uuid)
        );
        let capi = self
            .management()
            .await?
            .list(self.capi.core(), "Machine", Some(self.ns()), &selector)
            .await?;
        capi.iter()
            .find(|x| x["spec"]["providerID"].as_str() == Some(server))
            .and_then(|x| x["status"]["nodeRef"]["name"].as_str())
            .map(str::to_string)
            .ok_or_else(no_node)
    }

    /// Refuses a master's reboot while another master is not Ready or being rebooted.
    async fn other_masters_ready(&self, kube: &Kube, node: &str) -> DriverResult<()> {
        let masters = kube.list("v1", "Node", None, CONTROL_PLANE_ROLE).await?;
        for other in masters.iter().filter(|n| name_of(n) != node) {
            let why = if annotation(other, BOOT_ID).is_some() {
                "is being rebooted"
            } else if !ready(other) {
                "is not Ready"
            } else {
                continue;
            };
            return Err(DriverError::Permanent(format!(
                "The master node {node} is not rebooted while the master node {} {why}: masters are rebooted one at a time, so that etcd keeps its quorum.",
                name_of(other)
            )));
        }
        Ok(())
    }

    /// Step 1: the boot ID recorded and the node cordoned, in one patch.
    async fn begin(&self, kube: &Kube, node: &Value, job: Option<&str>) -> DriverResult<Value> {
        let name = name_of(node);
        let Some(boot) = boot_id(node) else {
            return Err(DriverError::Transient(format!(
                "The node {name} reports no boot ID (status.nodeInfo.bootID) yet."
            )));
        };
        let cordoned = node["spec"]["unschedulable"].as_bool() == Some(true);
        let mut patch = json!({
            "metadata": {"annotations": {BOOT_ID: boot, STARTED: Utc::now().to_rfc3339()}},
            "spec": {"unschedulable": true},
        });
        if let Some(job) = job {
            patch["metadata"]["annotations"][REQUEST] = json!(job);
        }
        if cordoned {
            patch["metadata"]["annotations"][WAS_CORDONED] = json!("true");
        }
        patch_node(kube, name, &patch).await
    }

    /// Steps 2 and 3: evicts what is left to evict (a refusal says why the drain waits), else
    /// makes sure the reboot Pod exists (not with `act` false: past the timeout, no reboot is
    /// started). What it waits on, for the timeout's reason.
    async fn drain_and_reboot(
        &self,
        kube: &Kube,
        m: &Machine,
        node: &str,
        act: bool,
    ) -> DriverResult<String> {
        let pod = pod_name(m);
        if let Some(p) = kube.get("v1", "Pod", Some(POD_NAMESPACE), &pod).await? {
            let phase = p["status"]["phase"].as_str().unwrap_or("Pending");
            return Ok(format!(
                "the node {node} had not rebooted (its reboot Pod {POD_NAMESPACE}/{pod} is {phase})"
            ));
        }
        let on_node = kube
            .list_fields("v1", "Pod", None, &format!("spec.nodeName={node}"))
            .await?;
        let mut left = Vec::new();
        let mut refusals = Vec::new();
        for p in on_node.iter().filter(|p| evicted_by_drain(p)) {
            let (ns, name) = (
                p["metadata"]["namespace"].as_str().unwrap_or("default"),
                name_of(p),
            );
            let who = format!("{ns}/{name}");
            if p["metadata"]["deletionTimestamp"].is_string() {
                left.push(who);
                continue;
            }
            match kube.evict(ns, name).await? {
                Eviction::Gone => {}
                Eviction::Evicted => left.push(who),
                Eviction::Refused(why) => {
                    refusals.push(format!("{who}: {why}"));
                    left.push(who);
                }
            }
        }
        // Evicted pods go asynchronously: the reboot waits until a call finds none left.
        if !left.is_empty() {
            let mut step = format!(
                "the node {node} was being drained ({} left",
                left.join(", ")
            );
            if !refusals.is_empty() {
                step.push_str(&format!("; eviction refused: {}", refusals.join("; ")));
            }
            step.push(')');
            return Ok(step);
        }
        if !act {
            return Ok(format!(
                "the node {node} was drained but its reboot Pod was not made yet"
            ));
        }
        kube.create(&reboot_pod(m, node, &self.settings.reboot_image))
            .await?;
        Ok(format!(
            "the node {node} had not rebooted (its reboot Pod {POD_NAMESPACE}/{pod} was just made)"
        ))
    }
}

/// The patch that ends a reboot: uncordoned (unless it was cordoned before), annotations gone.
fn end_patch(was_cordoned: bool) -> Value {
    json!({
        "metadata": {"annotations": {BOOT_ID: null, STARTED: null, REQUEST: null, WAS_CORDONED: null}},
        "spec": {"unschedulable": if was_cordoned { json!(true) } else { Value::Null }},
    })
}

async fn patch_node(kube: &Kube, name: &str, patch: &Value) -> DriverResult<Value> {
    kube.merge_patch("v1", "Node", None, name, patch)
        .await?
        .ok_or_else(|| {
            DriverError::Permanent(format!(
                "The node {name} disappeared from its cluster while being rebooted."
            ))
        })
}

/// The machine rebooted: running on the same node.
fn rebooted(m: &Machine, node: &str) -> Progress {
    let mut obs = ClusterObservation::phase(Phase::Complete);
    obs.machines.insert(
        m.uuid,
        MachineObservation {
            provider_id: m.status.provider_id.clone(),
            node_ref: Some(node.to_string()),
            addresses: m.status.addresses.clone(),
            versions: m.status.versions.clone(),
            error_reason: None,
            error_message: None,
        },
    );
    Progress::Done(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drain_leaves_daemonset_mirror_and_finished_pods() {
        let plain = json!({"metadata": {"name": "web"}, "status": {"phase": "Running"}});
        let daemon = json!({"metadata": {"name": "cni", "ownerReferences": [{"kind": "DaemonSet", "name": "calico"}]}});
        let mirror = json!({"metadata": {"name": "etcd", "annotations": {MIRROR: "x"}}});
        let done = json!({"metadata": {"name": "job"}, "status": {"phase": "Succeeded"}});
        assert!(evicted_by_drain(&plain));
        assert!(!evicted_by_drain(&daemon));
        assert!(!evicted_by_drain(&mirror));
        assert!(!evicted_by_drain(&done));
    }

    #[test]
    fn an_empty_reboot_image_or_a_zero_timeout_is_refused_by_name() {
        let ok = crate::config::KubernetesDriverSection::default();
        assert_eq!(check_settings(&ok), Ok(()));
        let no_image = crate::config::KubernetesDriverSection {
            reboot_image: " ".into(),
            ..ok.clone()
        };
        assert_eq!(
            check_settings(&no_image),
            Err("[kubernetes_driver] reboot_image: must not be empty".to_string())
        );
        let no_time = crate::config::KubernetesDriverSection {
            reboot_timeout: 0,
            ..ok
        };
        assert_eq!(
            check_settings(&no_time),
            Err("[kubernetes_driver] reboot_timeout: must be at least 1 second".to_string())
        );
    }

    #[test]
    fn the_end_of_a_reboot_keeps_a_node_cordoned_by_someone_else_cordoned() {
        assert_eq!(end_patch(false)["spec"]["unschedulable"], Value::Null);
        assert_eq!(end_patch(true)["spec"]["unschedulable"], true);
    }
}
