//! `clusterregistry.k8s.io/v1alpha1`: ClusterGroup, ClusterGroupBinding, their lists and parts,
//! with meta/v1's `LabelSelector` as the API server's OpenAPI describes it.

use super::meta::{
    API_VERSION_DOC, KIND_DOC, LABEL_SELECTOR_REQUIREMENT, LIST_META, LIST_META_DOC, OBJECT_META,
    OBJECT_META_DOC,
};
use super::{f, req, Schema, Ty};

pub static LABEL_SELECTOR: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    description: "A label selector is a label query over a set of resources. The result of \
         matchLabels and matchExpressions are ANDed.",
    fields: &[
        f(
            "matchExpressions",
            "matchExpressions is a list of label selector requirements. The requirements are \
             ANDed. Operators In, NotIn, Exists and DoesNotExist, and Gt and Lt (one integer \
             value) for a cluster group's selector.",
            Ty::ObjectList(&LABEL_SELECTOR_REQUIREMENT),
        ),
        f(
            "matchLabels",
            "matchLabels is a map of {key,value} pairs. A single {key,value} in the \
             matchLabels map is equivalent to an element of matchExpressions, whose key field \
             is \"key\", the operator is \"In\", and the values array contains only \"value\". \
             The requirements are ANDed.",
            Ty::StringMap,
        ),
    ],
    gvk: None,
};

pub static CLUSTER_REFERENCE: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterReference",
    description: "ClusterReference names a Cluster by its namespace (project) and name.",
    fields: &[
        req("name", "Name of the Cluster.", Ty::String),
        f(
            "namespace",
            "Namespace (project) of the Cluster; the group's own when empty.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CLUSTER_GROUP_MEMBER: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupMember",
    description: "ClusterGroupMember is one explicit member of a ClusterGroup and where its \
         owner's consent stands.",
    fields: &[
        req("name", "Name of the Cluster.", Ty::String),
        req(
            "namespace",
            "Namespace (project) of the Cluster.",
            Ty::String,
        ),
        req(
            "state",
            "State is Accepted when the cluster's project consented (a cluster of the group's \
             own project is accepted at once), Proposed while it waits for that consent; a \
             proposed member grants nothing.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CLUSTER_GROUP_SPEC: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupSpec",
    description: "ClusterGroupSpec says which clusters a ClusterGroup holds: those of its own \
         namespace its selector picks, and its explicit members their owners accepted.",
    fields: &[
        f(
            "clusters",
            "Clusters are the explicit members, of any namespace. A cluster of another \
             namespace is proposed until its project accepts it.",
            Ty::ObjectList(&CLUSTER_REFERENCE),
        ),
        f(
            "description",
            "Description is free text of at most 255 characters.",
            Ty::String,
        ),
        f(
            "selector",
            "Selector picks the clusters of the group's own namespace by their labels; an \
             empty or absent selector picks none.",
            Ty::Object(&LABEL_SELECTOR),
        ),
    ],
    gvk: None,
};

pub static CLUSTER_GROUP_STATUS: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupStatus",
    description: "ClusterGroupStatus is where each explicit member's consent stands.",
    fields: &[f(
        "members",
        "Members are the explicit members with their state: Proposed or Accepted.",
        Ty::ObjectList(&CLUSTER_GROUP_MEMBER),
    )],
    gvk: None,
};

pub static CLUSTER_GROUP: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroup",
    description: "ClusterGroup is a named set of clusters a project shares with other \
         projects through ClusterGroupBindings.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "spec",
            "ClusterGroupSpec says which clusters the group holds.",
            Ty::Object(&CLUSTER_GROUP_SPEC),
        ),
        f(
            "status",
            "ClusterGroupStatus is where each explicit member's consent stands.",
            Ty::Object(&CLUSTER_GROUP_STATUS),
        ),
    ],
    gvk: Some(("clusterregistry.k8s.io", "v1alpha1", "ClusterGroup")),
};

pub static CLUSTER_GROUP_LIST: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupList",
    description: "ClusterGroupList is a list of ClusterGroup.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        req(
            "items",
            "List of cluster groups.",
            Ty::ObjectList(&CLUSTER_GROUP),
        ),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
    ],
    gvk: Some(("clusterregistry.k8s.io", "v1alpha1", "ClusterGroupList")),
};

pub static GROUP_REFERENCE: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupReference",
    description: "ClusterGroupReference names a ClusterGroup of the binding's namespace.",
    fields: &[req("name", "Name of the ClusterGroup.", Ty::String)],
    gvk: None,
};

pub static BINDING_SUBJECT: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupBindingSubject",
    description: "ClusterGroupBindingSubject is whom a binding grants access: a project, or \
         only its members holding one of some roles.",
    fields: &[
        req(
            "project",
            "Project is the grantee project (never the group's own).",
            Ty::String,
        ),
        f(
            "roles",
            "Roles limit the binding to the project's members holding one of them (compared \
             without regard to case); every member when empty.",
            Ty::StringList,
        ),
    ],
    gvk: None,
};

pub static CLUSTER_GROUP_BINDING_SPEC: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupBindingSpec",
    description: "ClusterGroupBindingSpec grants a project access to a group's clusters.",
    fields: &[
        req(
            "access",
            "Access is read (get, list, watch, export, ClusterProfile) or write (also update, \
             label, annotate, delete and joining a federation).",
            Ty::String,
        ),
        req(
            "groupRef",
            "GroupRef names the ClusterGroup whose clusters are shared.",
            Ty::Object(&GROUP_REFERENCE),
        ),
        req(
            "subject",
            "Subject is the project the binding grants access to.",
            Ty::Object(&BINDING_SUBJECT),
        ),
    ],
    gvk: None,
};

pub static CLUSTER_GROUP_BINDING: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupBinding",
    description: "ClusterGroupBinding grants one project read or write access to the clusters \
         of a ClusterGroup; it is named <group>.<project> and never changes.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "spec",
            "ClusterGroupBindingSpec grants a project access to a group's clusters.",
            Ty::Object(&CLUSTER_GROUP_BINDING_SPEC),
        ),
    ],
    gvk: Some(("clusterregistry.k8s.io", "v1alpha1", "ClusterGroupBinding")),
};

pub static CLUSTER_GROUP_BINDING_LIST: Schema = Schema {
    id: "io.k8s.clusterregistry.v1alpha1.ClusterGroupBindingList",
    description: "ClusterGroupBindingList is a list of ClusterGroupBinding.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        req(
            "items",
            "List of cluster group bindings.",
            Ty::ObjectList(&CLUSTER_GROUP_BINDING),
        ),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
    ],
    gvk: Some((
        "clusterregistry.k8s.io",
        "v1alpha1",
        "ClusterGroupBindingList",
    )),
};
