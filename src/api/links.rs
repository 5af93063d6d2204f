//! Links built from the request's application URL (scheme and host, after proxy headers).

use actix_web::HttpRequest;

/// `scheme://host` as the client reached us (honours `Forwarded` / `X-Forwarded-*`).
pub fn app_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}
