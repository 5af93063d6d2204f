//! Fleetyard: container-infrastructure management speaking the OpenStack Magnum v1 API.
//!
//! A guided tour:
//! - [`config`]: one typed settings tree (OpenStack INI file, then `FLEETYARD__SECTION__KEY`).
//! - [`startup`]: builds the application (store, policy, auth, HTTP server, background roles).
//! - [`tls`]: HTTPS for the API, with certificates re-read when they change on disk.
//! - [`api`]: HTTP only — the shared state and the request context, version discovery,
//!   microversions, Magnum's error body, pagination, JSON-Patch, Python literals as
//!   python-magnumclient sends them, and one module per resource.
//! - [`auth`]: JWT verification, who is calling, the oslo.policy-compatible engine.
//! - [`domain`]: types and rules with no I/O (identifiers, labels, statuses, templates).
//! - [`store`]: the only place with SQL; PostgreSQL and SQLite behind one trait.
//! - [`certificates`]: per-cluster CAs, CSR signing, private keys encrypted at rest.
//! - [`conductor`]: asynchronous driver work and heartbeats.
//! - [`drivers`]: the per-COE drivers.
//! - [`notify`]: notification events, the outbox relay and its sinks.

pub mod api;
pub mod auth;
pub mod certificates;
pub mod conductor;
pub mod config;
pub mod domain;
pub mod drivers;
pub mod metrics;
pub mod notify;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod tls;
