//! `/v1/clusters`: create, list, detail, show, PATCH, delete, and the resize and upgrade
//! actions. Every accepted change commits the row, its job and its notification in one
//! transaction before answering 202; requests the cluster's state makes impossible are refused
//! at once.

use std::collections::BTreeMap;

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::Utc;
use serde_json::{json, Map, Value};

use super::body::{invalid, json_body, json_object, parse_bool, query_params, Fields};
use super::error::ApiError;
use super::links::resource_links;
use super::pagination::{collection_body, page_request, PAGE_PARAMS};
use super::patch::{self, PatchRules};
use super::{initiator, timestamp};
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{
    check_counts, default_nodegroups, effective_labels, invalid_cluster_name, label_diff, Cluster,
    NewCluster, NodeGroup,
};
use crate::domain::job::{NewJob, Operation};
use crate::domain::labels::Labels;
use crate::domain::status::{ClusterStatus, HealthStatus};
use crate::domain::template::ClusterTemplate;
use crate::domain::{names, Ident, ResourceId};
use crate::drivers::Driver;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write, CLUSTER_SORT_KEYS};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/clusters")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/clusters/detail")
            .route(web::get().to(list))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/clusters/{ident}/actions/resize")
            .route(web::post().to(resize))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/clusters/{ident}/actions/upgrade")
            .route(web::post().to(upgrade))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/clusters/{ident}")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
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

/// Node counts and addresses of a cluster, summed over its node groups.
struct Counts {
    node_count: i32,
    master_count: i32,
    node_addresses: Vec<String>,
    master_addresses: Vec<String>,
}

fn counts(ngs: &[&NodeGroup]) -> Counts {
    let mut c = Counts {
        node_count: 0,
        master_count: 0,
        node_addresses: vec![],
        master_addresses: vec![],
    };
    for ng in ngs {
        if ng.is_master() {
            c.master_count += ng.node_count;
            c.master_addresses.extend(ng.node_addresses.iter().cloned());
        } else {
            c.node_count += ng.node_count;
            c.node_addresses.extend(ng.node_addresses.iter().cloned());
        }
    }
    c
}

fn status_str<T: std::fmt::Display>(v: Option<T>) -> Value {
    v.map(|s| Value::String(s.to_string()))
        .unwrap_or(Value::Null)
}

/// The summary representation (`GET /v1/clusters`).
fn summary(req: &HttpRequest, ctx: &RequestContext, c: &Cluster, ngs: &[&NodeGroup]) -> Value {
    let n = counts(ngs);
    let uuid = c.uuid.to_string();
    let mut v = json!({
        "uuid": uuid,
        "name": c.name,
        "cluster_template_id": c.cluster_template_id.to_string(),
        "keypair": c.keypair,
        "docker_volume_size": c.docker_volume_size,
        "labels": c.labels,
        "node_count": n.node_count,
        "master_count": n.master_count,
        "status": c.status.as_str(),
        "health_status": status_str(c.health_status),
        "master_flavor_id": c.master_flavor_id,
        "flavor_id": c.flavor_id,
        "create_timeout": c.create_timeout,
        "merge_labels": false,
        "links": resource_links(req, "clusters", &uuid),
    });
    let handle_key = if ctx.at_least(1, 13) {
        "cluster_id"
    } else {
        "stack_id"
    };
    v[handle_key] = json!(c.stack_id);
    if ctx.is_admin {
        v["project_id"] = json!(c.project_id);
    }
    v
}

/// The full representation (`GET /v1/clusters/{c}` and `/detail`).
fn full(
    req: &HttpRequest,
    ctx: &RequestContext,
    c: &Cluster,
    ngs: &[&NodeGroup],
    template: Option<&ClusterTemplate>,
) -> Value {
    let mut v = summary(req, ctx, c, ngs);
    let n = counts(ngs);
    let empty = Labels::new();
    let parent = template.map(|t| &t.spec.labels).unwrap_or(&empty);
    let (overridden, added, skipped) = label_diff(&c.labels, parent);
    let extra = json!({
        "node_addresses": n.node_addresses,
        "master_addresses": n.master_addresses,
        "labels_overridden": overridden,
        "labels_added": added,
        "labels_skipped": skipped,
        "fixed_network": c.fixed_network,
        "fixed_subnet": c.fixed_subnet,
        "floating_ip_enabled": c.floating_ip_enabled,
        "master_lb_enabled": c.master_lb_enabled,
        "status_reason": c.status_reason,
        "health_status_reason": c.health_status_reason,
        "discovery_url": c.discovery_url,
        "api_address": c.api_address,
        "coe_version": c.coe_version,
        "container_version": c.container_version,
        "project_id": c.project_id,
        "user_id": c.user_id,
        "created_at": timestamp(c.created_at),
        "updated_at": c.updated_at.map(timestamp),
    });
    if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), extra) {
        obj.extend(more);
    }
    if c.status.is_failed() {
        let faults: BTreeMap<String, String> = ngs
            .iter()
            .filter(|ng| ng.status.is_failed())
            .map(|ng| {
                (
                    ng.name.clone(),
                    ng.status_reason.clone().unwrap_or_default(),
                )
            })
            .collect();
        v["faults"] = json!(faults);
    }
    v
}

fn target(c: &Cluster) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("project_id".into(), json!(c.project_id));
    m.insert("user_id".into(), json!(c.user_id));
    m
}

/// Finds a cluster the caller can see (admins: every project), with Magnum's sentences.
pub async fn lookup(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
    all_projects: bool,
) -> Result<Cluster, ApiError> {
    let scope = if all_projects {
        ctx.scope()
    } else {
        ctx.project_scope()
    };
    match state.store.get_cluster(&scope, &Ident::parse(ident)).await {
        Ok(c) => Ok(c),
        Err(StoreError::NotFound) => Err(ApiError::not_found(format!(
            "Cluster {ident} could not be found."
        ))),
        Err(StoreError::Ambiguous) => Err(ApiError::conflict(
            "Multiple clusters exist with same name. Please use the cluster uuid instead.",
        )),
        Err(e) => Err(e.into()),
    }
}

async fn nodegroups(state: &AppState, c: &Cluster) -> Result<Vec<NodeGroup>, ApiError> {
    Ok(state.store.nodegroups_of(&[c.uuid.to_string()]).await?)
}

async fn template_of(state: &AppState, c: &Cluster) -> Result<ClusterTemplate, ApiError> {
    state
        .store
        .templates_by_uuid(&[c.cluster_template_id.to_string()])
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("cluster {} has no template", c.uuid)))
}

/// The driver of a template, refusing one this service cannot use.
pub fn driver_for(
    state: &AppState,
    t: &ClusterTemplate,
) -> Result<std::sync::Arc<dyn Driver>, ApiError> {
    let name = t
        .spec
        .driver
        .clone()
        .unwrap_or_else(|| state.settings.drivers.default_driver.clone());
    state
        .drivers
        .get(&name)
        .ok_or_else(|| ApiError::bad_request(format!("Cluster driver ({name}) not supported.")))
}

fn not_in_state(action: &str, c: &Cluster) -> ApiError {
    ApiError::conflict(format!(
        "{action} a cluster when status is \"{}\" is not supported.",
        c.status
    ))
}

fn zero_not_supported() -> ApiError {
    ApiError::bad_request(
        "Resizing a nodegroup to zero is not supported in the provided microversion.",
    )
}

async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "cluster")?;
    let mut f = Fields::new("cluster", obj);
    f.read_only(READ_ONLY)?;
    f.ignore(IGNORED);
    let template_ident = f.required_string("cluster_template_id", 1, 255)?;
    let name = match f.string("name", 1, 242)? {
        Some(n) => {
            if let Some(reason) = invalid_cluster_name(&n) {
                return Err(invalid("name", &json!(n), reason));
            }
            n
        }
        None => names::generate("cluster"),
    };
    let keypair = f.string("keypair", 1, 255)?;
    let node_count = f.int32("node_count", Some(0), None)?.unwrap_or(1);
    let master_count = f.int32("master_count", Some(1), None)?.unwrap_or(1);
    let docker_volume_size = f.int32("docker_volume_size", Some(1), None)?;
    let labels = f.labels("labels")?;
    let merge_labels = f.bool("merge_labels")?.unwrap_or(false);
    let master_flavor_id = f.string("master_flavor_id", 1, 255)?;
    let flavor_id = f.string("flavor_id", 1, 255)?;
    let fixed_network = f.string("fixed_network", 1, 255)?;
    let fixed_subnet = f.string("fixed_subnet", 1, 255)?;
    let floating_ip_enabled = f.bool("floating_ip_enabled")?;
    let master_lb_enabled = f.bool("master_lb_enabled")?;
    let create_timeout = f.int32("create_timeout", Some(0), None)?.unwrap_or(60);
    let discovery_url = f.string("discovery_url", 0, 255)?;
    f.finish()?;
    if node_count == 0 && !ctx.at_least(1, 10) {
        return Err(zero_not_supported());
    }

    let template = match super::cluster_templates::lookup(&state, &ctx, &template_ident).await {
        Ok(t) => t,
        Err(ApiError::NotFound(msg)) if !ctx.at_least(1, 10) => {
            return Err(ApiError::BadRequest(msg))
        }
        Err(e) => return Err(e),
    };
    let driver = driver_for(&state, &template)?;
    let docker_volume_size = docker_volume_size.or(template.spec.docker_volume_size);
    if template.spec.docker_storage_driver.as_deref() == Some("devicemapper")
        && docker_volume_size.unwrap_or(0) < 3
    {
        return Err(ApiError::bad_request(
            "Docker volume size must be at least 3 GB when docker_storage_driver is devicemapper.",
        ));
    }
    driver
        .validate_master_size(master_count)
        .map_err(ApiError::BadRequest)?;
    let master_lb_enabled = master_lb_enabled.unwrap_or(template.spec.master_lb_enabled);
    if master_count > 1 && !master_lb_enabled {
        return Err(ApiError::bad_request(
            "master_count must be 1 when master_lb_enabled is False",
        ));
    }
    ctx.authorize_own("cluster:create")?;
    if template.spec.hidden && !ctx.is_admin {
        return Err(ApiError::forbidden("Not authorized."));
    }

    let labels = effective_labels(labels, &template.spec.labels, merge_labels);
    let master_flavor_id = master_flavor_id.or_else(|| template.spec.master_flavor_id.clone());
    let flavor_id = flavor_id.or_else(|| template.spec.flavor_id.clone());
    let nodegroups = default_nodegroups(
        &ctx.project_id,
        &labels,
        &template.spec.image_id,
        master_flavor_id.clone(),
        flavor_id.clone(),
        docker_volume_size,
        master_count,
        node_count,
    );
    let uuid = ResourceId::new();
    let new = NewCluster {
        uuid,
        project_id: ctx.project_id.clone(),
        user_id: ctx.user_id.clone(),
        name,
        cluster_template_id: template.uuid,
        keypair: keypair.or_else(|| template.spec.keypair_id.clone()),
        docker_volume_size,
        labels,
        master_flavor_id,
        flavor_id,
        create_timeout,
        discovery_url,
        fixed_network: fixed_network.or_else(|| template.spec.fixed_network.clone()),
        fixed_subnet: fixed_subnet.or_else(|| template.spec.fixed_subnet.clone()),
        floating_ip_enabled: floating_ip_enabled.unwrap_or(template.spec.floating_ip_enabled),
        master_lb_enabled,
        nodegroups,
    };
    // The event carries the row as it will be stored.
    let now = Utc::now();
    let provisional = provisional_cluster(&new, now);
    let provisional_ngs: Vec<NodeGroup> = new
        .nodegroups
        .iter()
        .map(|n| provisional_nodegroup(n, uuid, now))
        .collect();
    let event = events::cluster_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Pending,
        &provisional,
        &provisional_ngs,
        Some(&initiator(&ctx)),
    );
    let mut job = NewJob::new(
        Operation::ClusterCreate,
        uuid.to_string(),
        driver.name(),
        json!({}),
    );
    if create_timeout > 0 {
        job.deadline_at = Some(now + chrono::Duration::minutes(i64::from(create_timeout)));
    }
    job.max_attempts = state.settings.conductor.max_attempts;
    let writes = vec![
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
    ];
    match state.store.commit(&writes).await {
        Ok(()) => Ok(HttpResponse::Accepted().json(json!({"uuid": uuid.to_string()}))),
        Err(StoreError::Stale) => Err(ApiError::conflict(format!(
            "ClusterTemplate {} changed while the cluster was being created. Please retry the request.",
            template.uuid
        ))),
        Err(StoreError::LimitExceeded { limit }) => Err(ApiError::forbidden(format!(
            "Resource limit exceeded: You have reached the maximum clusters per project, {limit}. Ask an administrator to raise the quota or delete clusters you no longer need."
        ))),
        Err(e) if e.is_constraint("uniq_cluster0project_id0name") => Err(ApiError::conflict(format!(
            "A cluster with name {} already exists in this project.",
            new.name
        ))),
        Err(e) => Err(e.into()),
    }
}

fn provisional_cluster(n: &NewCluster, now: chrono::DateTime<Utc>) -> Cluster {
    Cluster {
        id: 0,
        uuid: n.uuid,
        project_id: n.project_id.clone(),
        user_id: n.user_id.clone(),
        name: n.name.clone(),
        cluster_template_id: n.cluster_template_id,
        keypair: n.keypair.clone(),
        docker_volume_size: n.docker_volume_size,
        labels: n.labels.clone(),
        master_flavor_id: n.master_flavor_id.clone(),
        flavor_id: n.flavor_id.clone(),
        stack_id: None,
        api_address: None,
        status: ClusterStatus::CreateInProgress,
        status_reason: None,
        health_status: None,
        health_status_reason: BTreeMap::new(),
        create_timeout: Some(n.create_timeout),
        discovery_url: n.discovery_url.clone(),
        coe_version: None,
        container_version: None,
        fixed_network: n.fixed_network.clone(),
        fixed_subnet: n.fixed_subnet.clone(),
        floating_ip_enabled: n.floating_ip_enabled,
        master_lb_enabled: n.master_lb_enabled,
        version: 0,
        created_at: now,
        updated_at: None,
    }
}

pub(crate) fn provisional_nodegroup(
    n: &crate::domain::cluster::NewNodeGroup,
    cluster: ResourceId,
    now: chrono::DateTime<Utc>,
) -> NodeGroup {
    NodeGroup {
        id: 0,
        uuid: n.uuid,
        name: n.name.clone(),
        cluster_id: cluster,
        project_id: n.project_id.clone(),
        docker_volume_size: n.docker_volume_size,
        labels: n.labels.clone(),
        flavor_id: n.flavor_id.clone(),
        image_id: n.image_id.clone(),
        node_addresses: vec![],
        node_count: n.node_count,
        role: n.role.clone(),
        min_node_count: n.min_node_count,
        max_node_count: n.max_node_count,
        is_default: n.is_default,
        stack_id: None,
        status: n.status,
        status_reason: None,
        version: None,
        node_labels: n.node_labels.clone(),
        node_taints: n.node_taints.clone(),
        created_at: now,
        updated_at: None,
    }
}

async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let detail = req.path().trim_end_matches('/').ends_with("/detail");
    let params = query_params(&req, PAGE_PARAMS)?;
    let page = page_request(&params, CLUSTER_SORT_KEYS, state.settings.api.max_limit)?;
    let (rule, all_rule) = if detail {
        ("cluster:detail", "cluster:detail_all_projects")
    } else {
        ("cluster:get_all", "cluster:get_all_all_projects")
    };
    ctx.authorize_own(rule)?;
    if ctx.is_admin {
        ctx.authorize_own(all_rule)?;
    }
    let clusters = match state.store.list_clusters(&ctx.scope(), &page).await {
        Ok(c) => c,
        Err(StoreError::NotFound) => {
            return Err(ApiError::not_found(format!(
                "Cluster {} could not be found.",
                page.marker.map(|m| m.to_string()).unwrap_or_default()
            )))
        }
        Err(e) => return Err(e.into()),
    };
    // A fixed number of queries whatever the page size: the page, its node groups, and (for
    // the detail view) its templates.
    let uuids: Vec<String> = clusters.iter().map(|c| c.uuid.to_string()).collect();
    let ngs = state.store.nodegroups_of(&uuids).await?;
    let mut by_cluster: BTreeMap<String, Vec<&NodeGroup>> = BTreeMap::new();
    for ng in &ngs {
        by_cluster
            .entry(ng.cluster_id.to_string())
            .or_default()
            .push(ng);
    }
    let templates: BTreeMap<String, ClusterTemplate> = if detail {
        let mut ids: Vec<String> = clusters
            .iter()
            .map(|c| c.cluster_template_id.to_string())
            .collect();
        ids.sort();
        ids.dedup();
        state
            .store
            .templates_by_uuid(&ids)
            .await?
            .into_iter()
            .map(|t| (t.uuid.to_string(), t))
            .collect()
    } else {
        BTreeMap::new()
    };
    let empty = Vec::new();
    let items: Vec<Value> = clusters
        .iter()
        .map(|c| {
            let groups = by_cluster.get(&c.uuid.to_string()).unwrap_or(&empty);
            if detail {
                full(
                    &req,
                    &ctx,
                    c,
                    groups,
                    templates.get(&c.cluster_template_id.to_string()),
                )
            } else {
                summary(&req, &ctx, c, groups)
            }
        })
        .collect();
    let path = if detail {
        "clusters/detail"
    } else {
        "clusters"
    };
    let last = clusters.last().map(|c| c.uuid.to_string());
    let body = collection_body(&req, "clusters", path, &page, items, last, &[]);
    Ok(HttpResponse::Ok().json(body))
}

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
    let c = lookup(&state, &ctx, &path, true).await?;
    ctx.authorize("cluster:get", &target(&c))?;
    let ngs = nodegroups(&state, &c).await?;
    let t = template_of(&state, &c).await?;
    let refs: Vec<&NodeGroup> = ngs.iter().collect();
    Ok(HttpResponse::Ok().json(full(&req, &ctx, &c, &refs, Some(&t))))
}

/// The PATCH-able document of a cluster.
fn patch_document(
    c: &Cluster,
    worker: Option<&NodeGroup>,
    ngs: &[NodeGroup],
) -> Map<String, Value> {
    let refs: Vec<&NodeGroup> = ngs.iter().collect();
    let n = counts(&refs);
    let v = json!({
        "name": c.name,
        "cluster_template_id": c.cluster_template_id.to_string(),
        "keypair": c.keypair,
        "docker_volume_size": c.docker_volume_size,
        "labels": c.labels,
        "node_count": worker.map(|w| w.node_count).unwrap_or(0),
        "master_count": n.master_count,
        "master_flavor_id": c.master_flavor_id,
        "flavor_id": c.flavor_id,
        "create_timeout": c.create_timeout,
        "discovery_url": c.discovery_url,
        "status": c.status.as_str(),
        "status_reason": c.status_reason,
        "health_status": status_str(c.health_status),
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

async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let allowed: &[&str] = if ctx.at_least(1, 3) {
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
    for _ in 0..20 {
        let c = lookup(&state, &ctx, &path, true).await?;
        ctx.authorize("cluster:update", &target(&c))?;
        ctx.authorize_own("cluster:update_health_status")?;
        let ngs = nodegroups(&state, &c).await?;
        let worker = ngs.iter().find(|n| n.is_default && !n.is_master()).cloned();
        let before = patch_document(&c, worker.as_ref(), &ngs);
        let after = patch::apply(&before, &ops, &PATCH_RULES)?;
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
        let mut next = c.clone();
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
                Some(other) => {
                    return Err(invalid("health_status", other, "Value should be string."))
                }
            };
        }
        if changed.contains(&"health_status_reason") {
            next.health_status_reason = match after.get("health_status_reason") {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(v) => super::body::labels_value("health_status_reason", v)?,
            };
        }
        let mut writes = Vec::new();
        let mut new_count = None;
        if changed.contains(&"node_count") {
            let count = match after.get("node_count") {
                Some(Value::Number(n)) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
                Some(Value::String(s)) => s.parse::<i32>().ok(),
                None | Some(Value::Null) => Some(1),
                _ => None,
            }
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                invalid(
                    "node_count",
                    after.get("node_count").unwrap_or(&Value::Null),
                    "Value should be a non-negative integer.",
                )
            })?;
            if count == 0 && !ctx.at_least(1, 10) {
                return Err(zero_not_supported());
            }
            let Some(mut w) = worker.clone() else {
                return Err(ApiError::bad_request(
                    "The cluster has no default worker node group to resize.",
                ));
            };
            if !c.status.is_complete_like() {
                return Err(not_in_state("Updating", &c));
            }
            check_counts(&w.name, count, w.min_node_count, w.max_node_count)
                .map_err(ApiError::BadRequest)?;
            let template = template_of(&state, &c).await?;
            let driver = driver_for(&state, &template)?;
            let old = w.node_count;
            w.node_count = count;
            w.status = ClusterStatus::UpdateInProgress;
            next.status = ClusterStatus::UpdateInProgress;
            next.status_reason = None;
            new_count = Some(count);
            let mut job = NewJob::new(
                Operation::ClusterUpdate,
                c.uuid.to_string(),
                driver.name(),
                json!({"nodegroup": w.uuid.to_string(), "old_node_count": old, "node_count": count, "rollback": rollback}),
            );
            job.max_attempts = state.settings.conductor.max_attempts;
            let mut event_ngs = ngs.clone();
            if let Some(slot) = event_ngs.iter_mut().find(|n| n.id == w.id) {
                *slot = w.clone();
            }
            writes.push(Write::update_nodegroup(&w));
            writes.push(Write::job(job));
            writes.push(Write::event(events::cluster_event(
                &state.settings.default.host,
                Action::Update,
                Outcome::Pending,
                &next,
                &event_ngs,
                Some(&initiator(&ctx)),
            )));
        }
        if next == c && new_count.is_none() {
            return Ok(HttpResponse::Accepted().json(json!({"uuid": c.uuid.to_string()})));
        }
        writes.insert(0, Write::update_cluster(&next));
        match state.store.commit(&writes).await {
            Ok(()) => return Ok(HttpResponse::Accepted().json(json!({"uuid": c.uuid.to_string()}))),
            Err(StoreError::Stale) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Stale.into())
}

async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    if ctx.is_admin {
        ctx.authorize_own("cluster:delete_all_projects")?;
    }
    for _ in 0..20 {
        let c = lookup(&state, &ctx, &path, true).await?;
        ctx.authorize("cluster:delete", &target(&c))?;
        let feds = state
            .store
            .federations_of_cluster(&c.uuid.to_string())
            .await?;
        if !feds.is_empty() {
            let names: Vec<String> = feds
                .iter()
                .map(|f| format!("{} ({})", f.name, f.uuid))
                .collect();
            return Err(ApiError::conflict(format!(
                "Cluster {} hosts or belongs to federation(s) {}; unjoin it or delete the federation first.",
                c.name,
                names.join(", ")
            )));
        }
        if c.status == ClusterStatus::DeleteInProgress {
            return Ok(HttpResponse::NoContent().finish());
        }
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        let ngs = nodegroups(&state, &c).await?;
        let mut next = c.clone();
        next.status = ClusterStatus::DeleteInProgress;
        next.status_reason = None;
        let mut job = NewJob::new(
            Operation::ClusterDelete,
            c.uuid.to_string(),
            driver.name(),
            json!({}),
        );
        job.max_attempts = state.settings.conductor.max_attempts;
        let writes = vec![
            Write::update_cluster(&next),
            // Re-checked under the row lock: a federation created or joined meanwhile wins.
            Write::RefuseIfFederated {
                cluster_uuid: c.uuid.to_string(),
            },
            Write::job(job),
            Write::event(events::cluster_event(
                &state.settings.default.host,
                Action::Delete,
                Outcome::Pending,
                &next,
                &ngs,
                Some(&initiator(&ctx)),
            )),
        ];
        match state.store.commit(&writes).await {
            Ok(()) => return Ok(HttpResponse::NoContent().finish()),
            // Stale: re-read. Federated meanwhile: the next round's check names the federation.
            Err(StoreError::Stale) => continue,
            Err(e) if e.is_constraint("federation_membership") => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Stale.into())
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

async fn resize(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    if !ctx.at_least(1, 7) {
        return Err(ApiError::Framework(
            actix_web::http::StatusCode::NOT_ACCEPTABLE,
        ));
    }
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "resize")?;
    let mut f = Fields::new("resize", obj);
    let node_count = f
        .int32("node_count", Some(0), None)?
        .ok_or_else(|| invalid("node_count", &Value::Null, "Mandatory field missing."))?;
    let nodes_to_remove = f.string_list("nodes_to_remove")?.unwrap_or_default();
    let nodegroup = f.string("nodegroup", 1, 255)?;
    f.finish()?;
    if node_count == 0 && !ctx.at_least(1, 10) {
        return Err(zero_not_supported());
    }
    for _ in 0..20 {
        let c = lookup(&state, &ctx, &path, false).await?;
        ctx.authorize("cluster:resize", &target(&c))?;
        let ngs = nodegroups(&state, &c).await?;
        let ng = pick_nodegroup(&ngs, nodegroup.as_deref())?.clone();
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        if ng.is_master() {
            if !driver.capabilities().master_resize {
                return Err(ApiError::bad_request(
                    "Resizing the master nodegroup is not supported by this driver.",
                ));
            }
            driver
                .validate_master_size(node_count)
                .map_err(ApiError::BadRequest)?;
        } else if node_count < ng.min_node_count
            || ng.max_node_count.is_some_and(|m| node_count > m)
        {
            return Err(ApiError::bad_request(format!(
                "Resizing {} outside the allowed range: min_node_count = {}, max_node_count = {}",
                ng.name,
                ng.min_node_count,
                ng.max_node_count
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "None".into())
            )));
        }
        if !(c.status.is_complete_like()
            || matches!(
                c.status,
                ClusterStatus::UpdateFailed | ClusterStatus::UpdateInProgress
            ))
        {
            return Err(not_in_state("Resizing", &c));
        }
        let mut next = c.clone();
        next.status = ClusterStatus::UpdateInProgress;
        next.status_reason = None;
        let mut ng_next = ng.clone();
        ng_next.node_count = node_count;
        ng_next.status = ClusterStatus::UpdateInProgress;
        ng_next.status_reason = None;
        let mut job = NewJob::new(
            Operation::ClusterResize,
            c.uuid.to_string(),
            driver.name(),
            json!({"nodegroup": ng.uuid.to_string(), "old_node_count": ng.node_count, "node_count": node_count, "nodes_to_remove": nodes_to_remove}),
        );
        job.max_attempts = state.settings.conductor.max_attempts;
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
        let writes = vec![
            Write::update_cluster(&next),
            Write::update_nodegroup(&ng_next),
            Write::job(job),
            Write::event(events::cluster_event(
                &state.settings.default.host,
                Action::Update,
                Outcome::Pending,
                &next,
                &event_ngs,
                Some(&initiator(&ctx)),
            )),
        ];
        match state.store.commit(&writes).await {
            Ok(()) => return Ok(HttpResponse::Accepted().json(json!({"uuid": c.uuid.to_string()}))),
            Err(StoreError::Stale) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Stale.into())
}

async fn upgrade(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    if !ctx.at_least(1, 7) {
        return Err(ApiError::Framework(
            actix_web::http::StatusCode::NOT_ACCEPTABLE,
        ));
    }
    if !ctx.at_least(1, 8) {
        return Err(ApiError::bad_request(
            "Cluster upgrade is not supported in the provided microversion.",
        ));
    }
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "upgrade")?;
    let mut f = Fields::new("upgrade", obj);
    let template_ident = f.required_string("cluster_template", 1, 255)?;
    let max_batch_size = f.int32("max_batch_size", Some(1), None)?.unwrap_or(1);
    let nodegroup = f.string("nodegroup", 1, 255)?;
    f.finish()?;
    if ctx.is_admin {
        ctx.authorize_own("cluster:upgrade_all_projects")?;
    }
    for _ in 0..20 {
        let c = lookup(&state, &ctx, &path, true).await?;
        ctx.authorize("cluster:upgrade", &target(&c))?;
        let new_template = super::cluster_templates::lookup(&state, &ctx, &template_ident).await?;
        let ngs = nodegroups(&state, &c).await?;
        let ng = pick_nodegroup(&ngs, nodegroup.as_deref())?.clone();
        if !ng.is_default && new_template.uuid != c.cluster_template_id {
            return Err(ApiError::conflict(format!(
                "Cluster Template is not valid for upgrade: Nodegroup {} can be upgraded only to match cluster's template ({}).",
                ng.name, c.cluster_template_id
            )));
        }
        if !c.status.is_complete_like() {
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
        let mut next = c.clone();
        next.status = ClusterStatus::UpdateInProgress;
        next.status_reason = None;
        if ng.is_default {
            next.cluster_template_id = new_template.uuid;
        }
        let targets: Vec<NodeGroup> = ngs
            .iter()
            .map(|n| {
                let mut n = n.clone();
                if nodegroup.is_none() || n.id == ng.id {
                    n.status = ClusterStatus::UpdateInProgress;
                    n.image_id = Some(new_template.spec.image_id.clone());
                }
                n
            })
            .collect();
        let mut job = NewJob::new(
            Operation::ClusterUpgrade,
            c.uuid.to_string(),
            driver.name(),
            json!({
                "old_template": c.cluster_template_id.to_string(),
                "template": new_template.uuid.to_string(),
                "max_batch_size": max_batch_size,
                "nodegroup": nodegroup.as_ref().map(|_| ng.uuid.to_string()),
            }),
        );
        job.max_attempts = state.settings.conductor.max_attempts;
        let mut writes = vec![Write::update_cluster(&next)];
        for n in targets
            .iter()
            .filter(|n| ngs.iter().find(|o| o.id == n.id) != Some(*n))
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
            Some(&initiator(&ctx)),
        )));
        match state.store.commit(&writes).await {
            Ok(()) => return Ok(HttpResponse::Accepted().json(json!({"uuid": c.uuid.to_string()}))),
            Err(StoreError::Stale) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Stale.into())
}
