//! The integration suite: the real application over HTTP, against real PostgreSQL (a fresh
//! database per test) and SQLite.

mod helpers;

mod api_ref;
mod certificates;
mod cluster_templates;
mod clusters;
mod conductor;
mod conventions;
mod federation_jobs;
mod federations;
mod isolation;
mod keystone;
mod kubernetes_driver;
mod noauth_identity;
mod nodegroups;
mod notify;
mod openapi;
mod quotas_stats_services;
mod store_contract;
