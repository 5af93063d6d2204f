//! `PUT` (`kubectl replace`, `kubectl edit`) and `PATCH` (`kubectl patch` merge and JSON
//! patches, and `kubectl apply --server-side`) of a `MachineDeployment`, and the shared write
//! the `scale` subresource makes too: read the group, make the desired object, read what it
//! asks ([`super::diff`]), check and plan it as `/v1` would ([`super::change`]), then one
//! transaction (the rows, the job, the notification) and 200 with the object as stored (the
//! change under way). A `dryRun=All` checks everything and writes nothing. A strategic merge
//! patch is 415. Each write keeps the object's `metadata.managedFields` as a machine's
//! ([`crate::api::kube::managed_writes`] with [`MACHINE_DEPLOYMENT`]): a server-side apply
//! takes the fields it names (409 `FieldManagerConflict` on another manager's, unless
//! `force=true`), the first one on an object without entries giving its fields to
//! `before-first-apply`; a replace, merge or JSON patch (and a `scale`, with subresource
//! `scale`) records its manager's `Update` entry on the fields it changed.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::change::plan;
use super::diff::{check_metadata, spec_change, Change, Verb};
use super::listing;
use super::object::{machine_deployment, MachineDeployment, MACHINE_DEPLOYMENT};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::{DEPLOYMENT_PATCH, DEPLOYMENT_UPDATE};
use crate::api::kube::managed::Part;
use crate::api::kube::managed_writes::Writer;
use crate::api::kube::patch::{apply_patch, PatchType};
use crate::api::kube::request::{
    authorize_namespace, caller, content_type, dry_run, json_of, json_response, params,
};
use crate::api::kube::status::{KubeError, MACHINE_DEPLOYMENTS, PATCH_OPTIONS, UPDATE_OPTIONS};
use crate::api::{AppState, RequestContext};
use crate::domain::managed_fields::{ManagedFields, Sent};
use crate::store::{NodeGroupEntry, StoreError, Write};

/// What a write asks: the change, the `metadata.managedFields` its body sent, and the entries
/// an apply leaves.
pub(super) struct Asked {
    pub change: Change,
    pub sent: Sent,
    pub applied: Option<ManagedFields>,
}

impl Asked {
    /// A change whose body sets no entries of its own (a subresource's).
    pub fn change(change: Change) -> Asked {
        Asked {
            change,
            sent: Sent::Keep,
            applied: None,
        }
    }
}

/// What the desired object asks of `e` (served as `current`), or the 4xx that refuses it.
pub(super) type ReadChange<'a> =
    dyn Fn(&NodeGroupEntry, &Value) -> Result<Asked, KubeError> + Sync + 'a;

/// What `writer`'s desired object (an apply's merge into `current`, else what `other` makes of
/// it) asks of `e`.
fn ask_of(
    writer: &Writer,
    verb: Verb,
    e: &NodeGroupEntry,
    current: &Value,
    other: impl FnOnce(&Value) -> Result<Value, KubeError>,
) -> Result<Asked, KubeError> {
    let (desired, applied) = writer.desired(&e.managed_fields, current, other)?;
    Ok(Asked {
        change: read_change(verb, current, &desired)?,
        sent: Sent::read(desired["metadata"].get("managedFields")),
        applied,
    })
}

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

/// One write by `writer` to the group served as `name` in `namespace`: `ask` reads the change
/// from the group and its object; the answer is what `answer` makes of the group as it is
/// left, with the entries the write leaves.
pub(super) async fn write<T: serde::Serialize>(
    ctx: &RequestContext,
    state: &AppState,
    (namespace, name): (&str, &str),
    (dry, writer): (bool, &Writer),
    ask: &ReadChange<'_>,
    answer: impl Fn(&NodeGroupEntry) -> T,
) -> Result<HttpResponse, KubeError> {
    let out = retry::until_committed(async || -> Result<Attempt<T>, KubeError> {
        let e = listing::find(state, namespace, name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, name))?;
        let current = serde_json::to_value(machine_deployment(&e)).map_err(KubeError::internal)?;
        let asked = ask(&e, &current)?;
        let planned = plan(state, ctx, &e, name, &asked.change).await?;
        let mut preview = e.clone();
        preview.nodegroup = planned.nodegroup;
        preview.max_surge = asked.change.max_surge.or(e.max_surge);
        let new =
            serde_json::to_value(machine_deployment(&preview)).map_err(KubeError::internal)?;
        preview.managed_fields = writer.fields(
            &e.managed_fields,
            asked.applied,
            asked.sent,
            (&current, &new),
        )?;
        let mut writes = planned.writes;
        if preview.managed_fields != e.managed_fields || preview.max_surge != e.max_surge {
            // First: the set's other writes move the cluster row it is guarded by.
            writes.insert(
                0,
                Write::UpdateNodeGroupObject {
                    id: e.nodegroup.id,
                    cluster_uuid: e.nodegroup.cluster_id,
                    resource_version: e.cluster_resource_version,
                    managed_fields: preview.managed_fields.clone(),
                    max_surge: asked.change.max_surge,
                },
            );
        }
        if writes.is_empty() {
            return Ok(Attempt::Done(answer(&e)));
        }
        if dry {
            return Ok(Attempt::Done(answer(&preview)));
        }
        match state.store.commit(&writes).await {
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
    let at = (namespace.as_str(), name.as_str());
    let writer = writer_of(&req, &p, None, at, &body)?;
    let desired = json_of(&req, &body)?;
    let ask = |e: &NodeGroupEntry, current: &Value| {
        ask_of(&writer, Verb::Replace, e, current, |_| Ok(desired.clone()))
    };
    write(
        &ctx,
        &state,
        at,
        (dry, &writer),
        &ask,
        machine_deployment_of,
    )
    .await
}

/// The writer of a write to the object `at` (a replace when `content_type` is None, else a
/// patch of that type).
pub(super) fn writer_of(
    req: &HttpRequest,
    p: &crate::api::kube::request::Params,
    content_type: Option<&str>,
    at: (&str, &str),
    body: &Bytes,
) -> Result<Writer, KubeError> {
    Writer::of(
        &MACHINE_DEPLOYMENT,
        req,
        p,
        content_type,
        Part::Main,
        at,
        body,
    )
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
    // The patch type first: a strategic merge patch is refused before the group is read.
    PatchType::from_content_type(&ct)?;
    let at = (namespace.as_str(), name.as_str());
    let writer = writer_of(&req, &p, Some(&ct), at, &body)?;
    let ask = |e: &NodeGroupEntry, current: &Value| {
        ask_of(&writer, Verb::Patch, e, current, |current| {
            apply_patch(&ct, current, &body).map_err(|err| match err {
                KubeError::Invalid { causes, .. } => KubeError::invalid(
                    &MACHINE_DEPLOYMENTS,
                    current["metadata"]["name"].as_str().unwrap_or(""),
                    causes,
                ),
                other => other,
            })
        })
    };
    write(
        &ctx,
        &state,
        at,
        (dry, &writer),
        &ask,
        machine_deployment_of,
    )
    .await
}
