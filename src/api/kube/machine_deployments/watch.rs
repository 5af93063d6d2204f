//! `kubectl get md -w`: `?watch=true` on the machine deployment lists, a chunked stream of
//! watch events. Node groups keep no change log of their own, but every change of one moves
//! its cluster's row or one of its machines' (the object's resourceVersion is the highest of
//! those, [`super::object`]), and both have a log on the registry's one counter. So the watch
//! reads both logs (`cluster_change`, `machine_change`) after its position, reads the node
//! groups of the clusters they name again, and sends what changed: `ADDED` for a group it has
//! not shown (`MODIFIED` for one it has not shown when it started from a resourceVersion: it
//! cannot tell a new group from an old one it never listed), `MODIFIED` for a shown group whose
//! object differs, `DELETED` (its last object) for a shown group that is gone. The rest is the
//! loop the machines' watch runs too ([`crate::api::kube::follow`]): a streaming list with
//! `sendInitialEvents` (and its bookmark), a start too old is a 410 `ERROR` line, bookmarks and
//! `timeoutSeconds`.

use std::collections::{BTreeMap, BTreeSet};

use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;
use tokio::sync::mpsc;

use super::object::{entry_name, labels, machine_deployment};
use super::table;
use crate::api::kube::follow::{self, respond, start_at, Follow, Lines};
use crate::api::kube::list::ListOptions;
use crate::api::kube::machines::listing::name_filters;
use crate::api::kube::request::{accept, Params, Visible};
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::{KubeError, Resource, MACHINE_DEPLOYMENTS};
use crate::api::kube::table::{wants_table, watch_event_table, IncludeObject};
use crate::api::kube::watch::{line, timeout_of, Start};
use crate::api::AppState;
use crate::domain::ClusterId;
use crate::store::{NodeGroupEntry, NodeGroupPage, Store};

/// Log lines and groups read per statement.
const BATCH: u32 = 500;

/// Starts a watch: checks the starting version now (a 410 for a version too old is the
/// stream's first line) and streams from a task of its own.
pub(super) async fn start(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    selectors: Selectors,
    p: &Params,
    o: &ListOptions,
) -> Result<HttpResponse, KubeError> {
    let from = match start_at(state, o).await? {
        Ok(from) => from,
        Err(expired) => return Ok(expired),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let watch = Watch {
        store: state.store.clone(),
        visible,
        selectors,
        table: wants_table(accept(req)),
        include: IncludeObject::parse(p.include_object.as_deref())?,
        first: true,
        lines: Lines {
            feed: state.registry_feed.subscribe(),
            bookmarks: o.allow_watch_bookmarks,
            tx,
        },
        shown: BTreeMap::new(),
        listed: from == Start::Initial,
    };
    Ok(respond(watch.run(from), timeout_of(p), rx))
}

/// A group the watch has shown: its cluster and its last object.
struct Shown {
    cluster: ClusterId,
    entry: NodeGroupEntry,
    object: Value,
}

struct Watch {
    store: std::sync::Arc<dyn Store>,
    visible: Visible,
    selectors: Selectors,
    table: bool,
    include: IncludeObject,
    /// Whether the next Table event is the first (the one that carries the columns).
    first: bool,
    lines: Lines,
    /// The groups shown, by uid.
    shown: BTreeMap<String, Shown>,
    /// Whether the watch listed every group it sees (a streaming list): then a group it has
    /// not shown is a new one.
    listed: bool,
}

impl Watch {
    fn admits(&self, e: &NodeGroupEntry) -> bool {
        let project = &e.nodegroup.project_id;
        self.visible.admits(project) && self.selectors.matches(&entry_name(e), project, &labels(e))
    }

    /// The event of one group: its object, or a one-row Table of it.
    fn event(&mut self, kind: &str, e: &NodeGroupEntry) -> Option<Bytes> {
        let object = machine_deployment(e);
        if !self.table {
            return line(kind, &object);
        }
        let row = table::deployment_row(e, &object, self.include, chrono::Utc::now());
        let rv = object.metadata.resource_version.clone().unwrap_or_default();
        let body = watch_event_table(table::columns(), row, &rv, self.first);
        self.first = false;
        line(kind, body)
    }

    /// Sends `kind` for `e` and remembers it; `false` when the client is gone.
    async fn show(&mut self, kind: &str, e: NodeGroupEntry) -> bool {
        let object = serde_json::to_value(machine_deployment(&e)).unwrap_or(Value::Null);
        let line = self.event(kind, &e);
        let uid = e.nodegroup.uuid.to_string();
        let cluster = e.nodegroup.cluster_id;
        self.shown.insert(
            uid,
            Shown {
                cluster,
                entry: e,
                object,
            },
        );
        self.lines.send(line).await
    }

    /// Reads the groups of `affected` again and sends what changed; `false` when the client
    /// is gone.
    async fn changed(
        &mut self,
        affected: &BTreeSet<ClusterId>,
        at: i64,
    ) -> Result<bool, KubeError> {
        if affected.is_empty() {
            return Ok(true);
        }
        let ids: Vec<ClusterId> = affected.iter().copied().collect();
        let entries = self.store.nodegroups_of_clusters(&ids).await?;
        let mut present: BTreeSet<String> = BTreeSet::new();
        for e in entries {
            if !self.admits(&e) {
                continue;
            }
            let uid = e.nodegroup.uuid.to_string();
            present.insert(uid.clone());
            let object = serde_json::to_value(machine_deployment(&e)).unwrap_or(Value::Null);
            let kind = match self.shown.get(&uid) {
                Some(s) if s.object == object => continue,
                Some(_) => "MODIFIED",
                None if self.listed => "ADDED",
                None => "MODIFIED",
            };
            if !self.show(kind, e).await {
                return Ok(false);
            }
        }
        let gone: Vec<String> = self
            .shown
            .iter()
            .filter(|(uid, s)| affected.contains(&s.cluster) && !present.contains(*uid))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in gone {
            if let Some(s) = self.shown.remove(&uid) {
                let mut last = s.entry;
                last.cluster_resource_version = last.cluster_resource_version.max(at);
                let line = self.event("DELETED", &last);
                if !self.lines.send(line).await {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    #[tracing::instrument(name = "machinedeployments.watch", skip_all, fields(from = ?from))]
    async fn run(mut self, from: Start) {
        follow::run(&mut self, from).await;
    }
}

impl Follow for Watch {
    fn resource(&self) -> &'static Resource {
        &MACHINE_DEPLOYMENTS
    }

    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
    }

    /// `ADDED` for every current group the watch sees; the resourceVersion they are
    /// consistent with (read before them: a change made meanwhile follows as its own event).
    async fn initial(&mut self) -> Result<Option<i64>, KubeError> {
        let (rv, _) = self.store.registry_bounds().await?;
        let (clusters, nodegroups) = name_filters(&self.selectors.labels);
        let mut after = None;
        loop {
            let page = NodeGroupPage {
                project: self.visible.project(),
                after: after.clone(),
                clusters: clusters.clone(),
                nodegroups: nodegroups.clone(),
                limit: BATCH,
            };
            let rows = self.store.nodegroup_page(&page).await?;
            let done = rows.len() < BATCH as usize;
            for e in rows {
                after = Some(e.key());
                if self.admits(&e) && !self.show("ADDED", e).await {
                    return Ok(None);
                }
            }
            if done {
                return Ok(Some(rv));
            }
        }
    }

    /// Sends every change after `last` that this watch sees; the new position.
    async fn catch_up(&mut self, mut last: i64) -> Result<Option<i64>, KubeError> {
        loop {
            let machines = self.store.machine_changes(last, BATCH).await?;
            let clusters = self.store.registry_changes(last, BATCH).await?;
            let m_end = machines.last().map(|c| c.entry.resource_version);
            let c_end = clusters.last().map(|c| c.resource_version);
            let full = |n: usize| n == BATCH as usize;
            // Up to where both logs were read whole.
            let upto = match (
                m_end.filter(|_| full(machines.len())),
                c_end.filter(|_| full(clusters.len())),
            ) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => match m_end.max(c_end) {
                    Some(end) => end,
                    None => return Ok(Some(last)),
                },
            };
            let mut affected: BTreeSet<ClusterId> = BTreeSet::new();
            for ch in machines.iter().filter(|c| c.entry.resource_version <= upto) {
                if self.visible.in_namespace(&ch.entry.machine.project_id) {
                    affected.insert(ch.entry.machine.cluster_id);
                }
            }
            for ch in clusters.iter().filter(|c| c.resource_version <= upto) {
                if self.visible.in_namespace(&ch.project_id) {
                    affected.insert(ch.cluster_uuid);
                }
            }
            if !self.changed(&affected, upto).await? {
                return Ok(None);
            }
            last = upto;
            if !(full(machines.len()) || full(clusters.len())) {
                return Ok(Some(last));
            }
        }
    }
}
