//! `metav1.Status`: the error body of every Kubernetes-style response, with the reasons, codes
//! and sentences of kube-apiserver (`k8s.io/apimachinery/pkg/api/errors`).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ListMeta, Status, StatusCause, StatusDetails,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::api::http::error::ApiError;

/// One served resource, as Status messages and details name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    /// The resource (plural): `clusters`.
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
}

impl Resource {
    /// `clusters.clusterregistry.k8s.io`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            // The core group: `namespaces`, as the apiserver words it.
            return self.plural.to_string();
        }
        format!("{}.{}", self.plural, self.group)
    }
    /// `Cluster.clusterregistry.k8s.io`.
    pub fn qualified_kind(&self) -> String {
        format!("{}.{}", self.kind, self.group)
    }
    /// `clusterregistry.k8s.io/v1alpha1`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// `clusterregistry.k8s.io/v1alpha1` `clusters`.
pub const CLUSTERS: Resource = Resource {
    group: super::objects::GROUP,
    version: super::objects::VERSION,
    plural: super::objects::RESOURCE,
    singular: super::objects::SINGULAR,
    kind: super::objects::KIND,
    list_kind: super::objects::LIST_KIND,
};

/// `clusterregistry.k8s.io/v1alpha1` `clustergroups`.
pub const CLUSTER_GROUPS: Resource = Resource {
    group: super::objects::GROUP,
    version: super::objects::VERSION,
    plural: "clustergroups",
    singular: "clustergroup",
    kind: "ClusterGroup",
    list_kind: "ClusterGroupList",
};

/// `clusterregistry.k8s.io/v1alpha1` `clustergroupbindings`.
pub const CLUSTER_GROUP_BINDINGS: Resource = Resource {
    plural: "clustergroupbindings",
    singular: "clustergroupbinding",
    kind: "ClusterGroupBinding",
    list_kind: "ClusterGroupBindingList",
    ..CLUSTER_GROUPS
};

/// Core `v1` `namespaces` (a project, as kubectl asks after it).
pub const NAMESPACES: Resource = Resource {
    group: "",
    version: "v1",
    plural: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    list_kind: "NamespaceList",
};

/// `multicluster.x-k8s.io/v1alpha1` `clusterprofiles` (read-only view).
pub const CLUSTER_PROFILES: Resource = Resource {
    group: "multicluster.x-k8s.io",
    version: "v1alpha1",
    plural: "clusterprofiles",
    singular: "clusterprofile",
    kind: "ClusterProfile",
    list_kind: "ClusterProfileList",
};

/// `cluster.k8s.io/v1alpha1` `machines` (read-only: one per node of a cluster).
pub const MACHINES: Resource = Resource {
    group: "cluster.k8s.io",
    version: "v1alpha1",
    plural: "machines",
    singular: "machine",
    kind: "Machine",
    list_kind: "MachineList",
};

/// `cluster.k8s.io/v1alpha1` `machinedeployments` (one per node group of a cluster).
pub const MACHINE_DEPLOYMENTS: Resource = Resource {
    group: "cluster.k8s.io",
    version: "v1alpha1",
    plural: "machinedeployments",
    singular: "machinedeployment",
    kind: "MachineDeployment",
    list_kind: "MachineDeploymentList",
};

/// `meta.k8s.io/v1` `DeleteOptions`: what a refused delete option is reported against.
pub const DELETE_OPTIONS: Resource = Resource {
    group: "meta.k8s.io",
    version: "v1",
    plural: "deleteoptions",
    singular: "deleteoptions",
    kind: "DeleteOptions",
    list_kind: "DeleteOptionsList",
};

/// `meta.k8s.io/v1` `CreateOptions`, `UpdateOptions` and `PatchOptions`: what a refused
/// `dryRun` of a create, replace or patch is reported against.
pub const CREATE_OPTIONS: Resource = Resource {
    kind: "CreateOptions",
    ..DELETE_OPTIONS
};
pub const UPDATE_OPTIONS: Resource = Resource {
    kind: "UpdateOptions",
    ..DELETE_OPTIONS
};
pub const PATCH_OPTIONS: Resource = Resource {
    kind: "PatchOptions",
    ..DELETE_OPTIONS
};

/// `meta.k8s.io/v1` `ListOptions`: what a refused list or watch query is reported against.
pub const LIST_OPTIONS: Resource = Resource {
    kind: "ListOptions",
    ..DELETE_OPTIONS
};

/// Another name for `CLUSTER_PROFILES`.
pub const PROFILES: Resource = CLUSTER_PROFILES;

/// One `details.causes[]` entry (a `field.Error`): `message` is the error body without the
/// field, as the apiserver writes it (`Invalid value: "x": ...`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl Cause {
    /// The same cause as a `metav1.StatusCause` (every field written, as the API server's
    /// `field.Error` causes are).
    fn status_cause(&self) -> StatusCause {
        StatusCause {
            reason: Some(self.reason.clone()),
            message: Some(self.message.clone()),
            field: Some(self.field.clone()),
        }
    }
}

/// Go's `%q` of a string, close enough: JSON string quoting.
pub fn quote(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "\"\"".into())
}

impl Cause {
    /// `FieldValueInvalid`: `<field>: Invalid value: "<value>": <detail>`.
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: {detail}", quote(value)),
            field: field.into(),
        }
    }
    /// `FieldValueInvalid` whose value is not repeated (a secret, or too long to echo).
    pub fn invalid_unquoted(field: impl Into<String>, detail: &str) -> Self {
        Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {detail}"),
            field: field.into(),
        }
    }
    /// `FieldValueForbidden`: `<field>: Forbidden: <detail>`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }
    /// `FieldValueRequired`: `<field>: Required value: <detail>`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Cause {
            reason: "FieldValueRequired".into(),
            message: format!("Required value: {detail}"),
            field: field.into(),
        }
    }
    /// `FieldValueTooLong`: `<field>: Too long: may not be more than <n> bytes`.
    pub fn too_long(field: impl Into<String>, max_bytes: usize) -> Self {
        Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {max_bytes} bytes"),
            field: field.into(),
        }
    }
    /// `FieldValueTypeInvalid`: `<field>: Invalid value: "<type>": <detail>`.
    pub fn type_invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueTypeInvalid".into(),
            message: format!("Invalid value: {}: {detail}", quote(value)),
            field: field.into(),
        }
    }
    /// `FieldValueNotSupported`: `<field>: Unsupported value: "<value>": supported values:
    /// "<a>", "<b>"`.
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let values: Vec<String> = supported.iter().map(|v| quote(v)).collect();
        Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                quote(value),
                values.join(", ")
            ),
            field: field.into(),
        }
    }
    /// `<field>: <message>`, as `field.Error.Error()`.
    pub fn line(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// The sentence of a 415 on PATCH, as kube-apiserver says it for custom resources.
pub const UNSUPPORTED_PATCH_SENTENCE: &str = "the body of the request was in an unknown format - \
     accepted media types include: application/json-patch+json, application/merge-patch+json, \
     application/apply-patch+yaml";

/// The sentence of a 404 on a path nothing serves.
pub const PATH_NOT_FOUND_SENTENCE: &str = "the server could not find the requested resource";

/// What a 500 says: no internals.
pub const INTERNAL_SENTENCE: &str =
    "Internal error occurred: an unexpected error prevented the server from fulfilling the request";

/// The sentence of a 410 on a continue token older than what the server can still serve.
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a \
     consistent list result. You can start a new list without the continue parameter, or use \
     the continue token in this response to retrieve the remainder of the results. Continuing \
     with the provided token results in an inconsistent list - objects that were created, \
     modified, or deleted between the time the first chunk was returned and now may show up in \
     the list.";

/// Every Kubernetes-style failure, rendered as `metav1.Status`.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// 404: `clusters.clusterregistry.k8s.io "x" not found`.
    #[error("{} {} not found", .resource.qualified(), quote(.name))]
    NotFound {
        resource: &'static Resource,
        name: String,
    },
    /// 404 with a sentence and no details (an unserved path, a project that is not there).
    #[error("{0}")]
    NotFoundMessage(String),
    /// 409 AlreadyExists.
    #[error("{} {} already exists", .resource.qualified(), quote(.name))]
    AlreadyExists {
        resource: &'static Resource,
        name: String,
    },
    /// 409 Conflict on a stale `resourceVersion`.
    #[error(
        "Operation cannot be fulfilled on {} {}: the object has been modified; please apply \
         your changes to the latest version and try again",
        .resource.qualified(),
        quote(.name)
    )]
    Conflict {
        resource: &'static Resource,
        name: String,
    },
    /// 409 Conflict with a sentence of its own.
    #[error("{0}")]
    ConflictMessage(String),
    /// 409 Conflict of a server-side apply: the sentence and a `FieldManagerConflict` cause
    /// per field another manager owns.
    #[error("{message}")]
    ApplyConflict { message: String, causes: Vec<Cause> },
    /// 422 Invalid with its causes.
    #[error("{}", invalid_message(.resource, .name, .causes))]
    Invalid {
        resource: &'static Resource,
        name: String,
        causes: Vec<Cause>,
    },
    /// 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// 413: a body over the limit.
    #[error("Request entity too large: limit is {0}")]
    RequestEntityTooLarge(usize),
    /// 406: only media types the service does not write were acceptable.
    #[error("{0}")]
    NotAcceptable(String),
    /// 415 on a patch type the resource does not take.
    #[error("{UNSUPPORTED_PATCH_SENTENCE}")]
    UnsupportedMediaType,
    /// 405: `<action> is not supported on resources of kind "clusters.clusterregistry.k8s.io"`.
    #[error("{} is not supported on resources of kind {}", .action, quote(&.resource.qualified()))]
    MethodNotAllowed {
        resource: &'static Resource,
        action: String,
    },
    /// 405 for a method a path does not take.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowedHere,
    /// 401: no or bad credentials.
    #[error("Unauthorized")]
    Unauthorized,
    /// 403 for a verb on a resource (in a namespace, or cluster-wide when `namespace` is None).
    #[error("{}", forbidden_message(.resource, .verb, .name.as_deref(), .namespace.as_deref(), .user))]
    Forbidden {
        resource: &'static Resource,
        verb: String,
        name: Option<String>,
        namespace: Option<String>,
        user: String,
    },
    /// 403 of a quota: `exceeded quota: <sentence>` (reason Forbidden, as the apiserver).
    #[error("exceeded quota: {0}")]
    QuotaExceeded(String),
    /// 403 with a sentence of its own (a policy refusal).
    #[error("{0}")]
    ForbiddenMessage(String),
    /// 410 Expired: a watch or continue token too old.
    #[error("{0}")]
    Expired(String),
    /// 410 Expired of a continue token whose list can no longer be served consistently: the
    /// Status's `metadata.continue` holds a token that goes on from the same place at the
    /// latest resourceVersion (the apiserver's "inconsistent continue").
    #[error("{}", CONTINUE_EXPIRED)]
    ExpiredContinue { token: String },
    /// 504 of a resourceVersion the server has not reached: `Timeout: Too large resource
    /// version: <asked>, current: <latest>`, retried after a second.
    #[error("Timeout: Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: u64, current: u64 },
    /// 503 with a sentence.
    #[error("{0}")]
    ServiceUnavailable(String),
    /// 504 Timeout: `Timeout: <sentence>`.
    #[error("Timeout: {0}")]
    Timeout(String),
    /// 500: logged with its cause chain, answered without internals.
    #[error("{INTERNAL_SENTENCE}")]
    Internal(#[source] anyhow::Error),
}

fn invalid_message(resource: &Resource, name: &str, causes: &[Cause]) -> String {
    // `field.ErrorList.ToAggregate()`: duplicates dropped, one error bare, several in `[...]`.
    let mut lines: Vec<String> = Vec::with_capacity(causes.len());
    for c in causes {
        let l = c.line();
        if !lines.contains(&l) {
            lines.push(l);
        }
    }
    let head = format!("{} {} is invalid", resource.qualified_kind(), quote(name));
    match lines.len() {
        0 => head,
        1 => format!("{head}: {}", lines[0]),
        _ => format!("{head}: [{}]", lines.join(", ")),
    }
}

fn forbidden_message(
    resource: &Resource,
    verb: &str,
    name: Option<&str>,
    namespace: Option<&str>,
    user: &str,
) -> String {
    let subject = match name {
        Some(n) => format!("{} {}", resource.qualified(), quote(n)),
        None => resource.qualified(),
    };
    let mut m = format!(
        "{subject} is forbidden: User {} cannot {verb} resource {} in API group {}",
        quote(user),
        quote(resource.plural),
        quote(resource.group)
    );
    match namespace {
        Some(ns) => m.push_str(&format!(" in the namespace {}", quote(ns))),
        None => m.push_str(" at the cluster scope"),
    }
    m
}

impl KubeError {
    pub fn not_found(resource: &'static Resource, name: impl Into<String>) -> Self {
        KubeError::NotFound {
            resource,
            name: name.into(),
        }
    }
    pub fn already_exists(resource: &'static Resource, name: impl Into<String>) -> Self {
        KubeError::AlreadyExists {
            resource,
            name: name.into(),
        }
    }
    pub fn conflict(resource: &'static Resource, name: impl Into<String>) -> Self {
        KubeError::Conflict {
            resource,
            name: name.into(),
        }
    }
    pub fn invalid(
        resource: &'static Resource,
        name: impl Into<String>,
        causes: Vec<Cause>,
    ) -> Self {
        KubeError::Invalid {
            resource,
            name: name.into(),
            causes,
        }
    }
    /// 403 for `verb` on `resource` by `user`, in `namespace` (None: at the cluster scope).
    pub fn forbidden(
        verb: &str,
        resource: &'static Resource,
        namespace: Option<&str>,
        user: &str,
    ) -> Self {
        KubeError::Forbidden {
            resource,
            verb: verb.into(),
            name: None,
            namespace: namespace.map(str::to_string),
            user: user.into(),
        }
    }
    pub fn bad_request(msg: impl Into<String>) -> Self {
        KubeError::BadRequest(msg.into())
    }
    /// 404 for a path nothing serves (`/openapi/v2`, an unknown group).
    pub fn path_not_found() -> Self {
        KubeError::NotFoundMessage(PATH_NOT_FOUND_SENTENCE.into())
    }
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        KubeError::Internal(err.into())
    }
    /// 400 of strict field validation: `Cluster in version "v1alpha1" cannot be handled as a
    /// Cluster: strict decoding error: unknown field "a", unknown field "b"`.
    pub fn strict_decoding(resource: &Resource, unknown: &[String]) -> Self {
        let problems: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {}", quote(f)))
            .collect();
        Self::strict_decoding_problems(resource, &problems)
    }
    /// The same 400 with problems already worded (`duplicate field "x"`, `unknown field "y"`).
    pub fn strict_decoding_problems(resource: &Resource, problems: &[String]) -> Self {
        KubeError::BadRequest(format!(
            "{} in version {} cannot be handled as a {}: strict decoding error: {}",
            resource.kind,
            quote(resource.version),
            resource.kind,
            problems.join(", ")
        ))
    }
    /// 400 of a body that is not a decodable object: `Cluster in version "v1alpha1" cannot be
    /// handled as a Cluster: <why>`.
    pub fn undecodable(resource: &Resource, why: &str) -> Self {
        KubeError::BadRequest(format!(
            "{} in version {} cannot be handled as a {}: {why}",
            resource.kind,
            quote(resource.version),
            resource.kind
        ))
    }

    /// The `reason` field.
    pub fn reason(&self) -> &'static str {
        match self {
            KubeError::NotFound { .. } | KubeError::NotFoundMessage(_) => "NotFound",
            KubeError::AlreadyExists { .. } => "AlreadyExists",
            KubeError::Conflict { .. }
            | KubeError::ConflictMessage(_)
            | KubeError::ApplyConflict { .. } => "Conflict",
            KubeError::Invalid { .. } => "Invalid",
            KubeError::BadRequest(_) => "BadRequest",
            KubeError::UnsupportedMediaType => "UnsupportedMediaType",
            KubeError::NotAcceptable(_) => "NotAcceptable",
            KubeError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            KubeError::MethodNotAllowed { .. } | KubeError::MethodNotAllowedHere => {
                "MethodNotAllowed"
            }
            KubeError::Unauthorized => "Unauthorized",
            KubeError::Forbidden { .. }
            | KubeError::ForbiddenMessage(_)
            | KubeError::QuotaExceeded(_) => "Forbidden",
            KubeError::Expired(_) | KubeError::ExpiredContinue { .. } => "Expired",
            KubeError::ServiceUnavailable(_) => "ServiceUnavailable",
            KubeError::Timeout(_) | KubeError::TooLargeResourceVersion { .. } => "Timeout",
            KubeError::Internal(_) => "InternalError",
        }
    }

    fn details(&self) -> Option<StatusDetails> {
        let named = |name: &str, group: &str, kind: &str| StatusDetails {
            name: Some(name.to_string()),
            group: Some(group.to_string()),
            kind: Some(kind.to_string()),
            ..StatusDetails::default()
        };
        let causes = |causes: &[Cause]| Some(causes.iter().map(Cause::status_cause).collect());
        match self {
            KubeError::NotFound { resource, name }
            | KubeError::AlreadyExists { resource, name }
            | KubeError::Conflict { resource, name } => {
                Some(named(name, resource.group, resource.plural))
            }
            KubeError::Invalid {
                resource,
                name,
                causes: c,
            } => Some(StatusDetails {
                causes: causes(c),
                ..named(name, resource.group, resource.kind)
            }),
            KubeError::MethodNotAllowed { resource, .. } => Some(StatusDetails {
                name: None,
                ..named("", resource.group, resource.plural)
            }),
            KubeError::Forbidden { resource, name, .. } => Some(StatusDetails {
                name: name.clone(),
                ..named("", resource.group, resource.plural)
            }),
            KubeError::Internal(_) => Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    message: Some(
                        "an unexpected error prevented the server from fulfilling the request"
                            .into(),
                    ),
                    ..StatusCause::default()
                }]),
                ..StatusDetails::default()
            }),
            KubeError::NotFoundMessage(_) => Some(StatusDetails::default()),
            KubeError::TooLargeResourceVersion { .. } => Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ResourceVersionTooLarge".into()),
                    message: Some("Too large resource version".into()),
                    field: None,
                }]),
                retry_after_seconds: Some(1),
                ..StatusDetails::default()
            }),
            KubeError::ApplyConflict { causes: c, .. } => Some(StatusDetails {
                causes: causes(c),
                ..StatusDetails::default()
            }),
            _ => None,
        }
    }
}

/// A `metav1.Status` as JSON (k8s-openapi's type, so its fields are the API server's).
fn status_json(status: &Status) -> Value {
    serde_json::to_value(status).unwrap_or_else(|_| json!({}))
}

/// The `metav1.Status` of an error (the body of the response, and the object of a watch
/// `ERROR` event).
pub fn status_value(err: &KubeError) -> Value {
    let continue_ = match err {
        KubeError::ExpiredContinue { token } => Some(token.clone()),
        _ => None,
    };
    status_json(&Status {
        code: Some(i32::from(err.status_code().as_u16())),
        details: err.details(),
        message: Some(err.to_string()),
        metadata: ListMeta {
            continue_,
            ..ListMeta::default()
        },
        reason: Some(err.reason().to_string()),
        status: Some("Failure".into()),
    })
}

/// The `Success` Status a DELETE may answer with: `details` names the object.
pub fn success_status(resource: &Resource, name: &str, uid: &str) -> Value {
    status_json(&Status {
        details: Some(StatusDetails {
            name: Some(name.to_string()),
            group: Some(resource.group.to_string()),
            kind: Some(resource.plural.to_string()),
            uid: Some(uid.to_string()).filter(|u| !u.is_empty()),
            ..StatusDetails::default()
        }),
        status: Some("Success".into()),
        ..Status::default()
    })
}

impl ResponseError for KubeError {
    fn status_code(&self) -> StatusCode {
        match self {
            KubeError::NotFound { .. } | KubeError::NotFoundMessage(_) => StatusCode::NOT_FOUND,
            KubeError::AlreadyExists { .. }
            | KubeError::Conflict { .. }
            | KubeError::ConflictMessage(_)
            | KubeError::ApplyConflict { .. } => StatusCode::CONFLICT,
            KubeError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            KubeError::BadRequest(_) => StatusCode::BAD_REQUEST,
            KubeError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            KubeError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            KubeError::RequestEntityTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            KubeError::MethodNotAllowed { .. } | KubeError::MethodNotAllowedHere => {
                StatusCode::METHOD_NOT_ALLOWED
            }
            KubeError::Unauthorized => StatusCode::UNAUTHORIZED,
            KubeError::Forbidden { .. }
            | KubeError::ForbiddenMessage(_)
            | KubeError::QuotaExceeded(_) => StatusCode::FORBIDDEN,
            KubeError::Expired(_) | KubeError::ExpiredContinue { .. } => StatusCode::GONE,
            KubeError::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            KubeError::Timeout(_) | KubeError::TooLargeResourceVersion { .. } => {
                StatusCode::GATEWAY_TIMEOUT
            }
            KubeError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let KubeError::Internal(cause) = self {
            tracing::error!(error = %format!("{cause:#}"), "kubernetes API request failed");
        }
        let body = status_value(self).to_string();
        let mut resp = HttpResponse::build(self.status_code());
        if let KubeError::TooLargeResourceVersion { .. } = self {
            // As the apiserver: a Status with retryAfterSeconds also says it in the header.
            resp.insert_header(("Retry-After", "1"));
        }
        resp.content_type("application/json").body(body)
    }
}

impl From<crate::store::StoreError> for KubeError {
    /// A store failure as the v1 API words it (503 for an outage, 409 for a lost race, ...).
    fn from(err: crate::store::StoreError) -> Self {
        KubeError::from(ApiError::from(err))
    }
}

impl From<ApiError> for KubeError {
    /// The service's Magnum-style errors, as Status: the sentence kept, internals not.
    fn from(err: ApiError) -> Self {
        match err {
            ApiError::BadRequest(m) => KubeError::BadRequest(m),
            ApiError::Unauthorized(_) => KubeError::Unauthorized,
            ApiError::Forbidden(m) => KubeError::ForbiddenMessage(m),
            ApiError::NotFound(m) => KubeError::NotFoundMessage(m),
            ApiError::Conflict(m) => KubeError::ConflictMessage(m),
            ApiError::UnsupportedMediaType(_) => KubeError::UnsupportedMediaType,
            ApiError::ServiceUnavailable(m) => KubeError::ServiceUnavailable(m),
            e @ ApiError::Unavailable(_) => {
                tracing::error!(error = %format!("{:#}", anyhow::Error::new(e)), "database unavailable");
                KubeError::ServiceUnavailable(
                    "The service is temporarily unavailable; try again shortly.".into(),
                )
            }
            ApiError::Framework(status) => match status.as_u16() {
                404 => KubeError::path_not_found(),
                405 => KubeError::MethodNotAllowedHere,
                401 => KubeError::Unauthorized,
                _ if status.is_client_error() => KubeError::BadRequest(
                    status
                        .canonical_reason()
                        .unwrap_or("Bad Request")
                        .to_string(),
                ),
                _ => KubeError::Internal(anyhow::anyhow!("framework error {status}")),
            },
            ApiError::MicroversionUnsupported => {
                KubeError::BadRequest("Requested microversion is unsupported".into())
            }
            ApiError::Internal(cause) => KubeError::Internal(cause),
        }
    }
}

impl From<crate::domain::selector::SelectorError> for KubeError {
    fn from(err: crate::domain::selector::SelectorError) -> Self {
        KubeError::BadRequest(err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;

    fn body_of(err: &KubeError) -> (u16, String, Value) {
        let resp = err.error_response();
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = resp.into_body().try_into_bytes().unwrap_or_default();
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, ct, v)
    }

    #[test]
    fn not_found_names_the_resource_and_carries_its_details() {
        let (code, ct, v) = body_of(&KubeError::not_found(&CLUSTERS, "nosuch"));
        assert_eq!(code, 404);
        assert_eq!(ct, "application/json");
        assert_eq!(
            v,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"clusters.clusterregistry.k8s.io \"nosuch\" not found",
                "reason":"NotFound","code":404,
                "details":{"name":"nosuch","group":"clusterregistry.k8s.io","kind":"clusters"}})
        );
    }

    #[test]
    fn the_same_type_names_cluster_profiles() {
        let v = status_value(&KubeError::not_found(&CLUSTER_PROFILES, "p"));
        assert_eq!(
            v["message"],
            "clusterprofiles.multicluster.x-k8s.io \"p\" not found"
        );
        assert_eq!(v["details"]["group"], "multicluster.x-k8s.io");
        assert_eq!(v["details"]["kind"], "clusterprofiles");
    }

    #[test]
    fn already_exists_and_conflict_have_the_apiserver_sentences() {
        let v = status_value(&KubeError::already_exists(&CLUSTERS, "x"));
        assert_eq!(v["code"], 409);
        assert_eq!(v["reason"], "AlreadyExists");
        assert_eq!(
            v["message"],
            "clusters.clusterregistry.k8s.io \"x\" already exists"
        );
        let v = status_value(&KubeError::conflict(&CLUSTERS, "x"));
        assert_eq!(v["code"], 409);
        assert_eq!(v["reason"], "Conflict");
        assert_eq!(
            v["message"],
            "Operation cannot be fulfilled on clusters.clusterregistry.k8s.io \"x\": the object \
             has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(v["details"]["kind"], "clusters");
    }

    #[test]
    fn invalid_with_one_cause_is_bare_and_with_several_is_bracketed() {
        let one = KubeError::invalid(
            &CLUSTERS,
            "Bad_Name",
            vec![Cause::invalid("metadata.name", "Bad_Name", "bad name")],
        );
        let v = status_value(&one);
        assert_eq!(v["code"], 422);
        assert_eq!(v["reason"], "Invalid");
        assert_eq!(
            v["message"],
            "Cluster.clusterregistry.k8s.io \"Bad_Name\" is invalid: metadata.name: Invalid \
             value: \"Bad_Name\": bad name"
        );
        assert_eq!(
            v["details"],
            json!({"name":"Bad_Name","group":"clusterregistry.k8s.io","kind":"Cluster",
                "causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"Bad_Name\": bad name","field":"metadata.name"}]})
        );
        let two = KubeError::invalid(
            &CLUSTERS,
            "x",
            vec![
                Cause::forbidden("a", "no"),
                Cause::required("b", "yes"),
                Cause::forbidden("a", "no"),
            ],
        );
        assert_eq!(
            two.to_string(),
            "Cluster.clusterregistry.k8s.io \"x\" is invalid: [a: Forbidden: no, b: Required \
             value: yes]"
        );
    }

    #[test]
    fn strict_decoding_joins_the_unknown_fields() {
        let e = KubeError::strict_decoding(
            &CLUSTERS,
            &["spec.bogusField".to_string(), "metadata.foo".to_string()],
        );
        assert_eq!(e.status_code(), StatusCode::BAD_REQUEST);
        assert_eq!(
            e.to_string(),
            "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: strict decoding \
             error: unknown field \"spec.bogusField\", unknown field \"metadata.foo\""
        );
    }

    #[test]
    fn unsupported_media_type_lists_the_accepted_patch_types() {
        let v = status_value(&KubeError::UnsupportedMediaType);
        assert_eq!(v["code"], 415);
        assert_eq!(v["reason"], "UnsupportedMediaType");
        assert_eq!(
            v["message"],
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }

    #[test]
    fn unauthorized_is_the_bare_word() {
        let v = status_value(&KubeError::Unauthorized);
        assert_eq!(
            v,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"Unauthorized","reason":"Unauthorized","code":401})
        );
    }

    #[test]
    fn forbidden_names_user_verb_resource_group_and_namespace() {
        let e = KubeError::Forbidden {
            resource: &CLUSTERS,
            verb: "list".into(),
            name: None,
            namespace: Some("ns".into()),
            user: "u".into(),
        };
        assert_eq!(e.status_code(), StatusCode::FORBIDDEN);
        assert_eq!(
            e.to_string(),
            "clusters.clusterregistry.k8s.io is forbidden: User \"u\" cannot list resource \
             \"clusters\" in API group \"clusterregistry.k8s.io\" in the namespace \"ns\""
        );
        let e = KubeError::Forbidden {
            resource: &CLUSTERS,
            verb: "get".into(),
            name: Some("x".into()),
            namespace: None,
            user: "u".into(),
        };
        assert_eq!(
            e.to_string(),
            "clusters.clusterregistry.k8s.io \"x\" is forbidden: User \"u\" cannot get resource \
             \"clusters\" in API group \"clusterregistry.k8s.io\" at the cluster scope"
        );
        assert_eq!(status_value(&e)["details"]["name"], "x");
    }

    #[test]
    fn the_forbidden_constructor_and_quota_are_403() {
        let e = KubeError::forbidden("list", &PROFILES, None, "u");
        assert_eq!(
            e.to_string(),
            "clusterprofiles.multicluster.x-k8s.io is forbidden: User \"u\" cannot list resource \
             \"clusterprofiles\" in API group \"multicluster.x-k8s.io\" at the cluster scope"
        );
        let v = status_value(&KubeError::QuotaExceeded("clusters: 10 of 10 used".into()));
        assert_eq!(v["code"], 403);
        assert_eq!(v["reason"], "Forbidden");
        assert_eq!(v["message"], "exceeded quota: clusters: 10 of 10 used");
    }

    #[test]
    fn expired_unavailable_timeout_and_method_not_allowed_have_their_codes() {
        let v = status_value(&KubeError::Expired(
            "too old resource version: 1 (5)".into(),
        ));
        assert_eq!(
            (v["code"].clone(), v["reason"].clone()),
            (json!(410), json!("Expired"))
        );
        let v = status_value(&KubeError::ServiceUnavailable("down".into()));
        assert_eq!(
            (v["code"].clone(), v["reason"].clone(), v["message"].clone()),
            (json!(503), json!("ServiceUnavailable"), json!("down"))
        );
        let v = status_value(&KubeError::Timeout("too slow".into()));
        assert_eq!(
            (v["code"].clone(), v["message"].clone()),
            (json!(504), json!("Timeout: too slow"))
        );
        let v = status_value(&KubeError::MethodNotAllowed {
            resource: &CLUSTER_PROFILES,
            action: "create".into(),
        });
        assert_eq!(v["code"], 405);
        assert_eq!(
            v["message"],
            "create is not supported on resources of kind \"clusterprofiles.multicluster.x-k8s.io\""
        );
    }

    #[test]
    fn internal_errors_leak_nothing() {
        let (code, _, v) = body_of(&KubeError::internal(anyhow::anyhow!("password=hunter2")));
        assert_eq!(code, 500);
        assert_eq!(v["reason"], "InternalError");
        assert!(!v.to_string().contains("hunter2"));
    }

    #[test]
    fn success_status_names_the_deleted_object() {
        assert_eq!(
            success_status(&CLUSTERS, "x", "u-1"),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
                "details":{"name":"x","group":"clusterregistry.k8s.io","kind":"clusters","uid":"u-1"}})
        );
    }

    #[test]
    fn api_errors_map_to_their_kubernetes_codes() {
        let code = |e: ApiError| KubeError::from(e).status_code().as_u16();
        assert_eq!(code(ApiError::Unauthorized("bad token".into())), 401);
        assert_eq!(code(ApiError::forbidden("Policy says no.")), 403);
        assert_eq!(code(ApiError::bad_request("bad")), 400);
        assert_eq!(code(ApiError::not_found("gone")), 404);
        assert_eq!(code(ApiError::conflict("busy")), 409);
        assert_eq!(code(ApiError::internal(anyhow::anyhow!("x"))), 500);
        let e = KubeError::from(ApiError::ServiceUnavailable("No CA key configured.".into()));
        assert_eq!(e.status_code().as_u16(), 503);
        assert_eq!(e.to_string(), "No CA key configured.");
        assert_eq!(
            KubeError::from(ApiError::Unauthorized("bad token".into())).to_string(),
            "Unauthorized"
        );
    }
}
