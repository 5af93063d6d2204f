//! `/v1/clustertemplates` over HTTP: create and its validation sentences, visibility across
//! projects, name lookups, keyset pagination on both backends, Magnum's JSON-Patch dialect,
//! templates referenced by clusters, delete, and the transactional outbox events.

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{
    merged, spawn_app, spawn_with, template_body, template_path, uuid_of, Api, Backend, Resp,
    TestApp,
};

const GREEK: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi",
    "psi", "omega",
];

const PUBLISH_DENIED: &str = "Not authorized to set public or hidden flag for cluster template.";

// ---------------------------------------------------------------------------------------------
// Helpers local to this module
// ---------------------------------------------------------------------------------------------

fn one(ident: &str) -> String {
    template_path(ident)
}

fn not_found(ident: &str) -> String {
    format!("ClusterTemplate {ident} could not be found.")
}

fn referenced(uuid: &str) -> String {
    format!("ClusterTemplate {uuid} is referenced by one or multiple clusters.")
}

fn project_b(app: &TestApp) -> HeaderMap {
    app.project_b()
}

/// The minimal valid create body plus `extra`, without the keys in `drop`.
fn body_with(extra: Value, drop: &[&str]) -> Value {
    merged(template_body("k8s"), extra, drop)
}

/// The representation of a template created by project-a/user-a from the minimal body, with
/// `fields` overriding the defaults.
fn expected(app: &TestApp, uuid: &str, created_at: &Value, fields: Value) -> Value {
    let mut v = json!({
        "uuid": uuid,
        "name": "k8s",
        "coe": "kubernetes",
        "image_id": "fedora-coreos-40",
        "flavor_id": null,
        "master_flavor_id": null,
        "dns_nameserver": null,
        "keypair_id": null,
        "external_network_id": null,
        "fixed_network": null,
        "fixed_subnet": null,
        "network_driver": "flannel",
        "volume_driver": null,
        "apiserver_port": null,
        "docker_volume_size": null,
        "docker_storage_driver": null,
        "cluster_distro": null,
        "http_proxy": null,
        "https_proxy": null,
        "no_proxy": null,
        "insecure_registry": null,
        "registry_enabled": false,
        "tls_disabled": false,
        "public": false,
        "master_lb_enabled": false,
        "floating_ip_enabled": true,
        "hidden": false,
        "server_type": "vm",
        "labels": {},
        "tags": null,
        "driver": "fake",
        "links": [
            {"href": format!("{}/v1/clustertemplates/{uuid}", app.address), "rel": "self"},
            {"href": format!("{}/clustertemplates/{uuid}", app.address), "rel": "bookmark"},
        ],
        "project_id": "project-a",
        "user_id": "user-a",
        "created_at": created_at,
        "updated_at": null,
    });
    let obj = v.as_object_mut().expect("object");
    if let Some(f) = fields.as_object() {
        for (k, val) in f {
            assert!(
                obj.contains_key(k),
                "{k} is not a field of the representation"
            );
            obj.insert(k.clone(), val.clone());
        }
    }
    v
}

/// Asserts an ISO-8601 timestamp with an explicit `+00:00` offset, taken within the last minute.
#[track_caller]
fn assert_recent_timestamp(v: &Value) -> DateTime<Utc> {
    let text = v
        .as_str()
        .unwrap_or_else(|| panic!("timestamp is a string: {v}"));
    assert!(text.ends_with("+00:00"), "explicit UTC offset: {text}");
    let t = DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("ISO-8601 timestamp {text}: {e}"))
        .with_timezone(&Utc);
    let age = Utc::now() - t;
    assert!(
        age.num_seconds().abs() < 60,
        "timestamp {text} is not recent"
    );
    t
}

async fn list_as(app: &TestApp, query: &str, h: &HeaderMap) -> Resp {
    let r = app.with_headers(h).list_templates(query).await;
    assert_eq!(r.status, 200, "list{query}: {}", r.text);
    r
}

fn items(r: &Resp) -> &Vec<Value> {
    r.body["clustertemplates"]
        .as_array()
        .expect("clustertemplates is an array")
}

fn uuids(r: &Resp) -> Vec<String> {
    items(r).iter().map(uuid_of).collect()
}

fn names(r: &Resp) -> Vec<String> {
    items(r)
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

/// Follows `next` links from `first` until a page has none, collecting every page.
async fn follow(app: &TestApp, first: &str, h: &HeaderMap) -> Vec<Resp> {
    let mut pages = vec![list_as(app, first, h).await];
    for _ in 0..20 {
        let Some(next) = pages
            .last()
            .and_then(|p| p.body["next"].as_str().map(String::from))
        else {
            return pages;
        };
        let r = app.send(app.client.get(&next).headers(h.clone())).await;
        assert_eq!(r.status, 200, "{next}: {}", r.text);
        pages.push(r);
    }
    panic!("more than 20 pages: the next links never end");
}

fn next_query(r: &Resp) -> Vec<(String, String)> {
    let next = r.body["next"]
        .as_str()
        .unwrap_or_else(|| panic!("a next link: {}", r.text));
    let url = reqwest::Url::parse(next).expect("next is a URL");
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// No template and no outbox event exist: a refused request left nothing behind.
async fn assert_nothing_written(app: &TestApp) {
    let r = list_as(app, "", &app.admin()).await;
    assert_eq!(
        r.body,
        json!({"clustertemplates": []}),
        "no template was stored"
    );
    let events = app
        .store
        .pending_events(100)
        .await
        .expect("outbox readable");
    assert!(events.is_empty(), "no event was written: {events:?}");
}

/// A create of `body` by the default member is refused with exactly `detail`, writing nothing.
async fn assert_create_refused(body: Value, status: u16, detail: &str) {
    let app = spawn_app().await;
    let r = app.create_template(&body).await;
    r.assert_error(status, detail);
    assert_nothing_written(&app).await;
}

/// A patch on a fresh template is refused with exactly `detail` and changes nothing.
async fn assert_patch_refused(patch: Value, status: u16, detail: &str) {
    let app = spawn_app().await;
    let t = app
        .make_template("k8s", json!({"labels": {"a": "1"}}))
        .await;
    let r = app.patch_template(&uuid_of(&t), &patch).await;
    r.assert_error(status, detail);
    assert_eq!(
        app.get_template(&uuid_of(&t)).await.body,
        t,
        "the template is unchanged"
    );
    let events = app.store.pending_events(100).await.expect("outbox");
    assert_eq!(events.len(), 1, "only the create event: {events:?}");
}

/// Inserts a cluster row that uses `template_uuid` (there is no cluster API yet).
async fn insert_cluster(app: &TestApp, template_uuid: &str) -> String {
    let pool = sqlx::PgPool::connect(&app.db.url)
        .await
        .expect("connect to the test database");
    let uuid = uuid::Uuid::new_v4().to_string();
    sqlx::query(
        "INSERT INTO cluster (uuid, project_id, user_id, name, cluster_template_id, status, created_at, \
         registry_name) VALUES ($1, 'project-a', 'user-a', $2, $3, 'CREATE_COMPLETE', now(), $1)",
    )
    .bind(&uuid)
    .bind(format!("cluster-{}", &uuid[..8]))
    .bind(template_uuid)
    .execute(&pool)
    .await
    .expect("insert cluster");
    pool.close().await;
    uuid
}

async fn delete_clusters(app: &TestApp) {
    let pool = sqlx::PgPool::connect(&app.db.url)
        .await
        .expect("connect to the test database");
    sqlx::query("DELETE FROM cluster")
        .execute(&pool)
        .await
        .expect("delete clusters");
    pool.close().await;
}

// ---------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_is_201_with_a_location_and_every_field_of_the_representation() {
    let app = spawn_app().await;
    let r = app.create_template(&body_with(json!({}), &[])).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let uuid = uuid_of(&r.body);
    assert!(
        uuid::Uuid::try_parse(&uuid).is_ok(),
        "generated uuid: {uuid}"
    );
    assert_eq!(
        r.header("location"),
        Some(format!("{}/v1/clustertemplates/{uuid}", app.address))
    );
    assert_eq!(
        r.body["links"][0]["href"].as_str().map(String::from),
        r.header("location"),
        "Location is the self link"
    );
    assert_recent_timestamp(&r.body["created_at"]);
    assert_eq!(
        r.body,
        expected(&app, &uuid, &r.body["created_at"], json!({}))
    );
    assert_eq!(
        r.body.as_object().map(|o| o.len()),
        Some(36),
        "exactly the representation's fields"
    );

    let shown = app.get_template(&uuid).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_eq!(shown.body, r.body, "show returns what create returned");
}

#[tokio::test]
async fn every_settable_field_is_stored_and_returned() {
    let app = spawn_app().await;
    let body = body_with(
        json!({
            "flavor_id": "m1.small",
            "master_flavor_id": "m1.large",
            "dns_nameserver": "8.8.8.8,1.1.1.1",
            "keypair_id": "default",
            "external_network_id": "public",
            "fixed_network": "private",
            "fixed_subnet": "private-subnet",
            "network_driver": "calico",
            "volume_driver": "cinder",
            "apiserver_port": 6443,
            "docker_volume_size": "10",
            "docker_storage_driver": "devicemapper",
            "http_proxy": "http://proxy:3128",
            "https_proxy": "https://proxy:3129",
            "no_proxy": "localhost,10.0.0.0/8",
            "insecure_registry": "registry.local:5000",
            "registry_enabled": true,
            "tls_disabled": "yes",
            "master_lb_enabled": "on",
            "floating_ip_enabled": false,
            "server_type": "bm",
            "labels": {"kube_tag": "v1.30.1"},
            "tags": "a,b",
            "driver": "fake",
        }),
        &[],
    );
    let r = app.create_template(&body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let want = expected(
        &app,
        &uuid_of(&r.body),
        &r.body["created_at"],
        json!({
            "flavor_id": "m1.small",
            "master_flavor_id": "m1.large",
            "dns_nameserver": "8.8.8.8,1.1.1.1",
            "keypair_id": "default",
            "external_network_id": "public",
            "fixed_network": "private",
            "fixed_subnet": "private-subnet",
            "network_driver": "calico",
            "volume_driver": "cinder",
            "apiserver_port": 6443,
            "docker_volume_size": 10,
            "docker_storage_driver": "devicemapper",
            "http_proxy": "http://proxy:3128",
            "https_proxy": "https://proxy:3129",
            "no_proxy": "localhost,10.0.0.0/8",
            "insecure_registry": "registry.local:5000",
            "registry_enabled": true,
            "tls_disabled": true,
            "master_lb_enabled": true,
            "floating_ip_enabled": false,
            "server_type": "bm",
            "labels": {"kube_tag": "v1.30.1"},
            "tags": "a,b",
        }),
    );
    assert_eq!(r.body, want);
    assert_eq!(
        app.get_template(&uuid_of(&r.body)).await.body,
        want,
        "stored as returned"
    );
}

#[tokio::test]
async fn the_openstack_clis_full_create_body_with_nulls_and_defaults_is_accepted() {
    let app = spawn_app().await;
    // What `openstack coe cluster template create k8s --coe kubernetes --image fedora-coreos-40
    // --external-network public` sends: every attribute, nulls and CLI defaults included.
    let cli = json!({
        "name": "k8s",
        "coe": "kubernetes",
        "image_id": "fedora-coreos-40",
        "keypair_id": null,
        "external_network_id": "public",
        "fixed_network": null,
        "fixed_subnet": null,
        "network_driver": null,
        "volume_driver": null,
        "dns_nameserver": "8.8.8.8",
        "flavor_id": "m1.medium",
        "master_flavor_id": null,
        "docker_volume_size": null,
        "docker_storage_driver": "overlay2",
        "http_proxy": null,
        "https_proxy": null,
        "no_proxy": null,
        "labels": {},
        "tls_disabled": false,
        "public": false,
        "registry_enabled": false,
        "server_type": "vm",
        "master_lb_enabled": false,
        "insecure_registry": null,
        "driver": null,
    });
    let r = app.create_template(&cli).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.body,
        expected(
            &app,
            &uuid_of(&r.body),
            &r.body["created_at"],
            json!({
                "external_network_id": "public",
                "dns_nameserver": "8.8.8.8",
                "flavor_id": "m1.medium",
                "docker_storage_driver": "overlay2",
            }),
        ),
        "nulls mean 'use the default': network_driver flannel, driver fake"
    );
}

#[tokio::test]
async fn label_values_that_are_numbers_or_booleans_are_stored_as_strings() {
    let app = spawn_app().await;
    let t = app
        .make_template(
            "k8s",
            json!({"labels": {"s": "x", "i": 3, "t": true, "f": false, "fl": 1.5}}),
        )
        .await;
    let want = json!({"s": "x", "i": "3", "t": "True", "f": "False", "fl": "1.5"});
    assert_eq!(t["labels"], want);
    assert_eq!(
        app.get_template(&uuid_of(&t)).await.body["labels"],
        want,
        "stored as strings"
    );
}

#[tokio::test]
async fn a_template_created_without_a_name_gets_a_generated_greek_name() {
    let app = spawn_app().await;
    for body in [
        body_with(json!({}), &["name"]),
        body_with(json!({"name": null}), &[]),
    ] {
        let r = app.create_template(&body).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let name = r.body["name"].as_str().expect("a name").to_string();
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts.len(), 3, "<greek>-<n>-template: {name}");
        assert!(GREEK.contains(&parts[0]), "greek letter: {name}");
        let n: u32 = parts[1]
            .parse()
            .unwrap_or_else(|_| panic!("number: {name}"));
        assert!((1..=24).contains(&n), "1..24: {name}");
        assert_eq!(parts[2], "template", "{name}");
        assert_eq!(
            app.get_template(&uuid_of(&r.body)).await.body["name"],
            name.as_str(),
            "stored"
        );
    }
}

#[tokio::test]
async fn a_client_supplied_uuid_is_honoured_and_a_duplicate_uuid_is_409() {
    let app = spawn_app().await;
    let u = uuid::Uuid::new_v4().to_string();
    let t = app.make_template("first", json!({"uuid": u})).await;
    assert_eq!(t["uuid"], u.as_str());
    assert_eq!(app.get_template(&u).await.status, 200);

    let r = app
        .create_template(&body_with(json!({"name": "second", "uuid": u}), &[]))
        .await;
    r.assert_error(
        409,
        &format!("A ClusterTemplate with UUID {u} already exists."),
    );
    let all = list_as(&app, "", &app.admin()).await;
    assert_eq!(names(&all), vec!["first"], "the duplicate was not stored");
    let events = app.store.pending_events(100).await.expect("outbox");
    assert_eq!(
        events.len(),
        1,
        "the refused create wrote no event: {events:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Create: validation sentences, and nothing written
// ---------------------------------------------------------------------------------------------

/// A create the contract refuses, by the default member: exactly Magnum's status and sentence,
/// and nothing written.
#[rstest]
#[case::a_client_uuid_that_is_not_a_uuid_is_refused(
    body_with(json!({"uuid": "not-a-uuid"}), &[]),
    400,
    "Invalid input for field/attribute uuid. Value: 'not-a-uuid'. Expected a uuid."
)]
#[case::a_missing_image_id_is_a_mandatory_field_error(
    body_with(json!({}), &["image_id"]),
    400,
    "Invalid input for field/attribute image_id. Value: 'None'. Mandatory field missing."
)]
#[case::a_null_image_id_is_a_mandatory_field_error(
    body_with(json!({"image_id": null}), &[]),
    400,
    "Invalid input for field/attribute image_id. Value: 'None'. Mandatory field missing."
)]
#[case::a_missing_coe_is_a_mandatory_field_error(
    body_with(json!({}), &["coe"]),
    400,
    "Invalid input for field/attribute coe. Value: 'None'. Mandatory field missing."
)]
#[case::swarm_is_not_a_coe(
    body_with(json!({"coe": "swarm"}), &[]),
    400,
    "Invalid input for field/attribute coe. Value: 'swarm'. Value should be one of: kubernetes."
)]
#[case::a_server_type_other_than_vm_or_bm_is_refused(
    body_with(json!({"server_type": "xx"}), &[]),
    400,
    "Invalid input for field/attribute server_type. Value: 'xx'. Value should be one of: vm, bm."
)]
#[case::a_network_driver_outside_the_default_allowed_list_is_refused(
    body_with(json!({"network_driver": "cilium"}), &[]),
    400,
    "Network driver type cilium is not supported, expected: flannel, calico."
)]
#[case::a_volume_driver_other_than_cinder_is_refused(
    body_with(json!({"volume_driver": "rexray"}), &[]),
    400,
    "Volume driver type rexray is not supported, expected: cinder."
)]
#[case::devicemapper_with_a_two_gigabyte_volume_is_refused(
    body_with(
        json!({"docker_storage_driver": "devicemapper", "docker_volume_size": 2}),
        &[],
    ),
    400,
    "Docker volume size must be at least 3 GB when docker_storage_driver is devicemapper."
)]
#[case::devicemapper_without_a_volume_size_is_refused(
    body_with(json!({"docker_storage_driver": "devicemapper"}), &[]),
    400,
    "Docker volume size must be at least 3 GB when docker_storage_driver is devicemapper."
)]
#[case::an_apiserver_port_below_1024_is_refused(
    body_with(json!({"apiserver_port": 80}), &[]),
    400,
    "Invalid input for field/attribute apiserver_port. Value: '80'. Value should be greater or equal to 1024."
)]
#[case::an_apiserver_port_above_65535_is_refused(
    body_with(json!({"apiserver_port": 65536}), &[]),
    400,
    "Invalid input for field/attribute apiserver_port. Value: '65536'. Value should be less or equal to 65535."
)]
#[case::a_docker_volume_size_of_zero_is_refused(
    body_with(json!({"docker_volume_size": 0}), &[]),
    400,
    "Invalid input for field/attribute docker_volume_size. Value: '0'. Value should be greater or equal to 1."
)]
#[case::a_dns_nameserver_that_is_not_an_ip_address_is_refused(
    body_with(json!({"dns_nameserver": "not-an-ip"}), &[]),
    400,
    "Expected a single dns address or comma separated dns list, but received not-an-ip."
)]
#[case::a_boolean_field_given_perhaps_is_refused(
    body_with(json!({"public": "perhaps"}), &[]),
    400,
    "Invalid input for field/attribute public. Value: 'perhaps'. Value should be a boolean."
)]
#[case::a_string_field_given_a_number_is_refused(
    body_with(json!({"name": 5}), &[]),
    400,
    "Invalid input for field/attribute name. Value: '5'. Value should be string."
)]
#[case::an_unknown_attribute_is_refused(
    body_with(json!({"bogus": 1}), &[]),
    400,
    "Unknown attribute for argument cluster_template: bogus"
)]
#[case::a_read_only_project_id_is_refused(
    body_with(json!({"project_id": "project-z"}), &[]),
    400,
    "Invalid input for field/attribute project_id. Value: 'project-z'. Cannot set read only field."
)]
#[case::an_unknown_driver_is_not_supported(
    body_with(json!({"driver": "heat"}), &[]),
    400,
    "Cluster driver (heat) not supported."
)]
#[case::a_name_longer_than_255_characters_is_refused(
    body_with(json!({"name": "n".repeat(256)}), &[]),
    400,
    format!(
        "Invalid input for field/attribute name. Value: '{}'. Value should have a maximum character requirement of 255.",
        "n".repeat(256)
    )
)]
#[case::an_empty_name_is_refused(
    body_with(json!({"name": ""}), &[]),
    400,
    "Invalid input for field/attribute name. Value: ''. Value should have a minimum character requirement of 1."
)]
#[case::a_member_cannot_create_a_public_template(
    body_with(json!({"public": true}), &[]),
    403,
    PUBLISH_DENIED.into()
)]
#[case::a_member_cannot_create_a_hidden_template(
    body_with(json!({"hidden": "true"}), &[]),
    403,
    PUBLISH_DENIED.into()
)]
#[tokio::test]
async fn a_refused_create_answers_magnums_sentence_and_changes_nothing(
    #[case] body: Value,
    #[case] status: u16,
    #[case] detail: String,
) {
    assert_create_refused(body, status, &detail).await;
}

#[tokio::test]
async fn a_name_of_exactly_255_characters_is_accepted() {
    let app = spawn_app().await;
    let name = "n".repeat(255);
    let t = app.make_template(&name, json!({})).await;
    assert_eq!(t["name"], name.as_str());
}

#[tokio::test]
async fn a_nested_label_value_is_refused() {
    let app = spawn_app().await;
    let r = app
        .create_template(&body_with(json!({"labels": {"bad": {"n": 1}}}), &[]))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let detail = r.error()["detail"].as_str().expect("detail").to_string();
    assert!(
        detail.starts_with("Invalid input for field/attribute labels. Value: '"),
        "{detail}"
    );
    assert!(
        detail.ends_with("The value of label bad should be a string, number or boolean."),
        "{detail}"
    );
    assert_nothing_written(&app).await;
}

#[tokio::test]
async fn validation_comes_before_the_policy_check() {
    let app = spawn_app().await;
    let reader = app.as_identity("project-a", "user-r", "reader");
    let r = app
        .with_headers(&reader)
        .create_template(&body_with(json!({"server_type": "xx"}), &[]))
        .await;
    r.assert_error(400, "Invalid input for field/attribute server_type. Value: 'xx'. Value should be one of: vm, bm.");
    let r = app
        .with_headers(&reader)
        .create_template(&body_with(json!({}), &[]))
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow clustertemplate:create to be performed.",
    );
    assert_nothing_written(&app).await;
}

// ---------------------------------------------------------------------------------------------
// Publishing (public / hidden)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_admin_can_create_public_and_hidden_templates() {
    let app = spawn_app().await;
    let r = app
        .with_headers(&app.admin())
        .create_template(&body_with(json!({"public": true, "hidden": true}), &[]))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.body,
        expected(
            &app,
            &uuid_of(&r.body),
            &r.body["created_at"],
            json!({"public": true, "hidden": true, "project_id": "admin-project", "user_id": "admin-user"}),
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Visibility across projects
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn another_projects_private_template_is_invisible_to_it() {
    let app = spawn_app().await;
    let t = app.make_template("private-a", json!({})).await;
    let u = uuid_of(&t);
    let b = project_b(&app);

    app.with_headers(&b)
        .get_template(&u)
        .await
        .assert_error(404, &not_found(&u));
    app.with_headers(&b)
        .get_template("private-a")
        .await
        .assert_error(404, &not_found("private-a"));
    assert_eq!(
        list_as(&app, "", &b).await.body,
        json!({"clustertemplates": []})
    );
    assert_eq!(
        app.with_headers(&b).list_templates_detail("").await.body,
        json!({"clustertemplates": []})
    );
    app.with_headers(&b)
        .patch_template(
            &u,
            &json!([{"op": "replace", "path": "/name", "value": "stolen"}]),
        )
        .await
        .assert_error(404, &not_found(&u));
    app.with_headers(&b)
        .delete_template(&u)
        .await
        .assert_error(404, &not_found(&u));
    app.with_headers(&b)
        .delete_template("private-a")
        .await
        .assert_error(404, &not_found("private-a"));
    let r = app
        .with_headers(&b)
        .list_templates(&format!("?marker={u}"))
        .await;
    r.assert_error(404, &not_found(&u));

    assert_eq!(
        app.get_template(&u).await.body,
        t,
        "the owner still sees it unchanged"
    );
}

#[tokio::test]
async fn a_public_template_is_visible_to_every_project_but_only_its_owner_may_change_it() {
    let app = spawn_app().await;
    let t = app
        .make_template_as("shared", json!({"public": true}), &app.admin())
        .await;
    let u = uuid_of(&t);
    let b = project_b(&app);

    assert_eq!(
        list_as(&app, "", &b).await.body,
        json!({"clustertemplates": [t]})
    );
    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": [t]})
    );
    assert_eq!(app.with_headers(&b).get_template(&u).await.body, t);
    assert_eq!(app.with_headers(&b).get_template("shared").await.body, t);

    app.with_headers(&b)
        .patch_template(
            &u,
            &json!([{"op": "replace", "path": "/name", "value": "mine"}]),
        )
        .await
        .assert_error(
            403,
            "Policy doesn't allow clustertemplate:update to be performed.",
        );
    app.with_headers(&b).delete_template(&u).await.assert_error(
        403,
        "Policy doesn't allow clustertemplate:delete to be performed.",
    );
    assert_eq!(
        app.with_headers(&app.admin()).get_template(&u).await.body,
        t,
        "unchanged"
    );
}

#[tokio::test]
async fn a_public_hidden_template_is_invisible_to_other_projects_but_visible_to_admin() {
    let app = spawn_app().await;
    let t = app
        .make_template_as(
            "ghost",
            json!({"public": true, "hidden": true}),
            &app.admin(),
        )
        .await;
    let u = uuid_of(&t);

    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": []})
    );
    app.get_template(&u).await.assert_error(404, &not_found(&u));
    app.get_template("ghost")
        .await
        .assert_error(404, &not_found("ghost"));

    assert_eq!(
        app.with_headers(&app.admin()).get_template(&u).await.body,
        t
    );
    assert_eq!(
        list_as(&app, "", &app.admin()).await.body,
        json!({"clustertemplates": [t]})
    );
}

#[tokio::test]
async fn a_projects_own_hidden_template_stays_visible_to_its_members() {
    let app = spawn_app().await;
    let t = app
        .make_template_as("hidden-own", json!({"hidden": true}), &app.admin())
        .await;
    let member = app.as_identity("admin-project", "user-m", "member,reader");
    assert_eq!(
        list_as(&app, "", &member).await.body,
        json!({"clustertemplates": [t]})
    );
    assert_eq!(
        app.with_headers(&member)
            .get_template(&uuid_of(&t))
            .await
            .body,
        t
    );
    app.get_template(&uuid_of(&t))
        .await
        .assert_error(404, &not_found(&uuid_of(&t)));
}

#[tokio::test]
async fn an_admin_lists_and_shows_the_templates_of_all_projects() {
    let app = spawn_app().await;
    let a = app.make_template("of-a", json!({})).await;
    let b = app
        .make_template_as("of-b", json!({}), &project_b(&app))
        .await;
    assert_eq!(b["project_id"], "project-b");
    assert_eq!(b["user_id"], "user-b");

    assert_eq!(
        list_as(&app, "", &app.admin()).await.body,
        json!({"clustertemplates": [a, b]})
    );
    assert_eq!(
        app.with_headers(&app.admin())
            .get_template(&uuid_of(&b))
            .await
            .body,
        b
    );
    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": [a]})
    );
    assert_eq!(
        list_as(&app, "", &project_b(&app)).await.body,
        json!({"clustertemplates": [b]})
    );
}

#[tokio::test]
async fn a_reader_can_read_but_not_change_templates() {
    let app = spawn_app().await;
    let t = app.make_template("k8s", json!({})).await;
    let u = uuid_of(&t);
    let reader = app.as_identity("project-a", "user-r", "reader");
    assert_eq!(
        list_as(&app, "", &reader).await.body,
        json!({"clustertemplates": [t]})
    );
    assert_eq!(app.with_headers(&reader).get_template(&u).await.body, t);
    app.with_headers(&reader)
        .patch_template(
            &u,
            &json!([{"op": "replace", "path": "/name", "value": "x"}]),
        )
        .await
        .assert_error(
            403,
            "Policy doesn't allow clustertemplate:update to be performed.",
        );
    app.with_headers(&reader)
        .delete_template(&u)
        .await
        .assert_error(
            403,
            "Policy doesn't allow clustertemplate:delete to be performed.",
        );
    assert_eq!(app.get_template(&u).await.body, t);
}

// ---------------------------------------------------------------------------------------------
// Lookup by name
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_template_can_be_shown_by_name() {
    let app = spawn_app().await;
    let t = app.make_template("by-name", json!({})).await;
    let r = app.get_template("by-name").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, t);
    app.get_template("no-such-template")
        .await
        .assert_error(404, &not_found("no-such-template"));
    let missing = uuid::Uuid::new_v4().to_string();
    app.get_template(&missing)
        .await
        .assert_error(404, &not_found(&missing));
}

#[tokio::test]
async fn two_templates_with_the_same_name_make_the_name_ambiguous() {
    let app = spawn_app().await;
    let first = app.make_template("dup", json!({})).await;
    let second = app.make_template("dup", json!({})).await;
    let ambiguous =
        "Multiple cluster templates exist with same name. Please use the cluster template uuid instead.";
    app.get_template("dup").await.assert_error(409, ambiguous);
    app.patch_template(
        "dup",
        &json!([{"op": "replace", "path": "/name", "value": "x"}]),
    )
    .await
    .assert_error(409, ambiguous);
    app.delete_template("dup")
        .await
        .assert_error(409, ambiguous);
    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": [first, second]})
    );
    assert_eq!(
        app.get_template(&uuid_of(&first)).await.body,
        first,
        "the uuid still works"
    );
}

#[tokio::test]
async fn a_public_template_of_another_project_makes_a_shared_name_ambiguous() {
    let app = spawn_app().await;
    app.make_template("common", json!({})).await;
    let public = app
        .make_template_as("common", json!({"public": true}), &app.admin())
        .await;
    app.get_template("common").await.assert_error(
        409,
        "Multiple cluster templates exist with same name. Please use the cluster template uuid instead.",
    );
    assert_eq!(
        app.with_headers(&project_b(&app))
            .get_template("common")
            .await
            .body,
        public,
        "project-b sees only one"
    );
}

// ---------------------------------------------------------------------------------------------
// List and pagination
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_empty_list_has_no_next_link() {
    let app = spawn_app().await;
    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": []})
    );
    assert_eq!(
        list_as(&app, "?limit=1", &app.headers).await.body,
        json!({"clustertemplates": []})
    );
}

#[tokio::test]
async fn limited_pages_link_to_the_next_page_and_yield_every_template_once_in_id_order() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for name in ["c", "a", "e", "b", "d"] {
        created.push(uuid_of(&app.make_template(name, json!({})).await));
    }

    let first = list_as(&app, "?limit=2", &app.headers).await;
    assert_eq!(uuids(&first), created[..2].to_vec());
    assert_eq!(
        first.body["next"],
        format!(
            "{}/v1/clustertemplates?sort_key=id&sort_dir=asc&limit=2&marker={}",
            app.address, created[1]
        ),
    );
    let q = next_query(&first);
    assert_eq!(
        q,
        vec![
            ("sort_key".to_string(), "id".to_string()),
            ("sort_dir".to_string(), "asc".to_string()),
            ("limit".to_string(), "2".to_string()),
            ("marker".to_string(), created[1].clone()),
        ]
    );

    let pages = follow(&app, "?limit=2", &app.headers).await;
    let sizes: Vec<usize> = pages.iter().map(|p| items(p).len()).collect();
    assert_eq!(
        sizes,
        vec![2, 2, 1],
        "the last page is short and has no next link"
    );
    assert!(pages[2].body.get("next").is_none(), "{}", pages[2].text);
    let seen: Vec<String> = pages.iter().flat_map(uuids).collect();
    assert_eq!(seen, created, "every template exactly once, in id order");
}

#[tokio::test]
async fn a_full_last_page_links_to_an_empty_page() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for name in ["a", "b"] {
        created.push(uuid_of(&app.make_template(name, json!({})).await));
    }
    let pages = follow(&app, "?limit=2", &app.headers).await;
    assert_eq!(pages.len(), 2);
    assert_eq!(uuids(&pages[0]), created);
    assert_eq!(pages[1].body, json!({"clustertemplates": []}));
    let all = list_as(&app, "", &app.headers).await;
    assert!(
        all.body.get("next").is_none(),
        "no limit, fewer rows than max_limit: {}",
        all.text
    );
}

#[tokio::test]
async fn sorting_by_name_orders_by_name_in_either_direction() {
    let app = spawn_app().await;
    for name in ["c", "a", "e", "b", "d"] {
        app.make_template(name, json!({})).await;
    }
    let desc = list_as(&app, "?sort_key=name&sort_dir=desc", &app.headers).await;
    assert_eq!(names(&desc), vec!["e", "d", "c", "b", "a"]);
    let asc = list_as(&app, "?sort_key=name", &app.headers).await;
    assert_eq!(names(&asc), vec!["a", "b", "c", "d", "e"]);

    let pages = follow(&app, "?sort_key=name&sort_dir=desc&limit=2", &app.headers).await;
    let seen: Vec<String> = pages.iter().flat_map(names).collect();
    assert_eq!(seen, vec!["e", "d", "c", "b", "a"], "pages keep the order");
    let q = next_query(&pages[0]);
    assert_eq!(q[0], ("sort_key".to_string(), "name".to_string()));
    assert_eq!(q[1], ("sort_dir".to_string(), "desc".to_string()));
}

/// Creates six templates whose `flavor_id` is partly null, then pages through them one by one
/// in both directions; returns (ascending names, descending names).
async fn nullable_sort_orders(app: &TestApp) -> (Vec<String>, Vec<String>) {
    let flavors = [Some("m2"), None, Some("m1"), None, Some("m2"), Some("m3")];
    for (i, f) in flavors.iter().enumerate() {
        app.make_template(&format!("t{i}"), json!({"flavor_id": f}))
            .await;
    }
    let mut orders = Vec::new();
    for dir in ["asc", "desc"] {
        let pages = follow(
            app,
            &format!("?sort_key=flavor_id&sort_dir={dir}&limit=1"),
            &app.headers,
        )
        .await;
        let paged: Vec<String> = pages.iter().flat_map(names).collect();
        let whole = names(
            &list_as(
                app,
                &format!("?sort_key=flavor_id&sort_dir={dir}"),
                &app.headers,
            )
            .await,
        );
        assert_eq!(paged, whole, "{dir}: paging agrees with the unpaged list");
        orders.push(paged);
    }
    let desc = orders.pop().expect("desc");
    let asc = orders.pop().expect("asc");
    (asc, desc)
}

#[tokio::test]
async fn paging_over_a_nullable_sort_key_visits_every_row_once_in_the_same_order_on_both_backends()
{
    let pg = spawn_app().await;
    let sqlite = spawn_with(Backend::Sqlite, |_| {}).await;
    let (pg_asc, pg_desc) = nullable_sort_orders(&pg).await;
    let (sq_asc, sq_desc) = nullable_sort_orders(&sqlite).await;

    // NULLs sort last ascending and first descending; the id breaks ties.
    let asc = vec!["t2", "t0", "t4", "t5", "t1", "t3"];
    let desc = vec!["t3", "t1", "t5", "t4", "t0", "t2"];
    assert_eq!(pg_asc, asc, "PostgreSQL ascending");
    assert_eq!(pg_desc, desc, "PostgreSQL descending");
    assert_eq!(sq_asc, asc, "SQLite ascending");
    assert_eq!(sq_desc, desc, "SQLite descending");
}

/// Orders two values of one column as the store does: NULLs last ascending, timestamps by time.
fn column_order(key: &str, a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .unwrap_or_default()
            .total_cmp(&y.as_f64().unwrap_or_default()),
        (Value::String(x), Value::String(y)) if key.ends_with("_at") => {
            let t = |s: &str| DateTime::parse_from_rfc3339(s).expect("timestamp");
            t(x).cmp(&t(y))
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => panic!("{key}: incomparable {a} and {b}"),
    }
}

/// Six templates from three projects with ties, NULLs and updates in every kind of column;
/// every sortable column, both directions, pages of 1 and 2: every row exactly once, in the
/// column's order, the same as the unpaged list.
async fn assert_every_sort_key_pages_completely(app: &TestApp) -> Vec<Vec<String>> {
    let admin = app.admin();
    let b = project_b(app);
    let mut all = [
        app.make_template(
            "t0",
            json!({"flavor_id": "m1", "apiserver_port": 6443, "docker_volume_size": 5, "tags": "x",
                   "dns_nameserver": "8.8.8.8", "driver": "fake"}),
        )
        .await,
        app.make_template("t1", json!({})).await,
        app.make_template_as(
            "t2",
            json!({"flavor_id": "m1", "apiserver_port": 6443, "docker_volume_size": 5, "tags": "x",
                   "network_driver": "calico", "tls_disabled": true}),
            &b,
        )
        .await,
        app.make_template_as(
            "t3",
            json!({"flavor_id": "m0", "apiserver_port": 1024, "docker_volume_size": 9, "public": true,
                   "master_lb_enabled": true, "server_type": "bm", "volume_driver": "cinder"}),
            &admin,
        )
        .await,
        app.make_template_as("t4", json!({"floating_ip_enabled": false, "registry_enabled": true}), &b).await,
        app.make_template_as("t5", json!({"hidden": true, "keypair_id": "kp"}), &admin).await,
    ];
    for i in [4, 0] {
        let r = app
            .with_headers(&admin)
            .patch_template(
                &uuid_of(&all[i]),
                &json!([{"op": "replace", "path": "/name", "value": format!("u{i}")}]),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        all[i] = r.body;
    }
    let mut every: Vec<String> = all.iter().map(uuid_of).collect();
    every.sort();
    let mut orders = Vec::new();
    for (key, _) in fleetyard::store::TEMPLATE_SORT_KEYS {
        for dir in ["asc", "desc"] {
            let whole = list_as(app, &format!("?sort_key={key}&sort_dir={dir}"), &admin).await;
            let values: Vec<&Value> = items(&whole).iter().map(|t| &t[*key]).collect();
            if *key != "id" {
                for w in values.windows(2) {
                    let ord = column_order(key, w[0], w[1]);
                    let ord = if dir == "asc" { ord } else { ord.reverse() };
                    assert_ne!(ord, std::cmp::Ordering::Greater, "{key} {dir}: {values:?}");
                }
            }
            let mut listed = uuids(&whole);
            listed.sort();
            assert_eq!(
                listed, every,
                "{key} {dir}: the unpaged list has every row once"
            );
            for limit in [1, 2] {
                let pages = follow(
                    app,
                    &format!("?sort_key={key}&sort_dir={dir}&limit={limit}"),
                    &admin,
                )
                .await;
                let paged: Vec<String> = pages.iter().flat_map(uuids).collect();
                assert_eq!(
                    paged,
                    uuids(&whole),
                    "{key} {dir} limit={limit}: pages agree with the list"
                );
            }
            orders.push(names(&whole));
        }
    }
    orders
}

#[tokio::test]
async fn every_sortable_column_pages_through_every_row_once_in_the_same_order_on_both_backends() {
    let pg = spawn_app().await;
    let sqlite = spawn_with(Backend::Sqlite, |_| {}).await;
    let pg_orders = assert_every_sort_key_pages_completely(&pg).await;
    let sqlite_orders = assert_every_sort_key_pages_completely(&sqlite).await;
    for (i, (key, _)) in fleetyard::store::TEMPLATE_SORT_KEYS.iter().enumerate() {
        for (j, dir) in ["asc", "desc"].iter().enumerate() {
            let at = 2 * i + j;
            if ["uuid", "created_at", "updated_at"].contains(key) {
                continue; // random or clock-dependent: differs between the two runs
            }
            assert_eq!(pg_orders[at], sqlite_orders[at], "{key} {dir}");
        }
    }
}

#[tokio::test]
async fn an_unknown_marker_is_404() {
    let app = spawn_app().await;
    app.make_template("k8s", json!({})).await;
    let marker = uuid::Uuid::new_v4().to_string();
    app.list_templates(&format!("?marker={marker}"))
        .await
        .assert_error(404, &not_found(&marker));
    app.list_templates_detail(&format!("?limit=1&marker={marker}"))
        .await
        .assert_error(404, &not_found(&marker));
}

#[tokio::test]
async fn invalid_page_parameters_are_refused_with_magnums_sentences() {
    let app = spawn_app().await;
    app.list_templates("?limit=0")
        .await
        .assert_error(400, "Limit must be positive");
    app.list_templates("?sort_key=node_count")
        .await
        .assert_error(
            400,
            "The sort_key value \"node_count\" is an invalid field for sorting",
        );
    app.list_templates("?sort_dir=up").await.assert_error(
        400,
        "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
    );
    app.list_templates("?name=k8s")
        .await
        .assert_error(400, "Unknown argument: \"name\"");
    let r = app.list_templates("?marker=not-a-uuid").await;
    assert_eq!(r.status, 400, "{}", r.text);
}

#[tokio::test]
async fn a_limit_above_the_maximum_is_clamped() {
    let app = spawn_with(Backend::Postgres, |s| s.api.max_limit = 2).await;
    for name in ["a", "b", "c"] {
        app.make_template(name, json!({})).await;
    }
    let r = list_as(&app, "?limit=50", &app.headers).await;
    assert_eq!(names(&r), vec!["a", "b"]);
    assert_eq!(next_query(&r)[2], ("limit".to_string(), "2".to_string()));
    let r = list_as(&app, "", &app.headers).await;
    assert_eq!(names(&r), vec!["a", "b"], "the default limit is max_limit");
}

#[tokio::test]
async fn the_detail_collection_returns_the_same_templates_and_links_to_itself() {
    let app = spawn_app().await;
    for name in ["a", "b", "c"] {
        app.make_template(name, json!({"labels": {"k": "v"}})).await;
    }
    let list = list_as(&app, "", &app.headers).await;
    let detail = list_as(&app, "/detail", &app.headers).await;
    assert_eq!(detail.body, list.body);
    assert_eq!(items(&detail).len(), 3);

    let page = list_as(&app, "/detail?limit=2", &app.headers).await;
    let next = page.body["next"].as_str().expect("next").to_string();
    assert!(
        next.starts_with(&format!(
            "{}/v1/clustertemplates/detail?sort_key=id&sort_dir=asc&limit=2&marker=",
            app.address
        )),
        "{next}"
    );
    let pages = follow(&app, "/detail?limit=2", &app.headers).await;
    let seen: Vec<String> = pages.iter().flat_map(uuids).collect();
    assert_eq!(seen, uuids(&list));
}

#[tokio::test]
async fn the_openstack_clis_list_call_with_a_trailing_slash_works() {
    let app = spawn_app().await;
    for name in ["a", "b", "c", "d", "e", "f"] {
        app.make_template(name, json!({})).await;
    }
    let r = app
        .get("/v1/clustertemplates/?limit=5&sort_key=name&sort_dir=desc")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(names(&r), vec!["f", "e", "d", "c", "b"]);
    let q = next_query(&r);
    let marker = uuid_of(&items(&r)[4]);
    assert_eq!(
        r.body["next"],
        format!(
            "{}/v1/clustertemplates?sort_key=name&sort_dir=desc&limit=5&marker={marker}",
            app.address
        )
    );
    assert_eq!(q.len(), 4);
    let pages = follow(&app, "/?limit=5&sort_key=name&sort_dir=desc", &app.headers).await;
    let seen: Vec<String> = pages.iter().flat_map(names).collect();
    assert_eq!(seen, vec!["f", "e", "d", "c", "b", "a"]);
}

// ---------------------------------------------------------------------------------------------
// PATCH
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn replacing_the_name_returns_the_full_updated_template() {
    let app = spawn_app().await;
    let t = app.make_template("old", json!({})).await;
    let u = uuid_of(&t);
    let r = app
        .patch_template(
            &u,
            &json!([{"op": "replace", "path": "/name", "value": "new"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let updated_at = assert_recent_timestamp(&r.body["updated_at"]);
    let created_at =
        DateTime::parse_from_rfc3339(t["created_at"].as_str().expect("created_at")).expect("ts");
    assert!(updated_at >= created_at, "updated after created");
    let mut want = t.clone();
    want["name"] = json!("new");
    want["updated_at"] = r.body["updated_at"].clone();
    assert_eq!(r.body, want, "only name and updated_at changed");
    assert_eq!(app.get_template(&u).await.body, want, "stored");
    assert_eq!(
        app.get_template("new").await.body,
        want,
        "found by its new name"
    );
    app.get_template("old")
        .await
        .assert_error(404, &not_found("old"));
}

#[tokio::test]
async fn a_template_can_be_patched_by_name() {
    let app = spawn_app().await;
    app.make_template("by-name", json!({})).await;
    let r = app
        .patch_template(
            "by-name",
            &json!([{"op": "replace", "path": "/docker_volume_size", "value": 7}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["docker_volume_size"], 7);
}

#[tokio::test]
async fn labels_can_be_added_and_removed_one_key_at_a_time() {
    let app = spawn_app().await;
    let t = app
        .make_template("k8s", json!({"labels": {"keep": "1", "drop": "2"}}))
        .await;
    let u = uuid_of(&t);
    let r = app
        .patch_template(
            &u,
            &json!([{"op": "add", "path": "/labels/k", "value": "v"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["labels"],
        json!({"keep": "1", "drop": "2", "k": "v"})
    );
    let r = app
        .patch_template(&u, &json!([{"op": "remove", "path": "/labels/drop"}]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["labels"], json!({"keep": "1", "k": "v"}));
    assert_eq!(
        app.get_template(&u).await.body["labels"],
        json!({"keep": "1", "k": "v"})
    );
}

#[tokio::test]
async fn removing_a_label_that_does_not_exist_is_a_patch_error() {
    let app = spawn_app().await;
    let t = app
        .make_template("k8s", json!({"labels": {"a": "1"}}))
        .await;
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([{"op": "remove", "path": "/labels/zzz"}]),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let detail = r.error()["detail"].as_str().expect("detail");
    assert!(detail.starts_with("Couldn't apply patch"), "{detail}");
    assert_eq!(app.get_template(&uuid_of(&t)).await.body, t);
}

#[tokio::test]
async fn labels_can_be_replaced_with_a_python_literal_string() {
    let app = spawn_app().await;
    let t = app
        .make_template("k8s", json!({"labels": {"old": "x"}}))
        .await;
    let u = uuid_of(&t);
    let r = app
        .patch_template(
            &u,
            &json!([{"op": "replace", "path": "/labels", "value": "{'a': 'b', 'n': 1}"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["labels"], json!({"a": "b", "n": "1"}));
    assert_eq!(
        app.get_template(&u).await.body["labels"],
        json!({"a": "b", "n": "1"})
    );
}

#[tokio::test]
async fn a_null_attribute_can_be_added() {
    let app = spawn_app().await;
    let t = app.make_template("k8s", json!({})).await;
    assert_eq!(t["flavor_id"], Value::Null);
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([{"op": "add", "path": "/flavor_id", "value": "m1.small"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["flavor_id"], "m1.small");
}

#[tokio::test]
async fn removing_an_optional_attribute_resets_it_to_its_default() {
    let app = spawn_app().await;
    let t = app
        .make_template(
            "k8s",
            json!({"flavor_id": "m1.small", "floating_ip_enabled": false, "labels": {"a": "b"}, "tags": "x"}),
        )
        .await;
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([
                {"op": "remove", "path": "/flavor_id"},
                {"op": "remove", "path": "/floating_ip_enabled"},
                {"op": "remove", "path": "/labels"},
                {"op": "remove", "path": "/tags"},
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut want = t.clone();
    want["flavor_id"] = Value::Null;
    want["floating_ip_enabled"] = json!(true);
    want["labels"] = json!({});
    want["tags"] = Value::Null;
    want["updated_at"] = r.body["updated_at"].clone();
    assert_eq!(r.body, want);
}

#[tokio::test]
async fn several_operations_apply_together() {
    let app = spawn_app().await;
    let t = app.make_template("k8s", json!({})).await;
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([
                {"op": "replace", "path": "/name", "value": "renamed"},
                {"op": "replace", "path": "/docker_volume_size", "value": 20},
                {"op": "replace", "path": "/master_lb_enabled", "value": true},
                {"op": "add", "path": "/labels/x", "value": "y"},
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut want = t.clone();
    want["name"] = json!("renamed");
    want["docker_volume_size"] = json!(20);
    want["master_lb_enabled"] = json!(true);
    want["labels"] = json!({"x": "y"});
    want["updated_at"] = r.body["updated_at"].clone();
    assert_eq!(r.body, want);
}

/// A patch the contract refuses, on a fresh template: exactly Magnum's status and sentence, and
/// the template unchanged.
#[rstest]
#[case::the_uuid_is_an_internal_attribute(
    json!([{"op": "replace", "path": "/uuid", "value": uuid::Uuid::new_v4().to_string()}]),
    400,
    "'/uuid' is an internal attribute and can not be updated"
)]
#[case::the_project_id_is_an_internal_attribute(
    json!([{"op": "replace", "path": "/project_id", "value": "project-b"}]),
    400,
    "'/project_id' is an internal attribute and can not be updated"
)]
#[case::the_coe_cannot_be_removed(
    json!([{"op": "remove", "path": "/coe"}]),
    400,
    "'/coe' is a mandatory attribute and can not be removed"
)]
#[case::the_image_id_cannot_be_removed(
    json!([{"op": "remove", "path": "/image_id"}]),
    400,
    "'/image_id' is a mandatory attribute and can not be removed"
)]
#[case::the_network_driver_cannot_be_removed(
    json!([{"op": "remove", "path": "/network_driver"}]),
    400,
    "'/network_driver' is a mandatory attribute and can not be removed"
)]
#[case::adding_an_attribute_that_has_a_value_is_refused(
    json!([{"op": "add", "path": "/name", "value": "x"}]),
    400,
    "The attribute /name has existed, please use 'replace' operation instead."
)]
#[case::adding_a_new_root_attribute_is_refused(
    json!([{"op": "add", "path": "/bogus", "value": "x"}]),
    400,
    "Adding a new attribute /bogus to the root of the resource is not allowed."
)]
#[case::replace_without_a_value_is_refused(
    json!([{"op": "replace", "path": "/name"}]),
    400,
    "'add' and 'replace' operations needs value"
)]
#[case::a_patched_document_is_validated_like_a_create(
    json!([{"op": "replace", "path": "/server_type", "value": "xx"}]),
    400,
    "Invalid input for field/attribute server_type. Value: 'xx'. Value should be one of: vm, bm."
)]
#[case::a_patched_network_driver_must_be_allowed(
    json!([{"op": "replace", "path": "/network_driver", "value": "cilium"}]),
    400,
    "Network driver type cilium is not supported, expected: flannel, calico."
)]
#[case::a_patched_driver_must_be_installed(
    json!([{"op": "replace", "path": "/driver", "value": "heat"}]),
    400,
    "Cluster driver (heat) not supported."
)]
#[case::a_patched_apiserver_port_keeps_its_bounds(
    json!([{"op": "replace", "path": "/apiserver_port", "value": 80}]),
    400,
    "Invalid input for field/attribute apiserver_port. Value: '80'. Value should be greater or equal to 1024."
)]
#[case::one_invalid_operation_rejects_the_whole_patch(
    json!([
            {"op": "replace", "path": "/name", "value": "renamed"},
            {"op": "replace", "path": "/dns_nameserver", "value": "not-an-ip"},
            ]),
    400,
    "Expected a single dns address or comma separated dns list, but received not-an-ip."
)]
#[case::a_member_cannot_publish_a_template_by_patch(
    json!([{"op": "replace", "path": "/public", "value": true}]),
    403,
    PUBLISH_DENIED.into()
)]
#[case::a_member_cannot_hide_a_template_by_patch(
    json!([{"op": "replace", "path": "/hidden", "value": true}]),
    403,
    PUBLISH_DENIED.into()
)]
#[case::a_label_key_with_a_dot_cannot_be_addressed(
    json!([{"op": "add", "path": "/labels/a.b", "value": "x"}]),
    400,
    "Invalid input for field/attribute path. Value: '/labels/a.b'. Value should match the pattern ^(/[\\w-]+)+$."
)]
#[case::an_operation_other_than_add_replace_or_remove_is_refused(
    json!([{"op": "move", "from": "/name", "path": "/tags"}]),
    400,
    "Invalid input for field/attribute op. Value: 'move'. Value should be one of: add, replace, remove."
)]
#[tokio::test]
async fn a_refused_patch_answers_magnums_sentence_and_changes_nothing(
    #[case] patch: Value,
    #[case] status: u16,
    #[case] detail: String,
) {
    assert_patch_refused(patch, status, &detail).await;
}

#[tokio::test]
async fn replacing_a_mandatory_attribute_with_null_is_a_removal_and_refused() {
    for (path, detail) in [
        (
            "/name",
            "'/name' is a mandatory attribute and can not be removed",
        ),
        (
            "/network_driver",
            "'/network_driver' is a mandatory attribute and can not be removed",
        ),
        (
            "/image_id",
            "'/image_id' is a mandatory attribute and can not be removed",
        ),
    ] {
        assert_patch_refused(
            json!([{"op": "replace", "path": path, "value": null}]),
            400,
            detail,
        )
        .await;
    }
}

#[tokio::test]
async fn replacing_an_optional_attribute_with_null_clears_it() {
    let app = spawn_app().await;
    let t = app
        .make_template("k8s", json!({"flavor_id": "m1.small", "tags": "x"}))
        .await;
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([
                {"op": "replace", "path": "/flavor_id", "value": null},
                {"op": "replace", "path": "/tags", "value": null},
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.body["flavor_id"].clone(), r.body["tags"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(r.body["name"], "k8s");
}

#[tokio::test]
async fn an_admin_can_publish_another_projects_template() {
    let app = spawn_app().await;
    let t = app.make_template("k8s", json!({})).await;
    let u = uuid_of(&t);
    let r = app
        .with_headers(&app.admin())
        .patch_template(
            &u,
            &json!([{"op": "replace", "path": "/public", "value": true}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["public"], true);
    assert_eq!(
        r.body["project_id"], "project-a",
        "the owner does not change"
    );
    assert_eq!(
        app.with_headers(&project_b(&app))
            .get_template(&u)
            .await
            .status,
        200,
        "now visible to project-b"
    );
}

#[tokio::test]
async fn a_patch_that_changes_nothing_returns_the_same_body() {
    let app = spawn_app().await;
    let t = app
        .make_template("same", json!({"labels": {"a": "b"}}))
        .await;
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([
                {"op": "replace", "path": "/name", "value": "same"},
                {"op": "replace", "path": "/labels", "value": "{'a': 'b'}"},
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, t, "same body, updated_at still null");
    assert_eq!(app.get_template(&uuid_of(&t)).await.body, t);
    let events = app.store.pending_events(100).await.expect("outbox");
    assert_eq!(
        events.len(),
        1,
        "a no-op patch writes no update event: {events:?}"
    );
}

#[tokio::test]
async fn a_member_may_send_unchanged_public_and_hidden_flags() {
    let app = spawn_app().await;
    let t = app.make_template("k8s", json!({})).await;
    let r = app
        .patch_template(
            &uuid_of(&t),
            &json!([
                {"op": "replace", "path": "/public", "value": false},
                {"op": "replace", "path": "/hidden", "value": "False"},
                {"op": "replace", "path": "/name", "value": "renamed"},
            ]),
        )
        .await;
    assert_eq!(
        r.status, 200,
        "only a change of the flags needs the publish rule: {}",
        r.text
    );
    assert_eq!(r.body["name"], "renamed");
}

#[tokio::test]
async fn concurrent_patches_never_lose_an_update() {
    let app = spawn_app().await;
    let t = app.make_template("busy", json!({})).await;
    let path = one(&uuid_of(&t));
    let patches = (0..6).map(|i| {
        let body = json!([{"op": "add", "path": format!("/labels/k{i}"), "value": format!("{i}")}]);
        let app = &app;
        let path = path.clone();
        async move { (i, app.patch(&path, &body).await) }
    });
    let results = futures_util::future::join_all(patches).await;
    let labels = app.get(&path).await.body["labels"].clone();
    let mut applied = 0;
    for (i, r) in &results {
        match r.status {
            200 => {
                applied += 1;
                assert_eq!(
                    labels[format!("k{i}")],
                    format!("{i}").as_str(),
                    "k{i} was acknowledged, then lost: {labels}"
                );
            }
            409 => r.assert_error(409, "The resource was changed by another request; retry."),
            other => panic!("patch k{i}: unexpected {other}: {}", r.text),
        }
    }
    assert!(applied >= 1, "at least one concurrent patch wins");
    assert_eq!(
        labels.as_object().map(|o| o.len()),
        Some(applied),
        "no label was applied without a 200: {labels}"
    );
    let updates = app
        .store
        .pending_events(100)
        .await
        .expect("outbox")
        .iter()
        .filter(|e| e.event_type == "magnum.cluster_template.update")
        .count();
    assert_eq!(updates, applied, "one update event per applied patch");
}

// ---------------------------------------------------------------------------------------------
// Templates referenced by clusters
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_template_used_by_a_cluster_cannot_be_deleted() {
    let app = spawn_app().await;
    let t = app.make_template("in-use", json!({})).await;
    let u = uuid_of(&t);
    insert_cluster(&app, &u).await;
    app.delete_template(&u)
        .await
        .assert_error(400, &referenced(&u));
    app.delete_template("in-use")
        .await
        .assert_error(400, &referenced(&u));
    assert_eq!(app.get_template(&u).await.body, t, "still there");

    delete_clusters(&app).await;
    assert_eq!(
        app.delete_template(&u).await.status,
        204,
        "deletable once unused"
    );
}

#[tokio::test]
async fn a_template_used_by_a_cluster_only_accepts_magnums_change_sets() {
    let app = spawn_app().await;
    let t = app.make_template("in-use", json!({})).await;
    let u = uuid_of(&t);
    insert_cluster(&app, &u).await;
    let path = one(&u);

    app.patch(
        &path,
        &json!([{"op": "replace", "path": "/image_id", "value": "other-image"}]),
    )
    .await
    .assert_error(400, &referenced(&u));
    app.patch(
        &path,
        &json!([{"op": "add", "path": "/labels/k", "value": "v"}]),
    )
    .await
    .assert_error(400, &referenced(&u));
    assert_eq!(
        app.get(&path).await.body,
        t,
        "refused changes left it unchanged"
    );

    let r = app
        .patch(
            &path,
            &json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["name"], "renamed");
    let r = app
        .patch(
            &path,
            &json!([{"op": "replace", "path": "/tags", "value": "t1,t2"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["tags"], "t1,t2");

    app.patch(
        &path,
        &json!([
            {"op": "replace", "path": "/name", "value": "again"},
            {"op": "replace", "path": "/tags", "value": "t3"},
        ]),
    )
    .await
    .assert_error(400, &referenced(&u));
    let current = app.get(&path).await.body;
    assert_eq!(
        (current["name"].clone(), current["tags"].clone()),
        (json!("renamed"), json!("t1,t2"))
    );

    let admin = app.admin();
    let r = app
        .patch_as(
            &path,
            &json!([{"op": "replace", "path": "/hidden", "value": true}]),
            &admin,
        )
        .await;
    assert_eq!(r.status, 200, "hidden alone is allowed: {}", r.text);
    let r = app
        .patch_as(
            &path,
            &json!([{"op": "replace", "path": "/public", "value": true}]),
            &admin,
        )
        .await;
    assert_eq!(r.status, 200, "publishing alone is allowed: {}", r.text);
    app.patch_as(
        &path,
        &json!([{"op": "replace", "path": "/public", "value": false}]),
        &admin,
    )
    .await
    .assert_error(400, &referenced(&u));
    let r = app
        .patch(
            &path,
            &json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_eq!(r.status, 200, "a no-op is always allowed: {}", r.text);
}

// ---------------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn delete_is_204_with_an_empty_body_and_then_the_template_is_gone() {
    let app = spawn_app().await;
    let t = app.make_template("doomed", json!({})).await;
    let u = uuid_of(&t);
    let r = app.delete_template(&u).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(r.text, "");
    app.get_template(&u).await.assert_error(404, &not_found(&u));
    app.delete_template(&u)
        .await
        .assert_error(404, &not_found(&u));
    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": []})
    );
}

#[tokio::test]
async fn a_template_can_be_deleted_by_name() {
    let app = spawn_app().await;
    let keep = app.make_template("keep", json!({})).await;
    app.make_template("doomed", json!({})).await;
    assert_eq!(app.delete_template("doomed").await.status, 204);
    assert_eq!(
        list_as(&app, "", &app.headers).await.body,
        json!({"clustertemplates": [keep]})
    );
}

#[tokio::test]
async fn deleting_another_projects_template_is_404() {
    let app = spawn_app().await;
    let t = app
        .make_template_as("of-b", json!({}), &project_b(&app))
        .await;
    let u = uuid_of(&t);
    app.delete_template(&u)
        .await
        .assert_error(404, &not_found(&u));
    assert_eq!(
        app.with_headers(&project_b(&app))
            .get_template(&u)
            .await
            .body,
        t,
        "still there"
    );
}

#[tokio::test]
async fn an_admin_can_delete_another_projects_template() {
    let app = spawn_app().await;
    let t = app.make_template("of-a", json!({})).await;
    assert_eq!(
        app.with_headers(&app.admin())
            .delete_template(&uuid_of(&t))
            .await
            .status,
        204
    );
    app.get_template(&uuid_of(&t))
        .await
        .assert_error(404, &not_found(&uuid_of(&t)));
}

// ---------------------------------------------------------------------------------------------
// Notifications
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_update_and_delete_each_write_one_event_and_refused_requests_write_none() {
    let app = spawn_app().await;
    let t = app.make_template("noisy", json!({})).await;
    let u = uuid_of(&t);
    let path = one(&u);

    // Refused requests in between: a create, patches and a delete that all fail.
    app.create_template(&body_with(json!({"server_type": "xx"}), &[])).await.assert_error(
        400,
        "Invalid input for field/attribute server_type. Value: 'xx'. Value should be one of: vm, bm.",
    );
    app.create_template(&body_with(json!({"public": true}), &[]))
        .await
        .assert_error(403, PUBLISH_DENIED);
    app.patch(&path, &json!([{"op": "replace", "path": "/server_type", "value": "xx"}]))
        .await
        .assert_error(
            400,
            "Invalid input for field/attribute server_type. Value: 'xx'. Value should be one of: vm, bm.",
        );
    app.patch(
        &path,
        &json!([{"op": "replace", "path": "/public", "value": true}]),
    )
    .await
    .assert_error(403, PUBLISH_DENIED);
    app.patch(
        &path,
        &json!([{"op": "replace", "path": "/name", "value": "noisy"}]),
    )
    .await;
    let r = app
        .patch(
            &path,
            &json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.delete_as(&path, &project_b(&app))
        .await
        .assert_error(404, &not_found(&u));
    assert_eq!(app.delete(&path).await.status, 204);

    let events = app.store.pending_events(100).await.expect("outbox");
    assert_eq!(
        events.len(),
        3,
        "exactly create, update, delete: {events:?}"
    );
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "magnum.cluster_template.create",
            "magnum.cluster_template.update",
            "magnum.cluster_template.delete"
        ]
    );
    for (e, action) in events.iter().zip(["create", "update", "delete"]) {
        assert_eq!(e.resource_uuid, u);
        assert_eq!(e.priority, "INFO");
        assert_eq!(e.attempts, 0);
        let m = &e.message_json();
        assert_eq!(m["publisher_id"], "container-infra.test-host");
        assert_eq!(m["priority"], "INFO");
        assert_eq!(m["event_type"], e.event_type.as_str());
        assert_eq!(m["message_id"], e.message_id.to_string());
        assert_eq!(m["_context_project_id"], "project-a");
        assert_eq!(m["_context_user_id"], "user-a");
        assert_eq!(
            m["_context_auth_token"],
            Value::Null,
            "no token in notifications"
        );
        assert_eq!(m["payload"]["action"], action);
        assert_eq!(m["payload"]["outcome"], "success");
        assert_eq!(m["payload"]["target"]["id"], u.as_str());
        assert_eq!(
            m["payload"]["target"]["typeURI"],
            "service/magnum/cluster_template"
        );
    }
    assert_eq!(
        events[0].message_json()["payload"]["target"]["name"],
        "noisy"
    );
    assert_eq!(
        events[1].message_json()["payload"]["target"]["name"],
        "renamed"
    );
    let content = &events[1].message_json()["payload"]["target"]["attachments"][0]["content"];
    assert_eq!(content["name"], "renamed");
    assert_eq!(content["project_id"], "project-a");
}
