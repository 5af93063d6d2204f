//! A page of a `ClusterGroup` or `ClusterGroupBinding` list: the objects the selectors admit
//! in (namespace, name) order, at most `limit`, with the cluster list's `continue` token
//! (the list's resourceVersion and the last object served) and `remainingItemCount`.
//!
//! A list is read at the registry's latest resourceVersion. A later page is served at the
//! first page's version only while nothing it still has to show changed since (the groups'
//! change log says so), else it is the apiserver's 410 `Expired` with a token that goes on at
//! the latest version; a version pruned from the log is the same 410, one the registry has not
//! reached a 504. An exact read (`resourceVersionMatch=Exact`) is served while nothing in its
//! scope changed since the version, else 410.

use crate::api::kube::list::{self, ContinueToken, ListOptions};
use crate::api::kube::request::Visible;
use crate::api::kube::status::KubeError;
use crate::store::{GroupObject, Store};

use super::Kind;

/// Change-log lines one check reads at most; past it the check answers "changed".
const MAX_SCANNED: usize = 20_000;
const BATCH: u32 = 1000;

/// Whether a line of `kind` that `visible` shows changed after `rv` at a key after `after`
/// (every key when None).
pub(super) async fn changed_since(
    store: &dyn Store,
    kind: Kind,
    visible: &Visible,
    rv: i64,
    after: Option<&(String, String)>,
) -> Result<bool, KubeError> {
    let mut last = rv;
    let mut scanned = 0usize;
    loop {
        let lines = store.cluster_group_changes(last, BATCH).await?;
        let full = lines.len() == BATCH as usize;
        for l in &lines {
            scanned += 1;
            last = l.resource_version;
            if !kind.holds(&l.object) || !visible.admits(l.object.project_id()) {
                continue;
            }
            let key = (l.object.project_id().to_string(), object_name(&l.object));
            if after.is_none_or(|a| key > *a) {
                return Ok(true);
            }
        }
        if !full {
            return Ok(false);
        }
        if scanned >= MAX_SCANNED {
            return Ok(true);
        }
    }
}

/// The object name a line's object is served under.
pub(super) fn object_name(o: &GroupObject) -> String {
    match o {
        GroupObject::Group(g, _) => g.name.as_str().to_string(),
        GroupObject::Binding(b, group) => super::object::binding_name(group, &b.grantee_project_id),
    }
}

/// The resourceVersion a list answers at and the key it starts after, or the apiserver's
/// refusal.
pub(super) async fn position(
    store: &dyn Store,
    kind: Kind,
    visible: &Visible,
    o: &ListOptions,
) -> Result<(i64, Option<(String, String)>), KubeError> {
    let (latest, pruned) = store.registry_bounds().await?;
    let too_large = |n: u64| KubeError::TooLargeResourceVersion {
        requested: n,
        current: u64::try_from(latest).unwrap_or(0),
    };
    if let Some(t) = &o.r#continue {
        let after = t.after();
        if t.rv < 0 {
            return Ok((latest, Some(after)));
        }
        if t.rv > latest {
            return Err(too_large(u64::try_from(t.rv).unwrap_or(0)));
        }
        if t.rv < pruned || changed_since(store, kind, visible, t.rv, Some(&after)).await? {
            return Err(list::continue_expired(&after.0, &after.1));
        }
        return Ok((t.rv, Some(after)));
    }
    let Some(n) = o.resource_version.filter(|n| *n != 0) else {
        return Ok((latest, None));
    };
    let rv = i64::try_from(n).unwrap_or(i64::MAX);
    if rv > latest {
        return Err(too_large(n));
    }
    if !o.exact() {
        return Ok((latest, None));
    }
    if rv < pruned || changed_since(store, kind, visible, rv, None).await? {
        return Err(if o.limit.is_some() {
            list::continue_expired("", "")
        } else {
            KubeError::Expired(list::LIST_EXPIRED.into())
        });
    }
    Ok((rv, None))
}

/// One page of `items` (sorted here by (namespace, name)) after `after`, at most `limit`:
/// the page, the token of the next and how many items follow it.
pub(super) fn page<T>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> (String, String),
    rv: i64,
    after: Option<&(String, String)>,
    limit: Option<usize>,
) -> (Vec<T>, Option<ContinueToken>, Option<i64>) {
    items.sort_by_key(&key);
    if let Some(a) = after {
        items.retain(|i| key(i) > *a);
    }
    let Some(limit) = limit.filter(|l| *l < items.len()) else {
        return (items, None, None);
    };
    let rest = items.split_off(limit);
    let next = items.last().map(|i| {
        let (ns, name) = key(i);
        ContinueToken::new(rv, &ns, &name)
    });
    let remaining = i64::try_from(rest.len()).ok();
    (items, next, remaining)
}
