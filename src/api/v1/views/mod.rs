//! The wire types of `/v1` responses: one typed view per resource body, built from the domain
//! type, serialised as is and described in the OpenAPI document (`GET /v1/openapi.json`).
//!
//! Fields that depend on the microversion or the caller's role are `Option` and skipped when
//! `None`; fields that Magnum always sends, `null` included, are always serialised.

pub mod certificates;
pub mod cluster_templates;
pub mod clusters;
pub mod errors;
pub mod federations;
pub mod nodegroups;
pub mod quotas;
pub mod services;
pub mod versions;

use serde::Serialize;
use utoipa::ToSchema;

pub use certificates::{CertificateView, SignedCertificateView};
pub use cluster_templates::{ClusterTemplateCollection, ClusterTemplateView};
pub use clusters::{ClusterCollection, ClusterDetailCollection, ClusterSummaryView, ClusterView};
pub use errors::{ErrorBody, ErrorEntry, MicroversionError, StandardError};
pub use federations::{
    FederationCollection, FederationDetailCollection, FederationSummaryView, FederationView,
};
pub use nodegroups::{
    NodeGroupCollection, NodeGroupDetailCollection, NodeGroupSummaryView, NodeGroupView, TaintView,
};
pub use quotas::{DefaultQuotaView, QuotaCollection, QuotaShowView, QuotaView};
pub use services::{MserviceCollection, MserviceView, StatsView};
pub use versions::{MediaTypeView, RootView, V1View, VersionView};

/// A link of a resource or collection: `self` (under `/v1`) or `bookmark` (without it).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Link {
    pub href: String,
    pub rel: String,
    /// The media type of the linked document (only the `describedby` link of `/v1`).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Link {
    pub fn new(href: String, rel: &str) -> Self {
        Link {
            href,
            rel: rel.into(),
            media_type: None,
        }
    }

    /// `[{"href": <base>/v1/<path>, "rel": "self"}, {"href": <base>/<path>, "rel": "bookmark"}]`
    pub fn pair(base: &str, path: &str) -> Vec<Link> {
        vec![
            Link::new(format!("{base}/v1/{path}"), "self"),
            Link::new(format!("{base}/{path}"), "bookmark"),
        ]
    }
}

/// The answer of an accepted asynchronous change (202): the uuid of the resource it acts on.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AcceptedView {
    pub uuid: String,
}

impl AcceptedView {
    pub fn new(uuid: impl ToString) -> Self {
        AcceptedView {
            uuid: uuid.to_string(),
        }
    }
}
