//! The Kubernetes-style API (`clusterregistry.k8s.io/v1alpha1` `clusters` and the read-only
//! `multicluster.x-k8s.io/v1alpha1` `clusterprofiles`) that an unmodified kubectl uses:
//! Status errors, discovery, OpenAPI v3, validation, tables and patches, as pure building
//! blocks for the handlers.

pub mod discovery;
pub mod objects;
pub mod openapi;
pub mod patch;
pub mod schema;
pub mod status;
pub mod table;
pub mod validation;
