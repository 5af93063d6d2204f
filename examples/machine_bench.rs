//! Machines at fleet size: a cluster's first page of machines on `/v1` and on the Kubernetes
//! face (`kubectl get machines -n <project> -l cluster.k8s.io/cluster-name=<c>`), and GET
//! cluster and the cluster lists before and after the machines exist.
//!
//!     cargo run --release --example machine_bench -- --pg-url postgres://postgres@127.0.0.1:5432/postgres
//!
//! It makes (and drops, unless `--keep-database`) its own database next to `--pg-url`, loads
//! `MACHINE_BENCH_CLUSTERS` (default 1,000) clusters over 10 projects, each with its two node
//! groups (`default-master` of 1 node, `default-worker` of 99) with set-based SQL, and runs the
//! API in process on 127.0.0.1 (no-auth, every request as a member of the cluster's project).
//! It times GET cluster and the cluster lists, then loads each node group's machines (100 a
//! cluster, named as the machine migration names them, Running, with an address), ANALYZEs,
//! and times the same requests again with the machine pages. The table goes to stdout, the
//! same figures as JSON to `MACHINE_BENCH_JSON` (default `target/machine-bench.json`).
//! Figures are from one run on a shared machine.

mod common;

use common::{bench_settings, create_database, drop_database, ms, percentile};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use fleetyard::startup::Application;
use serde_json::{json, Value};

const KUBE_BASE: &str = "/apis/cluster.k8s.io/v1alpha1";
/// What `kubectl get` sends.
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
/// kubectl's default `--chunk-size`.
const KUBE_PAGE: usize = 500;
/// The `/v1` page the benches use.
const V1_PAGE: usize = 100;
/// The microversion that serves machines.
const MICROVERSION: &str = "container-infra 1.19";
const TEMPLATE: &str = "00000000-0000-4000-8000-0000000be4c4";
/// Machine first pages: "under 20 ms median".
const PAGE_TARGET_MS: f64 = 20.0;
/// GET cluster and the lists "not slower than before": the after/before ratio of medians,
/// with room for the noise of a shared machine.
const RATIO_TARGET: f64 = 1.10;
const MASTERS: u32 = 1;
const WORKERS: u32 = 99;

#[derive(Parser)]
struct Args {
    /// An admin URL of the PostgreSQL server; the bench creates its own database beside it.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    /// Clusters to load (else `MACHINE_BENCH_CLUSTERS`, else 1,000), 100 machines each.
    #[arg(long)]
    clusters: Option<u32>,
    /// Projects (namespaces) they are spread over.
    #[arg(long, default_value_t = 10)]
    projects: u32,
    /// Timed requests per figure.
    #[arg(long, default_value_t = 200)]
    requests: usize,
    /// Where the figures are written as JSON (else `MACHINE_BENCH_JSON`, else
    /// `target/machine-bench.json`).
    #[arg(long)]
    json: Option<String>,
    /// Keep the bench database (its name is printed) for EXPLAIN ANALYZE; drop it by hand.
    #[arg(long)]
    keep_database: bool,
}

/// The arguments with the environment's defaults applied.
struct Run {
    clusters: u32,
    projects: u32,
    requests: usize,
    json: String,
}

impl Run {
    fn from_args(a: &Args) -> anyhow::Result<Run> {
        let clusters = match a.clusters {
            Some(n) => n,
            None => match std::env::var("MACHINE_BENCH_CLUSTERS") {
                Ok(v) => v
                    .trim()
                    .replace('_', "")
                    .parse()
                    .with_context(|| format!("MACHINE_BENCH_CLUSTERS={v:?} is not a count"))?,
                Err(_) => 1_000,
            },
        };
        let json = a.json.clone().unwrap_or_else(|| {
            std::env::var("MACHINE_BENCH_JSON")
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "target/machine-bench.json".into())
        });
        Ok(Run {
            clusters,
            projects: a.projects,
            requests: a.requests.max(1),
            json,
        })
    }
}

/// What a figure is held to.
#[derive(Clone, Copy)]
enum Target {
    /// Median under this many ms.
    MedianUnder(f64),
    /// Median after / median before at most this.
    RatioAtMost(f64),
}

impl Target {
    fn text(self) -> String {
        match self {
            Target::MedianUnder(t) => format!("median < {t:.0} ms"),
            Target::RatioAtMost(r) => format!("after/before <= {r:.2}"),
        }
    }
}

struct Figure {
    name: String,
    samples: Vec<f64>,
    note: String,
    target: Target,
    /// The median of the same request before the machines existed.
    before: Option<f64>,
}

impl Figure {
    fn new(name: &str, mut samples: Vec<f64>, note: String, target: Target) -> Figure {
        samples.sort_by(f64::total_cmp);
        Figure {
            name: name.into(),
            samples,
            note,
            target,
            before: None,
        }
    }
    fn median(&self) -> f64 {
        percentile(&self.samples, 0.5)
    }
    fn p90(&self) -> f64 {
        percentile(&self.samples, 0.9)
    }
    fn ratio(&self) -> Option<f64> {
        self.before.map(|b| self.median() / b)
    }
    /// Whether the target is met; a ratio target without a before figure is not judged.
    fn met(&self) -> Option<bool> {
        match self.target {
            Target::MedianUnder(t) => Some(self.median() < t),
            Target::RatioAtMost(r) => self.ratio().map(|x| x <= r),
        }
    }
}

/// One request of a figure: where, as what, and how many items its answer must hold.
struct Request<'a> {
    name: &'a str,
    path: String,
    accept: &'a str,
    /// The JSON array holding the items (`rows` of a Table).
    key: &'a str,
    items: usize,
}

struct Bench {
    client: reqwest::Client,
    address: String,
    project: String,
}

impl Bench {
    /// One GET as a member of the bench's project: its time and body.
    async fn get(&self, path: &str, accept: &str) -> anyhow::Result<(Duration, Vec<u8>)> {
        let started = Instant::now();
        let resp = self
            .client
            .get(format!("{}{path}", self.address))
            .header("Accept", accept)
            .header("OpenStack-API-Version", MICROVERSION)
            .header("X-Project-Id", self.project.as_str())
            .header("X-User-Id", "bench-user")
            .header("X-Roles", "member,reader")
            .send()
            .await?;
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

    /// `requests` timed GETs (after 3 untimed), checking the answer holds `items` items.
    async fn time(
        &self,
        r: &Request<'_>,
        requests: usize,
        target: Target,
    ) -> anyhow::Result<Figure> {
        let mut samples = Vec::with_capacity(requests);
        let mut bytes = 0;
        for i in 0..requests + 3 {
            let (took, body) = self.get(&r.path, r.accept).await?;
            if i == 0 {
                let v: Value = serde_json::from_slice(&body)?;
                if !r.key.is_empty() {
                    let got = v[r.key].as_array().map_or(0, Vec::len);
                    anyhow::ensure!(
                        got == r.items,
                        "{}: {got} items, expected {}",
                        r.name,
                        r.items
                    );
                }
                bytes = body.len();
            }
            if i >= 3 {
                samples.push(ms(took));
            }
        }
        let what = if r.key.is_empty() {
            String::new()
        } else {
            format!("{} items, ", r.items)
        };
        Ok(Figure::new(
            r.name,
            samples,
            format!("{what}{} kB", bytes / 1024),
            target,
        ))
    }
}

/// The address of machine `n` (1 the master, 2.. the workers) of the cluster with id `c`.
const ADDRESS_SQL: &str = "'10.' || ((c.id / 256) % 256) || '.' || (c.id % 256) || '.' || (9 + n)";

/// A template, `n` clusters over `projects` projects (`proj-000`...) and their two node groups
/// (node_addresses filled as the driver reports them), in three statements.
async fn load_clusters(pool: &sqlx::PgPool, n: u32, projects: u32) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO cluster_template (uuid, project_id, user_id, name, coe, image_id, \
             flavor_id, master_flavor_id, public, labels, created_at) \
         VALUES ($1, 'proj-000', 'bench-user', 'bench-template', 'kubernetes', \
             'fedora-coreos-40', 'm1.medium', 'm1.large', TRUE, \
             '{\"kube_tag\": \"v1.30.1\"}'::jsonb, now())",
    )
    .bind(TEMPLATE)
    .execute(pool)
    .await?;
    sqlx::query(
        "INSERT INTO cluster (uuid, project_id, user_id, name, registry_name, \
             cluster_template_id, status, labels, health_status_reason, create_timeout, \
             stack_id, api_address, master_flavor_id, flavor_id, coe_version, created_at) \
         SELECT gen_random_uuid()::text, \
             'proj-' || lpad(((g - 1) % $2)::text, 3, '0'), 'bench-user', \
             'cluster-' || lpad(g::text, 5, '0'), 'cluster-' || lpad(g::text, 5, '0'), $3, \
             'CREATE_COMPLETE', '{\"kube_tag\": \"v1.30.1\"}'::jsonb, '{}'::jsonb, 60, \
             'stack-' || g, \
             'https://10.' || (g / 256) % 256 || '.' || g % 256 || '.9:6443', \
             'm1.large', 'm1.medium', 'v1.30.1', now() - (g || ' seconds')::interval \
         FROM generate_series(1, $1) AS g",
    )
    .bind(i64::from(n))
    .bind(i64::from(projects))
    .bind(TEMPLATE)
    .execute(pool)
    .await?;
    let nodegroups = format!(
        "INSERT INTO nodegroup (uuid, name, cluster_id, project_id, labels, flavor_id, \
             image_id, node_addresses, node_count, role, min_node_count, is_default, status, \
             version, created_at) \
         SELECT gen_random_uuid()::text, r.name, c.uuid, c.project_id, '{{}}'::jsonb, \
             CASE WHEN r.role = 'master' THEN 'm1.large' ELSE 'm1.medium' END, \
             'fedora-coreos-40', \
             (SELECT jsonb_agg({ADDRESS_SQL} ORDER BY n) \
                FROM generate_series(r.first, r.first + r.count - 1) AS n), \
             r.count, r.role, 0, TRUE, 'CREATE_COMPLETE', 'v1.30.1', c.created_at \
         FROM cluster c \
         CROSS JOIN (VALUES ('default-master', 'master', 1, $1::int), \
                            ('default-worker', 'worker', 1 + $1::int, $2::int)) \
             AS r(name, role, first, count) \
         ORDER BY c.id, r.first"
    );
    sqlx::query(&nodegroups)
        .bind(MASTERS as i32)
        .bind(WORKERS as i32)
        .execute(pool)
        .await?;
    sqlx::query("ANALYZE").execute(pool).await?;
    Ok(())
}

/// Every node group's machines, named `<group>-1`... as the machine migration names them,
/// Running, with the node's address and name in status; then ANALYZE. One statement.
async fn load_machines(pool: &sqlx::PgPool) -> anyhow::Result<u64> {
    let text = format!(
        "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
             phase, provider_id, status, created_at) \
         SELECT x.uuid, g.name || '-' || k, g.role, g.project_id, g.cluster_id, g.uuid, \
             jsonb_build_object('versions', jsonb_build_object('kubelet', 'v1.30.1'), \
                 'flavor', g.flavor_id, 'osImage', g.image_id, 'providerConfig', '{{}}'::jsonb, \
                 'taints', '[]'::jsonb, 'labels', '{{}}'::jsonb), \
             'Running', 'openstack:///' || x.uuid, \
             jsonb_build_object('nodeRef', c.registry_name || '-' || g.name || '-' || k, \
                 'addresses', jsonb_build_array( \
                     jsonb_build_object('type', 'InternalIP', 'address', {ADDRESS_SQL}), \
                     jsonb_build_object('type', 'Hostname', \
                         'address', c.registry_name || '-' || g.name || '-' || k)), \
                 'versions', jsonb_build_object('kubelet', 'v1.30.1')), \
             g.created_at \
         FROM nodegroup g JOIN cluster c ON c.uuid = g.cluster_id \
         CROSS JOIN LATERAL generate_series(1, g.node_count) AS k \
         CROSS JOIN LATERAL (SELECT CASE WHEN g.role = 'master' THEN k ELSE {MASTERS} + k END AS n, \
             md5(g.uuid || '/' || k::text)::uuid::text AS uuid) AS x \
         ORDER BY g.id, k"
    );
    let done = sqlx::query(&text).execute(pool).await?.rows_affected();
    sqlx::query("ANALYZE").execute(pool).await?;
    Ok(done)
}

/// The /v1 cluster requests timed before and after the machines: GET cluster, the list page
/// and the detail list page the /v1 benches use.
fn cluster_requests<'a>(uuid: &str, in_project: usize) -> Vec<Request<'a>> {
    let page = in_project.min(V1_PAGE);
    vec![
        Request {
            name: "GET /v1/clusters/{c}",
            path: format!("/v1/clusters/{uuid}"),
            accept: "application/json",
            key: "",
            items: 0,
        },
        Request {
            name: "GET /v1/clusters?limit=100",
            path: format!("/v1/clusters?limit={V1_PAGE}"),
            accept: "application/json",
            key: "clusters",
            items: page,
        },
        Request {
            name: "GET /v1/clusters/detail?limit=100",
            path: format!("/v1/clusters/detail?limit={V1_PAGE}"),
            accept: "application/json",
            key: "clusters",
            items: page,
        },
    ]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let run_args = Run::from_args(&args)?;
    anyhow::ensure!(
        run_args.projects >= 1 && run_args.clusters >= run_args.projects,
        "need at least one cluster per project"
    );
    let db_name = format!("fy_machine_bench_{}", uuid::Uuid::new_v4().simple());
    let db_url = create_database(&args.pg_url, &db_name).await?;
    let result = run(&run_args, &db_url).await;
    if args.keep_database {
        eprintln!("==> machine bench: kept database {db_name} ({db_url})");
    } else if let Err(e) = drop_database(&args.pg_url, &db_name).await {
        eprintln!("machine bench: could not drop database {db_name}: {e}");
    }
    result
}

async fn run(args: &Run, db_url: &str) -> anyhow::Result<()> {
    let settings = bench_settings(db_url);
    let store = fleetyard::startup::open_store(&settings)
        .await
        .context("store opens and migrates")?;
    let pool = sqlx::PgPool::connect(db_url).await?;

    let started = Instant::now();
    load_clusters(&pool, args.clusters, args.projects).await?;
    let load_clusters_s = started.elapsed().as_secs_f64();
    eprintln!(
        "==> machine bench: loaded {} clusters over {} projects, 2 node groups each \
         ({MASTERS} + {WORKERS} nodes), in {load_clusters_s:.1} s",
        args.clusters, args.projects
    );

    // A cluster in the middle of the middle project.
    let project = format!("proj-{:03}", args.projects / 2);
    let in_project: i64 = sqlx::query_scalar("SELECT count(*) FROM cluster WHERE project_id = $1")
        .bind(&project)
        .fetch_one(&pool)
        .await?;
    let (uuid, name): (String, String) = sqlx::query_as(
        "SELECT uuid, registry_name FROM cluster WHERE project_id = $1 \
         ORDER BY id OFFSET $2 LIMIT 1",
    )
    .bind(&project)
    .bind(in_project / 2)
    .fetch_one(&pool)
    .await?;
    let in_project = usize::try_from(in_project)?;

    let state = fleetyard::startup::build_state(settings, store).context("valid state")?;
    let app = Application::build(state)?;
    let address = format!("http://127.0.0.1:{}", app.port());
    let server = tokio::spawn(app.run_until_stopped());
    let bench = Bench {
        client: reqwest::Client::new(),
        address,
        project: project.clone(),
    };
    let n = args.requests;
    let ratio = Target::RatioAtMost(RATIO_TARGET);

    let mut before = Vec::new();
    for r in cluster_requests(&uuid, in_project) {
        let mut f = bench.time(&r, n, ratio).await?;
        f.name = format!("before: {}", r.name);
        before.push(f);
    }

    let started = Instant::now();
    let machines = load_machines(&pool).await?;
    let load_machines_s = started.elapsed().as_secs_f64();
    eprintln!(
        "==> machine bench: loaded {machines} machines in {load_machines_s:.1} s \
         (INSERT ... SELECT generate_series + ANALYZE)"
    );
    let per_cluster = (MASTERS + WORKERS) as usize;

    let mut figures = Vec::new();
    for (r, b) in cluster_requests(&uuid, in_project).iter().zip(&before) {
        let mut f = bench.time(r, n, ratio).await?;
        f.name = format!("after: {}", r.name);
        f.before = Some(b.median());
        figures.push(f);
    }
    let page = Target::MedianUnder(PAGE_TARGET_MS);
    let selector = format!("labelSelector=cluster.k8s.io/cluster-name%3D{name}");
    let kube = format!("{KUBE_BASE}/namespaces/{project}/machines?{selector}&limit={KUBE_PAGE}");
    let machine_requests = [
        Request {
            name: "GET /v1/clusters/{c}/machines?limit=100",
            path: format!("/v1/clusters/{uuid}/machines?limit={V1_PAGE}"),
            accept: "application/json",
            key: "machines",
            items: per_cluster.min(V1_PAGE),
        },
        Request {
            name: "kubectl get machines -n -l, Table",
            path: kube.clone(),
            accept: TABLE_ACCEPT,
            key: "rows",
            items: per_cluster.min(KUBE_PAGE),
        },
        Request {
            name: "kubectl get machines -n -l, JSON",
            path: kube,
            accept: "application/json",
            key: "items",
            items: per_cluster.min(KUBE_PAGE),
        },
    ];
    for r in &machine_requests {
        figures.push(bench.time(r, n, page).await?);
    }
    server.abort();
    let mut all = before;
    all.append(&mut figures);

    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!();
    println!(
        "Fleetyard machines: {} clusters over {} projects, {machines} machines, PostgreSQL, \
         {build} build, in-process API over loopback (no-auth member of {project}); cluster \
         {name} ({uuid}); load {load_clusters_s:.1} s + {load_machines_s:.1} s",
        args.clusters, args.projects
    );
    println!(
        "{:<48} {:>9} {:>8} {:>22} {:>6} {:>4}  samples / note",
        "figure", "median ms", "p90 ms", "target", "ratio", "met"
    );
    for f in &all {
        println!(
            "{:<48} {:>9.2} {:>8.2} {:>22} {:>6} {:>4}  n={}; {}",
            f.name,
            f.median(),
            f.p90(),
            f.target.text(),
            f.ratio().map_or("-".into(), |r| format!("{r:.2}")),
            match f.met() {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            },
            f.samples.len(),
            f.note
        );
    }
    let report = json!({
        "clusters": args.clusters,
        "projects": args.projects,
        "machines": machines,
        "load_clusters_seconds": load_clusters_s,
        "load_machines_seconds": load_machines_s,
        "project": project,
        "cluster": uuid,
        "build": build,
        "figures": all.iter().map(|f| json!({
            "figure": f.name,
            "median_ms": f.median(),
            "p90_ms": f.p90(),
            "max_ms": f.samples.last().copied(),
            "samples": f.samples.len(),
            "target": f.target.text(),
            "before_median_ms": f.before,
            "ratio": f.ratio(),
            "met": f.met(),
            "note": f.note,
        })).collect::<Vec<_>>(),
    });
    let path = std::path::Path::new(&args.json);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("(JSON: {})", path.display());
    Ok(())
}
