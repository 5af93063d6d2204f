//! Links built from the request's application URL (scheme and host, after proxy headers).

use actix_web::HttpRequest;
use serde_json::{json, Value};

/// `scheme://host` as the client reached us (honours `Forwarded` / `X-Forwarded-*`).
pub fn app_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

/// `[{"href": <app>/v1/<coll>/<id>, "rel": "self"}, {"href": <app>/<coll>/<id>, "rel": "bookmark"}]`
pub fn resource_links(req: &HttpRequest, collection: &str, id: &str) -> Value {
    let base = app_url(req);
    json!([
        {"href": format!("{base}/v1/{collection}/{id}"), "rel": "self"},
        {"href": format!("{base}/{collection}/{id}"), "rel": "bookmark"},
    ])
}
