//! `PUT` (`kubectl replace`) and `PATCH` (`kubectl patch` merge and JSON patches, and the
//! server-side apply of `kubectl apply --server-side`) of a `Machine`: a change of its kubelet
//! version, container runtime (name or version) or OS image, made through the same operation
//! as `PATCH /v1/clusters/{c}/machines/{m}` ([`change_writes`]): checked whole first (the
//! machine not busy: 409; the version-skew rules and the driver's plan: 422), then one
//! transaction writes the spec, the machine `Provisioning`, its `machine.update` job and its
//! pending notification. The answer is the machine as stored, 200.
//!
//! A request annotation (`fleetyard.openstack.org/reboot-requested-at`,
//! `…/replace-requested-at`, `cluster.x-k8s.io/remediate-machine`,
//! [`crate::domain::machine::requests`]) added or given a new value asks for a reboot or a
//! replacement through the `/v1` actions' operation ([`action_writes`]: a busy machine 409, the
//! driver's refusal 422 on the annotation); the annotation is kept on the object, so the same
//! value again asks nothing. An action and a spec change in one write are a 422. A server-side
//! apply of a name no machine has makes it ([`super::create::make`], 201).
//!
//! Everything else a machine shows is not the object's to change: the rest of its spec is its
//! node group's, its labels and other annotations are derived (its cluster's and node group's
//! names, its own name) and not stored, and its status is the driver's (`status` in the body is
//! ignored, as a resource with a status subresource ignores it). A body that changes any of
//! these is a 422 whose causes name each field. A strategic merge patch is the apiserver's 415
//! for a custom resource. A stated `metadata.resourceVersion` (required by a replace) that is
//! not the machine's is a 409 Conflict; a stated `metadata.uid` that is not its uid, too.
//! Server-side apply merges the applied configuration into the object and keeps
//! `metadata.managedFields` as the API server does ([`super::owners`]): a field another
//! manager owns that the apply would change is a 409 naming each field and manager, unless
//! `force=true` (`kubectl apply --server-side --force-conflicts`) takes it over; a replace
//! or a merge/JSON patch records its manager's `Update` entry. A `dryRun` writes nothing.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Map, Value};

use super::create::{self, Creator};
use super::listing;
use super::object::{machine, Machine};
use super::owners::{owned_writes, Writer, MACHINE};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::{MACHINE_CREATE, MACHINE_PATCH, MACHINE_UPDATE};
use crate::api::kube::managed::Part;
use crate::api::kube::patch::apply_patch;
use crate::api::kube::request::{
    authorize_namespace, caller, content_type, dry_run, json_of, json_response, params,
};
use crate::api::kube::status::{quote, Cause, KubeError, MACHINES, PATCH_OPTIONS, UPDATE_OPTIONS};
use crate::api::v1::lookup::cluster_target;
use crate::api::v1::machine_ops::{action_rule, action_writes, change_writes, MachineChange};
use crate::api::{AppState, RequestContext};
use crate::domain::machine::requests::{self, Request};
use crate::domain::machine::{KubeVersion, MachinePhase};
use crate::domain::managed_fields::Sent;
use crate::store::MachineEntry;

/// How the desired object came: a replace states the whole object, a patch's result is the
/// current object with the patch applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Replace,
    Patch,
}

/// The request annotations an object keeps, by name.
type Kept = std::collections::BTreeMap<String, String>;

/// The spec fields a change may set.
const CHANGEABLE: &str =
    "a machine's change may set spec.versions.kubelet, spec.containerRuntime.name, \
     spec.containerRuntime.version and spec.osImage";

fn object<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// `v[key]`, with a missing key and `null` alike.
fn field<'a>(obj: Option<&'a Map<String, Value>>, key: &str) -> &'a Value {
    obj.and_then(|o| o.get(key)).unwrap_or(&Value::Null)
}

/// A metadata map (labels, annotations) as compared: missing, `null` and `{}` alike.
fn map_of(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// A list (finalizers, ownerReferences) as compared: missing, `null` and `[]` alike.
fn list_of(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
    .chars()
    .take(128)
    .collect()
}

/// A changed string field: its new value, or a cause when it is no non-empty string.
fn new_text(path: &str, v: &Value, causes: &mut Vec<Cause>) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Null => {
            causes.push(Cause::required(path, "it may be changed, not removed"));
            None
        }
        Value::String(_) => {
            causes.push(Cause::required(path, "it may not be empty"));
            None
        }
        other => {
            causes.push(Cause::type_invalid(path, &shown(other), "must be a string"));
            None
        }
    }
}

/// The spec change from `current` to `desired`, every field that may not change a cause.
fn spec_change(current: &Value, desired: &Value, causes: &mut Vec<Cause>) -> MachineChange {
    let mut change = MachineChange::default();
    let cur = object(current, "spec");
    let want = match desired.get("spec") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            causes.push(Cause::type_invalid(
                "spec",
                &shown(other),
                "must be an object",
            ));
            return change;
        }
    };
    let mut keys: Vec<&String> = cur.into_iter().flat_map(|m| m.keys()).collect();
    keys.extend(want.into_iter().flat_map(|m| m.keys()));
    keys.sort();
    keys.dedup();
    for key in keys {
        let (c, w) = (field(cur, key), field(want, key));
        if c == w {
            continue;
        }
        match key.as_str() {
            "versions" => {
                let (c, w) = (c.as_object(), w.as_object());
                let mut sub: Vec<&String> = c.into_iter().flat_map(|m| m.keys()).collect();
                sub.extend(w.into_iter().flat_map(|m| m.keys()));
                sub.sort();
                sub.dedup();
                for k in sub {
                    let (cv, wv) = (field(c, k), field(w, k));
                    if cv == wv {
                        continue;
                    }
                    let path = format!("spec.versions.{k}");
                    if k == "kubelet" {
                        if let Some(text) = new_text(&path, wv, causes) {
                            match KubeVersion::parse(&text) {
                                Ok(v) => change.kubelet = Some(v),
                                Err(e) => causes.push(Cause::invalid(&path, &text, &e.0)),
                            }
                        }
                    } else {
                        causes.push(Cause::forbidden(&path, CHANGEABLE));
                    }
                }
            }
            "containerRuntime" => {
                let (c, w) = (c.as_object(), w.as_object());
                if w.is_none() {
                    causes.push(Cause::required(
                        "spec.containerRuntime",
                        "it may be changed, not removed",
                    ));
                    continue;
                }
                let mut sub: Vec<&String> = c.into_iter().flat_map(|m| m.keys()).collect();
                sub.extend(w.into_iter().flat_map(|m| m.keys()));
                sub.sort();
                sub.dedup();
                for k in sub {
                    let (cv, wv) = (field(c, k), field(w, k));
                    if cv == wv {
                        continue;
                    }
                    let path = format!("spec.containerRuntime.{k}");
                    match k.as_str() {
                        "name" => change.runtime_name = new_text(&path, wv, causes),
                        "version" => change.runtime_version = new_text(&path, wv, causes),
                        _ => causes.push(Cause::forbidden(&path, CHANGEABLE)),
                    }
                }
            }
            "osImage" => change.os_image = new_text("spec.osImage", w, causes),
            other => causes.push(Cause::forbidden(
                format!("spec.{other}"),
                &format!("{CHANGEABLE}; the rest of its spec is its node group's"),
            )),
        }
    }
    change
}

/// The request annotations `desired` states (each a string, else a cause).
fn requests_of(meta: Option<&Map<String, Value>>, causes: &mut Vec<Cause>) -> Kept {
    let mut kept = Kept::new();
    for (k, v) in map_of(field(meta, "annotations")) {
        if !requests::is_request(&k) {
            continue;
        }
        match v {
            Value::String(text) => {
                kept.insert(k, text);
            }
            other => causes.push(Cause::type_invalid(
                format!("metadata.annotations[{k}]"),
                &shown(&other),
                "must be a string",
            )),
        }
    }
    kept
}

/// A metadata map without the request annotations.
fn without_requests(v: &Value) -> Map<String, Value> {
    let mut m = map_of(v);
    m.retain(|k, _| !requests::is_request(k));
    m
}

/// The metadata `desired` states against the machine's: a name or namespace other than the
/// URL's is a 400, a uid or resourceVersion other than the machine's a 409; labels,
/// annotations (but the request annotations), finalizers and owner references that differ
/// from the served ones are causes. The answer is the request annotations it states.
fn check_metadata(
    verb: Verb,
    e: &MachineEntry,
    current: &Value,
    desired: &Value,
    causes: &mut Vec<Cause>,
) -> Result<Kept, KubeError> {
    let name = current["metadata"]["name"].as_str().unwrap_or("");
    for (key, want) in [
        ("apiVersion", MACHINES.api_version()),
        ("kind", MACHINES.kind.into()),
    ] {
        match desired.get(key) {
            None | Some(Value::Null) if verb == Verb::Patch => {}
            Some(Value::String(s)) if *s == want => {}
            other => {
                return Err(KubeError::bad_request(format!(
                    "the {} in the data ({}) does not match the expected {} ({want})",
                    if key == "kind" { "kind" } else { "API version" },
                    other.map(shown).unwrap_or_default(),
                    if key == "kind" { "kind" } else { "API version" },
                )))
            }
        }
    }
    let cur = object(current, "metadata");
    let meta = match desired.get("metadata") {
        Some(Value::Object(m)) => Some(m),
        None | Some(Value::Null) => None,
        Some(other) => {
            causes.push(Cause::type_invalid(
                "metadata",
                &shown(other),
                "must be an object",
            ));
            return Ok(e.annotations.clone());
        }
    };
    if let Some(n) = field(meta, "name").as_str() {
        if n != name {
            return Err(KubeError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                shown(&Value::String(n.into()))
            )));
        }
    }
    if let Some(ns) = field(meta, "namespace").as_str() {
        if ns != e.machine.project_id {
            return Err(KubeError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the \
                 request",
            ));
        }
    }
    if let Some(uid) = field(meta, "uid").as_str() {
        if uid != e.machine.uuid.to_string() {
            return Err(KubeError::ConflictMessage(format!(
                "Operation cannot be fulfilled on {} {}: Precondition failed: UID in precondition: {}, UID in object meta: {}",
                MACHINES.qualified(),
                quote(name),
                shown(&Value::String(uid.into())),
                e.machine.uuid
            )));
        }
    }
    match field(meta, "resourceVersion") {
        Value::Null if verb == Verb::Replace => causes.push(Cause::invalid_unquoted(
            "metadata.resourceVersion",
            "0x0: must be specified for an update",
        )),
        Value::Null => {}
        rv => {
            if rv.as_str() != Some(e.resource_version.to_string().as_str()) {
                return Err(KubeError::conflict(&MACHINES, name));
            }
        }
    }
    let derived = "a machine's labels and annotations are derived (its cluster's and node \
                   group's names, its own name) and not stored";
    if map_of(field(meta, "labels")) != map_of(field(cur, "labels")) {
        causes.push(Cause::forbidden("metadata.labels", derived));
    }
    if without_requests(field(meta, "annotations")) != without_requests(field(cur, "annotations")) {
        causes.push(Cause::forbidden(
            "metadata.annotations",
            &format!(
                "{derived}, but for the request annotations {}",
                requests::REQUEST_ANNOTATIONS.join(", ")
            ),
        ));
    }
    let kept = requests_of(meta, causes);
    for key in ["finalizers", "ownerReferences"] {
        if list_of(field(meta, key)) != list_of(field(cur, key)) {
            causes.push(Cause::forbidden(
                format!("metadata.{key}"),
                "a machine's finalizers and owner (its cluster) are the service's",
            ));
        }
    }
    Ok(kept)
}

/// What `desired` asks of machine `e`: its spec change and the request annotations it keeps
/// (with the action they ask for), or the 4xx that refuses it.
fn read_change(
    verb: Verb,
    e: &MachineEntry,
    current: &Value,
    desired: &Value,
) -> Result<(MachineChange, Kept, Option<Request>), KubeError> {
    let name = current["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if !desired.is_object() {
        return Err(KubeError::bad_request(
            "the body of a Machine must be a JSON or YAML object",
        ));
    }
    let mut causes = Vec::new();
    let kept = check_metadata(verb, e, current, desired, &mut causes)?;
    let change = spec_change(current, desired, &mut causes);
    let request = match requests::asked(&e.annotations, &kept) {
        Ok(r) => r,
        Err(sentence) => {
            causes.push(Cause::forbidden("metadata.annotations", &sentence));
            None
        }
    };
    if let Some(r) = request
        .as_ref()
        .filter(|_| change != MachineChange::default())
    {
        causes.push(Cause::forbidden(
            format!("metadata.annotations[{}]", r.annotations[0]),
            &format!(
                "a {} and a change of the spec cannot be asked in one write: ask for one \
                 change at a time",
                r.action.as_str()
            ),
        ));
    }
    if causes.is_empty() {
        Ok((change, kept, request))
    } else {
        Err(KubeError::invalid(&MACHINES, name, causes))
    }
}

/// A domain refusal as the face words it: the version-skew rules' and the driver's 400 are a
/// 422 on `field` (the spec, or the request annotation whose action the driver refuses:
/// kube-apiserver's answer to a value it does not accept); the rest (a busy machine's 409)
/// as is.
fn refusal(name: &str, field: &str, err: ApiError) -> KubeError {
    match err {
        ApiError::BadRequest(message) => KubeError::invalid(
            &MACHINES,
            name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {message}"),
                field: field.into(),
            }],
        ),
        other => other.into(),
    }
}

/// One update by `writer`: reads the machine, asks `desired_of` (or the apply) for the object
/// it should be, and makes the change with the managed fields it leaves (or, on a dry run,
/// checks it).
#[allow(clippy::too_many_arguments)]
async fn update(
    ctx: &RequestContext,
    state: &AppState,
    namespace: &str,
    name: &str,
    verb: Verb,
    dry: bool,
    writer: &Writer,
    desired_of: impl Fn(&Value) -> Result<Value, KubeError>,
) -> Result<HttpResponse, KubeError> {
    let rule = MACHINE_UPDATE.rule;
    let answer = retry::until_committed(async || -> Result<Attempt<Machine>, KubeError> {
        let e = listing::find(state, namespace, name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINES, name))?;
        let current = serde_json::to_value(machine(&e)).map_err(KubeError::internal)?;
        let (desired, applied) = writer
            .desired(&e.managed_fields, &current, &desired_of)
            .map_err(|err| match err {
                // A JSON patch that does not apply, named against this resource.
                KubeError::Invalid { causes, .. } if verb == Verb::Patch => {
                    KubeError::invalid(&MACHINES, name, causes)
                }
                other => other,
            })?;
        let sent = Sent::read(desired["metadata"].get("managedFields"));
        let (change, kept, request) = read_change(verb, &e, &current, &desired)?;
        let c = state
            .store
            .find_cluster(&e.machine.cluster_id)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINES, name))?;
        ctx.authorize(rule, &cluster_target(&c))?;
        let writes = match &request {
            // A request annotation's action, through the /v1 action's own operation.
            Some(r) => {
                ctx.authorize(action_rule(r.action), &cluster_target(&c))?;
                let writes = action_writes(state, ctx, &c, &e.machine, r.action)
                    .await
                    .map_err(|err| {
                        let field = format!("metadata.annotations[{}]", r.annotations[0]);
                        refusal(name, &field, err)
                    })?;
                Some(writes)
            }
            // A write of the request annotations alone (a removal) is no change of the
            // machine: it neither waits for a busy machine nor runs a failed one's change again.
            None if change == MachineChange::default() && kept != e.annotations => None,
            None => change_writes(state, ctx, &c, &e.machine, &change)
                .await
                .map_err(|err| refusal(name, "spec", err))?,
        };
        let mut preview = e.clone();
        preview.annotations = kept;
        if writes.is_some() {
            if let Ok(spec) = change.apply(&e.machine.spec) {
                preview.machine.spec = spec;
            }
            preview.machine.status.phase = MachinePhase::Provisioning;
        }
        let new = serde_json::to_value(machine(&preview)).map_err(KubeError::internal)?;
        let fields = writer.fields(&e.managed_fields, applied, sent, (&current, &new))?;
        let writes = owned_writes(&e, &preview, writes, &fields);
        preview.managed_fields = fields;
        if dry || writes.is_empty() {
            return Ok(Attempt::Done(machine(if writes.is_empty() {
                &e
            } else {
                &preview
            })));
        }
        listing::commit_and_read(state, &writes, namespace, name).await
    })
    .await?;
    Ok(json_response(StatusCode::OK, &answer))
}

/// `PUT …/namespaces/{namespace}/machines/{name}` (`kubectl replace`).
#[tracing::instrument(name = "machines.replace", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let (rule, verb) = MACHINE_UPDATE.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let dry = dry_run(&p, &UPDATE_OPTIONS)?;
    let writer = Writer::of(
        &MACHINE,
        &req,
        &p,
        None,
        Part::Main,
        (&namespace, &name),
        &body,
    )?;
    let desired = json_of(&req, &body)?;
    update(
        &ctx,
        &state,
        &namespace,
        &name,
        Verb::Replace,
        dry,
        &writer,
        |_| Ok(desired.clone()),
    )
    .await
}

/// `PATCH …/namespaces/{namespace}/machines/{name}`: merge and JSON patches, and server-side
/// apply; a strategic merge patch is 415.
#[tracing::instrument(name = "machines.patch", skip_all, fields(namespace = %path.0, name = %path.1))]
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
    let (rule, verb) = MACHINE_PATCH.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let dry = dry_run(&p, &PATCH_OPTIONS)?;
    let ct = content_type(&req).unwrap_or("").to_string();
    // The patch type first: a strategic merge patch is refused before the machine is read.
    crate::api::kube::patch::PatchType::from_content_type(&ct)?;
    let writer = Writer::of(
        &MACHINE,
        &req,
        &p,
        Some(&ct),
        Part::Main,
        (&namespace, &name),
        &body,
    )?;
    // Server-side apply makes a machine that does not exist, as a create does.
    if writer.is_apply() && listing::find(&state, &namespace, &name).await?.is_none() {
        let (rule, verb) = MACHINE_CREATE.pair();
        authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
        let (value, fields) = writer.creation(&name)?;
        return create::make(
            &req,
            (&ctx, &state),
            &p,
            (&namespace, &value),
            dry,
            Creator::Apply(fields),
        )
        .await;
    }
    update(
        &ctx,
        &state,
        &namespace,
        &name,
        Verb::Patch,
        dry,
        &writer,
        |current| apply_patch(&ct, current, &body),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn current() -> Value {
        json!({"spec": {"versions": {"kubelet": "v1.31.3"},
            "containerRuntime": {"name": "containerd", "version": "1.7.0"},
            "osImage": "fedora-coreos", "flavor": "m1.small"}})
    }

    fn change_of(desired: Value) -> (MachineChange, Vec<Cause>) {
        let mut causes = Vec::new();
        let change = spec_change(&current(), &desired, &mut causes);
        (change, causes)
    }

    #[test]
    fn the_changeable_fields_become_the_change() {
        let mut desired = current();
        desired["spec"]["versions"]["kubelet"] = json!("v1.31.4");
        desired["spec"]["containerRuntime"]["version"] = json!("1.7.1");
        desired["spec"]["osImage"] = json!("fcos-41");
        let (change, causes) = change_of(desired);
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(
            change.kubelet.map(|k| k.to_string()),
            Some("v1.31.4".to_string())
        );
        assert_eq!(change.runtime_version.as_deref(), Some("1.7.1"));
        assert_eq!(change.runtime_name, None);
        assert_eq!(change.os_image.as_deref(), Some("fcos-41"));
        assert_eq!(change_of(current()).0, MachineChange::default());
    }

    #[test]
    fn the_kubernetes_drivers_refusal_of_a_reboot_is_a_422_on_its_annotation() {
        use crate::domain::machine::{MachineName, MachineRole, MachineSpec, MachineStatus};
        use actix_web::ResponseError;
        let m = crate::domain::machine::Machine {
            id: 1,
            uuid: crate::domain::MachineId::new(),
            name: MachineName::parse("w-1").expect("name"),
            role: MachineRole::Worker,
            project_id: "p".into(),
            cluster_id: crate::domain::ClusterId::new(),
            nodegroup_id: crate::domain::NodeGroupId::new(),
            spec: MachineSpec::default(),
            status: MachineStatus::pending(),
            created_at: chrono::Utc::now(),
            updated_at: None,
        };
        let said = crate::drivers::kubernetes::machines::check_action(
            &m,
            crate::drivers::MachineAction::Reboot,
        )
        .expect_err("a machine without a node has nothing to reboot");
        let field = format!("metadata.annotations[{}]", requests::REBOOT_REQUESTED_AT);
        let err = refusal("kc-w-1", &field, ApiError::bad_request(said.clone()));
        assert_eq!(err.status_code(), StatusCode::UNPROCESSABLE_ENTITY);
        let KubeError::Invalid { causes, .. } = &err else {
            panic!("an Invalid: {err}");
        };
        assert_eq!(causes[0].field, field);
        assert_eq!(causes[0].message, format!("Invalid value: {said}"));
        assert_eq!(
            said,
            "The machine w-1 has no node yet, so there is nothing to reboot."
        );
        let busy = refusal("kc-w-1", &field, ApiError::conflict("Machine w-1 is busy."));
        assert_eq!(busy.status_code(), StatusCode::CONFLICT);
        assert_eq!(busy.to_string(), "Machine w-1 is busy.");
    }

    #[test]
    fn every_other_field_and_every_removal_is_a_cause_naming_it() {
        let mut desired = current();
        desired["spec"]["flavor"] = json!("m1.large");
        desired["spec"]["versions"]["controlPlane"] = json!("v1.31.4");
        desired["spec"]["versions"]["kubelet"] = json!("1.31");
        desired["spec"]["osImage"] = Value::Null;
        let (_, causes) = change_of(desired);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.flavor",
                "spec.osImage",
                "spec.versions.controlPlane",
                "spec.versions.kubelet"
            ]
        );
        assert_eq!(causes[0].reason, "FieldValueForbidden");
        assert_eq!(causes[1].reason, "FieldValueRequired");
        assert_eq!(causes[3].reason, "FieldValueInvalid");
    }
}
