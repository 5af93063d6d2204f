//! Federation bodies: the summary of `GET /v1/federations` and the full representation of
//! show and `/detail`.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::Link;
use crate::api::timestamp;
use crate::api::RequestContext;
use crate::domain::federation::Federation;

/// The summary representation (`GET /v1/federations`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FederationSummaryView {
    pub uuid: String,
    pub name: String,
    pub hostcluster_id: String,
    pub member_ids: Vec<String>,
    pub status: String,
    pub properties: BTreeMap<String, String>,
    pub links: Vec<Link>,
    /// Shown to admins only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

impl FederationSummaryView {
    pub fn new(base: &str, ctx: &RequestContext, f: &Federation) -> Self {
        let uuid = f.uuid.to_string();
        FederationSummaryView {
            links: Link::pair(base, &format!("federations/{uuid}")),
            uuid,
            name: f.name.clone(),
            hostcluster_id: f.hostcluster_id.to_string(),
            member_ids: f.member_ids.iter().map(ToString::to_string).collect(),
            status: f.status.as_str().to_string(),
            properties: f.properties.clone(),
            project_id: ctx.is_admin.then(|| f.project_id.clone()),
        }
    }
}

/// The full representation (`GET /v1/federations/{f}` and `/detail`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FederationView {
    /// What the summary shows.
    #[serde(flatten)]
    pub summary: FederationSummaryView,
    #[schema(required = true)]
    pub status_reason: Option<String>,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
}

impl FederationView {
    pub fn new(base: &str, ctx: &RequestContext, f: &Federation) -> Self {
        FederationView {
            summary: FederationSummaryView::new(base, ctx, f),
            status_reason: f.status_reason.clone(),
            created_at: timestamp(f.created_at),
            updated_at: f.updated_at.map(timestamp),
        }
    }
}

/// `GET /v1/federations`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FederationCollection {
    pub federations: Vec<FederationSummaryView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `GET /v1/federations/detail`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FederationDetailCollection {
    pub federations: Vec<FederationView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
