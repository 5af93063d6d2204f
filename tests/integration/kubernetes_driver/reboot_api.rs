//! `POST /v1/clusters/{c}/machines/{m}/actions/reboot` (and the Kubernetes face's
//! `fleetyard.openstack.org/reboot-requested-at`) with the kubernetes driver, end to end: a
//! cluster made through the API on a fake management cluster, its workload cluster a fake API
//! server, the conductor polling the reboot until the machine runs again. One reboot Pod, the
//! DaemonSet pods left, the node uncordoned; a PodDisruptionBudget's 429 waited out; a node
//! that never comes back fails the machine with the node and the step; a conductor made anew
//! mid-reboot finishes it without a second reboot. On PostgreSQL and SQLite.

use std::sync::Arc;

use fleetyard::conductor::Conductor;
use fleetyard::config::Settings;
use reqwest::header::HeaderMap;
use reqwest::Method;
use rstest::rstest;

use super::reboot::{put_workload, LAST_REBOOT};
use super::*;
use crate::helpers::{at, cluster_as, drain, spawn_keeping, template_as, Backend, TestApp};

struct Api {
    app: TestApp,
    settings: Settings,
    mgmt: FakeKube,
    workload: FakeKube,
    h: HeaderMap,
    cluster: String,
    /// The Cluster API name of the cluster and of its worker MachineDeployment.
    capi: String,
    md: String,
    _dir: TempDir,
}

fn capi_machine(mgmt: &FakeKube, cluster: &str, name: &str, deployment: Option<&str>) {
    let mut labels = json!({"cluster.x-k8s.io/cluster-name": cluster});
    match deployment {
        Some(md) => labels["cluster.x-k8s.io/deployment-name"] = json!(md),
        None => labels["cluster.x-k8s.io/control-plane"] = json!(""),
    }
    mgmt.put(
        &format!("{CAPI}/namespaces/{NS}/machines/{name}"),
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
            "metadata": {"labels": labels, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"clusterName": cluster, "providerID": format!("openstack:///server-{name}")},
            "status": {
                "phase": "Running",
                "nodeRef": {"kind": "Node", "name": format!("node-{name}")},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.20"}],
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "NodeHealthy", "status": "True"}],
            },
        }),
    );
}

impl Api {
    /// A complete three-master, two-worker cluster of the kubernetes driver, made through the
    /// API, provisioned by "Cluster API" on the fake management cluster; its workload cluster
    /// has Nodes and Pods.
    async fn new(backend: Backend, reboot_timeout: u64) -> Api {
        let mgmt = FakeKube::start().await;
        let workload = FakeKube::start().await;
        let dir = std::env::temp_dir().join(format!("fy-kreboot-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("kubeconfig");
        std::fs::write(&path, mgmt.kubeconfig(None)).expect("write kubeconfig");
        let (app, settings) = spawn_keeping(backend, |s| {
            crate::helpers::instant_settings(s);
            s.kubernetes_driver.kubeconfig = path.display().to_string();
            s.kubernetes_driver.request_timeout = 5;
            s.kubernetes_driver.reboot_timeout = reboot_timeout;
            s.conductor.retry_delay = 0.01;
            s.conductor.retry_max_delay = 0.01;
        })
        .await;
        let h = at(&app.headers, "latest");
        let t = template_as(
            &app,
            "capi",
            json!({"driver": "kubernetes", "master_lb_enabled": true, "flavor_id": "m1.medium", "master_flavor_id": "m1.large", "labels": {"kube_tag": "v1.30.2"}}),
            &h,
        )
        .await;
        let body =
            json!({"name": "kc", "cluster_template_id": t, "master_count": 3, "node_count": 2});
        let cluster = cluster_as(&app, body, &h).await;
        let mut api = Api {
            app,
            settings,
            mgmt,
            workload,
            h,
            cluster,
            capi: String::new(),
            md: String::new(),
            _dir: TempDir(dir),
        };
        let worked = drain(&api.conductor()).await;
        let objects = api.mgmt.objects();
        let shown = api
            .app
            .get_as(&format!("/v1/clusters/{}", api.cluster), &api.h)
            .await;
        assert!(!objects.is_empty(), "{worked:?} {}", shown.text);
        let name_of = |kind: &str| {
            objects
                .iter()
                .find(|(p, _)| p.contains(kind))
                .and_then(|(_, o)| o["metadata"]["name"].as_str())
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no {kind} on the management cluster"))
        };
        api.capi = name_of("/clusters/");
        api.md = name_of("/machinedeployments/");
        let (capi, md) = (api.capi.clone(), api.md.clone());
        api.mgmt.update(
            &format!("{CAPI}/namespaces/{NS}/clusters/{capi}"),
            json!({
                "spec": {"controlPlaneEndpoint": {"host": "203.0.113.10", "port": 6443}},
                "status": {"phase": "Provisioned", "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "ControlPlaneReady", "status": "True"},
                ]},
            }),
        );
        api.mgmt.update(
            &format!("{KCP}/namespaces/{NS}/kubeadmcontrolplanes/{capi}-control-plane"),
            json!({"status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "version": "v1.30.2", "ready": true}}),
        );
        api.mgmt.update(
            &format!("{CAPI}/namespaces/{NS}/machinedeployments/{md}"),
            json!({"status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "phase": "Running"}}),
        );
        for i in 0..3 {
            capi_machine(
                &api.mgmt,
                &capi,
                &format!("{capi}-control-plane-m{i}"),
                None,
            );
        }
        for i in 0..2 {
            capi_machine(&api.mgmt, &capi, &format!("{md}-w{i}"), Some(&md));
        }
        let kubeconfig = api.workload.kubeconfig(None);
        api.mgmt.put(
            &format!("/api/v1/namespaces/{NS}/secrets/{capi}-kubeconfig"),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret", "data": {"value": b64(&kubeconfig)}}),
        );
        put_workload(&api.workload, &capi, &md);
        let c = api.conductor();
        for _ in 0..5 {
            c.sync_round().await.expect("status sync");
            drain(&c).await;
        }
        let shown = api
            .app
            .get_as(&format!("/v1/clusters/{}", api.cluster), &api.h)
            .await;
        assert_eq!(shown.body["status"], "CREATE_COMPLETE", "{}", shown.text);
        api
    }

    /// A conductor with the kubernetes driver, as `fleetyard-conductor` builds it.
    fn conductor(&self) -> Conductor {
        let backends = Backends::build(&self.settings).expect("backends");
        Conductor::new(
            self.app.store.clone(),
            backends.drivers,
            "test-host",
            self.settings.conductor.clone(),
        )
    }

    /// The worker on the second worker node, read back from its Cluster API Machine.
    async fn worker(&self) -> Value {
        let r = self
            .app
            .get_as(
                &format!("/v1/clusters/{}/machines?role=worker", self.cluster),
                &self.h,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let node = self.node_name();
        r.body["machines"]
            .as_array()
            .expect("machines")
            .iter()
            .find(|m| m["status"]["node_ref"] == json!(node))
            .cloned()
            .unwrap_or_else(|| panic!("no machine on {node}: {}", r.text))
    }

    fn node_name(&self) -> String {
        format!("node-{}-w1", self.md)
    }

    fn node(&self) -> Value {
        self.workload
            .get(&format!("/api/v1/nodes/{}", self.node_name()))
            .expect("node")
    }

    fn machine_path(&self, m: &Value) -> String {
        format!(
            "/v1/clusters/{}/machines/{}",
            self.cluster,
            m["uuid"].as_str().expect("uuid")
        )
    }

    async fn show(&self, m: &Value) -> Value {
        let r = self.app.get_as(&self.machine_path(m), &self.h).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn reboot(&self, m: &Value) {
        let r = self
            .app
            .request(
                Method::POST,
                &format!("{}/actions/reboot", self.machine_path(m)),
                &self.h,
                None,
            )
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
        assert_eq!(r.body["status"]["phase"], "Provisioning", "{}", r.text);
    }

    /// Works the reboot's job (each attempt as it comes due) until the machine is settled.
    async fn settle(&self, c: &Conductor, m: &Value) -> Value {
        for _ in 0..1000 {
            c.try_execute_one().await.expect("a job worked");
            let shown = self.show(m).await;
            if shown["status"]["phase"] != "Provisioning" {
                return shown;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the reboot never settled")
    }

    /// The reboot Pods ever created, and the evictions asked (pod, answer).
    fn pods_made(&self) -> usize {
        self.workload
            .requests()
            .iter()
            .filter(|r| {
                r.method == "POST"
                    && r.path == "/api/v1/namespaces/kube-system/pods"
                    && r.status == 201
            })
            .count()
    }

    fn evictions(&self) -> Vec<(String, u16)> {
        self.workload
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/eviction"))
            .map(|r| (r.path, r.status))
            .collect()
    }

    /// The machine rebooted once: running on its node, the node uncordoned with no reboot
    /// annotation, the Pod gone, only the Deployment's pod evicted.
    fn assert_rebooted_once(&self, shown: &Value, uuid: &str) {
        assert_eq!(shown["status"]["phase"], "Running", "{shown}");
        assert_eq!(shown["status"]["node_ref"], json!(self.node_name()));
        assert!(shown["status"]["error_message"].is_null(), "{shown}");
        let node = self.node();
        assert!(node["spec"]["unschedulable"].is_null(), "{node}");
        let annotations = node["metadata"]["annotations"]
            .as_object()
            .expect("annotations");
        assert_eq!(
            annotations.keys().collect::<Vec<_>>(),
            [LAST_REBOOT],
            "{node}"
        );
        assert_eq!(
            node["status"]["nodeInfo"]["bootID"],
            format!("boot-{}-1", self.node_name())
        );
        assert!(self
            .workload
            .get(&format!(
                "/api/v1/namespaces/kube-system/pods/fleetyard-reboot-{uuid}"
            ))
            .is_none());
        assert_eq!(self.pods_made(), 1, "exactly one reboot Pod");
        assert_eq!(self.workload.reboots(), 1);
        let node_name = self.node_name();
        for ds in ["calico-node", "static-proxy"] {
            assert!(self
                .workload
                .get(&format!(
                    "/api/v1/namespaces/kube-system/pods/{ds}-{node_name}"
                ))
                .is_some());
        }
        assert!(self
            .evictions()
            .iter()
            .all(|(p, _)| p == &format!("/api/v1/namespaces/shop/pods/web-{node_name}/eviction")));
    }
}

#[rstest]
#[tokio::test]
async fn a_reboot_through_the_api_cordons_drains_reboots_once_and_uncordons(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let api = Api::new(backend, 1800).await;
    let m = api.worker().await;
    let uuid = m["uuid"].as_str().expect("uuid").to_string();
    api.reboot(&m).await;
    let shown = api.settle(&api.conductor(), &m).await;
    api.assert_rebooted_once(&shown, &uuid);
    assert_eq!(shown["status"]["provider_id"], m["status"]["provider_id"]);
    assert_eq!(
        api.evictions(),
        [(
            format!(
                "/api/v1/namespaces/shop/pods/web-{}/eviction",
                api.node_name()
            ),
            201
        )]
    );
}

#[rstest]
#[tokio::test]
async fn a_disruption_budget_holds_the_reboot_until_the_eviction_is_allowed(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let api = Api::new(backend, 1800).await;
    let m = api.worker().await;
    let uuid = m["uuid"].as_str().expect("uuid").to_string();
    api.workload.block_evictions(2);
    api.reboot(&m).await;
    let shown = api.settle(&api.conductor(), &m).await;
    api.assert_rebooted_once(&shown, &uuid);
    let answers: Vec<u16> = api.evictions().into_iter().map(|(_, s)| s).collect();
    assert_eq!(answers, [429, 429, 201]);
}

#[rstest]
#[tokio::test]
async fn a_node_that_never_comes_back_fails_the_machine_with_the_node_and_the_step(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let api = Api::new(backend, 1).await;
    let m = api.worker().await;
    let uuid = m["uuid"].as_str().expect("uuid").to_string();
    api.workload.nodes_stay_down();
    api.reboot(&m).await;
    let shown = api.settle(&api.conductor(), &m).await;
    assert_eq!(shown["status"]["phase"], "Failed", "{shown}");
    assert_eq!(shown["status"]["error_reason"], "RebootError");
    let name = m["name"].as_str().expect("name");
    assert_eq!(
        shown["status"]["error_message"],
        format!(
            "The reboot of machine {name} did not finish within 1 seconds ([kubernetes_driver] reboot_timeout), at the step where the node {} had not rebooted (its reboot Pod kube-system/fleetyard-reboot-{uuid} is Failed); the node was uncordoned.",
            api.node_name()
        )
    );
    let node = api.node();
    assert!(node["spec"]["unschedulable"].is_null(), "{node}");
    assert!(
        node["metadata"]["annotations"]
            .as_object()
            .is_none_or(|a| a.is_empty()),
        "{node}"
    );
    assert_eq!(api.pods_made(), 1);
    assert!(api
        .workload
        .get(&format!(
            "/api/v1/namespaces/kube-system/pods/fleetyard-reboot-{uuid}"
        ))
        .is_none());
}

#[rstest]
#[tokio::test]
async fn a_conductor_made_anew_mid_reboot_finishes_it_with_one_reboot(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let api = Api::new(backend, 1800).await;
    let m = api.worker().await;
    let uuid = m["uuid"].as_str().expect("uuid").to_string();
    api.reboot(&m).await;
    let first = Arc::new(api.conductor());
    first.try_execute_one().await.expect("the first step");
    let node = api.node();
    assert_eq!(node["spec"]["unschedulable"], true, "cordoned: {node}");
    assert_eq!(api.show(&m).await["status"]["phase"], "Provisioning");
    drop(first);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    let shown = api.settle(&api.conductor(), &m).await;
    api.assert_rebooted_once(&shown, &uuid);
}

#[rstest]
#[tokio::test]
async fn a_reboot_requested_on_the_kubernetes_face_takes_the_same_path(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let api = Api::new(backend, 1800).await;
    let m = api.worker().await;
    let uuid = m["uuid"].as_str().expect("uuid").to_string();
    let base = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machines";
    let listed = api.app.get_as(base, &api.app.headers).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let name = listed.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["metadata"]["uid"] == json!(uuid))
        .and_then(|i| i["metadata"]["name"].as_str())
        .expect("the worker on the Kubernetes face")
        .to_string();
    let patch = json!({"metadata": {"annotations": {"fleetyard.openstack.org/reboot-requested-at": "2026-11-28T10:00:00Z"}}});
    let r = api
        .app
        .send(
            api.app
                .client
                .request(Method::PATCH, api.app.url(&format!("{base}/{name}")))
                .headers(api.app.headers.clone())
                .header("Accept", "application/json")
                .header("Content-Type", "application/merge-patch+json")
                .body(patch.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning", "{}", r.text);
    let shown = api.settle(&api.conductor(), &m).await;
    api.assert_rebooted_once(&shown, &uuid);
}
