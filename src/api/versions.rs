//! Version discovery: `GET /` and `GET /v1`, both unauthenticated (openstacksdk's discovery
//! sends no token and fails on anything but these documents).

use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

use super::links::app_url;
use super::microversion::{MAX_VERSION, MIN_VERSION};

/// The collections listed in the `/v1` document.
const COLLECTIONS: &[&str] = &[
    "clustertemplates",
    "clusters",
    "quotas",
    "certificates",
    "mservices",
    "stats",
    "federations",
    "credentials",
];

pub async fn root(req: HttpRequest) -> HttpResponse {
    let base = app_url(&req);
    HttpResponse::Ok().json(json!({
        "name": "OpenStack Magnum API",
        "description": "Magnum is an OpenStack project which aims to provide container cluster management.",
        "versions": [{
            "id": "v1",
            "links": [{"href": format!("{base}/v1/"), "rel": "self"}],
            "status": "CURRENT",
            "min_version": MIN_VERSION.to_string(),
            "max_version": MAX_VERSION.to_string(),
        }],
    }))
}

pub async fn v1(req: HttpRequest) -> HttpResponse {
    let base = app_url(&req);
    let mut doc = Map::new();
    doc.insert("id".into(), json!("v1"));
    doc.insert(
        "media_types".into(),
        json!([{"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json"}]),
    );
    doc.insert(
        "links".into(),
        json!([
            {"href": format!("{base}/v1/"), "rel": "self"},
            {"href": "http://docs.openstack.org/developer/magnum/dev/api-spec-v1.html", "rel": "describedby", "type": "text/html"},
        ]),
    );
    for name in COLLECTIONS {
        doc.insert(
            (*name).into(),
            json!([
                {"href": format!("{base}/v1/{name}/"), "rel": "self"},
                {"href": format!("{base}/{name}/"), "rel": "bookmark"},
            ]),
        );
    }
    doc.insert(
        "nodegroups".into(),
        json!([
            {"href": format!("{base}/v1/clusters/{{cluster_id}}/nodegroups"), "rel": "self"},
            {"href": format!("{base}/clusters/{{cluster_id}}/nodegroups"), "rel": "bookmark"},
        ]),
    );
    HttpResponse::Ok().json(Value::Object(doc))
}
