//! The Kubernetes-facing APIs over the same cluster rows: `clusterregistry.k8s.io/v1alpha1`
//! `Cluster` (read-write, namespaced by project) and `multicluster.x-k8s.io/v1alpha1`
//! `ClusterProfile` (read-only), with what kubectl needs around them.

pub mod feed;
pub mod objects;
pub mod view;

/// First path segments served as they come (not rerouted under `/v1`).
pub const ROOTS: &[&str] = &[
    "api", "apis", "openapi", "version", "healthz", "readyz", "livez",
];
