//! The `clustergroups` handlers: list, get, create, replace, patch and delete, each with the
//! policy rule and the writes of its `/v1/clustergroups` twin.
//!
//! A create names its explicit members by namespace and name: a cluster of the group's own
//! project joins at once (with its owner's consent, `clustergroup:member_consent`); one of
//! another project is `Proposed` until that project accepts it through
//! `/v1/clustergroups/{g}/members/{c}/actions/accept`. A replace or patch may change the
//! description, the selector and the member list: the members it adds are proposed or joined
//! as on a create (`clustergroup:member_add`), the ones it leaves out are removed
//! (`clustergroup:member_delete`), all in one transaction with the group's update.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::Value;

use super::object::{group, ClusterRef, Group, CLUSTER_GROUPS};
use super::{answer, current, list_request, list_verb, ok, read, table, watch, Kind};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::{
    GROUP_CREATE, GROUP_DELETE, GROUP_GET, GROUP_LIST, GROUP_LIST_ALL_PROJECTS, GROUP_PATCH,
    GROUP_UPDATE,
};
use crate::api::kube::delete_options::Delete;
use crate::api::kube::list::ListOptions;
use crate::api::kube::patch::apply_patch;
use crate::api::kube::request::refuse_resource_version;
use crate::api::kube::request::{
    accept, authorize_all, authorize_namespace, caller, content_type, dry_run, json_of,
    json_response, params, with_warnings, Visible,
};
use crate::api::kube::status::{KubeError, CREATE_OPTIONS, PATCH_OPTIONS, UPDATE_OPTIONS};
use crate::api::kube::table::{wants_table, IncludeObject};
use crate::api::kube::validation;
use crate::api::v1::cluster_groups::{
    create_writes, delete_writes, group_target, new_member, update_writes, GROUP_NAME_TAKEN,
};
use crate::api::{AppState, RequestContext};
use crate::domain::cluster::Cluster;
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupMember, NewClusterGroup};
use crate::domain::{ClusterGroupId, Ident};
use crate::store::{Scope, StoreError, Write};

/// The list, or with `watch=true` the watch, of the groups `visible` shows.
async fn list_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    (p, o): (&crate::api::kube::request::Params, &ListOptions),
) -> Result<HttpResponse, KubeError> {
    if o.watch {
        return watch::start(req, state, Kind::Groups, visible, p, o).await;
    }
    let objects = current::groups(state, &visible).await?;
    answer(
        req,
        state,
        &visible,
        (p, o),
        Kind::Groups,
        objects,
        table::group_table,
    )
    .await
}

/// `GET …/clustergroups`: every project's groups for an admin that
/// `clustergroup:get_all_all_projects` allows, the caller's own project's for anyone else.
#[tracing::instrument(name = "kube_groups.list_all", skip_all)]
pub(super) async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let (ctx, p, o) = list_request(&req, ctx)?;
    let mut visible = authorize_all(&ctx, GROUP_LIST.rule, list_verb(&o), &CLUSTER_GROUPS)?;
    if matches!(visible, Visible::All) && !ctx.allowed(GROUP_LIST_ALL_PROJECTS, &ctx.own_target()) {
        visible = Visible::Namespace(ctx.project_id.clone());
    }
    list_answer(&req, &state, visible, (&p, &o)).await
}

#[tracing::instrument(name = "kube_groups.list", skip_all, fields(namespace = %path))]
pub(super) async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let (ctx, p, o) = list_request(&req, ctx)?;
    authorize_namespace(&ctx, GROUP_LIST.rule, list_verb(&o), &CLUSTER_GROUPS, &path)?;
    list_answer(
        &req,
        &state,
        Visible::Namespace(path.into_inner()),
        (&p, &o),
    )
    .await
}

/// The group `name` of project `namespace` for a caller that may `rule` it (403 in
/// Kubernetes' words otherwise), 404 for none.
async fn find(
    state: &AppState,
    ctx: &RequestContext,
    (namespace, name): (&str, &str),
    (rule, verb): (&str, &str),
) -> Result<ClusterGroup, KubeError> {
    authorize_namespace(ctx, rule, verb, &CLUSTER_GROUPS, namespace)?;
    let scope = Scope {
        project_id: namespace.to_string(),
        all_projects: false,
    };
    let g = match state
        .store
        .get_cluster_group(&scope, &Ident::Name(name.to_string()))
        .await
    {
        Ok(g) => g,
        Err(StoreError::NotFound) => return Err(KubeError::not_found(&CLUSTER_GROUPS, name)),
        Err(e) => return Err(e.into()),
    };
    if !ctx.allowed(rule, &group_target(&g)) {
        return Err(KubeError::forbidden(
            verb,
            &CLUSTER_GROUPS,
            Some(namespace),
            &ctx.user_id,
        ));
    }
    Ok(g)
}

/// The `ClusterGroup` of a stored group, its members read now.
async fn object_of(state: &AppState, g: &ClusterGroup) -> Result<Group, KubeError> {
    let members = state.store.cluster_group_members_named(&[g.uuid]).await?;
    Ok(group(g, &members))
}

#[tracing::instrument(name = "kube_groups.get", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let g = find(&state, &ctx, (&namespace, &name), GROUP_GET.pair()).await?;
    let object = object_of(&state, &g).await?;
    if wants_table(accept(&req)) {
        return Ok(ok(&table::group_table(&[object], include, Utc::now())));
    }
    Ok(ok(&object))
}

/// The clusters a body's member list names for a group of project `namespace`: one of the
/// group's own project (any project's for an administrator) by its name there; one of another
/// project only when the caller reads it through the groups bound to its own project. Any
/// other entry is the same 422 as a cluster that does not exist ("not found"), so that a
/// member list never tells whether another project has a cluster of that name.
async fn resolve(
    state: &AppState,
    ctx: &RequestContext,
    namespace: &str,
    refs: &[ClusterRef],
    object: &str,
) -> Result<Vec<Cluster>, KubeError> {
    let mut out = Vec::new();
    let mut causes = Vec::new();
    let mut groups = None;
    for (i, r) in refs.iter().enumerate() {
        let found = state.store.registry_get(&r.namespace, &r.name).await?;
        let readable = match &found {
            Some(_) if ctx.is_admin || r.namespace == namespace => true,
            Some(e) => {
                if groups.is_none() {
                    groups = Some(crate::api::v1::cluster_access::caller_groups(state, ctx).await?);
                }
                let ids = groups.as_ref().map(|g| g.ids()).unwrap_or_default();
                !state
                    .store
                    .cluster_group_links(&[e.cluster.uuid], &ids)
                    .await?
                    .is_empty()
            }
            None => false,
        };
        match found {
            Some(e) if readable => out.push(e.cluster),
            _ => causes.push(crate::api::kube::status::Cause::invalid(
                format!("spec.clusters[{i}]"),
                &format!("{}/{}", r.namespace, r.name),
                &format!("cluster {} in namespace {} not found", r.name, r.namespace),
            )),
        }
    }
    if causes.is_empty() {
        Ok(out)
    } else {
        Err(KubeError::invalid(&CLUSTER_GROUPS, object, causes))
    }
}

#[tracing::instrument(name = "kube_groups.create", skip_all, fields(namespace = %path))]
pub(super) async fn create(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    let (rule, verb) = GROUP_CREATE.pair();
    authorize_namespace(&ctx, rule, verb, &CLUSTER_GROUPS, &namespace)?;
    let p = params(&req)?;
    let dry = dry_run(&p, &CREATE_OPTIONS)?;
    let value = json_of(&req, &body)?;
    refuse_resource_version(&value)?;
    let asked = read::group(&value, &namespace, &p)?;
    let name = match &asked.name {
        Ok(n) => n.clone(),
        Err(prefix) => {
            crate::domain::cluster_group::GroupName::parse(&validation::generate_name(prefix))
                .map_err(|why| {
                    KubeError::invalid(
                        &CLUSTER_GROUPS,
                        "",
                        vec![crate::api::kube::status::Cause::invalid(
                            "metadata.generateName",
                            prefix,
                            &why,
                        )],
                    )
                })?
        }
    };
    let new = NewClusterGroup {
        uuid: ClusterGroupId::new(),
        project_id: namespace.clone(),
        user_id: ctx.user_id.clone(),
        name: name.clone(),
        description: asked.description.clone(),
        selector: asked.selector.clone(),
    };
    let provisional = crate::api::v1::cluster_groups::provisional(&new);
    if !asked.clusters.is_empty() {
        ctx.authorize("clustergroup:member_add", &group_target(&provisional))?;
    }
    let clusters = resolve(&state, &ctx, &namespace, &asked.clusters, name.as_str()).await?;
    let writes = create_writes(&state, &ctx, &new, &clusters)?;
    let exists = || KubeError::already_exists(&CLUSTER_GROUPS, name.as_str());
    let scope = Scope {
        project_id: namespace.clone(),
        all_projects: false,
    };
    if dry {
        match state
            .store
            .get_cluster_group(&scope, &Ident::Name(name.as_str().to_string()))
            .await
        {
            Ok(_) => return Err(exists()),
            Err(StoreError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
        let preview = preview_members(&new, &writes, &clusters);
        let object = group(&provisional, &preview);
        return Ok(with_warnings(
            json_response(StatusCode::CREATED, &object),
            &asked.warnings,
        ));
    }
    match state.store.commit(&writes).await {
        Ok(()) => {}
        Err(e) if e.is_constraint(GROUP_NAME_TAKEN) => return Err(exists()),
        Err(StoreError::NotFound) => {
            return Err(KubeError::ConflictMessage(
                "A cluster named as a member was deleted meanwhile.".into(),
            ))
        }
        Err(e) => return Err(e.into()),
    }
    let g = state
        .store
        .find_cluster_group(&new.uuid)
        .await?
        .ok_or_else(|| KubeError::not_found(&CLUSTER_GROUPS, name.as_str()))?;
    let object = object_of(&state, &g).await?;
    Ok(with_warnings(
        json_response(StatusCode::CREATED, &object),
        &asked.warnings,
    ))
}

/// The memberships a dry run would have written, as they would read back.
fn preview_members(
    new: &NewClusterGroup,
    writes: &[Write],
    clusters: &[Cluster],
) -> Vec<(ClusterGroupMember, String)> {
    writes
        .iter()
        .filter_map(|w| match w {
            Write::InsertClusterGroupMember(m) => {
                let name = clusters
                    .iter()
                    .find(|c| c.uuid == m.cluster)
                    .map(|c| c.registry.name.clone())
                    .unwrap_or_default();
                Some((
                    ClusterGroupMember {
                        group: new.uuid,
                        cluster: m.cluster,
                        cluster_project_id: m.cluster_project_id.clone(),
                        proposed_by: m.proposed_by.clone(),
                        state: m.state,
                        consented_at: None,
                        created_at: Utc::now(),
                    },
                    name,
                ))
            }
            _ => None,
        })
        .collect()
}

/// A replace or patch: the group as the body (or the patched object) says it, written as the
/// update of its description and selector and the changes of its member list.
async fn update(
    state: &AppState,
    ctx: &RequestContext,
    (namespace, name): (&str, &str),
    (rule, verb): (&str, &str),
    next: impl Fn(&Group) -> Result<Value, KubeError>,
    dry: bool,
) -> Result<(Group, Vec<String>), KubeError> {
    let p = crate::api::kube::request::Params::default();
    retry::until_committed(async || {
        let g = find(state, ctx, (namespace, name), (rule, verb)).await?;
        let current = object_of(state, &g).await?;
        let value = next(&current)?;
        validation::check_name(&value, name)?;
        if let Some(rv) = value["metadata"]["resourceVersion"]
            .as_str()
            .filter(|rv| !rv.is_empty())
        {
            if rv != g.resource_version.to_string() {
                return Err(KubeError::conflict(&CLUSTER_GROUPS, name));
            }
        }
        let asked = read::group(&value, namespace, &p)?;
        let mut writes = Vec::new();
        let mut changed = g.clone();
        changed.description = asked.description.clone();
        changed.selector = asked.selector.clone();
        if changed.description != g.description || changed.selector != g.selector {
            changed.updated_at = Some(Utc::now());
            writes.extend(update_writes(state, ctx, &changed));
        }
        let members = state.store.cluster_group_members_named(&[g.uuid]).await?;
        let have: Vec<ClusterRef> = current.spec.clusters.clone();
        let added: Vec<ClusterRef> = asked
            .clusters
            .iter()
            .filter(|r| !have.contains(r))
            .cloned()
            .collect();
        if !added.is_empty() {
            ctx.authorize("clustergroup:member_add", &group_target(&g))?;
        }
        for c in resolve(state, ctx, namespace, &added, name).await? {
            writes.push(Write::InsertClusterGroupMember(Box::new(new_member(
                ctx, &g, &c,
            )?)));
        }
        let removed: Vec<&ClusterGroupMember> = members
            .iter()
            .filter(|(m, n)| {
                !asked.clusters.contains(&ClusterRef {
                    namespace: m.cluster_project_id.clone(),
                    name: n.clone(),
                })
            })
            .map(|(m, _)| m)
            .collect();
        if !removed.is_empty() {
            ctx.authorize("clustergroup:member_delete", &group_target(&g))?;
        }
        writes.extend(removed.iter().map(|m| Write::DeleteClusterGroupMember {
            group: g.uuid,
            cluster: m.cluster,
        }));
        if dry || writes.is_empty() {
            let mut shown = current.clone();
            if dry {
                shown.spec.description = asked.description.as_ref().map(|d| d.as_str().into());
                shown.spec.selector =
                    super::object::meta_selector(asked.selector.as_ref().map(|s| s.as_str()));
                shown.spec.clusters = asked.clusters.clone();
                shown.spec.clusters.sort();
            }
            return Ok(Attempt::Done((shown, asked.warnings)));
        }
        match state.store.commit(&writes).await {
            Ok(()) => {}
            Err(StoreError::Stale) => return Ok(Attempt::Retry),
            Err(StoreError::NotFound) => return Err(KubeError::not_found(&CLUSTER_GROUPS, name)),
            Err(e) => return Err(e.into()),
        }
        let g = find(state, ctx, (namespace, name), (rule, verb)).await?;
        Ok(Attempt::Done((object_of(state, &g).await?, asked.warnings)))
    })
    .await
}

#[tracing::instrument(name = "kube_groups.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn replace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    authorize_namespace(
        &ctx,
        GROUP_UPDATE.rule,
        GROUP_UPDATE.verb,
        &CLUSTER_GROUPS,
        &namespace,
    )?;
    let p = params(&req)?;
    let dry = dry_run(&p, &UPDATE_OPTIONS)?;
    let value = json_of(&req, &body)?;
    // The strict check of the body as sent (the result is read again against the group).
    read::group(&value, &namespace, &p)?;
    let (object, warnings) = update(
        &state,
        &ctx,
        (&namespace, &name),
        GROUP_UPDATE.pair(),
        |_| Ok(value.clone()),
        dry,
    )
    .await?;
    Ok(with_warnings(ok_response(&object), &warnings))
}

#[tracing::instrument(name = "kube_groups.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn patch(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    authorize_namespace(
        &ctx,
        GROUP_PATCH.rule,
        GROUP_PATCH.verb,
        &CLUSTER_GROUPS,
        &namespace,
    )?;
    let p = params(&req)?;
    let dry = dry_run(&p, &PATCH_OPTIONS)?;
    let ct = content_type(&req).unwrap_or("").to_string();
    let (object, warnings) = update(
        &state,
        &ctx,
        (&namespace, &name),
        GROUP_PATCH.pair(),
        |current| {
            let v = serde_json::to_value(current).map_err(KubeError::internal)?;
            let patched = apply_patch(&ct, &v, &body)?;
            read::group(&patched, &namespace, &p)?;
            Ok(patched)
        },
        dry,
    )
    .await?;
    Ok(with_warnings(ok_response(&object), &warnings))
}

fn ok_response(object: &Group) -> HttpResponse {
    json_response(StatusCode::OK, object)
}

#[tracing::instrument(name = "kube_groups.delete", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let g = find(&state, &ctx, (&namespace, &name), GROUP_DELETE.pair()).await?;
    if let Some(uid) = &options.uid {
        if *uid != g.uuid.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {}: Precondition failed: UID in precondition: \
                 {uid}, UID in object meta: {}",
                CLUSTER_GROUPS.qualified(),
                g.uuid
            )));
        }
    }
    if let Some(rv) = &options.resource_version {
        if *rv != g.resource_version.to_string() {
            return Err(KubeError::conflict(&CLUSTER_GROUPS, &name));
        }
    }
    let object = object_of(&state, &g).await?;
    if !options.dry_run {
        let writes = delete_writes(&state, &ctx, &g);
        match state.store.commit(&writes).await {
            Ok(()) => {}
            Err(StoreError::NotFound) => return Err(KubeError::not_found(&CLUSTER_GROUPS, &name)),
            Err(e) => return Err(e.into()),
        }
    }
    // The object as it was, as the apiserver answers the delete of a custom resource.
    Ok(ok(&object))
}
