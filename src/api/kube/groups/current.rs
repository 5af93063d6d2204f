//! What a list or a watch's initial events show now: the groups (with their members) and the
//! bindings of the projects a `Visible` admits.

use super::object::{binding, group, Binding, Group};
use crate::api::kube::request::Visible;
use crate::api::kube::status::KubeError;
use crate::api::AppState;
use crate::domain::cluster_group::{ClusterGroup, ClusterGroupMember};
use crate::domain::ClusterGroupId;
use crate::store::{PageRequest, Scope, SortDir};

/// Groups read per store page while listing.
const PAGE: u32 = 500;

/// The groups `visible` shows, by name, with their members.
async fn groups_of(
    state: &AppState,
    visible: &Visible,
) -> Result<Vec<(ClusterGroup, Vec<(ClusterGroupMember, String)>)>, KubeError> {
    let scope = Scope {
        project_id: visible.project().unwrap_or_default(),
        all_projects: visible.project().is_none(),
    };
    let mut out: Vec<ClusterGroup> = Vec::new();
    let mut marker = None;
    loop {
        let page = PageRequest {
            limit: PAGE,
            marker,
            sort_key: "name".into(),
            sort_dir: SortDir::Asc,
        };
        let batch = state.store.list_cluster_groups(&scope, &page).await?;
        let full = batch.len() == PAGE as usize;
        marker = batch.last().map(|g| g.uuid.0);
        out.extend(batch);
        if !full {
            break;
        }
    }
    let ids: Vec<ClusterGroupId> = out.iter().map(|g| g.uuid).collect();
    let mut members = Vec::new();
    for chunk in ids.chunks(PAGE as usize) {
        members.extend(state.store.cluster_group_members_named(chunk).await?);
    }
    out.sort_by(|a, b| (&a.project_id, a.name.as_str()).cmp(&(&b.project_id, b.name.as_str())));
    Ok(out
        .into_iter()
        .map(|g| {
            let mine = members
                .iter()
                .filter(|(m, _)| m.group == g.uuid)
                .cloned()
                .collect();
            (g, mine)
        })
        .collect())
}

/// The `ClusterGroup`s `visible` shows now.
pub(super) async fn groups(state: &AppState, visible: &Visible) -> Result<Vec<Group>, KubeError> {
    let all = groups_of(state, visible).await?;
    Ok(all.iter().map(|(g, m)| group(g, m)).collect())
}

/// The `ClusterGroupBinding`s `visible` shows now.
pub(super) async fn bindings(
    state: &AppState,
    visible: &Visible,
) -> Result<Vec<Binding>, KubeError> {
    let scope = Scope {
        project_id: visible.project().unwrap_or_default(),
        all_projects: visible.project().is_none(),
    };
    let all = state.store.cluster_group_bindings_in(&scope).await?;
    Ok(all.iter().map(|(b, g)| binding(b, g)).collect())
}
