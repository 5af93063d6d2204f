//! Types and rules with no I/O: identifiers, names, labels, statuses and their transitions.
//! Everything inward of the API takes these parsed types.

pub mod cluster;
pub mod cluster_group;
pub mod federation;
pub mod health_probe;
pub mod ids;
pub mod job;
pub mod keypair;
pub mod kube_names;
pub mod labels;
pub mod leftover;
pub mod machine;
pub mod managed_fields;
pub mod names;
pub mod registry;
pub mod registry_change;
pub mod scope;
pub mod selector;
pub mod status;
pub mod template;

pub use ids::{
    ClusterGroupBindingId, ClusterGroupId, ClusterId, FederationId, Id, Ident, JobId, MachineId,
    NodeGroupId, TemplateId,
};
pub use scope::Scope;
