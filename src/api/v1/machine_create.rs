//! The create of one machine in a node group: `POST /v1/clusters/{cluster_ident}/nodegroups/
//! {nodegroup_ident}/machines` (microversion 1.20) and `kubectl create` of a `Machine` make the
//! same writes. The group grows by one: it is a resize of the group to one node more whose
//! new machine is the one asked for, with the machine's own create notification.

use std::collections::BTreeSet;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Map, Value};

use super::cluster_actions::{check_resize, resize_writes, NodeCountChange};
use super::lookup::{self, cluster_target as target, driver_for, nodegroups_of, template_of};
use super::views::MachineView;
use crate::api::http::body::{invalid, json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::MACHINE_WRITES;
use crate::api::http::retry::{self, Attempt};
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::machine::count::{next_names, MachineTemplate};
use crate::domain::machine::create::{control_plane_version, MachineRequest, NewMachine};
use crate::domain::machine::{ContainerRuntime, KubeVersion, MachineName};
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write};

/// The constraint a name taken in the cluster breaks.
pub(crate) const NAME_TAKEN: &str = "uniq_machine0cluster_id0name";

/// Name candidates tried before a generated name gives up.
const NAME_ROUNDS: usize = 8;

/// Magnum's 409 for a machine name taken in the cluster.
pub(crate) fn name_taken(name: &str, c: &Cluster) -> ApiError {
    ApiError::conflict(format!(
        "A machine with name {name} already exists in the cluster {}.",
        c.name
    ))
}

/// A create body: `name`, `versions.kubelet`, `container_runtime` (`name`, `version`) and
/// `os_image`, the keys a machine's body shows; any other attribute is a 400.
pub(crate) fn parse_request(obj: Map<String, Value>) -> Result<MachineRequest, ApiError> {
    let mut f = Fields::new("machine", obj);
    let name = f
        .string("name", 1, 253)?
        .map(|n| MachineName::parse(&n).map_err(ApiError::BadRequest))
        .transpose()?;
    let kubelet = match f.value("versions") {
        None => None,
        Some(Value::Object(versions)) => {
            let mut v = Fields::new("versions", versions);
            let kubelet = v
                .string("kubelet", 1, 64)?
                .map(|k| KubeVersion::parse(&k).map_err(|e| ApiError::BadRequest(e.0)))
                .transpose()?;
            v.finish()?;
            kubelet
        }
        Some(other) => return Err(invalid("versions", &other, "Value should be an object.")),
    };
    let container_runtime = match f.value("container_runtime") {
        None => None,
        Some(Value::Object(runtime)) => {
            let mut r = Fields::new("container_runtime", runtime);
            let parsed = ContainerRuntime {
                name: r.required_string("name", 1, 255)?,
                version: r.string("version", 1, 255)?,
            };
            r.finish()?;
            Some(parsed)
        }
        Some(other) => {
            return Err(invalid(
                "container_runtime",
                &other,
                "Value should be an object.",
            ))
        }
    };
    let os_image = f.string("os_image", 1, 255)?;
    f.finish()?;
    Ok(MachineRequest {
        name,
        kubelet,
        container_runtime,
        os_image,
    })
}

/// The writes that create the machine `request` asks for in node group `ng` of cluster `c`,
/// with the machine they insert. Refused, changing nothing: a group being worked on (409), a
/// group at its `max_node_count` or at the service's node limit (the resize's 400), a cluster
/// in a state no resize is accepted in (409), a name taken in the cluster (409), a kubelet
/// outside the skew policy of the cluster's control plane (400).
pub(crate) async fn machine_create_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    ng: &NodeGroup,
    request: &MachineRequest,
) -> Result<(Vec<Write>, NewMachine), ApiError> {
    let ngs = nodegroups_of(state, c).await?;
    let ng = ngs
        .iter()
        .find(|n| n.uuid == ng.uuid)
        .ok_or_else(|| lookup::nodegroup_not_found(&ng.name))?;
    if ng.status.is_in_progress() {
        return Err(ApiError::conflict(format!(
            "Creating a machine in node group {} when its status is \"{}\" is not supported.",
            ng.name, ng.status
        )));
    }
    let node_count = ng.node_count.saturating_add(1);
    if node_count > state.node_limit() {
        return Err(ApiError::bad_request(format!(
            "Node group {} has the most nodes a node group may have ({}).",
            ng.name,
            state.node_limit()
        )));
    }
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    check_resize(c, ng, node_count, driver.as_ref())?;
    let tmpl = MachineTemplate::of_nodegroup(ng);
    let name = match &request.name {
        Some(name) => {
            if name_in_use(state, c, name).await? {
                return Err(name_taken(name.as_str(), c));
            }
            name.clone()
        }
        None => free_name(state, c, &tmpl).await?,
    };
    let master = ngs.iter().find(|n| n.is_master());
    let control_plane = control_plane_version(&[
        c.coe_version.as_deref(),
        master.and_then(|m| m.version.as_deref()),
        c.labels.get("kube_tag").map(String::as_str),
        template.spec.labels.get("kube_tag").map(String::as_str),
    ]);
    let new = NewMachine::new(&tmpl, name, request, control_plane.as_ref())
        .map_err(ApiError::BadRequest)?;
    let change = NodeCountChange {
        nodegroup: ng,
        node_count,
        nodes_to_remove: Vec::new(),
        remove: Vec::new(),
    };
    let mut writes = resize_writes(state, ctx, c, &ngs, change, driver.name());
    // The machine first, then the count: the group's machines follow its count, and with
    // this one inserted they are already there, so no other is made.
    let at = writes
        .iter()
        .position(|w| matches!(w, Write::UpdateNodeGroup(_)))
        .unwrap_or(0);
    writes.insert(at, Write::InsertMachine(Box::new(new.clone())));
    writes.push(Write::event(events::machine_event(
        &state.settings.default.host,
        Action::Create,
        Outcome::Pending,
        &new.provisional(crate::store::sql::now()),
        Some(&initiator(ctx)),
    )));
    Ok((writes, new))
}

/// Whether a machine of the cluster has this name.
async fn name_in_use(state: &AppState, c: &Cluster, name: &MachineName) -> Result<bool, ApiError> {
    match state.store.get_machine(&c.uuid, name.as_str()).await {
        Ok(m) => Ok(m.name == *name),
        Err(StoreError::NotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The group's next machine name (`<group>-<n>`, lowest free `n`) that no machine of the
/// cluster has.
async fn free_name(
    state: &AppState,
    c: &Cluster,
    tmpl: &MachineTemplate,
) -> Result<MachineName, ApiError> {
    let mut taken: BTreeSet<String> = state
        .store
        .nodegroup_machines(&tmpl.nodegroup)
        .await?
        .into_iter()
        .map(|m| m.name.to_string())
        .collect();
    for _ in 0..NAME_ROUNDS {
        let Some(name) = next_names(tmpl, &taken, 1).into_iter().next() else {
            break;
        };
        if !name_in_use(state, c, &name).await? {
            return Ok(name);
        }
        taken.insert(name.to_string());
    }
    Err(ApiError::conflict(format!(
        "No free machine name was found in node group {}; name the machine.",
        tmpl.nodegroup_name
    )))
}

/// Commits a create's writes: a lost race is tried again, a name taken meanwhile is the 409.
pub(crate) async fn commit_create(
    state: &AppState,
    c: &Cluster,
    writes: &[Write],
    new: &NewMachine,
) -> Result<Attempt<()>, ApiError> {
    match state.store.commit(writes).await {
        Ok(()) => Ok(Attempt::Done(())),
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) if e.is_constraint(NAME_TAKEN) => Err(name_taken(new.name.as_str(), c)),
        Err(e) => Err(e.into()),
    }
}

/// `POST /v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines`: 202 with the
/// new machine (`Pending`, its group `UPDATE_IN_PROGRESS` one node larger) and its `Location`;
/// the machine runs when the driver is done.
#[tracing::instrument(name = "machines.create", skip_all, fields(project = %ctx.project_id, cluster = %path.0, nodegroup = %path.1))]
pub(super) async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    if ctx.version < MACHINE_WRITES {
        return Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE));
    }
    query_params(&req, &[])?;
    let (cluster_ident, nodegroup_ident) = path.into_inner();
    let request = parse_request(json_object(&req, &body, "machine")?)?;
    let (c, new) = retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &cluster_ident, false).await?;
        ctx.authorize("machine:create", &target(&c))?;
        let ng = lookup::nodegroup(&state, &ctx, &c, &nodegroup_ident).await?;
        let (writes, new) = machine_create_writes(&state, &ctx, &c, &ng, &request).await?;
        Ok::<_, ApiError>(match commit_create(&state, &c, &writes, &new).await? {
            Attempt::Done(()) => Attempt::Done((c, new)),
            Attempt::Retry => Attempt::Retry,
        })
    })
    .await?;
    let m = state
        .store
        .get_machine(&c.uuid, &new.uuid.to_string())
        .await?;
    let base = app_url(&req);
    Ok(HttpResponse::Accepted()
        .insert_header((
            header::LOCATION,
            format!("{base}/v1/clusters/{}/machines/{}", c.uuid, m.uuid),
        ))
        .json(MachineView::new(&base, &m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<MachineRequest, ApiError> {
        match v {
            Value::Object(m) => parse_request(m),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn a_create_body_is_parsed_into_typed_values() {
        let r = parse(json!({
            "name": "gpu-1",
            "versions": {"kubelet": "1.31.4"},
            "container_runtime": {"name": "containerd", "version": "1.7.22"},
            "os_image": "ubuntu-24.04"
        }))
        .expect("valid");
        assert_eq!(r.name.map(|n| n.to_string()).as_deref(), Some("gpu-1"));
        assert_eq!(r.kubelet.map(|k| k.to_string()).as_deref(), Some("v1.31.4"));
        assert_eq!(r.os_image.as_deref(), Some("ubuntu-24.04"));
        assert_eq!(parse(json!({})).expect("empty"), MachineRequest::default());
    }

    #[test]
    fn bad_create_bodies_are_refused_with_a_sentence() {
        let cases = [
            (
                json!({"flavor": "m1"}),
                "Unknown attribute for argument machine: flavor",
            ),
            (
                json!({"versions": {"control_plane": "v1.31.0"}}),
                "Unknown attribute for argument versions: control_plane",
            ),
            (
                json!({"name": "Bad_Name"}),
                "Invalid machine name 'Bad_Name'",
            ),
            (
                json!({"versions": {"kubelet": "1.31"}}),
                "Invalid Kubernetes version '1.31'",
            ),
            (
                json!({"container_runtime": {"version": "1"}}),
                "Invalid input for field/attribute name. Value: 'None'. Mandatory field missing.",
            ),
            (
                json!({"versions": "v1.31.4"}),
                "Invalid input for field/attribute versions.",
            ),
        ];
        for (body, want) in cases {
            let err = parse(body.clone()).expect_err("refused").to_string();
            assert!(err.starts_with(want), "{body}: {err}");
        }
    }
}
