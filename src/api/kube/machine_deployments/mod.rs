//! `cluster.k8s.io/v1alpha1` `machinedeployments` (short name `md`), namespaced by project:
//! one object per node group, the historical Cluster API v1alpha1 `MachineDeployment` over
//! the group's machines. List (JSON or Table, label and field selectors, `limit`/`continue`),
//! get, update and patch ([`update`]: `spec.replicas` a resize, `spec.template.spec` flavor,
//! image and kubelet version a rolling replacement, as `/v1` does them, [`change`]) and the
//! `scale` subresource ([`scale`]).
//!
//! A delete deletes the node group ([`delete`], as `/v1`'s); a watch follows the clusters' and
//! machines' change logs ([`watch`]). Not served: a create, a 405 `MethodNotAllowed` Status (a
//! node group is created with `POST /v1/clusters/{cluster}/nodegroups`).
//!
//! By what each part does: [`object`] (the wire form and the object name), [`listing`] (the
//! paged read and the lookup by name), [`table`] (`kubectl get` columns), [`diff`] (what a
//! desired object asks).

pub mod object;

mod change;
mod delete;
mod diff;
mod listing;
mod scale;
mod table;
mod update;
mod watch;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

use self::object::{machine_deployment, MachineDeployment, MachineDeploymentList};
use super::access::{DEPLOYMENT_GET, DEPLOYMENT_LIST, DEPLOYMENT_LIST_ALL_PROJECTS};
use super::clusters::method_not_allowed;
use super::list::ListOptions;
use super::paged;
use super::request::{
    accept, authorize_all_projects, authorize_namespace, caller, json_response, params, Params,
    Visible,
};
use super::scan::Selectors;
use super::status::{KubeError, MACHINE_DEPLOYMENTS};
use super::table::{wants_table, IncludeObject};
use crate::api::http::error::ApiError;
use crate::api::{AppState, RequestContext};

const BASE: &str = "/apis/cluster.k8s.io/v1alpha1";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("{BASE}/machinedeployments"))
            .route(web::get().to(list_all))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/machinedeployments"
        ))
        .route(web::get().to(list_namespace))
        .route(web::post().to(create))
        .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/machinedeployments/{{name}}"
        ))
        .route(web::get().to(get))
        .route(web::put().to(update::replace))
        .route(web::patch().to(update::patch))
        .route(web::delete().to(delete::delete))
        .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/machinedeployments/{{name}}/scale"
        ))
        .route(web::get().to(scale::get))
        .route(web::put().to(scale::replace))
        .route(web::patch().to(scale::patch))
        .default_service(web::to(method_not_allowed)),
    );
}

/// The verb a list request is (`watch` with `watch=true`), as refusals word it.
fn list_verb(o: &ListOptions) -> &'static str {
    if o.watch {
        "watch"
    } else {
        DEPLOYMENT_LIST.verb
    }
}

fn not_here(action: &str) -> KubeError {
    KubeError::MethodNotAllowed {
        resource: &MACHINE_DEPLOYMENTS,
        action: action.to_string(),
    }
}

/// `POST …/machinedeployments`: 405, a node group is created through `/v1`.
async fn create() -> Result<HttpResponse, KubeError> {
    Err(not_here(
        "create (a node group is created with POST /v1/clusters/{cluster_ident}/nodegroups, \
         and then served here)",
    ))
}

/// The list (JSON or Table) of what `visible` shows, or with `watch=true` its watch.
async fn list_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    p: &Params,
    o: &ListOptions,
) -> Result<HttpResponse, KubeError> {
    let selectors = Selectors::parse(p)?;
    let include = IncludeObject::parse(p.include_object.as_deref())?;
    if o.watch {
        return watch::start(req, state, visible, selectors, p, o).await;
    }
    let o = o.clone();
    let listed = paged::list::<listing::Deployments>(state, &visible, &selectors, &o).await?;
    let objects: Vec<MachineDeployment> = listed.items.iter().map(machine_deployment).collect();
    let token = listed.continue_token();
    if wants_table(accept(req)) {
        let rows: Vec<_> = listed.items.iter().zip(&objects).collect();
        let body = table::deployment_table(
            &rows,
            include,
            &listed.resource_version.to_string(),
            &token,
            chrono::Utc::now(),
        );
        return Ok(json_response(StatusCode::OK, &body));
    }
    let list = MachineDeploymentList {
        api_version: MACHINE_DEPLOYMENTS.api_version(),
        kind: MACHINE_DEPLOYMENTS.list_kind,
        metadata: ListMeta {
            resource_version: Some(listed.resource_version.to_string()),
            continue_: Some(token).filter(|t| !t.is_empty()),
            ..ListMeta::default()
        },
        items: &objects,
    };
    Ok(json_response(StatusCode::OK, &list))
}

/// `GET /apis/cluster.k8s.io/v1alpha1/machinedeployments`: every project's node groups for an
/// admin that `nodegroup:get_all_all_projects` allows, the caller's own project's for anyone
/// else.
#[tracing::instrument(name = "machinedeployments.list_all", skip_all)]
async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let o = ListOptions::parse(&p.list_query())?;
    let rules = (DEPLOYMENT_LIST.rule, DEPLOYMENT_LIST_ALL_PROJECTS);
    let visible = authorize_all_projects(&ctx, rules, list_verb(&o), &MACHINE_DEPLOYMENTS)?;
    list_answer(&req, &state, visible, &p, &o).await
}

#[tracing::instrument(name = "machinedeployments.list", skip_all, fields(namespace = %path))]
async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let o = ListOptions::parse(&p.list_query())?;
    let rule = DEPLOYMENT_LIST.rule;
    authorize_namespace(&ctx, rule, list_verb(&o), &MACHINE_DEPLOYMENTS, &path)?;
    list_answer(&req, &state, Visible::Namespace(path.into_inner()), &p, &o).await
}

#[tracing::instrument(name = "machinedeployments.get", skip_all, fields(namespace = %path.0, name = %path.1))]
async fn get(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let include = IncludeObject::parse(p.include_object.as_deref())?;
    let (rule, verb) = DEPLOYMENT_GET.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINE_DEPLOYMENTS, &namespace)?;
    let e = listing::find(&state, &namespace, &name)
        .await?
        .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, &name))?;
    let object = machine_deployment(&e);
    if wants_table(accept(&req)) {
        let rv = object::resource_version(&e).to_string();
        let body = table::deployment_table(&[(&e, &object)], include, &rv, "", chrono::Utc::now());
        return Ok(json_response(StatusCode::OK, &body));
    }
    Ok(json_response(StatusCode::OK, &object))
}
