//! `/v1/clusters` over HTTP: create and every validation rule of the contract (2.3.3) with its
//! exact body, the summary and full representations per microversion, label inheritance,
//! keyset pagination, PATCH, resize, upgrade and delete, and the asynchronous status sequences
//! through the conductor driven in-process (the fake driver, failure injection, retries, one
//! notification per terminal transition). Also: a list page costs a fixed number of queries.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleetyard::conductor::Outcome;
use fleetyard::config::FakeDriverSection;
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::id;
use crate::helpers::{
    at, cluster_as, cluster_path, complete_cluster_as, conductor, drain, events_of, instant, keys,
    sorted, spawn_app, spawn_with, template_as, Api, Backend, TestApp, CLUSTERS,
};

fn one(ident: &str) -> String {
    cluster_path(ident)
}

fn project_b(app: &TestApp) -> HeaderMap {
    app.project_b()
}

fn ev(event_type: &str, outcome: &str) -> (String, String, String) {
    let priority = if outcome == "failure" {
        "ERROR"
    } else {
        "INFO"
    };
    (event_type.into(), outcome.into(), priority.into())
}

async fn job_count(app: &TestApp, uuid: &str) -> usize {
    app.store.jobs_for(id(uuid)).await.expect("jobs").len()
}

const SUMMARY_KEYS: &[&str] = &[
    "uuid",
    "name",
    "cluster_template_id",
    "keypair",
    "docker_volume_size",
    "labels",
    "node_count",
    "master_count",
    "status",
    "health_status",
    "master_flavor_id",
    "flavor_id",
    "create_timeout",
    "merge_labels",
    "links",
];

const FULL_EXTRA_KEYS: &[&str] = &[
    "node_addresses",
    "master_addresses",
    "labels_overridden",
    "labels_added",
    "labels_skipped",
    "fixed_network",
    "fixed_subnet",
    "floating_ip_enabled",
    "master_lb_enabled",
    "status_reason",
    "health_status_reason",
    "discovery_url",
    "api_address",
    "coe_version",
    "container_version",
    "project_id",
    "user_id",
    "created_at",
    "updated_at",
];

fn summary_keys(handle: &str, admin: bool) -> Vec<String> {
    let mut k: Vec<&str> = SUMMARY_KEYS.to_vec();
    k.push(handle);
    if admin {
        k.push("project_id");
    }
    sorted(&k)
}

/// The full representation's keys at `latest`: the handle is `cluster_id`, and the registry's
/// labels and annotations are there (1.15).
fn latest_keys(faults: bool) -> Vec<String> {
    let mut k = full_keys("cluster_id", faults);
    k.extend([
        "registry_annotations".to_string(),
        "registry_labels".to_string(),
    ]);
    k.sort();
    k
}

fn full_keys(handle: &str, faults: bool) -> Vec<String> {
    let mut k: Vec<&str> = SUMMARY_KEYS.to_vec();
    k.extend_from_slice(FULL_EXTRA_KEYS);
    k.push(handle);
    if faults {
        k.push("faults");
    }
    sorted(&k)
}

/// The template most tests use: every field a cluster inherits is set.
async fn rich_template(app: &TestApp, h: &HeaderMap) -> String {
    template_as(
        app,
        "k8s",
        json!({
            "keypair_id": "kp",
            "flavor_id": "m1.small",
            "master_flavor_id": "m1.large",
            "docker_volume_size": 10,
            "fixed_network": "net",
            "fixed_subnet": "subnet",
            "floating_ip_enabled": false,
            "labels": {"kube_tag": "v1.30.1", "a": "1", "b": "2"},
        }),
        h,
    )
    .await
}

async fn show(app: &TestApp, uuid: &str) -> Value {
    let r = app.at("latest").get_cluster(uuid).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

// ---------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_answers_202_with_a_uuid_that_is_readable_at_once() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": "k1", "cluster_template_id": t}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(keys(&r.body), vec!["uuid"]);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    let mut c = show(&app, &uuid).await;
    let created_at = c["created_at"].clone();
    assert!(created_at.as_str().is_some_and(|s| s.ends_with("+00:00")));
    // The registry's metadata (1.15): none yet.
    let fields = c.as_object_mut().expect("an object");
    assert_eq!(fields.remove("registry_labels"), Some(json!({})));
    assert_eq!(fields.remove("registry_annotations"), Some(json!({})));
    assert_eq!(
        c,
        json!({
            "uuid": uuid,
            "name": "k1",
            "cluster_template_id": t,
            "keypair": "kp",
            "docker_volume_size": 10,
            "labels": {"kube_tag": "v1.30.1", "a": "1", "b": "2"},
            "labels_overridden": {},
            "labels_added": {},
            "labels_skipped": {},
            "node_count": 1,
            "master_count": 1,
            "node_addresses": [],
            "master_addresses": [],
            "status": "CREATE_IN_PROGRESS",
            "status_reason": null,
            "health_status": null,
            "health_status_reason": {},
            "master_flavor_id": "m1.large",
            "flavor_id": "m1.small",
            "fixed_network": "net",
            "fixed_subnet": "subnet",
            "floating_ip_enabled": false,
            "master_lb_enabled": false,
            "create_timeout": 60,
            "discovery_url": null,
            "api_address": null,
            "coe_version": null,
            "container_version": null,
            "cluster_id": null,
            "merge_labels": false,
            "project_id": "project-a",
            "user_id": "user-a",
            "created_at": created_at,
            "updated_at": null,
            "links": [
                {"href": app.url(&format!("/v1/clusters/{uuid}")), "rel": "self"},
                {"href": app.url(&format!("/clusters/{uuid}")), "rel": "bookmark"},
            ],
        })
    );
    // The row, its job and the pending notification were committed before the 202.
    assert_eq!(job_count(&app, &uuid).await, 1);
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![ev("magnum.cluster.create", "pending")]
    );
}

#[tokio::test]
async fn request_values_override_the_templates_and_absent_ones_inherit_it() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({
            "name": "k1", "cluster_template_id": "k8s", "keypair": "mine",
            "docker_volume_size": 20, "master_flavor_id": "m2", "flavor_id": "m3",
            "fixed_network": "n2", "fixed_subnet": "s2", "floating_ip_enabled": true,
            "master_lb_enabled": true, "master_count": 3, "node_count": 4,
            "create_timeout": 0, "discovery_url": "https://discovery.etcd.io/x",
        }),
        &app.headers,
    )
    .await;
    let c = show(&app, &uuid).await;
    // A template named by name is stored (and shown) by uuid.
    assert_eq!(c["cluster_template_id"], t);
    for (k, v) in [
        ("keypair", json!("mine")),
        ("docker_volume_size", json!(20)),
        ("master_flavor_id", json!("m2")),
        ("flavor_id", json!("m3")),
        ("fixed_network", json!("n2")),
        ("fixed_subnet", json!("s2")),
        ("floating_ip_enabled", json!(true)),
        ("master_lb_enabled", json!(true)),
        ("master_count", json!(3)),
        ("node_count", json!(4)),
        ("create_timeout", json!(0)),
        ("discovery_url", json!("https://discovery.etcd.io/x")),
    ] {
        assert_eq!(c[k], v, "{k}");
    }
}

#[tokio::test]
async fn a_create_without_a_name_gets_a_generated_one_and_nulls_mean_absent() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"cluster_template_id": t, "name": null, "keypair": null, "node_count": null,
               "master_count": null, "docker_volume_size": null, "labels": null,
               "create_timeout": null, "discovery_url": null}),
        &app.headers,
    )
    .await;
    let c = show(&app, &uuid).await;
    let name = c["name"].as_str().expect("name");
    let parts: Vec<&str> = name.split('-').collect();
    assert_eq!(parts.len(), 3, "{name}");
    assert!(parts[0].chars().all(|ch| ch.is_ascii_lowercase()), "{name}");
    assert!((1..=24).contains(&parts[1].parse::<i32>().expect("number")));
    assert_eq!(parts[2], "cluster");
    assert_eq!(c["keypair"], "kp");
    assert_eq!(c["node_count"], 1);
    assert_eq!(c["master_count"], 1);
    assert_eq!(c["docker_volume_size"], 10);
    assert_eq!(c["create_timeout"], 60);
    assert_eq!(
        c["labels"],
        json!({"kube_tag": "v1.30.1", "a": "1", "b": "2"})
    );
}

#[tokio::test]
async fn what_magnum_accepts_and_ignores_on_create_is_ignored() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let given = "11111111-2222-3333-4444-555555555555";
    let r = app
        .at("latest")
        .create_cluster(
            &json!({"cluster_template_id": t, "name": "k1", "uuid": given,
                "status": "CREATE_COMPLETE", "status_reason": "x", "health_status": "HEALTHY",
                "health_status_reason": {"a": "b"}, "faults": {"x": "y"},
                "labels_overridden": {}, "labels_added": {}, "labels_skipped": {}}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let uuid = r.body["uuid"].as_str().expect("uuid");
    assert_ne!(uuid, given);
    let c = show(&app, uuid).await;
    assert_eq!(c["status"], "CREATE_IN_PROGRESS");
    assert_eq!(c["status_reason"], Value::Null);
    assert_eq!(c["health_status"], Value::Null);
    assert_eq!(c["health_status_reason"], json!({}));
    assert_eq!(
        app.get_as(&one(given), &app.headers).await.status,
        404,
        "the client's uuid is not used"
    );
}

/// One invalid create body and the exact 400 sentence.
async fn assert_create_refused(app: &TestApp, t: &str, extra: Value, detail: &str) {
    let mut body = json!({"name": "bad", "cluster_template_id": t});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    let r = app.at("latest").create_cluster(&body).await;
    r.assert_error(400, detail);
}

/// The sentence of a field that fails its rule.
fn invalid(field: &str, value: &str, reason: &str) -> String {
    format!("Invalid input for field/attribute {field}. Value: '{value}'. {reason}")
}

/// Each field rule of create: the minimal body from the rich template plus `extra` is a 400
/// with Magnum's sentence, and no cluster is created. (Even master counts are refused by the
/// driver check before the load-balancer rule.)
#[rstest]
#[case::a_name_that_starts_with_a_digit_is_refused(
    json!({"name": "1starts-with-a-digit"}),
    invalid(
        "name",
        "1starts-with-a-digit",
        "Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.",
    )
)]
#[case::a_name_with_a_space_is_refused(
    json!({"name": "has space"}),
    invalid(
        "name",
        "has space",
        "Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.",
    )
)]
#[case::a_name_with_a_slash_is_refused(
    json!({"name": "x/y"}),
    invalid(
        "name",
        "x/y",
        "Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.",
    )
)]
#[case::an_empty_name_is_refused(
    json!({"name": ""}),
    invalid(
        "name",
        "",
        "Value should have a minimum character requirement of 1.",
    )
)]
#[case::a_name_longer_than_242_characters_is_refused(
    json!({"name": "a".repeat(243)}),
    invalid(
        "name",
        &"a".repeat(243),
        "Value should have a maximum character requirement of 242.",
    )
)]
#[case::a_name_that_is_a_number_is_refused(
    json!({"name": 5}),
    invalid("name", "5", "Value should be string.")
)]
#[case::an_empty_keypair_is_refused(
    json!({"keypair": ""}),
    invalid(
        "keypair",
        "",
        "Value should have a minimum character requirement of 1.",
    )
)]
#[case::a_negative_node_count_is_refused(
    json!({"node_count": -1}),
    invalid("node_count", "-1", "Value should be greater or equal to 0.")
)]
#[case::a_node_count_that_is_not_a_number_is_refused(
    json!({"node_count": "many"}),
    invalid("node_count", "many", "Value should be an integer.")
)]
#[case::a_master_count_of_zero_is_refused(
    json!({"master_count": 0}),
    invalid(
        "master_count",
        "0",
        "Value should be greater or equal to 1.",
    )
)]
#[case::a_docker_volume_size_of_zero_is_refused(
    json!({"docker_volume_size": 0}),
    invalid(
        "docker_volume_size",
        "0",
        "Value should be greater or equal to 1.",
    )
)]
#[case::a_negative_create_timeout_is_refused(
    json!({"create_timeout": -1}),
    invalid(
        "create_timeout",
        "-1",
        "Value should be greater or equal to 0.",
    )
)]
#[case::labels_that_are_a_number_are_refused(
    json!({"labels": 5}),
    invalid("labels", "5", "Value should be a dictionary.")
)]
#[case::labels_that_are_a_list_literal_are_refused(
    json!({"labels": "[1, 2]"}),
    invalid("labels", "[1, 2]", "Value should be a dictionary.")
)]
#[case::labels_that_are_a_list_are_refused(
    json!({"labels": [1]}),
    invalid("labels", "[1]", "Value should be a dictionary.")
)]
#[case::a_merge_labels_of_maybe_is_refused(
    json!({"merge_labels": "maybe"}),
    invalid("merge_labels", "maybe", "Value should be a boolean.")
)]
#[case::a_floating_ip_enabled_of_maybe_is_refused(
    json!({"floating_ip_enabled": "maybe"}),
    invalid("floating_ip_enabled", "maybe", "Value should be a boolean.")
)]
#[case::a_master_lb_enabled_of_2_is_refused(
    json!({"master_lb_enabled": 2}),
    invalid("master_lb_enabled", "2", "Value should be a boolean.")
)]
#[case::a_flavor_id_that_is_a_number_is_refused(
    json!({"flavor_id": 5}),
    invalid("flavor_id", "5", "Value should be string.")
)]
#[case::an_empty_master_flavor_id_is_refused(
    json!({"master_flavor_id": ""}),
    invalid(
        "master_flavor_id",
        "",
        "Value should have a minimum character requirement of 1.",
    )
)]
#[case::an_empty_cluster_template_id_is_refused(
    json!({"cluster_template_id": ""}),
    invalid(
        "cluster_template_id",
        "",
        "Value should have a minimum character requirement of 1.",
    )
)]
#[case::an_unknown_attribute_is_refused(
    json!({"bogus": 1}),
    "Unknown attribute for argument cluster: bogus".to_string()
)]
#[case::an_even_master_count_is_refused_by_the_driver_before_the_load_balancer_rule(
    json!({"master_count": 2, "master_lb_enabled": true}),
    "master nodegroup size of 2 is invalid, size cannot be an even number.".to_string()
)]
#[case::three_masters_without_a_load_balancer_are_refused(
    json!({"master_count": 3}),
    "master_count must be 1 when master_lb_enabled is False".to_string()
)]
#[case::three_masters_with_the_load_balancer_disabled_are_refused(
    json!({"master_count": 3, "master_lb_enabled": false}),
    "master_count must be 1 when master_lb_enabled is False".to_string()
)]
#[tokio::test]
async fn a_create_that_breaks_a_field_rule_is_a_400_with_magnums_sentence_and_creates_nothing(
    #[case] extra: Value,
    #[case] detail: String,
) {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    assert_create_refused(&app, &t, extra, &detail).await;
    let listed = app.with_headers(&app.headers).list_clusters("").await;
    assert_eq!(listed.body["clusters"], json!([]));
}

#[tokio::test]
async fn a_create_without_a_template_is_a_400_mandatory_field_and_creates_nothing() {
    let app = spawn_app().await;
    rich_template(&app, &app.headers).await;
    let r = app
        .at("latest")
        .create_cluster(&json!({"name": "bad"}))
        .await;
    r.assert_error(
        400,
        "Invalid input for field/attribute cluster_template_id. Value: 'None'. Mandatory field missing.",
    );
    let listed = app.with_headers(&app.headers).list_clusters("").await;
    assert_eq!(listed.body["clusters"], json!([]));
}

#[tokio::test]
async fn read_only_fields_are_refused_on_create() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    for (field, value, shown) in [
        ("links", json!([]), "[]"),
        ("stack_id", json!("s"), "s"),
        ("cluster_id", json!("c"), "c"),
        ("api_address", json!("https://x"), "https://x"),
        ("coe_version", json!("v1"), "v1"),
        ("container_version", json!("v2"), "v2"),
        ("project_id", json!("p"), "p"),
        ("user_id", json!("u"), "u"),
        ("node_addresses", json!(["1.2.3.4"]), "['1.2.3.4']"),
        ("master_addresses", json!([]), "[]"),
        (
            "created_at",
            json!("2020-01-01T00:00:00"),
            "2020-01-01T00:00:00",
        ),
        (
            "updated_at",
            json!("2020-01-01T00:00:00"),
            "2020-01-01T00:00:00",
        ),
    ] {
        assert_create_refused(
            &app,
            &t,
            json!({ field: value }),
            &format!(
                "Invalid input for field/attribute {field}. Value: '{shown}'. Cannot set read only field."
            ),
        )
        .await;
    }
}

#[tokio::test]
async fn master_count_three_with_a_load_balancer_is_accepted() {
    let app = spawn_app().await;
    let t = template_as(&app, "lb", json!({"master_lb_enabled": true}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "ha", "cluster_template_id": t, "master_count": 3}),
        &app.headers,
    )
    .await;
    assert_eq!(show(&app, &uuid).await["master_count"], 3);
}

#[tokio::test]
async fn a_zero_node_count_needs_microversion_1_10() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let body = json!({"name": "zero", "cluster_template_id": t, "node_count": 0});
    for v in ["1.1", "1.9"] {
        app.at(v).create_cluster(&body).await.assert_error(
            400,
            "Resizing a nodegroup to zero is not supported in the provided microversion.",
        );
    }
    let r = app.at("1.10").create_cluster(&body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let c = show(&app, r.body["uuid"].as_str().expect("uuid")).await;
    assert_eq!(
        (c["node_count"].clone(), c["master_count"].clone()),
        (json!(0), json!(1))
    );
}

#[tokio::test]
async fn an_unknown_template_is_400_up_to_1_9_and_404_from_1_10() {
    let app = spawn_app().await;
    let body = json!({"name": "k", "cluster_template_id": "nope"});
    for v in ["1.1", "1.9"] {
        app.at(v)
            .create_cluster(&body)
            .await
            .assert_error(400, "ClusterTemplate nope could not be found.");
    }
    for v in ["1.10", "latest"] {
        app.at(v)
            .create_cluster(&body)
            .await
            .assert_error(404, "ClusterTemplate nope could not be found.");
    }
    // Another project's private template is as unknown as a missing one.
    let theirs = template_as(&app, "theirs", json!({}), &project_b(&app)).await;
    app.at("latest")
        .create_cluster(&json!({"name": "k", "cluster_template_id": theirs}))
        .await
        .assert_error(
            404,
            &format!("ClusterTemplate {theirs} could not be found."),
        );
}

#[tokio::test]
async fn a_hidden_template_is_refused_to_non_admins_and_allowed_to_admins() {
    let app = spawn_app().await;
    let admin_in_a = app.as_identity("project-a", "admin-user", "admin,member,reader");
    let t = template_as(&app, "hidden", json!({"hidden": true}), &admin_in_a).await;
    app.at("latest")
        .create_cluster(&json!({"name": "k", "cluster_template_id": t}))
        .await
        .assert_error(403, "Not authorized.");
    cluster_as(
        &app,
        json!({"name": "k", "cluster_template_id": t}),
        &admin_in_a,
    )
    .await;
}

#[tokio::test]
async fn the_devicemapper_volume_rule_applies_to_the_effective_size() {
    let app = spawn_app().await;
    let t = template_as(
        &app,
        "dm",
        json!({"docker_storage_driver": "devicemapper", "docker_volume_size": 5}),
        &app.headers,
    )
    .await;
    app.at("latest")
        .create_cluster(&json!({"name": "k", "cluster_template_id": t, "docker_volume_size": 2}))
        .await
        .assert_error(
            400,
            "Docker volume size must be at least 3 GB when docker_storage_driver is devicemapper.",
        );
    cluster_as(
        &app,
        json!({"name": "k", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
}

#[rstest]
#[tokio::test]
async fn names_may_repeat_in_a_project_and_a_lookup_by_a_shared_name_is_409(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    // Magnum's rule: a create with a name the project already uses is accepted; the name no
    // longer names one cluster, so show, update and delete by it answer 409.
    let app = spawn_with(backend, |_| {}).await;
    let t = rich_template(&app, &app.headers).await;
    let first = cluster_as(
        &app,
        json!({"name": "dup", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let second = cluster_as(
        &app,
        json!({"name": "dup", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    assert_ne!(first, second);
    let c = conductor(&app, instant());
    drain(&c).await;
    const AMBIGUOUS: &str =
        "Multiple clusters exist with same name. Please use the cluster uuid instead.";
    let v = app.at("latest");
    v.get_cluster("dup").await.assert_error(409, AMBIGUOUS);
    v.patch_cluster(
        "dup",
        &json!([{"op": "replace", "path": "/node_count", "value": 2}]),
    )
    .await
    .assert_error(409, AMBIGUOUS);
    v.delete_cluster("dup").await.assert_error(409, AMBIGUOUS);
    for id in [&first, &second] {
        let r = v.get_cluster(id).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["name"], "dup", "{}", r.text);
    }
    let listed = v.list_clusters("").await;
    let named: Vec<&Value> = listed.body["clusters"]
        .as_array()
        .map(|cs| cs.iter().filter(|c| c["name"] == "dup").collect())
        .unwrap_or_default();
    assert_eq!(named.len(), 2, "{}", listed.text);
    // Another project's name lookup sees only its own cluster.
    let tb = template_as(&app, "tb", json!({}), &project_b(&app)).await;
    let other = cluster_as(
        &app,
        json!({"name": "dup", "cluster_template_id": tb}),
        &project_b(&app),
    )
    .await;
    let r = app
        .with_headers(&project_b(&app))
        .at("latest")
        .get_cluster("dup")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["uuid"], json!(other), "{}", r.text);
    // Deleted by uuid, the other one's name is unique again.
    assert_eq!(v.delete_cluster(&first).await.status, 204);
    drain(&c).await;
    let r = v.get_cluster("dup").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["uuid"], json!(second), "{}", r.text);
}

#[tokio::test]
async fn a_reader_may_not_create_and_bodies_must_be_json_objects() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let reader = app.as_identity("project-a", "user-r", "reader");
    let r = app
        .post_as(
            CLUSTERS,
            &json!({"name": "k", "cluster_template_id": t}),
            &reader,
        )
        .await;
    r.assert_error(403, "Policy doesn't allow cluster:create to be performed.");
    let r = app
        .send(
            app.client
                .post(app.url(CLUSTERS))
                .headers(app.headers.clone())
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    r.assert_error(400, "Request is not in valid JSON format.");
    let r = app
        .send(
            app.client
                .post(app.url(CLUSTERS))
                .headers(app.headers.clone())
                .header("content-type", "text/plain")
                .body("{}"),
        )
        .await;
    r.assert_error(415, "Unknown mimetype: text/plain.");
    let r = app.post(CLUSTERS, &json!([1])).await;
    r.assert_error(
        400,
        "Invalid input for argument cluster: the request body must be a JSON object.",
    );
}

// ---------------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn labels_replace_or_merge_the_templates_and_the_differences_are_reported() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let given = json!({"a": "9", "c": 3});
    let plain = cluster_as(
        &app,
        json!({"name": "plain", "cluster_template_id": t, "labels": given}),
        &app.headers,
    )
    .await;
    let c = show(&app, &plain).await;
    assert_eq!(c["labels"], json!({"a": "9", "c": "3"}));
    assert_eq!(
        c["labels_overridden"],
        json!({"a": "1"}),
        "the template's value"
    );
    assert_eq!(c["labels_added"], json!({"c": "3"}));
    assert_eq!(
        c["labels_skipped"],
        json!({"kube_tag": "v1.30.1", "b": "2"})
    );

    let merged = cluster_as(
        &app,
        json!({"name": "merged", "cluster_template_id": t, "labels": given, "merge_labels": true}),
        &app.headers,
    )
    .await;
    let c = show(&app, &merged).await;
    assert_eq!(
        c["labels"],
        json!({"kube_tag": "v1.30.1", "a": "9", "b": "2", "c": "3"})
    );
    assert_eq!(c["labels_overridden"], json!({"a": "1"}));
    assert_eq!(c["labels_added"], json!({"c": "3"}));
    assert_eq!(c["labels_skipped"], json!({}));
    assert_eq!(c["merge_labels"], false, "merge_labels is not stored");

    // {} means the template's labels; the Python-literal string the CLI sends is accepted.
    let empty = cluster_as(
        &app,
        json!({"name": "empty", "cluster_template_id": t, "labels": {}}),
        &app.headers,
    )
    .await;
    let c = show(&app, &empty).await;
    assert_eq!(
        c["labels"],
        json!({"kube_tag": "v1.30.1", "a": "1", "b": "2"})
    );
    for k in ["labels_overridden", "labels_added", "labels_skipped"] {
        assert_eq!(c[k], json!({}), "{k}");
    }
    let literal = cluster_as(
        &app,
        json!({"name": "literal", "cluster_template_id": t, "labels": "{'x': 'y', 'n': True}"}),
        &app.headers,
    )
    .await;
    assert_eq!(
        show(&app, &literal).await["labels"],
        json!({"x": "y", "n": "True"})
    );
}

// ---------------------------------------------------------------------------------------------
// Representations, scope and pagination
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn lists_show_the_summary_and_detail_and_show_the_full_representation() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let h = at(&app.headers, "latest");
    let listed = app.with_headers(&h).list_clusters("").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(
        keys(&listed.body),
        vec!["clusters"],
        "no next on a short page"
    );
    let item = &listed.body["clusters"][0];
    assert_eq!(keys(item), summary_keys("cluster_id", false));
    let full = show(&app, &uuid).await;
    for k in SUMMARY_KEYS {
        assert_eq!(item[*k], full[*k], "{k}");
    }
    let detail = app.with_headers(&h).list_clusters_detail("").await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert_eq!(detail.body["clusters"][0], full);
    assert_eq!(keys(&full), latest_keys(false));
    // Admins see every project, with project_id in the summary.
    let admin = app
        .with_headers(&at(&app.admin(), "latest"))
        .list_clusters("")
        .await;
    assert_eq!(
        keys(&admin.body["clusters"][0]),
        summary_keys("cluster_id", true)
    );
    assert_eq!(admin.body["clusters"][0]["project_id"], "project-a");
    // Lookups by name work like by uuid; /detail under a cluster is not a route.
    assert_eq!(app.get_as(&one("k1"), &h).await.body, full);
    app.get_as(&format!("{CLUSTERS}/{uuid}/detail"), &h)
        .await
        .assert_framework_error(404);
    app.get_as(&one("nope"), &h)
        .await
        .assert_error(404, "Cluster nope could not be found.");
}

#[tokio::test]
async fn the_backend_handle_is_stack_id_below_1_13_and_cluster_id_from_it() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    for (version, handle) in [
        ("1.1", "stack_id"),
        ("1.12", "stack_id"),
        ("1.13", "cluster_id"),
    ] {
        let h = at(&app.headers, version);
        let full = app.get_as(&one(&uuid), &h).await.body;
        assert_eq!(keys(&full), full_keys(handle, false), "{version}");
        assert_eq!(full[handle], format!("fake-{uuid}"), "{version}");
        let listed = app.with_headers(&h).list_clusters("").await.body;
        assert_eq!(keys(&listed["clusters"][0]), summary_keys(handle, false));
        assert_eq!(listed["clusters"][0][handle], format!("fake-{uuid}"));
    }
}

#[tokio::test]
async fn a_page_is_keyset_paginated_with_a_next_link_until_the_last_page() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let mut uuids = Vec::new();
    for name in ["c1", "c2", "c3", "c4", "c5"] {
        uuids.push(
            cluster_as(
                &app,
                json!({"name": name, "cluster_template_id": t}),
                &app.headers,
            )
            .await,
        );
    }
    for coll in [CLUSTERS.to_string(), format!("{CLUSTERS}/detail")] {
        let mut seen = Vec::new();
        let mut url = app.url(&format!("{coll}?limit=2"));
        let mut pages = 0;
        loop {
            let r = app
                .send(app.client.get(&url).headers(app.headers.clone()))
                .await;
            assert_eq!(r.status, 200, "{}", r.text);
            pages += 1;
            for c in r.body["clusters"].as_array().expect("list") {
                seen.push(c["uuid"].as_str().expect("uuid").to_string());
            }
            match r.body.get("next") {
                Some(next) => {
                    let last = seen.last().expect("last");
                    assert_eq!(
                        next.as_str().expect("next"),
                        app.url(&format!(
                            "/v1/{}?sort_key=id&sort_dir=asc&limit=2&marker={last}",
                            coll.trim_start_matches("/v1/")
                        ))
                    );
                    url = next.as_str().expect("next").to_string();
                }
                None => break,
            }
        }
        assert_eq!(seen, uuids, "{coll}");
        assert_eq!(pages, 3, "{coll}: the last page has one item and no next");
    }
    // A full last page still carries next; the page after it is empty.
    let r = app
        .list_clusters("?limit=5&sort_key=name&sort_dir=desc")
        .await;
    let names: Vec<&str> = r.body["clusters"]
        .as_array()
        .expect("list")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, vec!["c5", "c4", "c3", "c2", "c1"]);
    let next = r.body["next"].as_str().expect("full page has next");
    let r = app
        .send(app.client.get(next).headers(app.headers.clone()))
        .await;
    assert_eq!(r.body, json!({"clusters": []}));
}

#[tokio::test]
async fn list_parameters_are_validated_with_magnums_sentences() {
    let app = spawn_app().await;
    let missing = "6f1b0fd8-4d3c-4e0c-9d4f-0f0f0f0f0f0f";
    for (query, status, detail) in [
        ("limit=0", 400, "Limit must be positive".to_string()),
        (
            "limit=x",
            400,
            "Invalid input for limit: x is not an integer.".to_string(),
        ),
        (
            "sort_key=node_count",
            400,
            "The sort_key value \"node_count\" is an invalid field for sorting".to_string(),
        ),
        (
            "sort_dir=up",
            400,
            "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'".to_string(),
        ),
        (
            "marker=x",
            400,
            "Expected a uuid but received x.".to_string(),
        ),
        (
            &format!("marker={missing}"),
            404,
            format!("Cluster {missing} could not be found."),
        ),
        ("name=foo", 400, "Unknown argument: \"name\"".to_string()),
        (
            "all_tenants=1",
            400,
            "Unknown argument: \"all_tenants\"".to_string(),
        ),
    ] {
        let r = app.list_clusters(&format!("?{query}")).await;
        r.assert_error(status, &detail);
    }
}

#[tokio::test]
async fn another_projects_cluster_is_a_marker_nobody_else_can_use() {
    let app = spawn_app().await;
    let tb = template_as(&app, "tb", json!({}), &project_b(&app)).await;
    let theirs = cluster_as(
        &app,
        json!({"name": "b1", "cluster_template_id": tb}),
        &project_b(&app),
    )
    .await;
    app.list_clusters(&format!("?marker={theirs}"))
        .await
        .assert_error(404, &format!("Cluster {theirs} could not be found."));
}

// ---------------------------------------------------------------------------------------------
// PATCH
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_node_count_patch_commits_update_in_progress_with_a_job_and_completes() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    let jobs = job_count(&app, &uuid).await;
    let r = app
        .at("latest")
        .patch_cluster(
            "k1",
            &json!([{"op": "replace", "path": "/node_count", "value": 3}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, json!({"uuid": uuid}));
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(c["node_count"], 3);
    assert_eq!(job_count(&app, &uuid).await, jobs + 1);
    let outcomes = drain(&conductor(&app, instant())).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Completed { .. }]),
        "{outcomes:?}"
    );
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "UPDATE_COMPLETE");
    assert_eq!(c["node_count"], 3);
    assert_eq!(c["node_addresses"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "success"),
            ev("magnum.cluster.update", "pending"),
            ev("magnum.cluster.update", "success"),
        ]
    );
}

#[tokio::test]
async fn a_health_only_patch_is_saved_directly_without_a_job_in_any_state() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let jobs = job_count(&app, &uuid).await;
    // As the auto-healer sends it, while the cluster is still CREATE_IN_PROGRESS.
    let r = app.at("latest").patch_cluster(&uuid, &json!([
            {"op": "replace", "path": "/health_status", "value": "UNHEALTHY"},
            {"op": "replace", "path": "/health_status_reason", "value": "{'api': 'ok', 'node-1.Ready': 'False'}"}
        ]))
    .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "CREATE_IN_PROGRESS");
    assert_eq!(c["health_status"], "UNHEALTHY");
    assert_eq!(
        c["health_status_reason"],
        json!({"api": "ok", "node-1.Ready": "False"})
    );
    assert_eq!(job_count(&app, &uuid).await, jobs, "no driver work");
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![ev("magnum.cluster.create", "pending")],
        "health changes are not notified"
    );
    app.at("latest").patch_cluster(&uuid, &json!([{"op": "replace", "path": "/health_status", "value": "SICK"}]))
    .await
    .assert_error(
        400,
        "Invalid input for field/attribute health_status. Value: 'SICK'. Value should be one of: HEALTHY, UNHEALTHY, UNKNOWN.",
    );
}

#[tokio::test]
async fn a_patch_of_anything_else_is_refused_naming_the_properties() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    for (ops, detail) in [
        (
            json!([{"op": "replace", "path": "/name", "value": "k2"}]),
            "cannot change cluster property(ies) name.",
        ),
        (
            json!([{"op": "replace", "path": "/name", "value": "k2"},
                   {"op": "add", "path": "/labels/x", "value": "y"}]),
            "cannot change cluster property(ies) labels, name.",
        ),
        (
            json!([{"op": "replace", "path": "/master_count", "value": 3}]),
            "cannot change cluster property(ies) master_count.",
        ),
        (
            json!([{"op": "replace", "path": "/flavor_id", "value": "big"}]),
            "cannot change cluster property(ies) flavor_id.",
        ),
        (
            json!([{"op": "replace", "path": "/stack_id", "value": "s"}]),
            "'/stack_id' is an internal attribute and can not be updated",
        ),
        (
            json!([{"op": "replace", "path": "/uuid", "value": "s"}]),
            "'/uuid' is an internal attribute and can not be updated",
        ),
        (
            json!([{"op": "remove", "path": "/cluster_template_id"}]),
            "'/cluster_template_id' is a mandatory attribute and can not be removed",
        ),
        (
            json!([{"op": "add", "path": "/bogus", "value": 1}]),
            "Adding a new attribute /bogus to the root of the resource is not allowed.",
        ),
    ] {
        app.at("latest")
            .patch_cluster(&uuid, &ops)
            .await
            .assert_error(400, detail);
    }
    let c = show(&app, &uuid).await;
    assert_eq!(
        (c["name"].clone(), c["status"].clone()),
        (json!("k1"), json!("CREATE_COMPLETE"))
    );
}

#[tokio::test]
async fn rollback_is_a_query_parameter_from_1_3() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    let ops = json!([{"op": "replace", "path": "/node_count", "value": 2}]);
    for v in ["1.1", "1.2"] {
        app.patch_as(
            &format!("{}?rollback=True", one(&uuid)),
            &ops,
            &at(&app.headers, v),
        )
        .await
        .assert_error(400, "Unknown argument: \"rollback\"");
    }
    app.patch_as(
        &format!("{}?rollback=maybe", one(&uuid)),
        &ops,
        &at(&app.headers, "1.3"),
    )
    .await
    .assert_error(400, "Invalid input for rollback: maybe is not a boolean.");
    // The client's form: trailing slash and a Python boolean.
    let r = app
        .patch_as(
            &format!("{}/?rollback=True", one(&uuid)),
            &ops,
            &at(&app.headers, "1.3"),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let jobs = app.store.jobs_for(id(&uuid)).await.expect("jobs");
    let (job, _) = jobs.last().expect("update job");
    assert_eq!(job.payload.stored()["rollback"], true);
    assert_eq!(job.payload.stored()["node_count"], 2);
    assert_eq!(job.payload.stored()["old_node_count"], 1);
}

#[tokio::test]
async fn a_node_count_patch_is_refused_at_once_unless_the_cluster_is_complete() {
    let app = spawn_app().await;
    let t = rich_template(&app, &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    app.at("latest")
        .patch_cluster(
            &uuid,
            &json!([{"op": "replace", "path": "/node_count", "value": 2}]),
        )
        .await
        .assert_error(
            409,
            "Updating a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
        );
    assert_eq!(show(&app, &uuid).await["node_count"], 1);
}

#[tokio::test]
async fn a_zero_node_count_patch_needs_1_10_and_an_unchanged_count_is_a_no_op() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    let zero = json!([{"op": "replace", "path": "/node_count", "value": 0}]);
    app.at("1.9")
        .patch_cluster(&uuid, &zero.clone())
        .await
        .assert_error(
            400,
            "Resizing a nodegroup to zero is not supported in the provided microversion.",
        );
    let jobs = job_count(&app, &uuid).await;
    let same = json!([{"op": "replace", "path": "/node_count", "value": 1}]);
    let r = app.at("latest").patch_cluster(&uuid, &same).await;
    assert_eq!((r.status, r.body.clone()), (202, json!({"uuid": uuid})));
    assert_eq!(
        job_count(&app, &uuid).await,
        jobs,
        "nothing changed, nothing to do"
    );
    assert_eq!(show(&app, &uuid).await["status"], "CREATE_COMPLETE");
    let r = app.at("1.10").patch_cluster(&uuid, &zero).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(show(&app, &uuid).await["node_count"], 0);
}

#[tokio::test]
async fn a_failed_update_restores_the_node_count_and_notifies_the_failure_once() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t, "labels": {"fake_fail": "update"}}),
        &app.headers,
    )
    .await;
    let c = conductor(&app, instant());
    drain(&c).await;
    let r = app
        .at("latest")
        .patch_cluster(
            &uuid,
            &json!([{"op": "replace", "path": "/node_count", "value": 4}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let outcomes = drain(&c).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Failed { .. }]),
        "{outcomes:?}"
    );
    let shown = show(&app, &uuid).await;
    let reason = "The fake driver simulated a failure of 'update' (label fake_fail=update).";
    assert_eq!(shown["status"], "UPDATE_FAILED");
    assert_eq!(shown["status_reason"], reason);
    assert_eq!(shown["node_count"], 1, "the old count is restored");
    assert_eq!(shown["faults"], json!({"default-worker": reason}));
    assert_eq!(keys(&shown), latest_keys(true));
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "success"),
            ev("magnum.cluster.update", "pending"),
            ev("magnum.cluster.update", "failure"),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Resize
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn resize_exists_from_1_7_and_moves_the_default_worker_group() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    app.at("1.6")
        .resize_cluster(&uuid, &json!({"node_count": 3}))
        .await
        .assert_framework_error(406);
    let r = app
        .at("1.7")
        .resize_cluster(
            &uuid,
            &json!({"node_count": 3, "nodes_to_remove": ["default-worker-1"]}),
        )
        .await;
    assert_eq!(
        (r.status, r.body.clone()),
        (202, json!({"uuid": uuid})),
        "{}",
        r.text
    );
    let c = show(&app, &uuid).await;
    assert_eq!(
        (c["status"].clone(), c["node_count"].clone()),
        (json!("UPDATE_IN_PROGRESS"), json!(3))
    );
    let jobs = app.store.jobs_for(id(&uuid)).await.expect("jobs");
    let (job, _) = jobs.last().expect("resize job");
    assert_eq!(job.operation.as_str(), "cluster.resize");
    assert_eq!(
        job.payload.stored()["nodes_to_remove"],
        json!(["default-worker-1"])
    );
    assert_eq!(job.payload.stored()["old_node_count"], 1);
    drain(&conductor(&app, instant())).await;
    let c = show(&app, &uuid).await;
    assert_eq!(
        (c["status"].clone(), c["node_count"].clone()),
        (json!("UPDATE_COMPLETE"), json!(3))
    );
    // Resizing again while an update runs is allowed (the autoscaler retries).
    let r = app
        .at("latest")
        .resize_cluster(
            &uuid,
            &json!({"node_count": 2, "nodegroup": "default-worker"}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let r = app
        .at("latest")
        .resize_cluster(&uuid, &json!({"node_count": 4}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(show(&app, &uuid).await["node_count"], 4);
}

#[tokio::test]
async fn resize_bounds_groups_and_microversions_are_enforced() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t, "node_count": 2,
               "labels": {"min_node_count": "1", "max_node_count": "3"}}),
        &app.headers,
    )
    .await;
    app.at("latest")
        .resize_cluster(&uuid, &json!({"node_count": 2}))
        .await
        .assert_error(
            409,
            "Resizing a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
        );
    drain(&conductor(&app, instant())).await;
    for (body, status, detail) in [
        (
            json!({"node_count": 4}),
            400,
            "Resizing default-worker outside the allowed range: min_node_count = 1, max_node_count = 3",
        ),
        (
            json!({"node_count": 0}),
            400,
            "Resizing default-worker outside the allowed range: min_node_count = 1, max_node_count = 3",
        ),
        (
            json!({"node_count": 3, "nodegroup": "default-master"}),
            400,
            "Resizing the master nodegroup is not supported by this driver.",
        ),
        (
            json!({"node_count": 2, "nodegroup": "nope"}),
            404,
            "Nodegroup nope could not be found.",
        ),
        (
            json!({"nodes_to_remove": []}),
            400,
            "Invalid input for field/attribute node_count. Value: 'None'. Mandatory field missing.",
        ),
        (
            json!({"node_count": -1}),
            400,
            "Invalid input for field/attribute node_count. Value: '-1'. Value should be greater or equal to 0.",
        ),
        (
            json!({"node_count": 2, "nodes_to_remove": "n-1"}),
            400,
            "Invalid input for field/attribute nodes_to_remove. Value: 'n-1'. Value should be a list of strings.",
        ),
        (
            json!({"node_count": 2, "bogus": 1}),
            400,
            "Unknown attribute for argument resize: bogus",
        ),
    ] {
        app.at("latest").resize_cluster(&uuid, &body)
            .await
            .assert_error(status, detail);
    }
    app.at("1.9")
        .resize_cluster(&uuid, &json!({"node_count": 0}))
        .await
        .assert_error(
            400,
            "Resizing a nodegroup to zero is not supported in the provided microversion.",
        );
    app.at("latest")
        .resize_cluster("nope", &json!({"node_count": 2}))
        .await
        .assert_error(404, "Cluster nope could not be found.");
    // Without bounds the sentence says None.
    let other = complete_cluster_as(&app, "k2", &app.headers).await;
    let r = app
        .at("1.10")
        .resize_cluster(&other, &json!({"node_count": 0}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(show(&app, &other).await["node_count"], 0);
}

// ---------------------------------------------------------------------------------------------
// Upgrade
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn upgrade_is_refused_at_1_7_and_works_from_1_8() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    let newer = template_as(
        &app,
        "newer",
        json!({"labels": {"kube_tag": "v1.31.0"}}),
        &app.headers,
    )
    .await;
    let body = json!({"cluster_template": "newer", "max_batch_size": 2});
    app.at("1.6")
        .upgrade_cluster(&uuid, &body.clone())
        .await
        .assert_framework_error(406);
    app.at("1.7")
        .upgrade_cluster(&uuid, &body.clone())
        .await
        .assert_error(
            400,
            "Cluster upgrade is not supported in the provided microversion.",
        );
    let r = app.at("1.8").upgrade_cluster(&uuid, &body).await;
    assert_eq!(
        (r.status, r.body.clone()),
        (202, json!({"uuid": uuid})),
        "{}",
        r.text
    );
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(c["cluster_template_id"], newer);
    let jobs = app.store.jobs_for(id(&uuid)).await.expect("jobs");
    let (job, _) = jobs.last().expect("upgrade job");
    assert_eq!(job.operation.as_str(), "cluster.upgrade");
    assert_eq!(job.payload.stored()["max_batch_size"], 2);
    assert_eq!(job.payload.stored()["template"], newer);
    drain(&conductor(&app, instant())).await;
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "UPDATE_COMPLETE");
    assert_eq!(c["cluster_template_id"], newer);
    // The cluster's own labels were copied at create; the diff is now against the new template.
    assert_eq!(c["labels"], json!({}));
    assert_eq!(c["labels_skipped"], json!({"kube_tag": "v1.31.0"}));
}

#[tokio::test]
async fn upgrade_refusals_have_magnums_codes() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let newer = template_as(&app, "newer", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    app.at("latest")
        .upgrade_cluster(&uuid, &json!({"cluster_template": newer}))
        .await
        .assert_error(
            400,
            "Upgrading a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
        );
    drain(&conductor(&app, instant())).await;
    for (body, status, detail) in [
        (
            json!({"cluster_template": "nope"}),
            404,
            "ClusterTemplate nope could not be found.".to_string(),
        ),
        (
            json!({"max_batch_size": 1}),
            400,
            "Invalid input for field/attribute cluster_template. Value: 'None'. Mandatory field missing."
                .to_string(),
        ),
        (
            json!({"cluster_template": newer, "max_batch_size": 0}),
            400,
            "Invalid input for field/attribute max_batch_size. Value: '0'. Value should be greater or equal to 1."
                .to_string(),
        ),
        (
            json!({"cluster_template": newer, "nodegroup": "nope"}),
            404,
            "Nodegroup nope could not be found.".to_string(),
        ),
    ] {
        app.at("latest").upgrade_cluster(&uuid, &body)
            .await
            .assert_error(status, &detail);
    }
    // A non-default group may only be "upgraded" to the cluster's current template.
    let extra = add_worker_group(&app, &uuid, "extra").await;
    app.at("latest").upgrade_cluster(&uuid, &json!({"cluster_template": newer, "nodegroup": "extra"}))
    .await
    .assert_error(
        409,
        &format!(
            "Cluster Template is not valid for upgrade: Nodegroup extra can be upgraded only to match cluster's template ({t})."
        ),
    );
    let r = app
        .at("latest")
        .upgrade_cluster(&uuid, &json!({"cluster_template": t, "nodegroup": extra}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(show(&app, &uuid).await["cluster_template_id"], t);
}

#[tokio::test]
async fn an_upgrade_is_held_to_the_version_skew_policy_before_anything_changes() {
    let app = spawn_app().await;
    let t = template_as(
        &app,
        "t",
        json!({"labels": {"kube_tag": "v1.30.2"}}),
        &app.headers,
    )
    .await;
    for (name, tag) in [
        ("v131", "v1.31.0"),
        ("v133", "v1.33.1"),
        ("v134", "v1.34.0"),
    ] {
        template_as(
            &app,
            name,
            json!({"labels": {"kube_tag": tag}}),
            &app.headers,
        )
        .await;
    }
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    drain(&conductor(&app, instant())).await;
    assert_eq!(show(&app, &uuid).await["coe_version"], "v1.30.2");
    let unchanged = |c: &Value| {
        assert_eq!(c["status"], "CREATE_COMPLETE", "{c}");
        assert_eq!(c["cluster_template_id"], t, "{c}");
    };

    // A worker group may not pass the control plane.
    app.at("latest")
        .upgrade_cluster(
            &uuid,
            &json!({"cluster_template": "v131", "nodegroup": "default-worker"}),
        )
        .await
        .assert_error(
            409,
            "Node group default-worker cannot be upgraded to v1.31.0: the control plane runs \
             v1.30.2. Upgrade the control plane to v1.31 first.",
        );
    unchanged(&show(&app, &uuid).await);
    // The control plane may not leave a worker group more than three minors behind.
    app.at("latest")
        .upgrade_cluster(
            &uuid,
            &json!({"cluster_template": "v134", "nodegroup": "default-master"}),
        )
        .await
        .assert_error(
            409,
            "The control plane cannot be upgraded to v1.34.0: node group default-worker would \
             stay on v1.30.2. Kubelet version v1.30.2 is more than 3 minor versions older than \
             the control plane version v1.34.0; the oldest supported kubelet is v1.31.",
        );
    unchanged(&show(&app, &uuid).await);
    let jobs = app.store.jobs_for(id(&uuid)).await.expect("jobs");
    assert!(
        jobs.iter()
            .all(|(j, _)| j.operation.as_str() != "cluster.upgrade"),
        "a refused upgrade leaves no job"
    );

    // Three minors is within the policy; so is every group moving together.
    let r = app
        .at("latest")
        .upgrade_cluster(
            &uuid,
            &json!({"cluster_template": "v133", "nodegroup": "default-master"}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    let other = cluster_as(
        &app,
        json!({"name": "k2", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    drain(&conductor(&app, instant())).await;
    let r = app
        .at("latest")
        .upgrade_cluster(&other, &json!({"cluster_template": "v134"}))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
}

/// Adds a complete, non-default worker group to a cluster through the store (the node group
/// API has its own suite); its uuid.
pub(crate) async fn add_worker_group(app: &TestApp, cluster: &str, name: &str) -> String {
    use fleetyard::domain::cluster::NewNodeGroup;
    use fleetyard::domain::labels::Labels;
    use fleetyard::domain::status::ClusterStatus;
    use fleetyard::domain::NodeGroupId;
    use fleetyard::store::Write;
    let ng = NewNodeGroup {
        uuid: NodeGroupId::new(),
        name: name.into(),
        project_id: "project-a".into(),
        docker_volume_size: None,
        labels: Labels::new(),
        flavor_id: Some("m1.small".into()),
        image_id: Some("fedora-coreos-40".into()),
        node_count: 1,
        role: "worker".into(),
        min_node_count: 0,
        max_node_count: None,
        is_default: false,
        status: ClusterStatus::CreateComplete,
        node_labels: Labels::new(),
        node_taints: Vec::new(),
    };
    let uuid = ng.uuid.to_string();
    app.store
        .commit(&[Write::InsertNodeGroup {
            cluster_uuid: id(cluster),
            nodegroup: Box::new(ng),
        }])
        .await
        .expect("node group inserted");
    uuid
}

// ---------------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn delete_answers_204_shows_delete_in_progress_then_the_cluster_is_gone() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    let r = app.delete(&one("k1")).await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "DELETE_IN_PROGRESS");
    assert_eq!(c["status_reason"], Value::Null);
    // A second delete while it runs is accepted and adds no work.
    let jobs = job_count(&app, &uuid).await;
    assert_eq!(app.delete(&one(&uuid)).await.status, 204);
    assert_eq!(job_count(&app, &uuid).await, jobs);
    let outcomes = drain(&conductor(&app, instant())).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Completed { .. }]),
        "{outcomes:?}"
    );
    app.get(&one(&uuid))
        .await
        .assert_error(404, &format!("Cluster {uuid} could not be found."));
    assert_eq!(app.list_clusters("").await.body, json!({"clusters": []}));
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "success"),
            ev("magnum.cluster.delete", "pending"),
            ev("magnum.cluster.delete", "success"),
        ]
    );
    app.delete(&one(&uuid))
        .await
        .assert_error(404, &format!("Cluster {uuid} could not be found."));
}

#[tokio::test]
async fn a_slow_delete_is_finished_by_the_status_sync() {
    let app = spawn_app().await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    assert_eq!(app.delete(&one(&uuid)).await.status, 204);
    let slow = conductor(
        &app,
        FakeDriverSection {
            delete_seconds: 1,
            ..instant()
        },
    );
    let outcomes = drain(&slow).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Started { .. }]),
        "{outcomes:?}"
    );
    assert_eq!(show(&app, &uuid).await["status"], "DELETE_IN_PROGRESS");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let report = slow.sync_round().await.expect("sync");
    assert_eq!(report.changed, 1);
    assert_eq!(app.get(&one(&uuid)).await.status, 404);
    let deletes: Vec<_> = events_of(&app, &uuid)
        .await
        .into_iter()
        .filter(|e| e.0 == "magnum.cluster.delete")
        .collect();
    assert_eq!(
        deletes,
        vec![
            ev("magnum.cluster.delete", "pending"),
            ev("magnum.cluster.delete", "success"),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The asynchronous sequences through the conductor
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_completes_within_the_job_with_addresses_versions_and_one_success_event() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({"master_lb_enabled": true}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t, "master_count": 3, "node_count": 2}),
        &app.headers,
    )
    .await;
    let outcomes = drain(&conductor(&app, instant())).await;
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(matches!(&outcomes[0], Outcome::Completed { resource, .. } if *resource == uuid));
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "CREATE_COMPLETE");
    assert_eq!(c["status_reason"], Value::Null);
    assert_eq!(c["master_addresses"].as_array().map(Vec::len), Some(3));
    assert_eq!(c["node_addresses"].as_array().map(Vec::len), Some(2));
    let first_master = c["master_addresses"][0].as_str().expect("address");
    assert_eq!(c["api_address"], format!("https://{first_master}:6443"));
    assert_eq!(c["coe_version"], "v1.30.1");
    assert_eq!(c["container_version"], "containerd 1.7.20");
    assert_eq!(c["cluster_id"], format!("fake-{uuid}"));
    assert!(c["updated_at"].is_string());
    assert!(!keys(&c).contains(&"faults".to_string()));
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "success"),
        ]
    );
}

#[tokio::test]
async fn a_slow_create_is_started_by_the_job_and_completed_by_the_status_sync() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let slow = conductor(
        &app,
        FakeDriverSection {
            create_seconds: 1,
            ..instant()
        },
    );
    let outcomes = drain(&slow).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Started { .. }]),
        "{outcomes:?}"
    );
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "CREATE_IN_PROGRESS");
    assert_eq!(
        c["cluster_id"],
        format!("fake-{uuid}"),
        "the handle is stored at once"
    );
    // Nothing changes before the simulated duration.
    assert_eq!(slow.sync_round().await.expect("sync").changed, 0);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(slow.sync_round().await.expect("sync").changed, 1);
    assert_eq!(show(&app, &uuid).await["status"], "CREATE_COMPLETE");
    // Further rounds change nothing and notify nothing.
    assert_eq!(slow.sync_round().await.expect("sync").changed, 0);
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "success"),
        ]
    );
}

#[tokio::test]
async fn an_injected_create_failure_is_create_failed_with_reason_faults_and_one_failure_event() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t, "labels": {"fake_fail": "create"}}),
        &app.headers,
    )
    .await;
    let outcomes = drain(&conductor(&app, instant())).await;
    let reason = "The fake driver simulated a failure of 'create' (label fake_fail=create).";
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(matches!(&outcomes[0], Outcome::Failed { reason: r, .. } if r == reason));
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "CREATE_FAILED");
    assert_eq!(c["status_reason"], reason);
    assert_eq!(
        c["faults"],
        json!({"default-master": reason, "default-worker": reason})
    );
    assert_eq!(keys(&c), latest_keys(true));
    let listed = app
        .with_headers(&at(&app.headers, "latest"))
        .list_clusters_detail("")
        .await;
    assert_eq!(listed.body["clusters"][0]["faults"], c["faults"]);
    let summary = app
        .with_headers(&at(&app.headers, "latest"))
        .list_clusters("")
        .await;
    assert!(summary.body["clusters"][0].get("faults").is_none());
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "failure"),
        ]
    );
    // A failed cluster can still be deleted.
    assert_eq!(app.delete(&one(&uuid)).await.status, 204);
    drain(&conductor(&app, instant())).await;
    assert_eq!(app.get(&one(&uuid)).await.status, 404);
}

#[tokio::test]
async fn transient_failures_are_retried_with_backoff_and_complete_on_the_third_attempt() {
    let app = spawn_app().await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t,
               "labels": {"fake_transient_failures": "2"}}),
        &app.headers,
    )
    .await;
    let c = conductor(&app, instant());
    let mut outcomes = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match c.try_execute_one().await.expect("job") {
            Outcome::Idle => {
                assert!(std::time::Instant::now() < deadline, "{outcomes:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            o @ Outcome::Retried { .. } => {
                // The job waits for its backoff: it is not due at once.
                assert_eq!(c.try_execute_one().await.expect("job"), Outcome::Idle);
                assert_eq!(show(&app, &uuid).await["status"], "CREATE_IN_PROGRESS");
                outcomes.push(o);
            }
            o => {
                outcomes.push(o);
                break;
            }
        }
    }
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert!(matches!(&outcomes[0], Outcome::Retried { error, .. } if error.contains("attempt 1")));
    assert!(matches!(&outcomes[1], Outcome::Retried { error, .. } if error.contains("attempt 2")));
    assert!(matches!(&outcomes[2], Outcome::Completed { .. }));
    assert_eq!(show(&app, &uuid).await["status"], "CREATE_COMPLETE");
    let jobs = app.store.jobs_for(id(&uuid)).await.expect("jobs");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].0.attempts, 3);
    assert_eq!(jobs[0].1, "done");
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "success"),
        ],
        "retries are not notified"
    );
}

#[tokio::test]
async fn a_transient_failure_beyond_max_attempts_fails_for_good() {
    let app = spawn_with(Backend::Postgres, |s| s.conductor.max_attempts = 1).await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    let uuid = cluster_as(
        &app,
        json!({"name": "k1", "cluster_template_id": t,
               "labels": {"fake_transient_failures": "5"}}),
        &app.headers,
    )
    .await;
    let outcomes = drain(&conductor(&app, instant())).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Failed { .. }]),
        "{outcomes:?}"
    );
    let c = show(&app, &uuid).await;
    assert_eq!(c["status"], "CREATE_FAILED");
    let reason = c["status_reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("Gave up after 1 attempt ([conductor] max_attempts), refused since 20"),
        "{reason}"
    );
    assert!(
        reason.ends_with(
            "Z: The fake driver simulated a transient failure of 'create' (attempt 1 of the first 5)."
        ),
        "{reason}"
    );
    assert_eq!(
        events_of(&app, &uuid).await,
        vec![
            ev("magnum.cluster.create", "pending"),
            ev("magnum.cluster.create", "failure"),
        ]
    );
}

#[tokio::test]
async fn the_cluster_api_works_on_sqlite_too() {
    let app = spawn_with(Backend::Sqlite, |_| {}).await;
    let uuid = complete_cluster_as(&app, "k1", &app.headers).await;
    // An integer given as a string inside the patch is accepted (Terraform sends those).
    let r = app
        .at("latest")
        .patch_cluster(
            &uuid,
            &json!([{"op": "replace", "path": "/node_count", "value": "2"}]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&conductor(&app, instant())).await;
    assert_eq!(show(&app, &uuid).await["node_count"], 2);
    let listed = app.list_clusters_detail("?limit=1").await;
    assert_eq!(listed.body["clusters"][0]["uuid"], uuid);
    assert!(listed.body["next"].is_string());
    assert_eq!(app.delete(&one(&uuid)).await.status, 204);
    drain(&conductor(&app, instant())).await;
    assert_eq!(app.get(&one(&uuid)).await.status, 404);
}

// ---------------------------------------------------------------------------------------------
// A page costs a fixed number of queries
// ---------------------------------------------------------------------------------------------

/// A TCP proxy in front of PostgreSQL that counts the statements clients execute (protocol
/// messages `Query` and `Execute`), so a test can see how many queries a request costs.
struct CountingProxy {
    port: u16,
    statements: Arc<AtomicUsize>,
}

async fn counting_proxy(upstream: String) -> CountingProxy {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind proxy");
    let port = listener.local_addr().expect("addr").port();
    let statements = Arc::new(AtomicUsize::new(0));
    let counter = statements.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let back = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let mut pending: Vec<u8> = Vec::new();
                let mut started = false;
                let mut chunk = vec![0_u8; 16 * 1024];
                loop {
                    let n = match client_read.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    pending.extend_from_slice(&chunk[..n]);
                    // Count before forwarding, so the count is complete when the reply arrives.
                    loop {
                        if !started {
                            // Untyped start-up messages: length (with itself), then a code.
                            if pending.len() < 8 {
                                break;
                            }
                            let len = u32::from_be_bytes([
                                pending[0], pending[1], pending[2], pending[3],
                            ]) as usize;
                            if pending.len() < len {
                                break;
                            }
                            let code = u32::from_be_bytes([
                                pending[4], pending[5], pending[6], pending[7],
                            ]);
                            // SSLRequest and GSSENCRequest precede the real start-up message.
                            started = code != 80_877_103 && code != 80_877_104;
                            pending.drain(..len);
                            continue;
                        }
                        if pending.len() < 5 {
                            break;
                        }
                        let len =
                            u32::from_be_bytes([pending[1], pending[2], pending[3], pending[4]])
                                as usize
                                + 1;
                        if pending.len() < len {
                            break;
                        }
                        if pending[0] == b'Q' || pending[0] == b'E' {
                            counter.fetch_add(1, Ordering::SeqCst);
                        }
                        pending.drain(..len);
                    }
                    if server_write.write_all(&chunk[..n]).await.is_err() {
                        break;
                    }
                }
                back.abort();
            });
        }
    });
    CountingProxy { port, statements }
}

impl CountingProxy {
    /// Statements the request executed.
    async fn cost(&self, app: &TestApp, path: &str) -> usize {
        let before = self.statements.load(Ordering::SeqCst);
        let r = app.get_as(path, &at(&app.headers, "latest")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        self.statements.load(Ordering::SeqCst) - before
    }
}

#[tokio::test]
async fn a_list_page_costs_the_same_number_of_queries_for_1_and_100_clusters() {
    let admin = crate::helpers::pg_admin_url();
    let upstream = admin
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('@').next_back())
        .and_then(|hostpart| hostpart.split('/').next())
        .expect("host:port in the PostgreSQL URL")
        .to_string();
    let upstream = if upstream.contains(':') {
        upstream
    } else {
        format!("{upstream}:5432")
    };
    let proxy = counting_proxy(upstream.clone()).await;
    let port = proxy.port;
    let app = spawn_with(Backend::Postgres, move |s| {
        s.quotas.max_clusters_per_project = 1000;
        let url = s.database.connection.expose().to_string();
        let routed = url.replacen(&upstream, &format!("127.0.0.1:{port}"), 1);
        assert_ne!(routed, url, "the database goes through the proxy");
        s.database.connection = fleetyard::config::Secret::new(format!("{routed}?sslmode=disable"));
    })
    .await;
    let t = template_as(&app, "t", json!({}), &app.headers).await;
    cluster_as(
        &app,
        json!({"name": "c0", "cluster_template_id": t}),
        &app.headers,
    )
    .await;
    let pages = [
        CLUSTERS.to_string(),
        format!("{CLUSTERS}/detail"),
        format!("{CLUSTERS}?limit=100"),
        format!("{CLUSTERS}/detail?limit=100"),
    ];
    let mut at_one = Vec::new();
    for p in &pages {
        proxy.cost(&app, p).await; // warm the connection pool and statement caches
        at_one.push(proxy.cost(&app, p).await);
    }
    for i in 1..100 {
        cluster_as(
            &app,
            json!({"name": format!("c{i}"), "cluster_template_id": t}),
            &app.headers,
        )
        .await;
    }
    let listed = app.list_clusters("?limit=100").await;
    assert_eq!(listed.body["clusters"].as_array().map(Vec::len), Some(100));
    let mut at_hundred = Vec::new();
    for p in &pages {
        proxy.cost(&app, p).await;
        at_hundred.push(proxy.cost(&app, p).await);
    }
    assert_eq!(
        at_one, at_hundred,
        "queries per page at 1 and at 100 clusters"
    );
    for (p, n) in pages.iter().zip(&at_one) {
        assert!((1..=4).contains(n), "{p} costs {n} queries");
    }
}
