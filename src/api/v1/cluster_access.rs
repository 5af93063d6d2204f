//! Clusters of other projects a caller reads through cluster groups (microversion 1.20).
//!
//! A binding grants the caller's project (and, when it names roles, only callers holding one)
//! `read` or `write` over a group's clusters: its accepted explicit members and its selector
//! matches. `GET /v1/clusters/{c}` then shows such a cluster by uuid or name, and the lists show them
//! among the project's own, each marked with the groups its right comes through (`access`).
//!
//! The cost is index reads whatever the number of clusters: the caller's bindings
//! (`ix_cluster_group_binding_grantee_project_id`) once per request, then the page's clusters
//! through the bound groups' members and matches in the page's own statement, then one
//! statement of the page's links to those groups for the markers.

use std::collections::{BTreeMap, HashMap};

use super::lookup;
use super::views::AccessView;
use crate::api::http::error::ApiError;
use crate::api::http::microversion::CLUSTER_GROUPS;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster, ClusterWithGroups};
use crate::domain::cluster_group::{ClusterAction, Grantee, GroupRight};
use crate::domain::ids::parse_uuid_like;
use crate::domain::{ClusterGroupId, ClusterId, Ident, Scope};
use crate::store::StoreError;

/// The groups bound to the caller by bindings that apply to it, with the right each grants.
#[derive(Debug, Default)]
pub struct BoundGroups {
    rights: BTreeMap<ClusterGroupId, GroupRight>,
}

impl BoundGroups {
    /// The bound groups' uuids, in order.
    pub fn ids(&self) -> Vec<ClusterGroupId> {
        self.rights.keys().copied().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.rights.is_empty()
    }

    /// The marker of a cluster the groups `via` reach.
    fn marker(&self, via: &[ClusterGroupId]) -> AccessView {
        let entries: Vec<(ClusterGroupId, &'static str)> = via
            .iter()
            .filter_map(|g| self.rights.get(g).map(|r| (*g, r.as_str())))
            .collect();
        AccessView::new(&entries)
    }

    /// The greatest right the groups `via` grant.
    pub fn right(&self, via: &[ClusterGroupId]) -> Option<GroupRight> {
        via.iter().filter_map(|g| self.rights.get(g)).max().copied()
    }
}

/// The caller's bound groups: none below microversion 1.20 and for an administrator (who
/// reads every cluster already). One index read.
pub async fn bound_groups(state: &AppState, ctx: &RequestContext) -> Result<BoundGroups, ApiError> {
    if ctx.version < CLUSTER_GROUPS {
        return Ok(BoundGroups::default());
    }
    caller_groups(state, ctx).await
}

/// The caller's bound groups whatever the microversion (the Kubernetes face has none): none
/// for an administrator. One index read.
pub async fn caller_groups(
    state: &AppState,
    ctx: &RequestContext,
) -> Result<BoundGroups, ApiError> {
    if ctx.is_admin || ctx.project_id.is_empty() {
        return Ok(BoundGroups::default());
    }
    let caller = Grantee {
        project_id: &ctx.project_id,
        roles: &ctx.roles,
    };
    let mut rights: BTreeMap<ClusterGroupId, GroupRight> = BTreeMap::new();
    for b in state
        .store
        .cluster_group_bindings_to(&ctx.project_id)
        .await?
        .iter()
        .filter(|b| b.applies_to(caller))
    {
        let slot = rights.entry(b.group).or_insert(b.right);
        *slot = (*slot).max(b.right);
    }
    Ok(BoundGroups { rights })
}

/// The markers of the clusters of other projects among `clusters` (uuid, project): one
/// statement, none when nothing is bound.
pub async fn markers(
    state: &AppState,
    ctx: &RequestContext,
    bound: &BoundGroups,
    clusters: &[(ClusterId, &str)],
) -> Result<HashMap<ClusterId, AccessView>, ApiError> {
    let foreign: Vec<ClusterId> = clusters
        .iter()
        .filter(|(_, p)| *p != ctx.project_id)
        .map(|(c, _)| *c)
        .collect();
    if bound.is_empty() || foreign.is_empty() {
        return Ok(HashMap::new());
    }
    let mut via: HashMap<ClusterId, Vec<ClusterGroupId>> = HashMap::new();
    for (c, g) in state
        .store
        .cluster_group_links(&foreign, &bound.ids())
        .await?
    {
        via.entry(c).or_default().push(g);
    }
    Ok(via
        .into_iter()
        .map(|(c, gs)| (c, bound.marker(&gs)))
        .collect())
}

/// The cluster of another project `ident` names among those the bound groups reach: a uuid
/// as it is, a name when exactly one of them has it (Magnum's 409 when several do).
async fn reached(
    state: &AppState,
    bound: &BoundGroups,
    ident: &str,
) -> Result<Option<ClusterId>, ApiError> {
    if let Some(uuid) = parse_uuid_like(ident) {
        return Ok(Some(ClusterId(uuid)));
    }
    let mut named = state
        .store
        .clusters_named_through(ident, &bound.ids())
        .await?;
    match named.len() {
        0 | 1 => Ok(named.pop()),
        _ => Err(lookup::cluster_error(ident, StoreError::Ambiguous)),
    }
}

/// A cluster of another project the caller reaches through a bound group, by uuid or name, with
/// its marker and the greatest right; `None` when there is none (the caller's 404 stands).
pub async fn shared_cluster(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
) -> Result<Option<(ClusterWithGroups, AccessView, GroupRight)>, ApiError> {
    let bound = bound_groups(state, ctx).await?;
    if bound.is_empty() {
        return Ok(None);
    }
    let Some(cluster) = reached(state, &bound, ident).await? else {
        return Ok(None);
    };
    let via: Vec<ClusterGroupId> = state
        .store
        .cluster_group_links(&[cluster], &bound.ids())
        .await?
        .into_iter()
        .map(|(_, g)| g)
        .collect();
    let Some(right) = bound.right(&via) else {
        return Ok(None);
    };
    let every_project = Scope {
        project_id: ctx.project_id.clone(),
        all_projects: true,
    };
    match state
        .store
        .get_cluster_with_groups(&every_project, &Ident::Uuid(cluster.0))
        .await
    {
        Ok(read) => Ok(Some((read, bound.marker(&via), right))),
        Err(StoreError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The cluster a change (`action`) names: one the caller sees as before (its project's, any
/// for an administrator), or, from microversion 1.20, one of another project that a bound
/// group reaches, by uuid or name, when the bindings grant a right that allows the action (a 403 when
/// they grant only `read`). The flag says the cluster came through a group: the caller's own
/// rule then decides, not the cluster's project's.
pub async fn cluster_for(
    state: &AppState,
    ctx: &RequestContext,
    ident: &str,
    action: ClusterAction,
) -> Result<(Cluster, bool), ApiError> {
    let missing = match lookup::cluster(state, ctx, ident, true).await {
        Ok(c) => return Ok((c, false)),
        Err(ApiError::NotFound(m)) => m,
        Err(e) => return Err(e),
    };
    let bound = bound_groups(state, ctx).await?;
    if bound.is_empty() {
        return Err(ApiError::NotFound(missing));
    }
    let Some(cluster) = reached(state, &bound, ident).await? else {
        return Err(ApiError::NotFound(missing));
    };
    let via: Vec<ClusterGroupId> = state
        .store
        .cluster_group_links(&[cluster], &bound.ids())
        .await?
        .into_iter()
        .map(|(_, g)| g)
        .collect();
    let Some(right) = bound.right(&via) else {
        return Err(ApiError::NotFound(missing));
    };
    let Some(c) = state.store.find_cluster(&cluster).await? else {
        return Err(ApiError::NotFound(missing));
    };
    if !right.allows(action) {
        return Err(ApiError::forbidden(format!(
            "The cluster groups bound to project {} grant {} access to cluster {ident}, not \
             write access.",
            ctx.project_id,
            right.as_str()
        )));
    }
    Ok((c, true))
}
