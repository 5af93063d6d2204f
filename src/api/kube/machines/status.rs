//! `machines/status`: the status subresource, as a resource with `subresources.status` serves
//! it. GET answers the object (`machine:get`). A machine's status is what its driver observes,
//! so writing it is a controller's act: PUT and PATCH (merge, JSON, apply) need
//! `machine:update_status` (an admin's by default; anyone else is 403), and then change the
//! status only, whatever else the body says: `providerID`, `nodeRef`, `addresses`,
//! `versions`, `errorReason`, `errorMessage`, `lastUpdated` and `lastChange`, until the driver
//! next reports. `status.phase` is the service's operations' (a different phase is a 422);
//! a stated resourceVersion other than the machine's is a 409. Each write records its
//! manager's entry in `metadata.managedFields` with subresource `status` (an apply's with the
//! API server's conflicts, [`super::owners`]).

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::listing;
use super::object::machine;
use super::owners::{owned_writes, Writer, MACHINE};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::{MACHINE_STATUS_GET, MACHINE_STATUS_PATCH, MACHINE_STATUS_UPDATE};
use crate::api::kube::managed::Part;
use crate::api::kube::patch::{apply_patch, PatchType};
use crate::api::kube::request::{
    authorize_namespace, caller, content_type, dry_run, json_of, json_response, params,
};
use crate::api::kube::status::{Cause, KubeError, MACHINES, PATCH_OPTIONS, UPDATE_OPTIONS};
use crate::api::{AppState, RequestContext};
use crate::domain::machine::MachineStatus;
use crate::domain::managed_fields::Sent;

/// `GET …/machines/{name}/status`: the machine.
#[tracing::instrument(name = "machines.status.get", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn get(
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let (rule, verb) = MACHINE_STATUS_GET.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let e = listing::find(&state, &namespace, &name)
        .await?
        .ok_or_else(|| KubeError::not_found(&MACHINES, &name))?;
    Ok(json_response(StatusCode::OK, &machine(&e)))
}

/// The domain status a wire status is: `nodeRef` is the node's name.
fn domain_status(name: &str, wire: &Value) -> Result<MachineStatus, KubeError> {
    let mut wire = wire.clone();
    if let Some(o) = wire.as_object_mut() {
        match o.get("nodeRef").cloned() {
            Some(Value::Object(r)) => {
                o.insert(
                    "nodeRef".into(),
                    r.get("name").cloned().unwrap_or(Value::Null),
                );
            }
            Some(Value::Null) | None => {
                o.remove("nodeRef");
            }
            Some(_) => {}
        }
    }
    serde_json::from_value(wire).map_err(|e| {
        KubeError::invalid(
            &MACHINES,
            name,
            vec![Cause::invalid_unquoted("status", &e.to_string())],
        )
    })
}

/// A status write by `writer`: the machine's status as `desired_of` (or the apply) leaves the
/// object.
async fn write(
    state: &AppState,
    (namespace, name): (&str, &str),
    dry: bool,
    writer: &Writer,
    desired_of: impl Fn(&Value) -> Result<Value, KubeError>,
) -> Result<HttpResponse, KubeError> {
    let answer = retry::until_committed(async || {
        let e = listing::find(state, namespace, name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINES, name))?;
        let current = serde_json::to_value(machine(&e)).map_err(KubeError::internal)?;
        let (desired, applied) = writer.desired(&e.managed_fields, &current, &desired_of)?;
        if let Some(rv) = desired["metadata"]["resourceVersion"].as_str() {
            if rv != e.resource_version.to_string() {
                return Err(KubeError::conflict(&MACHINES, name));
            }
        }
        let status = domain_status(name, desired.get("status").unwrap_or(&Value::Null))?;
        if status.phase != e.machine.status.phase {
            return Err(KubeError::invalid(
                &MACHINES,
                name,
                vec![Cause::forbidden(
                    "status.phase",
                    "a machine's phase is set by its operations, not written",
                )],
            ));
        }
        let mut next = e.clone();
        next.machine.status = status;
        let new = serde_json::to_value(machine(&next)).map_err(KubeError::internal)?;
        let fields = writer.fields(&e.managed_fields, applied, Sent::Keep, (&current, &new))?;
        let writes = owned_writes(&e, &next, None, &fields);
        next.managed_fields = fields;
        if dry || writes.is_empty() {
            return Ok(Attempt::Done(machine(if writes.is_empty() {
                &e
            } else {
                &next
            })));
        }
        listing::commit_and_read(state, &writes, namespace, name).await
    })
    .await?;
    Ok(json_response(StatusCode::OK, &answer))
}

/// `PUT …/machines/{name}/status`.
#[tracing::instrument(name = "machines.status.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let (rule, verb) = MACHINE_STATUS_UPDATE.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let dry = dry_run(&p, &UPDATE_OPTIONS)?;
    let writer = Writer::of(
        &MACHINE,
        &req,
        &p,
        None,
        Part::Status,
        (&namespace, &name),
        &body,
    )?;
    let desired = json_of(&req, &body)?;
    write(&state, (&namespace, &name), dry, &writer, |_| {
        Ok(desired.clone())
    })
    .await
}

/// `PATCH …/machines/{name}/status` (a strategic merge patch is 415).
#[tracing::instrument(name = "machines.status.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let (rule, verb) = MACHINE_STATUS_PATCH.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let dry = dry_run(&p, &PATCH_OPTIONS)?;
    let ct = content_type(&req).unwrap_or("").to_string();
    PatchType::from_content_type(&ct)?;
    let writer = Writer::of(
        &MACHINE,
        &req,
        &p,
        Some(&ct),
        Part::Status,
        (&namespace, &name),
        &body,
    )?;
    write(&state, (&namespace, &name), dry, &writer, |current| {
        apply_patch(&ct, current, &body).map_err(|err| match err {
            KubeError::Invalid { causes, .. } => KubeError::invalid(&MACHINES, &name, causes),
            other => other,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wire_status_reads_as_the_domain_status() {
        let s = domain_status(
            "m",
            &json!({"phase": "Running", "providerID": "openstack:///x",
                "nodeRef": {"kind": "Node", "name": "node-1"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "versions": {"kubelet": "v1.31.4"}, "lastChange": "InPlace"}),
        )
        .expect("status");
        assert_eq!(s.node_ref.as_deref(), Some("node-1"));
        assert_eq!(s.provider_id.as_deref(), Some("openstack:///x"));
        assert_eq!(s.addresses[0].address, "10.0.0.5");
        assert!(domain_status("m", &json!({"phase": "Sleeping"})).is_err());
    }
}
