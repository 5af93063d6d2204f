//! The scale-out run: three `fleetyard api` and three `fleetyard conductor` processes on one
//! PostgreSQL database and one RabbitMQ, driven by a round-robin client through the life
//! cycle of `FLEETYARD_DRILL_CLUSTERS` clusters (60 by default, 1,000 under `./tox.sh drills`)
//! and `FLEETYARD_DRILL_FEDERATIONS` federations (6; 100): create, federate, join, delete.
//! One API and one conductor process are killed with SIGKILL in each phase and restarted.
//! Every effect happens once (jobs, final states, notifications written), every event reaches
//! the broker (a duplicate only with its own message id), and the read throughput of one API
//! process is compared with three.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::bus::{amqp_url, collect, unique};
use super::db::{eventually, Db};
use super::process::{Env, Process, Role};
use crate::helpers::{open_store, Backend};

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The client side: API addresses taken in turn; a request that finds its process dead is
/// sent again to the next one.
struct Cloud {
    apis: RwLock<Vec<String>>,
    next: AtomicUsize,
    client: reqwest::Client,
    /// Requests sent again after a dead process or a 503.
    retries: AtomicUsize,
}

impl Cloud {
    fn pick(&self) -> String {
        let apis = self.apis.read().expect("apis");
        apis[self.next.fetch_add(1, Ordering::Relaxed) % apis.len()].clone()
    }

    fn replace(&self, old: &str, new: &str) {
        for url in self.apis.write().expect("apis").iter_mut() {
            if url == old {
                *url = new.to_string();
            }
        }
    }

    /// One attempt on the next API: status and body, or `None` when no answer came.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Option<(u16, Value)> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.pick()))
            .header("OpenStack-API-Version", "container-infra latest");
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.ok()?;
        let status = resp.status().as_u16();
        let text = resp.text().await.ok()?;
        Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Sends until an answer other than "no answer" or 503 comes (at most 30 tries); whether
    /// the request had to be sent again, and the answer.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (bool, u16, Value) {
        for attempt in 0..30 {
            match self.send(method.clone(), path, body).await {
                Some((503, _)) | None => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Some((status, b)) => return (attempt > 0, status, b),
            }
        }
        panic!("{method} {path}: no API answered in 30 tries");
    }

    /// Creates `name` at `collection`; its uuid. A create whose first answer was lost and
    /// whose resend finds the name taken was committed: it is looked up by name.
    async fn create(&self, collection: &str, name: &str, body: Value) -> String {
        let (resent, status, b) = self
            .call(reqwest::Method::POST, collection, Some(&body))
            .await;
        match status {
            201 | 202 => b["uuid"].as_str().expect("uuid").to_string(),
            409 if resent => {
                let (_, status, shown) = self
                    .call(reqwest::Method::GET, &format!("{collection}/{name}"), None)
                    .await;
                assert_eq!(status, 200, "{name}: {shown}");
                shown["uuid"].as_str().expect("uuid").to_string()
            }
            s => panic!("create {name}: {s} {b}"),
        }
    }

    /// A request that answers one of `ok`; after a resend, `done` also counts (the first
    /// attempt did the work).
    async fn expect(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        ok: u16,
        done: &[u16],
    ) {
        let (resent, status, b) = self.call(method.clone(), path, body).await;
        assert!(
            status == ok || (resent && done.contains(&status)),
            "{method} {path}: {status} {b}"
        );
    }
}

/// Runs `work` over `items` with `n` at a time.
async fn each<T, F, Fut>(items: Vec<T>, n: usize, work: F)
where
    T: Send + 'static,
    F: Fn(T) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let queue = std::sync::Arc::new(tokio::sync::Mutex::new(items));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (queue, work) = (queue.clone(), work.clone());
            tokio::spawn(async move {
                loop {
                    let Some(item) = queue.lock().await.pop() else {
                        break;
                    };
                    work(item).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("worker");
    }
}

/// GETs of single clusters, 32 at a time for `secs`, spread over `apis`: requests a second.
async fn read_rate(apis: &[String], uuids: &[String], secs: u64) -> f64 {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let done = std::sync::Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..32)
        .map(|t| {
            let (client, done) = (client.clone(), done.clone());
            let (apis, uuids) = (apis.to_vec(), uuids.to_vec());
            tokio::spawn(async move {
                let mut i = t;
                while Instant::now() < deadline {
                    let url = format!(
                        "{}/v1/clusters/{}",
                        apis[i % apis.len()],
                        uuids[(i * 7) % uuids.len()]
                    );
                    let r = client.get(url).send().await.expect("answered");
                    assert_eq!(r.status(), 200);
                    let _ = r.bytes().await;
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    let started = Instant::now();
    for t in tasks {
        t.await.expect("reader");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Waits (up to `limit`) until `sql` counts zero.
async fn until_none(db: &Db, sql: &str, limit: Duration, what: &str) {
    let ok = eventually(limit, || async { db.count(sql).await == 0 }).await;
    assert!(ok, "{what}: {} left after {limit:?}", db.count(sql).await);
}

/// Kills API process `victim` and conductor process `victim`, and starts each again after a
/// pause; the client follows the API's new address.
async fn kill_and_restart(
    cloud: &Cloud,
    apis: &mut [Process],
    conductors: &mut [Process],
    victim: usize,
    env: &Env,
    kills: &mut usize,
) {
    for (procs, role) in [(apis, Role::Api), (conductors, Role::Conductor)] {
        let old = procs[victim].url.clone();
        procs[victim].kill().await;
        *kills += 1;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let name = format!("{}-restarted-{kills}", procs[victim].name);
        procs[victim] = Process::start(role, &name, env).await;
        if let (Some(old), Some(new)) = (old, procs[victim].url.clone()) {
            cloud.replace(&old, &new);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_apis_and_three_conductors_survive_kills_through_the_life_cycle() {
    let clusters_n = size("FLEETYARD_DRILL_CLUSTERS", 60);
    let federations_n = size("FLEETYARD_DRILL_FEDERATIONS", 6).min(clusters_n / 2);
    let wait = Duration::from_secs(60 + clusters_n as u64 / 2);
    let (store, test_db) = open_store(Backend::Postgres).await;
    drop(store);
    let db = Db::open(&test_db.url).await;
    let exchange = unique("fy-drill-scale");
    let topic = unique("notifications");
    let env = Env::new(&test_db.url)
        .set("DATABASE__MAX_POOL_SIZE", 8)
        .set("CONDUCTOR__LEASE_SECONDS", 3)
        .set("CONDUCTOR__SYNC_INTERVAL", 1)
        .set("CONDUCTOR__WORKERS", 4)
        .set("FAKE_DRIVER__CREATE_SECONDS", 1)
        .set("FAKE_DRIVER__UPDATE_SECONDS", 1)
        .set("FAKE_DRIVER__DELETE_SECONDS", 1)
        .set("FAKE_DRIVER__FEDERATION_SECONDS", 1)
        .set("OSLO_MESSAGING_NOTIFICATIONS__DRIVER", "messagingv2")
        .set("OSLO_MESSAGING_NOTIFICATIONS__TOPICS", &topic)
        .set("DEFAULT__TRANSPORT_URL", amqp_url())
        .set("DEFAULT__CONTROL_EXCHANGE", &exchange);
    let mut apis = Vec::new();
    let mut conductors = Vec::new();
    for i in 0..3 {
        apis.push(Process::start(Role::Api, &format!("api-{i}"), &env).await);
        conductors.push(Process::start(Role::Conductor, &format!("conductor-{i}"), &env).await);
    }
    let cloud = std::sync::Arc::new(Cloud {
        apis: RwLock::new(apis.iter().filter_map(|p| p.url.clone()).collect()),
        next: AtomicUsize::new(0),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
        retries: AtomicUsize::new(0),
    });
    let mut kills = 0;
    let started = Instant::now();
    let template = cloud
        .create(
            "/v1/clustertemplates",
            "scale",
            json!({"name": "scale", "coe": "kubernetes", "image_id": "fedora-coreos-40"}),
        )
        .await;

    // ---- Clusters: created while api-1 and conductor-1 are killed and restarted --------------
    let names: Vec<String> = (0..clusters_n).map(|i| format!("c{i:04}")).collect();
    let uuids = std::sync::Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let creating = {
        let (cloud, uuids, template) = (cloud.clone(), uuids.clone(), template.clone());
        tokio::spawn(each(names.clone(), 16, move |name: String| {
            let (cloud, uuids, template) = (cloud.clone(), uuids.clone(), template.clone());
            async move {
                let body = json!({"name": name, "cluster_template_id": template, "node_count": 1});
                let uuid = cloud.create("/v1/clusters", &name, body).await;
                uuids.lock().await.push((name, uuid));
            }
        }))
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    kill_and_restart(&cloud, &mut apis, &mut conductors, 1, &env, &mut kills).await;
    creating.await.expect("creates");
    until_none(
        &db,
        "SELECT COUNT(*) FROM cluster WHERE status <> 'CREATE_COMPLETE'",
        wait,
        "clusters not created",
    )
    .await;
    let created = Instant::now();
    let mut clusters = uuids.lock().await.clone();
    clusters.sort();
    assert_eq!(clusters.len(), clusters_n);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM cluster").await as usize,
        clusters_n,
        "one cluster per name"
    );

    // ---- Reads: one API process, then three --------------------------------------------------
    let ids: Vec<String> = clusters.iter().map(|(_, u)| u.clone()).collect();
    let all: Vec<String> = cloud.apis.read().expect("apis").clone();
    let one = read_rate(&all[..1], &ids, 5).await;
    let three = read_rate(&all, &ids, 5).await;

    // ---- Federations: created and joined while api-2 and conductor-2 are killed -------------
    let hosts: Vec<(usize, String)> = ids[..federations_n].iter().cloned().enumerate().collect();
    let feds = std::sync::Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let federating = {
        let (cloud, feds) = (cloud.clone(), feds.clone());
        tokio::spawn(each(hosts, 8, move |(i, host): (usize, String)| {
            let (cloud, feds) = (cloud.clone(), feds.clone());
            async move {
                let name = format!("f{i:03}");
                let body = json!({"name": name, "hostcluster_id": host,
                                  "properties": {"dns-zone": "example.com."}});
                let uuid = cloud.create("/v1/federations", &name, body).await;
                feds.lock().await.push((i, uuid));
            }
        }))
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill_and_restart(&cloud, &mut apis, &mut conductors, 2, &env, &mut kills).await;
    federating.await.expect("federation creates");
    until_none(
        &db,
        "SELECT COUNT(*) FROM federation WHERE status <> 'CREATE_COMPLETE'",
        wait,
        "federations not created",
    )
    .await;
    let mut federations = feds.lock().await.clone();
    federations.sort();
    let joins: Vec<(String, String)> = federations
        .iter()
        .map(|(i, f)| (f.clone(), ids[federations_n + i].clone()))
        .collect();
    {
        let cloud = cloud.clone();
        each(joins.clone(), 8, move |(f, member): (String, String)| {
            let cloud = cloud.clone();
            async move {
                let ops = json!([{"op": "add", "path": "/member_ids", "value": member}]);
                cloud
                    .expect(
                        reqwest::Method::PATCH,
                        &format!("/v1/federations/{f}"),
                        Some(&ops),
                        202,
                        &[400],
                    )
                    .await;
            }
        })
        .await;
    }
    until_none(
        &db,
        "SELECT COUNT(*) FROM federation WHERE status <> 'UPDATE_COMPLETE'",
        wait,
        "joins not done",
    )
    .await;
    for (f, member) in &joins {
        let members = db
            .column(&format!(
                "SELECT CAST(member_ids AS TEXT) FROM federation WHERE uuid = '{f}'"
            ))
            .await;
        assert_eq!(members, vec![format!("[\"{member}\"]")], "members of {f}");
    }
    let federated = Instant::now();

    // ---- Deletes: federations, then clusters, while conductor-0 and api-0 are killed --------
    {
        let cloud = cloud.clone();
        let fed_ids: Vec<String> = federations.iter().map(|(_, f)| f.clone()).collect();
        each(fed_ids, 8, move |f: String| {
            let cloud = cloud.clone();
            async move {
                cloud
                    .expect(
                        reqwest::Method::DELETE,
                        &format!("/v1/federations/{f}"),
                        None,
                        204,
                        &[404, 409],
                    )
                    .await;
            }
        })
        .await;
    }
    until_none(
        &db,
        "SELECT COUNT(*) FROM federation",
        wait,
        "federations not deleted",
    )
    .await;
    let deleting = {
        let cloud = cloud.clone();
        tokio::spawn(each(ids.clone(), 16, move |c: String| {
            let cloud = cloud.clone();
            async move {
                cloud
                    .expect(
                        reqwest::Method::DELETE,
                        &format!("/v1/clusters/{c}"),
                        None,
                        204,
                        &[404, 409],
                    )
                    .await;
            }
        }))
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill_and_restart(&cloud, &mut apis, &mut conductors, 0, &env, &mut kills).await;
    deleting.await.expect("deletes");
    until_none(
        &db,
        "SELECT COUNT(*) FROM cluster",
        wait,
        "clusters not deleted",
    )
    .await;
    let finished = Instant::now();

    // ---- Every effect once ---------------------------------------------------------------------
    let n = clusters_n as i64;
    let f = federations_n as i64;
    let jobs = db
        .rows(
            "SELECT operation, state, CAST(COUNT(*) AS TEXT) FROM job GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .await;
    let expected_jobs: Vec<Vec<String>> = [
        ("cluster.create", n),
        ("cluster.delete", n),
        ("federation.create", f),
        ("federation.delete", f),
        ("federation.update", f),
    ]
    .iter()
    .map(|(op, count)| vec![op.to_string(), "done".to_string(), count.to_string()])
    .collect();
    assert_eq!(jobs, expected_jobs, "jobs by operation and state");
    db.assert_each_event_written_once().await;
    let events = db
        .rows(
            "SELECT event_type, message->'payload'->>'outcome', CAST(COUNT(*) AS TEXT) \
             FROM outbox WHERE resource_type <> 'cluster_template' GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .await;
    let mut expected_events = Vec::new();
    for (kind, count) in [("cluster", n), ("federation", f)] {
        let actions: &[&str] = if kind == "cluster" {
            &["create", "delete"]
        } else {
            &["create", "delete", "update"]
        };
        for action in actions {
            for outcome in ["pending", "success"] {
                expected_events.push(vec![
                    format!("magnum.{kind}.{action}"),
                    outcome.to_string(),
                    count.to_string(),
                ]);
            }
        }
    }
    assert_eq!(events, expected_events, "notifications by type and outcome");

    // ---- Every event delivered ---------------------------------------------------------------
    until_none(
        &db,
        "SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL",
        Duration::from_secs(120),
        "events not relayed",
    )
    .await;
    let written: HashSet<String> = db
        .column("SELECT message_id FROM outbox")
        .await
        .into_iter()
        .collect();
    let got = collect(&exchange, &topic, Duration::from_secs(3)).await;
    let missing = written.iter().filter(|id| !got.contains_key(*id)).count();
    assert_eq!(missing, 0, "events never delivered");
    let strangers: Vec<&String> = got.keys().filter(|id| !written.contains(*id)).collect();
    assert!(
        strangers.is_empty(),
        "messages with no event's id: {strangers:?}"
    );
    let duplicates: usize = got.values().map(|n| n - 1).sum();
    let claims = db
        .count("SELECT CAST(SUM(attempts) AS BIGINT) FROM job")
        .await;
    let total_jobs = db.count("SELECT COUNT(*) FROM job").await;
    println!(
        "scale-out run: 3 API + 3 conductor processes, {clusters_n} clusters, {federations_n} \
         federations; {kills} processes killed and restarted; {} requests resent by the client; \
         {total_jobs} jobs done once in {claims} claims; {} events, all delivered, {duplicates} \
         duplicates (same message id); phases: create {:.1?}, federate {:.1?}, delete {:.1?}; \
         reads: 1 API {one:.0} req/s, 3 APIs {three:.0} req/s ({:.2}x)",
        cloud.retries.load(Ordering::Relaxed),
        written.len(),
        created - started,
        federated - created,
        finished - federated,
        three / one,
    );
}
