//! `kubectl auth` over plain HTTP, without kubectl: the access reviews answer what the
//! registry's handlers do for an admin, a member, a reader and another project's member; the
//! rules review lists a namespace's rules; the subject review tells the caller's user
//! information; impersonation is honoured for an admin (and its effect is visible) and refused
//! with kube-apiserver's 403 for anyone else.

use reqwest::Method;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::jwt::hs256;
use crate::helpers::{spawn_jwt_on, Backend, Resp, TestApp};

const SECRET: &str = "registry-reviews-secret";
const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";
const ACCESS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const RULES: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const ROLES_KEY: &str = "Impersonate-Extra-alpha.kubernetes.io%2Fidentity%2Froles";

/// The callers: A's member, A's reader, B's member and an admin (of a project of its own).
struct Callers {
    member: String,
    reader: String,
    other: String,
    admin: String,
}

fn callers() -> Callers {
    Callers {
        member: hs256(SECRET, "ua", "proj-a", &["member", "reader"]),
        reader: hs256(SECRET, "ra", "proj-a", &["reader"]),
        other: hs256(SECRET, "ub", "proj-b", &["member", "reader"]),
        admin: hs256(SECRET, "root", "proj-admin", &["admin"]),
    }
}

/// A request with `token` and extra headers (a header named twice is sent twice).
async fn call(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("Accept", "application/json")
        .bearer_auth(token);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    app.send(req).await
}

fn cluster(name: &str) -> Value {
    json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.7.0.1:6443"}]}}})
}

fn access_review(attributes: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes}})
}

/// The status of a SelfSubjectAccessReview `token` creates about `attributes`.
async fn can_i(app: &TestApp, token: &str, attributes: Value) -> Value {
    let r = call(
        app,
        token,
        Method::POST,
        ACCESS,
        Some(&access_review(attributes)),
        &[],
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["kind"], "SelfSubjectAccessReview", "{}", r.text);
    r.body["status"].clone()
}

fn allowed(status: &Value) -> bool {
    status["allowed"].as_bool().expect("allowed is a boolean")
}

#[rstest]
#[tokio::test]
async fn access_reviews_answer_for_each_role_what_the_handlers_do(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_jwt_on(backend, SECRET).await;
    let c = callers();
    let registry = "clusterregistry.k8s.io";
    // (attributes, admin, member, reader, other)
    let cases = [
        (
            json!({"verb": "create", "group": registry, "resource": "clusters", "namespace": "proj-a"}),
            [true, true, false, false],
        ),
        (
            // A project nothing is bound to lists what its (no) groups reach there: nothing.
            json!({"verb": "list", "group": registry, "resource": "clusters", "namespace": "proj-a"}),
            [true, true, true, true],
        ),
        (
            json!({"verb": "delete", "group": registry, "resource": "clusters", "namespace": "proj-a", "name": "x"}),
            [true, true, false, false],
        ),
        (
            json!({"verb": "patch", "group": registry, "resource": "clusters", "subresource": "status", "namespace": "proj-a"}),
            [true, true, false, false],
        ),
        (
            json!({"verb": "get", "group": registry, "resource": "clusters", "subresource": "status", "namespace": "proj-a"}),
            [true, true, true, false],
        ),
        (
            json!({"verb": "create", "group": registry, "resource": "clustergroups", "namespace": "proj-a"}),
            [true, true, false, false],
        ),
        (
            json!({"verb": "patch", "group": registry, "resource": "clustergroups", "namespace": "proj-a", "name": "g"}),
            [true, true, false, false],
        ),
        (
            json!({"verb": "list", "group": registry, "resource": "clustergroupbindings", "namespace": "proj-a"}),
            [true, true, true, false],
        ),
        (
            json!({"verb": "delete", "group": registry, "resource": "clustergroupbindings", "namespace": "proj-a"}),
            [true, true, false, false],
        ),
        (
            json!({"verb": "watch", "group": registry, "resource": "clustergroups", "namespace": "proj-a"}),
            [true, true, true, false],
        ),
        (
            json!({"verb": "watch", "group": "multicluster.x-k8s.io", "resource": "clusterprofiles", "namespace": "proj-a"}),
            [true, true, true, true],
        ),
        (
            json!({"verb": "*", "group": registry, "resource": "clusters", "namespace": "proj-a"}),
            [true, true, false, false],
        ),
        // Across namespaces: a list shows a non-admin its own project; nothing else is allowed.
        (
            json!({"verb": "list", "group": registry, "resource": "clusters"}),
            [true, true, true, true],
        ),
        (
            json!({"verb": "create", "group": registry, "resource": "clusters"}),
            [true, false, false, false],
        ),
        (
            json!({"verb": "impersonate", "group": "", "resource": "users", "name": "ub"}),
            [true, false, false, false],
        ),
        (
            json!({"verb": "create", "group": "authorization.k8s.io", "resource": "selfsubjectaccessreviews"}),
            [true, true, true, true],
        ),
        (
            json!({"verb": "get", "group": "", "resource": "namespaces", "name": "proj-a"}),
            [true, true, true, false],
        ),
        (
            json!({"verb": "get", "group": "", "resource": "pods", "namespace": "proj-a"}),
            [false, false, false, false],
        ),
    ];
    let tokens = [&c.admin, &c.member, &c.reader, &c.other];
    for (attributes, expected) in &cases {
        for (token, want) in tokens.iter().zip(expected) {
            let status = can_i(&app, token, attributes.clone()).await;
            assert_eq!(
                allowed(&status),
                *want,
                "{attributes} for {token}: {status}"
            );
            assert!(
                status["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{status}"
            );
        }
    }

    // One answer in full.
    let r = call(
        &app,
        &c.reader,
        Method::POST,
        ACCESS,
        Some(&access_review(
            json!({"verb": "create", "group": registry, "resource": "clusters", "namespace": "proj-a"}),
        )),
        &[],
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.body,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": {"verb": "create", "group": registry,
                "resource": "clusters", "namespace": "proj-a"}},
            "status": {"allowed": false, "denied": true,
                "reason": "policy rule \"registry:create\" does not allow it in project \"proj-a\""}})
    );
    let pods = can_i(
        &app,
        &c.admin,
        json!({"verb": "get", "resource": "pods", "namespace": "proj-a"}),
    )
    .await;
    assert_eq!(
        pods,
        json!({"allowed": false,
            "reason": "the service does not serve \"get\" on \"pods\" in the core group"})
    );

    // The handlers agree: each caller creates and lists in proj-a exactly when the review says.
    for (i, token) in tokens.iter().enumerate() {
        let name = format!("made-{i}");
        let made = call(
            &app,
            token,
            Method::POST,
            &format!("{BASE}/namespaces/proj-a/clusters"),
            Some(&cluster(&name)),
            &[],
        )
        .await;
        let review = can_i(
            &app,
            token,
            json!({"verb": "create", "group": registry, "resource": "clusters", "namespace": "proj-a"}),
        )
        .await;
        assert_eq!(made.status == 201, allowed(&review), "{}", made.text);
        if made.status != 201 {
            assert_eq!(made.status, 403, "{}", made.text);
        }
        let listed = call(
            &app,
            token,
            Method::GET,
            &format!("{BASE}/namespaces/proj-a/clusters"),
            None,
            &[],
        )
        .await;
        let review = can_i(
            &app,
            token,
            json!({"verb": "list", "group": registry, "resource": "clusters", "namespace": "proj-a"}),
        )
        .await;
        assert_eq!(listed.status == 200, allowed(&review), "{}", listed.text);
    }

    // Non-resource paths: discovery is readable, nothing is writable.
    for (path, verb, want) in [
        ("/apis", "get", true),
        ("/openapi/v3", "get", true),
        ("/apis", "post", false),
    ] {
        let r = call(
            &app,
            &c.member,
            Method::POST,
            ACCESS,
            Some(&json!({"spec": {"nonResourceAttributes": {"path": path, "verb": verb}}})),
            &[],
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(
            r.body["status"]["allowed"], want,
            "{path} {verb}: {}",
            r.text
        );
    }
}

#[tokio::test]
async fn an_access_review_without_exactly_one_kind_of_attributes_is_invalid() {
    let app = spawn_jwt_on(Backend::Sqlite, SECRET).await;
    let c = callers();
    let r = call(
        &app,
        &c.member,
        Method::POST,
        ACCESS,
        Some(&json!({"spec": {}})),
        &[],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
            "reason": "Invalid", "code": 422,
            "details": {"name": "", "group": "authorization.k8s.io", "kind": "SelfSubjectAccessReview",
                "causes": [{"reason": "FieldValueRequired",
                    "message": "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                    "field": "spec.resourceAttributes"}]}})
    );
    let both = json!({"spec": {"resourceAttributes": {"verb": "get"},
        "nonResourceAttributes": {"path": "/apis", "verb": "get"}}});
    let r = call(&app, &c.member, Method::POST, ACCESS, Some(&both), &[]).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["details"]["causes"][0]["field"], "spec.nonResourceAttributes",
        "{}",
        r.text
    );
    let wrong = json!({"apiVersion": "v1", "kind": "SelfSubjectAccessReview"});
    let r = call(&app, &c.member, Method::POST, ACCESS, Some(&wrong), &[]).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["reason"], "BadRequest", "{}", r.text);
    // Unauthenticated: 401 Status, as for every resource.
    let r = call(
        &app,
        "not-a-token",
        Method::POST,
        ACCESS,
        Some(&json!({})),
        &[],
    )
    .await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.body["reason"], "Unauthorized", "{}", r.text);
    // Only POST.
    let r = call(&app, &c.member, Method::GET, ACCESS, None, &[]).await;
    assert_eq!(r.status, 405, "{}", r.text);
    assert_eq!(r.body["kind"], "Status", "{}", r.text);
}

/// The rules of a rules review, as (group, resource) -> verbs.
fn rules_of(body: &Value) -> Vec<(String, String, Vec<String>)> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    body["status"]["resourceRules"]
        .as_array()
        .expect("resourceRules")
        .iter()
        .map(|r| {
            (
                strings(&r["apiGroups"]).join(","),
                strings(&r["resources"]).join(","),
                strings(&r["verbs"]),
            )
        })
        .collect()
}

fn rule(group: &str, resource: &str, verbs: &[&str]) -> (String, String, Vec<String>) {
    (
        group.into(),
        resource.into(),
        verbs.iter().map(|v| v.to_string()).collect(),
    )
}

#[tokio::test]
async fn a_rules_review_lists_what_the_caller_may_do_in_a_namespace() {
    let app = spawn_jwt_on(Backend::Sqlite, SECRET).await;
    let c = callers();
    let review = |ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": ns}})
    };
    let open = [
        rule(
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            &["create"],
        ),
        rule(
            "authorization.k8s.io",
            "selfsubjectrulesreviews",
            &["create"],
        ),
        rule("authentication.k8s.io", "selfsubjectreviews", &["create"]),
        rule("", "namespaces", &["get", "list"]),
    ];
    let registry = "clusterregistry.k8s.io";
    let profiles = "multicluster.x-k8s.io";

    let r = call(
        &app,
        &c.member,
        Method::POST,
        RULES,
        Some(&review("proj-a")),
        &[],
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut want = vec![
        rule(
            registry,
            "clusters",
            &[
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
            ],
        ),
        rule(registry, "clusters/status", &["get", "update", "patch"]),
        rule(profiles, "clusterprofiles", &["get", "list", "watch"]),
        rule(
            "cluster.k8s.io",
            "machines",
            &[
                "get", "list", "delete", "create", "watch", "update", "patch",
            ],
        ),
        // A member reads a machine's status; writing it is an admin's.
        rule("cluster.k8s.io", "machines/status", &["get"]),
        // A node group's MachineDeployment: read, changed (a resize or a roll) and deleted.
        rule(
            "cluster.k8s.io",
            "machinedeployments",
            &["get", "list", "watch", "update", "patch", "delete"],
        ),
        rule(
            "cluster.k8s.io",
            "machinedeployments/scale",
            &["get", "update", "patch"],
        ),
        rule(registry, "kubeconfig", &["get"]),
        rule(
            registry,
            "clustergroups",
            &[
                "get", "list", "create", "update", "patch", "delete", "watch",
            ],
        ),
        rule(
            registry,
            "clustergroupbindings",
            &["get", "list", "create", "delete", "watch"],
        ),
    ];
    want.extend(open.iter().cloned());
    assert_eq!(rules_of(&r.body), want, "{}", r.text);
    assert_eq!(r.body["status"]["incomplete"], false, "{}", r.text);
    assert_eq!(r.body["spec"], json!({"namespace": "proj-a"}), "{}", r.text);
    let urls = &r.body["status"]["nonResourceRules"][0];
    assert_eq!(urls["verbs"], json!(["get"]), "{}", r.text);
    for url in ["/api", "/apis/*", "/openapi/*", "/version", "/healthz"] {
        assert!(
            urls["nonResourceURLs"]
                .as_array()
                .is_some_and(|a| a.iter().any(|u| u == url)),
            "{url}: {}",
            r.text
        );
    }

    let r = call(
        &app,
        &c.reader,
        Method::POST,
        RULES,
        Some(&review("proj-a")),
        &[],
    )
    .await;
    let mut want = vec![
        rule(registry, "clusters", &["get", "list", "watch"]),
        rule(registry, "clusters/status", &["get"]),
        rule(profiles, "clusterprofiles", &["get", "list", "watch"]),
        rule("cluster.k8s.io", "machines", &["get", "list", "watch"]),
        rule("cluster.k8s.io", "machines/status", &["get"]),
        rule(
            "cluster.k8s.io",
            "machinedeployments",
            &["get", "list", "watch"],
        ),
        rule("cluster.k8s.io", "machinedeployments/scale", &["get"]),
        rule(registry, "kubeconfig", &["get"]),
        rule(registry, "clustergroups", &["get", "list", "watch"]),
        rule(registry, "clustergroupbindings", &["get", "list", "watch"]),
    ];
    want.extend(open.iter().cloned());
    assert_eq!(rules_of(&r.body), want, "{}", r.text);

    // Another project's namespace: only what every caller may.
    let r = call(
        &app,
        &c.other,
        Method::POST,
        RULES,
        Some(&review("proj-a")),
        &[],
    )
    .await;
    assert_eq!(rules_of(&r.body), open.to_vec(), "{}", r.text);

    // An admin anywhere, impersonation included.
    let r = call(
        &app,
        &c.admin,
        Method::POST,
        RULES,
        Some(&review("proj-b")),
        &[],
    )
    .await;
    let got = rules_of(&r.body);
    for resource in ["users", "groups", "uids", "userextras"] {
        assert!(
            got.contains(&rule("", resource, &["impersonate"])),
            "{resource}: {}",
            r.text
        );
    }
    assert!(got.contains(&rule(
        registry,
        "clusters",
        &[
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection"
        ]
    )));
}

#[tokio::test]
async fn a_subject_review_tells_the_caller_its_user_information() {
    let app = spawn_jwt_on(Backend::Sqlite, SECRET).await;
    let c = callers();
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
        "metadata": {"creationTimestamp": null}});
    let r = call(&app, &c.member, Method::POST, WHOAMI, Some(&body), &[]).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.body,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
            "metadata": {},
            "status": {"userInfo": {"username": "ua", "uid": "ua",
                "groups": ["proj-a", "system:authenticated"],
                "extra": {"alpha.kubernetes.io/identity/project/id": ["proj-a"],
                    "alpha.kubernetes.io/identity/roles": ["member", "reader"]}}}})
    );
}

#[rstest]
#[tokio::test]
async fn an_admin_impersonating_a_user_acts_as_that_user(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_jwt_on(backend, SECRET).await;
    let c = callers();
    for (token, ns, name) in [(&c.member, "proj-a", "in-a"), (&c.other, "proj-b", "in-b")] {
        let r = call(
            &app,
            token,
            Method::POST,
            &format!("{BASE}/namespaces/{ns}/clusters"),
            Some(&cluster(name)),
            &[],
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let names = |r: &Resp| -> Vec<String> {
        r.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
            .collect()
    };
    let all = format!("{BASE}/clusters");
    let r = call(&app, &c.admin, Method::GET, &all, None, &[]).await;
    assert_eq!(names(&r), ["in-a", "in-b"], "{}", r.text);

    // As B's reader: only B's clusters, and whoami says so.
    let as_b_reader = [
        ("Impersonate-User", "ub"),
        ("Impersonate-Group", "proj-b"),
        ("Impersonate-Group", "system:authenticated"),
        (ROLES_KEY, "reader"),
    ];
    let r = call(&app, &c.admin, Method::GET, &all, None, &as_b_reader).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(names(&r), ["in-b"], "{}", r.text);
    let r = call(
        &app,
        &c.admin,
        Method::POST,
        WHOAMI,
        Some(&json!({})),
        &as_b_reader,
    )
    .await;
    assert_eq!(
        r.body["status"]["userInfo"],
        json!({"username": "ub", "uid": "ub", "groups": ["proj-b", "system:authenticated"],
            "extra": {"alpha.kubernetes.io/identity/project/id": ["proj-b"],
                "alpha.kubernetes.io/identity/roles": ["reader"]}}),
        "{}",
        r.text
    );
    // A reader may not create: the refusal names the impersonated user.
    let r = call(
        &app,
        &c.admin,
        Method::POST,
        &format!("{BASE}/namespaces/proj-b/clusters"),
        Some(&cluster("by-root")),
        &as_b_reader,
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.body["message"],
        "clusters.clusterregistry.k8s.io is forbidden: User \"ub\" cannot create resource \"clusters\" in API group \"clusterregistry.k8s.io\" in the namespace \"proj-b\"",
        "{}",
        r.text
    );
    // A user with no project and no roles may do nothing in A's namespace.
    let r = call(
        &app,
        &c.admin,
        Method::GET,
        &format!("{BASE}/namespaces/proj-a/clusters"),
        None,
        &[("Impersonate-User", "nobody")],
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);

    // As B's member (roles as one comma-separated value): the create is B's.
    let r = call(
        &app,
        &c.admin,
        Method::POST,
        &format!("{BASE}/namespaces/proj-b/clusters"),
        Some(&cluster("for-b")),
        &[
            ("Impersonate-User", "ub"),
            ("Impersonate-Group", "proj-b"),
            (ROLES_KEY, "member,reader"),
        ],
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["metadata"]["namespace"], "proj-b", "{}", r.text);
    let r = call(
        &app,
        &c.other,
        Method::GET,
        &format!("{BASE}/namespaces/proj-b/clusters"),
        None,
        &[],
    )
    .await;
    assert_eq!(names(&r), ["for-b", "in-b"], "{}", r.text);
}

#[rstest]
#[tokio::test]
async fn impersonation_by_a_non_admin_is_refused_with_the_apiservers_status(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let app = spawn_jwt_on(backend, SECRET).await;
    let c = callers();
    let refused = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure",
        "message": "users \"root\" is forbidden: User \"ua\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
        "reason": "Forbidden", "details": {"group": "", "kind": "users", "name": "root"},
        "code": 403});
    let as_root = [
        ("Impersonate-User", "root"),
        ("Impersonate-Group", "proj-admin"),
        (ROLES_KEY, "admin"),
    ];
    for (method, path, body) in [
        (Method::GET, format!("{BASE}/clusters"), None),
        (Method::GET, "/apis".to_string(), None),
        (Method::POST, WHOAMI.to_string(), Some(json!({}))),
        (
            Method::POST,
            format!("{BASE}/namespaces/proj-admin/clusters"),
            Some(cluster("sneaky")),
        ),
    ] {
        let r = call(&app, &c.member, method, &path, body.as_ref(), &as_root).await;
        assert_eq!(r.status, 403, "{path}: {}", r.text);
        assert_eq!(r.body, refused, "{path}");
    }
    // /v1 (the Magnum API) reads no impersonation headers: the member is served as itself.
    let r = call(&app, &c.member, Method::GET, "/v1/clusters", None, &as_root).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["clusters"], json!([]), "{}", r.text);

    // Nothing was created under the refused impersonation.
    let r = call(
        &app,
        &c.admin,
        Method::GET,
        &format!("{BASE}/clusters"),
        None,
        &[],
    )
    .await;
    assert_eq!(r.body["items"], json!([]), "{}", r.text);

    // A reader too; and headers the service cannot represent are a 400 whoever sends them.
    let r = call(
        &app,
        &c.reader,
        Method::GET,
        "/apis",
        None,
        &[("Impersonate-User", "ua")],
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = call(
        &app,
        &c.admin,
        Method::GET,
        "/apis",
        None,
        &[("Impersonate-Group", "proj-b")],
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["message"], "requested [group proj-b] without impersonating a user",
        "{}",
        r.text
    );
    let r = call(
        &app,
        &c.admin,
        Method::GET,
        "/apis",
        None,
        &[
            ("Impersonate-User", "ub"),
            ("Impersonate-Extra-scopes", "all"),
        ],
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["kind"], "Status", "{}", r.text);
}
