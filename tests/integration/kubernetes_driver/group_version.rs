//! A worker group rolled to a Kubernetes version (a `MachineDeployment`'s
//! `spec.template.spec.versions.kubelet` on the Kubernetes face) with the kubernetes driver:
//! each machine, respecified at the new kubelet, is replaced by one that Cluster API makes at
//! that version, since the driver moves the MachineDeployment's template to it.

use super::machine_ops::replace_env;
use super::*;
use fleetyard::domain::machine::KubeVersion;

#[tokio::test]
async fn a_replacement_at_a_newer_kubelet_moves_the_machine_deployment_to_that_version() {
    let (env, c, mut m) = replace_env("v1beta1").await;
    let md_path = format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}");
    let before = env.mgmt.get(&md_path).expect("md");
    assert_eq!(before["spec"]["template"]["spec"]["version"], "v1.30.2");
    m.spec.versions.kubelet = Some(KubeVersion::parse("v1.31.4").expect("version"));

    let progress = env.driver.replace_machine(&c, &m).await.expect("replace");
    assert!(matches!(progress, Progress::Started(_)), "{progress:?}");
    let md = env.mgmt.get(&md_path).expect("md");
    let spec = &md["spec"]["template"]["spec"];
    assert_eq!(
        spec["version"], "v1.31.4",
        "the surge is made at the new kubelet"
    );
    assert_eq!(
        md["spec"]["strategy"]["type"], "OnDelete",
        "the others wait their turn"
    );
    assert_eq!(md["spec"]["replicas"], 3, "the surge");
    assert_eq!(
        spec["infrastructureRef"]["name"],
        before["spec"]["template"]["spec"]["infrastructureRef"]["name"],
        "flavor and image unchanged: the same machine template"
    );

    // Asked again (a conductor restarted): the MachineDeployment is at the version already.
    env.mgmt.clear_requests();
    env.driver.replace_machine(&c, &m).await.expect("again");
    assert!(
        applies(&env.mgmt.requests()).is_empty(),
        "nothing applied twice: {:?}",
        env.mgmt.requests()
    );
}

#[tokio::test]
async fn a_replacement_whose_machine_spec_lags_keeps_the_version_the_group_runs() {
    let (env, c, mut m) = replace_env("v1beta1").await;
    let md_path = format!("{CAPI}/namespaces/{NS}/machinedeployments/{WORKER_MD}");
    m.spec.versions.kubelet = Some(KubeVersion::parse("v1.29.9").expect("version"));
    env.driver.replace_machine(&c, &m).await.expect("replace");
    let md = env.mgmt.get(&md_path).expect("md");
    assert_eq!(md["spec"]["template"]["spec"]["version"], "v1.30.2");
    assert!(
        applies(&env.mgmt.requests()).is_empty(),
        "no template re-applied: {:?}",
        env.mgmt.requests()
    );
}
