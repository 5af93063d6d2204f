//! `cluster.k8s.io/v1alpha1` `machinedeployments` on the Kubernetes face, one per node group:
//! list, get and Table bodies, label selectors and paging; the `scale` subresource as the
//! group's resize; a template change (flavor, image, kubelet) as the group's rolling
//! replacement, `maxSurge` at a time, each machine exactly once; a kubelet version held to the
//! skew policy before anything changes; replace with its resourceVersion; the refusals as 422
//! with causes naming each field, 409 for a busy group, a delete as the group's, a watch from
//! the clusters' and machines' change logs, 405 for a create. On
//! PostgreSQL and SQLite with the fake driver and an instant conductor, and with the real
//! kubectl.

use fleetyard::conductor::{Conductor, Outcome};
use reqwest::header::HeaderMap;
use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::kubectl::{kubectl_binary, Kubectl};
use crate::helpers::{
    at, cluster_as, conductor, conductor_from, drain, instant, spawn_keeping, template_as, Backend,
    Resp, TestApp,
};

const ALL: &str = "/apis/cluster.k8s.io/v1alpha1/machinedeployments";
const BASE: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machinedeployments";
const MACHINES: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/project-a/machines";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const MERGE: &str = "application/merge-patch+json";
const CONTROL_PLANE: &str = "v1.31.4";
const WORKERS: i64 = 3;
const WORKER: &str = "kc-default-worker";
const MASTER: &str = "kc-default-master";

/// The app, its instant conductor, and a complete cluster `kc` of three workers on
/// `m1.small` at Kubernetes v1.31.4.
struct Env {
    app: TestApp,
    conductor: Conductor,
    v1: HeaderMap,
    cluster: String,
}

impl Env {
    async fn new(backend: Backend) -> Env {
        let (app, settings) = spawn_keeping(backend, |s| {
            crate::helpers::instant_settings(s);
            s.noauth.project_id = "project-a".into();
            s.noauth.user_id = "user-a".into();
            s.noauth.roles = "member,reader".into();
        })
        .await;
        let conductor = conductor_from(&app, &settings);
        let v1 = at(&app.headers, "latest");
        let t = template_as(&app, "kc-tpl", json!({}), &v1).await;
        let body = json!({"name": "kc", "cluster_template_id": t, "node_count": WORKERS,
            "flavor_id": "m1.small", "labels": {"kube_tag": CONTROL_PLANE}});
        let cluster = cluster_as(&app, body, &v1).await;
        drain(&conductor).await;
        let env = Env {
            app,
            conductor,
            v1,
            cluster,
        };
        assert_eq!(env.group().await["status"], "CREATE_COMPLETE");
        env
    }

    async fn call(&self, method: Method, path: &str, ct: &str, body: Option<&Value>) -> Resp {
        self.call_as(method, path, ct, body, &self.app.headers)
            .await
    }

    async fn call_as(
        &self,
        method: Method,
        path: &str,
        ct: &str,
        body: Option<&Value>,
        h: &HeaderMap,
    ) -> Resp {
        let mut req = self
            .app
            .client
            .request(method, self.app.url(path))
            .headers(h.clone())
            .header("Accept", "application/json");
        if let Some(b) = body {
            req = req.header("Content-Type", ct).body(b.to_string());
        }
        self.app.send(req).await
    }

    async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, "", None).await
    }

    async fn md(&self, name: &str) -> Value {
        let r = self.get(&format!("{BASE}/{name}")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn patch(&self, name: &str, ct: &str, body: Value) -> Resp {
        self.call(Method::PATCH, &format!("{BASE}/{name}"), ct, Some(&body))
            .await
    }

    /// The default worker group on /v1.
    async fn group(&self) -> Value {
        let path = format!("/v1/clusters/{}/nodegroups/default-worker", self.cluster);
        let r = self.app.get_as(&path, &self.v1).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    /// The worker machines on the Kubernetes face.
    async fn workers(&self) -> Vec<Value> {
        let r = self
            .get(&format!(
                "{MACHINES}?labelSelector=fleetyard.openstack.org%2Fnodegroup%3Ddefault-worker"
            ))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["items"].as_array().cloned().unwrap_or_default()
    }

    async fn jobs_left(&self) -> usize {
        drain(&self.conductor).await.len()
    }
}

fn names(r: &Resp) -> Vec<String> {
    r.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {}", r.text))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

fn condition<'a>(md: &'a Value, kind: &str) -> &'a Value {
    md["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

fn cause_fields(r: &Resp) -> Vec<String> {
    r.body["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| c["field"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[rstest]
#[tokio::test]
async fn each_node_group_is_a_machine_deployment_listed_got_and_tabled(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let list = env.get(BASE).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body["kind"], "MachineDeploymentList");
    assert_eq!(list.body["apiVersion"], "cluster.k8s.io/v1alpha1");
    assert_eq!(names(&list), vec![MASTER, WORKER]);

    let md = env.md(WORKER).await;
    let group = env.group().await;
    assert_eq!(md["kind"], "MachineDeployment");
    assert_eq!(md["metadata"]["namespace"], "project-a");
    assert_eq!(md["metadata"]["uid"], group["uuid"]);
    assert_eq!(
        md["metadata"]["labels"],
        json!({"cluster.k8s.io/cluster-name": "kc",
               "fleetyard.openstack.org/nodegroup": "default-worker"})
    );
    let owner = &md["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Cluster");
    assert_eq!(owner["name"], "kc");
    assert_eq!(owner["uid"], json!(env.cluster));
    assert_eq!(md["spec"]["replicas"], WORKERS);
    assert_eq!(
        md["spec"]["selector"]["matchLabels"],
        md["metadata"]["labels"]
    );
    assert_eq!(
        md["spec"]["template"]["metadata"]["labels"],
        md["metadata"]["labels"]
    );
    let tspec = &md["spec"]["template"]["spec"];
    assert_eq!(tspec["versions"], json!({"kubelet": CONTROL_PLANE}));
    assert_eq!(tspec["flavor"], "m1.small");
    assert_eq!(tspec["osImage"], group["image_id"]);
    assert_eq!(
        md["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    );
    let s = &md["status"];
    for (k, v) in [
        ("replicas", WORKERS),
        ("updatedReplicas", WORKERS),
        ("readyReplicas", WORKERS),
        ("availableReplicas", WORKERS),
        ("unavailableReplicas", 0),
    ] {
        assert_eq!(s[k], v, "{k}: {s}");
    }
    assert_eq!(condition(&md, "Available")["status"], "True");
    assert_eq!(condition(&md, "Progressing")["reason"], "CREATE_COMPLETE");
    assert!(condition(&md, "ReplicaFailure").is_null());
    let master = env.md(MASTER).await;
    assert_eq!(master["spec"]["replicas"], 1);
    assert_eq!(
        master["spec"]["template"]["spec"]["versions"]["controlPlane"],
        CONTROL_PLANE
    );

    // The Table: the columns and one row per group, wide ones at priority 1.
    let mut h = env.app.headers.clone();
    h.insert("accept", TABLE.parse().expect("accept"));
    let t = env.app.get_as(BASE, &h).await;
    assert_eq!(t.status, 200, "{}", t.text);
    assert_eq!(t.body["kind"], "Table");
    let cols: Vec<(&str, i64)> = t.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or(""),
                c["priority"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        cols,
        vec![
            ("Name", 0),
            ("Cluster", 0),
            ("Role", 0),
            ("Replicas", 0),
            ("Ready", 0),
            ("Updated", 0),
            ("Version", 0),
            ("Age", 0),
            ("Flavor", 1),
            ("Image", 1),
            ("Status", 1)
        ]
    );
    let row = t.body["rows"][1]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(row[0], WORKER);
    assert_eq!(
        row[1..7],
        [
            json!("kc"),
            json!("worker"),
            json!(3),
            json!(3),
            json!(3),
            json!(CONTROL_PLANE)
        ]
    );
    assert_eq!(row[8], "m1.small");
    assert_eq!(row[10], "CREATE_COMPLETE");

    // Label selectors, paging and the list across namespaces.
    let r = env
        .get(&format!(
            "{BASE}?labelSelector=fleetyard.openstack.org%2Fnodegroup%3Ddefault-master"
        ))
        .await;
    assert_eq!(names(&r), vec![MASTER]);
    let r = env
        .get(&format!(
            "{BASE}?labelSelector=cluster.k8s.io%2Fcluster-name%3Dother"
        ))
        .await;
    assert_eq!(names(&r), Vec::<String>::new());
    let first = env.get(&format!("{BASE}?limit=1")).await;
    assert_eq!(names(&first), vec![MASTER]);
    let token = first.body["metadata"]["continue"]
        .as_str()
        .expect("continue");
    let second = env.get(&format!("{BASE}?limit=1&continue={token}")).await;
    assert_eq!(names(&second), vec![WORKER], "{}", second.text);
    assert!(second.body["metadata"]["continue"].is_null());
    let all = env.get(ALL).await;
    assert_eq!(names(&all), vec![MASTER, WORKER]);

    // Another project sees none of it.
    let b = env.app.project_b();
    let r = env.call_as(Method::GET, BASE, "", None, &b).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.body["reason"], "Forbidden");
    let r = env.call_as(Method::GET, ALL, "", None, &b).await;
    assert_eq!(names(&r), Vec::<String>::new());

    // What is not served.
    let r = env.get(&format!("{BASE}/nosuch")).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.body["message"],
        "machinedeployments.cluster.k8s.io \"nosuch\" not found"
    );
    let r = env
        .call(Method::POST, BASE, "application/json", Some(&md))
        .await;
    assert_eq!(r.status, 405, "{}", r.text);
    assert!(
        r.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("POST /v1/clusters/{cluster_ident}/nodegroups")),
        "{}",
        r.text
    );
}

/// `(type, name)` of each watch event, and the events.
fn events_of(text: &str) -> (Vec<(String, String)>, Vec<Value>) {
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let seen = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    (seen, events)
}

#[rstest]
#[tokio::test]
async fn a_watch_follows_node_groups_through_their_clusters_and_machines(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let path = format!("/v1/clusters/{}/nodegroups", env.cluster);
    let r = env
        .app
        .request(
            Method::POST,
            &path,
            &env.v1,
            Some(&json!({"name": "gpu", "node_count": 1})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&env.conductor).await;
    let rv0 = env.get(BASE).await.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_string();

    // A streaming list, then the changes as they are made.
    let req = env
        .app
        .client
        .get(env.app.url(&format!(
            "{BASE}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&\
             resourceVersionMatch=NotOlderThan&timeoutSeconds=6"
        )))
        .headers(env.app.headers.clone());
    let live = tokio::spawn(async move {
        let r = req.send().await.expect("watch");
        assert_eq!(r.status(), 200);
        r.text().await.expect("events")
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let scale = format!("{BASE}/{WORKER}/scale");
    let r = env
        .call(
            Method::PATCH,
            &scale,
            MERGE,
            Some(&json!({"spec": {"replicas": 4}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    drain(&env.conductor).await;
    let r = env
        .call(Method::DELETE, &format!("{BASE}/kc-gpu"), "", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    drain(&env.conductor).await;
    let text = live.await.expect("the watch ends");
    let (seen, events) = events_of(&text);
    let pair = |t: &str, n: &str| (t.to_string(), n.to_string());
    assert_eq!(
        seen[..4],
        [
            pair("ADDED", MASTER),
            pair("ADDED", WORKER),
            pair("ADDED", "kc-gpu"),
            pair("BOOKMARK", "")
        ],
        "{text}"
    );
    assert_eq!(
        events[3]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    let worker: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "MODIFIED" && e["object"]["metadata"]["name"] == WORKER)
        .map(|e| &e["object"])
        .collect();
    assert!(worker.iter().any(|o| o["spec"]["replicas"] == 4), "{text}");
    let last = worker.last().expect("the worker group changed");
    assert_eq!(last["status"]["readyReplicas"], 4, "{text}");
    assert!(seen.contains(&pair("DELETED", "kc-gpu")), "{text}");
    // The master group's object changed only in its resourceVersion (its cluster's row
    // moved), which the watch shows so a client's copy stays current.
    for e in events
        .iter()
        .filter(|e| e["type"] == "MODIFIED" && e["object"]["metadata"]["name"] == MASTER)
    {
        assert_eq!(e["object"]["spec"], events[0]["object"]["spec"], "{text}");
        assert_eq!(
            e["object"]["status"], events[0]["object"]["status"],
            "{text}"
        );
    }

    // From a resourceVersion: the changes after it, each group as it is now.
    let r = env
        .get(&format!(
            "{BASE}?watch=true&resourceVersion={rv0}&timeoutSeconds=1"
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (seen, events) = events_of(&r.text);
    assert_eq!(
        seen,
        vec![pair("MODIFIED", MASTER), pair("MODIFIED", WORKER)],
        "{}",
        r.text
    );
    assert_eq!(events[1]["object"]["status"]["readyReplicas"], 4);
    // As Tables (kubectl get md -w): the first event carries the columns.
    let mut h = env.app.headers.clone();
    h.insert("accept", TABLE.parse().expect("accept"));
    let r = env
        .call_as(
            Method::GET,
            &format!("{BASE}?watch=true&resourceVersion={rv0}&timeoutSeconds=1"),
            "",
            None,
            &h,
        )
        .await;
    let (seen, events) = events_of(&r.text);
    assert_eq!(seen.len(), 2, "{}", r.text);
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert_eq!(
        events[0]["object"]["columnDefinitions"][3]["name"],
        "Replicas"
    );
    assert_eq!(events[1]["object"]["rows"][0]["cells"][0], WORKER);
    assert_eq!(events[1]["object"]["rows"][0]["cells"][3], 4);
    // Another project's watch sees none of it.
    let b = env.app.project_b();
    let r = env
        .call_as(
            Method::GET,
            &format!("{BASE}?watch=true&timeoutSeconds=1"),
            "",
            None,
            &b,
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.body["details"]["kind"], "machinedeployments");
}

#[rstest]
#[tokio::test]
async fn deleting_a_machine_deployment_deletes_its_node_group(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let path = format!("/v1/clusters/{}/nodegroups", env.cluster);
    let r = env
        .app
        .request(
            Method::POST,
            &path,
            &env.v1,
            Some(&json!({"name": "gpu", "node_count": 1})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&env.conductor).await;
    let md = env.md("kc-gpu").await;
    assert_eq!(md["spec"]["replicas"], 1);

    let one = format!("{BASE}/kc-gpu");
    let r = env
        .call(Method::DELETE, &format!("{one}?dryRun=All"), "", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.text
    );
    assert_eq!(
        env.md("kc-gpu").await["metadata"]["resourceVersion"],
        md["metadata"]["resourceVersion"]
    );
    let stale = json!({"preconditions": {"resourceVersion": "1"}});
    let r = env
        .call(Method::DELETE, &one, "application/json", Some(&stale))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);

    let r = env.call(Method::DELETE, &one, "", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["metadata"]["name"], "kc-gpu");
    assert!(
        r.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        r.text
    );
    assert_eq!(
        condition(&r.body, "Progressing")["reason"],
        "DELETE_IN_PROGRESS"
    );
    drain(&env.conductor).await;
    let r = env.get(&one).await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = env.app.get_as(&format!("{path}/gpu"), &env.v1).await;
    assert_eq!(r.status, 404, "{}", r.text);

    // A default group is never deleted.
    let r = env
        .call(Method::DELETE, &format!("{BASE}/{WORKER}"), "", None)
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "Deleting a default nodegroup is not supported."
    );
    assert_eq!(env.jobs_left().await, 0);
}

#[rstest]
#[tokio::test]
async fn a_scale_resizes_the_node_group_and_its_machines(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let scale = env.get(&format!("{BASE}/{WORKER}/scale")).await;
    assert_eq!(scale.status, 200, "{}", scale.text);
    assert_eq!(scale.body["kind"], "Scale");
    assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
    assert_eq!(scale.body["spec"], json!({"replicas": WORKERS}));
    assert_eq!(
        scale.body["status"],
        json!({"replicas": WORKERS, "selector":
            "cluster.k8s.io/cluster-name=kc,fleetyard.openstack.org/nodegroup=default-worker"})
    );

    // A dry run answers the change and writes nothing.
    let path = format!("{BASE}/{WORKER}/scale");
    let r = env
        .call(
            Method::PATCH,
            &format!("{path}?dryRun=All"),
            MERGE,
            Some(&json!({"spec": {"replicas": 9}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["replicas"], 9);
    assert_eq!(env.group().await["node_count"], WORKERS);
    assert_eq!(env.jobs_left().await, 0, "no job was queued");

    let r = env
        .call(
            Method::PATCH,
            &path,
            MERGE,
            Some(&json!({"spec": {"replicas": 5}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["replicas"], 5);
    let group = env.group().await;
    assert_eq!(group["node_count"], 5);
    assert_eq!(group["status"], "UPDATE_IN_PROGRESS");
    // Busy: another change waits for this one.
    let r = env
        .call(
            Method::PATCH,
            &path,
            MERGE,
            Some(&json!({"spec": {"replicas": 6}})),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["reason"], "Conflict");
    assert!(r.text.contains("UPDATE_IN_PROGRESS"), "{}", r.text);
    drain(&env.conductor).await;
    assert_eq!(env.group().await["status"], "UPDATE_COMPLETE");
    let workers = env.workers().await;
    assert_eq!(workers.len(), 5);
    assert!(workers.iter().all(|m| m["status"]["phase"] == "Running"));
    let md = env.md(WORKER).await;
    assert_eq!(md["spec"]["replicas"], 5);
    assert_eq!(md["status"]["readyReplicas"], 5);
    assert_eq!(md["status"]["updatedReplicas"], 5);

    // A PUT of the Scale, then the same through the object's spec.replicas.
    let mut s = env.get(&path).await.body;
    s["spec"]["replicas"] = json!(4);
    let r = env
        .call(Method::PUT, &path, "application/json", Some(&s))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    drain(&env.conductor).await;
    assert_eq!(env.workers().await.len(), 4);
    let mut stale = s.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let r = env
        .call(Method::PUT, &path, "application/json", Some(&stale))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);

    // The master group's replicas are refused as /v1 refuses them, nothing written.
    let r = env
        .call(
            Method::PATCH,
            &format!("{BASE}/{MASTER}/scale"),
            MERGE,
            Some(&json!({"spec": {"replicas": 3}})),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(cause_fields(&r), vec!["spec.replicas"]);
    assert!(
        r.text
            .contains("Resizing the master nodegroup is not supported"),
        "{}",
        r.text
    );
    // Below the group's bounds or negative: 422.
    let r = env
        .call(
            Method::PATCH,
            &path,
            MERGE,
            Some(&json!({"spec": {"replicas": -1}})),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(env.jobs_left().await, 0);
}

#[rstest]
#[tokio::test]
async fn a_flavor_patch_with_max_surge_two_rolls_every_machine_exactly_once(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let before = env.workers().await;
    let r = env
        .patch(
            WORKER,
            MERGE,
            json!({"spec": {"template": {"spec": {"flavor": "m1.large"}},
                            "strategy": {"rollingUpdate": {"maxSurge": 2}}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["spec"]["template"]["spec"]["flavor"], "m1.large");
    assert_eq!(r.body["status"]["updatedReplicas"], 0);
    assert_eq!(
        condition(&r.body, "Progressing")["reason"],
        "UPDATE_IN_PROGRESS"
    );
    assert_eq!(env.group().await["flavor_id"], "m1.large");

    // One step of the job: one batch of two replaced.
    let first = env.conductor.try_execute_one().await.expect("a step");
    assert!(matches!(first, Outcome::Started { .. }), "{first:?}");
    let replaced = |ms: &[Value]| {
        ms.iter()
            .filter(|m| {
                m["spec"]["flavor"] == "m1.large"
                    && m["status"]["providerID"]
                        == format!("fake://{}/2", m["metadata"]["uid"].as_str().unwrap_or(""))
            })
            .count()
    };
    assert_eq!(replaced(&env.workers().await), 2, "one batch of maxSurge");
    drain(&env.conductor).await;
    let after = env.workers().await;
    assert_eq!(after.len(), before.len());
    assert_eq!(replaced(&after), before.len(), "every machine, once");
    let md = env.md(WORKER).await;
    assert_eq!(md["status"]["updatedReplicas"], WORKERS);
    assert_eq!(condition(&md, "Progressing")["reason"], "UPDATE_COMPLETE");

    // The same spec again: nothing to do, nothing queued.
    let r = env
        .patch(
            WORKER,
            MERGE,
            json!({"spec": {"template": {"spec": {"flavor": "m1.large"}}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(env.jobs_left().await, 0);

    // Every other field is a 422 naming it, and nothing changes.
    let r = env
        .patch(
            WORKER,
            MERGE,
            json!({"metadata": {"labels": {"x": "y"}},
                   "spec": {"paused": true, "template": {"spec": {"labels": {"tier": "gpu"}}},
                            "strategy": {"rollingUpdate": {"maxUnavailable": 1}}}}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(r.body["details"]["kind"], "MachineDeployment");
    assert_eq!(
        cause_fields(&r),
        vec![
            "metadata.labels",
            "spec.paused",
            "spec.strategy.rollingUpdate.maxUnavailable",
            "spec.template.spec.labels"
        ]
    );
    // A strategic merge patch is 415.
    let r = env
        .patch(
            WORKER,
            "application/strategic-merge-patch+json",
            json!({"spec": {}}),
        )
        .await;
    assert_eq!(r.status, 415, "{}", r.text);
    assert_eq!(env.jobs_left().await, 0);
}

#[rstest]
#[tokio::test]
async fn a_kubelet_version_outside_the_skew_policy_is_refused_and_changes_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let before = env.md(WORKER).await;
    let path = "/spec/template/spec/versions/kubelet";
    for (version, why) in [
        (
            "v1.32.0",
            "Node group default-worker cannot be upgraded to v1.32.0: the control plane runs \
             v1.31.4. Upgrade the control plane to v1.32 first.",
        ),
        (
            "v1.27.3",
            "Kubelet version v1.27.3 is more than 3 minor versions older than the control plane \
             version v1.31.4; the oldest supported kubelet is v1.28.",
        ),
    ] {
        let r = env
            .patch(
                WORKER,
                "application/json-patch+json",
                json!([{"op": "replace", "path": path, "value": version}]),
            )
            .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert_eq!(
            cause_fields(&r),
            vec!["spec.template.spec.versions.kubelet"]
        );
        assert_eq!(
            r.body["details"]["causes"][0]["message"],
            format!("Invalid value: {why}")
        );
    }
    // The master group's version is the control plane's.
    let r = env
        .patch(
            MASTER,
            "application/json-patch+json",
            json!([{"op": "replace", "path": path, "value": "v1.31.6"}]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("cluster upgrade"), "{}", r.text);
    let after = env.md(WORKER).await;
    assert_eq!(after["spec"], before["spec"]);
    assert_eq!(
        after["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    assert_eq!(env.group().await["status"], "CREATE_COMPLETE");
    assert_eq!(env.jobs_left().await, 0);
}

#[rstest]
#[tokio::test]
async fn a_kubelet_version_within_the_skew_policy_rolls_the_machines_onto_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    // A replace (kubectl edit): the whole object back with the new version.
    let mut md = env.md(WORKER).await;
    md["spec"]["template"]["spec"]["versions"]["kubelet"] = json!("v1.30.2");
    md["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!("100%");
    let mut no_rv = md.clone();
    no_rv["metadata"]
        .as_object_mut()
        .map(|m| m.remove("resourceVersion"));
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{WORKER}"),
            "application/json",
            Some(&no_rv),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(cause_fields(&r), vec!["metadata.resourceVersion"]);
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{WORKER}?dryRun=All"),
            "application/json",
            Some(&md),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        env.group().await["status"],
        "CREATE_COMPLETE",
        "a dry run writes nothing"
    );
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{WORKER}"),
            "application/json",
            Some(&md),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["spec"]["template"]["spec"]["versions"]["kubelet"],
        "v1.30.2"
    );
    let group = env.group().await;
    assert_eq!(group["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(group["version"], "v1.30.2");
    // The old resourceVersion is stale now.
    let r = env
        .call(
            Method::PUT,
            &format!("{BASE}/{WORKER}"),
            "application/json",
            Some(&md),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    drain(&env.conductor).await;
    let workers = env.workers().await;
    assert_eq!(workers.len() as i64, WORKERS);
    for m in &workers {
        assert_eq!(m["spec"]["versions"]["kubelet"], "v1.30.2", "{m}");
        assert_eq!(m["status"]["versions"]["kubelet"], "v1.30.2", "{m}");
        assert_eq!(m["status"]["phase"], "Running");
        assert_eq!(
            m["status"]["providerID"],
            format!("fake://{}/2", m["metadata"]["uid"].as_str().unwrap_or(""))
        );
    }
    let md = env.md(WORKER).await;
    assert_eq!(
        md["spec"]["template"]["spec"]["versions"]["kubelet"],
        "v1.30.2"
    );
    assert_eq!(md["status"]["updatedReplicas"], WORKERS);
    assert_eq!(env.group().await["status"], "UPDATE_COMPLETE");
}

#[rstest]
#[tokio::test]
async fn a_stopped_version_roll_shows_update_failed_and_the_same_spec_again_resumes_it(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let r = env
        .patch(
            WORKER,
            MERGE,
            json!({"spec": {"template": {"spec": {"versions": {"kubelet": "v1.31.6"}}}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let broken = conductor(
        &env.app,
        fleetyard::config::FakeDriverSection {
            fail_replacement: 2,
            ..instant()
        },
    );
    let outcomes = drain(&broken).await;
    assert!(
        matches!(outcomes.last(), Some(Outcome::Failed { .. })),
        "{outcomes:?}"
    );
    let md = env.md(WORKER).await;
    let failure = condition(&md, "ReplicaFailure");
    assert_eq!(failure["status"], "True", "{md}");
    assert_eq!(failure["reason"], "UPDATE_FAILED");
    let reason = env.group().await["status_reason"].clone();
    assert_eq!(failure["message"], reason);
    assert!(
        failure["message"].as_str().is_some_and(
            |m| m.starts_with("The rolling replacement of node group default-worker stopped")
        ),
        "{failure}"
    );
    assert_eq!(condition(&md, "Progressing")["status"], "False");
    assert_eq!(md["status"]["updatedReplicas"], 1, "{md}");
    assert_eq!(
        md["spec"]["template"]["spec"]["versions"]["kubelet"],
        "v1.31.6"
    );

    // The same spec again resumes the roll: only the machines left are replaced.
    let r = env
        .patch(
            WORKER,
            MERGE,
            json!({"spec": {"template": {"spec": {"versions": {"kubelet": "v1.31.6"}}}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        condition(&r.body, "Progressing")["reason"],
        "UPDATE_IN_PROGRESS"
    );
    drain(&env.conductor).await;
    for m in env.workers().await {
        assert_eq!(m["spec"]["versions"]["kubelet"], "v1.31.6", "{m}");
        assert_eq!(m["status"]["phase"], "Running", "{m}");
        assert_eq!(
            m["status"]["providerID"],
            format!("fake://{}/2", m["metadata"]["uid"].as_str().unwrap_or("")),
            "replaced exactly once"
        );
    }
    let md = env.md(WORKER).await;
    assert_eq!(md["status"]["updatedReplicas"], WORKERS);
    assert!(condition(&md, "ReplicaFailure").is_null());
}

#[tokio::test]
async fn kubectl_gets_scales_and_patches_machine_deployments() {
    let Some(bin) = kubectl_binary() else { return };
    let env = Env::new(Backend::Postgres).await;
    let k = Kubectl::new(&bin, &env.app, "project-a", None);

    let out = k.ok(&["api-resources", "--api-group=cluster.k8s.io"]).await;
    let line = out
        .lines()
        .find(|l| l.starts_with("machinedeployments"))
        .unwrap_or_else(|| panic!("no machinedeployments in api-resources:\n{out}"));
    for word in ["md", "cluster.k8s.io/v1alpha1", "true", "MachineDeployment"] {
        assert!(
            line.split_whitespace().any(|w| w == word),
            "{word} in {line}"
        );
    }

    let out = k.ok(&["get", "md"]).await;
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "CLUSTER", "ROLE", "REPLICAS", "READY", "UPDATED", "VERSION", "AGE"],
        "{out}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with(WORKER))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[..7],
        [WORKER, "kc", "worker", "3", "3", "3", CONTROL_PLANE]
    );
    let out = k
        .ok(&[
            "get",
            "md",
            "-o",
            "wide",
            "-l",
            "fleetyard.openstack.org/nodegroup=default-worker",
        ])
        .await;
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.contains("m1.small") && out.contains("CREATE_COMPLETE"),
        "{out}"
    );

    let out = k
        .ok(&["scale", "machinedeployment", WORKER, "--replicas=4"])
        .await;
    assert!(out.contains("scaled"), "{out}");
    drain(&env.conductor).await;
    assert_eq!(env.group().await["node_count"], 4);
    assert_eq!(env.workers().await.len(), 4);

    let out = k
        .ok(&[
            "patch",
            "md",
            WORKER,
            "--type=merge",
            "-p",
            r#"{"spec":{"template":{"spec":{"osImage":"fedora-coreos-41"}}}}"#,
        ])
        .await;
    assert!(out.contains("patched"), "{out}");
    drain(&env.conductor).await;
    assert!(env
        .workers()
        .await
        .iter()
        .all(|m| m["spec"]["osImage"] == "fedora-coreos-41"));
    let err = k
        .fails(&[
            "patch",
            "md",
            WORKER,
            "--type=merge",
            "-p",
            r#"{"spec":{"template":{"spec":{"versions":{"kubelet":"v1.33.0"}}}}}"#,
        ])
        .await;
    assert!(
        err.contains("Upgrade the control plane to v1.33 first"),
        "{err}"
    );

    let out = k.ok(&["get", "md", WORKER, "-o", "yaml"]).await;
    assert!(
        out.contains("kind: MachineDeployment") && out.contains("replicas: 4"),
        "{out}"
    );

    // Server-side apply of the replicas: a resize.
    let file = k.file(
        "md.yaml",
        &format!(
            "apiVersion: cluster.k8s.io/v1alpha1\nkind: MachineDeployment\nmetadata:\n  \
             name: {WORKER}\n  namespace: project-a\nspec:\n  replicas: 2\n"
        ),
    );
    // The first apply: before-first-apply owns the replicas it had (4), so it is forced.
    let err = k.fails(&["apply", "--server-side", "-f", &file]).await;
    assert!(
        err.contains(
            "conflict with \"before-first-apply\" using cluster.k8s.io/v1alpha1: .spec.replicas"
        ),
        "{err}"
    );
    let out = k
        .ok(&["apply", "--server-side", "--force-conflicts", "-f", &file])
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    drain(&env.conductor).await;
    assert_eq!(env.group().await["node_count"], 2);
    assert_eq!(env.workers().await.len(), 2);
    let out = k.ok(&["explain", "machinedeployment.spec"]).await;
    assert!(
        out.contains("replicas") && out.contains("template"),
        "{out}"
    );
    let out = k
        .ok(&[
            "auth",
            "can-i",
            "patch",
            "machinedeployments.cluster.k8s.io",
            "--subresource=scale",
        ])
        .await;
    assert_eq!(out.trim(), "yes");
}
