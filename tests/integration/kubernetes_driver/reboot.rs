//! A machine rebooted by the kubernetes driver through its workload cluster's own API, as kured
//! and `kubectl drain` do it: the Node's boot ID recorded and the Node cordoned in one patch,
//! its pods evicted (DaemonSet and mirror pods left; a PodDisruptionBudget's 429 asked again),
//! one reboot Pod pinned to it, and once the Node is back Ready with a new boot ID the Pod
//! deleted, the Node uncordoned and the annotations gone. A driver made anew mid-way goes on;
//! a node that never comes back ends with the node and the step; a master waits for the others.

use super::*;
use fleetyard::domain::JobId;
use fleetyard::drivers::MachineAction;

pub(super) const BOOT_ID: &str = "fleetyard.openstack.org/reboot-boot-id";
const STARTED: &str = "fleetyard.openstack.org/reboot-started-at";
const REQUEST: &str = "fleetyard.openstack.org/reboot-request";
pub(super) const LAST_REBOOT: &str = "fleetyard.openstack.org/last-reboot";

/// The nodes of the cluster of `ctx_with_machines` as its workload cluster has them: three
/// masters and two workers, Ready, each with its boot ID; on every worker a Deployment's pod,
/// a DaemonSet's pod, a mirror pod and a finished Job's pod.
pub(super) fn put_workload(workload: &FakeKube, cluster: &str, deployment: &str) {
    let masters = (0..3).map(|i| (format!("node-{cluster}-control-plane-m{i}"), true));
    let workers = (0..2).map(|i| (format!("node-{deployment}-w{i}"), false));
    for (node, master) in masters.chain(workers) {
        let mut labels = json!({"kubernetes.io/hostname": node});
        if master {
            labels["node-role.kubernetes.io/control-plane"] = json!("");
        }
        workload.put(
            &format!("/api/v1/nodes/{node}"),
            json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"labels": labels},
                "spec": {"providerID": format!("openstack:///server-{node}")},
                "status": {
                    "nodeInfo": {"bootID": format!("boot-{node}-0"), "kubeletVersion": "v1.30.2"},
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                },
            }),
        );
        if master {
            continue;
        }
        let pod = |ns: &str, name: &str, extra: Value, phase: &str| {
            let mut metadata = json!({"name": format!("{name}-{node}"), "namespace": ns});
            if let Value::Object(e) = extra {
                for (k, v) in e {
                    metadata[k] = v;
                }
            }
            workload.put(
                &format!("/api/v1/namespaces/{ns}/pods/{name}-{node}"),
                json!({
                    "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                    "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
                    "status": {"phase": phase},
                }),
            );
        };
        pod(
            "shop",
            "web",
            json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4f", "controller": true}]}),
            "Running",
        );
        pod(
            "kube-system",
            "calico-node",
            json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "calico-node", "controller": true}]}),
            "Running",
        );
        pod(
            "kube-system",
            "static-proxy",
            json!({"annotations": {"kubernetes.io/config.mirror": "c0ffee"}}),
            "Running",
        );
        pod(
            "shop",
            "report",
            json!({"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "report", "controller": true}]}),
            "Succeeded",
        );
    }
}

pub(super) struct Reboot {
    pub env: Env,
    pub workload: FakeKube,
    pub c: ClusterContext,
}

impl Reboot {
    async fn new() -> Reboot {
        let (env, mut c, _) = super::machine_ops::replace_env("v1beta1").await;
        let workload = FakeKube::start().await;
        put_kubeconfig_secret(&env.mgmt, C1, &workload.kubeconfig(None));
        put_workload(&workload, C1_NAME, WORKER_MD);
        c.job = Some(JobId::new());
        Reboot { env, workload, c }
    }

    fn worker(&self) -> Machine {
        self.c.machines[4].clone()
    }

    fn node(&self, name: &str) -> Value {
        self.workload
            .get(&format!("/api/v1/nodes/{name}"))
            .expect("node")
    }

    /// `(method, path)` of the workload cluster's writes since the last clear.
    fn writes(&self) -> Vec<(String, String)> {
        self.workload
            .writes()
            .into_iter()
            .map(|r| (r.method, r.path))
            .collect()
    }

    async fn step(&self, driver: &KubernetesDriver, m: &Machine) -> Result<Progress, DriverError> {
        driver.reboot_machine(&self.c, m).await
    }
}

fn started(p: Result<Progress, DriverError>) {
    assert!(matches!(p, Ok(Progress::Started(_))), "{p:?}");
}

const W1: &str = "node-fy-746e779a751a456b-default-worker-a1b2c3-w1";

#[tokio::test]
async fn a_worker_is_cordoned_drained_rebooted_by_one_pod_and_uncordoned() {
    let r = Reboot::new().await;
    let m = r.worker();
    assert_eq!(m.status.node_ref.as_deref(), Some(W1));
    assert_eq!(
        r.env.driver.check_machine_action(&m, MachineAction::Reboot),
        Ok(())
    );
    let pod = format!(
        "/api/v1/namespaces/kube-system/pods/fleetyard-reboot-{}",
        m.uuid
    );

    // 1 and 2: cordoned with the boot ID in one patch; the Deployment's pod evicted.
    started(r.step(&r.env.driver, &m).await);
    let patches: Vec<Value> = r
        .workload
        .writes()
        .into_iter()
        .filter(|w| w.method == "PATCH")
        .map(|w| {
            assert_eq!(w.path, format!("/api/v1/nodes/{W1}"));
            assert_eq!(w.content_type, "application/merge-patch+json");
            w.body.expect("body")
        })
        .collect();
    assert_eq!(patches.len(), 1, "{patches:?}");
    let mut patch = patches[0].clone();
    let began = patch["metadata"]["annotations"][STARTED]
        .as_str()
        .expect("the start")
        .to_string();
    assert!(chrono::DateTime::parse_from_rfc3339(&began).is_ok());
    patch["metadata"]["annotations"]
        .as_object_mut()
        .expect("annotations")
        .remove(STARTED);
    assert_eq!(
        patch,
        json!({"metadata": {"annotations": {BOOT_ID: format!("boot-{W1}-0"), REQUEST: r.c.job.map(|j| j.to_string())}},
               "spec": {"unschedulable": true}})
    );
    let evictions: Vec<(String, String)> = r
        .writes()
        .into_iter()
        .filter(|(m, _)| m == "POST")
        .collect();
    assert_eq!(
        evictions,
        [(
            "POST".to_string(),
            format!("/api/v1/namespaces/shop/pods/web-{W1}/eviction")
        )],
        "DaemonSet, mirror and finished pods stay"
    );
    let eviction = r
        .workload
        .writes()
        .into_iter()
        .find(|w| w.method == "POST")
        .and_then(|w| w.body)
        .expect("an eviction");
    assert_eq!(
        eviction,
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": format!("web-{W1}"), "namespace": "shop"}})
    );
    assert!(r.workload.get(&pod).is_none(), "no reboot before the drain");

    // A conductor restarted: a driver made anew goes on from the node. 3: the reboot Pod.
    let again = KubernetesDriver::new(KubernetesDriverSection {
        kubeconfig: r.env.dir.0.join("kubeconfig").display().to_string(),
        request_timeout: 5,
        ..KubernetesDriverSection::default()
    })
    .expect("driver");
    r.workload.clear_requests();
    started(r.step(&again, &m).await);
    assert_eq!(
        r.writes(),
        [(
            "POST".to_string(),
            "/api/v1/namespaces/kube-system/pods".to_string()
        )]
    );
    let made = r.workload.writes()[0].body.clone().expect("the pod");
    assert_eq!(
        made["spec"],
        json!({
            "nodeName": W1, "hostPID": true, "restartPolicy": "Never",
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}], "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "reboot", "image": "busybox:1.36",
                "command": ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", "systemctl", "reboot"],
                "securityContext": {"privileged": true}}],
        })
    );
    assert_eq!(r.workload.reboots(), 1);

    // 4: back with a new boot ID and Ready: the Pod goes, the node is uncordoned.
    r.workload.clear_requests();
    let Progress::Done(obs) = r.step(&again, &m).await.expect("done") else {
        panic!("the reboot is done")
    };
    assert_eq!(obs.machines[&m.uuid].node_ref.as_deref(), Some(W1));
    assert_eq!(obs.machines[&m.uuid].provider_id, m.status.provider_id);
    let node = r.node(W1);
    assert!(node["spec"]["unschedulable"].is_null(), "{node}");
    assert_eq!(
        node["metadata"]["annotations"],
        json!({LAST_REBOOT: r.c.job.map(|j| j.to_string())}),
        "only the last reboot's job stays"
    );
    assert_eq!(node["status"]["nodeInfo"]["bootID"], format!("boot-{W1}-1"));
    assert!(r.workload.get(&pod).is_none(), "the reboot Pod is deleted");
    assert_eq!(
        r.writes(),
        [
            ("DELETE".to_string(), pod.clone()),
            ("PATCH".to_string(), format!("/api/v1/nodes/{W1}")),
        ]
    );
    for (ns, name) in [
        ("kube-system", "calico-node"),
        ("kube-system", "static-proxy"),
        ("shop", "report"),
    ] {
        assert!(r
            .workload
            .get(&format!("/api/v1/namespaces/{ns}/pods/{name}-{W1}"))
            .is_some());
    }

    // The answer lost, the job asked again: done, nothing sent, no second reboot.
    r.workload.clear_requests();
    assert_eq!(r.step(&r.env.driver, &m).await, Ok(Progress::Done(obs)));
    assert!(r.writes().is_empty(), "{:?}", r.writes());
    assert_eq!(r.workload.reboots(), 1);
    let other = r.node(&format!("node-{WORKER_MD}-w0"));
    assert!(other["metadata"]["annotations"].is_null(), "{other}");
}

#[tokio::test]
async fn a_disruption_budgets_429_is_asked_again_and_the_reboot_goes_on() {
    let r = Reboot::new().await;
    let m = r.worker();
    r.workload.block_evictions(1);
    started(r.step(&r.env.driver, &m).await);
    let refused: Vec<u16> = r
        .workload
        .requests()
        .into_iter()
        .filter(|q| q.path.ends_with("/eviction"))
        .map(|q| q.status)
        .collect();
    assert_eq!(refused, [429]);
    assert_eq!(r.node(W1)["spec"]["unschedulable"], true);
    started(r.step(&r.env.driver, &m).await);
    assert!(r
        .workload
        .get(&format!("/api/v1/namespaces/shop/pods/web-{W1}"))
        .is_none());
    assert_eq!(r.workload.reboots(), 0, "not before the pod is gone");
    started(r.step(&r.env.driver, &m).await);
    assert_eq!(r.workload.reboots(), 1);
    assert!(matches!(
        r.step(&r.env.driver, &m).await,
        Ok(Progress::Done(_))
    ));
    assert!(r.node(W1)["spec"]["unschedulable"].is_null());
}

#[tokio::test]
async fn a_node_that_never_comes_back_fails_the_reboot_with_the_node_and_the_step() {
    let r = Reboot::new().await;
    let m = r.worker();
    r.workload.nodes_stay_down();
    for _ in 0..3 {
        started(r.step(&r.env.driver, &m).await);
    }
    assert_eq!(r.workload.reboots(), 1);
    r.workload.update(
        &format!("/api/v1/nodes/{W1}"),
        json!({"metadata": {"annotations": {STARTED: "2026-01-01T00:00:00+00:00"}}}),
    );
    let text = permanent(r.step(&r.env.driver, &m).await);
    assert_eq!(
        text,
        format!(
            "The reboot of machine default-worker-2 did not finish within 1800 seconds ([kubernetes_driver] reboot_timeout), at the step where the node {W1} had not rebooted (its reboot Pod kube-system/fleetyard-reboot-{} is Failed); the node was uncordoned.",
            m.uuid
        )
    );
    let node = r.node(W1);
    assert!(node["spec"]["unschedulable"].is_null(), "{node}");
    assert!(
        node["metadata"]["annotations"]
            .as_object()
            .is_none_or(|a| a.is_empty()),
        "{node}"
    );
    assert!(r
        .workload
        .get(&format!(
            "/api/v1/namespaces/kube-system/pods/fleetyard-reboot-{}",
            m.uuid
        ))
        .is_none());
}

#[tokio::test]
async fn a_drain_a_disruption_budget_holds_past_the_timeout_fails_naming_the_pod_and_the_budget() {
    let r = Reboot::new().await;
    let m = r.worker();
    r.workload.block_evictions(10);
    started(r.step(&r.env.driver, &m).await);
    r.workload.update(
        &format!("/api/v1/nodes/{W1}"),
        json!({"metadata": {"annotations": {STARTED: "2026-01-01T00:00:00+00:00"}}}),
    );
    let text = permanent(r.step(&r.env.driver, &m).await);
    assert_eq!(
        text,
        format!(
            "The reboot of machine default-worker-2 did not finish within 1800 seconds ([kubernetes_driver] reboot_timeout), at the step where the node {W1} was being drained (shop/web-{W1} left; eviction refused: shop/web-{W1}: Cannot evict pod as it would violate the pod's disruption budget.); the node was uncordoned."
        )
    );
    assert_eq!(r.workload.reboots(), 0, "no reboot once the time is up");
    let node = r.node(W1);
    assert!(node["spec"]["unschedulable"].is_null(), "{node}");
    assert!(r
        .workload
        .get(&format!("/api/v1/namespaces/shop/pods/web-{W1}"))
        .is_some());
}

#[tokio::test]
async fn a_master_is_rebooted_only_while_every_other_master_is_ready() {
    let r = Reboot::new().await;
    let master = r.c.machines[0].clone();
    let m0 = format!("node-{C1_NAME}-control-plane-m0");
    let m2 = format!("node-{C1_NAME}-control-plane-m2");
    assert_eq!(master.status.node_ref.as_deref(), Some(m0.as_str()));
    assert_eq!(
        r.env
            .driver
            .check_machine_action(&master, MachineAction::Reboot),
        Ok(())
    );
    r.workload.update(
        &format!("/api/v1/nodes/{m2}"),
        json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}}),
    );
    r.workload.clear_requests();
    let text = permanent(r.step(&r.env.driver, &master).await);
    assert_eq!(
        text,
        format!("The master node {m0} is not rebooted while the master node {m2} is not Ready: masters are rebooted one at a time, so that etcd keeps its quorum.")
    );
    assert!(r.writes().is_empty(), "nothing changed: {:?}", r.writes());

    r.workload.update(
        &format!("/api/v1/nodes/{m2}"),
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    // No pod to evict: cordoned and its reboot Pod made at once.
    started(r.step(&r.env.driver, &master).await);
    assert_eq!(r.workload.reboots(), 1);
    assert!(matches!(
        r.step(&r.env.driver, &master).await,
        Ok(Progress::Done(_))
    ));
    assert_eq!(r.workload.reboots(), 1);
}

#[tokio::test]
async fn a_machine_without_a_node_has_nothing_to_reboot() {
    let env = env().await;
    let c = ctx_with_machines(ClusterStatus::CreateComplete);
    assert_eq!(
        env.driver
            .check_machine_action(&c.machines[4], MachineAction::Reboot),
        Err(
            "The machine default-worker-2 has no node yet, so there is nothing to reboot."
                .to_string()
        )
    );
    assert!(env.mgmt.requests().is_empty());
}
