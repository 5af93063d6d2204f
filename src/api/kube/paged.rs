//! The paged list the kinds read in keyset order share (machines, machine deployments): where
//! a list starts (a continue token, or the registry's latest resourceVersion), then chunked
//! store pages filtered by the selectors, at most a page's items and [`MAX_SCANNED`] rows,
//! with a continue token where it stopped. A kind says how its rows are read and keyed.

use super::list::{self, ContinueToken, ListOptions, Match};
use super::request::Visible;
use super::scan::Selectors;
use super::status::KubeError;
use crate::api::AppState;
use crate::store::{KeyedPage, NameFilter, StoreError};

/// The most items one answer holds, whatever `limit` says.
const MAX_PAGE: usize = 500;
/// Rows one list request reads at most while selectors filter them out.
const MAX_SCANNED: usize = 20_000;

/// One list answer.
pub(super) struct Listed<E> {
    pub items: Vec<E>,
    pub resource_version: i64,
    pub next: Option<ContinueToken>,
}

impl<E> Listed<E> {
    pub fn continue_token(&self) -> String {
        self.next
            .as_ref()
            .map(ContinueToken::encode)
            .unwrap_or_default()
    }
}

/// A kind the paged list reads: its rows (`Entry`), their place in its order (`Key`) and the
/// continue token that holds one.
pub(super) trait Kind {
    type Entry: Clone;
    type Key: Clone;

    /// One page of the kind's rows in its order.
    async fn page(
        state: &AppState,
        page: &KeyedPage<Self::Key>,
    ) -> Result<Vec<Self::Entry>, StoreError>;
    /// The row of project `namespace` served under `name`, if any.
    async fn find(
        state: &AppState,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Self::Entry>, KubeError>;
    fn key(e: &Self::Entry) -> Self::Key;
    /// The key a continue token's `start` holds.
    fn key_of(t: &ContinueToken) -> Result<Self::Key, KubeError>;
    fn token(rv: i64, k: &Self::Key) -> ContinueToken;
    fn admits(s: &Selectors, e: &Self::Entry) -> bool;
    /// The store's cluster and node-group filters of the selectors.
    fn name_filters(s: &Selectors) -> (NameFilter, NameFilter);
}

/// The resourceVersion a list answers at and where it starts. The kinds keep no change log
/// of their own: a list is read at the registry's latest resourceVersion; a version the
/// registry has not reached is the apiserver's 504, an exact read of an older one its 410.
async fn position<K: Kind>(
    state: &AppState,
    o: &ListOptions,
) -> Result<(i64, Option<K::Key>), KubeError> {
    let latest = state.store.registry_bounds().await?.0;
    if let Some(t) = &o.r#continue {
        let rv = if (0..=latest).contains(&t.rv) {
            t.rv
        } else {
            latest
        };
        return Ok((rv, Some(K::key_of(t)?)));
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

/// One page of the rows of kind `K` that `visible` shows and the selectors keep, at most
/// `limit` (and [`MAX_PAGE`]), reading at most [`MAX_SCANNED`] rows.
pub(super) async fn list<K: Kind>(
    state: &AppState,
    visible: &Visible,
    selectors: &Selectors,
    o: &ListOptions,
) -> Result<Listed<K::Entry>, KubeError> {
    let (rv, mut after) = position::<K>(state, o).await?;
    let want = o.limit.unwrap_or(MAX_PAGE).min(MAX_PAGE);
    // One name in one namespace: one statement.
    if let (Visible::Namespace(ns), Some(name)) = (visible, selectors.fields.name()) {
        let items = match K::find(state, ns, name).await? {
            Some(e) if K::admits(selectors, &e) && after.is_none() => vec![e],
            _ => vec![],
        };
        return Ok(Listed {
            items,
            resource_version: rv,
            next: None,
        });
    }
    let (clusters, nodegroups) = K::name_filters(selectors);
    let mut items: Vec<K::Entry> = Vec::new();
    let mut scanned = 0usize;
    loop {
        let chunk = want - items.len() + 1;
        let page = KeyedPage {
            project: visible.project(),
            after: after.clone(),
            clusters: clusters.clone(),
            nodegroups: nodegroups.clone(),
            limit: u32::try_from(chunk).unwrap_or(u32::MAX),
        };
        let rows = K::page(state, &page).await?;
        let exhausted = rows.len() < chunk;
        for e in rows {
            scanned += 1;
            if K::admits(selectors, &e) {
                if items.len() == want {
                    let last = items.last().map(K::key).unwrap_or_else(|| K::key(&e));
                    return Ok(Listed {
                        items,
                        resource_version: rv,
                        next: Some(K::token(rv, &last)),
                    });
                }
                items.push(e.clone());
            }
            after = Some(K::key(&e));
            if scanned >= MAX_SCANNED {
                return Ok(Listed {
                    next: after.as_ref().map(|k| K::token(rv, k)),
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
