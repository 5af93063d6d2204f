//! `clusters/status`: the status subresource, as a CRD with `subresources.status` serves it.
//! GET answers the object; PUT and PATCH (merge, JSON, apply) change `status.conditions` only,
//! whatever else the body says (writes to the main resource ignore `status`). Outside
//! controllers own the condition types they write; `OK` stays the service's health prober's,
//! and a value sent for it is ignored with a warning. Writes need `registry:update_status`.

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::clusters::{get, method_not_allowed, update_row, BASE};
use super::managed::{self, Part};
use super::objects::API_VERSION;
use super::objects::{Cluster, ClusterCondition, ClusterStatus};
use super::request::{
    authorize_namespace, caller, dry_run, json_of, json_response, params, with_warnings, Params,
};
use super::status::{quote, Cause, KubeError, CLUSTERS, PATCH_OPTIONS, UPDATE_OPTIONS};
use super::{patch, validation, view};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::v1::lookup::cluster_target;
use crate::api::{AppState, RequestContext};
use crate::domain::kube_names;
use crate::domain::managed_fields::{ManagedFields, ManagerId, Sent};
use crate::domain::registry::{BLOCKED_CONDITION, PROBER_CONDITION};
use crate::store::RegistryEntry;

const RULE: &str = super::access::STATUS_UPDATE.rule;
/// At most this many conditions a cluster keeps.
const MAX_CONDITIONS: usize = 64;

/// The routes of `clusters/{name}/status`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/clusters/{{name}}/status"
        ))
        .route(web::get().to(get))
        .route(web::put().to(write_status))
        .route(web::patch().to(write_status))
        .default_service(web::to(method_not_allowed)),
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Replace,
    Patch,
}

/// `PUT` (replace) or `PATCH` of `clusters/status`.
#[tracing::instrument(name = "registry.write_status", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn write_status(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let how = if req.method() == actix_web::http::Method::PUT {
        How::Replace
    } else {
        How::Patch
    };
    write(&req, &ctx, &state, (&namespace, &name), &p, &body, how).await
}

async fn write(
    req: &HttpRequest,
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    p: &Params,
    body: &Bytes,
    how: How,
) -> Result<HttpResponse, KubeError> {
    authorize_namespace(ctx, RULE, "update", &CLUSTERS, namespace)?;
    let dry = dry_run(
        p,
        match how {
            How::Replace => &UPDATE_OPTIONS,
            How::Patch => &PATCH_OPTIONS,
        },
    )?;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let apply = how == How::Patch
        && patch::PatchType::from_content_type(&content_type).ok() == Some(patch::PatchType::Apply);
    if apply {
        managed::require_apply_manager(p.field_manager.as_deref())?;
    }
    let force = match how {
        How::Replace => false,
        How::Patch => managed::force(p.force.as_deref(), apply)?,
    };
    let manager = managed::manager(
        req,
        p.field_manager.as_deref(),
        match how {
            How::Replace => &UPDATE_OPTIONS,
            How::Patch => &PATCH_OPTIONS,
        },
    )?;
    // Writes through `/status` are their managers' own, apart from the main resource's.
    let id = ManagerId::new(
        &manager,
        managed::operation(apply),
        Part::Status.subresource(),
    );
    let mode = validation::FieldValidation::parse(p.field_validation.as_deref())?;
    // The body's keys, for the duplicate-key check: a JSON patch has none of the object's.
    let raw = validation::raw_object(Some(&content_type), body);
    let applied = if apply {
        let applied = patch::parse_applied(body)?;
        managed::check_applied(&managed::CLUSTER, &applied, namespace, name)?;
        Some(applied)
    } else {
        None
    };
    let outcome = retry::until_committed(async || {
        let e = state
            .store
            .registry_get(namespace, name)
            .await?
            .ok_or_else(|| KubeError::not_found(&CLUSTERS, name))?;
        if !ctx.allowed(RULE, &cluster_target(&e.cluster)) {
            return Err(KubeError::forbidden(
                "update",
                &CLUSTERS,
                Some(namespace),
                &ctx.user_id,
            ));
        }
        let current = serde_json::to_value(view::cluster(&e)).map_err(KubeError::internal)?;
        let mut applied_fields = None;
        let (value, asked_version) = match applied.as_ref() {
            Some(applied) => {
                let asked = stated_version(applied, &current, How::Replace)?;
                if let Some(rv) = asked {
                    if rv != e.cluster.registry.resource_version {
                        return Err(KubeError::conflict(&CLUSTERS, name));
                    }
                }
                let mut fields = e.cluster.registry.managed_fields.clone();
                let merged = managed::apply(
                    &managed::CLUSTER,
                    &mut fields,
                    Some(&current),
                    applied,
                    Part::Status,
                    &id,
                    force,
                )?;
                applied_fields = Some(fields);
                (merged, asked)
            }
            None => {
                let value = match how {
                    How::Replace => json_of(req, body)?,
                    How::Patch => patch::apply_patch(&content_type, &current, body)?,
                };
                let asked = stated_version(&value, &current, how)?;
                (value, asked)
            }
        };
        if let Some(rv) = asked_version {
            if rv != e.cluster.registry.resource_version {
                return Err(KubeError::conflict(&CLUSTERS, name));
            }
        }
        let (object, mut warnings) = checked(&value, raw, mode)?;
        let (conditions, condition_warnings) = conditions_of(object.status, &e)?;
        warnings.extend(condition_warnings);
        let mut next = e.cluster.clone();
        next.registry.conditions = conditions;
        match applied_fields {
            Some(fields) => next.registry.managed_fields = fields,
            None => {
                let mut shown = e.clone();
                shown.cluster = next.clone();
                let new =
                    serde_json::to_value(view::cluster(&shown)).map_err(KubeError::internal)?;
                // A subresource's writes never set the entries themselves.
                next.registry.managed_fields = ManagedFields::record_update(
                    &e.cluster.registry.managed_fields,
                    Sent::Keep,
                    true,
                    &managed::SCHEMA,
                    &managed::tracked(&managed::CLUSTER, &current, Part::Status),
                    &managed::tracked(&managed::CLUSTER, &new, Part::Status),
                    &id,
                    API_VERSION,
                    chrono::Utc::now(),
                );
            }
        }
        if next.registry == e.cluster.registry {
            return Ok(Attempt::Done((e, warnings)));
        }
        if dry {
            let mut shown = e.clone();
            shown.cluster = next;
            return Ok(Attempt::Done((shown, warnings)));
        }
        if update_row(state, ctx, &next).await? {
            let e = state
                .store
                .registry_entries(&[next.uuid])
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| KubeError::not_found(&CLUSTERS, name))?;
            return Ok(Attempt::Done((e, warnings)));
        }
        if asked_version.is_some() {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
        Ok(Attempt::Retry)
    })
    .await;
    let (e, warnings) = outcome?;
    Ok(with_warnings(
        json_response(StatusCode::OK, &view::cluster(&e)),
        &warnings,
    ))
}

/// The object a status write leaves, through the same check as every other write
/// ([`validation::check_cluster`]: field validation, duplicate keys, type errors that quote
/// no value), with the server-owned metadata set aside as the main resource's writes do.
fn checked(
    value: &Value,
    raw: Option<&[u8]>,
    mode: validation::FieldValidation,
) -> Result<(Cluster, Vec<String>), KubeError> {
    let mut object = value.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in validation::SERVER_FIELDS {
            meta.remove(*k);
        }
    }
    if let Some(o) = object.as_object_mut() {
        if o.get("status").is_some_and(Value::is_null) {
            o.remove("status");
        }
    }
    validation::check_cluster(&object, raw, mode)
}

/// The resourceVersion a write names: a replace's own, a patch's only when it changed it.
fn stated_version(value: &Value, current: &Value, how: How) -> Result<Option<i64>, KubeError> {
    let stated = value["metadata"]["resourceVersion"].as_str().unwrap_or("");
    if stated.is_empty()
        || (how == How::Patch && Some(stated) == current["metadata"]["resourceVersion"].as_str())
    {
        return Ok(None);
    }
    stated.parse::<i64>().map(Some).map_err(|_| {
        KubeError::BadRequest(format!(
            "invalid resourceVersion {}",
            quote(&stated.chars().take(32).collect::<String>())
        ))
    })
}

/// The conditions a status write leaves: every type but the prober's, checked, with
/// `lastTransitionTime` kept while a condition's status stays and set when it changes.
fn conditions_of(
    status: ClusterStatus,
    e: &RegistryEntry,
) -> Result<(Vec<ClusterCondition>, Vec<String>), KubeError> {
    let registry_name = e.cluster.registry.name.clone();
    let mut causes = Vec::new();
    let mut warnings = Vec::new();
    let mut kept: Vec<ClusterCondition> = Vec::new();
    let now = view::kube_time(chrono::Utc::now());
    let shown_ok = view::cluster(e).status.conditions.into_iter().next();
    if status.conditions.len() > MAX_CONDITIONS + 1 {
        causes.push(Cause {
            reason: "FieldValueTooMany".into(),
            message: format!(
                "Too many: {}: must have at most {MAX_CONDITIONS} items",
                status.conditions.len()
            ),
            field: "status.conditions".into(),
        });
    }
    for (i, c) in status.conditions.into_iter().enumerate() {
        let field = |f: &str| format!("status.conditions[{i}].{f}");
        if c.type_ == BLOCKED_CONDITION {
            // The service shows it while an operation waits on a refusal; never stored.
            continue;
        }
        if c.type_ == PROBER_CONDITION {
            if shown_ok
                .as_ref()
                .is_some_and(|ok| ok.status != c.status || ok.reason != c.reason)
            {
                warnings.push(format!(
                    "status.conditions[{i}]: the {PROBER_CONDITION} condition is set by the service's health prober; the value sent was ignored"
                ));
            }
            continue;
        }
        if c.type_.is_empty() {
            causes.push(Cause::required(field("type"), ""));
        } else {
            for m in kube_names::qualified_name_errors(&c.type_) {
                causes.push(Cause::invalid(field("type"), &c.type_, &m));
            }
        }
        if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
            causes.push(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {}: supported values: \"False\", \"True\", \"Unknown\"",
                    quote(&c.status.chars().take(64).collect::<String>())
                ),
                field: field("status"),
            });
        }
        if let Some(reason) = c.reason.as_deref().filter(|r| !r.is_empty()) {
            if !is_reason(reason) {
                causes.push(Cause::invalid(
                    field("reason"),
                    &reason.chars().take(256).collect::<String>(),
                    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                ));
            }
        }
        if c.message.as_deref().is_some_and(|m| m.len() > 32_768) {
            causes.push(Cause::too_long(field("message"), 32_768));
        }
        for (f, t) in [
            ("lastTransitionTime", &c.last_transition_time),
            ("lastHeartbeatTime", &c.last_heartbeat_time),
        ] {
            if let Some(t) = t {
                if chrono::DateTime::parse_from_rfc3339(t).is_err() {
                    causes.push(Cause::invalid(
                        field(f),
                        &t.chars().take(64).collect::<String>(),
                        "must be an RFC 3339 time",
                    ));
                }
            }
        }
        if kept.iter().any(|k| k.type_ == c.type_) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: {}", quote(&c.type_)),
                field: field("type"),
            });
            continue;
        }
        let before = e
            .cluster
            .registry
            .conditions
            .iter()
            .find(|b| b.type_ == c.type_);
        let mut c = c;
        if c.last_transition_time.is_none() {
            c.last_transition_time = match before {
                Some(b) if b.status == c.status => b.last_transition_time.clone(),
                _ => Some(now.clone()),
            };
        }
        kept.push(c);
    }
    if !causes.is_empty() {
        return Err(KubeError::invalid(&CLUSTERS, registry_name, causes));
    }
    Ok((kept, warnings))
}

/// `metav1.Condition`'s reason format.
fn is_reason(r: &str) -> bool {
    let b = r.as_bytes();
    r.len() <= 1024
        && b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
}

#[cfg(test)]
mod tests {
    use super::is_reason;

    #[test]
    fn condition_reasons_follow_the_metav1_format() {
        for ok in ["Ready", "A", "ReasonA,ReasonB", "A:B", "my_name_"] {
            assert!(is_reason(ok), "{ok}");
        }
        for bad in ["", "1Ready", "Ready!", "Ready,", "has space"] {
            assert!(!is_reason(bad), "{bad}");
        }
    }
}
