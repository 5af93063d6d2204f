//! `marker` / `limit` / `sort_key` / `sort_dir` and the `next` link.

use std::collections::BTreeMap;

use actix_web::HttpRequest;

use super::body::query_params;
use super::context::RequestContext;
use super::error::ApiError;
use super::links::app_url;
use crate::domain::ids::parse_uuid_like;
use crate::store::{PageRequest, SortDir, StoreError};

pub const PAGE_PARAMS: &[&str] = &["marker", "limit", "sort_key", "sort_dir"];

/// Validates the page parameters against the table's sortable columns.
pub fn page_request(
    params: &BTreeMap<String, String>,
    sort_keys: &[(&str, bool)],
    max_limit: u32,
) -> Result<PageRequest, ApiError> {
    let limit = match params.get("limit") {
        None => max_limit,
        Some(text) => {
            let n: i64 = text.trim().parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "Invalid input for limit: {text} is not an integer."
                ))
            })?;
            if n <= 0 {
                return Err(ApiError::bad_request("Limit must be positive"));
            }
            u32::try_from(n).unwrap_or(u32::MAX).min(max_limit)
        }
    };
    let marker = match params.get("marker") {
        None => None,
        Some(text) => Some(parse_uuid_like(text).ok_or_else(|| {
            ApiError::bad_request(format!("Expected a uuid but received {text}."))
        })?),
    };
    let sort_key = params.get("sort_key").map(String::as_str).unwrap_or("id");
    if !sort_keys.iter().any(|(k, _)| *k == sort_key) {
        return Err(ApiError::bad_request(format!(
            "The sort_key value \"{sort_key}\" is an invalid field for sorting"
        )));
    }
    let sort_dir = match params.get("sort_dir").map(String::as_str) {
        None | Some("asc") => SortDir::Asc,
        Some("desc") => SortDir::Desc,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid sort direction: {other}. Acceptable values are 'asc' or 'desc'"
            )))
        }
    };
    Ok(PageRequest {
        limit,
        marker,
        sort_key: sort_key.to_string(),
        sort_dir,
    })
}

/// The `next` URL when the page is full: `<app>/v1/<path>?sort_key=..&sort_dir=..&limit=..&marker=<last>`.
pub fn next_link(
    req: &HttpRequest,
    path: &str,
    page: &PageRequest,
    returned: usize,
    last: Option<String>,
) -> Option<String> {
    if returned < page.limit as usize || returned == 0 {
        return None;
    }
    let last = last?;
    let query = serde_urlencoded::to_string([
        ("sort_key", page.sort_key.as_str()),
        ("sort_dir", page.sort_dir.as_str()),
        ("limit", &page.limit.to_string()),
        ("marker", &last),
    ])
    .ok()?;
    Some(format!("{}/v1/{path}?{query}", app_url(req)))
}

/// The `next` link of a list body: present when the page is full, carrying `extra` query
/// parameters (filters) over to the next page.
pub fn next_page(
    req: &HttpRequest,
    path: &str,
    page: &PageRequest,
    returned: usize,
    last: Option<String>,
    extra: &[(&str, &str)],
) -> Option<String> {
    let mut next = next_link(req, path, page, returned, last)?;
    if let Ok(q) = serde_urlencoded::to_string(extra) {
        if !q.is_empty() {
            next.push('&');
            next.push_str(&q);
        }
    }
    Some(next)
}

/// The policy rules of a list: the view's own rule, then the one an administrator (whose list
/// spans every project) needs as well; one pair for the summary view, one for `/detail`.
pub struct ListRules {
    pub summary: [&'static str; 2],
    pub detail: [&'static str; 2],
}

/// What every `/v1` list reads before its store call: its query parameters, whether the
/// detail view was asked for, and the page, after the list's policy rules allowed it.
pub struct ListQuery {
    pub detail: bool,
    pub params: BTreeMap<String, String>,
    pub page: PageRequest,
}

impl ListQuery {
    /// Parses the query (`allowed` parameters; the page's sort keys and most items) and
    /// checks the list's rules.
    pub fn parse(
        req: &HttpRequest,
        ctx: &RequestContext,
        allowed: &[&str],
        sort_keys: &[(&str, bool)],
        max_limit: u32,
        rules: &ListRules,
    ) -> Result<ListQuery, ApiError> {
        let detail = req.path().trim_end_matches('/').ends_with("/detail");
        let params = query_params(req, allowed)?;
        let page = page_request(&params, sort_keys, max_limit)?;
        let [rule, all_rule] = if detail { rules.detail } else { rules.summary };
        ctx.authorize_own(rule)?;
        if ctx.is_admin {
            ctx.authorize_own(all_rule)?;
        }
        Ok(ListQuery {
            detail,
            params,
            page,
        })
    }

    /// The list's store error as the client sees it: a marker that names nothing is the 404
    /// `missing` words for it (Magnum's `... could not be found.`).
    pub fn store_error(
        &self,
        missing: impl Fn(&str) -> ApiError,
    ) -> impl Fn(StoreError) -> ApiError {
        let marker = self.page.marker.map(|m| m.to_string()).unwrap_or_default();
        move |e| match e {
            StoreError::NotFound => missing(&marker),
            e => e.into(),
        }
    }
}

/// The end of every `/v1` list: the `next` link when the page is full (carrying `extra` query
/// parameters over), and the body `body` makes of it, written by `sizer`.
#[allow(clippy::too_many_arguments)]
pub fn respond_page<T: serde::Serialize>(
    sizer: &PageBody,
    req: &HttpRequest,
    path: &str,
    page: &PageRequest,
    items: usize,
    last: Option<String>,
    extra: &[(&str, &str)],
    body: impl FnOnce(Option<String>) -> T,
) -> Result<actix_web::HttpResponse, ApiError> {
    let next = next_page(req, path, page, items, last, extra);
    sizer.respond(&body(next), items)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[(&str, bool)] = &[("id", false), ("name", false)];

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_id_ascending_with_the_maximum_limit() {
        let p = page_request(&params(&[]), KEYS, 1000).expect("valid");
        assert_eq!(
            (p.limit, p.sort_key.as_str(), p.sort_dir),
            (1000, "id", SortDir::Asc)
        );
    }

    #[test]
    fn limits_are_positive_and_clamped() {
        let err = page_request(&params(&[("limit", "0")]), KEYS, 1000).expect_err("zero");
        assert_eq!(err.to_string(), "Limit must be positive");
        let p = page_request(&params(&[("limit", "5000")]), KEYS, 1000).expect("clamped");
        assert_eq!(p.limit, 1000);
    }

    #[test]
    fn unknown_sort_keys_and_directions_are_refused_with_magnums_sentences() {
        let err = page_request(&params(&[("sort_key", "node_count")]), KEYS, 10).expect_err("key");
        assert_eq!(
            err.to_string(),
            "The sort_key value \"node_count\" is an invalid field for sorting"
        );
        let err = page_request(&params(&[("sort_dir", "up")]), KEYS, 10).expect_err("dir");
        assert_eq!(
            err.to_string(),
            "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'"
        );
    }

    #[test]
    fn a_marker_must_be_a_uuid() {
        assert!(page_request(&params(&[("marker", "nope")]), KEYS, 10).is_err());
    }
}

/// Serialises list pages of one kind into a buffer sized for the page from the pages before
/// it (bytes per item), so that a page is written once, never copied into a buffer twice its
/// size on the way (a 100-item detail page of clusters is about 120 KB; grown by doubling it
/// holds up to 192 KB at the last step, for every page in flight).
pub struct PageBody {
    per_item: std::sync::atomic::AtomicUsize,
}

impl PageBody {
    /// The first page's guess, in bytes per item; later pages use what the last one measured.
    pub const fn new(guess: usize) -> PageBody {
        PageBody {
            per_item: std::sync::atomic::AtomicUsize::new(guess),
        }
    }

    /// `page` (holding `items` items) as a `200 OK` JSON response.
    pub fn respond<T: serde::Serialize>(
        &self,
        page: &T,
        items: usize,
    ) -> Result<actix_web::HttpResponse, ApiError> {
        use std::sync::atomic::Ordering::Relaxed;
        // Room for the envelope and the `next` link besides the items.
        const ENVELOPE: usize = 512;
        let per_item = self.per_item.load(Relaxed);
        let mut body = Vec::with_capacity(items.saturating_mul(per_item).saturating_add(ENVELOPE));
        serde_json::to_writer(&mut body, page).map_err(ApiError::internal)?;
        // A little over the measured size, so that the next page like this one fits.
        if let Some(measured) = body.len().checked_div(items) {
            self.per_item.store(measured + measured / 16 + 1, Relaxed);
        }
        Ok(actix_web::HttpResponse::Ok()
            .content_type(actix_web::http::header::ContentType::json())
            .body(body))
    }
}

#[cfg(test)]
mod page_body_tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Page {
        items: Vec<String>,
    }

    #[actix_web::test]
    async fn a_page_is_written_once_into_a_buffer_its_size_and_the_guess_follows_the_pages() {
        let sizer = PageBody::new(8);
        let page = Page {
            items: (0..100)
                .map(|i| format!("item-{i:04}-{}", "x".repeat(90)))
                .collect(),
        };
        let first = sizer.respond(&page, 100).expect("serialises");
        assert_eq!(first.status(), 200);
        assert_eq!(
            first.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
        let expected = serde_json::to_vec(&page).expect("serialises");
        let per_item = sizer.per_item.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            (expected.len() / 100..expected.len() / 100 + 10).contains(&per_item),
            "{per_item} bytes per item after a page of {} bytes",
            expected.len()
        );
        let body = actix_web::body::to_bytes(first.into_body())
            .await
            .expect("a body");
        assert_eq!(
            body.as_ref(),
            expected.as_slice(),
            "the same JSON as serde's own"
        );
    }
}
