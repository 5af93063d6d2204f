//! Reading machine deployments: a page of a namespace's (or every visible project's) node
//! groups, filtered by label and field selectors (the requirements on the two labels become
//! the store page's name filters, as the machines' do), and the lookup by object name.

use crate::api::kube::list::ContinueToken;
use crate::api::kube::machines::listing::name_filters;
use crate::api::kube::paged::Kind;
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::KubeError;
use crate::api::AppState;
use crate::store::{NameFilter, NodeGroupEntry, NodeGroupKey, NodeGroupPage, StoreError};

use super::object::{entry_name, labels, name_candidates, pick};

fn admits(s: &Selectors, e: &NodeGroupEntry) -> bool {
    s.matches(&entry_name(e), &e.nodegroup.project_id, &labels(e))
}

/// The key a continue token's `start` (`<cluster registry name>/<node group name>`) holds.
fn key_of(t: &ContinueToken) -> Result<NodeGroupKey, KubeError> {
    let (cluster, name) = t
        .start
        .split_once('/')
        .ok_or_else(|| KubeError::bad_request("invalid continue token: malformed"))?;
    Ok(NodeGroupKey {
        project: t.ns.clone(),
        cluster: cluster.to_string(),
        name: name.to_string(),
    })
}

fn token(rv: i64, k: &NodeGroupKey) -> ContinueToken {
    ContinueToken::new(rv, &k.project, &format!("{}/{}", k.cluster, k.name))
}

/// Node groups to the paged list: pages of the store's, keyed by (project, cluster registry
/// name, group name).
pub(super) struct Deployments;

impl Kind for Deployments {
    type Entry = NodeGroupEntry;
    type Key = NodeGroupKey;

    async fn page(
        state: &AppState,
        page: &NodeGroupPage,
    ) -> Result<Vec<NodeGroupEntry>, StoreError> {
        state.store.nodegroup_page(page).await
    }

    async fn find(
        state: &AppState,
        namespace: &str,
        name: &str,
    ) -> Result<Option<NodeGroupEntry>, KubeError> {
        find(state, namespace, name).await
    }

    fn key(e: &NodeGroupEntry) -> NodeGroupKey {
        e.key()
    }

    fn key_of(t: &ContinueToken) -> Result<NodeGroupKey, KubeError> {
        key_of(t)
    }

    fn token(rv: i64, k: &NodeGroupKey) -> ContinueToken {
        token(rv, k)
    }

    fn admits(s: &Selectors, e: &NodeGroupEntry) -> bool {
        admits(s, e)
    }

    fn name_filters(s: &Selectors) -> (NameFilter, NameFilter) {
        name_filters(&s.labels)
    }
}

/// The node group of project `namespace` served under `name`, if any.
pub(super) async fn find(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<Option<NodeGroupEntry>, KubeError> {
    let (pairs, uuid) = name_candidates(name);
    let found = state
        .store
        .nodegroups_by_names(namespace, &pairs, uuid.as_deref())
        .await?;
    Ok(pick(found, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_carry_the_cluster_and_group_name() {
        let k = NodeGroupKey {
            project: "p".into(),
            cluster: "prod".into(),
            name: "gpu/a".into(),
        };
        let t = token(7, &k);
        assert_eq!(key_of(&t).ok(), Some(k));
        assert!(key_of(&ContinueToken::new(7, "p", "alpha")).is_err());
    }
}
