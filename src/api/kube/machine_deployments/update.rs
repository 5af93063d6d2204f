//! `PUT` (`kubectl replace`, `kubectl edit`) and `PATCH` (`kubectl patch` merge and JSON
//! patches, and `kubectl apply --server-side`) of a `MachineDeployment`, and the shared write
//! the `scale` subresource makes too: read the group, make the desired object, read what it
//! asks ([`super::diff`]), check and plan it as `/v1` would ([`super::change`]), then one
//! transaction (the rows, the job, the notification) and 200 with the object as stored (the
//! change under way). A `dryRun=All` checks everything and writes nothing. A strategic merge
//! patch is 415. Server-side apply merges the applied configuration into the object (objects
//! key by key, the rest replaced); a node group keeps no field managers, so an apply meets no
//! conflicts and `metadata.managedFields` is not shown.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::change::plan;
use super::diff::{check_metadata, spec_change, Change, Verb};
use super::listing;
use super::object::{machine_deployment, MachineDeployment};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::{DEPLOYMENT_PATCH, DEPLOYMENT_UPDATE};
use crate::api::kube::managed;
use crate::api::kube::patch::{apply_patch, PatchType};
use crate::api::kube::request::{
    authorize_namespace, caller, content_type, dry_run, json_of, json_response, params,
};
use crate::api::kube::status::{KubeError, MACHINE_DEPLOYMENTS, PATCH_OPTIONS, UPDATE_OPTIONS};
use crate::api::{AppState, RequestContext};
use crate::store::{NodeGroupEntry, StoreError};

/// What the desired object asks of `e` (served as `current`), or the 4xx that refuses it.
pub(super) type ReadChange = dyn Fn(&NodeGroupEntry, &Value) -> Result<Change, KubeError> + Sync;

/// The change a desired object asks for.
pub(super) fn read_change(
    verb: Verb,
    current: &Value,
    desired: &Value,
) -> Result<Change, KubeError> {
    let name = current["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if !desired.is_object() {
        return Err(KubeError::bad_request(
            "the body of a MachineDeployment must be a JSON or YAML object",
        ));
    }
    let mut causes = Vec::new();
    check_metadata(verb, current, desired, &mut causes)?;
    let change = spec_change(current, desired, &mut causes);
    if causes.is_empty() {
        Ok(change)
    } else {
        Err(KubeError::invalid(&MACHINE_DEPLOYMENTS, name, causes))
    }
}

/// One write to the group served as `name` in `namespace`: `ask` reads the change from the
/// group and its object; the answer is what `answer` makes of the group as it is left.
pub(super) async fn write<T: serde::Serialize>(
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    dry: bool,
    ask: &ReadChange,
    answer: impl Fn(&NodeGroupEntry) -> T,
) -> Result<HttpResponse, KubeError> {
    let out = retry::until_committed(async || -> Result<Attempt<T>, KubeError> {
        let e = listing::find(state, namespace, name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, name))?;
        let current = serde_json::to_value(machine_deployment(&e)).map_err(KubeError::internal)?;
        let change = ask(&e, &current)?;
        let planned = plan(state, ctx, &e, name, &change).await?;
        if planned.writes.is_empty() {
            return Ok(Attempt::Done(answer(&e)));
        }
        if dry {
            let mut preview = e.clone();
            preview.nodegroup = planned.nodegroup;
            return Ok(Attempt::Done(answer(&preview)));
        }
        match state.store.commit(&planned.writes).await {
            Ok(()) => {}
            Err(StoreError::Stale) => return Ok(Attempt::Retry),
            Err(err) => return Err(err.into()),
        }
        let stored = listing::find(state, namespace, name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, name))?;
        Ok(Attempt::Done(answer(&stored)))
    })
    .await?;
    Ok(json_response(StatusCode::OK, &out))
}

/// `PUT …/namespaces/{namespace}/machinedeployments/{name}`.
#[tracing::instrument(name = "machinedeployments.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let (rule, verb) = DEPLOYMENT_UPDATE.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINE_DEPLOYMENTS, &namespace)?;
    let dry = dry_run(&p, &UPDATE_OPTIONS)?;
    managed::manager(&req, p.field_manager.as_deref(), &UPDATE_OPTIONS)?;
    let desired = json_of(&req, &body)?;
    let ask =
        move |_: &NodeGroupEntry, current: &Value| read_change(Verb::Replace, current, &desired);
    write(
        &ctx,
        &state,
        (&namespace, &name),
        dry,
        &ask,
        machine_deployment_of,
    )
    .await
}

fn machine_deployment_of(e: &NodeGroupEntry) -> MachineDeployment {
    machine_deployment(e)
}

/// `PATCH …/namespaces/{namespace}/machinedeployments/{name}`: merge and JSON patches and
/// server-side apply; a strategic merge patch is 415.
#[tracing::instrument(name = "machinedeployments.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn patch(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let (rule, verb) = DEPLOYMENT_PATCH.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINE_DEPLOYMENTS, &namespace)?;
    let dry = dry_run(&p, &PATCH_OPTIONS)?;
    let ct = content_type(&req).unwrap_or("").to_string();
    if PatchType::from_content_type(&ct)? == PatchType::Apply {
        managed::require_apply_manager(p.field_manager.as_deref())?;
    }
    managed::manager(&req, p.field_manager.as_deref(), &PATCH_OPTIONS)?;
    let ask = move |_: &NodeGroupEntry, current: &Value| {
        let desired = apply_patch(&ct, current, &body).map_err(|err| match err {
            KubeError::Invalid { causes, .. } => KubeError::invalid(
                &MACHINE_DEPLOYMENTS,
                current["metadata"]["name"].as_str().unwrap_or(""),
                causes,
            ),
            other => other,
        })?;
        read_change(Verb::Patch, current, &desired)
    };
    write(
        &ctx,
        &state,
        (&namespace, &name),
        dry,
        &ask,
        machine_deployment_of,
    )
    .await
}
