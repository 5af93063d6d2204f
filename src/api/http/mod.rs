//! What every request goes through, whichever face it is for: the request id, path rerouting
//! and the root span (`request`), the request context (`context`, `keystone`), microversions,
//! request bodies and query strings, Magnum's error body, pagination, links, the optimistic
//! retry policy and the connection's own errors (`wire`).

pub mod body;
pub mod context;
pub mod error;
pub mod error_body;
pub mod keystone;
pub mod links;
pub mod microversion;
pub mod microversion_middleware;
pub mod pagination;
pub mod pyliteral;
pub mod request;
pub mod retry;
pub mod wire;
