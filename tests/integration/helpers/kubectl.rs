//! kubectl against a test app: each with its own kubeconfig and cache directory.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use super::TestApp;

/// The kubectl binary, or `None` (after saying why) when this machine has none.
pub fn kubectl_binary() -> Option<String> {
    let bin = std::env::var("FLEETYARD_KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let found = std::process::Command::new(&bin)
        .args(["version", "--client"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if found {
        return Some(bin);
    }
    assert!(
        std::env::var("FLEETYARD_REQUIRE_KUBECTL").as_deref() != Ok("1"),
        "kubectl is required (FLEETYARD_REQUIRE_KUBECTL=1) but `{bin} version --client` failed"
    );
    eprintln!("SKIPPED: no kubectl on this machine (`{bin} version --client` failed)");
    None
}

/// kubectl with a kubeconfig of its own pointed at the app.
pub struct Kubectl {
    pub bin: String,
    pub dir: PathBuf,
}

impl Kubectl {
    pub fn new(bin: &str, app: &TestApp, namespace: &str, token: Option<&str>) -> Kubectl {
        let dir =
            std::env::temp_dir().join(format!("fy-kubectl-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("kubectl dir");
        let user = match token {
            Some(t) => format!("{{token: {t}}}"),
            None => "{}".into(),
        };
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fy\n  cluster:\n    server: {}\n\
             contexts:\n- name: fy\n  context: {{cluster: fy, user: fy, namespace: {namespace}}}\n\
             current-context: fy\nusers:\n- name: fy\n  user: {user}\n",
            app.address
        );
        std::fs::write(dir.join("kubeconfig"), config).expect("kubeconfig");
        Kubectl {
            bin: bin.to_string(),
            dir,
        }
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .env("HOME", &self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl; (exit success, stdout, stderr).
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .expect("kubectl finished within a minute")
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs kubectl and insists it succeeded; its stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }

    /// Runs kubectl and insists it failed; its stderr.
    pub async fn fails(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args).await;
        assert!(!ok, "kubectl {args:?} should have failed:\n{out}\n{err}");
        err
    }

    /// Writes `text` to a file in this kubectl's directory; its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("manifest");
        path.display().to_string()
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
