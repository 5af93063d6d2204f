//! `multicluster.x-k8s.io/v1alpha1`: ClusterProfile, ClusterProfileList and their parts.

use super::meta::{
    API_VERSION_DOC, CONDITION, KIND_DOC, LIST_META, LIST_META_DOC, OBJECT_META, OBJECT_META_DOC,
};
use super::{f, req, Schema, Ty};

pub static CLUSTER_MANAGER: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.ClusterManager",
    description: "ClusterManager defines which cluster manager owns the ClusterProfile.",
    fields: &[req(
        "name",
        "Name defines the name of the cluster manager.",
        Ty::String,
    )],
    gvk: None,
};

pub static CLUSTER_PROFILE_SPEC: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.ClusterProfileSpec",
    description: "ClusterProfileSpec defines the desired state of ClusterProfile.",
    fields: &[
        req(
            "clusterManager",
            "ClusterManager defines which cluster manager owns this ClusterProfile resource.",
            Ty::Object(&CLUSTER_MANAGER),
        ),
        f(
            "displayName",
            "DisplayName defines a human-readable name of the ClusterProfile.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CLUSTER_VERSION: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.ClusterVersion",
    description: "ClusterVersion represents version information about the cluster.",
    fields: &[f(
        "kubernetes",
        "Kubernetes is the kubernetes version of the cluster.",
        Ty::String,
    )],
    gvk: None,
};

pub static PROPERTY: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.Property",
    description: "Property defines a name/value pair to represent a property of a cluster.",
    fields: &[
        f(
            "lastObservedTime",
            "LastObservedTime is the last time the property was observed.",
            Ty::DateTime,
        ),
        req(
            "name",
            "Name is the name of a property resource on cluster.",
            Ty::String,
        ),
        req("value", "Value is a property-dependent string", Ty::String),
    ],
    gvk: None,
};

pub static CLUSTER_PROFILE_STATUS: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.ClusterProfileStatus",
    description: "ClusterProfileStatus defines the observed state of ClusterProfile.",
    fields: &[
        f(
            "conditions",
            "Conditions contains the different condition statuses for this cluster \
             (ControlPlaneHealthy, Joined).",
            Ty::ObjectList(&CONDITION),
        ),
        f(
            "properties",
            "Properties defines name/value pairs to represent properties of a cluster.",
            Ty::ObjectList(&PROPERTY),
        ),
        f(
            "version",
            "Version defines the version information of the cluster.",
            Ty::Object(&CLUSTER_VERSION),
        ),
    ],
    gvk: None,
};

pub static CLUSTER_PROFILE: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.ClusterProfile",
    description: "ClusterProfile represents a single cluster in a multi-cluster deployment (a \
         read-only view of the service's clusters).",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        req(
            "spec",
            "ClusterProfileSpec defines the desired state of ClusterProfile.",
            Ty::Object(&CLUSTER_PROFILE_SPEC),
        ),
        f(
            "status",
            "ClusterProfileStatus defines the observed state of ClusterProfile.",
            Ty::Object(&CLUSTER_PROFILE_STATUS),
        ),
    ],
    gvk: Some(("multicluster.x-k8s.io", "v1alpha1", "ClusterProfile")),
};

pub static CLUSTER_PROFILE_LIST: Schema = Schema {
    id: "io.x-k8s.multicluster.v1alpha1.ClusterProfileList",
    description: "ClusterProfileList is a list of ClusterProfile.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        req(
            "items",
            "List of clusterprofiles.",
            Ty::ObjectList(&CLUSTER_PROFILE),
        ),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
    ],
    gvk: Some(("multicluster.x-k8s.io", "v1alpha1", "ClusterProfileList")),
};
