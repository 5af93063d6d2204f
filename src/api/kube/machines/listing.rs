//! Reading machines: a page of a namespace's (or every visible project's) machines, filtered by
//! label and field selectors. The selector requirements on the two labels a machine carries
//! (its cluster's registry name, its node group's name) become the store page's name filters,
//! so they are served by index reads; every requirement is then checked on each object too.

use crate::api::http::retry::Attempt;
use crate::api::kube::list::ContinueToken;
use crate::api::kube::paged::Kind;
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::{KubeError, MACHINES};
use crate::api::AppState;
use crate::domain::selector::{LabelSelector, Op};
use crate::store::{MachineEntry, MachineKey, MachinePage, NameFilter, StoreError, Write};

use super::object::{
    entry_name, labels, machine, name_candidates, pick, Machine, CLUSTER_LABEL, NODEGROUP_LABEL,
};

/// Keeps only `values` (with what the filter already keeps).
fn narrow(f: &mut NameFilter, values: &[String]) {
    f.only = Some(match f.only.take() {
        None => values.to_vec(),
        Some(kept) => kept.into_iter().filter(|v| values.contains(v)).collect(),
    });
}

/// The store's cluster and node-group filters of a label selector. A requirement another
/// label must meet (`=`, `in`, exists, `>`/`<`) keeps nothing: a machine carries no other
/// label. (A selector's values are label values, so a name that is none, and is therefore no
/// label, is never one of them.)
pub(in crate::api::kube) fn name_filters(sel: &LabelSelector) -> (NameFilter, NameFilter) {
    let mut clusters = NameFilter::default();
    let mut groups = NameFilter::default();
    for r in &sel.requirements {
        let f = match r.key.as_str() {
            CLUSTER_LABEL => &mut clusters,
            NODEGROUP_LABEL => &mut groups,
            _ => {
                if matches!(
                    r.op,
                    Op::Equals(_) | Op::In(_) | Op::Exists | Op::GreaterThan(_) | Op::LessThan(_)
                ) {
                    clusters.only = Some(Vec::new());
                }
                continue;
            }
        };
        match &r.op {
            Op::Equals(v) => narrow(f, std::slice::from_ref(v)),
            Op::In(vs) => narrow(f, vs),
            Op::NotEquals(v) => f.not.push(v.clone()),
            Op::NotIn(vs) => f.not.extend(vs.iter().cloned()),
            // A name that is no label value is no label: left to the check of each object.
            Op::DoesNotExist | Op::Exists | Op::GreaterThan(_) | Op::LessThan(_) => {}
        }
    }
    (clusters, groups)
}

fn admits(s: &Selectors, e: &MachineEntry) -> bool {
    s.matches(&entry_name(e), &e.machine.project_id, &labels(e))
}

/// The key a continue token's `start` (`<cluster uuid>/<id>`) holds.
fn key_of(t: &ContinueToken) -> Result<MachineKey, KubeError> {
    let bad = || KubeError::bad_request("invalid continue token: malformed");
    let (cluster, id) = t.start.split_once('/').ok_or_else(bad)?;
    Ok(MachineKey {
        project: t.ns.clone(),
        cluster: cluster.to_string(),
        id: id.parse().map_err(|_| bad())?,
    })
}

fn token(rv: i64, k: &MachineKey) -> ContinueToken {
    ContinueToken::new(rv, &k.project, &format!("{}/{}", k.cluster, k.id))
}

/// Machines to the paged list: pages of the store's, keyed by (project, cluster uuid, id).
pub(super) struct Machines;

impl Kind for Machines {
    type Entry = MachineEntry;
    type Key = MachineKey;

    async fn page(state: &AppState, page: &MachinePage) -> Result<Vec<MachineEntry>, StoreError> {
        state.store.machine_page(page).await
    }

    async fn find(
        state: &AppState,
        namespace: &str,
        name: &str,
    ) -> Result<Option<MachineEntry>, KubeError> {
        find(state, namespace, name).await
    }

    fn key(e: &MachineEntry) -> MachineKey {
        e.key()
    }

    fn key_of(t: &ContinueToken) -> Result<MachineKey, KubeError> {
        key_of(t)
    }

    fn token(rv: i64, k: &MachineKey) -> ContinueToken {
        token(rv, k)
    }

    fn admits(s: &Selectors, e: &MachineEntry) -> bool {
        admits(s, e)
    }

    fn name_filters(s: &Selectors) -> (NameFilter, NameFilter) {
        name_filters(&s.labels)
    }
}

/// The machine of project `namespace` served under `name`, if any.
pub(super) async fn find(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<Option<MachineEntry>, KubeError> {
    let (pairs, uuid) = name_candidates(name);
    let found = state
        .store
        .machines_by_names(namespace, &pairs, uuid.as_deref())
        .await?;
    Ok(pick(found, name))
}

/// Commits a change of machine `name` and answers the machine as stored after it; a lost race
/// (`Stale`) is another attempt.
pub(super) async fn commit_and_read(
    state: &AppState,
    writes: &[Write],
    namespace: &str,
    name: &str,
) -> Result<Attempt<Machine>, KubeError> {
    match state.store.commit(writes).await {
        Ok(()) => {}
        Err(StoreError::Stale) => return Ok(Attempt::Retry),
        Err(err) => return Err(err.into()),
    }
    let stored = find(state, namespace, name)
        .await?
        .ok_or_else(|| KubeError::not_found(&MACHINES, name))?;
    Ok(Attempt::Done(machine(&stored)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filters(s: &str) -> (NameFilter, NameFilter) {
        name_filters(&LabelSelector::parse(s).expect("selector"))
    }

    fn only(vs: &[&str]) -> Option<Vec<String>> {
        Some(vs.iter().map(|v| v.to_string()).collect())
    }

    #[test]
    fn selectors_on_the_two_labels_become_name_filters() {
        let (c, g) = filters("cluster.k8s.io/cluster-name=prod");
        assert_eq!(c.only, only(&["prod"]));
        assert_eq!(g, NameFilter::default());
        let (c, _) = filters("cluster.k8s.io/cluster-name in (a,b),cluster.k8s.io/cluster-name==b");
        assert_eq!(c.only, only(&["b"]));
        let (c, g) =
            filters("cluster.k8s.io/cluster-name!=a,fleetyard.openstack.org/nodegroup notin (x,y)");
        assert_eq!(c.only, None);
        assert_eq!(c.not, vec!["a".to_string()]);
        assert_eq!(g.not, vec!["x".to_string(), "y".to_string()]);
        let (_, g) = filters("!fleetyard.openstack.org/nodegroup");
        assert_eq!(g, NameFilter::default());
    }

    #[test]
    fn a_requirement_on_another_label_keeps_nothing_unless_it_asks_for_absence() {
        assert!(filters("env=prod").0.keeps_nothing());
        assert!(filters("env").0.keeps_nothing());
        assert!(!filters("env!=prod").0.keeps_nothing());
        assert!(!filters("!env").0.keeps_nothing());
    }

    #[test]
    fn continue_tokens_carry_the_cluster_and_id() {
        let k = MachineKey {
            project: "p".into(),
            cluster: "c-uuid".into(),
            id: 42,
        };
        let t = token(7, &k);
        assert_eq!(key_of(&t).ok(), Some(k));
        let bad = ContinueToken::new(7, "p", "alpha");
        assert!(key_of(&bad).is_err());
    }
}
