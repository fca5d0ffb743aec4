//! Every API error as the JSON of docs/api.md#errors — `{"error", "message", "details"?}` — with its status decided here only.

use anteroom_app::{domain::ManagedInputError, store::StoreError};
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

/// A refused request.
#[derive(Debug)]
pub struct ApiError {
    code: &'static str,
    message: String,
    details: Option<Value>,
    /// Seconds until a refused caller may try again (`Retry-After`); `u32` keeps the error small.
    retry_after: Option<u32>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Too many requests: try again in `seconds` (sent as `Retry-After`).
    pub fn rate_limited(seconds: u64, message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(u32::try_from(seconds.max(1)).unwrap_or(u32::MAX)),
            ..Self::new("rate_limited", message)
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
        Self::new("validation_error", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new("unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new("forbidden", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new("not_found", message)
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The one place a code becomes an HTTP status.
    fn status(&self) -> StatusCode {
        match self.code {
            "validation_error" => StatusCode::UNPROCESSABLE_ENTITY,
            "managed_input_conflict" | "managed_input_state" | "managed_input_recovery" => {
                StatusCode::CONFLICT
            }
            "unauthorized" => StatusCode::UNAUTHORIZED,
            "forbidden" => StatusCode::FORBIDDEN,
            "not_found" => StatusCode::NOT_FOUND,
            "payload_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
            "rate_limited" => StatusCode::TOO_MANY_REQUESTS,
            "method_not_allowed" => StatusCode::METHOD_NOT_ALLOWED,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl From<ManagedInputError> for ApiError {
    fn from(error: ManagedInputError) -> Self {
        Self {
            code: error.code(),
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
                    "unavailable",
                    "Anteroom could not reach its database; nothing was changed. Try again shortly.",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut body = json!({ "error": self.code, "message": self.message });
        if let Some(details) = self.details {
            body["details"] = details;
        }
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
