//! A shared view's watch resumed from a resourceVersion, on PostgreSQL and SQLite: the bound
//! reader's view is decided by the groups and bindings as they are when the watch starts, so a
//! replayed line of a cluster it may have held and reaches no longer is a 410 `Expired` (the
//! client lists again); lines it can place stream as usual.

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::{spawn_with, Backend, TestApp};
use crate::registry_groups::{get, relabel, share, who, GROUPS, REG};

macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn on_postgres() {
                ($body)(spawn_with(Backend::Postgres, |_| {}).await).await;
            }
            #[tokio::test]
            async fn on_sqlite() {
                ($body)(spawn_with(Backend::Sqlite, |_| {}).await).await;
            }
        }
    };
}

/// The resourceVersion of a list of project A's clusters as the caller sees it, and its names.
async fn listed(app: &TestApp, h: &HeaderMap) -> (String, Vec<String>) {
    let r = get(app, &format!("{REG}/namespaces/project-a/clusters"), h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let names = r.body["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    let rv = r.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list resourceVersion")
        .to_string();
    (rv, names)
}

/// The lines of a watch of project A's clusters resumed after `rv`, ending after a second.
async fn resumed(app: &TestApp, h: &HeaderMap, rv: &str) -> Vec<Value> {
    let r = get(
        app,
        &format!(
            "{REG}/namespaces/project-a/clusters?watch=true&resourceVersion={rv}&timeoutSeconds=1"
        ),
        h,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The one line of a watch that answers 410: an `ERROR` event with an `Expired` Status.
fn assert_expired(lines: &[Value], rv: &str) {
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "ERROR", "{lines:?}");
    let status = &lines[0]["object"];
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], 410, "{status}");
    assert_eq!(status["reason"], "Expired", "{status}");
    let m = status["message"].as_str().unwrap_or("");
    assert!(
        m.starts_with(&format!("too old resource version: {rv} (")),
        "{m}"
    );
}

fn events(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .map(|v| {
            (
                v["type"].as_str().unwrap_or("").to_string(),
                v["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

both!(
    a_resumed_shared_watch_streams_what_it_can_place_and_is_410_when_a_cluster_left_its_view,
    |app: TestApp| async move {
        let app = &app;
        let w = who(app);
        let (g, read_binding, _) = share(app, &w).await;

        // A change the reader can place: `shared` relabelled and still in the group.
        let (rv, names) = listed(app, &w.reader).await;
        assert_eq!(names, ["shared"]);
        let r = relabel(
            app,
            &w.owner,
            "project-a",
            "shared",
            json!({"share": "yes", "tier": "gold"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let lines = resumed(app, &w.reader, &rv).await;
        assert_eq!(
            events(&lines),
            [("MODIFIED".to_string(), "shared".to_string())],
            "{lines:?}"
        );
        assert_eq!(lines[0]["object"]["metadata"]["labels"]["tier"], "gold");

        // A change of a cluster the reader does not reach (`private`) cannot be told apart
        // from one that left its view: the resume is 410, naming nothing of `private`.
        let (rv, _) = listed(app, &w.reader).await;
        let r = relabel(
            app,
            &w.owner,
            "project-a",
            "private",
            json!({"share": "no", "x": "y"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let lines = resumed(app, &w.reader, &rv).await;
        assert_expired(&lines, &rv);
        assert!(!lines[0].to_string().contains("private"), "{lines:?}");

        // A project bound nothing resumes across namespaces without a 410: it held nothing
        // of A's.
        let r = get(
            app,
            &format!("{REG}/clusters?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
            &w.unbound,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.text, "", "{}", r.text);

        // The owner's own watch resumed from the same version is never refused.
        let own = resumed(app, &w.owner, &rv).await;
        assert_eq!(
            events(&own),
            [("MODIFIED".to_string(), "private".to_string())],
            "{own:?}"
        );

        // `shared` leaves the group after the reader's list: the resume is 410, and the list
        // the client makes next no longer has it.
        let (rv, names) = listed(app, &w.reader).await;
        assert_eq!(names, ["shared"]);
        let r = relabel(app, &w.owner, "project-a", "shared", json!({"share": "no"})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_expired(&resumed(app, &w.reader, &rv).await, &rv);
        let (_, names) = listed(app, &w.reader).await;
        assert!(names.is_empty(), "{names:?}");

        // Back in the group; then the reader's binding to it goes (another, to a group
        // reaching nothing, stays): 410 again.
        let r = app
            .post_as(
                GROUPS,
                &json!({"name": "none", "selector": "share=never"}),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let none = r.body["uuid"].as_str().expect("a uuid").to_string();
        let r = app
            .post_as(
                &format!("{GROUPS}/{none}/bindings"),
                &json!({"project_id": "project-r", "access": "read"}),
                &w.owner,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let last = r.body["uuid"].as_str().expect("a uuid").to_string();
        let r = relabel(
            app,
            &w.owner,
            "project-a",
            "shared",
            json!({"share": "yes"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let (rv, names) = listed(app, &w.reader).await;
        assert_eq!(names, ["shared"]);
        let r = app
            .delete_as(&format!("{GROUPS}/{g}/bindings/{read_binding}"), &w.owner)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        assert_expired(&resumed(app, &w.reader, &rv).await, &rv);

        // Its last binding goes too: bound nothing now, it is still asked (a binding to it
        // changed after the version), in A's namespace and across namespaces.
        let r = app
            .delete_as(&format!("{GROUPS}/{none}/bindings/{last}"), &w.owner)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        assert_expired(&resumed(app, &w.reader, &rv).await, &rv);
        let r = get(
            app,
            &format!("{REG}/clusters?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
            &w.reader,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let lines: Vec<Value> = r
            .text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_expired(&lines, &rv);

        // A watch from a version after the last change streams (nothing to replay).
        let (rv, _) = listed(app, &w.owner).await;
        let lines = resumed(app, &w.writer, &rv).await;
        assert!(lines.is_empty(), "{lines:?}");
    }
);
