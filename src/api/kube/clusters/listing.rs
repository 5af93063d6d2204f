//! Reading clusters: list (JSON or Table, or a watch with `watch=true`) and get.

use actix_web::{web, HttpRequest, HttpResponse};

use crate::api::http::error::ApiError;
use crate::api::kube::objects::{list_meta, Cluster, ClusterList, API_VERSION, LIST_KIND};
use crate::api::kube::request::{
    accept, authorize_visible, authorized_entry, caller, json_response, list_rule, params, Params,
    Visible,
};
use crate::api::kube::scan::{list_entries, page_limit, Selectors};
use crate::api::kube::status::{KubeError, CLUSTERS};
use crate::api::kube::table::{self, table_row, TableRow};
use crate::api::kube::{access, list, view, watch};
use crate::api::{AppState, RequestContext};

/// A list (or watch, with `watch=true`) answer.
pub(super) async fn list_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    visible: Visible,
    p: &Params,
) -> Result<HttpResponse, KubeError> {
    let selectors = Selectors::parse(p)?;
    let options = list::ListOptions::parse(&p.list_query())?;
    if options.watch {
        return watch::start(
            req,
            state,
            visible,
            selectors,
            p,
            &options,
            watch::Render::Cluster,
        )
        .await;
    }
    let from = list::position(state.store.as_ref(), visible.project().as_deref(), &options).await?;
    let listed = list_entries(
        state,
        &visible,
        &selectors,
        page_limit(&options),
        Some(&from),
    )
    .await?;
    let objects: Vec<Cluster> = listed.items.iter().map(view::cluster).collect();
    if table::wants_table(accept(req)) {
        let rows: Vec<TableRow> = listed
            .items
            .iter()
            .zip(&objects)
            .map(|(e, o)| table_row(e, o))
            .collect();
        let body = table::cluster_table(
            &rows,
            table::IncludeObject::parse(p.include_object.as_deref())?,
            &listed.resource_version.to_string(),
            &listed.continue_token(),
            chrono::Utc::now(),
        );
        return Ok(json_response(actix_web::http::StatusCode::OK, &body));
    }
    let list = ClusterList {
        api_version: API_VERSION,
        kind: LIST_KIND,
        metadata: list_meta(
            listed.resource_version,
            listed.continue_token(),
            listed.remaining,
        ),
        items: &objects,
    };
    Ok(json_response(actix_web::http::StatusCode::OK, &list))
}

#[tracing::instrument(name = "registry.list_all", skip_all)]
pub(super) async fn list_all(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let (rule, verb) = list_rule(&p);
    let visible = authorize_visible(&ctx, &state, (rule, verb), &CLUSTERS, None).await?;
    list_answer(&req, &state, visible, &p).await
}

#[tracing::instrument(name = "registry.list", skip_all, fields(namespace = %path))]
pub(super) async fn list_namespace(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let p = params(&req)?;
    let (rule, verb) = list_rule(&p);
    let visible = authorize_visible(&ctx, &state, (rule, verb), &CLUSTERS, Some(&path)).await?;
    list_answer(&req, &state, visible, &p).await
}

#[tracing::instrument(name = "registry.get", skip_all, fields(namespace = %path.0, name = %path.1))]
pub(in crate::api::kube) async fn get(
    req: HttpRequest,
    ctx: Result<RequestContext, ApiError>,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KubeError> {
    let ctx = caller(ctx)?;
    let (namespace, name) = path.into_inner();
    let p = params(&req)?;
    let e = authorized_entry(
        &ctx,
        &state,
        (&namespace, &name),
        access::GET.pair(),
        &CLUSTERS,
    )
    .await?;
    let object = view::cluster(&e);
    if table::wants_table(accept(&req)) {
        let rows = [table_row(&e, &object)];
        let body = table::cluster_table(
            &rows,
            table::IncludeObject::parse(p.include_object.as_deref())?,
            &e.cluster.registry.resource_version.to_string(),
            "",
            chrono::Utc::now(),
        );
        return Ok(json_response(actix_web::http::StatusCode::OK, &body));
    }
    Ok(json_response(actix_web::http::StatusCode::OK, &object))
}
