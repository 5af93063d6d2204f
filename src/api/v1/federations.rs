//! `/v1/federations`: create, list, detail, show, PATCH (join, unjoin and property edits) and
//! delete. Upstream Magnum accepted these requests and never did the work; here every accepted
//! change commits the row, a job for the host cluster's driver and its notification in one
//! transaction before answering. Joins and unjoins are read-modify-write on the row's version,
//! retried when a concurrent change wins, so no member is ever lost.

use std::collections::BTreeMap;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::{json, Map, Value};

use super::cluster_access;
use super::cluster_delete::force_requested;
use super::federation_delete;
use super::lookup::{self, cluster_target, driver_for, federation_target, job_driver};
use super::patch::{self, Op, PatchOp, PatchRules};
use super::views::{
    AcceptedView, FederationCollection, FederationDetailCollection, FederationSummaryView,
    FederationView,
};
use crate::api::http::body::{invalid, json_body, json_object, parse_bool, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::CLUSTER_GROUPS;
use crate::api::http::pagination::{respond_page, ListQuery, ListRules, PageBody, PAGE_PARAMS};
use crate::api::http::retry::{self, Attempt};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::Cluster;
use crate::domain::cluster_group::ClusterAction;
use crate::domain::federation::{
    dedup_members, member_diff, Federation, NewFederation, CREATE_TIMEOUT_MINUTES, DNS_ZONE,
};
use crate::domain::ids::parse_uuid_like;
use crate::domain::job::JobPayload;
use crate::domain::labels::label_value;
use crate::domain::names::FederationName;
use crate::domain::status::{ClusterStatus, FederationStatus, Verb};
use crate::domain::{ClusterId, FederationId, Ident};
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write, FEDERATION_SORT_KEYS};

/// The routes under `/v1/federations`, relative to the scope [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/detail")
            .route(web::get().to(list))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{ident}")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    );
}

const READ_ONLY: &[&str] = &["links", "project_id", "created_at", "updated_at"];

/// Accepted on create and ignored, as Magnum does.
const IGNORED: &[&str] = &["uuid", "status", "status_reason"];

const PATCH_RULES: PatchRules = PatchRules {
    internal: &[],
    non_removable: &[],
    literal: &["/properties"],
};

/// The attributes a PATCH may change.
const MUTABLE: &[&str] = &["member_ids", "properties"];

fn accepted(f: &Federation) -> HttpResponse {
    HttpResponse::Accepted().json(AcceptedView::new(f.uuid))
}

fn cluster_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("Cluster {ident} could not be found."))
}

/// Magnum's sentence, naming the property and the CLI plugin's option that sets it.
fn no_dns_zone() -> ApiError {
    ApiError::bad_request(
        "No DNS zone specified. Please specify a `dns-zone` property \
         (with `openstack coe federation create|update`: `--property dns=<zone>`).",
    )
}

/// A cluster as the caller may have named it: its name, with the uuid the API was given in
/// parentheses (the CLI sends uuids for the names its user typed).
fn cluster_label(c: &Cluster) -> String {
    if c.name.is_empty() {
        c.uuid.to_string()
    } else {
        format!("{} ({})", c.name, c.uuid)
    }
}

/// Properties: an object (or a JSON / Python-literal string of one) of scalar values, stored
/// as strings; `null` values count as absent.
fn properties_value(v: &Value) -> Result<BTreeMap<String, String>, ApiError> {
    let parsed;
    let obj = match v {
        Value::Object(map) => map,
        Value::String(s) => {
            parsed = crate::api::http::pyliteral::parse_request_literal(s).map_err(|e| {
                invalid(
                    "properties",
                    v,
                    &format!("Value should be a dictionary ({e})."),
                )
            })?;
            match &parsed {
                Value::Object(map) => map,
                _ => return Err(invalid("properties", v, "Value should be a dictionary.")),
            }
        }
        _ => return Err(invalid("properties", v, "Value should be a dictionary.")),
    };
    let mut out = BTreeMap::new();
    for (k, val) in obj {
        if val.is_null() {
            continue;
        }
        let s = label_value(val).ok_or_else(|| {
            invalid(
                "properties",
                v,
                &format!("The value of property {k} should be a string, number or boolean."),
            )
        })?;
        out.insert(k.clone(), s);
    }
    Ok(out)
}

/// A cluster the caller can see, named by uuid only (a name is never looked up).
async fn visible_cluster(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<Cluster, ApiError> {
    let Some(uuid) = parse_uuid_like(ident) else {
        return Err(cluster_not_found(ident));
    };
    match state
        .store
        .get_cluster(&ctx.scope(), &Ident::Uuid(uuid))
        .await
    {
        Ok(c) => Ok(c),
        Err(StoreError::NotFound) => Err(cluster_not_found(ident)),
        Err(e) => Err(e.into()),
    }
}

/// The clusters one attempt of a change joins, with the policy checks of joins and unjoins.
#[derive(Default)]
struct Membership {
    joined: Vec<Cluster>,
}

impl Membership {
    /// Checks a join of a visible cluster: `federation:join` on the federation and on the
    /// cluster, and the cluster not being deleted. Returns the cluster.
    async fn join(
        &mut self,
        state: &AppState,
        ctx: &RequestContext,
        federation: &Map<String, Value>,
        ident: &str,
    ) -> Result<Cluster, ApiError> {
        let (c, shared) = match visible_cluster(state, ctx, ident).await {
            Ok(c) => (c, false),
            // From 1.20, a cluster of another project joins through a write binding.
            Err(ApiError::NotFound(_)) if ctx.version >= CLUSTER_GROUPS => {
                cluster_access::cluster_for(state, ctx, ident, ClusterAction::FederationJoin)
                    .await?
            }
            Err(e) => return Err(e),
        };
        ctx.authorize("federation:join", federation)?;
        if shared {
            // The binding is the owner's consent; the caller's own rule decides the rest.
            ctx.authorize_own("federation:join")?;
        } else {
            ctx.authorize("federation:join", &cluster_target(&c))?;
        }
        if c.status == ClusterStatus::DeleteInProgress {
            return Err(ApiError::conflict(format!(
                "Cluster {} is being deleted and cannot join a federation.",
                c.name
            )));
        }
        self.joined.push(c.clone());
        Ok(c)
    }

    /// Checks an unjoin of a member: `federation:unjoin` on the federation and, when the
    /// cluster still exists (in any project), on the cluster.
    async fn unjoin(
        &self,
        state: &AppState,
        ctx: &RequestContext,
        federation: &Map<String, Value>,
        uuid: &ClusterId,
    ) -> Result<(), ApiError> {
        ctx.authorize("federation:unjoin", federation)?;
        if let Some(c) = state.store.find_cluster(uuid).await? {
            ctx.authorize("federation:unjoin", &cluster_target(&c))?;
        }
        Ok(())
    }

    /// Guards on the clusters that end up joined (`uuids`), so that none of them can be
    /// deleted concurrently, past the delete's federation check.
    fn guards<'a>(&'a self, uuids: &[ClusterId], also: Option<&'a Cluster>) -> Vec<Write> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        let joined = self.joined.iter().filter(|c| uuids.contains(&c.uuid));
        for c in also.into_iter().chain(joined) {
            if !seen.contains(&c.id) {
                seen.push(c.id);
                out.push(Write::GuardCluster {
                    id: c.id,
                    version: c.version,
                });
            }
        }
        out
    }
}

/// A federation create body, parsed; the host and members are resolved per attempt.
struct FederationCreate {
    name: FederationName,
    host_ident: Option<String>,
    properties: Option<BTreeMap<String, String>>,
    member_ids: Vec<String>,
}

impl TryFrom<Fields> for FederationCreate {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        f.read_only(READ_ONLY)?;
        f.ignore(IGNORED);
        let name = match f.string("name", 1, 242)? {
            Some(n) => {
                FederationName::parse(&n).map_err(|reason| invalid("name", &json!(n), reason))?
            }
            None => FederationName::generate(),
        };
        let parsed = FederationCreate {
            name,
            host_ident: f.string("hostcluster_id", 1, 255)?,
            properties: f
                .value("properties")
                .map(|v| properties_value(&v))
                .transpose()?,
            member_ids: f.string_list("member_ids")?.unwrap_or_default(),
        };
        f.finish()?;
        Ok(parsed)
    }
}

#[tracing::instrument(name = "federations.create", skip_all, fields(project = %ctx.project_id))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "federation")?;
    let FederationCreate {
        name,
        host_ident,
        properties,
        member_ids,
    } = Fields::new("federation", obj).try_into()?;

    ctx.authorize_own("federation:create")?;
    let host_ident = host_ident.ok_or_else(|| {
        ApiError::bad_request("No hostcluster specified. Please specify a hostcluster_id.")
    })?;
    let uuid = FederationId::new();
    retry::until_committed(async || {
        let host = lookup::cluster(&state, &ctx, &host_ident, true).await?;
        let properties = properties.clone().ok_or_else(|| {
            ApiError::bad_request("Please specify a `properties` dict for the federation.")
        })?;
        if !properties.contains_key(DNS_ZONE) {
            return Err(no_dns_zone());
        }
        if host.status == ClusterStatus::DeleteInProgress {
            return Err(ApiError::conflict(format!(
                "Cluster {} is being deleted and cannot host a federation.",
                host.name
            )));
        }
        let own = ctx.own_target();
        let mut membership = Membership::default();
        let mut members = Vec::with_capacity(member_ids.len());
        for m in &member_ids {
            members.push(membership.join(&state, &ctx, &own, m).await?.uuid);
        }
        let members = dedup_members(members);
        let template = lookup::template_of(&state, &host).await?;
        let driver = driver_for(&state, &template)?;
        if !driver.capabilities().federation {
            return Err(ApiError::bad_request(format!(
                "The driver '{}' of host cluster {} does not support federations.",
                driver.name(),
                host.name
            )));
        }

        let new = NewFederation {
            uuid,
            project_id: ctx.project_id.clone(),
            user_id: ctx.user_id.clone(),
            name: name.clone(),
            hostcluster_id: host.uuid,
            member_ids: members,
            properties,
        };
        let provisional = new.provisional(Utc::now());
        let writes = create_writes(
            &state,
            &ctx,
            &membership,
            &host,
            new,
            &provisional,
            driver.name(),
        );
        match state.store.commit(&writes).await {
            Ok(()) => Ok(Attempt::Done(accepted(&provisional))),
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) => Err(e.into()),
        }
    })
    .await
}

/// What a federation create commits: guards on the host and the members (none may be deleted
/// meanwhile), the row, the create job (due within the create timeout) and the event.
fn create_writes(
    state: &AppState,
    ctx: &RequestContext,
    membership: &Membership,
    host: &Cluster,
    new: NewFederation,
    provisional: &Federation,
    driver: &str,
) -> Vec<Write> {
    let mut job = state.job(JobPayload::FederationCreate {}, new.uuid, driver);
    job.deadline_at =
        Some(provisional.created_at + chrono::Duration::minutes(CREATE_TIMEOUT_MINUTES));
    let mut writes = membership.guards(&new.member_ids, Some(host));
    writes.push(Write::InsertFederation {
        federation: Box::new(new),
        status: FederationStatus::CreateInProgress,
    });
    writes.push(Write::job(job));
    writes.push(Write::event(events::federation_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Pending,
        provisional,
        None,
        Some(&initiator(ctx)),
    )));
    writes
}

#[tracing::instrument(name = "federations.list", skip_all, fields(project = %ctx.project_id))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query = ListQuery::parse(
        &req,
        &ctx,
        PAGE_PARAMS,
        FEDERATION_SORT_KEYS,
        state.settings.api.max_limit,
        &LIST_RULES,
    )?;
    let page = &query.page;
    let feds =
        state
            .store
            .list_federations(&ctx.scope(), page)
            .await
            .map_err(query.store_error(|m| {
                ApiError::not_found(format!("Federation {m} could not be found."))
            }))?;
    let base = app_url(&req);
    let last = feds.last().map(|f| f.uuid.to_string());
    let n = feds.len();
    if query.detail {
        let federations = feds
            .iter()
            .map(|f| FederationView::new(&base, &ctx, f))
            .collect();
        respond_page(
            &DETAIL_PAGE,
            &req,
            "federations/detail",
            page,
            n,
            last,
            &[],
            |next| FederationDetailCollection { federations, next },
        )
    } else {
        let federations = feds
            .iter()
            .map(|f| FederationSummaryView::new(&base, &ctx, f))
            .collect();
        respond_page(
            &SUMMARY_PAGE,
            &req,
            "federations",
            page,
            n,
            last,
            &[],
            |next| FederationCollection { federations, next },
        )
    }
}

const LIST_RULES: ListRules = ListRules {
    summary: ["federation:get_all", "federation:get_all_all_projects"],
    detail: ["federation:detail", "federation:detail_all_projects"],
};

/// Bodies of `GET /v1/federations/detail` and `GET /v1/federations` pages.
static DETAIL_PAGE: PageBody = PageBody::new(800);
static SUMMARY_PAGE: PageBody = PageBody::new(600);

#[tracing::instrument(name = "federations.show", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    if ctx.is_admin {
        ctx.authorize_own("federation:get_one_all_projects")?;
    }
    let f = lookup::federation(&state, &ctx, &path).await?;
    ctx.authorize("federation:get", &federation_target(&f))?;
    Ok(HttpResponse::Ok().json(FederationView::new(&app_url(&req), &ctx, &f)))
}

/// A membership operation of a PATCH, in Magnum's dialect plus Fleetyard's list replace.
#[derive(Debug, Clone, PartialEq)]
enum MemberOp {
    /// `add /member_ids "<cluster uuid>"`.
    Join(String),
    /// `remove /member_ids "<cluster uuid>"`.
    Unjoin(String),
    /// `remove /member_ids` without a value, or `replace /member_ids` with a list.
    Replace(Vec<String>),
}

fn member_list(v: &Value) -> Result<Vec<String>, ApiError> {
    let bad = || invalid("member_ids", v, "Value should be a list of cluster uuids.");
    let parsed;
    let items = match v {
        Value::Array(items) => items,
        Value::String(s) => {
            parsed = crate::api::http::pyliteral::parse_request_literal(s).map_err(|_| bad())?;
            parsed.as_array().ok_or_else(bad)?
        }
        _ => return Err(bad()),
    };
    items
        .iter()
        .map(|i| i.as_str().map(String::from).ok_or_else(bad))
        .collect()
}

/// Splits a patch into membership operations and the rest (applied to the document).
fn split_patch(ops: Vec<PatchOp>) -> Result<(Vec<MemberOp>, Vec<PatchOp>), ApiError> {
    let mut members = Vec::new();
    let mut rest = Vec::new();
    for op in ops {
        if op.root() != "/member_ids" {
            rest.push(op);
            continue;
        }
        if op.path != "/member_ids" {
            return Err(ApiError::bad_request(format!(
                "'{}' cannot be patched: add or remove /member_ids with a cluster uuid as the value, or replace /member_ids with a list of cluster uuids.",
                op.path
            )));
        }
        let one = |v: &Value| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(invalid(
                "member_ids",
                other,
                "Value should be a cluster uuid.",
            )),
        };
        members.push(match (op.op, op.value) {
            (Op::Add, Some(v)) => MemberOp::Join(one(&v)?),
            (Op::Remove, Some(v)) if !v.is_null() => MemberOp::Unjoin(one(&v)?),
            (_, None) | (_, Some(Value::Null)) => MemberOp::Replace(vec![]),
            (_, Some(v)) => MemberOp::Replace(member_list(&v)?),
        });
    }
    Ok((members, rest))
}

/// The PATCH-able document of a federation.
fn patch_document(f: &Federation) -> Map<String, Value> {
    let v = json!({
        "name": f.name,
        "hostcluster_id": f.hostcluster_id,
        "member_ids": f.member_ids,
        "status": f.status.as_str(),
        "status_reason": f.status_reason,
        "properties": f.properties,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Applies the membership operations to `members`, checking each join and unjoin.
async fn apply_member_ops(
    state: &AppState,
    ctx: &RequestContext,
    membership: &mut Membership,
    f: &Federation,
    ops: &[MemberOp],
) -> Result<Vec<ClusterId>, ApiError> {
    let fed = federation_target(f);
    let mut members = f.member_ids.clone();
    for op in ops {
        match op {
            MemberOp::Join(ident) => {
                let c = membership.join(state, ctx, &fed, ident).await?;
                let uuid = c.uuid;
                if members.contains(&uuid) {
                    return Err(ApiError::conflict(format!(
                        "Cluster {} is already a member of the federation {}.",
                        cluster_label(&c),
                        f.name
                    )));
                }
                members.push(uuid);
            }
            MemberOp::Unjoin(ident) => {
                let canonical = parse_uuid_like(ident).map(ClusterId);
                match canonical.filter(|u| members.contains(u)) {
                    Some(uuid) => {
                        membership.unjoin(state, ctx, &fed, &uuid).await?;
                        members.retain(|m| *m != uuid);
                    }
                    None => {
                        let c = visible_cluster(state, ctx, ident).await?;
                        return Err(ApiError::not_found(format!(
                            "Cluster {} is not a member of the federation {}.",
                            cluster_label(&c),
                            f.name
                        )));
                    }
                }
            }
            MemberOp::Replace(list) => {
                let mut next = Vec::with_capacity(list.len());
                for ident in list {
                    let known = parse_uuid_like(ident)
                        .map(ClusterId)
                        .filter(|u| members.contains(u));
                    next.push(match known {
                        Some(uuid) => uuid,
                        None => membership.join(state, ctx, &fed, ident).await?.uuid,
                    });
                }
                let next = dedup_members(next);
                for gone in members.iter().filter(|m| !next.contains(m)) {
                    membership.unjoin(state, ctx, &fed, gone).await?;
                }
                members = next;
            }
        }
    }
    Ok(members)
}

#[tracing::instrument(name = "federations.update", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let params = query_params(&req, &["rollback"])?;
    if let Some(v) = params.get("rollback") {
        parse_bool(&json!(v)).ok_or_else(|| {
            ApiError::bad_request(format!("Invalid input for rollback: {v} is not a boolean."))
        })?;
    }
    let ops = patch::parse_patch(json_body(&req, &body)?, &PATCH_RULES)?;
    let (member_ops, doc_ops) = split_patch(ops)?;
    let mut driver: Option<String> = None;
    retry::until_committed(async || {
        let f = lookup::federation(&state, &ctx, &path).await?;
        ctx.authorize("federation:update", &federation_target(&f))?;
        if !f.accepts_changes() {
            return Err(ApiError::conflict(format!(
                "Updating a federation when status is \"{}\" is not supported.",
                f.status
            )));
        }
        let before = patch_document(&f);
        let properties = if doc_ops.is_empty() {
            f.properties.clone()
        } else {
            let after = patch::apply(&before, &doc_ops, &PATCH_RULES)?;
            let mut changed: Vec<&str> = before
                .iter()
                .filter(|(k, v)| after.get(*k).unwrap_or(&Value::Null) != *v)
                .map(|(k, _)| k.as_str())
                .filter(|k| !MUTABLE.contains(k))
                .collect();
            changed.sort();
            if !changed.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "cannot change federation property(ies) {}.",
                    changed.join(", ")
                )));
            }
            match after.get("properties") {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(v) => properties_value(v)?,
            }
        };
        if !properties.contains_key(DNS_ZONE) {
            return Err(no_dns_zone());
        }
        let mut membership = Membership::default();
        let members = apply_member_ops(&state, &ctx, &mut membership, &f, &member_ops).await?;
        // The same change again is a no-op, except from UPDATE_FAILED, where it is the way
        // forward: the update runs again (a failed join or unjoin has already been undone).
        let unchanged = members == f.member_ids && properties == f.properties;
        if unchanged && f.status != FederationStatus::UpdateFailed {
            return Ok(Attempt::Done(accepted(&f)));
        }
        let driver = match &driver {
            Some(d) => d.clone(),
            None => driver.insert(job_driver(&state, &f).await?).clone(),
        };
        let (joined, unjoined) = member_diff(&f.member_ids, &members);
        let mut next = f.clone();
        next.member_ids = members;
        next.properties = properties;
        next.begin(Verb::Update);
        let job = state.job(
            JobPayload::FederationUpdate {
                joined: joined.clone(),
                unjoined: unjoined.clone(),
            },
            f.uuid,
            driver,
        );
        let event = events::federation_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Pending,
            &next,
            Some((&joined, &unjoined)),
            Some(&initiator(&ctx)),
        );
        let mut writes = membership.guards(&joined, None);
        writes.extend([
            Write::update_federation(&next),
            Write::job(job),
            Write::event(event),
        ]);
        match state.store.commit(&writes).await {
            Ok(()) => Ok(Attempt::Done(accepted(&f))),
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) => Err(e.into()),
        }
    })
    .await
}

#[tracing::instrument(name = "federations.delete", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let force = force_requested(&req, &ctx)?;
    retry::until_committed(async || {
        let f = lookup::federation(&state, &ctx, &path).await?;
        ctx.authorize("federation:delete", &federation_target(&f))?;
        if force {
            ctx.authorize(federation_delete::RULE, &federation_target(&f))?;
            let driver = job_driver(&state, &f).await?;
            return Ok(
                match federation_delete::forced_attempt(&state, &ctx, &f, driver).await? {
                    Attempt::Done(()) => Attempt::Done(HttpResponse::NoContent().finish()),
                    Attempt::Retry => Attempt::Retry,
                },
            );
        }
        if f.status == FederationStatus::DeleteInProgress {
            return Ok(Attempt::Done(HttpResponse::NoContent().finish()));
        }
        let driver = job_driver(&state, &f).await?;
        let mut next = f.clone();
        next.begin(Verb::Delete);
        let job = state.job(
            JobPayload::FederationDelete { forced: None },
            f.uuid,
            driver,
        );
        let writes = vec![
            Write::update_federation(&next),
            Write::job(job),
            Write::event(events::federation_event(
                &state.settings.default.host,
                Action::Delete,
                Outcome::Pending,
                &next,
                None,
                Some(&initiator(&ctx)),
            )),
        ];
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

    fn op(op: Op, path: &str, value: Option<Value>) -> PatchOp {
        PatchOp {
            op,
            path: path.into(),
            value,
        }
    }

    #[test]
    fn member_operations_follow_magnums_dialect_plus_list_replace() {
        let (members, rest) = split_patch(vec![
            op(Op::Add, "/member_ids", Some(json!("a"))),
            op(Op::Remove, "/member_ids", Some(json!("b"))),
            op(Op::Replace, "/member_ids", Some(json!(["c", "d"]))),
            op(Op::Replace, "/member_ids", Some(json!("['e']"))),
            op(Op::Remove, "/member_ids", None),
            op(Op::Replace, "/properties/dns-zone", Some(json!("z."))),
        ])
        .expect("valid");
        assert_eq!(
            members,
            vec![
                MemberOp::Join("a".into()),
                MemberOp::Unjoin("b".into()),
                MemberOp::Replace(vec!["c".into(), "d".into()]),
                MemberOp::Replace(vec!["e".into()]),
                MemberOp::Replace(vec![]),
            ]
        );
        assert_eq!(rest.len(), 1);
    }

    #[test]
    fn member_operations_with_the_wrong_value_shape_are_refused() {
        let err = split_patch(vec![op(Op::Add, "/member_ids", Some(json!(["a"])))])
            .expect_err("array add");
        assert_eq!(
            err.to_string(),
            "Invalid input for field/attribute member_ids. Value: '['a']'. Value should be a cluster uuid."
        );
        let err = split_patch(vec![op(Op::Replace, "/member_ids", Some(json!([1])))])
            .expect_err("numbers");
        assert!(err
            .to_string()
            .ends_with("Value should be a list of cluster uuids."));
        let err = split_patch(vec![op(Op::Remove, "/member_ids/0", None)]).expect_err("index");
        assert!(err
            .to_string()
            .starts_with("'/member_ids/0' cannot be patched"));
    }

    #[test]
    fn properties_are_string_maps_without_nulls() {
        let p = properties_value(&json!({"dns-zone": "a.", "n": 3, "gone": null})).expect("ok");
        assert_eq!(p.get("dns-zone").map(String::as_str), Some("a."));
        assert_eq!(p.get("n").map(String::as_str), Some("3"));
        assert!(!p.contains_key("gone"));
        assert!(properties_value(&json!("{'dns-zone': 'b.'}")).is_ok());
        let err = properties_value(&json!(["x"])).expect_err("list");
        assert!(err.to_string().ends_with("Value should be a dictionary."));
        let err = properties_value(&json!({"a": {"b": 1}})).expect_err("nested");
        assert!(err
            .to_string()
            .ends_with("The value of property a should be a string, number or boolean."));
    }
}
