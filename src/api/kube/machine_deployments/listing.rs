//! Reading machine deployments: a page of a namespace's (or every visible project's) node
//! groups, filtered by label and field selectors (the requirements on the two labels become
//! the store page's name filters, as the machines' do), and the lookup by object name.

use crate::api::kube::list::{self, ContinueToken, ListOptions, Match};
use crate::api::kube::machines::listing::name_filters;
use crate::api::kube::request::Visible;
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::KubeError;
use crate::api::AppState;
use crate::store::{NodeGroupEntry, NodeGroupKey, NodeGroupPage};

use super::object::{entry_name, labels, name_candidates, pick};

/// The most items one answer holds, whatever `limit` says.
const MAX_PAGE: usize = 500;
/// Rows one list request reads at most while selectors filter them out.
const MAX_SCANNED: usize = 20_000;

/// One list answer.
pub(super) struct Listed {
    pub items: Vec<NodeGroupEntry>,
    pub resource_version: i64,
    pub next: Option<ContinueToken>,
}

impl Listed {
    pub fn continue_token(&self) -> String {
        self.next
            .as_ref()
            .map(ContinueToken::encode)
            .unwrap_or_default()
    }
}

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

/// The resourceVersion a list answers at and where it starts: the registry's latest (node
/// groups keep no change log); a version the registry has not reached is the apiserver's
/// 504, an exact read of an older one its 410.
async fn position(
    state: &AppState,
    o: &ListOptions,
) -> Result<(i64, Option<NodeGroupKey>), KubeError> {
    let latest = state.store.registry_bounds().await?.0;
    if let Some(t) = &o.r#continue {
        let rv = if (0..=latest).contains(&t.rv) {
            t.rv
        } else {
            latest
        };
        return Ok((rv, Some(key_of(t)?)));
    }
    if let Some(n) = o.resource_version.filter(|n| *n != 0) {
        let n_i = i64::try_from(n).unwrap_or(i64::MAX);
        if n_i > latest {
            return Err(KubeError::TooLargeResourceVersion {
                requested: n,
                current: u64::try_from(latest).unwrap_or(0),
            });
        }
        if o.resource_version_match == Some(Match::Exact) && n_i != latest {
            return Err(KubeError::Expired(list::LIST_EXPIRED.into()));
        }
    }
    Ok((latest, None))
}

/// One page of the node groups `visible` shows that the selectors keep, at most `limit` (and
/// [`MAX_PAGE`]), reading at most [`MAX_SCANNED`] rows.
pub(super) async fn list_deployments(
    state: &AppState,
    visible: &Visible,
    selectors: &Selectors,
    o: &ListOptions,
) -> Result<Listed, KubeError> {
    let (rv, mut after) = position(state, o).await?;
    let want = o.limit.unwrap_or(MAX_PAGE).min(MAX_PAGE);
    if let (Visible::Namespace(ns), Some(name)) = (visible, selectors.fields.name()) {
        let items = match find(state, ns, name).await? {
            Some(e) if admits(selectors, &e) && after.is_none() => vec![e],
            _ => vec![],
        };
        return Ok(Listed {
            items,
            resource_version: rv,
            next: None,
        });
    }
    let (clusters, nodegroups) = name_filters(&selectors.labels);
    let mut items: Vec<NodeGroupEntry> = Vec::new();
    let mut scanned = 0usize;
    loop {
        let chunk = want - items.len() + 1;
        let page = NodeGroupPage {
            project: visible.project(),
            after: after.clone(),
            clusters: clusters.clone(),
            nodegroups: nodegroups.clone(),
            limit: u32::try_from(chunk).unwrap_or(u32::MAX),
        };
        let rows = state.store.nodegroup_page(&page).await?;
        let exhausted = rows.len() < chunk;
        for e in rows {
            scanned += 1;
            if admits(selectors, &e) {
                if items.len() == want {
                    let last = items
                        .last()
                        .map(NodeGroupEntry::key)
                        .unwrap_or_else(|| e.key());
                    return Ok(Listed {
                        items,
                        resource_version: rv,
                        next: Some(token(rv, &last)),
                    });
                }
                items.push(e.clone());
            }
            after = Some(e.key());
            if scanned >= MAX_SCANNED {
                return Ok(Listed {
                    next: after.as_ref().map(|k| token(rv, k)),
                    items,
                    resource_version: rv,
                });
            }
        }
        if exhausted {
            return Ok(Listed {
                items,
                resource_version: rv,
                next: None,
            });
        }
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
