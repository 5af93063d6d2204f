//! The API killed with SIGKILL in the middle of requests: sixteen clients write as fast as
//! they can (cluster creates, template creates, cluster deletes) while the process is killed
//! at a random moment, six times over. Whatever the clients heard, the database holds only
//! whole changes: every cluster with its node groups, its job and its notification, every
//! delete with its job and its notification, nothing a client was told had succeeded missing.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::conductor_kill::seed;
use super::db::{eventually, Db};
use super::process::{Env, Process, Role};
use crate::helpers::{open_store, Backend};

const ROUNDS: usize = 6;
const WRITERS: usize = 16;

/// What one client asked and whether it heard the answer.
#[derive(Debug, Default)]
struct Tally {
    /// Clusters and templates whose create was answered, deletes answered.
    clusters: Vec<String>,
    templates: Vec<String>,
    deleted: Vec<String>,
    /// Names of creates whose answer never came (the process died first).
    unanswered_clusters: Vec<String>,
    unanswered_templates: Vec<String>,
    /// Clusters whose delete was never answered.
    unanswered_deletes: Vec<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.clusters.extend(other.clusters);
        self.templates.extend(other.templates);
        self.deleted.extend(other.deleted);
        self.unanswered_clusters.extend(other.unanswered_clusters);
        self.unanswered_templates.extend(other.unanswered_templates);
        self.unanswered_deletes.extend(other.unanswered_deletes);
    }
}

/// Sends `body` (or nothing) and returns the status and body, or `None` when the connection
/// broke before an answer.
async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    let mut req = client
        .request(method, url)
        .header("X-Project-Id", "project-a")
        .header("X-User-Id", "user-a")
        .header("X-Roles", "member,reader")
        .header("OpenStack-API-Version", "container-infra latest");
    if let Some(b) = body {
        req = req.json(b);
    }
    let resp = req.send().await.ok()?;
    let status = resp.status().as_u16();
    let text = resp.text().await.ok()?;
    Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// One client's writes until the process dies under it.
async fn writer(client: reqwest::Client, base: String, template: String, tag: String) -> Tally {
    let mut t = Tally::default();
    let mut created: Option<String> = None;
    for i in 0.. {
        let name = format!("{tag}-{i}");
        match i % 3 {
            0 => {
                let body = json!({"name": name, "cluster_template_id": template, "node_count": 1});
                let url = format!("{base}/v1/clusters");
                match send(&client, reqwest::Method::POST, url, Some(&body)).await {
                    Some((202, b)) => {
                        let uuid = b["uuid"].as_str().expect("uuid").to_string();
                        created = Some(uuid.clone());
                        t.clusters.push(uuid);
                    }
                    Some((s, b)) => panic!("cluster create answered {s}: {b}"),
                    None => {
                        t.unanswered_clusters.push(name);
                        return t;
                    }
                }
            }
            1 => {
                let body =
                    json!({"name": name, "coe": "kubernetes", "image_id": "fedora-coreos-40"});
                let url = format!("{base}/v1/clustertemplates");
                match send(&client, reqwest::Method::POST, url, Some(&body)).await {
                    Some((201, b)) => t
                        .templates
                        .push(b["uuid"].as_str().expect("uuid").to_string()),
                    Some((s, b)) => panic!("template create answered {s}: {b}"),
                    None => {
                        t.unanswered_templates.push(name);
                        return t;
                    }
                }
            }
            _ => {
                let Some(uuid) = created.take() else { continue };
                let url = format!("{base}/v1/clusters/{uuid}");
                match send(&client, reqwest::Method::DELETE, url, None).await {
                    Some((204, _)) => t.deleted.push(uuid),
                    Some((s, b)) => panic!("cluster delete answered {s}: {b}"),
                    None => {
                        t.unanswered_deletes.push(uuid);
                        return t;
                    }
                }
            }
        }
    }
    t
}

/// `'a','b'` for an SQL `IN` list (`''` when empty, which matches nothing).
fn quoted(list: &[String]) -> String {
    if list.is_empty() {
        return "''".into();
    }
    list.iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(",")
}

async fn drill(backend: Backend) {
    let (store, test_db) = open_store(backend).await;
    drop(store);
    let db = Db::open(&test_db.url).await;
    let env = Env::new(&test_db.url);
    let seed = seed();
    println!("API kill drill ({backend:?}): FLEETYARD_DRILL_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");

    let mut api = Process::start(Role::Api, "api-0", &env).await;
    let base = api.url.clone().expect("url");
    let body = json!({"name": "base", "coe": "kubernetes", "image_id": "fedora-coreos-40"});
    let (status, b) = send(
        &client,
        reqwest::Method::POST,
        format!("{base}/v1/clustertemplates"),
        Some(&body),
    )
    .await
    .expect("answered");
    assert_eq!(status, 201, "{b}");
    let template = b["uuid"].as_str().expect("uuid").to_string();

    let mut tally = Tally::default();
    for round in 0..ROUNDS {
        if round > 0 {
            api = Process::start(Role::Api, &format!("api-{round}"), &env).await;
        }
        let base = api.url.clone().expect("url");
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                tokio::spawn(writer(
                    client.clone(),
                    base.clone(),
                    template.clone(),
                    format!("r{round}w{w}"),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(300..1200))).await;
        api.kill().await;
        for w in writers {
            tally.merge(w.await.expect("writer"));
        }
    }

    // PostgreSQL ends the killed processes' transactions: no session is left inside one.
    if backend == Backend::Postgres {
        let closed = eventually(Duration::from_secs(10), || async {
            db.count(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND state LIKE 'idle in transaction%'",
            )
            .await
                == 0
        })
        .await;
        assert!(closed, "a killed process's transaction stayed open");
    }

    // ---- Nothing a client was told had succeeded is missing ----------------------------------
    let answered = tally.clusters.len() + tally.templates.len() + tally.deleted.len();
    assert!(
        tally.clusters.len() >= 20,
        "the drill made too few clusters to mean anything: {tally:?}"
    );
    let found = db
        .count(&format!(
            "SELECT COUNT(*) FROM cluster WHERE uuid IN ({})",
            quoted(&tally.clusters)
        ))
        .await;
    assert_eq!(
        found as usize,
        tally.clusters.len(),
        "answered cluster creates"
    );
    let found = db
        .count(&format!(
            "SELECT COUNT(*) FROM cluster_template WHERE uuid IN ({})",
            quoted(&tally.templates)
        ))
        .await;
    assert_eq!(
        found as usize,
        tally.templates.len(),
        "answered template creates"
    );
    if !tally.deleted.is_empty() {
        let found = db
            .count(&format!(
                "SELECT COUNT(*) FROM cluster WHERE status = 'DELETE_IN_PROGRESS' AND uuid IN ({})",
                quoted(&tally.deleted)
            ))
            .await;
        assert_eq!(found as usize, tally.deleted.len(), "answered deletes");
    }

    // ---- Only whole changes ------------------------------------------------------------------
    for (what, sql) in [
        (
            "a cluster without exactly its two node groups",
            "SELECT COUNT(*) FROM cluster c WHERE \
             (SELECT COUNT(*) FROM nodegroup n WHERE n.cluster_id = c.uuid) <> 2",
        ),
        (
            "a cluster without its create job",
            "SELECT COUNT(*) FROM cluster c WHERE NOT EXISTS (SELECT 1 FROM job j \
             WHERE j.resource_uuid = c.uuid AND j.operation = 'cluster.create')",
        ),
        (
            "a cluster without its create notification",
            "SELECT COUNT(*) FROM cluster c WHERE NOT EXISTS (SELECT 1 FROM outbox o \
             WHERE o.resource_uuid = c.uuid AND o.event_type = 'magnum.cluster.create')",
        ),
        (
            "a deleting cluster without its delete job",
            "SELECT COUNT(*) FROM cluster c WHERE c.status = 'DELETE_IN_PROGRESS' AND NOT EXISTS \
             (SELECT 1 FROM job j WHERE j.resource_uuid = c.uuid AND j.operation = 'cluster.delete')",
        ),
        (
            "a deleting cluster without its delete notification",
            "SELECT COUNT(*) FROM cluster c WHERE c.status = 'DELETE_IN_PROGRESS' AND NOT EXISTS \
             (SELECT 1 FROM outbox o WHERE o.resource_uuid = c.uuid \
             AND o.event_type = 'magnum.cluster.delete')",
        ),
        (
            "a delete job or notification of a cluster not being deleted",
            "SELECT COUNT(*) FROM cluster c WHERE c.status <> 'DELETE_IN_PROGRESS' AND (\
             EXISTS (SELECT 1 FROM job j WHERE j.resource_uuid = c.uuid \
             AND j.operation = 'cluster.delete') OR EXISTS (SELECT 1 FROM outbox o \
             WHERE o.resource_uuid = c.uuid AND o.event_type = 'magnum.cluster.delete'))",
        ),
        (
            "a job of no cluster",
            "SELECT COUNT(*) FROM job j WHERE NOT EXISTS \
             (SELECT 1 FROM cluster c WHERE c.uuid = j.resource_uuid)",
        ),
        (
            "a template without its create notification (the built-in one of registered \
             clusters, project '', excepted)",
            "SELECT COUNT(*) FROM cluster_template t WHERE t.project_id <> '' AND NOT EXISTS \
             (SELECT 1 FROM outbox o WHERE o.resource_uuid = t.uuid AND o.event_type = 'magnum.cluster_template.create')",
        ),
        (
            "a notification about nothing",
            "SELECT COUNT(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM cluster c \
             WHERE c.uuid = o.resource_uuid) AND NOT EXISTS (SELECT 1 FROM cluster_template t \
             WHERE t.uuid = o.resource_uuid)",
        ),
    ] {
        assert_eq!(db.count(sql).await, 0, "{what}");
    }

    // What the killed requests left: committed before the kill, or not at all.
    let names = |list: &[String]| quoted(list);
    let unanswered = tally.unanswered_clusters.len()
        + tally.unanswered_templates.len()
        + tally.unanswered_deletes.len();
    let committed_unanswered = db
        .count(&format!(
            "SELECT COUNT(*) FROM cluster WHERE name IN ({})",
            names(&tally.unanswered_clusters)
        ))
        .await
        + db.count(&format!(
            "SELECT COUNT(*) FROM cluster_template WHERE name IN ({})",
            names(&tally.unanswered_templates)
        ))
        .await
        + if tally.unanswered_deletes.is_empty() {
            0
        } else {
            db.count(&format!(
                "SELECT COUNT(*) FROM cluster WHERE status = 'DELETE_IN_PROGRESS' AND uuid IN ({})",
                quoted(&tally.unanswered_deletes)
            ))
            .await
        };
    println!(
        "API kill drill ({backend:?}): {ROUNDS} kills; {answered} writes answered, {unanswered} \
         cut by a kill ({committed_unanswered} of those committed whole before it, the rest not \
         at all); clusters {}, templates {}, deletes {}",
        db.count("SELECT COUNT(*) FROM cluster").await,
        db.count("SELECT COUNT(*) FROM cluster_template").await,
        db.count("SELECT COUNT(*) FROM cluster WHERE status = 'DELETE_IN_PROGRESS'")
            .await,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_killed_mid_request_leaves_only_whole_changes_on_postgres() {
    drill(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_killed_mid_request_leaves_only_whole_changes_on_sqlite() {
    drill(Backend::Sqlite).await;
}
