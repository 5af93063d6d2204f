//! The wire types of `/v1` responses: one typed view per resource body, built from the domain
//! type, serialised as is and described in the OpenAPI document (`GET /v1/openapi.json`).
//!
//! Fields that depend on the microversion or the caller's role are `Option` and skipped when
//! `None`; fields that Magnum always sends, `null` included, are always serialised.

pub mod certificates;
pub mod cluster_groups;
pub mod cluster_templates;
pub mod clusters;
pub mod federations;
pub mod machines;
pub mod nodegroups;
pub mod quotas;
pub mod services;
pub mod versions;

use serde::Serialize;
use utoipa::ToSchema;

pub use crate::api::http::error_body::{ErrorBody, ErrorEntry, MicroversionError, StandardError};
pub use crate::api::http::links::Link;
pub use certificates::{CertificateView, SignedCertificateView};
pub use cluster_groups::{
    AccessView, ClusterGroupBindingCollection, ClusterGroupBindingView, ClusterGroupCollection,
    ClusterGroupMemberCollection, ClusterGroupMemberView, ClusterGroupView,
};
pub use cluster_templates::{ClusterTemplateCollection, ClusterTemplateView};
pub use clusters::{ClusterCollection, ClusterDetailCollection, ClusterSummaryView, ClusterView};
pub use federations::{
    FederationCollection, FederationDetailCollection, FederationSummaryView, FederationView,
};
pub use machines::{MachineCollection, MachineView};
pub use nodegroups::{
    NodeGroupCollection, NodeGroupDetailCollection, NodeGroupSummaryView, NodeGroupView, TaintView,
};
pub use quotas::{DefaultQuotaView, QuotaCollection, QuotaShowView, QuotaView};
pub use services::{MserviceCollection, MserviceView, StatsView};
pub use versions::{MediaTypeView, RootView, V1View, VersionView};

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
