//! Discovery: `/apis` and `/api` (aggregated `APIGroupDiscoveryList` or the legacy documents),
//! the group and group-version documents, and `/version`.
//!
//! client-go decides which discovery format it got from the response Content-Type alone, so the
//! aggregated one carries exactly `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::reviews::{ACCESS_REVIEWS, RULES_REVIEWS, SUBJECT_REVIEWS};
use super::status::{Resource, CLUSTERS, CLUSTER_PROFILES};

pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
pub const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// What one served resource advertises.
struct Served {
    resource: &'static Resource,
    /// Namespaced (a project's), or cluster-scoped (the self reviews).
    namespaced: bool,
    verbs: &'static [&'static str],
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    /// Subresources (`status`) and their verbs.
    subresources: &'static [(&'static str, &'static [&'static str])],
}

/// The verbs of a status subresource.
const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// A cluster-scoped review: `create` only.
const fn review(resource: &'static Resource) -> Served {
    Served {
        resource,
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
    }
}

const SERVED: [Served; 5] = [
    Served {
        resource: &CLUSTERS,
        namespaced: true,
        verbs: &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        short_names: &[super::objects::SHORT_NAME],
        categories: &[super::objects::CATEGORY],
        subresources: &[("status", STATUS_VERBS)],
    },
    Served {
        resource: &CLUSTER_PROFILES,
        namespaced: true,
        verbs: &["get", "list", "watch"],
        short_names: &[],
        categories: &[],
        subresources: &[],
    },
    review(&ACCESS_REVIEWS),
    review(&RULES_REVIEWS),
    review(&SUBJECT_REVIEWS),
];

/// Which discovery document the `Accept` header asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryFormat {
    AggregatedV2,
    AggregatedV2Beta1,
    Legacy,
}

/// The first acceptable media range of `accept` (in the client's order) decides.
pub fn negotiate(accept: &str) -> DiscoveryFormat {
    for range in accept.split(',').take(32) {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut g, mut v, mut r#as) = ("", "", "");
        for p in parts {
            match p.split_once('=') {
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                Some(("as", x)) => r#as = x,
                _ => {}
            }
        }
        if media == "application/json"
            && g == "apidiscovery.k8s.io"
            && r#as == "APIGroupDiscoveryList"
        {
            match v {
                "v2" => return DiscoveryFormat::AggregatedV2,
                "v2beta1" => return DiscoveryFormat::AggregatedV2Beta1,
                _ => continue,
            }
        }
        if g.is_empty()
            && r#as.is_empty()
            && matches!(media.as_str(), "application/json" | "application/*" | "*/*")
        {
            return DiscoveryFormat::Legacy;
        }
    }
    DiscoveryFormat::Legacy
}

fn accept_of(req: &HttpRequest) -> &str {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn json_response(content_type: &str, body: &Value) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type))
        .body(body.to_string())
}

fn groups() -> Vec<&'static str> {
    let mut gs: Vec<&'static str> = Vec::new();
    for s in &SERVED {
        if !gs.contains(&s.resource.group) {
            gs.push(s.resource.group);
        }
    }
    gs
}

fn aggregated_resource(s: &Served) -> Value {
    let r = s.resource;
    let mut v = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": if s.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": s.verbs,
    });
    if !s.short_names.is_empty() {
        v["shortNames"] = json!(s.short_names);
    }
    if !s.categories.is_empty() {
        v["categories"] = json!(s.categories);
    }
    if !s.subresources.is_empty() {
        let subs: Vec<Value> = s
            .subresources
            .iter()
            .map(|(sub, verbs)| {
                json!({"subresource": sub, "verbs": verbs,
                    "responseKind": {"group": r.group, "version": r.version, "kind": r.kind}})
            })
            .collect();
        v["subresources"] = json!(subs);
    }
    v
}

/// The aggregated `APIGroupDiscoveryList` of `/apis` (`v2` or `v2beta1`).
pub fn aggregated_apis(version: &str) -> Value {
    let items: Vec<Value> = groups()
        .into_iter()
        .map(|g| {
            let mut versions: Vec<String> = Vec::new();
            for s in SERVED.iter().filter(|s| s.resource.group == g) {
                if !versions.iter().any(|v| v == s.resource.version) {
                    versions.push(s.resource.version.to_string());
                }
            }
            let versions: Vec<Value> = versions
                .iter()
                .map(|ver| {
                    let resources: Vec<Value> = SERVED
                        .iter()
                        .filter(|s| s.resource.group == g && s.resource.version == ver)
                        .map(aggregated_resource)
                        .collect();
                    json!({"version": ver, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

fn api_group(group: &str) -> Value {
    let mut versions: Vec<Value> = Vec::new();
    for s in SERVED.iter().filter(|s| s.resource.group == group) {
        let gv = json!({"groupVersion": s.resource.api_version(), "version": s.resource.version});
        if !versions.contains(&gv) {
            versions.push(gv);
        }
    }
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

/// The legacy `APIGroupList` of `/apis`.
pub fn legacy_apis() -> Value {
    let groups: Vec<Value> = groups().into_iter().map(api_group).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The `APIResourceList` of `/apis/<group>/<version>`, or None for a group-version not served.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = SERVED
        .iter()
        .filter(|s| s.resource.group == group && s.resource.version == version)
        .flat_map(|s| {
            let mut v = json!({
                "name": s.resource.plural,
                "singularName": s.resource.singular,
                "namespaced": s.namespaced,
                "kind": s.resource.kind,
                "verbs": s.verbs,
            });
            if !s.short_names.is_empty() {
                v["shortNames"] = json!(s.short_names);
            }
            if !s.categories.is_empty() {
                v["categories"] = json!(s.categories);
            }
            std::iter::once(v).chain(s.subresources.iter().map(|(sub, verbs)| {
                json!({"name": format!("{}/{sub}", s.resource.plural), "singularName": "",
                    "namespaced": true, "kind": s.resource.kind, "verbs": verbs})
            }))
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{group}/{version}"),
        "resources": resources,
    }))
}

/// `GET /apis`.
pub async fn apis(req: HttpRequest) -> HttpResponse {
    match negotiate(accept_of(&req)) {
        DiscoveryFormat::AggregatedV2 => json_response(AGGREGATED_V2, &aggregated_apis("v2")),
        DiscoveryFormat::AggregatedV2Beta1 => {
            json_response(AGGREGATED_V2BETA1, &aggregated_apis("v2beta1"))
        }
        DiscoveryFormat::Legacy => json_response("application/json", &legacy_apis()),
    }
}

/// `GET /api`: the core group with one resource, `namespaces` (get), which `/api/v1` lists too:
/// kubectl asks after a project's namespace on a 404, and maps a `kind: List` file through
/// the core group.
pub async fn api(req: HttpRequest) -> HttpResponse {
    let empty = |v: &str| {
        json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{v}"),
            "metadata": {}, "items": [{"metadata": {"name": ""}, "versions": [{"version": "v1",
                "freshness": "Current", "resources": [{"resource": "namespaces",
                "singularResource": "namespace", "scope": "Cluster",
                "responseKind": {"group": "", "version": "v1", "kind": "Namespace"},
                "verbs": ["get", "list"]}]}]}]})
    };
    match negotiate(accept_of(&req)) {
        DiscoveryFormat::AggregatedV2 => json_response(AGGREGATED_V2, &empty("v2")),
        DiscoveryFormat::AggregatedV2Beta1 => json_response(AGGREGATED_V2BETA1, &empty("v2beta1")),
        DiscoveryFormat::Legacy => {
            let host = req.connection_info().host().to_string();
            json_response(
                "application/json",
                &json!({"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}),
            )
        }
    }
}

/// `GET /api/v1`: the one core resource served, `namespaces` (get), so that kubectl knows the
/// core group (it maps a `kind: List` file through it).
pub async fn core_v1(_req: HttpRequest) -> HttpResponse {
    json_response(
        "application/json",
        &json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [{
            "name": "namespaces", "singularName": "namespace", "namespaced": false,
            "kind": "Namespace", "verbs": ["get", "list"]}]}),
    )
}

fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&super::status::KubeError::path_not_found())
}

/// `GET /apis/<group>` of a group served beside the registry's (the reviews').
pub async fn group(req: HttpRequest) -> HttpResponse {
    group_document(req.path().trim_start_matches("/apis/"))
}

/// `GET /apis/<group>/<version>` of a group served beside the registry's (the reviews').
pub async fn group_version(req: HttpRequest) -> HttpResponse {
    match req.path().trim_start_matches("/apis/").split_once('/') {
        Some((group, version)) => resource_list_response(group, version),
        None => not_found(),
    }
}

/// `GET /apis/clusterregistry.k8s.io`.
pub async fn clusterregistry_group(_req: HttpRequest) -> HttpResponse {
    group_document(CLUSTERS.group)
}

/// `GET /apis/multicluster.x-k8s.io`.
pub async fn multicluster_group(_req: HttpRequest) -> HttpResponse {
    group_document(CLUSTER_PROFILES.group)
}

fn group_document(group: &str) -> HttpResponse {
    let mut g = api_group(group);
    if g["versions"].as_array().is_none_or(|v| v.is_empty()) {
        return not_found();
    }
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    json_response("application/json", &g)
}

/// `GET /apis/clusterregistry.k8s.io/v1alpha1`.
pub async fn clusterregistry_v1alpha1(_req: HttpRequest) -> HttpResponse {
    resource_list_response(CLUSTERS.group, CLUSTERS.version)
}

/// `GET /apis/multicluster.x-k8s.io/v1alpha1`.
pub async fn multicluster_v1alpha1(_req: HttpRequest) -> HttpResponse {
    resource_list_response(CLUSTER_PROFILES.group, CLUSTER_PROFILES.version)
}

fn resource_list_response(group: &str, version: &str) -> HttpResponse {
    match resource_list(group, version) {
        Some(v) => json_response("application/json", &v),
        None => not_found(),
    }
}

/// Go's names for the platform (`linux/amd64`).
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

/// The `/version` document. `minor` must stay "32": the kubectl on the dev machine is a
/// dispatcher that runs `kubectl.1.<minor>`.
pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": format!("v1.32.0-fleetyard.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (fleetyard, Rust)",
        "compiler": "rustc",
        "platform": platform(),
    })
}

/// `GET /version`.
pub async fn version(_req: HttpRequest) -> HttpResponse {
    json_response("application/json", &version_info())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;
    use actix_web::test::TestRequest;

    const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    async fn call(h: impl std::future::Future<Output = HttpResponse>) -> (u16, String, Value) {
        let resp = h.await;
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let status = resp.status().as_u16();
        let bytes = resp.into_body().try_into_bytes().unwrap_or_default();
        (
            status,
            ct,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    #[test]
    fn accept_negotiation_follows_the_clients_order() {
        assert_eq!(negotiate(KUBECTL_ACCEPT), DiscoveryFormat::AggregatedV2);
        assert_eq!(
            negotiate("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"),
            DiscoveryFormat::AggregatedV2Beta1
        );
        assert_eq!(
            negotiate("application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io"),
            DiscoveryFormat::AggregatedV2
        );
        assert_eq!(negotiate("application/json, */*"), DiscoveryFormat::Legacy);
        assert_eq!(negotiate(""), DiscoveryFormat::Legacy);
        assert_eq!(
            negotiate("application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
            DiscoveryFormat::Legacy
        );
    }

    #[actix_web::test]
    async fn apis_is_aggregated_with_the_exact_content_type() {
        let req = TestRequest::get()
            .uri("/apis")
            .insert_header((header::ACCEPT, KUBECTL_ACCEPT))
            .to_http_request();
        let (code, ct, v) = call(apis(req)).await;
        assert_eq!(code, 200);
        assert_eq!(
            ct,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        assert_eq!(
            v,
            json!({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},
              "items":[
                {"metadata":{"name":"clusterregistry.k8s.io","creationTimestamp":null},
                 "versions":[{"version":"v1alpha1","freshness":"Current","resources":[{
                   "resource":"clusters","singularResource":"cluster","scope":"Namespaced",
                   "responseKind":{"group":"clusterregistry.k8s.io","version":"v1alpha1","kind":"Cluster"},
                   "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                   "shortNames":["cr"],"categories":["all-clusters"],
                   "subresources":[{"subresource":"status","verbs":["get","patch","update"],
                     "responseKind":{"group":"clusterregistry.k8s.io","version":"v1alpha1","kind":"Cluster"}}]}]}]},
                {"metadata":{"name":"multicluster.x-k8s.io","creationTimestamp":null},
                 "versions":[{"version":"v1alpha1","freshness":"Current","resources":[{
                   "resource":"clusterprofiles","singularResource":"clusterprofile","scope":"Namespaced",
                   "responseKind":{"group":"multicluster.x-k8s.io","version":"v1alpha1","kind":"ClusterProfile"},
                   "verbs":["get","list","watch"]}]}]},
                {"metadata":{"name":"authorization.k8s.io","creationTimestamp":null},
                 "versions":[{"version":"v1","freshness":"Current","resources":[{
                   "resource":"selfsubjectaccessreviews","singularResource":"selfsubjectaccessreview",
                   "scope":"Cluster","verbs":["create"],
                   "responseKind":{"group":"authorization.k8s.io","version":"v1","kind":"SelfSubjectAccessReview"}},
                   {"resource":"selfsubjectrulesreviews","singularResource":"selfsubjectrulesreview",
                   "scope":"Cluster","verbs":["create"],
                   "responseKind":{"group":"authorization.k8s.io","version":"v1","kind":"SelfSubjectRulesReview"}}]}]},
                {"metadata":{"name":"authentication.k8s.io","creationTimestamp":null},
                 "versions":[{"version":"v1","freshness":"Current","resources":[{
                   "resource":"selfsubjectreviews","singularResource":"selfsubjectreview",
                   "scope":"Cluster","verbs":["create"],
                   "responseKind":{"group":"authentication.k8s.io","version":"v1","kind":"SelfSubjectReview"}}]}]}]})
        );
    }

    #[actix_web::test]
    async fn the_review_groups_have_their_documents() {
        let get = |path: &str| TestRequest::get().uri(path).to_http_request();
        let (code, _, v) = call(group(get("/apis/authorization.k8s.io"))).await;
        assert_eq!(code, 200);
        assert_eq!(
            v,
            json!({"kind":"APIGroup","apiVersion":"v1","name":"authorization.k8s.io",
                "versions":[{"groupVersion":"authorization.k8s.io/v1","version":"v1"}],
                "preferredVersion":{"groupVersion":"authorization.k8s.io/v1","version":"v1"}})
        );
        let (code, _, v) = call(group_version(get("/apis/authentication.k8s.io/v1"))).await;
        assert_eq!(code, 200);
        assert_eq!(
            v,
            json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"authentication.k8s.io/v1",
                "resources":[{"name":"selfsubjectreviews","singularName":"selfsubjectreview",
                "namespaced":false,"kind":"SelfSubjectReview","verbs":["create"]}]})
        );
        let (code, _, _) = call(group_version(get("/apis/authentication.k8s.io/v9"))).await;
        assert_eq!(code, 404);
    }

    #[actix_web::test]
    async fn apis_answers_v2beta1_and_legacy_when_asked() {
        let req = TestRequest::get()
            .insert_header((header::ACCEPT, AGGREGATED_V2BETA1))
            .to_http_request();
        let (_, ct, v) = call(apis(req)).await;
        assert_eq!(ct, AGGREGATED_V2BETA1);
        assert_eq!(v["apiVersion"], "apidiscovery.k8s.io/v2beta1");
        let req = TestRequest::get()
            .insert_header((header::ACCEPT, "application/json"))
            .to_http_request();
        let (_, ct, v) = call(apis(req)).await;
        assert_eq!(ct, "application/json");
        assert_eq!(
            v["groups"][0],
            json!({"name":"clusterregistry.k8s.io",
              "versions":[{"groupVersion":"clusterregistry.k8s.io/v1alpha1","version":"v1alpha1"}],
              "preferredVersion":{"groupVersion":"clusterregistry.k8s.io/v1alpha1","version":"v1alpha1"}})
        );
        assert_eq!(v["kind"], "APIGroupList");
        assert_eq!(v["groups"][1]["name"], "multicluster.x-k8s.io");
    }

    #[actix_web::test]
    async fn api_lists_the_core_namespaces_only() {
        let req = TestRequest::get()
            .insert_header((header::ACCEPT, KUBECTL_ACCEPT))
            .to_http_request();
        let (_, ct, v) = call(api(req)).await;
        assert_eq!(ct, AGGREGATED_V2);
        assert_eq!(v["kind"], "APIGroupDiscoveryList");
        assert_eq!(v["items"][0]["metadata"]["name"], "");
        let resources = &v["items"][0]["versions"][0]["resources"];
        assert_eq!(resources.as_array().map(Vec::len), Some(1), "{v}");
        assert_eq!(resources[0]["resource"], "namespaces");
        assert_eq!(resources[0]["verbs"], json!(["get", "list"]));
        let req = TestRequest::get()
            .insert_header((header::HOST, "api.example:9511"))
            .to_http_request();
        let (_, ct, v) = call(api(req)).await;
        assert_eq!(ct, "application/json");
        assert_eq!(
            v,
            json!({"kind":"APIVersions","versions":["v1"],
                "serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"api.example:9511"}]})
        );
    }

    #[actix_web::test]
    async fn group_version_documents_list_the_namespaced_resources() {
        let (code, _, v) = call(clusterregistry_v1alpha1(
            TestRequest::get().to_http_request(),
        ))
        .await;
        assert_eq!(code, 200);
        assert_eq!(
            v,
            json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"clusterregistry.k8s.io/v1alpha1",
              "resources":[{"name":"clusters","singularName":"cluster","namespaced":true,"kind":"Cluster",
                "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                "shortNames":["cr"],"categories":["all-clusters"]},
                {"name":"clusters/status","singularName":"","namespaced":true,"kind":"Cluster",
                 "verbs":["get","patch","update"]}]})
        );
        let (_, _, v) = call(multicluster_v1alpha1(TestRequest::get().to_http_request())).await;
        assert_eq!(
            v["resources"],
            json!([{"name":"clusterprofiles","singularName":"clusterprofile","namespaced":true,
                "kind":"ClusterProfile","verbs":["get","list","watch"]}])
        );
        let (_, _, v) = call(clusterregistry_group(TestRequest::get().to_http_request())).await;
        assert_eq!(v["kind"], "APIGroup");
        assert_eq!(v["name"], "clusterregistry.k8s.io");
        assert_eq!(
            v["preferredVersion"]["groupVersion"],
            "clusterregistry.k8s.io/v1alpha1"
        );
        let (_, _, v) = call(multicluster_group(TestRequest::get().to_http_request())).await;
        assert_eq!(v["name"], "multicluster.x-k8s.io");
        assert!(resource_list("clusterregistry.k8s.io", "v1").is_none());
    }

    #[actix_web::test]
    async fn version_reports_minor_32() {
        let (code, ct, v) = call(version(TestRequest::get().to_http_request())).await;
        assert_eq!((code, ct.as_str()), (200, "application/json"));
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "32");
        assert_eq!(
            v["gitVersion"],
            format!("v1.32.0-fleetyard.{}", env!("CARGO_PKG_VERSION"))
        );
        assert!(v["platform"].as_str().is_some_and(|p| p.contains('/')));
    }
}
