//! The one description of the served types: OpenAPI v3 (`openapi.rs`) renders it, field
//! validation (`validation.rs`) walks it to find unknown fields.

use serde_json::{json, Map, Value};

/// The type of one property.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    String,
    /// A string holding base64 (`format: byte`).
    Byte,
    /// An RFC 3339 time (`format: date-time`).
    DateTime,
    Int64,
    Bool,
    /// `map[string]string`.
    StringMap,
    /// `[]string`.
    StringList,
    /// A nested object with its own schema.
    Object(&'static Schema),
    /// A list of objects with their own schema.
    ObjectList(&'static Schema),
    /// Any JSON object (not walked).
    FreeForm,
}

/// One property of an object schema.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub description: &'static str,
    pub ty: Ty,
    pub required: bool,
}

/// One component schema (`components.schemas[id]`).
#[derive(Debug)]
pub struct Schema {
    pub id: &'static str,
    pub description: &'static str,
    pub fields: &'static [Field],
    /// `(group, version, kind)` for top-level kinds: `x-kubernetes-group-version-kind`.
    pub gvk: Option<(&'static str, &'static str, &'static str)>,
}

impl Schema {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

const fn f(name: &'static str, description: &'static str, ty: Ty) -> Field {
    Field {
        name,
        description,
        ty,
        required: false,
    }
}

const fn req(name: &'static str, description: &'static str, ty: Ty) -> Field {
    Field {
        name,
        description,
        ty,
        required: true,
    }
}

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of \
     an object. Servers should convert recognized schemas to the latest internal value, and may \
     reject unrecognized values. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object \
     represents. Servers may infer this from the endpoint the client submits requests to. Cannot \
     be updated. In CamelCase. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const OBJECT_META_DOC: &str = "Standard object's metadata. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_META_DOC: &str = "Standard list metadata. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

// ---- meta/v1 ------------------------------------------------------------------------------

pub static OWNER_REFERENCE: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    description: "OwnerReference contains enough information to let you identify an owning \
         object. An owning object must be in the same namespace as the dependent, or be \
         cluster-scoped, so there is no namespace field.",
    fields: &[
        req("apiVersion", "API version of the referent.", Ty::String),
        f(
            "blockOwnerDeletion",
            "If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner \
             cannot be deleted from the key-value store until this reference is removed.",
            Ty::Bool,
        ),
        f(
            "controller",
            "If true, this reference points to the managing controller.",
            Ty::Bool,
        ),
        req("kind", "Kind of the referent.", Ty::String),
        req("name", "Name of the referent.", Ty::String),
        req("uid", "UID of the referent.", Ty::String),
    ],
    gvk: None,
};

pub static MANAGED_FIELDS_ENTRY: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
    description: "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the \
         resource that the fieldset applies to.",
    fields: &[
        f(
            "apiVersion",
            "APIVersion defines the version of this resource that this field set applies to.",
            Ty::String,
        ),
        f(
            "fieldsType",
            "FieldsType is the discriminator for the different fields format and version. \
             There is currently only one possible value: \"FieldsV1\"",
            Ty::String,
        ),
        f(
            "fieldsV1",
            "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type.",
            Ty::FreeForm,
        ),
        f(
            "manager",
            "Manager is an identifier of the workflow managing these fields.",
            Ty::String,
        ),
        f(
            "operation",
            "Operation is the type of operation which lead to this ManagedFieldsEntry being \
             created. The only valid values for this field are 'Apply' and 'Update'.",
            Ty::String,
        ),
        f(
            "subresource",
            "Subresource is the name of the subresource used to update that object, or empty \
             string if the object was updated through the main resource.",
            Ty::String,
        ),
        f(
            "time",
            "Time is the timestamp of when the ManagedFields entry was added.",
            Ty::DateTime,
        ),
    ],
    gvk: None,
};

pub static OBJECT_META: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    description: "ObjectMeta is metadata that all persisted resources must have, which includes \
         all objects users must create.",
    fields: &[
        f(
            "annotations",
            "Annotations is an unstructured key value map stored with a resource that may be \
             set by external tools to store and retrieve arbitrary metadata. They are not \
             queryable and should be preserved when modifying objects.",
            Ty::StringMap,
        ),
        f(
            "creationTimestamp",
            "CreationTimestamp is a timestamp representing the server time when this object was \
             created. It is represented in RFC3339 form and is in UTC. Populated by the system. \
             Read-only.",
            Ty::DateTime,
        ),
        f(
            "deletionGracePeriodSeconds",
            "Number of seconds allowed for this object to gracefully terminate before it will be \
             removed from the system. Only set when deletionTimestamp is also set. Read-only.",
            Ty::Int64,
        ),
        f(
            "deletionTimestamp",
            "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. \
             Set by the server when a graceful deletion is requested by the user. Read-only.",
            Ty::DateTime,
        ),
        f(
            "finalizers",
            "Must be empty before the object is deleted from the registry. Each entry is an \
             identifier for the responsible component that will remove the entry from the list.",
            Ty::StringList,
        ),
        f(
            "generateName",
            "GenerateName is an optional prefix, used by the server, to generate a unique name \
             ONLY IF the Name field has not been provided. The server appends five random \
             characters to it.",
            Ty::String,
        ),
        f(
            "generation",
            "A sequence number representing a specific generation of the desired state. \
             Populated by the system. Read-only.",
            Ty::Int64,
        ),
        f(
            "labels",
            "Map of string keys and values that can be used to organize and categorize (scope \
             and select) objects. May match selectors of replication controllers and services.",
            Ty::StringMap,
        ),
        f(
            "managedFields",
            "ManagedFields maps workflow-id and version to the set of fields that are managed \
             by that workflow. This is mostly for internal housekeeping, and users typically \
             shouldn't need to set or understand this field.",
            Ty::ObjectList(&MANAGED_FIELDS_ENTRY),
        ),
        f(
            "name",
            "Name must be unique within a namespace. Is required when creating resources, \
             although some resources may allow a client to request the generation of an \
             appropriate name automatically. Cannot be updated.",
            Ty::String,
        ),
        f(
            "namespace",
            "Namespace defines the space within which each name must be unique. Here it is the \
             OpenStack project id of the object. Cannot be updated.",
            Ty::String,
        ),
        f(
            "ownerReferences",
            "List of objects depended by this object.",
            Ty::ObjectList(&OWNER_REFERENCE),
        ),
        f(
            "resourceVersion",
            "An opaque value that represents the internal version of this object that can be \
             used by clients to determine when objects have changed. Used for optimistic \
             concurrency, change detection, and the watch operation. Read-only.",
            Ty::String,
        ),
        f(
            "selfLink",
            "Deprecated: selfLink is a legacy read-only field that is no longer populated by \
             the system.",
            Ty::String,
        ),
        f(
            "uid",
            "UID is the unique in time and space value for this object. It is typically \
             generated by the server on successful creation of a resource and is not allowed to \
             change on PUT operations. Read-only.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static LIST_META: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    description: "ListMeta describes metadata that synthetic resources must have, including \
         lists and various status objects.",
    fields: &[
        f(
            "continue",
            "continue may be set if the user set a limit on the number of items returned, and \
             indicates that the server has more data available.",
            Ty::String,
        ),
        f(
            "remainingItemCount",
            "remainingItemCount is the number of subsequent items in the list which are not \
             included in this list response.",
            Ty::Int64,
        ),
        f(
            "resourceVersion",
            "String that identifies the server's internal version of this object that can be \
             used by clients to determine when objects have changed. Read-only.",
            Ty::String,
        ),
        f(
            "selfLink",
            "Deprecated: selfLink is a legacy read-only field that is no longer populated by \
             the system.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static CONDITION: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
    description: "Condition contains details for one aspect of the current state of this API \
         Resource.",
    fields: &[
        req(
            "lastTransitionTime",
            "lastTransitionTime is the last time the condition transitioned from one status to \
             another.",
            Ty::DateTime,
        ),
        req(
            "message",
            "message is a human readable message indicating details about the transition.",
            Ty::String,
        ),
        f(
            "observedGeneration",
            "observedGeneration represents the .metadata.generation that the condition was set \
             based upon.",
            Ty::Int64,
        ),
        req(
            "reason",
            "reason contains a programmatic identifier indicating the reason for the \
             condition's last transition.",
            Ty::String,
        ),
        req(
            "status",
            "status of the condition, one of True, False, Unknown.",
            Ty::String,
        ),
        req(
            "type",
            "type of condition in CamelCase or in foo.example.com/CamelCase.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static PRECONDITIONS: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions",
    description: "Preconditions must be fulfilled before an operation (update, delete, etc.) is \
         carried out.",
    fields: &[
        f(
            "resourceVersion",
            "Specifies the target ResourceVersion",
            Ty::String,
        ),
        f("uid", "Specifies the target UID.", Ty::String),
    ],
    gvk: None,
};

pub static DELETE_OPTIONS: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    description: "DeleteOptions may be provided when deleting an API object.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f(
            "dryRun",
            "When present, indicates that modifications should not be persisted. Valid values \
             are: - All: all dry run stages will be processed",
            Ty::StringList,
        ),
        f(
            "gracePeriodSeconds",
            "The duration in seconds before the object should be deleted.",
            Ty::Int64,
        ),
        f("kind", KIND_DOC, Ty::String),
        f(
            "orphanDependents",
            "Deprecated: please use the PropagationPolicy.",
            Ty::Bool,
        ),
        f(
            "preconditions",
            "Must be fulfilled before a deletion is carried out.",
            Ty::Object(&PRECONDITIONS),
        ),
        f(
            "propagationPolicy",
            "Whether and how garbage collection will be performed: 'Orphan', 'Background' or \
             'Foreground'.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static STATUS: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    description: "Status is a return value for calls that don't return other objects.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f(
            "code",
            "Suggested HTTP return code for this status, 0 if not set.",
            Ty::Int64,
        ),
        f(
            "details",
            "Extended data associated with the reason.",
            Ty::FreeForm,
        ),
        f("kind", KIND_DOC, Ty::String),
        f(
            "message",
            "A human-readable description of the status of this operation.",
            Ty::String,
        ),
        f("metadata", LIST_META_DOC, Ty::Object(&LIST_META)),
        f(
            "reason",
            "A machine-readable description of why this operation is in the \"Failure\" status.",
            Ty::String,
        ),
        f(
            "status",
            "Status of the operation. One of: \"Success\" or \"Failure\".",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static PATCH: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    description: "Patch is provided to give a concrete name and type to the Kubernetes PATCH \
         request body.",
    fields: &[],
    gvk: None,
};

// ---- clusterregistry.k8s.io/v1alpha1 ------------------------------------------------------

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

// ---- multicluster.x-k8s.io/v1alpha1 -------------------------------------------------------

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

// ---- rendering ----------------------------------------------------------------------------

/// `#/components/schemas/<id>`.
pub fn ref_of(schema: &Schema) -> String {
    format!("#/components/schemas/{}", schema.id)
}

/// The OpenAPI v3 property of one field, as kube-apiserver writes it (`allOf` around `$ref`).
fn property(field: &Field) -> Value {
    let mut p = match field.ty {
        Ty::String => json!({"type": "string"}),
        Ty::Byte => json!({"type": "string", "format": "byte"}),
        Ty::DateTime => json!({"type": "string", "format": "date-time"}),
        Ty::Int64 => json!({"type": "integer", "format": "int64"}),
        Ty::Bool => json!({"type": "boolean"}),
        Ty::StringMap => json!({"type": "object",
            "additionalProperties": {"type": "string", "default": ""}}),
        Ty::StringList => json!({"type": "array", "items": {"type": "string", "default": ""}}),
        Ty::Object(s) => json!({"allOf": [{"$ref": ref_of(s)}], "default": {}}),
        Ty::ObjectList(s) => json!({"type": "array",
            "items": {"allOf": [{"$ref": ref_of(s)}], "default": {}}}),
        Ty::FreeForm => json!({"type": "object"}),
    };
    p["description"] = json!(field.description);
    p
}

/// The component schema of `schema`.
pub fn render(schema: &Schema) -> Value {
    let mut props = Map::new();
    for field in schema.fields {
        props.insert(field.name.to_string(), property(field));
    }
    let mut s = json!({"type": "object", "description": schema.description});
    if !props.is_empty() {
        s["properties"] = Value::Object(props);
    }
    let required: Vec<&str> = schema
        .fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name)
        .collect();
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    if let Some((g, v, k)) = schema.gvk {
        s["x-kubernetes-group-version-kind"] = json!([{"group": g, "version": v, "kind": k}]);
    }
    s
}

/// `schema` and every schema it reaches, each once, in a stable order.
pub fn closure(roots: &[&'static Schema]) -> Vec<&'static Schema> {
    let mut out: Vec<&'static Schema> = Vec::new();
    let mut stack: Vec<&'static Schema> = roots.iter().rev().copied().collect();
    while let Some(s) = stack.pop() {
        if out.iter().any(|o| o.id == s.id) {
            continue;
        }
        out.push(s);
        for field in s.fields.iter().rev() {
            if let Ty::Object(c) | Ty::ObjectList(c) = field.ty {
                stack.push(c);
            }
        }
    }
    out
}

// ---- walking a body -----------------------------------------------------------------------

/// Deepest nesting walked; deeper input is reported as one unknown field at the cut.
const MAX_WALK_DEPTH: usize = 32;
/// Most unknown fields reported.
pub const MAX_UNKNOWN_REPORTED: usize = 100;
/// Most values visited in one walk.
const MAX_WALK_NODES: usize = 100_000;

/// The paths (`spec.bogusField`, `spec.kubernetesApiEndpoints.serverEndpoints[0].x`) of the
/// fields of `body` that `schema` does not declare, in key order, at most
/// `MAX_UNKNOWN_REPORTED`.
pub fn unknown_fields(schema: &Schema, body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut budget = MAX_WALK_NODES;
    walk(schema, body, "", 0, &mut out, &mut budget);
    out
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn walk(
    schema: &Schema,
    v: &Value,
    path: &str,
    depth: usize,
    out: &mut Vec<String>,
    budget: &mut usize,
) {
    let Value::Object(map) = v else { return };
    for (k, child) in map {
        if out.len() >= MAX_UNKNOWN_REPORTED || *budget == 0 {
            return;
        }
        *budget -= 1;
        let here = join(path, k);
        let Some(field) = schema.field(k) else {
            out.push(here);
            continue;
        };
        if depth >= MAX_WALK_DEPTH {
            continue;
        }
        match field.ty {
            Ty::Object(s) => walk(s, child, &here, depth + 1, out, budget),
            Ty::ObjectList(s) => {
                if let Value::Array(items) = child {
                    for (i, item) in items.iter().enumerate() {
                        if out.len() >= MAX_UNKNOWN_REPORTED || *budget == 0 {
                            return;
                        }
                        *budget -= 1;
                        walk(s, item, &format!("{here}[{i}]"), depth + 1, out, budget);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_found_at_every_level_with_list_indexes() {
        let body = json!({
            "apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "a", "foo": 1, "labels": {"any": "thing"}},
            "spec": {"bogusField": true, "kubernetesApiEndpoints": {
                "serverEndpoints": [{"clientCIDR": "0.0.0.0/0"}, {"serverAddress": "h", "x": 1}]}},
            "status": {"conditions": [{"type": "OK", "status": "True", "y": 2}]},
            "extra": {}
        });
        assert_eq!(
            unknown_fields(&CLUSTER, &body),
            vec![
                "extra",
                "metadata.foo",
                "spec.bogusField",
                "spec.kubernetesApiEndpoints.serverEndpoints[1].x",
                "status.conditions[0].y",
            ]
        );
    }

    #[test]
    fn a_known_body_has_no_unknown_fields() {
        let body = json!({"metadata": {"name": "a", "managedFields": [{"manager": "m",
            "fieldsV1": {"f:spec": {}}}], "ownerReferences": [{"kind": "K"}]},
            "spec": {"authInfo": {"controller": {"kind": "Secret", "name": "s", "namespace": "n"}}}});
        assert!(unknown_fields(&CLUSTER, &body).is_empty());
    }

    #[test]
    fn rendered_schemas_use_all_of_refs_and_carry_descriptions() {
        let c = render(&CLUSTER);
        assert_eq!(
            c["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(
            c["x-kubernetes-group-version-kind"],
            json!([{"group": "clusterregistry.k8s.io", "version": "v1alpha1", "kind": "Cluster"}])
        );
        for s in closure(&[&CLUSTER, &CLUSTER_LIST, &CLUSTER_PROFILE]) {
            for field in s.fields {
                assert!(!field.description.is_empty(), "{}.{}", s.id, field.name);
            }
        }
        let ids: Vec<&str> = closure(&[&CLUSTER]).iter().map(|s| s.id).collect();
        assert!(ids.contains(&"io.k8s.clusterregistry.v1alpha1.AuthInfo"));
        assert!(ids.contains(&"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    }
}
