//! `/v1/clustertemplates`: create, list, detail, show, JSON-Patch update, delete.

use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

use super::lookup;
use super::patch::{self, PatchRules};
use super::views::{ClusterTemplateCollection, ClusterTemplateView};
use crate::api::http::body::{invalid, json_body, json_object, query_params, Fields};
use crate::api::http::error::ApiError;
use crate::api::http::links::app_url;
use crate::api::http::pagination::{respond_page, ListQuery, ListRules, PageBody, PAGE_PARAMS};
use crate::api::http::retry::{self, Attempt};
use crate::api::AppState;
use crate::api::RequestContext;
use crate::domain::ids::parse_uuid_like;
use crate::domain::labels::Labels;
use crate::domain::names;
use crate::domain::template::{
    change_allowed_while_referenced, valid_dns_list, ClusterTemplate, NewClusterTemplate,
    TemplateSpec, COES, SERVER_TYPES,
};
use crate::domain::TemplateId;
use crate::notify::events::{self, Action, Outcome};
use crate::store::{NewEvent, StoreError, TEMPLATE_SORT_KEYS};

const READ_ONLY: &[&str] = &["links", "project_id", "user_id", "created_at", "updated_at"];

const PATCH_RULES: PatchRules = PatchRules {
    internal: &[],
    non_removable: &[
        "/network_driver",
        "/external_network_id",
        "/tls_disabled",
        "/public",
        "/server_type",
        "/coe",
        "/registry_enabled",
        "/cluster_distro",
        "/hidden",
        "/image_id",
        "/name",
    ],
    literal: &["/labels"],
};

/// The routes under `/v1/clustertemplates`, relative to the scope [`super::routes`] mounts them in.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("")
            .route(web::get().to(list))
            .route(web::post().to(create))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/detail")
            .route(web::get().to(list))
            .default_service(web::to(super::method_not_allowed)),
    )
    .service(
        web::resource("/{ident}")
            .route(web::get().to(show))
            .route(web::patch().to(update))
            .route(web::delete().to(delete))
            .default_service(web::to(super::method_not_allowed)),
    );
}

/// Parses every client-settable attribute from a request object or a patched document.
fn parse_spec(fields: &mut Fields) -> Result<TemplateSpec, ApiError> {
    let s = |f: &mut Fields, k: &str| f.string(k, 1, 255);
    let name = match fields.string("name", 1, 255)? {
        Some(n) => n,
        None => names::generate("template"),
    };
    let coe = fields.one_of("coe", COES)?;
    let image_id = fields.required_string("image_id", 1, 255)?;
    let Some(coe) = coe else {
        return Err(invalid("coe", &Value::Null, "Mandatory field missing."));
    };
    let dns_nameserver = s(fields, "dns_nameserver")?;
    if let Some(dns) = &dns_nameserver {
        if !valid_dns_list(dns) {
            return Err(ApiError::bad_request(format!(
                "Expected a single dns address or comma separated dns list, but received {dns}."
            )));
        }
    }
    Ok(TemplateSpec {
        name,
        coe,
        image_id,
        flavor_id: s(fields, "flavor_id")?,
        master_flavor_id: s(fields, "master_flavor_id")?,
        dns_nameserver,
        keypair_id: s(fields, "keypair_id")?,
        external_network_id: s(fields, "external_network_id")?,
        fixed_network: s(fields, "fixed_network")?,
        fixed_subnet: s(fields, "fixed_subnet")?,
        network_driver: s(fields, "network_driver")?,
        volume_driver: s(fields, "volume_driver")?,
        apiserver_port: fields.int32("apiserver_port", Some(1024), Some(65535))?,
        docker_volume_size: fields.int32("docker_volume_size", Some(1), None)?,
        docker_storage_driver: s(fields, "docker_storage_driver")?,
        cluster_distro: s(fields, "cluster_distro")?,
        http_proxy: s(fields, "http_proxy")?,
        https_proxy: s(fields, "https_proxy")?,
        no_proxy: s(fields, "no_proxy")?,
        insecure_registry: s(fields, "insecure_registry")?,
        registry_enabled: fields.bool("registry_enabled")?.unwrap_or(false),
        tls_disabled: fields.bool("tls_disabled")?.unwrap_or(false),
        public: fields.bool("public")?.unwrap_or(false),
        master_lb_enabled: fields.bool("master_lb_enabled")?.unwrap_or(false),
        floating_ip_enabled: fields.bool("floating_ip_enabled")?.unwrap_or(true),
        hidden: fields.bool("hidden")?.unwrap_or(false),
        server_type: fields
            .one_of("server_type", SERVER_TYPES)?
            .unwrap_or_else(|| "vm".into()),
        labels: fields.labels("labels")?.unwrap_or_else(Labels::new),
        tags: fields.string("tags", 0, 255)?,
        driver: s(fields, "driver")?,
    })
}

impl TryFrom<Fields> for TemplateSpec {
    type Error = ApiError;

    /// A template's attributes from a create body (after its uuid) or a patched document.
    fn try_from(mut fields: Fields) -> Result<Self, ApiError> {
        let spec = parse_spec(&mut fields)?;
        fields.finish()?;
        Ok(spec)
    }
}

/// A template create body, parsed: the uuid to give it (generated when absent) and its spec.
struct TemplateCreate {
    uuid: TemplateId,
    spec: TemplateSpec,
}

impl TryFrom<Fields> for TemplateCreate {
    type Error = ApiError;

    fn try_from(mut fields: Fields) -> Result<Self, ApiError> {
        fields.read_only(READ_ONLY)?;
        let uuid = match fields.string("uuid", 1, 255)? {
            None => TemplateId::new(),
            Some(text) => TemplateId(
                parse_uuid_like(&text)
                    .ok_or_else(|| invalid("uuid", &json!(text), "Expected a uuid."))?,
            ),
        };
        Ok(TemplateCreate {
            uuid,
            spec: TemplateSpec::try_from(fields)?,
        })
    }
}

/// Rules, then driver resolution (explicit name, else the configured default).
fn check_and_resolve(state: &AppState, spec: &mut TemplateSpec) -> Result<(), ApiError> {
    spec.check_rules(&state.template_rules)
        .map_err(ApiError::BadRequest)?;
    spec.apply_defaults(&state.template_rules);
    let name = spec
        .driver
        .clone()
        .unwrap_or_else(|| state.settings.drivers.default_driver.clone());
    if !state.drivers.is_available(&name) {
        return Err(ApiError::bad_request(format!(
            "Cluster driver ({name}) not supported."
        )));
    }
    spec.driver = Some(name);
    Ok(())
}

fn event(state: &AppState, ctx: &RequestContext, action: Action, t: &ClusterTemplate) -> NewEvent {
    let mut content = t.spec.to_document();
    content.insert("project_id".into(), json!(t.project_id));
    content.insert("user_id".into(), json!(t.user_id));
    content.insert(
        "created_at".into(),
        events::attachment_timestamp(Some(t.created_at)),
    );
    content.insert(
        "updated_at".into(),
        events::attachment_timestamp(t.updated_at),
    );
    events::build(
        &state.settings.default.host,
        action,
        Outcome::Success,
        events::Target {
            resource_type: "cluster_template",
            uuid: t.uuid.to_string(),
            name: t.spec.name.clone(),
            content: Value::Object(content),
        },
        Some(&crate::api::initiator(ctx)),
    )
}

fn target(t: &ClusterTemplate) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("project_id".into(), json!(t.project_id));
    m.insert("user_id".into(), json!(t.user_id));
    m.insert("public".into(), json!(t.spec.public));
    m
}

#[tracing::instrument(name = "cluster_templates.create", skip_all, fields(project = %ctx.project_id))]
async fn create(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let obj = json_object(&req, &body, "cluster_template")?;
    let TemplateCreate { uuid, mut spec } = Fields::new("cluster_template", obj).try_into()?;
    check_and_resolve(&state, &mut spec)?;
    ctx.authorize_own("clustertemplate:create")?;
    if (spec.public || spec.hidden) && !ctx.allowed("clustertemplate:publish", &ctx.own_target()) {
        return Err(ApiError::forbidden(
            "Not authorized to set public or hidden flag for cluster template.",
        ));
    }
    let new = NewClusterTemplate {
        uuid,
        project_id: ctx.project_id.clone(),
        user_id: ctx.user_id.clone(),
        spec,
    };
    // The event needs the stored row's timestamps; build it from the new values.
    let provisional = ClusterTemplate {
        id: 0,
        uuid,
        project_id: new.project_id.clone(),
        user_id: new.user_id.clone(),
        spec: new.spec.clone(),
        version: 0,
        created_at: chrono::Utc::now(),
        updated_at: None,
    };
    let ev = event(&state, &ctx, Action::Create, &provisional);
    let created = match state.store.create_cluster_template(&new, &[ev]).await {
        Ok(t) => t,
        Err(e) if e.is_constraint("uniq_cluster_template0uuid") => {
            return Err(ApiError::conflict(format!(
                "A ClusterTemplate with UUID {uuid} already exists."
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let base = app_url(&req);
    Ok(HttpResponse::Created()
        .insert_header((
            header::LOCATION,
            format!("{base}/v1/clustertemplates/{}", created.uuid),
        ))
        .json(ClusterTemplateView::new(&base, &created)))
}

#[tracing::instrument(name = "cluster_templates.list", skip_all, fields(project = %ctx.project_id))]
async fn list(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query = ListQuery::parse(
        &req,
        &ctx,
        PAGE_PARAMS,
        TEMPLATE_SORT_KEYS,
        state.settings.api.max_limit,
        &LIST_RULES,
    )?;
    let page = &query.page;
    let rows = state
        .store
        .list_cluster_templates(&ctx.scope(), page)
        .await
        .map_err(query.store_error(|m| {
            ApiError::not_found(format!("ClusterTemplate {m} could not be found."))
        }))?;
    let base = app_url(&req);
    let items: Vec<ClusterTemplateView> = rows
        .iter()
        .map(|t| ClusterTemplateView::new(&base, t))
        .collect();
    let (path, sizer) = if query.detail {
        ("clustertemplates/detail", &DETAIL_PAGE)
    } else {
        ("clustertemplates", &SUMMARY_PAGE)
    };
    let last = rows.last().map(|t| t.uuid.to_string());
    let n = items.len();
    respond_page(sizer, &req, path, page, n, last, &[], |next| {
        ClusterTemplateCollection {
            clustertemplates: items,
            next,
        }
    })
}

const LIST_RULES: ListRules = ListRules {
    summary: [
        "clustertemplate:get_all",
        "clustertemplate:get_all_all_projects",
    ],
    detail: [
        "clustertemplate:detail",
        "clustertemplate:detail_all_projects",
    ],
};

/// Bodies of cluster template pages, with and without details.
static DETAIL_PAGE: PageBody = PageBody::new(1500);
static SUMMARY_PAGE: PageBody = PageBody::new(600);

#[tracing::instrument(name = "cluster_templates.show", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn show(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    if ctx.is_admin {
        ctx.authorize_own("clustertemplate:get_one_all_projects")?;
    }
    let t = lookup::template(&state, &ctx, &path).await?;
    if !t.spec.public {
        ctx.authorize("clustertemplate:get", &target(&t))?;
    }
    Ok(HttpResponse::Ok().json(ClusterTemplateView::new(&app_url(&req), &t)))
}

#[tracing::instrument(name = "cluster_templates.update", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn update(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    let ops = patch::parse_patch(json_body(&req, &body)?, &PATCH_RULES)?;
    if ctx.is_admin {
        ctx.authorize_own("clustertemplate:update_all_projects")?;
    }
    // Optimistic read-patch-write, retried when a concurrent update wins the race.
    retry::until_committed(async || {
        let current = lookup::template(&state, &ctx, &path).await?;
        ctx.authorize("clustertemplate:update", &target(&current))?;
        let doc = patch::apply(&current.spec.to_document(), &ops, &PATCH_RULES)?;
        let mut spec = TemplateSpec::try_from(Fields::new("cluster_template", doc))?;
        if spec.driver != current.spec.driver {
            check_and_resolve(&state, &mut spec)?;
        } else {
            spec.check_rules(&state.template_rules)
                .map_err(ApiError::BadRequest)?;
        }
        if (spec.public != current.spec.public || spec.hidden != current.spec.hidden)
            && !ctx.allowed("clustertemplate:publish", &target(&current))
        {
            return Err(ApiError::forbidden(
                "Not authorized to set public or hidden flag for cluster template.",
            ));
        }
        if spec == current.spec {
            return Ok(Attempt::Done(
                HttpResponse::Ok().json(ClusterTemplateView::new(&app_url(&req), &current)),
            ));
        }
        // Checked inside the update's transaction: a cluster created from the template at the
        // same moment is either seen there or refused as stale (it guards the template row).
        let refuse_if_referenced = !change_allowed_while_referenced(&current.spec, &spec);
        let mut after = current.clone();
        after.spec = spec.clone();
        after.updated_at = Some(chrono::Utc::now());
        let ev = event(&state, &ctx, Action::Update, &after);
        match state
            .store
            .update_cluster_template(
                current.id,
                current.version,
                &spec,
                refuse_if_referenced,
                &[ev],
            )
            .await
        {
            Ok(updated) => Ok(Attempt::Done(
                HttpResponse::Ok().json(ClusterTemplateView::new(&app_url(&req), &updated)),
            )),
            Err(StoreError::Stale) => Ok(Attempt::Retry),
            Err(e) if e.is_constraint("cluster_template_referenced") => {
                Err(ApiError::bad_request(format!(
                    "ClusterTemplate {} is referenced by one or multiple clusters.",
                    current.uuid
                )))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
}

#[tracing::instrument(name = "cluster_templates.delete", skip_all, fields(project = %ctx.project_id, ident = %path.as_str()))]
async fn delete(
    req: HttpRequest,
    ctx: RequestContext,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    query_params(&req, &[])?;
    if ctx.is_admin {
        ctx.authorize_own("clustertemplate:delete_all_projects")?;
    }
    let t = lookup::template(&state, &ctx, &path).await?;
    ctx.authorize("clustertemplate:delete", &target(&t))?;
    let referenced = || {
        ApiError::bad_request(format!(
            "ClusterTemplate {} is referenced by one or multiple clusters.",
            t.uuid
        ))
    };
    if state.store.template_in_use(&t.uuid).await? {
        return Err(referenced());
    }
    let ev = event(&state, &ctx, Action::Delete, &t);
    match state.store.delete_cluster_template(t.id, &[ev]).await {
        Ok(()) => Ok(HttpResponse::NoContent().finish()),
        Err(e)
            if e.is_constraint("fk_cluster_cluster_template") || e.is_constraint("foreign_key") =>
        {
            Err(referenced())
        }
        Err(StoreError::NotFound) => Err(ApiError::not_found(format!(
            "ClusterTemplate {} could not be found.",
            path.as_str()
        ))),
        Err(e) => Err(e.into()),
    }
}
