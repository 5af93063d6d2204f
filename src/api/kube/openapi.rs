//! OpenAPI v3 for kubectl: the `/openapi/v3` index and one document per group-version (the
//! registry's, the profiles', and the self reviews' two), built once from `schema/`. kubectl's
//! `--validate=strict` needs the PATCH operation of our GVK to list `fieldValidation`;
//! `kubectl explain` reads `components.schemas`. `/openapi/v2` is derived from these documents
//! in `openapi_v2/`.

use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

use super::groups::{CLUSTER_GROUPS, CLUSTER_GROUP_BINDINGS};
use super::reviews::{ACCESS_REVIEWS, RULES_REVIEWS, SUBJECT_REVIEWS};
use super::schema::{self, Schema};
use super::status::{Resource, CLUSTERS, CLUSTER_PROFILES, MACHINES, MACHINE_DEPLOYMENTS};

/// One served document: its JSON text and the hash kubectl caches it under.
pub struct Document {
    pub body: String,
    /// SHA-512 of `body`, upper-case hex (as kube-apiserver's `?hash=`).
    pub hash: String,
}

impl Document {
    fn new(v: &Value) -> Self {
        let body = v.to_string();
        let digest = ring::digest::digest(&ring::digest::SHA512, body.as_bytes());
        let hash = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
        Document { body, hash }
    }
}

/// `apis/<group>/<version>`, the key of the index and the tail of the document's URL.
fn gv_key(r: &Resource) -> String {
    format!("apis/{}/{}", r.group, r.version)
}

fn param(name: &str, location: &str, description: &str, ty: &str) -> Value {
    let mut p = json!({"name": name, "in": location, "description": description,
        "schema": {"type": ty, "uniqueItems": true}});
    if location == "path" {
        p["required"] = json!(true);
    }
    p
}

fn query_params(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| match *n {
            "allowWatchBookmarks" => param(n, "query", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".", "boolean"),
            "continue" => param(n, "query", "The continue option should be set when retrieving more results from the server.", "string"),
            "fieldSelector" => param(n, "query", "A selector to restrict the list of returned objects by their fields (metadata.name, metadata.namespace).", "string"),
            "labelSelector" => param(n, "query", "A selector to restrict the list of returned objects by their labels.", "string"),
            "limit" => param(n, "query", "limit is a maximum number of responses to return for a list call.", "integer"),
            "resourceVersion" => param(n, "query", "resourceVersion sets a constraint on what resource versions a request may be served from.", "string"),
            "resourceVersionMatch" => param(n, "query", "resourceVersionMatch determines how resourceVersion is applied to list calls.", "string"),
            "sendInitialEvents" => param(n, "query", "`sendInitialEvents=true` may be set together with `watch=true`.", "boolean"),
            "timeoutSeconds" => param(n, "query", "Timeout for the list/watch call.", "integer"),
            "watch" => param(n, "query", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.", "boolean"),
            "dryRun" => param(n, "query", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed", "string"),
            "fieldManager" => param(n, "query", "fieldManager is a name associated with the actor or entity that is making these changes.", "string"),
            "fieldValidation" => param(n, "query", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn (the default) - Strict", "string"),
            "force" => param(n, "query", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people.", "boolean"),
            "gracePeriodSeconds" => param(n, "query", "The duration in seconds before the object should be deleted.", "integer"),
            "propagationPolicy" => param(n, "query", "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.", "string"),
            other => param(other, "query", "", "string"),
        })
        .collect()
}

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: &[&str] = &["dryRun", "gracePeriodSeconds", "propagationPolicy"];

fn content(s: &Schema) -> Value {
    json!({
        "application/json": {"schema": {"$ref": schema::ref_of(s)}},
        "application/yaml": {"schema": {"$ref": schema::ref_of(s)}},
    })
}

fn responses(codes: &[(&str, &str)], s: &Schema) -> Value {
    let mut m = Map::new();
    for (code, what) in codes {
        m.insert(
            code.to_string(),
            json!({"description": what, "content": content(s)}),
        );
    }
    m.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(m)
}

struct Op<'a> {
    r: &'a Resource,
    id: String,
    action: &'a str,
    description: String,
    params: &'a [&'a str],
    request: Option<Value>,
    responses: Value,
}

fn op(o: Op) -> Value {
    let mut v = json!({
        "tags": [format!("{}_{}", o.r.group, o.r.version)],
        "description": o.description,
        "operationId": o.id,
        "responses": o.responses,
        "x-kubernetes-action": o.action,
        "x-kubernetes-group-version-kind": {"group": o.r.group, "version": o.r.version, "kind": o.r.kind},
    });
    if !o.params.is_empty() {
        v["parameters"] = json!(query_params(o.params));
    }
    if let Some(body) = o.request {
        v["requestBody"] = body;
    }
    v
}

fn path_params(names: &[(&str, &str)]) -> Vec<Value> {
    let mut ps: Vec<Value> = names
        .iter()
        .map(|(n, d)| param(n, "path", d, "string"))
        .collect();
    ps.push(param(
        "pretty",
        "query",
        "If 'true', then the output is pretty printed.",
        "string",
    ));
    ps
}

/// Which writes a document describes for one resource.
#[derive(Debug, Clone, Copy)]
struct Writes {
    /// Create (POST) and delete.
    create_delete: bool,
    /// Replace (PUT) and patch.
    update: bool,
    /// Delete of a collection.
    collection: bool,
    /// The status subresource (read, replace, patch).
    status: bool,
}

/// Reads only.
const READ_ONLY: Writes = Writes {
    create_delete: false,
    update: false,
    collection: false,
    status: false,
};
/// Every write (the registry's clusters).
const ALL_WRITES: Writes = Writes {
    create_delete: true,
    update: true,
    collection: true,
    status: true,
};
/// A machine's writes: create, replace, patch, delete and its status; no delete of a
/// collection.
const MACHINE_WRITES: Writes = Writes {
    create_delete: true,
    update: true,
    collection: false,
    status: true,
};

/// A machine deployment's writes: replace and patch (and its `scale`, [`scale_paths`]).
const DEPLOYMENT_WRITES: Writes = Writes {
    create_delete: false,
    update: true,
    collection: false,
    status: false,
};

/// `autoscaling/v1` `Scale`, the kind of a `scale` subresource's operations.
const SCALE: Resource = Resource {
    group: "autoscaling",
    version: "v1",
    plural: "scale",
    singular: "scale",
    kind: "Scale",
    list_kind: "ScaleList",
};

/// The `scale` subresource of `r` (read, replace, patch), as kube-apiserver describes a
/// Deployment's.
fn scale_paths(r: &Resource) -> (Map<String, Value>, Vec<&'static Schema>) {
    let kind = r.kind;
    let one = format!(
        "/apis/{}/{}/namespaces/{{namespace}}/{}/{{name}}/scale",
        r.group, r.version, r.plural
    );
    let name_doc = "name of the Scale".to_string();
    let ns_param = (
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let body = json!({"content": content(&schema::SCALE), "required": true});
    let patch_ref = json!({"schema": {"$ref": schema::ref_of(&schema::PATCH)}});
    let item = json!({
        "get": op(Op { r: &SCALE, id: format!("readNamespaced{kind}Scale"), action: "get",
            description: format!("read scale of the specified {kind}"), params: &[],
            request: None, responses: responses(&[("200", "OK")], &schema::SCALE) }),
        "put": op(Op { r: &SCALE, id: format!("replaceNamespaced{kind}Scale"), action: "put",
            description: format!("replace scale of the specified {kind}"),
            params: WRITE_PARAMS, request: Some(body),
            responses: responses(&[("200", "OK"), ("201", "Created")], &schema::SCALE) }),
        "patch": op(Op { r: &SCALE, id: format!("patchNamespaced{kind}Scale"), action: "patch",
            description: format!("partially update scale of the specified {kind}"),
            params: PATCH_PARAMS,
            request: Some(json!({"content": {
                "application/json-patch+json": patch_ref,
                "application/merge-patch+json": patch_ref,
            }, "required": true})),
            responses: responses(&[("200", "OK"), ("201", "Created")], &schema::SCALE) }),
        "parameters": path_params(&[("name", &name_doc), ns_param]),
    });
    let mut paths = Map::new();
    paths.insert(one, item);
    (paths, vec![&schema::SCALE])
}

/// The document of `cluster.k8s.io/v1alpha1`: machines, and machine deployments with their
/// `scale`.
fn machines_document() -> Value {
    let mut paths = Map::new();
    let mut roots: Vec<&'static Schema> = Vec::new();
    for (r, item, list, writes) in [
        (
            &MACHINES,
            &schema::MACHINE,
            &schema::MACHINE_LIST,
            MACHINE_WRITES,
        ),
        (
            &MACHINE_DEPLOYMENTS,
            &schema::MACHINE_DEPLOYMENT,
            &schema::MACHINE_DEPLOYMENT_LIST,
            DEPLOYMENT_WRITES,
        ),
    ] {
        let (p, rs) = resource_paths(r, item, list, writes);
        paths.extend(p);
        roots.extend(rs);
    }
    // A machine deployment's delete (its node group's), without a create.
    let one = format!(
        "/apis/{}/{}/namespaces/{{namespace}}/{}/{{name}}",
        MACHINE_DEPLOYMENTS.group, MACHINE_DEPLOYMENTS.version, MACHINE_DEPLOYMENTS.plural
    );
    if let Some(item) = paths.get_mut(&one) {
        item["delete"] = op(Op {
            r: &MACHINE_DEPLOYMENTS,
            id: "deleteNamespacedMachineDeployment".into(),
            action: "delete",
            description: "delete a MachineDeployment (its node group)".into(),
            params: DELETE_PARAMS,
            request: Some(json!({"content": content(&schema::DELETE_OPTIONS)})),
            responses: responses(
                &[("200", "OK"), ("202", "Accepted")],
                &schema::MACHINE_DEPLOYMENT,
            ),
        });
    }
    let (p, rs) = scale_paths(&MACHINE_DEPLOYMENTS);
    paths.extend(p);
    roots.extend(rs);
    document_of(paths, &roots)
}

/// The OpenAPI v3 document of one group-version with one resource: `item` is the kind's
/// schema, `list` its list schema, `writes` the writes served.
fn gv_document(
    r: &Resource,
    item: &'static Schema,
    list: &'static Schema,
    writes: Writes,
) -> Value {
    let (paths, roots) = resource_paths(r, item, list, writes);
    document_of(paths, &roots)
}

/// The OpenAPI v3 document of several resources of one group-version.
fn gv_document_of(resources: &[(&Resource, &'static Schema, &'static Schema, Writes)]) -> Value {
    let mut paths = Map::new();
    let mut roots: Vec<&'static Schema> = Vec::new();
    for (r, item, list, writes) in resources {
        let (p, rs) = resource_paths(r, item, list, *writes);
        paths.extend(p);
        roots.extend(rs);
    }
    document_of(paths, &roots)
}

/// The paths of one resource and the schemas they reach.
fn resource_paths(
    r: &Resource,
    item: &'static Schema,
    list: &'static Schema,
    writes: Writes,
) -> (Map<String, Value>, Vec<&'static Schema>) {
    let base = format!("/apis/{}/{}", r.group, r.version);
    let kind = r.kind;
    let all = format!("{base}/{}", r.plural);
    let coll = format!("{base}/namespaces/{{namespace}}/{}", r.plural);
    let one = format!("{coll}/{{name}}");
    let ns_param = (
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let name_doc = format!("name of the {kind}");

    let mut paths = Map::new();
    paths.insert(
        all,
        json!({
            "get": op(Op { r, id: format!("list{kind}ForAllNamespaces"), action: "list",
                description: format!("list or watch objects of kind {kind}"), params: LIST_PARAMS,
                request: None, responses: responses(&[("200", "OK")], list) }),
            "parameters": [param("pretty", "query", "If 'true', then the output is pretty printed.", "string")],
        }),
    );

    let mut coll_item = json!({
        "get": op(Op { r, id: format!("listNamespaced{kind}"), action: "list",
            description: format!("list or watch objects of kind {kind}"), params: LIST_PARAMS,
            request: None, responses: responses(&[("200", "OK")], list) }),
        "parameters": path_params(&[ns_param]),
    });
    let mut one_item = json!({
        "get": op(Op { r, id: format!("readNamespaced{kind}"), action: "get",
            description: format!("read the specified {kind}"), params: &[], request: None,
            responses: responses(&[("200", "OK")], item) }),
        "parameters": path_params(&[("name", &name_doc), ns_param]),
    });
    if writes.create_delete {
        coll_item["post"] = op(Op {
            r,
            id: format!("createNamespaced{kind}"),
            action: "post",
            description: format!("create a {kind}"),
            params: WRITE_PARAMS,
            request: Some(json!({"content": content(item), "required": true})),
            responses: responses(
                &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                item,
            ),
        });
        one_item["delete"] = op(Op {
            r,
            id: format!("deleteNamespaced{kind}"),
            action: "delete",
            description: format!("delete a {kind}"),
            params: DELETE_PARAMS,
            request: Some(json!({"content": content(&schema::DELETE_OPTIONS)})),
            responses: responses(&[("200", "OK"), ("202", "Accepted")], &schema::STATUS),
        });
    }
    if writes.collection {
        let mut del_params: Vec<&str> = DELETE_PARAMS.to_vec();
        del_params.extend_from_slice(LIST_PARAMS);
        coll_item["delete"] = op(Op {
            r,
            id: format!("deleteCollectionNamespaced{kind}"),
            action: "deletecollection",
            description: format!("delete collection of {kind}"),
            params: &del_params,
            request: Some(json!({"content": content(&schema::DELETE_OPTIONS)})),
            responses: responses(&[("200", "OK")], &schema::STATUS),
        });
    }
    if writes.update {
        let body = json!({"content": content(item), "required": true});
        one_item["put"] = op(Op {
            r,
            id: format!("replaceNamespaced{kind}"),
            action: "put",
            description: format!("replace the specified {kind}"),
            params: WRITE_PARAMS,
            request: Some(body),
            responses: responses(&[("200", "OK"), ("201", "Created")], item),
        });
        let patch_ref = json!({"schema": {"$ref": schema::ref_of(&schema::PATCH)}});
        one_item["patch"] = op(Op {
            r,
            id: format!("patchNamespaced{kind}"),
            action: "patch",
            description: format!("partially update the specified {kind}"),
            params: PATCH_PARAMS,
            request: Some(json!({"content": {
                "application/apply-patch+yaml": patch_ref,
                "application/json-patch+json": patch_ref,
                "application/merge-patch+json": patch_ref,
            }, "required": true})),
            responses: responses(&[("200", "OK"), ("201", "Created")], item),
        });
    }
    if writes.status {
        // The status subresource: read, replace and patch, as for a CRD with one.
        let body = json!({"content": content(item), "required": true});
        let patch_ref = json!({"schema": {"$ref": schema::ref_of(&schema::PATCH)}});
        let status_item = json!({
            "get": op(Op { r, id: format!("readNamespaced{kind}Status"), action: "get",
                description: format!("read status of the specified {kind}"), params: &[],
                request: None, responses: responses(&[("200", "OK")], item) }),
            "put": op(Op { r, id: format!("replaceNamespaced{kind}Status"), action: "put",
                description: format!("replace status of the specified {kind}"),
                params: WRITE_PARAMS, request: Some(body),
                responses: responses(&[("200", "OK"), ("201", "Created")], item) }),
            "patch": op(Op { r, id: format!("patchNamespaced{kind}Status"), action: "patch",
                description: format!("partially update status of the specified {kind}"),
                params: PATCH_PARAMS,
                request: Some(json!({"content": {
                    "application/apply-patch+yaml": patch_ref,
                    "application/json-patch+json": patch_ref,
                    "application/merge-patch+json": patch_ref,
                }, "required": true})),
                responses: responses(&[("200", "OK"), ("201", "Created")], item) }),
            "parameters": path_params(&[("name", &name_doc), ns_param]),
        });
        paths.insert(format!("{one}/status"), status_item);
    }
    paths.insert(coll, coll_item);
    paths.insert(one, one_item);

    let mut roots: Vec<&'static Schema> = vec![item, list];
    if writes.create_delete || writes.update {
        roots.extend([&schema::DELETE_OPTIONS, &schema::STATUS, &schema::PATCH]);
    }
    (paths, roots)
}

/// The v3 document of the self reviews of one group-version: a create (POST) path for each of
/// `reviews` (the resource and its schema), as kube-apiserver serves them.
fn review_document(reviews: &[(&Resource, &'static Schema)]) -> Value {
    let mut paths = Map::new();
    for (r, item) in reviews {
        let upper = |s: &str| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        };
        let group = r.group.split('.').next().unwrap_or(r.group);
        let post = op(Op {
            r,
            id: format!("create{}{}{}", upper(group), upper(r.version), r.kind),
            action: "post",
            description: format!("create a {}", r.kind),
            params: WRITE_PARAMS,
            request: Some(json!({"content": content(item), "required": true})),
            responses: responses(
                &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                item,
            ),
        });
        paths.insert(
            format!("/apis/{}/{}/{}", r.group, r.version, r.plural),
            json!({"post": post, "parameters": [param("pretty", "query",
                "If 'true', then the output is pretty printed.", "string")]}),
        );
    }
    let roots: Vec<&'static Schema> = reviews.iter().map(|(_, s)| *s).collect();
    document_of(paths, &roots)
}

/// A v3 document of `paths` with the component schemas `roots` reach.
fn document_of(paths: Map<String, Value>, roots: &[&'static Schema]) -> Value {
    let mut schemas = Map::new();
    for s in schema::closure(roots) {
        schemas.insert(s.id.to_string(), schema::render(s));
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        },
        "security": [{"BearerToken": []}],
    })
}

/// The v3 document of every served group-version, keyed `apis/<group>/<version>`, in the
/// index's order: the index lists them, `/openapi/v3/apis/<group>/<version>` serves them and
/// `/openapi/v2` merges them.
pub(super) fn documents() -> Vec<(String, Value)> {
    vec![
        (
            gv_key(&CLUSTERS),
            gv_document_of(&[
                (
                    &CLUSTERS,
                    &schema::CLUSTER,
                    &schema::CLUSTER_LIST,
                    ALL_WRITES,
                ),
                (
                    &CLUSTER_GROUPS,
                    &schema::CLUSTER_GROUP,
                    &schema::CLUSTER_GROUP_LIST,
                    Writes {
                        create_delete: true,
                        update: true,
                        collection: false,
                        status: false,
                    },
                ),
                (
                    &CLUSTER_GROUP_BINDINGS,
                    &schema::CLUSTER_GROUP_BINDING,
                    &schema::CLUSTER_GROUP_BINDING_LIST,
                    Writes {
                        create_delete: true,
                        update: false,
                        collection: false,
                        status: false,
                    },
                ),
            ]),
        ),
        (
            gv_key(&CLUSTER_PROFILES),
            gv_document(
                &CLUSTER_PROFILES,
                &schema::CLUSTER_PROFILE,
                &schema::CLUSTER_PROFILE_LIST,
                READ_ONLY,
            ),
        ),
        (gv_key(&MACHINES), machines_document()),
        (
            gv_key(&ACCESS_REVIEWS),
            review_document(&[
                (&ACCESS_REVIEWS, &schema::SELF_SUBJECT_ACCESS_REVIEW),
                (&RULES_REVIEWS, &schema::SELF_SUBJECT_RULES_REVIEW),
            ]),
        ),
        (
            gv_key(&SUBJECT_REVIEWS),
            review_document(&[(&SUBJECT_REVIEWS, &schema::SELF_SUBJECT_REVIEW)]),
        ),
    ]
}

/// The served documents, as [`documents`] lists them.
pub static DOCUMENTS: LazyLock<Vec<(String, Document)>> = LazyLock::new(|| {
    documents()
        .into_iter()
        .map(|(key, v)| (key, Document::new(&v)))
        .collect()
});

/// The served document of `apis/<group>/<version>`.
pub fn document(key: &str) -> Option<&'static Document> {
    DOCUMENTS.iter().find(|(k, _)| k == key).map(|(_, d)| d)
}

/// The `/openapi/v3` index.
pub static INDEX: LazyLock<Document> = LazyLock::new(|| {
    let mut paths = Map::new();
    for (key, doc) in DOCUMENTS.iter() {
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", doc.hash)}),
        );
    }
    Document::new(&json!({"paths": paths}))
});

/// Whether `If-None-Match` names `hash` (quoted or not, weak or not, in a list, or `*`).
pub(super) fn etag_matches(req: &HttpRequest, hash: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').take(32))
        .map(|t| t.trim().trim_start_matches("W/").trim_matches('"'))
        .any(|t| t == hash || t == "*")
}

pub(super) fn query_hash(req: &HttpRequest) -> Option<String> {
    req.query_string()
        .split('&')
        .take(64)
        .find_map(|kv| kv.strip_prefix("hash=").map(str::to_string))
}

fn serve(req: &HttpRequest, doc: &Document) -> HttpResponse {
    let etag = format!("\"{}\"", doc.hash);
    let cache = if query_hash(req).as_deref() == Some(doc.hash.as_str()) {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    if etag_matches(req, &doc.hash) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .insert_header((header::CACHE_CONTROL, cache))
            .finish();
    }
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, cache))
        .body(doc.body.clone())
}

/// `GET /openapi/v3`.
pub async fn index(req: HttpRequest) -> HttpResponse {
    serve(&req, &INDEX)
}

/// `GET /openapi/v3/apis/<group>/<version>`: the document [`documents`] keys so.
pub async fn group_version(req: HttpRequest) -> HttpResponse {
    match document(req.path().trim_start_matches("/openapi/v3/")) {
        Some(doc) => serve(&req, doc),
        None => {
            actix_web::ResponseError::error_response(&super::status::KubeError::path_not_found())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn doc(d: &Document) -> Value {
        serde_json::from_str(&d.body).unwrap_or(Value::Null)
    }

    fn served(key: &str) -> &'static Document {
        document(key).unwrap_or_else(|| panic!("{key} is served"))
    }

    fn registry_doc() -> &'static Document {
        served("apis/clusterregistry.k8s.io/v1alpha1")
    }

    fn multicluster_doc() -> &'static Document {
        served("apis/multicluster.x-k8s.io/v1alpha1")
    }

    #[test]
    fn the_index_points_at_every_document_with_its_hash() {
        let v = doc(&INDEX);
        assert_eq!(
            v,
            json!({"paths": {
                "apis/clusterregistry.k8s.io/v1alpha1": {"serverRelativeURL":
                    format!("/openapi/v3/apis/clusterregistry.k8s.io/v1alpha1?hash={}", registry_doc().hash)},
                "apis/multicluster.x-k8s.io/v1alpha1": {"serverRelativeURL":
                    format!("/openapi/v3/apis/multicluster.x-k8s.io/v1alpha1?hash={}", multicluster_doc().hash)},
                "apis/cluster.k8s.io/v1alpha1": {"serverRelativeURL":
                    format!("/openapi/v3/apis/cluster.k8s.io/v1alpha1?hash={}", served("apis/cluster.k8s.io/v1alpha1").hash)},
                "apis/authorization.k8s.io/v1": {"serverRelativeURL":
                    format!("/openapi/v3/apis/authorization.k8s.io/v1?hash={}", served("apis/authorization.k8s.io/v1").hash)},
                "apis/authentication.k8s.io/v1": {"serverRelativeURL":
                    format!("/openapi/v3/apis/authentication.k8s.io/v1?hash={}", served("apis/authentication.k8s.io/v1").hash)},
            }})
        );
        assert_eq!(registry_doc().hash.len(), 128);
        assert_ne!(registry_doc().hash, multicluster_doc().hash);
    }

    #[test]
    fn the_patch_operation_carries_our_gvk_and_field_validation() {
        let v = doc(registry_doc());
        let patch = &v["paths"]
            ["/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters/{name}"]
            ["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "clusterregistry.k8s.io", "version": "v1alpha1", "kind": "Cluster"})
        );
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .map(|ps| ps.iter().filter_map(|p| p["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            vec!["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        let types: Vec<&String> = patch["requestBody"]["content"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            types,
            vec![
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json"
            ]
        );
    }

    #[test]
    fn every_operation_has_a_gvk_and_an_action() {
        for (d, count) in [
            // Clusters (with status), groups and bindings.
            (registry_doc(), 10),
            (multicluster_doc(), 3),
            // Machines: all, a namespace's, one, and its status; machine deployments: all, a
            // namespace's, one, and its scale.
            (served("apis/cluster.k8s.io/v1alpha1"), 8),
            (served("apis/authorization.k8s.io/v1"), 2),
            (served("apis/authentication.k8s.io/v1"), 1),
        ] {
            let v = doc(d);
            let paths = v["paths"].as_object().cloned().unwrap_or_default();
            assert_eq!(paths.len(), count);
            for (path, item) in paths {
                for (method, o) in item.as_object().cloned().unwrap_or_default() {
                    if method == "parameters" {
                        continue;
                    }
                    assert!(o["x-kubernetes-action"].is_string(), "{path} {method}");
                    assert!(
                        o["x-kubernetes-group-version-kind"]["kind"].is_string(),
                        "{path} {method}"
                    );
                }
            }
        }
        let v = doc(registry_doc());
        assert_eq!(
            v["paths"]["/apis/clusterregistry.k8s.io/v1alpha1/clusters"]["get"]["operationId"],
            "listClusterForAllNamespaces"
        );
        let post = &v["paths"]
            ["/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters"]["post"];
        assert_eq!(post["parameters"][2]["name"], "fieldValidation");
        let mc = doc(multicluster_doc());
        let one = &mc["paths"]
            ["/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/clusterprofiles/{name}"];
        assert!(one["get"].is_object());
        assert!(one["patch"].is_null());
    }

    #[test]
    fn groups_and_bindings_have_their_verbs_and_schemas() {
        let v = doc(registry_doc());
        let base = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}";
        let group = &v["paths"][format!("{base}/clustergroups/{{name}}")];
        for m in ["get", "put", "patch", "delete"] {
            assert_eq!(
                group[m]["x-kubernetes-group-version-kind"]["kind"], "ClusterGroup",
                "{m}"
            );
        }
        assert!(v["paths"][format!("{base}/clustergroups")]["delete"].is_null());
        let binding = &v["paths"][format!("{base}/clustergroupbindings/{{name}}")];
        assert!(binding["get"].is_object() && binding["delete"].is_object());
        assert!(binding["put"].is_null() && binding["patch"].is_null());
        assert!(v["paths"][format!("{base}/clustergroupbindings")]["post"].is_object());
        let s = &v["components"]["schemas"];
        assert_eq!(
            s["io.k8s.clusterregistry.v1alpha1.ClusterGroupSpec"]["properties"]["selector"]
                ["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
        );
        assert_eq!(
            s["io.k8s.clusterregistry.v1alpha1.ClusterGroupBinding"]
                ["x-kubernetes-group-version-kind"],
            json!([{"group": "clusterregistry.k8s.io", "version": "v1alpha1",
                "kind": "ClusterGroupBinding"}])
        );
    }

    #[test]
    fn schemas_are_there_for_explain() {
        let v = doc(registry_doc());
        let s = &v["components"]["schemas"];
        for id in [
            "io.k8s.clusterregistry.v1alpha1.Cluster",
            "io.k8s.clusterregistry.v1alpha1.ClusterList",
            "io.k8s.clusterregistry.v1alpha1.ClusterSpec",
            "io.k8s.clusterregistry.v1alpha1.KubernetesAPIEndpoints",
            "io.k8s.clusterregistry.v1alpha1.ServerAddressByClientCIDR",
            "io.k8s.clusterregistry.v1alpha1.AuthInfo",
            "io.k8s.clusterregistry.v1alpha1.ObjectReference",
            "io.k8s.clusterregistry.v1alpha1.ClusterStatus",
            "io.k8s.clusterregistry.v1alpha1.ClusterCondition",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        ] {
            assert!(s[id].is_object(), "{id}");
        }
        assert_eq!(
            s["io.k8s.clusterregistry.v1alpha1.ClusterSpec"]["properties"]["authInfo"]["allOf"][0]
                ["$ref"],
            "#/components/schemas/io.k8s.clusterregistry.v1alpha1.AuthInfo"
        );
        assert_eq!(
            s["io.k8s.clusterregistry.v1alpha1.KubernetesAPIEndpoints"]["properties"]["caBundle"]
                ["format"],
            "byte"
        );
        let mc = doc(multicluster_doc());
        let ms = &mc["components"]["schemas"];
        assert_eq!(
            ms["io.x-k8s.multicluster.v1alpha1.ClusterProfile"]["x-kubernetes-group-version-kind"],
            json!([{"group": "multicluster.x-k8s.io", "version": "v1alpha1", "kind": "ClusterProfile"}])
        );
        assert!(
            ms["io.k8s.apimachinery.pkg.apis.meta.v1.Condition"]["properties"]
                ["observedGeneration"]
                .is_object()
        );
        assert!(
            ms["io.x-k8s.multicluster.v1alpha1.Property"]["properties"]["lastObservedTime"]
                .is_object()
        );
    }

    #[test]
    fn the_self_reviews_have_a_create_path_and_their_schemas() {
        for (key, path, kind, id) in [
            (
                "apis/authorization.k8s.io/v1",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                "SelfSubjectAccessReview",
                "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
            ),
            (
                "apis/authorization.k8s.io/v1",
                "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                "SelfSubjectRulesReview",
                "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
            ),
            (
                "apis/authentication.k8s.io/v1",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                "SelfSubjectReview",
                "io.k8s.api.authentication.v1.SelfSubjectReview",
            ),
        ] {
            let v = doc(served(key));
            let group = key.split('/').nth(1).unwrap_or_default();
            let gvk = json!({"group": group, "version": "v1", "kind": kind});
            let post = &v["paths"][path]["post"];
            assert_eq!(post["x-kubernetes-group-version-kind"], gvk, "{path}");
            assert_eq!(post["x-kubernetes-action"], "post");
            assert_eq!(
                post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
                format!("#/components/schemas/{id}")
            );
            assert!(v["paths"][path]["get"].is_null(), "{path}: create only");
            let s = &v["components"]["schemas"][id];
            assert_eq!(s["x-kubernetes-group-version-kind"], json!([gvk]), "{id}");
        }
        let v = doc(served("apis/authorization.k8s.io/v1"));
        assert_eq!(
            v["paths"]["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]["post"]
                ["operationId"],
            "createAuthorizationV1SelfSubjectAccessReview"
        );
        let s = &v["components"]["schemas"];
        assert_eq!(
            s["io.k8s.api.authorization.v1.SelfSubjectAccessReview"]["required"],
            json!(["spec"])
        );
        assert_eq!(
            s["io.k8s.api.authorization.v1.ResourceAttributes"]["properties"]["fieldSelector"]
                ["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.authorization.v1.FieldSelectorAttributes"
        );
        assert!(s["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement"].is_object());
        let a = doc(served("apis/authentication.k8s.io/v1"));
        assert_eq!(
            a["components"]["schemas"]["io.k8s.api.authentication.v1.UserInfo"]["properties"]
                ["extra"]["additionalProperties"]["items"]["type"],
            "string"
        );
        // Each review's schema names the kind its resource answers with.
        for (r, schema) in [
            (&ACCESS_REVIEWS, &schema::SELF_SUBJECT_ACCESS_REVIEW),
            (&RULES_REVIEWS, &schema::SELF_SUBJECT_RULES_REVIEW),
            (&SUBJECT_REVIEWS, &schema::SELF_SUBJECT_REVIEW),
        ] {
            assert_eq!(schema.gvk, Some((r.group, r.version, r.kind)));
        }
    }

    #[actix_web::test]
    async fn documents_are_json_with_an_etag_and_304_when_unchanged() {
        let req = TestRequest::get()
            .uri(&format!(
                "/openapi/v3/apis/clusterregistry.k8s.io/v1alpha1?hash={}",
                registry_doc().hash
            ))
            .to_http_request();
        let resp = group_version(req).await;
        assert_eq!(resp.status().as_u16(), 200);
        let h = |n| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        assert_eq!(h(header::CONTENT_TYPE), "application/json");
        assert_eq!(h(header::ETAG), format!("\"{}\"", registry_doc().hash));
        assert_eq!(h(header::CACHE_CONTROL), "public, immutable");
        let req = TestRequest::get()
            .uri("/openapi/v3/apis/clusterregistry.k8s.io/v1alpha1")
            .insert_header((
                header::IF_NONE_MATCH,
                format!("\"{}\"", registry_doc().hash),
            ))
            .to_http_request();
        let resp = group_version(req).await;
        assert_eq!(resp.status().as_u16(), 304);
        let resp = index(TestRequest::get().to_http_request()).await;
        assert_eq!(resp.status().as_u16(), 200);
    }
}
