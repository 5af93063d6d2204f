//! `cluster.k8s.io/v1alpha1`: Machine, MachineList and their parts (the Machine of the Cluster
//! Management API), with core/v1's `Taint`, `NodeAddress` and `ObjectReference` as the API
//! server's OpenAPI describes them.

use super::meta::{
    API_VERSION_DOC, KIND_DOC, LIST_META, LIST_META_DOC, OBJECT_META, OBJECT_META_DOC,
};
use super::{f, req, Schema, Ty};

pub static TAINT: Schema = Schema {
    id: "io.k8s.api.core.v1.Taint",
    description: "The node this Taint is attached to has the \"effect\" on any pod that does not \
         tolerate the Taint.",
    fields: &[
        req(
            "effect",
            "Required. The effect of the taint on pods that do not tolerate the taint. Valid \
             effects are NoSchedule, PreferNoSchedule and NoExecute.",
            Ty::String,
        ),
        req(
            "key",
            "Required. The taint key to be applied to a node.",
            Ty::String,
        ),
        f(
            "timeAdded",
            "TimeAdded represents the time at which the taint was added.",
            Ty::DateTime,
        ),
        f(
            "value",
            "The taint value corresponding to the taint key.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static NODE_ADDRESS: Schema = Schema {
    id: "io.k8s.api.core.v1.NodeAddress",
    description: "NodeAddress contains information for the node's address.",
    fields: &[
        req("address", "The node address.", Ty::String),
        req(
            "type",
            "Node address type, one of Hostname, ExternalIP or InternalIP.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CORE_OBJECT_REFERENCE: Schema = Schema {
    id: "io.k8s.api.core.v1.ObjectReference",
    description: "ObjectReference contains enough information to let you inspect or modify the \
         referred object.",
    fields: &[
        f("apiVersion", "API version of the referent.", Ty::String),
        f(
            "fieldPath",
            "If referring to a piece of an object instead of an entire object, this string \
             should contain a valid JSON/Go field access statement.",
            Ty::String,
        ),
        f("kind", "Kind of the referent.", Ty::String),
        f("name", "Name of the referent.", Ty::String),
        f("namespace", "Namespace of the referent.", Ty::String),
        f(
            "resourceVersion",
            "Specific resourceVersion to which this reference is made, if any.",
            Ty::String,
        ),
        f("uid", "UID of the referent.", Ty::String),
    ],
    gvk: None,
};

pub static MACHINE_VERSION_INFO: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineVersionInfo",
    description: "MachineVersionInfo holds the Kubernetes versions a machine should run (spec) \
         or runs (status).",
    fields: &[
        f(
            "controlPlane",
            "ControlPlane is the semantic version of the Kubernetes control plane to run (a \
             master machine's only), e.g. v1.31.4.",
            Ty::String,
        ),
        f(
            "kubelet",
            "Kubelet is the semantic version of kubelet to run, e.g. v1.31.4.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CONTAINER_RUNTIME_INFO: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.ContainerRuntimeInfo",
    description: "ContainerRuntimeInfo names the container runtime of a machine and its version.",
    fields: &[
        f(
            "name",
            "Name of the container runtime, e.g. containerd.",
            Ty::String,
        ),
        f(
            "version",
            "Version of the container runtime, e.g. 1.7.22.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static MACHINE_SPEC: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineSpec",
    description: "MachineSpec defines the desired state of a Machine: what the node should run.",
    fields: &[
        f(
            "containerRuntime",
            "ContainerRuntime is the container runtime the node should run.",
            Ty::Object(&CONTAINER_RUNTIME_INFO),
        ),
        f(
            "flavor",
            "Flavor is the compute flavor of the node (its node group's).",
            Ty::String,
        ),
        f(
            "labels",
            "Labels are the Kubernetes labels the node carries (not the Machine object's own \
             labels).",
            Ty::StringMap,
        ),
        f(
            "osImage",
            "OSImage is the operating system image of the node.",
            Ty::String,
        ),
        f(
            "providerConfig",
            "ProviderConfig is owned by the cluster's driver: opaque to the service, stored and \
             shown as the driver wrote it.",
            Ty::Preserved,
        ),
        f(
            "taints",
            "Taints are the taints the node carries.",
            Ty::ObjectList(&TAINT),
        ),
        f(
            "versions",
            "Versions are the Kubernetes versions the node should run.",
            Ty::Object(&MACHINE_VERSION_INFO),
        ),
    ],
    gvk: None,
};

pub static MACHINE_STATUS: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineStatus",
    description: "MachineStatus defines the observed state of a Machine, as its driver last \
         reported it.",
    fields: &[
        f(
            "addresses",
            "Addresses are the node's addresses.",
            Ty::ObjectList(&NODE_ADDRESS),
        ),
        f(
            "errorMessage",
            "ErrorMessage says in a sentence what went wrong when the machine failed.",
            Ty::String,
        ),
        f(
            "errorReason",
            "ErrorReason is a short CamelCase word for why the machine failed.",
            Ty::String,
        ),
        f(
            "lastChange",
            "LastChange is how the driver applied the machine's last change: InPlace or Replace.",
            Ty::String,
        ),
        f(
            "lastUpdated",
            "LastUpdated is when the driver last reported on the machine.",
            Ty::DateTime,
        ),
        f(
            "nodeRef",
            "NodeRef is the Kubernetes Node the machine became.",
            Ty::Object(&CORE_OBJECT_REFERENCE),
        ),
        f(
            "phase",
            "Phase is where the machine is in its life: Pending, Provisioning, Running, Deleting \
             or Failed.",
            Ty::String,
        ),
        f(
            "providerID",
            "ProviderID is the machine's identity at its infrastructure provider.",
            Ty::String,
        ),
        f(
            "versions",
            "Versions are the Kubernetes versions the node runs.",
            Ty::Object(&MACHINE_VERSION_INFO),
        ),
    ],
    gvk: None,
};

pub static MACHINE: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.Machine",
    description: "Machine is one node of a cluster, owned by its node group and cluster (read \
         only on this API).",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "spec",
            "MachineSpec defines the desired state of a Machine.",
            Ty::Object(&MACHINE_SPEC),
        ),
        f(
            "status",
            "MachineStatus defines the observed state of a Machine.",
            Ty::Object(&MACHINE_STATUS),
        ),
    ],
    gvk: Some(("cluster.k8s.io", "v1alpha1", "Machine")),
};

pub static MACHINE_LIST: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineList",
    description: "MachineList is a list of Machine.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        req("items", "List of machines.", Ty::ObjectList(&MACHINE)),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
    ],
    gvk: Some(("cluster.k8s.io", "v1alpha1", "MachineList")),
};
