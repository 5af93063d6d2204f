//! The kubernetes driver speaking Cluster API `v1beta2` (`[kubernetes_driver]
//! cluster_api_version = v1beta2`): the objects at the `v1beta2` paths in their `v1beta2`
//! shapes, `v1beta2` status read back, the whole create / resize / replace / upgrade / delete
//! flow, and every write of both versions held to that version's published types.

use super::*;
use fleetyard::drivers::ClusterObservation;

const CAPI2: &str = "/apis/cluster.x-k8s.io/v1beta2";
const KCP2: &str = "/apis/controlplane.cluster.x-k8s.io/v1beta2";

/// The management cluster and a driver writing Cluster API `version`.
pub(super) async fn env_at(version: &str) -> Env {
    let env = env().await;
    let driver = KubernetesDriver::new(KubernetesDriverSection {
        kubeconfig: env.dir.0.join("kubeconfig").display().to_string(),
        request_timeout: 5,
        cluster_api_version: version.into(),
        ..KubernetesDriverSection::default()
    })
    .expect("driver");
    Env { driver, ..env }
}

/// [`inject_provisioned`] in the status shapes of Cluster API `version`.
pub(super) fn inject_provisioned_at(mgmt: &FakeKube, version: &str) {
    if version == "v1beta1" {
        return inject_provisioned(mgmt);
    }
    mgmt.update(
        &format!("{CAPI2}/namespaces/{NS}/clusters/{C1_NAME}"),
        json!({
            "spec": {"controlPlaneEndpoint": {"host": "203.0.113.10", "port": 6443}},
            "status": {
                "phase": "Provisioned",
                "initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true},
                "conditions": [
                    {"type": "Available", "status": "True"},
                    {"type": "ControlPlaneAvailable", "status": "True"},
                ],
            },
        }),
    );
    mgmt.update(
        &format!("{KCP2}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane"),
        json!({"status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "upToDateReplicas": 3, "version": "v1.30.2"}}),
    );
    mgmt.update(
        &format!("{CAPI2}/namespaces/{NS}/machinedeployments/{WORKER_MD}"),
        json!({"status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "upToDateReplicas": 2, "phase": "Running"}}),
    );
    for i in 0..3 {
        put_machine_v2(
            mgmt,
            &format!("{C1_NAME}-control-plane-m{i}"),
            None,
            &format!("10.0.0.{}", 10 + i),
        );
    }
    for i in 0..2 {
        put_machine_v2(
            mgmt,
            &format!("{WORKER_MD}-w{i}"),
            Some(WORKER_MD),
            &format!("10.0.0.{}", 20 + i),
        );
    }
}

fn put_machine_v2(mgmt: &FakeKube, name: &str, deployment: Option<&str>, address: &str) {
    let mut labels = json!({"cluster.x-k8s.io/cluster-name": C1_NAME});
    match deployment {
        Some(md) => labels["cluster.x-k8s.io/deployment-name"] = json!(md),
        None => labels["cluster.x-k8s.io/control-plane"] = json!(""),
    }
    mgmt.put(
        &format!("{CAPI2}/namespaces/{NS}/machines/{name}"),
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"labels": labels, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"clusterName": C1_NAME, "providerID": format!("openstack:///server-{name}")},
            "status": {
                "phase": "Running",
                "nodeRef": {"name": format!("node-{name}")},
                "addresses": [{"type": "InternalIP", "address": address}],
                "conditions": [{"type": "NodeHealthy", "status": "True"}, {"type": "Ready", "status": "True"}],
            },
        }),
    );
}

#[tokio::test]
async fn v1beta2_create_writes_the_v1beta2_shapes_at_the_v1beta2_paths() {
    let env = env_at("v1beta2").await;
    env.driver
        .create_cluster(&ctx(ClusterStatus::CreateInProgress))
        .await
        .expect("create");
    let requests = env.mgmt.requests();
    let sent = applies(&requests);
    let kinds: Vec<(String, String)> = sent.iter().map(|r| kind_and_name(r)).collect();
    assert_eq!(kinds.len(), 7, "{kinds:?}");
    for r in &sent {
        let body = r.body.as_ref().expect("body");
        let api = body["apiVersion"].as_str().unwrap_or_default();
        if api.contains("cluster.x-k8s.io") && !api.starts_with("infrastructure.") {
            assert!(api.ends_with("/v1beta2"), "{api}");
            assert!(r.path.contains("/v1beta2/"), "{}", r.path);
        }
    }
    let cluster = body_of(&sent, "Cluster");
    assert_eq!(cluster["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(
        cluster["spec"]["controlPlaneRef"],
        json!({"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": format!("{C1_NAME}-control-plane")})
    );
    assert_eq!(
        cluster["spec"]["infrastructureRef"],
        json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackCluster", "name": C1_NAME})
    );
    let kcp = body_of(&sent, "KubeadmControlPlane");
    assert_eq!(
        kcp["spec"]["machineTemplate"]["spec"]["infrastructureRef"]["apiGroup"],
        "infrastructure.cluster.x-k8s.io"
    );
    assert_eq!(
        kcp["spec"]["rollout"],
        json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}})
    );
    assert_eq!(
        kcp["spec"]["kubeadmConfigSpec"]["clusterConfiguration"]["apiServer"]["extraArgs"],
        json!([{"name": "cloud-provider", "value": "external"}])
    );
    let md = body_of(&sent, "MachineDeployment");
    assert_eq!(
        md["spec"]["rollout"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    );
    assert!(md["spec"]["strategy"].is_null());
    assert_eq!(
        md["spec"]["template"]["spec"]["bootstrap"]["configRef"]["apiGroup"],
        "bootstrap.cluster.x-k8s.io"
    );
    let kct = body_of(&sent, "KubeadmConfigTemplate");
    let args = &kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]
        ["kubeletExtraArgs"];
    assert_eq!(
        args[0],
        json!({"name": "cloud-provider", "value": "external"})
    );
    assert!(
        args.as_array()
            .is_some_and(|a| a.iter().any(|x| x["name"] == "node-labels")),
        "{args}"
    );
    assert_eq!(
        KubernetesDriver::new(KubernetesDriverSection {
            kubeconfig: env.dir.0.join("kubeconfig").display().to_string(),
            cluster_api_version: "v1alpha3".into(),
            ..KubernetesDriverSection::default()
        })
        .expect_err("unknown version"),
        "[kubernetes_driver] cluster_api_version: unknown version 'v1alpha3' (known: v1beta1, v1beta2)"
    );
}

#[tokio::test]
async fn v1beta2_create_status_resize_replace_upgrade_and_delete() {
    let (env, mut c, m) = super::machine_ops::replace_env("v1beta2").await;
    // Read back from v1beta2 status: complete, versions, addresses, machines paired.
    c.cluster.status = ClusterStatus::UpdateInProgress;
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(obs.phase, Phase::Complete, "{obs:?}");
    assert_eq!(obs.coe_version.as_deref(), Some("v1.30.2"));
    assert_eq!(
        obs.nodegroups[WORKER_NG].node_addresses,
        ["10.0.0.20", "10.0.0.21"]
    );
    assert_eq!(obs.machines.len(), 5);
    let health = env
        .driver
        .cluster_health(&ctx_with_machines(ClusterStatus::CreateComplete))
        .await
        .expect("health")
        .expect("some");
    assert_eq!(health.healthy, Some(true), "{:?}", health.reason);

    // A failure v1beta2 keeps under status.deprecated.v1beta1 still fails the operation.
    let w0 = format!("{CAPI2}/namespaces/{NS}/machines/{WORKER_MD}-w0");
    env.mgmt.update(
        &w0,
        json!({"status": {"deprecated": {"v1beta1": {"failureReason": "InsufficientResources", "failureMessage": "Quota exceeded"}}}}),
    );
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(
        obs.phase,
        Phase::Failed(format!("Cluster API reports that the machine {WORKER_MD}-w0 of node group default-worker failed (InsufficientResources): Quota exceeded."))
    );
    env.mgmt
        .update(&w0, json!({"status": {"deprecated": null}}));

    // The replacement, step by step, at the v1beta2 paths.
    env.mgmt.clear_requests();
    super::machine_ops::replace_flow(&env, &c, &m, "v1beta2").await;

    // Resize marks the named Machine and sets replicas, at the v1beta2 paths.
    env.mgmt.clear_requests();
    let resize = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: 1,
        nodes_to_remove: vec![format!("node-{WORKER_MD}-w0")],
    };
    env.driver
        .resize_cluster(&c, &resize)
        .await
        .expect("resize");
    let paths: Vec<String> = env.mgmt.writes().iter().map(|w| w.path.clone()).collect();
    assert_eq!(
        paths,
        [
            format!("{CAPI2}/namespaces/{NS}/machines/{WORKER_MD}-w0"),
            format!("{CAPI2}/namespaces/{NS}/machinedeployments/{WORKER_MD}"),
        ]
    );

    // Upgrade reads the control plane's version at v1beta2 and rolls both groups.
    let newer = template("v1.31.0", "ubuntu-2204-kube-v1.31.0");
    env.driver
        .upgrade_cluster(&c, &newer, 1, None)
        .await
        .expect("upgrade");
    let kcp = env
        .mgmt
        .get(&format!(
            "{KCP2}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane"
        ))
        .expect("kcp");
    assert_eq!(kcp["spec"]["version"], "v1.31.0");

    // Delete: the v1beta2 Cluster goes, then every labelled object.
    let deleting = ctx(ClusterStatus::DeleteInProgress);
    env.mgmt.clear_requests();
    let Progress::Started(_) = env.driver.delete_cluster(&deleting).await.expect("delete") else {
        panic!("the fake has no finalizers, yet a delete converges by polling")
    };
    assert_eq!(
        env.mgmt
            .writes()
            .iter()
            .map(|w| (w.method.clone(), w.path.clone()))
            .collect::<Vec<_>>(),
        [(
            "DELETE".to_string(),
            format!("{CAPI2}/namespaces/{NS}/clusters/{C1_NAME}")
        )]
    );
    let obs = env.driver.cluster_status(&deleting).await.expect("status");
    assert_eq!(obs.phase, Phase::Gone);
    let left: Vec<String> = env
        .mgmt
        .objects()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| !p.contains("/machines/"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        env.driver.delete_cluster(&deleting).await.expect("retry"),
        Progress::Done(ClusterObservation::phase(Phase::Gone))
    );
}

/// Every Cluster API write of one version's whole flow: create, status, resize with
/// `nodes_to_remove`, a master resize, a replacement with a new flavor, an upgrade and a new
/// node group.
async fn writes_of_a_whole_flow(version: &str) -> Vec<Recorded> {
    let (env, mut c, m) = super::machine_ops::replace_env(version).await;
    let mut group = c.clone();
    group.nodegroups[1].flavor_id = Some("m1.xlarge".into());
    env.driver
        .replace_machine(&group, &m)
        .await
        .expect("replace");
    let resize = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: 1,
        nodes_to_remove: vec!["default-worker-1".into()],
    };
    env.driver
        .resize_cluster(&c, &resize)
        .await
        .expect("resize");
    let five = Resize {
        nodegroup: MASTER_NG.into(),
        node_count: 5,
        nodes_to_remove: vec![],
    };
    env.driver
        .resize_cluster(&c, &five)
        .await
        .expect("master resize");
    let newer = template("v1.31.0", "ubuntu-2204-kube-v1.31.0");
    env.driver
        .upgrade_cluster(&c, &newer, 2, None)
        .await
        .expect("upgrade");
    let extra = nodegroup(
        "b1b2c3d4-3333-4c6a-a0c5-0d8c5d0b2d33",
        &c.cluster,
        "extra",
        "worker",
        2,
        0,
        None,
    );
    c.nodegroups.push(extra.clone());
    env.driver
        .create_nodegroup(&c, &extra)
        .await
        .expect("node group create");
    // The create's writes were cleared by `replace_env`: make them again (idempotent).
    env.driver.create_cluster(&c).await.expect("create again");
    env.mgmt.requests()
}

#[tokio::test]
async fn every_cluster_api_object_the_driver_writes_fits_the_published_types_of_either_version() {
    for version in ["v1beta1", "v1beta2"] {
        let requests = writes_of_a_whole_flow(version).await;
        let (checked, findings) = type_findings(&requests);
        assert!(
            checked >= 14,
            "{version}: only {checked} Cluster API writes were checked"
        );
        assert!(findings.is_empty(), "{version}:\n{}", findings.join("\n"));
        let other = if version == "v1beta1" {
            "v1beta2"
        } else {
            "v1beta1"
        };
        let strays: Vec<&str> = requests
            .iter()
            .filter(|r| r.path.contains("cluster.x-k8s.io/") && !r.path.contains("infrastructure."))
            .map(|r| r.path.as_str())
            .filter(|p| p.contains(&format!("/{other}/")))
            .collect();
        assert!(
            strays.is_empty(),
            "{version} driver used {other}: {strays:?}"
        );
    }
}
