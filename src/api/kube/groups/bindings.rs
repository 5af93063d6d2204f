//! The `clustergroupbindings` handlers: list, get, create and delete, each with the policy
//! rule and the writes of its `/v1/clustergroups/{g}/bindings` twin. A binding is served as
//! `<group>.<grantee project>` in its group's namespace.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;

use super::object::{binding, binding_name_candidates, CLUSTER_GROUP_BINDINGS};
use super::{answer, current, list_request, list_verb, ok, read, table, watch, Kind};
use crate::api::http::error::ApiError;
use crate::api::kube::access::{
    BINDING_CREATE, BINDING_DELETE, BINDING_GET, BINDING_LIST, GROUP_LIST_ALL_PROJECTS,
};
use crate::api::kube::delete_options::Delete;
use crate::api::kube::list::ListOptions;
use crate::api::kube::request::refuse_resource_version;
use crate::api::kube::request::{
    accept, authorize_all, authorize_namespace, caller, dry_run, json_of, json_response, params,
    with_warnings, Visible,
};
use crate::api::kube::status::{Cause, KubeError, CREATE_OPTIONS};
use crate::api::kube::table::{wants_table, IncludeObject};
use crate::api::v1::cluster_group_bindings::{create_writes, delete_writes, BINDING_TAKEN};
use crate::api::v1::cluster_groups::group_target;
use crate::api::{AppState, RequestContext};
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupBinding};
use crate::domain::Ident;
use crate::store::{Scope, StoreError};

/// The list, or with `watch=true` the watch, of the bindings `visible` shows.
async fn list_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    (p, o): (&crate::api::kube::request::Params, &ListOptions),
) -> Result<HttpResponse, KubeError> {
    if o.watch {
        return watch::start(req, state, Kind::Bindings, visible, p, o).await;
    }
    let objects = current::bindings(state, &visible).await?;
    answer(
        req,
        state,
        &visible,
        (p, o),
        Kind::Bindings,
        objects,
        table::binding_table,
    )
    .await
}

/// `GET …/clustergroupbindings`: every project's for an admin that
/// `clustergroup:get_all_all_projects` allows, the caller's own project's for anyone else.
#[tracing::instrument(name = "kube_bindings.list_all", skip_all)]
pub(super) async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let (ctx, p, o) = list_request(&req, ctx)?;
    let mut visible = authorize_all(
        &ctx,
        BINDING_LIST.rule,
        list_verb(&o),
        &CLUSTER_GROUP_BINDINGS,
    )?;
    if matches!(visible, Visible::All) && !ctx.allowed(GROUP_LIST_ALL_PROJECTS, &ctx.own_target()) {
        visible = Visible::Namespace(ctx.project_id.clone());
    }
    list_answer(&req, &state, visible, (&p, &o)).await
}

#[tracing::instrument(name = "kube_bindings.list", skip_all, fields(namespace = %path))]
pub(super) async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let (ctx, p, o) = list_request(&req, ctx)?;
    authorize_namespace(
        &ctx,
        BINDING_LIST.rule,
        list_verb(&o),
        &CLUSTER_GROUP_BINDINGS,
        &path,
    )?;
    list_answer(
        &req,
        &state,
        Visible::Namespace(path.into_inner()),
        (&p, &o),
    )
    .await
}

/// The group `name` of project `namespace`, if any.
async fn group_named(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<Option<ClusterGroup>, KubeError> {
    let scope = Scope {
        project_id: namespace.to_string(),
        all_projects: false,
    };
    match state
        .store
        .get_cluster_group(&scope, &Ident::Name(name.to_string()))
        .await
    {
        Ok(g) => Ok(Some(g)),
        Err(StoreError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The binding served as `name` in `namespace` and its group, for a caller that may `rule`
/// the group (403 in Kubernetes' words otherwise); 404 for none.
async fn find(
    state: &AppState,
    ctx: &RequestContext,
    (namespace, name): (&str, &str),
    (rule, verb): (&str, &str),
) -> Result<(ClusterGroup, ClusterGroupBinding), KubeError> {
    authorize_namespace(ctx, rule, verb, &CLUSTER_GROUP_BINDINGS, namespace)?;
    for (group, project) in binding_name_candidates(name) {
        let Some(g) = group_named(state, namespace, &group).await? else {
            continue;
        };
        let found = state
            .store
            .cluster_group_bindings(&g.uuid)
            .await?
            .into_iter()
            .find(|b| b.grantee_project_id == project);
        if let Some(b) = found {
            if !ctx.allowed(rule, &group_target(&g)) {
                return Err(KubeError::forbidden(
                    verb,
                    &CLUSTER_GROUP_BINDINGS,
                    Some(namespace),
                    &ctx.user_id,
                ));
            }
            return Ok((g, b));
        }
    }
    Err(KubeError::not_found(&CLUSTER_GROUP_BINDINGS, name))
}

#[tracing::instrument(name = "kube_bindings.get", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn get(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let include = IncludeObject::parse(p.include_object.as_deref())?;
    let (g, b) = find(&state, &ctx, (&namespace, &name), BINDING_GET.pair()).await?;
    let object = binding(&b, g.name.as_str());
    if wants_table(accept(&req)) {
        return Ok(ok(&table::binding_table(&[object], include, Utc::now())));
    }
    Ok(ok(&object))
}

#[tracing::instrument(name = "kube_bindings.create", skip_all, fields(namespace = %path))]
pub(super) async fn create(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    let (rule, verb) = BINDING_CREATE.pair();
    authorize_namespace(&ctx, rule, verb, &CLUSTER_GROUP_BINDINGS, &namespace)?;
    let p = params(&req)?;
    let dry = dry_run(&p, &CREATE_OPTIONS)?;
    let value = json_of(&req, &body)?;
    refuse_resource_version(&value)?;
    let asked = read::binding(&value, &namespace, &p)?;
    let Some(g) = group_named(&state, &namespace, asked.group.as_str()).await? else {
        return Err(KubeError::invalid(
            &CLUSTER_GROUP_BINDINGS,
            &asked.name,
            vec![Cause::invalid(
                "spec.groupRef.name",
                asked.group.as_str(),
                &format!("no ClusterGroup of that name in namespace {namespace}"),
            )],
        ));
    };
    if !ctx.allowed(rule, &group_target(&g)) {
        return Err(KubeError::forbidden(
            verb,
            &CLUSTER_GROUP_BINDINGS,
            Some(namespace.as_str()),
            &ctx.user_id,
        ));
    }
    let (writes, provisional) = create_writes(
        &state,
        &ctx,
        &g,
        asked.project.clone(),
        asked.roles.clone(),
        asked.right,
    )?;
    let exists = || KubeError::already_exists(&CLUSTER_GROUP_BINDINGS, &asked.name);
    let bound =
        |bs: &[ClusterGroupBinding]| bs.iter().any(|b| b.grantee_project_id == asked.project);
    if dry {
        if bound(&state.store.cluster_group_bindings(&g.uuid).await?) {
            return Err(exists());
        }
        return Ok(with_warnings(
            json_response(StatusCode::CREATED, &binding(&provisional, g.name.as_str())),
            &asked.warnings,
        ));
    }
    match state.store.commit(&writes).await {
        Ok(()) => {}
        Err(e) if e.is_constraint(BINDING_TAKEN) => return Err(exists()),
        Err(StoreError::Conflict { constraint }) if constraint.starts_with("fk_") => {
            return Err(KubeError::ConflictMessage(format!(
                "ClusterGroup {} was deleted meanwhile.",
                g.name.as_str()
            )))
        }
        Err(e) => return Err(e.into()),
    }
    let b = state
        .store
        .cluster_group_bindings(&g.uuid)
        .await?
        .into_iter()
        .find(|b| b.uuid == provisional.uuid)
        .ok_or_else(|| KubeError::not_found(&CLUSTER_GROUP_BINDINGS, &asked.name))?;
    Ok(with_warnings(
        json_response(StatusCode::CREATED, &binding(&b, g.name.as_str())),
        &asked.warnings,
    ))
}

#[tracing::instrument(name = "kube_bindings.delete", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn delete(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let options = Delete::parse(req.query_string(), &body)?;
    let (g, b) = find(&state, &ctx, (&namespace, &name), BINDING_DELETE.pair()).await?;
    if let Some(uid) = &options.uid {
        if *uid != b.uuid.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {}: Precondition failed: UID in precondition: \
                 {uid}, UID in object meta: {}",
                CLUSTER_GROUP_BINDINGS.qualified(),
                b.uuid
            )));
        }
    }
    if !options.dry_run {
        match state.store.commit(&delete_writes(&state, &ctx, &b)).await {
            Ok(()) => {}
            Err(StoreError::NotFound) => {
                return Err(KubeError::not_found(&CLUSTER_GROUP_BINDINGS, &name))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(ok(&binding(&b, g.name.as_str())))
}
