//! `/v1/clustergroups` over HTTP (microversion 1.20), on PostgreSQL and SQLite: groups,
//! consented memberships and bindings, and what they grant on `/v1/clusters`: project B, bound
//! to A's group, reads A's member clusters in show and list (marked with where its right comes
//! from) and nothing else of A; a proposed member without its owner's consent is never
//! visible; selector matches follow registry label changes; a deleted binding takes the
//! clusters away. Every error answers with Magnum's body; each change leaves its notification.

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{
    at, drain, events_of, spawn_pki, template_body, uuid_of, Backend, Pki, Resp, TestApp,
};

/// Runs one test body against both backends.
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

const GROUPS: &str = "/v1/clustergroups";

struct Who {
    a: HeaderMap,
    a_reader: HeaderMap,
    b: HeaderMap,
    c: HeaderMap,
    /// A member of project B without the role a role-limited binding names.
    b_plain: HeaderMap,
}

fn who(app: &TestApp) -> Who {
    let latest = |p: &str, u: &str, r: &str| at(&app.as_identity(p, u, r), "latest");
    Who {
        a: latest("project-a", "user-a", "member,reader"),
        a_reader: latest("project-a", "reader-a", "reader"),
        b: latest("project-b", "user-b", "member,reader,auditor"),
        c: latest("project-c", "user-c", "member,reader"),
        b_plain: latest("project-b", "user-b2", "member,reader"),
    }
}

async fn created(r: Resp, status: u16) -> String {
    assert_eq!(r.status, status, "{}", r.text);
    uuid_of(&r.body)
}

/// A complete cluster of the caller's project.
async fn cluster(pki: &Pki, h: &HeaderMap, name: &str) -> String {
    let app = &pki.app;
    let t = created(
        app.post_as(
            "/v1/clustertemplates",
            &template_body(&format!("{name}-t")),
            h,
        )
        .await,
        201,
    )
    .await;
    let c = created(
        app.post_as(
            "/v1/clusters",
            &json!({"name": name, "cluster_template_id": t}),
            h,
        )
        .await,
        202,
    )
    .await;
    drain(&pki.conductor).await;
    c
}

/// The uuids a cluster list shows, with each one's `access` marker.
async fn listed(app: &TestApp, path: &str, h: &HeaderMap) -> Vec<(String, Value)> {
    let r = app.get_as(path, h).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .map(|c| (uuid_of(c), c.get("access").cloned().unwrap_or(Value::Null)))
        .collect()
}

fn marker(group: &str, access: &str) -> Value {
    json!({"via": [{"group": group, "access": access}]})
}

/// Sets a cluster's registry labels through the Kubernetes face, as `kubectl label` does.
async fn label(app: &TestApp, h: &HeaderMap, namespace: &str, name: &str, labels: Value) {
    let req = app
        .client
        .request(
            Method::PATCH,
            app.url(&format!(
                "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters/{name}"
            )),
        )
        .headers(h.clone())
        .header("Content-Type", "application/merge-patch+json")
        .body(json!({"metadata": {"labels": labels}}).to_string());
    let r = app.send(req).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

/// B sees exactly `expected` of A's and C's clusters (with their markers), besides its own.
async fn b_sees(app: &TestApp, h: &HeaderMap, own: &str, expected: &[(&str, Value)]) {
    for path in ["/v1/clusters", "/v1/clusters/detail"] {
        let mut got = listed(app, path, h).await;
        got.sort_by(|x, y| x.0.cmp(&y.0));
        let mut want: Vec<(String, Value)> = expected
            .iter()
            .map(|(u, m)| (u.to_string(), m.clone()))
            .chain([(own.to_string(), Value::Null)])
            .collect();
        want.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(got, want, "{path}");
    }
}

both!(
    a_bound_project_reads_the_groups_consented_members_and_nothing_else,
    |pki: Pki| async move {
        let app = &pki.app;
        let w = who(app);
        let a1 = cluster(&pki, &w.a, "a-one").await;
        let a2 = cluster(&pki, &w.a, "a-two").await;
        let b1 = cluster(&pki, &w.b, "b-one").await;
        let c1 = cluster(&pki, &w.c, "c-one").await;

        // A's group with its own cluster: accepted at once.
        let r = app
            .post_as(
                GROUPS,
                &json!({"name": "shared", "description": "for B", "clusters": ["a-one"]}),
                &w.a,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let g = uuid_of(&r.body);
        assert_eq!(r.body["name"], "shared");
        assert_eq!(r.body["description"], "for B");
        assert_eq!(r.body["selector"], Value::Null);
        assert_eq!(r.body["project_id"], "project-a");
        assert!(r
            .header("location")
            .is_some_and(|l| l.ends_with(&format!("/v1/clustergroups/{g}"))));
        let members = app.get_as(&format!("{GROUPS}/{g}/members"), &w.a).await;
        assert_eq!(members.status, 200, "{}", members.text);
        assert_eq!(members.body["members"][0]["cluster_id"], a1.as_str());
        assert_eq!(members.body["members"][0]["state"], "Accepted");

        // Nothing is granted before a binding.
        let shown = app.get_as(&format!("/v1/clusters/{a1}"), &w.b).await;
        shown.assert_error(404, &format!("Cluster {a1} could not be found."));
        b_sees(app, &w.b, &b1, &[]).await;

        // A binds B (read): B reads A's member cluster, marked, and nothing else of A.
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/bindings"),
                &json!({"project_id": "project-b", "access": "read"}),
                &w.a,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let binding = uuid_of(&r.body);
        assert_eq!(r.body["project_id"], "project-b");
        assert_eq!(r.body["access"], "read");
        assert_eq!(r.body["roles"], Value::Null);
        assert_eq!(r.body["clustergroup_id"], g.as_str());

        let shown = app.get_as(&format!("/v1/clusters/{a1}"), &w.b).await;
        assert_eq!(shown.status, 200, "{}", shown.text);
        assert_eq!(shown.body["uuid"], a1.as_str());
        assert_eq!(shown.body["access"], marker(&g, "read"));
        let own = app.get_as(&format!("/v1/clusters/{b1}"), &w.b).await;
        assert_eq!(own.status, 200, "{}", own.text);
        assert!(own.body.get("access").is_none(), "{}", own.text);
        let other = app.get_as(&format!("/v1/clusters/{a2}"), &w.b).await;
        other.assert_error(404, &format!("Cluster {a2} could not be found."));
        // By name too, where the caller's project has no cluster of that name; A's unbound
        // cluster stays unknown by name as by uuid.
        let by_name = app.get_as("/v1/clusters/a-one", &w.b).await;
        assert_eq!(by_name.status, 200, "{}", by_name.text);
        assert_eq!(by_name.body["uuid"], a1.as_str());
        assert_eq!(by_name.body["access"], marker(&g, "read"));
        app.get_as("/v1/clusters/a-two", &w.b)
            .await
            .assert_error(404, "Cluster a-two could not be found.");
        // A read binding refuses a change by name as by uuid.
        app.patch_as(
            "/v1/clusters/a-one",
            &json!([{"op": "replace", "path": "/node_count", "value": 2}]),
            &w.b,
        )
        .await
        .assert_error(
            403,
            "The cluster groups bound to project project-b grant read access to cluster a-one, \
             not write access.",
        );
        b_sees(app, &w.b, &b1, &[(&a1, marker(&g, "read"))]).await;
        // Pages of one item, through `next`, with a shared cluster as the marker.
        for path in [
            "/v1/clusters?limit=1",
            "/v1/clusters/detail?limit=1&sort_dir=desc",
        ] {
            let mut url = path.to_string();
            let mut seen = Vec::new();
            for _ in 0..5 {
                let r = app.get_as(&url, &w.b).await;
                assert_eq!(r.status, 200, "{}", r.text);
                seen.extend(
                    r.body["clusters"]
                        .as_array()
                        .expect("clusters")
                        .iter()
                        .map(uuid_of),
                );
                let Some(next) = r.body["next"].as_str() else {
                    break;
                };
                url = next
                    .split_once(&app.address)
                    .map(|(_, p)| p.to_string())
                    .unwrap_or_default();
            }
            seen.sort();
            let mut want = vec![a1.clone(), b1.clone()];
            want.sort();
            assert_eq!(seen, want, "{path}");
        }
        app.get_as(&format!("/v1/clusters?marker={a2}"), &w.b)
            .await
            .assert_error(404, &format!("Cluster {a2} could not be found."));
        // The owner sees its clusters unmarked.
        for (_, m) in listed(app, "/v1/clusters", &w.a).await {
            assert_eq!(m, Value::Null);
        }

        // Below 1.20 nothing changes.
        let old = at(
            &app.as_identity("project-b", "user-b", "member,reader"),
            "1.19",
        );
        let shown = app.get_as(&format!("/v1/clusters/{a1}"), &old).await;
        shown.assert_error(404, &format!("Cluster {a1} could not be found."));
        let mut old_list = listed(app, "/v1/clusters", &old).await;
        old_list.retain(|(u, _)| u != &b1);
        assert!(old_list.is_empty(), "{old_list:?}");

        // A proposes C's cluster: it grants nothing until C accepts.
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/members"),
                &json!({"cluster": c1}),
                &w.a,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["state"], "Proposed");
        assert_eq!(r.body["consented_at"], Value::Null);
        assert_eq!(r.body["proposed_by"], "project-a");
        let hidden = app.get_as(&format!("/v1/clusters/{c1}"), &w.b).await;
        hidden.assert_error(404, &format!("Cluster {c1} could not be found."));
        b_sees(app, &w.b, &b1, &[(&a1, marker(&g, "read"))]).await;
        // A cannot consent for C.
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/members/{c1}/actions/accept"),
                &json!({}),
                &w.a,
            )
            .await;
        r.assert_error(404, &format!("Cluster {c1} could not be found."));
        // C accepts (naming A's group by uuid): B now reads C's cluster through A's group.
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/members/c-one/actions/accept"),
                &json!({}),
                &w.c,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["state"], "Accepted");
        assert!(r.body["consented_at"].is_string(), "{}", r.text);
        b_sees(
            app,
            &w.b,
            &b1,
            &[(&a1, marker(&g, "read")), (&c1, marker(&g, "read"))],
        )
        .await;
        // C withdraws its consent: the cluster is gone from B's view again.
        let r = app
            .delete_as(&format!("{GROUPS}/{g}/members/{c1}"), &w.c)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        b_sees(app, &w.b, &b1, &[(&a1, marker(&g, "read"))]).await;
        // To C, A's group is no more (no cluster of C's is in it).
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/members/c-one/actions/accept"),
                &json!({}),
                &w.c,
            )
            .await;
        r.assert_error(404, &format!("ClusterGroup {g} could not be found."));

        // A role-limited binding applies only to callers holding a role it names.
        let g2 = created(
            app.post_as(GROUPS, &json!({"name": "audit", "clusters": [a2]}), &w.a)
                .await,
            201,
        )
        .await;
        let r = app
            .post_as(
                &format!("{GROUPS}/{g2}/bindings"),
                &json!({"project_id": "project-b", "roles": ["Auditor"], "access": "write"}),
                &w.a,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["roles"], json!(["Auditor"]));
        b_sees(
            app,
            &w.b,
            &b1,
            &[(&a1, marker(&g, "read")), (&a2, marker(&g2, "write"))],
        )
        .await;
        b_sees(app, &w.b_plain, &b1, &[(&a1, marker(&g, "read"))]).await;

        // The binding goes: so does what it granted.
        let r = app
            .delete_as(&format!("{GROUPS}/{g}/bindings/{binding}"), &w.a)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        let gone = app.get_as(&format!("/v1/clusters/{a1}"), &w.b).await;
        gone.assert_error(404, &format!("Cluster {a1} could not be found."));
        b_sees(app, &w.b_plain, &b1, &[]).await;

        // Notifications: the group's and the bindings' changes.
        let kinds = |events: Vec<(String, String, String)>| -> Vec<String> {
            events
                .into_iter()
                .map(|(e, o, _)| format!("{e} {o}"))
                .collect()
        };
        assert_eq!(
            kinds(events_of(app, &g).await),
            vec!["magnum.clustergroup.create success"]
        );
        assert_eq!(
            kinds(events_of(app, &binding).await),
            vec![
                "magnum.clustergroupbinding.create success",
                "magnum.clustergroupbinding.delete success"
            ]
        );
        let r = app.delete_as(&format!("{GROUPS}/{g2}"), &w.a).await;
        assert_eq!(r.status, 204, "{}", r.text);
        assert_eq!(
            kinds(events_of(app, &g2).await),
            vec![
                "magnum.clustergroup.create success",
                "magnum.clustergroup.delete success"
            ]
        );
        b_sees(app, &w.b, &b1, &[]).await;
        // A's reader reads A's groups and changes none.
        let r = app.get_as(&format!("{GROUPS}/{g}"), &w.a_reader).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = app.delete_as(&format!("{GROUPS}/{g}"), &w.a_reader).await;
        r.assert_error(
            403,
            "Policy doesn't allow clustergroup:delete to be performed.",
        );
    }
);

both!(
    selector_matches_follow_registry_label_changes,
    |pki: Pki| async move {
        let app = &pki.app;
        let w = who(app);
        let a1 = cluster(&pki, &w.a, "a-one").await;
        let b1 = cluster(&pki, &w.b, "b-one").await;
        // A cluster of B with the same labels: a selector never reaches another project.
        label(app, &w.b, "project-b", "b-one", json!({"env": "prod"})).await;
        let g = created(
            app.post_as(
                GROUPS,
                &json!({"name": "prod", "selector": "env=prod,tier in (a,b)"}),
                &w.a,
            )
            .await,
            201,
        )
        .await;
        let r = app
            .post_as(
                &format!("{GROUPS}/{g}/bindings"),
                &json!({"project_id": "project-c", "access": "read"}),
                &w.a,
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert!(listed(app, "/v1/clusters", &w.c).await.is_empty());

        label(
            app,
            &w.a,
            "project-a",
            "a-one",
            json!({"env": "prod", "tier": "a"}),
        )
        .await;
        let r = app.get_as(&format!("/v1/clusters/{a1}"), &w.c).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["access"], marker(&g, "read"));

        label(
            app,
            &w.a,
            "project-a",
            "a-one",
            json!({"env": "prod", "tier": "c"}),
        )
        .await;
        let r = app.get_as(&format!("/v1/clusters/{a1}"), &w.c).await;
        r.assert_error(404, &format!("Cluster {a1} could not be found."));

        // The selector changes (PATCH): the matches follow it.
        let r = app
            .patch_as(
                &format!("{GROUPS}/prod"),
                &json!([{"op": "replace", "path": "/selector", "value": "tier=c"},
                        {"op": "replace", "path": "/description", "value": "tier c"}]),
                &w.a,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["selector"], "tier=c");
        assert_eq!(r.body["description"], "tier c");
        assert!(r.body["updated_at"].is_string(), "{}", r.text);
        let r = app.get_as(&format!("/v1/clusters/{a1}"), &w.c).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = app.get_as(&format!("/v1/clusters/{b1}"), &w.c).await;
        r.assert_error(404, &format!("Cluster {b1} could not be found."));
        let events: Vec<String> = events_of(app, &g)
            .await
            .into_iter()
            .map(|(e, _, _)| e)
            .collect();
        assert_eq!(
            events,
            vec!["magnum.clustergroup.create", "magnum.clustergroup.update"]
        );
    }
);

both!(
    every_error_answers_with_magnums_body,
    |pki: Pki| async move {
        let app = &pki.app;
        let w = who(app);
        let a1 = cluster(&pki, &w.a, "a-one").await;

        // Below 1.20 the routes do not exist.
        let old = at(&app.as_identity("project-a", "user-a", "member"), "1.19");
        app.get_as(GROUPS, &old).await.assert_framework_error(406);
        app.post_as(GROUPS, &json!({"name": "x"}), &old)
            .await
            .assert_framework_error(406);

        let post = |body: Value| {
            let h = w.a.clone();
            async move { app.post_as(GROUPS, &body, &h).await }
        };
        post(json!({"name": "g", "colour": "red"}))
            .await
            .assert_error(400, "Unknown attribute for argument clustergroup: colour");
        post(json!({})).await.assert_error(
            400,
            "Invalid input for field/attribute name. Value: 'None'. Mandatory field missing.",
        );
        let r = post(json!({"name": "Not_A_Name"})).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.error()["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid input for field/attribute name.")));
        let r = post(json!({"name": "g", "selector": "env in (prod"})).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.error()["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid input for field/attribute selector.")));
        post(json!({"name": "g", "uuid": a1}))
            .await
            .assert_error(
                400,
                &format!("Invalid input for field/attribute uuid. Value: '{a1}'. Cannot set read only field."),
            );
        post(json!({"name": "g", "clusters": ["nope"]}))
            .await
            .assert_error(404, "Cluster nope could not be found.");
        assert_eq!(post(json!({"name": "g"})).await.status, 201);
        post(json!({"name": "g"})).await.assert_error(
            409,
            "A cluster group named g already exists in this project.",
        );
        app.post_as(GROUPS, &json!({"name": "g"}), &w.a_reader)
            .await
            .assert_error(
                403,
                "Policy doesn't allow clustergroup:create to be performed.",
            );

        // Another project's group is missing; so is a group nobody has.
        for (ident, h) in [("g", &w.b), ("nope", &w.a)] {
            app.get_as(&format!("{GROUPS}/{ident}"), h)
                .await
                .assert_error(404, &format!("ClusterGroup {ident} could not be found."));
        }
        app.get_as(&format!("{GROUPS}?marker={a1}"), &w.a)
            .await
            .assert_error(404, &format!("ClusterGroup {a1} could not be found."));
        app.get_as(&format!("{GROUPS}?colour=red"), &w.a)
            .await
            .assert_error(400, "Unknown argument: \"colour\"");

        // PATCH: only the description and the selector change.
        let patch = |ops: Value| {
            let h = w.a.clone();
            async move { app.patch_as(&format!("{GROUPS}/g"), &ops, &h).await }
        };
        patch(json!([{"op": "replace", "path": "/name", "value": "h"}]))
            .await
            .assert_error(400, "cannot change cluster group property(ies) name.");
        let r = patch(json!([{"op": "replace", "path": "/selector", "value": "a in ("}])).await;
        assert_eq!(r.status, 400, "{}", r.text);
        let r = patch(json!([{"op": "add", "path": "/description", "value": "d"}])).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["description"], "d");

        // Members.
        let members = format!("{GROUPS}/g/members");
        app.post_as(&members, &json!({"cluster": "nope"}), &w.a)
            .await
            .assert_error(404, "Cluster nope could not be found.");
        app.post_as(&members, &json!({"cluster": a1, "x": 1}), &w.a)
            .await
            .assert_error(400, "Unknown attribute for argument member: x");
        assert_eq!(
            app.post_as(&members, &json!({"cluster": "a-one"}), &w.a)
                .await
                .status,
            201
        );
        app.post_as(&members, &json!({"cluster": a1}), &w.a)
            .await
            .assert_error(
                409,
                &format!("Cluster {a1} is already a member of cluster group g."),
            );
        app.post_as(&members, &json!({"cluster": a1}), &w.a_reader)
            .await
            .assert_error(
                403,
                "Policy doesn't allow clustergroup:member_add to be performed.",
            );
        assert_eq!(
            app.delete_as(&format!("{members}/a-one"), &w.a)
                .await
                .status,
            204
        );
        app.delete_as(&format!("{members}/a-one"), &w.a)
            .await
            .assert_error(404, "Cluster a-one is not a member of cluster group g.");

        // Bindings.
        let bindings = format!("{GROUPS}/g/bindings");
        let bind = |body: Value| {
            let (h, path) = (w.a.clone(), bindings.clone());
            async move { app.post_as(&path, &body, &h).await }
        };
        bind(json!({"project_id": "project-b", "access": "admin"}))
            .await
            .assert_error(
                400,
                "Invalid input for field/attribute access. Value: 'admin'. Value should be one of: read, write.",
            );
        bind(json!({"project_id": "project-b"})).await.assert_error(
            400,
            "Invalid input for field/attribute access. Value: 'None'. Mandatory field missing.",
        );
        let r = bind(json!({"project_id": "project-b", "access": "read", "roles": []})).await;
        assert_eq!(r.status, 400, "{}", r.text);
        bind(json!({"project_id": "project-a", "access": "read"}))
            .await
            .assert_error(
                400,
                "A cluster group cannot be bound to its own project, which has its clusters already.",
            );
        let b = created(
            bind(json!({"project_id": "project-b", "access": "read"})).await,
            201,
        )
        .await;
        bind(json!({"project_id": "project-b", "access": "write"}))
            .await
            .assert_error(
                409,
                "Cluster group g is already bound to project project-b.",
            );
        let r = app.get_as(&bindings, &w.a).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["bindings"][0]["uuid"], b.as_str());
        let r = app.get_as(&format!("{bindings}/{b}"), &w.a_reader).await;
        assert_eq!(r.status, 200, "{}", r.text);
        app.get_as(&format!("{bindings}/{a1}"), &w.a)
            .await
            .assert_error(
                404,
                &format!("ClusterGroupBinding {a1} could not be found."),
            );
        app.delete_as(&format!("{bindings}/{b}"), &w.a_reader)
            .await
            .assert_error(
                403,
                "Policy doesn't allow clustergroup:binding_delete to be performed.",
            );
        // B, the grantee, does not manage A's group.
        let g = uuid_of(&app.get_as(&format!("{GROUPS}/g"), &w.a).await.body);
        app.delete_as(&format!("{GROUPS}/{g}/bindings/{b}"), &w.b)
            .await
            .assert_error(404, &format!("ClusterGroup {g} could not be found."));

        // The group goes with its bindings.
        assert_eq!(
            app.delete_as(&format!("{GROUPS}/g"), &w.a).await.status,
            204
        );
        app.delete_as(&format!("{GROUPS}/g"), &w.a)
            .await
            .assert_error(404, "ClusterGroup g could not be found.");
        assert!(app
            .store
            .cluster_group_bindings_to("project-b")
            .await
            .expect("bindings")
            .is_empty());
    }
);

both!(
    a_write_binding_lets_the_grantee_change_and_delete_and_a_read_binding_does_not,
    |pki: Pki| async move {
        let app = &pki.app;
        let w = who(app);
        let a1 = cluster(&pki, &w.a, "a-one").await;
        let a2 = cluster(&pki, &w.a, "a-two").await;
        let a3 = cluster(&pki, &w.a, "a-three").await;
        let read = created(
            app.post_as(GROUPS, &json!({"name": "read", "clusters": [a1]}), &w.a)
                .await,
            201,
        )
        .await;
        let write = created(
            app.post_as(GROUPS, &json!({"name": "write", "clusters": [a2]}), &w.a)
                .await,
            201,
        )
        .await;
        for (g, access) in [(&read, "read"), (&write, "write")] {
            let r = app
                .post_as(
                    &format!("{GROUPS}/{g}/bindings"),
                    &json!({"project_id": "project-b", "access": access}),
                    &w.a,
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.text);
        }
        let resize = json!([{"op": "replace", "path": "/node_count", "value": 2}]);

        // Write: B changes and deletes A's cluster; the change is A's cluster's as ever.
        let r = app
            .patch_as(&format!("/v1/clusters/{a2}"), &resize, &w.b)
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
        drain(&pki.conductor).await;
        let shown = app.get_as(&format!("/v1/clusters/{a2}"), &w.a).await;
        assert_eq!(shown.body["node_count"], 2, "{}", shown.text);
        // By name as by uuid.
        let three = json!([{"op": "replace", "path": "/node_count", "value": 3}]);
        let r = app.patch_as("/v1/clusters/a-two", &three, &w.b).await;
        assert_eq!(r.status, 202, "{}", r.text);
        assert_eq!(r.body["uuid"], a2.as_str());
        drain(&pki.conductor).await;
        let shown = app.get_as(&format!("/v1/clusters/{a2}"), &w.a).await;
        assert_eq!(shown.body["node_count"], 3, "{}", shown.text);

        // Read: a 403 that says why; nothing changes.
        for r in [
            app.patch_as(&format!("/v1/clusters/{a1}"), &resize, &w.b)
                .await,
            app.delete_as(&format!("/v1/clusters/{a1}"), &w.b).await,
        ] {
            r.assert_error(
                403,
                &format!(
                    "The cluster groups bound to project project-b grant read access to \
                     cluster {a1}, not write access."
                ),
            );
        }
        // No binding: the 404 of a cluster that does not exist.
        app.delete_as(&format!("/v1/clusters/{a3}"), &w.b)
            .await
            .assert_error(404, &format!("Cluster {a3} could not be found."));
        // Below 1.20 the write binding grants nothing.
        let old = at(
            &app.as_identity("project-b", "user-b", "member,reader"),
            "1.19",
        );
        app.delete_as(&format!("/v1/clusters/{a2}"), &old)
            .await
            .assert_error(404, &format!("Cluster {a2} could not be found."));

        let r = app.delete_as(&format!("/v1/clusters/{a2}"), &w.b).await;
        assert_eq!(r.status, 204, "{}", r.text);
        drain(&pki.conductor).await;
        app.get_as(&format!("/v1/clusters/{a2}"), &w.a)
            .await
            .assert_error(404, &format!("Cluster {a2} could not be found."));
        let shown = app.get_as(&format!("/v1/clusters/{a1}"), &w.a).await;
        assert_eq!(shown.body["node_count"], 1, "{}", shown.text);
    }
);

both!(
    a_federation_joins_another_projects_cluster_only_through_a_write_binding,
    |pki: Pki| async move {
        let app = &pki.app;
        let w = who(app);
        let a1 = cluster(&pki, &w.a, "a-one").await;
        let b1 = cluster(&pki, &w.b, "b-one").await;
        let c1 = cluster(&pki, &w.c, "c-one").await;
        let federation = |name: &str, members: &[&str]| {
            json!({"name": name, "hostcluster_id": b1, "member_ids": members,
                   "properties": {"dns-zone": "example.com."}})
        };
        // Before any binding, A's cluster is not there for B.
        app.post_as("/v1/federations", &federation("f0", &[&a1]), &w.b)
            .await
            .assert_error(404, &format!("Cluster {a1} could not be found."));

        let g = created(
            app.post_as(GROUPS, &json!({"name": "fed", "clusters": [a1]}), &w.a)
                .await,
            201,
        )
        .await;
        let bind = |access: &str| json!({"project_id": "project-b", "access": access});
        let read = created(
            app.post_as(&format!("{GROUPS}/{g}/bindings"), &bind("read"), &w.a)
                .await,
            201,
        )
        .await;
        // A read binding shows the cluster but does not let it join.
        app.post_as("/v1/federations", &federation("f1", &[&a1]), &w.b)
            .await
            .assert_error(
                403,
                &format!(
                    "The cluster groups bound to project project-b grant read access to \
                     cluster {a1}, not write access."
                ),
            );
        let r = app
            .delete_as(&format!("{GROUPS}/{g}/bindings/{read}"), &w.a)
            .await;
        assert_eq!(r.status, 204, "{}", r.text);
        created(
            app.post_as(&format!("{GROUPS}/{g}/bindings"), &bind("write"), &w.a)
                .await,
            201,
        )
        .await;
        // A write binding lets B's federation take A's cluster; C's stays out of reach.
        app.post_as("/v1/federations", &federation("f2", &[&a1, &c1]), &w.b)
            .await
            .assert_error(404, &format!("Cluster {c1} could not be found."));
        let r = app
            .post_as("/v1/federations", &federation("f3", &[&a1]), &w.b)
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
        let f = uuid_of(&r.body);
        let shown = app.get_as(&format!("/v1/federations/{f}"), &w.b).await;
        assert_eq!(shown.status, 200, "{}", shown.text);
        assert_eq!(shown.body["member_ids"], json!([a1]));
        // Below 1.20 the binding grants nothing.
        app.post_as(
            "/v1/federations",
            &federation("f4", &[&a1]),
            &at(&w.b, "1.19"),
        )
        .await
        .assert_error(404, &format!("Cluster {a1} could not be found."));
    }
);

both!(
    a_shared_cluster_is_named_by_name_unless_two_bound_clusters_share_it,
    |pki: Pki| async move {
        let app = &pki.app;
        let w = who(app);
        let a_dup = cluster(&pki, &w.a, "dup").await;
        let c_dup = cluster(&pki, &w.c, "dup").await;
        let a_only = cluster(&pki, &w.a, "a-only").await;
        // A and C each share their `dup` with B (read).
        for (h, name, member) in [(&w.a, "a-share", &a_dup), (&w.c, "c-share", &c_dup)] {
            let g = created(
                app.post_as(GROUPS, &json!({"name": name, "clusters": [member]}), h)
                    .await,
                201,
            )
            .await;
            created(
                app.post_as(
                    &format!("{GROUPS}/{g}/bindings"),
                    &json!({"project_id": "project-b", "access": "read"}),
                    h,
                )
                .await,
                201,
            )
            .await;
        }
        // Two bound clusters named `dup`: Magnum's 409 asks for the uuid, which still works.
        app.get_as("/v1/clusters/dup", &w.b).await.assert_error(
            409,
            "Multiple clusters exist with same name. Please use the cluster uuid instead.",
        );
        for uuid in [&a_dup, &c_dup] {
            let r = app.get_as(&format!("/v1/clusters/{uuid}"), &w.b).await;
            assert_eq!(r.status, 200, "{}", r.text);
            assert_eq!(r.body["name"], "dup");
        }
        // A's cluster that no bound group reaches stays unknown by name.
        app.get_as("/v1/clusters/a-only", &w.b)
            .await
            .assert_error(404, "Cluster a-only could not be found.");
        assert!(!a_only.is_empty());
        // A name of the caller's own project is its own cluster, whatever groups reach.
        let b_dup = cluster(&pki, &w.b, "dup").await;
        let r = app.get_as("/v1/clusters/dup", &w.b).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["uuid"], b_dup.as_str());
        assert!(r.body.get("access").is_none(), "{}", r.text);
    }
);
