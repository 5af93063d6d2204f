//! Queued federation jobs: each job applies exactly its own change, whatever later requests
//! did to the federation's member list before the conductor got to it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::id;
use crate::helpers::{
    drain_polling, labelled_cluster_as, spawn_fleet, template_as, uuid_of, Api, TestApp,
};

#[tokio::test]
async fn a_join_queued_before_a_replace_that_drops_the_member_still_applies_its_own_change() {
    let fleet = spawn_fleet(|_| {}).await;
    let app = &fleet.app;
    let template = template_as(app, "k8s", json!({}), &app.headers).await;
    let host = labelled_cluster_as(app, &app.headers, &template, "host", json!({})).await;
    let x = labelled_cluster_as(app, &app.headers, &template, "x", json!({})).await;
    let y = labelled_cluster_as(app, &app.headers, &template, "y", json!({})).await;
    drain_polling(&fleet.conductor).await;
    let r = app
        .create_federation(
            &json!({"name": "fed", "hostcluster_id": host, "member_ids": [y],
                                   "properties": {"dns-zone": "example.com."}}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let fed = uuid_of(&r.body);
    drain_polling(&fleet.conductor).await;

    // Join x, then (before any job runs) a client replaces the list from a view taken before
    // the join: x and y both go.
    let r = app.join(&fed, &x).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let r = app
        .patch_federation(
            &fed,
            &json!([{"op": "replace", "path": "/member_ids", "value": []}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain_polling(&fleet.conductor).await;

    let jobs = app.store.jobs_for(id(&fed)).await.expect("jobs");
    let updates: Vec<(Value, String, Option<String>)> = jobs
        .iter()
        .filter(|(j, _)| j.operation.as_str() == "federation.update")
        .map(|(j, state)| (j.payload.stored(), state.clone(), j.last_error.clone()))
        .collect();
    assert_eq!(
        updates,
        vec![
            (json!({"joined": [x], "unjoined": []}), "done".into(), None),
            (
                json!({"joined": [], "unjoined": [y, x]}),
                "done".into(),
                None
            ),
        ],
        "no job fails for a member that exists"
    );
    let shown = app.get_federation(&fed).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_eq!(shown.body["status"], "UPDATE_COMPLETE", "{}", shown.text);
    assert_eq!(shown.body["status_reason"], Value::Null);
    assert_eq!(shown.body["member_ids"], json!([]));
}

/// Polls the federation until its status is `want`; the time it took.
async fn wait_for_status(app: &TestApp, fed: &str, want: &str) -> Duration {
    let started = Instant::now();
    loop {
        let shown = app.get_federation(fed).await;
        assert_eq!(shown.status, 200, "{}", shown.text);
        if shown.body["status"] == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still {} after 20 s",
            shown.body["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn work_a_driver_finishes_in_a_second_is_seen_long_before_the_next_sync_tick() {
    let fleet = spawn_fleet(|s| {
        s.fake_driver.federation_seconds = 1;
        s.conductor.sync_interval = 60;
    })
    .await;
    let app = &fleet.app;
    let template = template_as(app, "k8s", json!({}), &app.headers).await;
    let host = labelled_cluster_as(app, &app.headers, &template, "host", json!({})).await;
    let x = labelled_cluster_as(app, &app.headers, &template, "x", json!({})).await;
    let conductor = Arc::new(fleet.conductor);
    let running = tokio::spawn(conductor.clone().run());

    let r = app
        .create_federation(&json!({"name": "fed", "hostcluster_id": host,
                                   "properties": {"dns-zone": "example.com."}}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let fed = uuid_of(&r.body);
    let created = wait_for_status(app, &fed, "CREATE_COMPLETE").await;
    let r = app.join(&fed, &x).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let joined = wait_for_status(app, &fed, "UPDATE_COMPLETE").await;
    running.abort();
    // The driver needs a second; the regular sync would come after 60. Early polls follow
    // the start at 0.2, 0.6, 1.4, 3.0 s: generous bounds for a loaded machine.
    for (what, took) in [("create", created), ("join", joined)] {
        assert!(
            took < Duration::from_secs(10),
            "{what} waited for the sync tick: {took:?}"
        );
    }
}
