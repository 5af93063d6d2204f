//! Magnum's error body: `{"errors": [{"request_id", "code", "status", "title", "detail",
//! "links"}]}`, and the microversion variant of its entry.

use serde::Serialize;
use utoipa::ToSchema;

use super::links::Link;
use super::microversion::{MAX_VERSION, MIN_VERSION};

/// An error entry. `code` is `client` or `server`; framework-level errors (unknown route,
/// wrong method, malformed version header, method unavailable at the microversion) have empty
/// strings for everything but `status`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StandardError {
    pub request_id: String,
    pub code: String,
    pub status: u16,
    /// The detail up to, not including, its first `.`.
    pub title: String,
    pub detail: String,
    pub links: Vec<Link>,
}

/// The entry of a 406 for a microversion outside the supported range.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MicroversionError {
    /// `magnum.microversion-unsupported`.
    pub code: String,
    pub title: String,
    pub min_version: String,
    pub max_version: String,
    pub links: Vec<Link>,
}

impl MicroversionError {
    pub fn new() -> Self {
        MicroversionError {
            code: "magnum.microversion-unsupported".into(),
            title: "Requested microversion is unsupported".into(),
            min_version: MIN_VERSION.to_string(),
            max_version: MAX_VERSION.to_string(),
            links: vec![Link::new(
                "http://docs.openstack.org/api-guide/compute/microversions.html".into(),
                "help",
            )],
        }
    }
}

impl Default for MicroversionError {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ErrorEntry {
    Standard(StandardError),
    Microversion(MicroversionError),
}

/// Every error response of the service: one entry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    pub errors: Vec<ErrorEntry>,
}

impl ErrorBody {
    pub fn one(entry: ErrorEntry) -> Self {
        ErrorBody {
            errors: vec![entry],
        }
    }
}
