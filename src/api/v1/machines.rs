//! `/v1/clusters/{cluster_ident}/machines` (microversion 1.19 and later): a cluster's machines,
//! one per node, listed with filters (`nodegroup`, `role`, `phase`) and keyset pages, one
//! machine by uuid or name, and the delete of one machine (that node goes, its node group
//! shrinks by one: [`super::machine_delete`]); from 1.20 a machine's own changes, updates,
//! replacements and reboots ([`super::machine_ops`]). Below 1.19 the routes answer 406 with the
//! empty framework body, as every route newer than the request's microversion does. The
//! create of one machine in a node group (microversion 1.20, [`super::machine_create`]) is
//! routed here too, under `/nodegroups/{nodegroup_ident}/machines`.

use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};

use super::lookup::{self, cluster_target as target};
use super::machine_delete::machine_delete_writes;
use super::views::{MachineCollection, MachineView};
use crate::api::http::body::query_params;
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::MACHINES;
use crate::api::http::pagination::{respond_page, ListQuery, ListRules, PageBody};
use crate::api::http::retry::{self, Attempt};
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::machine::{MachinePhase, MachineRole};
use crate::store::{MachineFilter, StoreError, MACHINE_SORT_KEYS};

/// The routes of a cluster's machines, relative to the scope `/v1/clusters/{cluster_ident}`
/// [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/machines")
            .route(web::get().to(list))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/machines/{machine_ident}")
            .route(web::get().to(show))
            .route(web::delete().to(delete))
            .route(web::patch().to(super::machine_ops::update))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/machines/{machine_ident}/actions/replace")
            .route(web::post().to(super::machine_ops::replace))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/machines/{machine_ident}/actions/reboot")
            .route(web::post().to(super::machine_ops::reboot))
            .default_service(web::to(super::method_not_allowed)),
    )
    // Create (microversion 1.20): a machine in a node group, the group one node larger.
    .service(
        web::resource("/nodegroups/{nodegroup_ident}/machines")
            .route(web::post().to(super::machine_create::create))
            .default_service(web::to(super::method_not_allowed)),
    );
}

const LIST_PARAMS: &[&str] = &[
    "marker",
    "limit",
    "sort_key",
    "sort_dir",
    "nodegroup",
    "role",
    "phase",
];

/// The list's rules: its own, then every project's for an administrator.
const LIST_RULES: ListRules = ListRules {
    summary: ["machine:get_all", "machine:get_all_all_projects"],
    detail: ["machine:get_all", "machine:get_all_all_projects"],
};

/// Bodies of machine pages.
static PAGE: PageBody = PageBody::new(1000);

/// Machines exist from microversion 1.19; below it the routes answer 406 with the empty
/// framework body.
fn require_version(ctx: &RequestContext) -> Result<(), ApiError> {
    if ctx.version >= MACHINES {
        Ok(())
    } else {
        Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE))
    }
}

/// Magnum's 404 for a machine.
pub fn machine_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("Machine {ident} could not be found."))
}

/// The `role` and `phase` filters, parsed (a 400 naming the accepted values otherwise).
fn parse_filter(
    role: Option<&String>,
    phase: Option<&String>,
) -> Result<(Option<MachineRole>, Option<MachinePhase>), ApiError> {
    let role = role
        .map(|r| MachineRole::parse(r))
        .transpose()
        .map_err(ApiError::bad_request)?;
    let phase = phase
        .map(|p| MachinePhase::parse(p))
        .transpose()
        .map_err(ApiError::bad_request)?;
    Ok((role, phase))
}

#[tracing::instrument(name = "machines.list", skip_all, fields(project = %ctx.project_id, cluster = %path.as_str()))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    let query = ListQuery::parse(
        &req,
        &ctx,
        LIST_PARAMS,
        MACHINE_SORT_KEYS,
        state.settings.api.max_limit,
        &LIST_RULES,
    )?;
    let (role, phase) = parse_filter(query.params.get("role"), query.params.get("phase"))?;
    let c = lookup::cluster(&state, &ctx, &path, ctx.is_admin).await?;
    ctx.authorize("machine:get_all", &target(&c))?;
    let nodegroup = match query.params.get("nodegroup") {
        Some(ident) => Some(lookup::nodegroup(&state, &ctx, &c, ident).await?.uuid),
        None => None,
    };
    let filter = MachineFilter {
        nodegroup,
        role,
        phase,
    };
    let page = &query.page;
    let machines = state
        .store
        .list_machines(&c.uuid, &ctx.scope(), &filter, page)
        .await
        .map_err(query.store_error(machine_not_found))?;
    let last = machines.last().map(|m| m.uuid.to_string());
    // The filters carry over to the next page (the node group by its uuid).
    let nodegroup = filter.nodegroup.map(|g| g.to_string());
    let mut extra: Vec<(&str, &str)> = Vec::new();
    if let Some(g) = &nodegroup {
        extra.push(("nodegroup", g));
    }
    if let Some(r) = filter.role {
        extra.push(("role", r.as_str()));
    }
    if let Some(p) = filter.phase {
        extra.push(("phase", p.as_str()));
    }
    let base = app_url(&req);
    let n = machines.len();
    let views = machines
        .iter()
        .map(|m| MachineView::new(&base, m))
        .collect();
    respond_page(
        &PAGE,
        &req,
        &format!("clusters/{}/machines", c.uuid),
        page,
        n,
        last,
        &extra,
        |next| MachineCollection {
            machines: views,
            next,
        },
    )
}

#[tracing::instrument(name = "machines.show", skip_all, fields(project = %ctx.project_id, cluster = %path.0, machine = %path.1))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (cluster_ident, machine_ident) = path.into_inner();
    if ctx.is_admin {
        ctx.authorize_own("machine:get_one_all_projects")?;
    }
    let c = lookup::cluster(&state, &ctx, &cluster_ident, ctx.is_admin).await?;
    // The policy check comes before a missing machine's 404.
    ctx.authorize("machine:get", &target(&c))?;
    match state.store.get_machine(&c.uuid, &machine_ident).await {
        Ok(m) if ctx.is_admin || m.project_id == ctx.project_id => {
            Ok(HttpResponse::Ok().json(MachineView::new(&app_url(&req), &m)))
        }
        Ok(_) | Err(StoreError::NotFound) => Err(machine_not_found(&machine_ident)),
        Err(e) => Err(e.into()),
    }
}

/// `DELETE /v1/clusters/{cluster_ident}/machines/{machine_ident}`: 204 once the delete is
/// accepted (the machine is `Deleting`, its group `UPDATE_IN_PROGRESS` one node smaller); the
/// machine is gone when the driver is done.
#[tracing::instrument(name = "machines.delete", skip_all, fields(project = %ctx.project_id, cluster = %path.0, machine = %path.1))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (cluster_ident, machine_ident) = path.into_inner();
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &cluster_ident, false).await?;
        ctx.authorize("machine:delete", &target(&c))?;
        let m = match state.store.get_machine(&c.uuid, &machine_ident).await {
            Ok(m) if ctx.is_admin || m.project_id == ctx.project_id => m,
            Ok(_) | Err(StoreError::NotFound) => return Err(machine_not_found(&machine_ident)),
            Err(e) => return Err(e.into()),
        };
        let writes = machine_delete_writes(&state, &ctx, &c, &m).await?;
        match state.store.commit(&writes).await {
            Ok(()) => Ok(Attempt::Done(HttpResponse::NoContent().finish())),
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) => Err(e.into()),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_and_phase_filters_name_the_accepted_values() {
        let (role, phase) =
            parse_filter(Some(&"master".to_string()), Some(&"Running".to_string())).expect("valid");
        assert_eq!(role, Some(MachineRole::Master));
        assert_eq!(phase, Some(MachinePhase::Running));
        let err = parse_filter(None, Some(&"running".to_string())).expect_err("case matters");
        assert_eq!(
            err.to_string(),
            "Invalid machine phase 'running': must be one of Pending, Provisioning, Running, \
             Deleting, Failed."
        );
        let err = parse_filter(Some(&"boss".to_string()), None).expect_err("unknown role");
        assert_eq!(
            err.to_string(),
            "Invalid machine role 'boss': must be one of master, worker."
        );
    }
}
