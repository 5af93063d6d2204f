//! The kubernetes driver against fake Kubernetes API servers (no real cluster runs here): a
//! management cluster holding the Cluster API objects and the `<cluster>-kubeconfig`
//! Secrets, and for federations a host cluster, the Karmada API server and member clusters.
//! The tests assert the exact requests sent, idempotency on retry and the status mapping.

mod capi_types;
mod control_plane_roll;
mod fake_kube;
mod group_version;
mod machine_ops;
mod reboot;
mod reboot_api;
mod v1beta2;

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine;
use chrono::Utc;
use fake_kube::{FakeKube, Recorded};
use fleetyard::config::{KubernetesDriverSection, Secret};
use fleetyard::domain::cluster::{Cluster, NodeGroup, Taint};
use fleetyard::domain::federation::Federation;
use fleetyard::domain::leftover::Leftover;
use fleetyard::domain::machine::{
    Machine, MachineAddress, MachineName, MachinePhase, MachineRole, MachineSpec, MachineStatus,
    MachineVersions,
};
use fleetyard::domain::status::{ClusterStatus, FederationStatus};
use fleetyard::domain::template::{ClusterTemplate, TemplateSpec};
use fleetyard::domain::MachineId;
use fleetyard::drivers::kubernetes::KubernetesDriver;
use fleetyard::drivers::{
    CaMaterial, CertKeyPair, ClusterContext, Driver, DriverError, FederationContext,
    FederationProgress, MachineObservation, MemberChange, Phase, Progress, Resize,
};
use serde_json::{json, Value};
use uuid::Uuid;

use fleetyard::startup::Backends;

const NS: &str = "magnum-system";
const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";
const CAPI: &str = "/apis/cluster.x-k8s.io/v1beta1";
const KCP: &str = "/apis/controlplane.cluster.x-k8s.io/v1beta1";
const BOOTSTRAP: &str = "/apis/bootstrap.cluster.x-k8s.io/v1beta1";
const INFRA: &str = "/apis/infrastructure.cluster.x-k8s.io/v1beta1";
const KARMADA_OP: &str = "/apis/operator.karmada.io/v1alpha1";
const KARMADA_CLUSTERS: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";

/// A self-signed CA certificate (public part only), as a member kubeconfig carries it.
const MEMBER_CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBnjCCAUOgAwIBAgIUbxdmQGgkfj4AusNTTGJFvp6SwnAwCgYIKoZIzj0EAwIw
IzEhMB8GA1UEAwwYZmxlZXR5YXJkLXRlc3QtbWVtYmVyLWNhMCAXDTI2MTEyMjAz
MDk1MloYDzIxMjYxMDI5MDMwOTUyWjAjMSEwHwYDVQQDDBhmbGVldHlhcmQtdGVz
dC1tZW1iZXItY2EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARqNWZV2oQykdqX
L6j0vzsjxELvrINObV0AfQtTEDjwxeE+Y99RNM1QJvBrrAKeILU/QZX8F6GZjPuF
LKP7jAxao1MwUTAdBgNVHQ4EFgQUscI6HBGgQ3UMVyi4wYzG/mnrFDIwHwYDVR0j
BBgwFoAUscI6HBGgQ3UMVyi4wYzG/mnrFDIwDwYDVR0TAQH/BAUwAwEB/zAKBggq
hkjOPQQDAgNJADBGAiEAwQxeVckty9j2K/vXXXFGdlHwn5kA2/bUnJZ0UJ9m0tUC
IQDoanwezfeXS7WZkK1CxXhmntuDD2xyrIfUA8bS+Ioxxg==
-----END CERTIFICATE-----
";

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn uuid<I: From<Uuid>>(text: &str) -> I {
    I::from(Uuid::parse_str(text).expect("uuid"))
}

/// The management cluster and a driver configured for it.
struct Env {
    mgmt: FakeKube,
    driver: KubernetesDriver,
    dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn env() -> Env {
    let mgmt = FakeKube::start().await;
    let dir = std::env::temp_dir().join(format!("fy-kube-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("kubeconfig");
    std::fs::write(&path, mgmt.kubeconfig(None)).expect("write kubeconfig");
    let driver = KubernetesDriver::new(KubernetesDriverSection {
        kubeconfig: path.display().to_string(),
        request_timeout: 5,
        ..KubernetesDriverSection::default()
    })
    .expect("driver");
    Env {
        mgmt,
        driver,
        dir: TempDir(dir),
    }
}

fn template(kube_tag: &str, image: &str) -> ClusterTemplate {
    let mut labels = BTreeMap::new();
    labels.insert("kube_tag".to_string(), kube_tag.to_string());
    ClusterTemplate {
        id: 1,
        uuid: uuid("5d12f6fd-a196-4bf0-ae4c-1f639a523a52"),
        project_id: "p1".into(),
        user_id: "u1".into(),
        spec: TemplateSpec {
            name: format!("k8s-{kube_tag}"),
            coe: "kubernetes".into(),
            image_id: image.into(),
            flavor_id: Some("m1.medium".into()),
            master_flavor_id: Some("m1.large".into()),
            dns_nameserver: Some("8.8.8.8".into()),
            keypair_id: Some("ops-key".into()),
            external_network_id: Some("public".into()),
            fixed_network: None,
            fixed_subnet: None,
            network_driver: Some("calico".into()),
            volume_driver: None,
            apiserver_port: None,
            docker_volume_size: None,
            docker_storage_driver: None,
            cluster_distro: Some("ubuntu".into()),
            http_proxy: None,
            https_proxy: None,
            no_proxy: None,
            insecure_registry: None,
            registry_enabled: false,
            tls_disabled: false,
            public: false,
            master_lb_enabled: true,
            floating_ip_enabled: false,
            hidden: false,
            server_type: "vm".into(),
            labels,
            tags: None,
            driver: Some("kubernetes".into()),
        },
        version: 1,
        created_at: Utc::now(),
        updated_at: None,
    }
}

fn cluster(id: &str, name: &str, status: ClusterStatus) -> Cluster {
    let mut labels = BTreeMap::new();
    labels.insert("kube_tag".to_string(), "v1.30.2".to_string());
    labels.insert("availability_zone".to_string(), "nova".to_string());
    Cluster {
        id: 1,
        uuid: uuid(id),
        project_id: "p1".into(),
        user_id: "u1".into(),
        name: name.into(),
        cluster_template_id: uuid("5d12f6fd-a196-4bf0-ae4c-1f639a523a52"),
        keypair: Some("user-key".into()),
        docker_volume_size: None,
        labels,
        master_flavor_id: None,
        flavor_id: None,
        stack_id: None,
        api_address: None,
        status,
        status_reason: None,
        health_status: None,
        health_status_reason: BTreeMap::new(),
        create_timeout: Some(60),
        discovery_url: None,
        coe_version: None,
        container_version: None,
        fixed_network: None,
        fixed_subnet: None,
        floating_ip_enabled: false,
        master_lb_enabled: true,
        version: 1,
        created_at: Utc::now(),
        updated_at: None,
        registry: Default::default(),
    }
}

#[allow(clippy::too_many_arguments)]
fn nodegroup(
    id: &str,
    cluster: &Cluster,
    name: &str,
    role: &str,
    count: i32,
    min: i32,
    max: Option<i32>,
) -> NodeGroup {
    NodeGroup {
        id: 1,
        uuid: uuid(id),
        name: name.into(),
        cluster_id: cluster.uuid,
        project_id: "p1".into(),
        docker_volume_size: None,
        labels: cluster.labels.clone(),
        flavor_id: None,
        image_id: Some("ubuntu-2204-kube-v1.30.2".into()),
        node_addresses: vec![],
        node_count: count,
        role: role.into(),
        min_node_count: min,
        max_node_count: max,
        is_default: true,
        stack_id: None,
        status: cluster.status,
        status_reason: None,
        version: None,
        node_labels: BTreeMap::new(),
        node_taints: vec![],
        created_at: Utc::now(),
        updated_at: None,
    }
}

const C1: &str = "746e779a-751a-456b-a3e9-c883d734946f";
const C1_NAME: &str = "fy-746e779a751a456b";
const MASTER_NG: &str = "0d7c5b2e-1111-4c6a-a0c5-0d8c5d0b2d11";
const WORKER_NG: &str = "a1b2c3d4-2222-4c6a-a0c5-0d8c5d0b2d22";
const WORKER_MD: &str = "fy-746e779a751a456b-default-worker-a1b2c3";

/// A cluster with 3 masters and 2 workers (autoscaling bounds 1..5), node labels and a taint.
fn ctx_with(id: &str, name: &str, status: ClusterStatus) -> ClusterContext {
    let c = cluster(id, name, status);
    let master = nodegroup(MASTER_NG, &c, "default-master", "master", 3, 1, None);
    let mut worker = nodegroup(WORKER_NG, &c, "default-worker", "worker", 2, 1, Some(5));
    worker.node_labels.insert("tier".into(), "web".into());
    worker.node_taints.push(Taint {
        key: "dedicated".into(),
        value: Some("web".into()),
        effect: "NoSchedule".into(),
    });
    ClusterContext {
        attempt: 1,
        job: None,
        cluster: c,
        nodegroups: vec![master, worker],
        template: template("v1.30.2", "ubuntu-2204-kube-v1.30.2"),
        ca: None,
        machines: Vec::new(),
    }
}

fn ctx(status: ClusterStatus) -> ClusterContext {
    ctx_with(C1, "web", status)
}

fn applies(requests: &[Recorded]) -> Vec<&Recorded> {
    requests
        .iter()
        .filter(|r| r.method == "PATCH" && r.content_type.starts_with("application/apply-patch"))
        .collect()
}

fn kind_and_name(r: &Recorded) -> (String, String) {
    let body = r.body.as_ref().expect("body");
    (
        body["kind"].as_str().unwrap_or_default().to_string(),
        body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn body_of<'a>(requests: &'a [&Recorded], kind: &str) -> &'a Value {
    requests
        .iter()
        .find(|r| r.body.as_ref().is_some_and(|b| b["kind"] == kind))
        .and_then(|r| r.body.as_ref())
        .unwrap_or_else(|| panic!("no {kind} was sent"))
}

fn permanent(result: Result<impl std::fmt::Debug, DriverError>) -> String {
    match result {
        Err(DriverError::Permanent(text)) => text,
        other => panic!("expected a permanent error, got {other:?}"),
    }
}

fn transient(result: Result<impl std::fmt::Debug, DriverError>) -> String {
    match result {
        Err(DriverError::Transient(text)) => text,
        other => panic!("expected a transient error, got {other:?}"),
    }
}

#[tokio::test]
async fn create_server_side_applies_the_cluster_api_objects_of_the_cluster() {
    let env = env().await;
    let progress = env
        .driver
        .create_cluster(&ctx(ClusterStatus::CreateInProgress))
        .await
        .expect("create");
    let Progress::Started(obs) = progress else {
        panic!("create converges later: {progress:?}")
    };
    assert_eq!(obs.phase, Phase::InProgress);
    assert_eq!(obs.stack_id.as_deref(), Some(C1_NAME));

    let requests = env.mgmt.requests();
    let sent = applies(&requests);
    assert_eq!(
        sent.len(),
        requests.len(),
        "create only applies: {requests:?}"
    );
    let kinds: Vec<String> = sent.iter().map(|r| kind_and_name(r).0).collect();
    assert_eq!(
        kinds,
        [
            "OpenStackCluster",
            "OpenStackMachineTemplate",
            "KubeadmControlPlane",
            "KubeadmConfigTemplate",
            "OpenStackMachineTemplate",
            "MachineDeployment",
            "Cluster"
        ]
    );
    for r in &sent {
        assert_eq!(r.content_type, "application/apply-patch+yaml");
        assert!(
            r.query.contains("fieldManager=fleetyard") && r.query.contains("force=true"),
            "{}",
            r.query
        );
        let body = r.body.as_ref().expect("body");
        assert_eq!(body["metadata"]["namespace"], NS);
        assert_eq!(
            body["metadata"]["labels"]["fleetyard/cluster-uuid"], C1,
            "{body}"
        );
        assert_eq!(
            body["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "fleetyard"
        );
        assert_eq!(
            body["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"],
            C1_NAME
        );
        assert_eq!(r.status, 201, "created");
    }
    let paths: Vec<&str> = sent.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths[0],
        format!("{INFRA}/namespaces/{NS}/openstackclusters/{C1_NAME}")
    );
    assert_eq!(
        paths[2],
        format!("{KCP}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane")
    );
    assert!(
        paths[3].starts_with(&format!(
            "{BOOTSTRAP}/namespaces/{NS}/kubeadmconfigtemplates/{WORKER_MD}-"
        )),
        "{}",
        paths[3]
    );
    assert_eq!(
        paths[5],
        format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}")
    );
    assert_eq!(
        paths[6],
        format!("{CAPI}/namespaces/{NS}/clusters/{C1_NAME}")
    );

    let cluster = body_of(&sent, "Cluster");
    assert_eq!(cluster["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(
        cluster["metadata"]["annotations"]["fleetyard/cluster-name"],
        "web"
    );
    assert_eq!(
        cluster["metadata"]["labels"]["fleetyard/network-driver"],
        "calico"
    );
    assert_eq!(
        cluster["spec"]["controlPlaneRef"],
        json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane", "name": format!("{C1_NAME}-control-plane")})
    );
    assert_eq!(
        cluster["spec"]["infrastructureRef"],
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackCluster", "name": C1_NAME})
    );
    assert_eq!(
        cluster["spec"]["clusterNetwork"]["pods"]["cidrBlocks"],
        json!(["10.100.0.0/16"])
    );
    assert_eq!(
        cluster["spec"]["clusterNetwork"]["services"]["cidrBlocks"],
        json!(["10.254.0.0/16"])
    );

    let osc = body_of(&sent, "OpenStackCluster");
    assert_eq!(
        osc["spec"],
        json!({
            "identityRef": {"name": "openstack-cloud-credentials", "cloudName": "openstack"},
            "externalNetwork": {"filter": {"name": "public"}},
            "managedSubnets": [{"cidr": "10.0.0.0/24", "dnsNameservers": ["8.8.8.8"]}],
            "apiServerLoadBalancer": {"enabled": true},
            "disableAPIServerFloatingIP": true,
            "managedSecurityGroups": {"allowAllInClusterTraffic": true},
        })
    );

    let kcp = body_of(&sent, "KubeadmControlPlane");
    assert_eq!(kcp["spec"]["replicas"], 3);
    assert_eq!(kcp["spec"]["version"], "v1.30.2");
    assert_eq!(
        kcp["metadata"]["labels"]["fleetyard/nodegroup-uuid"],
        MASTER_NG
    );
    let cp_template = kcp["spec"]["machineTemplate"]["infrastructureRef"].clone();
    assert_eq!(cp_template["kind"], "OpenStackMachineTemplate");
    assert_eq!(
        cp_template["apiVersion"],
        "infrastructure.cluster.x-k8s.io/v1beta1"
    );
    let cp_template_name = cp_template["name"].as_str().expect("name");
    assert!(
        cp_template_name.starts_with(&format!("{C1_NAME}-control-plane-")),
        "{cp_template_name}"
    );
    let registration = &kcp["spec"]["kubeadmConfigSpec"]["joinConfiguration"]["nodeRegistration"];
    assert_eq!(
        registration["kubeletExtraArgs"]["cloud-provider"],
        "external"
    );
    assert_eq!(
        registration["kubeletExtraArgs"]["node-labels"],
        "magnum.openstack.org/role=master,magnum.openstack.org/nodegroup=default-master"
    );

    let templates: Vec<&Value> = sent
        .iter()
        .filter_map(|r| r.body.as_ref())
        .filter(|b| b["kind"] == "OpenStackMachineTemplate")
        .collect();
    assert_eq!(templates[0]["metadata"]["name"], cp_template_name);
    assert_eq!(
        templates[0]["spec"]["template"]["spec"],
        json!({"flavor": "m1.large", "image": {"filter": {"name": "ubuntu-2204-kube-v1.30.2"}}, "sshKeyName": "user-key"})
    );
    assert_eq!(
        templates[1]["spec"]["template"]["spec"],
        json!({"flavor": "m1.medium", "image": {"filter": {"name": "ubuntu-2204-kube-v1.30.2"}}, "sshKeyName": "user-key"})
    );

    let kct = body_of(&sent, "KubeadmConfigTemplate");
    let worker_registration =
        &kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"];
    assert_eq!(
        worker_registration["kubeletExtraArgs"]["node-labels"],
        "magnum.openstack.org/role=worker,magnum.openstack.org/nodegroup=default-worker,tier=web"
    );
    assert_eq!(
        worker_registration["taints"],
        json!([{"key": "dedicated", "value": "web", "effect": "NoSchedule"}])
    );

    let md = body_of(&sent, "MachineDeployment");
    assert_eq!(md["metadata"]["name"], WORKER_MD);
    assert_eq!(md["spec"]["replicas"], 2);
    assert_eq!(md["spec"]["clusterName"], C1_NAME);
    assert_eq!(
        md["metadata"]["labels"]["fleetyard/nodegroup-uuid"],
        WORKER_NG
    );
    assert_eq!(
        md["metadata"]["annotations"]
            ["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"],
        "1"
    );
    assert_eq!(
        md["metadata"]["annotations"]
            ["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"],
        "5"
    );
    let machine = &md["spec"]["template"]["spec"];
    assert_eq!(machine["version"], "v1.30.2");
    assert_eq!(machine["failureDomain"], "nova");
    assert_eq!(
        machine["bootstrap"]["configRef"]["kind"],
        "KubeadmConfigTemplate"
    );
    assert_eq!(
        machine["bootstrap"]["configRef"]["name"],
        kct["metadata"]["name"]
    );
    assert_eq!(
        machine["infrastructureRef"]["kind"],
        "OpenStackMachineTemplate"
    );
    assert_eq!(
        machine["infrastructureRef"]["name"],
        templates[1]["metadata"]["name"]
    );
    assert_eq!(
        md["spec"]["template"]["metadata"]["labels"]["fleetyard/nodegroup-uuid"],
        WORKER_NG
    );
}

#[tokio::test]
async fn create_hands_the_clusters_cas_to_cluster_api_before_anything_else() {
    let env = env().await;
    let mut c = ctx(ClusterStatus::CreateInProgress);
    c.ca = Some(CaMaterial {
        certificate: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n".into(),
        private_key: Secret::new("-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n"),
        etcd: Some(CertKeyPair {
            certificate: "etcd-ca".into(),
            private_key: Secret::new("etcd-key"),
        }),
        front_proxy: None,
    });
    env.driver.create_cluster(&c).await.expect("create");
    let requests = env.mgmt.requests();
    let sent = applies(&requests);
    assert_eq!(sent.len(), 9);
    assert_eq!(
        sent[0].path,
        format!("/api/v1/namespaces/{NS}/secrets/{C1_NAME}-ca")
    );
    assert_eq!(
        sent[1].path,
        format!("/api/v1/namespaces/{NS}/secrets/{C1_NAME}-etcd")
    );
    let ca = sent[0].body.as_ref().expect("body");
    assert_eq!(ca["type"], "cluster.x-k8s.io/secret");
    assert_eq!(
        ca["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"],
        C1_NAME
    );
    assert_eq!(ca["metadata"]["labels"]["fleetyard/cluster-uuid"], C1);
    assert_eq!(
        ca["data"],
        json!({
            "tls.crt": b64("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"),
            "tls.key": b64("-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n"),
        })
    );
    assert_eq!(
        sent[1].body.as_ref().expect("body")["data"],
        json!({"tls.crt": b64("etcd-ca"), "tls.key": b64("etcd-key")})
    );
    assert_eq!(kind_and_name(sent[2]).0, "OpenStackCluster");
}

#[tokio::test]
async fn a_retried_create_sends_identical_applies_and_creates_nothing_new() {
    let env = env().await;
    let c = ctx(ClusterStatus::CreateInProgress);
    env.driver.create_cluster(&c).await.expect("create");
    let first = env.mgmt.requests();
    let stored = env.mgmt.objects().len();
    env.mgmt.clear_requests();

    let mut retry = c.clone();
    retry.attempt = 2;
    env.driver.create_cluster(&retry).await.expect("retry");
    let second = env.mgmt.requests();
    assert_eq!(second.len(), first.len());
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(
            (&a.method, &a.path, &a.query, &a.content_type, &a.body),
            (&b.method, &b.path, &b.query, &b.content_type, &b.body)
        );
        assert_eq!(
            b.status, 200,
            "the retry updates, it does not create: {}",
            b.path
        );
    }
    assert_eq!(env.mgmt.objects().len(), stored, "nothing new exists");
}

/// Cluster API status as its controllers write it for a provisioned 3+2 cluster.
fn inject_provisioned(mgmt: &FakeKube) {
    mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/clusters/{C1_NAME}"),
        json!({
            "spec": {"controlPlaneEndpoint": {"host": "203.0.113.10", "port": 6443}},
            "status": {"phase": "Provisioned", "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "ControlPlaneReady", "status": "True"},
            ]},
        }),
    );
    mgmt.update(
        &format!("{KCP}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane"),
        json!({"status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "version": "v1.30.2", "ready": true}}),
    );
    mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}"),
        json!({"status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "phase": "Running"}}),
    );
    for i in 0..3 {
        put_machine(
            mgmt,
            &format!("{C1_NAME}-control-plane-m{i}"),
            None,
            &format!("10.0.0.{}", 10 + i),
            true,
        );
    }
    for i in 0..2 {
        put_machine(
            mgmt,
            &format!("{WORKER_MD}-w{i}"),
            Some(WORKER_MD),
            &format!("10.0.0.{}", 20 + i),
            true,
        );
    }
}

fn put_machine(
    mgmt: &FakeKube,
    name: &str,
    deployment: Option<&str>,
    address: &str,
    healthy: bool,
) {
    let mut labels = json!({"cluster.x-k8s.io/cluster-name": C1_NAME});
    match deployment {
        Some(md) => labels["cluster.x-k8s.io/deployment-name"] = json!(md),
        None => labels["cluster.x-k8s.io/control-plane"] = json!(""),
    }
    mgmt.put(
        &format!("{CAPI}/namespaces/{NS}/machines/{name}"),
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {"labels": labels},
            "spec": {"clusterName": C1_NAME, "providerID": format!("openstack:///server-{name}")},
            "status": {
                "phase": "Running",
                "nodeRef": {"kind": "Node", "name": format!("node-{name}")},
                "addresses": [{"type": "InternalIP", "address": address}],
                "conditions": [{"type": "NodeHealthy", "status": if healthy { "True" } else { "False" }}],
            },
        }),
    );
}

#[tokio::test]
async fn the_status_poll_maps_cluster_api_status_to_the_observation() {
    let env = env().await;
    let c = ctx(ClusterStatus::CreateInProgress);
    env.driver.create_cluster(&c).await.expect("create");

    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(obs.phase, Phase::InProgress, "nothing provisioned yet");
    assert_eq!(obs.api_address, None);

    inject_provisioned(&env.mgmt);
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(obs.phase, Phase::Complete);
    assert_eq!(obs.stack_id.as_deref(), Some(C1_NAME));
    assert_eq!(
        obs.api_address.as_deref(),
        Some("https://203.0.113.10:6443")
    );
    assert_eq!(obs.coe_version.as_deref(), Some("v1.30.2"));
    let masters = &obs.nodegroups[MASTER_NG];
    assert_eq!(masters.node_count, Some(3));
    assert!(masters.ready);
    assert_eq!(
        masters.node_addresses,
        ["10.0.0.10", "10.0.0.11", "10.0.0.12"]
    );
    let workers = &obs.nodegroups[WORKER_NG];
    assert_eq!(workers.node_count, Some(2));
    assert_eq!(workers.node_addresses, ["10.0.0.20", "10.0.0.21"]);
    assert_eq!(workers.version.as_deref(), Some("v1.30.2"));

    // A spec change the MachineDeployment controller has not observed yet.
    env.mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}"),
        json!({"metadata": {"generation": 2}}),
    );
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(obs.phase, Phase::InProgress);
    assert!(!obs.nodegroups[WORKER_NG].ready);
    env.mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}"),
        json!({"status": {"observedGeneration": 2}}),
    );
    assert_eq!(
        env.driver.cluster_status(&c).await.expect("status").phase,
        Phase::Complete
    );

    // A terminal machine failure fails the operation with Cluster API's words.
    env.mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w1"),
        json!({"status": {"failureReason": "InsufficientResources", "failureMessage": "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances"}}),
    );
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(
        obs.phase,
        Phase::Failed(format!(
            "Cluster API reports that the machine {WORKER_MD}-w1 of node group default-worker failed (InsufficientResources): Quota exceeded for instances: Requested 1, but already used 10 of 10 instances."
        ))
    );
}

#[tokio::test]
async fn health_reports_the_api_and_every_node() {
    let env = env().await;
    env.driver
        .create_cluster(&ctx(ClusterStatus::CreateInProgress))
        .await
        .expect("create");
    inject_provisioned(&env.mgmt);
    assert_eq!(
        env.driver
            .cluster_health(&ctx(ClusterStatus::CreateInProgress))
            .await
            .expect("health"),
        None,
        "only complete clusters are polled"
    );

    let complete = ctx(ClusterStatus::CreateComplete);
    let health = env
        .driver
        .cluster_health(&complete)
        .await
        .expect("health")
        .expect("some");
    assert_eq!(health.healthy, Some(true));
    assert_eq!(health.reason["api"], "ok");
    assert_eq!(health.reason[&format!("node-{WORKER_MD}-w0.Ready")], "True");
    assert_eq!(health.reason.len(), 6);

    put_machine(
        &env.mgmt,
        &format!("{WORKER_MD}-w1"),
        Some(WORKER_MD),
        "10.0.0.21",
        false,
    );
    let health = env
        .driver
        .cluster_health(&complete)
        .await
        .expect("health")
        .expect("some");
    assert_eq!(health.healthy, Some(false));
    assert_eq!(
        health.reason[&format!("node-{WORKER_MD}-w1.Ready")],
        "False"
    );
}

#[tokio::test]
async fn resize_sets_replicas_and_marks_the_named_machines_for_deletion() {
    let env = env().await;
    let c = ctx(ClusterStatus::CreateComplete);
    env.driver.create_cluster(&c).await.expect("create");
    inject_provisioned(&env.mgmt);
    put_machine(
        &env.mgmt,
        &format!("{WORKER_MD}-w2"),
        Some(WORKER_MD),
        "10.0.0.22",
        true,
    );
    env.mgmt.clear_requests();

    let resize = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: 1,
        nodes_to_remove: vec![format!("node-{WORKER_MD}-w0"), "10.0.0.22".into()],
    };
    let progress = env
        .driver
        .resize_cluster(&c, &resize)
        .await
        .expect("resize");
    assert!(matches!(progress, Progress::Started(_)));
    let writes = env.mgmt.writes();
    let summary: Vec<(String, String)> = writes
        .iter()
        .map(|r| {
            (
                r.method.clone(),
                r.path.rsplit('/').next().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("PATCH".to_string(), format!("{WORKER_MD}-w0")),
            ("PATCH".to_string(), format!("{WORKER_MD}-w2")),
            ("PATCH".to_string(), WORKER_MD.to_string()),
        ]
    );
    for w in &writes {
        assert_eq!(w.content_type, "application/merge-patch+json");
    }
    assert_eq!(
        writes[0].body,
        Some(json!({"metadata": {"annotations": {"cluster.x-k8s.io/delete-machine": "yes"}}}))
    );
    assert_eq!(
        writes[2].body,
        Some(json!({
            "metadata": {"annotations": {
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1",
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5",
            }},
            "spec": {"replicas": 1},
        }))
    );
    let md = env
        .mgmt
        .get(&format!(
            "{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}"
        ))
        .expect("md");
    assert_eq!(md["spec"]["replicas"], 1);
    let w1 = env
        .mgmt
        .get(&format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w1"))
        .expect("machine");
    assert!(
        w1["metadata"]["annotations"]["cluster.x-k8s.io/delete-machine"].is_null(),
        "w1 stays"
    );

    // Retried after Cluster API removed the machines: nothing to mark, the count already holds.
    env.mgmt
        .remove(&format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w0"));
    env.mgmt
        .remove(&format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w2"));
    env.driver.resize_cluster(&c, &resize).await.expect("retry");

    let unknown = Resize {
        nodegroup: "default-worker".into(),
        node_count: 0,
        nodes_to_remove: vec!["node-x".into()],
    };
    let text = permanent(env.driver.resize_cluster(&c, &unknown).await);
    assert_eq!(text, format!("nodes_to_remove names node-x, which is not a node of node group default-worker (its nodes: node-{WORKER_MD}-w1)."));

    let even = Resize {
        nodegroup: MASTER_NG.into(),
        node_count: 2,
        nodes_to_remove: vec![],
    };
    assert_eq!(
        permanent(env.driver.resize_cluster(&c, &even).await),
        "master nodegroup size of 2 is invalid, size cannot be an even number."
    );

    env.mgmt.clear_requests();
    let five = Resize {
        nodegroup: "default-master".into(),
        node_count: 5,
        nodes_to_remove: vec![],
    };
    env.driver
        .resize_cluster(&c, &five)
        .await
        .expect("master resize");
    let writes = env.mgmt.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        writes[0].path,
        format!("{KCP}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane")
    );
    assert_eq!(writes[0].body, Some(json!({"spec": {"replicas": 5}})));
}

#[tokio::test]
async fn no_group_past_the_node_limit_reaches_the_management_cluster() {
    let mut env = env().await;
    env.driver = KubernetesDriver::new(KubernetesDriverSection {
        kubeconfig: env.dir.0.join("kubeconfig").display().to_string(),
        request_timeout: 5,
        ..KubernetesDriverSection::default()
    })
    .expect("driver")
    .with_node_limit(4);
    let c = ctx(ClusterStatus::CreateComplete);
    // The worker group's autoscaling bound (5) is past the limit: create refuses it.
    assert_eq!(
        permanent(env.driver.create_cluster(&c).await),
        "Node group default-worker of cluster web asks for 5 nodes; a node group may have at most 4 ([cluster] max_node_count)."
    );
    assert!(env.mgmt.writes().is_empty(), "{:?}", env.mgmt.writes());

    let mut small = ctx(ClusterStatus::CreateComplete);
    small.nodegroups[1].max_node_count = Some(3);
    env.driver.create_cluster(&small).await.expect("create");
    env.mgmt.clear_requests();
    let huge = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: i32::MAX,
        nodes_to_remove: vec![],
    };
    assert_eq!(
        permanent(env.driver.resize_cluster(&small, &huge).await),
        "Node group default-worker of cluster web asks for 2147483647 nodes; a node group may have at most 4 ([cluster] max_node_count)."
    );
    let mut grown = small.clone();
    grown.nodegroups[1].node_count = 1_000_000;
    assert!(permanent(env.driver.update_cluster(&grown).await).contains("asks for 1000000 nodes"));
    assert!(permanent(
        env.driver
            .update_nodegroup(&grown, &grown.nodegroups[1])
            .await
    )
    .contains("asks for 1000000 nodes"));
    assert!(env.mgmt.writes().is_empty(), "{:?}", env.mgmt.writes());
}

#[tokio::test]
async fn upgrade_bumps_versions_and_the_machine_image_and_lets_cluster_api_roll() {
    let env = env().await;
    let c = ctx(ClusterStatus::CreateComplete);
    env.driver.create_cluster(&c).await.expect("create");
    let kcp_path = format!("{KCP}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane");
    let md_path = format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}");
    let old_cp_template = env.mgmt.get(&kcp_path).expect("kcp")["spec"]["machineTemplate"]
        ["infrastructureRef"]["name"]
        .clone();
    let old_worker_template = env.mgmt.get(&md_path).expect("md")["spec"]["template"]["spec"]
        ["infrastructureRef"]["name"]
        .clone();

    let newer = template("v1.31.0", "ubuntu-2204-kube-v1.31.0");
    // Workers alone may not overtake the control plane.
    let text = permanent(
        env.driver
            .upgrade_cluster(&c, &newer, 1, Some(WORKER_NG))
            .await,
    );
    assert_eq!(
        text,
        "Upgrade the master node group first: the control plane runs v1.30.2, older than v1.31.0."
    );

    env.mgmt.clear_requests();
    env.driver
        .upgrade_cluster(&c, &newer, 2, None)
        .await
        .expect("upgrade");
    let requests = env.mgmt.requests();
    let sent = applies(&requests);
    let kinds: Vec<String> = sent.iter().map(|r| kind_and_name(r).0).collect();
    assert_eq!(
        kinds,
        [
            "OpenStackMachineTemplate",
            "KubeadmControlPlane",
            "KubeadmConfigTemplate",
            "OpenStackMachineTemplate",
            "MachineDeployment"
        ]
    );

    let kcp = env.mgmt.get(&kcp_path).expect("kcp");
    assert_eq!(kcp["spec"]["version"], "v1.31.0");
    assert_eq!(kcp["spec"]["replicas"], 3);
    assert_eq!(
        kcp["spec"]["rolloutStrategy"]["rollingUpdate"]["maxSurge"],
        1
    );
    let new_cp_template = kcp["spec"]["machineTemplate"]["infrastructureRef"]["name"].clone();
    assert_ne!(
        new_cp_template, old_cp_template,
        "a new machine template rolls the control plane"
    );
    let template_path = |name: &Value| {
        format!(
            "{INFRA}/namespaces/{NS}/openstackmachinetemplates/{}",
            name.as_str().unwrap_or_default()
        )
    };
    let cp_template = env
        .mgmt
        .get(&template_path(&new_cp_template))
        .expect("new template");
    assert_eq!(
        cp_template["spec"]["template"]["spec"]["image"],
        json!({"filter": {"name": "ubuntu-2204-kube-v1.31.0"}})
    );
    assert!(
        env.mgmt.get(&template_path(&old_cp_template)).is_some(),
        "the old template stays for the machines still using it"
    );

    let md = env.mgmt.get(&md_path).expect("md");
    assert_eq!(md["spec"]["template"]["spec"]["version"], "v1.31.0");
    assert_eq!(md["spec"]["replicas"], 2);
    assert_eq!(
        md["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": 2, "maxUnavailable": 0})
    );
    let new_worker_template = md["spec"]["template"]["spec"]["infrastructureRef"]["name"].clone();
    assert_ne!(new_worker_template, old_worker_template);
    assert_eq!(
        env.mgmt
            .get(&template_path(&new_worker_template))
            .expect("template")["spec"]["template"]["spec"]["image"],
        json!({"filter": {"name": "ubuntu-2204-kube-v1.31.0"}})
    );

    let unversioned = {
        let mut t = template("v1.31.0", "x");
        t.spec.labels.clear();
        t
    };
    assert_eq!(
        permanent(env.driver.upgrade_cluster(&c, &unversioned, 1, None).await),
        "The cluster template k8s-v1.31.0 has no kube_tag label, so it names no Kubernetes version to upgrade to."
    );
}

#[tokio::test]
async fn delete_reports_the_cluster_gone_only_once_the_management_cluster_answers_404() {
    let env = env().await;
    env.driver
        .create_cluster(&ctx(ClusterStatus::CreateInProgress))
        .await
        .expect("create");
    let cluster_path = format!("{CAPI}/namespaces/{NS}/clusters/{C1_NAME}");
    env.mgmt.update(
        &cluster_path,
        json!({"metadata": {"finalizers": ["cluster.cluster.x-k8s.io"]}}),
    );
    env.mgmt.clear_requests();

    let deleting = ctx(ClusterStatus::DeleteInProgress);
    let progress = env.driver.delete_cluster(&deleting).await.expect("delete");
    let Progress::Started(obs) = progress else {
        panic!("the delete converges later: {progress:?}")
    };
    assert_eq!(obs.phase, Phase::InProgress);
    // What is left until Cluster API finishes: the Cluster object (which owns the rest).
    let cluster_object = Leftover::new("Cluster.cluster.x-k8s.io", C1_NAME);
    assert_eq!(obs.leftovers, vec![cluster_object.clone()]);
    let writes = env.mgmt.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        (writes[0].method.as_str(), writes[0].path.as_str()),
        ("DELETE", cluster_path.as_str())
    );

    let held = env.driver.cluster_status(&deleting).await.expect("status");
    assert_eq!(held.phase, Phase::InProgress, "finalizers hold it");
    assert_eq!(held.leftovers.first(), Some(&cluster_object));
    assert_eq!(
        env.driver
            .cluster_status(&deleting)
            .await
            .expect("status")
            .phase,
        Phase::InProgress
    );

    // Cluster API finished: the Cluster is gone; leftovers are removed and the cluster is gone.
    env.mgmt.remove(&cluster_path);
    env.mgmt.clear_requests();
    assert_eq!(
        env.driver
            .cluster_status(&deleting)
            .await
            .expect("status")
            .phase,
        Phase::Gone
    );
    let deleted: Vec<String> = env
        .mgmt
        .writes()
        .iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        deleted.len(),
        6,
        "MD, KCP, KCT, 2 machine templates, OpenStackCluster: {deleted:?}"
    );
    assert!(env.mgmt.objects().is_empty(), "{:?}", env.mgmt.objects());

    // A retried delete finds nothing: 404 is success.
    let progress = env.driver.delete_cluster(&deleting).await.expect("retry");
    assert_eq!(
        progress,
        Progress::Done(fleetyard::drivers::ClusterObservation::phase(Phase::Gone))
    );
}

#[tokio::test]
async fn conflicts_and_unreachable_servers_are_transient_refusals_permanent() {
    let env = env().await;
    let c = ctx(ClusterStatus::CreateInProgress);
    env.mgmt.fail_next(
        "PATCH",
        "kubeadmcontrolplanes",
        409,
        "Conflict",
        "Operation cannot be fulfilled: the object has been modified",
    );
    let text = transient(env.driver.create_cluster(&c).await);
    assert!(
        text.starts_with(
            "Conflict on the management cluster while trying to apply the KubeadmControlPlane"
        ),
        "{text}"
    );

    env.mgmt.fail_next(
        "PATCH",
        "machinedeployments",
        422,
        "Invalid",
        "MachineDeployment.cluster.x-k8s.io \"x\" is invalid: spec.replicas: Invalid value: -1",
    );
    let text = permanent(env.driver.create_cluster(&c).await);
    assert_eq!(
        text,
        format!("The management cluster refused to apply the MachineDeployment {WORKER_MD} (422 Invalid): MachineDeployment.cluster.x-k8s.io \"x\" is invalid: spec.replicas: Invalid value: -1. Check the cluster template and labels.")
    );
    env.mgmt
        .fail_next("GET", "clusters", 503, "ServiceUnavailable", "etcd is busy");
    transient(env.driver.cluster_status(&c).await);

    env.driver
        .create_cluster(&c)
        .await
        .expect("a later attempt goes through");
    env.mgmt.stop().await;
    let text = transient(env.driver.cluster_status(&c).await);
    assert!(
        text.starts_with("Cannot reach the management cluster at http://127.0.0.1:"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------
// Federation with Karmada

const HOST: &str = "11111111-aaaa-4bbb-8ccc-000000000001";
const M1: &str = "22222222-aaaa-4bbb-8ccc-000000000002";
const M2: &str = "33333333-aaaa-4bbb-8ccc-000000000003";
const FED: &str = "99999999-aaaa-4bbb-8ccc-000000000009";
const INSTANCE: &str = "karmada-99999999aaaa";
const SA: &str = "karmada-99999999aaaa";
const ROLE: &str = "karmada-controller-manager:karmada-99999999aaaa";

struct Fed {
    env: Env,
    host: FakeKube,
    karmada: FakeKube,
    m1: FakeKube,
    m2: FakeKube,
}

fn capi_name(id: &str) -> String {
    format!("fy-{}", &id.replace('-', "")[..16])
}

fn put_kubeconfig_secret(mgmt: &FakeKube, id: &str, kubeconfig: &str) {
    let name = format!("{}-kubeconfig", capi_name(id));
    mgmt.put(
        &format!("/api/v1/namespaces/{NS}/secrets/{name}"),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret", "data": {"value": b64(kubeconfig)}}),
    );
}

async fn federation_env() -> Fed {
    let env = env().await;
    let host = FakeKube::start().await;
    let karmada = FakeKube::start().await;
    let m1 = FakeKube::start().await;
    let m2 = FakeKube::start().await;
    put_kubeconfig_secret(&env.mgmt, HOST, &host.kubeconfig(None));
    put_kubeconfig_secret(&env.mgmt, M1, &m1.kubeconfig(Some(&b64(MEMBER_CA_PEM))));
    put_kubeconfig_secret(&env.mgmt, M2, &m2.kubeconfig(None));
    Fed {
        env,
        host,
        karmada,
        m1,
        m2,
    }
}

fn federation(status: FederationStatus, members: &[&str]) -> Federation {
    let mut properties = BTreeMap::new();
    properties.insert("dns-zone".to_string(), "example.com.".to_string());
    Federation {
        id: 1,
        uuid: uuid(FED),
        project_id: "p1".into(),
        user_id: "u1".into(),
        name: "fed".into(),
        hostcluster_id: uuid(HOST),
        member_ids: members.iter().map(|m| uuid(m)).collect(),
        status,
        status_reason: None,
        properties,
        version: 1,
        created_at: Utc::now(),
        updated_at: None,
    }
}

fn fed_ctx(status: FederationStatus, members: &[&str], existing: &[&str]) -> FederationContext {
    FederationContext {
        federation: federation(status, members),
        host: Some(ctx_with(HOST, "host", ClusterStatus::CreateComplete)),
        members: existing
            .iter()
            .map(|id| {
                cluster(
                    id,
                    &format!("member-{}", &id[..8]),
                    ClusterStatus::CreateComplete,
                )
            })
            .collect(),
    }
}

/// The operator finished: the Karmada is Ready and its admin kubeconfig points at the fake
/// Karmada API server.
fn karmada_ready(f: &Fed) {
    f.host.update(
        &format!("{KARMADA_OP}/namespaces/karmada-system/karmadas/{INSTANCE}"),
        json!({"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "Completed"}],
            "secretRef": {"namespace": "karmada-system", "name": format!("{INSTANCE}-admin-config")},
        }}),
    );
    f.host.put(
        &format!("/api/v1/namespaces/karmada-system/secrets/{INSTANCE}-admin-config"),
        json!({"apiVersion": "v1", "kind": "Secret", "data": {"config": b64(&f.karmada.kubeconfig(None))}}),
    );
}

async fn created_federation() -> Fed {
    let f = federation_env().await;
    let c = fed_ctx(FederationStatus::CreateInProgress, &[], &[]);
    f.env.driver.create_federation(&c).await.expect("create");
    karmada_ready(&f);
    f
}

#[tokio::test]
async fn federation_create_applies_a_karmada_control_plane_and_waits_until_it_is_ready() {
    let f = federation_env().await;
    let c = fed_ctx(FederationStatus::CreateInProgress, &[], &[]);
    let progress = f.env.driver.create_federation(&c).await.expect("create");
    assert_eq!(progress, FederationProgress::Started);

    let requests = f.host.requests();
    let sent = applies(&requests);
    let summary: Vec<(String, String)> = sent.iter().map(|r| kind_and_name(r)).collect();
    assert_eq!(
        summary,
        [
            ("Namespace".to_string(), "karmada-system".to_string()),
            ("Karmada".to_string(), INSTANCE.to_string())
        ]
    );
    assert_eq!(
        sent[1].path,
        format!("{KARMADA_OP}/namespaces/karmada-system/karmadas/{INSTANCE}")
    );
    let karmada = sent[1].body.as_ref().expect("body");
    assert_eq!(
        karmada["spec"],
        json!({"components": {"karmadaAPIServer": {"serviceType": "NodePort"}}})
    );
    assert_eq!(
        karmada["metadata"]["labels"]["fleetyard/federation-uuid"],
        FED
    );
    assert_eq!(
        karmada["metadata"]["labels"]["fleetyard/cluster-uuid"],
        HOST
    );

    assert_eq!(
        f.env.driver.federation_status(&c).await.expect("status"),
        Phase::InProgress
    );
    karmada_ready(&f);
    assert_eq!(
        f.env.driver.federation_status(&c).await.expect("status"),
        Phase::Complete
    );

    // A retry re-applies the same object and finds it ready.
    f.host.clear_requests();
    assert_eq!(
        f.env.driver.create_federation(&c).await.expect("retry"),
        FederationProgress::Done
    );
    assert_eq!(
        applies(&f.host.requests()).len(),
        1,
        "only the Karmada, the namespace exists"
    );
}

#[tokio::test]
async fn federation_create_verifies_a_karmada_the_federation_names_and_leaves_it_alone() {
    let f = federation_env().await;
    let mut c = fed_ctx(FederationStatus::CreateInProgress, &[], &[]);
    c.federation
        .properties
        .insert("karmada_instance".into(), "shared-karmada".into());
    let text = permanent(f.env.driver.create_federation(&c).await);
    assert_eq!(text, "The host cluster fy-11111111aaaa4bbb has no Karmada karmada-system/shared-karmada (named by the federation property karmada_instance).");

    f.host.put(
        &format!("{KARMADA_OP}/namespaces/karmada-system/karmadas/shared-karmada"),
        json!({"apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada", "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    assert_eq!(
        f.env.driver.create_federation(&c).await.expect("adopt"),
        FederationProgress::Done
    );
    assert!(
        f.host.writes().is_empty(),
        "nothing was written to the host: {:?}",
        f.host.writes()
    );
}

#[tokio::test]
async fn join_registers_the_member_on_both_sides() {
    let f = created_federation().await;
    let c = fed_ctx(FederationStatus::UpdateInProgress, &[M1], &[M1]);
    let change = MemberChange {
        joined: vec![uuid(M1)],
        unjoined: vec![],
    };
    assert_eq!(
        f.env
            .driver
            .update_federation(&c, &change)
            .await
            .expect("join"),
        FederationProgress::Done
    );

    let member_requests = f.m1.requests();
    let member_side = applies(&member_requests);
    let summary: Vec<(String, String)> = member_side.iter().map(|r| kind_and_name(r)).collect();
    assert_eq!(
        summary,
        [
            ("Namespace".to_string(), "karmada-cluster".to_string()),
            ("ServiceAccount".to_string(), SA.to_string()),
            ("ClusterRole".to_string(), ROLE.to_string()),
            ("ClusterRoleBinding".to_string(), ROLE.to_string()),
            ("Secret".to_string(), format!("{SA}-token")),
        ]
    );
    let role = member_side[2].body.as_ref().expect("body");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["get"]}])
    );
    let binding = member_side[3].body.as_ref().expect("body");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": SA, "namespace": "karmada-cluster"}])
    );
    let token_secret = member_side[4].body.as_ref().expect("body");
    assert_eq!(token_secret["type"], "kubernetes.io/service-account-token");
    assert_eq!(
        token_secret["metadata"]["annotations"]["kubernetes.io/service-account.name"],
        SA
    );

    let m1_name = capi_name(M1);
    let karmada_requests = f.karmada.requests();
    let control_side = applies(&karmada_requests);
    let summary: Vec<(String, String)> = control_side.iter().map(|r| kind_and_name(r)).collect();
    assert_eq!(
        summary,
        [
            ("Namespace".to_string(), "karmada-cluster".to_string()),
            ("Secret".to_string(), m1_name.clone()),
            ("Cluster".to_string(), m1_name.clone()),
        ]
    );
    let secret = control_side[1].body.as_ref().expect("body");
    assert_eq!(secret["metadata"]["namespace"], "karmada-cluster");
    assert_eq!(
        secret["data"],
        json!({"token": b64(&format!("token-for-{SA}")), "caBundle": b64(MEMBER_CA_PEM)})
    );
    let registered = control_side[2].body.as_ref().expect("body");
    assert_eq!(
        control_side[2].path,
        format!("{KARMADA_CLUSTERS}/{m1_name}")
    );
    assert_eq!(
        registered["spec"],
        json!({"syncMode": "Push", "apiEndpoint": f.m1.url, "secretRef": {"namespace": "karmada-cluster", "name": m1_name}})
    );
    assert_eq!(
        registered["metadata"]["labels"]["fleetyard/cluster-uuid"],
        M1
    );

    // A member without CA data in its kubeconfig: the token Secret's ca.crt is used.
    let c2 = fed_ctx(FederationStatus::UpdateInProgress, &[M1, M2], &[M1, M2]);
    let change = MemberChange {
        joined: vec![uuid(M2)],
        unjoined: vec![],
    };
    f.env
        .driver
        .update_federation(&c2, &change)
        .await
        .expect("join m2");
    let secret = f
        .karmada
        .get(&format!(
            "/api/v1/namespaces/karmada-cluster/secrets/{}",
            capi_name(M2)
        ))
        .expect("secret");
    assert_eq!(secret["data"]["caBundle"], b64("token-controller-ca"));

    // Joining again (a retried job) sends the same applies and creates nothing.
    let stored = f.karmada.objects().len();
    f.env
        .driver
        .update_federation(&c2, &change)
        .await
        .expect("retried join");
    assert_eq!(f.karmada.objects().len(), stored);
}

async fn joined_federation() -> Fed {
    let f = created_federation().await;
    let c = fed_ctx(FederationStatus::UpdateInProgress, &[M1, M2], &[M1, M2]);
    let change = MemberChange {
        joined: vec![uuid(M1), uuid(M2)],
        unjoined: vec![],
    };
    f.env
        .driver
        .update_federation(&c, &change)
        .await
        .expect("join");
    f.karmada.clear_requests();
    f.m1.clear_requests();
    f.m2.clear_requests();
    f
}

fn deletes(fake: &FakeKube) -> Vec<String> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path)
        .collect()
}

#[tokio::test]
async fn unjoin_of_a_reachable_member_removes_it_from_both_sides() {
    let f = joined_federation().await;
    let c = fed_ctx(FederationStatus::UpdateInProgress, &[M2], &[M1, M2]);
    let change = MemberChange {
        joined: vec![],
        unjoined: vec![uuid(M1)],
    };
    assert_eq!(
        f.env
            .driver
            .update_federation(&c, &change)
            .await
            .expect("unjoin"),
        FederationProgress::Done
    );

    let m1_name = capi_name(M1);
    assert_eq!(
        deletes(&f.karmada),
        [
            format!("{KARMADA_CLUSTERS}/{m1_name}"),
            format!("/api/v1/namespaces/karmada-cluster/secrets/{m1_name}")
        ]
    );
    assert_eq!(
        deletes(&f.m1),
        [
            format!("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{ROLE}"),
            format!("/apis/rbac.authorization.k8s.io/v1/clusterroles/{ROLE}"),
            format!("/api/v1/namespaces/karmada-cluster/secrets/{SA}-token"),
            format!("/api/v1/namespaces/karmada-cluster/serviceaccounts/{SA}"),
            "/api/v1/namespaces/karmada-cluster".to_string(),
        ]
    );
    assert!(f.m1.objects().is_empty(), "{:?}", f.m1.objects());
    assert!(
        f.karmada
            .get(&format!("{KARMADA_CLUSTERS}/{}", capi_name(M2)))
            .is_some(),
        "m2 stays"
    );

    // A retried unjoin finds everything gone (404s) and still finishes.
    assert_eq!(
        f.env
            .driver
            .update_federation(&c, &change)
            .await
            .expect("retry"),
        FederationProgress::Done
    );
}

#[tokio::test]
async fn unjoin_of_an_unreachable_member_finishes_with_a_note() {
    let f = joined_federation().await;
    f.m1.stop().await;
    let c = fed_ctx(FederationStatus::UpdateInProgress, &[M2], &[M1, M2]);
    let change = MemberChange {
        joined: vec![],
        unjoined: vec![uuid(M1)],
    };
    let progress = f
        .env
        .driver
        .update_federation(&c, &change)
        .await
        .expect("unjoin");
    let FederationProgress::DoneWithNote(note) = progress else {
        panic!("expected a note: {progress:?}")
    };
    let m1_name = capi_name(M1);
    assert!(
        note.starts_with(&format!(
            "Unjoined {m1_name} from the Karmada control plane, but its member-side clean-up (service account karmada-cluster/{SA}, ClusterRole and ClusterRoleBinding {ROLE}) was not done: Cannot reach cluster member-22222222 ({m1_name}) at http://127.0.0.1:"
        )),
        "{note}"
    );
    assert!(
        note.ends_with("Remove them by hand if the cluster comes back."),
        "{note}"
    );
    assert!(
        f.karmada
            .get(&format!("{KARMADA_CLUSTERS}/{m1_name}"))
            .is_none(),
        "the control-plane side is removed"
    );
    assert!(f
        .karmada
        .get(&format!(
            "/api/v1/namespaces/karmada-cluster/secrets/{m1_name}"
        ))
        .is_none());

    // A member whose cluster was deleted: its kubeconfig is gone with it.
    let c = fed_ctx(FederationStatus::UpdateInProgress, &[], &[]);
    let change = MemberChange {
        joined: vec![],
        unjoined: vec![uuid(M2)],
    };
    let FederationProgress::DoneWithNote(note) = f
        .env
        .driver
        .update_federation(&c, &change)
        .await
        .expect("unjoin")
    else {
        panic!("expected a note")
    };
    assert!(
        note.contains(&format!("was not done: the cluster {M2} no longer exists.")),
        "{note}"
    );
    assert!(f
        .karmada
        .get(&format!("{KARMADA_CLUSTERS}/{}", capi_name(M2)))
        .is_none());
}

#[tokio::test]
async fn federation_delete_unjoins_every_member_and_removes_the_control_plane() {
    let f = joined_federation().await;
    let c = fed_ctx(FederationStatus::DeleteInProgress, &[M1, M2], &[M1, M2]);
    f.host.clear_requests();
    assert_eq!(
        f.env.driver.delete_federation(&c).await.expect("delete"),
        FederationProgress::Started
    );

    assert!(
        f.karmada
            .objects()
            .iter()
            .all(|(p, _)| !p.contains("cluster.karmada.io")),
        "members unregistered"
    );
    assert_eq!(deletes(&f.m1).len(), 5);
    assert_eq!(deletes(&f.m2).len(), 5);
    assert_eq!(
        deletes(&f.host),
        [format!(
            "{KARMADA_OP}/namespaces/karmada-system/karmadas/{INSTANCE}"
        )]
    );
    assert_eq!(
        f.env.driver.federation_status(&c).await.expect("status"),
        Phase::Gone
    );

    // Retried: nothing is left and it is done.
    assert_eq!(
        f.env.driver.delete_federation(&c).await.expect("retry"),
        FederationProgress::Done
    );
}

#[tokio::test]
async fn the_driver_is_registered_when_its_kubeconfig_is_configured() {
    let env = env().await;
    let mut settings = fleetyard::config::Settings::default();
    let state = Backends::build(&settings).expect("state");
    assert!(
        state.drivers.get("kubernetes").is_none(),
        "no kubeconfig, no driver"
    );

    settings.kubernetes_driver.kubeconfig = env.dir.0.join("kubeconfig").display().to_string();
    let state = Backends::build(&settings).expect("state");
    let driver = state.drivers.get("kubernetes").expect("registered");
    assert_eq!(driver.provides()[0].coe, "kubernetes");
    let caps = driver.capabilities();
    assert!(caps.federation && caps.master_resize && caps.upgrade && !caps.rotate_ca);

    settings.drivers.disabled_drivers = "kubernetes".into();
    let state = Backends::build(&settings).expect("state");
    assert!(
        state.drivers.get("kubernetes").is_none(),
        "disabled by the operator"
    );

    settings.drivers.disabled_drivers = String::new();
    settings.kubernetes_driver.context = "elsewhere".into();
    let err = Backends::build(&settings).err().expect("bad context");
    assert!(
        err.to_string().starts_with("[kubernetes_driver] context:"),
        "{err}"
    );
}

#[tokio::test]
async fn a_join_with_a_vanished_member_joins_the_others_and_names_every_missing_one() {
    let f = created_federation().await;
    let gone = "44444444-aaaa-4bbb-8ccc-000000000004";
    // M1 and the fourth cluster no longer exist; M2 does.
    let c = fed_ctx(FederationStatus::UpdateInProgress, &[M1, M2, gone], &[M2]);
    let change = MemberChange {
        joined: vec![uuid(M1), uuid(M2), uuid(gone)],
        unjoined: vec![],
    };
    let err = f
        .env
        .driver
        .update_federation(&c, &change)
        .await
        .expect_err("missing members fail the join");
    assert_eq!(
        err,
        DriverError::Permanent(format!("The member clusters {M1}, {gone} no longer exist."))
    );
    assert!(
        f.karmada
            .get(&format!("{KARMADA_CLUSTERS}/{}", capi_name(M2)))
            .is_some(),
        "the member that exists is joined, though it comes after a missing one"
    );
    assert!(f
        .karmada
        .get(&format!("{KARMADA_CLUSTERS}/{}", capi_name(M1)))
        .is_none());
}

// ------------------------------------------------------------------------------------------------
// Machines read back from Cluster API
// ------------------------------------------------------------------------------------------------

/// Fleetyard's machine `<group>-<n>` of a node group, as the store keeps it before any read-back.
fn machine_row(ng: &NodeGroup, n: u32, phase: MachinePhase) -> Machine {
    let role = if ng.role == "master" {
        MachineRole::Master
    } else {
        MachineRole::Worker
    };
    let mut status = MachineStatus::pending();
    status.phase = phase;
    Machine {
        id: i64::from(n) + if role == MachineRole::Master { 0 } else { 100 },
        uuid: MachineId::from(Uuid::new_v4()),
        name: MachineName::parse(&format!("{}-{n}", ng.name)).expect("name"),
        role,
        project_id: ng.project_id.clone(),
        cluster_id: ng.cluster_id,
        nodegroup_id: ng.uuid,
        spec: MachineSpec::default(),
        status,
        created_at: Utc::now(),
        updated_at: None,
    }
}

/// The cluster of [`ctx`] with its five machines (three masters, two workers), Running.
fn ctx_with_machines(status: ClusterStatus) -> ClusterContext {
    let mut c = ctx(status);
    let (masters, workers) = (c.nodegroups[0].clone(), c.nodegroups[1].clone());
    c.machines = (1..=3)
        .map(|n| machine_row(&masters, n, MachinePhase::Running))
        .chain((1..=2).map(|n| machine_row(&workers, n, MachinePhase::Running)))
        .collect();
    c
}

/// The observation written back into the machines, as the conductor's `ObserveMachines` does.
fn remember(c: &mut ClusterContext, obs: &BTreeMap<MachineId, MachineObservation>) {
    for m in &mut c.machines {
        if let Some(o) = obs.get(&m.uuid) {
            m.status.provider_id = o.provider_id.clone();
            m.status.node_ref = o.node_ref.clone();
        }
    }
}

#[tokio::test]
async fn machines_are_read_back_from_cluster_api_and_keep_their_machine_once_paired() {
    let env = env().await;
    let mut c = ctx_with_machines(ClusterStatus::CreateInProgress);
    env.driver.create_cluster(&c).await.expect("create");
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert!(obs.machines.is_empty(), "no Machine exists yet: {obs:?}");

    inject_provisioned(&env.mgmt);
    env.mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w1"),
        json!({"spec": {"version": "v1.30.2"}, "status": {"nodeInfo": {"kubeletVersion": "v1.30.1"}}}),
    );
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(obs.machines.len(), 5, "{:?}", obs.machines);
    let seen = |row: usize| obs.machines[&c.machines[row].uuid].clone();
    for (row, i) in [(0, 0), (1, 1), (2, 2)] {
        let m = seen(row);
        let capi = format!("{C1_NAME}-control-plane-m{i}");
        assert_eq!(
            m.provider_id.as_deref(),
            Some(format!("openstack:///server-{capi}").as_str())
        );
        assert_eq!(m.node_ref, Some(format!("node-{capi}")));
        assert_eq!(
            m.versions.control_plane.as_ref().map(ToString::to_string),
            Some("v1.30.2".to_string()),
            "a master runs the control plane's version"
        );
    }
    let w1 = seen(3);
    assert_eq!(w1.node_ref, Some(format!("node-{WORKER_MD}-w0")));
    assert_eq!(
        w1.addresses,
        [MachineAddress {
            kind: "InternalIP".into(),
            address: "10.0.0.20".into()
        }]
    );
    assert_eq!(
        w1.versions,
        MachineVersions::default(),
        "no version reported"
    );
    let w2 = seen(4);
    assert_eq!(w2.node_ref, Some(format!("node-{WORKER_MD}-w1")));
    assert_eq!(
        w2.versions.kubelet.as_ref().map(ToString::to_string),
        Some("v1.30.1".to_string()),
        "the kubelet the node reports, not the version asked for"
    );
    assert_eq!(
        w2.versions.control_plane, None,
        "a worker has no control plane"
    );

    // Once read back, a machine keeps its Machine: when Cluster API replaces the first worker's
    // Machine, the second worker is still w1 and the first waits for the new Machine.
    remember(&mut c, &obs.machines);
    env.mgmt
        .remove(&format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w0"));
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(
        obs.machines[&c.machines[4].uuid].node_ref,
        Some(format!("node-{WORKER_MD}-w1"))
    );
    assert!(!obs.machines.contains_key(&c.machines[3].uuid));

    // A failure Cluster API reports is the machine's error.
    env.mgmt.update(
        &format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w1"),
        json!({"status": {"failureReason": "UpdateError", "failureMessage": "the server is in ERROR"}}),
    );
    let obs = env.driver.cluster_status(&c).await.expect("status");
    let w2 = &obs.machines[&c.machines[4].uuid];
    assert_eq!(w2.error_reason.as_deref(), Some("UpdateError"));
    assert_eq!(w2.error_message.as_deref(), Some("the server is in ERROR"));
}

#[tokio::test]
async fn a_machine_named_by_fleetyard_is_the_cluster_api_machine_marked_for_deletion() {
    let env = env().await;
    let mut c = ctx_with_machines(ClusterStatus::CreateComplete);
    env.driver.create_cluster(&c).await.expect("create");
    inject_provisioned(&env.mgmt);
    let obs = env.driver.cluster_status(&c).await.expect("status");
    remember(&mut c, &obs.machines);
    env.mgmt.clear_requests();

    // `default-worker-2` is the Fleetyard machine read back from w1: w1 is the one marked.
    let resize = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: 1,
        nodes_to_remove: vec!["default-worker-2".into()],
    };
    env.driver
        .resize_cluster(&c, &resize)
        .await
        .expect("resize");
    let marked: Vec<String> = env
        .mgmt
        .writes()
        .iter()
        .filter(|w| w.path.contains("/machines/"))
        .map(|w| w.path.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(marked, [format!("{WORKER_MD}-w1")]);
    let w0 = env
        .mgmt
        .get(&format!("{CAPI}/namespaces/{NS}/machines/{WORKER_MD}-w0"))
        .expect("machine");
    assert!(w0["metadata"]["annotations"][DELETE_MACHINE_ANNOTATION].is_null());

    // A machine being deleted is paired with the Machine Cluster API is deleting.
    c.machines[4].status.phase = MachinePhase::Deleting;
    c.machines[4].status.provider_id = None;
    c.machines[4].status.node_ref = None;
    let obs = env.driver.cluster_status(&c).await.expect("status");
    assert_eq!(
        obs.machines[&c.machines[4].uuid].node_ref,
        Some(format!("node-{WORKER_MD}-w1"))
    );
    assert_eq!(
        obs.machines[&c.machines[3].uuid].node_ref,
        Some(format!("node-{WORKER_MD}-w0"))
    );

    // A name neither Cluster API nor Fleetyard knows is refused with the group's nodes.
    let unknown = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: 0,
        nodes_to_remove: vec!["default-worker-9".into()],
    };
    assert!(permanent(env.driver.resize_cluster(&c, &unknown).await)
        .starts_with("nodes_to_remove names default-worker-9, which is not a node of node group default-worker"));
}

// ------------------------------------------------------------------------------------------------
// Cluster API's published types
// ------------------------------------------------------------------------------------------------

/// The `apiVersion` and kind a write to `path` (`/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>`) addresses.
fn addressed(path: &str) -> (String, String) {
    let parts: Vec<&str> = path.trim_start_matches("/apis/").split('/').collect();
    let kind = match parts.get(4).copied().unwrap_or_default() {
        "machines" => "Machine",
        "machinedeployments" => "MachineDeployment",
        "kubeadmcontrolplanes" => "KubeadmControlPlane",
        "kubeadmconfigtemplates" => "KubeadmConfigTemplate",
        "clusters" => "Cluster",
        other => other,
    };
    (
        format!("{}/{}", parts[0], parts.get(1).copied().unwrap_or_default()),
        kind.to_string(),
    )
}

/// Every finding in the Cluster API writes of `requests`: whole objects applied, merge
/// patches by what they name. The number of Cluster API writes comes back too.
fn type_findings(requests: &[Recorded]) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut out = Vec::new();
    for r in requests
        .iter()
        .filter(|r| r.method != "GET" && r.method != "DELETE")
    {
        let Some(body) = &r.body else { continue };
        let found = if r.content_type.starts_with("application/apply-patch") {
            if !capi_types::is_cluster_api(body) {
                continue;
            }
            capi_types::findings(body, false)
        } else {
            let (api, kind) = addressed(&r.path);
            if !api.contains("cluster.x-k8s.io") {
                continue;
            }
            capi_types::patch_findings(&api, &kind, body)
        };
        checked += 1;
        out.extend(
            found
                .into_iter()
                .map(|f| format!("{} {}: {f}", r.method, r.path)),
        );
    }
    (checked, out)
}

#[test]
fn the_type_check_finds_unknown_missing_and_mistyped_fields() {
    let md = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
        "metadata": {"name": "md", "anything": "goes"},
        "spec": {
            "clusterName": "c", "replicas": "two", "selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"clusterName": "c", "bootstrap": {}, "flavor": "m1.small"}},
        },
    });
    assert_eq!(
        capi_types::findings(&md, false),
        [
            ".spec.replicas: \"two\" is not of type integer",
            ".spec.template.spec.infrastructureRef: required, missing",
            ".spec.template.spec.flavor: not a field of the type",
        ]
    );
    assert_eq!(
        capi_types::patch_findings(
            "cluster.x-k8s.io/v1beta1",
            "MachineDeployment",
            &json!({"spec": {"replicas": 1}})
        ),
        Vec::<String>::new()
    );
    assert!(!capi_types::is_cluster_api(
        &json!({"apiVersion": "v1", "kind": "Secret"})
    ));
}

#[tokio::test]
async fn every_cluster_api_object_the_driver_writes_fits_the_published_v1beta1_types() {
    let env = env().await;
    let mut c = ctx_with_machines(ClusterStatus::CreateInProgress);
    env.driver.create_cluster(&c).await.expect("create");
    inject_provisioned(&env.mgmt);
    let obs = env.driver.cluster_status(&c).await.expect("status");
    remember(&mut c, &obs.machines);
    c.cluster.status = ClusterStatus::CreateComplete;
    let resize = Resize {
        nodegroup: WORKER_NG.into(),
        node_count: 1,
        nodes_to_remove: vec!["default-worker-2".into()],
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

    let (checked, findings) = type_findings(&env.mgmt.requests());
    assert!(
        checked >= 10,
        "only {checked} Cluster API writes were checked"
    );
    assert!(findings.is_empty(), "{}", findings.join("\n"));
}
