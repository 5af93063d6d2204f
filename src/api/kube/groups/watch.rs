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
use crate::api::kube::follow::{self, respond, start_at, Follow, Lines};
use crate::api::kube::list::ListOptions;
use crate::api::kube::request::{accept, Params, Visible};
use crate::api::kube::scan::Selectors;
use crate::api::kube::status::{KubeError, Resource};
use crate::api::kube::table::{wants_table, watch_event_table, IncludeObject};
use crate::api::kube::watch::{line, timeout_of, Start};
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
    let from = match start_at(state, o).await? {
        Ok(from) => from,
        Err(expired) => return Ok(expired),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let watch = Watch {
        state: state.clone(),
        kind,
        visible,
        selectors,
        table: wants_table(accept(req)),
        include,
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
    state: web::Data<AppState>,
    kind: Kind,
    visible: Visible,
    selectors: Selectors,
    table: bool,
    include: IncludeObject,
    /// Whether the next Table event is the first (the one that carries the columns).
    first: bool,
    lines: Lines,
}

impl Watch {
    fn store(&self) -> &dyn Store {
        self.state.store.as_ref()
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
        follow::run(&mut self, from).await;
    }
}

impl Follow for Watch {
    fn resource(&self) -> &'static Resource {
        self.kind.resource()
    }

    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
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
            if !self.lines.send(line).await {
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
