//! The security matrix of cluster groups on `/v1` (microversion 1.20), on PostgreSQL and
//! SQLite: every endpoint that names a cluster, as its owner, a project bound to a group holding
//! it for `read`, one bound for `write`, and an unbound project, each with the answer and body
//! it must get. What a binding grants is the cluster's show and its place in the lists
//! (`read`), its update and delete and joining it to a federation (`write`); the cluster's node
//! groups, machines, certificates, resize and upgrade stay its own project's, so they answer a
//! bound project as they answer anyone else: the cluster is not found. The Kubernetes face's
//! matrix is `registry_groups.rs`.

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::{at, drain, spawn_pki, template_body, uuid_of, Backend, Pki, Resp};

macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn on_postgres() {
                ($body)(spawn_pki(Backend::Postgres, |_| {}).await).await;
            }
            #[tokio::test]
            async fn on_sqlite() {
                ($body)(spawn_pki(Backend::Sqlite, |_| {}).await).await;
            }
        }
    };
}

/// The four callers, by project.
const OWNER: &str = "project-owner";
const READER: &str = "project-reader";
const WRITER: &str = "project-writer";
const UNBOUND: &str = "project-unbound";

/// What a caller must get.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// This success status.
    Ok(u16),
    /// The read binding's 403.
    ReadOnly,
    /// Magnum's 404 for the cluster.
    Missing,
}

struct Fixture {
    pki: Pki,
    headers: Vec<(&'static str, HeaderMap)>,
    /// Each caller's own cluster (a federation's host).
    own: Vec<(&'static str, String)>,
}

impl Fixture {
    fn h(&self, project: &str) -> &HeaderMap {
        &self
            .headers
            .iter()
            .find(|(p, _)| *p == project)
            .expect("caller")
            .1
    }
    fn own(&self, project: &str) -> &str {
        &self.own.iter().find(|(p, _)| *p == project).expect("own").1
    }
}

async fn cluster(pki: &Pki, h: &HeaderMap, name: &str) -> String {
    let app = &pki.app;
    let r = app
        .post_as(
            "/v1/clustertemplates",
            &template_body(&format!("{name}-t")),
            h,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let t = uuid_of(&r.body);
    let r = app
        .post_as(
            "/v1/clusters",
            &json!({"name": name, "cluster_template_id": t}),
            h,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&pki.conductor).await;
    uuid_of(&r.body)
}

/// Checks `r` against `e` for `caller` acting on cluster `c`.
#[track_caller]
fn check(r: &Resp, e: Expect, caller: &str, c: &str, what: &str) {
    match e {
        Expect::Ok(status) => assert_eq!(r.status, status, "{what} as {caller}: {}", r.text),
        Expect::ReadOnly => r.assert_error(
            403,
            &format!(
                "The cluster groups bound to project {caller} grant read access to cluster \
                 {c}, not write access."
            ),
        ),
        Expect::Missing => r.assert_error(404, &format!("Cluster {c} could not be found.")),
    }
}

/// The owner's clusters `shared` (and `spare-N` for the destructive rows) in one group, bound
/// to READER for read and WRITER for write; every caller has a cluster of its own.
async fn fixture(pki: Pki, spares: usize) -> (Fixture, String, Vec<String>) {
    let app = &pki.app;
    let headers: Vec<(&'static str, HeaderMap)> = [OWNER, READER, WRITER, UNBOUND]
        .into_iter()
        .map(|p| {
            (
                p,
                at(
                    &app.as_identity(p, &format!("user-{p}"), "member,reader"),
                    "latest",
                ),
            )
        })
        .collect();
    let mut own = Vec::new();
    for (p, h) in &headers {
        own.push((*p, cluster(&pki, h, &format!("{p}-own")).await));
    }
    let owner = &headers[0].1;
    let shared = cluster(&pki, owner, "shared").await;
    let mut spare = Vec::new();
    for i in 0..spares {
        spare.push(cluster(&pki, owner, &format!("spare-{i}")).await);
    }
    let members: Vec<&String> = std::iter::once(&shared).chain(&spare).collect();
    let r = app
        .post_as(
            "/v1/clustergroups",
            &json!({"name": "g", "clusters": members}),
            owner,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let g = uuid_of(&r.body);
    for (project, access) in [(READER, "read"), (WRITER, "write")] {
        let r = app
            .post_as(
                &format!("/v1/clustergroups/{g}/bindings"),
                &json!({"project_id": project, "access": access}),
                owner,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    (Fixture { pki, headers, own }, shared, spare)
}

const CALLERS: [&str; 4] = [OWNER, READER, WRITER, UNBOUND];

both!(
    every_read_endpoint_answers_each_caller_as_its_right_says,
    |pki: Pki| async move {
        let (f, shared, _) = fixture(pki, 0).await;
        let app = &f.pki.app;
        // GET /v1/clusters/{c}: the bound see it, marked with their right.
        for (caller, marker) in [
            (OWNER, Value::Null),
            (READER, json!("read")),
            (WRITER, json!("write")),
        ] {
            let r = app
                .get_as(&format!("/v1/clusters/{shared}"), f.h(caller))
                .await;
            assert_eq!(r.status, 200, "{caller}: {}", r.text);
            assert_eq!(r.body["uuid"], shared.as_str());
            assert_eq!(r.body["project_id"], OWNER);
            assert_eq!(
                r.body
                    .get("access")
                    .map(|a| a["via"][0]["access"].clone())
                    .unwrap_or(Value::Null),
                marker,
                "{caller}"
            );
        }
        let r = app
            .get_as(&format!("/v1/clusters/{shared}"), f.h(UNBOUND))
            .await;
        check(&r, Expect::Missing, UNBOUND, &shared, "show");
        // The lists: the bound find it beside their own, the unbound only their own.
        for caller in CALLERS {
            for path in ["/v1/clusters", "/v1/clusters/detail"] {
                let r = app.get_as(path, f.h(caller)).await;
                assert_eq!(r.status, 200, "{caller} {path}: {}", r.text);
                let mut got: Vec<String> = r.body["clusters"]
                    .as_array()
                    .expect("clusters")
                    .iter()
                    .map(uuid_of)
                    .collect();
                got.sort();
                let mut want = vec![f.own(caller).to_string()];
                if caller != UNBOUND {
                    want.push(shared.clone());
                }
                want.sort();
                assert_eq!(got, want, "{caller} {path}");
            }
        }
        // What belongs to the cluster's own project: not found for anyone else.
        for path in [
            format!("/v1/clusters/{shared}/nodegroups"),
            format!("/v1/clusters/{shared}/machines"),
            format!("/v1/certificates/{shared}"),
        ] {
            let r = app.get_as(&path, f.h(OWNER)).await;
            assert_eq!(r.status, 200, "owner {path}: {}", r.text);
            for caller in [READER, WRITER, UNBOUND] {
                let r = app.get_as(&path, f.h(caller)).await;
                check(&r, Expect::Missing, caller, &shared, &path);
            }
        }
    }
);

both!(
    every_change_endpoint_answers_each_caller_as_its_right_says,
    |pki: Pki| async move {
        let (f, shared, spare) = fixture(pki, 2).await;
        let app = &f.pki.app;
        // Refusals first: nothing they answer changes anything.
        let resize = |n: u64| json!([{"op": "replace", "path": "/node_count", "value": n}]);
        for (caller, e) in [(UNBOUND, Expect::Missing), (READER, Expect::ReadOnly)] {
            let r = app
                .patch_as(&format!("/v1/clusters/{shared}"), &resize(3), f.h(caller))
                .await;
            check(&r, e, caller, &shared, "update");
            let r = app
                .delete_as(&format!("/v1/clusters/{}", spare[0]), f.h(caller))
                .await;
            check(&r, e, caller, &spare[0], "delete");
            let fed = json!({"name": format!("fed-{caller}"), "hostcluster_id": f.own(caller),
                         "member_ids": [shared], "properties": {"dns-zone": "example.com."}});
            let r = app.post_as("/v1/federations", &fed, f.h(caller)).await;
            check(&r, e, caller, &shared, "federation join");
        }
        // Resize, upgrade, node groups, machines and certificates stay the owner's project's.
        for caller in [READER, WRITER, UNBOUND] {
            let h = f.h(caller);
            let r = app
                .post_as(
                    &format!("/v1/clusters/{shared}/actions/resize"),
                    &json!({"node_count": 3}),
                    h,
                )
                .await;
            check(&r, Expect::Missing, caller, &shared, "resize");
            let r = app
                .post_as(
                    &format!("/v1/clusters/{shared}/nodegroups"),
                    &json!({"name": "extra", "node_count": 1}),
                    h,
                )
                .await;
            check(&r, Expect::Missing, caller, &shared, "nodegroup create");
            let r = app
                .post_as(
                    "/v1/certificates",
                    &json!({"cluster_uuid": shared, "csr": "x"}),
                    h,
                )
                .await;
            check(&r, Expect::Missing, caller, &shared, "certificate sign");
        }
        let shown = app
            .get_as(&format!("/v1/clusters/{shared}"), f.h(OWNER))
            .await;
        assert_eq!(shown.body["node_count"], 1, "{}", shown.text);
        for s in &spare {
            let r = app.get_as(&format!("/v1/clusters/{s}"), f.h(OWNER)).await;
            assert_eq!(r.body["status"], "CREATE_COMPLETE", "{}", r.text);
        }
        // The writer and the owner change, delete and join.
        for (caller, n, victim) in [(WRITER, 2, &spare[0]), (OWNER, 3, &spare[1])] {
            let r = app
                .patch_as(&format!("/v1/clusters/{shared}"), &resize(n), f.h(caller))
                .await;
            check(&r, Expect::Ok(202), caller, &shared, "update");
            assert_eq!(r.body["uuid"], shared.as_str());
            drain(&f.pki.conductor).await;
            let shown = app
                .get_as(&format!("/v1/clusters/{shared}"), f.h(OWNER))
                .await;
            assert_eq!(shown.body["node_count"], n, "{}", shown.text);
            let r = app
                .delete_as(&format!("/v1/clusters/{victim}"), f.h(caller))
                .await;
            check(&r, Expect::Ok(204), caller, victim, "delete");
            let fed = json!({"name": format!("fed-{caller}"), "hostcluster_id": f.own(caller),
                         "member_ids": [shared], "properties": {"dns-zone": "example.com."}});
            let r = app.post_as("/v1/federations", &fed, f.h(caller)).await;
            check(&r, Expect::Ok(202), caller, &shared, "federation join");
            let fed = uuid_of(&r.body);
            let shown = app
                .get_as(&format!("/v1/federations/{fed}"), f.h(caller))
                .await;
            assert_eq!(shown.body["member_ids"], json!([shared]), "{}", shown.text);
        }
        drain(&f.pki.conductor).await;
        for s in &spare {
            let r = app.get_as(&format!("/v1/clusters/{s}"), f.h(OWNER)).await;
            check(&r, Expect::Missing, OWNER, s, "show after delete");
        }
    }
);
