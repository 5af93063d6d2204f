//! The integration suite: the real application over HTTP, against real PostgreSQL (a fresh
//! database per test) and SQLite.

mod helpers;

mod access_matrix;
mod allocator;
mod api_ref;
mod blocked;
mod certificates;
mod cluster_templates;
mod clusters;
mod conductor;
mod conventions;
mod db_outage;
mod deletes;
mod drills;
mod federation_jobs;
mod federations;
mod health_probe;
mod input_edge;
mod isolation;
mod jwt_attacks;
mod keystone;
mod kubernetes_driver;
mod lifecycle;
mod machine_counts;
mod machines;
mod metrics;
mod noauth_identity;
mod node_limit;
mod nodegroups;
mod notify;
mod notify_wakeup;
mod openapi;
mod quotas_stats_services;
mod registry_apply;
mod registry_kubectl;
mod registry_kubectl_versions;
mod registry_machines;
mod registry_reviews;
mod registry_schema;
mod registry_semantics;
mod registry_validation;
mod registry_watch;
mod store_contract;
mod tls;
mod wire;
