//! `kubectl get machines -w`: `?watch=true` on the machine lists, a chunked stream of
//! newline-delimited watch events read from the machines' change log (`machine_change`), so
//! it sees changes made through either API by any process. The semantics are the clusters'
//! watch's ([`crate::api::kube::watch`]), on the registry's one resourceVersion counter:
//!
//! - A streaming list (`sendInitialEvents=true`, which a watch without `resourceVersion` or
//!   with `0` defaults to): an `ADDED` for every current machine, then with
//!   `allowWatchBookmarks=true` the `BOOKMARK` annotated `k8s.io/initial-events-end`; a
//!   `resourceVersion` the server has not reached is a 504.
//! - `resourceVersion=N`: every change after N, then live ones; N older than the log's window
//!   answers one `ERROR` event with a 410 `Expired` Status.
//! - `allowWatchBookmarks=true`: a `BOOKMARK` with the latest resourceVersion after every
//!   [`BOOKMARK_EVERY`] without events; `timeoutSeconds` ends the stream (at most
//!   [`MAX_WATCH`]).
//!
//! A machine's labels (its cluster's and node group's names) never change, so a selected watch
//! decides each line on the labels it kept: `ADDED`, `MODIFIED` and `DELETED` as logged.

use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use tokio::sync::mpsc;

use super::listing::name_filters;
use super::object::{entry_name, labels, machine};
use super::table;
use crate::api::kube::list::{self, ListOptions};
use crate::api::kube::request::{accept, Params, Visible};
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::{status_value, KubeError, MACHINES};
use crate::api::kube::table::{wants_table, watch_event_table, IncludeObject};
use crate::api::kube::watch::{line, start_of, timeout_of, Start, BOOKMARK_EVERY, MAX_WATCH};
use crate::api::AppState;
use crate::store::{MachineEntry, MachinePage, Store};

/// Changes and machines read per statement.
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
    let (latest, pruned) = state.store.registry_bounds().await?;
    let from = match start_of(o, latest, pruned)? {
        Ok(from) => from,
        Err(expired) => {
            return Ok(HttpResponse::Ok()
                .content_type("application/json")
                .body(expired))
        }
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let watch = Watch {
        store: state.store.clone(),
        feed: state.registry_feed.subscribe(),
        visible,
        selectors,
        table: wants_table(accept(req)),
        include: IncludeObject::parse(p.include_object.as_deref())?,
        first: true,
        bookmarks: o.allow_watch_bookmarks,
        tx,
    };
    let timeout = timeout_of(p);
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let _ = tokio::time::timeout_at(deadline, watch.run(from)).await;
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

struct Watch {
    store: std::sync::Arc<dyn Store>,
    feed: tokio::sync::watch::Receiver<i64>,
    visible: Visible,
    selectors: Selectors,
    table: bool,
    include: IncludeObject,
    /// Whether the next Table event is the first (the one that carries the columns).
    first: bool,
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

    fn admits(&self, e: &MachineEntry) -> bool {
        self.visible.admits(&e.machine.project_id)
            && self
                .selectors
                .matches(&entry_name(e), &e.machine.project_id, &labels(e))
    }

    /// The event of one machine: its object, or a one-row Table of it.
    fn event(&mut self, kind: &str, e: &MachineEntry) -> Option<Bytes> {
        let object = machine(e);
        if !self.table {
            return line(kind, &object);
        }
        let row = table::machine_row(e, &object, self.include, chrono::Utc::now());
        let rv = e.resource_version.to_string();
        let body = watch_event_table(table::columns(), row, &rv, self.first);
        self.first = false;
        line(kind, body)
    }

    #[tracing::instrument(name = "machines.watch", skip_all, fields(from = ?from))]
    async fn run(mut self, from: Start) {
        let mut last = match from {
            Start::After(n) => n,
            Start::Initial => match self.initial().await {
                Ok(Some(rv)) => rv,
                Ok(None) => return,
                Err(e) => {
                    let _ = self.send(line("ERROR", status_value(&e))).await;
                    return;
                }
            },
        };
        if from == Start::Initial && self.bookmarks {
            let mark = list::initial_events_end(&MACHINES, &last.to_string());
            if !self.send(line("BOOKMARK", mark)).await {
                return;
            }
        }
        loop {
            match self.catch_up(last).await {
                Ok(Some(rv)) => last = rv,
                Ok(None) => return,
                Err(e) => {
                    let _ = self.send(line("ERROR", status_value(&e))).await;
                    return;
                }
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
                        let mark = crate::api::kube::bookmark_object(&MACHINES, &last.to_string());
                        if !self.send(line("BOOKMARK", mark)).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// `ADDED` for every current machine the watch sees; the resourceVersion they are
    /// consistent with (read before them: a change made meanwhile follows as its own event).
    async fn initial(&mut self) -> Result<Option<i64>, KubeError> {
        let (rv, _) = self.store.registry_bounds().await?;
        let (clusters, nodegroups) = name_filters(&self.selectors.labels);
        let mut after = None;
        loop {
            let page = MachinePage {
                project: self.visible.project(),
                after: after.clone(),
                clusters: clusters.clone(),
                nodegroups: nodegroups.clone(),
                limit: BATCH,
            };
            let rows = self.store.machine_page(&page).await?;
            let done = rows.len() < BATCH as usize;
            for e in &rows {
                after = Some(e.key());
                if !self.admits(e) {
                    continue;
                }
                let line = self.event("ADDED", e);
                if !self.send(line).await {
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
            let changes = self.store.machine_changes(last, BATCH).await?;
            let Some(end) = changes.last().map(|c| c.entry.resource_version) else {
                return Ok(Some(last));
            };
            let full = changes.len() == BATCH as usize;
            for ch in &changes {
                if !self.admits(&ch.entry) {
                    continue;
                }
                let line = self.event(ch.change.as_str(), &ch.entry);
                if !self.send(line).await {
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
