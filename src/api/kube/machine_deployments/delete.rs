//! `DELETE …/namespaces/{namespace}/machinedeployments/{name}` (`kubectl delete md`): the node
//! group is deleted, with the rules and writes of `DELETE
//! /v1/clusters/{c}/nodegroups/{ng}` (a default group is never deleted: 400; the cluster must
//! take node group work: 409), in one transaction: the group `DELETE_IN_PROGRESS`, its cluster
//! `UPDATE_IN_PROGRESS`, the `nodegroup.delete` job and the pending notification. The answer
//! is the object being deleted (with its `deletionTimestamp`), 200, as kube-apiserver answers a
//! delete that is not done yet; it is gone once the driver is done. A group already being
//! deleted answers the same. `dryRun` checks everything and writes nothing; the `uid` and
//! `resourceVersion` preconditions are 409 when the object moved on.

use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};

use super::listing;
use super::object::{machine_deployment, resource_version};
use crate::api::http::error::ApiError;
use crate::api::http::retry::{self, Attempt};
use crate::api::kube::access::DEPLOYMENT_DELETE;
use crate::api::kube::delete_options::Delete;
use crate::api::kube::request::{authorize_namespace, caller, json_response};
use crate::api::kube::status::{quote, KubeError, MACHINE_DEPLOYMENTS};
use crate::api::v1::lookup::{cluster_target, driver_for, template_of};
use crate::api::{initiator, AppState, RequestContext};
use crate::domain::cluster::{cluster_accepts_nodegroup_work, Cluster, NodeGroup};
use crate::domain::job::JobPayload;
use crate::domain::status::{ClusterStatus, Verb};
use crate::notify::events::{self, Action, Outcome};
use crate::store::{NodeGroupEntry, StoreError, Write};

#[tracing::instrument(name = "machinedeployments.delete", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(super) async fn delete(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Bytes,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let options = Delete::parse(req.query_string(), &body)?;
    let (rule, verb) = DEPLOYMENT_DELETE.pair();
    authorize_namespace(&ctx, rule, verb, &MACHINE_DEPLOYMENTS, &namespace)?;
    retry::until_committed(async || {
        let e = listing::find(&state, &namespace, &name)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, &name))?;
        check_preconditions(&options, &e, &name)?;
        let ng = &e.nodegroup;
        let c = state
            .store
            .find_cluster(&ng.cluster_id)
            .await?
            .ok_or_else(|| KubeError::not_found(&MACHINE_DEPLOYMENTS, &name))?;
        ctx.authorize(rule, &cluster_target(&c))?;
        if ng.is_default {
            return Err(KubeError::bad_request(
                "Deleting a default nodegroup is not supported.",
            ));
        }
        if ng.status == ClusterStatus::DeleteInProgress {
            return Ok(Attempt::Done(json_response(
                StatusCode::OK,
                &machine_deployment(&e),
            )));
        }
        if !cluster_accepts_nodegroup_work(c.status, true) {
            return Err(KubeError::ConflictMessage(format!(
                "Updating a cluster when status is \"{}\" is not supported.",
                c.status
            )));
        }
        let (writes, next) = delete_writes(&state, &ctx, &c, ng).await?;
        if !options.dry_run {
            match state.store.commit(&writes).await {
                Ok(()) => {}
                Err(StoreError::Stale) => return Ok(Attempt::Retry),
                Err(err) => return Err(err.into()),
            }
        }
        let stored = match options.dry_run {
            true => None,
            false => listing::find(&state, &namespace, &name).await?,
        };
        let going = stored.unwrap_or_else(|| {
            let mut going = e.clone();
            going.nodegroup = next;
            going
        });
        Ok(Attempt::Done(json_response(
            StatusCode::OK,
            &machine_deployment(&going),
        )))
    })
    .await
}

/// What `/v1`'s delete of group `ng` of `c` commits, and the group as it leaves it.
async fn delete_writes(
    state: &AppState,
    ctx: &RequestContext,
    c: &Cluster,
    ng: &NodeGroup,
) -> Result<(Vec<Write>, NodeGroup), KubeError> {
    let template = template_of(state, c).await?;
    let driver = driver_for(state, &template)?;
    let mut next_ng = ng.clone();
    next_ng.begin(Verb::Delete);
    let mut next = c.clone();
    next.begin(Verb::Update);
    let job = state.job(
        JobPayload::NodegroupDelete {
            nodegroup: ng.uuid,
            forced: None,
        },
        c.uuid,
        driver.name(),
    );
    let writes = vec![
        Write::update_cluster(&next),
        Write::update_nodegroup(&next_ng),
        Write::job(job),
        Write::event(events::nodegroup_event(
            &state.settings.default.host,
            Action::Delete,
            Outcome::Pending,
            &next_ng,
            Some(&initiator(ctx)),
        )),
    ];
    Ok((writes, next_ng))
}

/// `DeleteOptions.preconditions`: the group's uid, and the resourceVersion it was read at.
fn check_preconditions(options: &Delete, e: &NodeGroupEntry, name: &str) -> Result<(), KubeError> {
    let uid = e.nodegroup.uuid.to_string();
    if let Some(u) = options.uid.as_ref().filter(|u| **u != uid) {
        return Err(KubeError::ConflictMessage(format!(
            "Operation cannot be fulfilled on {}: Precondition failed: UID in precondition: {u}, UID in object meta: {uid}",
            MACHINE_DEPLOYMENTS.qualified(),
        )));
    }
    let rv = resource_version(e);
    if let Some(v) = options
        .resource_version
        .as_ref()
        .filter(|v| **v != rv.to_string())
    {
        return Err(KubeError::ConflictMessage(format!(
            "Operation cannot be fulfilled on {} {}: the ResourceVersion in the precondition ({v}) does not match the ResourceVersion in record ({rv}). The object might have been modified",
            MACHINE_DEPLOYMENTS.qualified(),
            quote(name),
        )));
    }
    Ok(())
}
