//! `DeleteOptions`, read as the API server reads them: from the request body (what kubectl,
//! client-go and the Python client send: `{"propagationPolicy":"Background","dryRun":["All"]}`)
//! and from the query (`?dryRun=All&gracePeriodSeconds=0&propagationPolicy=Orphan`), a field of
//! the body winning over the same field of the query, then validated with apimachinery's rules
//! (`ValidateDeleteOptions`): an unknown dry-run stage or propagation policy, or
//! `orphanDependents` beside `propagationPolicy`, is a 422 that changes nothing.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Preconditions};

use super::status::{Cause, KubeError, DELETE_OPTIONS};

/// How dependents are treated; the registry runs no garbage collector, so every policy is
/// accepted and kept for the answer only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

/// The options of one delete, parsed and checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delete {
    /// `dryRun: ["All"]`: everything is checked, nothing is written.
    pub dry_run: bool,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub propagation: Option<Propagation>,
}

impl Delete {
    /// Reads the options of a DELETE from its query string and body.
    pub fn parse(query: &str, body: &[u8]) -> Result<Delete, KubeError> {
        let from_body = body_options(body)?;
        let from_query = query_options(query)?;
        let options = DeleteOptions {
            dry_run: from_body.dry_run.or(from_query.dry_run),
            grace_period_seconds: from_body
                .grace_period_seconds
                .or(from_query.grace_period_seconds),
            orphan_dependents: from_body.orphan_dependents.or(from_query.orphan_dependents),
            preconditions: from_body.preconditions,
            propagation_policy: from_body
                .propagation_policy
                .or(from_query.propagation_policy),
            ..DeleteOptions::default()
        };
        Delete::checked(options)
    }

    fn checked(o: DeleteOptions) -> Result<Delete, KubeError> {
        let mut causes = Vec::new();
        let mut dry_run = false;
        for stage in o.dry_run.iter().flatten() {
            if stage == "All" {
                dry_run = true;
            } else {
                causes.push(Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!(
                        "Unsupported value: {}: supported values: \"All\"",
                        super::status::quote(&stage.chars().take(64).collect::<String>())
                    ),
                    field: "dryRun".into(),
                });
            }
        }
        let propagation = match o.propagation_policy.as_deref() {
            None => None,
            Some("Orphan") => Some(Propagation::Orphan),
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some(other) => {
                causes.push(Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!(
                        "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        super::status::quote(&other.chars().take(64).collect::<String>())
                    ),
                    field: "propagationPolicy".into(),
                });
                None
            }
        };
        if o.orphan_dependents.is_some() && o.propagation_policy.is_some() {
            causes.push(Cause::invalid_unquoted(
                "propagationPolicy",
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if !causes.is_empty() {
            return Err(KubeError::invalid(&DELETE_OPTIONS, "", causes));
        }
        let propagation = propagation.or(match o.orphan_dependents {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => None,
        });
        let Preconditions {
            uid,
            resource_version,
        } = o.preconditions.unwrap_or_default();
        Ok(Delete {
            dry_run,
            uid,
            resource_version,
            // A negative grace period is taken as one second, as the API server does.
            grace_period_seconds: o.grace_period_seconds.map(|g| if g < 0 { 1 } else { g }),
            propagation,
        })
    }
}

fn body_options(body: &[u8]) -> Result<DeleteOptions, KubeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DeleteOptions::default());
    }
    let options: DeleteOptions = serde_json::from_slice(body).map_err(|e| {
        KubeError::BadRequest(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml: {e}"
        ))
    })?;
    if let Some(kind) = options.kind.as_deref().filter(|k| !k.is_empty()) {
        if kind != "DeleteOptions" {
            return Err(KubeError::BadRequest(format!(
                "the body of the request was of kind {}, not DeleteOptions",
                super::status::quote(&kind.chars().take(64).collect::<String>())
            )));
        }
    }
    Ok(options)
}

fn query_options(query: &str) -> Result<DeleteOptions, KubeError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|e| KubeError::BadRequest(format!("invalid query parameters: {e}")))?;
    let mut o = DeleteOptions::default();
    for (k, v) in pairs {
        match k.as_str() {
            "dryRun" => o.dry_run.get_or_insert_with(Vec::new).push(v),
            "gracePeriodSeconds" => {
                o.grace_period_seconds = Some(v.parse().map_err(|_| {
                    KubeError::BadRequest(format!(
                        "invalid gracePeriodSeconds {}: must be an integer",
                        super::status::quote(&v.chars().take(32).collect::<String>())
                    ))
                })?)
            }
            "orphanDependents" => {
                o.orphan_dependents = Some(match v.as_str() {
                    "true" | "1" | "True" => true,
                    "false" | "0" | "False" => false,
                    _ => {
                        return Err(KubeError::BadRequest(format!(
                            "invalid orphanDependents {}: must be true or false",
                            super::status::quote(&v.chars().take(32).collect::<String>())
                        )))
                    }
                })
            }
            "propagationPolicy" => o.propagation_policy = Some(v),
            _ => {}
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(e: KubeError) -> (u16, serde_json::Value) {
        let v = super::super::status::status_value(&e);
        (v["code"].as_u64().unwrap_or(0) as u16, v)
    }

    #[test]
    fn dry_run_in_the_body_is_honoured_as_kubectl_sends_it() {
        let d = Delete::parse(
            "",
            br#"{"propagationPolicy":"Background","dryRun":["All"]}"#,
        );
        assert_eq!(
            d.ok(),
            Some(Delete {
                dry_run: true,
                propagation: Some(Propagation::Background),
                ..Delete::default()
            })
        );
    }

    #[test]
    fn dry_run_in_the_query_is_honoured_with_or_without_a_body() {
        assert!(Delete::parse("dryRun=All", b"").is_ok_and(|d| d.dry_run));
        assert!(
            Delete::parse("dryRun=All", br#"{"propagationPolicy":"Background"}"#)
                .is_ok_and(|d| d.dry_run)
        );
        assert!(Delete::parse("", b"").is_ok_and(|d| !d.dry_run));
    }

    #[test]
    fn body_fields_win_over_the_query_and_preconditions_come_from_the_body() {
        let d = Delete::parse(
            "gracePeriodSeconds=30&propagationPolicy=Orphan",
            br#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5,
                "preconditions":{"uid":"u-1","resourceVersion":"7"}}"#,
        );
        assert_eq!(
            d.ok(),
            Some(Delete {
                dry_run: false,
                uid: Some("u-1".into()),
                resource_version: Some("7".into()),
                grace_period_seconds: Some(5),
                propagation: Some(Propagation::Orphan),
            })
        );
    }

    #[test]
    fn unknown_dry_run_stages_and_policies_are_422_naming_the_field() {
        let Err(e) = Delete::parse("", br#"{"dryRun":["Some"]}"#) else {
            panic!("accepted an unknown dry-run stage")
        };
        let (code, v) = status_of(e);
        assert_eq!(code, 422);
        assert_eq!(v["reason"], "Invalid");
        assert_eq!(
            v["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: \"Some\": supported values: \"All\""
        );
        let Err(e) = Delete::parse("propagationPolicy=Sideways", b"") else {
            panic!("accepted an unknown policy")
        };
        let (code, v) = status_of(e);
        assert_eq!(code, 422);
        assert_eq!(v["details"]["causes"][0]["field"], "propagationPolicy");
    }

    #[test]
    fn orphan_dependents_beside_a_policy_is_422() {
        let Err(e) = Delete::parse(
            "",
            br#"{"orphanDependents":true,"propagationPolicy":"Background"}"#,
        ) else {
            panic!("accepted both")
        };
        let (code, v) = status_of(e);
        assert_eq!(code, 422);
        assert!(v["message"].as_str().is_some_and(
            |m| m.contains("orphanDependents and deletionPropagation cannot be both set")
        ));
        assert_eq!(
            Delete::parse("orphanDependents=true", b"")
                .ok()
                .and_then(|d| d.propagation),
            Some(Propagation::Orphan)
        );
    }

    #[test]
    fn malformed_bodies_and_query_values_are_400() {
        for (q, b) in [
            ("", &br#"{"dryRun":"All"}"#[..]),
            ("", &b"not json"[..]),
            ("", &br#"{"kind":"Cluster"}"#[..]),
            ("gracePeriodSeconds=soon", &b""[..]),
            ("orphanDependents=perhaps", &b""[..]),
        ] {
            let Err(e) = Delete::parse(q, b) else {
                panic!("accepted {q:?} {b:?}")
            };
            assert_eq!(status_of(e).0, 400, "{q:?} {b:?}");
        }
    }

    #[test]
    fn a_negative_grace_period_is_one_second() {
        assert_eq!(
            Delete::parse("gracePeriodSeconds=-5", b"")
                .ok()
                .and_then(|d| d.grace_period_seconds),
            Some(1)
        );
    }
}
