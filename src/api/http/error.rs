//! One error type for every handler, rendered as Magnum's error body:
//! `{"errors": [{"request_id", "code", "status", "title", "detail", "links"}]}`.

use super::error_body::{ErrorBody, ErrorEntry, MicroversionError, StandardError};
use crate::store::StoreError;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 with a sentence.
    #[error("{0}")]
    BadRequest(String),
    /// 401; the sentence says why the credentials were refused.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 with a sentence.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 503 with a sentence: the service lacks something it needs (e.g. the `[certificates]`
    /// key); the sentence names what, without secrets.
    #[error("{0}")]
    ServiceUnavailable(String),
    /// The service cannot answer now (database unreachable).
    #[error("The service is temporarily unavailable; try again shortly.")]
    Unavailable(#[source] StoreError),
    /// A framework-level error (unknown route, wrong method, bad version header, method not
    /// available at the negotiated microversion): Magnum answers these with empty strings.
    #[error("")]
    Framework(StatusCode),
    /// The requested microversion is outside the supported range.
    #[error("Requested microversion is unsupported")]
    MicroversionUnsupported,
    /// Anything unexpected: logged with its cause chain, answered without internals.
    #[error("An unexpected error prevented the server from fulfilling your request.")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    pub fn bad_request(msg: impl Into<String>) -> Self {
        ApiError::BadRequest(msg.into())
    }
    pub fn not_found(msg: impl Into<String>) -> Self {
        ApiError::NotFound(msg.into())
    }
    pub fn conflict(msg: impl Into<String>) -> Self {
        ApiError::Conflict(msg.into())
    }
    pub fn forbidden(msg: impl Into<String>) -> Self {
        ApiError::Forbidden(msg.into())
    }
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        ApiError::Internal(err.into())
    }
    /// "Policy doesn't allow X to be performed."
    pub fn policy(rule: &str) -> Self {
        ApiError::Forbidden(format!("Policy doesn't allow {rule} to be performed."))
    }
}

/// The 503 sentence of a change whose commit the database did not confirm: the client must
/// not take it as failed (the change may be there) nor resend it blindly.
pub const COMMIT_UNCONFIRMED: &str = "The database did not confirm the change in time; it may \
     have been applied. Check before retrying.";

impl From<StoreError> for ApiError {
    /// The generic mapping; handlers turn `NotFound`, `Ambiguous` and the constraints they
    /// expect into resource-specific sentences first.
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(_) | StoreError::TimedOut(_) => ApiError::Unavailable(err),
            StoreError::CommitUnconfirmed(_) => {
                tracing::warn!(error = %err, "a commit's outcome is unknown");
                ApiError::ServiceUnavailable(COMMIT_UNCONFIRMED.into())
            }
            StoreError::Conflict { ref constraint } => ApiError::Conflict(format!(
                "The request conflicts with existing data ({constraint})."
            )),
            StoreError::Stale => {
                ApiError::Conflict("The resource was changed by another request; retry.".into())
            }
            StoreError::NotFound | StoreError::NodeGroupNotFound(_) => {
                ApiError::NotFound("The resource could not be found.".into())
            }
            other => ApiError::Internal(other.into()),
        }
    }
}

/// Magnum's title: the message up to, not including, the first `.`.
pub fn title_of(detail: &str) -> &str {
    detail.split('.').next().unwrap_or(detail)
}

/// The standard error body for a status and sentence.
pub fn error_body(status: StatusCode, detail: &str) -> ErrorBody {
    let code = if status.is_server_error() {
        "server"
    } else {
        "client"
    };
    ErrorBody::one(ErrorEntry::Standard(StandardError {
        request_id: String::new(),
        code: code.into(),
        status: status.as_u16(),
        title: title_of(detail).into(),
        detail: detail.into(),
        links: vec![],
    }))
}

/// The empty-strings body of framework-level errors.
pub fn framework_body(status: StatusCode) -> ErrorBody {
    ErrorBody::one(ErrorEntry::Standard(StandardError {
        request_id: String::new(),
        code: String::new(),
        status: status.as_u16(),
        title: String::new(),
        detail: String::new(),
        links: vec![],
    }))
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_) | ApiError::ServiceUnavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Framework(status) => *status,
            ApiError::MicroversionUnsupported => StatusCode::NOT_ACCEPTABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        match self {
            ApiError::Internal(cause) => {
                tracing::error!(error = %format!("{cause:#}"), "request failed");
            }
            ApiError::Unavailable(cause) => {
                tracing::error!(error = %cause, "database unavailable");
            }
            _ => {}
        }
        let body = match self {
            ApiError::Framework(status) => framework_body(*status),
            ApiError::MicroversionUnsupported => {
                ErrorBody::one(ErrorEntry::Microversion(MicroversionError::new()))
            }
            other => error_body(status, &other.to_string()),
        };
        let mut resp = HttpResponse::build(status);
        if let ApiError::Unauthorized(reason) = self {
            let value = format!(
                "Bearer realm=\"fleetyard\", error=\"invalid_token\", error_description=\"{}\"",
                reason.replace('"', "'")
            );
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.insert_header((header::WWW_AUTHENTICATE, v));
            }
        }
        resp.json(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_is_the_message_up_to_the_first_period() {
        assert_eq!(
            title_of("Invalid input for field/attribute node_count. Value: '4'. x"),
            "Invalid input for field/attribute node_count"
        );
        assert_eq!(title_of("no period"), "no period");
    }

    #[test]
    fn client_and_server_errors_have_their_codes() {
        let json = |b| serde_json::to_value(b).expect("serialisable");
        let b = json(error_body(
            StatusCode::NOT_FOUND,
            "Cluster foo could not be found.",
        ));
        assert_eq!(b["errors"][0]["code"], "client");
        assert_eq!(b["errors"][0]["status"], 404);
        assert_eq!(b["errors"][0]["title"], "Cluster foo could not be found");
        assert_eq!(b["errors"][0]["request_id"], "");
        let b = json(error_body(StatusCode::INTERNAL_SERVER_ERROR, "x."));
        assert_eq!(b["errors"][0]["code"], "server");
    }
}
