//! List and watch options as kube-apiserver reads them: `?limit=` and an opaque `continue`
//! token holding the list's resourceVersion and where the next page starts;
//! `resourceVersion`/`resourceVersionMatch`/`sendInitialEvents` checked as apimachinery's
//! `ValidateListOptions` checks them (422 naming `ListOptions.meta.k8s.io`), and the
//! resourceVersion a list is read at decided as the apiserver decides it: a later page of a list
//! is served only while nothing it still has to show changed since the first page (else 410
//! `Expired` with a token that goes on at the latest version), an exact read only while nothing
//! in its scope changed since, and a version the server has not reached is a 504.

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::status::{Cause, KubeError, LIST_OPTIONS};
use crate::store::Store;

/// The largest page served whatever `?limit=` asks (kubectl sends 500).
pub const MAX_LIMIT: usize = 1000;
/// The longest `continue` token taken.
const MAX_TOKEN_LEN: usize = 2048;

/// The sentence of a 410 on an exact list read at a version the server can no longer serve.
pub const LIST_EXPIRED: &str = "The resourceVersion for the provided list is too old.";

/// The annotation of the `BOOKMARK` that ends a streaming list's initial events.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// `?limit=`: None (everything) when absent, empty or ≤ 0, as the apiserver; capped at
/// `MAX_LIMIT`; 400 when not a number.
pub fn parse_limit(v: Option<&str>) -> Result<Option<usize>, KubeError> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let n: i64 = s.parse().map_err(|_| {
        KubeError::bad_request(format!(
            "limit: Invalid value: {}: must be an integer",
            super::status::quote(&s.chars().take(32).collect::<String>())
        ))
    })?;
    if n <= 0 {
        return Ok(None);
    }
    Ok(Some(usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT)))
}

/// What a `continue` token carries: the resourceVersion of the first page's list (-1: the
/// latest, as the apiserver's "inconsistent continue" token) and the (namespace, name) of the
/// last object served, the next page starting after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// Always `meta.k8s.io/v1`, as the apiserver's.
    pub v: String,
    pub rv: i64,
    /// The namespace of the last object served.
    #[serde(default)]
    pub ns: String,
    /// The name of the last object served.
    pub start: String,
}

impl ContinueToken {
    pub fn new(rv: i64, namespace: &str, last_name: &str) -> Self {
        ContinueToken {
            v: "meta.k8s.io/v1".into(),
            rv,
            ns: namespace.into(),
            start: last_name.into(),
        }
    }

    /// The opaque token (base64 of JSON).
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::STANDARD.encode(json)
    }

    /// Parses `?continue=` (400 when it is not one of ours).
    pub fn decode(token: &str) -> Result<Self, KubeError> {
        let bad = |why: &str| KubeError::bad_request(format!("invalid continue token: {why}"));
        if token.len() > MAX_TOKEN_LEN {
            return Err(bad("too long"));
        }
        let engine = base64::engine::general_purpose::STANDARD;
        let bytes = engine.decode(token.trim()).map_err(|_| bad("not base64"))?;
        let t: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| bad("malformed"))?;
        if t.v != "meta.k8s.io/v1" {
            return Err(bad("unknown version"));
        }
        if t.rv < -1 {
            return Err(bad(&format!(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1): {}",
                t.rv
            )));
        }
        Ok(t)
    }

    /// The key the next page starts after.
    pub fn after(&self) -> (String, String) {
        (self.ns.clone(), self.start.clone())
    }
}

/// The 410 of a list whose later pages can no longer be served at the first page's version:
/// the Status's `metadata.continue` goes on after (`ns`, `start`) at the latest version.
pub fn continue_expired(ns: &str, start: &str) -> KubeError {
    KubeError::ExpiredContinue {
        token: ContinueToken::new(-1, ns, start).encode(),
    }
}

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Exact,
    NotOlderThan,
}

const EXACT: &str = "Exact";
const NOT_OLDER_THAN: &str = "NotOlderThan";

/// The list and watch options of a request, as the query spells them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListQuery<'a> {
    pub watch: bool,
    pub resource_version: Option<&'a str>,
    pub resource_version_match: Option<&'a str>,
    pub send_initial_events: Option<&'a str>,
    pub allow_watch_bookmarks: Option<&'a str>,
    pub r#continue: Option<&'a str>,
    pub limit: Option<&'a str>,
}

/// The list and watch options, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    pub watch: bool,
    /// `resourceVersion`: None when absent or empty, `Some(0)` for "0" (any version).
    pub resource_version: Option<u64>,
    pub resource_version_match: Option<Match>,
    pub send_initial_events: Option<bool>,
    pub allow_watch_bookmarks: bool,
    pub r#continue: Option<ContinueToken>,
    pub limit: Option<usize>,
}

/// Go's `strconv.ParseBool`, as the apiserver decodes boolean query parameters.
fn parse_bool(name: &str, v: &str) -> Result<bool, KubeError> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(KubeError::bad_request(format!(
            "{name}: Invalid value: {}: strconv.ParseBool: parsing {}: invalid syntax",
            super::status::quote(&v.chars().take(32).collect::<String>()),
            super::status::quote(&v.chars().take(32).collect::<String>())
        ))),
    }
}

impl ListOptions {
    /// Reads and checks the options: `ValidateListOptions` (with the WatchList feature on and
    /// `SetListOptionsDefaults` applied) as a 422 against `ListOptions.meta.k8s.io`, then the
    /// values: a resourceVersion that is not a number, a bad token or a resourceVersion beside
    /// a continue token as the apiserver's 400s.
    pub fn parse(q: &ListQuery) -> Result<ListOptions, KubeError> {
        let rv_text = q.resource_version.unwrap_or("");
        let mut rv_match = q.resource_version_match.unwrap_or("").to_string();
        let mut send_initial = q
            .send_initial_events
            .filter(|v| !v.is_empty())
            .map(|v| parse_bool("sendInitialEvents", v))
            .transpose()?;
        let cont = q.r#continue.unwrap_or("");
        // SetListOptionsDefaults: a watch from "any" version streams the current state first.
        if q.watch
            && send_initial.is_none()
            && rv_match.is_empty()
            && (rv_text.is_empty() || rv_text == "0")
        {
            send_initial = Some(true);
            rv_match = NOT_OLDER_THAN.into();
        }
        let field = "resourceVersionMatch";
        let mut causes = Vec::new();
        if q.watch {
            if send_initial.is_some() && rv_match != NOT_OLDER_THAN {
                causes.push(Cause::forbidden(
                    field,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !rv_match.is_empty() {
                if send_initial.is_none() {
                    causes.push(Cause::forbidden(
                        field,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    ));
                }
                if rv_match != NOT_OLDER_THAN {
                    causes.push(Cause::not_supported(field, &rv_match, &[NOT_OLDER_THAN]));
                }
                if !cont.is_empty() {
                    causes.push(Cause::forbidden(
                        field,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
        } else {
            if !rv_match.is_empty() {
                if rv_text.is_empty() {
                    causes.push(Cause::forbidden(
                        field,
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if !cont.is_empty() {
                    causes.push(Cause::forbidden(
                        field,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if rv_match != EXACT && rv_match != NOT_OLDER_THAN {
                    causes.push(Cause::not_supported(
                        field,
                        &rv_match,
                        &[EXACT, NOT_OLDER_THAN, ""],
                    ));
                }
                if rv_match == EXACT && rv_text == "0" {
                    causes.push(Cause::forbidden(
                        field,
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            if send_initial.is_some() {
                causes.push(Cause::forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for list",
                ));
            }
        }
        if !causes.is_empty() {
            return Err(KubeError::invalid(&LIST_OPTIONS, "", causes));
        }
        let resource_version = match rv_text {
            "" => None,
            text => Some(text.parse::<u64>().map_err(|_| {
                let shown = super::status::quote(&text.chars().take(32).collect::<String>());
                KubeError::bad_request(format!(
                    "resourceVersion: Invalid value: {shown}: strconv.ParseUint: parsing {shown}: invalid syntax"
                ))
            })?),
        };
        let allow_watch_bookmarks = match q.allow_watch_bookmarks.filter(|v| !v.is_empty()) {
            Some(v) => parse_bool("allowWatchBookmarks", v)?,
            None => false,
        };
        let mut token = None;
        if !q.watch && !cont.is_empty() {
            token = Some(ContinueToken::decode(cont)?);
            if resource_version.is_some_and(|v| v != 0) {
                return Err(KubeError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
        }
        Ok(ListOptions {
            watch: q.watch,
            resource_version,
            resource_version_match: match rv_match.as_str() {
                EXACT => Some(Match::Exact),
                NOT_OLDER_THAN => Some(Match::NotOlderThan),
                _ => None,
            },
            send_initial_events: send_initial,
            allow_watch_bookmarks,
            r#continue: token,
            limit: parse_limit(q.limit)?,
        })
    }

    /// A list read at exactly `resourceVersion`: `Exact`, or a version other than 0 with a
    /// limit and no match (the apiserver's legacy rule).
    pub fn exact(&self) -> bool {
        match self.resource_version_match {
            Some(Match::Exact) => true,
            Some(Match::NotOlderThan) => false,
            None => self.limit.is_some(),
        }
    }
}

/// Where a list page is read: the resourceVersion it is consistent with and the key it starts
/// after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub resource_version: i64,
    pub after: Option<(String, String)>,
}

fn too_large(requested: u64, latest: i64) -> KubeError {
    KubeError::TooLargeResourceVersion {
        requested,
        current: u64::try_from(latest).unwrap_or(0),
    }
}

/// The position a list (not a watch) of `project`'s clusters (every project's when None)
/// starts at, or the apiserver's refusal: 410 for a continue token whose later pages changed
/// since its version or whose version was pruned from the change log (with a token that goes
/// on at the latest version), 410 for an exact read the log cannot vouch for, 504 for a
/// version not reached yet.
pub async fn position(
    store: &dyn Store,
    project: Option<&str>,
    o: &ListOptions,
) -> Result<Position, KubeError> {
    let (latest, pruned) = store.registry_bounds().await?;
    if let Some(t) = &o.r#continue {
        let after = t.after();
        if t.rv < 0 {
            return Ok(Position {
                resource_version: latest,
                after: Some(after),
            });
        }
        if t.rv > latest {
            return Err(too_large(u64::try_from(t.rv).unwrap_or(0), latest));
        }
        if t.rv < pruned
            || store
                .registry_first_change_after(t.rv, project, Some((&after.0, &after.1)))
                .await?
                .is_some()
        {
            return Err(continue_expired(&after.0, &after.1));
        }
        return Ok(Position {
            resource_version: t.rv,
            after: Some(after),
        });
    }
    let latest_position = Position {
        resource_version: latest,
        after: None,
    };
    let asked = match o.resource_version {
        None | Some(0) => return Ok(latest_position),
        Some(n) => n,
    };
    let n = i64::try_from(asked).unwrap_or(i64::MAX);
    if n > latest {
        return Err(too_large(asked, latest));
    }
    if !o.exact() {
        return Ok(latest_position);
    }
    if n < pruned
        || store
            .registry_first_change_after(n, project, None)
            .await?
            .is_some()
    {
        return Err(if o.limit.is_some() {
            continue_expired("", "")
        } else {
            KubeError::Expired(LIST_EXPIRED.into())
        });
    }
    Ok(Position {
        resource_version: n,
        after: None,
    })
}

/// The `BOOKMARK` object that ends a streaming list's initial events.
pub fn initial_events_end(
    resource: &super::status::Resource,
    resource_version: &str,
) -> serde_json::Value {
    serde_json::json!({"kind": resource.kind, "apiVersion": resource.api_version(),
        "metadata": {"resourceVersion": resource_version,
            "annotations": {INITIAL_EVENTS_END: "true"}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::ResponseError;

    #[test]
    fn limits_follow_the_apiserver_and_are_capped() {
        assert_eq!(parse_limit(None).ok(), Some(None));
        assert_eq!(parse_limit(Some("")).ok(), Some(None));
        assert_eq!(parse_limit(Some("0")).ok(), Some(None));
        assert_eq!(parse_limit(Some("-3")).ok(), Some(None));
        assert_eq!(parse_limit(Some("500")).ok(), Some(Some(500)));
        assert_eq!(parse_limit(Some("99999999999")).ok(), Some(Some(MAX_LIMIT)));
        assert_eq!(
            parse_limit(Some("ten"))
                .err()
                .map(|e| e.status_code().as_u16()),
            Some(400)
        );
    }

    #[test]
    fn continue_tokens_round_trip_and_garbage_is_400() {
        let t = ContinueToken::new(102, "p1", "alpha");
        assert_eq!(ContinueToken::decode(&t.encode()).ok(), Some(t));
        for bad in ["%%%", "bm9wZQ==", &"A".repeat(MAX_TOKEN_LEN + 1)] {
            assert_eq!(
                ContinueToken::decode(bad)
                    .err()
                    .map(|e| e.status_code().as_u16()),
                Some(400),
                "{bad}"
            );
        }
        let e = continue_expired("p1", "alpha");
        assert_eq!(e.status_code().as_u16(), 410);
        let v = super::super::status::status_value(&e);
        assert_eq!(v["reason"], "Expired");
        assert_eq!(v["message"], super::super::status::CONTINUE_EXPIRED);
        let again = ContinueToken::decode(v["metadata"]["continue"].as_str().unwrap_or(""));
        assert_eq!(again.ok(), Some(ContinueToken::new(-1, "p1", "alpha")));
    }

    fn refused(q: ListQuery) -> (u16, String) {
        match ListOptions::parse(&q) {
            Ok(o) => (200, format!("{o:?}")),
            Err(e) => (e.status_code().as_u16(), e.to_string()),
        }
    }

    #[test]
    fn list_options_are_checked_as_apimachinery_checks_them() {
        let head = "ListOptions.meta.k8s.io \"\" is invalid: ";
        let list = |rv, m, c| ListQuery {
            resource_version: rv,
            resource_version_match: m,
            r#continue: c,
            ..Default::default()
        };
        for (q, why) in [
            (
                list(None, Some("Exact"), None),
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
            (
                list(Some("0"), Some("Exact"), None),
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ),
            (
                list(Some("5"), Some("Newest"), None),
                "resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
            ),
            (
                list(Some("5"), Some("NotOlderThan"), Some("abc")),
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ),
            (
                ListQuery {
                    send_initial_events: Some("true"),
                    ..Default::default()
                },
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
            ),
            (
                ListQuery {
                    watch: true,
                    resource_version: Some("5"),
                    resource_version_match: Some("NotOlderThan"),
                    ..Default::default()
                },
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ),
            (
                ListQuery {
                    watch: true,
                    send_initial_events: Some("true"),
                    resource_version: Some("5"),
                    ..Default::default()
                },
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ),
        ] {
            assert_eq!(refused(q), (422, format!("{head}{why}")), "{q:?}");
        }
        // Several at once: all named, in apimachinery's order.
        let (code, message) = refused(ListQuery {
            watch: true,
            send_initial_events: Some("true"),
            resource_version_match: Some("Exact"),
            ..Default::default()
        });
        assert_eq!(code, 422);
        assert_eq!(
            message,
            format!("{head}[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]")
        );
        assert_eq!(
            refused(list(Some("abc"), None, None)),
            (
                400,
                "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax".into()
            )
        );
        let token = ContinueToken::new(7, "p", "a").encode();
        assert_eq!(
            refused(list(Some("7"), None, Some(&token))),
            (
                400,
                "specifying resource version is not allowed when using continue".into()
            )
        );
    }

    #[test]
    fn a_watch_from_any_version_defaults_to_a_streaming_list() {
        for rv in [None, Some("0")] {
            let o = ListOptions::parse(&ListQuery {
                watch: true,
                resource_version: rv,
                ..Default::default()
            });
            let o = o.ok();
            assert_eq!(o.as_ref().and_then(|o| o.send_initial_events), Some(true));
            assert_eq!(
                o.and_then(|o| o.resource_version_match),
                Some(Match::NotOlderThan)
            );
        }
        let o = ListOptions::parse(&ListQuery {
            watch: true,
            resource_version: Some("12"),
            ..Default::default()
        })
        .ok();
        assert_eq!(o.and_then(|o| o.send_initial_events), None);
    }
}
