//! The api-ref samples are real: each one is replayed against the running service and the
//! response must match it (same keys and values; ids, hosts and timestamps normalised).

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::helpers::{spawn_app, TestApp};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/api-ref/source/samples");
const SAMPLE_HOST: &str = "http://127.0.0.1:9511";

fn sample(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{SAMPLES}/{name}")).expect("sample exists");
    serde_json::from_str(&text).expect("sample is JSON")
}

/// Replaces this run's host and ids by the sample's, so the two can be compared as a whole.
fn normalise(app: &TestApp, actual: &Value, ids: &[(String, String)]) -> Value {
    let mut text = actual.to_string().replace(&app.address, SAMPLE_HOST);
    for (ours, theirs) in ids {
        text = text.replace(ours, theirs);
    }
    serde_json::from_str(&text).expect("json")
}

/// Equal, except timestamps, which only need the same type (string or null).
#[track_caller]
fn assert_matches(sample: &Value, actual: &Value, path: &str) {
    match (sample, actual) {
        (Value::Object(s), Value::Object(a)) => {
            let sk: Vec<_> = s.keys().collect();
            let ak: Vec<_> = a.keys().collect();
            assert_eq!(sk, ak, "keys differ at {path}");
            for (k, v) in s {
                let sub = format!("{path}/{k}");
                if k == "created_at" || (k == "updated_at" && !v.is_null()) {
                    assert_eq!(v.is_string(), a[k].is_string(), "type differs at {sub}");
                } else {
                    assert_matches(v, &a[k], &sub);
                }
            }
        }
        (Value::Array(s), Value::Array(a)) => {
            assert_eq!(s.len(), a.len(), "length differs at {path}");
            for (i, (x, y)) in s.iter().zip(a).enumerate() {
                assert_matches(x, y, &format!("{path}/{i}"));
            }
        }
        _ => assert_eq!(sample, actual, "value differs at {path}"),
    }
}

#[tokio::test]
async fn the_cluster_template_samples_match_real_responses() {
    let app = spawn_app().await;
    // The samples were taken with the default no-auth identity.
    let anon = HeaderMap::new();
    let created = app
        .post_as(
            "/v1/clustertemplates",
            &sample("clustertemplate-create-req.json"),
            &anon,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let expected = sample("clustertemplate-create-resp.json");
    let ids = vec![(
        created.body["uuid"].as_str().expect("uuid").to_string(),
        expected["uuid"].as_str().expect("uuid").to_string(),
    )];
    assert_matches(&expected, &normalise(&app, &created.body, &ids), "");
    let uuid = &ids[0].0;

    let shown = app
        .get_as(&format!("/v1/clustertemplates/{uuid}"), &anon)
        .await;
    assert_matches(
        &sample("clustertemplate-get-resp.json"),
        &normalise(&app, &shown.body, &ids),
        "",
    );

    let listed = app.get_as("/v1/clustertemplates", &anon).await;
    assert_matches(
        &sample("clustertemplates-list-resp.json"),
        &normalise(&app, &listed.body, &ids),
        "",
    );

    let updated = app
        .patch_as(
            &format!("/v1/clustertemplates/{uuid}"),
            &sample("clustertemplate-update-req.json"),
            &anon,
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_matches(
        &sample("clustertemplate-update-resp.json"),
        &normalise(&app, &updated.body, &ids),
        "",
    );
}

#[tokio::test]
async fn the_version_and_error_samples_match_real_responses() {
    let app = spawn_app().await;
    let anon = HeaderMap::new();
    for (path, name) in [
        ("/", "versions-get-resp.json"),
        ("/v1", "version-v1-get-resp.json"),
    ] {
        let r = app.get_as(path, &anon).await;
        assert_matches(&sample(name), &normalise(&app, &r.body, &[]), name);
    }
    let r = app.get_as("/v1/clustertemplates/nope", &anon).await;
    assert_eq!(r.status, 404);
    assert_matches(
        &sample("error-not-found-resp.json"),
        &r.body,
        "error-not-found",
    );
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra 1.99")]);
    let r = app.get_as("/v1/clustertemplates", &h).await;
    assert_eq!(r.status, 406);
    assert_matches(
        &sample("error-microversion-resp.json"),
        &r.body,
        "error-microversion",
    );
}

#[tokio::test]
async fn the_nodegroup_samples_match_real_responses() {
    use fleetyard::conductor::{Conductor, Outcome};
    use fleetyard::drivers::DriverRegistry;

    let tweak = |s: &mut fleetyard::config::Settings| {
        s.fake_driver.create_seconds = 0;
        s.fake_driver.update_seconds = 0;
    };
    let app = crate::helpers::spawn_with(crate::helpers::Backend::Postgres, tweak).await;
    let mut settings = crate::helpers::test_settings(&app.db.url);
    tweak(&mut settings);
    let conductor = Conductor::new(
        app.store.clone(),
        DriverRegistry::build(&settings.drivers, &settings.fake_driver).expect("drivers"),
        "test-host",
        settings.conductor.clone(),
    );
    let drain =
        || async { while conductor.try_execute_one().await.expect("job") != Outcome::Idle {} };
    // The samples were taken with the default no-auth identity, as the CLI sends them.
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra latest")]);
    let t = app
        .post_as(
            "/v1/clustertemplates",
            &serde_json::json!({"name": "k8s-template", "coe": "kubernetes", "image_id": "fedora-coreos-40"}),
            &h,
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.text);
    let c = app
        .post_as(
            "/v1/clusters",
            &serde_json::json!({"name": "k8s", "cluster_template_id": t.body["uuid"], "node_count": 1,
                                "flavor_id": "m1.small",
                                "labels": {"kube_tag": "v1.30.1", "role": "general", "zone": "a"}}),
            &h,
        )
        .await;
    assert_eq!(c.status, 202, "{}", c.text);
    let cluster = c.body["uuid"].as_str().expect("uuid").to_string();
    drain().await;

    let created = app
        .post_as(
            &format!("/v1/clusters/{cluster}/nodegroups/"),
            &sample("nodegroup-create-req.json"),
            &h,
        )
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let expected = sample("nodegroup-create-resp.json");
    let uuid = created.body["uuid"].as_str().expect("uuid").to_string();
    let mut ids = vec![
        (
            cluster.clone(),
            expected["cluster_id"].as_str().expect("c").to_string(),
        ),
        (
            uuid.clone(),
            expected["uuid"].as_str().expect("uuid").to_string(),
        ),
    ];
    assert_matches(&expected, &normalise(&app, &created.body, &ids), "");
    drain().await;

    let shown = app
        .get_as(&format!("/v1/clusters/{cluster}/nodegroups/{uuid}"), &h)
        .await;
    let expected = sample("nodegroup-get-resp.json");
    // Node addresses derive from the cluster's uuid.
    for (ours, theirs) in shown.body["node_addresses"]
        .as_array()
        .expect("addresses")
        .iter()
        .zip(expected["node_addresses"].as_array().expect("addresses"))
    {
        ids.push((
            ours.as_str().expect("address").to_string(),
            theirs.as_str().expect("address").to_string(),
        ));
    }
    assert_matches(&expected, &normalise(&app, &shown.body, &ids), "");

    let listed = app
        .get_as(&format!("/v1/clusters/{cluster}/nodegroups/"), &h)
        .await;
    let expected = sample("nodegroups-list-resp.json");
    for (ours, theirs) in listed.body["nodegroups"]
        .as_array()
        .expect("list")
        .iter()
        .zip(expected["nodegroups"].as_array().expect("list"))
    {
        ids.push((
            ours["uuid"].as_str().expect("uuid").to_string(),
            theirs["uuid"].as_str().expect("uuid").to_string(),
        ));
    }
    assert_matches(&expected, &normalise(&app, &listed.body, &ids), "");

    let updated = app
        .patch_as(
            &format!("/v1/clusters/{cluster}/nodegroups/{uuid}"),
            &sample("nodegroup-update-req.json"),
            &h,
        )
        .await;
    assert_eq!(updated.status, 202, "{}", updated.text);
    assert_matches(
        &sample("nodegroup-update-resp.json"),
        &normalise(&app, &updated.body, &ids),
        "",
    );

    let refused = app
        .delete_as(
            &format!("/v1/clusters/{cluster}/nodegroups/default-worker"),
            &h,
        )
        .await;
    assert_eq!(refused.status, 400);
    assert_matches(
        &sample("error-nodegroup-delete-default-resp.json"),
        &refused.body,
        "error-nodegroup-delete-default",
    );
}

#[tokio::test]
async fn the_certificate_and_credential_samples_match_real_responses() {
    use crate::clusters::{at, cluster_as, drain, template_as};

    let pki = crate::certificates::spawn_pki(crate::helpers::Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    // The samples were taken with the default no-auth identity (an admin).
    let anon = HeaderMap::new();
    let t = template_as(app, "k8s-template", serde_json::json!({}), &anon).await;
    let uuid = cluster_as(
        app,
        serde_json::json!({"name": "k8s-a", "cluster_template_id": t}),
        &anon,
    )
    .await;
    drain(&pki.conductor).await;
    let expected = sample("certificate-get-resp.json");
    let ids = vec![(
        uuid.clone(),
        expected["cluster_uuid"].as_str().expect("uuid").to_string(),
    )];
    // PEMs differ from run to run: each must be a certificate, then it is compared as the sample's.
    let same_pem = |actual: &mut Value, sample: &Value| {
        let pem = actual["pem"].as_str().expect("pem");
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"), "{pem}");
        actual["pem"] = sample["pem"].clone();
    };

    let r = app.get_as(&format!("/v1/certificates/{uuid}"), &anon).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut got = normalise(app, &r.body, &ids);
    same_pem(&mut got, &expected);
    assert_matches(&expected, &got, "certificate-get");

    let mut req = sample("certificate-sign-req.json");
    req["cluster_uuid"] = Value::String(uuid.clone());
    let r = app.post_as("/v1/certificates", &req, &anon).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let expected = sample("certificate-sign-resp.json");
    let mut got = normalise(app, &r.body, &ids);
    same_pem(&mut got, &expected);
    assert_matches(&expected, &got, "certificate-sign");

    let r = app
        .patch_as(&format!("/v1/certificates/{uuid}"), &Value::Null, &anon)
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_matches(
        &sample("certificate-rotate-resp.json"),
        &normalise(app, &r.body, &ids),
        "certificate-rotate",
    );
    drain(&pki.conductor).await;

    let r = app
        .patch_as(
            &format!("/v1/credentials/{uuid}"),
            &Value::Null,
            &at(&anon, "1.12"),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_matches(
        &sample("credential-rotate-resp.json"),
        &normalise(app, &r.body, &ids),
        "credential-rotate",
    );
}

/// The sample's ids replaced by this run's, for replaying a request sample.
fn ours(sample: &Value, ids: &[(String, String)]) -> Value {
    let mut text = sample.to_string();
    for (ours, theirs) in ids {
        text = text.replace(theirs, ours);
    }
    serde_json::from_str(&text).expect("json")
}

#[tokio::test]
async fn the_federation_samples_match_real_responses() {
    use crate::federations::{cluster_as, drain, spawn_fleet};

    let fleet = spawn_fleet(|_| {}).await;
    let app = &fleet.app;
    // The samples were taken with the default no-auth identity (an admin: project_id shows).
    let anon = HeaderMap::new();
    let template = app
        .create_template_as(
            "k8s",
            serde_json::json!({"external_network_id": "public"}),
            &anon,
        )
        .await;
    let template = template["uuid"].as_str().expect("uuid");
    let host = cluster_as(app, &anon, template, "host1", serde_json::json!({})).await;
    let member = cluster_as(app, &anon, template, "member1", serde_json::json!({})).await;
    drain(&fleet.conductor).await;

    let created = app
        .post_as(
            "/v1/federations",
            &sample("federation-create-req.json"),
            &anon,
        )
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let shown = sample("federation-get-resp.json");
    let id = |v: &Value| v.as_str().expect("uuid").to_string();
    let ids = vec![
        (
            id(&created.body["uuid"]),
            id(&sample("federation-create-resp.json")["uuid"]),
        ),
        (host, id(&shown["hostcluster_id"])),
        (member, id(&shown["member_ids"][0])),
    ];
    assert_matches(
        &sample("federation-create-resp.json"),
        &normalise(app, &created.body, &ids),
        "",
    );
    let path = format!("/v1/federations/{}", ids[0].0);
    drain(&fleet.conductor).await;

    let joined = app
        .patch_as(
            &path,
            &ours(&sample("federation-join-req.json"), &ids),
            &anon,
        )
        .await;
    assert_eq!(joined.status, 202, "{}", joined.text);
    assert_matches(
        &sample("federation-update-resp.json"),
        &normalise(app, &joined.body, &ids),
        "",
    );
    drain(&fleet.conductor).await;
    let got = app.get_as(&path, &anon).await;
    assert_matches(&shown, &normalise(app, &got.body, &ids), "");
    let listed = app.get_as("/v1/federations", &anon).await;
    assert_matches(
        &sample("federation-list-resp.json"),
        &normalise(app, &listed.body, &ids),
        "",
    );
    let again = app
        .patch_as(
            &path,
            &ours(&sample("federation-join-req.json"), &ids),
            &anon,
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_matches(
        &sample("federation-join-conflict-resp.json"),
        &normalise(app, &again.body, &ids),
        "",
    );

    for req in ["federation-update-req.json", "federation-unjoin-req.json"] {
        let r = app.patch_as(&path, &ours(&sample(req), &ids), &anon).await;
        assert_eq!(r.status, 202, "{req}: {}", r.text);
        assert_matches(
            &sample("federation-update-resp.json"),
            &normalise(app, &r.body, &ids),
            req,
        );
    }
    drain(&fleet.conductor).await;
    let got = app.get_as(&path, &anon).await;
    assert_eq!(got.body["member_ids"], serde_json::json!([]));
    assert_eq!(
        got.body["properties"],
        serde_json::json!({"dns-zone": "example.org.", "owner": "ops"})
    );
    assert_eq!(app.delete_as(&path, &anon).await.status, 204);
}

/// Pairs this run's values with the sample's, for values derived from ids (node addresses,
/// the API address): the JSON strings at `key` (a string or an array of strings), quoted so an
/// address cannot match inside a longer one.
fn derived_pairs(actual: &Value, expected: &Value, key: &str) -> Vec<(String, String)> {
    let quoted = |v: &Value| v.to_string();
    match (&actual[key], &expected[key]) {
        (Value::Array(a), Value::Array(e)) => a
            .iter()
            .zip(e)
            .map(|(a, e)| (quoted(a), quoted(e)))
            .collect(),
        (a @ Value::String(_), e @ Value::String(_)) => vec![(quoted(a), quoted(e))],
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn the_cluster_and_stats_samples_match_real_responses() {
    use crate::clusters::{conductor, drain, instant};

    let app = spawn_app().await;
    let c = conductor(&app, instant());
    // The samples were taken at `latest` with the default no-auth identity (an admin:
    // project_id shows in the summary), with the fake driver finishing within each job.
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra latest")]);
    let template = sample("clustertemplate-create-req.json");
    let t = app.post_as("/v1/clustertemplates", &template, &h).await;
    assert_eq!(t.status, 201, "{}", t.text);
    let mut newer = template.clone();
    newer["name"] = Value::from("k8s-fedora-coreos-v1.31");
    newer["labels"]["kube_tag"] = Value::from("v1.31.0");
    let t2 = app.post_as("/v1/clustertemplates", &newer, &h).await;
    assert_eq!(t2.status, 201, "{}", t2.text);

    let created = app
        .post_as("/v1/clusters", &sample("cluster-create-req.json"), &h)
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let shown_sample = sample("cluster-get-resp.json");
    let id = |v: &Value| v.as_str().expect("uuid").to_string();
    let mut ids = vec![
        (
            id(&created.body["uuid"]),
            id(&sample("cluster-create-resp.json")["uuid"]),
        ),
        (
            id(&t.body["uuid"]),
            id(&shown_sample["cluster_template_id"]),
        ),
    ];
    assert_matches(
        &sample("cluster-create-resp.json"),
        &normalise(&app, &created.body, &ids),
        "",
    );
    let path = format!("/v1/clusters/{}", ids[0].0);
    drain(&c).await;

    let shown = app.get_as(&path, &h).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    for key in ["api_address", "master_addresses", "node_addresses"] {
        ids.extend(derived_pairs(&shown.body, &shown_sample, key));
    }
    assert_matches(&shown_sample, &normalise(&app, &shown.body, &ids), "");
    let listed = app.get_as("/v1/clusters", &h).await;
    assert_matches(
        &sample("clusters-list-resp.json"),
        &normalise(&app, &listed.body, &ids),
        "",
    );

    for (method, suffix, req, resp) in [
        (
            reqwest::Method::PATCH,
            "",
            "cluster-update-req.json",
            "cluster-update-resp.json",
        ),
        (
            reqwest::Method::POST,
            "/actions/resize",
            "cluster-resize-req.json",
            "cluster-resize-resp.json",
        ),
        (
            reqwest::Method::POST,
            "/actions/upgrade",
            "cluster-upgrade-req.json",
            "cluster-upgrade-resp.json",
        ),
    ] {
        let r = app
            .request(method, &format!("{path}{suffix}"), &h, Some(&sample(req)))
            .await;
        assert_eq!(r.status, 202, "{req}: {}", r.text);
        assert_matches(&sample(resp), &normalise(&app, &r.body, &ids), resp);
        drain(&c).await;
    }
    let upgraded = app.get_as(&path, &h).await;
    assert_eq!(upgraded.body["status"], "UPDATE_COMPLETE");
    assert_eq!(upgraded.body["cluster_template_id"], t2.body["uuid"]);
    assert_eq!(upgraded.body["node_count"], 2);

    let stats = app.get_as("/v1/stats?project_id=admin", &h).await;
    assert_matches(&sample("stats-get-resp.json"), &stats.body, "stats");
}

#[tokio::test]
async fn the_quota_and_service_samples_match_real_responses() {
    let app = spawn_app().await;
    let anon = HeaderMap::new();
    let created = app
        .post_as("/v1/quotas", &sample("quota-create-req.json"), &anon)
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_matches(
        &sample("quota-create-resp.json"),
        &created.body,
        "quota-create",
    );
    let project = sample("quota-create-req.json")["project_id"]
        .as_str()
        .expect("project")
        .to_string();
    let path = format!("/v1/quotas/{project}/Cluster");
    let shown = app.get_as(&path, &anon).await;
    assert_matches(&sample("quota-get-resp.json"), &shown.body, "quota-get");
    let default = sample("quota-get-default-resp.json");
    let other = default["project_id"].as_str().expect("project");
    let shown = app
        .get_as(&format!("/v1/quotas/{other}/Cluster"), &anon)
        .await;
    assert_matches(&default, &shown.body, "quota-get-default");
    let updated = app
        .patch_as(&path, &sample("quota-update-req.json"), &anon)
        .await;
    assert_eq!(updated.status, 202, "{}", updated.text);
    assert_matches(
        &sample("quota-update-resp.json"),
        &updated.body,
        "quota-update",
    );
    let listed = app.get_as("/v1/quotas?all_tenants=True", &anon).await;
    assert_matches(
        &sample("quotas-list-resp.json"),
        &listed.body,
        "quotas-list",
    );

    let expected = sample("mservices-list-resp.json");
    let service = &expected["mservices"][0];
    app.store
        .heartbeat_service(
            service["host"].as_str().expect("host"),
            service["binary"].as_str().expect("binary"),
        )
        .await
        .expect("heartbeat");
    let listed = app.get_as("/v1/mservices", &anon).await;
    assert_matches(&expected, &listed.body, "mservices-list");
}
