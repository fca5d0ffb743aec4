//! Response times over the API (docs/teams.md#response-times): the figures the admins' page draws.

use anteroom_domain::stats::{MAX_DAYS, ResponseTimes};
use axum::{Json, extract::State};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, ApiResult, Forbidden, Invalid, Unauthorized},
    extract::{ApiQuery, Caller},
};
use crate::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(response_times))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct Period {
    /// How many days back, 1 to 90 (default 30; the page offers 7, 30 and 90).
    #[param(minimum = 1, maximum = 90)]
    days: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/api/v1/stats/response-times",
    tag = "teams",
    params(Period),
    responses((status = 200, description = "Median and 95th percentile time to answer, and the shares expired and undelivered, per day, session, server and person", body = ResponseTimes), Invalid, Forbidden, Unauthorized)
)]
async fn response_times(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(period): ApiQuery<Period>,
) -> ApiResult<Json<ResponseTimes>> {
    caller.require(|role| role.can_manage(), "read response times")?;
    let days = period.days.unwrap_or(30);
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(ApiError::validation("days is from 1 to 90."));
    }
    Ok(Json(state.store.response_times(days).await?))
}
