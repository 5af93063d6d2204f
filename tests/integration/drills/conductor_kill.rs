//! A conductor killed with SIGKILL at random points of 100 jobs: cluster creates, resizes,
//! node group creates, deletes, federation creates and joins. Conductor processes are started
//! and killed one after another for the whole run; each kill lands wherever the process was
//! (claiming, in a driver call, committing, polling). Leases expire, the next process takes
//! the work over, and in the end every job is done exactly once: each resource in its final
//! state, no job left pending or failed, and each notification written once.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::sync::watch;

use super::db::{eventually, Db};
use super::process::{Env, Process, Role};
use crate::helpers::{
    cluster_as, federation_body, join_ops, make_federation_as, spawn_with, Api, Backend, Resp,
};

/// The seed of the kill times: `FLEETYARD_DRILL_SEED`, or the clock (printed, to replay).
pub fn seed() -> u64 {
    std::env::var("FLEETYARD_DRILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        })
}

/// Starts conductor processes one after another, each killed with SIGKILL after a random
/// life of 100–900 ms, until stopped.
struct Killer {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<usize>,
}

impl Killer {
    fn start(env: Env, seed: u64) -> Killer {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut kills = 0;
            loop {
                let mut p =
                    Process::start(Role::Conductor, &format!("conductor-{kills}"), &env).await;
                // Short lives: at least ten kills within the drill, however fast the jobs go.
                let life = Duration::from_millis(rng.gen_range(60..600));
                let stop_now = tokio::select! {
                    _ = tokio::time::sleep(life) => false,
                    _ = stopped.changed() => true,
                };
                assert!(p.running(), "a conductor died on its own: {}", p.log_tail());
                p.kill().await;
                if stop_now {
                    return kills;
                }
                kills += 1;
            }
        });
        Killer { stop, task }
    }

    /// Stops the killing (the running conductor is killed too); how many were killed.
    async fn stop(self) -> usize {
        self.stop.send_replace(true);
        self.task.await.expect("the killer ran")
    }
}

/// Waits until no job is pending and no cluster or federation is in progress.
async fn settle(db: &Db, phase: &str) {
    let settled = eventually(Duration::from_secs(240), || async {
        db.count("SELECT COUNT(*) FROM job WHERE state = 'pending'")
            .await
            == 0
            && db
                .count("SELECT COUNT(*) FROM cluster WHERE status LIKE '%IN_PROGRESS'")
                .await
                == 0
            && db
                .count("SELECT COUNT(*) FROM federation WHERE status LIKE '%IN_PROGRESS'")
                .await
                == 0
    })
    .await;
    assert!(
        settled,
        "{phase}: work still pending after 240 s: {:?}",
        db.rows(
            "SELECT operation, resource_uuid, CAST(attempts AS TEXT), COALESCE(last_error, '') \
             FROM job WHERE state = 'pending'"
        )
        .await
    );
}

#[track_caller]
fn accepted(what: &str, r: Resp, status: u16) {
    assert_eq!(r.status, status, "{what}: {}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conductor_killed_at_random_points_of_100_jobs_does_each_effect_once() {
    let app = spawn_with(Backend::Postgres, |s| {
        s.quotas.max_clusters_per_project = 1000;
    })
    .await;
    let db = Db::open(&app.db.url).await;
    let seed = seed();
    println!("conductor kill drill: FLEETYARD_DRILL_SEED={seed}");
    let env = Env::new(&app.db.url)
        .set("CONDUCTOR__LEASE_SECONDS", 2)
        .set("CONDUCTOR__SYNC_INTERVAL", 1)
        .set("CONDUCTOR__WORKERS", 4)
        .set("FAKE_DRIVER__CREATE_SECONDS", 1)
        .set("FAKE_DRIVER__UPDATE_SECONDS", 1)
        .set("FAKE_DRIVER__DELETE_SECONDS", 1)
        .set("FAKE_DRIVER__FEDERATION_SECONDS", 1)
        .set("FAKE_DRIVER__LATENCY_MS", 40);
    let killer = Killer::start(env, seed);
    let api = app.at("latest");
    let template = app.make_template("drill", json!({})).await["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();

    // Phase 1: 50 cluster creates.
    let mut clusters = Vec::new();
    for i in 0..50 {
        let body =
            json!({"name": format!("c{i:02}"), "cluster_template_id": template, "node_count": 1});
        clusters.push(cluster_as(&app, body, &app.headers).await);
    }
    settle(&db, "creates").await;

    // Phase 2: 10 federation creates, 10 resizes, 10 node group creates, 10 deletes.
    let mut federations = Vec::new();
    for (i, host) in clusters[0..10].iter().enumerate() {
        let mut body = federation_body(host);
        body["name"] = json!(format!("f{i}"));
        federations.push(make_federation_as(&app, &body, &app.headers).await);
    }
    for c in &clusters[10..20] {
        let r = api.resize_cluster(c, &json!({"node_count": 3})).await;
        accepted("resize", r, 202);
    }
    for c in &clusters[20..30] {
        let r = api
            .create_nodegroup(c, &json!({"name": "extra", "node_count": 2}))
            .await;
        accepted("node group create", r, 202);
    }
    for c in &clusters[30..40] {
        let r = api.delete_cluster(c).await;
        accepted("delete", r, 204);
    }
    settle(&db, "resizes, node groups, deletes, federations").await;

    // Phase 3: 10 joins.
    for (f, member) in federations.iter().zip(&clusters[40..50]) {
        let r = api.patch_federation(f, &join_ops(member)).await;
        accepted("join", r, 202);
    }
    settle(&db, "joins").await;
    let kills = killer.stop().await;

    // ---- Every job done once ----------------------------------------------------------------
    let jobs = db
        .rows("SELECT state, CAST(COUNT(*) AS TEXT) FROM job GROUP BY state")
        .await;
    assert_eq!(
        jobs,
        vec![vec!["done".to_string(), "100".to_string()]],
        "jobs by state"
    );
    let retaken = db
        .count("SELECT COUNT(*) FROM job WHERE attempts > 1")
        .await;
    let attempts = db
        .count("SELECT CAST(SUM(attempts) AS BIGINT) FROM job")
        .await;
    println!(
        "conductor kill drill: {kills} conductors killed; 100 jobs done in {attempts} claims, \
         {retaken} jobs taken over after a kill"
    );
    assert!(kills >= 10, "the drill killed only {kills} conductors");
    assert_eq!(
        db.count("SELECT COUNT(*) FROM job WHERE last_error IS NOT NULL AND last_error <> ''")
            .await,
        0,
        "no job ended with an error: {:?}",
        db.rows("SELECT operation, last_error FROM job WHERE last_error <> ''")
            .await
    );

    // ---- Each resource in its final state -----------------------------------------------------
    let status_of = |uuid: &str| format!("SELECT status FROM cluster WHERE uuid = '{uuid}'");
    for c in clusters[0..10].iter().chain(&clusters[40..50]) {
        assert_eq!(
            db.column(&status_of(c)).await,
            vec!["CREATE_COMPLETE"],
            "{c}"
        );
    }
    for c in &clusters[10..30] {
        assert_eq!(
            db.column(&status_of(c)).await,
            vec!["UPDATE_COMPLETE"],
            "{c}"
        );
    }
    for c in &clusters[30..40] {
        assert!(db.column(&status_of(c)).await.is_empty(), "{c} is deleted");
    }
    for c in &clusters[10..20] {
        let counts = db
            .column(&format!(
                "SELECT CAST(node_count AS TEXT) FROM nodegroup WHERE cluster_id = '{c}' \
                 AND role <> 'master'"
            ))
            .await;
        assert_eq!(counts, vec!["3"], "the resize of {c} applied once");
    }
    for (i, c) in clusters.iter().enumerate() {
        let groups = db
            .column(&format!(
                "SELECT name FROM nodegroup WHERE cluster_id = '{c}' ORDER BY name"
            ))
            .await;
        let expected: &[&str] = match i {
            30..=39 => &[],
            20..=29 => &["default-master", "default-worker", "extra"],
            _ => &["default-master", "default-worker"],
        };
        assert_eq!(groups, expected, "node groups of {c}");
    }
    for (f, member) in federations.iter().zip(&clusters[40..50]) {
        let row = db
            .rows(&format!(
                "SELECT status, CAST(member_ids AS TEXT) FROM federation WHERE uuid = '{f}'"
            ))
            .await;
        assert_eq!(row.len(), 1, "{f}");
        assert_eq!(row[0][0], "UPDATE_COMPLETE", "{f}");
        let members: Vec<String> = serde_json::from_str(&row[0][1]).expect("member list");
        assert_eq!(
            members,
            vec![member.clone()],
            "the join of {member} applied once"
        );
    }

    // ---- Each notification written once -------------------------------------------------------
    db.assert_each_event_written_once().await;
    let events = db
        .rows(
            "SELECT event_type, message->'payload'->>'outcome', CAST(COUNT(*) AS TEXT) \
             FROM outbox GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .await;
    // Per operation: its `pending` from the API and its `success` from the conductor. A node
    // group create ends as its cluster's update, as in Magnum.
    let expected: Vec<Vec<String>> = [
        ("magnum.cluster.create", "pending", 50),
        ("magnum.cluster.create", "success", 50),
        ("magnum.cluster.delete", "pending", 10),
        ("magnum.cluster.delete", "success", 10),
        ("magnum.cluster.update", "pending", 10),
        ("magnum.cluster.update", "success", 20),
        ("magnum.cluster_template.create", "success", 1),
        ("magnum.federation.create", "pending", 10),
        ("magnum.federation.create", "success", 10),
        ("magnum.federation.update", "pending", 10),
        ("magnum.federation.update", "success", 10),
        ("magnum.nodegroup.create", "pending", 10),
    ]
    .iter()
    .map(|(t, o, n)| vec![t.to_string(), o.to_string(), n.to_string()])
    .collect();
    assert_eq!(events, expected, "notifications by type and outcome");
}
