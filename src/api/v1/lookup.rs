//! Lookups every handler shares, with Magnum's 404 and 409 sentences: clusters, templates,
//! federations, a cluster's node groups and template, a template's driver, and the policy
//! target of an owned row.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::api::http::error::ApiError;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster, ClusterWithGroups, NodeGroup};
use crate::domain::federation::Federation;
use crate::domain::template::ClusterTemplate;
use crate::domain::Ident;
use crate::drivers::Driver;
use crate::store::StoreError;

/// Finds a cluster the caller can see, by uuid or name: every project for an admin when
/// `all_projects`, else the caller's project only.
pub async fn cluster(
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
    state
        .store
        .get_cluster(&scope, &Ident::parse(ident))
        .await
        .map_err(|e| cluster_error(ident, e))
}

/// The answer to a failed cluster lookup by `ident`.
pub fn cluster_error(ident: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => ApiError::not_found(format!("Cluster {ident} could not be found.")),
        StoreError::Ambiguous => ApiError::conflict(
            "Multiple clusters exist with same name. Please use the cluster uuid instead.",
        ),
        e => e.into(),
    }
}

/// Like [`cluster`] (every project the caller sees), with what the cluster's full
/// representation needs from its node groups and template, in one statement.
pub async fn cluster_with_groups(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<ClusterWithGroups, ApiError> {
    state
        .store
        .get_cluster_with_groups(&ctx.scope(), &Ident::parse(ident))
        .await
        .map_err(|e| cluster_error(ident, e))
}

/// Finds a template the caller can see, by uuid or name.
pub async fn template(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<ClusterTemplate, ApiError> {
    match state
        .store
        .get_cluster_template(&ctx.scope(), &Ident::parse(ident))
        .await
    {
        Ok(t) => Ok(t),
        Err(StoreError::NotFound) => Err(ApiError::not_found(format!(
            "ClusterTemplate {ident} could not be found."
        ))),
        Err(StoreError::Ambiguous) => Err(ApiError::conflict(
            "Multiple cluster templates exist with same name. Please use the cluster template uuid instead.",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Finds a federation the caller can see (admins: every project), by uuid or name.
pub async fn federation(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<Federation, ApiError> {
    match state
        .store
        .get_federation(&ctx.scope(), &Ident::parse(ident))
        .await
    {
        Ok(f) => Ok(f),
        Err(StoreError::NotFound) => Err(ApiError::not_found(format!(
            "Federation {ident} could not be found."
        ))),
        Err(StoreError::Ambiguous) => Err(ApiError::conflict(
            "Multiple federations exist with same name. Please use the federation uuid instead.",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Magnum's 404 for a node group.
pub fn nodegroup_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("Nodegroup {ident} could not be found."))
}

/// A node group of the cluster by id, uuid or name; non-admins only see their project's.
pub async fn nodegroup(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    ident: &str,
) -> Result<NodeGroup, ApiError> {
    match state.store.get_nodegroup(&c.uuid, ident).await {
        Ok(ng) if ctx.is_admin || ng.project_id == ctx.project_id => Ok(ng),
        Ok(_) | Err(StoreError::NotFound) => Err(nodegroup_not_found(ident)),
        Err(e) => Err(e.into()),
    }
}

/// The driver that runs a federation's jobs: the host cluster's template driver (the default
/// driver when the host is gone, so the job still runs and fails with a reason).
pub async fn job_driver(state: &AppState, f: &Federation) -> Result<String, ApiError> {
    let template = match state.store.find_cluster(&f.hostcluster_id).await? {
        Some(host) => find_template_of(state, &host).await?,
        None => None,
    };
    Ok(template
        .and_then(|t| t.spec.driver)
        .unwrap_or_else(|| state.settings.drivers.default_driver.clone()))
}

/// Every node group of a cluster.
pub async fn nodegroups_of(state: &AppState, c: &Cluster) -> Result<Vec<NodeGroup>, ApiError> {
    Ok(state.store.nodegroups_of(&[c.uuid]).await?)
}

/// The template of a cluster, if it still exists.
pub async fn find_template_of(
    state: &AppState,
    c: &Cluster,
) -> Result<Option<ClusterTemplate>, ApiError> {
    Ok(state
        .store
        .templates_by_uuid(&[c.cluster_template_id])
        .await?
        .into_iter()
        .next())
}

/// The template of a cluster; a cluster without one is an internal error.
pub async fn template_of(state: &AppState, c: &Cluster) -> Result<ClusterTemplate, ApiError> {
    find_template_of(state, c)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("cluster {} has no template", c.uuid)))
}

/// The driver of a template, refusing one this service cannot use.
pub fn driver_for(state: &AppState, t: &ClusterTemplate) -> Result<Arc<dyn Driver>, ApiError> {
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

/// The policy target of a row owned by a project and a user.
pub fn owner_target(project_id: &str, user_id: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("project_id".into(), Value::String(project_id.to_string()));
    m.insert("user_id".into(), Value::String(user_id.to_string()));
    m
}

/// The policy target of a cluster (and of its certificates and node groups).
pub fn cluster_target(c: &Cluster) -> Map<String, Value> {
    owner_target(&c.project_id, &c.user_id)
}

/// The policy target of a federation: its owner.
pub fn federation_target(f: &Federation) -> Map<String, Value> {
    owner_target(&f.project_id, &f.user_id)
}
