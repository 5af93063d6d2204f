//! The apimachinery types the served objects embed (`meta/v1` ObjectMeta, ListMeta,
//! Condition, DeleteOptions, Status, Patch, the selector requirements of the access reviews), as
//! the API server's OpenAPI describes them.

use super::{f, req, Schema, Ty};

pub(super) const API_VERSION_DOC: &str =
    "APIVersion defines the versioned schema of this representation of \
     an object. Servers should convert recognized schemas to the latest internal value, and may \
     reject unrecognized values. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";

pub(super) const KIND_DOC: &str = "Kind is a string value representing the REST resource this object \
     represents. Servers may infer this from the endpoint the client submits requests to. Cannot \
     be updated. In CamelCase. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

pub(super) const OBJECT_META_DOC: &str = "Standard object's metadata. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub(super) const LIST_META_DOC: &str = "Standard list metadata. More info: \
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

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

pub static FIELD_SELECTOR_REQUIREMENT: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement",
    description: "FieldSelectorRequirement is a selector that contains values, a key, and an \
         operator that relates the key and values.",
    fields: &[
        req(
            "key",
            "key is the field selector key that the requirement applies to.",
            Ty::String,
        ),
        req(
            "operator",
            "operator represents a key's relationship to a set of values. Valid operators are \
             In, NotIn, Exists, DoesNotExist. The list of operators may grow in the future.",
            Ty::String,
        ),
        f(
            "values",
            "values is an array of string values. If the operator is In or NotIn, the values \
             array must be non-empty. If the operator is Exists or DoesNotExist, the values \
             array must be empty.",
            Ty::StringList,
        ),
    ],
    gvk: None,
};

pub static LABEL_SELECTOR_REQUIREMENT: Schema = Schema {
    id: "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
    description: "A label selector requirement is a selector that contains values, a key, and \
         an operator that relates the key and values.",
    fields: &[
        req(
            "key",
            "key is the label key that the selector applies to.",
            Ty::String,
        ),
        req(
            "operator",
            "operator represents a key's relationship to a set of values. Valid operators are \
             In, NotIn, Exists and DoesNotExist.",
            Ty::String,
        ),
        f(
            "values",
            "values is an array of string values. If the operator is In or NotIn, the values \
             array must be non-empty. If the operator is Exists or DoesNotExist, the values \
             array must be empty.",
            Ty::StringList,
        ),
    ],
    gvk: None,
};
