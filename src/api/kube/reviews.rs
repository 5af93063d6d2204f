//! The self reviews kubectl's `auth` commands send: `authorization.k8s.io/v1`
//! `SelfSubjectAccessReview` (`kubectl auth can-i`), `SelfSubjectRulesReview`
//! (`kubectl auth can-i --list`) and `authentication.k8s.io/v1` `SelfSubjectReview`
//! (`kubectl auth whoami`). Every authenticated caller may create them, as on kube-apiserver;
//! the access reviews answer from the table the handlers authorize with ([`access`]), the
//! subject review with the caller's Kubernetes user information
//! ([`crate::auth::impersonation::user_info`]). Nothing is stored.

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, SelfSubjectReviewStatus, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceRule, ResourceRule, SubjectAccessReviewStatus, SubjectRulesReviewStatus,
};
use serde::de::DeserializeOwned;

use super::access::{self, Ask};
use super::protobuf;
use super::request::{caller, json_response};
use super::status::{Cause, KubeError, Resource};
use crate::api::http::error::ApiError;
use crate::api::v1::cluster_access;
use crate::api::{AppState, RequestContext};
use crate::auth::impersonation;

/// `authorization.k8s.io/v1` `selfsubjectaccessreviews`.
pub const ACCESS_REVIEWS: Resource = Resource {
    group: "authorization.k8s.io",
    version: "v1",
    plural: "selfsubjectaccessreviews",
    singular: "selfsubjectaccessreview",
    kind: "SelfSubjectAccessReview",
    list_kind: "SelfSubjectAccessReviewList",
};

/// `authorization.k8s.io/v1` `selfsubjectrulesreviews`.
pub const RULES_REVIEWS: Resource = Resource {
    plural: "selfsubjectrulesreviews",
    singular: "selfsubjectrulesreview",
    kind: "SelfSubjectRulesReview",
    list_kind: "SelfSubjectRulesReviewList",
    ..ACCESS_REVIEWS
};

/// `authentication.k8s.io/v1` `selfsubjectreviews`.
pub const SUBJECT_REVIEWS: Resource = Resource {
    group: "authentication.k8s.io",
    version: "v1",
    plural: "selfsubjectreviews",
    singular: "selfsubjectreview",
    kind: "SelfSubjectReview",
    list_kind: "SelfSubjectReviewList",
};

fn path(r: &Resource) -> String {
    format!("/apis/{}/{}/{}", r.group, r.version, r.plural)
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(path(&ACCESS_REVIEWS))
            .route(web::post().to(access_review))
            .default_service(web::to(super::edge::method_not_allowed)),
    )
    .service(
        web::resource(path(&RULES_REVIEWS))
            .route(web::post().to(rules_review))
            .default_service(web::to(super::edge::method_not_allowed)),
    )
    .service(
        web::resource(path(&SUBJECT_REVIEWS))
            .route(web::post().to(subject_review))
            .default_service(web::to(super::edge::method_not_allowed)),
    );
}

/// The body as a `resource` object (JSON, YAML, or protobuf read by `from_protobuf`), 400 in
/// apimachinery's words otherwise.
fn decode<T: DeserializeOwned>(
    req: &HttpRequest,
    body: &Bytes,
    resource: &Resource,
    from_protobuf: fn(&[u8]) -> Result<T, String>,
) -> Result<T, KubeError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    let decoded = if protobuf::is_protobuf(content_type) {
        from_protobuf(body)
    } else if media.eq_ignore_ascii_case("application/yaml") {
        serde_norway::from_slice(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(body).map_err(|e| e.to_string())
    };
    decoded.map_err(|e| KubeError::undecodable(resource, &e))
}

fn decision_status(d: access::Decision) -> SubjectAccessReviewStatus {
    SubjectAccessReviewStatus {
        allowed: d.allowed,
        denied: d.denied.then_some(true),
        evaluation_error: None,
        reason: Some(d.reason).filter(|r| !r.is_empty()),
    }
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: may the caller do this?
#[tracing::instrument(name = "kube.access_review", skip_all)]
async fn access_review(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let mut review = decode(&req, &body, &ACCESS_REVIEWS, protobuf::access_review)?;
    let spec = &review.spec;
    let decision = match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(r), None) => {
            let text = |v: &Option<String>| v.as_deref().unwrap_or("").trim().to_string();
            let (namespace, verb, group) = (text(&r.namespace), text(&r.verb), text(&r.group));
            let (resource, subresource, name) =
                (text(&r.resource), text(&r.subresource), text(&r.name));
            let ask = Ask {
                namespace: &namespace,
                verb: &verb,
                group: &group,
                resource: &resource,
                subresource: &subresource,
                name: &name,
            };
            let decision = access::decide(&ctx, &ask);
            if decision.allowed
                || namespace.is_empty()
                || ctx.is_admin
                || namespace == ctx.project_id
            {
                decision
            } else {
                through_groups(&state, &ctx, &ask)
                    .await?
                    .unwrap_or(decision)
            }
        }
        (None, Some(n)) => access::decide_path(
            n.verb.as_deref().unwrap_or(""),
            n.path.as_deref().unwrap_or(""),
        ),
        (None, None) => {
            return Err(KubeError::invalid(
                &ACCESS_REVIEWS,
                "",
                vec![Cause::required(
                    "spec.resourceAttributes",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )],
            ))
        }
        (Some(_), Some(_)) => {
            return Err(KubeError::invalid(
                &ACCESS_REVIEWS,
                "",
                vec![Cause::forbidden(
                    "spec.nonResourceAttributes",
                    "cannot be specified in combination with resourceAttributes",
                )],
            ))
        }
    };
    review.status = Some(decision_status(decision));
    Ok(json_response(StatusCode::CREATED, &review))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`: everything the caller may do
/// in `spec.namespace` (a project; none for what it may do across namespaces).
/// The answer in another project's namespace through the cluster groups bound to the
/// caller's project, as the handlers decide it (a project nothing is bound to as one whose
/// groups reach nothing there): the named cluster's right, one index read of the bindings and
/// one of the cluster's groups.
async fn through_groups(
    state: &AppState,
    ctx: &RequestContext,
    ask: &Ask<'_>,
) -> Result<Option<access::Decision>, KubeError> {
    let groups = cluster_access::caller_groups(state, ctx).await?;
    let reach = if ask.name.is_empty() {
        access::Reach::Namespace
    } else {
        let right = match state.store.registry_get(ask.namespace, ask.name).await? {
            Some(e) => {
                let via: Vec<_> = state
                    .store
                    .cluster_group_links(&[e.cluster.uuid], &groups.ids())
                    .await?
                    .into_iter()
                    .map(|(_, g)| g)
                    .collect();
                groups.right(&via)
            }
            None => None,
        };
        access::Reach::Named(right)
    };
    Ok(Some(access::decide_through(ctx, ask, reach)))
}

#[tracing::instrument(name = "kube.rules_review", skip_all)]
async fn rules_review(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let mut review = decode(&req, &body, &RULES_REVIEWS, protobuf::rules_review)?;
    let namespace = review.spec.namespace.clone().unwrap_or_default();
    let namespace = namespace.trim();
    let mut rules = access::rules(&ctx, namespace);
    // In another project's namespace, what bound groups grant without naming a cluster (the
    // named clusters' rights are not listed: the answer says it is incomplete).
    let shared = !namespace.is_empty()
        && !ctx.is_admin
        && namespace != ctx.project_id
        && !cluster_access::caller_groups(&state, &ctx)
            .await?
            .is_empty();
    if shared {
        rules.extend(access::through_rules(&ctx));
    }
    let resource_rules = rules
        .into_iter()
        .map(|(group, resource, verbs)| ResourceRule {
            api_groups: Some(vec![group.to_string()]),
            resource_names: None,
            resources: Some(vec![resource]),
            verbs,
        })
        .collect();
    review.status = Some(SubjectRulesReviewStatus {
        evaluation_error: None,
        incomplete: shared,
        non_resource_rules: vec![NonResourceRule {
            non_resource_urls: Some(
                access::NON_RESOURCE_URLS
                    .iter()
                    .map(|u| u.to_string())
                    .collect(),
            ),
            verbs: vec!["get".into()],
        }],
        resource_rules,
    });
    Ok(json_response(StatusCode::CREATED, &review))
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`: who the caller is (after any
/// impersonation), as Kubernetes user information.
#[tracing::instrument(name = "kube.subject_review", skip_all)]
async fn subject_review(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let mut review: SelfSubjectReview = if body.iter().all(u8::is_ascii_whitespace) {
        SelfSubjectReview::default()
    } else {
        decode(&req, &body, &SUBJECT_REVIEWS, |b| {
            protobuf::subject_review(b).map(|()| SelfSubjectReview::default())
        })?
    };
    let info = impersonation::user_info(&ctx.identity());
    review.status = Some(SelfSubjectReviewStatus {
        user_info: Some(UserInfo {
            username: Some(info.username),
            uid: Some(info.uid),
            groups: Some(info.groups),
            extra: Some(info.extra),
        }),
    });
    Ok(json_response(StatusCode::CREATED, &review))
}
