//! Who is calling and what they may do: JWT verification ([`token`]), Keystone tokens
//! ([`keystone`]), the request context
//! extractor ([`context`]) and the oslo.policy-compatible rule engine ([`policy`]).

pub mod context;
pub mod keystone;
pub mod policy;
pub mod token;

pub use context::{Authenticator, RequestContext};
