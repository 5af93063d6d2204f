//! `/v1/clusters/{cluster_ident}/nodegroups` (microversion 1.9 and later): list, detail, show,
//! create, PATCH, delete. Every accepted change commits the node group, the cluster's
//! `UPDATE_IN_PROGRESS`, the job and the notification in one transaction before answering;
//! a change the cluster's or the group's state makes impossible is refused at once. The job is
//! keyed by the cluster, so one cluster's operations run in order.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::{json, Map, Value};

use super::cluster_delete::force_requested;
use super::lookup::{self, cluster_target as target, driver_for, owner_target, template_of};
use super::nodegroup_delete;
use super::nodegroup_roll::{self, RollRequest};
use super::patch::{self, PatchRules};
use super::views::{
    NodeGroupCollection, NodeGroupDetailCollection, NodeGroupSummaryView, NodeGroupView, TaintView,
};
use crate::api::http::body::{invalid, json_body, json_object, labels_value, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::{NODEGROUPS, NODEGROUP_ROLL};
use crate::api::http::pagination::{respond_page, ListQuery, ListRules, PageBody};
use crate::api::http::pyliteral::parse_request_literal;
use crate::api::http::retry::{self, Attempt};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{
    check_counts, cluster_accepts_nodegroup_work, invalid_node_label, nodegroup_change_allowed,
    nodegroup_labels, parse_taints, Cluster, NewNodeGroup, NodeGroup, NodeGroupOfCluster, Taint,
    ROLE_MASTER, ROLE_WORKER,
};
use crate::domain::job::JobPayload;
use crate::domain::labels::Labels;
use crate::domain::status::{ClusterStatus, Verb};
use crate::domain::{Ident, NodeGroupId};
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write, NODEGROUP_SORT_KEYS};

/// The routes of a cluster's node groups, relative to the scope `/v1/clusters/{cluster_ident}`
/// [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/nodegroups")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/nodegroups/detail")
            .route(web::get().to(list))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/nodegroups/{nodegroup_ident}")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    );
}

const READ_ONLY: &[&str] = &[
    "project_id",
    "links",
    "node_addresses",
    "stack_id",
    "created_at",
    "updated_at",
];

/// Accepted on create and ignored, as Magnum does (the uuid is always generated, the cluster and
/// project come from the path).
const IGNORED: &[&str] = &[
    "id",
    "uuid",
    "cluster_id",
    "status",
    "status_reason",
    "version",
    "labels_overridden",
    "labels_added",
    "labels_skipped",
];

/// Only `min_node_count`, `max_node_count`, `node_labels` and `node_taints` can change; node
/// counts change through `actions/resize`.
const PATCH_RULES: PatchRules = PatchRules {
    internal: &[
        "/name",
        "/cluster_id",
        "/project_id",
        "/docker_volume_size",
        "/labels",
        "/flavor_id",
        "/image_id",
        "/node_addresses",
        "/node_count",
        "/role",
        "/is_default",
        "/stack_id",
        "/status",
        "/status_reason",
        "/version",
    ],
    non_removable: &[],
    literal: &["/node_labels", "/node_taints"],
};

const LIST_PARAMS: &[&str] = &["marker", "limit", "sort_key", "sort_dir", "role"];

/// Node groups exist from microversion 1.9; below it the routes answer 406 with the empty
/// framework body, as Magnum does.
fn require_version(ctx: &RequestContext) -> Result<(), ApiError> {
    if ctx.version >= NODEGROUPS {
        Ok(())
    } else {
        Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE))
    }
}

/// Magnum's `NodeGroupInvalidInput` (a 409).
fn invalid_input(attr: &str, nodegroup: &str, expl: &str) -> ApiError {
    ApiError::conflict(format!("{attr} for {nodegroup} is invalid ({expl})."))
}

/// Whether the cluster's state takes node group work now (a delete is queued behind work in
/// progress; see [`cluster_accepts_nodegroup_work`]).
fn cluster_accepts(c: &Cluster, delete: bool) -> Result<(), ApiError> {
    if cluster_accepts_nodegroup_work(c.status, delete) {
        Ok(())
    } else {
        Err(ApiError::conflict(format!(
            "Updating a cluster when status is \"{}\" is not supported.",
            c.status
        )))
    }
}

/// Node labels from a request value: an object, or a JSON / Python-literal string of one.
fn node_labels_value(v: &Value) -> Result<Labels, ApiError> {
    match v {
        Value::Null => Ok(Labels::new()),
        other => labels_value("node_labels", other),
    }
}

/// The raw taint list from a request value: an array, or a JSON / Python-literal string of one
/// (a 400 otherwise); each taint is checked by [`parse_taints`] later, naming the group.
fn taint_items(v: &Value) -> Result<Vec<Value>, ApiError> {
    let wrong = || invalid("node_taints", v, "Value should be a list of taints.");
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items.clone()),
        Value::String(s) => match parse_request_literal(s) {
            Ok(Value::Array(items)) => Ok(items),
            _ => Err(wrong()),
        },
        _ => Err(wrong()),
    }
}

/// The 409 checks of node metadata: reserved label keys, malformed taints, and none of either
/// on a master group.
fn check_node_metadata(
    name: &str,
    role: &str,
    node_labels: &Labels,
    taints: &[Value],
) -> Result<Vec<Taint>, ApiError> {
    if role == ROLE_MASTER {
        if !node_labels.is_empty() {
            return Err(invalid_input(
                "node_labels",
                name,
                "node labels and taints cannot be set on a master node group",
            ));
        }
        if !taints.is_empty() {
            return Err(invalid_input(
                "node_taints",
                name,
                "node labels and taints cannot be set on a master node group",
            ));
        }
    }
    if let Some(expl) = node_labels.keys().find_map(|k| invalid_node_label(k)) {
        return Err(invalid_input("node_labels", name, &expl));
    }
    parse_taints(taints).map_err(|expl| invalid_input("node_taints", name, &expl))
}

fn job(state: &AppState, payload: JobPayload, c: &Cluster, driver: &str) -> Write {
    Write::job(state.job(payload, c.uuid, driver))
}

#[tracing::instrument(name = "nodegroups.list", skip_all, fields(project = %ctx.project_id, cluster = %path.as_str()))]
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
        NODEGROUP_SORT_KEYS,
        state.settings.api.max_limit,
        &LIST_RULES,
    )?;
    let page = &query.page;
    let role = query.params.get("role").map(String::as_str);
    let c = lookup::cluster(&state, &ctx, &path, ctx.is_admin).await?;
    ctx.authorize("nodegroup:get_all", &target(&c))?;
    let ngs = state
        .store
        .list_nodegroups(&c.uuid, &ctx.scope(), role, page)
        .await
        .map_err(query.store_error(lookup::nodegroup_not_found))?;
    let mut collection = format!("clusters/{}/nodegroups", c.uuid);
    if query.detail {
        collection.push_str("/detail");
    }
    let last = ngs.last().map(|n| n.uuid.to_string());
    // The role filter carries over to the next page.
    let filter: Vec<(&str, &str)> = role.iter().map(|r| ("role", *r)).collect();
    let n = ngs.len();
    if query.detail {
        let base = app_url(&req);
        let nodegroups = ngs
            .iter()
            .map(|ng| NodeGroupView::new(&base, ng, &c.labels))
            .collect();
        respond_page(
            &DETAIL_PAGE,
            &req,
            &collection,
            page,
            n,
            last,
            &filter,
            |next| NodeGroupDetailCollection { nodegroups, next },
        )
    } else {
        let nodegroups = ngs.iter().map(NodeGroupSummaryView::from).collect();
        respond_page(
            &SUMMARY_PAGE,
            &req,
            &collection,
            page,
            n,
            last,
            &filter,
            |next| NodeGroupCollection { nodegroups, next },
        )
    }
}

/// Both views of a node group list take the same rules.
const LIST_RULES: ListRules = ListRules {
    summary: ["nodegroup:get_all", "nodegroup:get_all_all_projects"],
    detail: ["nodegroup:get_all", "nodegroup:get_all_all_projects"],
};

/// Bodies of node group pages, with and without details.
static DETAIL_PAGE: PageBody = PageBody::new(900);
static SUMMARY_PAGE: PageBody = PageBody::new(300);

#[tracing::instrument(name = "nodegroups.show", skip_all, fields(project = %ctx.project_id, cluster = %path.0, nodegroup = %path.1))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (cluster_ident, ng_ident) = path.into_inner();
    if ctx.is_admin {
        ctx.authorize_own("nodegroup:get_one_all_projects")?;
    }
    // One statement: the cluster (every project for an admin), its owner for the policy check
    // (made before a missing node group's 404, as a lookup in two steps made it) and the
    // node group.
    let read = state
        .store
        .get_nodegroup_of(&ctx.scope(), &Ident::parse(&cluster_ident), &ng_ident)
        .await;
    match read {
        Ok(NodeGroupOfCluster { cluster, nodegroup }) => {
            ctx.authorize(
                "nodegroup:get",
                &owner_target(&cluster.project_id, &cluster.user_id),
            )?;
            Ok(HttpResponse::Ok().json(NodeGroupView::new(
                &app_url(&req),
                &nodegroup,
                &cluster.labels,
            )))
        }
        Err(StoreError::NodeGroupNotFound(cluster)) => {
            ctx.authorize(
                "nodegroup:get",
                &owner_target(&cluster.project_id, &cluster.user_id),
            )?;
            Err(lookup::nodegroup_not_found(&ng_ident))
        }
        Err(e) => Err(lookup::cluster_error(&cluster_ident, e)),
    }
}

/// A node group create body, parsed; taints are checked against the group's role later.
struct NodeGroupCreate {
    name: String,
    node_count: i32,
    min_node_count: i32,
    max_node_count: Option<i32>,
    role: String,
    flavor_id: Option<String>,
    image_id: Option<String>,
    docker_volume_size: Option<i32>,
    labels: Option<Labels>,
    merge_labels: bool,
    node_labels: Labels,
    taints: Vec<Value>,
}

impl TryFrom<Fields> for NodeGroupCreate {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        let raw_taints = f.value("node_taints");
        f.read_only(READ_ONLY)?;
        f.ignore(IGNORED);
        let parsed = NodeGroupCreate {
            name: f.required_string("name", 1, 255)?,
            node_count: f.nodes("node_count", 0)?.unwrap_or(1),
            min_node_count: f.nodes("min_node_count", 0)?.unwrap_or(0),
            max_node_count: f.nodes("max_node_count", 0)?,
            role: f
                .string("role", 1, 255)?
                .unwrap_or_else(|| ROLE_WORKER.into()),
            flavor_id: f.string("flavor_id", 1, 255)?,
            image_id: f.string("image_id", 1, 255)?,
            docker_volume_size: f.int32("docker_volume_size", Some(1), None)?,
            labels: f.labels("labels")?,
            merge_labels: f.bool("merge_labels")?.unwrap_or(false),
            node_labels: f.labels("node_labels")?.unwrap_or_default(),
            taints: Vec::new(),
        };
        // Accepted for compatibility; a created group is never a default one (Magnum honours it
        // and the group becomes undeletable).
        f.bool("is_default")?;
        f.finish()?;
        Ok(NodeGroupCreate {
            taints: taint_items(raw_taints.as_ref().unwrap_or(&Value::Null))?,
            ..parsed
        })
    }
}

#[tracing::instrument(name = "nodegroups.create", skip_all, fields(project = %ctx.project_id, cluster = %path.as_str()))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "nodegroup")?;
    let request: NodeGroupCreate = Fields::new("nodegroup", obj)
        .with_node_limit(state.node_limit())
        .try_into()?;
    ctx.authorize_own("nodegroup:create")?;
    if ctx.is_admin {
        ctx.authorize_own("nodegroup:create_all_projects")?;
    }
    let name = &request.name;
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &path, ctx.is_admin).await?;
        ctx.authorize("nodegroup:create", &target(&c))?;
        if c.api_address.as_deref().unwrap_or("").is_empty() {
            return Err(ApiError::conflict(
                "Cluster API address is not available yet",
            ));
        }
        let existing = state.store.nodegroups_of(&[c.uuid]).await?;
        let node_taints = request.check(&c, &existing)?;
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        let new = request.plan(&c, &template, node_taints);
        let writes = create_writes(&state, &ctx, &c, &new, driver.name());
        match state.store.commit(&writes).await {
            Ok(()) => {
                let ng = lookup::nodegroup(&state, &ctx, &c, &new.uuid.to_string()).await?;
                Ok(Attempt::Done(
                    HttpResponse::Accepted().json(NodeGroupView::new(
                        &app_url(&req),
                        &ng,
                        &c.labels,
                    )),
                ))
            }
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) if e.is_constraint("uniq_nodegroup0cluster_id0name") => Err(duplicate(name, &c)),
            Err(e) => Err(e.into()),
        }
    })
    .await
}

impl NodeGroupCreate {
    /// Whether the group may be added to `c` (which has `existing` groups): a new name, counts
    /// within bounds, not a master group, valid node labels and taints (returned parsed), the
    /// cluster in a state that accepts it.
    fn check(&self, c: &Cluster, existing: &[NodeGroup]) -> Result<Vec<Taint>, ApiError> {
        let name = &self.name;
        if existing.iter().any(|n| n.name == *name) {
            return Err(duplicate(name, c));
        }
        check_counts(
            name,
            self.node_count,
            self.min_node_count,
            self.max_node_count,
        )
        .map_err(ApiError::Conflict)?;
        if self.role == ROLE_MASTER {
            return Err(ApiError::bad_request(
                "Creating master nodegroups is currently not supported.",
            ));
        }
        let node_taints = check_node_metadata(name, &self.role, &self.node_labels, &self.taints)?;
        cluster_accepts(c, false)?;
        Ok(node_taints)
    }

    /// The group to insert, over the cluster's and the template's defaults.
    fn plan(
        &self,
        c: &Cluster,
        template: &crate::domain::template::ClusterTemplate,
        node_taints: Vec<Taint>,
    ) -> NewNodeGroup {
        NewNodeGroup {
            uuid: NodeGroupId::new(),
            name: self.name.clone(),
            project_id: c.project_id.clone(),
            docker_volume_size: self.docker_volume_size,
            labels: nodegroup_labels(self.labels.clone(), &c.labels, self.merge_labels),
            flavor_id: self.flavor_id.clone().or_else(|| c.flavor_id.clone()),
            image_id: self
                .image_id
                .clone()
                .or_else(|| Some(template.spec.image_id.clone())),
            node_count: self.node_count,
            role: self.role.clone(),
            min_node_count: self.min_node_count,
            max_node_count: self.max_node_count,
            is_default: false,
            status: ClusterStatus::CreateInProgress,
            node_labels: self.node_labels.clone(),
            node_taints,
        }
    }
}

/// What a node group create commits: the cluster goes `UPDATE_IN_PROGRESS`, the group is
/// inserted, with its create job and event.
fn create_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    new: &NewNodeGroup,
    driver: &str,
) -> Vec<Write> {
    let mut next = c.clone();
    next.begin(Verb::Update);
    let event = events::nodegroup_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Pending,
        &new.provisional(c.uuid, Utc::now()),
        Some(&initiator(ctx)),
    );
    vec![
        Write::update_cluster(&next),
        Write::InsertNodeGroup {
            cluster_uuid: c.uuid,
            nodegroup: Box::new(new.clone()),
        },
        job(
            state,
            JobPayload::NodegroupCreate {
                nodegroup: new.uuid,
            },
            c,
            driver,
        ),
        Write::event(event),
    ]
}

fn duplicate(name: &str, c: &Cluster) -> ApiError {
    ApiError::conflict(format!(
        "A node group with name {name} already exists in the cluster {}.",
        c.name
    ))
}

/// The PATCH-able document of a node group: only what can change.
fn patch_document(ng: &NodeGroup) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("min_node_count".into(), json!(ng.min_node_count));
    m.insert("max_node_count".into(), json!(ng.max_node_count));
    m.insert("node_labels".into(), json!(ng.node_labels));
    m.insert(
        "node_taints".into(),
        json!(ng
            .node_taints
            .iter()
            .map(TaintView::from)
            .collect::<Vec<_>>()),
    );
    m
}

#[tracing::instrument(name = "nodegroups.update", skip_all, fields(project = %ctx.project_id, cluster = %path.0, nodegroup = %path.1))]
async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (cluster_ident, ng_ident) = path.into_inner();
    // From 1.20 the flavor and image change too, by a rolling replacement.
    let rolls = ctx.version >= NODEGROUP_ROLL;
    let rules = if rolls {
        &nodegroup_roll::PATCH_RULES
    } else {
        &PATCH_RULES
    };
    let ops = patch::parse_patch(json_body(&req, &body)?, rules)?;
    if ctx.is_admin {
        ctx.authorize_own("nodegroup:update_all_projects")?;
    }
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &cluster_ident, ctx.is_admin).await?;
        ctx.authorize("nodegroup:update", &target(&c))?;
        let ng = lookup::nodegroup(&state, &ctx, &c, &ng_ident).await?;
        let mut document = patch_document(&ng);
        if rolls {
            nodegroup_roll::extend_document(&mut document, &ng);
        }
        let mut after = patch::apply(&document, &ops, rules)?;
        let raw_labels = after.remove("node_labels").unwrap_or(Value::Null);
        let raw_taints = after.remove("node_taints").unwrap_or(Value::Null);
        let mut f = Fields::new("nodegroup", after).with_node_limit(state.node_limit());
        let min_node_count = f.nodes("min_node_count", 0)?.unwrap_or(0);
        let max_node_count = f.nodes("max_node_count", 0)?;
        let roll = if rolls {
            Some(RollRequest::parse(&mut f, &ng, &ops)?)
        } else {
            None
        };
        f.finish()?;
        let node_labels = node_labels_value(&raw_labels)?;
        let taints = taint_items(&raw_taints)?;

        let mut next_ng = ng.clone();
        next_ng.min_node_count = min_node_count;
        next_ng.max_node_count = max_node_count;
        check_counts(&ng.name, ng.node_count, min_node_count, max_node_count)
            .map_err(ApiError::Conflict)?;
        next_ng.node_taints = check_node_metadata(&ng.name, &ng.role, &node_labels, &taints)?;
        next_ng.node_labels = node_labels;
        if let Some(roll) = roll.filter(|r| r.named) {
            next_ng.flavor_id = roll.flavor_id.clone();
            next_ng.image_id = roll.image_id.clone();
            return start_roll(&state, &ctx, &req, (&c, &ng), next_ng, &roll).await;
        }
        // The same change again is a no-op, except from UPDATE_FAILED, where it is the way
        // forward: the update runs again (the driver resumes from where it stopped).
        if next_ng == ng && ng.status != ClusterStatus::UpdateFailed {
            return Ok(Attempt::Done(
                HttpResponse::Accepted().json(NodeGroupView::new(&app_url(&req), &ng, &c.labels)),
            ));
        }
        if !nodegroup_change_allowed(ng.status) {
            return Err(ApiError::conflict(format!(
                "Updating a nodegroup when status is \"{}\" is not supported.",
                ng.status
            )));
        }
        cluster_accepts(&c, false)?;
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        next_ng.begin(Verb::Update);
        let mut next = c.clone();
        next.begin(Verb::Update);
        let writes = vec![
            Write::update_cluster(&next),
            Write::update_nodegroup(&next_ng),
            job(
                &state,
                JobPayload::NodegroupUpdate { nodegroup: ng.uuid },
                &c,
                driver.name(),
            ),
            Write::event(events::nodegroup_event(
                &state.settings.default.host,
                Action::Update,
                Outcome::Pending,
                &next_ng,
                Some(&initiator(&ctx)),
            )),
        ];
        match state.store.commit(&writes).await {
            Ok(()) => {
                let stored = lookup::nodegroup(&state, &ctx, &c, &ng.uuid.to_string()).await?;
                Ok(Attempt::Done(HttpResponse::Accepted().json(
                    NodeGroupView::new(&app_url(&req), &stored, &c.labels),
                )))
            }
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) => Err(e.into()),
        }
    })
    .await
}

/// A flavor or image change (or the same one again, after a roll stopped): 202 with the group
/// `UPDATE_IN_PROGRESS` and a `nodegroup.roll` job, or 202 with nothing changed when every
/// machine is already on the group's flavor and image.
async fn start_roll(
    state: &AppState,
    ctx: &RequestContext,
    req: &HttpRequest,
    (c, ng): (&Cluster, &NodeGroup),
    mut next_ng: NodeGroup,
    roll: &RollRequest,
) -> Result<Attempt<HttpResponse>, ApiError> {
    nodegroup_roll::alone(ng, &next_ng)?;
    let machines = state.store.nodegroup_machines(&ng.uuid).await?;
    if !roll.changes(ng) && !nodegroup_roll::machines_left(&next_ng, &machines) {
        return Ok(Attempt::Done(
            HttpResponse::Accepted().json(NodeGroupView::new(&app_url(req), ng, &c.labels)),
        ));
    }
    if !nodegroup_change_allowed(ng.status) || ng.status == ClusterStatus::UpdateInProgress {
        return Err(ApiError::conflict(format!(
            "Updating a nodegroup when status is \"{}\" is not supported.",
            ng.status
        )));
    }
    cluster_accepts(c, false)?;
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    // A driver rolling the group as a whole replaces no machine alone.
    if let Some(m) = machines.first().filter(|_| !driver.rolls_whole_group(ng)) {
        driver
            .check_machine_action(m, crate::drivers::MachineAction::Replace)
            .map_err(ApiError::bad_request)?;
    }
    next_ng.begin(Verb::Update);
    let mut next = c.clone();
    next.begin(Verb::Update);
    let payload = JobPayload::NodegroupRoll {
        nodegroup: ng.uuid,
        max_batch_size: roll.max_batch_size,
        kubelet: None,
    };
    // Each claim of a roll's job is a step of the roll, not a refused attempt: `[conductor]
    // max_attempts` does not bound it (a refusal is bounded by `operation_timeout`).
    let mut roll_job = state.job(payload, c.uuid, driver.name());
    roll_job.max_attempts = 0;
    let writes = vec![
        Write::update_cluster(&next),
        Write::update_nodegroup(&next_ng),
        Write::job(roll_job),
        Write::event(events::nodegroup_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Pending,
            &next_ng,
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => {
            let stored = lookup::nodegroup(state, ctx, c, &ng.uuid.to_string()).await?;
            Ok(Attempt::Done(HttpResponse::Accepted().json(
                NodeGroupView::new(&app_url(req), &stored, &c.labels),
            )))
        }
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}

#[tracing::instrument(name = "nodegroups.delete", skip_all, fields(project = %ctx.project_id, cluster = %path.0, nodegroup = %path.1))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    let force = force_requested(&req, &ctx)?;
    let (cluster_ident, ng_ident) = path.into_inner();
    if ctx.is_admin {
        ctx.authorize_own("nodegroup:delete_all_projects")?;
    }
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &cluster_ident, ctx.is_admin).await?;
        ctx.authorize("nodegroup:delete", &target(&c))?;
        if force {
            ctx.authorize(nodegroup_delete::RULE, &target(&c))?;
        }
        let ng = lookup::nodegroup(&state, &ctx, &c, &ng_ident).await?;
        if ng.is_default {
            return Err(ApiError::bad_request(
                "Deleting a default nodegroup is not supported.",
            ));
        }
        if force {
            cluster_accepts(&c, true)?;
            return Ok(
                match nodegroup_delete::forced_attempt(&state, &ctx, &c, &ng).await? {
                    Attempt::Done(()) => Attempt::Done(HttpResponse::NoContent().finish()),
                    Attempt::Retry => Attempt::Retry,
                },
            );
        }
        if ng.status == ClusterStatus::DeleteInProgress {
            return Ok(Attempt::Done(HttpResponse::NoContent().finish()));
        }
        cluster_accepts(&c, true)?;
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        let mut next_ng = ng.clone();
        next_ng.begin(Verb::Delete);
        let mut next = c.clone();
        next.begin(Verb::Update);
        let writes = vec![
            Write::update_cluster(&next),
            Write::update_nodegroup(&next_ng),
            job(
                &state,
                JobPayload::NodegroupDelete {
                    nodegroup: ng.uuid,
                    forced: None,
                },
                &c,
                driver.name(),
            ),
            Write::event(events::nodegroup_event(
                &state.settings.default.host,
                Action::Delete,
                Outcome::Pending,
                &next_ng,
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
