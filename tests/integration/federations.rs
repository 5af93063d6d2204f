//! `/v1/federations` over HTTP with the conductor driven in-process step by step: create and
//! its validation sentences, the async status sequence, join and unjoin in Magnum's patch
//! dialect (and list replace), property edits, delete, the two-target join policy, the
//! cluster delete refusal, 64-way concurrent joins, failure injection, project isolation and
//! the outbox notifications.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use fleetyard::conductor::Outcome;
use fleetyard::config::Settings;
use fleetyard::domain::cluster::NodeGroup;
use fleetyard::domain::template::ClusterTemplate;
use fleetyard::drivers::fake::FakeDriver;
use fleetyard::drivers::{
    Capabilities, ClusterContext, ClusterObservation, Driver, DriverResult, FederationContext,
    FederationProgress, HealthObservation, MemberChange, Phase, Progress, Provides, Resize,
};
use fleetyard::store::Write;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::helpers::id;
use crate::helpers::{
    drain_polling, federation_body, join_ops, labelled_cluster_as, make_federation_as, merged,
    spawn_fleet_on, spawn_with_state, template_as, unjoin_ops, uuid_of, Api, Backend, Fleet, Resp,
    TestApp, FEDERATIONS,
};

fn one(ident: &str) -> String {
    format!("{FEDERATIONS}/{ident}")
}

fn project_b(app: &TestApp) -> HeaderMap {
    app.project_b()
}

const NO_DNS_ZONE: &str = "No DNS zone specified. Please specify a `dns-zone` property \
     (with `openstack coe federation create|update`: `--property dns=<zone>`).";

fn not_found(ident: &str) -> String {
    format!("Cluster {ident} could not be found.")
}

fn fed_not_found(ident: &str) -> String {
    format!("Federation {ident} could not be found.")
}

fn links(app: &TestApp, uuid: &str) -> Value {
    json!([
        {"href": format!("{}/v1/federations/{uuid}", app.address), "rel": "self"},
        {"href": format!("{}/federations/{uuid}", app.address), "rel": "bookmark"},
    ])
}

async fn show(app: &TestApp, ident: &str) -> Value {
    let r = app.get_federation(ident).await;
    assert_eq!(r.status, 200, "show {ident}: {}", r.text);
    r.body
}

async fn patch_ok(app: &TestApp, fed: &str, patch: Value) {
    let r = app.patch_federation(fed, &patch).await;
    assert_eq!(r.status, 202, "patch {patch}: {}", r.text);
    assert_eq!(r.body, json!({"uuid": fed}));
}

fn members(v: &Value) -> Vec<String> {
    v["member_ids"]
        .as_array()
        .expect("member_ids is an array")
        .iter()
        .map(|m| m.as_str().expect("uuid").to_string())
        .collect()
}

fn member_set(v: &Value) -> BTreeSet<String> {
    members(v).into_iter().collect()
}

/// The full representation a project member sees, timestamps taken from `shown`.
#[allow(clippy::too_many_arguments)]
fn full_view(
    app: &TestApp,
    uuid: &str,
    name: &str,
    host: &str,
    member_ids: &[&str],
    status: &str,
    reason: Value,
    properties: Value,
    shown: &Value,
) -> Value {
    json!({
        "uuid": uuid,
        "name": name,
        "hostcluster_id": host,
        "member_ids": member_ids,
        "status": status,
        "status_reason": reason,
        "properties": properties,
        "links": links(app, uuid),
        "created_at": shown["created_at"],
        "updated_at": shown["updated_at"],
    })
}

#[track_caller]
fn assert_timestamp(v: &Value) {
    let text = v
        .as_str()
        .unwrap_or_else(|| panic!("timestamp string: {v}"));
    assert!(text.ends_with("+00:00"), "explicit UTC offset: {text}");
    chrono::DateTime::parse_from_rfc3339(text).expect("ISO-8601");
}

/// A project-a fleet with a template, a completed host cluster and `n` completed clusters.
struct World {
    fleet: Fleet,
    template: String,
    host: String,
    clusters: Vec<String>,
}

async fn world(n: usize, tweak: impl FnOnce(&mut Settings)) -> World {
    world_on(Backend::Postgres, n, tweak).await
}

async fn world_on(backend: Backend, n: usize, tweak: impl FnOnce(&mut Settings)) -> World {
    let fleet = spawn_fleet_on(backend, tweak).await;
    let app = &fleet.app;
    let template = template_as(app, "k8s", json!({}), &app.headers).await;
    let host = labelled_cluster_as(app, &app.headers, &template, "host", json!({})).await;
    let mut clusters = Vec::with_capacity(n);
    for i in 0..n {
        clusters.push(
            labelled_cluster_as(app, &app.headers, &template, &format!("c{i}"), json!({})).await,
        );
    }
    drain_polling(&fleet.conductor).await;
    World {
        fleet,
        template,
        host,
        clusters,
    }
}

async fn completed_federation(w: &World, extra: Value) -> String {
    let fed = make_federation_as(
        &w.fleet.app,
        &merged(federation_body(&w.host), extra, &[]),
        &w.fleet.app.headers,
    )
    .await;
    drain_polling(&w.fleet.conductor).await;
    fed
}

async fn status_of(app: &TestApp, fed: &str) -> String {
    show(app, fed).await["status"]
        .as_str()
        .expect("status")
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_answers_202_and_the_conductor_completes_it() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let fed = make_federation_as(
        app,
        &merged(
            federation_body(&w.host),
            json!({"member_ids": [w.clusters[0]]}),
            &[],
        ),
        &app.headers,
    )
    .await;

    // The row exists before the 202 returns.
    let before = show(app, &fed).await;
    assert_eq!(
        before,
        full_view(
            app,
            &fed,
            "fed",
            &w.host,
            &[&w.clusters[0]],
            "CREATE_IN_PROGRESS",
            Value::Null,
            json!({"dns-zone": "example.com."}),
            &before,
        )
    );
    assert_timestamp(&before["created_at"]);
    assert_eq!(before["updated_at"], Value::Null);

    let outcomes = drain_polling(&w.fleet.conductor).await;
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(matches!(outcomes[0], Outcome::Completed { .. }));
    let after = show(app, &fed).await;
    assert_eq!(
        after,
        full_view(
            app,
            &fed,
            "fed",
            &w.host,
            &[&w.clusters[0]],
            "CREATE_COMPLETE",
            Value::Null,
            json!({"dns-zone": "example.com."}),
            &after,
        )
    );
    assert_timestamp(&after["updated_at"]);
}

#[tokio::test]
async fn the_host_cluster_is_found_by_name_and_stored_as_its_uuid() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let fed = make_federation_as(app, &federation_body("host"), &app.headers).await;
    assert_eq!(show(app, &fed).await["hostcluster_id"], json!(w.host));
    // Upper-case and brace forms of the uuid resolve too.
    let braced = format!("{{{}}}", w.host.to_uppercase());
    let fed2 = make_federation_as(app, &federation_body(&braced), &app.headers).await;
    assert_eq!(show(app, &fed2).await["hostcluster_id"], json!(w.host));
}

#[tokio::test]
async fn a_missing_name_is_generated_and_status_and_uuid_are_ignored() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let given = "0b8e0a5c-9a23-4bd8-9a8a-42d1f0a6a111";
    let fed = make_federation_as(
        app,
        &merged(
            federation_body(&w.host),
            json!({"uuid": given, "status": "CREATE_COMPLETE", "status_reason": "x"}),
            &["name"],
        ),
        &app.headers,
    )
    .await;
    assert_ne!(fed, given);
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "CREATE_IN_PROGRESS");
    assert_eq!(v["status_reason"], Value::Null);
    let name = v["name"].as_str().expect("name");
    let parts: Vec<&str> = name.split('-').collect();
    assert_eq!(parts.len(), 3, "{name}");
    assert_eq!(parts[2], "federation");
    assert!((1..=24).contains(&parts[1].parse::<u32>().expect("number")));
}

#[tokio::test]
async fn create_refuses_every_invalid_field_with_magnums_sentences() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let b_template = template_as(app, "k8s", json!({}), &project_b(app)).await;
    let b_cluster =
        labelled_cluster_as(app, &project_b(app), &b_template, "theirs", json!({})).await;
    let unknown = "6f1c1f0e-6e2b-4a4d-8d0a-1c1a3b9e2f00";
    let cases: Vec<(Value, u16, String)> = vec![
        (
            merged(federation_body(&w.host), json!({}), &["hostcluster_id"]),
            400,
            "No hostcluster specified. Please specify a hostcluster_id.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"hostcluster_id": null}), &[]),
            400,
            "No hostcluster specified. Please specify a hostcluster_id.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"hostcluster_id": ""}), &[]),
            400,
            "Invalid input for field/attribute hostcluster_id. Value: ''. Value should have a minimum character requirement of 1.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"hostcluster_id": 7}), &[]),
            400,
            "Invalid input for field/attribute hostcluster_id. Value: '7'. Value should be string.".into(),
        ),
        (federation_body("nope"), 404, not_found("nope")),
        (federation_body(unknown), 404, not_found(unknown)),
        // Another project's cluster is invisible.
        (federation_body(&b_cluster), 404, not_found(&b_cluster)),
        (federation_body("theirs"), 404, not_found("theirs")),
        (
            merged(federation_body(&w.host), json!({}), &["properties"]),
            400,
            "Please specify a `properties` dict for the federation.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"properties": null}), &[]),
            400,
            "Please specify a `properties` dict for the federation.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"properties": {}}), &[]),
            400,
            NO_DNS_ZONE.into(),
        ),
        (
            merged(federation_body(&w.host), json!({"properties": {"dns-zone": null, "a": "b"}}), &[]),
            400,
            NO_DNS_ZONE.into(),
        ),
        (
            merged(federation_body(&w.host), json!({"properties": [1]}), &[]),
            400,
            "Invalid input for field/attribute properties. Value: '[1]'. Value should be a dictionary.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"properties": {"dns-zone": {"a": 1}}}), &[]),
            400,
            "Invalid input for field/attribute properties. Value: '{'dns-zone': {'a': 1}}'. The value of property dns-zone should be a string, number or boolean.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"name": "1fed"}), &[]),
            400,
            "Invalid input for field/attribute name. Value: '1fed'. Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"name": "fed eral"}), &[]),
            400,
            "Invalid input for field/attribute name. Value: 'fed eral'. Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"name": ""}), &[]),
            400,
            "Invalid input for field/attribute name. Value: ''. Value should have a minimum character requirement of 1.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"name": "a".repeat(243)}), &[]),
            400,
            format!(
                "Invalid input for field/attribute name. Value: '{}'. Value should have a maximum character requirement of 242.",
                "a".repeat(243)
            ),
        ),
        (
            merged(federation_body(&w.host), json!({"name": 5}), &[]),
            400,
            "Invalid input for field/attribute name. Value: '5'. Value should be string.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"links": []}), &[]),
            400,
            "Invalid input for field/attribute links. Value: '[]'. Cannot set read only field.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"created_at": "2026-01-01T00:00:00+00:00"}), &[]),
            400,
            "Invalid input for field/attribute created_at. Value: '2026-01-01T00:00:00+00:00'. Cannot set read only field.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"updated_at": "x"}), &[]),
            400,
            "Invalid input for field/attribute updated_at. Value: 'x'. Cannot set read only field.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"project_id": "p"}), &[]),
            400,
            "Invalid input for field/attribute project_id. Value: 'p'. Cannot set read only field.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"bogus": 1}), &[]),
            400,
            "Unknown attribute for argument federation: bogus".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"member_ids": "x"}), &[]),
            400,
            "Invalid input for field/attribute member_ids. Value: 'x'. Value should be a list of strings.".into(),
        ),
        (
            merged(federation_body(&w.host), json!({"member_ids": ["nope"]}), &[]),
            404,
            not_found("nope"),
        ),
        // Members are named by uuid only, as joins are.
        (
            merged(federation_body(&w.host), json!({"member_ids": ["c0"]}), &[]),
            404,
            not_found("c0"),
        ),
        (
            merged(federation_body(&w.host), json!({"member_ids": [w.clusters[0], unknown]}), &[]),
            404,
            not_found(unknown),
        ),
        (
            merged(federation_body(&w.host), json!({"member_ids": [b_cluster]}), &[]),
            404,
            not_found(&b_cluster),
        ),
    ];
    for (b, status, detail) in cases {
        let r = app.post(FEDERATIONS, &b).await;
        r.assert_error(status, &detail);
    }

    let r = app
        .send(
            app.client
                .post(app.url(FEDERATIONS))
                .headers(app.headers.clone())
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    r.assert_error(400, "Request is not in valid JSON format.");
    let r = app.post(FEDERATIONS, &json!(["not", "an", "object"])).await;
    r.assert_error(
        400,
        "Invalid input for argument federation: the request body must be a JSON object.",
    );
    let r = app
        .post(&format!("{FEDERATIONS}?x=1"), &federation_body(&w.host))
        .await;
    r.assert_error(400, "Unknown argument: \"x\"");

    // Nothing was written.
    let list = app.list_federations("").await;
    assert_eq!(list.body, json!({"federations": []}));
}

#[tokio::test]
async fn members_are_deduplicated_and_stored_as_canonical_uuids() {
    let w = world(2, |_| {}).await;
    let app = &w.fleet.app;
    let (a, b) = (&w.clusters[0], &w.clusters[1]);
    let fed = make_federation_as(
        app,
        &merged(
            federation_body(&w.host),
            json!({"member_ids": [a, b.to_uppercase(), a]}),
            &[],
        ),
        &app.headers,
    )
    .await;
    assert_eq!(members(&show(app, &fed).await), vec![a.clone(), b.clone()]);
}

#[tokio::test]
async fn creating_a_federation_needs_the_create_policy() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let reader = app.as_identity("project-a", "user-r", "reader");
    let r = app
        .post_as(FEDERATIONS, &federation_body(&w.host), &reader)
        .await;
    r.assert_error(
        403,
        "Policy doesn't allow federation:create to be performed.",
    );
}

// ---------------------------------------------------------------------------------------------
// A driver without federation support
// ---------------------------------------------------------------------------------------------

/// The fake driver under another name, claiming no federation support.
struct NoFederation(FakeDriver);

#[async_trait]
impl Driver for NoFederation {
    fn name(&self) -> &'static str {
        "nofed"
    }
    fn provides(&self) -> &[Provides] {
        self.0.provides()
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            federation: false,
            ..self.0.capabilities()
        }
    }
    async fn create_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.0.create_cluster(ctx).await
    }
    async fn update_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.0.update_cluster(ctx).await
    }
    async fn resize_cluster(
        &self,
        ctx: &ClusterContext,
        resize: &Resize,
    ) -> DriverResult<Progress> {
        self.0.resize_cluster(ctx, resize).await
    }
    async fn upgrade_cluster(
        &self,
        ctx: &ClusterContext,
        template: &ClusterTemplate,
        max_batch_size: i32,
        nodegroup: Option<&str>,
    ) -> DriverResult<Progress> {
        self.0
            .upgrade_cluster(ctx, template, max_batch_size, nodegroup)
            .await
    }
    async fn delete_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.0.delete_cluster(ctx).await
    }
    async fn create_nodegroup(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.0.create_nodegroup(ctx, ng).await
    }
    async fn update_nodegroup(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.0.update_nodegroup(ctx, ng).await
    }
    async fn delete_nodegroup(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.0.delete_nodegroup(ctx, ng).await
    }
    async fn cluster_status(&self, ctx: &ClusterContext) -> DriverResult<ClusterObservation> {
        self.0.cluster_status(ctx).await
    }
    async fn cluster_health(
        &self,
        ctx: &ClusterContext,
    ) -> DriverResult<Option<HealthObservation>> {
        self.0.cluster_health(ctx).await
    }
    async fn rotate_ca(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        self.0.rotate_ca(ctx).await
    }
    async fn create_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        self.0.create_federation(ctx).await
    }
    async fn update_federation(
        &self,
        ctx: &FederationContext,
        change: &MemberChange,
    ) -> DriverResult<FederationProgress> {
        self.0.update_federation(ctx, change).await
    }
    async fn delete_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        self.0.delete_federation(ctx).await
    }
    async fn federation_status(&self, ctx: &FederationContext) -> DriverResult<Phase> {
        self.0.federation_status(ctx).await
    }
}

#[tokio::test]
async fn a_host_whose_driver_cannot_federate_is_refused_with_400() {
    let app = spawn_with_state(
        Backend::Postgres,
        |_| {},
        |state| {
            let fake = FakeDriver::new(state.settings.fake_driver.clone());
            state.drivers.insert(Arc::new(NoFederation(fake)));
        },
    )
    .await;
    let template = uuid_of(&app.make_template("nofed", json!({"driver": "nofed"})).await);
    labelled_cluster_as(&app, &app.headers, &template, "host", json!({})).await;
    let r = app.post(FEDERATIONS, &federation_body("host")).await;
    r.assert_error(
        400,
        "The driver 'nofed' of host cluster host does not support federations.",
    );
    assert!(app
        .store
        .pending_events(100)
        .await
        .expect("events")
        .iter()
        .all(|e| !e.event_type.starts_with("magnum.federation")));
}

// ---------------------------------------------------------------------------------------------
// List, show, pagination
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn lists_show_summaries_and_details_with_keyset_pages() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let first = make_federation_as(
        app,
        &merged(
            federation_body(&w.host),
            json!({"name": "one", "member_ids": [w.clusters[0]]}),
            &[],
        ),
        &app.headers,
    )
    .await;
    let second = make_federation_as(
        app,
        &merged(federation_body(&w.host), json!({"name": "two"}), &[]),
        &app.headers,
    )
    .await;
    drain_polling(&w.fleet.conductor).await;

    let list = app.list_federations("").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(
        list.body,
        json!({"federations": [
            {"uuid": first, "name": "one", "hostcluster_id": w.host, "member_ids": [w.clusters[0]],
             "status": "CREATE_COMPLETE", "properties": {"dns-zone": "example.com."},
             "links": links(app, &first)},
            {"uuid": second, "name": "two", "hostcluster_id": w.host, "member_ids": [],
             "status": "CREATE_COMPLETE", "properties": {"dns-zone": "example.com."},
             "links": links(app, &second)},
        ]})
    );

    let detail = app.list_federations_detail("").await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    let items = detail.body["federations"].as_array().expect("array");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], show(app, &first).await);
    assert_eq!(items[1], show(app, &second).await);

    let page = app.list_federations("?limit=1").await;
    assert_eq!(page.body["federations"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        page.body["next"],
        json!(format!(
            "{}/v1/federations?sort_key=id&sort_dir=asc&limit=1&marker={first}",
            app.address
        ))
    );
    let next = app
        .list_federations(&format!("?limit=1&marker={first}"))
        .await;
    assert_eq!(next.body["federations"][0]["uuid"], json!(second));
    let last = app
        .list_federations_detail(&format!("?limit=1&marker={second}"))
        .await;
    assert_eq!(last.body, json!({"federations": []}));
    let desc = app.list_federations("?sort_key=name&sort_dir=desc").await;
    let names: Vec<&str> = desc.body["federations"]
        .as_array()
        .expect("array")
        .iter()
        .map(|f| f["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, vec!["two", "one"]);

    app.list_federations("?sort_key=member_ids")
        .await
        .assert_error(
            400,
            "The sort_key value \"member_ids\" is an invalid field for sorting",
        );
    app.list_federations("?sort_dir=up").await.assert_error(
        400,
        "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
    );
    app.list_federations("?limit=0")
        .await
        .assert_error(400, "Limit must be positive");
    app.list_federations("?all_tenants=1")
        .await
        .assert_error(400, "Unknown argument: \"all_tenants\"");
    let unknown = "6f1c1f0e-6e2b-4a4d-8d0a-1c1a3b9e2f00";
    app.list_federations(&format!("?marker={unknown}"))
        .await
        .assert_error(404, &fed_not_found(unknown));
    app.list_federations("?marker=nope")
        .await
        .assert_error(400, "Expected a uuid but received nope.");

    // Show by name; names are not unique, so a shared one asks for the uuid.
    assert_eq!(show(app, "one").await["uuid"], json!(first));
    app.get_federation("nope")
        .await
        .assert_error(404, &fed_not_found("nope"));
    app.get_federation(unknown)
        .await
        .assert_error(404, &fed_not_found(unknown));
    make_federation_as(
        app,
        &merged(federation_body(&w.host), json!({"name": "one"}), &[]),
        &app.headers,
    )
    .await;
    app.get_federation("one").await.assert_error(
        409,
        "Multiple federations exist with same name. Please use the federation uuid instead.",
    );

    // Wrong methods.
    let put = app
        .request(
            reqwest::Method::PUT,
            FEDERATIONS,
            &app.headers,
            Some(&json!({})),
        )
        .await;
    put.assert_framework_error(405);
    let post = app.post(&format!("{FEDERATIONS}/detail"), &json!({})).await;
    post.assert_framework_error(405);
    let post = app.post(&one(&first), &json!({})).await;
    post.assert_framework_error(405);
}

#[tokio::test]
async fn admins_list_every_project_and_see_project_ids() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let ours = make_federation_as(app, &federation_body(&w.host), &app.headers).await;
    let b = project_b(app);
    let b_template = template_as(app, "k8s", json!({}), &b).await;
    labelled_cluster_as(app, &b, &b_template, "bhost", json!({})).await;
    let theirs = make_federation_as(app, &federation_body("bhost"), &b).await;

    let admin = app.admin();
    let list = app.with_headers(&admin).list_federations("").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let seen: Vec<(String, String)> = list.body["federations"]
        .as_array()
        .expect("array")
        .iter()
        .map(|f| {
            (
                uuid_of(f),
                f["project_id"].as_str().expect("project_id").to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (ours.clone(), "project-a".to_string()),
            (theirs.clone(), "project-b".to_string())
        ]
    );
    let one_b = app.with_headers(&admin).get_federation(&theirs).await;
    assert_eq!(one_b.status, 200, "{}", one_b.text);
    assert_eq!(one_b.body["project_id"], "project-b");
    // Members never see project_id.
    assert!(show(app, &ours).await.get("project_id").is_none());
    let detail = app.list_federations_detail("").await;
    assert!(detail.body["federations"][0].get("project_id").is_none());
}

#[tokio::test]
async fn another_project_sees_none_of_the_federations_through_any_endpoint() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let fed = completed_federation(&w, json!({"member_ids": [w.clusters[0]]})).await;
    let b = project_b(app);
    for path in [FEDERATIONS.to_string(), format!("{FEDERATIONS}/detail")] {
        let r = app.get_as(&path, &b).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body, json!({"federations": []}), "{path}");
    }
    let r = app
        .with_headers(&b)
        .list_federations(&format!("?marker={fed}"))
        .await;
    r.assert_error(404, &fed_not_found(&fed));
    for ident in [fed.as_str(), "fed"] {
        app.with_headers(&b)
            .get_federation(ident)
            .await
            .assert_error(404, &fed_not_found(ident));
        app.patch_as(
            &one(ident),
            &json!([{"op": "replace", "path": "/properties/dns-zone", "value": "x."}]),
            &b,
        )
        .await
        .assert_error(404, &fed_not_found(ident));
        app.with_headers(&b)
            .unjoin(ident, &w.clusters[0])
            .await
            .assert_error(404, &fed_not_found(ident));
        app.with_headers(&b)
            .delete_federation(ident)
            .await
            .assert_error(404, &fed_not_found(ident));
    }
    // Nothing changed.
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "CREATE_COMPLETE");
    assert_eq!(members(&v), vec![w.clusters[0].clone()]);
    assert_eq!(v["properties"], json!({"dns-zone": "example.com."}));
}

// ---------------------------------------------------------------------------------------------
// Join, unjoin, replace, properties
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn join_and_unjoin_reach_update_complete_with_the_new_member_set() {
    let w = world(3, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = completed_federation(&w, json!({})).await;

    patch_ok(app, &fed, join_ops(&c[0])).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(members(&v), vec![c[0].clone()]);
    assert_eq!(v["status_reason"], Value::Null);
    let jobs = app.store.jobs_for(id(&fed)).await.expect("jobs");
    let (job, state) = jobs.last().expect("a job");
    assert_eq!(job.operation.as_str(), "federation.update");
    assert_eq!(job.driver, "fake");
    assert_eq!(state, "pending");
    assert_eq!(
        job.payload.stored(),
        json!({"joined": [c[0]], "unjoined": []})
    );
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v), vec![c[0].clone()]);

    // A name is never looked up for a join; the uuid in any form is.
    patch_ok(app, &fed, join_ops(&c[1].to_uppercase())).await;
    patch_ok(app, &fed, unjoin_ops(&c[0])).await;
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v), vec![c[1].clone()]);

    // Fleetyard's superset: replace with a list (joins c0 and c2, unjoins c1).
    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/member_ids", "value": [c[0], c[2]]}]),
    )
    .await;
    let jobs = app.store.jobs_for(id(&fed)).await.expect("jobs");
    assert_eq!(
        jobs.last().expect("job").0.payload.stored(),
        json!({"joined": [c[0], c[2]], "unjoined": [c[1]]})
    );
    drain_polling(&w.fleet.conductor).await;
    assert_eq!(
        members(&show(app, &fed).await),
        vec![c[0].clone(), c[2].clone()]
    );

    // The string form python-magnumclient would send for a list works too.
    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/member_ids", "value": format!("['{}']", c[2])}]),
    )
    .await;
    assert_eq!(members(&show(app, &fed).await), vec![c[2].clone()]);

    // Several operations in one patch apply in order.
    patch_ok(
        app,
        &fed,
        json!([
            {"op": "add", "path": "/member_ids", "value": c[1]},
            {"op": "add", "path": "/member_ids", "value": c[0]},
            {"op": "remove", "path": "/member_ids", "value": c[2]},
            {"op": "add", "path": "/properties/region", "value": "east"},
        ]),
    )
    .await;
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(members(&v), vec![c[1].clone(), c[0].clone()]);
    assert_eq!(
        v["properties"],
        json!({"dns-zone": "example.com.", "region": "east"})
    );
    assert_eq!(v["status"], "UPDATE_COMPLETE");

    // remove /member_ids without a value unjoins everyone.
    patch_ok(app, &fed, json!([{"op": "remove", "path": "/member_ids"}])).await;
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(members(&v), Vec::<String>::new());
    assert_eq!(v["status"], "UPDATE_COMPLETE");
}

#[tokio::test]
async fn patch_errors_have_magnums_codes_and_sentences() {
    let w = world(2, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = completed_federation(&w, json!({"member_ids": [c[0]]})).await;
    let unknown = "6f1c1f0e-6e2b-4a4d-8d0a-1c1a3b9e2f00";
    let cases: Vec<(Value, u16, String)> = vec![
        // Joins look clusters up by uuid only.
        (join_ops("c1"), 404, not_found("c1")),
        (join_ops(unknown), 404, not_found(unknown)),
        (
            join_ops(&c[0]),
            409,
            // The cluster's name first: the CLI sends the uuid of the name its user typed.
            format!("Cluster c0 ({}) is already a member of the federation fed.", c[0]),
        ),
        (
            unjoin_ops(&c[1]),
            404,
            format!("Cluster c1 ({}) is not a member of the federation fed.", c[1]),
        ),
        (unjoin_ops(unknown), 404, not_found(unknown)),
        (unjoin_ops("c0"), 404, not_found("c0")),
        (
            json!([{"op": "replace", "path": "/member_ids", "value": [c[0], unknown]}]),
            404,
            not_found(unknown),
        ),
        (json!([]), 400, "The patch is empty: nothing to change.".into()),
        (
            json!({"op": "add"}),
            400,
            "Invalid input for argument patch: the request body must be a JSON-Patch array.".into(),
        ),
        (
            json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
            400,
            "cannot change federation property(ies) name.".into(),
        ),
        (
            json!([
                {"op": "replace", "path": "/status", "value": "UPDATE_COMPLETE"},
                {"op": "replace", "path": "/hostcluster_id", "value": c[1]},
            ]),
            400,
            "cannot change federation property(ies) hostcluster_id, status.".into(),
        ),
        (
            json!([{"op": "replace", "path": "/uuid", "value": unknown}]),
            400,
            "'/uuid' is an internal attribute and can not be updated".into(),
        ),
        (
            json!([{"op": "replace", "path": "/project_id", "value": "x"}]),
            400,
            "'/project_id' is an internal attribute and can not be updated".into(),
        ),
        (
            json!([{"op": "add", "path": "/bogus", "value": "x"}]),
            400,
            "Adding a new attribute /bogus to the root of the resource is not allowed.".into(),
        ),
        (
            json!([{"op": "add", "path": "/properties", "value": {"dns-zone": "a."}}]),
            400,
            "The attribute /properties has existed, please use 'replace' operation instead.".into(),
        ),
        (
            json!([{"op": "remove", "path": "/properties/dns-zone"}]),
            400,
            NO_DNS_ZONE.into(),
        ),
        (
            json!([{"op": "remove", "path": "/properties"}]),
            400,
            NO_DNS_ZONE.into(),
        ),
        (
            json!([{"op": "replace", "path": "/properties", "value": {"a": "b"}}]),
            400,
            NO_DNS_ZONE.into(),
        ),
        (
            json!([{"op": "replace", "path": "/properties/dns-zone", "value": [1]}]),
            400,
            "Invalid input for field/attribute properties. Value: '{'dns-zone': [1]}'. The value of property dns-zone should be a string, number or boolean.".into(),
        ),
        (
            json!([{"op": "add", "path": "/member_ids", "value": [c[1]]}]),
            400,
            format!("Invalid input for field/attribute member_ids. Value: '['{}']'. Value should be a cluster uuid.", c[1]),
        ),
        (
            json!([{"op": "replace", "path": "/member_ids", "value": [1]}]),
            400,
            "Invalid input for field/attribute member_ids. Value: '[1]'. Value should be a list of cluster uuids.".into(),
        ),
        (
            json!([{"op": "replace", "path": "/member_ids", "value": "not a list"}]),
            400,
            "Invalid input for field/attribute member_ids. Value: 'not a list'. Value should be a list of cluster uuids.".into(),
        ),
        (
            json!([{"op": "remove", "path": "/member_ids/0"}]),
            400,
            "'/member_ids/0' cannot be patched: add or remove /member_ids with a cluster uuid as the value, or replace /member_ids with a list of cluster uuids.".into(),
        ),
        (
            json!([{"op": "add", "path": "/member_ids"}]),
            400,
            "'add' and 'replace' operations needs value".into(),
        ),
        (
            json!([{"op": "move", "path": "/member_ids", "value": c[1]}]),
            400,
            "Invalid input for field/attribute op. Value: 'move'. Value should be one of: add, replace, remove.".into(),
        ),
        (
            json!([{"op": "remove", "path": "/properties/nope"}]),
            400,
            "Couldn't apply patch '[{\"op\":\"remove\",\"path\":\"/properties/nope\"}]'. Reason: operation '/0' failed at path '/properties/nope': path is invalid".into(),
        ),
    ];
    for (patch, status, detail) in cases {
        let r = app.patch_federation(&fed, &patch).await;
        r.assert_error(status, &detail);
    }
    app.join("nope", &c[1])
        .await
        .assert_error(404, &fed_not_found("nope"));
    app.patch(&format!("{}?rollback=maybe", one(&fed)), &join_ops(&c[1]))
        .await
        .assert_error(400, "Invalid input for rollback: maybe is not a boolean.");
    app.patch(&format!("{}?force=1", one(&fed)), &join_ops(&c[1]))
        .await
        .assert_error(400, "Unknown argument: \"force\"");

    // Nothing was written by any refused patch.
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "CREATE_COMPLETE");
    assert_eq!(members(&v), vec![c[0].clone()]);
    assert_eq!(app.store.jobs_for(id(&fed)).await.expect("jobs").len(), 1);

    // rollback is accepted (federations are not version-gated).
    let r = app
        .patch(&format!("{}?rollback=True", one(&fed)), &join_ops(&c[1]))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, json!({"uuid": fed}));
}

#[tokio::test]
async fn changes_are_refused_while_creating_or_deleting_and_queue_while_updating() {
    let w = world(3, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = make_federation_as(app, &federation_body(&w.host), &app.headers).await;
    app.join(&fed, &c[0]).await.assert_error(
        409,
        "Updating a federation when status is \"CREATE_IN_PROGRESS\" is not supported.",
    );
    drain_polling(&w.fleet.conductor).await;

    // While UPDATE_IN_PROGRESS further joins are accepted; their jobs run in order.
    patch_ok(app, &fed, join_ops(&c[0])).await;
    patch_ok(app, &fed, join_ops(&c[1])).await;
    patch_ok(app, &fed, join_ops(&c[2])).await;
    assert_eq!(status_of(app, &fed).await, "UPDATE_IN_PROGRESS");
    let pending: Vec<Value> = app
        .store
        .jobs_for(id(&fed))
        .await
        .expect("jobs")
        .into_iter()
        .filter(|(_, s)| s == "pending")
        .map(|(j, _)| j.payload.stored())
        .collect();
    assert_eq!(
        pending,
        vec![
            json!({"joined": [c[0]], "unjoined": []}),
            json!({"joined": [c[1]], "unjoined": []}),
            json!({"joined": [c[2]], "unjoined": []}),
        ]
    );
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v), vec![c[0].clone(), c[1].clone(), c[2].clone()]);

    let r = app.delete_federation(&fed).await;
    assert_eq!(r.status, 204, "{}", r.text);
    app.unjoin(&fed, &c[0]).await.assert_error(
        409,
        "Updating a federation when status is \"DELETE_IN_PROGRESS\" is not supported.",
    );
}

#[tokio::test]
async fn properties_are_edited_through_sub_paths_and_whole_replaces() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let fed = completed_federation(&w, json!({})).await;

    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/properties/dns-zone", "value": "new.zone."}]),
    )
    .await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(v["properties"], json!({"dns-zone": "new.zone."}));
    let jobs = app.store.jobs_for(id(&fed)).await.expect("jobs");
    assert_eq!(
        jobs.last().expect("job").0.payload.stored(),
        json!({"joined": [], "unjoined": []})
    );
    drain_polling(&w.fleet.conductor).await;
    assert_eq!(status_of(app, &fed).await, "UPDATE_COMPLETE");

    patch_ok(
        app,
        &fed,
        json!([{"op": "add", "path": "/properties/replicas", "value": 3}]),
    )
    .await;
    assert_eq!(
        show(app, &fed).await["properties"],
        json!({"dns-zone": "new.zone.", "replicas": "3"})
    );
    patch_ok(
        app,
        &fed,
        json!([{"op": "remove", "path": "/properties/replicas"}]),
    )
    .await;
    assert_eq!(
        show(app, &fed).await["properties"],
        json!({"dns-zone": "new.zone."})
    );
    // A whole replace, also in the Python-literal form the CLI sends.
    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/properties", "value": "{'dns-zone': 'z.', 'a': 'b'}"}]),
    )
    .await;
    assert_eq!(
        show(app, &fed).await["properties"],
        json!({"dns-zone": "z.", "a": "b"})
    );
    drain_polling(&w.fleet.conductor).await;

    // A patch that changes nothing is accepted and writes nothing.
    let before = app.store.jobs_for(id(&fed)).await.expect("jobs").len();
    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/properties/dns-zone", "value": "z."}]),
    )
    .await;
    assert_eq!(
        app.store.jobs_for(id(&fed)).await.expect("jobs").len(),
        before
    );
    assert_eq!(status_of(app, &fed).await, "UPDATE_COMPLETE");
}

#[tokio::test]
async fn a_member_whose_cluster_is_gone_can_still_be_unjoined() {
    let w = world(2, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = completed_federation(&w, json!({"member_ids": [c[0], c[1]]})).await;
    // The cluster disappears behind the API's back (the API itself refuses to delete members).
    app.store
        .commit(&[Write::DeleteCluster { uuid: id(&c[0]) }])
        .await
        .expect("cluster removed");
    app.get(&format!("/v1/clusters/{}", c[0]))
        .await
        .assert_error(404, &not_found(&c[0]));

    patch_ok(app, &fed, unjoin_ops(&c[0])).await;
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v), vec![c[1].clone()]);
    assert_eq!(
        v["status_reason"],
        json!(format!(
            "Unjoined {}: the cluster no longer exists, so its member-side clean-up was skipped.",
            c[0]
        ))
    );
    // Once unjoined it is unknown like any other uuid.
    app.unjoin(&fed, &c[0])
        .await
        .assert_error(404, &not_found(&c[0]));
}

#[tokio::test]
async fn a_replace_drops_a_member_whose_cluster_is_gone() {
    let w = world(2, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = completed_federation(&w, json!({"member_ids": [c[0], c[1]]})).await;
    app.store
        .commit(&[Write::DeleteCluster { uuid: id(&c[0]) }])
        .await
        .expect("cluster removed");
    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/member_ids", "value": [c[1]]}]),
    )
    .await;
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v), vec![c[1].clone()]);
}

// ---------------------------------------------------------------------------------------------
// Delete
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn delete_answers_204_and_the_row_goes_when_the_driver_finishes() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let fed = completed_federation(&w, json!({"member_ids": [w.clusters[0]]})).await;
    let r = app.delete_federation(&fed).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(r.text, "");
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "DELETE_IN_PROGRESS");
    let jobs = app.store.jobs_for(id(&fed)).await.expect("jobs");
    assert_eq!(
        jobs.last().expect("job").0.operation.as_str(),
        "federation.delete"
    );
    // A second delete while deleting is accepted and queues nothing more.
    assert_eq!(app.delete_federation("fed").await.status, 204);
    assert_eq!(
        app.store.jobs_for(id(&fed)).await.expect("jobs").len(),
        jobs.len()
    );

    drain_polling(&w.fleet.conductor).await;
    app.get_federation(&fed)
        .await
        .assert_error(404, &fed_not_found(&fed));
    app.delete_federation(&fed)
        .await
        .assert_error(404, &fed_not_found(&fed));
    assert_eq!(
        app.list_federations("").await.body,
        json!({"federations": []})
    );

    let reader = app.as_identity("project-a", "user-r", "reader");
    let fed2 = completed_federation(&w, json!({})).await;
    app.with_headers(&reader)
        .delete_federation(&fed2)
        .await
        .assert_error(
            403,
            "Policy doesn't allow federation:delete to be performed.",
        );
    app.delete(&format!("{}?x=1", one(&fed2)))
        .await
        .assert_error(400, "Unknown argument: \"x\"");
}

#[tokio::test]
async fn a_cluster_in_a_federation_cannot_be_deleted_until_it_is_unjoined() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let member = &w.clusters[0];
    let fed = completed_federation(&w, json!({"member_ids": [member]})).await;
    let refusal = |name: &str| {
        format!(
            "Cluster {name} hosts or belongs to federation(s) fed ({fed}); unjoin it or delete the federation first."
        )
    };
    app.delete(&format!("/v1/clusters/{member}"))
        .await
        .assert_error(409, &refusal("c0"));
    app.delete("/v1/clusters/host")
        .await
        .assert_error(409, &refusal("host"));

    patch_ok(app, &fed, unjoin_ops(member)).await;
    drain_polling(&w.fleet.conductor).await;
    let r = app.delete(&format!("/v1/clusters/{member}")).await;
    assert_eq!(r.status, 204, "{}", r.text);
    // The host stays refused while the federation exists.
    app.delete("/v1/clusters/host")
        .await
        .assert_error(409, &refusal("host"));
    assert_eq!(app.delete_federation(&fed).await.status, 204);
    app.delete("/v1/clusters/host")
        .await
        .assert_error(409, &refusal("host"));
    drain_polling(&w.fleet.conductor).await;
    let r = app.delete("/v1/clusters/host").await;
    assert_eq!(r.status, 204, "{}", r.text);
    drain_polling(&w.fleet.conductor).await;
    app.get(&format!("/v1/clusters/{}", w.host))
        .await
        .assert_error(404, &not_found(&w.host));
}

#[tokio::test]
async fn the_whole_lifecycle_works_on_sqlite_too() {
    let w = world_on(Backend::Sqlite, 2, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = completed_federation(&w, json!({"member_ids": [c[0]]})).await;
    assert_eq!(status_of(app, &fed).await, "CREATE_COMPLETE");
    let results = parallel_patches(app, &fed, vec![join_ops(&c[1]), unjoin_ops(&c[0])]).await;
    for r in &results {
        assert_eq!(r.status, 202, "{}", r.text);
    }
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v), vec![c[1].clone()]);
    app.delete(&format!("/v1/clusters/{}", c[1]))
        .await
        .assert_error(
            409,
            &format!(
                "Cluster c1 hosts or belongs to federation(s) fed ({fed}); unjoin it or delete the federation first."
            ),
        );
    assert_eq!(
        app.delete(&format!("/v1/clusters/{}", c[0])).await.status,
        204
    );
    assert_eq!(app.delete_federation(&fed).await.status, 204);
    drain_polling(&w.fleet.conductor).await;
    app.get_federation(&fed)
        .await
        .assert_error(404, &fed_not_found(&fed));
}

#[tokio::test]
async fn a_cluster_being_deleted_can_neither_join_nor_host() {
    let w = world(2, |_| {}).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    // The host may be a member too.
    let fed = completed_federation(&w, json!({"member_ids": [w.host]})).await;
    assert_eq!(members(&show(app, &fed).await), vec![w.host.clone()]);
    assert_eq!(app.delete("/v1/clusters/c0").await.status, 204);
    app.join(&fed, &c[0]).await.assert_error(
        409,
        "Cluster c0 is being deleted and cannot join a federation.",
    );
    app.post(
        FEDERATIONS,
        &merged(federation_body(&w.host), json!({"member_ids": [c[0]]}), &[]),
    )
    .await
    .assert_error(
        409,
        "Cluster c0 is being deleted and cannot join a federation.",
    );
    app.post(FEDERATIONS, &federation_body("c0"))
        .await
        .assert_error(
            409,
            "Cluster c0 is being deleted and cannot host a federation.",
        );
    drain_polling(&w.fleet.conductor).await;
    app.join(&fed, &c[0])
        .await
        .assert_error(404, &not_found(&c[0]));
}

#[tokio::test]
async fn a_join_racing_the_clusters_delete_never_leaves_a_deleted_member() {
    let w = world(16, |_| {}).await;
    let app = &w.fleet.app;
    let fed = completed_federation(&w, json!({})).await;
    let path = one(&fed);
    let joins = w.clusters.iter().map(|c| {
        let body = join_ops(c);
        let path = path.clone();
        async move { app.patch(&path, &body).await }
    });
    let deletes = w
        .clusters
        .iter()
        .map(|c| async move { app.delete(&format!("/v1/clusters/{c}")).await });
    let (joins, deletes) = tokio::join!(
        futures_util::future::join_all(joins),
        futures_util::future::join_all(deletes)
    );
    let mut joined = BTreeSet::new();
    for ((c, j), d) in w.clusters.iter().zip(&joins).zip(&deletes) {
        match (j.status, d.status) {
            (202, 409) => {
                joined.insert(c.clone());
            }
            (409, 204) => {}
            other => panic!(
                "{c}: join and delete answered {other:?}: {} / {}",
                j.text, d.text
            ),
        }
    }
    eprintln!(
        "{} of 16 joins won against their cluster's delete",
        joined.len()
    );
    let v = show(app, &fed).await;
    assert_eq!(member_set(&v), joined);
    for m in &joined {
        let r = app.get(&format!("/v1/clusters/{m}")).await;
        assert_ne!(r.body["status"], "DELETE_IN_PROGRESS", "{m} is a member");
    }
    drain_polling(&w.fleet.conductor).await;
    assert_eq!(member_set(&show(app, &fed).await), joined);
}

// ---------------------------------------------------------------------------------------------
// The two-target policy
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn join_of_a_cluster_from_another_project_is_404() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let fed = completed_federation(&w, json!({})).await;
    let b = project_b(app);
    let b_template = template_as(app, "k8s", json!({}), &b).await;
    let theirs = labelled_cluster_as(app, &b, &b_template, "theirs", json!({})).await;
    drain_polling(&w.fleet.conductor).await;

    app.join(&fed, &theirs)
        .await
        .assert_error(404, &not_found(&theirs));
    // Project B cannot reach project A's federation either.
    app.with_headers(&b)
        .join(&fed, &theirs)
        .await
        .assert_error(404, &fed_not_found(&fed));

    // An admin holds both rights: the cross-project join goes through...
    let admin = app.admin();
    let r = app.with_headers(&admin).join(&fed, &theirs).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain_polling(&w.fleet.conductor).await;
    assert_eq!(members(&show(app, &fed).await), vec![theirs.clone()]);
    // ...and project A's member, lacking the right on B's cluster, cannot unjoin it.
    app.unjoin(&fed, &theirs).await.assert_error(
        403,
        "Policy doesn't allow federation:unjoin to be performed.",
    );
    app.patch(
        &one(&fed),
        &json!([{"op": "replace", "path": "/member_ids", "value": []}]),
    )
    .await
    .assert_error(
        403,
        "Policy doesn't allow federation:unjoin to be performed.",
    );
    let r = app.with_headers(&admin).unjoin(&fed, &theirs).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain_polling(&w.fleet.conductor).await;
    assert_eq!(members(&show(app, &fed).await), Vec::<String>::new());
}

#[tokio::test]
async fn a_policy_file_can_make_joins_admin_only() {
    let dir = std::env::temp_dir().join(format!("fy-policy-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("policy.yaml");
    std::fs::write(
        &path,
        "\"federation:join\": \"role:admin\"\n\"federation:unjoin\": \"role:admin\"\n",
    )
    .expect("write policy");
    let w = world(2, |s| s.oslo_policy.policy_file = Some(path)).await;
    let app = &w.fleet.app;
    let c = &w.clusters;
    let fed = completed_federation(&w, json!({})).await;

    app.join(&fed, &c[0])
        .await
        .assert_error(403, "Policy doesn't allow federation:join to be performed.");
    app.post(
        FEDERATIONS,
        &merged(federation_body(&w.host), json!({"member_ids": [c[0]]}), &[]),
    )
    .await
    .assert_error(403, "Policy doesn't allow federation:join to be performed.");
    // Property edits only need federation:update.
    patch_ok(
        app,
        &fed,
        json!([{"op": "replace", "path": "/properties/dns-zone", "value": "b."}]),
    )
    .await;
    drain_polling(&w.fleet.conductor).await;

    let admin = app.admin();
    let r = app.with_headers(&admin).join(&fed, &c[0]).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain_polling(&w.fleet.conductor).await;
    app.unjoin(&fed, &c[0]).await.assert_error(
        403,
        "Policy doesn't allow federation:unjoin to be performed.",
    );
    assert_eq!(members(&show(app, &fed).await), vec![c[0].clone()]);

    // Readers lack federation:update itself.
    let reader = app.as_identity("project-a", "user-r", "reader");
    app.patch_as(
        &one(&fed),
        &json!([{"op": "replace", "path": "/properties/dns-zone", "value": "c."}]),
        &reader,
    )
    .await
    .assert_error(
        403,
        "Policy doesn't allow federation:update to be performed.",
    );
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

async fn parallel_patches(app: &TestApp, fed: &str, patches: Vec<Value>) -> Vec<Resp> {
    let path = one(fed);
    let futures = patches.iter().map(|p| app.patch(&path, p));
    futures_util::future::join_all(futures).await
}

#[tokio::test]
async fn sixty_four_concurrent_joins_lose_no_member() {
    let w = world(64, |s| s.quotas.max_clusters_per_project = 1000).await;
    let app = &w.fleet.app;
    let fed = completed_federation(&w, json!({})).await;

    let started = Instant::now();
    let results =
        parallel_patches(app, &fed, w.clusters.iter().map(|c| join_ops(c)).collect()).await;
    let elapsed = started.elapsed();
    eprintln!("64 concurrent joins answered in {elapsed:?}");
    for r in &results {
        assert_eq!(r.status, 202, "{}", r.text);
    }
    let expected: BTreeSet<String> = w.clusters.iter().cloned().collect();
    let v = show(app, &fed).await;
    assert_eq!(members(&v).len(), 64);
    assert_eq!(member_set(&v), expected);
    let jobs = app.store.jobs_for(id(&fed)).await.expect("jobs");
    let joined: BTreeSet<String> = jobs
        .iter()
        .filter(|(j, _)| j.operation.as_str() == "federation.update")
        .flat_map(|(j, _)| {
            j.payload.stored()["joined"]
                .as_array()
                .expect("joined")
                .iter()
                .map(|m| m.as_str().expect("uuid").to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        joined, expected,
        "one job per join, each naming its cluster"
    );

    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(member_set(&v), expected);
}

#[tokio::test]
async fn racing_joins_and_unjoins_end_with_the_serial_result() {
    let w = world(64, |s| s.quotas.max_clusters_per_project = 1000).await;
    let app = &w.fleet.app;
    let (stay_out, leave) = w.clusters.split_at(32);
    let fed = completed_federation(&w, json!({"member_ids": leave})).await;

    let mut patches: Vec<Value> = Vec::with_capacity(64);
    for (a, b) in stay_out.iter().zip(leave) {
        patches.push(join_ops(a));
        patches.push(unjoin_ops(b));
    }
    let started = Instant::now();
    let results = parallel_patches(app, &fed, patches).await;
    eprintln!("32 joins + 32 unjoins answered in {:?}", started.elapsed());
    for r in &results {
        assert_eq!(r.status, 202, "{}", r.text);
    }
    let expected: BTreeSet<String> = stay_out.iter().cloned().collect();
    assert_eq!(member_set(&show(app, &fed).await), expected);
    drain_polling(&w.fleet.conductor).await;
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "UPDATE_COMPLETE");
    assert_eq!(members(&v).len(), 32);
    assert_eq!(member_set(&v), expected);
}

// ---------------------------------------------------------------------------------------------
// Failures and notifications
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_failing_driver_leaves_the_federation_create_failed_with_its_reason() {
    let w = world(0, |_| {}).await;
    let app = &w.fleet.app;
    let failing = labelled_cluster_as(
        app,
        &app.headers,
        &w.template,
        "failing-host",
        json!({"fake_fail": "federation"}),
    )
    .await;
    drain_polling(&w.fleet.conductor).await;
    let fed = make_federation_as(
        app,
        &merged(federation_body(&failing), json!({}), &[]),
        &app.headers,
    )
    .await;
    let outcomes = drain_polling(&w.fleet.conductor).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Failed { .. }]),
        "{outcomes:?}"
    );
    let v = show(app, &fed).await;
    assert_eq!(v["status"], "CREATE_FAILED");
    assert_eq!(
        v["status_reason"],
        "The fake driver simulated a failure of 'federation' (label fake_fail=federation)."
    );
    let events = app.store.pending_events(1000).await.expect("events");
    let last = events
        .iter()
        .rev()
        .find(|e| e.resource_uuid == fed)
        .expect("an event");
    assert_eq!(last.event_type, "magnum.federation.create");
    assert_eq!(last.priority, "ERROR");
    assert_eq!(last.message_json()["payload"]["outcome"], "failure");
}

#[tokio::test]
async fn create_join_and_delete_are_notified_with_the_member_change() {
    let w = world(1, |_| {}).await;
    let app = &w.fleet.app;
    let member = &w.clusters[0];
    let fed = completed_federation(&w, json!({})).await;
    patch_ok(app, &fed, join_ops(member)).await;
    drain_polling(&w.fleet.conductor).await;
    assert_eq!(app.delete_federation(&fed).await.status, 204);
    drain_polling(&w.fleet.conductor).await;

    let events: Vec<_> = app
        .store
        .pending_events(1000)
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.resource_uuid == fed)
        .collect();
    let seen: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e.event_type.clone(),
                e.message_json()["payload"]["outcome"]
                    .as_str()
                    .expect("outcome")
                    .to_string(),
                e.priority.clone(),
            )
        })
        .collect();
    let expect = |t: &str, o: &str| {
        (
            format!("magnum.federation.{t}"),
            o.to_string(),
            "INFO".to_string(),
        )
    };
    assert_eq!(
        seen,
        vec![
            expect("create", "pending"),
            expect("create", "success"),
            expect("update", "pending"),
            expect("update", "success"),
            expect("delete", "pending"),
            expect("delete", "success"),
        ]
    );
    let created = &events[0].message_json();
    assert_eq!(created["publisher_id"], "container-infra.test-host");
    assert_eq!(created["_context_project_id"], "project-a");
    assert_eq!(created["_context_user_id"], "user-a");
    let payload = &created["payload"];
    assert_eq!(payload["target"]["typeURI"], "service/magnum/federation");
    assert_eq!(payload["target"]["id"], json!(fed));
    assert_eq!(payload["target"]["name"], "fed");
    assert_eq!(payload["initiator"]["project_id"], "project-a");
    let content = &payload["target"]["attachments"][0]["content"];
    assert_eq!(
        payload["target"]["attachments"][0]["name"],
        "federation_data"
    );
    assert_eq!(content["status"], "CREATE_IN_PROGRESS");
    assert_eq!(content["hostcluster_id"], json!(w.host));
    assert_eq!(content["properties"], json!({"dns-zone": "example.com."}));
    assert!(content.get("member_change").is_none());

    for e in &events[2..4] {
        let content = &e.message_json()["payload"]["target"]["attachments"][0]["content"];
        assert_eq!(
            content["member_change"],
            json!({"joined": [member], "unjoined": []}),
            "{}",
            e.event_type
        );
        assert_eq!(content["member_ids"], json!([member]));
    }
    let pending_update =
        &events[2].message_json()["payload"]["target"]["attachments"][0]["content"];
    assert_eq!(pending_update["status"], "UPDATE_IN_PROGRESS");
    let deleted = &events[5].message_json()["payload"]["target"]["attachments"][0]["content"];
    assert_eq!(deleted["status"], "DELETE_COMPLETE");
}
