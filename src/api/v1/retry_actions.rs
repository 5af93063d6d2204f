//! The retry actions of node groups and federations (microversion 1.17), the counterparts of
//! the cluster's (`.../actions/retry`, 1.16, in [`super::cluster_actions`]):
//! `POST /v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry` creates a
//! `CREATE_FAILED` node group again in place, and `POST /v1/federations/{ident}/actions/retry`
//! a `CREATE_FAILED` federation. Each commits the resource's `CREATE_IN_PROGRESS` (the last
//! reason cleared), a new create job with a fresh deadline and the pending notification in one
//! transaction; the driver's create is idempotent, so what the failed attempt made is found, not
//! made twice. Any other status is a 409 that names the way forward from it.
//! [`super`] mounts the routes in the node groups' and the federations' scopes.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};

use super::lookup::{self, cluster_target, driver_for, federation_target, job_driver, template_of};
use crate::api::http::body::{json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::microversion::NODEGROUP_FEDERATION_RETRY;
use crate::api::http::retry::{self};
use crate::api::initiator;
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::cluster::{cluster_accepts_nodegroup_work, Cluster};
use crate::domain::federation::CREATE_TIMEOUT_MINUTES;
use crate::domain::job::JobPayload;
use crate::domain::status::{ClusterStatus, FederationStatus, Verb};
use crate::notify::events::{self, Action, Outcome};
use crate::store::Write;

/// What every retry request shares: microversion 1.17 or later (406 below it, as the cluster's
/// retry is below 1.16), no query parameter, and no body (or an empty object).
fn check_request(req: &HttpRequest, ctx: &RequestContext, body: &Bytes) -> Result<(), ApiError> {
    if ctx.version < NODEGROUP_FEDERATION_RETRY {
        return Err(ApiError::Framework(StatusCode::NOT_ACCEPTABLE));
    }
    query_params(req, &[])?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let obj = json_object(req, body, "retry")?;
        Fields::new("retry", obj).finish()?;
    }
    Ok(())
}

/// `": <way forward>"`, or nothing when the state has none to name.
fn forward(way: Option<&str>) -> String {
    way.map(|w| format!(": {w}")).unwrap_or_default()
}

/// A retried node group create is bounded like a cluster's create: the cluster's
/// `create_timeout` (when it has one), counted from the retry.
fn nodegroup_deadline(c: &Cluster, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    c.create_timeout
        .filter(|m| *m > 0)
        .map(|m| now + chrono::Duration::minutes(i64::from(m)))
}

/// `POST .../nodegroups/{nodegroup_ident}/actions/retry`, in the scope of one cluster.
pub fn configure_nodegroup(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/nodegroups/{nodegroup_ident}/actions/retry")
            .route(web::post().to(retry_nodegroup))
            .default_service(web::to(super::method_not_allowed)),
    );
}

/// `POST /v1/federations/{ident}/actions/retry`, in the federations' scope.
pub fn configure_federation(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/{ident}/actions/retry")
            .route(web::post().to(retry_federation))
            .default_service(web::to(super::method_not_allowed)),
    );
}

/// `POST /v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry`: a
/// `CREATE_FAILED` node group goes `CREATE_IN_PROGRESS` again and its cluster
/// `UPDATE_IN_PROGRESS`, with a new node group create job and its pending notification. The
/// cluster must accept node group work (COMPLETE-like or `UPDATE_FAILED`); a node group of a
/// cluster whose own create failed is retried with the cluster.
#[tracing::instrument(name = "nodegroups.retry", skip_all, fields(project = %ctx.project_id, cluster = %path.0, nodegroup = %path.1))]
pub(super) async fn retry_nodegroup(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    check_request(&req, &ctx, &body)?;
    let (cluster_ident, ng_ident) = path.into_inner();
    retry::until_committed(async || {
        let c = lookup::cluster(&state, &ctx, &cluster_ident, true).await?;
        ctx.authorize("nodegroup:retry", &cluster_target(&c))?;
        let ng = lookup::nodegroup(&state, &ctx, &c, &ng_ident).await?;
        if ng.status != ClusterStatus::CreateFailed {
            return Err(ApiError::conflict(format!(
                "Retrying a nodegroup when status is \"{}\" is not supported; only a nodegroup whose create failed (CREATE_FAILED) is retried{}.",
                ng.status,
                forward(ng.status.nodegroup_way_forward())
            )));
        }
        if !cluster_accepts_nodegroup_work(c.status, false) {
            return Err(ApiError::conflict(format!(
                "Retrying a nodegroup when its cluster's status is \"{}\" is not supported{}.",
                c.status,
                forward(c.status.way_forward())
            )));
        }
        let template = template_of(&state, &c).await?;
        let driver = driver_for(&state, &template)?;
        let mut next_ng = ng.clone();
        next_ng.begin(Verb::Create);
        let mut next = c.clone();
        next.begin(Verb::Update);
        let mut job = state.job(
            JobPayload::NodegroupCreate { nodegroup: ng.uuid },
            c.uuid,
            driver.name(),
        );
        job.deadline_at = nodegroup_deadline(&c, Utc::now());
        let writes = vec![
            Write::update_cluster(&next),
            Write::update_nodegroup(&next_ng),
            Write::job(job),
            Write::event(events::nodegroup_event(
                &state.settings.default.host,
                Action::Create,
                Outcome::Pending,
                &next_ng,
                Some(&initiator(&ctx)),
            )),
        ];
        super::commit_accepted(&state, &writes, ng.uuid).await
    })
    .await
}

/// `POST /v1/federations/{ident}/actions/retry`: a `CREATE_FAILED` federation goes
/// `CREATE_IN_PROGRESS` again with a new create job, due within the federations' create
/// timeout counted from the retry, and its pending notification.
#[tracing::instrument(name = "federations.retry", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
pub(super) async fn retry_federation(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    check_request(&req, &ctx, &body)?;
    retry::until_committed(async || {
        let f = lookup::federation(&state, &ctx, &path).await?;
        ctx.authorize("federation:retry", &federation_target(&f))?;
        if f.status != FederationStatus::CreateFailed {
            return Err(ApiError::conflict(format!(
                "Retrying a federation when status is \"{}\" is not supported; only a federation whose create failed (CREATE_FAILED) is retried{}.",
                f.status,
                forward(f.status.way_forward())
            )));
        }
        let driver = job_driver(&state, &f).await?;
        let mut next = f.clone();
        next.begin(Verb::Create);
        let mut job = state.job(JobPayload::FederationCreate {}, f.uuid, driver);
        job.deadline_at = Some(Utc::now() + chrono::Duration::minutes(CREATE_TIMEOUT_MINUTES));
        let writes = vec![
            Write::update_federation(&next),
            Write::job(job),
            Write::event(events::federation_event(
                &state.settings.default.host,
                Action::Create,
                Outcome::Pending,
                &next,
                None,
                Some(&initiator(&ctx)),
            )),
        ];
        super::commit_accepted(&state, &writes, f.uuid).await
    })
    .await
}
