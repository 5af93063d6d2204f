//! `/v1/clustergroups` (microversion 1.20): a project's named sets of clusters, which it
//! shares with other projects through bindings. Create (with optional explicit members), list,
//! show, PATCH of the description and selector, and delete; the members are
//! [`super::cluster_group_members`], the bindings [`super::cluster_group_bindings`]. Only the
//! group's own project (or an administrator) sees and manages a group. Below 1.20 the routes
//! answer 406 with the empty framework body.

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::{json, Map, Value};

use super::lookup::{self, cluster_target, owner_target};
use super::patch::{self, PatchRules};
use super::views::{ClusterGroupCollection, ClusterGroupView};
use crate::api::http::body::{invalid, json_body, json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::CLUSTER_GROUPS;
use crate::api::http::pagination::{respond_page, ListQuery, ListRules, PageBody, PAGE_PARAMS};
use crate::api::http::retry::{self, Attempt};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::Cluster;
use crate::domain::cluster_group::{
    ClusterGroup, GroupDescription, GroupName, GroupSelector, MemberState, NewClusterGroup,
    NewClusterGroupMember,
};
use crate::domain::ids::parse_uuid_like;
use crate::domain::{ClusterGroupId, ClusterId, Ident};
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write, CLUSTER_GROUP_SORT_KEYS};

/// The routes under `/v1/clustergroups`, relative to the scope [`super::routes`] mounts them
/// in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{clustergroup_ident}")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    );
}

/// Cluster groups exist from microversion 1.20; below it the routes answer 406 with the empty
/// framework body.
pub(super) fn require_version(ctx: &RequestContext) -> Result<(), ApiError> {
    if ctx.version >= CLUSTER_GROUPS {
        Ok(())
    } else {
        Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE))
    }
}

/// Magnum's 404 for a cluster group.
pub(crate) fn group_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("ClusterGroup {ident} could not be found."))
}

pub(super) fn cluster_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("Cluster {ident} could not be found."))
}

/// The policy target of a group: its owner.
pub(crate) fn group_target(g: &ClusterGroup) -> Map<String, Value> {
    owner_target(&g.project_id, &g.user_id)
}

/// A group of the caller's project (every project's for an administrator), by uuid or name.
pub(super) async fn group(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<ClusterGroup, ApiError> {
    match state
        .store
        .get_cluster_group(&ctx.scope(), &Ident::parse(ident))
        .await
    {
        Ok(g) => Ok(g),
        Err(StoreError::NotFound) => Err(group_not_found(ident)),
        Err(StoreError::Ambiguous) => Err(ApiError::conflict(
            "Multiple cluster groups exist with same name. Please use the cluster group uuid \
             instead.",
        )),
        Err(e) => Err(e.into()),
    }
}

/// A cluster the group's side names for a membership: one of the caller's project (any
/// project's for an administrator) by uuid or name, else any project's by uuid (a cluster of
/// another project is proposed, never joined without its owner).
pub(super) async fn proposable_cluster(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<Cluster, ApiError> {
    match lookup::cluster(state, ctx, ident, ctx.is_admin).await {
        Ok(c) => Ok(c),
        Err(ApiError::NotFound(_)) => {
            let Some(uuid) = parse_uuid_like(ident) else {
                return Err(cluster_not_found(ident));
            };
            state
                .store
                .find_cluster(&ClusterId(uuid))
                .await?
                .ok_or_else(|| cluster_not_found(ident))
        }
        Err(e) => Err(e),
    }
}

/// The membership `ctx` writes when it adds `c` to `g`, with the consent check: the group's
/// project proposes a cluster of another project; a cluster of the caller's own project joins
/// at once, with its owner's consent (`clustergroup:member_consent` on the cluster). An
/// administrator acts for the group's project.
pub(crate) fn new_member(
    ctx: &RequestContext,
    g: &ClusterGroup,
    c: &Cluster,
) -> Result<NewClusterGroupMember, ApiError> {
    let actor = if ctx.project_id == c.project_id || ctx.project_id == g.project_id {
        ctx.project_id.as_str()
    } else {
        g.project_id.as_str()
    };
    let m = NewClusterGroupMember::add(g, c.uuid, &c.project_id, actor)
        .map_err(|e| ApiError::forbidden(format!("{e}.")))?;
    if m.state == MemberState::Accepted {
        ctx.authorize("clustergroup:member_consent", &cluster_target(c))?;
    }
    Ok(m)
}

/// Magnum's 409 for a cluster named twice in a group.
pub(super) fn already_member(ident: &str, g: &ClusterGroup) -> ApiError {
    ApiError::conflict(format!(
        "Cluster {ident} is already a member of cluster group {}.",
        g.name.as_str()
    ))
}

const READ_ONLY: &[&str] = &[
    "uuid",
    "links",
    "project_id",
    "user_id",
    "created_at",
    "updated_at",
];

/// A create body, parsed; the explicit members are resolved after the policy check.
struct GroupCreate {
    name: GroupName,
    description: Option<GroupDescription>,
    selector: Option<GroupSelector>,
    clusters: Vec<String>,
}

pub(crate) fn parse_description(v: &Value) -> Result<Option<GroupDescription>, ApiError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => GroupDescription::parse(s)
            .map(Some)
            .map_err(|e| invalid("description", v, &format!("{e}."))),
        _ => Err(invalid("description", v, "Value should be string.")),
    }
}

/// A selector: `null` or empty text for none.
fn parse_selector(v: &Value) -> Result<Option<GroupSelector>, ApiError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => GroupSelector::parse(s)
            .map(Some)
            .map_err(|e| invalid("selector", v, &format!("{e}."))),
        _ => Err(invalid("selector", v, "Value should be string.")),
    }
}

impl TryFrom<Fields> for GroupCreate {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        f.read_only(READ_ONLY)?;
        let name = f.required_string("name", 1, 253)?;
        let name = GroupName::parse(&name).map_err(|e| invalid("name", &json!(name), &e))?;
        let description = match f.value("description") {
            Some(v) => parse_description(&v)?,
            None => None,
        };
        let selector = match f.value("selector") {
            Some(v) => parse_selector(&v)?,
            None => None,
        };
        let mut clusters = f.string_list("clusters")?.unwrap_or_default();
        clusters.dedup();
        f.finish()?;
        Ok(GroupCreate {
            name,
            description,
            selector,
            clusters,
        })
    }
}

/// A group as it will read back once `new` is committed.
pub(crate) fn provisional(new: &NewClusterGroup) -> ClusterGroup {
    ClusterGroup {
        id: 0,
        uuid: new.uuid,
        project_id: new.project_id.clone(),
        user_id: new.user_id.clone(),
        name: new.name.clone(),
        description: new.description.clone(),
        selector: new.selector.clone(),
        version: 0,
        resource_version: 0,
        created_at: Utc::now(),
        updated_at: None,
    }
}

/// The writes of a group's create, on either face: the group, a membership of each of
/// `clusters` (each once: proposed, or accepted with its owner's consent) and the
/// notification. The caller checked `clustergroup:create` and, with clusters,
/// `clustergroup:member_add`.
pub(crate) fn create_writes(
    state: &AppState,
    ctx: &RequestContext,
    new: &NewClusterGroup,
    clusters: &[Cluster],
) -> Result<Vec<Write>, ApiError> {
    let g = provisional(new);
    let mut writes = vec![Write::InsertClusterGroup(Box::new(new.clone()))];
    let mut seen = Vec::new();
    for c in clusters {
        if seen.contains(&c.uuid) {
            continue;
        }
        seen.push(c.uuid);
        writes.push(Write::InsertClusterGroupMember(Box::new(new_member(
            ctx, &g, c,
        )?)));
    }
    writes.push(Write::event(events::cluster_group_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Success,
        &g,
        Some(&initiator(ctx)),
    )));
    Ok(writes)
}

/// The writes of an update of a group's description and selector to `next`, on either face:
/// the group (checked against its version) and the notification.
pub(crate) fn update_writes(
    state: &AppState,
    ctx: &RequestContext,
    next: &ClusterGroup,
) -> [Write; 2] {
    [
        Write::UpdateClusterGroup(Box::new(next.clone())),
        Write::event(events::cluster_group_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Success,
            next,
            Some(&initiator(ctx)),
        )),
    ]
}

/// The writes of a group's delete, on either face: the group (its memberships and bindings
/// with it) and the notification.
pub(crate) fn delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    g: &ClusterGroup,
) -> [Write; 2] {
    [
        Write::DeleteClusterGroup { uuid: g.uuid },
        Write::event(events::cluster_group_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Success,
            g,
            Some(&initiator(ctx)),
        )),
    ]
}

/// The group's unique name constraint: a create of a name the project has is a 409.
pub(crate) const GROUP_NAME_TAKEN: &str = "uniq_cluster_group0project_id0name";

/// The group as it reads back after its commit.
async fn stored(state: &AppState, uuid: &ClusterGroupId) -> Result<ClusterGroup, ApiError> {
    state
        .store
        .find_cluster_group(uuid)
        .await?
        .ok_or_else(|| group_not_found(&uuid.to_string()))
}

fn name_taken(name: &GroupName) -> ApiError {
    ApiError::conflict(format!(
        "A cluster group named {} already exists in this project.",
        name.as_str()
    ))
}

#[tracing::instrument(name = "cluster_groups.create", skip_all, fields(project = %ctx.project_id))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "clustergroup")?;
    let GroupCreate {
        name,
        description,
        selector,
        clusters,
    } = Fields::new("clustergroup", obj).try_into()?;
    ctx.authorize_own("clustergroup:create")?;
    let new = NewClusterGroup {
        uuid: ClusterGroupId::new(),
        project_id: ctx.project_id.clone(),
        user_id: ctx.user_id.clone(),
        name,
        description,
        selector,
    };
    let mut members = Vec::new();
    if !clusters.is_empty() {
        ctx.authorize("clustergroup:member_add", &group_target(&provisional(&new)))?;
    }
    for ident in &clusters {
        members.push(proposable_cluster(&state, &ctx, ident).await?);
    }
    let writes = create_writes(&state, &ctx, &new, &members)?;
    match state.store.commit(&writes).await {
        Ok(()) => {}
        Err(e) if e.is_constraint(GROUP_NAME_TAKEN) => return Err(name_taken(&new.name)),
        Err(StoreError::NotFound) => {
            return Err(ApiError::not_found(
                "A cluster named as a member was deleted meanwhile.",
            ))
        }
        Err(e) => return Err(e.into()),
    }
    let g = stored(&state, &new.uuid).await?;
    let base = app_url(&req);
    Ok(HttpResponse::Created()
        .insert_header((
            header::LOCATION,
            format!("{base}/v1/clustergroups/{}", g.uuid),
        ))
        .json(ClusterGroupView::new(&base, &g)))
}

const LIST_RULES: ListRules = ListRules {
    summary: ["clustergroup:get_all", "clustergroup:get_all_all_projects"],
    detail: ["clustergroup:get_all", "clustergroup:get_all_all_projects"],
};

static PAGE: PageBody = PageBody::new(500);

#[tracing::instrument(name = "cluster_groups.list", skip_all, fields(project = %ctx.project_id))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    let query = ListQuery::parse(
        &req,
        &ctx,
        PAGE_PARAMS,
        CLUSTER_GROUP_SORT_KEYS,
        state.settings.api.max_limit,
        &LIST_RULES,
    )?;
    let page = &query.page;
    let groups = state
        .store
        .list_cluster_groups(&ctx.scope(), page)
        .await
        .map_err(query.store_error(group_not_found))?;
    let base = app_url(&req);
    let last = groups.last().map(|g| g.uuid.to_string());
    let items: Vec<ClusterGroupView> = groups
        .iter()
        .map(|g| ClusterGroupView::new(&base, g))
        .collect();
    let n = items.len();
    respond_page(&PAGE, &req, "clustergroups", page, n, last, &[], |next| {
        ClusterGroupCollection {
            clustergroups: items,
            next,
        }
    })
}

#[tracing::instrument(name = "cluster_groups.show", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let g = group(&state, &ctx, &path).await?;
    ctx.authorize("clustergroup:get", &group_target(&g))?;
    Ok(HttpResponse::Ok().json(ClusterGroupView::new(&app_url(&req), &g)))
}

const PATCH_RULES: PatchRules = PatchRules {
    internal: &[],
    non_removable: &["/name"],
    literal: &[],
};

/// The attributes a PATCH may change.
const MUTABLE: &[&str] = &["description", "selector"];

/// The PATCH-able document of a group.
fn patch_document(g: &ClusterGroup) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), json!(g.name.as_str()));
    m.insert(
        "description".into(),
        json!(g.description.as_ref().map(|d| d.as_str())),
    );
    m.insert(
        "selector".into(),
        json!(g.selector.as_ref().map(|s| s.as_str())),
    );
    m
}

#[tracing::instrument(name = "cluster_groups.update", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let ops = patch::parse_patch(json_body(&req, &body)?, &PATCH_RULES)?;
    let uuid = retry::until_committed(async || {
        let g = group(&state, &ctx, &path).await?;
        ctx.authorize("clustergroup:update", &group_target(&g))?;
        let before = patch_document(&g);
        let after = patch::apply(&before, &ops, &PATCH_RULES)?;
        let mut changed: Vec<&str> = before
            .iter()
            .filter(|(k, v)| after.get(*k).unwrap_or(&Value::Null) != *v)
            .map(|(k, _)| k.as_str())
            .filter(|k| !MUTABLE.contains(k))
            .collect();
        if let Some(unknown) = after.keys().find(|k| !before.contains_key(*k)) {
            return Err(ApiError::bad_request(format!(
                "Unknown attribute for argument clustergroup: {unknown}"
            )));
        }
        changed.sort();
        if !changed.is_empty() {
            return Err(ApiError::bad_request(format!(
                "cannot change cluster group property(ies) {}.",
                changed.join(", ")
            )));
        }
        let mut next = g.clone();
        next.description = parse_description(after.get("description").unwrap_or(&Value::Null))?;
        next.selector = parse_selector(after.get("selector").unwrap_or(&Value::Null))?;
        if next.description == g.description && next.selector == g.selector {
            return Ok(Attempt::Done(g.uuid));
        }
        next.updated_at = Some(Utc::now());
        let writes = update_writes(&state, &ctx, &next);
        match state.store.commit(&writes).await {
            Ok(()) => Ok(Attempt::Done(g.uuid)),
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    let g = stored(&state, &uuid).await?;
    Ok(HttpResponse::Ok().json(ClusterGroupView::new(&app_url(&req), &g)))
}

#[tracing::instrument(name = "cluster_groups.delete", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let g = group(&state, &ctx, &path).await?;
    ctx.authorize("clustergroup:delete", &group_target(&g))?;
    let writes = delete_writes(&state, &ctx, &g);
    super::commit_deleted(&state, &writes, || group_not_found(&path)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_selector_is_none_and_a_bad_one_is_a_400_naming_the_field() {
        assert_eq!(parse_selector(&json!("")).expect("empty"), None);
        assert_eq!(parse_selector(&Value::Null).expect("null"), None);
        let s = parse_selector(&json!("env=prod")).expect("valid");
        assert_eq!(s.map(|s| s.as_str().to_string()), Some("env=prod".into()));
        let err = parse_selector(&json!("env in (prod")).expect_err("unbalanced");
        assert!(err
            .to_string()
            .starts_with("Invalid input for field/attribute selector."));
        assert!(parse_selector(&json!(3)).is_err());
    }

    #[test]
    fn a_description_is_text_of_at_most_255_characters() {
        assert!(parse_description(&json!("x".repeat(255))).is_ok());
        assert!(parse_description(&json!("x".repeat(256))).is_err());
        assert!(parse_description(&json!(["x"])).is_err());
    }
}
