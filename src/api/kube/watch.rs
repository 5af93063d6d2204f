//! `?watch=true`: a chunked stream of newline-delimited watch events, read from the change log
//! (`cluster_change`), so it sees changes made through either API by any process.
//!
//! - A streaming list (`sendInitialEvents=true&resourceVersionMatch=NotOlderThan`, which a
//!   watch without `resourceVersion` or with `0` defaults to, as the apiserver's
//!   `SetListOptionsDefaults`): an `ADDED` for every current object first, then, with
//!   `allowWatchBookmarks=true`, a `BOOKMARK` annotated `k8s.io/initial-events-end: "true"`
//!   carrying the resourceVersion the initial events are consistent with; a
//!   `resourceVersion=N` the server has not reached is a 504.
//! - `sendInitialEvents=false&resourceVersionMatch=NotOlderThan`: from the latest version (or
//!   N), no initial events.
//! - With `resourceVersion=N`: every change after N, then live ones; N older than the log's
//!   window answers one `ERROR` event with a 410 `Expired` Status.
//! - A shared view (a caller reading other projects' clusters through its bound groups)
//!   resumed from N decides what it shows by the groups and bindings as they are when it
//!   starts. A replayed line of another project's cluster that they do not reach cannot be
//!   placed (the client may hold it from a time it was reached): that watch answers the same
//!   410 `Expired`, and the client lists again, as after a version older than the window
//!   (a project bound nothing when the watch starts is asked only when a binding to it
//!   changed after N: it may have lost its last one).
//! - `allowWatchBookmarks=true`: a `BOOKMARK` with the latest resourceVersion after every
//!   [`BOOKMARK_EVERY`] without events.
//! - `timeoutSeconds` ends the stream cleanly (at most [`MAX_WATCH`]; [`DEFAULT_WATCH`]
//!   without it); a client that goes away ends it at once.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use tokio::sync::mpsc;

use super::list::{self, ListOptions};
use super::objects::Cluster;
use super::profile_view;
use super::request::{Params, Visible};
use super::scan::{list_entries, Selectors, MAX_PAGE};
use super::status::KubeError;
use super::table::{self, table_row, TableRow};
use super::view;
use crate::api::AppState;
use crate::domain::cluster_group::Grantee;
use crate::domain::{ClusterGroupId, ClusterId};
use crate::store::{ChangeKind, ClusterChange, GroupObject, RegistryEntry};

pub const DEFAULT_WATCH: Duration = Duration::from_secs(1800);
pub const MAX_WATCH: Duration = Duration::from_secs(3600);
pub const BOOKMARK_EVERY: Duration = Duration::from_secs(10);
/// Changes read per statement.
const CHANGE_BATCH: u32 = 500;

#[derive(Serialize)]
struct Event<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: T,
}

/// Which API's objects a watch streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    /// `clusterregistry.k8s.io` `Cluster`.
    Cluster,
    /// `multicluster.x-k8s.io` `ClusterProfile`.
    Profile,
}

/// How the events' objects are written: plain objects, or one-row Tables.
#[derive(Clone)]
struct Shape {
    render: Render,
    table: bool,
    include: table::IncludeObject,
    first: bool,
}

/// One watch event as a newline-terminated JSON line.
pub(super) fn line<T: Serialize>(kind: &str, object: T) -> Option<Bytes> {
    let mut bytes = serde_json::to_vec(&Event { kind, object }).ok()?;
    bytes.push(b'\n');
    Some(Bytes::from(bytes))
}

/// What an event shows of its object.
#[derive(Clone, Copy)]
enum Shown<'a> {
    /// The whole object: the current row, or the state a change-log line kept (for a
    /// `DELETED`, the last one).
    Whole(&'a RegistryEntry),
    /// Only what a change-log line written before the log kept objects has of an object
    /// that is gone: its metadata ([`view::deleted`]) and its own name then.
    Metadata { object: &'a Cluster, name: &'a str },
}

impl Shape {
    /// The event of one object, in every shape the same state: a `DELETED` carries the object
    /// as it last was (and a Table watch its row as it was), as kube-apiserver sends it.
    fn event(&mut self, kind: &str, shown: Shown<'_>) -> Option<Bytes> {
        let now = chrono::Utc::now();
        let object = match (self.render, shown) {
            (Render::Cluster, Shown::Whole(e)) => {
                let object = view::cluster(e);
                if !self.table {
                    return line(kind, &object);
                }
                let rv = object.metadata.resource_version.as_deref().unwrap_or("");
                let row = table::cluster_row(&table_row(e, &object), self.include, now);
                table::watch_event_table(table::cluster_columns(), row, rv, self.first)
            }
            (Render::Cluster, Shown::Metadata { object, .. }) => {
                if !self.table {
                    return line(kind, object);
                }
                let row = table::cluster_row(
                    &TableRow {
                        object,
                        status: "DELETED",
                        health: "",
                        driver: "",
                        nodes: None,
                        coe_version: "",
                    },
                    self.include,
                    now,
                );
                let rv = object.metadata.resource_version.as_deref().unwrap_or("");
                table::watch_event_table(table::cluster_columns(), row, rv, self.first)
            }
            (Render::Profile, shown) => {
                let object = match shown {
                    Shown::Whole(e) => profile_view::profile(e),
                    Shown::Metadata { object, name } => profile_view::deleted(object, name),
                };
                if !self.table {
                    return line(kind, &object);
                }
                let rv = object.metadata.resource_version.as_deref().unwrap_or("");
                let row = table::profile_row(&object, self.include, now);
                table::watch_event_table(table::profile_columns(), row, rv, self.first)
            }
        };
        self.first = false;
        line(kind, object)
    }
}

/// How long a watch streams: `timeoutSeconds` (at most [`MAX_WATCH`]), else [`DEFAULT_WATCH`].
pub(super) fn timeout_of(p: &Params) -> Duration {
    p.timeout_seconds
        .as_deref()
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_WATCH)
        .min(MAX_WATCH)
}

/// Starts a watch: checks the starting version now (so a 410 for a version too old is in the
/// stream's first line) and streams from a task of its own.
pub(super) async fn start(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    selectors: Selectors,
    p: &Params,
    o: &ListOptions,
    render: Render,
) -> Result<HttpResponse, KubeError> {
    let asked = o.resource_version.filter(|n| *n > 0);
    let from = match o.send_initial_events {
        Some(true) => {
            if let Some(n) = asked {
                let (latest, _) = state.store.registry_bounds().await?;
                if i64::try_from(n).map_or(true, |n| n > latest) {
                    return Err(KubeError::TooLargeResourceVersion {
                        requested: n,
                        current: u64::try_from(latest).unwrap_or(0),
                    });
                }
            }
            Start::Initial
        }
        _ => match asked {
            Some(n) => Start::After(i64::try_from(n).unwrap_or(i64::MAX)),
            // From the latest version, read now: a change committed once the answer has
            // started is in the stream.
            None => Start::After(state.store.registry_bounds().await?.0),
        },
    };
    let shape = Shape {
        render,
        table: table::wants_table(
            req.headers()
                .get(actix_web::http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
        ),
        include: table::IncludeObject::parse(p.include_object.as_deref())?,
        first: true,
    };
    let bookmarks = o.allow_watch_bookmarks;
    let timeout = timeout_of(p);
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let watch = Watch {
        store: state.store.clone(),
        feed: state.registry_feed.subscribe(),
        shown: HashSet::new(),
        resumed: asked.filter(|_| matches!(from, Start::After(_))),
        replay_to: None,
        visible,
        selectors,
        shape,
        bookmarks,
        tx,
    };
    if let Start::After(n) = from {
        let (_, pruned) = state.store.registry_bounds().await?;
        if n < pruned {
            let body = super::expired_watch_line(&n.to_string(), &pruned.to_string());
            return Ok(HttpResponse::Ok()
                .content_type("application/json")
                .body(body));
        }
    }
    // Everything the initial list and the log need is read inside the task; the state's
    // store is shared.
    let list_state = ListState {
        state: state.clone(),
    };
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let _ = tokio::time::timeout_at(deadline, watch.run(from, list_state)).await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, actix_web::Error>(b), rx))
    });
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(stream))
}

/// Where a watch asked with `o` starts, given the change logs' latest and pruned versions: a
/// streaming list from a version the server has not reached is a 504; a version older than
/// the logs is `Err` with the 410 line the stream answers.
pub(super) fn start_of(
    o: &ListOptions,
    latest: i64,
    pruned: i64,
) -> Result<Result<Start, String>, KubeError> {
    let asked = o.resource_version.filter(|n| *n > 0);
    let from = match o.send_initial_events {
        Some(true) => {
            if let Some(n) = asked {
                if i64::try_from(n).map_or(true, |n| n > latest) {
                    return Err(KubeError::TooLargeResourceVersion {
                        requested: n,
                        current: u64::try_from(latest).unwrap_or(0),
                    });
                }
            }
            Start::Initial
        }
        _ => match asked {
            Some(n) => Start::After(i64::try_from(n).unwrap_or(i64::MAX)),
            None => Start::After(latest),
        },
    };
    match from {
        Start::After(n) if n < pruned => Ok(Err(super::expired_watch_line(
            &n.to_string(),
            &pruned.to_string(),
        ))),
        _ => Ok(Ok(from)),
    }
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// The current state as `ADDED` events, then the changes after it.
    Initial,
    /// The changes after this version.
    After(i64),
}

/// The parts of the application state the initial list reads.
pub(super) struct ListState {
    state: web::Data<AppState>,
}

struct Watch {
    store: std::sync::Arc<dyn crate::store::Store>,
    feed: tokio::sync::watch::Receiver<i64>,
    /// A shared view's clusters of other projects that the bound groups reached when the
    /// watch last looked (what it has shown as present, selectors aside).
    shown: HashSet<ClusterId>,
    /// The resourceVersion a client asked to resume after (not set for a streaming list or a
    /// watch from now).
    resumed: Option<u64>,
    /// A resumed shared view: the latest resourceVersion when it started; the lines up to it
    /// are replayed against the groups as they are now.
    replay_to: Option<i64>,
    visible: Visible,
    selectors: Selectors,
    shape: Shape,
    bookmarks: bool,
    tx: mpsc::Sender<Bytes>,
}

impl Watch {
    /// Sends a line; `false` when the client is gone.
    async fn send(&self, bytes: Option<Bytes>) -> bool {
        match bytes {
            Some(b) => self.tx.send(b).await.is_ok(),
            None => true,
        }
    }

    async fn fail(&self, e: KubeError) {
        let _ = self
            .send(line("ERROR", super::status::status_value(&e)))
            .await;
    }

    fn resource(&self) -> &'static super::status::Resource {
        match self.shape.render {
            Render::Cluster => &super::status::CLUSTERS,
            Render::Profile => &super::status::PROFILES,
        }
    }

    #[tracing::instrument(name = "registry.watch", skip_all, fields(from = ?from))]
    async fn run(mut self, from: Start, list: ListState) {
        match self.reached_now().await {
            Ok(reached) => self.shown = reached,
            Err(e) => return self.fail(e).await,
        }
        // A project bound nothing when the watch starts is asked only if a binding to it
        // changed after the version (it may have lost its last one and hold what it reached).
        if let (Some(after), Visible::Shared { groups, own, .. }) = (self.resumed, &self.visible) {
            // Read after the groups were: a line committed in between is replayed too.
            let latest = match self.store.registry_bounds().await {
                Ok((latest, _)) => latest,
                Err(e) => return self.fail(e.into()).await,
            };
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let bound = if groups.is_empty() {
                match self.bindings_changed(own, after, latest).await {
                    Ok(changed) => changed,
                    Err(e) => return self.fail(e).await,
                }
            } else {
                true
            };
            if bound {
                self.replay_to = Some(latest);
            }
        }
        let mut last = match from {
            Start::After(n) => n,
            Start::Initial => match self.initial(&list).await {
                Ok(Some(rv)) => rv,
                Ok(None) => return,
                Err(e) => return self.fail(e).await,
            },
        };
        if from == Start::Initial && self.bookmarks {
            // The end of the initial events, as a streaming list's client waits for it.
            let mark = list::initial_events_end(self.resource(), &last.to_string());
            if !self.send(line("BOOKMARK", mark)).await {
                return;
            }
        }
        loop {
            match self.catch_up(last).await {
                Ok(Some(rv)) => last = rv,
                Ok(None) => return,
                Err(e) => return self.fail(e).await,
            }
            let pause = if self.bookmarks {
                BOOKMARK_EVERY
            } else {
                MAX_WATCH
            };
            tokio::select! {
                changed = self.feed.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = self.tx.closed() => return,
                () = tokio::time::sleep(pause) => {
                    if self.bookmarks {
                        let mark = super::bookmark_object(self.resource(), &last.to_string());
                        if !self.send(line("BOOKMARK", mark)).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// `ADDED` for every current object; the resourceVersion the list is consistent with.
    async fn initial(&mut self, list: &ListState) -> Result<Option<i64>, KubeError> {
        let mut from: Option<list::Position> = None;
        let mut rv = None;
        loop {
            let listed = list_entries(
                &list.state,
                &self.visible,
                &self.selectors,
                Some(MAX_PAGE),
                from.as_ref(),
            )
            .await?;
            rv.get_or_insert(listed.resource_version);
            for e in &listed.items {
                let line = self.shape.event("ADDED", Shown::Whole(e));
                if !self.send(line).await {
                    return Ok(None);
                }
            }
            match listed.next {
                Some(next) => {
                    from = Some(list::Position {
                        resource_version: listed.resource_version,
                        after: Some(next.after()),
                    })
                }
                None => return Ok(rv),
            }
        }
    }

    /// The event one line of the change log makes for this watch, in the order the log has it
    /// and with the line's own resourceVersion: the object as the line kept it (a `DELETED`
    /// line: its last full state), with what is not the cluster row's (driver, node count,
    /// CA, the health prober's times) from the current row while the cluster exists. A line
    /// written before the log kept objects shows its name, labels and annotations and the rest
    /// as it is now (only metadata once the object is gone). Label and field selectors are
    /// decided on the line's labels before and after the change, as the API server's watch
    /// cache does: an object that starts matching is `ADDED`, one that stops matching is
    /// `DELETED` (showing the labels it had), one that matches before and after is `MODIFIED`.
    fn change_line(
        &mut self,
        ch: &ClusterChange,
        current: Option<&RegistryEntry>,
    ) -> Option<Bytes> {
        let current = current.filter(|e| e.cluster.uuid == ch.cluster_uuid);
        let gone = view::deleted(ch);
        let name = match &ch.object {
            Some(o) => o.cluster.registry.name.clone(),
            None => gone.metadata.name.clone().unwrap_or_default(),
        };
        let now_matches = self
            .selectors
            .matches(&name, &ch.project_id, &ch.registry_labels.0);
        let before = ch.prev_registry_labels.as_ref().map(|p| &p.0);
        let (kind, matched_before) = match ch.change {
            ChangeKind::Added => ("ADDED", false),
            ChangeKind::Deleted => ("DELETED", true),
            _ => (
                "MODIFIED",
                before.map_or(now_matches, |p| {
                    self.selectors.matches(&name, &ch.project_id, p)
                }),
            ),
        };
        let kind = match (kind, matched_before, now_matches) {
            // A DELETED line carries the object's own labels (also as its "before").
            ("DELETED", _, true) => "DELETED",
            ("DELETED", _, false) => return None,
            (_, false, true) => "ADDED",
            (_, true, true) => "MODIFIED",
            (_, true, false) => "LEFT",
            (_, false, false) => return None,
        };
        if let Some(kept) = &ch.object {
            let mut shown = (**kept).clone();
            if let Some(e) = current {
                shown.driver = e.driver.clone();
                shown.node_count = e.node_count;
                shown.ca_pem = e.ca_pem.clone();
                shown.last_heartbeat = e.last_heartbeat;
                shown.last_transition = e.last_transition;
            }
            if kind == "LEFT" {
                // It left the selector: shown with the labels it had.
                if let Some(p) = before {
                    shown.cluster.registry.labels = p.clone();
                }
            }
            let kind = if kind == "LEFT" { "DELETED" } else { kind };
            return self.shape.event(kind, Shown::Whole(&shown));
        }
        let gone_only = Shown::Metadata {
            object: &gone,
            name: &ch.name,
        };
        if kind == "DELETED" {
            return self.shape.event("DELETED", gone_only);
        }
        match current {
            Some(e) => {
                let mut shown = e.clone();
                let r = &mut shown.cluster.registry;
                if r.resource_version != ch.resource_version {
                    // An earlier state: its own version and metadata.
                    r.resource_version = ch.resource_version;
                    r.labels = ch.registry_labels.0.clone();
                    r.annotations = ch.registry_annotations.0.clone();
                    r.deletion_timestamp = ch.deletion_timestamp;
                }
                if kind == "LEFT" {
                    if let Some(p) = before {
                        r.labels = p.clone();
                    }
                    return self.shape.event("DELETED", Shown::Whole(&shown));
                }
                self.shape.event(kind, Shown::Whole(&shown))
            }
            None => {
                let mut object = gone;
                let kind = if kind == "LEFT" {
                    if let Some(p) = before {
                        object.metadata.labels = Some(p.clone()).filter(|l| !l.is_empty());
                    }
                    "DELETED"
                } else {
                    kind
                };
                self.shape.event(
                    kind,
                    Shown::Metadata {
                        object: &object,
                        name: &ch.name,
                    },
                )
            }
        }
    }

    /// The clusters of other projects in a shared view's namespace that the groups bound to
    /// the caller reach now (none for any other view): one statement of index reads.
    async fn reached_now(&self) -> Result<HashSet<ClusterId>, KubeError> {
        let Visible::Shared { own, roles, .. } = &self.visible else {
            return Ok(HashSet::new());
        };
        let caller = Grantee {
            project_id: own,
            roles,
        };
        Ok(self
            .store
            .clusters_through_groups(caller)
            .await?
            .into_iter()
            .map(|(c, _)| c)
            .collect())
    }

    /// Which of the clusters of other projects that `changes` name the bound groups reach
    /// now: the caller's bindings read again (a binding may have come or gone), then one
    /// statement of probes by cluster. Nothing is read when no line is of another project.
    async fn reached(&self, changes: &[ClusterChange]) -> Result<HashSet<ClusterId>, KubeError> {
        let Visible::Shared { own, roles, .. } = &self.visible else {
            return Ok(HashSet::new());
        };
        let foreign: Vec<ClusterId> = changes
            .iter()
            .filter(|c| {
                self.visible.in_namespace(&c.project_id) && !self.visible.admits(&c.project_id)
            })
            .map(|c| c.cluster_uuid)
            .collect();
        if foreign.is_empty() {
            return Ok(HashSet::new());
        }
        let caller = Grantee {
            project_id: own,
            roles,
        };
        let mut groups: Vec<ClusterGroupId> = self
            .store
            .cluster_group_bindings_to(own)
            .await?
            .into_iter()
            .filter(|b| b.applies_to(caller))
            .map(|b| b.group)
            .collect();
        groups.sort();
        groups.dedup();
        Ok(self
            .store
            .cluster_group_links(&foreign, &groups)
            .await?
            .into_iter()
            .map(|(c, _)| c)
            .collect())
    }

    /// Whether a binding to `project` was created, changed or deleted after `after` (up to
    /// `to`): the groups' change log read in batches.
    async fn bindings_changed(
        &self,
        project: &str,
        mut after: i64,
        to: i64,
    ) -> Result<bool, KubeError> {
        while after < to {
            let lines = self
                .store
                .cluster_group_changes(after, CHANGE_BATCH)
                .await?;
            let Some(end) = lines.last().map(|l| l.resource_version) else {
                return Ok(false);
            };
            if lines.iter().any(|l| {
                l.resource_version <= to
                    && matches!(&l.object, GroupObject::Binding(b, _) if b.grantee_project_id == project)
            }) {
                return Ok(true);
            }
            if lines.len() < CHANGE_BATCH as usize {
                return Ok(false);
            }
            after = end;
        }
        Ok(false)
    }

    /// Whether a replayed line is of another project's cluster in this shared view that the
    /// bound groups do not reach now: whether the client holds it cannot be told.
    fn unplaced(&self, ch: &ClusterChange, reached: &HashSet<ClusterId>) -> bool {
        matches!(self.visible, Visible::Shared { .. })
            && self.visible.in_namespace(&ch.project_id)
            && !self.visible.admits(&ch.project_id)
            && !reached.contains(&ch.cluster_uuid)
            && !self.shown.contains(&ch.cluster_uuid)
    }

    /// A change-log line as this watch sees it: as it is for a cluster in view; for a cluster
    /// of another project in a shared view, as the cluster's entering (`ADDED`) when a bound
    /// group reaches it now and did not before, its leaving (`DELETED`, with the labels it
    /// had) when one did and none does now, as it is while one does, and nothing while none
    /// does. The clusters shown are updated as the lines go.
    fn through_groups<'c>(
        &mut self,
        ch: &'c ClusterChange,
        reached: &HashSet<ClusterId>,
    ) -> Option<Cow<'c, ClusterChange>> {
        if self.visible.admits(&ch.project_id) {
            return Some(Cow::Borrowed(ch));
        }
        if !matches!(self.visible, Visible::Shared { .. })
            || !self.visible.in_namespace(&ch.project_id)
        {
            return None;
        }
        let now = reached.contains(&ch.cluster_uuid) && ch.change != ChangeKind::Deleted;
        let was = if now {
            !self.shown.insert(ch.cluster_uuid)
        } else {
            self.shown.remove(&ch.cluster_uuid)
        };
        match (was, now) {
            (true, _) if ch.change == ChangeKind::Deleted => Some(Cow::Borrowed(ch)),
            (true, true) => Some(Cow::Borrowed(ch)),
            (false, true) => {
                let mut entered = ch.clone();
                entered.change = ChangeKind::Added;
                Some(Cow::Owned(entered))
            }
            (true, false) => {
                let mut left = ch.clone();
                left.change = ChangeKind::Deleted;
                if let Some(before) = left.prev_registry_labels.clone() {
                    left.registry_labels = before;
                }
                Some(Cow::Owned(left))
            }
            (false, false) => None,
        }
    }

    /// Sends every change after `last` that this watch sees; the new position.
    async fn catch_up(&mut self, mut last: i64) -> Result<Option<i64>, KubeError> {
        loop {
            let changes = self.store.registry_changes(last, CHANGE_BATCH).await?;
            let Some(end) = changes.last().map(|c| c.resource_version) else {
                return Ok(Some(last));
            };
            let full = changes.len() == CHANGE_BATCH as usize;
            let reached = self.reached(&changes).await?;
            if let Some(to) = self.replay_to {
                if changes
                    .iter()
                    .any(|c| c.resource_version <= to && self.unplaced(c, &reached))
                {
                    return Err(KubeError::Expired(format!(
                        "too old resource version: {} ({to})",
                        self.resumed.unwrap_or(0)
                    )));
                }
                if end >= to {
                    self.replay_to = None;
                }
            }
            let seen: Vec<Cow<'_, ClusterChange>> = changes
                .iter()
                .filter_map(|c| self.through_groups(c, &reached))
                .collect();
            let wanted: Vec<ClusterId> = seen
                .iter()
                .filter(|c| c.change != ChangeKind::Deleted)
                .map(|c| c.cluster_uuid)
                .collect();
            let current: BTreeMap<String, RegistryEntry> = self
                .store
                .registry_entries(&wanted)
                .await?
                .into_iter()
                .map(|e| (e.cluster.uuid.to_string(), e))
                .collect();
            for ch in &seen {
                let Some(line) = self.change_line(ch, current.get(&ch.cluster_uuid.to_string()))
                else {
                    continue;
                };
                if !self.send(Some(line)).await {
                    return Ok(None);
                }
            }
            last = end;
            if !full {
                return Ok(Some(last));
            }
        }
    }
}
