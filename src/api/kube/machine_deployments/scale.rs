//! `machinedeployments/scale`: the `autoscaling/v1` `Scale` of a node group (`kubectl scale
//! machinedeployment X --replicas=N`). GET answers `spec.replicas` (the node count),
//! `status.replicas` (its machines not being deleted) and `status.selector` (the two labels);
//! PUT and PATCH (merge, JSON) change `spec.replicas` only, as a resize of the group
//! ([`super::change`]); a stated `metadata.resourceVersion` other than the object's is a 409,
//! any other change a 422. Its manager's `Update` entry on the `MachineDeployment` names
//! subresource `scale`.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::diff::Change;
use super::listing;
use super::object::{counts, entry_name, labels, resource_version};
use super::update::{write, writer_of, Asked};
use crate::api::http::error::ApiError;
use crate::api::kube::access::{DEPLOYMENT_GET, DEPLOYMENT_PATCH, DEPLOYMENT_UPDATE};
use crate::api::kube::patch::{apply_patch, PatchType};
use crate::api::kube::request::{
    authorize_namespace, caller, content_type, dry_run, json_of, json_response, params,
};
use crate::api::kube::status::{
    quote, Cause, KubeError, MACHINE_DEPLOYMENTS, PATCH_OPTIONS, UPDATE_OPTIONS,
};
use crate::api::kube::view::meta_time;
use crate::api::{AppState, RequestContext};
use crate::store::NodeGroupEntry;

/// The `Scale` of a group.
pub(super) fn scale(e: &NodeGroupEntry) -> Value {
    let selector: Vec<String> = labels(e)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": entry_name(e),
            "namespace": e.nodegroup.project_id,
            "uid": e.nodegroup.uuid.to_string(),
            "resourceVersion": resource_version(e).to_string(),
            "creationTimestamp": meta_time(e.nodegroup.created_at),
        },
        "spec": {"replicas": e.nodegroup.node_count},
        "status": {"replicas": counts(e).replicas, "selector": selector.join(",")},
    })
}

/// The replicas a desired `Scale` asks for, against the current one.
fn read_scale(current: &Value, desired: &Value) -> Result<Change, KubeError> {
    let name = current["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if desired.get("kind").is_some_and(|k| k != "Scale") {
        return Err(KubeError::bad_request(format!(
            "the kind in the data ({}) does not match the expected kind (Scale)",
            desired["kind"]
        )));
    }
    for key in ["name", "namespace"] {
        if let Some(v) = desired["metadata"][key].as_str() {
            if v != current["metadata"][key] {
                return Err(KubeError::bad_request(format!(
                    "the {key} of the object ({}) does not match the {key} on the URL",
                    quote(v)
                )));
            }
        }
    }
    for key in ["resourceVersion", "uid"] {
        let stated = &desired["metadata"][key];
        if !stated.is_null() && *stated != current["metadata"][key] {
            return Err(KubeError::conflict(&MACHINE_DEPLOYMENTS, name));
        }
    }
    let mut causes = Vec::new();
    let (c, w) = (&current["spec"], &desired["spec"]);
    let mut keys: Vec<String> = c
        .as_object()
        .into_iter()
        .chain(w.as_object())
        .flat_map(|m| m.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    let mut change = Change::default();
    for k in keys {
        if c[&k] == w[&k] {
            continue;
        }
        if k != "replicas" {
            causes.push(Cause::forbidden(
                format!("spec.{k}"),
                "a Scale's change may set spec.replicas only",
            ));
            continue;
        }
        match w[&k].as_i64().and_then(|n| i32::try_from(n).ok()) {
            Some(n) if n >= 0 => change.replicas = Some(n),
            _ => causes.push(Cause::invalid(
                "spec.replicas",
                &w[&k].to_string(),
                "must be greater than or equal to 0",
            )),
        }
    }
    if causes.is_empty() {
        Ok(change)
    } else {
        Err(KubeError::Invalid {
            resource: &SCALE,
            name,
            causes,
        })
    }
}

/// `autoscaling/v1` `Scale`, as a refused scale names it.
static SCALE: crate::api::kube::status::Resource = crate::api::kube::status::Resource {
    group: "autoscaling",
    version: "v1",
    plural: "scale",
    singular: "scale",
    kind: "Scale",
    list_kind: "ScaleList",
};

/// `GET …/machinedeployments/{name}/scale`.
#[tracing::instrument(name = "machinedeployments.scale.get", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn get(
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let (rule, verb) = DEPLOYMENT_GET.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINE_DEPLOYMENTS, &namespace)?;
    let e = listing::find(&state, &namespace, &name)
        .await?
        .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, &name))?;
    Ok(json_response(StatusCode::OK, &scale(&e)))
}

/// `PUT …/machinedeployments/{name}/scale`.
#[tracing::instrument(name = "machinedeployments.scale.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    // Its manager's `Update` of the object through `scale`.
    let writer = writer_of(&req, &p, None, at, &body)?.through("scale");
    let desired = json_of(&req, &body)?;
    let ask =
        move |e: &NodeGroupEntry, _: &Value| read_scale(&scale(e), &desired).map(Asked::change);
    write(&ctx, &state, at, (dry, &writer), &ask, scale).await
}

/// `PATCH …/machinedeployments/{name}/scale` (merge and JSON patches).
#[tracing::instrument(name = "machinedeployments.scale.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
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
        return Err(KubeError::UnsupportedMediaType);
    }
    let at = (namespace.as_str(), name.as_str());
    let writer = writer_of(&req, &p, Some(&ct), at, &body)?.through("scale");
    let ask = move |e: &NodeGroupEntry, _: &Value| {
        let current = scale(e);
        let desired = apply_patch(&ct, &current, &body).map_err(|err| match err {
            KubeError::Invalid { causes, .. } => KubeError::Invalid {
                resource: &SCALE,
                name: entry_name(e),
                causes,
            },
            other => other,
        })?;
        read_scale(&current, &desired).map(Asked::change)
    };
    write(&ctx, &state, at, (dry, &writer), &ask, scale).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_changes_its_replicas_only() {
        let current = json!({"metadata": {"name": "c-w", "resourceVersion": "7"},
            "spec": {"replicas": 3}});
        let c = read_scale(&current, &json!({"spec": {"replicas": 5}})).expect("change");
        assert_eq!(c.replicas, Some(5));
        assert!(read_scale(&current, &json!({"spec": {"replicas": -1}})).is_err());
        let stale = json!({"metadata": {"resourceVersion": "6"}, "spec": {"replicas": 5}});
        assert!(matches!(
            read_scale(&current, &stale),
            Err(KubeError::Conflict { .. })
        ));
    }
}
