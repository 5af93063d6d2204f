//! The writes: create (register), replace, merge/JSON patch and server-side apply, each one
//! commit of the row with its event.

use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::delete::finish_deletion;
use super::parse::{desired, stated, strip_server_fields, Desired};
use super::plan::{changed_row, new_cluster, preview, record_create, with_managed_fields};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::managed::{self, Part};
use crate::api::kube::request::refuse_resource_version;
use crate::api::kube::request::{
    authorize_namespace, caller, content_type, dry_run, json_of, json_response, params,
    shared_entry, shared_groups, with_warnings, Params,
};
use crate::api::kube::status::{
    Cause, KubeError, CLUSTERS, CREATE_OPTIONS, PATCH_OPTIONS, UPDATE_OPTIONS,
};
use crate::api::kube::{access, patch, validation, view};
use crate::api::v1::lookup::cluster_target;
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::Cluster as Row;
use crate::domain::managed_fields::{refresh_last_applied, ManagedFields, ManagerId, Sent};
use crate::notify::events::{self, Action, Outcome};
use crate::store::{RegistryEntry, StoreError, Write};

/// The entry `name` names in `namespace`, or 404 in Kubernetes' words.
pub(super) async fn entry(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<RegistryEntry, KubeError> {
    state
        .store
        .registry_get(namespace, name)
        .await?
        .ok_or_else(|| KubeError::not_found(&CLUSTERS, name))
}

/// Registers `d` in `namespace`: the row (complete at once), the quota check and the create
/// event in one commit; 409 AlreadyExists when the name is taken.
pub(super) async fn register(
    state: &AppState,
    ctx: &RequestContext,
    namespace: &str,
    d: &Desired,
) -> Result<RegistryEntry, KubeError> {
    let new = new_cluster(ctx, namespace, d)?;
    let now = chrono::Utc::now();
    let row = new.provisional(now);
    let writes = vec![
        Write::CheckClusterQuota {
            project_id: namespace.to_string(),
            default_limit: state.settings.quotas.max_clusters_per_project,
        },
        Write::InsertCluster(Box::new(new)),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Create,
            Outcome::Success,
            &row,
            &[],
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => {}
        Err(e) if e.is_constraint("uniq_cluster0project_id0registry_name") => {
            return Err(KubeError::already_exists(&CLUSTERS, &d.name))
        }
        Err(StoreError::LimitExceeded { limit }) => {
            return Err(KubeError::QuotaExceeded(format!(
                "clusters.clusterregistry.k8s.io \"{}\" is forbidden: exceeded quota: the project may have {limit} clusters",
                d.name
            )))
        }
        Err(e) => return Err(e.into()),
    }
    entry(state, namespace, &d.name).await
}

#[tracing::instrument(name = "registry.create", skip_all, fields(namespace = %path))]
pub(super) async fn create(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    let (rule, verb) = access::CREATE.pair();
    authorize_namespace(&ctx, rule, verb, &CLUSTERS, &namespace)?;
    let p = params(&req)?;
    let mut value = json_of(&req, &body)?;
    // kubectl's client-side apply re-creates exported objects (a file written by
    // `get -o yaml`): their server-owned fields are dropped below rather than refused.
    if p.field_manager.as_deref() != Some("kubectl-client-side-apply") {
        refuse_resource_version(&value)?;
    }
    // Entries the body carries are the create's base (the API server's `decodeLiveOrNew`).
    let sent = Sent::read(value["metadata"].get("managedFields"));
    strip_server_fields(&mut value, &namespace)?;
    let mut d = desired(
        &value,
        validation::raw_object(content_type(&req), &body),
        &p,
        None,
    )?;
    let manager = managed::manager(&req, p.field_manager.as_deref(), &CREATE_OPTIONS)?;
    record_create(&ctx, &namespace, &mut d, &manager, sent)?;
    if dry_run(&p, &CREATE_OPTIONS)? {
        let new = new_cluster(&ctx, &namespace, &d)?;
        let e = preview(&new);
        return Ok(with_warnings(
            json_response(actix_web::http::StatusCode::CREATED, &view::cluster(&e)),
            &d.warnings,
        ));
    }
    let e = register(&state, &ctx, &namespace, &d).await?;
    Ok(with_warnings(
        json_response(actix_web::http::StatusCode::CREATED, &view::cluster(&e)),
        &d.warnings,
    ))
}

/// Writes a changed registry object with its `magnum.cluster.update` event.
pub(in crate::api::kube) async fn update_row(
    state: &AppState,
    ctx: &RequestContext,
    next: &Row,
) -> Result<bool, KubeError> {
    let ngs = state.store.nodegroups_of(&[next.uuid]).await?;
    let writes = vec![
        Write::update_cluster(next),
        Write::event(events::cluster_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Success,
            next,
            &ngs,
            Some(&initiator(ctx)),
        )),
    ];
    match state.store.commit(&writes).await {
        Ok(()) => Ok(true),
        Err(StoreError::Stale) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Replace, merge/JSON patch, or server-side apply of one object, retried on a lost race
/// unless the client named the version it read.
pub(super) async fn modify(
    req: &HttpRequest,
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    p: &Params,
    body: &Bytes,
    how: Modify,
) -> Result<HttpResponse, KubeError> {
    let (rule, verb) = access::UPDATE.pair();
    // Another project's cluster is changed only through a group bound with `write`.
    let shared = if ctx.is_admin || ctx.project_id == namespace {
        authorize_namespace(ctx, rule, verb, &CLUSTERS, namespace)?;
        None
    } else {
        Some(shared_groups(ctx, state, (rule, verb), &CLUSTERS, namespace).await?)
    };
    let dry = dry_run(
        p,
        if how == Modify::Replace {
            &UPDATE_OPTIONS
        } else {
            &PATCH_OPTIONS
        },
    )?;
    let apply = how == Modify::Apply;
    let force = if how == Modify::Replace {
        false
    } else {
        managed::force(p.force.as_deref(), apply)?
    };
    let manager = managed::manager(
        req,
        p.field_manager.as_deref(),
        if how == Modify::Replace {
            &UPDATE_OPTIONS
        } else {
            &PATCH_OPTIONS
        },
    )?;
    let id = ManagerId::new(&manager, managed::operation(apply), "");
    let applied = if apply {
        let applied = patch::parse_applied(body)?;
        managed::check_applied(&managed::CLUSTER, &applied, namespace, name)?;
        if stated(&applied, "name").is_some() {
            validation::check_name(&applied, name)?;
        }
        // The namespace, if the object names one, is the URL's.
        validation::check_namespace(&applied, namespace)?;
        Some(applied)
    } else {
        None
    };
    // The body's keys, for the duplicate-key check: a JSON patch has none of the object's.
    let raw = validation::raw_object(content_type(req), body);
    let outcome = retry::until_committed(async || {
        let found = match &shared {
            // Never created there: a cluster no group reaches is a 404.
            Some(groups) => {
                Some(shared_entry(ctx, state, groups, (namespace, name), verb, &CLUSTERS).await?)
            }
            None => state.store.registry_get(namespace, name).await?,
        };
        let e = match found {
            Some(e) => e,
            None if how == Modify::Apply => {
                // Server-side apply creates what is missing.
                let (rule, verb) = access::CREATE.pair();
                authorize_namespace(ctx, rule, verb, &CLUSTERS, namespace)?;
                let Some(applied) = applied.as_ref() else {
                    return Err(KubeError::not_found(&CLUSTERS, name));
                };
                if stated(applied, "resourceVersion").is_some() || stated(applied, "uid").is_some()
                {
                    return Err(KubeError::conflict(&CLUSTERS, name));
                }
                let mut fields = ManagedFields::default();
                let mut value = managed::apply(
                    &managed::CLUSTER,
                    &mut fields,
                    None,
                    applied,
                    Part::Main,
                    &id,
                    force,
                )?;
                refresh_last_applied(&mut value, applied, &manager);
                value["metadata"]["name"] = Value::String(name.to_string());
                strip_server_fields(&mut value, namespace)?;
                let mut d = desired(&value, raw, p, Some(name))?;
                d.meta.managed_fields = fields;
                if dry {
                    let new = new_cluster(ctx, namespace, &d)?;
                    return Ok(Attempt::Done((
                        actix_web::http::StatusCode::CREATED,
                        preview(&new),
                        d.warnings,
                    )));
                }
                let e = register(state, ctx, namespace, &d).await?;
                return Ok(Attempt::Done((
                    actix_web::http::StatusCode::CREATED,
                    e,
                    d.warnings,
                )));
            }
            None => return Err(KubeError::not_found(&CLUSTERS, name)),
        };
        let target = if shared.is_some() {
            ctx.own_target()
        } else {
            cluster_target(&e.cluster)
        };
        if !ctx.allowed(access::UPDATE.rule, &target) {
            return Err(KubeError::forbidden(
                "update",
                &CLUSTERS,
                Some(namespace),
                &ctx.user_id,
            ));
        }
        let current = serde_json::to_value(view::cluster(&e)).map_err(KubeError::internal)?;
        let mut applied_fields = None;
        let mut value = match (how, applied.as_ref()) {
            (Modify::Apply, Some(applied)) => {
                // An applied object's resourceVersion and uid are preconditions.
                let shown = &current["metadata"];
                if stated(applied, "resourceVersion")
                    .is_some_and(|rv| Some(rv) != shown["resourceVersion"].as_str())
                    || stated(applied, "uid").is_some_and(|u| Some(u) != shown["uid"].as_str())
                {
                    return Err(KubeError::conflict(&CLUSTERS, name));
                }
                let mut fields = e.cluster.registry.managed_fields.clone();
                let merged = managed::apply(
                    &managed::CLUSTER,
                    &mut fields,
                    Some(&current),
                    applied,
                    Part::Main,
                    &id,
                    force,
                )?;
                applied_fields = Some(fields);
                let mut merged = merged;
                refresh_last_applied(&mut merged, applied, &manager);
                merged["metadata"]["name"] = Value::String(name.to_string());
                merged
            }
            (Modify::Replace, _) => json_of(req, body)?,
            _ => patch::apply_patch(content_type(req).unwrap_or(""), &current, body)?,
        };
        // An update's own entries are its base when they decode (never an apply's: refused).
        let sent = Sent::read(value["metadata"].get("managedFields"));
        // A replace names the version it read; a patch only when it carries one itself. An
        // apply (server-side, or kubectl's client-side apply) sends what a file holds: the
        // server-owned fields of an exported object are ignored there.
        let applying =
            how == Modify::Apply || p.field_manager.as_deref() == Some("kubectl-client-side-apply");
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            if applying
                || (how != Modify::Replace
                    && meta.get("resourceVersion") == current["metadata"].get("resourceVersion"))
            {
                meta.remove("resourceVersion");
            }
            if applying {
                meta.remove("uid");
            }
            meta.remove("generation");
            meta.remove("creationTimestamp");
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            meta.remove("managedFields");
        }
        if let Some(obj) = value.as_object_mut() {
            obj.remove("status");
        }
        validation::check_namespace(&value, namespace)?;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("namespace");
        }
        let d = desired(&value, raw, p, Some(name))?;
        if how == Modify::Replace && d.resource_version.is_none() {
            // As for a custom resource: an update names the version it replaces.
            return Err(KubeError::invalid(
                &CLUSTERS,
                name,
                vec![Cause::invalid_unquoted(
                    "metadata.resourceVersion",
                    "0x0: must be specified for an update",
                )],
            ));
        }
        let next = changed_row(&e, &d)?;
        let Some(next) = with_managed_fields(&e, &current, next, applied_fields, (&id, sent))?
        else {
            return Ok(Attempt::Done((
                actix_web::http::StatusCode::OK,
                e,
                d.warnings,
            )));
        };
        if dry {
            let mut shown = e.clone();
            shown.cluster = next;
            return Ok(Attempt::Done((
                actix_web::http::StatusCode::OK,
                shown,
                d.warnings,
            )));
        }
        if next.registry.is_deleting() && next.registry.finalizers.is_empty() {
            // The last finalizer is gone: the deletion that waited for it goes on.
            if !finish_deletion(state, ctx, &e, &next).await? {
                if d.resource_version.is_some() {
                    return Err(KubeError::conflict(&CLUSTERS, name));
                }
                return Ok(Attempt::Retry);
            }
            let still = state
                .store
                .registry_entries(&[next.uuid])
                .await?
                .into_iter()
                .next();
            let mut shown = still.unwrap_or_else(|| e.clone());
            if shown.cluster.registry.resource_version == e.cluster.registry.resource_version {
                shown.cluster = next;
            }
            return Ok(Attempt::Done((
                actix_web::http::StatusCode::OK,
                shown,
                d.warnings,
            )));
        }
        if update_row(state, ctx, &next).await? {
            let e = state
                .store
                .registry_entries(&[next.uuid])
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| KubeError::not_found(&CLUSTERS, name))?;
            return Ok(Attempt::Done((
                actix_web::http::StatusCode::OK,
                e,
                d.warnings,
            )));
        }
        if d.resource_version.is_some() {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
        Ok(Attempt::Retry)
    })
    .await;
    let (status, e, warnings) = outcome?;
    Ok(with_warnings(
        json_response(status, &view::cluster(&e)),
        &warnings,
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Modify {
    Replace,
    Patch,
    Apply,
}

#[tracing::instrument(name = "registry.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn replace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    modify(
        &req,
        &ctx,
        &state,
        (&namespace, &name),
        &p,
        &body,
        Modify::Replace,
    )
    .await
}

#[tracing::instrument(name = "registry.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn patch_one(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let apply = content_type(&req).is_some_and(|ct| ct.starts_with("application/apply-patch"));
    if apply {
        managed::require_apply_manager(p.field_manager.as_deref())?;
    }
    let how = if apply { Modify::Apply } else { Modify::Patch };
    modify(&req, &ctx, &state, (&namespace, &name), &p, &body, how).await
}
