//! The paged scan that a list, a watch's initial events and a deletecollection read: registry
//! entries in (project, name) order, filtered by label and field selectors, a page at a time.

use std::collections::BTreeMap;

use super::list;
use super::request::{Params, Visible};
use super::status::KubeError;
use crate::api::AppState;
use crate::domain::selector::{FieldSelector, LabelSelector};
use crate::store::{RegistryEntry, RegistryPage};

/// The most items one list answer holds, whatever `limit` says; a longer answer continues.
pub const MAX_PAGE: u32 = 500;

/// Rows one list request reads at most while a selector filters them out.
const MAX_SCANNED: usize = 20_000;

/// Rows read per statement while filtering.
const SCAN_CHUNK: u32 = 500;
/// Up to how many remaining items a page counts exactly; past it `remainingItemCount` is the
/// database's estimate (`ListMeta` documents it as an estimate).
const EXACT_REMAINING: u32 = 10_000;

/// The selectors of a list or watch.
#[derive(Debug, Clone, Default)]
pub(super) struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// A label every object of the listed kind carries beside the cluster's own (a
    /// ClusterProfile's `x-k8s.io/cluster-manager`), matched as one of its labels.
    pub implied: Option<(&'static str, &'static str)>,
}

impl Selectors {
    pub fn parse(p: &Params) -> Result<Selectors, KubeError> {
        Ok(Selectors {
            labels: LabelSelector::parse(p.label_selector.as_deref().unwrap_or(""))?,
            fields: FieldSelector::parse(p.field_selector.as_deref().unwrap_or(""))?,
            implied: None,
        })
    }

    /// The same selectors over objects that also carry the label `key: value`.
    pub fn implying(mut self, key: &'static str, value: &'static str) -> Selectors {
        self.implied = Some((key, value));
        self
    }

    pub fn matches(&self, name: &str, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        if !self.fields.matches(name, namespace) {
            return false;
        }
        match self.implied {
            Some(extra) => self.labels.matches_with(labels, extra),
            None => self.labels.matches(labels),
        }
    }
}

/// `?limit=` as [`list::parse_limit`] reads it, within one answer's [`MAX_PAGE`].
pub(super) fn page_limit(o: &list::ListOptions) -> Option<u32> {
    o.limit.map(|n| n.min(MAX_PAGE as usize) as u32)
}

/// One list answer: the items, the resourceVersion it is consistent with, where it continues,
/// and (without selectors) how many items the later pages hold.
pub(super) struct Listed {
    pub items: Vec<RegistryEntry>,
    pub resource_version: i64,
    pub next: Option<list::ContinueToken>,
    pub remaining: Option<i64>,
}

impl Listed {
    /// The `continue` of the answer (empty on the last page).
    pub fn continue_token(&self) -> String {
        self.next
            .as_ref()
            .map(list::ContinueToken::encode)
            .unwrap_or_default()
    }
}

/// Reads one page: in (project, name) order after the position (from the start at the latest
/// resourceVersion when None), filtered by the selectors, at most `limit` items (and
/// [`MAX_PAGE`]), reading at most [`MAX_SCANNED`] rows; with no selector, a page that has more
/// after it counts them.
pub(super) async fn list_entries(
    state: &AppState,
    visible: &Visible,
    selectors: &Selectors,
    limit: Option<u32>,
    from: Option<&list::Position>,
) -> Result<Listed, KubeError> {
    let want = limit.unwrap_or(MAX_PAGE).min(MAX_PAGE) as usize;
    let (mut after, rv) = match from {
        Some(p) => (p.after.clone(), p.resource_version),
        None => (None, state.store.registry_bounds().await?.0),
    };
    let token = |(p, n): &(String, String)| list::ContinueToken::new(rv, p, n);
    // One name in one namespace: one statement.
    if let (Visible::Namespace(ns), Some(name)) = (visible, selectors.fields.name()) {
        let items = match state.store.registry_get(ns.as_str(), name).await? {
            Some(e) if selectors_admit(selectors, &e) && after.is_none() => vec![e],
            _ => vec![],
        };
        return Ok(Listed {
            items,
            resource_version: rv,
            next: None,
            remaining: None,
        });
    }
    let unfiltered = selectors.labels.is_empty() && selectors.fields.is_empty();
    let mut items = Vec::new();
    let mut scanned = 0usize;
    loop {
        let chunk = if unfiltered {
            (want - items.len()) as u32 + 1
        } else {
            SCAN_CHUNK
        };
        let page = RegistryPage {
            project: visible.project(),
            after: after.clone(),
            limit: chunk,
            shared: visible.shared(),
        };
        let rows = state.store.registry_page(&page).await?;
        let exhausted = rows.len() < chunk as usize;
        for e in rows {
            scanned += 1;
            let key = (
                e.cluster.project_id.clone(),
                e.cluster.registry.name.clone(),
            );
            if items.len() == want {
                // One more matching row exists past the page: continue from the last item.
                if selectors_admit(selectors, &e) {
                    let last: &RegistryEntry = items.last().unwrap_or(&e);
                    let last = (
                        last.cluster.project_id.clone(),
                        last.cluster.registry.name.clone(),
                    );
                    // A shared view's later items are not counted: they are its own
                    // project's and what the groups reach, which no range counts.
                    let remaining = if unfiltered && visible.shared().is_none() {
                        let project = visible.project();
                        Some(
                            state
                                .store
                                .registry_count_after(
                                    project.as_deref(),
                                    Some((&last.0, &last.1)),
                                    EXACT_REMAINING,
                                )
                                .await?
                                .value(),
                        )
                    } else {
                        None
                    };
                    return Ok(Listed {
                        next: Some(token(&last)),
                        items,
                        resource_version: rv,
                        remaining,
                    });
                }
            } else if selectors_admit(selectors, &e) {
                items.push(e);
            }
            after = Some(key);
            if scanned >= MAX_SCANNED {
                let last = after.clone().unwrap_or_default();
                return Ok(Listed {
                    items,
                    resource_version: rv,
                    next: Some(token(&last)),
                    remaining: None,
                });
            }
        }
        if exhausted {
            return Ok(Listed {
                items,
                resource_version: rv,
                next: None,
                remaining: None,
            });
        }
    }
}

fn selectors_admit(s: &Selectors, e: &RegistryEntry) -> bool {
    let name = e.cluster.registry.name.clone();
    s.matches(&name, &e.cluster.project_id, &e.cluster.registry.labels)
}
