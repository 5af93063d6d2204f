//! `/v1/clusters`: create, list, detail, show, PATCH, delete, and the resize and upgrade
//! actions. Every accepted change commits the row, its job and its notification in one
//! transaction before answering 202; requests the cluster's state makes impossible are refused
//! at once.

use std::collections::BTreeMap;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::{json, Map, Value};

use super::cluster_access;
use super::cluster_actions::{not_in_state, resize, retry_create, upgrade, zero_not_supported};
use super::cluster_delete::{self, delete_attempt, force_requested, forced_delete_attempt};
use super::lookup::{self, cluster_target as target, driver_for, nodegroups_of, template_of};
use super::patch::{self, PatchRules};
use super::views::clusters::Counts;
use super::views::{
    AcceptedView, ClusterCollection, ClusterDetailCollection, ClusterSummaryView, ClusterView,
};
use crate::api::http::body::{invalid, json_body, json_object, parse_bool, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::{CLUSTER_ROLLBACK, MISSING_TEMPLATE_IS_404, ZERO_NODE_COUNT};
use crate::api::http::pagination::{respond_page, ListQuery, ListRules, PageBody, PAGE_PARAMS};
use crate::api::http::retry::{self, Attempt};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{
    check_counts, Cluster, ClusterRequest, NewCluster, NodeGroup, Owner, PlanError,
};
use crate::domain::cluster_group::ClusterAction;
use crate::domain::job::JobPayload;
use crate::domain::names::ClusterName;
use crate::domain::status::{HealthStatus, Verb};
use crate::domain::template::{ClusterTemplate, DEVICEMAPPER_VOLUME};
use crate::domain::ClusterId;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write, CLUSTER_SORT_KEYS};

/// The routes of the collection `/v1/clusters`, relative to the scope [`super::routes`]
/// mounts them in.
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
    );
}

/// The routes of one cluster, relative to the scope `/v1/clusters/{cluster_ident}`
/// [`super::routes`] mounts them in (its node groups' are in [`super::nodegroups`]).
pub fn configure_one(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/actions/resize")
            .route(web::post().to(resize))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/actions/upgrade")
            .route(web::post().to(upgrade))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/actions/retry")
            .route(web::post().to(retry_create))
            .default_service(web::to(super::method_not_allowed)),
    );
}

const READ_ONLY: &[&str] = &[
    "links",
    "stack_id",
    "cluster_id",
    "api_address",
    "coe_version",
    "container_version",
    "project_id",
    "user_id",
    "node_addresses",
    "master_addresses",
    "created_at",
    "updated_at",
];

/// Accepted on create and ignored, as Magnum does.
const IGNORED: &[&str] = &[
    "uuid",
    "status",
    "status_reason",
    "health_status",
    "health_status_reason",
    "faults",
    "labels_overridden",
    "labels_added",
    "labels_skipped",
];

const PATCH_RULES: PatchRules = PatchRules {
    internal: &[
        "/api_address",
        "/node_addresses",
        "/master_addresses",
        "/stack_id",
        "/cluster_id",
        "/ca_cert_ref",
        "/magnum_cert_ref",
        "/etcd_ca_cert_ref",
        "/front_proxy_ca_cert_ref",
    ],
    non_removable: &["/cluster_template_id"],
    literal: &["/labels", "/health_status_reason"],
};

/// A cluster create body, parsed: the template it names and the request.
struct ClusterCreate {
    template_ident: String,
    cluster: ClusterRequest,
}

impl TryFrom<Fields> for ClusterCreate {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        f.read_only(READ_ONLY)?;
        f.ignore(IGNORED);
        let template_ident = f.required_string("cluster_template_id", 1, 255)?;
        let name = match f.string("name", 1, 242)? {
            Some(n) => {
                ClusterName::parse(&n).map_err(|reason| invalid("name", &json!(n), reason))?
            }
            None => ClusterName::generate(),
        };
        let cluster = ClusterRequest {
            name,
            keypair: f.string("keypair", 1, 255)?,
            node_count: f.nodes("node_count", 0)?.unwrap_or(1),
            master_count: f.nodes("master_count", 1)?.unwrap_or(1),
            docker_volume_size: f.int32("docker_volume_size", Some(1), None)?,
            labels: f.labels("labels")?,
            merge_labels: f.bool("merge_labels")?.unwrap_or(false),
            master_flavor_id: f.string("master_flavor_id", 1, 255)?,
            flavor_id: f.string("flavor_id", 1, 255)?,
            fixed_network: f.string("fixed_network", 1, 255)?,
            fixed_subnet: f.string("fixed_subnet", 1, 255)?,
            floating_ip_enabled: f.bool("floating_ip_enabled")?,
            master_lb_enabled: f.bool("master_lb_enabled")?,
            create_timeout: f.int32("create_timeout", Some(0), None)?.unwrap_or(60),
            discovery_url: f.string("discovery_url", 0, 255)?,
        };
        f.finish()?;
        Ok(ClusterCreate {
            template_ident,
            cluster,
        })
    }
}

#[tracing::instrument(name = "clusters.create", skip_all, fields(project = %ctx.project_id))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "cluster")?;
    let request: ClusterCreate = Fields::new("cluster", obj)
        .with_node_limit(state.node_limit())
        .try_into()?;
    ctx.authorize_own("cluster:create")?;
    if request.cluster.node_count == 0 && ctx.version < ZERO_NODE_COUNT {
        return Err(zero_not_supported());
    }
    let template = match lookup::template(&state, &ctx, &request.template_ident).await {
        Ok(t) => t,
        Err(ApiError::NotFound(msg)) if ctx.version < MISSING_TEMPLATE_IS_404 => {
            return Err(ApiError::BadRequest(msg))
        }
        Err(e) => return Err(e),
    };
    let driver = driver_for(&state, &template)?;
    authorize_template_use(&ctx, &template)?;
    let owner = Owner {
        project_id: &ctx.project_id,
        user_id: &ctx.user_id,
    };
    let new = request
        .cluster
        .plan(
            owner,
            &template,
            |masters| driver.validate_master_size(masters),
            state.node_limit(),
        )
        .map_err(plan_error)?;
    let writes = create_writes(&state, &ctx, &template, &new, driver.name());
    match state.store.commit(&writes).await {
        Ok(()) => Ok(HttpResponse::Accepted().json(AcceptedView::new(new.uuid))),
        Err(StoreError::Stale) => Err(ApiError::conflict(format!(
            "ClusterTemplate {} changed while the cluster was being created. Please retry the request.",
            template.uuid
        ))),
        Err(StoreError::LimitExceeded { limit }) => Err(ApiError::forbidden(format!(
            "Resource limit exceeded: You have reached the maximum clusters per project, {limit}. Ask an administrator to raise the quota or delete clusters you no longer need."
        ))),
        Err(e) => Err(e.into()),
    }
}

/// A hidden template makes clusters for administrators only.
fn authorize_template_use(
    ctx: &RequestContext,
    template: &ClusterTemplate,
) -> Result<(), ApiError> {
    if template.spec.hidden && !ctx.is_admin {
        return Err(ApiError::forbidden("Not authorized."));
    }
    Ok(())
}

/// Magnum's sentence for a create its template or driver refuses.
fn plan_error(e: PlanError) -> ApiError {
    match e {
        PlanError::DevicemapperVolume => ApiError::bad_request(DEVICEMAPPER_VOLUME),
        PlanError::MasterCount(sentence) => ApiError::BadRequest(sentence),
        PlanError::MasterLbRequired => {
            ApiError::bad_request("master_count must be 1 when master_lb_enabled is False")
        }
        PlanError::MaxNodeCountLabel { max, limit } => ApiError::bad_request(format!(
            "The max_node_count label ({max}) is more than the {limit} nodes a node group may have."
        )),
    }
}

/// What a cluster create commits: the quota check, the template guard, the row with its node
/// groups, the create job (with the cluster's `create_timeout` as its deadline) and the event,
/// which carries the row as it will be stored.
fn create_writes(
    state: &AppState,
    ctx: &RequestContext,
    template: &ClusterTemplate,
    new: &NewCluster,
    driver: &str,
) -> Vec<Write> {
    let now = Utc::now();
    let provisional = new.provisional(now);
    let provisional_ngs: Vec<NodeGroup> = new
        .nodegroups
        .iter()
        .map(|n| n.provisional(new.uuid, now))
        .collect();
    let event = events::cluster_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Pending,
        &provisional,
        &provisional_ngs,
        Some(&initiator(ctx)),
    );
    let mut job = state.job(JobPayload::ClusterCreate {}, new.uuid, driver);
    if new.create_timeout > 0 {
        job.deadline_at = Some(now + chrono::Duration::minutes(i64::from(new.create_timeout)));
    }
    vec![
        Write::CheckClusterQuota {
            project_id: ctx.project_id.clone(),
            default_limit: state.settings.quotas.max_clusters_per_project,
        },
        Write::GuardTemplate {
            id: template.id,
            version: template.version,
        },
        Write::InsertCluster(Box::new(new.clone())),
        Write::job(job),
        Write::event(event),
    ]
}

#[tracing::instrument(name = "clusters.list", skip_all, fields(project = %ctx.project_id))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query = ListQuery::parse(
        &req,
        &ctx,
        PAGE_PARAMS,
        CLUSTER_SORT_KEYS,
        state.settings.api.max_limit,
        &LIST_RULES,
    )?;
    let page = &query.page;
    let not_found =
        query.store_error(|m| ApiError::not_found(format!("Cluster {m} could not be found.")));
    // From microversion 1.20 a page also holds the clusters of other projects that groups
    // bound to the caller's project reach, each marked with where its right comes from.
    let bound = cluster_access::bound_groups(&state, &ctx).await?;
    let through = bound.ids();
    // One statement whatever the page size: the page with what its view needs from the node
    // groups (and, for the detail view, the templates) in correlated subqueries.
    let base = app_url(&req);
    if query.detail {
        let clusters = state
            .store
            .list_clusters_with_groups_through(&ctx.scope(), &through, page)
            .await
            .map_err(not_found)?;
        let owners: Vec<(ClusterId, &str)> = clusters
            .iter()
            .map(|c| (c.cluster.uuid, c.cluster.project_id.as_str()))
            .collect();
        let mut marks = cluster_access::markers(&state, &ctx, &bound, &owners).await?;
        let last = clusters.last().map(|c| c.cluster.uuid.to_string());
        let items: Vec<ClusterView> = clusters
            .into_iter()
            .map(|c| {
                let access = marks.remove(&c.cluster.uuid);
                let mut view = ClusterView::new(&base, &ctx, c);
                view.base.access = access;
                view
            })
            .collect();
        let n = items.len();
        respond_page(
            &DETAIL_PAGE,
            &req,
            "clusters/detail",
            page,
            n,
            last,
            &[],
            |next| ClusterDetailCollection {
                clusters: items,
                next,
            },
        )
    } else {
        let clusters = state
            .store
            .list_cluster_summaries_through(&ctx.scope(), &through, page)
            .await
            .map_err(not_found)?;
        let owners: Vec<(ClusterId, &str)> = clusters
            .iter()
            .map(|c| (c.uuid, c.project_id.as_str()))
            .collect();
        let mut marks = cluster_access::markers(&state, &ctx, &bound, &owners).await?;
        let last = clusters.last().map(|c| c.uuid.to_string());
        let items: Vec<ClusterSummaryView> = clusters
            .into_iter()
            .map(|c| {
                let access = marks.remove(&c.uuid);
                let mut view = ClusterSummaryView::new(&base, &ctx, c);
                view.base.access = access;
                view
            })
            .collect();
        let n = items.len();
        respond_page(
            &SUMMARY_PAGE,
            &req,
            "clusters",
            page,
            n,
            last,
            &[],
            |next| ClusterCollection {
                clusters: items,
                next,
            },
        )
    }
}

const LIST_RULES: ListRules = ListRules {
    summary: ["cluster:get_all", "cluster:get_all_all_projects"],
    detail: ["cluster:detail", "cluster:detail_all_projects"],
};

/// Bodies of `GET /v1/clusters/detail` and `GET /v1/clusters` pages, sized from the last one.
static DETAIL_PAGE: PageBody = PageBody::new(1200);
static SUMMARY_PAGE: PageBody = PageBody::new(640);

#[tracing::instrument(name = "clusters.show", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    if ctx.is_admin {
        ctx.authorize_own("cluster:get_one_all_projects")?;
    }
    // One statement: the cluster, its node groups' facts and its template's labels.
    let (read, access) = match lookup::cluster_with_groups(&state, &ctx, &path).await {
        Ok(read) => {
            ctx.authorize("cluster:get", &target(&read.cluster))?;
            (read, None)
        }
        // From microversion 1.20, a cluster of another project a bound group reaches, by
        // uuid or name; the caller's own rule decides whether it reads clusters at all.
        Err(ApiError::NotFound(missing)) => {
            match cluster_access::shared_cluster(&state, &ctx, &path).await? {
                Some((read, access, _)) => {
                    ctx.authorize_own("cluster:get")?;
                    (read, Some(access))
                }
                None => return Err(ApiError::NotFound(missing)),
            }
        }
        Err(e) => return Err(e),
    };
    let mut view = ClusterView::new(&app_url(&req), &ctx, read);
    view.base.access = access;
    Ok(HttpResponse::Ok().json(view))
}

/// The PATCH-able document of a cluster.
fn patch_document(
    c: &Cluster,
    worker: Option<&NodeGroup>,
    ngs: &[NodeGroup],
) -> Map<String, Value> {
    let refs: Vec<&NodeGroup> = ngs.iter().collect();
    let (_, master_count) = Counts::totals(&refs);
    let v = json!({
        "name": c.name,
        "cluster_template_id": c.cluster_template_id.to_string(),
        "keypair": c.keypair,
        "docker_volume_size": c.docker_volume_size,
        "labels": c.labels,
        "node_count": worker.map(|w| w.node_count).unwrap_or(0),
        "master_count": master_count,
        "master_flavor_id": c.master_flavor_id,
        "flavor_id": c.flavor_id,
        "create_timeout": c.create_timeout,
        "discovery_url": c.discovery_url,
        "status": c.status.as_str(),
        "status_reason": c.status_reason,
        "health_status": c.health_status.map(|h| h.to_string()),
        "health_status_reason": c.health_status_reason,
        "fixed_network": c.fixed_network,
        "fixed_subnet": c.fixed_subnet,
        "floating_ip_enabled": c.floating_ip_enabled,
        "master_lb_enabled": c.master_lb_enabled,
        "merge_labels": false,
        "coe_version": c.coe_version,
        "container_version": c.container_version,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[tracing::instrument(name = "clusters.update", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let allowed: &[&str] = if ctx.version >= CLUSTER_ROLLBACK {
        &["rollback"]
    } else {
        &[]
    };
    let params = query_params(&req, allowed)?;
    let rollback = match params.get("rollback") {
        None => false,
        Some(v) => parse_bool(&json!(v)).ok_or_else(|| {
            ApiError::bad_request(format!("Invalid input for rollback: {v} is not a boolean."))
        })?,
    };
    let ops = patch::parse_patch(json_body(&req, &body)?, &PATCH_RULES)?;
    if ctx.is_admin {
        ctx.authorize_own("cluster:update_all_projects")?;
    }
    retry::until_committed(async || {
        let (c, shared) =
            cluster_access::cluster_for(&state, &ctx, &path, ClusterAction::Update).await?;
        let rule_target = if shared { ctx.own_target() } else { target(&c) };
        ctx.authorize("cluster:update", &rule_target)?;
        ctx.authorize_own("cluster:update_health_status")?;
        let ngs = nodegroups_of(&state, &c).await?;
        let worker = ngs.iter().find(|n| n.is_default && !n.is_master()).cloned();
        let before = patch_document(&c, worker.as_ref(), &ngs);
        let after = patch::apply(&before, &ops, &PATCH_RULES)?;
        let changed = patched_fields(&before, &after)?;
        let mut next = c.clone();
        apply_health(&mut next, &after, &changed)?;
        let mut writes = Vec::new();
        let mut new_count = None;
        if changed.contains(&"node_count") {
            let count = patched_node_count(&after, state.node_limit(), &ctx)?;
            let worker = worker.clone().ok_or_else(|| {
                ApiError::bad_request("The cluster has no default worker node group to resize.")
            })?;
            if !c.status.accepts_update() {
                return Err(not_in_state("Updating", &c));
            }
            check_counts(
                &worker.name,
                count,
                worker.min_node_count,
                worker.max_node_count,
            )
            .map_err(ApiError::BadRequest)?;
            let template = template_of(&state, &c).await?;
            let driver = driver_for(&state, &template)?;
            let resize = WorkerResize {
                cluster: &c,
                nodegroups: &ngs,
                worker,
                count,
                rollback,
            };
            writes = resize.writes(&state, &ctx, &mut next, driver.name());
            new_count = Some(count);
        }
        if next == c && new_count.is_none() {
            return Ok(Attempt::Done(
                HttpResponse::Accepted().json(AcceptedView::new(c.uuid)),
            ));
        }
        writes.insert(0, Write::update_cluster(&next));
        super::commit_accepted(&state, &writes, c.uuid).await
    })
    .await
}

/// The cluster fields a PATCH changed, sorted; only `node_count` and the health fields may
/// change.
fn patched_fields<'a>(
    before: &'a Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<Vec<&'a str>, ApiError> {
    let mut changed: Vec<&str> = before
        .iter()
        .filter(|(k, v)| after.get(*k).unwrap_or(&Value::Null) != *v)
        .map(|(k, _)| k.as_str())
        .collect();
    changed.sort();
    let forbidden: Vec<&str> = changed
        .iter()
        .copied()
        .filter(|k| !["node_count", "health_status", "health_status_reason"].contains(k))
        .collect();
    if !forbidden.is_empty() {
        return Err(ApiError::bad_request(format!(
            "cannot change cluster property(ies) {}.",
            forbidden.join(", ")
        )));
    }
    Ok(changed)
}

/// Applies a PATCH's `health_status` and `health_status_reason` to `next`.
fn apply_health(
    next: &mut Cluster,
    after: &Map<String, Value>,
    changed: &[&str],
) -> Result<(), ApiError> {
    if changed.contains(&"health_status") {
        next.health_status = match after.get("health_status") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(HealthStatus::parse(s).ok_or_else(|| {
                invalid(
                    "health_status",
                    &json!(s),
                    "Value should be one of: HEALTHY, UNHEALTHY, UNKNOWN.",
                )
            })?),
            Some(other) => return Err(invalid("health_status", other, "Value should be string.")),
        };
    }
    if changed.contains(&"health_status_reason") {
        next.health_status_reason = match after.get("health_status_reason") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(v) => crate::api::http::body::labels_value("health_status_reason", v)?,
        };
    }
    Ok(())
}

/// A PATCH's `node_count`: a non-negative integer (a numeric string too; removed means 1),
/// at most the node limit, 0 only from microversion 1.10.
fn patched_node_count(
    after: &Map<String, Value>,
    limit: i32,
    ctx: &RequestContext,
) -> Result<i32, ApiError> {
    let value = after.get("node_count").unwrap_or(&Value::Null);
    let count = match value {
        Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Value::String(s) => s.parse::<i32>().ok(),
        Value::Null => Some(1),
        _ => None,
    }
    .filter(|n| *n >= 0)
    .ok_or_else(|| {
        invalid(
            "node_count",
            value,
            "Value should be a non-negative integer.",
        )
    })?;
    if count > limit {
        return Err(invalid(
            "node_count",
            &json!(count),
            &format!("Value should be less or equal to {limit}."),
        ));
    }
    if count == 0 && ctx.version < ZERO_NODE_COUNT {
        return Err(zero_not_supported());
    }
    Ok(count)
}

/// A node-count PATCH of a cluster: its default worker group goes to `count`.
struct WorkerResize<'a> {
    cluster: &'a Cluster,
    nodegroups: &'a [NodeGroup],
    worker: NodeGroup,
    count: i32,
    rollback: bool,
}

impl WorkerResize<'_> {
    /// The worker group and `next` go `UPDATE_IN_PROGRESS`; the update job (with the old
    /// count, to undo on failure) and its event. `next`'s own write is the caller's.
    fn writes(
        self,
        state: &AppState,
        ctx: &RequestContext,
        next: &mut Cluster,
        driver: &str,
    ) -> Vec<Write> {
        let mut w = self.worker;
        let old = w.node_count;
        w.node_count = self.count;
        w.begin(Verb::Update);
        next.begin(Verb::Update);
        let job = state.job(
            JobPayload::ClusterUpdate {
                nodegroup: w.uuid,
                old_node_count: old,
                node_count: self.count,
                rollback: self.rollback,
            },
            self.cluster.uuid,
            driver,
        );
        let event_ngs: Vec<NodeGroup> = self
            .nodegroups
            .iter()
            .map(|n| if n.id == w.id { w.clone() } else { n.clone() })
            .collect();
        vec![
            Write::update_nodegroup(&w),
            Write::job(job),
            Write::event(events::cluster_event(
                &state.settings.default.host,
                Action::Update,
                Outcome::Pending,
                next,
                &event_ngs,
                Some(&initiator(ctx)),
            )),
        ]
    }
}

#[tracing::instrument(name = "clusters.delete", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let force = force_requested(&req, &ctx)?;
    if ctx.is_admin {
        ctx.authorize_own("cluster:delete_all_projects")?;
    }
    retry::until_committed(async || {
        let (c, shared) =
            cluster_access::cluster_for(&state, &ctx, &path, ClusterAction::Delete).await?;
        let rule_target = if shared { ctx.own_target() } else { target(&c) };
        ctx.authorize("cluster:delete", &rule_target)?;
        let attempt = if force {
            ctx.authorize(cluster_delete::RULE, &target(&c))?;
            forced_delete_attempt(&state, &ctx, &c).await?
        } else {
            delete_attempt(&state, &ctx, &c).await?
        };
        Ok(match attempt {
            Attempt::Done(()) => Attempt::Done(HttpResponse::NoContent().finish()),
            Attempt::Retry => Attempt::Retry,
        })
    })
    .await
}
