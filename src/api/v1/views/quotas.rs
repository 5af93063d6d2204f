//! Quota bodies.

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::timestamp;
use crate::store::QuotaRow;

/// A stored quota.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuotaView {
    pub id: i64,
    pub project_id: String,
    pub resource: String,
    pub hard_limit: i32,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
}

impl From<&QuotaRow> for QuotaView {
    fn from(q: &QuotaRow) -> Self {
        QuotaView {
            id: q.id,
            project_id: q.project_id.clone(),
            resource: q.resource.clone(),
            hard_limit: q.hard_limit,
            created_at: timestamp(q.created_at),
            updated_at: q.updated_at.map(timestamp),
        }
    }
}

/// The default quota every project has when it has no row of its own.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DefaultQuotaView {
    pub project_id: String,
    pub hard_limit: i64,
    pub resource: String,
}

/// `GET /v1/quotas/{project_id}/{resource}`: the stored quota, else the default.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum QuotaShowView {
    Stored(QuotaView),
    Default(DefaultQuotaView),
}

/// `GET /v1/quotas`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuotaCollection {
    pub quotas: Vec<QuotaView>,
    /// The next page, present only when this page is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
