//! Cross-project isolation: project A builds one of everything (a private template, clusters,
//! a node group, a federation, certificates, a quota); a member of project B then walks every
//! endpoint against A's objects. Each answer must be exactly what B gets for an object that
//! does not exist (or the contract's 403 for another project's stats and quota), no list may
//! show A's objects, and afterwards A sees everything unchanged.

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::id;
use crate::helpers::{
    at, cluster_path as one, drain, fixture, spawn_pki, Backend, Resp, TestApp, CLUSTERS,
};

/// A uuid nobody has.
const MISSING: &str = "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b4c";

/// Sends one request as `h`.
async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    h: &HeaderMap,
    body: Option<&Value>,
) -> Resp {
    app.request(method, path, h, body).await
}

/// Asserts that B's answer about A's object is a 404 and exactly B's answer about a missing
/// one, once the identifiers are swapped. Both must come from the endpoint itself: a route
/// that does not exist answers the framework's 404 with an empty detail, which fails here.
#[track_caller]
fn assert_like_missing(what: &str, theirs: &Resp, missing: &Resp, pairs: &[(&str, &str)]) {
    assert_eq!(
        theirs.status, 404,
        "{what}: another project's object must be a 404: {}",
        theirs.text
    );
    for r in [theirs, missing] {
        assert_ne!(
            r.error()["detail"],
            "",
            "{what}: the route must exist and answer with a sentence: {}",
            r.text
        );
    }
    let mut expected = missing.text.clone();
    for (missing_id, their_id) in pairs {
        expected = expected.replace(missing_id, their_id);
    }
    assert_eq!(
        (theirs.status, theirs.text.as_str()),
        (missing.status, expected.as_str()),
        "{what}"
    );
}

/// The uuids in a list body under `key`.
fn uuids(body: &Value, key: &str) -> Vec<String> {
    body[key]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["uuid"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Everything A can read about its objects, to compare before and after B's walk.
async fn a_view(app: &TestApp, h: &HeaderMap, paths: &[String]) -> Vec<(String, u16, Value)> {
    let mut out = Vec::new();
    for p in paths {
        let r = app.get_as(p, h).await;
        out.push((p.clone(), r.status, r.body));
    }
    out
}

#[tokio::test]
async fn a_second_project_sees_and_touches_nothing_of_the_first_through_any_endpoint() {
    let pki = spawn_pki(Backend::Postgres, |_| {}).await;
    let app = &pki.app;
    let a = at(&app.headers, "latest");
    let b = at(&app.project_b(), "latest");
    let admin = at(&app.admin(), "latest");

    // ---- Project A builds one of everything ----------------------------------------------
    let template = app.make_template_as("a-template", json!({}), &a).await;
    let template = template["uuid"].as_str().expect("uuid").to_string();
    let mut clusters = Vec::new();
    for name in ["a-cluster", "a-member"] {
        let r = app
            .post_as(
                CLUSTERS,
                &json!({"name": name, "cluster_template_id": template}),
                &a,
            )
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
        clusters.push(r.body["uuid"].as_str().expect("uuid").to_string());
    }
    drain(&pki.conductor).await;
    let cluster = clusters[0].clone();

    let ng = app
        .post_as(
            &format!("{}/nodegroups", one(&cluster)),
            &json!({"name": "a-ng", "node_count": 1}),
            &a,
        )
        .await;
    assert_eq!(ng.status, 202, "{}", ng.text);
    drain(&pki.conductor).await;
    let nodegroup = ng.body["uuid"].as_str().expect("uuid").to_string();

    let fed = app
        .post_as(
            "/v1/federations",
            &json!({"name": "a-fed", "hostcluster_id": cluster, "member_ids": [],
                    "properties": {"dns-zone": "example.com."}}),
            &a,
        )
        .await;
    assert_eq!(fed.status, 202, "{}", fed.text);
    drain(&pki.conductor).await;
    let federation = fed.body["uuid"].as_str().expect("uuid").to_string();
    let joined = app
        .patch_as(
            &format!("/v1/federations/{federation}"),
            &json!([{"op": "add", "path": "/member_ids", "value": clusters[1]}]),
            &a,
        )
        .await;
    assert_eq!(joined.status, 202, "{}", joined.text);
    drain(&pki.conductor).await;

    let cert = app.get_as(&format!("/v1/certificates/{cluster}"), &a).await;
    assert_eq!(cert.status, 200, "{}", cert.text);

    let q = app
        .post_as(
            "/v1/quotas",
            &json!({"project_id": "project-a", "resource": "Cluster", "hard_limit": 10}),
            &admin,
        )
        .await;
    assert_eq!(q.status, 201, "{}", q.text);

    // What A sees, for the comparison at the end.
    let a_paths = vec![
        format!("/v1/clustertemplates/{template}"),
        "/v1/clustertemplates".to_string(),
        one(&cluster),
        one(&clusters[1]),
        CLUSTERS.to_string(),
        format!("{CLUSTERS}/detail"),
        "/v1/quotas/project-a/Cluster".to_string(),
        "/v1/stats".to_string(),
        format!("{}/nodegroups/{nodegroup}", one(&cluster)),
        format!("{}/nodegroups", one(&cluster)),
        format!("/v1/federations/{federation}"),
        "/v1/federations".to_string(),
    ];
    let before = a_view(app, &a, &a_paths).await;
    for (path, status, body) in &before {
        assert_eq!(*status, 200, "A reads its own {path}: {body}");
    }

    // B has objects of its own, so that cross-references can be attempted both ways.
    let b_template = app.make_template_as("b-template", json!({}), &b).await;
    let b_template = b_template["uuid"].as_str().expect("uuid").to_string();
    let r = app
        .post_as(
            CLUSTERS,
            &json!({"name": "b-cluster", "cluster_template_id": b_template}),
            &b,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let b_cluster = r.body["uuid"].as_str().expect("uuid").to_string();
    drain(&pki.conductor).await;

    // ---- B walks every endpoint ------------------------------------------------------------
    let patch_count = json!([{"op": "replace", "path": "/node_count", "value": 2}]);
    let patch_health = json!([{"op": "replace", "path": "/health_status", "value": "UNHEALTHY"}]);

    // Templates: show, patch, delete by uuid and by name; lists; a cluster from A's template.
    for ident in [template.as_str(), "a-template"] {
        let missing_ident = if ident == template {
            MISSING
        } else {
            "no-such-template"
        };
        for (method, body) in [
            (Method::GET, None),
            (
                Method::PATCH,
                Some(json!([{"op": "replace", "path": "/name", "value": "x"}])),
            ),
            (Method::DELETE, None),
        ] {
            let theirs = call(
                app,
                method.clone(),
                &format!("/v1/clustertemplates/{ident}"),
                &b,
                body.as_ref(),
            )
            .await;
            let missing = call(
                app,
                method.clone(),
                &format!("/v1/clustertemplates/{missing_ident}"),
                &b,
                body.as_ref(),
            )
            .await;
            assert_like_missing(
                &format!("{method} template {ident}"),
                &theirs,
                &missing,
                &[(missing_ident, ident)],
            );
        }
    }
    for path in ["/v1/clustertemplates", "/v1/clustertemplates/detail"] {
        let r = app.get_as(path, &b).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            uuids(&r.body, "clustertemplates"),
            vec![b_template.clone()],
            "{path}"
        );
    }
    let theirs = app
        .post_as(
            CLUSTERS,
            &json!({"name": "x", "cluster_template_id": template}),
            &b,
        )
        .await;
    let missing = app
        .post_as(
            CLUSTERS,
            &json!({"name": "x", "cluster_template_id": MISSING}),
            &b,
        )
        .await;
    assert_like_missing(
        "cluster from A's template",
        &theirs,
        &missing,
        &[(MISSING, &template)],
    );

    // Clusters: show, patch (count and health), delete, resize, upgrade, by uuid and by name.
    for (ident, missing_ident) in [
        (cluster.as_str(), MISSING),
        ("a-cluster", "no-such-cluster"),
    ] {
        let requests: Vec<(Method, String, Option<Value>)> = vec![
            (Method::GET, String::new(), None),
            (Method::PATCH, String::new(), Some(patch_count.clone())),
            (Method::PATCH, String::new(), Some(patch_health.clone())),
            (Method::DELETE, String::new(), None),
            (
                Method::POST,
                "/actions/resize".into(),
                Some(json!({"node_count": 3})),
            ),
            (
                Method::POST,
                "/actions/upgrade".into(),
                Some(json!({"cluster_template": b_template})),
            ),
        ];
        for (method, suffix, body) in requests {
            let theirs = call(
                app,
                method.clone(),
                &format!("{}{suffix}", one(ident)),
                &b,
                body.as_ref(),
            )
            .await;
            let missing = call(
                app,
                method.clone(),
                &format!("{}{suffix}", one(missing_ident)),
                &b,
                body.as_ref(),
            )
            .await;
            assert_like_missing(
                &format!("{method} cluster {ident}{suffix}"),
                &theirs,
                &missing,
                &[(missing_ident, ident)],
            );
        }
    }
    for path in [CLUSTERS.to_string(), format!("{CLUSTERS}/detail")] {
        let r = app.get_as(&path, &b).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            uuids(&r.body, "clusters"),
            vec![b_cluster.clone()],
            "{path}"
        );
        let theirs = app.get_as(&format!("{path}?marker={cluster}"), &b).await;
        let missing = app.get_as(&format!("{path}?marker={MISSING}"), &b).await;
        assert_like_missing("marker", &theirs, &missing, &[(MISSING, &cluster)]);
    }

    // Node groups: of A's cluster, and A's group looked up under B's own cluster.
    let ng = &nodegroup;
    let ng_body = json!({"name": "b-ng", "node_count": 1});
    let ng_patch = json!([{"op": "replace", "path": "/max_node_count", "value": 5}]);
    let requests: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/nodegroups".into(), None),
        (Method::GET, "/nodegroups/detail".into(), None),
        (Method::POST, "/nodegroups".into(), Some(ng_body.clone())),
        (Method::GET, format!("/nodegroups/{ng}"), None),
        (Method::GET, "/nodegroups/a-ng".into(), None),
        (
            Method::PATCH,
            format!("/nodegroups/{ng}"),
            Some(ng_patch.clone()),
        ),
        (Method::DELETE, format!("/nodegroups/{ng}"), None),
        (Method::DELETE, "/nodegroups/default-worker".into(), None),
    ];
    for (method, suffix, body) in requests {
        let theirs = call(
            app,
            method.clone(),
            &format!("{}{suffix}", one(&cluster)),
            &b,
            body.as_ref(),
        )
        .await;
        let missing = call(
            app,
            method.clone(),
            &format!("{}{suffix}", one(MISSING)),
            &b,
            body.as_ref(),
        )
        .await;
        assert_like_missing(
            &format!("{method} nodegroup{suffix}"),
            &theirs,
            &missing,
            &[(MISSING, &cluster)],
        );
    }
    for (method, body) in [
        (Method::GET, None),
        (Method::PATCH, Some(ng_patch)),
        (Method::DELETE, None),
    ] {
        let theirs = call(
            app,
            method.clone(),
            &format!("{}/nodegroups/{ng}", one(&b_cluster)),
            &b,
            body.as_ref(),
        )
        .await;
        let missing = call(
            app,
            method.clone(),
            &format!("{}/nodegroups/{MISSING}", one(&b_cluster)),
            &b,
            body.as_ref(),
        )
        .await;
        assert_like_missing(
            &format!("{method} A's node group under B's cluster"),
            &theirs,
            &missing,
            &[(MISSING, ng)],
        );
    }

    // Federations: show, patch, delete by uuid and name; lists; A's clusters as host or member.
    let f = &federation;
    for (ident, missing_ident) in [(f.as_str(), MISSING), ("a-fed", "no-such-federation")] {
        let join = json!([{"op": "add", "path": "/member_ids", "value": b_cluster}]);
        for (method, body) in [
            (Method::GET, None),
            (Method::PATCH, Some(join)),
            (Method::DELETE, None),
        ] {
            let theirs = call(
                app,
                method.clone(),
                &format!("/v1/federations/{ident}"),
                &b,
                body.as_ref(),
            )
            .await;
            let missing = call(
                app,
                method.clone(),
                &format!("/v1/federations/{missing_ident}"),
                &b,
                body.as_ref(),
            )
            .await;
            assert_like_missing(
                &format!("{method} federation {ident}"),
                &theirs,
                &missing,
                &[(missing_ident, ident)],
            );
        }
    }
    for path in ["/v1/federations", "/v1/federations/detail"] {
        let r = app.get_as(path, &b).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(
            uuids(&r.body, "federations").is_empty(),
            "{path}: {}",
            r.text
        );
    }
    let hosted = |host: &str| json!({"name": "b-fed", "hostcluster_id": host, "properties": {"dns-zone": "b.example."}});
    let theirs = app.post_as("/v1/federations", &hosted(&cluster), &b).await;
    let missing = app.post_as("/v1/federations", &hosted(MISSING), &b).await;
    assert_like_missing(
        "federation hosted on A's cluster",
        &theirs,
        &missing,
        &[(MISSING, &cluster)],
    );
    let own = app
        .post_as("/v1/federations", &hosted(&b_cluster), &b)
        .await;
    assert_eq!(own.status, 202, "{}", own.text);
    let own = own.body["uuid"].as_str().expect("uuid").to_string();
    drain(&pki.conductor).await;
    let join = |member: &str| json!([{"op": "add", "path": "/member_ids", "value": member}]);
    let theirs = app
        .patch_as(&format!("/v1/federations/{own}"), &join(&clusters[1]), &b)
        .await;
    let missing = app
        .patch_as(&format!("/v1/federations/{own}"), &join(MISSING), &b)
        .await;
    assert_like_missing(
        "joining A's cluster",
        &theirs,
        &missing,
        &[(MISSING, &clusters[1])],
    );

    // Certificates and credentials of A's cluster.
    let csr = fixture("dave-rsa2048.csr");
    let theirs = app.get_as(&format!("/v1/certificates/{cluster}"), &b).await;
    let missing = app.get_as(&format!("/v1/certificates/{MISSING}"), &b).await;
    assert_like_missing("certificate", &theirs, &missing, &[(MISSING, &cluster)]);
    let sign = |c: &str| json!({"cluster_uuid": c, "csr": csr});
    let theirs = app.post_as("/v1/certificates", &sign(&cluster), &b).await;
    let missing = app.post_as("/v1/certificates", &sign(MISSING), &b).await;
    assert_like_missing(
        "signing for A's cluster",
        &theirs,
        &missing,
        &[(MISSING, &cluster)],
    );
    for path in ["/v1/certificates", "/v1/credentials"] {
        let theirs = call(app, Method::PATCH, &format!("{path}/{cluster}"), &b, None).await;
        let missing = call(app, Method::PATCH, &format!("{path}/{MISSING}"), &b, None).await;
        assert_like_missing(
            &format!("rotate {path}"),
            &theirs,
            &missing,
            &[(MISSING, &cluster)],
        );
    }

    // Stats and quotas of another project are a 403, as the contract says.
    app.get_as("/v1/stats?project_id=project-a", &b)
        .await
        .assert_error(403, "Not authorized.");
    let own_stats = app.get_as("/v1/stats", &b).await;
    assert_eq!(own_stats.body, json!({"clusters": 1, "nodes": 2}));
    app.get_as("/v1/quotas/project-a/Cluster", &b)
        .await
        .assert_error(403, "Not authorized.");
    app.get_as("/v1/quotas?all_tenants=True", &b)
        .await
        .assert_error(403, "Policy doesn't allow quota:get_all to be performed.");
    app.patch_as(
        "/v1/quotas/project-a/Cluster",
        &json!({"hard_limit": 0}),
        &b,
    )
    .await
    .assert_error(403, "Policy doesn't allow quota:update to be performed.");
    app.delete_as("/v1/quotas/project-a/Cluster", &b)
        .await
        .assert_error(403, "Policy doesn't allow quota:delete to be performed.");
    app.post_as(
        "/v1/quotas",
        &json!({"project_id": "project-a", "hard_limit": 0}),
        &b,
    )
    .await
    .assert_error(403, "Policy doesn't allow quota:create to be performed.");
    app.get_as("/v1/mservices", &b).await.assert_error(
        403,
        "Policy doesn't allow magnum-service:get_all to be performed.",
    );

    // ---- A sees everything unchanged -------------------------------------------------------
    drain(&pki.conductor).await;
    let after = a_view(app, &a, &a_paths).await;
    assert_eq!(before, after);
    let jobs = app.store.jobs_for(id(&cluster)).await.expect("jobs");
    assert!(
        jobs.iter()
            .all(|(j, _)| j.operation.as_str() != "cluster.delete"
                && j.operation.as_str() != "cluster.resize"
                && j.operation.as_str() != "cluster.upgrade"),
        "B queued work on A's cluster"
    );
}
