//! `/openapi/v2`: the Swagger 2.0 document of every served group-version, derived from the
//! OpenAPI v3 documents of `openapi.rs` (so both come from the one set of tables in `schema/`). Served in JSON, and
//! in protobuf (gnostic's `openapi.v2.Document`, as `application/octet-stream`) to whoever asks
//! for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, as kubectl does: kubectl 1.27
//! and 1.28 need it for `create`/`apply`/`explain`, and every kubectl validates the items of a
//! `kind: List` file against its definitions.

pub mod pb;

use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use prost::Message;
use serde_json::{json, Map, Value};

use crate::api::kube::openapi::{documents, etag_matches, query_hash};

/// The protobuf media type kubectl asks for.
pub const PROTOBUF_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The Content-Type of the protobuf answer: kube-apiserver's. kubectl parses it with Go's
/// `mime.ParseMediaType`, which refuses the `@` of `PROTOBUF_TYPE`.
pub const PROTOBUF_CONTENT_TYPE: &str = "application/octet-stream";

const V3_PREFIX: &str = "#/components/schemas/";
const V2_PREFIX: &str = "#/definitions/";

/// `#/components/schemas/X` as `#/definitions/X`.
fn v2_ref(r: &str) -> String {
    match r.strip_prefix(V3_PREFIX) {
        Some(id) => format!("{V2_PREFIX}{id}"),
        None => r.to_string(),
    }
}

/// A v3 schema as v2 writes it: `allOf: [{$ref}]` becomes a bare `$ref` (with the
/// description beside it), and refs point into `#/definitions`.
fn v2_schema(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(all)) = m.get("allOf") {
                if let [one] = all.as_slice() {
                    if let Some(r) = one.get("$ref").and_then(Value::as_str) {
                        let mut out = json!({"$ref": v2_ref(r)});
                        if let Some(d) = m.get("description") {
                            out["description"] = d.clone();
                        }
                        return out;
                    }
                }
            }
            let mut out = Map::new();
            for (k, child) in m {
                let c = match (k.as_str(), child) {
                    ("$ref", Value::String(r)) => Value::String(v2_ref(r)),
                    ("properties", Value::Object(props)) => Value::Object(
                        props
                            .iter()
                            .map(|(n, p)| (n.clone(), v2_schema(p)))
                            .collect(),
                    ),
                    ("items" | "additionalProperties", c) => v2_schema(c),
                    (_, c) => c.clone(),
                };
                out.insert(k.clone(), c);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// A v3 non-body parameter (`schema: {type}`) as v2 writes it (`type` beside the name).
fn v2_param(p: &Value) -> Value {
    let mut out = json!({"name": p["name"], "in": p["in"], "description": p["description"]});
    if let Some(t) = p["schema"].get("type") {
        out["type"] = t.clone();
    }
    if let Some(u) = p["schema"].get("uniqueItems") {
        out["uniqueItems"] = u.clone();
    }
    if p["required"] == json!(true) {
        out["required"] = json!(true);
    }
    out
}

/// A v3 operation as v2 writes it: the request body becomes the `body` parameter (first), the
/// content types become `consumes`/`produces`, each response keeps its JSON schema.
fn v2_operation(o: &Value) -> Value {
    let mut params = Vec::new();
    let mut consumes = vec![json!("*/*")];
    if let Some(body) = o.get("requestBody") {
        let content = body["content"].as_object().cloned().unwrap_or_default();
        let is_patch = content.keys().any(|k| k.contains("patch"));
        if is_patch {
            consumes = content.keys().map(|k| json!(k)).collect();
        }
        let s = content
            .values()
            .next()
            .map(|c| v2_schema(&c["schema"]))
            .unwrap_or(json!({}));
        let mut b = json!({"name": "body", "in": "body", "schema": s});
        if body["required"] == json!(true) {
            b["required"] = json!(true);
        }
        params.push(b);
    }
    if let Some(Value::Array(ps)) = o.get("parameters") {
        params.extend(ps.iter().map(v2_param));
    }
    let mut responses = Map::new();
    for (code, r) in o["responses"].as_object().cloned().unwrap_or_default() {
        let mut out = json!({"description": r["description"]});
        if let Some(s) = r["content"]["application/json"].get("schema") {
            out["schema"] = v2_schema(s);
        }
        responses.insert(code, out);
    }
    let mut v = json!({
        "description": o["description"],
        "consumes": consumes,
        "produces": ["application/json", "application/yaml"],
        "schemes": ["https"],
        "tags": o["tags"],
        "operationId": o["operationId"],
        "responses": responses,
        "x-kubernetes-action": o["x-kubernetes-action"],
        "x-kubernetes-group-version-kind": o["x-kubernetes-group-version-kind"],
    });
    if !params.is_empty() {
        v["parameters"] = Value::Array(params);
    }
    v
}

/// The Swagger 2.0 document: every served group-version's v3 document, merged.
pub fn document() -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for (_, v3) in documents() {
        for (path, item) in v3["paths"].as_object().cloned().unwrap_or_default() {
            let mut out = Map::new();
            for (k, o) in item.as_object().cloned().unwrap_or_default() {
                if k == "parameters" {
                    let ps = o.as_array().cloned().unwrap_or_default();
                    out.insert(k, Value::Array(ps.iter().map(v2_param).collect()));
                } else {
                    out.insert(k, v2_operation(&o));
                }
            }
            paths.insert(path, Value::Object(out));
        }
        for (id, s) in v3["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default()
        {
            definitions.insert(id, v2_schema(&s));
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A value as gnostic's `Any`: its YAML text (JSON is YAML).
fn any(v: &Value) -> pb::Any {
    pb::Any {
        yaml: v.to_string(),
    }
}

/// The `x-…` keys of an object as gnostic vendor extensions.
fn extensions(v: &Value) -> Vec<pb::NamedAny> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("x-"))
                .map(|(k, x)| pb::NamedAny {
                    name: k.clone(),
                    value: Some(any(x)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn named_schemas(v: &Value) -> Vec<pb::NamedSchema> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(n, s)| pb::NamedSchema {
                    name: n.clone(),
                    value: Some(schema_pb(s)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn schema_pb(v: &Value) -> pb::Schema {
    pb::Schema {
        r#ref: text(v, "$ref"),
        format: text(v, "format"),
        description: text(v, "description"),
        default: v.get("default").map(any),
        unique_items: v.get("uniqueItems") == Some(&json!(true)),
        required: v
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
        additional_properties: v.get("additionalProperties").map(|a| {
            Box::new(pb::AdditionalPropertiesItem {
                schema: Some(schema_pb(a)),
            })
        }),
        r#type: v.get("type").and_then(Value::as_str).map(|t| pb::TypeItem {
            value: vec![t.to_string()],
        }),
        items: v.get("items").map(|i| pb::ItemsItem {
            schema: vec![schema_pb(i)],
        }),
        properties: v.get("properties").map(|p| pb::Properties {
            additional_properties: named_schemas(p),
        }),
        vendor_extension: extensions(v),
    }
}

fn param_pb(p: &Value) -> pb::ParametersItem {
    let required = p.get("required") == Some(&json!(true));
    let unique_items = p.get("uniqueItems") == Some(&json!(true));
    let parameter = match p["in"].as_str() {
        Some("body") => pb::Parameter {
            body_parameter: Some(pb::BodyParameter {
                description: text(p, "description"),
                name: text(p, "name"),
                r#in: "body".into(),
                required,
                schema: p.get("schema").map(schema_pb),
            }),
            non_body_parameter: None,
        },
        Some("path") => pb::Parameter {
            body_parameter: None,
            non_body_parameter: Some(pb::NonBodyParameter {
                query_parameter_sub_schema: None,
                path_parameter_sub_schema: Some(pb::PathParameterSubSchema {
                    required,
                    r#in: "path".into(),
                    description: text(p, "description"),
                    name: text(p, "name"),
                    r#type: text(p, "type"),
                    unique_items,
                }),
            }),
        },
        _ => pb::Parameter {
            body_parameter: None,
            non_body_parameter: Some(pb::NonBodyParameter {
                query_parameter_sub_schema: Some(pb::QueryParameterSubSchema {
                    required,
                    r#in: "query".into(),
                    description: text(p, "description"),
                    name: text(p, "name"),
                    r#type: text(p, "type"),
                    unique_items,
                }),
                path_parameter_sub_schema: None,
            }),
        },
    };
    pb::ParametersItem {
        parameter: Some(parameter),
    }
}

fn params_pb(v: Option<&Value>) -> Vec<pb::ParametersItem> {
    v.and_then(Value::as_array)
        .map(|ps| ps.iter().map(param_pb).collect())
        .unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn operation_pb(o: &Value) -> pb::Operation {
    let response_code = o["responses"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(code, r)| pb::NamedResponseValue {
                    name: code.clone(),
                    value: Some(pb::ResponseValue {
                        response: Some(pb::Response {
                            description: text(r, "description"),
                            schema: r.get("schema").map(|s| pb::SchemaItem {
                                schema: Some(schema_pb(s)),
                            }),
                        }),
                    }),
                })
                .collect()
        })
        .unwrap_or_default();
    pb::Operation {
        tags: strings(&o["tags"]),
        description: text(o, "description"),
        operation_id: text(o, "operationId"),
        produces: strings(&o["produces"]),
        consumes: strings(&o["consumes"]),
        parameters: params_pb(o.get("parameters")),
        responses: Some(pb::Responses { response_code }),
        schemes: strings(&o["schemes"]),
        vendor_extension: extensions(o),
    }
}

/// The JSON document as gnostic's `openapi.v2.Document`.
pub fn to_protobuf(doc: &Value) -> pb::Document {
    let path = doc["paths"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(name, item)| pb::NamedPathItem {
                    name: name.clone(),
                    value: Some(pb::PathItem {
                        get: item.get("get").map(operation_pb),
                        put: item.get("put").map(operation_pb),
                        post: item.get("post").map(operation_pb),
                        delete: item.get("delete").map(operation_pb),
                        patch: item.get("patch").map(operation_pb),
                        parameters: params_pb(item.get("parameters")),
                    }),
                })
                .collect()
        })
        .unwrap_or_default();
    let security_definitions =
        doc["securityDefinitions"]
            .as_object()
            .map(|m| pb::SecurityDefinitions {
                additional_properties: m
                    .iter()
                    .map(|(name, s)| pb::NamedSecurityDefinitionsItem {
                        name: name.clone(),
                        value: Some(pb::SecurityDefinitionsItem {
                            api_key_security: Some(pb::ApiKeySecurity {
                                r#type: text(s, "type"),
                                name: text(s, "name"),
                                r#in: text(s, "in"),
                                description: text(s, "description"),
                            }),
                        }),
                    })
                    .collect(),
            });
    let security = doc["security"]
        .as_array()
        .map(|reqs| {
            reqs.iter()
                .map(|r| pb::SecurityRequirement {
                    additional_properties: r
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(n, scopes)| pb::NamedStringArray {
                                    name: n.clone(),
                                    value: Some(pb::StringArray {
                                        value: strings(scopes),
                                    }),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    pb::Document {
        swagger: text(doc, "swagger"),
        info: Some(pb::Info {
            title: text(&doc["info"], "title"),
            version: text(&doc["info"], "version"),
        }),
        paths: Some(pb::Paths { path }),
        definitions: Some(pb::Definitions {
            additional_properties: named_schemas(&doc["definitions"]),
        }),
        security,
        security_definitions,
    }
}

/// One representation of the document and the hash it is cached under.
pub struct Served {
    pub body: Vec<u8>,
    /// SHA-512 of `body`, upper-case hex.
    pub hash: String,
}

impl Served {
    fn new(body: Vec<u8>) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA512, &body);
        let hash = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
        Served { body, hash }
    }
}

static DOCUMENT: LazyLock<Value> = LazyLock::new(document);
pub static JSON_DOC: LazyLock<Served> =
    LazyLock::new(|| Served::new(DOCUMENT.to_string().into_bytes()));
pub static PROTOBUF_DOC: LazyLock<Served> =
    LazyLock::new(|| Served::new(to_protobuf(&DOCUMENT).encode_to_vec()));

/// Whether `Accept` asks for the protobuf form before (or instead of) JSON.
fn wants_protobuf(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').take(32))
        .map(|t| t.split(';').next().unwrap_or("").trim())
        .find(|t| *t == PROTOBUF_TYPE || t.contains("json") || *t == "*/*")
        .is_some_and(|t| t == PROTOBUF_TYPE)
}

/// `GET /openapi/v2`: protobuf when asked for, JSON otherwise; `ETag` and 304 as the v3
/// documents.
pub async fn v2(req: HttpRequest) -> HttpResponse {
    let (doc, ty) = if wants_protobuf(&req) {
        (&*PROTOBUF_DOC, PROTOBUF_CONTENT_TYPE)
    } else {
        (&*JSON_DOC, "application/json")
    };
    let etag = format!("\"{}\"", doc.hash);
    let cache = if query_hash(&req).as_deref() == Some(doc.hash.as_str()) {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    if etag_matches(&req, &doc.hash) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .insert_header((header::CACHE_CONTROL, cache))
            .insert_header((header::VARY, "Accept"))
            .finish();
    }
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, ty))
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::VARY, "Accept"))
        .body(doc.body.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;
    use actix_web::test::TestRequest;

    const ONE: &str =
        "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters/{name}";
    const COLL: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters";

    fn names(ps: &Value) -> Vec<&str> {
        ps.as_array()
            .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_json_document_is_swagger_2_with_both_groups_and_their_gvks() {
        let d = document();
        assert_eq!(d["swagger"], "2.0");
        let paths: Vec<&String> = d["paths"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        for p in [
            "/apis/clusterregistry.k8s.io/v1alpha1/clusters",
            COLL,
            ONE,
            "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters/{name}/status",
            "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles",
            "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/clusterprofiles/{name}",
        ] {
            assert!(paths.iter().any(|k| *k == p), "{p} in {paths:?}");
        }
        let patch = &d["paths"][ONE]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "clusterregistry.k8s.io", "version": "v1alpha1", "kind": "Cluster"})
        );
        assert_eq!(
            names(&patch["parameters"]),
            vec!["body", "dryRun", "fieldManager", "fieldValidation", "force"]
        );
        assert_eq!(
            patch["parameters"][0]["schema"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
        );
        assert_eq!(patch["parameters"][3]["type"], "string");
        assert_eq!(
            patch["consumes"],
            json!([
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json"
            ])
        );
        let post = &d["paths"][COLL]["post"];
        assert_eq!(
            names(&post["parameters"]),
            vec!["body", "dryRun", "fieldManager", "fieldValidation"]
        );
        assert_eq!(post["consumes"], json!(["*/*"]));
        assert_eq!(
            post["responses"]["201"]["schema"]["$ref"],
            "#/definitions/io.k8s.clusterregistry.v1alpha1.Cluster"
        );
        assert_eq!(
            names(&d["paths"][ONE]["parameters"]),
            vec!["name", "namespace", "pretty"]
        );
        assert_eq!(d["paths"][ONE]["parameters"][0]["required"], true);
        assert_eq!(
            d["paths"]["/apis/clusterregistry.k8s.io/v1alpha1/clusters"]["get"]["operationId"],
            "listClusterForAllNamespaces"
        );
        assert_eq!(
            d["paths"][format!("{ONE}/status")]["put"]["operationId"],
            "replaceNamespacedClusterStatus"
        );
    }

    #[test]
    fn definitions_use_plain_refs_and_carry_the_gvk() {
        let d = document();
        let defs = &d["definitions"];
        assert_eq!(
            defs["io.k8s.clusterregistry.v1alpha1.Cluster"]["x-kubernetes-group-version-kind"],
            json!([{"group": "clusterregistry.k8s.io", "version": "v1alpha1", "kind": "Cluster"}])
        );
        assert_eq!(
            defs["io.x-k8s.multicluster.v1alpha1.ClusterProfile"]
                ["x-kubernetes-group-version-kind"][0]["kind"],
            "ClusterProfile"
        );
        let auth = &defs["io.k8s.clusterregistry.v1alpha1.ClusterSpec"]["properties"]["authInfo"];
        assert_eq!(
            auth["$ref"],
            "#/definitions/io.k8s.clusterregistry.v1alpha1.AuthInfo"
        );
        assert!(
            auth.get("allOf").is_none() && auth.get("default").is_none(),
            "{auth}"
        );
        // Every reference resolves.
        let text = d.to_string();
        assert!(!text.contains("#/components/"));
        for part in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let id = part.split('"').next().unwrap_or_default();
            assert!(defs[id].is_object(), "{id}");
        }
    }

    #[test]
    fn the_protobuf_form_decodes_back_with_definitions_and_gvk_extensions() {
        let bytes = &PROTOBUF_DOC.body;
        let back = pb::Document::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(back.swagger, "2.0");
        let defs = back.definitions.expect("definitions").additional_properties;
        let json_defs = document()["definitions"]
            .as_object()
            .map(|m| m.len())
            .unwrap_or(0);
        assert_eq!(defs.len(), json_defs);
        let cluster = defs
            .iter()
            .find(|d| d.name == "io.k8s.clusterregistry.v1alpha1.Cluster")
            .and_then(|d| d.value.clone())
            .expect("Cluster");
        assert_eq!(
            cluster.r#type.map(|t| t.value),
            Some(vec!["object".to_string()])
        );
        let gvk = cluster
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .and_then(|e| e.value.clone())
            .expect("gvk extension");
        let parsed: Value = serde_norway::from_str(&gvk.yaml).expect("the extension is YAML");
        assert_eq!(
            parsed,
            json!([{"group": "clusterregistry.k8s.io", "version": "v1alpha1", "kind": "Cluster"}])
        );
        let props = cluster
            .properties
            .expect("properties")
            .additional_properties;
        let meta = props
            .iter()
            .find(|p| p.name == "metadata")
            .and_then(|p| p.value.clone());
        assert_eq!(
            meta.map(|m| m.r#ref),
            Some("#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".to_string())
        );
        let labels = defs
            .iter()
            .find(|d| d.name == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .and_then(|d| d.value.clone())
            .and_then(|m| m.properties)
            .and_then(|p| {
                p.additional_properties
                    .into_iter()
                    .find(|p| p.name == "labels")
            })
            .and_then(|p| p.value)
            .and_then(|l| l.additional_properties)
            .and_then(|a| a.schema)
            .expect("labels' value schema");
        assert_eq!(
            labels.r#type.map(|t| t.value),
            Some(vec!["string".to_string()])
        );

        // The PATCH operation: its GVK extension and the fieldValidation query parameter.
        let paths = back.paths.expect("paths").path;
        let patch = paths
            .iter()
            .find(|p| p.name == ONE)
            .and_then(|p| p.value.clone())
            .and_then(|p| p.patch)
            .expect("patch");
        let gvk = patch
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .and_then(|e| e.value.clone())
            .expect("gvk");
        let parsed: Value = serde_norway::from_str(&gvk.yaml).expect("YAML");
        assert_eq!(parsed["kind"], "Cluster");
        let query: Vec<String> = patch
            .parameters
            .iter()
            .filter_map(|p| p.parameter.clone())
            .filter_map(|p| p.non_body_parameter)
            .filter_map(|n| n.query_parameter_sub_schema)
            .map(|q| q.name)
            .collect();
        assert_eq!(
            query,
            vec!["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        let body = patch.parameters[0]
            .parameter
            .clone()
            .and_then(|p| p.body_parameter)
            .expect("body first");
        assert!(body.required);
    }

    #[test]
    fn the_self_reviews_are_in_both_forms_with_their_gvks() {
        let d = document();
        let reviews = [
            (
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
                "SelfSubjectAccessReview",
            ),
            (
                "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
                "SelfSubjectRulesReview",
            ),
            (
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                "io.k8s.api.authentication.v1.SelfSubjectReview",
                "SelfSubjectReview",
            ),
        ];
        for (path, id, kind) in reviews {
            let post = &d["paths"][path]["post"];
            assert_eq!(
                post["x-kubernetes-group-version-kind"]["kind"], kind,
                "{path}"
            );
            assert_eq!(
                names(&post["parameters"]),
                vec!["body", "dryRun", "fieldManager", "fieldValidation"]
            );
            assert_eq!(
                post["parameters"][0]["schema"]["$ref"],
                format!("#/definitions/{id}")
            );
            assert_eq!(
                d["definitions"][id]["x-kubernetes-group-version-kind"][0]["kind"],
                kind
            );
        }
        assert_eq!(
            d["definitions"]["io.k8s.api.authorization.v1.SelfSubjectAccessReviewSpec"]
                ["properties"]["resourceAttributes"]["$ref"],
            "#/definitions/io.k8s.api.authorization.v1.ResourceAttributes"
        );

        let back = pb::Document::decode(PROTOBUF_DOC.body.as_slice()).expect("decodes");
        let defs = back.definitions.expect("definitions").additional_properties;
        for (_, id, kind) in reviews {
            let def = defs
                .iter()
                .find(|d| d.name == id)
                .and_then(|d| d.value.clone())
                .unwrap_or_else(|| panic!("{id} in the protobuf form"));
            let gvk = def
                .vendor_extension
                .iter()
                .find(|e| e.name == "x-kubernetes-group-version-kind")
                .and_then(|e| e.value.clone())
                .expect("gvk extension");
            let parsed: Value = serde_norway::from_str(&gvk.yaml).expect("YAML");
            assert_eq!(parsed[0]["kind"], kind);
        }
        let paths = back.paths.expect("paths").path;
        assert!(paths
            .iter()
            .any(|p| p.name == reviews[0].0 && p.value.as_ref().is_some_and(|v| v.post.is_some())));
    }

    fn header(resp: &HttpResponse, name: header::HeaderName) -> String {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }

    #[actix_web::test]
    async fn protobuf_when_asked_json_otherwise_and_304_on_a_matching_etag() {
        let req = TestRequest::get()
            .insert_header((header::ACCEPT, format!("{PROTOBUF_TYPE}, */*")))
            .to_http_request();
        let resp = v2(req).await;
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(header(&resp, header::CONTENT_TYPE), PROTOBUF_CONTENT_TYPE);
        let etag = header(&resp, header::ETAG);
        assert_eq!(etag, format!("\"{}\"", PROTOBUF_DOC.hash));
        let body = resp.into_body().try_into_bytes().unwrap_or_default();
        assert!(pb::Document::decode(body.as_ref()).is_ok());

        let resp = v2(TestRequest::get().to_http_request()).await;
        assert_eq!(header(&resp, header::CONTENT_TYPE), "application/json");
        let body = resp.into_body().try_into_bytes().unwrap_or_default();
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!(v["swagger"], "2.0");

        let req = TestRequest::get()
            .insert_header((
                header::ACCEPT,
                "application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            ))
            .to_http_request();
        assert_eq!(
            header(&v2(req).await, header::CONTENT_TYPE),
            "application/json"
        );

        let req = TestRequest::get()
            .insert_header((header::ACCEPT, PROTOBUF_TYPE))
            .insert_header((header::IF_NONE_MATCH, etag.clone()))
            .to_http_request();
        let resp = v2(req).await;
        assert_eq!(resp.status().as_u16(), 304);
        assert_eq!(header(&resp, header::ETAG), etag);
        // The JSON form has its own ETag: the protobuf one does not match it.
        let req = TestRequest::get()
            .insert_header((header::IF_NONE_MATCH, etag))
            .to_http_request();
        assert_eq!(v2(req).await.status().as_u16(), 200);
    }
}
