//! `/v1/clustergroups/{g}/members` (microversion 1.20): a group's explicit members, with the
//! consent of each cluster's owner.
//!
//! The group's project adds a cluster (`POST .../members`): one of its own joins at once, one
//! of another project is `Proposed` and grants nothing until that project accepts it
//! (`POST .../members/{cluster}/actions/accept`, the policy rule `clustergroup:member_consent`
//! on the cluster). Either side removes a membership (`DELETE .../members/{cluster}`).
//!
//! The cluster's side names the group by uuid (it cannot list another project's groups). To
//! it, a group is there only while one of its own clusters has a membership in it: any other
//! answer is the group's 404, so no project learns of another's groups by probing uuids.

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::cluster_groups::{
    already_member, cluster_not_found, group, group_not_found, group_target, new_member,
    proposable_cluster, require_version,
};
use super::lookup::{self, cluster_target};
use super::views::{ClusterGroupMemberCollection, ClusterGroupMemberView};
use crate::api::http::body::{json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::Cluster;
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupMember};
use crate::domain::ids::parse_uuid_like;
use crate::domain::{ClusterGroupId, ClusterId};
use crate::store::{StoreError, Write};

/// The routes of a group's members, relative to the scope `/v1/clustergroups`
/// [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/{clustergroup_ident}/members")
            .route(web::get().to(list))
            .route(web::post().to(add))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{clustergroup_ident}/members/{cluster_ident}")
            .route(web::delete().to(remove))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{clustergroup_ident}/members/{cluster_ident}/actions/accept")
            .route(web::post().to(accept))
            .default_service(web::to(super::method_not_allowed)),
    );
}

fn not_a_member(ident: &str, g: &ClusterGroup) -> ApiError {
    ApiError::not_found(format!(
        "Cluster {ident} is not a member of cluster group {}.",
        g.name.as_str()
    ))
}

async fn member_of(
    state: &AppState,
    g: &ClusterGroupId,
    c: &ClusterId,
) -> Result<Option<ClusterGroupMember>, ApiError> {
    Ok(state.store.cluster_group_member(g, c).await?)
}

/// Which side of a membership the caller acts on.
enum Side {
    /// The group's project (or an administrator): the group is its own; the membership may be
    /// missing.
    Group(ClusterGroup),
    /// The cluster's project, on a group of another project in which its cluster has a
    /// membership.
    Cluster(ClusterGroup, Box<Cluster>, ClusterGroupMember),
}

/// The caller's side of the membership of `cluster_ident` in `group_ident`: its own group, or
/// another project's group (by uuid) in which one of its own clusters is a member; anything
/// else is the group's 404.
async fn side(
    state: &AppState,
    ctx: &RequestContext,
    group_ident: &str,
    cluster_ident: &str,
) -> Result<Side, ApiError> {
    match group(state, ctx, group_ident).await {
        Ok(g) => return Ok(Side::Group(g)),
        Err(ApiError::NotFound(_)) => {}
        Err(e) => return Err(e),
    }
    let missing = || group_not_found(group_ident);
    let Some(uuid) = parse_uuid_like(group_ident) else {
        return Err(missing());
    };
    let Some(g) = state
        .store
        .find_cluster_group(&ClusterGroupId(uuid))
        .await?
    else {
        return Err(missing());
    };
    let c = match lookup::cluster(state, ctx, cluster_ident, false).await {
        Ok(c) => c,
        Err(ApiError::NotFound(_) | ApiError::Conflict(_)) => return Err(missing()),
        Err(e) => return Err(e),
    };
    match member_of(state, &g.uuid, &c.uuid).await? {
        Some(m) => Ok(Side::Cluster(g, Box::new(c), m)),
        None => Err(missing()),
    }
}

/// On the group's side, the membership `cluster_ident` names: a cluster of the caller's
/// project (any project's for an administrator) by uuid or name, or any member by its uuid.
/// `None` when that cluster has no membership; a 404 for a cluster it cannot name.
async fn group_side_member(
    state: &AppState,
    ctx: &RequestContext,
    g: &ClusterGroup,
    cluster_ident: &str,
) -> Result<(Option<Cluster>, Option<ClusterGroupMember>), ApiError> {
    match lookup::cluster(state, ctx, cluster_ident, ctx.is_admin).await {
        Ok(c) => {
            let m = member_of(state, &g.uuid, &c.uuid).await?;
            Ok((Some(c), m))
        }
        Err(ApiError::NotFound(_)) => {
            let Some(uuid) = parse_uuid_like(cluster_ident) else {
                return Err(cluster_not_found(cluster_ident));
            };
            match member_of(state, &g.uuid, &ClusterId(uuid)).await? {
                Some(m) => Ok((None, Some(m))),
                None => Err(cluster_not_found(cluster_ident)),
            }
        }
        Err(e) => Err(e),
    }
}

#[tracing::instrument(name = "cluster_group_members.list", skip_all, fields(project = %ctx.project_id, group = %path.as_str()))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let g = group(&state, &ctx, &path).await?;
    ctx.authorize("clustergroup:get", &group_target(&g))?;
    let members = state.store.cluster_group_members(&g.uuid).await?;
    Ok(HttpResponse::Ok().json(ClusterGroupMemberCollection {
        members: members.iter().map(ClusterGroupMemberView::from).collect(),
    }))
}

/// The member as it reads back after its commit.
async fn stored(
    state: &AppState,
    g: &ClusterGroup,
    c: &ClusterId,
    ident: &str,
) -> Result<ClusterGroupMember, ApiError> {
    member_of(state, &g.uuid, c)
        .await?
        .ok_or_else(|| not_a_member(ident, g))
}

#[tracing::instrument(name = "cluster_group_members.add", skip_all, fields(project = %ctx.project_id, group = %path.as_str()))]
async fn add(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "member")?;
    let mut f = Fields::new("member", obj);
    let ident = f.required_string("cluster", 1, 255)?;
    f.finish()?;
    let g = group(&state, &ctx, &path).await?;
    ctx.authorize("clustergroup:member_add", &group_target(&g))?;
    let c = proposable_cluster(&state, &ctx, &ident).await?;
    let m = new_member(&ctx, &g, &c)?;
    match state
        .store
        .commit(&[Write::InsertClusterGroupMember(Box::new(m))])
        .await
    {
        Ok(()) => {}
        Err(e) if e.is_constraint("uniq_cluster_group_member0group_id0cluster_id") => {
            return Err(already_member(&ident, &g))
        }
        Err(StoreError::NotFound) => return Err(cluster_not_found(&ident)),
        Err(e) => return Err(e.into()),
    }
    let m = stored(&state, &g, &c.uuid, &ident).await?;
    Ok(HttpResponse::Created().json(ClusterGroupMemberView::from(&m)))
}

#[tracing::instrument(name = "cluster_group_members.accept", skip_all, fields(project = %ctx.project_id))]
async fn accept(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (group_ident, cluster_ident) = path.into_inner();
    let (g, c, m) = match side(&state, &ctx, &group_ident, &cluster_ident).await? {
        Side::Cluster(g, c, m) => {
            ctx.authorize("clustergroup:member_consent", &cluster_target(&c))?;
            (g, *c, m)
        }
        Side::Group(g) => {
            // Only the cluster's owner consents: on its own group's side, the caller accepts
            // for a cluster of its own project (or, an administrator, of any).
            let c = lookup::cluster(&state, &ctx, &cluster_ident, ctx.is_admin).await?;
            ctx.authorize("clustergroup:member_consent", &cluster_target(&c))?;
            let m = member_of(&state, &g.uuid, &c.uuid)
                .await?
                .ok_or_else(|| not_a_member(&cluster_ident, &g))?;
            (g, c, m)
        }
    };
    let owner = if ctx.is_admin {
        c.project_id.as_str()
    } else {
        ctx.project_id.as_str()
    };
    let pending = m
        .accept(owner)
        .map_err(|e| ApiError::forbidden(format!("{e}.")))?;
    if pending {
        match state
            .store
            .commit(&[Write::AcceptClusterGroupMember {
                group: g.uuid,
                cluster: c.uuid,
            }])
            .await
        {
            Ok(()) => {}
            Err(StoreError::NotFound) => return Err(not_a_member(&cluster_ident, &g)),
            Err(e) => return Err(e.into()),
        }
    }
    let m = stored(&state, &g, &c.uuid, &cluster_ident).await?;
    Ok(HttpResponse::Ok().json(ClusterGroupMemberView::from(&m)))
}

#[tracing::instrument(name = "cluster_group_members.remove", skip_all, fields(project = %ctx.project_id))]
async fn remove(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (group_ident, cluster_ident) = path.into_inner();
    let (g, cluster) = match side(&state, &ctx, &group_ident, &cluster_ident).await? {
        Side::Cluster(g, c, _) => {
            ctx.authorize("clustergroup:member_delete", &cluster_target(&c))?;
            (g, c.uuid)
        }
        Side::Group(g) => {
            ctx.authorize("clustergroup:member_delete", &group_target(&g))?;
            let (_, m) = group_side_member(&state, &ctx, &g, &cluster_ident).await?;
            let m = m.ok_or_else(|| not_a_member(&cluster_ident, &g))?;
            (g, m.cluster)
        }
    };
    let writes = [Write::DeleteClusterGroupMember {
        group: g.uuid,
        cluster,
    }];
    super::commit_deleted(&state, &writes, || not_a_member(&cluster_ident, &g)).await
}
