//! The api-ref samples are real: each one is replayed against the running service and the
//! response must match it (same keys and values; timestamps only by type). The sample is put
//! into this run's terms (its host and ids replaced by the ones this run must answer with)
//! before the comparison, never the response into the sample's, and every link in a response
//! must be the app's own: a wrong uuid, host or derived address fails.

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::helpers::{spawn_app, TestApp};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/api-ref/source/samples");
const SAMPLE_HOST: &str = "http://127.0.0.1:9511";

fn sample(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{SAMPLES}/{name}")).expect("sample exists");
    serde_json::from_str(&text).expect("sample is JSON")
}

/// The sample as this run must answer it: the sample's host replaced by the app's own address
/// and each of the sample's ids by this run's (`(ours, theirs)` pairs, each of "ours" known
/// before the response is read). The response is then compared with this, so a link or an
/// address that is wrong for this run fails instead of being mapped onto the sample's.
fn in_this_run(address: &str, sample: &Value, ids: &[(String, String)]) -> Value {
    let mut text = sample.to_string().replace(SAMPLE_HOST, address);
    for (ours, theirs) in ids {
        text = text.replace(theirs, ours);
    }
    serde_json::from_str(&text).expect("json")
}

/// Every `self` and `bookmark` link and every `next` page of a response is on the app's own
/// address, and every `links` list of an object with a uuid is its `self` and `bookmark`
/// link: `{address}/v1/{path}` and `{address}/{path}` for one path that ends with that uuid.
/// (Other links, such as the API document's `describedby`, are compared with the sample.)
#[track_caller]
fn assert_links(address: &str, actual: &Value, at: &str) {
    let ours = |href: &Value, at: &str| {
        let href = href
            .as_str()
            .unwrap_or_else(|| panic!("{at}: a URL: {href}"));
        assert!(
            href.starts_with(&format!("{address}/")),
            "{at}: {href} is not on the app's address {address}"
        );
    };
    match actual {
        Value::Object(o) => {
            if matches!(
                o.get("rel").and_then(Value::as_str),
                Some("self" | "bookmark")
            ) {
                ours(&o["href"], at);
            }
            if let Some(next) = o.get("next") {
                ours(next, &format!("{at}/next"));
            }
            if let (Some(uuid), Some(links)) =
                (o.get("uuid").and_then(Value::as_str), o.get("links"))
            {
                let own = links[0]["href"]
                    .as_str()
                    .and_then(|h| h.strip_prefix(&format!("{address}/v1/")))
                    .unwrap_or_else(|| panic!("{at}: a self link under /v1: {links}"));
                assert!(
                    own.ends_with(&format!("/{uuid}")),
                    "{at}: the self link names the object's own uuid {uuid}: {links}"
                );
                assert_eq!(
                    links,
                    &serde_json::json!([
                        {"href": format!("{address}/v1/{own}"), "rel": "self"},
                        {"href": format!("{address}/{own}"), "rel": "bookmark"},
                    ]),
                    "{at}: self and bookmark links"
                );
            }
            for (k, v) in o {
                assert_links(address, v, &format!("{at}/{k}"));
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                assert_links(address, v, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

/// The response matches the sample as this run must answer it (`in_this_run`), and its links
/// are the app's own.
#[track_caller]
fn assert_sample(
    app: &TestApp,
    sample: &Value,
    actual: &Value,
    ids: &[(String, String)],
    at: &str,
) {
    assert_sample_at(&app.address, sample, actual, ids, at);
}

#[track_caller]
fn assert_sample_at(
    address: &str,
    sample: &Value,
    actual: &Value,
    ids: &[(String, String)],
    at: &str,
) {
    assert_links(address, actual, at);
    assert_matches(&in_this_run(address, sample, ids), actual, at);
}

/// The address the fake driver gives node `index` of the cluster's `group`-th node group (in
/// creation order: default-master, default-worker, then added groups), derived from the
/// cluster's uuid alone.
fn fake_address(cluster: &str, group: usize, index: usize) -> String {
    let b = uuid::Uuid::parse_str(cluster)
        .expect("cluster uuid")
        .into_bytes();
    format!(
        "10.{}.{}.{}",
        b[0] % 250,
        (b[1] as usize + group * 16) % 250,
        10 + index
    )
}

/// Pairs this run's addresses of `cluster`'s `group`-th node group (as the fake driver derives
/// them) with the sample's at `key`, quoted so an address cannot match inside a longer one.
fn address_pairs(cluster: &str, group: usize, sample: &Value, key: &str) -> Vec<(String, String)> {
    sample[key]
        .as_array()
        .unwrap_or_else(|| panic!("the sample has {key}"))
        .iter()
        .enumerate()
        .map(|(i, theirs)| {
            (
                Value::from(fake_address(cluster, group, i)).to_string(),
                theirs.to_string(),
            )
        })
        .collect()
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
                let stamp = matches!(k.as_str(), "updated_at" | "consented_at");
                if k == "created_at" || (stamp && !v.is_null()) {
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
    assert_sample(&app, &expected, &created.body, &ids, "");
    let uuid = &ids[0].0;

    let shown = app
        .get_as(&format!("/v1/clustertemplates/{uuid}"), &anon)
        .await;
    assert_sample(
        &app,
        &sample("clustertemplate-get-resp.json"),
        &shown.body,
        &ids,
        "",
    );

    let listed = app.get_as("/v1/clustertemplates", &anon).await;
    assert_sample(
        &app,
        &sample("clustertemplates-list-resp.json"),
        &listed.body,
        &ids,
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
    assert_sample(
        &app,
        &sample("clustertemplate-update-resp.json"),
        &updated.body,
        &ids,
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
        assert_sample(&app, &sample(name), &r.body, &[], name);
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
    use crate::helpers::{conductor_from, spawn_keeping, Backend};
    use fleetyard::conductor::Outcome;

    let (app, settings) = spawn_keeping(Backend::Postgres, |s| {
        s.fake_driver.create_seconds = 0;
        s.fake_driver.update_seconds = 0;
    })
    .await;
    let conductor = conductor_from(&app, &settings);
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
    assert_sample(&app, &expected, &created.body, &ids, "");
    drain().await;

    let shown = app
        .get_as(&format!("/v1/clusters/{cluster}/nodegroups/{uuid}"), &h)
        .await;
    let expected = sample("nodegroup-get-resp.json");
    // Node addresses derive from the cluster's uuid; ng-db is the cluster's third group.
    ids.extend(address_pairs(&cluster, 2, &expected, "node_addresses"));
    assert_sample(&app, &expected, &shown.body, &ids, "");

    let listed = app
        .get_as(&format!("/v1/clusters/{cluster}/nodegroups/"), &h)
        .await;
    let expected = sample("nodegroups-list-resp.json");
    // The default groups' uuids, each read by its name (not from the list under test).
    for theirs in expected["nodegroups"].as_array().expect("list") {
        let name = theirs["name"].as_str().expect("name");
        if name == "ng-db" {
            continue;
        }
        let by_name = app
            .get_as(&format!("/v1/clusters/{cluster}/nodegroups/{name}"), &h)
            .await;
        assert_eq!(by_name.status, 200, "{}", by_name.text);
        assert_eq!(by_name.body["name"], name);
        ids.push((
            by_name.body["uuid"].as_str().expect("uuid").to_string(),
            theirs["uuid"].as_str().expect("uuid").to_string(),
        ));
    }
    assert_sample(&app, &expected, &listed.body, &ids, "");

    let updated = app
        .patch_as(
            &format!("/v1/clusters/{cluster}/nodegroups/{uuid}"),
            &sample("nodegroup-update-req.json"),
            &h,
        )
        .await;
    assert_eq!(updated.status, 202, "{}", updated.text);
    assert_sample(
        &app,
        &sample("nodegroup-update-resp.json"),
        &updated.body,
        &ids,
        "",
    );

    // From 1.20 the flavor changes by a rolling replacement of the group's machines.
    drain().await;
    let rolled = app
        .patch_as(
            &format!("/v1/clusters/{cluster}/nodegroups/{uuid}"),
            &sample("nodegroup-roll-req.json"),
            &h,
        )
        .await;
    assert_eq!(rolled.status, 202, "{}", rolled.text);
    assert_sample(
        &app,
        &sample("nodegroup-roll-resp.json"),
        &rolled.body,
        &ids,
        "",
    );
    drain().await;

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
    use crate::helpers::{at, cluster_as, drain, spawn_pki, template_as};

    let pki = spawn_pki(crate::helpers::Backend::Postgres, |_| {}).await;
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
    let same_pem = |actual: &Value, sample: &Value| {
        let pem = actual["pem"].as_str().expect("pem");
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"), "{pem}");
        let mut got = actual.clone();
        got["pem"] = sample["pem"].clone();
        got
    };

    let r = app.get_as(&format!("/v1/certificates/{uuid}"), &anon).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let got = same_pem(&r.body, &expected);
    assert_sample(app, &expected, &got, &ids, "certificate-get");

    let mut req = sample("certificate-sign-req.json");
    req["cluster_uuid"] = Value::String(uuid.clone());
    let r = app.post_as("/v1/certificates", &req, &anon).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let expected = sample("certificate-sign-resp.json");
    let got = same_pem(&r.body, &expected);
    assert_sample(app, &expected, &got, &ids, "certificate-sign");

    let r = app
        .patch_as(&format!("/v1/certificates/{uuid}"), &Value::Null, &anon)
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_sample(
        app,
        &sample("certificate-rotate-resp.json"),
        &r.body,
        &ids,
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
    assert_sample(
        app,
        &sample("credential-rotate-resp.json"),
        &r.body,
        &ids,
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
    use crate::helpers::{drain_polling as drain, labelled_cluster_as as cluster_as, spawn_fleet};

    let fleet = spawn_fleet(|_| {}).await;
    let app = &fleet.app;
    // The samples were taken with the default no-auth identity (an admin: project_id shows).
    let anon = HeaderMap::new();
    let template = app
        .make_template_as(
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
    assert_sample(
        app,
        &sample("federation-create-resp.json"),
        &created.body,
        &ids,
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
    assert_sample(
        app,
        &sample("federation-update-resp.json"),
        &joined.body,
        &ids,
        "",
    );
    drain(&fleet.conductor).await;
    let got = app.get_as(&path, &anon).await;
    assert_sample(app, &shown, &got.body, &ids, "");
    let listed = app.get_as("/v1/federations", &anon).await;
    assert_sample(
        app,
        &sample("federation-list-resp.json"),
        &listed.body,
        &ids,
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
    assert_sample(
        app,
        &sample("federation-join-conflict-resp.json"),
        &again.body,
        &ids,
        "",
    );

    for req in ["federation-update-req.json", "federation-unjoin-req.json"] {
        let r = app.patch_as(&path, &ours(&sample(req), &ids), &anon).await;
        assert_eq!(r.status, 202, "{req}: {}", r.text);
        assert_sample(
            app,
            &sample("federation-update-resp.json"),
            &r.body,
            &ids,
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

#[tokio::test]
async fn the_cluster_and_stats_samples_match_real_responses() {
    use crate::helpers::{conductor, drain, instant};

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
    assert_sample(
        &app,
        &sample("cluster-create-resp.json"),
        &created.body,
        &ids,
        "",
    );
    let path = format!("/v1/clusters/{}", ids[0].0);
    drain(&c).await;

    let shown = app.get_as(&path, &h).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    // Addresses derive from the cluster's uuid: the master group first, the workers second.
    let cluster = ids[0].0.clone();
    ids.extend(address_pairs(
        &cluster,
        0,
        &shown_sample,
        "master_addresses",
    ));
    ids.extend(address_pairs(&cluster, 1, &shown_sample, "node_addresses"));
    ids.push((
        format!("https://{}:6443", fake_address(&cluster, 0, 0)),
        shown_sample["api_address"]
            .as_str()
            .expect("api_address")
            .to_string(),
    ));
    assert_sample(&app, &shown_sample, &shown.body, &ids, "");
    let listed = app.get_as("/v1/clusters", &h).await;
    assert_sample(
        &app,
        &sample("clusters-list-resp.json"),
        &listed.body,
        &ids,
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
        assert_sample(&app, &sample(resp), &r.body, &ids, resp);
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
async fn the_cluster_retry_sample_matches_a_real_response() {
    use crate::helpers::{conductor, drain, instant};
    use fleetyard::config::FakeDriverSection;

    let app = spawn_app().await;
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra latest")]);
    let t = app
        .post_as(
            "/v1/clustertemplates",
            &sample("clustertemplate-create-req.json"),
            &h,
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.text);
    let created = app
        .post_as("/v1/clusters", &sample("cluster-create-req.json"), &h)
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let uuid = created.body["uuid"].as_str().expect("uuid").to_string();
    let broken = conductor(
        &app,
        FakeDriverSection {
            fail_operations: "create".into(),
            ..instant()
        },
    );
    drain(&broken).await;
    let path = format!("/v1/clusters/{uuid}");
    assert_eq!(app.get_as(&path, &h).await.body["status"], "CREATE_FAILED");
    let r = app
        .request(
            reqwest::Method::POST,
            &format!("{path}/actions/retry"),
            &h,
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let sample_uuid = sample("cluster-retry-resp.json")["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    assert_sample(
        &app,
        &sample("cluster-retry-resp.json"),
        &r.body,
        &[(uuid, sample_uuid)],
        "cluster-retry-resp.json",
    );
}

/// The machine rows the machine samples show, in place of the cluster's own: `(uuid, name,
/// role, node group, spec, status)` of the samples, written as SQL.
fn machine_sample_rows(cluster: &str, project: &str, list: &Value) -> Vec<String> {
    let mut rows = vec![format!(
        "DELETE FROM machine WHERE cluster_id = '{cluster}'"
    )];
    for m in list["machines"].as_array().expect("machines") {
        let spec = &m["spec"];
        let status = &m["status"];
        let versions = |v: &Value| serde_json::json!({"kubelet": v["kubelet"], "controlPlane": v["control_plane"]});
        let stored_spec = serde_json::json!({
            "versions": versions(&spec["versions"]),
            "containerRuntime": spec["container_runtime"],
            "osImage": spec["os_image"],
            "flavor": spec["flavor"],
            "providerConfig": {"server_group": "not shown on /v1"},
            "taints": spec["taints"],
            "labels": spec["labels"],
        });
        let stored_status = serde_json::json!({
            "nodeRef": status["node_ref"],
            "addresses": status["addresses"],
            "versions": versions(&status["versions"]),
            "lastUpdated": status["last_updated"],
            "lastChange": status["last_change"],
        });
        // Nulls are absent fields in the stored form.
        let strip = |v: Value| -> String {
            fn clean(v: Value) -> Value {
                match v {
                    Value::Object(o) => Value::Object(
                        o.into_iter()
                            .filter(|(_, v)| !v.is_null())
                            .map(|(k, v)| (k, clean(v)))
                            .collect(),
                    ),
                    Value::Array(a) => Value::Array(a.into_iter().map(clean).collect()),
                    other => other,
                }
            }
            clean(v).to_string()
        };
        rows.push(format!(
            "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
             phase, provider_id, status, created_at) VALUES ('{}', '{}', '{}', '{project}', \
             '{cluster}', '{}', '{}', '{}', '{}', '{}', CURRENT_TIMESTAMP)",
            m["uuid"].as_str().expect("uuid"),
            m["name"].as_str().expect("name"),
            m["role"].as_str().expect("role"),
            m["nodegroup_id"].as_str().expect("node group"),
            strip(stored_spec),
            status["phase"].as_str().expect("phase"),
            status["provider_id"].as_str().expect("provider id"),
            strip(stored_status),
        ));
    }
    rows
}

#[tokio::test]
async fn the_machine_samples_match_real_responses() {
    use crate::helpers::{complete_cluster_with, conductor_from, exec_sql, spawn_keeping, Backend};

    let (app, settings) = spawn_keeping(Backend::Postgres, crate::helpers::instant_settings).await;
    let conductor = conductor_from(&app, &settings);
    // The samples were taken with the default no-auth identity, as the CLI sends them.
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra latest")]);
    let cluster = complete_cluster_with(&app, &conductor, "k8s", serde_json::json!({}), &h).await;
    let expected_list = sample("machines-list-resp.json");
    let expected_one = sample("machine-get-resp.json");
    // The sample's cluster and node groups are this run's; its machines are written with the
    // sample's own uuids, a third one after them so that the page of two is full.
    let mut ids = vec![(
        cluster.clone(),
        expected_list["machines"][0]["cluster_id"]
            .as_str()
            .expect("cluster")
            .to_string(),
    )];
    for theirs in expected_list["machines"].as_array().expect("machines") {
        let group = if theirs["role"] == "master" {
            "default-master"
        } else {
            "default-worker"
        };
        let ours = app
            .get_as(&format!("/v1/clusters/{cluster}/nodegroups/{group}"), &h)
            .await;
        assert_eq!(ours.status, 200, "{}", ours.text);
        ids.push((
            ours.body["uuid"].as_str().expect("uuid").to_string(),
            theirs["nodegroup_id"].as_str().expect("group").to_string(),
        ));
    }
    let project = app
        .get_as(&format!("/v1/clusters/{cluster}"), &h)
        .await
        .body["project_id"]
        .as_str()
        .expect("project")
        .to_string();
    let ours = in_this_run(&app.address, &expected_list, &ids);
    let mut rows = machine_sample_rows(&cluster, &project, &ours);
    let mut third = ours["machines"][1].clone();
    third["uuid"] = Value::from("3f1c2a9e-7b4d-4c8e-9a61-2d5e8f0b7c03");
    third["name"] = Value::from("default-worker-2");
    third["status"]["provider_id"] = Value::from("openstack:///third");
    rows.extend(
        machine_sample_rows(
            &cluster,
            &project,
            &serde_json::json!({"machines": [third]}),
        )
        .into_iter()
        .skip(1),
    );
    exec_sql(&app.db.url, &rows).await;

    let listed = app
        .get_as(&format!("/v1/clusters/{cluster}/machines?limit=2"), &h)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_sample(&app, &expected_list, &listed.body, &ids, "");
    let uuid = expected_one["uuid"].as_str().expect("uuid");
    let shown = app
        .get_as(&format!("/v1/clusters/{cluster}/machines/{uuid}"), &h)
        .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_sample(&app, &expected_one, &shown.body, &ids, "");
    assert_eq!(
        shown.body, listed.body["machines"][1],
        "the list shows each machine whole"
    );
}

/// The samples of one machine's changes (microversion 1.20): the patch of the worker's kubelet
/// version, the master's replacement and a second worker's reboot, each answered 202 with the
/// machine `Provisioning`, on the machines of the list and reboot samples.
#[tokio::test]
async fn the_machine_change_samples_match_real_responses() {
    use crate::helpers::{complete_cluster_with, conductor_from, exec_sql, spawn_keeping, Backend};

    let (app, settings) = spawn_keeping(Backend::Sqlite, crate::helpers::instant_settings).await;
    let conductor = conductor_from(&app, &settings);
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra latest")]);
    let cluster = complete_cluster_with(&app, &conductor, "k8s", serde_json::json!({}), &h).await;
    let list = sample("machines-list-resp.json");
    let rebooted = sample("machine-reboot-resp.json");
    let mut ids = vec![(
        cluster.clone(),
        list["machines"][0]["cluster_id"]
            .as_str()
            .expect("cluster")
            .to_string(),
    )];
    for (theirs, group) in [
        (&list["machines"][0], "default-master"),
        (&list["machines"][1], "default-worker"),
    ] {
        let ours = app
            .get_as(&format!("/v1/clusters/{cluster}/nodegroups/{group}"), &h)
            .await;
        assert_eq!(ours.status, 200, "{}", ours.text);
        ids.push((
            ours.body["uuid"].as_str().expect("uuid").to_string(),
            theirs["nodegroup_id"].as_str().expect("group").to_string(),
        ));
    }
    let project = app
        .get_as(&format!("/v1/clusters/{cluster}"), &h)
        .await
        .body["project_id"]
        .as_str()
        .expect("project")
        .to_string();
    let mut third = in_this_run(&app.address, &rebooted, &ids);
    third["status"]["phase"] = Value::from("Running");
    let mut rows = machine_sample_rows(&cluster, &project, &in_this_run(&app.address, &list, &ids));
    rows.extend(
        machine_sample_rows(
            &cluster,
            &project,
            &serde_json::json!({"machines": [third]}),
        )
        .into_iter()
        .skip(1),
    );
    exec_sql(&app.db.url, &rows).await;

    let machine = |m: &Value| {
        format!(
            "/v1/clusters/{cluster}/machines/{}",
            m["uuid"].as_str().expect("uuid")
        )
    };
    let patched = app
        .patch_as(
            &machine(&list["machines"][1]),
            &sample("machine-update-req.json"),
            &h,
        )
        .await;
    assert_eq!(patched.status, 202, "{}", patched.text);
    assert_sample(
        &app,
        &sample("machine-update-resp.json"),
        &patched.body,
        &ids,
        "",
    );
    for (m, action, resp) in [
        (&list["machines"][0], "replace", "machine-replace-resp.json"),
        (&rebooted, "reboot", "machine-reboot-resp.json"),
    ] {
        let r = app
            .post_as(
                &format!("{}/actions/{action}", machine(m)),
                &sample("machine-action-req.json"),
                &h,
            )
            .await;
        assert_eq!(r.status, 202, "{action}: {}", r.text);
        assert_sample(&app, &sample(resp), &r.body, &ids, resp);
    }
}

#[tokio::test]
async fn the_machine_create_sample_matches_a_real_response() {
    use crate::helpers::{conductor_from, drain, spawn_keeping, Backend};

    let (app, settings) = spawn_keeping(Backend::Postgres, crate::helpers::instant_settings).await;
    let conductor = conductor_from(&app, &settings);
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
                                "flavor_id": "m1.small", "labels": {"kube_tag": "v1.30.1"}}),
            &h,
        )
        .await;
    assert_eq!(c.status, 202, "{}", c.text);
    let cluster = c.body["uuid"].as_str().expect("uuid").to_string();
    drain(&conductor).await;
    let group = app
        .get_as(
            &format!("/v1/clusters/{cluster}/nodegroups/default-worker"),
            &h,
        )
        .await;
    assert_eq!(group.status, 200, "{}", group.text);

    let created = app
        .post_as(
            &format!("/v1/clusters/{cluster}/nodegroups/default-worker/machines"),
            &sample("machine-create-req.json"),
            &h,
        )
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let expected = sample("machine-create-resp.json");
    let uuid = created.body["uuid"].as_str().expect("uuid").to_string();
    let ids = vec![
        (
            cluster.clone(),
            expected["cluster_id"].as_str().expect("c").to_string(),
        ),
        (
            group.body["uuid"].as_str().expect("group").to_string(),
            expected["nodegroup_id"]
                .as_str()
                .expect("group")
                .to_string(),
        ),
        (
            uuid.clone(),
            expected["uuid"].as_str().expect("uuid").to_string(),
        ),
    ];
    assert_sample(&app, &expected, &created.body, &ids, "");
    assert_eq!(
        created.header("location"),
        Some(format!(
            "{}/v1/clusters/{cluster}/machines/{uuid}",
            app.address
        ))
    );
}

#[tokio::test]
async fn the_nodegroup_and_federation_retry_samples_match_real_responses() {
    use crate::helpers::{conductor, drain, instant};
    use fleetyard::config::FakeDriverSection;

    let app = spawn_app().await;
    let h = crate::helpers::header_map(&[("OpenStack-API-Version", "container-infra latest")]);
    let t = app
        .post_as(
            "/v1/clustertemplates",
            &sample("clustertemplate-create-req.json"),
            &h,
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.text);
    let created = app
        .post_as("/v1/clusters", &sample("cluster-create-req.json"), &h)
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let cluster = created.body["uuid"].as_str().expect("uuid").to_string();
    drain(&conductor(&app, instant())).await;
    // An infrastructure that refuses node group work and federations.
    let broken = conductor(
        &app,
        FakeDriverSection {
            fail_operations: "update,federation".into(),
            ..instant()
        },
    );
    let ng = app
        .post_as(
            &format!("/v1/clusters/{cluster}/nodegroups"),
            &sample("nodegroup-create-req.json"),
            &h,
        )
        .await;
    assert_eq!(ng.status, 202, "{}", ng.text);
    let ng = ng.body["uuid"].as_str().expect("uuid").to_string();
    let fed = app
        .post_as(
            "/v1/federations",
            &serde_json::json!({"name": "fed1", "hostcluster_id": cluster,
                                "properties": {"dns-zone": "example.com."}}),
            &h,
        )
        .await;
    assert_eq!(fed.status, 202, "{}", fed.text);
    let fed = fed.body["uuid"].as_str().expect("uuid").to_string();
    drain(&broken).await;

    for (path, uuid, name) in [
        (
            format!("/v1/clusters/{cluster}/nodegroups/{ng}/actions/retry"),
            ng,
            "nodegroup-retry-resp.json",
        ),
        (
            format!("/v1/federations/{fed}/actions/retry"),
            fed,
            "federation-retry-resp.json",
        ),
    ] {
        let r = app.request(reqwest::Method::POST, &path, &h, None).await;
        assert_eq!(r.status, 202, "{path}: {}", r.text);
        let sample_uuid = sample(name)["uuid"].as_str().expect("uuid").to_string();
        assert_sample(&app, &sample(name), &r.body, &[(uuid, sample_uuid)], name);
    }
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

/// The comparison itself can fail: a response that is right except for one link or address
/// (each of which the comparison once mapped onto the sample's) does not match.
#[test]
fn a_wrong_link_host_uuid_or_address_fails_the_sample_comparison() {
    let address = "http://127.0.0.1:40123";
    let cluster = "5a0c1f7e-3b2d-4c6a-9e8f-0a1b2c3d4e5f";
    let template = "6b1d2e8f-4c3e-4d7b-8f9a-1b2c3d4e5f60";
    let sample = sample("cluster-get-resp.json");
    let id = |v: &Value| v.as_str().expect("uuid").to_string();
    let mut ids = vec![
        (cluster.to_string(), id(&sample["uuid"])),
        (template.to_string(), id(&sample["cluster_template_id"])),
    ];
    ids.extend(address_pairs(cluster, 0, &sample, "master_addresses"));
    ids.extend(address_pairs(cluster, 1, &sample, "node_addresses"));
    ids.push((
        format!("https://{}:6443", fake_address(cluster, 0, 0)),
        id(&sample["api_address"]),
    ));
    let right = in_this_run(address, &sample, &ids);
    assert_sample_at(address, &sample, &right, &ids, "right");

    let self_link = right["links"][0]["href"]
        .as_str()
        .expect("href")
        .to_string();
    let wrong: Vec<(&str, Value)> = vec![
        ("a self link on the sample's host", {
            let mut v = right.clone();
            v["links"][0]["href"] = Value::from(self_link.replace(address, SAMPLE_HOST));
            v
        }),
        ("a bookmark to another uuid", {
            let mut v = right.clone();
            v["links"][1]["href"] = Value::from(format!("{address}/clusters/{template}"));
            v
        }),
        ("an api_address not derived from the cluster's uuid", {
            let mut v = right.clone();
            v["api_address"] = Value::from("https://10.1.2.10:6443");
            v
        }),
        ("a node address of another group", {
            let mut v = right.clone();
            v["node_addresses"][0] = Value::from(fake_address(cluster, 2, 0));
            v
        }),
    ];
    for (what, response) in wrong {
        let failed = std::panic::catch_unwind(|| {
            assert_sample_at(address, &sample, &response, &ids, what);
        })
        .is_err();
        assert!(failed, "{what} must fail the comparison");
    }
}

#[tokio::test]
async fn the_forced_delete_sample_matches_a_members_refusal() {
    use crate::helpers::{complete_cluster_as, Api};

    let app = spawn_app().await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let refused = app.at("latest").force_delete_cluster(&uuid).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_matches(
        &sample("error-cluster-force-delete-resp.json"),
        &refused.body,
        "error-cluster-force-delete-resp.json",
    );
}

#[tokio::test]
async fn the_forced_node_group_delete_sample_matches_a_members_refusal() {
    use crate::helpers::{complete_cluster_as, Api};

    let app = spawn_app().await;
    let h = app.headers.clone();
    let uuid = complete_cluster_as(&app, "k1", &h).await;
    let refused = app
        .at("latest")
        .force_delete_nodegroup(&uuid, "default-worker")
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_matches(
        &sample("error-nodegroup-force-delete-resp.json"),
        &refused.body,
        "error-nodegroup-force-delete-resp.json",
    );
}

#[tokio::test]
async fn the_forced_federation_delete_sample_matches_a_members_refusal() {
    use crate::helpers::{complete_cluster_as, federation_body, make_federation_as, Api};

    let app = spawn_app().await;
    let h = app.headers.clone();
    let host = complete_cluster_as(&app, "k1", &h).await;
    let fed = make_federation_as(&app, &federation_body(&host), &h).await;
    let refused = app.at("latest").force_delete_federation(&fed).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_matches(
        &sample("error-federation-force-delete-resp.json"),
        &refused.body,
        "error-federation-force-delete-resp.json",
    );
}

#[tokio::test]
async fn the_cluster_group_samples_match_real_responses() {
    let app = spawn_app().await;
    // The samples were taken with the default no-auth identity (project `admin`), at 1.20.
    let anon = crate::helpers::at(&HeaderMap::new(), "1.20");
    let template = app
        .make_template_as("k8s", serde_json::json!({}), &anon)
        .await;
    let template = template["uuid"].as_str().expect("uuid").to_string();
    let mut clusters = Vec::new();
    for name in ["k8s-edge", "k8s-core"] {
        let r = app
            .post_as(
                "/v1/clusters",
                &serde_json::json!({"name": name, "cluster_template_id": template}),
                &anon,
            )
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
        clusters.push(r.body["uuid"].as_str().expect("uuid").to_string());
    }
    // With FLEETYARD_SHOW_GROUP_SAMPLES set, the responses are printed instead (to refresh
    // the samples).
    let record = std::env::var("FLEETYARD_SHOW_GROUP_SAMPLES").is_ok();
    let show = |name: &str, v: &Value| {
        if record {
            println!(
                "=== {name}\n{}",
                serde_json::to_string_pretty(v).expect("json")
            );
        }
    };

    let created = app
        .post_as(
            "/v1/clustergroups",
            &sample("clustergroup-create-req.json"),
            &anon,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    show("clustergroup-create-resp.json", &created.body);
    let g = created.body["uuid"].as_str().expect("uuid").to_string();
    let path = format!("/v1/clustergroups/{g}");
    let updated = app
        .patch_as(&path, &sample("clustergroup-update-req.json"), &anon)
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    show("clustergroup-update-resp.json", &updated.body);
    let listed = app.get_as("/v1/clustergroups", &anon).await;
    show("clustergroups-list-resp.json", &listed.body);
    let added = app
        .post_as(
            &format!("{path}/members"),
            &sample("clustergroup-member-add-req.json"),
            &anon,
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.text);
    show("clustergroup-member-add-resp.json", &added.body);
    let members = app.get_as(&format!("{path}/members"), &anon).await;
    show("clustergroup-members-list-resp.json", &members.body);
    let bound = app
        .post_as(
            &format!("{path}/bindings"),
            &sample("clustergroup-binding-create-req.json"),
            &anon,
        )
        .await;
    assert_eq!(bound.status, 201, "{}", bound.text);
    show("clustergroup-binding-create-resp.json", &bound.body);
    let b = bound.body["uuid"].as_str().expect("uuid").to_string();
    let bindings = app.get_as(&format!("{path}/bindings"), &anon).await;
    show("clustergroup-bindings-list-resp.json", &bindings.body);
    if record {
        return;
    }

    let id = |v: &Value| v.as_str().expect("uuid").to_string();
    let theirs = sample("clustergroup-members-list-resp.json");
    // The sample's k8s-core is the member it added; its k8s-edge the other one.
    let core = id(&sample("clustergroup-member-add-resp.json")["cluster_id"]);
    let edge = theirs["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| id(&m["cluster_id"]))
        .find(|c| *c != core)
        .expect("two members");
    let ids = vec![
        (
            g.clone(),
            id(&sample("clustergroup-create-resp.json")["uuid"]),
        ),
        (
            b,
            id(&sample("clustergroup-binding-create-resp.json")["uuid"]),
        ),
        (clusters[0].clone(), edge),
        (clusters[1].clone(), core),
    ];
    for (name, actual) in [
        ("clustergroup-create-resp.json", &created.body),
        ("clustergroup-update-resp.json", &updated.body),
        ("clustergroups-list-resp.json", &listed.body),
        ("clustergroup-member-add-resp.json", &added.body),
        ("clustergroup-binding-create-resp.json", &bound.body),
        ("clustergroup-bindings-list-resp.json", &bindings.body),
    ] {
        assert_sample(&app, &sample(name), actual, &ids, name);
    }
    // The members' order is the clusters' uuids'; the sample's pair may come either way.
    let mut got = members.body.clone();
    let mut want = in_this_run(&app.address, &theirs, &ids);
    for v in [&mut got, &mut want] {
        if let Some(items) = v["members"].as_array_mut() {
            items.sort_by_key(|m| m["cluster_id"].as_str().unwrap_or_default().to_string());
        }
    }
    assert_sample(
        &app,
        &want,
        &got,
        &[],
        "clustergroup-members-list-resp.json",
    );
}
