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
