//! `clusterregistry.k8s.io/v1alpha1`: Cluster, ClusterList and their parts.

use super::meta::{
    API_VERSION_DOC, KIND_DOC, LIST_META, LIST_META_DOC, OBJECT_META, OBJECT_META_DOC,
};
use super::{f, req, Schema, Ty};

pub static OBJECT_REFERENCE: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ObjectReference",
    description: "ObjectReference contains enough information to let you locate the referenced \
         object: a pointer to where credentials live, never credentials themselves.",
    fields: &[
        f(
            "kind",
            "Kind of the referent, e.g. Secret. More info: \
             https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            Ty::String,
        ),
        f(
            "name",
            "Name of the referent. More info: \
             https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#names",
            Ty::String,
        ),
        f(
            "namespace",
            "Namespace of the referent. More info: \
             https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static AUTH_INFO: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.AuthInfo",
    description: "AuthInfo holds public information that describes how a client can get \
         credentials to access the cluster. It is not meant to store private information such \
         as tokens or client certificates: the registry refuses them.",
    fields: &[
        f(
            "controller",
            "Controller references an object that contains the credentials a controller should \
             use to authenticate to the cluster, e.g. a Secret in another namespace holding a \
             bearer token.",
            Ty::Object(&OBJECT_REFERENCE),
        ),
        f(
            "user",
            "User references an object that contains information about how a user should \
             authenticate to the cluster.",
            Ty::Object(&OBJECT_REFERENCE),
        ),
    ],
    gvk: None,
};

pub static SERVER_ADDRESS_BY_CLIENT_CIDR: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ServerAddressByClientCIDR",
    description: "ServerAddressByClientCIDR helps clients determine the server address that \
         they should use, depending on the clientCIDR that they match.",
    fields: &[
        f(
            "clientCIDR",
            "The CIDR with which clients can match their IP to figure out if they should use \
             the corresponding server address.",
            Ty::String,
        ),
        f(
            "serverAddress",
            "Address of this server, suitable for a client that matches the above CIDR. This \
             can be a hostname, hostname:port, IP or IP:port, or an https:// URL.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static KUBERNETES_API_ENDPOINTS: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.KubernetesAPIEndpoints",
    description: "KubernetesAPIEndpoints represents the endpoints for one Kubernetes API server.",
    fields: &[
        f(
            "caBundle",
            "CABundle contains the certificate authority information: one or more PEM \
             certificates, base64-encoded.",
            Ty::Byte,
        ),
        f(
            "serverEndpoints",
            "ServerEndpoints specifies the address(es) of the Kubernetes API server's network \
             identity or identities.",
            Ty::ObjectList(&SERVER_ADDRESS_BY_CLIENT_CIDR),
        ),
    ],
    gvk: None,
};

pub static CLUSTER_SPEC: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterSpec",
    description: "ClusterSpec contains the specification of a cluster.",
    fields: &[
        f(
            "authInfo",
            "AuthInfo contains public information that can be used to authenticate to and \
             authorize with this cluster. It is not meant to store private information (e.g., \
             tokens or client certificates).",
            Ty::Object(&AUTH_INFO),
        ),
        f(
            "kubernetesApiEndpoints",
            "KubernetesAPIEndpoints represents the endpoints of the API server for this cluster.",
            Ty::Object(&KUBERNETES_API_ENDPOINTS),
        ),
    ],
    gvk: None,
};

pub static CLUSTER_CONDITION: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterCondition",
    description: "ClusterCondition contains condition information for a cluster.",
    fields: &[
        f(
            "lastHeartbeatTime",
            "Last time the condition was checked.",
            Ty::DateTime,
        ),
        f(
            "lastTransitionTime",
            "Last time the condition transitioned from one status to another.",
            Ty::DateTime,
        ),
        f(
            "message",
            "Human readable message indicating details about last transition.",
            Ty::String,
        ),
        f(
            "reason",
            "(brief) reason for the condition's last transition.",
            Ty::String,
        ),
        req(
            "status",
            "Status of the condition, one of True, False, Unknown.",
            Ty::String,
        ),
        req(
            "type",
            "Type of cluster condition. \"OK\": the cluster is reachable and ready for workloads.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CLUSTER_STATUS: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterStatus",
    description: "ClusterStatus contains the status of a cluster, as the service observes it.",
    fields: &[f(
        "conditions",
        "Conditions contains the different condition statuses for this cluster.",
        Ty::ObjectList(&CLUSTER_CONDITION),
    )],
    gvk: None,
};

pub static CLUSTER: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.Cluster",
    description: "Cluster contains information about a cluster in a cluster registry: think of \
         it as a hosted kubeconfig entry (endpoints, CA, pointers to credentials).",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "spec",
            "Spec is the specification of the cluster. This may or may not be reconciled by an \
             active controller.",
            Ty::Object(&CLUSTER_SPEC),
        ),
        f(
            "status",
            "Status is the status of the cluster.",
            Ty::Object(&CLUSTER_STATUS),
        ),
    ],
    gvk: Some(("clusterregistry.k8s.io", "v1alpha1", "Cluster")),
};

pub static CLUSTER_LIST: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterList",
    description: "ClusterList is a list of Clusters.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        req(
            "items",
            "Items is a list of Cluster objects.",
            Ty::ObjectList(&CLUSTER),
        ),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
    ],
    gvk: Some(("clusterregistry.k8s.io", "v1alpha1", "ClusterList")),
};
