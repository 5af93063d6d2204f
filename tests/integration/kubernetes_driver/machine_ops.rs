//! One machine's operations with the kubernetes driver: a worker replaced new-first (the
//! MachineDeployment grows by one, the new Machine runs, exactly the old Machine is marked
//! for deletion and the group shrinks back), idempotent under retry, with the group's current
//! templates; and the refusals Cluster API's model makes (a version or image per Machine, a
//! master replaced alone), each with its reason before anything is sent. Reboots: `reboot.rs`.

use super::*;
use fleetyard::domain::machine::{ChangeMode, KubeVersion};
use fleetyard::drivers::MachineAction;

const SURGE_FOR: &str = "fleetyard/surge-for";
const REPLACES: &str = "fleetyard/replaces";

/// `(method, last path segment, body)` of every write since the last clear.
fn summary(mgmt: &FakeKube) -> Vec<(String, String, Value)> {
    mgmt.writes()
        .into_iter()
        .map(|r| {
            (
                r.method.clone(),
                r.path.rsplit('/').next().unwrap_or_default().to_string(),
                r.body.clone().unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn annotations(body: Value) -> Value {
    json!({"metadata": {"annotations": body}})
}

/// A provisioned cluster (Cluster API `version`) whose machines were read back; the second
/// worker is returned.
pub(super) async fn replace_env(version: &str) -> (Env, ClusterContext, Machine) {
    let env = super::v1beta2::env_at(version).await;
    let mut c = ctx_with_machines(ClusterStatus::CreateComplete);
    env.driver.create_cluster(&c).await.expect("create");
    super::v1beta2::inject_provisioned_at(&env.mgmt, version);
    let obs = env.driver.cluster_status(&c).await.expect("status");
    remember(&mut c, &obs.machines);
    let m = c.machines[4].clone();
    assert_eq!(
        m.status.provider_id.as_deref(),
        Some(format!("openstack:///server-{WORKER_MD}-w1").as_str())
    );
    env.mgmt.clear_requests();
    (env, c, m)
}

/// Runs a whole replacement of `m` (the worker on `w1`) on a management cluster speaking
/// Cluster API `version`, as Cluster API's controllers would answer it, asserting each step's
/// writes.
pub(super) async fn replace_flow(env: &Env, c: &ClusterContext, m: &Machine, version: &str) {
    let base = format!("/apis/cluster.x-k8s.io/{version}");
    let machine_path = |n: &str| format!("{base}/namespaces/{NS}/machines/{WORKER_MD}-{n}");
    let md_path = format!("{base}/namespaces/{NS}/machinedeployments/{WORKER_MD}");
    let server = m.status.provider_id.clone().expect("server");

    // 1. The surge: the old Machine is tagged and the group grows by one.
    let progress = env.driver.replace_machine(c, m).await.expect("replace");
    assert!(matches!(progress, Progress::Started(_)), "{progress:?}");
    assert_eq!(
        summary(&env.mgmt),
        [
            (
                "PATCH".to_string(),
                format!("{WORKER_MD}-w1"),
                annotations(json!({SURGE_FOR: m.uuid.to_string()}))
            ),
            (
                "PATCH".to_string(),
                WORKER_MD.to_string(),
                json!({"spec": {"replicas": 3}})
            ),
        ]
    );

    // 2. Asked again (a conductor restarted): the surge is there, nothing is sent.
    env.mgmt.clear_requests();
    let progress = env.driver.replace_machine(c, m).await.expect("again");
    assert!(matches!(progress, Progress::Started(_)));
    assert!(
        summary(&env.mgmt).is_empty(),
        "no second surge: {:?}",
        summary(&env.mgmt)
    );

    // 3. Cluster API made the new Machine: it is claimed, and waited for.
    env.mgmt.put(
        &machine_path("w2"),
        json!({
            "apiVersion": format!("cluster.x-k8s.io/{version}"),
            "kind": "Machine",
            "metadata": {
                "creationTimestamp": "2026-01-02T00:00:00Z",
                "labels": {"cluster.x-k8s.io/cluster-name": C1_NAME, "cluster.x-k8s.io/deployment-name": WORKER_MD},
            },
            "spec": {"clusterName": C1_NAME},
            "status": {"phase": "Provisioning"},
        }),
    );
    env.mgmt.clear_requests();
    let progress = env.driver.replace_machine(c, m).await.expect("claim");
    assert!(matches!(progress, Progress::Started(_)));
    assert_eq!(
        summary(&env.mgmt),
        [(
            "PATCH".to_string(),
            format!("{WORKER_MD}-w2"),
            annotations(json!({REPLACES: server}))
        )]
    );

    // 4. The new Machine runs: exactly the old one is marked, the group shrinks back.
    env.mgmt.update(
        &machine_path("w2"),
        json!({
            "spec": {"providerID": "openstack:///server-new"},
            "status": {"phase": "Running", "nodeRef": {"kind": "Node", "name": "node-new"},
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.29"}]},
        }),
    );
    env.mgmt.clear_requests();
    let Progress::Done(obs) = env.driver.replace_machine(c, m).await.expect("done") else {
        panic!("the replacement is done")
    };
    assert_eq!(
        summary(&env.mgmt),
        [
            (
                "PATCH".to_string(),
                format!("{WORKER_MD}-w1"),
                annotations(json!({DELETE_MACHINE_ANNOTATION: "yes"}))
            ),
            (
                "PATCH".to_string(),
                WORKER_MD.to_string(),
                json!({"spec": {"replicas": 2}})
            ),
        ]
    );
    let seen = &obs.machines[&m.uuid];
    assert_eq!(seen.provider_id.as_deref(), Some("openstack:///server-new"));
    assert_eq!(seen.node_ref.as_deref(), Some("node-new"));
    assert_eq!(env.mgmt.get(&md_path).expect("md")["spec"]["replicas"], 2);
    let w0 = env.mgmt.get(&machine_path("w0")).expect("w0");
    assert!(
        w0["metadata"]["annotations"].is_null(),
        "the other worker is untouched: {w0}"
    );

    // 5. Asked again after it finished (the answer was lost), and once the old one is gone.
    env.mgmt.clear_requests();
    let again = env.driver.replace_machine(c, m).await.expect("again");
    assert_eq!(again, Progress::Done(obs.clone()));
    env.mgmt.remove(&machine_path("w1"));
    let gone = env.driver.replace_machine(c, m).await.expect("gone");
    assert_eq!(gone, Progress::Done(obs));
    assert!(summary(&env.mgmt).is_empty(), "{:?}", summary(&env.mgmt));
}

#[tokio::test]
async fn replace_surges_one_machine_then_deletes_exactly_the_old_one() {
    let (env, c, m) = replace_env("v1beta1").await;
    replace_flow(&env, &c, &m, "v1beta1").await;
    // The update of a failed machine with its own spec again is the same replacement.
    assert_eq!(
        env.driver.plan_machine_change(&m, &m.spec),
        Ok(ChangeMode::Replace)
    );
}

#[tokio::test]
async fn a_replacement_makes_the_new_machine_from_the_groups_current_flavor_and_image() {
    let (env, mut c, m) = replace_env("v1beta1").await;
    let md_path = format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}");
    let old_template = env.mgmt.get(&md_path).expect("md")["spec"]["template"]["spec"]
        ["infrastructureRef"]["name"]
        .clone();
    c.nodegroups[1].flavor_id = Some("m1.xlarge".into());
    c.nodegroups[1].image_id = Some("ubuntu-2404-kube-v1.30.2".into());

    let progress = env.driver.replace_machine(&c, &m).await.expect("replace");
    assert!(matches!(progress, Progress::Started(_)));
    let requests = env.mgmt.requests();
    let kinds: Vec<String> = applies(&requests)
        .iter()
        .map(|r| kind_and_name(r).0)
        .collect();
    assert_eq!(
        kinds,
        [
            "KubeadmConfigTemplate",
            "OpenStackMachineTemplate",
            "MachineDeployment"
        ]
    );
    let md = env.mgmt.get(&md_path).expect("md");
    let spec = &md["spec"]["template"]["spec"];
    let new_template = spec["infrastructureRef"]["name"].clone();
    assert_ne!(new_template, old_template, "a new machine template");
    assert_eq!(spec["version"], "v1.30.2", "the version it runs stays");
    assert_eq!(md["spec"]["strategy"]["type"], "OnDelete");
    assert_eq!(md["spec"]["replicas"], 3, "the surge");
    let template = env
        .mgmt
        .get(&format!(
            "{INFRA}/namespaces/{NS}/openstackmachinetemplates/{}",
            new_template.as_str().unwrap_or_default()
        ))
        .expect("the new template");
    assert_eq!(template["spec"]["template"]["spec"]["flavor"], "m1.xlarge");
    assert_eq!(
        template["spec"]["template"]["spec"]["image"],
        json!({"filter": {"name": "ubuntu-2404-kube-v1.30.2"}})
    );

    // Asked again: the MachineDeployment already uses the group's templates.
    env.mgmt.clear_requests();
    env.driver.replace_machine(&c, &m).await.expect("again");
    assert!(applies(&env.mgmt.requests()).is_empty());
    assert_eq!(env.mgmt.get(&md_path).expect("md")["spec"]["replicas"], 3);
}

#[tokio::test]
async fn a_failed_replacement_removes_its_machine_and_undoes_the_surge() {
    let (env, c, m) = replace_env("v1beta1").await;
    env.driver.replace_machine(&c, &m).await.expect("surge");
    let w2 = format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w2");
    env.mgmt.put(
        &w2,
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": C1_NAME, "cluster.x-k8s.io/deployment-name": WORKER_MD}},
            "spec": {"clusterName": C1_NAME},
            "status": {"phase": "Failed", "failureReason": "CreateError", "failureMessage": "No valid host was found."},
        }),
    );
    let text = permanent(env.driver.replace_machine(&c, &m).await);
    assert_eq!(
        text,
        "Cluster API reports that the replacement machine failed (CreateError): No valid host was found."
    );
    let new = env.mgmt.get(&w2).expect("w2");
    assert_eq!(
        new["metadata"]["annotations"][DELETE_MACHINE_ANNOTATION],
        "yes"
    );
    let old = env
        .mgmt
        .get(&format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w1"))
        .expect("w1");
    assert!(old["metadata"]["annotations"][SURGE_FOR].is_null(), "{old}");
    assert!(old["metadata"]["annotations"][DELETE_MACHINE_ANNOTATION].is_null());
    let md = env
        .mgmt
        .get(&format!(
            "{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}"
        ))
        .expect("md");
    assert_eq!(md["spec"]["replicas"], 2);
}

/// What Cluster API cannot do for one machine is refused with its reason, before anything is
/// sent to the management cluster.
#[tokio::test]
async fn per_machine_versions_and_lone_masters_are_refused_with_the_reason() {
    let env = env().await;
    let c = ctx_with_machines(ClusterStatus::CreateComplete);
    let (master, worker) = (&c.machines[0], &c.machines[4]);

    let mut next = worker.spec.clone();
    next.versions.kubelet = Some(KubeVersion::parse("v1.31.4").expect("version"));
    assert_eq!(
        env.driver.plan_machine_change(worker, &next),
        Err("Cluster API sets versions per MachineDeployment, not per Machine: upgrade the node group instead (openstack coe cluster upgrade <cluster> <template> --nodegroup <group>), and Cluster API replaces its machines.".to_string())
    );
    let mut next = master.spec.clone();
    next.versions.kubelet = Some(KubeVersion::parse("v1.31.4").expect("version"));
    assert!(env
        .driver
        .plan_machine_change(master, &next)
        .expect_err("master")
        .starts_with("Cluster API sets the control plane's version on its KubeadmControlPlane"));
    let mut next = worker.spec.clone();
    next.os_image = Some("ubuntu-2404".into());
    assert!(env
        .driver
        .plan_machine_change(worker, &next)
        .expect_err("image")
        .starts_with("Cluster API sets the image and flavor per MachineDeployment"));

    assert_eq!(
        env.driver
            .check_machine_action(worker, MachineAction::Replace),
        Ok(())
    );
    let lone_master = env
        .driver
        .check_machine_action(master, MachineAction::Replace)
        .expect_err("master");
    assert!(
        lone_master.starts_with("Cluster API cannot replace one control plane machine"),
        "{lone_master}"
    );
    assert_eq!(
        permanent(env.driver.replace_machine(&c, master).await),
        lone_master
    );
    assert_eq!(
        permanent(
            env.driver
                .update_machine(&c, worker, ChangeMode::InPlace)
                .await
        ),
        "The kubernetes driver changes nothing on a node in place: Cluster API replaces machines."
    );
    assert!(env.mgmt.requests().is_empty(), "nothing sent");
}

/// A replacement cut off between its steps (the management cluster failing the scale, as a
/// conductor killed there would leave it) resumes from what the management cluster holds: one
/// surge, exactly the old Machine marked, the group back to its size.
#[tokio::test]
async fn a_replacement_cut_off_between_its_steps_resumes_without_a_second_surge() {
    let (env, c, m) = replace_env("v1beta1").await;
    let md_path = format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}");
    let replicas = || env.mgmt.get(&md_path).expect("md")["spec"]["replicas"].clone();
    env.mgmt.fail_next(
        "PATCH",
        "/machinedeployments/",
        503,
        "ServiceUnavailable",
        "etcd leader changed",
    );
    let text = transient(env.driver.replace_machine(&c, &m).await);
    assert!(text.contains("answered 503"), "{text}");
    assert_eq!(replicas(), 2, "tagged, not grown yet");
    for _ in 0..3 {
        env.driver.replace_machine(&c, &m).await.expect("resumed");
        assert_eq!(replicas(), 3, "one surge, however often it is asked");
    }

    env.mgmt.put(
        &format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w2"),
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": C1_NAME, "cluster.x-k8s.io/deployment-name": WORKER_MD}},
            "spec": {"clusterName": C1_NAME, "providerID": "openstack:///server-new"},
            "status": {"phase": "Running", "nodeRef": {"name": "node-new"}},
        }),
    );
    // Claimed, running, the old one marked: then the scale-down fails.
    env.mgmt.fail_next(
        "PATCH",
        "/machinedeployments/",
        503,
        "ServiceUnavailable",
        "etcd leader changed",
    );
    transient(env.driver.replace_machine(&c, &m).await);
    assert_eq!(replicas(), 3, "marked, not shrunk yet");
    let Progress::Done(obs) = env.driver.replace_machine(&c, &m).await.expect("done") else {
        panic!("the replacement is done")
    };
    assert_eq!(replicas(), 2);
    assert_eq!(
        obs.machines[&m.uuid].provider_id.as_deref(),
        Some("openstack:///server-new")
    );
    let marked: Vec<String> = env
        .mgmt
        .objects()
        .into_iter()
        .filter(|(_, o)| o["metadata"]["annotations"][DELETE_MACHINE_ANNOTATION].is_string())
        .map(|(p, _)| p.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(marked, [format!("{WORKER_MD}-w1")]);
}
