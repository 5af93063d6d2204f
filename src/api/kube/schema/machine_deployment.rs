//! `cluster.k8s.io/v1alpha1`: MachineDeployment, MachineDeploymentList and their parts (one
//! per node group), and `autoscaling/v1` `Scale` (its `scale` subresource).

use super::group::LABEL_SELECTOR;
use super::machine::MACHINE_SPEC;
use super::meta::{
    API_VERSION_DOC, CONDITION, KIND_DOC, LIST_META, LIST_META_DOC, OBJECT_META, OBJECT_META_DOC,
};
use super::{f, req, Schema, Ty};

pub static MACHINE_TEMPLATE_META: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineTemplateMeta",
    description: "The metadata every machine of the node group carries.",
    fields: &[f(
        "labels",
        "Labels of the machines: their cluster's registry name and their node group's name.",
        Ty::StringMap,
    )],
    gvk: None,
};

pub static MACHINE_TEMPLATE_SPEC: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineTemplateSpec",
    description: "MachineTemplateSpec describes the machines the node group is made of.",
    fields: &[
        f(
            "metadata",
            "The machines' metadata (their labels).",
            Ty::Object(&MACHINE_TEMPLATE_META),
        ),
        f(
            "spec",
            "The MachineSpec of the node group's machines, as the Machine kind shows it: a \
             change of versions.kubelet, flavor or osImage replaces every machine, maxSurge at \
             a time.",
            Ty::Object(&MACHINE_SPEC),
        ),
    ],
    gvk: None,
};

pub static ROLLING_UPDATE: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineRollingUpdateDeployment",
    description: "How the node group's machines are replaced when its template changes.",
    fields: &[
        f(
            "maxSurge",
            "How many machines are replaced at once (a new machine first): an integer of at \
             least 1 or a percentage of the replicas. The batch of the roll a write starts; \
             not kept (shown as 1).",
            Ty::IntOrString,
        ),
        f(
            "maxUnavailable",
            "Always 0: every machine is replaced by a new one first.",
            Ty::IntOrString,
        ),
    ],
    gvk: None,
};

pub static MACHINE_DEPLOYMENT_STRATEGY: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineDeploymentStrategy",
    description: "MachineDeploymentStrategy describes how to replace the node group's machines.",
    fields: &[
        f(
            "rollingUpdate",
            "Rolling update config params.",
            Ty::Object(&ROLLING_UPDATE),
        ),
        f("type", "Always RollingUpdate.", Ty::String),
    ],
    gvk: None,
};

pub static MACHINE_DEPLOYMENT_SPEC: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineDeploymentSpec",
    description: "MachineDeploymentSpec is the node group's desired state.",
    fields: &[
        f(
            "replicas",
            "Number of desired machines: the node group's node count. A change resizes the \
             node group.",
            Ty::Int64,
        ),
        f(
            "selector",
            "Label selector for the node group's machines (its two labels).",
            Ty::Object(&LABEL_SELECTOR),
        ),
        f(
            "strategy",
            "The deployment strategy to use to replace existing machines with new ones.",
            Ty::Object(&MACHINE_DEPLOYMENT_STRATEGY),
        ),
        f(
            "template",
            "Template describes the machines the node group is made of.",
            Ty::Object(&MACHINE_TEMPLATE_SPEC),
        ),
    ],
    gvk: None,
};

pub static MACHINE_DEPLOYMENT_STATUS: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineDeploymentStatus",
    description: "MachineDeploymentStatus counts the node group's machines and says its status.",
    fields: &[
        f("availableReplicas", "Machines running.", Ty::Int64),
        f(
            "conditions",
            "Available, Progressing (False when the node group's last operation failed) and \
             ReplicaFailure (the node group's *_FAILED status and its reason).",
            Ty::ObjectList(&CONDITION),
        ),
        f("readyReplicas", "Machines running.", Ty::Int64),
        f(
            "replicas",
            "Machines of the node group not being deleted.",
            Ty::Int64,
        ),
        f(
            "unavailableReplicas",
            "Desired machines not running.",
            Ty::Int64,
        ),
        f(
            "updatedReplicas",
            "Machines on the node group's flavor, image and Kubernetes version.",
            Ty::Int64,
        ),
    ],
    gvk: None,
};

pub static MACHINE_DEPLOYMENT: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineDeployment",
    description: "MachineDeployment is one node group of a cluster: its replicas, the machine \
         template they are made from, and how a change of that template rolls them.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "spec",
            "MachineDeploymentSpec is the node group's desired state.",
            Ty::Object(&MACHINE_DEPLOYMENT_SPEC),
        ),
        f(
            "status",
            "MachineDeploymentStatus is the node group's observed state.",
            Ty::Object(&MACHINE_DEPLOYMENT_STATUS),
        ),
    ],
    gvk: Some(("cluster.k8s.io", "v1alpha1", "MachineDeployment")),
};

pub static MACHINE_DEPLOYMENT_LIST: Schema = Schema {
    id: "io.k8s.cluster.v1alpha1.MachineDeploymentList",
    description: "MachineDeploymentList is a list of MachineDeployment.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        req(
            "items",
            "List of machine deployments.",
            Ty::ObjectList(&MACHINE_DEPLOYMENT),
        ),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
    ],
    gvk: Some(("cluster.k8s.io", "v1alpha1", "MachineDeploymentList")),
};

pub static SCALE_SPEC: Schema = Schema {
    id: "io.k8s.api.autoscaling.v1.ScaleSpec",
    description: "ScaleSpec describes the attributes of a scale subresource.",
    fields: &[f(
        "replicas",
        "replicas is the desired number of instances for the scaled object.",
        Ty::Int64,
    )],
    gvk: None,
};

pub static SCALE_STATUS: Schema = Schema {
    id: "io.k8s.api.autoscaling.v1.ScaleStatus",
    description: "ScaleStatus represents the current status of a scale subresource.",
    fields: &[
        req(
            "replicas",
            "replicas is the actual number of observed instances of the scaled object.",
            Ty::Int64,
        ),
        f(
            "selector",
            "selector is the label query over pods that should match the replicas count.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static SCALE: Schema = Schema {
    id: "io.k8s.api.autoscaling.v1.Scale",
    description: "Scale represents a scaling request for a resource.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "spec",
            "spec defines the behavior of the scale.",
            Ty::Object(&SCALE_SPEC),
        ),
        f(
            "status",
            "status is the current status of the scale.",
            Ty::Object(&SCALE_STATUS),
        ),
    ],
    gvk: Some(("autoscaling", "v1", "Scale")),
};
