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
use crate::api::kube::follow::{self, respond, start_at, Follow, Lines};
use crate::api::kube::list::ListOptions;
use crate::api::kube::request::{accept, Params, Visible};
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::{KubeError, Resource, MACHINES};
use crate::api::kube::table::{wants_table, watch_event_table, IncludeObject};
use crate::api::kube::watch::{line, timeout_of, Start};
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
    };
    Ok(respond(watch.run(from), timeout_of(p), rx))
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
}

impl Watch {
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
        follow::run(&mut self, from).await;
    }
}

impl Follow for Watch {
    fn resource(&self) -> &'static Resource {
        &MACHINES
    }

    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
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
                if !self.lines.send(line).await {
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
                if !self.lines.send(line).await {
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
