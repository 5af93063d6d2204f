//! The same clusters, read-only, as SIG-multicluster's `multicluster.x-k8s.io/v1alpha1`
//! `ClusterProfile` (namespaced by project; `spec.clusterManager.name: fleetyard`; conditions
//! `ControlPlaneHealthy` and `Joined`; `status.version.kubernetes`; `status.properties`), and
//! the kubeconfig export of a label selector's clusters.

use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use base64::Engine;
use serde::Serialize;
use serde_json::{json, Value};

use super::access::EXPORT;
use super::objects::{
    custom_list_meta, ClusterProfile, ClusterProfileList, PROFILE_API_VERSION, PROFILE_LIST_KIND,
};
use super::profile_view::{profile, MANAGER, MANAGER_LABEL};
use super::request::{
    accept, authorize_visible, authorized_entry, caller, json_response, list_rule, params, Visible,
};
use super::scan::{list_entries, page_limit, Selectors, MAX_PAGE};
use super::status::{KubeError, CLUSTERS, PROFILES};
use super::table;
use crate::api::http::error::ApiError;
use crate::api::{AppState, RequestContext};
use crate::store::RegistryEntry;

pub const GROUP: &str = "multicluster.x-k8s.io";
pub const RESOURCE: &str = "clusterprofiles";

const BASE: &str = "/apis/multicluster.x-k8s.io/v1alpha1";
const REGISTRY_BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("{BASE}/clusterprofiles"))
            .route(web::get().to(list_all))
            .default_service(web::to(read_only)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/clusterprofiles"))
            .route(web::get().to(list_namespace))
            .default_service(web::to(read_only)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/clusterprofiles/{{name}}"
        ))
        .route(web::get().to(get))
        .default_service(web::to(read_only)),
    )
    .service(
        web::resource(format!("{REGISTRY_BASE}/kubeconfig"))
            .route(web::get().to(kubeconfig_all))
            .default_service(web::to(read_only)),
    )
    .service(
        web::resource(format!(
            "{REGISTRY_BASE}/namespaces/{{namespace}}/kubeconfig"
        ))
        .route(web::get().to(kubeconfig_namespace))
        .default_service(web::to(read_only)),
    );
}

async fn read_only() -> Result<HttpResponse, KubeError> {
    Err(KubeError::MethodNotAllowedHere)
}

fn json_ok(body: &impl Serialize) -> HttpResponse {
    json_response(actix_web::http::StatusCode::OK, body)
}

async fn list_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
) -> Result<HttpResponse, KubeError> {
    let p = params(req)?;
    // A profile's labels are its cluster's and the cluster manager's.
    let selectors = Selectors::parse(&p)?.implying(MANAGER_LABEL, MANAGER);
    let options = super::list::ListOptions::parse(&p.list_query())?;
    if options.watch {
        return super::watch::start(
            req,
            state,
            visible,
            selectors,
            &p,
            &options,
            super::watch::Render::Profile,
        )
        .await;
    }
    let project = visible.project();
    let from = super::list::position(state.store.as_ref(), project.as_deref(), &options).await?;
    let listed = list_entries(
        state,
        &visible,
        &selectors,
        page_limit(&options),
        Some(&from),
    )
    .await?;
    let profiles: Vec<ClusterProfile> = listed.items.iter().map(profile).collect();
    let next = listed.continue_token();
    if table::wants_table(accept(req)) {
        let include = table::IncludeObject::parse(p.include_object.as_deref())?;
        return Ok(json_ok(&table::profile_table(
            &profiles,
            include,
            &listed.resource_version.to_string(),
            &next,
            chrono::Utc::now(),
        )));
    }
    Ok(json_ok(&ClusterProfileList {
        api_version: PROFILE_API_VERSION,
        kind: PROFILE_LIST_KIND,
        // `continue` also when empty, as a ClusterProfile hub (a custom resource) writes it.
        metadata: custom_list_meta(listed.resource_version, next, listed.remaining),
        items: &profiles,
    }))
}

#[tracing::instrument(name = "profiles.list_all", skip_all)]
async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let (rule, verb) = list_rule(&p);
    let visible = authorize_visible(&ctx, &state, (rule, verb), &PROFILES, None).await?;
    list_answer(&req, &state, visible).await
}

#[tracing::instrument(name = "profiles.list", skip_all, fields(namespace = %path))]
async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let (rule, verb) = list_rule(&p);
    let visible = authorize_visible(&ctx, &state, (rule, verb), &PROFILES, Some(&path)).await?;
    list_answer(&req, &state, visible).await
}

#[tracing::instrument(name = "profiles.get", skip_all, fields(namespace = %path.0, name = %path.1))]
async fn get(
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
        super::access::GET.pair(),
        &PROFILES,
    )
    .await?;
    let object = profile(&e);
    if table::wants_table(accept(&req)) {
        let include = table::IncludeObject::parse(p.include_object.as_deref())?;
        let rv = e.cluster.registry.resource_version.to_string();
        return Ok(json_ok(&table::profile_table(
            &[object],
            include,
            &rv,
            "",
            chrono::Utc::now(),
        )));
    }
    Ok(json_ok(&object))
}

// ---- Kubeconfig export ---------------------------------------------------------------------

#[derive(Serialize)]
struct KubeConfig {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    preferences: serde_json::Map<String, Value>,
    clusters: Vec<Named<ClusterEntry>>,
    contexts: Vec<Named<ContextEntry>>,
    users: Vec<Named<serde_json::Map<String, Value>>>,
    #[serde(rename = "current-context")]
    current_context: String,
}

#[derive(Serialize)]
struct Named<T> {
    name: String,
    #[serde(flatten)]
    inner: T,
}

#[derive(Serialize)]
struct ClusterEntry {
    cluster: ClusterServer,
}

#[derive(Serialize)]
struct ClusterServer {
    server: String,
    #[serde(
        rename = "certificate-authority-data",
        skip_serializing_if = "Option::is_none"
    )]
    certificate_authority_data: Option<String>,
}

#[derive(Serialize)]
struct ContextEntry {
    context: Context,
}

#[derive(Serialize)]
struct Context {
    cluster: String,
    user: String,
}

/// The user entry every context names: empty, for the operator's own credentials.
pub const EXPORT_USER: &str = "fleetyard-user";

/// A kubeconfig with one cluster and context per cluster (server and CA), no credentials.
pub fn kubeconfig(entries: &[RegistryEntry], all_namespaces: bool) -> String {
    let mut clusters = Vec::new();
    let mut contexts = Vec::new();
    for e in entries {
        let c = &e.cluster;
        let Some(server) = c.api_address.clone() else {
            continue;
        };
        let base = c.registry.name.clone();
        let name = if all_namespaces {
            format!("{}/{base}", c.project_id)
        } else {
            base
        };
        clusters.push(Named {
            name: name.clone(),
            inner: ClusterEntry {
                cluster: ClusterServer {
                    server,
                    certificate_authority_data: e
                        .ca_pem
                        .as_deref()
                        .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem)),
                },
            },
        });
        contexts.push(Named {
            name: name.clone(),
            inner: ContextEntry {
                context: Context {
                    cluster: name,
                    user: EXPORT_USER.into(),
                },
            },
        });
    }
    let config = KubeConfig {
        api_version: "v1",
        kind: "Config",
        preferences: serde_json::Map::new(),
        current_context: contexts.first().map(|c| c.name.clone()).unwrap_or_default(),
        clusters,
        contexts,
        users: vec![Named {
            name: EXPORT_USER.into(),
            inner: {
                let mut m = serde_json::Map::new();
                m.insert("user".into(), json!({}));
                m
            },
        }],
    };
    serde_norway::to_string(&config).unwrap_or_default()
}

/// Every matching cluster, page by page (at most `MAX_EXPORT`).
async fn export(
    req: &HttpRequest,
    state: &AppState,
    visible: Visible,
) -> Result<HttpResponse, KubeError> {
    const MAX_EXPORT: usize = 10_000;
    let p = params(req)?;
    let selectors = Selectors::parse(&p)?;
    let all = matches!(visible, Visible::All) || req.path().ends_with("/v1alpha1/kubeconfig");
    let mut entries = Vec::new();
    let mut from: Option<super::list::Position> = None;
    loop {
        let listed =
            list_entries(state, &visible, &selectors, Some(MAX_PAGE), from.as_ref()).await?;
        entries.extend(listed.items);
        match listed.next {
            Some(next) if entries.len() < MAX_EXPORT => {
                from = Some(super::list::Position {
                    resource_version: listed.resource_version,
                    after: Some(next.after()),
                })
            }
            _ => break,
        }
    }
    Ok(HttpResponse::Ok()
        .content_type("application/yaml")
        .body(kubeconfig(&entries, all)))
}

#[tracing::instrument(name = "registry.kubeconfig_all", skip_all)]
async fn kubeconfig_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let visible = authorize_visible(&ctx, &state, EXPORT.pair(), &CLUSTERS, None).await?;
    export(&req, &state, visible).await
}

#[tracing::instrument(name = "registry.kubeconfig", skip_all, fields(namespace = %path))]
async fn kubeconfig_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let visible = authorize_visible(&ctx, &state, EXPORT.pair(), &CLUSTERS, Some(&path)).await?;
    export(&req, &state, visible).await
}
