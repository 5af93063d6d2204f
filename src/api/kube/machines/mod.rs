//! `cluster.k8s.io/v1alpha1` `machines`, namespaced by project: list (JSON or Table, label
//! and field selectors, `limit`/`continue`), watch ([`watch`], from the machines' change log),
//! get, create (a node more in its group, [`create`]), delete (that node goes, [`delete`]),
//! update and patch (a change of versions, runtime or image, [`update`]) and the `status`
//! subresource ([`status`]), one object per stored machine (a node of a cluster).
//!
//! By what each part does: [`object`] (the wire form and the object name), [`listing`] (the
//! paged read and the lookup by name), [`table`] (`kubectl get` columns) and [`owners`] (the
//! `metadata.managedFields` each write leaves, as a registry cluster keeps them).

pub mod object;

mod create;
mod delete;
pub(super) mod listing;
mod owners;
mod status;
mod table;
mod update;
mod watch;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

use self::object::{machine, Machine, MachineList};
use super::access::{MACHINE_GET, MACHINE_LIST, MACHINE_LIST_ALL_PROJECTS};
use super::clusters::method_not_allowed;
use super::list::ListOptions;
use super::paged;
use super::request::{
    accept, authorize_all_projects, authorize_namespace, caller, json_response, params, Params,
    Visible,
};
use super::scan::Selectors;
use super::status::{KubeError, MACHINES};
use super::table::{wants_table, IncludeObject};
use crate::api::http::error::ApiError;
use crate::api::{AppState, RequestContext};

pub(super) const BASE: &str = "/apis/cluster.k8s.io/v1alpha1";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("{BASE}/machines"))
            .route(web::get().to(list_all))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/machines"))
            .route(web::get().to(list_namespace))
            .route(web::post().to(create::create))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/machines/{{name}}"))
            .route(web::get().to(get))
            .route(web::delete().to(delete::delete))
            .route(web::put().to(update::replace))
            .route(web::patch().to(update::patch))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/machines/{{name}}/status"
        ))
        .route(web::get().to(status::get))
        .route(web::put().to(status::replace))
        .route(web::patch().to(status::patch))
        .default_service(web::to(method_not_allowed)),
    );
}

/// The verb a list request is (`watch` with `watch=true`), as refusals word it.
fn list_verb(o: &ListOptions) -> &'static str {
    if o.watch {
        "watch"
    } else {
        MACHINE_LIST.verb
    }
}

/// The list (JSON or Table) of what `visible` shows.
async fn list_answer(
    req: &HttpRequest,
    state: &AppState,
    visible: Visible,
    p: &Params,
    o: &ListOptions,
) -> Result<HttpResponse, KubeError> {
    let selectors = Selectors::parse(p)?;
    let include = IncludeObject::parse(p.include_object.as_deref())?;
    let listed = paged::list::<listing::Machines>(state, &visible, &selectors, o).await?;
    let objects: Vec<Machine> = listed.items.iter().map(machine).collect();
    if wants_table(accept(req)) {
        let rows: Vec<_> = listed.items.iter().zip(&objects).collect();
        let body = table::machine_table(
            &rows,
            include,
            &listed.resource_version.to_string(),
            &listed.continue_token(),
            chrono::Utc::now(),
        );
        return Ok(json_response(StatusCode::OK, &body));
    }
    let token = listed.continue_token();
    let list = MachineList {
        api_version: MACHINES.api_version(),
        kind: MACHINES.list_kind,
        metadata: ListMeta {
            resource_version: Some(listed.resource_version.to_string()),
            continue_: Some(token).filter(|t| !t.is_empty()),
            ..ListMeta::default()
        },
        items: &objects,
    };
    Ok(json_response(StatusCode::OK, &list))
}

/// The options of a list or watch.
fn list_options(p: &Params) -> Result<ListOptions, KubeError> {
    ListOptions::parse(&p.list_query())
}

/// The list, or with `watch=true` the watch, of what `visible` shows.
async fn list_or_watch(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    p: &Params,
    o: &ListOptions,
) -> Result<HttpResponse, KubeError> {
    if o.watch {
        let selectors = Selectors::parse(p)?;
        IncludeObject::parse(p.include_object.as_deref())?;
        return watch::start(req, state, visible, selectors, p, o).await;
    }
    list_answer(req, state, visible, p, o).await
}

/// `GET /apis/cluster.k8s.io/v1alpha1/machines`: every project's machines for an admin that
/// `machine:get_all_all_projects` allows, the caller's own project's for anyone else.
#[tracing::instrument(name = "machines.list_all", skip_all)]
async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let o = list_options(&p)?;
    let rules = (MACHINE_LIST.rule, MACHINE_LIST_ALL_PROJECTS);
    let visible = authorize_all_projects(&ctx, rules, list_verb(&o), &MACHINES)?;
    list_or_watch(&req, &state, visible, &p, &o).await
}

#[tracing::instrument(name = "machines.list", skip_all, fields(namespace = %path))]
async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let o = list_options(&p)?;
    authorize_namespace(&ctx, MACHINE_LIST.rule, list_verb(&o), &MACHINES, &path)?;
    list_or_watch(&req, &state, Visible::Namespace(path.into_inner()), &p, &o).await
}

#[tracing::instrument(name = "machines.get", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let (rule, verb) = MACHINE_GET.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let e = listing::find(&state, &namespace, &name)
        .await?
        .ok_or_else(|| KubeError::not_found(&MACHINES, &name))?;
    let object = machine(&e);
    let rv = e.resource_version;
    if wants_table(accept(&req)) {
        let body = table::machine_table(
            &[(&e, &object)],
            include,
            &rv.to_string(),
            "",
            chrono::Utc::now(),
        );
        return Ok(json_response(StatusCode::OK, &body));
    }
    Ok(json_response(StatusCode::OK, &object))
}
