//! Real `fleetyard` processes for the drills: configured through the environment, as an
//! operator's container would be, and killed with SIGKILL. Each keeps its log in a file whose
//! tail a failing drill shows.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// What a process runs: `fleetyard api`, `fleetyard conductor` or `fleetyard serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Api,
    Conductor,
    Serve,
}

impl Role {
    fn command(self) -> &'static str {
        match self {
            Role::Api => "api",
            Role::Conductor => "conductor",
            Role::Serve => "serve",
        }
    }

    fn listens(self) -> bool {
        self != Role::Conductor
    }
}

/// The settings of a drill's processes, as `FLEETYARD__SECTION__OPTION` variables.
#[derive(Debug, Clone)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    /// Settings on `db_url`, already migrated, logging warnings only, with a
    /// `[certificates] key_file` of their own (a conductor on PostgreSQL needs one).
    pub fn new(db_url: &str) -> Env {
        Env { vars: Vec::new() }
            .set(
                "CERTIFICATES__KEY_FILE",
                crate::helpers::certificates_key_file(),
            )
            .set("DATABASE__CONNECTION", db_url)
            .set("DATABASE__AUTO_MIGRATE", "false")
            .set("DEFAULT__LOG_LEVEL", "warn")
            .set("API__HOST", "127.0.0.1")
            .set("QUOTAS__MAX_CLUSTERS_PER_PROJECT", 100_000)
    }

    /// `option` (`SECTION__OPTION`) set to `value`, replacing an earlier value.
    pub fn set(mut self, option: &str, value: impl ToString) -> Env {
        let key = format!("FLEETYARD__{option}");
        self.vars.retain(|(k, _)| *k != key);
        self.vars.push((key, value.to_string()));
        self
    }
}

/// The binary the drills run: `FLEETYARD_DRILL_BIN` (`./tox.sh drills` sets the release
/// build), or the one this suite was built with.
fn binary() -> String {
    std::env::var("FLEETYARD_DRILL_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_fleetyard").to_string())
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// One running `fleetyard` process.
pub struct Process {
    child: Child,
    pub name: String,
    /// `http://127.0.0.1:PORT` of a process that serves the API.
    pub url: Option<String>,
    log: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Process {
    /// Starts `role` named `name` (its `[DEFAULT] host`) with `env`; an API process is
    /// returned once `/healthcheck` answers 200.
    pub async fn start(role: Role, name: &str, env: &Env) -> Process {
        let port = free_port();
        Process::start_on(role, name, env, port).await
    }

    /// As [`Process::start`], on a given port (ignored by a conductor).
    pub async fn start_on(role: Role, name: &str, env: &Env, port: u16) -> Process {
        let log = std::env::temp_dir().join(format!(
            "fy-drill-{name}-{}.log",
            uuid::Uuid::new_v4().simple()
        ));
        let file = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(binary());
        cmd.arg(role.command())
            .envs(env.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("FLEETYARD__DEFAULT__HOST", name)
            .env("FLEETYARD__API__PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .kill_on_drop(true);
        let child = cmd.spawn().expect("fleetyard starts");
        let mut p = Process {
            child,
            name: name.to_string(),
            url: role.listens().then(|| format!("http://127.0.0.1:{port}")),
            log,
        };
        if role.listens() {
            p.wait_healthy().await;
        }
        p
    }

    async fn wait_healthy(&mut self) {
        let Some(url) = self.url.clone() else { return };
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited with {status}: {}", self.name, self.log_tail());
            }
            let r = client
                .get(format!("{url}/healthcheck"))
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if matches!(&r, Ok(r) if r.status() == 200) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} did not answer /healthcheck within 30 s: {}",
                self.name,
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, and the process reaped.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// SIGTERM (what an init system or Kubernetes sends), then waits at most `limit` for the
    /// exit; the exit status, or `None` when the process was still running.
    pub async fn terminate(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let pid = self.child.id().expect("a running process has an id");
        let sent = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM to {}", self.name);
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .map(|r| r.expect("the process is reaped"))
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of the process's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}
