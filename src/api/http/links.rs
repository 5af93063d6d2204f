//! The start of every link the API writes (version discovery, `self`/`bookmark`, `next`): as
//! the client reached the service, also behind a reverse proxy that serves it under a path
//! prefix (`https://cloud.example/container-infra/`).
//!
//! Three ways, as OpenStack services have them: `[api] public_endpoint` when set (Keystone's,
//! Glance's `public_endpoint`); else, with `[oslo_middleware] enable_proxy_headers_parsing`,
//! the proxy's `Forwarded` / `X-Forwarded-Proto` / `X-Forwarded-Host` / `X-Forwarded-Prefix`
//! (oslo.middleware's `HTTPProxyToWSGI`); else the request's own scheme and `Host`.

use actix_web::http::header::HOST;
use actix_web::{web, HttpRequest};

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::AppState;
use crate::config::Settings;

/// How links start, chosen once from the settings.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkBase {
    /// `[api] public_endpoint`, without a trailing slash.
    Fixed(String),
    /// The request as a trusted proxy forwarded it.
    Proxied,
    /// The request as it arrived.
    Direct,
}

impl LinkBase {
    pub fn from_settings(settings: &Settings) -> LinkBase {
        let fixed = settings.api.public_endpoint.trim().trim_end_matches('/');
        if !fixed.is_empty() {
            LinkBase::Fixed(fixed.to_string())
        } else if settings.oslo_middleware.enable_proxy_headers_parsing {
            LinkBase::Proxied
        } else {
            LinkBase::Direct
        }
    }

    /// `scheme://host[/prefix]` for this request.
    pub fn for_request(&self, req: &HttpRequest) -> String {
        match self {
            LinkBase::Fixed(base) => base.clone(),
            LinkBase::Proxied => {
                let info = req.connection_info();
                format!(
                    "{}://{}{}",
                    info.scheme(),
                    info.host(),
                    forwarded_prefix(req).unwrap_or_default()
                )
            }
            LinkBase::Direct => {
                // The server is assembled by hand (`startup`), so actix's own `secure` flag
                // stays false over TLS: `[api] enabled_ssl` says it.
                let secure = req.app_config().secure()
                    || req
                        .app_data::<web::Data<AppState>>()
                        .is_some_and(|state| state.settings.api.enabled_ssl);
                let scheme =
                    req.uri()
                        .scheme_str()
                        .unwrap_or(if secure { "https" } else { "http" });
                let host = req
                    .headers()
                    .get(HOST)
                    .and_then(|h| h.to_str().ok())
                    .or_else(|| req.uri().authority().map(|a| a.as_str()));
                match host {
                    Some(host) => format!("{scheme}://{host}"),
                    // A request naming no host at all (HTTP/1.0 without `Host`).
                    None => match req.app_data::<web::Data<AppState>>() {
                        Some(state) => format!(
                            "{scheme}://{}:{}",
                            state.settings.api.host, state.settings.api.port
                        ),
                        None => format!("{scheme}://{}", req.app_config().host()),
                    },
                }
            }
        }
    }
}

/// `X-Forwarded-Prefix` as a path prefix (`/container-infra`): its first value, with a leading
/// slash and no trailing one; `None` when absent, empty or not a plain path.
fn forwarded_prefix(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get("x-forwarded-prefix")?.to_str().ok()?;
    let first = value.split(',').next()?.trim().trim_end_matches('/');
    if first.is_empty()
        || first
            .chars()
            .any(|c| !c.is_ascii_graphic() || matches!(c, '?' | '#' | '"' | '\\'))
    {
        return None;
    }
    Some(if first.starts_with('/') {
        first.to_string()
    } else {
        format!("/{first}")
    })
}

/// The start of the links of this request's answer (see [`LinkBase`]).
pub fn app_url(req: &HttpRequest) -> String {
    match req.app_data::<web::Data<AppState>>() {
        Some(state) => state.links.for_request(req),
        None => LinkBase::Direct.for_request(req),
    }
}

/// A link of a resource or collection: `self` (under `/v1`) or `bookmark` (without it).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Link {
    pub href: String,
    pub rel: String,
    /// The media type of the linked document (only the `describedby` link of `/v1`).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Link {
    pub fn new(href: String, rel: &str) -> Self {
        Link {
            href,
            rel: rel.into(),
            media_type: None,
        }
    }

    /// `[{"href": <base>/v1/<path>, "rel": "self"}, {"href": <base>/<path>, "rel": "bookmark"}]`
    pub fn pair(base: &str, path: &str) -> Vec<Link> {
        vec![
            Link::new(format!("{base}/v1/{path}"), "self"),
            Link::new(format!("{base}/{path}"), "bookmark"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn settings(public_endpoint: &str, proxy_headers: bool) -> Settings {
        let mut s = Settings::default();
        s.api.public_endpoint = public_endpoint.into();
        s.oslo_middleware.enable_proxy_headers_parsing = proxy_headers;
        s
    }

    fn proxied() -> TestRequest {
        TestRequest::default()
            .insert_header(("host", "10.0.0.5:9511"))
            .insert_header(("x-forwarded-proto", "https"))
            .insert_header(("x-forwarded-host", "cloud.example"))
            .insert_header(("x-forwarded-prefix", "/container-infra/"))
    }

    #[test]
    fn proxy_headers_count_only_when_enabled() {
        let req = proxied().to_http_request();
        let direct = LinkBase::from_settings(&settings("", false));
        assert_eq!(direct, LinkBase::Direct);
        assert_eq!(direct.for_request(&req), "http://10.0.0.5:9511");
        let trusted = LinkBase::from_settings(&settings("", true));
        assert_eq!(
            trusted.for_request(&req),
            "https://cloud.example/container-infra"
        );
    }

    #[test]
    fn the_public_endpoint_wins_over_the_request_and_its_headers() {
        let req = proxied().to_http_request();
        let fixed = LinkBase::from_settings(&settings("https://api.example/magnum/", true));
        assert_eq!(fixed.for_request(&req), "https://api.example/magnum");
    }

    #[test]
    fn a_forwarded_header_and_a_bare_prefix_are_understood() {
        let req = TestRequest::default()
            .insert_header(("host", "10.0.0.5:9511"))
            .insert_header((
                "forwarded",
                "for=192.0.2.1;proto=https;host=cloud.example:8443",
            ))
            .insert_header(("x-forwarded-prefix", "magnum, /other"))
            .to_http_request();
        assert_eq!(
            LinkBase::Proxied.for_request(&req),
            "https://cloud.example:8443/magnum"
        );
        for junk in ["", "/", "/a b", "/x?y=1", "/\"q\""] {
            let req = TestRequest::default()
                .insert_header(("host", "h"))
                .insert_header(("x-forwarded-prefix", junk))
                .to_http_request();
            assert_eq!(LinkBase::Proxied.for_request(&req), "http://h", "{junk:?}");
        }
    }
}
