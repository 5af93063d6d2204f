//! `/v1/clustergroups/{g}/bindings` (microversion 1.20): what other projects get over a
//! group's clusters. A binding grants one project (optionally only its members holding one of
//! some roles) `read` or `write`; the group's own project (or an administrator) creates, reads
//! and deletes them. Each change commits with its notification.

use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::json;

use super::cluster_groups::{group, group_target, require_version};
use super::views::{ClusterGroupBindingCollection, ClusterGroupBindingView};
use crate::api::http::body::{invalid, json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster_group::{
    binding_roles, ClusterGroup, ClusterGroupBinding, GroupRight, NewClusterGroupBinding,
};
use crate::domain::ids::parse_uuid_like;
use crate::domain::ClusterGroupBindingId;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write};

/// The routes of a group's bindings, relative to the scope `/v1/clustergroups`
/// [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/{clustergroup_ident}/bindings")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{clustergroup_ident}/bindings/{binding_id}")
            .route(web::get().to(show))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    );
}

fn binding_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("ClusterGroupBinding {ident} could not be found."))
}

/// A binding of the group by uuid.
async fn binding(
    state: &AppState,
    g: &ClusterGroup,
    ident: &str,
) -> Result<ClusterGroupBinding, ApiError> {
    let uuid = parse_uuid_like(ident).ok_or_else(|| binding_not_found(ident))?;
    state
        .store
        .cluster_group_bindings(&g.uuid)
        .await?
        .into_iter()
        .find(|b| b.uuid.0 == uuid)
        .ok_or_else(|| binding_not_found(ident))
}

/// The constraint a second binding of a group to one project breaks: a 409.
pub(crate) const BINDING_TAKEN: &str = "uniq_cluster_group_binding0group_id0grantee_project_id";

/// The writes of a binding's create, on either face, and the binding as it will read back:
/// the binding and its notification. A group is never bound to its own project (400). The
/// caller checked `clustergroup:binding_create` on the group.
pub(crate) fn create_writes(
    state: &AppState,
    ctx: &RequestContext,
    g: &ClusterGroup,
    grantee: String,
    roles: Option<Vec<String>>,
    right: GroupRight,
) -> Result<([Write; 2], ClusterGroupBinding), ApiError> {
    if grantee == g.project_id {
        return Err(ApiError::bad_request(
            "A cluster group cannot be bound to its own project, which has its clusters already.",
        ));
    }
    let new = NewClusterGroupBinding {
        uuid: ClusterGroupBindingId::new(),
        group: g.uuid,
        project_id: g.project_id.clone(),
        grantee_project_id: grantee.clone(),
        roles: roles.clone(),
        right,
    };
    let provisional = ClusterGroupBinding {
        id: 0,
        uuid: new.uuid,
        group: g.uuid,
        project_id: new.project_id.clone(),
        grantee_project_id: grantee,
        roles,
        right,
        resource_version: 0,
        created_at: Utc::now(),
    };
    let writes = [
        Write::InsertClusterGroupBinding(Box::new(new)),
        Write::event(events::cluster_group_binding_event(
            &state.settings.default.host,
            Action::Create,
            Outcome::Success,
            &provisional,
            Some(&initiator(ctx)),
        )),
    ];
    Ok((writes, provisional))
}

/// The writes of a binding's delete, on either face: the binding and its notification.
pub(crate) fn delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    b: &ClusterGroupBinding,
) -> [Write; 2] {
    [
        Write::DeleteClusterGroupBinding { uuid: b.uuid },
        Write::event(events::cluster_group_binding_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Success,
            b,
            Some(&initiator(ctx)),
        )),
    ]
}

/// A create body, parsed.
struct BindingCreate {
    grantee: String,
    roles: Option<Vec<String>>,
    right: GroupRight,
}

impl TryFrom<Fields> for BindingCreate {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        f.read_only(&["uuid", "clustergroup_id", "links", "created_at"])?;
        let grantee = f.required_string("project_id", 1, 255)?;
        let roles = f.string_list("roles")?;
        let roles = binding_roles(roles.clone())
            .map_err(|e| invalid("roles", &json!(roles), &format!("{e}.")))?;
        let access = f.one_of("access", &["read", "write"])?.ok_or_else(|| {
            invalid(
                "access",
                &serde_json::Value::Null,
                "Mandatory field missing.",
            )
        })?;
        let right = GroupRight::parse(&access)
            .ok_or_else(|| invalid("access", &json!(access), "Value should be read or write."))?;
        f.finish()?;
        Ok(BindingCreate {
            grantee,
            roles,
            right,
        })
    }
}

#[tracing::instrument(name = "cluster_group_bindings.create", skip_all, fields(project = %ctx.project_id, group = %path.as_str()))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "binding")?;
    let BindingCreate {
        grantee,
        roles,
        right,
    } = Fields::new("binding", obj).try_into()?;
    let g = group(&state, &ctx, &path).await?;
    ctx.authorize("clustergroup:binding_create", &group_target(&g))?;
    let (writes, provisional) = create_writes(&state, &ctx, &g, grantee.clone(), roles, right)?;
    match state.store.commit(&writes).await {
        Ok(()) => {}
        Err(e) if e.is_constraint(BINDING_TAKEN) => {
            return Err(ApiError::conflict(format!(
                "Cluster group {} is already bound to project {grantee}.",
                g.name.as_str()
            )))
        }
        Err(StoreError::Conflict { constraint }) if constraint.starts_with("fk_") => {
            return Err(super::cluster_groups::group_not_found(&path))
        }
        Err(e) => return Err(e.into()),
    }
    let b = binding(&state, &g, &provisional.uuid.to_string()).await?;
    let base = app_url(&req);
    Ok(HttpResponse::Created()
        .insert_header((
            header::LOCATION,
            format!("{base}/v1/clustergroups/{}/bindings/{}", g.uuid, b.uuid),
        ))
        .json(ClusterGroupBindingView::new(&base, &b)))
}

#[tracing::instrument(name = "cluster_group_bindings.list", skip_all, fields(project = %ctx.project_id, group = %path.as_str()))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let g = group(&state, &ctx, &path).await?;
    ctx.authorize("clustergroup:binding_get", &group_target(&g))?;
    let base = app_url(&req);
    let bindings = state.store.cluster_group_bindings(&g.uuid).await?;
    Ok(HttpResponse::Ok().json(ClusterGroupBindingCollection {
        bindings: bindings
            .iter()
            .map(|b| ClusterGroupBindingView::new(&base, b))
            .collect(),
    }))
}

#[tracing::instrument(name = "cluster_group_bindings.show", skip_all, fields(project = %ctx.project_id))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (group_ident, binding_ident) = path.into_inner();
    let g = group(&state, &ctx, &group_ident).await?;
    ctx.authorize("clustergroup:binding_get", &group_target(&g))?;
    let b = binding(&state, &g, &binding_ident).await?;
    Ok(HttpResponse::Ok().json(ClusterGroupBindingView::new(&app_url(&req), &b)))
}

#[tracing::instrument(name = "cluster_group_bindings.delete", skip_all, fields(project = %ctx.project_id))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (group_ident, binding_ident) = path.into_inner();
    let g = group(&state, &ctx, &group_ident).await?;
    ctx.authorize("clustergroup:binding_delete", &group_target(&g))?;
    let b = binding(&state, &g, &binding_ident).await?;
    let writes = delete_writes(&state, &ctx, &b);
    super::commit_deleted(&state, &writes, || binding_not_found(&binding_ident)).await
}
