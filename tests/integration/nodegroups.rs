//! `/v1/clusters/{c}/nodegroups` over HTTP (contract 2.4): the full and summary
//! representations, list filters and pagination, every validation rule with its exact body,
//! microversion gating, project scoping, and the asynchronous status sequences through the
//! conductor driven in-process with the fake driver (failure injection included).

use fleetyard::conductor::{Conductor, Outcome};
use fleetyard::config::Settings;
use fleetyard::domain::job::Operation;
use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::id;
use crate::helpers::{
    at, conductor_from, drain_settled, keys, sorted, spawn_keeping, Api, Backend, Caller, Resp,
    TestApp,
};

const IMAGE: &str = "fedora-coreos-40";

fn tweak(s: &mut Settings) {
    s.fake_driver.create_seconds = 0;
    s.fake_driver.update_seconds = 0;
    s.fake_driver.delete_seconds = 0;
}

/// The app, a conductor over its store, and member headers at the latest microversion.
struct Env {
    app: TestApp,
    conductor: Conductor,
    h: HeaderMap,
}

async fn env() -> Env {
    env_with(Backend::Postgres, tweak).await
}

async fn env_with(backend: Backend, tweak: fn(&mut Settings)) -> Env {
    let (app, settings) = spawn_keeping(backend, tweak).await;
    let conductor = conductor_from(&app, &settings);
    let h = at(&app.headers, "latest");
    Env { app, conductor, h }
}

fn ngs_path(cluster: &str) -> String {
    format!("/v1/clusters/{cluster}/nodegroups")
}

fn ng_path(cluster: &str, ng: &str) -> String {
    format!("/v1/clusters/{cluster}/nodegroups/{ng}")
}

impl Env {
    /// The endpoints as the default member at `latest`.
    fn api(&self) -> Caller<'_> {
        self.app.with_headers(&self.h)
    }
    async fn get(&self, path: &str) -> Resp {
        self.app.get_as(path, &self.h).await
    }
    async fn post(&self, path: &str, body: &Value) -> Resp {
        self.app.post_as(path, body, &self.h).await
    }
    async fn patch(&self, path: &str, body: &Value) -> Resp {
        self.app.patch_as(path, body, &self.h).await
    }
    fn other_project(&self) -> HeaderMap {
        at(&self.app.project_b(), "latest")
    }
    fn admin(&self) -> HeaderMap {
        at(&self.app.admin(), "latest")
    }

    /// Works jobs (and status polls) until nothing is left to do.
    async fn drain(&self) -> Vec<Outcome> {
        drain_settled(&self.conductor).await
    }

    /// A cluster of the caller's project taken to `CREATE_COMPLETE` (its uuid).
    async fn cluster(&self, name: &str, labels: Value) -> String {
        let uuid = self.pending_cluster(name, labels).await;
        self.drain().await;
        let c = self.api().get_cluster(&uuid).await;
        assert_eq!(c.body["status"], "CREATE_COMPLETE", "{}", c.text);
        uuid
    }

    /// A cluster still `CREATE_IN_PROGRESS` (no API address yet).
    async fn pending_cluster(&self, name: &str, labels: Value) -> String {
        let t = self
            .app
            .make_template_as(
                &format!("tpl-{name}"),
                json!({"labels": {"kube_tag": "v1.30.1", "t": "x"}}),
                &self.h,
            )
            .await;
        let r = self
            .api()
            .create_cluster(&json!({"name": name, "cluster_template_id": t["uuid"],
                                    "node_count": 1, "flavor_id": "m1.small", "labels": labels}))
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
        r.body["uuid"].as_str().expect("uuid").to_string()
    }

    async fn cluster_status(&self, uuid: &str) -> (String, Value) {
        let c = self.api().get_cluster(uuid).await;
        assert_eq!(c.status, 200, "{}", c.text);
        (
            c.body["status"].as_str().unwrap_or_default().to_string(),
            c.body["status_reason"].clone(),
        )
    }

    /// Creates a node group (202 expected); its full representation.
    async fn create_ng(&self, cluster: &str, body: Value) -> Value {
        let r = self.api().create_nodegroup(cluster, &body).await;
        assert_eq!(r.status, 202, "{}", r.text);
        r.body
    }

    /// Events of a resource: (event_type, outcome), in order.
    async fn events_of(&self, uuid: &str) -> Vec<(String, String)> {
        let pool = sqlx::PgPool::connect(&self.app.db.url).await.expect("pool");
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT event_type, message->'payload'->>'outcome' FROM outbox \
             WHERE resource_uuid = $1 ORDER BY id",
        )
        .bind(uuid)
        .fetch_all(&pool)
        .await
        .expect("events");
        pool.close().await;
        rows
    }

    /// The cluster's jobs: (operation, state).
    async fn jobs_of(&self, cluster: &str) -> Vec<(Operation, String)> {
        self.app
            .store
            .jobs_for(id(cluster))
            .await
            .expect("jobs")
            .into_iter()
            .map(|(j, s)| (j.operation, s))
            .collect()
    }
}

fn ev(t: &str, o: &str) -> (String, String) {
    (t.to_string(), o.to_string())
}

fn summary_keys() -> Vec<String> {
    sorted(&[
        "uuid",
        "name",
        "flavor_id",
        "image_id",
        "node_count",
        "role",
        "is_default",
        "status",
        "stack_id",
        "min_node_count",
        "max_node_count",
        "merge_labels",
    ])
}

fn full_keys() -> Vec<String> {
    let mut k = summary_keys();
    k.extend(
        [
            "id",
            "cluster_id",
            "project_id",
            "docker_volume_size",
            "labels",
            "labels_overridden",
            "labels_added",
            "labels_skipped",
            "links",
            "node_addresses",
            "status_reason",
            "version",
            "node_labels",
            "node_taints",
            "created_at",
            "updated_at",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    k.sort();
    k
}

// ---------------------------------------------------------------------------------------------
// Create, show and the asynchronous sequence
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_answers_202_with_the_full_group_which_the_conductor_then_completes() {
    let e = env().await;
    let c = e.cluster("k8s", json!({"a": "1", "b": "2"})).await;
    let created = e
        .create_ng(
            &c,
            json!({"name": "ng1", "node_count": 2, "min_node_count": 1, "max_node_count": 5,
                   "flavor_id": "m1.large", "docker_volume_size": 20,
                   "labels": {"b": "9", "c": "3"}, "merge_labels": true,
                   "node_labels": {"tier": "db", "kubernetes.io/os": "linux"},
                   "node_taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                                   {"key": "spot", "effect": "PreferNoSchedule"}]}),
        )
        .await;
    let uuid = created["uuid"].as_str().expect("uuid").to_string();
    let id = created["id"].as_i64().expect("integer id");
    assert!(created["created_at"]
        .as_str()
        .expect("created_at")
        .ends_with("+00:00"));
    let base = &e.app.address;
    let expected = json!({
        "id": id,
        "uuid": uuid,
        "name": "ng1",
        "cluster_id": c,
        "project_id": "project-a",
        "docker_volume_size": 20,
        "labels": {"a": "1", "b": "9", "c": "3"},
        "labels_overridden": {"b": "2"},
        "labels_added": {"c": "3"},
        "labels_skipped": {},
        "links": [
            {"href": format!("{base}/v1/clusters/{c}/nodegroups/{uuid}"), "rel": "self"},
            {"href": format!("{base}/clusters/{c}/nodegroups/{uuid}"), "rel": "bookmark"},
        ],
        "flavor_id": "m1.large",
        "image_id": IMAGE,
        "node_addresses": [],
        "node_count": 2,
        "role": "worker",
        "min_node_count": 1,
        "max_node_count": 5,
        "is_default": false,
        "stack_id": null,
        "status": "CREATE_IN_PROGRESS",
        "status_reason": null,
        "version": null,
        "merge_labels": false,
        "node_labels": {"kubernetes.io/os": "linux", "tier": "db"},
        "node_taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": "spot", "value": null, "effect": "PreferNoSchedule"},
        ],
        "created_at": created["created_at"],
        "updated_at": null,
    });
    assert_eq!(created, expected);

    // Readable at once, by uuid, name and integer id, with the same body.
    for ident in [uuid.clone(), "ng1".to_string(), id.to_string()] {
        let r = e.api().get_nodegroup(&c, &ident).await;
        assert_eq!(r.status, 200, "{ident}: {}", r.text);
        assert_eq!(r.body, expected, "{ident}");
    }
    // ... also by the cluster's name, and through a trailing slash.
    let r = e.get("/v1/clusters/k8s/nodegroups/ng1/").await;
    assert_eq!(r.body, expected);

    // The cluster is updating; one job keyed by the cluster; one pending event.
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_IN_PROGRESS");
    assert_eq!(
        e.jobs_of(&c).await.last().cloned(),
        Some((Operation::NodegroupCreate, "pending".to_string()))
    );
    assert_eq!(
        e.events_of(&uuid).await,
        vec![ev("magnum.nodegroup.create", "pending")]
    );

    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![Outcome::Completed {
            operation: Operation::NodegroupCreate,
            resource: c.clone()
        }]
    );
    let done = e.api().get_nodegroup(&c, &uuid).await.body;
    assert_eq!(done["status"], "CREATE_COMPLETE");
    assert_eq!(done["status_reason"], Value::Null);
    assert_eq!(done["node_addresses"].as_array().map(Vec::len), Some(2));
    assert_eq!(done["stack_id"], format!("fake-{c}"));
    assert_eq!(done["version"], "v1.30.1");
    assert!(done["updated_at"].is_string());
    assert_eq!(
        e.cluster_status(&c).await,
        ("UPDATE_COMPLETE".into(), Value::Null)
    );
    // The cluster counts the new workers.
    let cluster = e.get(&format!("/v1/clusters/{c}")).await.body;
    assert_eq!(cluster["node_count"], 3);
    assert_eq!(
        e.events_of(&c).await.last().cloned(),
        Some(ev("magnum.cluster.update", "success"))
    );
}

#[tokio::test]
async fn absent_fields_take_magnums_defaults_from_the_cluster_and_its_template() {
    let e = env().await;
    let c = e.cluster("k8s", json!({"a": "1"})).await;
    let ng = e
        .create_ng(
            &c,
            json!({"name": "plain", "is_default": true, "uuid": "ignored",
                              "status": "CREATE_COMPLETE", "cluster_id": "x", "version": "v9"}),
        )
        .await;
    assert_eq!(keys(&ng), full_keys());
    assert_eq!(ng["node_count"], 1);
    assert_eq!(ng["min_node_count"], 0);
    assert_eq!(ng["max_node_count"], Value::Null);
    assert_eq!(ng["role"], "worker");
    assert_eq!(ng["flavor_id"], "m1.small");
    assert_eq!(ng["image_id"], IMAGE);
    assert_eq!(ng["docker_volume_size"], Value::Null);
    assert_eq!(ng["labels"], json!({"a": "1"}));
    assert_eq!(ng["labels_overridden"], json!({}));
    assert_eq!(ng["labels_added"], json!({}));
    assert_eq!(ng["labels_skipped"], json!({}));
    assert_eq!(ng["node_labels"], json!({}));
    assert_eq!(ng["node_taints"], json!([]));
    // Accepted, never honoured: the uuid is generated, the group is not a default one.
    assert_eq!(ng["is_default"], false);
    assert_ne!(ng["uuid"], "ignored");
    assert_eq!(ng["cluster_id"], c.as_str());
    assert_eq!(ng["status"], "CREATE_IN_PROGRESS");
    assert_eq!(ng["version"], Value::Null);
    // nulls mean absent
    e.drain().await;
    let ng = e
        .create_ng(
            &c,
            json!({"name": "nulls", "node_count": null, "labels": null,
                              "max_node_count": null, "role": null}),
        )
        .await;
    assert_eq!(
        (&ng["node_count"], &ng["labels"], &ng["role"]),
        (&json!(1), &json!({"a": "1"}), &json!("worker"))
    );
}

#[tokio::test]
async fn labels_are_the_given_ones_or_overlaid_on_the_clusters_with_merge_labels() {
    let e = env().await;
    let c = e.cluster("k8s", json!({"a": "1", "b": "2"})).await;
    let own = e
        .create_ng(&c, json!({"name": "own", "labels": {"b": "9", "c": 3}}))
        .await;
    assert_eq!(own["labels"], json!({"b": "9", "c": "3"}));
    assert_eq!(own["labels_overridden"], json!({"b": "2"}));
    assert_eq!(own["labels_added"], json!({"c": "3"}));
    assert_eq!(own["labels_skipped"], json!({"a": "1"}));
    e.drain().await;
    let merged = e
        .create_ng(
            &c,
            json!({"name": "merged", "labels": "{'b': '9'}", "merge_labels": "yes"}),
        )
        .await;
    assert_eq!(merged["labels"], json!({"a": "1", "b": "9"}));
    assert_eq!(merged["labels_skipped"], json!({}));
    assert_eq!(merged["merge_labels"], false);
    e.drain().await;
    let empty = e
        .create_ng(&c, json!({"name": "empty", "labels": {}}))
        .await;
    assert_eq!(empty["labels"], json!({}));
    assert_eq!(empty["labels_skipped"], json!({"a": "1", "b": "2"}));
}

// ---------------------------------------------------------------------------------------------
// List, detail, pagination
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn list_shows_summaries_filters_by_role_and_pages_with_next_links() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    for name in ["ng-b", "ng-a"] {
        e.create_ng(&c, json!({"name": name, "max_node_count": 3}))
            .await;
        e.drain().await;
    }
    let r = e.get(&format!("{}/", ngs_path("k8s"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let items = r.body["nodegroups"].as_array().expect("list").clone();
    assert_eq!(keys(&r.body), vec!["nodegroups"]);
    let names: Vec<&str> = items.iter().filter_map(|n| n["name"].as_str()).collect();
    assert_eq!(names, ["default-master", "default-worker", "ng-b", "ng-a"]);
    for n in &items {
        assert_eq!(keys(n), summary_keys(), "{n}");
    }
    let master = &items[0];
    assert_eq!(master["role"], "master");
    assert_eq!(master["is_default"], true);
    assert_eq!(master["min_node_count"], 1);
    assert_eq!(master["max_node_count"], Value::Null);
    assert_eq!(master["merge_labels"], false);
    assert_eq!(master["status"], "CREATE_COMPLETE");
    assert_eq!(items[2]["max_node_count"], 3);
    assert_eq!(items[2]["status"], "CREATE_COMPLETE");
    assert_eq!(master["stack_id"], format!("fake-{c}"));

    // role filter
    let r = e.get(&format!("{}?role=master", ngs_path(&c))).await;
    let names: Vec<&str> = r.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(names, ["default-master"]);
    let r = e.get(&format!("{}?role=nothing", ngs_path(&c))).await;
    assert_eq!(r.body, json!({"nodegroups": []}));

    // sorted by name, descending, two per page, role kept on the next link
    let r = e
        .get(&format!(
            "{}?limit=2&sort_key=name&sort_dir=desc&role=worker",
            ngs_path(&c)
        ))
        .await;
    let names: Vec<&str> = r.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(names, ["ng-b", "ng-a"]);
    let ng_a = r.body["nodegroups"][1]["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    let next = r.body["next"].as_str().expect("next").to_string();
    assert_eq!(
        next,
        format!(
            "{}/v1/clusters/{c}/nodegroups?sort_key=name&sort_dir=desc&limit=2&marker={ng_a}&role=worker",
            e.app.address
        )
    );
    let r = e
        .app
        .send(e.app.client.get(&next).headers(e.h.clone()))
        .await;
    let names: Vec<&str> = r.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(names, ["default-worker"]);
    assert!(r.body.get("next").is_none(), "{}", r.text);

    // detail: full representations
    let r = e.get(&format!("{}/detail", ngs_path(&c))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let items = r.body["nodegroups"].as_array().expect("list");
    assert_eq!(items.len(), 4);
    for n in items {
        assert_eq!(keys(n), full_keys(), "{n}");
    }
    let one = e.api().get_nodegroup(&c, "ng-b").await;
    assert_eq!(items[2], one.body);
    let r = e.get(&format!("{}/detail?limit=1", ngs_path(&c))).await;
    assert!(r.body["next"]
        .as_str()
        .expect("next")
        .contains(&format!("/v1/clusters/{c}/nodegroups/detail?")));
}

#[tokio::test]
async fn list_parameters_are_validated_with_magnums_sentences() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let p = ngs_path(&c);
    e.get(&format!("{p}?limit=0"))
        .await
        .assert_error(400, "Limit must be positive");
    e.get(&format!("{p}?sort_key=bogus")).await.assert_error(
        400,
        "The sort_key value \"bogus\" is an invalid field for sorting",
    );
    e.get(&format!("{p}?sort_dir=up")).await.assert_error(
        400,
        "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
    );
    e.get(&format!("{p}?name=x"))
        .await
        .assert_error(400, "Unknown argument: \"name\"");
    e.get(&format!("{p}?marker=nope"))
        .await
        .assert_error(400, "Expected a uuid but received nope.");
    let missing = uuid::Uuid::new_v4();
    e.get(&format!("{p}?marker={missing}"))
        .await
        .assert_error(404, &format!("Nodegroup {missing} could not be found."));
    e.get(&format!("{}/x", ng_path(&c, "default-worker")))
        .await
        .assert_framework_error(404);
    e.post(&format!("{p}/detail"), &json!({}))
        .await
        .assert_framework_error(405);
    let r = e
        .app
        .request(
            Method::PUT,
            &ng_path(&c, "default-worker"),
            &e.h,
            Some(&json!({})),
        )
        .await;
    r.assert_framework_error(405);
}

// ---------------------------------------------------------------------------------------------
// Validation on create
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn every_create_rule_is_refused_with_magnums_code_and_sentence() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let p = ngs_path(&c);
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({}), 400, "Invalid input for field/attribute name. Value: 'None'. Mandatory field missing."),
        (json!({"name": ""}), 400, "Invalid input for field/attribute name. Value: ''. Value should have a minimum character requirement of 1."),
        (json!({"name": 5}), 400, "Invalid input for field/attribute name. Value: '5'. Value should be string."),
        (json!({"name": "n", "node_count": -1}), 400, "Invalid input for field/attribute node_count. Value: '-1'. Value should be greater or equal to 0."),
        (json!({"name": "n", "min_node_count": "x"}), 400, "Invalid input for field/attribute min_node_count. Value: 'x'. Value should be an integer."),
        (json!({"name": "n", "max_node_count": -2}), 400, "Invalid input for field/attribute max_node_count. Value: '-2'. Value should be greater or equal to 0."),
        (json!({"name": "n", "docker_volume_size": 0}), 400, "Invalid input for field/attribute docker_volume_size. Value: '0'. Value should be greater or equal to 1."),
        (json!({"name": "n", "flavor_id": ""}), 400, "Invalid input for field/attribute flavor_id. Value: ''. Value should have a minimum character requirement of 1."),
        (json!({"name": "n", "merge_labels": "maybe"}), 400, "Invalid input for field/attribute merge_labels. Value: 'maybe'. Value should be a boolean."),
        (json!({"name": "n", "is_default": "maybe"}), 400, "Invalid input for field/attribute is_default. Value: 'maybe'. Value should be a boolean."),
        (json!({"name": "n", "labels": ["a"]}), 400, "Invalid input for field/attribute labels. Value: '['a']'. Value should be a dictionary."),
        (json!({"name": "n", "node_labels": "nope"}), 400, "Invalid input for field/attribute node_labels. Value: 'nope'. Value should be a dictionary (unexpected name 'nope' at position 0)."),
        (json!({"name": "n", "node_taints": "nope"}), 400, "Invalid input for field/attribute node_taints. Value: 'nope'. Value should be a list of taints."),
        (json!({"name": "n", "node_taints": {"key": "k"}}), 400, "Invalid input for field/attribute node_taints. Value: '{'key': 'k'}'. Value should be a list of taints."),
        (json!({"name": "n", "bogus": 1}), 400, "Unknown attribute for argument nodegroup: bogus"),
        (json!({"name": "n", "project_id": "p"}), 400, "Invalid input for field/attribute project_id. Value: 'p'. Cannot set read only field."),
        (json!({"name": "n", "stack_id": "s"}), 400, "Invalid input for field/attribute stack_id. Value: 's'. Cannot set read only field."),
        (json!({"name": "n", "node_addresses": []}), 400, "Invalid input for field/attribute node_addresses. Value: '[]'. Cannot set read only field."),
        (json!({"name": "n", "role": "master"}), 400, "Creating master nodegroups is currently not supported."),
        (json!({"name": "default-worker"}), 409, "A node group with name default-worker already exists in the cluster k8s."),
        (json!({"name": "ng1", "min_node_count": 3, "max_node_count": 2, "node_count": 2}), 409, "max_node_count for ng1 is invalid (min_node_count (3) should be less or equal to max_node_count (2))."),
        (json!({"name": "ng1", "node_count": 5, "max_node_count": 4}), 409, "node_count for ng1 is invalid (node_count (5) should be less or equal to max_node_count (4))."),
        (json!({"name": "ng1", "node_count": 1, "min_node_count": 2}), 409, "min_node_count for ng1 is invalid (min_node_count (2) should be less or equal to node_count (1))."),
        (json!({"name": "ng1", "node_labels": {"node-role.kubernetes.io/master": ""}}), 409, "node_labels for ng1 is invalid (label key 'node-role.kubernetes.io/master' is in a reserved Kubernetes namespace)."),
        (json!({"name": "ng1", "node_labels": {"k8s.io/x": "y"}}), 409, "node_labels for ng1 is invalid (label key 'k8s.io/x' is in a reserved Kubernetes namespace)."),
        (json!({"name": "ng1", "node_labels": {"": "y"}}), 409, "node_labels for ng1 is invalid (label key '' is invalid)."),
        (json!({"name": "ng1", "node_taints": [{"effect": "NoSchedule"}]}), 409, "node_taints for ng1 is invalid (each taint needs a non-empty key)."),
        (json!({"name": "ng1", "node_taints": [{"key": "", "effect": "NoSchedule"}]}), 409, "node_taints for ng1 is invalid (each taint needs a non-empty key)."),
        (json!({"name": "ng1", "node_taints": [{"key": "k"}]}), 409, "node_taints for ng1 is invalid (the effect of taint 'k' must be one of NoSchedule, PreferNoSchedule, NoExecute)."),
        (json!({"name": "ng1", "node_taints": [{"key": "k", "effect": "Never"}]}), 409, "node_taints for ng1 is invalid (the effect of taint 'k' must be one of NoSchedule, PreferNoSchedule, NoExecute)."),
        (json!({"name": "ng1", "node_taints": [{"key": "k", "effect": "NoSchedule", "ttl": 3}]}), 409, "node_taints for ng1 is invalid (taint attribute 'ttl' is unknown; a taint has key, value and effect)."),
        (json!({"name": "ng1", "node_taints": [{"key": "k", "value": 3, "effect": "NoSchedule"}]}), 409, "node_taints for ng1 is invalid (the value of taint 'k' must be a string)."),
        (json!({"name": "ng1", "node_taints": ["k=v:NoSchedule"]}), 409, "node_taints for ng1 is invalid (each taint must be an object with key, value and effect)."),
        (json!({"name": "ng1", "node_taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]}), 409, "node_taints for ng1 is invalid (taint 'k' with effect NoSchedule is given more than once)."),
    ];
    for (body, status, detail) in cases {
        let r = e.post(&p, &body).await;
        r.assert_error(status, detail);
    }
    let long = "x".repeat(256);
    e.post(&p, &json!({"name": long})).await.assert_error(
        400,
        &format!("Invalid input for field/attribute name. Value: '{long}'. Value should have a maximum character requirement of 255."),
    );
    // Malformed bodies.
    let r = e
        .app
        .send(
            e.app
                .client
                .post(e.app.url(&p))
                .headers(e.h.clone())
                .header("content-type", "application/json")
                .body("{"),
        )
        .await;
    r.assert_error(400, "Request is not in valid JSON format.");
    e.post(&format!("{p}?x=1"), &json!({"name": "n"}))
        .await
        .assert_error(400, "Unknown argument: \"x\"");
    // Nothing was created, and the cluster is untouched.
    let list = e.get(&p).await;
    assert_eq!(list.body["nodegroups"].as_array().map(Vec::len), Some(2));
    assert_eq!(e.cluster_status(&c).await.0, "CREATE_COMPLETE");
    assert!(e
        .jobs_of(&c)
        .await
        .iter()
        .all(|(op, _)| *op == Operation::ClusterCreate));
}

#[tokio::test]
async fn python_literal_node_metadata_and_numeric_strings_are_accepted_on_create() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let ng = e
        .create_ng(
            &c,
            json!({"name": "lit", "node_count": "2", "max_node_count": "2",
                   "node_labels": "{'tier': 'db'}",
                   "node_taints": "[{'key': 'k', 'value': '', 'effect': 'NoExecute'}]"}),
        )
        .await;
    assert_eq!(ng["node_count"], 2);
    assert_eq!(ng["max_node_count"], 2);
    assert_eq!(ng["node_labels"], json!({"tier": "db"}));
    assert_eq!(
        ng["node_taints"],
        json!([{"key": "k", "value": "", "effect": "NoExecute"}])
    );
}

#[tokio::test]
async fn a_cluster_without_an_api_address_yet_is_a_409() {
    let e = env().await;
    let c = e.pending_cluster("k8s", json!({})).await;
    e.api()
        .create_nodegroup(&c, &json!({"name": "ng1"}))
        .await
        .assert_error(409, "Cluster API address is not available yet");
    // Reads work while the cluster is being created.
    let r = e.api().list_nodegroups(&c, "").await;
    assert_eq!(r.status, 200);
    assert!(r.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .all(|n| n["status"] == "CREATE_IN_PROGRESS"));
}

#[tokio::test]
async fn changes_the_clusters_state_cannot_take_are_refused_at_once() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    e.create_ng(&c, json!({"name": "ng1"})).await;
    // The cluster is UPDATE_IN_PROGRESS until the conductor is done.
    let busy = "Updating a cluster when status is \"UPDATE_IN_PROGRESS\" is not supported.";
    e.api()
        .create_nodegroup(&c, &json!({"name": "ng2"}))
        .await
        .assert_error(409, busy);
    e.patch(
        &ng_path(&c, "default-worker"),
        &json!([{"op": "replace", "path": "/max_node_count", "value": 9}]),
    )
    .await
    .assert_error(409, busy);
    // Only the first request became a job.
    let jobs = e.jobs_of(&c).await;
    assert_eq!(
        jobs.iter()
            .filter(|(op, _)| op.as_str().starts_with("nodegroup"))
            .count(),
        1
    );
    e.drain().await;
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
    e.create_ng(&c, json!({"name": "ng2"})).await;
}

#[tokio::test]
async fn deletes_while_the_cluster_is_updating_are_queued_and_all_done() {
    // `openstack coe nodegroup delete k8s ng1 ng2`: deletes sent back to back, the second while
    // the first keeps the cluster UPDATE_IN_PROGRESS.
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let mut uuids = Vec::new();
    for name in ["ng1", "ng2"] {
        let ng = e.create_ng(&c, json!({"name": name})).await;
        uuids.push(ng["uuid"].as_str().expect("uuid").to_string());
        e.drain().await;
    }
    for name in ["ng1", "ng2"] {
        let r = e.api().delete_nodegroup(&c, name).await;
        assert_eq!(r.status, 204, "{name}: {}", r.text);
        assert_eq!(r.text, "");
        assert_eq!(e.cluster_status(&c).await.0, "UPDATE_IN_PROGRESS");
    }
    for uuid in &uuids {
        let shown = e.api().get_nodegroup(&c, uuid).await.body;
        assert_eq!(shown["status"], "DELETE_IN_PROGRESS", "{shown}");
    }
    let deletes: Vec<String> = e
        .jobs_of(&c)
        .await
        .into_iter()
        .filter(|(op, _)| *op == Operation::NodegroupDelete)
        .map(|(_, state)| state)
        .collect();
    assert_eq!(deletes, ["pending", "pending"]);
    // Node group creates and updates still wait for the cluster.
    e.api()
        .create_nodegroup(&c, &json!({"name": "ng3"}))
        .await
        .assert_error(
            409,
            "Updating a cluster when status is \"UPDATE_IN_PROGRESS\" is not supported.",
        );
    let outcomes = e.drain().await;
    let done = Outcome::Completed {
        operation: Operation::NodegroupDelete,
        resource: c.clone(),
    };
    assert_eq!(outcomes, vec![done.clone(), done]);
    for uuid in &uuids {
        e.api()
            .get_nodegroup(&c, uuid)
            .await
            .assert_error(404, &format!("Nodegroup {uuid} could not be found."));
    }
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
    let names: Vec<String> = e.api().list_nodegroups(&c, "").await.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|n| n["name"].as_str().map(String::from))
        .collect();
    assert_eq!(names, ["default-master", "default-worker"]);
}

#[tokio::test]
async fn a_delete_sent_while_a_create_is_in_progress_runs_after_it() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let ng = e.create_ng(&c, json!({"name": "ng1"})).await;
    let uuid = ng["uuid"].as_str().expect("uuid").to_string();
    let r = e.api().delete_nodegroup(&c, "ng1").await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(
        e.jobs_of(&c)
            .await
            .into_iter()
            .filter(|(op, _)| op.as_str().starts_with("nodegroup"))
            .collect::<Vec<_>>(),
        [
            (Operation::NodegroupCreate, "pending".to_string()),
            (Operation::NodegroupDelete, "pending".to_string())
        ]
    );
    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![
            Outcome::Completed {
                operation: Operation::NodegroupCreate,
                resource: c.clone()
            },
            Outcome::Completed {
                operation: Operation::NodegroupDelete,
                resource: c.clone()
            }
        ]
    );
    assert_eq!(e.api().get_nodegroup(&c, &uuid).await.status, 404);
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
    assert_eq!(
        e.events_of(&uuid).await,
        vec![
            ev("magnum.nodegroup.create", "pending"),
            ev("magnum.nodegroup.delete", "pending")
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Microversions, scoping, policy
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn node_groups_need_microversion_1_9() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let patch = json!([{"op": "replace", "path": "/max_node_count", "value": 9}]);
    for h in [at(&e.app.headers, "1.8"), e.app.headers.clone()] {
        for (method, path, body) in [
            (Method::GET, ngs_path(&c), None),
            (Method::GET, format!("{}/detail", ngs_path(&c)), None),
            (Method::POST, ngs_path(&c), Some(json!({"name": "ng1"}))),
            (Method::GET, ng_path(&c, "default-worker"), None),
            (
                Method::PATCH,
                ng_path(&c, "default-worker"),
                Some(patch.clone()),
            ),
            (Method::DELETE, ng_path(&c, "default-worker"), None),
        ] {
            let r = e
                .app
                .request(method.clone(), &path, &h, body.as_ref())
                .await;
            r.assert_framework_error(406);
        }
    }
    let r = e
        .app
        .with_headers(&at(&e.app.headers, "1.9"))
        .list_nodegroups(&c, "")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("openstack-api-version").as_deref(),
        Some("container-infrastructure-management 1.9")
    );
}

#[tokio::test]
async fn unknown_clusters_and_groups_are_404() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let patch = json!([{"op": "replace", "path": "/max_node_count", "value": 9}]);
    e.api()
        .list_nodegroups("nope", "")
        .await
        .assert_error(404, "Cluster nope could not be found.");
    e.api()
        .create_nodegroup("nope", &json!({"name": "x"}))
        .await
        .assert_error(404, "Cluster nope could not be found.");
    e.api()
        .get_nodegroup("nope", "default-worker")
        .await
        .assert_error(404, "Cluster nope could not be found.");
    for ident in ["nope", "999999", &uuid::Uuid::new_v4().to_string()] {
        let missing = format!("Nodegroup {ident} could not be found.");
        e.api()
            .get_nodegroup(&c, ident)
            .await
            .assert_error(404, &missing);
        e.api()
            .patch_nodegroup(&c, ident, &patch)
            .await
            .assert_error(404, &missing);
        e.api()
            .delete_nodegroup(&c, ident)
            .await
            .assert_error(404, &missing);
    }
    // A group of another cluster is not found through this one.
    let other = e.cluster("other", json!({})).await;
    let ng = e.create_ng(&other, json!({"name": "mine"})).await;
    let uuid = ng["uuid"].as_str().expect("uuid");
    e.api()
        .get_nodegroup(&c, uuid)
        .await
        .assert_error(404, &format!("Nodegroup {uuid} could not be found."));
    e.api()
        .get_nodegroup(&c, "mine")
        .await
        .assert_error(404, "Nodegroup mine could not be found.");
}

#[tokio::test]
async fn another_projects_cluster_and_groups_are_404_while_admins_see_and_manage_them() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let ng = e.create_ng(&c, json!({"name": "ng1"})).await;
    e.drain().await;
    let uuid = ng["uuid"].as_str().expect("uuid");
    let b = e.other_project();
    let gone = format!("Cluster {c} could not be found.");
    let patch = json!([{"op": "replace", "path": "/max_node_count", "value": 9}]);
    e.app
        .with_headers(&b)
        .list_nodegroups(&c, "")
        .await
        .assert_error(404, &gone);
    e.app
        .get_as(&format!("{}/detail", ngs_path(&c)), &b)
        .await
        .assert_error(404, &gone);
    e.app
        .with_headers(&b)
        .get_nodegroup(&c, uuid)
        .await
        .assert_error(404, &gone);
    e.app
        .with_headers(&b)
        .create_nodegroup(&c, &json!({"name": "theirs"}))
        .await
        .assert_error(404, &gone);
    e.app
        .with_headers(&b)
        .patch_nodegroup(&c, uuid, &patch)
        .await
        .assert_error(404, &gone);
    e.app
        .with_headers(&b)
        .delete_nodegroup(&c, uuid)
        .await
        .assert_error(404, &gone);
    e.app
        .with_headers(&b)
        .list_nodegroups("k8s", "")
        .await
        .assert_error(404, "Cluster k8s could not be found.");

    // An admin of another project sees and manages them; what it creates belongs to the
    // cluster's project.
    let admin = e.admin();
    let r = e.app.with_headers(&admin).list_nodegroups(&c, "").await;
    assert_eq!(r.body["nodegroups"].as_array().map(Vec::len), Some(3));
    let r = e.app.with_headers(&admin).get_nodegroup(&c, "ng1").await;
    assert_eq!(r.body, e.api().get_nodegroup(&c, "ng1").await.body);
    let r = e
        .app
        .with_headers(&admin)
        .create_nodegroup(&c, &json!({"name": "by-admin"}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["project_id"], "project-a");
    e.drain().await;
    assert_eq!(e.api().get_nodegroup(&c, "by-admin").await.status, 200);
}

#[tokio::test]
async fn policy_refusals_name_the_rule() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let reader = at(
        &e.app.as_identity("project-a", "user-r", "reader"),
        "latest",
    );
    let r = e.app.with_headers(&reader).list_nodegroups(&c, "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        e.app
            .with_headers(&reader)
            .get_nodegroup(&c, "default-worker")
            .await
            .status,
        200
    );
    e.app
        .with_headers(&reader)
        .create_nodegroup(&c, &json!({"name": "ng1"}))
        .await
        .assert_error(
            403,
            "Policy doesn't allow nodegroup:create to be performed.",
        );
    e.app
        .patch_as(
            &ng_path(&c, "default-worker"),
            &json!([{"op": "replace", "path": "/max_node_count", "value": 9}]),
            &reader,
        )
        .await
        .assert_error(
            403,
            "Policy doesn't allow nodegroup:update to be performed.",
        );
    e.app
        .with_headers(&reader)
        .delete_nodegroup(&c, "default-worker")
        .await
        .assert_error(
            403,
            "Policy doesn't allow nodegroup:delete to be performed.",
        );
    let nobody = at(
        &e.app.as_identity("project-a", "user-n", "nothing"),
        "latest",
    );
    e.app
        .with_headers(&nobody)
        .list_nodegroups(&c, "")
        .await
        .assert_error(
            403,
            "Policy doesn't allow nodegroup:get_all to be performed.",
        );
    e.app
        .with_headers(&nobody)
        .get_nodegroup(&c, "default-worker")
        .await
        .assert_error(403, "Policy doesn't allow nodegroup:get to be performed.");
}

// ---------------------------------------------------------------------------------------------
// PATCH
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn patch_takes_the_clis_python_literal_strings_and_the_conductor_completes_it() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let ng = e
        .create_ng(&c, json!({"name": "ng1", "node_count": 2}))
        .await;
    e.drain().await;
    let uuid = ng["uuid"].as_str().expect("uuid").to_string();
    // Exactly what `openstack coe nodegroup update C ng1 --min-nodes 1 --max-nodes 4
    // --node-labels tier=db --node-taints k=:NoExecute` sends.
    let r = e
        .patch(
            &ng_path("k8s", "ng1"),
            &json!([
                {"op": "replace", "path": "/min_node_count", "value": 1},
                {"op": "replace", "path": "/max_node_count", "value": 4},
                {"op": "replace", "path": "/node_labels", "value": "{'tier': 'db'}"},
                {"op": "replace", "path": "/node_taints",
                 "value": "[{'key': 'k', 'value': '', 'effect': 'NoExecute'}]"}
            ]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(keys(&r.body), full_keys());
    assert_eq!(r.body["uuid"], uuid.as_str());
    assert_eq!(r.body["min_node_count"], 1);
    assert_eq!(r.body["max_node_count"], 4);
    assert_eq!(r.body["node_labels"], json!({"tier": "db"}));
    assert_eq!(
        r.body["node_taints"],
        json!([{"key": "k", "value": "", "effect": "NoExecute"}])
    );
    assert_eq!(r.body["status"], "UPDATE_IN_PROGRESS");
    assert!(r.body["updated_at"].is_string());
    assert_eq!(e.api().get_nodegroup(&c, &uuid).await.body, r.body);
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_IN_PROGRESS");
    assert_eq!(
        e.events_of(&uuid).await.last().cloned(),
        Some(ev("magnum.nodegroup.update", "pending"))
    );
    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![Outcome::Completed {
            operation: Operation::NodegroupUpdate,
            resource: c.clone()
        }]
    );
    let done = e.api().get_nodegroup(&c, &uuid).await.body;
    assert_eq!(done["status"], "UPDATE_COMPLETE");
    assert_eq!(done["node_labels"], json!({"tier": "db"}));
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");

    // JSON text, JSON values and nested JSON-Patch operations work too.
    let r = e
        .patch(
            &ng_path(&c, &uuid),
            &json!([
                {"op": "replace", "path": "/node_labels", "value": "{\"tier\": \"web\", \"zone\": \"a\"}"},
                {"op": "add", "path": "/node_taints/-", "value": {"key": "gpu", "effect": "NoSchedule"}},
                {"op": "remove", "path": "/max_node_count"},
                {"op": "replace", "path": "/min_node_count", "value": "2"}
            ]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["node_labels"], json!({"tier": "web", "zone": "a"}));
    assert_eq!(
        r.body["node_taints"],
        json!([{"key": "k", "value": "", "effect": "NoExecute"},
               {"key": "gpu", "value": null, "effect": "NoSchedule"}])
    );
    assert_eq!(r.body["max_node_count"], Value::Null);
    assert_eq!(r.body["min_node_count"], 2);
    e.drain().await;
    let r = e
        .patch(
            &ng_path(&c, &uuid),
            &json!([{"op": "add", "path": "/node_labels/extra", "value": "1"},
                    {"op": "replace", "path": "/node_taints", "value": []}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        r.body["node_labels"],
        json!({"tier": "web", "zone": "a", "extra": "1"})
    );
    assert_eq!(r.body["node_taints"], json!([]));
}

#[tokio::test]
async fn a_patch_that_changes_nothing_answers_without_work() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let before = e.api().get_nodegroup(&c, "default-worker").await.body;
    let r = e
        .patch(
            &ng_path(&c, "default-worker"),
            &json!([{"op": "replace", "path": "/min_node_count", "value": 0}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, before);
    assert_eq!(e.cluster_status(&c).await.0, "CREATE_COMPLETE");
    assert_eq!(e.jobs_of(&c).await.len(), 1);
}

#[tokio::test]
async fn patch_refuses_internal_paths_bad_values_and_invalid_results() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let w = ng_path(&c, "default-worker");
    for path in [
        "/name",
        "/node_count",
        "/labels",
        "/role",
        "/is_default",
        "/status",
        "/version",
        "/cluster_id",
        "/docker_volume_size",
        "/uuid",
        "/id",
        "/project_id",
    ] {
        e.patch(&w, &json!([{"op": "replace", "path": path, "value": "x"}]))
            .await
            .assert_error(
                400,
                &format!("'{path}' is an internal attribute and can not be updated"),
            );
    }
    // The flavor and image change from 1.20 (a rolling replacement); internal before.
    for path in ["/flavor_id", "/image_id", "/max_batch_size"] {
        let at_1_19 = at(&e.app.headers, "1.19");
        let r = e
            .app
            .patch_as(
                &w,
                &json!([{"op": "add", "path": path, "value": "x"}]),
                &at_1_19,
            )
            .await;
        if path == "/max_batch_size" {
            r.assert_error(
                400,
                "Adding a new attribute /max_batch_size to the root of the resource is not allowed.",
            );
        } else {
            r.assert_error(
                400,
                &format!("'{path}' is an internal attribute and can not be updated"),
            );
        }
    }
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!([{"op": "add", "path": "/bogus", "value": 1}]), 400,
         "Adding a new attribute /bogus to the root of the resource is not allowed."),
        (json!([{"op": "add", "path": "/min_node_count", "value": 1}]), 400,
         "The attribute /min_node_count has existed, please use 'replace' operation instead."),
        (json!([{"op": "replace", "path": "/min_node_count"}]), 400,
         "'add' and 'replace' operations needs value"),
        (json!([{"op": "replace", "path": "/min_node_count", "value": -1}]), 400,
         "Invalid input for field/attribute min_node_count. Value: '-1'. Value should be greater or equal to 0."),
        (json!([{"op": "replace", "path": "/max_node_count", "value": "many"}]), 400,
         "Invalid input for field/attribute max_node_count. Value: 'many'. Value should be an integer."),
        (json!([{"op": "replace", "path": "/node_labels", "value": 5}]), 400,
         "Invalid input for field/attribute node_labels. Value: '5'. Value should be a dictionary."),
        (json!([{"op": "replace", "path": "/node_taints", "value": "{'key': 'k'}"}]), 400,
         "Invalid input for field/attribute node_taints. Value: '{'key': 'k'}'. Value should be a list of taints."),
        (json!([{"op": "replace", "path": "/max_node_count", "value": 0}]), 409,
         "node_count for default-worker is invalid (node_count (1) should be less or equal to max_node_count (0))."),
        (json!([{"op": "replace", "path": "/min_node_count", "value": 2}]), 409,
         "min_node_count for default-worker is invalid (min_node_count (2) should be less or equal to node_count (1))."),
        (json!([{"op": "replace", "path": "/node_labels", "value": "{'kubernetes.io/role': 'x'}"}]), 409,
         "node_labels for default-worker is invalid (label key 'kubernetes.io/role' is in a reserved Kubernetes namespace)."),
        (json!([{"op": "replace", "path": "/node_taints", "value": "[{'key': 'k', 'effect': 'Later'}]"}]), 409,
         "node_taints for default-worker is invalid (the effect of taint 'k' must be one of NoSchedule, PreferNoSchedule, NoExecute)."),
    ];
    for (body, status, detail) in cases {
        e.patch(&w, &body).await.assert_error(status, detail);
    }
    let r = e
        .patch(
            &w,
            &json!([{"op": "replace", "path": "/node_labels", "value": "{'a': "}]),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.error()["detail"]
        .as_str()
        .expect("detail")
        .starts_with("Couldn't apply patch '[{"));
    let r = e
        .patch(
            &w,
            &json!([{"op": "remove", "path": "/node_labels/missing"}]),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    e.patch(&w, &json!({"op": "replace"})).await.assert_error(
        400,
        "Invalid input for argument patch: the request body must be a JSON-Patch array.",
    );
    // Masters carry no node labels or taints.
    let m = ng_path(&c, "default-master");
    e.patch(
        &m,
        &json!([{"op": "replace", "path": "/node_labels", "value": "{'tier': 'db'}"}]),
    )
    .await
    .assert_error(
        409,
        "node_labels for default-master is invalid (node labels and taints cannot be set on a master node group).",
    );
    e.patch(
        &m,
        &json!([{"op": "add", "path": "/node_taints/-", "value": {"key": "k", "effect": "NoSchedule"}}]),
    )
    .await
    .assert_error(
        409,
        "node_taints for default-master is invalid (node labels and taints cannot be set on a master node group).",
    );
    // Nothing changed.
    assert_eq!(e.cluster_status(&c).await.0, "CREATE_COMPLETE");
    assert_eq!(e.jobs_of(&c).await.len(), 1);
    // A master's bounds can change.
    let r = e
        .patch(
            &m,
            &json!([{"op": "replace", "path": "/max_node_count", "value": 3}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["max_node_count"], 3);
}

// ---------------------------------------------------------------------------------------------
// DELETE
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn default_groups_cannot_be_deleted() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    for name in ["default-master", "default-worker"] {
        e.api()
            .delete_nodegroup(&c, name)
            .await
            .assert_error(400, "Deleting a default nodegroup is not supported.");
    }
    assert_eq!(e.cluster_status(&c).await.0, "CREATE_COMPLETE");
}

#[tokio::test]
async fn delete_marks_the_group_and_the_conductor_removes_it() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let ng = e
        .create_ng(&c, json!({"name": "ng1", "node_count": 2}))
        .await;
    e.drain().await;
    let uuid = ng["uuid"].as_str().expect("uuid").to_string();
    let r = e.api().delete_nodegroup("k8s", "ng1").await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(r.text, "");
    let shown = e.api().get_nodegroup(&c, &uuid).await;
    assert_eq!(shown.body["status"], "DELETE_IN_PROGRESS");
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_IN_PROGRESS");
    // Deleting again while it goes is accepted and changes nothing.
    assert_eq!(e.api().delete_nodegroup(&c, &uuid).await.status, 204);
    assert_eq!(
        e.events_of(&uuid).await,
        vec![
            ev("magnum.nodegroup.create", "pending"),
            ev("magnum.nodegroup.delete", "pending")
        ]
    );
    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![Outcome::Completed {
            operation: Operation::NodegroupDelete,
            resource: c.clone()
        }]
    );
    e.api()
        .get_nodegroup(&c, &uuid)
        .await
        .assert_error(404, &format!("Nodegroup {uuid} could not be found."));
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
    let cluster = e.get(&format!("/v1/clusters/{c}")).await.body;
    assert_eq!(cluster["node_count"], 1);
    let names: Vec<String> = e.api().list_nodegroups(&c, "").await.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|n| n["name"].as_str().map(String::from))
        .collect();
    assert_eq!(names, ["default-master", "default-worker"]);
    // The name is free again.
    e.create_ng(&c, json!({"name": "ng1"})).await;
}

// ---------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_driver_failure_fails_the_group_and_the_cluster_with_the_reason() {
    let e = env().await;
    let c = e.cluster("k8s", json!({"fake_fail": "update"})).await;
    let ng = e.create_ng(&c, json!({"name": "ng1"})).await;
    let uuid = ng["uuid"].as_str().expect("uuid").to_string();
    let reason = "The fake driver simulated a failure of 'update' (label fake_fail=update).";
    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![Outcome::Failed {
            operation: Operation::NodegroupCreate,
            resource: c.clone(),
            reason: reason.into()
        }]
    );
    let failed = e.api().get_nodegroup(&c, &uuid).await.body;
    assert_eq!(failed["status"], "CREATE_FAILED");
    assert_eq!(failed["status_reason"], reason);
    assert_eq!(
        e.cluster_status(&c).await,
        ("UPDATE_FAILED".into(), json!(reason))
    );
    let cluster = e.get(&format!("/v1/clusters/{c}")).await.body;
    assert_eq!(cluster["faults"], json!({"ng1": reason}));
    assert_eq!(
        e.events_of(&c).await.last().cloned(),
        Some(ev("magnum.cluster.update", "failure"))
    );
    // The default groups were untouched.
    let w = e.api().get_nodegroup(&c, "default-worker").await.body;
    assert_eq!(w["status"], "CREATE_COMPLETE");

    // A failed group cannot be updated, but it can be deleted (the cluster accepts node group
    // work while UPDATE_FAILED, so it can be repaired).
    e.patch(
        &ng_path(&c, &uuid),
        &json!([{"op": "replace", "path": "/max_node_count", "value": 3}]),
    )
    .await
    .assert_error(
        409,
        "Updating a nodegroup when status is \"CREATE_FAILED\" is not supported.",
    );
    let r = e.api().delete_nodegroup(&c, &uuid).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(
        e.api().get_nodegroup(&c, &uuid).await.body["status"],
        "DELETE_IN_PROGRESS"
    );
    // The injected failure hits the delete too: the group is DELETE_FAILED, naming what it
    // left behind, and its delete's failure notification lists it.
    e.drain().await;
    let after = e.api().get_nodegroup(&c, &uuid).await.body;
    assert_eq!(after["status"], "DELETE_FAILED");
    assert_eq!(
        after["status_reason"],
        format!("{reason} Left behind on the infrastructure: server_group fake-sg-{uuid}.")
    );
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_FAILED");
    assert_eq!(
        e.events_of(&uuid).await.last().cloned(),
        Some(ev("magnum.nodegroup.delete", "failure"))
    );
    let failure = e
        .app
        .store
        .pending_events(10_000)
        .await
        .expect("events")
        .into_iter()
        .rfind(|m| m.resource_uuid == uuid)
        .expect("the failure event")
        .message_json();
    assert_eq!(
        failure["payload"]["target"]["attachments"][1],
        json!({"typeURI": "service/magnum/nodegroup/leftovers", "name": "leftovers",
               "content": [{"kind": "server_group", "id": format!("fake-sg-{uuid}")}]})
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency, slow drivers, SQLite
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn concurrent_creates_on_one_cluster_accept_exactly_one() {
    let e = env().await;
    let c = e.cluster("k8s", json!({})).await;
    let path = ngs_path(&c);
    let requests = (0..8).map(|i| {
        let body = json!({"name": format!("ng{i}")});
        let (app, h, path) = (&e.app, e.h.clone(), path.clone());
        async move { app.post_as(&path, &body, &h).await }
    });
    let answers = futures_util::future::join_all(requests).await;
    let accepted = answers.iter().filter(|r| r.status == 202).count();
    assert_eq!(
        accepted,
        1,
        "{:?}",
        answers.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    for r in answers.iter().filter(|r| r.status != 202) {
        r.assert_error(
            409,
            "Updating a cluster when status is \"UPDATE_IN_PROGRESS\" is not supported.",
        );
    }
    let jobs = e.jobs_of(&c).await;
    assert_eq!(
        jobs.iter()
            .filter(|(op, _)| *op == Operation::NodegroupCreate)
            .count(),
        1
    );
    assert_eq!(
        e.get(&path).await.body["nodegroups"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

fn slow_updates(s: &mut Settings) {
    s.fake_driver.create_seconds = 0;
    s.fake_driver.update_seconds = 1;
    s.fake_driver.delete_seconds = 0;
}

#[tokio::test]
async fn work_the_driver_reports_as_started_is_finished_by_the_status_sync() {
    let e = env_with(Backend::Postgres, slow_updates).await;
    let c = e.cluster("k8s", json!({})).await;
    let ng = e
        .create_ng(&c, json!({"name": "ng1", "node_count": 2}))
        .await;
    let uuid = ng["uuid"].as_str().expect("uuid").to_string();
    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![Outcome::Started {
            operation: Operation::NodegroupCreate,
            resource: c.clone()
        }]
    );
    let going = e.api().get_nodegroup(&c, &uuid).await.body;
    assert_eq!(going["status"], "CREATE_IN_PROGRESS");
    assert_eq!(going["node_addresses"].as_array().map(Vec::len), Some(2));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let report = e.conductor.sync_round().await.expect("sync");
    assert_eq!(report.changed, 1);
    assert_eq!(
        e.api().get_nodegroup(&c, &uuid).await.body["status"],
        "CREATE_COMPLETE"
    );
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");

    // A delete the driver only starts is finished (and the row removed) by the sync too.
    assert_eq!(e.api().delete_nodegroup(&c, &uuid).await.status, 204);
    e.drain().await;
    assert_eq!(
        e.api().get_nodegroup(&c, &uuid).await.body["status"],
        "DELETE_IN_PROGRESS"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    e.conductor.sync_round().await.expect("sync");
    assert_eq!(e.api().get_nodegroup(&c, &uuid).await.status, 404);
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
}

#[tokio::test]
async fn queued_deletes_the_driver_only_starts_are_finished_by_the_status_sync() {
    let e = env_with(Backend::Postgres, slow_updates).await;
    let c = e.cluster("k8s", json!({})).await;
    let mut uuids = Vec::new();
    for name in ["ng1", "ng2"] {
        let ng = e.create_ng(&c, json!({"name": name})).await;
        uuids.push(ng["uuid"].as_str().expect("uuid").to_string());
        e.drain().await;
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        e.conductor.sync_round().await.expect("sync");
        assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
    }
    for name in ["ng1", "ng2"] {
        assert_eq!(e.api().delete_nodegroup(&c, name).await.status, 204);
    }
    // The first job leaves the status to the second, whose work the driver only starts.
    let outcomes = e.drain().await;
    assert_eq!(
        outcomes,
        vec![
            Outcome::Completed {
                operation: Operation::NodegroupDelete,
                resource: c.clone()
            },
            Outcome::Started {
                operation: Operation::NodegroupDelete,
                resource: c.clone()
            }
        ]
    );
    for uuid in &uuids {
        let shown = e.api().get_nodegroup(&c, uuid).await.body;
        assert_eq!(shown["status"], "DELETE_IN_PROGRESS", "{shown}");
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let report = e.conductor.sync_round().await.expect("sync");
    assert_eq!(report.changed, 1);
    for uuid in &uuids {
        assert_eq!(e.api().get_nodegroup(&c, uuid).await.status, 404);
    }
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
}

#[tokio::test]
async fn the_whole_lifecycle_works_on_sqlite() {
    let e = env_with(Backend::Sqlite, tweak).await;
    let c = e.cluster("k8s", json!({"a": "1"})).await;
    let ng = e
        .create_ng(&c, json!({"name": "ng1", "node_labels": {"tier": "db"}}))
        .await;
    assert_eq!(keys(&ng), full_keys());
    assert_eq!(ng["labels"], json!({"a": "1"}));
    e.api()
        .create_nodegroup(&c, &json!({"name": "ng2"}))
        .await
        .assert_error(
            409,
            "Updating a cluster when status is \"UPDATE_IN_PROGRESS\" is not supported.",
        );
    e.drain().await;
    e.api()
        .create_nodegroup(&c, &json!({"name": "ng1"}))
        .await
        .assert_error(
            409,
            "A node group with name ng1 already exists in the cluster k8s.",
        );
    let r = e
        .get(&format!(
            "{}?role=worker&sort_key=name&sort_dir=desc",
            ngs_path(&c)
        ))
        .await;
    let names: Vec<&str> = r.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(names, ["ng1", "default-worker"]);
    let r = e
        .patch(
            &ng_path(&c, "ng1"),
            &json!([{"op": "replace", "path": "/node_taints",
                     "value": "[{'key': 'k', 'value': 'v', 'effect': 'NoSchedule'}]"}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    e.drain().await;
    let shown = e.api().get_nodegroup(&c, "ng1").await.body;
    assert_eq!(shown["status"], "UPDATE_COMPLETE");
    assert_eq!(
        shown["node_taints"],
        json!([{"key": "k", "value": "v", "effect": "NoSchedule"}])
    );
    assert_eq!(e.api().delete_nodegroup(&c, "ng1").await.status, 204);
    e.drain().await;
    assert_eq!(e.api().get_nodegroup(&c, "ng1").await.status, 404);
    assert_eq!(e.cluster_status(&c).await.0, "UPDATE_COMPLETE");
}
