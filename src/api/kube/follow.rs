//! The watch the kinds that read their own change logs share (machines, machine deployments,
//! cluster groups and their bindings), as [`super::watch`] describes it: where it starts (a
//! version older than the logs is a 410 `ERROR` line), the initial events of a streaming list
//! and their `k8s.io/initial-events-end` bookmark, then every change after its position, each
//! time the registry's feed moves, with a `BOOKMARK` after every [`BOOKMARK_EVERY`] without
//! events, until `timeoutSeconds` or the client goes. A kind says what its initial events and
//! its changes are ([`Follow`]).

use std::future::Future;
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::HttpResponse;
use tokio::sync::mpsc;

use super::list::{self, ListOptions};
use super::status::{status_value, KubeError, Resource};
use super::watch::{line, start_of, Start, BOOKMARK_EVERY, MAX_WATCH};
use crate::api::AppState;

/// Where a watch asked with `o` starts, read now; `Err` with the answer (the 410 line) when
/// it starts before the logs.
pub(super) async fn start_at(
    state: &AppState,
    o: &ListOptions,
) -> Result<Result<Start, HttpResponse>, KubeError> {
    let (latest, pruned) = state.store.registry_bounds().await?;
    Ok(start_of(o, latest, pruned)?.map_err(|expired| {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(expired)
    }))
}

/// The lines of one watch: the feed it waits on, whether it sends bookmarks and the channel
/// its lines go to.
pub(super) struct Lines {
    pub feed: tokio::sync::watch::Receiver<i64>,
    pub bookmarks: bool,
    pub tx: mpsc::Sender<Bytes>,
}

impl Lines {
    /// Sends a line; `false` when the client is gone.
    pub async fn send(&self, bytes: Option<Bytes>) -> bool {
        match bytes {
            Some(b) => self.tx.send(b).await.is_ok(),
            None => true,
        }
    }
}

/// What a kind's watch reads.
pub(super) trait Follow {
    /// The kind, as its bookmarks name it.
    fn resource(&self) -> &'static Resource;
    fn lines(&mut self) -> &mut Lines;
    /// `ADDED` for every current object the watch sees; the resourceVersion they are
    /// consistent with, `None` when the client is gone.
    async fn initial(&mut self) -> Result<Option<i64>, KubeError>;
    /// Sends every change after `last` that the watch sees; the new position, `None` when the
    /// client is gone.
    async fn catch_up(&mut self, last: i64) -> Result<Option<i64>, KubeError>;
}

/// Streams `w` from `from` until the client is gone or the feed ends.
pub(super) async fn run<W: Follow>(w: &mut W, from: Start) {
    let resource = w.resource();
    let mut last = match from {
        Start::After(n) => n,
        Start::Initial => match w.initial().await {
            Ok(Some(rv)) => rv,
            Ok(None) => return,
            Err(e) => {
                let _ = w.lines().send(line("ERROR", status_value(&e))).await;
                return;
            }
        },
    };
    if from == Start::Initial && w.lines().bookmarks {
        let mark = list::initial_events_end(resource, &last.to_string());
        if !w.lines().send(line("BOOKMARK", mark)).await {
            return;
        }
    }
    loop {
        match w.catch_up(last).await {
            Ok(Some(rv)) => last = rv,
            Ok(None) => return,
            Err(e) => {
                let _ = w.lines().send(line("ERROR", status_value(&e))).await;
                return;
            }
        }
        let lines = w.lines();
        let pause = if lines.bookmarks {
            BOOKMARK_EVERY
        } else {
            MAX_WATCH
        };
        tokio::select! {
            changed = lines.feed.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = lines.tx.closed() => return,
            () = tokio::time::sleep(pause) => {
                if lines.bookmarks {
                    let mark = super::bookmark_object(resource, &last.to_string());
                    if !lines.send(line("BOOKMARK", mark)).await {
                        return;
                    }
                }
            }
        }
    }
}

/// The streaming answer of the lines `rx` receives, sent by `run` on a task of its own that
/// ends after `timeout`.
pub(super) fn respond(
    run: impl Future<Output = ()> + Send + 'static,
    timeout: Duration,
    rx: mpsc::Receiver<Bytes>,
) -> HttpResponse {
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let _ = tokio::time::timeout_at(deadline, run).await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, actix_web::Error>(b), rx))
    });
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(stream)
}
