//! Every API error as the JSON of docs/api.md#errors — `{"error", "message", "details"?}` — with its status decided here only.

use anteroom_domain::{ManagedInputError, error::RefusalKind};
use anteroom_store::StoreError;
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoResponses, ToSchema};

/// What kind of refusal an error is: its code on the wire and, through one exhaustive match, its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Validation,
    Conflict,
    State,
    Recovery,
    Unauthorized,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    MethodNotAllowed,
    /// The database could not be reached; nothing was changed.
    Unavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validation => RefusalKind::Validation.as_str(),
            Self::Conflict => RefusalKind::Conflict.as_str(),
            Self::State => RefusalKind::State.as_str(),
            Self::Recovery => RefusalKind::Recovery.as_str(),
            Self::NotFound => RefusalKind::NotFound.as_str(),
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::PayloadTooLarge => "payload_too_large",
            Self::RateLimited => "rate_limited",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Unavailable => "unavailable",
        }
    }

    /// The one place a code becomes an HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Self::Validation => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Conflict | Self::State | Self::Recovery => StatusCode::CONFLICT,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The code of a domain refusal.
    pub fn of(refusal: &ManagedInputError) -> Self {
        match refusal.kind() {
            RefusalKind::Validation => Self::Validation,
            RefusalKind::Conflict => Self::Conflict,
            RefusalKind::State => Self::State,
            RefusalKind::Recovery => Self::Recovery,
            RefusalKind::NotFound => Self::NotFound,
        }
    }
}

/// A refused request.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    message: String,
    details: Option<Value>,
    /// Seconds until a refused caller may try again (`Retry-After`); `u32` keeps the error small.
    retry_after: Option<u32>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Not now (the server is shutting down): try again in `seconds` (sent as `Retry-After`).
    pub fn unavailable_for(seconds: u64, message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(u32::try_from(seconds.max(1)).unwrap_or(u32::MAX)),
            ..Self::new(ErrorCode::Unavailable, message)
        }
    }

    /// Too many requests: try again in `seconds` (sent as `Retry-After`).
    pub fn rate_limited(seconds: u64, message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(u32::try_from(seconds.max(1)).unwrap_or(u32::MAX)),
            ..Self::new(ErrorCode::RateLimited, message)
        }
    }

    pub fn retry_after(&self) -> Option<u32> {
        self.retry_after
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Validation, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// What the caller is told.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }
}

impl From<ManagedInputError> for ApiError {
    fn from(error: ManagedInputError) -> Self {
        Self {
            code: ErrorCode::of(&error),
            message: error.message().to_owned(),
            details: error.details().cloned(),
            retry_after: None,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Refused(refusal) => refusal.into(),
            other => {
                // Internal detail goes to the log, never to the caller.
                tracing::error!(error = %other, "store failure");
                Self::new(
                    ErrorCode::Unavailable,
                    "Anteroom could not reach its database; nothing was changed. Try again shortly.",
                )
            }
        }
    }
}

/// The body of every error reply (docs/api.md#errors).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// `validation_error`, `managed_input_conflict`, `managed_input_state`, `managed_input_recovery`,
    /// `unauthorized`, `forbidden`, `not_found`, `payload_too_large`, `rate_limited`, `method_not_allowed` or
    /// `unavailable`.
    pub error: &'static str,
    /// A sentence a person can act on.
    pub message: String,
    /// Per-field problems, or what an already-answered question was answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let body = ErrorBody {
            error: self.code.as_str(),
            message: self.message,
            details: self.details,
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            // How to authenticate, as RFC 6750 (and the MCP authorization flow) expect of every 401.
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

// The error replies the OpenAPI document names, each declared once and listed by the routes that give it.

/// No credential, or one that is not valid.
#[derive(IntoResponses)]
#[response(
    status = 401,
    description = "unauthorized: no credential, or one that is not valid"
)]
pub struct Unauthorized(pub ErrorBody);

/// The caller's role may not do this.
#[derive(IntoResponses)]
#[response(
    status = 403,
    description = "forbidden: the caller's role may not do this"
)]
pub struct Forbidden(pub ErrorBody);

#[derive(IntoResponses)]
#[response(status = 404, description = "not_found")]
pub struct NotFound(pub ErrorBody);

#[derive(IntoResponses)]
#[response(
    status = 409,
    description = "managed_input_state or managed_input_conflict: the record is not in a state that allows this, or another writer got there first"
)]
pub struct Conflict(pub ErrorBody);

#[derive(IntoResponses)]
#[response(
    status = 422,
    description = "validation_error: malformed input, with per-field details"
)]
pub struct Invalid(pub ErrorBody);

/// A body over the body limit (`ANTEROOM_BODY_LIMIT_KIB`), refused before it is read.
#[derive(IntoResponses)]
#[response(
    status = 413,
    description = "payload_too_large: the body is over the body limit (256 KiB unless configured)"
)]
pub struct PayloadTooLarge(pub ErrorBody);

#[derive(IntoResponses)]
#[response(status = 429, description = "rate_limited, with Retry-After", headers(("Retry-After" = u64, description = "Seconds until a retry may succeed")))]
pub struct RateLimited(pub ErrorBody);
