//! Links built from the request's application URL (scheme and host, after proxy headers).

use actix_web::{web, HttpRequest};

use super::AppState;

/// `scheme://host` as the client reached us (honours `Forwarded` / `X-Forwarded-*`). A
/// request naming no host at all (HTTP/1.0 without `Host`) gets `[api] host:port`.
pub fn app_url(req: &HttpRequest) -> String {
    let info = req.connection_info();
    let named = info.host() != req.app_config().host();
    match req.app_data::<web::Data<AppState>>() {
        Some(state) if !named => format!(
            "{}://{}:{}",
            info.scheme(),
            state.settings.api.host,
            state.settings.api.port
        ),
        _ => format!("{}://{}", info.scheme(), info.host()),
    }
}
