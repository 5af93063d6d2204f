//! `clusterregistry.k8s.io/v1alpha1` `clusters`, namespaced by project: list (JSON or Table,
//! label and field selectors, `limit`/`continue`), watch, get, create (a registered cluster,
//! driver `external`), replace, patch (merge, JSON, apply), delete and deletecollection, over
//! the same rows as `/v1/clusters`.

use std::collections::BTreeMap;

use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::access::{self, namespace_target};
use super::delete_options::Delete;
use super::managed::{self, Part};
use super::objects::{self, Cluster, ClusterList, ListMeta, API_VERSION, KIND, LIST_KIND};
use super::status::{
    Cause, KubeError, Resource, CLUSTERS, CREATE_OPTIONS, NAMESPACES, PATCH_OPTIONS, UPDATE_OPTIONS,
};
use super::table::{self, TableRow};
use super::{list, patch, validation, view, watch};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::v1::clusters::{delete_attempt, delete_writes, waiting_delete_writes};
use crate::api::v1::lookup::cluster_target;
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::{Cluster as Row, NewCluster};
use crate::domain::managed_fields::{ManagedFields, ManagerId, Operation};
use crate::domain::names::ClusterName;
use crate::domain::registry::{
    AuthPointers, ObjectRef, RegistryMeta, ServerEndpoint, EXTERNAL_DRIVER, EXTERNAL_TEMPLATE,
    NAME_ANNOTATION,
};
use crate::domain::selector::{FieldSelector, LabelSelector};
use crate::domain::status::ClusterStatus;
use crate::domain::ClusterId;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{RegistryEntry, RegistryPage, StoreError, Write};

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/v1/namespaces")
            .route(web::get().to(namespaces))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/namespaces/{namespace}")
            .route(web::get().to(namespace))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/clusters"))
            .name("registry_clusters_all")
            .route(web::get().to(list_all))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/clusters"))
            .route(web::get().to(list_namespace))
            .route(web::post().to(create))
            .route(web::delete().to(delete_collection))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/clusters/{{name}}/status"
        ))
        .route(web::get().to(get))
        .route(web::put().to(super::cluster_status::write_status))
        .route(web::patch().to(super::cluster_status::write_status))
        .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/clusters/{{name}}"))
            .route(web::get().to(get))
            .route(web::put().to(replace))
            .route(web::patch().to(patch_one))
            .route(web::delete().to(delete))
            .default_service(web::to(method_not_allowed)),
    );
}

async fn method_not_allowed() -> Result<HttpResponse, KubeError> {
    Err(KubeError::MethodNotAllowedHere)
}

/// The most namespaces one list shows.
const MAX_NAMESPACES: u32 = 1000;

fn namespace_object(name: &str) -> k8s_openapi::api::core::v1::Namespace {
    use k8s_openapi::api::core::v1::{Namespace, NamespaceSpec, NamespaceStatus};
    Namespace {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(NamespaceSpec {
            finalizers: Some(vec!["kubernetes".into()]),
        }),
        status: Some(NamespaceStatus {
            phase: Some("Active".into()),
            ..Default::default()
        }),
    }
}

/// `GET /api/v1/namespaces` (`kubectl get ns`): the projects the caller may see as
/// namespaces: its own, and for an admin every project that has clusters.
async fn namespaces(
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let mut names = vec![ctx.project_id.clone()];
    if ctx.is_admin {
        names.extend(state.store.registry_projects(MAX_NAMESPACES).await?);
        names.sort();
        names.dedup();
        names.truncate(MAX_NAMESPACES as usize);
    }
    let list = k8s_openapi::List {
        items: names.iter().map(|n| namespace_object(n)).collect(),
        metadata: Default::default(),
    };
    Ok(json_response(actix_web::http::StatusCode::OK, &list))
}

/// `GET /api/v1/namespaces/{namespace}`: kubectl asks after a 404 whether the namespace
/// exists. A project the caller may see is an `Active` Namespace; any other is a 403, so a
/// project's existence is not told to outsiders.
async fn namespace(
    ctx: Result<RequestContext, ApiError>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    if !(ctx.is_admin || ctx.project_id == namespace) {
        return Err(KubeError::forbidden("get", &NAMESPACES, None, &ctx.user_id));
    }
    Ok(json_response(
        actix_web::http::StatusCode::OK,
        &namespace_object(&namespace),
    ))
}

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

/// The most items one list answer holds, whatever `limit` says; a longer answer continues.
pub const MAX_PAGE: u32 = 500;
/// Rows one list request reads at most while a selector filters them out.
const MAX_SCANNED: usize = 20_000;
/// Rows read per statement while filtering.
const SCAN_CHUNK: u32 = 500;

/// Whose clusters a request may see.
#[derive(Debug, Clone)]
pub(super) enum Visible {
    /// One namespace (project).
    Namespace(String),
    /// Every project (an admin's all-namespaces list).
    All,
}

impl Visible {
    pub fn project(&self) -> Option<String> {
        match self {
            Visible::Namespace(p) => Some(p.clone()),
            Visible::All => None,
        }
    }
    pub fn admits(&self, project: &str) -> bool {
        match self {
            Visible::Namespace(p) => p == project,
            Visible::All => true,
        }
    }
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

/// The selectors of a list or watch.
#[derive(Debug, Clone, Default)]
pub(super) struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// A label every object of the listed kind carries beside the cluster's own (a
    /// ClusterProfile's `x-k8s.io/cluster-manager`), matched as one of its labels.
    pub implied: Option<(&'static str, &'static str)>,
}

impl Selectors {
    pub fn parse(p: &Params) -> Result<Selectors, KubeError> {
        Ok(Selectors {
            labels: LabelSelector::parse(p.label_selector.as_deref().unwrap_or(""))?,
            fields: FieldSelector::parse(p.field_selector.as_deref().unwrap_or(""))?,
            implied: None,
        })
    }

    /// The same selectors over objects that also carry the label `key: value`.
    pub fn implying(mut self, key: &'static str, value: &'static str) -> Selectors {
        self.implied = Some((key, value));
        self
    }

    pub fn matches(&self, name: &str, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        if !self.fields.matches(name, namespace) {
            return false;
        }
        match self.implied {
            Some(extra) => self.labels.matches_with(labels, extra),
            None => self.labels.matches(labels),
        }
    }
}

/// `?limit=` as [`list::parse_limit`] reads it, within one answer's [`MAX_PAGE`].
pub(super) fn page_limit(o: &list::ListOptions) -> Option<u32> {
    o.limit.map(|n| n.min(MAX_PAGE as usize) as u32)
}

/// One list answer: the items, the resourceVersion it is consistent with, where it continues,
/// and (without selectors) how many items the later pages hold.
pub(super) struct Listed {
    pub items: Vec<RegistryEntry>,
    pub resource_version: i64,
    pub next: Option<list::ContinueToken>,
    pub remaining: Option<i64>,
}

impl Listed {
    /// The `continue` of the answer (empty on the last page).
    pub fn continue_token(&self) -> String {
        self.next
            .as_ref()
            .map(list::ContinueToken::encode)
            .unwrap_or_default()
    }
}

/// Reads one page: in (project, name) order after the position (from the start at the latest
/// resourceVersion when None), filtered by the selectors, at most `limit` items (and
/// [`MAX_PAGE`]), reading at most [`MAX_SCANNED`] rows; with no selector, a page that has more
/// after it counts them.
pub(super) async fn list_entries(
    state: &AppState,
    visible: &Visible,
    selectors: &Selectors,
    limit: Option<u32>,
    from: Option<&list::Position>,
) -> Result<Listed, KubeError> {
    let want = limit.unwrap_or(MAX_PAGE).min(MAX_PAGE) as usize;
    let (mut after, rv) = match from {
        Some(p) => (p.after.clone(), p.resource_version),
        None => (None, state.store.registry_bounds().await?.0),
    };
    let token = |(p, n): &(String, String)| list::ContinueToken::new(rv, p, n);
    // One name in one namespace: one statement.
    if let (Visible::Namespace(ns), Some(name)) = (visible, selectors.fields.name()) {
        let items = match state.store.registry_get(ns.as_str(), name).await? {
            Some(e) if selectors_admit(selectors, &e) && after.is_none() => vec![e],
            _ => vec![],
        };
        return Ok(Listed {
            items,
            resource_version: rv,
            next: None,
            remaining: None,
        });
    }
    let unfiltered = selectors.labels.is_empty() && selectors.fields.is_empty();
    let mut items = Vec::new();
    let mut scanned = 0usize;
    loop {
        let chunk = if unfiltered {
            (want - items.len()) as u32 + 1
        } else {
            SCAN_CHUNK
        };
        let page = RegistryPage {
            project: visible.project(),
            after: after.clone(),
            limit: chunk,
        };
        let rows = state.store.registry_page(&page).await?;
        let exhausted = rows.len() < chunk as usize;
        for e in rows {
            scanned += 1;
            let key = (
                e.cluster.project_id.clone(),
                e.cluster.registry.name.clone(),
            );
            if items.len() == want {
                // One more matching row exists past the page: continue from the last item.
                if selectors_admit(selectors, &e) {
                    let last: &RegistryEntry = items.last().unwrap_or(&e);
                    let last = (
                        last.cluster.project_id.clone(),
                        last.cluster.registry.name.clone(),
                    );
                    let remaining = if unfiltered {
                        let project = visible.project();
                        Some(
                            state
                                .store
                                .registry_count_after(project.as_deref(), Some((&last.0, &last.1)))
                                .await?,
                        )
                    } else {
                        None
                    };
                    return Ok(Listed {
                        next: Some(token(&last)),
                        items,
                        resource_version: rv,
                        remaining,
                    });
                }
            } else if selectors_admit(selectors, &e) {
                items.push(e);
            }
            after = Some(key);
            if scanned >= MAX_SCANNED {
                let last = after.clone().unwrap_or_default();
                return Ok(Listed {
                    items,
                    resource_version: rv,
                    next: Some(token(&last)),
                    remaining: None,
                });
            }
        }
        if exhausted {
            return Ok(Listed {
                items,
                resource_version: rv,
                next: None,
                remaining: None,
            });
        }
    }
}

fn selectors_admit(s: &Selectors, e: &RegistryEntry) -> bool {
    let name = e.cluster.registry.name.clone();
    s.matches(&name, &e.cluster.project_id, &e.cluster.registry.labels)
}

/// A row of the `Table` answer.
pub(super) fn table_row<'a>(e: &'a RegistryEntry, object: &'a Cluster) -> TableRow<'a> {
    TableRow {
        object,
        status: e.cluster.status.as_str(),
        health: e
            .cluster
            .health_status
            .map(|h| h.as_str())
            .unwrap_or("UNKNOWN"),
        driver: &e.driver,
        nodes: Some(e.node_count),
        coe_version: e.cluster.coe_version.as_deref().unwrap_or(""),
    }
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
    match serde_json::to_vec(body) {
        Ok(bytes) => HttpResponse::build(status)
            .content_type("application/json")
            .body(bytes),
        Err(e) => actix_web::ResponseError::error_response(&KubeError::internal(e)),
    }
}

/// A list (or watch, with `watch=true`) answer.
async fn list_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    p: &Params,
) -> Result<HttpResponse, KubeError> {
    let selectors = Selectors::parse(p)?;
    let options = list::ListOptions::parse(&p.list_query())?;
    if options.watch {
        return watch::start(
            req,
            state,
            visible,
            selectors,
            p,
            &options,
            watch::Render::Cluster,
        )
        .await;
    }
    let from = list::position(state.store.as_ref(), visible.project().as_deref(), &options).await?;
    let listed = list_entries(
        state,
        &visible,
        &selectors,
        page_limit(&options),
        Some(&from),
    )
    .await?;
    let objects: Vec<Cluster> = listed.items.iter().map(view::cluster).collect();
    if table::wants_table(accept(req)) {
        let rows: Vec<TableRow> = listed
            .items
            .iter()
            .zip(&objects)
            .map(|(e, o)| table_row(e, o))
            .collect();
        let body = table::cluster_table(
            &rows,
            table::IncludeObject::parse(p.include_object.as_deref())?,
            &listed.resource_version.to_string(),
            &listed.continue_token(),
            chrono::Utc::now(),
        );
        return Ok(json_response(actix_web::http::StatusCode::OK, &body));
    }
    let list = ClusterList {
        api_version: API_VERSION,
        kind: LIST_KIND,
        metadata: ListMeta {
            resource_version: listed.resource_version.to_string(),
            r#continue: listed.continue_token(),
            remaining_item_count: listed.remaining,
        },
        items: &objects,
    };
    Ok(json_response(actix_web::http::StatusCode::OK, &list))
}

#[tracing::instrument(name = "registry.list_all", skip_all)]
async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let (rule, verb) = list_rule(&p);
    let visible = authorize_all(&ctx, rule, verb, &CLUSTERS)?;
    list_answer(&req, &state, visible, &p).await
}

#[tracing::instrument(name = "registry.list", skip_all, fields(namespace = %path))]
async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let (rule, verb) = list_rule(&p);
    authorize_namespace(&ctx, rule, verb, &CLUSTERS, &path)?;
    list_answer(&req, &state, Visible::Namespace(path.into_inner()), &p).await
}

/// The entry `name` names in `namespace` for a caller that may `verb` it under `rule`: 403 for
/// a namespace (or object) the caller may not touch, 404 in Kubernetes' words for none.
pub(super) async fn authorized_entry(
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    (rule, verb): (&str, &str),
    resource: &'static Resource,
) -> Result<RegistryEntry, KubeError> {
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

/// The entry `name` names in `namespace`, or 404 in Kubernetes' words.
async fn entry(state: &AppState, namespace: &str, name: &str) -> Result<RegistryEntry, KubeError> {
    state
        .store
        .registry_get(namespace, name)
        .await?
        .ok_or_else(|| KubeError::not_found(&CLUSTERS, name))
}

#[tracing::instrument(name = "registry.get", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn get(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let e = authorized_entry(
        &ctx,
        &state,
        (&namespace, &name),
        access::GET.pair(),
        &CLUSTERS,
    )
    .await?;
    let object = view::cluster(&e);
    if table::wants_table(accept(&req)) {
        let rows = [table_row(&e, &object)];
        let body = table::cluster_table(
            &rows,
            table::IncludeObject::parse(p.include_object.as_deref())?,
            &e.cluster.registry.resource_version.to_string(),
            "",
            chrono::Utc::now(),
        );
        return Ok(json_response(actix_web::http::StatusCode::OK, &body));
    }
    Ok(json_response(actix_web::http::StatusCode::OK, &object))
}

/// What a body asks for, parsed and checked: the registry's part of the row and the name.
struct Desired {
    name: String,
    meta: RegistryMeta,
    resource_version: Option<i64>,
    uid: Option<String>,
    warnings: Vec<String>,
}

/// Checks a whole object (create, replace, or the result of a patch) and reads what the
/// registry stores from it.
fn desired(body: &Value, p: &Params, url_name: Option<&str>) -> Result<Desired, KubeError> {
    let mut warnings = validation::validate_cluster(
        body,
        validation::FieldValidation::parse(p.field_validation.as_deref())?,
    )?;
    warnings.extend(validation::finalizer_warnings(body));
    let mut obj: Cluster = serde_json::from_value(body.clone()).map_err(|e| {
        KubeError::BadRequest(format!(
            "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: {e}"
        ))
    })?;
    if !obj.api_version.is_empty() && obj.api_version != API_VERSION {
        return Err(KubeError::BadRequest(format!(
            "the API version in the data ({}) does not match the expected API version ({API_VERSION})",
            obj.api_version
        )));
    }
    if !obj.kind.is_empty() && obj.kind != KIND {
        return Err(KubeError::BadRequest(format!(
            "the kind in the data ({}) does not match the expected kind ({KIND})",
            obj.kind
        )));
    }
    if obj.metadata.name.is_empty() && url_name.is_none() && !obj.metadata.generate_name.is_empty()
    {
        obj.metadata.name = validation::generate_name(&obj.metadata.generate_name);
    }
    let name = match url_name {
        Some(url) => {
            if !obj.metadata.name.is_empty() && obj.metadata.name != url {
                return Err(KubeError::BadRequest(format!(
                    "the name of the object ({}) does not match the name on the URL ({url})",
                    obj.metadata.name
                )));
            }
            url.to_string()
        }
        None => obj.metadata.name.clone(),
    };
    if name.is_empty() {
        return Err(KubeError::invalid(
            &CLUSTERS,
            "",
            vec![Cause::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    let resource_version = match obj.metadata.resource_version.as_str() {
        "" => None,
        rv => Some(
            rv.parse::<i64>()
                .map_err(|_| KubeError::BadRequest(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let spec = obj.spec;
    let endpoints = spec.kubernetes_api_endpoints.unwrap_or_default();
    let ca_bundle = match endpoints.ca_bundle.as_deref() {
        None | Some("") => None,
        Some(b64) => Some(
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|_| {
                        KubeError::invalid(
                            &CLUSTERS,
                            &name,
                            vec![Cause::invalid_unquoted(
                                "spec.kubernetesApiEndpoints.caBundle",
                                "not base64",
                            )],
                        )
                    })?,
            )
            .map_err(|_| {
                KubeError::invalid(
                    &CLUSTERS,
                    &name,
                    vec![Cause::invalid_unquoted(
                        "spec.kubernetesApiEndpoints.caBundle",
                        "not PEM text",
                    )],
                )
            })?,
        ),
    };
    let pointer = |r: Option<objects::ObjectReference>| {
        r.map(|r| ObjectRef {
            kind: r.kind,
            name: r.name,
            namespace: r.namespace,
        })
    };
    let auth = spec.auth_info.unwrap_or_default();
    let finalizers = obj.metadata.finalizers;
    let owner_references = obj.metadata.owner_references;
    let generate_name = Some(obj.metadata.generate_name).filter(|g| !g.is_empty());
    let mut annotations = obj.metadata.annotations;
    // The derived-name annotation is the service's; a client's copy of it is not stored.
    annotations.remove(NAME_ANNOTATION);
    Ok(Desired {
        name,
        meta: RegistryMeta {
            labels: obj.metadata.labels,
            annotations,
            resource_version: 0,
            generation: 1,
            server_endpoints: endpoints
                .server_endpoints
                .into_iter()
                .map(|s| ServerEndpoint {
                    client_cidr: s.client_cidr,
                    server_address: s.server_address,
                })
                .collect(),
            ca_bundle,
            auth_info: AuthPointers {
                user: pointer(auth.user),
                controller: pointer(auth.controller),
            },
            finalizers,
            owner_references,
            generate_name,
            ..RegistryMeta::default()
        },
        resource_version,
        uid: Some(obj.metadata.uid).filter(|u| !u.is_empty()),
        warnings,
    })
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

pub(super) fn with_warnings(mut resp: HttpResponse, warnings: &[String]) -> HttpResponse {
    for w in warnings.iter().take(16) {
        let text = format!("299 - {:?}", w.replace(['\r', '\n'], " "));
        if let Ok(v) = header::HeaderValue::from_str(&text) {
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

/// The new registered cluster a create inserts.
fn new_cluster(
    ctx: &RequestContext,
    namespace: &str,
    d: &Desired,
) -> Result<NewCluster, KubeError> {
    let name = ClusterName::registered(&d.name).ok_or_else(|| {
        KubeError::invalid(
            &CLUSTERS,
            &d.name,
            vec![Cause::invalid(
                "metadata.name",
                &d.name,
                validation::NAME_MESSAGE,
            )],
        )
    })?;
    Ok(NewCluster {
        uuid: ClusterId::new(),
        project_id: namespace.to_string(),
        user_id: ctx.user_id.clone(),
        name,
        cluster_template_id: EXTERNAL_TEMPLATE,
        keypair: None,
        docker_volume_size: None,
        labels: Default::default(),
        master_flavor_id: None,
        flavor_id: None,
        create_timeout: 0,
        discovery_url: None,
        fixed_network: None,
        fixed_subnet: None,
        floating_ip_enabled: false,
        master_lb_enabled: false,
        nodegroups: Vec::new(),
        status: ClusterStatus::CreateComplete,
        registry: RegistryMeta {
            name: d.name.clone(),
            ..d.meta.clone()
        },
        derive_registry_name: false,
    })
}

/// Registers `d` in `namespace`: the row (complete at once), the quota check and the create
/// event in one commit; 409 AlreadyExists when the name is taken.
async fn register(
    state: &AppState,
    ctx: &RequestContext,
    namespace: &str,
    d: &Desired,
) -> Result<RegistryEntry, KubeError> {
    let new = new_cluster(ctx, namespace, d)?;
    let now = chrono::Utc::now();
    let row = new.provisional(now);
    let writes = vec![
        Write::CheckClusterQuota {
            project_id: namespace.to_string(),
            default_limit: state.settings.quotas.max_clusters_per_project,
        },
        Write::InsertCluster(Box::new(new)),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Create,
            Outcome::Success,
            &row,
            &[],
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => {}
        Err(e) if e.is_constraint("uniq_cluster0project_id0registry_name") => {
            return Err(KubeError::already_exists(&CLUSTERS, &d.name))
        }
        Err(StoreError::LimitExceeded { limit }) => {
            return Err(KubeError::QuotaExceeded(format!(
                "clusters.clusterregistry.k8s.io \"{}\" is forbidden: exceeded quota: the project may have {limit} clusters",
                d.name
            )))
        }
        Err(e) => return Err(e.into()),
    }
    entry(state, namespace, &d.name).await
}

#[tracing::instrument(name = "registry.create", skip_all, fields(namespace = %path))]
async fn create(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    let (rule, verb) = access::CREATE.pair();
    authorize_namespace(&ctx, rule, verb, &CLUSTERS, &namespace)?;
    let p = params(&req)?;
    let mut value = json_of(&req, &body)?;
    // kubectl's client-side apply re-creates exported objects (a file written by
    // `get -o yaml`): their server-owned fields are dropped below rather than refused.
    if p.field_manager.as_deref() != Some("kubectl-client-side-apply")
        && value["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty())
    {
        return Err(KubeError::BadRequest(
            "resourceVersion should not be set on objects to be created".into(),
        ));
    }
    strip_server_fields(&mut value, &namespace)?;
    let mut d = desired(&value, &p, None)?;
    let manager = managed::manager(&req, p.field_manager.as_deref(), &CREATE_OPTIONS)?;
    record_create(&ctx, &namespace, &mut d, &manager)?;
    if dry_run(&p, &CREATE_OPTIONS)? {
        let new = new_cluster(&ctx, &namespace, &d)?;
        let e = preview(&new);
        return Ok(with_warnings(
            json_response(actix_web::http::StatusCode::CREATED, &view::cluster(&e)),
            &d.warnings,
        ));
    }
    let e = register(&state, &ctx, &namespace, &d).await?;
    Ok(with_warnings(
        json_response(actix_web::http::StatusCode::CREATED, &view::cluster(&e)),
        &d.warnings,
    ))
}

/// Records the creating manager's fields on `d` (an `Update`, as the API server records a
/// create).
fn record_create(
    ctx: &RequestContext,
    namespace: &str,
    d: &mut Desired,
    manager: &str,
) -> Result<(), KubeError> {
    let shown = serde_json::to_value(view::cluster(&preview(&new_cluster(ctx, namespace, d)?)))
        .map_err(KubeError::internal)?;
    let mut m = ManagedFields::default();
    m.update(
        &managed::SCHEMA,
        &Value::Object(Default::default()),
        &managed::tracked(&shown, Part::Main),
        &ManagerId::new(manager, Operation::Update, ""),
        API_VERSION,
        chrono::Utc::now(),
    );
    d.meta.managed_fields = m;
    Ok(())
}

/// The row a write leaves with its managed fields: an apply's (already computed), or the
/// update's fields recorded for `id`; `None` when neither the object nor its managers change.
fn with_managed_fields(
    e: &RegistryEntry,
    current: &Value,
    next: Option<Row>,
    applied: Option<ManagedFields>,
    id: &ManagerId,
) -> Result<Option<Row>, KubeError> {
    let changed = next.is_some();
    let mut row = next.unwrap_or_else(|| e.cluster.clone());
    match applied {
        Some(m) => row.registry.managed_fields = m,
        None => {
            let mut shown = e.clone();
            shown.cluster = row.clone();
            let new = serde_json::to_value(view::cluster(&shown)).map_err(KubeError::internal)?;
            row.registry.managed_fields.update(
                &managed::SCHEMA,
                &managed::tracked(current, Part::Main),
                &managed::tracked(&new, Part::Main),
                id,
                API_VERSION,
                chrono::Utc::now(),
            );
        }
    }
    Ok(
        (changed || row.registry.managed_fields != e.cluster.registry.managed_fields)
            .then_some(row),
    )
}

/// The `metadata.resourceVersion` or `metadata.uid` an applied object states, if any.
fn stated<'a>(applied: &'a Value, field: &str) -> Option<&'a str> {
    applied["metadata"][field]
        .as_str()
        .filter(|s| !s.is_empty())
}

/// What a dry-run create would have stored.
fn preview(new: &NewCluster) -> RegistryEntry {
    RegistryEntry {
        cluster: new.provisional(crate::store::sql::now()),
        driver: EXTERNAL_DRIVER.into(),
        node_count: 0,
        ca_pem: new.registry.ca_bundle.clone(),
        last_heartbeat: None,
        last_transition: None,
    }
}

/// Drops what the server owns from a body (uid, resourceVersion and the like are checked
/// separately on updates) and refuses a namespace other than the URL's.
fn strip_server_fields(value: &mut Value, namespace: &str) -> Result<(), KubeError> {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(ns) = meta.get("namespace").and_then(Value::as_str) {
            if !ns.is_empty() && ns != namespace {
                return Err(KubeError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                        .into(),
                ));
            }
        }
        for k in [
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(k);
        }
    }
    if let Some(obj) = value.as_object_mut() {
        obj.remove("status");
    }
    Ok(())
}

/// Applies `d` to the stored cluster `e`: labels, annotations, and (for a registered cluster)
/// endpoints, CA and credential pointers; a provisioned cluster's spec is the service's.
fn changed_row(e: &RegistryEntry, d: &Desired) -> Result<Option<Row>, KubeError> {
    let c = &e.cluster;
    let name = c.registry.name.clone();
    if let Some(uid) = &d.uid {
        if *uid != c.uuid.to_string() {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
    }
    if let Some(rv) = d.resource_version {
        if rv != c.registry.resource_version {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
    }
    if c.registry.is_deleting() {
        let added = c.registry.added_finalizers(&d.meta.finalizers);
        if !added.is_empty() {
            return Err(KubeError::invalid(
                &CLUSTERS,
                &name,
                vec![Cause::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        added
                            .iter()
                            .map(|f| super::status::quote(f))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )],
            ));
        }
    }
    let external = e.driver == EXTERNAL_DRIVER;
    let mut next = c.clone();
    let r = &mut next.registry;
    r.labels = d.meta.labels.clone();
    r.annotations = d.meta.annotations.clone();
    r.finalizers = d.meta.finalizers.clone();
    r.owner_references = d.meta.owner_references.clone();
    if r.deletion_waits() {
        next.status_reason = Some(r.waiting_reason());
    }
    let spec_changed = if external {
        let changed = r.server_endpoints != d.meta.server_endpoints
            || r.ca_bundle != d.meta.ca_bundle
            || r.auth_info != d.meta.auth_info;
        r.server_endpoints = d.meta.server_endpoints.clone();
        r.ca_bundle = d.meta.ca_bundle.clone();
        r.auth_info = d.meta.auth_info.clone();
        changed
    } else {
        // A provisioned cluster's endpoints and CA are what the service made; only the
        // credential pointers are the client's.
        let shown = view::cluster(e);
        let shown_eps = shown
            .spec
            .kubernetes_api_endpoints
            .map(|k| k.server_endpoints)
            .unwrap_or_default();
        let asked: Vec<_> = d
            .meta
            .server_endpoints
            .iter()
            .map(|s| objects::ServerAddressByClientCidr {
                client_cidr: s.client_cidr.clone(),
                server_address: s.server_address.clone(),
            })
            .collect();
        if asked != shown_eps || d.meta.ca_bundle != e.ca_pem {
            return Err(KubeError::invalid(
                &CLUSTERS,
                &name,
                vec![Cause::forbidden(
                    "spec.kubernetesApiEndpoints",
                    "the endpoints and CA of a cluster provisioned by this service are the service's own; only registered clusters take them from the registry",
                )],
            ));
        }
        let changed = r.auth_info != d.meta.auth_info;
        r.auth_info = d.meta.auth_info.clone();
        changed
    };
    if spec_changed {
        r.generation += 1;
    }
    if external {
        next.api_address = next.registry.api_address();
    }
    Ok((next.registry != c.registry || next.api_address != c.api_address).then_some(next))
}

/// Writes a changed registry object with its `magnum.cluster.update` event.
pub(super) async fn update_row(
    state: &AppState,
    ctx: &RequestContext,
    next: &Row,
) -> Result<bool, KubeError> {
    let ngs = state.store.nodegroups_of(&[next.uuid]).await?;
    let writes = vec![
        Write::update_cluster(next),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Success,
            next,
            &ngs,
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::Stale) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Replace, merge/JSON patch, or server-side apply of one object, retried on a lost race
/// unless the client named the version it read.
async fn modify(
    req: &HttpRequest,
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    p: &Params,
    body: &Bytes,
    how: Modify,
) -> Result<HttpResponse, KubeError> {
    let (rule, verb) = access::UPDATE.pair();
    authorize_namespace(ctx, rule, verb, &CLUSTERS, namespace)?;
    let dry = dry_run(
        p,
        if how == Modify::Replace {
            &UPDATE_OPTIONS
        } else {
            &PATCH_OPTIONS
        },
    )?;
    let apply = how == Modify::Apply;
    let force = if how == Modify::Replace {
        false
    } else {
        managed::force(p.force.as_deref(), apply)?
    };
    let manager = managed::manager(
        req,
        p.field_manager.as_deref(),
        if how == Modify::Replace {
            &UPDATE_OPTIONS
        } else {
            &PATCH_OPTIONS
        },
    )?;
    let id = ManagerId::new(&manager, managed::operation(apply), "");
    let applied = if apply {
        let applied = patch::parse_applied(body)?;
        managed::check_applied(&applied, namespace, name)?;
        if let Some(other) = stated(&applied, "name").filter(|n| *n != name) {
            return Err(KubeError::BadRequest(format!(
                "the name of the object ({other}) does not match the name on the URL ({name})"
            )));
        }
        // The namespace, if the object names one, is the URL's.
        strip_server_fields(&mut applied.clone(), namespace)?;
        Some(applied)
    } else {
        None
    };
    let outcome = retry::until_committed(async || {
        let found = state.store.registry_get(namespace, name).await?;
        let e = match found {
            Some(e) => e,
            None if how == Modify::Apply => {
                // Server-side apply creates what is missing.
                let (rule, verb) = access::CREATE.pair();
                authorize_namespace(ctx, rule, verb, &CLUSTERS, namespace)?;
                let Some(applied) = applied.as_ref() else {
                    return Err(KubeError::not_found(&CLUSTERS, name));
                };
                if stated(applied, "resourceVersion").is_some() || stated(applied, "uid").is_some() {
                    return Err(KubeError::conflict(&CLUSTERS, name));
                }
                let mut fields = ManagedFields::default();
                let mut value = fields
                    .apply(
                        &managed::SCHEMA,
                        &Value::Object(Default::default()),
                        false,
                        &managed::tracked(applied, Part::Main),
                        &id,
                        API_VERSION,
                        force,
                        chrono::Utc::now(),
                    )
                    .map_err(|c| managed::conflict_error(&c))?;
                value["metadata"]["name"] = Value::String(name.to_string());
                strip_server_fields(&mut value, namespace)?;
                let mut d = desired(&value, p, Some(name))?;
                d.meta.managed_fields = fields;
                if dry {
                    let new = new_cluster(ctx, namespace, &d)?;
                    return Ok(Attempt::Done((actix_web::http::StatusCode::CREATED, preview(&new), d.warnings)));
                }
                let e = register(state, ctx, namespace, &d).await?;
                return Ok(Attempt::Done((actix_web::http::StatusCode::CREATED, e, d.warnings)));
            }
            None => return Err(KubeError::not_found(&CLUSTERS, name)),
        };
        if !ctx.allowed(access::UPDATE.rule, &cluster_target(&e.cluster)) {
            return Err(KubeError::forbidden("update", &CLUSTERS, Some(namespace), &ctx.user_id));
        }
        let current = serde_json::to_value(view::cluster(&e))
            .map_err(KubeError::internal)?;
        let mut applied_fields = None;
        let mut value = match (how, applied.as_ref()) {
            (Modify::Apply, Some(applied)) => {
                // An applied object's resourceVersion and uid are preconditions.
                let shown = &current["metadata"];
                if stated(applied, "resourceVersion")
                    .is_some_and(|rv| Some(rv) != shown["resourceVersion"].as_str())
                    || stated(applied, "uid").is_some_and(|u| Some(u) != shown["uid"].as_str())
                {
                    return Err(KubeError::conflict(&CLUSTERS, name));
                }
                let mut fields = e.cluster.registry.managed_fields.clone();
                let merged = fields
                    .apply(
                        &managed::SCHEMA,
                        &managed::tracked(&current, Part::Main),
                        true,
                        &managed::tracked(applied, Part::Main),
                        &id,
                        API_VERSION,
                        force,
                        chrono::Utc::now(),
                    )
                    .map_err(|c| managed::conflict_error(&c))?;
                applied_fields = Some(fields);
                let mut merged = merged;
                merged["metadata"]["name"] = Value::String(name.to_string());
                merged
            }
            (Modify::Replace, _) => json_of(req, body)?,
            _ => {
                let ct = req
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                patch::apply_patch(ct, &current, body)?
            }
        };
        // A replace names the version it read; a patch only when it carries one itself. An
        // apply (server-side, or kubectl's client-side apply) sends what a file holds: the
        // server-owned fields of an exported object are ignored there.
        let applying = how == Modify::Apply
            || p.field_manager.as_deref() == Some("kubectl-client-side-apply");
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            if applying
                || (how != Modify::Replace
                    && meta.get("resourceVersion") == current["metadata"].get("resourceVersion"))
            {
                meta.remove("resourceVersion");
            }
            if applying {
                meta.remove("uid");
            }
            meta.remove("generation");
            meta.remove("creationTimestamp");
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            meta.remove("managedFields");
        }
        if let Some(obj) = value.as_object_mut() {
            obj.remove("status");
        }
        if let Some(ns) = value["metadata"].get("namespace").and_then(Value::as_str) {
            if !ns.is_empty() && ns != namespace {
                return Err(KubeError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request".into(),
                ));
            }
        }
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("namespace");
        }
        let d = desired(&value, p, Some(name))?;
        if how == Modify::Replace && d.resource_version.is_none() {
            // As for a custom resource: an update names the version it replaces.
            return Err(KubeError::invalid(
                &CLUSTERS,
                name,
                vec![Cause::invalid_unquoted(
                    "metadata.resourceVersion",
                    "0x0: must be specified for an update",
                )],
            ));
        }
        let next = changed_row(&e, &d)?;
        let Some(next) = with_managed_fields(&e, &current, next, applied_fields, &id)? else {
            return Ok(Attempt::Done((actix_web::http::StatusCode::OK, e, d.warnings)));
        };
        if dry {
            let mut shown = e.clone();
            shown.cluster = next;
            return Ok(Attempt::Done((actix_web::http::StatusCode::OK, shown, d.warnings)));
        }
        if next.registry.is_deleting() && next.registry.finalizers.is_empty() {
            // The last finalizer is gone: the deletion that waited for it goes on.
            if !finish_deletion(state, ctx, &e, &next).await? {
                if d.resource_version.is_some() {
                    return Err(KubeError::conflict(&CLUSTERS, name));
                }
                return Ok(Attempt::Retry);
            }
            let still = state.store.registry_entries(&[next.uuid]).await?.into_iter().next();
            let mut shown = still.unwrap_or_else(|| e.clone());
            if shown.cluster.registry.resource_version == e.cluster.registry.resource_version {
                shown.cluster = next;
            }
            return Ok(Attempt::Done((actix_web::http::StatusCode::OK, shown, d.warnings)));
        }
        if update_row(state, ctx, &next).await? {
            let e = state
                .store
                .registry_entries(&[next.uuid])
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| KubeError::not_found(&CLUSTERS, name))?;
            return Ok(Attempt::Done((actix_web::http::StatusCode::OK, e, d.warnings)));
        }
        if d.resource_version.is_some() {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
        Ok(Attempt::Retry)
    })
    .await;
    let (status, e, warnings) = outcome?;
    Ok(with_warnings(
        json_response(status, &view::cluster(&e)),
        &warnings,
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modify {
    Replace,
    Patch,
    Apply,
}

#[tracing::instrument(name = "registry.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
async fn replace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    modify(
        &req,
        &ctx,
        &state,
        (&namespace, &name),
        &p,
        &body,
        Modify::Replace,
    )
    .await
}

#[tracing::instrument(name = "registry.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
async fn patch_one(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let apply = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/apply-patch"));
    if apply {
        managed::require_apply_manager(p.field_manager.as_deref())?;
    }
    let how = if apply { Modify::Apply } else { Modify::Patch };
    modify(&req, &ctx, &state, (&namespace, &name), &p, &body, how).await
}

/// Deletes one cluster as the API server deletes an object: with finalizers, the cluster is
/// only marked (`deletionTimestamp`, status `DELETE_IN_PROGRESS` with the finalizers named in
/// its reason) and stays until the last finalizer is removed; without, a registered cluster
/// goes at once (row and event in one commit) and a provisioned one through its driver, as
/// `DELETE /v1/clusters/{id}` does. A cluster already being deleted is left as it is. Returns
/// the cluster as it still is, if it is.
async fn delete_entry(
    state: &AppState,
    ctx: &RequestContext,
    e: &RegistryEntry,
) -> Result<Option<RegistryEntry>, KubeError> {
    if e.cluster.registry.is_deleting() {
        return Ok(Some(e.clone()));
    }
    if e.driver == EXTERNAL_DRIVER {
        let mut next = e.cluster.clone();
        let writes = if next.begin_delete(crate::store::sql::now()) {
            external_delete_writes(state, ctx, &e.cluster)
        } else {
            // A registered cluster has no node groups.
            waiting_delete_writes(state, ctx, &next, &[])
        };
        return match state.store.commit(&writes).await {
            Ok(()) | Err(StoreError::Stale) => Ok(state
                .store
                .registry_entries(&[e.cluster.uuid])
                .await?
                .into_iter()
                .next()),
            Err(err) if err.is_constraint("federation_membership") => Err(federated(&e.cluster)),
            Err(err) => Err(err.into()),
        };
    }
    let c = e.cluster.clone();
    retry::until_committed(async || {
        let current = match state.store.find_cluster(&c.uuid).await? {
            Some(c) => c,
            None => return Ok(Attempt::Done(())),
        };
        delete_attempt(state, ctx, &current).await
    })
    .await
    .map_err(KubeError::from)?;
    Ok(state
        .store
        .registry_entries(&[c.uuid])
        .await?
        .into_iter()
        .next())
}

fn federated(c: &Row) -> KubeError {
    KubeError::ConflictMessage(format!(
        "cluster {} belongs to a federation; unjoin it first",
        c.registry.name.clone()
    ))
}

/// The writes that remove a registered cluster: refused while it is federated; a registered
/// cluster has no node groups, so there is nothing else to read for the event.
fn external_delete_writes(state: &AppState, ctx: &RequestContext, c: &Row) -> Vec<Write> {
    vec![
        Write::RefuseIfFederated {
            cluster_uuid: c.uuid,
        },
        Write::DeleteCluster { uuid: c.uuid },
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Success,
            c,
            &[],
            Some(&initiator(ctx)),
        )),
    ]
}

/// Goes on with a deletion whose last finalizer `next` removes (from `e`): a registered
/// cluster's row goes, a provisioned cluster's driver teardown starts; in one commit with the
/// update, which is refused (`false`) when `e` moved on meanwhile.
async fn finish_deletion(
    state: &AppState,
    ctx: &RequestContext,
    e: &RegistryEntry,
    next: &Row,
) -> Result<bool, KubeError> {
    let writes = if e.driver == EXTERNAL_DRIVER {
        // The update checks the version the change was planned on.
        let mut writes = vec![Write::update_cluster(next)];
        writes.extend(external_delete_writes(state, ctx, next));
        writes
    } else {
        let mut teardown = next.clone();
        teardown.status_reason = None;
        delete_writes(state, ctx, &teardown)
            .await
            .map_err(KubeError::from)?
    };
    match state.store.commit(&writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::Stale) => Ok(false),
        Err(err) if err.is_constraint("federation_membership") => Err(federated(&e.cluster)),
        Err(err) => Err(err.into()),
    }
}

#[tracing::instrument(name = "registry.delete", skip_all, fields(namespace = %path.0, name = %path.1))]
async fn delete(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let options = Delete::parse(req.query_string(), &body)?;
    let e = authorized_entry(
        &ctx,
        &state,
        (&namespace, &name),
        access::DELETE.pair(),
        &CLUSTERS,
    )
    .await?;
    check_preconditions(&options, &e)?;
    if options.dry_run {
        return Ok(json_response(
            actix_web::http::StatusCode::OK,
            &view::cluster(&dry_run_delete(&state, &e).await?),
        ));
    }
    let still = delete_entry(&state, &ctx, &e).await?;
    Ok(json_response(
        actix_web::http::StatusCode::OK,
        &view::cluster(still.as_ref().unwrap_or(&e)),
    ))
}

/// What a delete would leave, written nowhere: the same refusals (a federation member), and
/// the cluster marked as being deleted.
async fn dry_run_delete(state: &AppState, e: &RegistryEntry) -> Result<RegistryEntry, KubeError> {
    if !state
        .store
        .federations_of_cluster(&e.cluster.uuid)
        .await?
        .is_empty()
    {
        return Err(federated(&e.cluster));
    }
    let mut shown = e.clone();
    shown
        .cluster
        .registry
        .mark_deleting(crate::store::sql::now());
    Ok(shown)
}

/// `DeleteOptions.preconditions` (uid, resourceVersion): 409 when the object moved on.
fn check_preconditions(options: &Delete, e: &RegistryEntry) -> Result<(), KubeError> {
    let name = e.cluster.registry.name.clone();
    if let Some(uid) = &options.uid {
        if *uid != e.cluster.uuid.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {}: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                CLUSTERS.qualified(),
                e.cluster.uuid
            )));
        }
    }
    if let Some(rv) = &options.resource_version {
        if *rv != e.cluster.registry.resource_version.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {} {}: the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                CLUSTERS.qualified(),
                super::status::quote(&name),
                e.cluster.registry.resource_version
            )));
        }
    }
    Ok(())
}

/// deletecollection: every cluster of the namespace the selectors pick (one page's worth per
/// request), answered as the list of what was deleted.
#[tracing::instrument(name = "registry.delete_collection", skip_all, fields(namespace = %path))]
async fn delete_collection(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    authorize_namespace(
        &ctx,
        access::DELETE_COLLECTION.rule,
        access::DELETE_COLLECTION.verb,
        &CLUSTERS,
        &namespace,
    )?;
    let p = params(&req)?;
    let options = Delete::parse(req.query_string(), &body)?;
    let selectors = Selectors::parse(&p)?;
    let listed = list_entries(
        &state,
        &Visible::Namespace(namespace.clone()),
        &selectors,
        Some(MAX_PAGE),
        None,
    )
    .await?;
    let mut gone = Vec::new();
    for e in &listed.items {
        if !ctx.allowed(access::DELETE.rule, &cluster_target(&e.cluster)) {
            continue;
        }
        let shown = if options.dry_run {
            dry_run_delete(&state, e).await?
        } else {
            delete_entry(&state, &ctx, e)
                .await?
                .unwrap_or_else(|| e.clone())
        };
        gone.push(view::cluster(&shown));
    }
    let list = ClusterList {
        api_version: API_VERSION,
        kind: LIST_KIND,
        metadata: ListMeta {
            resource_version: listed.resource_version.to_string(),
            r#continue: String::new(),
            remaining_item_count: None,
        },
        items: &gone,
    };
    Ok(json_response(actix_web::http::StatusCode::OK, &list))
}
