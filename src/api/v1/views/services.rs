//! Bodies of `GET /v1/stats` and `GET /v1/mservices`.

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::timestamp;
use crate::store::ServiceRecord;

/// `GET /v1/stats`: clusters and their nodes (masters included).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StatsView {
    pub clusters: i64,
    pub nodes: i64,
}

/// A conductor, from its heartbeats.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MserviceView {
    pub id: i64,
    pub host: String,
    pub binary: String,
    /// `up` or `down`.
    pub state: String,
    pub report_count: i32,
    pub disabled: bool,
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    pub created_at: String,
    #[schema(required = true)]
    pub updated_at: Option<String>,
}

impl MserviceView {
    pub fn new(s: &ServiceRecord, up: bool) -> Self {
        MserviceView {
            id: s.id,
            host: s.host.clone(),
            binary: s.binary.clone(),
            state: if up { "up" } else { "down" }.into(),
            report_count: s.report_count,
            disabled: s.disabled,
            disabled_reason: s.disabled_reason.clone(),
            created_at: timestamp(s.created_at),
            updated_at: s.updated_at.map(timestamp),
        }
    }
}

/// `GET /v1/mservices` (never paginated).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MserviceCollection {
    pub mservices: Vec<MserviceView>,
}
