//! The drivers' sections: `[drivers]` (which driver serves which COE) and each driver's own,
//! `[fake_driver]` and `[kubernetes_driver]`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DriversSection {
    /// Driver for templates that name none (`fake` is the simulator used by the quick start).
    pub default_driver: String,
    /// Comma-separated driver names that may not be used.
    pub disabled_drivers: String,
}

impl Default for DriversSection {
    fn default() -> Self {
        DriversSection {
            default_driver: "fake".into(),
            disabled_drivers: String::new(),
        }
    }
}

/// The `fake` driver: a deterministic simulator of provisioning.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FakeDriverSection {
    /// Simulated seconds each operation takes; 0 completes within the job.
    pub create_seconds: u64,
    pub update_seconds: u64,
    pub delete_seconds: u64,
    pub federation_seconds: u64,
    /// Milliseconds every simulated backend call blocks (a slow cloud API).
    pub latency_ms: u64,
    /// Operations (as the `fake_fail` label names them, comma-separated) this process's
    /// simulator fails permanently, for every cluster: a broken infrastructure that an
    /// operator later repairs (another process without it).
    pub fail_operations: String,
    /// Operations this process's simulator fails transiently, for every cluster and every
    /// attempt: an infrastructure API that stays unreachable.
    pub transient_operations: String,
    /// The `n`-th machine this process's simulator is asked to replace fails permanently
    /// (asked again, it fails again); 0 fails none. A rolling replacement that stops part way.
    pub fail_replacement: u32,
}

impl Default for FakeDriverSection {
    fn default() -> Self {
        FakeDriverSection {
            create_seconds: 3,
            update_seconds: 2,
            delete_seconds: 1,
            federation_seconds: 1,
            latency_ms: 0,
            fail_operations: String::new(),
            transient_operations: String::new(),
            fail_replacement: 0,
        }
    }
}

/// The `kubernetes` driver: Cluster API objects on a management cluster, Karmada for
/// federations. It is registered only when `kubeconfig` is set.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KubernetesDriverSection {
    /// Path of the kubeconfig of the Cluster API management cluster; empty leaves the driver
    /// unconfigured.
    pub kubeconfig: String,
    /// Context of that kubeconfig to use; empty means its current context.
    pub context: String,
    /// Namespace of the management cluster the Cluster API objects are applied in.
    pub namespace: String,
    /// Kubernetes version of clusters whose template and labels name no `kube_tag`.
    pub default_kube_tag: String,
    /// apiVersion of the infrastructure provider's objects.
    pub infrastructure_api_version: String,
    /// Kind of the infrastructure cluster object (OpenStackCluster for CAPO).
    pub infrastructure_cluster_kind: String,
    /// Kind of the infrastructure machine template (OpenStackMachineTemplate for CAPO).
    pub infrastructure_machine_template_kind: String,
    /// The Cluster API version the driver writes and reads: `v1beta1` or `v1beta2` (Cluster
    /// API 1.11 and later).
    pub cluster_api_version: String,
    /// Secret (in `namespace`) holding the clouds.yaml CAPO uses, and the cloud's name in it.
    pub cloud_credentials_secret: String,
    pub cloud_name: String,
    /// Seconds to wait for a Kubernetes API server to connect or answer.
    pub request_timeout: u64,
    /// The federation control plane: only `karmada` exists.
    pub federation_engine: String,
    /// Namespace of the host cluster the Karmada control plane runs in.
    pub karmada_namespace: String,
    /// Service type of the Karmada API server (the operator writes its address from it).
    pub karmada_apiserver_service_type: String,
    /// Image of the privileged Pod that reboots a node of a workload cluster (it runs
    /// `nsenter -t 1 -m -u -i -n -p -- systemctl reboot`, so it needs `nsenter`).
    pub reboot_image: String,
    /// Seconds a machine's reboot (cordon, drain, reboot, the node Ready again) may take.
    pub reboot_timeout: u64,
}

impl Default for KubernetesDriverSection {
    fn default() -> Self {
        KubernetesDriverSection {
            kubeconfig: String::new(),
            context: String::new(),
            namespace: "magnum-system".into(),
            default_kube_tag: "v1.30.1".into(),
            infrastructure_api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
            infrastructure_cluster_kind: "OpenStackCluster".into(),
            infrastructure_machine_template_kind: "OpenStackMachineTemplate".into(),
            cluster_api_version: "v1beta1".into(),
            cloud_credentials_secret: "openstack-cloud-credentials".into(),
            cloud_name: "openstack".into(),
            request_timeout: 30,
            federation_engine: "karmada".into(),
            karmada_namespace: "karmada-system".into(),
            karmada_apiserver_service_type: "NodePort".into(),
            reboot_image: "busybox:1.36".into(),
            reboot_timeout: 1800,
        }
    }
}
