//! What every registry handler starts from: the caller, the query parameters it reads, the
//! policy checks (one namespace, all namespaces, one object), and the shapes of its answers
//! (JSON bodies, `Warning` headers, `?dryRun=`).

use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

use super::access::{self, namespace_target};
use super::list;
use super::status::{Cause, KubeError, Resource};
use crate::api::http::error::ApiError;
use crate::api::v1::cluster_access::{self, BoundGroups};
use crate::api::v1::lookup::cluster_target;
use crate::api::{AppState, RequestContext};
use crate::domain::cluster_group::ClusterAction;
use crate::domain::ClusterGroupId;
use crate::store::RegistryEntry;

/// The caller, with authentication failures as Kubernetes Status bodies.
pub(super) fn caller(ctx: Result<RequestContext, ApiError>) -> Result<RequestContext, KubeError> {
    ctx.map_err(KubeError::from)
}

/// Query parameters the registry reads; every other one is accepted and ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Params {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<String>,
    pub r#continue: Option<String>,
    pub watch: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub send_initial_events: Option<String>,
    pub timeout_seconds: Option<String>,
    pub allow_watch_bookmarks: Option<String>,
    pub include_object: Option<String>,
    pub field_validation: Option<String>,
    pub field_manager: Option<String>,
    pub dry_run: Option<String>,
    pub force: Option<String>,
}

impl Params {
    /// The list and watch options among the parameters.
    pub fn list_query(&self) -> list::ListQuery<'_> {
        list::ListQuery {
            watch: is_true(&self.watch),
            resource_version: self.resource_version.as_deref(),
            resource_version_match: self.resource_version_match.as_deref(),
            send_initial_events: self.send_initial_events.as_deref(),
            allow_watch_bookmarks: self.allow_watch_bookmarks.as_deref(),
            r#continue: self.r#continue.as_deref(),
            limit: self.limit.as_deref(),
        }
    }
}

pub(super) fn params(req: &HttpRequest) -> Result<Params, KubeError> {
    serde_urlencoded::from_str(req.query_string())
        .map_err(|e| KubeError::BadRequest(format!("invalid query parameters: {e}")))
}

fn is_true(v: &Option<String>) -> bool {
    matches!(v.as_deref(), Some("true" | "1" | "True"))
}

/// Whose clusters a request may see.
#[derive(Debug, Clone)]
pub(super) enum Visible {
    /// One namespace (project).
    Namespace(String),
    /// Every project (an admin's all-namespaces list).
    All,
    /// A caller's view through the cluster groups bound to its project: one namespace (every
    /// namespace when None), of its own project's clusters (`own`) and those the groups reach.
    Shared {
        namespace: Option<String>,
        own: String,
        /// The caller's roles (a binding may name some).
        roles: Vec<String>,
        groups: Arc<BoundGroups>,
    },
}

impl Visible {
    /// The one project the view is of, if it is of one.
    pub fn project(&self) -> Option<String> {
        match self {
            Visible::Namespace(p) => Some(p.clone()),
            Visible::All => None,
            Visible::Shared { namespace, .. } => namespace.clone(),
        }
    }
    /// Whether every cluster of `project` is in view (a shared view: only its own project's;
    /// another project's clusters there are decided one by one through the groups).
    pub fn admits(&self, project: &str) -> bool {
        match self {
            Visible::Namespace(p) => p == project,
            Visible::All => true,
            Visible::Shared { namespace, own, .. } => {
                own == project && namespace.as_ref().is_none_or(|n| n == project)
            }
        }
    }
    /// Whether `project` is in the view's namespace (every one when it has none).
    pub fn in_namespace(&self, project: &str) -> bool {
        match self {
            Visible::Namespace(p) => p == project,
            Visible::All => true,
            Visible::Shared { namespace, .. } => namespace.as_ref().is_none_or(|n| n == project),
        }
    }
    /// The (own project, bound groups) of a shared view, as a registry page reads it.
    pub fn shared(&self) -> Option<(String, Vec<ClusterGroupId>)> {
        match self {
            Visible::Shared { own, groups, .. } => Some((own.clone(), groups.ids())),
            _ => None,
        }
    }
}

/// What a verb does to a cluster, as a group's right decides it: a read for `get`, `list` and
/// `watch` (the kubeconfig export is a `get`), a change for any other.
fn action_of(verb: &str) -> ClusterAction {
    match verb {
        "get" => ClusterAction::Get,
        "list" => ClusterAction::List,
        "watch" => ClusterAction::Watch,
        "delete" | "deletecollection" => ClusterAction::Delete,
        _ => ClusterAction::Update,
    }
}

/// The groups bound to the caller's project, for a `verb` in `namespace`, another project's:
/// the caller's own project's rule decides the verb (as for a cluster of its own). A caller
/// nothing is bound to gets none, and so the answers of a bound caller for a cluster its
/// groups do not reach (404 for one cluster, an empty list): whether it is bound is not told.
pub(super) async fn shared_groups(
    ctx: &RequestContext,
    state: &AppState,
    (rule, verb): (&str, &str),
    resource: &'static Resource,
    namespace: &str,
) -> Result<BoundGroups, KubeError> {
    let refused = || KubeError::forbidden(verb, resource, Some(namespace), &ctx.user_id);
    if ctx.is_admin || !ctx.allowed(rule, &ctx.own_target()) {
        return Err(refused());
    }
    Ok(cluster_access::caller_groups(state, ctx).await?)
}

/// The view of a list or watch in `namespace` (None: every namespace): the caller's own
/// project (every project for an admin) as [`authorize_namespace`] and [`authorize_all`]
/// decide it, widened by the clusters the groups bound to its project reach. In another
/// project's namespace only those (none when nothing is bound). A watch across namespaces is
/// always a shared view, so that a binding made while it runs shows its clusters.
pub(super) async fn authorize_visible(
    ctx: &RequestContext,
    state: &AppState,
    (rule, verb): (&str, &str),
    resource: &'static Resource,
    namespace: Option<&str>,
) -> Result<Visible, KubeError> {
    let own = |groups: BoundGroups, namespace: Option<&str>| Visible::Shared {
        namespace: namespace.map(str::to_string),
        own: ctx.project_id.clone(),
        roles: ctx.roles.clone(),
        groups: Arc::new(groups),
    };
    match namespace {
        Some(ns) if !(ctx.is_admin || ctx.project_id == ns) => {
            let groups = shared_groups(ctx, state, (rule, verb), resource, ns).await?;
            Ok(own(groups, Some(ns)))
        }
        Some(ns) => {
            authorize_namespace(ctx, rule, verb, resource, ns)?;
            Ok(Visible::Namespace(ns.to_string()))
        }
        None => {
            let visible = authorize_all(ctx, rule, verb, resource)?;
            if ctx.is_admin || ctx.project_id.is_empty() {
                return Ok(visible);
            }
            let groups = cluster_access::caller_groups(state, ctx).await?;
            if groups.is_empty() && verb != access::WATCH.verb {
                return Ok(visible);
            }
            Ok(own(groups, None))
        }
    }
}

/// The cluster `name` of `namespace`, another project's, that a bound group reaches: 404 in
/// Kubernetes' words when there is none or no group reaches it (as for a cluster that does
/// not exist), 403 naming it when the groups grant only `read` and `verb` changes it.
pub(super) async fn shared_entry(
    ctx: &RequestContext,
    state: &AppState,
    groups: &BoundGroups,
    (namespace, name): (&str, &str),
    verb: &str,
    resource: &'static Resource,
) -> Result<RegistryEntry, KubeError> {
    let missing = || KubeError::not_found(resource, name);
    let e = state
        .store
        .registry_get(namespace, name)
        .await?
        .ok_or_else(missing)?;
    let via: Vec<ClusterGroupId> = state
        .store
        .cluster_group_links(&[e.cluster.uuid], &groups.ids())
        .await?
        .into_iter()
        .map(|(_, g)| g)
        .collect();
    let right = groups.right(&via).ok_or_else(missing)?;
    if !right.allows(action_of(verb)) {
        return Err(KubeError::Forbidden {
            resource,
            verb: verb.to_string(),
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            user: ctx.user_id.clone(),
        });
    }
    Ok(e)
}

/// 403 unless the caller may `verb` in `namespace`: its own project, or any as an admin, and
/// the policy rule passes.
pub(super) fn authorize_namespace(
    ctx: &RequestContext,
    rule: &str,
    verb: &str,
    resource: &'static Resource,
    namespace: &str,
) -> Result<(), KubeError> {
    if (ctx.is_admin || ctx.project_id == namespace)
        && ctx.allowed(rule, &namespace_target(ctx, namespace))
    {
        Ok(())
    } else {
        Err(KubeError::forbidden(
            verb,
            resource,
            Some(namespace),
            &ctx.user_id,
        ))
    }
}

/// The all-namespaces path: every project for an admin, the caller's own for anyone else.
pub(super) fn authorize_all(
    ctx: &RequestContext,
    rule: &str,
    verb: &str,
    resource: &'static Resource,
) -> Result<Visible, KubeError> {
    if !ctx.allowed(rule, &ctx.own_target()) {
        return Err(KubeError::forbidden(verb, resource, None, &ctx.user_id));
    }
    Ok(if ctx.is_admin {
        Visible::All
    } else {
        Visible::Namespace(ctx.project_id.clone())
    })
}

/// The all-namespaces path of a kind whose every-project read is a rule of its own (`all`):
/// every project for an admin `all` allows, the caller's own for anyone else.
pub(super) fn authorize_all_projects(
    ctx: &RequestContext,
    (rule, all): (&str, &str),
    verb: &str,
    resource: &'static Resource,
) -> Result<Visible, KubeError> {
    let own = ctx.own_target();
    if !ctx.allowed(rule, &own) {
        return Err(KubeError::forbidden(verb, resource, None, &ctx.user_id));
    }
    Ok(if ctx.is_admin && ctx.allowed(all, &own) {
        Visible::All
    } else {
        Visible::Namespace(ctx.project_id.clone())
    })
}

/// The entry `name` names in `namespace` for a caller that may `verb` it under `rule`: 403 for
/// a namespace (or object) the caller may not touch, 404 in Kubernetes' words for none. In
/// another project's namespace, a cluster a bound group reaches ([`shared_entry`]).
pub(super) async fn authorized_entry(
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    (rule, verb): (&str, &str),
    resource: &'static Resource,
) -> Result<RegistryEntry, KubeError> {
    if !(ctx.is_admin || ctx.project_id == namespace) {
        let groups = shared_groups(ctx, state, (rule, verb), resource, namespace).await?;
        return shared_entry(ctx, state, &groups, (namespace, name), verb, resource).await;
    }
    authorize_namespace(ctx, rule, verb, resource, namespace)?;
    let e = state
        .store
        .registry_get(namespace, name)
        .await?
        .ok_or_else(|| KubeError::not_found(resource, name))?;
    if !ctx.allowed(rule, &cluster_target(&e.cluster)) {
        return Err(KubeError::forbidden(
            verb,
            resource,
            Some(namespace),
            &ctx.user_id,
        ));
    }
    Ok(e)
}

/// The rule and verb of a list, or of a watch (`watch=true`).
pub(super) fn list_rule(p: &Params) -> (&'static str, &'static str) {
    if is_true(&p.watch) {
        access::WATCH.pair()
    } else {
        access::LIST.pair()
    }
}

/// The request's `Content-Type`, if it has one that is text.
pub(super) fn content_type(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}

pub(super) fn accept(req: &HttpRequest) -> &str {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

pub(super) fn json_response(
    status: actix_web::http::StatusCode,
    body: &impl Serialize,
) -> HttpResponse {
    json_response_as(status, "application/json", body)
}

/// `body` as JSON under `content_type` (discovery's aggregated media type, say).
pub(super) fn json_response_as(
    status: actix_web::http::StatusCode,
    content_type: &str,
    body: &impl Serialize,
) -> HttpResponse {
    match serde_json::to_vec(body) {
        Ok(bytes) => HttpResponse::build(status)
            .insert_header((header::CONTENT_TYPE, content_type))
            .body(bytes),
        Err(e) => actix_web::ResponseError::error_response(&KubeError::internal(e)),
    }
}

/// Reads an object from a request body (at most the service's payload limit, enforced by
/// actix): JSON, or YAML when the Content-Type says `application/yaml` (an apply patch's YAML
/// is read by [`patch::parse_applied`]).
pub(super) fn json_of(req: &HttpRequest, body: &Bytes) -> Result<Value, KubeError> {
    let yaml = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/yaml"))
        });
    let parsed = if yaml {
        serde_norway::from_slice::<Value>(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Value>(body).map_err(|e| e.to_string())
    };
    parsed.map_err(|e| {
        KubeError::BadRequest(format!(
            "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: {e}"
        ))
    })
}

/// The API server's refusal of a create whose object names a resourceVersion.
pub(super) fn refuse_resource_version(value: &Value) -> Result<(), KubeError> {
    if value["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty())
    {
        return Err(KubeError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    Ok(())
}

pub(super) fn with_warnings(mut resp: HttpResponse, warnings: &[String]) -> HttpResponse {
    for w in warnings.iter().take(16) {
        let text = super::validation::warning_header_value(w);
        if let Ok(v) = header::HeaderValue::from_bytes(text.as_bytes()) {
            resp.headers_mut()
                .append(header::HeaderName::from_static("warning"), v);
        }
    }
    resp
}

/// `?dryRun=All` of a create, replace or patch; any other stage is refused (422), as the API
/// server refuses it, rather than written for real.
pub(super) fn dry_run(p: &Params, options: &'static Resource) -> Result<bool, KubeError> {
    match p.dry_run.as_deref() {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(KubeError::invalid(
            options,
            "",
            vec![Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {}: supported values: \"All\"",
                    super::status::quote(&other.chars().take(64).collect::<String>())
                ),
                field: "dryRun".into(),
            }],
        )),
    }
}
