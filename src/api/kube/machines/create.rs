//! `POST …/namespaces/{namespace}/machines` (`kubectl create -f`, and `kubectl apply` of a new
//! object): a machine in the node group its labels name, its group one node larger (the writes
//! of `POST /v1/clusters/{c}/nodegroups/{ng}/machines`). The answer is the new machine
//! (`phase: Pending`), 201; it runs once the driver is done.
//!
//! The object names its cluster with `cluster.k8s.io/cluster-name` (the cluster's registry
//! name) and its node group with `fleetyard.openstack.org/nodegroup`. Its name is
//! `<cluster>-<machine name>`, as every machine is served; a `generateName` that does not start
//! with `<cluster>-` is given that prefix. The spec may set `versions.kubelet`,
//! `containerRuntime` and `osImage`; the rest of a spec (`versions.controlPlane`, `flavor`,
//! `providerConfig`, `taints`, `labels`) is the node group's, and a value other than the
//! group's is refused. The request annotations it carries are kept and ask for nothing.
//! `dryRun` checks everything and writes nothing. A server-side apply of a name no machine has
//! makes the machine through the same path ([`make`]), its entries the apply's.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Map, Value};

use super::object::{machine, CLUSTER_LABEL, MACHINE_NAME_ANNOTATION, NODEGROUP_LABEL};
use super::{listing, owners};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::MACHINE_CREATE;
use crate::api::kube::request::refuse_resource_version;
use crate::api::kube::request::{
    authorize_namespace, caller, dry_run, json_of, json_response, params, with_warnings, Params,
};
use crate::api::kube::status::{Cause, KubeError, CREATE_OPTIONS, MACHINES};
use crate::api::kube::validation::{self, FieldValidation};
use crate::api::v1::lookup::{self, cluster_target};
use crate::api::v1::machine_create::{machine_create_writes, NAME_TAKEN};
use crate::api::{AppState, RequestContext};
use crate::domain::machine::create::MachineRequest;
use crate::domain::machine::requests;
use crate::domain::machine::{ContainerRuntime, KubeVersion, MachineName};
use crate::domain::managed_fields::{ManagedFields, Sent};
use crate::store::{MachineEntry, StoreError, Write};

/// The fields a `Machine` body may carry, by object.
const TOP: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
const META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "finalizers",
];
const SPEC: &[&str] = &[
    "versions",
    "containerRuntime",
    "osImage",
    "flavor",
    "providerConfig",
    "taints",
    "labels",
];
const VERSIONS: &[&str] = &["kubelet", "controlPlane"];
const RUNTIME: &[&str] = &["name", "version"];
/// The spec fields that are the node group's (a value other than the group's is refused).
const GROUP_OWNED: &[&str] = &["flavor", "providerConfig", "taints", "labels"];

/// What a body asks for.
struct Asked {
    /// The object name, or the `generateName` prefix when it names none.
    name: Result<String, String>,
    cluster: String,
    nodegroup: String,
    request: MachineRequest,
    spec: Map<String, Value>,
    warnings: Vec<String>,
}

/// The fields of `obj` (at `path`) that are none of `known`.
fn unknown(obj: &Map<String, Value>, known: &[&str], path: &str, out: &mut Vec<String>) {
    out.extend(
        obj.keys()
            .filter(|k| !known.contains(&k.as_str()))
            .map(|k| format!("{path}.{k}")),
    );
}

fn object_at<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

fn string_at<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    field: &str,
    causes: &mut Vec<Cause>,
) -> Option<&'a str> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            causes.push(Cause::type_invalid(
                field,
                &other.to_string(),
                "must be a string",
            ));
            None
        }
    }
}

/// Reads the body: the strict decoding check (by `fieldValidation`), then each field, every
/// bad one a cause of one 422.
fn read(value: &Value, namespace: &str, p: &Params) -> Result<Asked, KubeError> {
    let Some(top) = value.as_object() else {
        return Err(KubeError::bad_request(
            "the body of a Machine must be a JSON or YAML object",
        ));
    };
    if let Some(v) = top.get("apiVersion").and_then(Value::as_str) {
        if v != MACHINES.api_version() {
            return Err(KubeError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({})",
                MACHINES.api_version()
            )));
        }
    }
    if let Some(k) = top.get("kind").and_then(Value::as_str) {
        if k != MACHINES.kind {
            return Err(KubeError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                MACHINES.kind
            )));
        }
    }
    validation::check_namespace(value, namespace)?;
    let empty = Map::new();
    let meta = object_at(value, "metadata").unwrap_or(&empty);
    let spec = object_at(value, "spec").unwrap_or(&empty);
    let versions = object_at(&Value::Object(spec.clone()), "versions").cloned();
    let runtime = spec.get("containerRuntime").and_then(Value::as_object);
    let mut extra = Vec::new();
    unknown(top, TOP, "", &mut extra);
    unknown(meta, META, ".metadata", &mut extra);
    unknown(spec, SPEC, ".spec", &mut extra);
    if let Some(v) = &versions {
        unknown(v, VERSIONS, ".spec.versions", &mut extra);
    }
    if let Some(r) = runtime {
        unknown(r, RUNTIME, ".spec.containerRuntime", &mut extra);
    }
    let mut warnings = Vec::new();
    if !extra.is_empty() {
        match FieldValidation::parse(p.field_validation.as_deref())? {
            FieldValidation::Strict => return Err(KubeError::strict_decoding(&MACHINES, &extra)),
            FieldValidation::Warn => {
                warnings.extend(extra.iter().map(|f| format!("unknown field \"{f}\"")))
            }
            FieldValidation::Ignore => {}
        }
    }
    if p.field_manager.as_deref() != Some("kubectl-client-side-apply") {
        refuse_resource_version(value)?;
    }
    let mut causes = Vec::new();
    let name = string_at(meta, "name", "metadata.name", &mut causes).unwrap_or("");
    let generate = string_at(meta, "generateName", "metadata.generateName", &mut causes);
    let labels = object_at(&Value::Object(meta.clone()), "labels").cloned();
    let label = |key: &str, causes: &mut Vec<Cause>| -> String {
        let field = format!("metadata.labels[{key}]");
        match labels
            .as_ref()
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
        {
            Some(v) if !v.is_empty() => v.to_string(),
            _ => {
                causes.push(Cause::required(
                    field,
                    "a machine names its cluster and node group by these labels",
                ));
                String::new()
            }
        }
    };
    let cluster = label(CLUSTER_LABEL, &mut causes);
    let nodegroup = label(NODEGROUP_LABEL, &mut causes);
    let kubelet = versions
        .as_ref()
        .and_then(|v| string_at(v, "kubelet", "spec.versions.kubelet", &mut causes))
        .and_then(|k| match KubeVersion::parse(k) {
            Ok(k) => Some(k),
            Err(e) => {
                causes.push(Cause::invalid("spec.versions.kubelet", k, &e.0));
                None
            }
        });
    let container_runtime = runtime.and_then(|r| {
        let name = string_at(r, "name", "spec.containerRuntime.name", &mut causes);
        let version = string_at(r, "version", "spec.containerRuntime.version", &mut causes);
        match name {
            Some(n) if !n.is_empty() => Some(ContainerRuntime {
                name: n.to_string(),
                version: version.map(str::to_string),
            }),
            _ => {
                causes.push(Cause::required(
                    "spec.containerRuntime.name",
                    "a container runtime has a name",
                ));
                None
            }
        }
    });
    let os_image = string_at(spec, "osImage", "spec.osImage", &mut causes).map(str::to_string);
    let object_name = if name.is_empty() {
        match generate.filter(|g| !g.is_empty()) {
            Some(g) => Err(g.to_string()),
            None => {
                causes.push(Cause::required(
                    "metadata.name",
                    "name or generateName is required",
                ));
                Ok(String::new())
            }
        }
    } else {
        Ok(name.to_string())
    };
    if !causes.is_empty() {
        return Err(KubeError::invalid(&MACHINES, name, causes));
    }
    let mut spec = spec.clone();
    if let Some(cp) = versions.as_ref().and_then(|v| v.get("controlPlane")) {
        spec.insert("controlPlane".into(), cp.clone());
    }
    Ok(Asked {
        name: object_name,
        cluster,
        nodegroup,
        request: MachineRequest {
            name: None,
            kubelet,
            container_runtime,
            os_image,
        },
        spec,
        warnings,
    })
}

/// The object name and the machine's own name: `<cluster>-<machine name>`, the machine's name a
/// Kubernetes object name.
fn names(asked: &Asked, annotation: Option<&str>) -> Result<(String, MachineName), KubeError> {
    let prefix = format!("{}-", asked.cluster);
    let object = match &asked.name {
        Ok(name) => name.clone(),
        Err(generate) if generate.starts_with(&prefix) => validation::generate_name(generate),
        Err(generate) => validation::generate_name(&format!("{prefix}{generate}")),
    };
    let Some(rest) = object.strip_prefix(&prefix).filter(|r| !r.is_empty()) else {
        return Err(KubeError::invalid(
            &MACHINES,
            &object,
            vec![Cause::invalid(
                "metadata.name",
                &object,
                &format!(
                    "a machine of cluster {} is named {prefix}<machine name>",
                    asked.cluster
                ),
            )],
        ));
    };
    let machine_name = MachineName::parse(rest).map_err(|e| {
        KubeError::invalid(
            &MACHINES,
            &object,
            vec![Cause::invalid("metadata.name", &object, &e)],
        )
    })?;
    if let Some(a) = annotation.filter(|a| *a != machine_name.as_str()) {
        return Err(KubeError::invalid(
            &MACHINES,
            &object,
            vec![Cause::invalid(
                format!("metadata.annotations[{MACHINE_NAME_ANNOTATION}]"),
                a,
                "the machine's name is the object's name without its cluster's prefix",
            )],
        ));
    }
    Ok((object, machine_name))
}

/// A spec field the node group owns, set to something else than the group's: refused.
fn check_group_owned(
    asked: &Asked,
    served: &Value,
    object: &str,
    role_is_master: bool,
) -> Result<(), KubeError> {
    let blank = |v: &Value| match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    };
    let mut causes = Vec::new();
    for key in GROUP_OWNED {
        let Some(given) = asked.spec.get(*key) else {
            continue;
        };
        let own = served.get(*key).cloned().unwrap_or(Value::Null);
        if !(given == &own || blank(given) && blank(&own)) {
            causes.push(Cause::forbidden(
                format!("spec.{key}"),
                "a machine has its node group's; change the node group instead",
            ));
        }
    }
    if let Some(cp) = asked.spec.get("controlPlane") {
        let own = served["versions"]
            .get("controlPlane")
            .cloned()
            .unwrap_or(Value::Null);
        if !role_is_master && !blank(cp) {
            causes.push(Cause::forbidden(
                "spec.versions.controlPlane",
                "a worker machine has no control plane version",
            ));
        } else if cp != &own && !blank(cp) {
            causes.push(Cause::forbidden(
                "spec.versions.controlPlane",
                "a master machine runs its node group's control plane version",
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(KubeError::invalid(&MACHINES, object, causes))
    }
}

/// Who made the object, as its `metadata.managedFields` record it: a create's `Update` entry
/// (on the entries the body sent), or a server-side apply's entries.
pub(super) enum Creator {
    Create(Sent),
    Apply(ManagedFields),
}

/// The request annotations a new object keeps (the string ones; they ask for nothing).
fn kept_requests(value: &Value) -> BTreeMap<String, String> {
    value["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| requests::is_request(k))
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect()
}

#[tracing::instrument(name = "machines.create", skip_all, fields(namespace = %path))]
pub(super) async fn create(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let namespace = path.into_inner();
    let (rule, verb) = MACHINE_CREATE.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINES, &namespace)?;
    let p = params(&req)?;
    let dry = dry_run(&p, &CREATE_OPTIONS)?;
    let value = json_of(&req, &body)?;
    let sent = Sent::read(value["metadata"].get("managedFields"));
    make(
        &req,
        (&ctx, &state),
        &p,
        (&namespace, &value),
        dry,
        Creator::Create(sent),
    )
    .await
}

/// Makes the machine `value` describes in `namespace`, recorded as made by `creator` (on a
/// dry run, checks it and writes nothing): 201 with the object. A `POST` and a server-side
/// apply of a missing name make a machine through this one path.
pub(super) async fn make(
    req: &HttpRequest,
    (ctx, state): (&RequestContext, &AppState),
    p: &Params,
    (namespace, value): (&str, &Value),
    dry: bool,
    creator: Creator,
) -> Result<HttpResponse, KubeError> {
    let (rule, _) = MACHINE_CREATE.pair();
    let asked = read(value, namespace, p)?;
    let kept = kept_requests(value);
    let annotation = value["metadata"]["annotations"][MACHINE_NAME_ANNOTATION].as_str();
    let (object, machine_name) = names(&asked, annotation)?;
    let label_cause = |key: &str, value: &str, what: &str| {
        KubeError::invalid(
            &MACHINES,
            &object,
            vec![Cause::invalid(
                format!("metadata.labels[{key}]"),
                value,
                &format!("no {what} of that name in namespace {namespace}"),
            )],
        )
    };
    let answer = retry::until_committed(async || {
        if listing::find(state, namespace, &object).await?.is_some() {
            return Err(KubeError::already_exists(&MACHINES, &object));
        }
        let c = state
            .store
            .registry_get(namespace, &asked.cluster)
            .await?
            .ok_or_else(|| label_cause(CLUSTER_LABEL, &asked.cluster, "cluster"))?
            .cluster;
        ctx.authorize(rule, &cluster_target(&c))?;
        let ng = lookup::nodegroup(state, ctx, &c, &asked.nodegroup)
            .await
            .map_err(|_| {
                label_cause(
                    NODEGROUP_LABEL,
                    &asked.nodegroup,
                    "node group of the cluster",
                )
            })?;
        let mut request = asked.request.clone();
        request.name = Some(machine_name.clone());
        let (mut writes, new) = machine_create_writes(state, ctx, &c, &ng, &request).await?;
        let rv = state.store.registry_bounds().await?.0;
        let mut preview = MachineEntry {
            machine: new.provisional(crate::store::sql::now()),
            cluster_name: asked.cluster.clone(),
            nodegroup_name: ng.name.clone(),
            resource_version: rv,
            managed_fields: Default::default(),
            annotations: kept.clone(),
        };
        let shown = serde_json::to_value(machine(&preview)).map_err(KubeError::internal)?;
        check_group_owned(
            &asked,
            &shown["spec"],
            &object,
            new.role.as_str() == "master",
        )?;
        // The creating manager's entry (on the entries the body carried, if any), or the
        // apply's entries.
        let fields = match &creator {
            Creator::Create(sent) => crate::api::kube::managed_writes::created(
                &owners::MACHINE,
                req,
                p,
                &shown,
                sent.clone(),
            )?,
            Creator::Apply(fields) => fields.clone(),
        };
        for w in writes.iter_mut() {
            if let Write::InsertMachine(m) = w {
                m.managed_fields = fields.clone();
                m.annotations = kept.clone();
            }
        }
        preview.managed_fields = fields;
        if dry {
            return Ok(Attempt::Done(machine(&preview)));
        }
        match state.store.commit(&writes).await {
            Ok(()) => {}
            Err(StoreError::Stale) => return Ok(Attempt::Retry),
            Err(e) if e.is_constraint(NAME_TAKEN) => {
                return Err(KubeError::already_exists(&MACHINES, &object))
            }
            Err(e) => return Err(e.into()),
        }
        let e = listing::find(state, namespace, &object)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINES, &object))?;
        Ok(Attempt::Done(machine(&e)))
    })
    .await?;
    Ok(with_warnings(
        json_response(StatusCode::CREATED, &answer),
        &asked.warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(body: Value) -> Result<Asked, KubeError> {
        read(&body, "p", &Params::default())
    }

    fn machine_body(name: &str) -> Value {
        json!({
            "apiVersion": "cluster.k8s.io/v1alpha1", "kind": "Machine",
            "metadata": {"name": name, "labels": {
                CLUSTER_LABEL: "prod", NODEGROUP_LABEL: "default-worker"}},
            "spec": {"versions": {"kubelet": "1.31.4"},
                     "containerRuntime": {"name": "containerd", "version": "1.7.22"}}
        })
    }

    #[test]
    fn a_machine_body_names_its_cluster_group_and_machine() {
        let a = asked(machine_body("prod-gpu-1")).expect("valid");
        assert_eq!(
            (a.cluster.as_str(), a.nodegroup.as_str()),
            ("prod", "default-worker")
        );
        assert_eq!(
            a.request
                .kubelet
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some("v1.31.4")
        );
        let (object, name) = names(&a, None).expect("named");
        assert_eq!((object.as_str(), name.as_str()), ("prod-gpu-1", "gpu-1"));
        assert!(names(&a, Some("other")).is_err());
    }

    #[test]
    fn a_generated_name_gets_the_clusters_prefix() {
        let mut body = machine_body("");
        body["metadata"]["generateName"] = json!("gpu-");
        let a = asked(body).expect("valid");
        let (object, name) = names(&a, None).expect("generated");
        assert!(object.starts_with("prod-gpu-"), "{object}");
        assert_eq!(name.as_str().len(), "gpu-".len() + 5);
    }

    #[test]
    fn bad_fields_are_causes_of_one_invalid() {
        let body = json!({
            "metadata": {"name": "prod-x", "labels": {CLUSTER_LABEL: "prod"}},
            "spec": {"versions": {"kubelet": "1.31"}, "containerRuntime": {"version": "1"}}
        });
        let Err(KubeError::Invalid { causes, .. }) = asked(body) else {
            panic!("an Invalid");
        };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.labels[fleetyard.openstack.org/nodegroup]",
                "spec.versions.kubelet",
                "spec.containerRuntime.name"
            ]
        );
        let a = asked(machine_body("other-x")).expect("read");
        assert!(matches!(names(&a, None), Err(KubeError::Invalid { .. })));
    }

    #[test]
    fn unknown_fields_are_refused_when_strict() {
        let mut body = machine_body("prod-x");
        body["spec"]["gpu"] = json!(true);
        let p = Params {
            field_validation: Some("Strict".into()),
            ..Params::default()
        };
        let err = read(&body, "p", &p).err().expect("strict");
        assert!(
            err.to_string().contains("unknown field \".spec.gpu\""),
            "{err}"
        );
        let a = asked(body).expect("warned");
        assert_eq!(a.warnings, ["unknown field \".spec.gpu\""]);
    }
}
