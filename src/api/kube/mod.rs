//! The Kubernetes-facing APIs over the same cluster rows: `clusterregistry.k8s.io/v1alpha1`
//! `Cluster` (read-write, namespaced by project), `multicluster.x-k8s.io/v1alpha1`
//! `ClusterProfile` (read-only) and `cluster.k8s.io/v1alpha1` `Machine` (read-only, one per
//! node: [`machines`]), `ClusterGroup` and `ClusterGroupBinding` (the groups of
//! `/v1/clustergroups`: [`groups`]), with what kubectl needs around them: Status errors,
//! discovery, OpenAPI v3, validation, tables, patches and list paging as pure building blocks;
//! and the self reviews of `kubectl auth` ([`reviews`]) with impersonation ([`impersonate`]),
//! both decided by one table ([`access`]).

pub mod access;
pub mod cluster_status;
pub mod clusters;
pub mod delegated;
pub mod delete_options;
pub mod discovery;
pub mod edge;
pub mod feed;
pub mod follow;
pub mod groups;
pub mod impersonate;
pub mod list;
pub mod machine_deployments;
pub mod machines;
pub mod managed;
pub mod managed_writes;
pub mod objects;
pub mod openapi;
pub mod openapi_v2;
pub mod paged;
pub mod patch;
pub mod profile_view;
pub mod profiles;
pub mod protobuf;
pub mod request;
pub mod reviews;
pub mod scan;
pub mod schema;
pub mod status;
pub mod table;
pub mod validation;
pub mod view;
pub mod watch;

use actix_web::web;
use serde_json::{json, Value};

/// Every route of the Kubernetes-facing APIs, behind their [`edge::middleware`], with a
/// `Status` 404 for any path nothing serves (this is the service's last scope).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/version", web::get().to(discovery::version))
        .service(
            web::scope("")
                .wrap(actix_web::middleware::from_fn(edge::middleware))
                .configure(configure_static)
                .configure(clusters::configure)
                .configure(cluster_status::configure)
                .configure(profiles::configure)
                .configure(machines::configure)
                .configure(machine_deployments::configure)
                .configure(groups::configure)
                .configure(reviews::configure)
                .default_service(web::to(edge::not_found)),
        );
}

/// The routes that need no state: discovery (a group and a group-version document for each
/// group-version discovery serves) and OpenAPI (v3, a document for each group-version it
/// describes, and v2). `/version` is public and registered on its own; the resource routes
/// (`/apis/<group>/<version>/[namespaces/{namespace}/]<resource>[/{name}]`) are in
/// [`clusters`] and [`profiles`].
pub fn configure_static(cfg: &mut web::ServiceConfig) {
    cfg.route("/api", web::get().to(discovery::api))
        .route("/api/v1", web::get().to(discovery::core_v1))
        .route("/apis", web::get().to(discovery::apis))
        .route("/openapi/v3", web::get().to(openapi::index))
        .route("/openapi/v2", web::get().to(openapi_v2::v2));
    let mut groups: Vec<&str> = Vec::new();
    for (group, version) in discovery::group_versions() {
        if !groups.contains(&group) {
            groups.push(group);
            cfg.route(&format!("/apis/{group}"), web::get().to(discovery::group));
        }
        cfg.route(
            &format!("/apis/{group}/{version}"),
            web::get().to(discovery::group_version),
        );
    }
    for (key, _) in openapi::DOCUMENTS.iter() {
        cfg.route(
            &format!("/openapi/v3/{key}"),
            web::get().to(openapi::group_version),
        );
    }
}

/// One line of a watch stream: `{"type":"ADDED","object":{...}}` and a newline. `event_type`
/// is `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
pub fn watch_event_line(event_type: &str, object: &Value) -> String {
    let mut line = json!({"type": event_type, "object": object}).to_string();
    line.push('\n');
    line
}

/// The `ERROR` event that ends a watch whose resourceVersion is older than the retained window.
pub fn expired_watch_line(requested: &str, oldest: &str) -> String {
    let err = status::KubeError::Expired(format!(
        "too old resource version: {} ({oldest})",
        requested.chars().take(32).collect::<String>()
    ));
    watch_event_line("ERROR", &status::status_value(&err))
}

/// A `BOOKMARK` event object: only the kind and the resourceVersion.
pub fn bookmark_object(resource: &status::Resource, resource_version: &str) -> Value {
    json!({"kind": resource.kind, "apiVersion": resource.api_version(),
        "metadata": {"resourceVersion": resource_version}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::{test as atest, App};

    #[actix_web::test]
    async fn the_static_routes_answer() {
        let app = atest::init_service(
            App::new()
                .route("/version", web::get().to(discovery::version))
                .configure(configure_static),
        )
        .await;
        for (path, code) in [
            ("/version", 200),
            ("/api", 200),
            ("/apis", 200),
            ("/apis/clusterregistry.k8s.io", 200),
            ("/apis/clusterregistry.k8s.io/v1alpha1", 200),
            ("/apis/multicluster.x-k8s.io", 200),
            ("/apis/multicluster.x-k8s.io/v1alpha1", 200),
            ("/apis/cluster.k8s.io", 200),
            ("/apis/cluster.k8s.io/v1alpha1", 200),
            ("/openapi/v3/apis/cluster.k8s.io/v1alpha1", 200),
            ("/apis/authorization.k8s.io", 200),
            ("/apis/authorization.k8s.io/v1", 200),
            ("/apis/authentication.k8s.io", 200),
            ("/apis/authentication.k8s.io/v1", 200),
            ("/openapi/v3", 200),
            ("/openapi/v3/apis/clusterregistry.k8s.io/v1alpha1", 200),
            ("/openapi/v3/apis/multicluster.x-k8s.io/v1alpha1", 200),
            ("/openapi/v3/apis/authorization.k8s.io/v1", 200),
            ("/openapi/v3/apis/authentication.k8s.io/v1", 200),
            ("/openapi/v2", 200),
        ] {
            let resp =
                atest::call_service(&app, atest::TestRequest::get().uri(path).to_request()).await;
            assert_eq!(resp.status().as_u16(), code, "{path}");
        }
    }

    #[test]
    fn watch_lines_are_one_json_object_per_line() {
        assert_eq!(
            watch_event_line("ADDED", &json!({"kind": "Cluster"})),
            "{\"object\":{\"kind\":\"Cluster\"},\"type\":\"ADDED\"}\n"
        );
        let line = expired_watch_line("5", "100");
        let v: Value = serde_json::from_str(line.trim_end()).unwrap_or(Value::Null);
        assert_eq!(v["type"], "ERROR");
        assert_eq!(
            v["object"],
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "too old resource version: 5 (100)", "reason": "Expired", "code": 410})
        );
        assert_eq!(
            bookmark_object(&status::CLUSTERS, "9"),
            json!({"kind": "Cluster", "apiVersion": "clusterregistry.k8s.io/v1alpha1",
                "metadata": {"resourceVersion": "9"}})
        );
    }
}
