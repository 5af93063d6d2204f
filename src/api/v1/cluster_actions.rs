//! The actions of one cluster: `POST /v1/clusters/{cluster_ident}/actions/resize` (a node
//! group to a node count, microversion 1.7), `.../actions/upgrade` (the cluster or one node
//! group to another template, 1.8) and `.../actions/retry` (a failed create again, in place,
//! 1.16). [`super::clusters`] mounts their routes.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::lookup::{self, cluster_target as target, driver_for, nodegroups_of, template_of};
use crate::api::http::body::{invalid, json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::microversion::{
    CLUSTER_RESIZE, CLUSTER_RETRY, CLUSTER_UPGRADE, ZERO_NODE_COUNT,
};
use crate::api::http::retry::{self};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::job::JobPayload;
use crate::domain::machine::{count, version};
use crate::domain::status::{ClusterStatus, Verb};
use crate::domain::template::ClusterTemplate;
use crate::domain::MachineId;
use crate::notify::events::{self, Action, Outcome};
use crate::store::Write;

/// A resize body, parsed.
struct ClusterResize {
    node_count: i32,
    nodes_to_remove: Vec<String>,
    nodegroup: Option<String>,
}

impl TryFrom<Fields> for ClusterResize {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        let parsed = ClusterResize {
            node_count: f
                .nodes("node_count", 0)?
                .ok_or_else(|| invalid("node_count", &Value::Null, "Mandatory field missing."))?,
            nodes_to_remove: f.string_list("nodes_to_remove")?.unwrap_or_default(),
            nodegroup: f.string("nodegroup", 1, 255)?,
        };
        f.finish()?;
        Ok(parsed)
    }
}

/// An upgrade body, parsed.
struct ClusterUpgrade {
    template_ident: String,
    max_batch_size: i32,
    nodegroup: Option<String>,
}

impl TryFrom<Fields> for ClusterUpgrade {
    type Error = ApiError;

    fn try_from(mut f: Fields) -> Result<Self, ApiError> {
        let parsed = ClusterUpgrade {
            template_ident: f.required_string("cluster_template", 1, 255)?,
            max_batch_size: f.int32("max_batch_size", Some(1), None)?.unwrap_or(1),
            nodegroup: f.string("nodegroup", 1, 255)?,
        };
        f.finish()?;
        Ok(parsed)
    }
}

/// Finds the node group an action names (uuid, name or integer id), else the default worker.
fn pick_nodegroup<'a>(
    ngs: &'a [NodeGroup],
    ident: Option<&str>,
) -> Result<&'a NodeGroup, ApiError> {
    match ident {
        None => ngs
            .iter()
            .find(|n| n.is_default && !n.is_master())
            .ok_or_else(|| ApiError::not_found("The cluster has no default worker node group.")),
        Some(id) => {
            let as_uuid =
                crate::domain::ids::parse_uuid_like(id).map(|u| u.hyphenated().to_string());
            ngs.iter()
                .find(|n| Some(n.uuid.to_string()) == as_uuid)
                .or_else(|| ngs.iter().find(|n| n.name == id))
                .or_else(|| ngs.iter().find(|n| n.id.to_string() == id))
                .ok_or_else(|| ApiError::not_found(format!("Nodegroup {id} could not be found.")))
        }
    }
}

#[tracing::instrument(name = "clusters.resize", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
pub(super) async fn resize(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    if ctx.version < CLUSTER_RESIZE {
        return Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE));
    }
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "resize")?;
    let ClusterResize {
        node_count,
        nodes_to_remove,
        nodegroup,
    } = Fields::new("resize", obj)
        .with_node_limit(state.node_limit())
        .try_into()?;
    if nodes_to_remove.len() > state.node_limit() as usize {
        return Err(ApiError::bad_request(format!(
            "A resize may name at most {} nodes_to_remove.",
            state.node_limit()
        )));
    }
    if node_count == 0 && ctx.version < ZERO_NODE_COUNT {
        return Err(zero_not_supported());
    }
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &path, false).await?;
        ctx.authorize("cluster:resize", &target(&c))?;
        let ngs = nodegroups_of(&state, &c).await?;
        let ng = pick_nodegroup(&ngs, nodegroup.as_deref())?.clone();
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        check_resize(&c, &ng, node_count, driver.as_ref())?;
        let remove = if nodes_to_remove.is_empty() {
            Vec::new()
        } else {
            let machines = state.store.nodegroup_machines(&ng.uuid).await?;
            count::resolve(&machines, &nodes_to_remove, &ng.name).map_err(ApiError::BadRequest)?
        };
        let change = NodeCountChange {
            nodegroup: &ng,
            node_count,
            nodes_to_remove: nodes_to_remove.clone(),
            remove,
        };
        let writes = resize_writes(&state, &ctx, &c, &ngs, change, driver.name());
        super::commit_accepted(&state, &writes, c.uuid).await
    })
    .await
}

/// A node group's new count, with the machines that go first (resolved) and the names the
/// driver gets for them.
pub(crate) struct NodeCountChange<'a> {
    pub nodegroup: &'a NodeGroup,
    pub node_count: i32,
    pub nodes_to_remove: Vec<String>,
    pub remove: Vec<MachineId>,
}

/// What a resize commits: the cluster and node group in `UPDATE_IN_PROGRESS` with the new
/// count, the named machines marked first (the count then takes these, not the newest), the
/// resize job and the pending update notification. A machine's delete commits the same.
pub(crate) fn resize_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    ngs: &[NodeGroup],
    change: NodeCountChange<'_>,
    driver: &str,
) -> Vec<Write> {
    let ng = change.nodegroup;
    let mut next = c.clone();
    next.begin(Verb::Update);
    let mut ng_next = ng.clone();
    ng_next.node_count = change.node_count;
    ng_next.begin(Verb::Update);
    let job = state.job(
        JobPayload::ClusterResize {
            nodegroup: ng.uuid,
            old_node_count: ng.node_count,
            node_count: change.node_count,
            nodes_to_remove: change.nodes_to_remove,
        },
        c.uuid,
        driver,
    );
    let event_ngs: Vec<NodeGroup> = ngs
        .iter()
        .map(|n| {
            if n.id == ng.id {
                ng_next.clone()
            } else {
                n.clone()
            }
        })
        .collect();
    vec![
        Write::update_cluster(&next),
        Write::RemoveMachines {
            nodegroup: ng.uuid,
            machines: change.remove,
        },
        Write::update_nodegroup(&ng_next),
        Write::job(job),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Pending,
            &next,
            &event_ngs,
            Some(&initiator(ctx)),
        )),
    ]
}

/// Whether node group `ng` of `c` may go to `node_count` now: a master group only where the
/// driver resizes masters (to a size it accepts), a worker group within its bounds, the
/// cluster complete or in (or after) an update.
pub(crate) fn check_resize(
    c: &Cluster,
    ng: &NodeGroup,
    node_count: i32,
    driver: &dyn crate::drivers::Driver,
) -> Result<(), ApiError> {
    if ng.is_master() {
        if !driver.capabilities().master_resize {
            return Err(ApiError::bad_request(
                "Resizing the master nodegroup is not supported by this driver.",
            ));
        }
        driver
            .validate_master_size(node_count)
            .map_err(ApiError::BadRequest)?;
    } else if node_count < ng.min_node_count || ng.max_node_count.is_some_and(|m| node_count > m) {
        return Err(ApiError::bad_request(format!(
            "Resizing {} outside the allowed range: min_node_count = {}, max_node_count = {}",
            ng.name,
            ng.min_node_count,
            ng.max_node_count
                .map(|m| m.to_string())
                .unwrap_or_else(|| "None".into())
        )));
    }
    let resizable = c.status.is_complete_like()
        || matches!(
            c.status,
            ClusterStatus::UpdateFailed | ClusterStatus::UpdateInProgress
        );
    if !resizable {
        return Err(not_in_state("Resizing", c));
    }
    Ok(())
}

#[tracing::instrument(name = "clusters.upgrade", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
pub(super) async fn upgrade(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    if ctx.version < CLUSTER_RESIZE {
        return Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE));
    }
    if ctx.version < CLUSTER_UPGRADE {
        return Err(ApiError::bad_request(
            "Cluster upgrade is not supported in the provided microversion.",
        ));
    }
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "upgrade")?;
    let request: ClusterUpgrade = Fields::new("upgrade", obj).try_into()?;
    if ctx.is_admin {
        ctx.authorize_own("cluster:upgrade_all_projects")?;
    }
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &path, true).await?;
        ctx.authorize("cluster:upgrade", &target(&c))?;
        let new_template = lookup::template(&state, &ctx, &request.template_ident).await?;
        let ngs = nodegroups_of(&state, &c).await?;
        let ng = pick_nodegroup(&ngs, request.nodegroup.as_deref())?;
        if !ng.is_default && new_template.uuid != c.cluster_template_id {
            return Err(ApiError::conflict(format!(
                "Cluster Template is not valid for upgrade: Nodegroup {} can be upgraded only to match cluster's template ({}).",
                ng.name, c.cluster_template_id
            )));
        }
        if !c.status.accepts_update() {
            return Err(ApiError::bad_request(format!(
                "Upgrading a cluster when status is \"{}\" is not supported.",
                c.status
            )));
        }
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        if !driver.capabilities().upgrade {
            return Err(ApiError::bad_request(
                "Cluster upgrade is not supported by this driver.",
            ));
        }
        let all = request.nodegroup.is_none();
        version::check_cluster_upgrade(
            &c,
            &ngs,
            |n| all || n.id == ng.id,
            &template,
            &new_template,
        )
        .map_err(|e| ApiError::conflict(e.to_string()))?;
        let plan = UpgradePlan {
            cluster: &c,
            nodegroups: &ngs,
            target: ng,
            template: &new_template,
            request: &request,
        };
        let writes = plan.writes(&state, &ctx, driver.name());
        super::commit_accepted(&state, &writes, c.uuid).await
    })
    .await
}

/// An accepted upgrade of a cluster (or of one node group) to a template.
struct UpgradePlan<'a> {
    cluster: &'a Cluster,
    nodegroups: &'a [NodeGroup],
    /// The node group named by the request (the default worker group when none is named).
    target: &'a NodeGroup,
    template: &'a ClusterTemplate,
    request: &'a ClusterUpgrade,
}

impl UpgradePlan<'_> {
    /// The cluster (its template when a default group is upgraded) and the upgraded node
    /// groups go `UPDATE_IN_PROGRESS` with the new image, with the upgrade job and its event.
    fn writes(&self, state: &AppState, ctx: &RequestContext, driver: &str) -> Vec<Write> {
        let (c, ng, new_template) = (self.cluster, self.target, self.template);
        let mut next = c.clone();
        next.begin(Verb::Update);
        if ng.is_default {
            next.cluster_template_id = new_template.uuid;
        }
        let all = self.request.nodegroup.is_none();
        let targets: Vec<NodeGroup> = self
            .nodegroups
            .iter()
            .map(|n| {
                let mut n = n.clone();
                if all || n.id == ng.id {
                    n.begin(Verb::Update);
                    n.image_id = Some(new_template.spec.image_id.clone());
                }
                n
            })
            .collect();
        let job = state.job(
            JobPayload::ClusterUpgrade {
                old_template: c.cluster_template_id,
                template: new_template.uuid,
                max_batch_size: self.request.max_batch_size,
                nodegroup: self.request.nodegroup.as_ref().map(|_| ng.uuid),
            },
            c.uuid,
            driver,
        );
        let mut writes = vec![Write::update_cluster(&next)];
        for n in targets
            .iter()
            .filter(|n| self.nodegroups.iter().find(|o| o.id == n.id) != Some(*n))
        {
            writes.push(Write::update_nodegroup(n));
        }
        writes.push(Write::job(job));
        writes.push(Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Pending,
            &next,
            &targets,
            Some(&initiator(ctx)),
        )));
        writes
    }
}

/// Magnum's 409 for an action (or an update) the cluster's status does not allow.
pub(super) fn not_in_state(action: &str, c: &Cluster) -> ApiError {
    ApiError::conflict(format!(
        "{action} a cluster when status is \"{}\" is not supported.",
        c.status
    ))
}

/// Magnum's 400 for a node count of zero before microversion 1.10.
pub(super) fn zero_not_supported() -> ApiError {
    ApiError::bad_request(
        "Resizing a nodegroup to zero is not supported in the provided microversion.",
    )
}

/// `POST /v1/clusters/{cluster_ident}/actions/retry` (microversion 1.16; no body, or an empty
/// object): a `CREATE_FAILED` cluster is created again in place. It goes `CREATE_IN_PROGRESS`
/// with its failed node groups, the last reason cleared, with a new create job (a fresh
/// `create_timeout` deadline) and its pending notification, in one commit; the driver's create
/// is idempotent, so what the failed attempt made is found, not made twice. Any other status is
/// a 409 that says what the way forward from it is.
#[tracing::instrument(name = "clusters.retry", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
pub(super) async fn retry_create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    if ctx.version < CLUSTER_RETRY {
        return Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE));
    }
    query_params(&req, &[])?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let obj = json_object(&req, &body, "retry")?;
        Fields::new("retry", obj).finish()?;
    }
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &path, true).await?;
        ctx.authorize("cluster:retry", &target(&c))?;
        if c.status != ClusterStatus::CreateFailed {
            let forward = c
                .status
                .way_forward()
                .map(|w| format!(": {w}"))
                .unwrap_or_default();
            return Err(ApiError::conflict(format!(
                "Retrying a cluster when status is \"{}\" is not supported; only a cluster whose create failed (CREATE_FAILED) is retried{forward}.",
                c.status
            )));
        }
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        let ngs = nodegroups_of(&state, &c).await?;
        let writes = retry_writes(&state, &ctx, &c, &ngs, driver.name());
        super::commit_accepted(&state, &writes, c.uuid).await
    })
    .await
}

/// A retried create: the cluster and its failed node groups `CREATE_IN_PROGRESS`, the create
/// job with a fresh deadline, and the pending create notification.
fn retry_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    ngs: &[NodeGroup],
    driver: &str,
) -> Vec<Write> {
    let now = chrono::Utc::now();
    let mut next = c.clone();
    next.begin(Verb::Create);
    let mut next_ngs = ngs.to_vec();
    let mut writes = vec![Write::update_cluster(&next)];
    for ng in next_ngs.iter_mut() {
        if ng.status == ClusterStatus::CreateFailed {
            ng.begin(Verb::Create);
            writes.push(Write::update_nodegroup(ng));
        }
    }
    let mut job = state.job(JobPayload::ClusterCreate {}, c.uuid, driver);
    let minutes = c.create_timeout.unwrap_or(0);
    if minutes > 0 {
        job.deadline_at = Some(now + chrono::Duration::minutes(i64::from(minutes)));
    }
    writes.push(Write::job(job));
    writes.push(Write::event(events::cluster_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Pending,
        &next,
        &next_ngs,
        Some(&initiator(ctx)),
    )));
    writes
}
