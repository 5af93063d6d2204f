//! One machine's changes (microversion 1.20): `PATCH /v1/clusters/{c}/machines/{m}` (Magnum's
//! JSON-patch dialect over the machine's kubelet version, container runtime and OS image) and
//! `POST …/machines/{m}/actions/replace|reboot`. Each is checked whole before anything is
//! written (the paths, the version-skew rules against the cluster's control plane, a machine
//! already busy, the driver's plan), then one transaction writes the machine `Provisioning`,
//! its job and its `magnum.machine.update` notification; the answer is 202 with the machine.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::lookup::{self, cluster_target as target, driver_for, nodegroups_of, template_of};
use super::patch::{self, Op, PatchOp, PatchRules};
use super::views::MachineView;
use crate::api::http::body::{json_body, query_params};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::microversion::MACHINE_WRITES;
use crate::api::http::retry::{self, Attempt};
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::Cluster;
use crate::domain::job::JobPayload;
use crate::domain::machine::{
    check_kubelet_skew, ChangeMode, ContainerRuntime, KubeVersion, Machine, MachinePhase,
    MachineSpec,
};
use crate::drivers::MachineAction;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{StoreError, Write};

/// The paths of a machine's spec a patch may change.
pub const PATCH_PATHS: &[&str] = &[
    "/versions/kubelet",
    "/container_runtime/name",
    "/container_runtime/version",
    "/os_image",
];

const PATCH_RULES: PatchRules = PatchRules {
    internal: &[],
    non_removable: &[],
    literal: &[],
};

/// Machine writes exist from microversion 1.20; below it the routes answer 406 with the
/// empty framework body.
fn require_version(ctx: &RequestContext) -> Result<(), ApiError> {
    if ctx.version >= MACHINE_WRITES {
        Ok(())
    } else {
        Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE))
    }
}

/// What a machine patch asks for, parsed: each field it sets, in the order given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MachineChange {
    pub kubelet: Option<KubeVersion>,
    pub runtime_name: Option<String>,
    pub runtime_version: Option<String>,
    pub os_image: Option<String>,
}

impl MachineChange {
    /// The change a patch describes: `add` or `replace` of a non-empty string on one of
    /// [`PATCH_PATHS`]; any other path, a removal or another value is a 400 naming it.
    pub fn parse(ops: &[PatchOp]) -> Result<MachineChange, ApiError> {
        let mut change = MachineChange::default();
        for op in ops {
            let path = op.path.as_str();
            if !PATCH_PATHS.contains(&path) {
                return Err(ApiError::bad_request(format!(
                    "'{path}' cannot be changed on a machine: a patch may change {}.",
                    PATCH_PATHS.join(", ")
                )));
            }
            if op.op == Op::Remove {
                return Err(ApiError::bad_request(format!(
                    "'{path}' cannot be removed from a machine; replace it instead."
                )));
            }
            let text = match &op.value {
                Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "Invalid value for '{path}': {}. Value should be a non-empty string.",
                        other
                            .as_ref()
                            .map(crate::api::http::body::shown)
                            .unwrap_or_else(|| "None".into())
                    )))
                }
            };
            match path {
                "/versions/kubelet" => {
                    change.kubelet =
                        Some(KubeVersion::parse(&text).map_err(|e| ApiError::bad_request(e.0))?)
                }
                "/container_runtime/name" => change.runtime_name = Some(text),
                "/container_runtime/version" => change.runtime_version = Some(text),
                _ => change.os_image = Some(text),
            }
        }
        Ok(change)
    }

    /// The machine's spec with the change applied.
    pub fn apply(&self, spec: &MachineSpec) -> Result<MachineSpec, ApiError> {
        let mut next = spec.clone();
        if let Some(k) = &self.kubelet {
            next.versions.kubelet = Some(k.clone());
        }
        if self.runtime_name.is_some() || self.runtime_version.is_some() {
            let mut runtime = next.container_runtime.take().unwrap_or(ContainerRuntime {
                name: String::new(),
                version: None,
            });
            if let Some(name) = &self.runtime_name {
                runtime.name = name.clone();
            }
            if let Some(version) = &self.runtime_version {
                runtime.version = Some(version.clone());
            }
            if runtime.name.is_empty() {
                return Err(ApiError::bad_request(
                    "The machine names no container runtime: set /container_runtime/name with \
                     its version.",
                ));
            }
            next.container_runtime = Some(runtime);
        }
        if let Some(image) = &self.os_image {
            next.os_image = Some(image.clone());
        }
        Ok(next)
    }
}

/// The version the cluster's control plane runs: the cluster's `coe_version`, else its master
/// node group's version.
async fn control_plane_version(
    state: &AppState,
    c: &Cluster,
) -> Result<Option<KubeVersion>, ApiError> {
    if let Some(v) = c
        .coe_version
        .as_deref()
        .and_then(|v| KubeVersion::parse(v).ok())
    {
        return Ok(Some(v));
    }
    let ngs = nodegroups_of(state, c).await?;
    Ok(ngs
        .iter()
        .filter(|n| n.role == crate::domain::cluster::ROLE_MASTER)
        .filter_map(|n| n.version.as_deref())
        .find_map(|v| KubeVersion::parse(v).ok()))
}

/// The kubelet version `next` asks for, held to the skew rules against the control plane.
async fn check_skew(state: &AppState, c: &Cluster, kubelet: &KubeVersion) -> Result<(), ApiError> {
    let Some(cp) = control_plane_version(state, c).await? else {
        return Err(ApiError::bad_request(format!(
            "The control plane version of cluster {} is not known yet, so kubelet version \
             {kubelet} cannot be checked against it; try again once the cluster reports it.",
            c.name
        )));
    };
    check_kubelet_skew(kubelet, &cp).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Magnum's 409 for a machine that cannot take an operation now: being deleted, busy with
/// another operation, or in a cluster that is.
fn refuse_if_busy(c: &Cluster, m: &Machine) -> Result<(), ApiError> {
    match m.status.phase {
        MachinePhase::Deleting => Err(ApiError::conflict(format!(
            "Machine {} is being deleted.",
            m.name
        ))),
        MachinePhase::Pending | MachinePhase::Provisioning => Err(ApiError::conflict(format!(
            "Machine {} has an operation in progress (it is {}); try again when it is done.",
            m.name, m.status.phase
        ))),
        MachinePhase::Running | MachinePhase::Failed if c.status.is_in_progress() => {
            Err(ApiError::conflict(format!(
                "Cluster {} is {}; a machine's operation waits until it is done.",
                c.name, c.status
            )))
        }
        MachinePhase::Running | MachinePhase::Failed => Ok(()),
    }
}

/// Magnum's 404 for a machine.
fn machine_not_found(ident: &str) -> ApiError {
    ApiError::not_found(format!("Machine {ident} could not be found."))
}

/// The cluster and machine a request names, that the caller may change (`rule`).
async fn target_machine(
    state: &AppState,
    ctx: &RequestContext,
    rule: &str,
    cluster_ident: &str,
    machine_ident: &str,
) -> Result<(Cluster, Machine), ApiError> {
    let c = lookup::cluster(state, ctx, cluster_ident, false).await?;
    ctx.authorize(rule, &target(&c))?;
    match state.store.get_machine(&c.uuid, machine_ident).await {
        Ok(m) if ctx.is_admin || m.project_id == ctx.project_id => Ok((c, m)),
        Ok(_) | Err(StoreError::NotFound) => Err(machine_not_found(machine_ident)),
        Err(e) => Err(e.into()),
    }
}

/// The writes that start `payload` on machine `next` (its spec as it will be): the machine
/// `Provisioning`, its job and its pending `magnum.machine.update`.
fn start_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    next: &Machine,
    payload: JobPayload,
    driver: &str,
) -> Vec<Write> {
    let mut next = next.clone();
    next.status.phase = MachinePhase::Provisioning;
    next.status.error_reason = None;
    next.status.error_message = None;
    vec![
        Write::UpdateMachine {
            machine: Box::new(next.clone()),
            from: vec![MachinePhase::Running, MachinePhase::Failed],
        },
        Write::job(state.job(payload, c.uuid, driver)),
        Write::event(events::machine_event(
            &state.settings.default.host,
            Action::Update,
            Outcome::Pending,
            &next,
            Some(&initiator(ctx)),
        )),
    ]
}

/// Commits the writes and answers 202 with the machine as stored.
async fn accept(
    state: &AppState,
    req: &HttpRequest,
    c: &Cluster,
    m: &Machine,
    writes: &[Write],
) -> Result<Attempt<HttpResponse>, ApiError> {
    match state.store.commit(writes).await {
        Ok(()) => {
            let stored = state
                .store
                .get_machine(&c.uuid, &m.uuid.to_string())
                .await?;
            Ok(Attempt::Done(
                HttpResponse::Accepted().json(MachineView::new(&app_url(req), &stored)),
            ))
        }
        Err(StoreError::Stale) => Ok(Attempt::Retry),
        Err(e) => Err(e.into()),
    }
}

/// `PATCH /v1/clusters/{cluster_ident}/machines/{machine_ident}`: 202 once the change is
/// accepted; the machine runs it when the driver is done, in place or by replacement as the
/// driver planned. The same spec again is a 202 that changes nothing, except on a `Failed`
/// machine, where the change runs again by replacement.
#[tracing::instrument(name = "machines.update", skip_all, fields(project = %ctx.project_id, cluster = %path.0, machine = %path.1))]
pub async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    let (cluster_ident, machine_ident) = path.into_inner();
    let ops = patch::parse_patch(json_body(&req, &body)?, &PATCH_RULES)?;
    let change = MachineChange::parse(&ops)?;
    retry::until_committed(async || {
        let (c, m) = target_machine(
            &state,
            &ctx,
            "machine:update",
            &cluster_ident,
            &machine_ident,
        )
        .await?;
        match change_writes(&state, &ctx, &c, &m, &change).await? {
            None => Ok(Attempt::Done(
                HttpResponse::Accepted().json(MachineView::new(&app_url(&req), &m)),
            )),
            Some(writes) => accept(&state, &req, &c, &m, &writes).await,
        }
    })
    .await
}

/// The writes that make `change` on machine `m` of cluster `c`, checked whole before anything
/// is written: the machine not busy, the version-skew rules, the spec's own rules and the
/// driver's plan (in place or by replacement). `None` when the change leaves the spec as it is
/// (then nothing is to be written), except on a `Failed` machine, where the same spec again
/// runs the change again, by replacement. The `/v1` PATCH and the Kubernetes face's update,
/// patch and apply of a `Machine` make their changes through this one operation.
pub async fn change_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    m: &Machine,
    change: &MachineChange,
) -> Result<Option<Vec<Write>>, ApiError> {
    refuse_if_busy(c, m)?;
    let spec = change.apply(&m.spec)?;
    // The same spec again changes nothing, except on a failed machine, where it is the way
    // forward: the change runs again.
    let again = spec == m.spec && m.status.phase == MachinePhase::Failed;
    if spec == m.spec && !again {
        return Ok(None);
    }
    if let Some(kubelet) = &change.kubelet {
        check_skew(state, c, kubelet).await?;
    }
    let mut next = m.clone();
    next.spec = spec;
    next.spec.check(m.role).map_err(ApiError::bad_request)?;
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    let planned = driver
        .plan_machine_change(m, &next.spec)
        .map_err(ApiError::bad_request)?;
    // A failed machine's node is in no known state: a new node takes its place.
    let mode = if again { ChangeMode::Replace } else { planned };
    let payload = JobPayload::MachineUpdate {
        machine: m.uuid,
        mode,
    };
    Ok(Some(start_writes(
        state,
        ctx,
        c,
        &next,
        payload,
        driver.name(),
    )))
}

/// The body of an action: `{}` (or nothing).
fn empty_action_body(
    req: &HttpRequest,
    body: &Bytes,
    action: MachineAction,
) -> Result<(), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    match json_body(req, body)? {
        Value::Object(m) => match m.keys().next() {
            None => Ok(()),
            Some(k) => Err(ApiError::bad_request(format!(
                "Unknown attribute for argument {}: {k}",
                action.as_str()
            ))),
        },
        _ => Err(ApiError::bad_request(format!(
            "Invalid input for argument {}: the request body must be a JSON object.",
            action.as_str()
        ))),
    }
}

async fn act(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
    action: MachineAction,
) -> Result<HttpResponse, ApiError> {
    require_version(&ctx)?;
    query_params(&req, &[])?;
    empty_action_body(&req, &body, action)?;
    let (cluster_ident, machine_ident) = path.into_inner();
    let rule = action_rule(action);
    retry::until_committed(async || {
        let (c, m) = target_machine(&state, &ctx, rule, &cluster_ident, &machine_ident).await?;
        let writes = action_writes(&state, &ctx, &c, &m, action).await?;
        accept(&state, &req, &c, &m, &writes).await
    })
    .await
}

/// The policy rule of an action.
pub fn action_rule(action: MachineAction) -> &'static str {
    match action {
        MachineAction::Replace => "machine:replace",
        MachineAction::Reboot => "machine:reboot",
    }
}

/// The writes that start `action` on machine `m` of cluster `c`, checked first: the machine
/// and its cluster not busy (409), the driver able to (its sentence, 400). The `/v1` actions
/// and the Kubernetes face's request annotations start an action through this one operation.
pub async fn action_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    m: &Machine,
    action: MachineAction,
) -> Result<Vec<Write>, ApiError> {
    refuse_if_busy(c, m)?;
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    driver
        .check_machine_action(m, action)
        .map_err(ApiError::bad_request)?;
    let payload = match action {
        MachineAction::Replace => JobPayload::MachineReplace { machine: m.uuid },
        MachineAction::Reboot => JobPayload::MachineReboot { machine: m.uuid },
    };
    Ok(start_writes(state, ctx, c, m, payload, driver.name()))
}

/// `POST …/machines/{machine_ident}/actions/replace`: a new machine first, then the old one
/// goes; 202 with the machine `Provisioning`.
#[tracing::instrument(name = "machines.replace", skip_all, fields(project = %ctx.project_id, cluster = %path.0, machine = %path.1))]
pub async fn replace(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    act(req, ctx, state, path, body, MachineAction::Replace).await
}

/// `POST …/machines/{machine_ident}/actions/reboot`: 202 with the machine `Provisioning`.
#[tracing::instrument(name = "machines.reboot", skip_all, fields(project = %ctx.project_id, cluster = %path.0, machine = %path.1))]
pub async fn reboot(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    act(req, ctx, state, path, body, MachineAction::Reboot).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(body: Value) -> Vec<PatchOp> {
        patch::parse_patch(body, &PATCH_RULES).expect("a patch")
    }

    fn detail(e: ApiError) -> String {
        e.to_string()
    }

    #[test]
    fn a_patch_sets_the_kubelet_runtime_and_image() {
        let change = MachineChange::parse(&ops(json!([
            {"op": "replace", "path": "/versions/kubelet", "value": "1.31.5"},
            {"op": "add", "path": "/container_runtime/name", "value": "containerd"},
            {"op": "replace", "path": "/container_runtime/version", "value": "1.7.22"},
            {"op": "replace", "path": "/os_image", "value": "ubuntu-24.04"},
        ])))
        .expect("valid");
        let next = change.apply(&MachineSpec::default()).expect("applies");
        assert_eq!(
            next.versions.kubelet.map(|k| k.to_string()).as_deref(),
            Some("v1.31.5")
        );
        assert_eq!(
            next.container_runtime,
            Some(ContainerRuntime {
                name: "containerd".into(),
                version: Some("1.7.22".into())
            })
        );
        assert_eq!(next.os_image.as_deref(), Some("ubuntu-24.04"));
    }

    #[test]
    fn any_other_path_or_a_removal_or_a_bad_value_is_refused_naming_it() {
        let err = MachineChange::parse(&ops(json!([
            {"op": "replace", "path": "/flavor", "value": "m1.large"}
        ])))
        .expect_err("unknown path");
        assert!(detail(err).starts_with("'/flavor' cannot be changed on a machine"));
        let err = MachineChange::parse(&ops(json!([
            {"op": "remove", "path": "/os_image"}
        ])))
        .expect_err("removal");
        assert!(detail(err).contains("'/os_image' cannot be removed"));
        let err = MachineChange::parse(&ops(json!([
            {"op": "replace", "path": "/versions/kubelet", "value": "1.31"}
        ])))
        .expect_err("bad version");
        assert!(detail(err).starts_with("Invalid Kubernetes version '1.31'"));
        let err = MachineChange::parse(&ops(json!([
            {"op": "replace", "path": "/os_image", "value": 3}
        ])))
        .expect_err("not a string");
        assert!(detail(err).contains("Value should be a non-empty string"));
    }

    #[test]
    fn a_runtime_version_needs_a_runtime_name() {
        let change = MachineChange::parse(&ops(json!([
            {"op": "replace", "path": "/container_runtime/version", "value": "1.7.22"}
        ])))
        .expect("parses");
        let err = change.apply(&MachineSpec::default()).expect_err("no name");
        assert!(detail(err).contains("names no container runtime"));
    }
}
