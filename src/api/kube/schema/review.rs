//! The self reviews (`reviews.rs`): `authorization.k8s.io/v1` SelfSubjectAccessReview and
//! SelfSubjectRulesReview, `authentication.k8s.io/v1` SelfSubjectReview and their parts, named,
//! described and required as kube-apiserver's OpenAPI has them.

use super::meta::{
    API_VERSION_DOC, FIELD_SELECTOR_REQUIREMENT, KIND_DOC, LABEL_SELECTOR_REQUIREMENT, OBJECT_META,
    OBJECT_META_DOC,
};
use super::{f, req, Schema, Ty};

const RAW_SELECTOR_DOC: &str = "rawSelector is the serialization of a field selector that would \
     be included in a query parameter. Webhook implementations are encouraged to ignore \
     rawSelector. The kube-apiserver's *SubjectAccessReview will parse the rawSelector as long \
     as the requirements are not present.";

pub static FIELD_SELECTOR_ATTRIBUTES: Schema = Schema {
    id: "io.k8s.api.authorization.v1.FieldSelectorAttributes",
    description: "FieldSelectorAttributes indicates a field limited access.",
    fields: &[
        f("rawSelector", RAW_SELECTOR_DOC, Ty::String),
        f(
            "requirements",
            "requirements is the parsed interpretation of a field selector. All requirements \
             must be met for a resource instance to match the selector.",
            Ty::ObjectList(&FIELD_SELECTOR_REQUIREMENT),
        ),
    ],
    gvk: None,
};

pub static LABEL_SELECTOR_ATTRIBUTES: Schema = Schema {
    id: "io.k8s.api.authorization.v1.LabelSelectorAttributes",
    description: "LabelSelectorAttributes indicates a label limited access.",
    fields: &[
        f("rawSelector", RAW_SELECTOR_DOC, Ty::String),
        f(
            "requirements",
            "requirements is the parsed interpretation of a label selector. All requirements \
             must be met for a resource instance to match the selector.",
            Ty::ObjectList(&LABEL_SELECTOR_REQUIREMENT),
        ),
    ],
    gvk: None,
};

pub static RESOURCE_ATTRIBUTES: Schema = Schema {
    id: "io.k8s.api.authorization.v1.ResourceAttributes",
    description: "ResourceAttributes includes the authorization attributes available for \
         resource requests to the Authorizer interface",
    fields: &[
        f(
            "fieldSelector",
            "fieldSelector describes the limitation on access based on field.  It can only \
             limit access, not broaden it.",
            Ty::Object(&FIELD_SELECTOR_ATTRIBUTES),
        ),
        f(
            "group",
            "Group is the API Group of the Resource.  \"*\" means all.",
            Ty::String,
        ),
        f(
            "labelSelector",
            "labelSelector describes the limitation on access based on labels.  It can only \
             limit access, not broaden it.",
            Ty::Object(&LABEL_SELECTOR_ATTRIBUTES),
        ),
        f(
            "name",
            "Name is the name of the resource being requested for a \"get\" or deleted for a \
             \"delete\". \"\" (empty) means all.",
            Ty::String,
        ),
        f(
            "namespace",
            "Namespace is the namespace of the action being requested (here: a project). \"\" \
             (empty) means \"all\" for namespace scoped resources from a \
             SelfSubjectAccessReview.",
            Ty::String,
        ),
        f(
            "resource",
            "Resource is one of the existing resource types.  \"*\" means all.",
            Ty::String,
        ),
        f(
            "subresource",
            "Subresource is one of the existing resource types.  \"\" means none.",
            Ty::String,
        ),
        f(
            "verb",
            "Verb is a kubernetes resource API verb, like: get, list, watch, create, update, \
             delete, proxy.  \"*\" means all.",
            Ty::String,
        ),
        f(
            "version",
            "Version is the API Version of the Resource.  \"*\" means all.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static NON_RESOURCE_ATTRIBUTES: Schema = Schema {
    id: "io.k8s.api.authorization.v1.NonResourceAttributes",
    description: "NonResourceAttributes includes the authorization attributes available for \
         non-resource requests to the Authorizer interface",
    fields: &[
        f("path", "Path is the URL path of the request", Ty::String),
        f("verb", "Verb is the standard HTTP verb", Ty::String),
    ],
    gvk: None,
};

pub static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Schema = Schema {
    id: "io.k8s.api.authorization.v1.SelfSubjectAccessReviewSpec",
    description: "SelfSubjectAccessReviewSpec is a description of the access request.  Exactly \
         one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be \
         set",
    fields: &[
        f(
            "nonResourceAttributes",
            "NonResourceAttributes describes information for a non-resource access request",
            Ty::Object(&NON_RESOURCE_ATTRIBUTES),
        ),
        f(
            "resourceAttributes",
            "ResourceAuthorizationAttributes describes information for a resource access \
             request",
            Ty::Object(&RESOURCE_ATTRIBUTES),
        ),
    ],
    gvk: None,
};

pub static SUBJECT_ACCESS_REVIEW_STATUS: Schema = Schema {
    id: "io.k8s.api.authorization.v1.SubjectAccessReviewStatus",
    description: "SubjectAccessReviewStatus",
    fields: &[
        req(
            "allowed",
            "Allowed is required. True if the action would be allowed, false otherwise.",
            Ty::Bool,
        ),
        f(
            "denied",
            "Denied is optional. True if the action would be denied, otherwise false. If both \
             allowed is false and denied is false, then the authorizer has no opinion on \
             whether to authorize the action. Denied may not be true if Allowed is true.",
            Ty::Bool,
        ),
        f(
            "evaluationError",
            "EvaluationError is an indication that some error occurred during the \
             authorization check.",
            Ty::String,
        ),
        f(
            "reason",
            "Reason is optional.  It indicates why a request was allowed or denied.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static SELF_SUBJECT_ACCESS_REVIEW: Schema = Schema {
    id: "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    description: "SelfSubjectAccessReview checks whether or the current user can perform an \
         action.  Not filling in a spec.namespace means \"in all namespaces\".  Self is a \
         special case, because users should always be able to check whether they can perform \
         an action",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        req(
            "spec",
            "Spec holds information about the request being evaluated.  user and groups must \
             be empty",
            Ty::Object(&SELF_SUBJECT_ACCESS_REVIEW_SPEC),
        ),
        f(
            "status",
            "Status is filled in by the server and indicates whether the request is allowed or \
             not",
            Ty::Object(&SUBJECT_ACCESS_REVIEW_STATUS),
        ),
    ],
    gvk: Some(("authorization.k8s.io", "v1", "SelfSubjectAccessReview")),
};

pub static SELF_SUBJECT_RULES_REVIEW_SPEC: Schema = Schema {
    id: "io.k8s.api.authorization.v1.SelfSubjectRulesReviewSpec",
    description: "SelfSubjectRulesReviewSpec defines the specification for \
         SelfSubjectRulesReview.",
    fields: &[f(
        "namespace",
        "Namespace to evaluate rules for (here: a project). Required.",
        Ty::String,
    )],
    gvk: None,
};

pub static RESOURCE_RULE: Schema = Schema {
    id: "io.k8s.api.authorization.v1.ResourceRule",
    description: "ResourceRule is the list of actions the subject is allowed to perform on \
         resources. The list ordering isn't significant, may contain duplicates, and possibly \
         be incomplete.",
    fields: &[
        f(
            "apiGroups",
            "APIGroups is the name of the APIGroup that contains the resources.  \"*\" means \
             all.",
            Ty::StringList,
        ),
        f(
            "resourceNames",
            "ResourceNames is an optional white list of names that the rule applies to.  An \
             empty set means that everything is allowed.  \"*\" means all.",
            Ty::StringList,
        ),
        f(
            "resources",
            "Resources is a list of resources this rule applies to.  \"*\" means all in the \
             specified apiGroups.",
            Ty::StringList,
        ),
        req(
            "verbs",
            "Verb is a list of kubernetes resource API verbs, like: get, list, watch, create, \
             update, delete, proxy.  \"*\" means all.",
            Ty::StringList,
        ),
    ],
    gvk: None,
};

pub static NON_RESOURCE_RULE: Schema = Schema {
    id: "io.k8s.api.authorization.v1.NonResourceRule",
    description: "NonResourceRule holds information that describes a rule for the non-resource",
    fields: &[
        f(
            "nonResourceURLs",
            "NonResourceURLs is a set of partial urls that a user should have access to.  *s \
             are allowed, but only as the full, final step in the path.  \"*\" means all.",
            Ty::StringList,
        ),
        req(
            "verbs",
            "Verb is a list of kubernetes non-resource API verbs, like: get, post, put, \
             delete, patch, head, options.  \"*\" means all.",
            Ty::StringList,
        ),
    ],
    gvk: None,
};

pub static SUBJECT_RULES_REVIEW_STATUS: Schema = Schema {
    id: "io.k8s.api.authorization.v1.SubjectRulesReviewStatus",
    description: "SubjectRulesReviewStatus contains the result of a rules check. Because \
         authorization rules are additive, if a rule appears in a list it's safe to assume the \
         subject has that permission, even if that list is incomplete.",
    fields: &[
        f(
            "evaluationError",
            "EvaluationError can appear in combination with Rules. It indicates an error \
             occurred during rule evaluation.",
            Ty::String,
        ),
        req(
            "incomplete",
            "Incomplete is true when the rules returned by this call are incomplete.",
            Ty::Bool,
        ),
        req(
            "nonResourceRules",
            "NonResourceRules is the list of actions the subject is allowed to perform on \
             non-resources.",
            Ty::ObjectList(&NON_RESOURCE_RULE),
        ),
        req(
            "resourceRules",
            "ResourceRules is the list of actions the subject is allowed to perform on \
             resources.",
            Ty::ObjectList(&RESOURCE_RULE),
        ),
    ],
    gvk: None,
};

pub static SELF_SUBJECT_RULES_REVIEW: Schema = Schema {
    id: "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    description: "SelfSubjectRulesReview enumerates the set of actions the current user can \
         perform within a namespace. The returned list of actions may be incomplete depending \
         on the server's authorization mode. SelfSubjectRulesReview should be used by UIs to \
         show/hide actions, or to quickly let an end user reason about their permissions.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        req(
            "spec",
            "Spec holds information about the request being evaluated.",
            Ty::Object(&SELF_SUBJECT_RULES_REVIEW_SPEC),
        ),
        f(
            "status",
            "Status is filled in by the server and indicates the set of actions a user can \
             perform.",
            Ty::Object(&SUBJECT_RULES_REVIEW_STATUS),
        ),
    ],
    gvk: Some(("authorization.k8s.io", "v1", "SelfSubjectRulesReview")),
};

pub static USER_INFO: Schema = Schema {
    id: "io.k8s.api.authentication.v1.UserInfo",
    description: "UserInfo holds the information about the user needed to implement the \
         user.Info interface.",
    fields: &[
        f(
            "extra",
            "Any additional information provided by the authenticator.",
            Ty::StringListMap,
        ),
        f(
            "groups",
            "The names of groups this user is a part of.",
            Ty::StringList,
        ),
        f(
            "uid",
            "A unique value that identifies this user across time.",
            Ty::String,
        ),
        f(
            "username",
            "The name that uniquely identifies this user among all active users.",
            Ty::String,
        ),
    ],
    gvk: None,
};

pub static SELF_SUBJECT_REVIEW_STATUS: Schema = Schema {
    id: "io.k8s.api.authentication.v1.SelfSubjectReviewStatus",
    description: "SelfSubjectReviewStatus is filled by the kube-apiserver and sent back to a \
         user.",
    fields: &[f(
        "userInfo",
        "User attributes of the user making this request.",
        Ty::Object(&USER_INFO),
    )],
    gvk: None,
};

pub static SELF_SUBJECT_REVIEW: Schema = Schema {
    id: "io.k8s.api.authentication.v1.SelfSubjectReview",
    description: "SelfSubjectReview contains the user information that the kube-apiserver has \
         about the user making this request. When using impersonation, users will receive the \
         user info of the user being impersonated.",
    fields: &[
        f("apiVersion", API_VERSION_DOC, Ty::String),
        f("kind", KIND_DOC, Ty::String),
        f("metadata", OBJECT_META_DOC, Ty::Object(&OBJECT_META)),
        f(
            "status",
            "Status is filled in by the server with the user attributes.",
            Ty::Object(&SELF_SUBJECT_REVIEW_STATUS),
        ),
    ],
    gvk: Some(("authentication.k8s.io", "v1", "SelfSubjectReview")),
};
