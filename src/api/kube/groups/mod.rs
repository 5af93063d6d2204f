//! `clusterregistry.k8s.io/v1alpha1` `ClusterGroup` and `ClusterGroupBinding`, namespaced by
//! project: the groups and bindings of `/v1/clustergroups` (microversion 1.20) on the
//! Kubernetes face, decided by the same policy rules (`clustergroup:*`) and written with the
//! same writes and notifications, in one transaction each.
//!
//! Groups: list (JSON or Table, in a namespace or across namespaces), get, create, replace,
//! merge or JSON patch of the spec (description, selector and explicit members) and delete.
//! Bindings: list, get, create and delete (a binding never changes). Both kinds' lists page
//! (`limit` and `continue`, [`listing`]) and watch (`watch=true`, [`watch`], from the groups'
//! change log on the registry's one resourceVersion counter).
//!
//! By what each part does: [`object`] (the wire forms), [`read`] (bodies into the domain's
//! types), [`cluster_groups`] and [`bindings`] (the handlers), [`listing`] and [`watch`] and
//! [`table`] (`kubectl get` columns).

pub mod object;

mod bindings;
mod cluster_groups;
mod current;
mod listing;
mod read;
mod table;
mod watch;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::clusters::method_not_allowed;
use super::list::ListOptions;
use super::objects::{list_meta, ObjectMeta};
use super::request::{accept, json_response, params, Params, Visible};
use super::scan::Selectors;
use super::status::{KubeError, Resource};
use super::table::{wants_table, IncludeObject};
use crate::api::http::error::ApiError;
use crate::api::{AppState, RequestContext};
use crate::store::GroupObject;

use self::object::{Binding, Group, List};
pub use object::{CLUSTER_GROUPS, CLUSTER_GROUP_BINDINGS};

const BASE: &str = "/apis/clusterregistry.k8s.io/v1alpha1";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("{BASE}/clustergroups"))
            .route(web::get().to(cluster_groups::list_all))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/namespaces/{{namespace}}/clustergroups"))
            .route(web::get().to(cluster_groups::list_namespace))
            .route(web::post().to(cluster_groups::create))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/clustergroups/{{name}}"
        ))
        .route(web::get().to(cluster_groups::get))
        .route(web::put().to(cluster_groups::replace))
        .route(web::patch().to(cluster_groups::patch))
        .route(web::delete().to(cluster_groups::delete))
        .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!("{BASE}/clustergroupbindings"))
            .route(web::get().to(bindings::list_all))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/clustergroupbindings"
        ))
        .route(web::get().to(bindings::list_namespace))
        .route(web::post().to(bindings::create))
        .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(format!(
            "{BASE}/namespaces/{{namespace}}/clustergroupbindings/{{name}}"
        ))
        .route(web::get().to(bindings::get))
        .route(web::delete().to(bindings::delete))
        .default_service(web::to(method_not_allowed)),
    );
}

/// The caller, the query and the list options of a list or watch.
fn list_request(
    req: &HttpRequest,
    ctx: Result<RequestContext, ApiError>,
) -> Result<(RequestContext, Params, ListOptions), KubeError> {
    let ctx = super::request::caller(ctx)?;
    let p = params(req)?;
    let o = ListOptions::parse(&p.list_query())?;
    Ok((ctx, p, o))
}

/// Which of the two kinds a list or watch serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Groups,
    Bindings,
}

impl Kind {
    fn resource(self) -> &'static Resource {
        match self {
            Kind::Groups => &CLUSTER_GROUPS,
            Kind::Bindings => &CLUSTER_GROUP_BINDINGS,
        }
    }

    /// Whether a change-log line is of this kind.
    fn holds(self, o: &GroupObject) -> bool {
        matches!(
            (self, o),
            (Kind::Groups, GroupObject::Group(..)) | (Kind::Bindings, GroupObject::Binding(..))
        )
    }
}

/// The verb of a list request, as a refusal words it.
fn list_verb(o: &ListOptions) -> &'static str {
    if o.watch {
        "watch"
    } else {
        "list"
    }
}

/// An object of either kind, by its metadata.
trait Named {
    fn meta(&self) -> &ObjectMeta;
}

impl Named for Group {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl Named for Binding {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// A list's answer: the objects the label and field selectors admit (neither kind carries
/// labels, so a label selector admits an object when it admits no labels), one page of them
/// ([`listing`]), as a Table when the client asks for one (`table`), else as the kind's list.
#[allow(clippy::too_many_arguments)]
async fn answer<T: Named + Serialize>(
    req: &HttpRequest,
    state: &AppState,
    visible: &Visible,
    (p, o): (&Params, &ListOptions),
    kind: Kind,
    items: Vec<T>,
    table: fn(&[T], IncludeObject, DateTime<Utc>) -> Value,
) -> Result<HttpResponse, KubeError> {
    let include = IncludeObject::parse(p.include_object.as_deref())?;
    let selectors = Selectors::parse(p)?;
    let (rv, after) = listing::position(state.store.as_ref(), kind, visible, o).await?;
    let none = std::collections::BTreeMap::new();
    let objects: Vec<T> = items
        .into_iter()
        .filter(|i| {
            let m = i.meta();
            selectors.matches(
                m.name.as_deref().unwrap_or_default(),
                m.namespace.as_deref().unwrap_or_default(),
                &none,
            )
        })
        .collect();
    let key = |i: &T| {
        let m = i.meta();
        (
            m.namespace.clone().unwrap_or_default(),
            m.name.clone().unwrap_or_default(),
        )
    };
    let (objects, next, remaining) = listing::page(objects, key, rv, after.as_ref(), o.limit);
    let token = next.map(|t| t.encode()).unwrap_or_default();
    if wants_table(accept(req)) {
        let mut body = table(&objects, include, Utc::now());
        body["metadata"] =
            serde_json::to_value(list_meta(rv, token, remaining)).unwrap_or(Value::Null);
        return Ok(ok(&body));
    }
    let mut list = List::new(kind.resource(), &objects);
    list.metadata = list_meta(rv, token, remaining);
    Ok(ok(&list))
}

fn ok(body: &impl Serialize) -> HttpResponse {
    json_response(StatusCode::OK, body)
}
