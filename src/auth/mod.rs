//! Who is calling and what they may do: JWT verification ([`token`]), Keystone tokens
//! ([`keystone`]), the identity a request's headers give under the configured strategy
//! ([`authenticator`]), the Kubernetes user information of a caller and the one
//! `Impersonate-*` headers name ([`impersonation`]), the caller a kube-apiserver's front proxy
//! forwards ([`front_proxy`]) and the oslo.policy-compatible rule engine ([`policy`]).

pub mod access_review;
pub mod authenticator;
pub mod front_proxy;
pub mod impersonation;
pub mod keystone;
pub mod policy;
pub mod token;

pub use authenticator::{Authenticator, Header, IdentifyError, Identity};
