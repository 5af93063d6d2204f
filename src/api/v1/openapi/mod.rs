//! The OpenAPI 3.1 document of the service, generated from the wire types (utoipa) and served
//! unauthenticated at `GET /v1/openapi.json`, like the version documents.
//!
//! The derive lists every operation ([`paths`]) with its request body ([`requests`]) and its
//! response views ([`crate::api::v1::views`]); [`finish`] then adds what every `/v1` operation
//! shares (the `OpenStack-API-Version` request and response headers, Magnum's error body as the
//! `default` response, the token) and makes every object schema strict
//! (`additionalProperties: false`), so that a renamed or an extra field fails validation.

pub mod paths;
pub mod requests;

use std::sync::LazyLock;

use actix_web::HttpResponse;
use serde_json::{json, Value};
use utoipa::OpenApi;

use super::views::ErrorBody;
use crate::api::http::microversion::{MAX_VERSION, MIN_VERSION, SERVICE_TYPE};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Fleetyard",
        description = "Container-infrastructure management speaking OpenStack Magnum's v1 API \
                       (`container-infra`). Bodies are Magnum's; errors are Magnum's error body."
    ),
    paths(
        paths::versions,
        paths::v1,
        paths::openapi,
        paths::list_cluster_templates,
        paths::list_cluster_templates_detail,
        paths::create_cluster_template,
        paths::show_cluster_template,
        paths::update_cluster_template,
        paths::delete_cluster_template,
        paths::list_clusters,
        paths::list_clusters_detail,
        paths::create_cluster,
        paths::show_cluster,
        paths::update_cluster,
        paths::delete_cluster,
        paths::resize_cluster,
        paths::upgrade_cluster,
        paths::retry_cluster,
        paths::list_nodegroups,
        paths::list_nodegroups_detail,
        paths::create_nodegroup,
        paths::show_nodegroup,
        paths::update_nodegroup,
        paths::delete_nodegroup,
        paths::retry_nodegroup,
        paths::list_machines,
        paths::show_machine,
        paths::delete_machine,
        paths::create_machine,
        paths::update_machine,
        paths::replace_machine,
        paths::reboot_machine,
        paths::list_federations,
        paths::list_federations_detail,
        paths::create_federation,
        paths::show_federation,
        paths::update_federation,
        paths::delete_federation,
        paths::retry_federation,
        paths::sign_certificate,
        paths::show_certificate,
        paths::rotate_ca,
        paths::rotate_credential,
        paths::list_quotas,
        paths::create_quota,
        paths::show_quota,
        paths::update_quota,
        paths::delete_quota,
        paths::stats,
        paths::list_services,
        paths::list_cluster_groups,
        paths::create_cluster_group,
        paths::show_cluster_group,
        paths::update_cluster_group,
        paths::delete_cluster_group,
        paths::list_cluster_group_members,
        paths::add_cluster_group_member,
        paths::remove_cluster_group_member,
        paths::accept_cluster_group_member,
        paths::list_cluster_group_bindings,
        paths::create_cluster_group_binding,
        paths::show_cluster_group_binding,
        paths::delete_cluster_group_binding,
    ),
    components(schemas(ErrorBody)),
    security(("token" = [])),
    tags(
        (name = "versions", description = "Version discovery (no token needed)"),
        (name = "clustertemplates", description = "Cluster templates"),
        (name = "clusters", description = "Clusters and their actions"),
        (name = "nodegroups", description = "Node groups of a cluster (microversion 1.9)"),
        (name = "machines", description = "Machines of a cluster, one per node (microversion 1.19; their changes 1.20)"),
        (name = "federations", description = "Federations of clusters"),
        (name = "certificates", description = "Cluster CAs and CSR signing"),
        (name = "credentials", description = "Credential rotation (microversion 1.12)"),
        (name = "quotas", description = "Per-project quotas"),
        (name = "stats", description = "Cluster and node counts"),
        (name = "mservices", description = "Conductor services"),
        (name = "clustergroups", description = "Cluster groups, their members and bindings (microversion 1.20)"),
    )
)]
pub struct ApiDoc;

/// The served document, built once.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| document().to_string());

/// `GET /v1/openapi.json` (no `RequestContext`, so no token needed).
pub async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT.as_str())
}

/// The complete document.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|_| json!({}));
    finish(&mut doc);
    doc
}

const ERROR: &str = "Error";
const VERSION: &str = "OpenStackApiVersion";
const METHODS: &[&str] = &["get", "put", "post", "delete", "patch", "head", "options"];

/// Adds what every `/v1` operation shares and makes the object schemas strict.
fn finish(doc: &mut Value) {
    let negotiated = format!(
        "`{SERVICE_TYPE} X.Y` (also `container-infra`, `container-infrastructure`) or \
         `... latest`; {MIN_VERSION} when absent, at most {MAX_VERSION}. A malformed value is a \
         406 with an empty error entry; a version out of range a 406 with the microversion entry."
    );
    let components = &mut doc["components"];
    components["parameters"][VERSION] = json!({
        "name": "OpenStack-API-Version",
        "in": "header",
        "required": false,
        "description": negotiated,
        "schema": {"type": "string"},
        "example": format!("container-infra {MAX_VERSION}"),
    });
    components["headers"][VERSION] = json!({
        "description": format!("The negotiated version: `{SERVICE_TYPE} X.Y`. Sent with \
                                `OpenStack-API-Minimum-Version`, `OpenStack-API-Maximum-Version` \
                                and `Vary: OpenStack-API-Version`."),
        "schema": {"type": "string"},
    });
    components["responses"][ERROR] = json!({
        "description": "Magnum's error body: one entry, whose `title` is the `detail` up to its \
                        first period. Framework-level errors (unknown route, wrong method, \
                        malformed version header) have empty strings.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    });
    components["securitySchemes"]["token"] = json!({
        "type": "apiKey",
        "in": "header",
        "name": "X-Auth-Token",
        "description": "A Keystone-style token (or `Authorization: Bearer`), per `[DEFAULT] \
                        auth_strategy`; `noauth` reads `X-User-Id`, `X-Project-Id`, `X-Roles`.",
    });
    if let Some(schemas) = components["schemas"].as_object_mut() {
        let named = schemas.clone();
        for schema in schemas.values_mut() {
            merge_all_of(schema, &named);
            strict(schema);
        }
    }
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        if !path.starts_with("/v1") {
            continue;
        }
        for method in METHODS {
            let Some(op) = item.get_mut(*method).filter(|op| op.is_object()) else {
                continue;
            };
            let param = json!({"$ref": format!("#/components/parameters/{VERSION}")});
            match op["parameters"].as_array_mut() {
                Some(params) => params.push(param),
                None => op["parameters"] = json!([param]),
            }
            if let Some(responses) = op["responses"].as_object_mut() {
                for response in responses.values_mut() {
                    response["headers"]["OpenStack-API-Version"] =
                        json!({"$ref": format!("#/components/headers/{VERSION}")});
                }
                responses.insert(
                    "default".into(),
                    json!({"$ref": format!("#/components/responses/{ERROR}")}),
                );
            }
        }
    }
}

/// A view that embeds another (`#[serde(flatten)]`, which utoipa writes as an `allOf` of the
/// embedded schema and the view's own fields) becomes one object schema with the properties
/// and required fields of all its parts, so that it can be strict like any other view (with
/// `additionalProperties: false` on each part of an `allOf`, no object would validate).
fn merge_all_of(schema: &mut Value, named: &serde_json::Map<String, Value>) {
    let Some(parts) = schema.get("allOf").and_then(Value::as_array) else {
        return;
    };
    let resolved: Option<Vec<&Value>> = parts
        .iter()
        .map(|part| match part.get("$ref").and_then(Value::as_str) {
            Some(r) => named.get(r.strip_prefix("#/components/schemas/")?),
            None => Some(part),
        })
        .collect();
    let Some(resolved) = resolved.filter(|r| r.iter().all(|p| p.get("properties").is_some()))
    else {
        return;
    };
    let mut properties = serde_json::Map::new();
    let mut required: Vec<Value> = Vec::new();
    for part in resolved {
        if let Some(props) = part["properties"].as_object() {
            properties.extend(props.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for r in part["required"].as_array().into_iter().flatten() {
            if !required.contains(r) {
                required.push(r.clone());
            }
        }
    }
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    obj.remove("allOf");
    obj.insert("type".into(), Value::String("object".into()));
    obj.insert("properties".into(), Value::Object(properties));
    obj.insert("required".into(), Value::Array(required));
}

/// `additionalProperties: false` on an object schema with properties that says nothing about
/// other properties (maps keep their value schema).
fn strict(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.contains_key("properties") && !obj.contains_key("additionalProperties") {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(items)) = obj.get_mut(key) {
            items.iter_mut().for_each(strict);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_with_strict_views() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        let view = &doc["components"]["schemas"]["ClusterView"];
        assert_eq!(view["additionalProperties"], false);
        let required: Vec<&str> = view["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(required.contains(&"updated_at"), "{required:?}");
        assert!(!required.contains(&"faults"), "{required:?}");
        assert!(doc["paths"]["/v1/clusters"]["get"]["responses"]["default"].is_object());
    }

    #[test]
    fn a_full_view_embedding_its_summary_is_one_strict_object_with_both_parts_fields() {
        let doc = document();
        for (view, own, shared) in [
            ("ClusterView", "status_reason", "cluster_template_id"),
            ("NodeGroupView", "node_addresses", "min_node_count"),
            ("FederationView", "created_at", "hostcluster_id"),
        ] {
            let schema = &doc["components"]["schemas"][view];
            assert!(schema.get("allOf").is_none(), "{view}: {schema}");
            assert_eq!(schema["additionalProperties"], false, "{view}");
            for field in [own, shared] {
                assert!(schema["properties"][field].is_object(), "{view}.{field}");
                assert!(
                    schema["required"]
                        .as_array()
                        .is_some_and(|r| r.contains(&json!(field))),
                    "{view} requires {field}"
                );
            }
        }
    }
}
