//! Discovery: `/apis` and `/api` (aggregated `APIGroupDiscoveryList` or the legacy documents),
//! the group and group-version documents, and `/version`.
//!
//! client-go decides which discovery format it got from the response Content-Type alone, so the
//! aggregated one carries exactly `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`.
//!
//! One table says what is served: [`SERVED`] (and [`CORE`], the core group's `namespaces`).
//! Every document is built from it: the aggregated lists ([`aggregated`]'s types) and the
//! legacy `APIGroupList`, `APIGroup`, `APIResourceList` and `APIVersions` (k8s-openapi's).

mod aggregated;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery,
    ServerAddressByClientCIDR,
};
use serde::Serialize;
use serde_json::{json, Value};

use self::aggregated::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APISubresourceDiscovery,
    APIVersionDiscovery, Freshness, GroupMetadata, GroupVersionKind, Scope, Version,
};
use super::groups::{CLUSTER_GROUPS, CLUSTER_GROUP_BINDINGS};
use super::request::{accept, json_response, json_response_as};
use super::reviews::{ACCESS_REVIEWS, RULES_REVIEWS, SUBJECT_REVIEWS};
use super::status::{
    Resource, CLUSTERS, CLUSTER_PROFILES, MACHINES, MACHINE_DEPLOYMENTS, NAMESPACES,
};

pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
pub const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// What one served resource advertises.
struct Served {
    resource: &'static Resource,
    /// Namespaced (a project's), or cluster-scoped (the self reviews, namespaces).
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

/// Every resource served under `/apis`, its group's first one deciding the group's place.
const SERVED: [Served; 9] = [
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
    // A binding never changes. Both kinds watch (the groups' change log).
    Served {
        resource: &CLUSTER_GROUPS,
        namespaced: true,
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        short_names: &["cg"],
        categories: &[],
        subresources: &[],
    },
    Served {
        resource: &CLUSTER_GROUP_BINDINGS,
        namespaced: true,
        verbs: &["create", "delete", "get", "list", "watch"],
        short_names: &["cgb"],
        categories: &[],
        subresources: &[],
    },
    Served {
        resource: &CLUSTER_PROFILES,
        namespaced: true,
        verbs: &["get", "list", "watch"],
        short_names: &[],
        categories: &[],
        subresources: &[],
    },
    // A delete removes that node, a create adds one, an update or patch changes its versions,
    // runtime or image.
    Served {
        resource: &MACHINES,
        namespaced: true,
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        short_names: &[],
        categories: &[],
        subresources: &[("status", STATUS_VERBS)],
    },
    // One per node group: an update or patch resizes it or rolls its machines, `scale`
    // resizes it, a delete deletes it; created through `/v1` only.
    Served {
        resource: &MACHINE_DEPLOYMENTS,
        namespaced: true,
        verbs: &["delete", "get", "list", "patch", "update", "watch"],
        short_names: &["md"],
        categories: &[],
        subresources: &[("scale", STATUS_VERBS)],
    },
    review(&ACCESS_REVIEWS),
    review(&RULES_REVIEWS),
    review(&SUBJECT_REVIEWS),
];

/// The core group under `/api`: `namespaces` (get, list) only. kubectl asks after a project's
/// namespace on a 404, and maps a `kind: List` file through the core group.
const CORE: [Served; 1] = [Served {
    resource: &NAMESPACES,
    namespaced: false,
    verbs: &["get", "list"],
    short_names: &[],
    categories: &[],
    subresources: &[],
}];

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

fn ok(body: &impl Serialize) -> HttpResponse {
    json_response(StatusCode::OK, body)
}

/// The groups of `served`, each once, in table order.
fn groups_of(served: &[Served]) -> Vec<&'static str> {
    let mut gs: Vec<&'static str> = Vec::new();
    for s in served {
        if !gs.contains(&s.resource.group) {
            gs.push(s.resource.group);
        }
    }
    gs
}

/// The versions of `group` in `served`, each once, the preferred (first listed) first.
fn versions_of(served: &[Served], group: &str) -> Vec<&'static str> {
    let mut vs: Vec<&'static str> = Vec::new();
    for s in served.iter().filter(|s| s.resource.group == group) {
        if !vs.contains(&s.resource.version) {
            vs.push(s.resource.version);
        }
    }
    vs
}

/// Every group-version served under `/apis`, each once: its routes.
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    groups_of(&SERVED)
        .into_iter()
        .flat_map(|g| versions_of(&SERVED, g).into_iter().map(move |v| (g, v)))
        .collect()
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| x.to_string()).collect()
}

fn response_kind(r: &Resource) -> GroupVersionKind {
    GroupVersionKind {
        group: r.group.into(),
        version: r.version.into(),
        kind: r.kind.into(),
    }
}

/// The kind a subresource answers: `autoscaling/v1` `Scale` for `scale`, the resource's own
/// kind for the others.
fn subresource_kind(r: &Resource, sub: &str) -> GroupVersionKind {
    if sub == "scale" {
        return GroupVersionKind {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
        };
    }
    response_kind(r)
}

fn aggregated_resource(s: &Served) -> APIResourceDiscovery {
    let r = s.resource;
    APIResourceDiscovery {
        resource: r.plural.into(),
        response_kind: response_kind(r),
        scope: if s.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
        singular_resource: r.singular.into(),
        verbs: strings(s.verbs),
        short_names: strings(s.short_names),
        categories: strings(s.categories),
        subresources: s
            .subresources
            .iter()
            .map(|(sub, verbs)| APISubresourceDiscovery {
                subresource: sub.to_string(),
                response_kind: subresource_kind(r, sub),
                verbs: strings(verbs),
            })
            .collect(),
    }
}

/// The aggregated `APIGroupDiscoveryList` of `served`: its groups, their versions, resources.
fn aggregated_list(version: Version, served: &[Served]) -> APIGroupDiscoveryList {
    let items = groups_of(served)
        .into_iter()
        .map(|g| APIGroupDiscovery {
            metadata: GroupMetadata {
                name: g.into(),
                // Go writes a zero `metav1.Time` as `null`; the core group's item has always
                // been written without it.
                creation_timestamp: (!g.is_empty()).then_some(()),
            },
            versions: versions_of(served, g)
                .into_iter()
                .map(|v| APIVersionDiscovery {
                    version: v.into(),
                    resources: served
                        .iter()
                        .filter(|s| s.resource.group == g && s.resource.version == v)
                        .map(aggregated_resource)
                        .collect(),
                    freshness: Freshness::Current,
                })
                .collect(),
        })
        .collect();
    APIGroupDiscoveryList::new(version, items)
}

/// The aggregated `APIGroupDiscoveryList` of `/apis`.
fn aggregated_apis(version: Version) -> APIGroupDiscoveryList {
    aggregated_list(version, &SERVED)
}

/// `group/version`, or `version` for the core group.
fn group_version_of(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// The `APIGroup` of `group`, or None for a group not served.
fn api_group(group: &str) -> Option<APIGroup> {
    let versions: Vec<GroupVersionForDiscovery> = versions_of(&SERVED, group)
        .into_iter()
        .map(|v| GroupVersionForDiscovery {
            group_version: group_version_of(group, v),
            version: v.into(),
        })
        .collect();
    let preferred_version = versions.first().cloned()?;
    Some(APIGroup {
        name: group.into(),
        preferred_version: Some(preferred_version),
        server_address_by_client_cidrs: None,
        versions,
    })
}

/// The legacy `APIGroupList` of `/apis`.
///
/// k8s-openapi writes `kind: APIGroup` and `apiVersion: v1` inside each of `groups` too, which
/// kube-apiserver leaves out. Harmless: both are fields of Go's `metav1.APIGroup` (its inline
/// `TypeMeta`) and of the Python client's `V1APIGroup`, and kubectl 1.27–1.33 and the Python
/// client's `DynamicClient` discover through this document as before.
fn legacy_apis() -> APIGroupList {
    APIGroupList {
        groups: groups_of(&SERVED)
            .into_iter()
            .filter_map(api_group)
            .collect(),
    }
}

/// The `APIResourceList` of `group/version` in `served`, or None for one not served.
fn resource_list_of(served: &[Served], group: &str, version: &str) -> Option<APIResourceList> {
    let resource = |name: String, singular: &str, s: &Served, verbs: &[&str]| APIResource {
        name,
        singular_name: singular.into(),
        namespaced: s.namespaced,
        kind: s.resource.kind.into(),
        verbs: strings(verbs),
        short_names: None,
        categories: None,
        group: None,
        version: None,
        storage_version_hash: None,
    };
    let resources: Vec<APIResource> = served
        .iter()
        .filter(|s| s.resource.group == group && s.resource.version == version)
        .flat_map(|s| {
            let main = APIResource {
                short_names: Some(strings(s.short_names)).filter(|v| !v.is_empty()),
                categories: Some(strings(s.categories)).filter(|v| !v.is_empty()),
                ..resource(s.resource.plural.into(), s.resource.singular, s, s.verbs)
            };
            std::iter::once(main).chain(s.subresources.iter().map(|(sub, verbs)| {
                let r = resource(format!("{}/{sub}", s.resource.plural), "", s, verbs);
                if *sub == "scale" {
                    // As kube-apiserver lists `deployments/scale`.
                    APIResource {
                        kind: "Scale".into(),
                        group: Some("autoscaling".into()),
                        version: Some("v1".into()),
                        ..r
                    }
                } else {
                    r
                }
            }))
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    Some(APIResourceList {
        group_version: group_version_of(group, version),
        resources,
    })
}

/// The `APIResourceList` of `/apis/<group>/<version>`, or None for a group-version not served.
fn resource_list(group: &str, version: &str) -> Option<APIResourceList> {
    resource_list_of(&SERVED, group, version)
}

/// A core group document (`/api`, `/api/v1`) as kube-apiserver writes it: without the
/// `apiVersion` k8s-openapi adds.
fn core_document(doc: &impl Serialize) -> Value {
    let mut v = serde_json::to_value(doc).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.remove("apiVersion");
    }
    v
}

/// `GET /apis`.
pub async fn apis(req: HttpRequest) -> HttpResponse {
    match negotiate(accept(&req)) {
        DiscoveryFormat::AggregatedV2 => {
            json_response_as(StatusCode::OK, AGGREGATED_V2, &aggregated_apis(Version::V2))
        }
        DiscoveryFormat::AggregatedV2Beta1 => json_response_as(
            StatusCode::OK,
            AGGREGATED_V2BETA1,
            &aggregated_apis(Version::V2Beta1),
        ),
        DiscoveryFormat::Legacy => ok(&legacy_apis()),
    }
}

/// `GET /api`: the core group ([`CORE`]), which `/api/v1` lists.
pub async fn api(req: HttpRequest) -> HttpResponse {
    match negotiate(accept(&req)) {
        DiscoveryFormat::AggregatedV2 => json_response_as(
            StatusCode::OK,
            AGGREGATED_V2,
            &aggregated_list(Version::V2, &CORE),
        ),
        DiscoveryFormat::AggregatedV2Beta1 => json_response_as(
            StatusCode::OK,
            AGGREGATED_V2BETA1,
            &aggregated_list(Version::V2Beta1, &CORE),
        ),
        DiscoveryFormat::Legacy => {
            let host = req.connection_info().host().to_string();
            ok(&core_document(&APIVersions {
                server_address_by_client_cidrs: vec![ServerAddressByClientCIDR {
                    client_cidr: "0.0.0.0/0".into(),
                    server_address: host,
                }],
                versions: versions_of(&CORE, NAMESPACES.group)
                    .into_iter()
                    .map(String::from)
                    .collect(),
            }))
        }
    }
}

/// `GET /api/v1`: the core resources ([`CORE`]).
pub async fn core_v1(_req: HttpRequest) -> HttpResponse {
    match resource_list_of(&CORE, NAMESPACES.group, NAMESPACES.version) {
        Some(list) => ok(&core_document(&list)),
        None => not_found(),
    }
}

fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&super::status::KubeError::path_not_found())
}

/// `GET /apis/<group>`.
pub async fn group(req: HttpRequest) -> HttpResponse {
    match api_group(req.path().trim_start_matches("/apis/")) {
        Some(g) => ok(&g),
        None => not_found(),
    }
}

/// `GET /apis/<group>/<version>`.
pub async fn group_version(req: HttpRequest) -> HttpResponse {
    let list = req
        .path()
        .trim_start_matches("/apis/")
        .split_once('/')
        .and_then(|(group, version)| resource_list(group, version));
    match list {
        Some(l) => ok(&l),
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
    ok(&version_info())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;
    use actix_web::http::header;
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
                     "responseKind":{"group":"clusterregistry.k8s.io","version":"v1alpha1","kind":"Cluster"}}]},
                  {"resource":"clustergroups","singularResource":"clustergroup","scope":"Namespaced",
                   "responseKind":{"group":"clusterregistry.k8s.io","version":"v1alpha1","kind":"ClusterGroup"},
                   "verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["cg"]},
                  {"resource":"clustergroupbindings","singularResource":"clustergroupbinding","scope":"Namespaced",
                   "responseKind":{"group":"clusterregistry.k8s.io","version":"v1alpha1","kind":"ClusterGroupBinding"},
                   "verbs":["create","delete","get","list","watch"],"shortNames":["cgb"]}]}]},
                {"metadata":{"name":"multicluster.x-k8s.io","creationTimestamp":null},
                 "versions":[{"version":"v1alpha1","freshness":"Current","resources":[{
                   "resource":"clusterprofiles","singularResource":"clusterprofile","scope":"Namespaced",
                   "responseKind":{"group":"multicluster.x-k8s.io","version":"v1alpha1","kind":"ClusterProfile"},
                   "verbs":["get","list","watch"]}]}]},
                {"metadata":{"name":"cluster.k8s.io","creationTimestamp":null},
                 "versions":[{"version":"v1alpha1","freshness":"Current","resources":[{
                   "resource":"machines","singularResource":"machine","scope":"Namespaced",
                   "responseKind":{"group":"cluster.k8s.io","version":"v1alpha1","kind":"Machine"},
                   "verbs":["create","delete","get","list","patch","update","watch"],
                   "subresources":[{"subresource":"status","verbs":["get","patch","update"],
                     "responseKind":{"group":"cluster.k8s.io","version":"v1alpha1","kind":"Machine"}}]},
                  {"resource":"machinedeployments","singularResource":"machinedeployment","scope":"Namespaced",
                   "responseKind":{"group":"cluster.k8s.io","version":"v1alpha1","kind":"MachineDeployment"},
                   "verbs":["delete","get","list","patch","update","watch"],"shortNames":["md"],
                   "subresources":[{"subresource":"scale","verbs":["get","patch","update"],
                     "responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"}}]}]}]},
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
        // k8s-openapi's APIGroup names its kind inside the list (see `legacy_apis`).
        assert_eq!(
            v["groups"][0],
            json!({"kind":"APIGroup","apiVersion":"v1","name":"clusterregistry.k8s.io",
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
        let get = |path: &str| TestRequest::get().uri(path).to_http_request();
        let (code, _, v) = call(group_version(get("/apis/clusterregistry.k8s.io/v1alpha1"))).await;
        assert_eq!(code, 200);
        assert_eq!(
            v,
            json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"clusterregistry.k8s.io/v1alpha1",
              "resources":[{"name":"clusters","singularName":"cluster","namespaced":true,"kind":"Cluster",
                "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                "shortNames":["cr"],"categories":["all-clusters"]},
                {"name":"clusters/status","singularName":"","namespaced":true,"kind":"Cluster",
                 "verbs":["get","patch","update"]},
                {"name":"clustergroups","singularName":"clustergroup","namespaced":true,
                 "kind":"ClusterGroup","verbs":["create","delete","get","list","patch","update","watch"],
                 "shortNames":["cg"]},
                {"name":"clustergroupbindings","singularName":"clustergroupbinding","namespaced":true,
                 "kind":"ClusterGroupBinding","verbs":["create","delete","get","list","watch"],
                 "shortNames":["cgb"]}]})
        );
        let (_, _, v) = call(group_version(get("/apis/multicluster.x-k8s.io/v1alpha1"))).await;
        assert_eq!(
            v["resources"],
            json!([{"name":"clusterprofiles","singularName":"clusterprofile","namespaced":true,
                "kind":"ClusterProfile","verbs":["get","list","watch"]}])
        );
        let (_, _, v) = call(group(get("/apis/clusterregistry.k8s.io"))).await;
        assert_eq!(v["kind"], "APIGroup");
        assert_eq!(v["name"], "clusterregistry.k8s.io");
        assert_eq!(
            v["preferredVersion"]["groupVersion"],
            "clusterregistry.k8s.io/v1alpha1"
        );
        let (_, _, v) = call(group(get("/apis/multicluster.x-k8s.io"))).await;
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
