//! The master node group's flavor or image change with the kubernetes driver: the whole group
//! handed to the KubeadmControlPlane (a new OpenStackMachineTemplate, the control plane's
//! machine template pointed at it with a rolling update of `maxSurge` 1), followed until
//! every replica is up to date and ready, the masters read back from the new Machines, each
//! once; in both Cluster API versions, every write held to the published types. A failed or
//! stuck roll-out is refused with Cluster API's reason and resumed by a retry; a driver made
//! anew (a restarted conductor) goes on from the management cluster without a second template.

use super::*;

const ROLL_STARTED: &str = "fleetyard/roll-started";

struct Roll {
    env: Env,
    c: ClusterContext,
    version: String,
}

impl Roll {
    /// A provisioned cluster whose master group now asks for another flavor and image.
    async fn new(version: &str) -> Roll {
        let (env, mut c, _) = super::machine_ops::replace_env(version).await;
        c.nodegroups[0].flavor_id = Some("m1.xlarge".into());
        c.nodegroups[0].image_id = Some("ubuntu-2404-kube-v1.30.2".into());
        Roll {
            env,
            c,
            version: version.into(),
        }
    }

    fn masters(&self) -> Vec<Machine> {
        self.c.machines[..3].to_vec()
    }

    fn kcp_path(&self) -> String {
        format!(
            "/apis/controlplane.cluster.x-k8s.io/{}/namespaces/{NS}/kubeadmcontrolplanes/{C1_NAME}-control-plane",
            self.version
        )
    }

    fn machine_path(&self, name: &str) -> String {
        format!(
            "/apis/cluster.x-k8s.io/{}/namespaces/{NS}/machines/{name}",
            self.version
        )
    }

    fn kcp(&self) -> Value {
        self.env.mgmt.get(&self.kcp_path()).expect("kcp")
    }

    /// The control plane's machine template reference, where this version keeps it.
    fn template_ref(&self) -> Value {
        let kcp = self.kcp();
        match self.version.as_str() {
            "v1beta1" => kcp["spec"]["machineTemplate"]["infrastructureRef"].clone(),
            _ => kcp["spec"]["machineTemplate"]["spec"]["infrastructureRef"].clone(),
        }
    }

    /// The names of the control plane's machine templates on the management cluster.
    fn templates(&self) -> Vec<String> {
        self.env
            .mgmt
            .objects()
            .into_iter()
            .filter(|(p, _)| p.contains("/openstackmachinetemplates/"))
            .filter_map(|(_, o)| o["metadata"]["name"].as_str().map(str::to_string))
            .filter(|n| n.starts_with(&format!("{C1_NAME}-control-plane-")))
            .collect()
    }

    async fn step(&self, driver: &KubernetesDriver) -> Result<Progress, DriverError> {
        driver
            .roll_nodegroup(&self.c, &self.c.nodegroups[0], &self.masters())
            .await
    }

    /// Cluster API's answer to the roll-out: the old control plane Machines gone, `new` (names)
    /// serving, the control plane's status up to date and ready at its generation.
    fn roll_out(&self, new: &[&str]) {
        for i in 0..3 {
            self.env
                .mgmt
                .remove(&self.machine_path(&format!("{C1_NAME}-control-plane-m{i}")));
        }
        for (i, name) in new.iter().enumerate() {
            self.env.mgmt.put(
                &self.machine_path(name),
                json!({
                    "apiVersion": format!("cluster.x-k8s.io/{}", self.version), "kind": "Machine",
                    "metadata": {
                        "labels": {"cluster.x-k8s.io/cluster-name": C1_NAME, "cluster.x-k8s.io/control-plane": ""},
                        "creationTimestamp": format!("2026-02-0{}T00:00:00Z", i + 1),
                    },
                    "spec": {"clusterName": C1_NAME, "providerID": format!("openstack:///server-{name}")},
                    "status": {
                        "phase": "Running",
                        "nodeRef": {"kind": "Node", "name": format!("node-{name}")},
                        "addresses": [{"type": "InternalIP", "address": format!("10.0.1.{i}")}],
                    },
                }),
            );
        }
        let generation = self.kcp()["metadata"]["generation"].clone();
        let up_to_date = if self.version == "v1beta1" {
            "updatedReplicas"
        } else {
            "upToDateReplicas"
        };
        self.env.mgmt.update(
            &self.kcp_path(),
            json!({"status": {"observedGeneration": generation, "replicas": 3, "readyReplicas": 3, up_to_date: 3}}),
        );
    }
}

/// `(method, last path segment, body)` of every write since the last clear.
fn writes(mgmt: &FakeKube) -> Vec<(String, String, Value)> {
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

/// The merge patch of the control plane's roll-out fields in `version`'s shape.
fn rollout_patch(version: &str, template: &str) -> Value {
    if version == "v1beta1" {
        json!({"spec": {
            "machineTemplate": {"infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachineTemplate", "name": template}},
            "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        }})
    } else {
        json!({"spec": {
            "machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachineTemplate", "name": template}}},
            "rollout": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
        }})
    }
}

/// Starts the roll and checks its writes: the new template applied, then exactly the control
/// plane's template reference and strategy patched (and the roll's start noted). Returns the
/// new template's name.
async fn start(r: &Roll) -> String {
    let old = r.template_ref()["name"].clone();
    assert_eq!(r.templates().len(), 1);
    let progress = r.step(&r.env.driver).await.expect("roll");
    assert!(matches!(progress, Progress::Started(_)), "{progress:?}");
    let requests = r.env.mgmt.requests();
    let (checked, findings) = type_findings(&requests);
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(checked, 1, "the control plane's patch is checked");
    let sent = writes(&r.env.mgmt);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let template = &sent[0].2;
    assert_eq!(sent[0].0, "PATCH");
    assert_eq!(template["kind"], "OpenStackMachineTemplate");
    let name = template["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    assert_ne!(json!(name), old, "a new machine template");
    assert_eq!(template["spec"]["template"]["spec"]["flavor"], "m1.xlarge");
    assert_eq!(
        template["spec"]["template"]["spec"]["image"],
        json!({"filter": {"name": "ubuntu-2404-kube-v1.30.2"}})
    );
    let (method, target, mut patch) = sent[1].clone();
    assert_eq!(
        (method.as_str(), target.as_str()),
        ("PATCH", format!("{C1_NAME}-control-plane").as_str())
    );
    let began = patch["metadata"]["annotations"][ROLL_STARTED]
        .as_str()
        .expect("the roll's start")
        .to_string();
    assert!(
        chrono::DateTime::parse_from_rfc3339(&began).is_ok(),
        "{began}"
    );
    patch.as_object_mut().expect("patch").remove("metadata");
    assert_eq!(
        patch,
        rollout_patch(&r.version, &name),
        "exactly these fields"
    );
    assert_eq!(r.template_ref()["name"], json!(name));
    assert_eq!(r.kcp()["spec"]["version"], "v1.30.2", "the version stays");
    assert_eq!(r.templates().len(), 2);
    name
}

async fn a_master_roll_hands_the_group_to_the_control_plane(version: &str) {
    let r = Roll::new(version).await;
    let template = start(&r).await;

    // A conductor restarted mid-roll: a driver made anew goes on, sends nothing.
    let again = KubernetesDriver::new(KubernetesDriverSection {
        kubeconfig: r.env.dir.0.join("kubeconfig").display().to_string(),
        request_timeout: 5,
        cluster_api_version: version.into(),
        ..KubernetesDriverSection::default()
    })
    .expect("driver");
    r.env.mgmt.clear_requests();
    for _ in 0..2 {
        let progress = r.step(&again).await.expect("resumed");
        assert!(matches!(progress, Progress::Started(_)), "{progress:?}");
    }
    assert!(writes(&r.env.mgmt).is_empty(), "{:?}", writes(&r.env.mgmt));
    assert_eq!(r.templates().len(), 2, "no second template");

    // Half-way (one new machine, status not up to date): still under way.
    r.env.mgmt.update(
        &r.kcp_path(),
        json!({"status": {"observedGeneration": r.kcp()["metadata"]["generation"], "replicas": 4, "readyReplicas": 4}}),
    );
    assert!(matches!(
        r.step(&again).await.expect("half-way"),
        Progress::Started(_)
    ));

    r.roll_out(&["cp-new-a", "cp-new-b", "cp-new-c"]);
    r.env.mgmt.clear_requests();
    let Progress::Done(obs) = r.step(&again).await.expect("done") else {
        panic!("the roll-out is done")
    };
    for (m, new) in r.masters().iter().zip(["cp-new-a", "cp-new-b", "cp-new-c"]) {
        let seen = &obs.machines[&m.uuid];
        assert_eq!(
            seen.provider_id.as_deref(),
            Some(format!("openstack:///server-{new}").as_str()),
            "{}",
            m.name
        );
        assert_eq!(
            seen.node_ref.as_deref(),
            Some(format!("node-{new}").as_str())
        );
        assert_ne!(seen.provider_id, m.status.provider_id, "replaced");
    }
    assert_eq!(obs.machines.len(), 3, "the masters, each once");
    assert_eq!(
        writes(&r.env.mgmt),
        [(
            "PATCH".to_string(),
            format!("{C1_NAME}-control-plane"),
            json!({"metadata": {"annotations": {ROLL_STARTED: null}}})
        )],
        "the roll's note removed, nothing else"
    );
    let (_, findings) = type_findings(&r.env.mgmt.requests());
    assert!(findings.is_empty(), "{findings:#?}");

    // Asked again (the answer was lost): the same machines, nothing sent.
    r.env.mgmt.clear_requests();
    assert_eq!(
        r.step(&r.env.driver).await.expect("again"),
        Progress::Done(obs)
    );
    assert!(writes(&r.env.mgmt).is_empty(), "{:?}", writes(&r.env.mgmt));
    assert_eq!(r.template_ref()["name"], json!(template));
    assert_eq!(r.templates().len(), 2);
}

#[tokio::test]
async fn a_master_roll_hands_the_group_to_the_control_plane_v1beta1() {
    a_master_roll_hands_the_group_to_the_control_plane("v1beta1").await;
}

#[tokio::test]
async fn a_master_roll_hands_the_group_to_the_control_plane_v1beta2() {
    a_master_roll_hands_the_group_to_the_control_plane("v1beta2").await;
}

async fn a_failed_roll_out_is_refused_with_the_reason_and_a_retry_resumes_it(version: &str) {
    let r = Roll::new(version).await;
    let template = start(&r).await;
    let failed = r.machine_path("cp-new-a");
    let failure =
        json!({"failureReason": "CreateError", "failureMessage": "No valid host was found."});
    let status = if version == "v1beta1" {
        let mut s = failure.clone();
        s["phase"] = json!("Failed");
        s
    } else {
        json!({"phase": "Failed", "deprecated": {"v1beta1": failure}})
    };
    r.env.mgmt.put(
        &failed,
        json!({
            "apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "Machine",
            "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": C1_NAME, "cluster.x-k8s.io/control-plane": ""}},
            "spec": {"clusterName": C1_NAME},
            "status": status,
        }),
    );
    r.env.mgmt.clear_requests();
    let text = permanent(r.step(&r.env.driver).await);
    assert_eq!(
        text,
        "Cluster API reports that the control plane machine cp-new-a failed (CreateError): No valid host was found."
    );
    assert!(r.kcp()["metadata"]["annotations"][ROLL_STARTED].is_null());

    // Cluster API remediated the machine; the retry resumes the same roll-out.
    r.env.mgmt.remove(&failed);
    r.env.mgmt.clear_requests();
    let progress = r.step(&r.env.driver).await.expect("retry");
    assert!(matches!(progress, Progress::Started(_)));
    let sent = writes(&r.env.mgmt);
    assert_eq!(sent.len(), 1, "only the roll's start noted again: {sent:?}");
    assert_eq!(
        sent[0].2["metadata"]["annotations"][ROLL_STARTED]
            .as_str()
            .map(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok()),
        Some(true)
    );
    assert!(sent[0].2.get("spec").is_none());
    assert_eq!(r.templates().len(), 2, "no second template");
    assert_eq!(r.template_ref()["name"], json!(template));
    r.roll_out(&["cp-new-b", "cp-new-c", "cp-new-d"]);
    let Progress::Done(obs) = r.step(&r.env.driver).await.expect("done") else {
        panic!("done")
    };
    assert_eq!(
        obs.machines[&r.masters()[0].uuid].provider_id.as_deref(),
        Some("openstack:///server-cp-new-b")
    );
}

#[tokio::test]
async fn a_failed_roll_out_is_refused_with_the_reason_and_a_retry_resumes_it_v1beta1() {
    a_failed_roll_out_is_refused_with_the_reason_and_a_retry_resumes_it("v1beta1").await;
}

#[tokio::test]
async fn a_failed_roll_out_is_refused_with_the_reason_and_a_retry_resumes_it_v1beta2() {
    a_failed_roll_out_is_refused_with_the_reason_and_a_retry_resumes_it("v1beta2").await;
}

#[tokio::test]
async fn a_stuck_roll_out_ends_after_the_clusters_create_timeout_and_a_retry_times_it_anew() {
    let r = Roll::new("v1beta1").await;
    start(&r).await;
    r.env.mgmt.update(
        &r.kcp_path(),
        json!({"metadata": {"annotations": {ROLL_STARTED: "2026-01-01T00:00:00+00:00"}}}),
    );
    let text = permanent(r.step(&r.env.driver).await);
    assert_eq!(
        text,
        "The KubeadmControlPlane has not rolled its machines onto the new machine template in 60 minutes (the cluster's create timeout): the roll-out is stuck."
    );
    assert!(r.kcp()["metadata"]["annotations"][ROLL_STARTED].is_null());
    let progress = r.step(&r.env.driver).await.expect("retry");
    assert!(matches!(progress, Progress::Started(_)));
    let began = r.kcp()["metadata"]["annotations"][ROLL_STARTED]
        .as_str()
        .expect("timed anew")
        .to_string();
    assert_ne!(began, "2026-01-01T00:00:00+00:00");
    assert_eq!(r.templates().len(), 2);
}

#[tokio::test]
async fn the_kubernetes_driver_rolls_only_the_master_group_as_a_whole() {
    let r = Roll::new("v1beta1").await;
    assert!(r.env.driver.rolls_whole_group(&r.c.nodegroups[0]));
    assert!(!r.env.driver.rolls_whole_group(&r.c.nodegroups[1]));
    let workers = r.c.machines[3..].to_vec();
    let text = permanent(
        r.env
            .driver
            .roll_nodegroup(&r.c, &r.c.nodegroups[1], &workers)
            .await,
    );
    assert!(text.contains("is not the control plane"), "{text}");
    assert!(r.env.mgmt.requests().is_empty());
}
