//! Cluster groups at fleet size: what a member of one project reads through the groups bound
//! to it, on both faces, and how fast a change reaches its group-filtered watch.
//!
//!     cargo run --release --example group_bench -- --pg-url postgres://postgres@127.0.0.1:5432/postgres
//!
//! It makes (and drops, unless `--keep-database`) its own database next to `--pg-url` and loads,
//! with set-based SQL: `GROUP_BENCH_CLUSTERS` (default 100,000) registered clusters over 100
//! projects, each labelled `team=t0` … `team=t11` in turn; ten groups per project (1,000), the
//! even ones selecting `team=t<k>` (their matches materialized as a selector's are), the odd
//! ones holding the `team=t<k>` clusters as accepted members; and ten bindings per group
//! (10,000), each group bound to the ten projects after its own, half `read`, half `write`.
//! A member of one project so reaches its own 1,000 clusters and 100 bound groups' 8,300 more;
//! the `team=t10` and `team=t11` clusters are in no group.
//!
//! The API runs in process on 127.0.0.1 (no-auth; every request as a `member` of its project).
//! Timed: a `/v1` list page and the whole `/v1` list at microversion 1.20, and `kubectl get
//! clusters -A`'s first page (Table and JSON); then, on that member's `-A` watch, the delay
//! from a change by the clusters' owner to its event: a `/v1` DELETE of a shared cluster
//! (MODIFIED) and a relabel that brings an ungrouped cluster into a bound group (ADDED). The
//! table goes to stdout, the same figures as JSON to `GROUP_BENCH_JSON` (default
//! `target/group-bench.json`). Figures are from one run on a shared machine.

mod common;

use common::{bench_settings, create_database, drop_database, ms, percentile};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use fleetyard::startup::Application;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";
/// What `kubectl get` sends.
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
/// kubectl's default `--chunk-size`.
const KUBE_PAGE: usize = 500;
const V1_PAGE: usize = 100;
/// The microversion that shows shared clusters in a project's lists.
const MICROVERSION: &str = "container-infra 1.20";
/// The template of registered (external) clusters, inserted by the registry's migration.
const EXTERNAL_TEMPLATE: &str = "00000000-0000-4000-8000-00000000e7e7";
/// Groups per project, bindings per group, and the teams clusters are labelled with (the
/// last two in no group).
const GROUPS_PER_PROJECT: u32 = 10;
const BINDINGS_PER_GROUP: u32 = 10;
const TEAMS: u32 = 12;
/// "under 50 ms median" for the reads, "under 100 ms p99" for a change reaching a watch.
const READ_TARGET_MS: f64 = 50.0;
const WATCH_TARGET_MS: f64 = 100.0;

#[derive(Parser)]
struct Args {
    /// An admin URL of the PostgreSQL server; the bench creates its own database beside it.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    /// Registered clusters to load (else `GROUP_BENCH_CLUSTERS`, else 100,000).
    #[arg(long)]
    clusters: Option<u32>,
    /// Projects (namespaces) they are spread over (more than the bindings per group).
    #[arg(long, default_value_t = 100)]
    projects: u32,
    /// Timed requests per read figure.
    #[arg(long, default_value_t = 50)]
    requests: usize,
    /// Changes timed on the watch, per kind.
    #[arg(long, default_value_t = 100)]
    changes: usize,
    /// Where the figures are written as JSON (else `GROUP_BENCH_JSON`, else
    /// `target/group-bench.json`).
    #[arg(long)]
    json: Option<String>,
    /// Keep the bench database (its name is printed) for EXPLAIN ANALYZE; drop it by hand.
    #[arg(long)]
    keep_database: bool,
}

/// What a figure is held to.
#[derive(Clone, Copy)]
enum Target {
    MedianUnder(f64),
    P99Under(f64),
}

struct Figure {
    name: String,
    samples: Vec<f64>,
    note: String,
    target: Target,
}

impl Figure {
    fn new(name: &str, mut samples: Vec<f64>, note: String, target: Target) -> Figure {
        samples.sort_by(f64::total_cmp);
        Figure {
            name: name.into(),
            samples,
            note,
            target,
        }
    }
    fn at(&self, p: f64) -> f64 {
        percentile(&self.samples, p)
    }
    fn met(&self) -> bool {
        match self.target {
            Target::MedianUnder(t) => self.at(0.5) < t,
            Target::P99Under(t) => self.at(0.99) < t,
        }
    }
    fn target_text(&self) -> String {
        match self.target {
            Target::MedianUnder(t) => format!("median < {t:.0} ms"),
            Target::P99Under(t) => format!("p99 < {t:.0} ms"),
        }
    }
}

/// The in-process API and the member whose view is measured.
struct Bench {
    client: reqwest::Client,
    address: String,
    member: String,
}

impl Bench {
    /// A request as a `member` of `project`.
    fn as_member(&self, req: reqwest::RequestBuilder, project: &str) -> reqwest::RequestBuilder {
        req.header("OpenStack-API-Version", MICROVERSION)
            .header("X-Project-Id", project)
            .header("X-User-Id", "bench-user")
            .header("X-Roles", "member,reader")
    }

    /// One GET as the bench's member: its time and body.
    async fn get(&self, path: &str, accept: &str) -> anyhow::Result<(Duration, Vec<u8>)> {
        let req = self
            .client
            .get(format!("{}{path}", self.address))
            .header("Accept", accept);
        let started = Instant::now();
        let resp = self.as_member(req, &self.member).send().await?;
        let status = resp.status();
        let body = resp.bytes().await?;
        let took = started.elapsed();
        anyhow::ensure!(
            status.is_success(),
            "GET {path}: {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
        Ok((took, body.to_vec()))
    }

    /// `requests` timed GETs (after 3 untimed); the first answer's array `key` must hold
    /// `items` items.
    async fn time(
        &self,
        name: &str,
        (path, accept, key): (&str, &str, &str),
        items: usize,
        requests: usize,
    ) -> anyhow::Result<Figure> {
        let mut samples = Vec::with_capacity(requests);
        let mut bytes = 0;
        for i in 0..requests + 3 {
            let (took, body) = self.get(path, accept).await?;
            if i == 0 {
                let v: Value = serde_json::from_slice(&body)?;
                let got = v[key].as_array().map_or(0, Vec::len);
                anyhow::ensure!(got == items, "{name}: {got} items, expected {items}");
                bytes = body.len();
            }
            if i >= 3 {
                samples.push(ms(took));
            }
        }
        Ok(Figure::new(
            name,
            samples,
            format!("{items} items, {} kB", bytes / 1024),
            Target::MedianUnder(READ_TARGET_MS),
        ))
    }
}

/// The clusters, groups, their matches and members, and the bindings, in six statements.
async fn load(pool: &sqlx::PgPool, n: u32, projects: u32) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO cluster (uuid, project_id, user_id, name, registry_name, \
             cluster_template_id, status, labels, api_address, server_endpoints, \
             registry_labels, registry_annotations, created_at) \
         SELECT gen_random_uuid()::text, \
             'proj-' || lpad(((g - 1) % $2)::text, 3, '0'), 'bench-user', \
             'cluster-' || lpad(g::text, 7, '0'), 'cluster-' || lpad(g::text, 7, '0'), $3, \
             'CREATE_COMPLETE', '{}'::jsonb, \
             'https://10.' || (g / 65536) % 256 || '.' || (g / 256) % 256 || '.' || g % 256 || ':6443', \
             jsonb_build_array(jsonb_build_object('clientCIDR', '0.0.0.0/0', 'serverAddress', \
                 'https://10.' || (g / 65536) % 256 || '.' || (g / 256) % 256 || '.' || g % 256 || ':6443')), \
             jsonb_build_object('team', 't' || ((g - 1) / $2) % $4, 'env', \
                 (ARRAY['prod', 'staging', 'dev'])[g % 3 + 1]), \
             '{}'::jsonb, now() - (g || ' seconds')::interval \
         FROM generate_series(1, $1) AS g",
    )
    .bind(i64::from(n))
    .bind(i64::from(projects))
    .bind(EXTERNAL_TEMPLATE)
    .bind(i64::from(TEAMS))
    .execute(pool)
    .await?;
    // Statistics, as a live database has them, before the group writes' triggers plan their
    // reads of the clusters.
    sqlx::query("ANALYZE cluster").execute(pool).await?;
    sqlx::query(
        "INSERT INTO cluster_group (uuid, project_id, user_id, name, selector, description, \
             created_at) \
         SELECT gen_random_uuid()::text, 'proj-' || lpad(p::text, 3, '0'), 'bench-user', \
             'team-t' || k, CASE WHEN k % 2 = 0 THEN 'team=t' || k END, \
             'the clusters of team t' || k, now() \
         FROM generate_series(0, $1 - 1) AS p CROSS JOIN generate_series(0, $2 - 1) AS k",
    )
    .bind(i64::from(projects))
    .bind(i64::from(GROUPS_PER_PROJECT))
    .execute(pool)
    .await?;
    // What a selector's rematch writes: the group's own project's clusters it selects.
    sqlx::query(
        "INSERT INTO cluster_group_match (group_id, cluster_id) \
         SELECT g.uuid, c.uuid FROM cluster_group g JOIN cluster c \
             ON c.project_id = g.project_id \
            AND c.registry_labels ->> 'team' = substring(g.selector FROM 6) \
         WHERE g.selector IS NOT NULL",
    )
    .execute(pool)
    .await?;
    sqlx::query(
        "INSERT INTO cluster_group_member (group_id, cluster_id, cluster_project_id, state, \
             proposed_by, consented_at, created_at) \
         SELECT g.uuid, c.uuid, c.project_id, 'Accepted', 'bench-user', now(), now() \
         FROM cluster_group g JOIN cluster c \
             ON c.project_id = g.project_id \
            AND c.registry_labels ->> 'team' = substring(g.name FROM 6) \
         WHERE g.selector IS NULL",
    )
    .execute(pool)
    .await?;
    sqlx::query(
        "INSERT INTO cluster_group_binding (uuid, group_id, project_id, grantee_project_id, \
             roles, access, created_at) \
         SELECT gen_random_uuid()::text, g.uuid, g.project_id, \
             'proj-' || lpad(((substring(g.project_id FROM 6)::int + 1 + j) % $1)::text, 3, '0'), \
             NULL, CASE WHEN j % 2 = 0 THEN 'read' ELSE 'write' END, now() \
         FROM cluster_group g CROSS JOIN generate_series(0, $2 - 1) AS j",
    )
    .bind(i64::from(projects))
    .bind(i64::from(BINDINGS_PER_GROUP))
    .execute(pool)
    .await?;
    sqlx::query("ANALYZE").execute(pool).await?;
    Ok(())
}

/// How many clusters `project` reaches: its own and its bound groups' matches and accepted
/// members.
async fn reach(pool: &sqlx::PgPool, project: &str) -> anyhow::Result<usize> {
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM cluster c WHERE c.project_id = $1 OR EXISTS ( \
             SELECT 1 FROM cluster_group_binding b \
             WHERE b.grantee_project_id = $1 AND ( \
                 EXISTS (SELECT 1 FROM cluster_group_match m \
                         WHERE m.group_id = b.group_id AND m.cluster_id = c.uuid) \
              OR EXISTS (SELECT 1 FROM cluster_group_member m \
                         WHERE m.group_id = b.group_id AND m.cluster_id = c.uuid \
                           AND m.state = 'Accepted')))",
    )
    .bind(project)
    .fetch_one(pool)
    .await?;
    Ok(usize::try_from(n)?)
}

/// The watch's lines as they arrive: (event type, uid, arrival) of every object event.
fn follow(
    mut resp: reqwest::Response,
) -> (
    mpsc::UnboundedReceiver<(String, String, Instant)>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut buf: Vec<u8> = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            let now = Instant::now();
            buf.extend_from_slice(&chunk);
            while let Some(end) = buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buf.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                let kind = event["type"].as_str().unwrap_or_default().to_string();
                if let Some(uid) = event["object"]["metadata"]["uid"].as_str() {
                    if tx.send((kind, uid.to_string(), now)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    (rx, task)
}

/// One change the watch must show: who makes it (its owner's project), the request, the
/// cluster's uid and the event expected.
struct Change {
    project: String,
    uid: String,
    request: reqwest::RequestBuilder,
    expect: &'static str,
}

/// Each change in turn, timed from sending it to its event on the member's `-A` watch.
async fn watch_latency(
    bench: &Bench,
    rv: &str,
    name: &str,
    changes: Vec<Change>,
) -> anyhow::Result<Figure> {
    let watch = bench.client.get(format!(
        "{}{BASE}/clusters?watch=true&resourceVersion={rv}",
        bench.address
    ));
    let resp = bench.as_member(watch, &bench.member).send().await?;
    anyhow::ensure!(resp.status().is_success(), "watch: {}", resp.status());
    let (mut events, reader) = follow(resp);
    // The stream is open once the server has answered its headers; give its follower a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let count = changes.len();
    let mut samples = Vec::with_capacity(count);
    for c in changes {
        let sent = Instant::now();
        let resp = bench.as_member(c.request, &c.project).send().await?;
        let status = resp.status();
        anyhow::ensure!(
            status.is_success(),
            "{name}: {status}: {}",
            resp.text().await.unwrap_or_default()
        );
        let deadline = sent + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, events.recv()).await {
                Ok(Some((kind, uid, at))) if uid == c.uid && kind == c.expect => {
                    samples.push(ms(at.duration_since(sent)));
                    break;
                }
                Ok(Some(_)) => continue,
                Ok(None) => anyhow::bail!("the watch ended"),
                Err(_) => anyhow::bail!("{name}: no {} event for {} within 10 s", c.expect, c.uid),
            }
        }
        // Changes one at a time, spaced like a busy operator's, not a write storm.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    reader.abort();
    Ok(Figure::new(
        name,
        samples,
        format!("{count} changes, one at a time"),
        Target::P99Under(WATCH_TARGET_MS),
    ))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let clusters = match args.clusters {
        Some(n) => n,
        None => match std::env::var("GROUP_BENCH_CLUSTERS") {
            Ok(v) => v
                .trim()
                .replace('_', "")
                .parse()
                .with_context(|| format!("GROUP_BENCH_CLUSTERS={v:?} is not a count"))?,
            Err(_) => 100_000,
        },
    };
    anyhow::ensure!(
        args.projects > BINDINGS_PER_GROUP && clusters >= args.projects * TEAMS,
        "need more projects than bindings per group and a cluster of every team in each"
    );
    let db_name = format!("fy_group_bench_{}", uuid::Uuid::new_v4().simple());
    let db_url = create_database(&args.pg_url, &db_name).await?;
    let result = run(&args, clusters, &db_url).await;
    if args.keep_database {
        eprintln!("==> group bench: kept database {db_name} ({db_url})");
    } else if let Err(e) = drop_database(&args.pg_url, &db_name).await {
        eprintln!("group bench: could not drop database {db_name}: {e}");
    }
    result
}

async fn run(args: &Args, clusters: u32, db_url: &str) -> anyhow::Result<()> {
    let settings = bench_settings(db_url);
    let max_limit = usize::try_from(settings.api.max_limit)?;
    let store = fleetyard::startup::open_store(&settings)
        .await
        .context("store opens and migrates")?;
    let pool = sqlx::PgPool::connect(db_url).await?;

    let started = Instant::now();
    load(&pool, clusters, args.projects).await?;
    let load_s = started.elapsed().as_secs_f64();
    let (groups, bindings): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM cluster_group), (SELECT count(*) FROM cluster_group_binding)",
    )
    .fetch_one(&pool)
    .await?;
    let member = format!("proj-{:03}", args.projects / 2);
    let visible = reach(&pool, &member).await?;
    eprintln!(
        "==> group bench: loaded {clusters} clusters over {} projects, {groups} groups, \
         {bindings} bindings in {load_s:.1} s; {member} reaches {visible} clusters",
        args.projects
    );

    let state = fleetyard::startup::build_state(settings, store).context("valid state")?;
    let app = Application::build(state)?;
    let address = format!("http://127.0.0.1:{}", app.port());
    let server = tokio::spawn(app.run_until_stopped());
    let bench = Bench {
        client: reqwest::Client::new(),
        address,
        member: member.clone(),
    };
    let n = args.requests;
    let v1_page = format!("/v1/clusters?limit={V1_PAGE}");
    let kube_all = format!("{BASE}/clusters?limit={KUBE_PAGE}");
    let mut figures = vec![
        bench
            .time(
                "/v1 list page (?limit=100), 1.20",
                (&v1_page, "application/json", "clusters"),
                visible.min(V1_PAGE),
                n,
            )
            .await?,
        bench
            .time(
                "/v1 list, 1.20 (the CLI's request)",
                ("/v1/clusters", "application/json", "clusters"),
                visible.min(max_limit),
                n,
            )
            .await?,
        bench
            .time(
                "kubectl get clusters -A, first page, Table",
                (&kube_all, TABLE_ACCEPT, "rows"),
                visible.min(KUBE_PAGE),
                n,
            )
            .await?,
        bench
            .time(
                "kubectl get clusters -A, first page, JSON",
                (&kube_all, "application/json", "items"),
                visible.min(KUBE_PAGE),
                n,
            )
            .await?,
    ];

    let (_, body) = bench.get(&kube_all, "application/json").await?;
    let first: Value = serde_json::from_slice(&body)?;
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .context("list resourceVersion")?
        .to_string();

    // Shared clusters their owners delete (MODIFIED: DELETE_IN_PROGRESS), and ungrouped ones
    // their owners relabel into a group bound to the member (ADDED), from the bound projects.
    let deleted: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.uuid, c.project_id FROM cluster c \
         JOIN cluster_group_match m ON m.cluster_id = c.uuid \
         JOIN cluster_group_binding b ON b.group_id = m.group_id AND b.grantee_project_id = $1 \
         ORDER BY md5(c.uuid) LIMIT $2",
    )
    .bind(&member)
    .bind(args.changes as i64)
    .fetch_all(&pool)
    .await?;
    let relabelled: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.uuid, c.project_id, c.registry_name FROM cluster c \
         WHERE c.registry_labels ->> 'team' = 't' || ($3::int - 1) AND c.project_id IN ( \
             SELECT DISTINCT g.project_id FROM cluster_group_binding b \
             JOIN cluster_group g ON g.uuid = b.group_id WHERE b.grantee_project_id = $1) \
         ORDER BY md5(c.uuid) LIMIT $2",
    )
    .bind(&member)
    .bind(args.changes as i64)
    .bind(i64::from(TEAMS))
    .fetch_all(&pool)
    .await?;
    anyhow::ensure!(
        deleted.len() == args.changes && relabelled.len() == args.changes,
        "too few clusters to change"
    );
    let deletes = deleted
        .into_iter()
        .map(|(uuid, project)| Change {
            request: bench
                .client
                .delete(format!("{}/v1/clusters/{uuid}", bench.address)),
            project,
            uid: uuid,
            expect: "MODIFIED",
        })
        .collect();
    figures.push(
        watch_latency(
            &bench,
            &rv,
            "watch -A: owner's /v1 DELETE of a shared cluster -> MODIFIED",
            deletes,
        )
        .await?,
    );
    let relabels = relabelled
        .into_iter()
        .map(|(uuid, project, name)| Change {
            request: bench
                .client
                .patch(format!(
                    "{}{BASE}/namespaces/{project}/clusters/{name}",
                    bench.address
                ))
                .header("Content-Type", "application/merge-patch+json")
                .body(r#"{"metadata":{"labels":{"team":"t0"}}}"#),
            project,
            uid: uuid,
            expect: "ADDED",
        })
        .collect();
    let (_, body) = bench.get(&kube_all, "application/json").await?;
    let now: Value = serde_json::from_slice(&body)?;
    let rv = now["metadata"]["resourceVersion"]
        .as_str()
        .context("list resourceVersion")?
        .to_string();
    figures.push(
        watch_latency(
            &bench,
            &rv,
            "watch -A: owner relabels a cluster into a bound group -> ADDED",
            relabels,
        )
        .await?,
    );
    server.abort();

    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!();
    println!(
        "Fleetyard cluster groups: {clusters} clusters over {} projects, {groups} groups, \
         {bindings} bindings, PostgreSQL, {build} build, in-process API over loopback \
         (no-auth member of {member}, reaching {visible} clusters); load {load_s:.1} s",
        args.projects
    );
    println!(
        "{:<64} {:>9} {:>8} {:>8} {:>18} {:>4}  samples / note",
        "figure", "median ms", "p90 ms", "p99 ms", "target", "met"
    );
    for f in &figures {
        println!(
            "{:<64} {:>9.2} {:>8.2} {:>8.2} {:>18} {:>4}  n={}; {}",
            f.name,
            f.at(0.5),
            f.at(0.9),
            f.at(0.99),
            f.target_text(),
            if f.met() { "yes" } else { "no" },
            f.samples.len(),
            f.note
        );
    }
    let report = json!({
        "clusters": clusters,
        "projects": args.projects,
        "groups": groups,
        "bindings": bindings,
        "member": member,
        "reached": visible,
        "load_seconds": load_s,
        "build": build,
        "figures": figures.iter().map(|f| json!({
            "figure": f.name,
            "median_ms": f.at(0.5),
            "p90_ms": f.at(0.9),
            "p99_ms": f.at(0.99),
            "max_ms": f.samples.last().copied(),
            "samples": f.samples.len(),
            "target": f.target_text(),
            "met": f.met(),
            "note": f.note,
        })).collect::<Vec<_>>(),
    });
    let path = std::path::PathBuf::from(args.json.clone().unwrap_or_else(|| {
        std::env::var("GROUP_BENCH_JSON")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "target/group-bench.json".into())
    }));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("(JSON: {})", path.display());
    Ok(())
}
