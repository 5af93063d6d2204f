//! A conductor killed with SIGKILL in the middle of a node group's rolling replacement: once
//! after the first machines were replaced, once again while the next replacements are under
//! way. Each conductor started after a kill takes the roll over when the lease expires, reads
//! from the machines what is left and finishes it: every machine replaced exactly once (its
//! second simulated server, `fake://<uuid>/2`, never a third), none lost, each machine's
//! notifications written once.

use std::time::Duration;

use serde_json::json;

use super::db::{eventually, Db};
use super::process::{Env, Process, Role};
use crate::helpers::{at, cluster_as, conductor, drain, instant, spawn_with, template_as, Backend};

const WORKERS: i64 = 5;

/// Workers on the new flavor with their second server: replaced once.
const REPLACED: &str = "SELECT COUNT(*) FROM machine WHERE role = 'worker' AND \
    phase = 'Running' AND spec->>'flavor' = 'm1.large' AND provider_id = 'fake://' || uuid || '/2'";

/// Workers whose replacement is under way.
const IN_FLIGHT: &str =
    "SELECT COUNT(*) FROM machine WHERE role = 'worker' AND phase = 'Provisioning'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conductor_killed_mid_roll_and_started_again_replaces_each_machine_once() {
    let app = spawn_with(Backend::Postgres, |_| {}).await;
    let db = Db::open(&app.db.url).await;
    let t = template_as(&app, "roll", json!({}), &app.headers).await;
    let body = json!({"name": "roll", "cluster_template_id": t, "node_count": WORKERS,
                      "flavor_id": "m1.small"});
    let cluster = cluster_as(&app, body, &app.headers).await;
    drain(&conductor(&app, instant())).await;
    let workers = "SELECT uuid FROM machine WHERE role = 'worker' ORDER BY uuid";
    let before = db.column(workers).await;
    assert_eq!(before.len(), WORKERS as usize);

    let r = app
        .patch_as(
            &format!("/v1/clusters/{cluster}/nodegroups/default-worker"),
            &json!([
                {"op": "replace", "path": "/flavor_id", "value": "m1.large"},
                {"op": "replace", "path": "/max_batch_size", "value": 2}
            ]),
            &at(&app.headers, "latest"),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);

    // Each replacement takes two seconds; a killed conductor's lease lapses after two.
    let env = Env::new(&app.db.url)
        .set("CONDUCTOR__LEASE_SECONDS", 2)
        .set("CONDUCTOR__SYNC_INTERVAL", 1)
        .set("CONDUCTOR__RETRY_DELAY", 0.2)
        .set("FAKE_DRIVER__UPDATE_SECONDS", 2);
    let mut first = Process::start(Role::Conductor, "roll-conductor-0", &env).await;
    let some_replaced = eventually(Duration::from_secs(60), || async {
        db.count(REPLACED).await >= 1
    })
    .await;
    assert!(some_replaced, "no machine replaced: {}", first.log_tail());
    assert!(first.running(), "{}", first.log_tail());
    first.kill().await;
    let at_first_kill = db.count(REPLACED).await;
    assert!(
        at_first_kill < WORKERS,
        "the kill landed mid-roll ({at_first_kill} replaced)"
    );

    // The next conductor resumes; it is killed while its replacements are under way.
    let mut second = Process::start(Role::Conductor, "roll-conductor-1", &env).await;
    let resumed = eventually(Duration::from_secs(60), || async {
        db.count(REPLACED).await > at_first_kill && db.count(IN_FLIGHT).await >= 1
    })
    .await;
    assert!(resumed, "the roll did not resume: {}", second.log_tail());
    second.kill().await;
    let at_second_kill = db.count(REPLACED).await;
    assert!(at_second_kill < WORKERS, "{at_second_kill} replaced");
    assert_eq!(
        db.column(workers).await,
        before,
        "no machine lost or added at the kills"
    );

    // The third one finishes the roll.
    let mut third = Process::start(Role::Conductor, "roll-conductor-2", &env).await;
    let finished = eventually(Duration::from_secs(120), || async {
        db.count("SELECT COUNT(*) FROM job WHERE state = 'pending'")
            .await
            == 0
    })
    .await;
    assert!(
        finished,
        "the roll did not finish: {:?} {}",
        db.rows(
            "SELECT operation, CAST(attempts AS TEXT), COALESCE(last_error, '') FROM job \
                 WHERE state = 'pending'"
        )
        .await,
        third.log_tail()
    );
    third.kill().await;
    println!(
        "rolling kill drill: {at_first_kill} replaced at the first kill, {at_second_kill} at \
         the second"
    );

    // ---- Every machine replaced exactly once, none lost ------------------------------------
    assert_eq!(db.column(workers).await, before, "the same machines");
    assert_eq!(
        db.count(REPLACED).await,
        WORKERS,
        "each on its second server"
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM machine WHERE provider_id LIKE '%/3'")
            .await,
        0,
        "none replaced twice"
    );
    let statuses = db
        .rows(&format!(
            "SELECT c.status, n.status, CAST(n.node_count AS TEXT) FROM cluster c JOIN \
             nodegroup n ON n.cluster_id = c.uuid WHERE c.uuid = '{cluster}' AND \
             n.name = 'default-worker'"
        ))
        .await;
    assert_eq!(
        statuses,
        vec![vec![
            "UPDATE_COMPLETE".to_string(),
            "UPDATE_COMPLETE".to_string(),
            WORKERS.to_string()
        ]]
    );
    let roll = db
        .rows("SELECT state, COALESCE(last_error, '') FROM job WHERE operation = 'nodegroup.roll'")
        .await;
    assert_eq!(roll, vec![vec!["done".to_string(), String::new()]]);
    db.assert_each_event_written_once().await;
    let machine_events = db
        .rows(
            "SELECT message->'payload'->>'outcome', CAST(COUNT(*) AS TEXT) FROM outbox \
             WHERE event_type = 'magnum.machine.update' GROUP BY 1 ORDER BY 1",
        )
        .await;
    assert_eq!(
        machine_events,
        vec![
            vec!["pending".to_string(), WORKERS.to_string()],
            vec!["success".to_string(), WORKERS.to_string()]
        ],
        "one start and one end per machine"
    );
}
