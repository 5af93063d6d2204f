//! `kubectl get clustergroups -w` and `kubectl get clustergroupbindings -w`: `?watch=true` on
//! either kind's lists, a chunked stream of newline-delimited watch events read from the
//! groups' change log (`cluster_group_change`), so it sees changes made through either API
//! by any process. The semantics are the clusters' and machines' watches', on the registry's
//! one resourceVersion counter:
//!
//! - A streaming list (`sendInitialEvents=true`, which a watch without `resourceVersion` or
//!   with `0` defaults to): an `ADDED` for every current object the list shows, then with
//!   `allowWatchBookmarks=true` the `BOOKMARK` annotated `k8s.io/initial-events-end`; a
//!   `resourceVersion` the server has not reached is a 504.
//! - `resourceVersion=N`: every change after N, then live ones; N older than the log's window
//!   answers one `ERROR` event with a 410 `Expired` Status.
//! - `allowWatchBookmarks=true`: a `BOOKMARK` with the latest resourceVersion after every
//!   [`BOOKMARK_EVERY`] without events; `timeoutSeconds` ends the stream (at most
//!   [`MAX_WATCH`]).
//!
//! A watch shows what its list shows: the objects of the namespaces its `Visible` admits that
//! the field selectors keep (neither kind carries labels). A line keeps its object whole, so
//! a `DELETED` event carries the object's last state.

use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;
use tokio::sync::mpsc;

use super::listing::object_name;
use super::object::{binding, group_shown, MemberStatus};
use super::{current, table, Kind, Named};
use crate::api::kube::list::{self, ListOptions};
use crate::api::kube::request::{accept, Params, Visible};
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::{status_value, KubeError};
use crate::api::kube::table::{wants_table, watch_event_table, IncludeObject};
use crate::api::kube::watch::{line, start_of, timeout_of, Start, BOOKMARK_EVERY, MAX_WATCH};
use crate::api::AppState;
use crate::store::{GroupObject, Store};

/// Change-log lines read per statement.
const BATCH: u32 = 500;

/// One object of either kind, as an event carries it.
enum Shown {
    Group(super::object::Group),
    Binding(super::object::Binding),
}

impl Shown {
    fn of(o: &GroupObject) -> Shown {
        match o {
            GroupObject::Group(g, members) => Shown::Group(group_shown(
                g,
                members
                    .iter()
                    .map(|m| MemberStatus {
                        namespace: m.namespace.clone(),
                        name: m.name.clone(),
                        state: m.state.clone(),
                    })
                    .collect(),
            )),
            GroupObject::Binding(b, group) => Shown::Binding(binding(b, group)),
        }
    }

    fn value(&self) -> Value {
        match self {
            Shown::Group(g) => serde_json::to_value(g),
            Shown::Binding(b) => serde_json::to_value(b),
        }
        .unwrap_or(Value::Null)
    }

    fn resource_version(&self) -> String {
        let m = match self {
            Shown::Group(g) => g.meta(),
            Shown::Binding(b) => b.meta(),
        };
        m.resource_version.clone().unwrap_or_default()
    }

    /// The one-row Table of the object (the columns with the first).
    fn table(&self, include: IncludeObject, first: bool) -> Value {
        let now = chrono::Utc::now();
        let (columns, body) = match self {
            Shown::Group(g) => (
                table::group_columns(),
                table::group_table(std::slice::from_ref(g), include, now),
            ),
            Shown::Binding(b) => (
                table::binding_columns(),
                table::binding_table(std::slice::from_ref(b), include, now),
            ),
        };
        let row = body["rows"][0].clone();
        watch_event_table(columns, row, &self.resource_version(), first)
    }
}

/// Starts a watch of `kind`: checks the starting version now (a 410 for a version too old is
/// the stream's first line) and streams from a task of its own.
pub(super) async fn start(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    kind: Kind,
    visible: Visible,
    p: &Params,
    o: &ListOptions,
) -> Result<HttpResponse, KubeError> {
    let selectors = Selectors::parse(p)?;
    let include = IncludeObject::parse(p.include_object.as_deref())?;
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
        state: state.clone(),
        feed: state.registry_feed.subscribe(),
        kind,
        visible,
        selectors,
        table: wants_table(accept(req)),
        include,
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
    state: web::Data<AppState>,
    feed: tokio::sync::watch::Receiver<i64>,
    kind: Kind,
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
    fn store(&self) -> &dyn Store {
        self.state.store.as_ref()
    }

    /// Sends a line; `false` when the client is gone.
    async fn send(&self, bytes: Option<Bytes>) -> bool {
        match bytes {
            Some(b) => self.tx.send(b).await.is_ok(),
            None => true,
        }
    }

    fn admits(&self, namespace: &str, name: &str) -> bool {
        self.visible.admits(namespace)
            && self
                .selectors
                .matches(name, namespace, &std::collections::BTreeMap::new())
    }

    /// The event of one object: the object, or a one-row Table of it.
    fn event(&mut self, kind: &str, o: &Shown) -> Option<Bytes> {
        if !self.table {
            return line(kind, o.value());
        }
        let body = o.table(self.include, self.first);
        self.first = false;
        line(kind, body)
    }

    #[tracing::instrument(name = "cluster_groups.watch", skip_all, fields(kind = ?self.kind, from = ?from))]
    async fn run(mut self, from: Start) {
        let resource = self.kind.resource();
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
            let mark = list::initial_events_end(resource, &last.to_string());
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
                        let mark = crate::api::kube::bookmark_object(resource, &last.to_string());
                        if !self.send(line("BOOKMARK", mark)).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// `ADDED` for every current object the watch sees; the resourceVersion they are
    /// consistent with (read before them: a change made meanwhile follows as its own event).
    async fn initial(&mut self) -> Result<Option<i64>, KubeError> {
        let (rv, _) = self.store().registry_bounds().await?;
        let shown: Vec<Shown> = match self.kind {
            Kind::Groups => current::groups(&self.state, &self.visible)
                .await?
                .into_iter()
                .map(Shown::Group)
                .collect(),
            Kind::Bindings => current::bindings(&self.state, &self.visible)
                .await?
                .into_iter()
                .map(Shown::Binding)
                .collect(),
        };
        for o in &shown {
            let m = match o {
                Shown::Group(g) => g.meta(),
                Shown::Binding(b) => b.meta(),
            };
            let (ns, name) = (
                m.namespace.clone().unwrap_or_default(),
                m.name.clone().unwrap_or_default(),
            );
            if !self.admits(&ns, &name) {
                continue;
            }
            let line = self.event("ADDED", o);
            if !self.send(line).await {
                return Ok(None);
            }
        }
        Ok(Some(rv))
    }

    /// Sends every change after `last` that this watch sees; the new position.
    async fn catch_up(&mut self, mut last: i64) -> Result<Option<i64>, KubeError> {
        loop {
            let changes = self.store().cluster_group_changes(last, BATCH).await?;
            let Some(end) = changes.last().map(|c| c.resource_version) else {
                return Ok(Some(last));
            };
            let full = changes.len() == BATCH as usize;
            for ch in &changes {
                if !self.kind.holds(&ch.object)
                    || !self.admits(ch.object.project_id(), &object_name(&ch.object))
                {
                    continue;
                }
                let line = self.event(ch.change.as_str(), &Shown::of(&ch.object));
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
