//! `/answer/{token}`: the answer links of e-mails (and push notifications' buttons). A GET only shows what
//! the link would answer and a button — mail scanners open every link, so a GET changes nothing; the POST
//! uses the single-use token up in one statement and answers through the page's path, credited to the
//! token's person ("rita via e-mail"). A browser gets a page; a caller that asks for JSON (the service
//! worker) gets JSON.

use anteroom_domain::{
    access::Principal,
    limits::Limits,
    reach::{AnswerToken, QuickAnswer, quick_answers},
    round::{Round, RoundStatus, Submission},
};
use axum::{
    Json, Router,
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{Html, IntoResponse, Response},
    routing::get,
};
use chrono::{DateTime, Utc};
use serde_json::json;

use anteroom_domain::text::escape_html as escape;

use anteroom_api::{AppState, answers::answer_one, credentials};

pub fn routes() -> Router<AppState> {
    Router::new().route("/answer/{token}", get(show).post(answer))
}

/// What a link's visit found.
struct Outcome {
    status: StatusCode,
    /// A code for JSON callers: `confirm`, `answered`, `closed`, `used`, `expired`, `not_found`, `forbidden`.
    code: &'static str,
    title: String,
    detail: String,
    /// The button to confirm with, on a GET of a live link.
    confirm: Option<String>,
    round: Option<Round>,
}

impl Outcome {
    fn refused(status: StatusCode, code: &'static str, title: &str, detail: String) -> Self {
        Self {
            status,
            code,
            title: title.to_owned(),
            detail,
            confirm: None,
            round: None,
        }
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"))
}

fn render(outcome: Outcome, token: &str, headers: &HeaderMap) -> Response {
    if wants_json(headers) {
        let body = json!({"ok": outcome.status.is_success() && outcome.code != "closed",
            "code": outcome.code, "title": outcome.title, "message": outcome.detail});
        return (outcome.status, Json(body)).into_response();
    }
    let mut page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\"><title>Anteroom: {title}</title></head><body><main>\
         <h1>{title}</h1><p class=\"detail\">{detail}</p>",
        title = escape(&outcome.title),
        detail = escape(&outcome.detail),
    );
    if let Some(round) = &outcome.round {
        page.push_str(&format!(
            "<p>{} asks, through {}, in session {}:</p>",
            escape(round.server.as_deref().unwrap_or("An agent")),
            escape(&round.operation_name),
            escape(round.session_id.as_str())
        ));
        for request in round.requests.values() {
            page.push_str(&format!(
                "<blockquote><pre>{}</pre></blockquote>",
                escape(request.message())
            ));
        }
        if let Some(label) = &outcome.confirm {
            page.push_str(&format!(
                "<form method=\"post\" action=\"/answer/{}\"><button type=\"submit\">Answer \u{201c}{}\u{201d}</button></form>",
                escape(token),
                escape(label)
            ));
        }
        page.push_str(&format!(
            "<p><a href=\"/sessions/{}\">Open the form in Anteroom</a></p>",
            escape(round.session_id.as_str())
        ));
    }
    page.push_str("</main></body></html>");
    let mut response = (outcome.status, Html(page)).into_response();
    // A token in the URL is a credential: the page is never stored.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

/// The token's question and answer, or why it answers nothing.
async fn resolve(state: &AppState, token: &AnswerToken) -> Result<(Round, QuickAnswer), Outcome> {
    let round = match state.store.get_round(token.round_id).await {
        Ok(round) => round,
        Err(error) if error.is_not_found() => {
            return Err(Outcome::refused(
                StatusCode::NOT_FOUND,
                "not_found",
                "This question is gone",
                "Its record was removed after its retention.".to_owned(),
            ));
        }
        Err(error) => {
            tracing::warn!(%error, "answer link: cannot read the question");
            return Err(Outcome::refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Try again",
                "Anteroom could not read the question.".to_owned(),
            ));
        }
    };
    if round.status != RoundStatus::Pending {
        let detail = match (&round.responded_by, &round.failure) {
            (Some(by), _) => format!("It was already answered by {by}; nothing was recorded."),
            (None, Some(failure)) => format!("{} Nothing was recorded.", failure.message),
            (None, None) => "It is closed; nothing was recorded.".to_owned(),
        };
        return Err(Outcome {
            round: Some(round),
            ..Outcome::refused(
                StatusCode::CONFLICT,
                "closed",
                "This question is no longer open",
                detail,
            )
        });
    }
    let Some(answer) = quick_answers(&round, &Limits::default()).and_then(|mut answers| {
        (token.choice < answers.len()).then(|| answers.swap_remove(token.choice))
    }) else {
        return Err(Outcome::refused(
            StatusCode::NOT_FOUND,
            "not_found",
            "This link answers nothing",
            "It does not match its question.".to_owned(),
        ));
    };
    Ok((round, answer))
}

/// Why a token that cannot be used now cannot.
fn unusable(token: Option<&AnswerToken>, now: DateTime<Utc>) -> Outcome {
    match token {
        None => Outcome::refused(
            StatusCode::NOT_FOUND,
            "not_found",
            "This link is not valid",
            "No answer link has this address; nothing was recorded.".to_owned(),
        ),
        Some(token) if token.used_at.is_some() => Outcome::refused(
            StatusCode::CONFLICT,
            "used",
            "This link was already used",
            "Each answer link works once; nothing more was recorded.".to_owned(),
        ),
        Some(token) if token.expires_at <= now => Outcome::refused(
            StatusCode::GONE,
            "expired",
            "This link has expired",
            "Its question's deadline passed; nothing was recorded.".to_owned(),
        ),
        Some(_) => Outcome::refused(
            StatusCode::CONFLICT,
            "used",
            "This link was just used",
            "Nothing more was recorded.".to_owned(),
        ),
    }
}

async fn show(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    let hash = credentials::hash(&token);
    let found = match state.store.answer_token(&hash).await {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(%error, "answer link: cannot read the token");
            return render(
                Outcome::refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "Try again",
                    "Anteroom could not read this link.".to_owned(),
                ),
                &token,
                &headers,
            );
        }
    };
    let now = state.store.now();
    let outcome = match found {
        Some(found) if found.used_at.is_none() && found.expires_at > now => {
            match resolve(&state, &found).await {
                Ok((round, answer)) => Outcome {
                    status: StatusCode::OK,
                    code: "confirm",
                    title: format!("Answer \u{201c}{}\u{201d}?", answer.label),
                    detail: "Nothing is recorded until you press the button.".to_owned(),
                    confirm: Some(answer.label),
                    round: Some(round),
                },
                Err(outcome) => outcome,
            }
        }
        other => unusable(other.as_ref(), now),
    };
    render(outcome, &token, &headers)
}

async fn answer(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    let hash = credentials::hash(&token);
    let used = match state.store.use_answer_token(&hash).await {
        Ok(used) => used,
        Err(error) => {
            tracing::warn!(%error, "answer link: cannot use the token");
            return render(
                Outcome::refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "Try again",
                    "Anteroom could not use this link; nothing was recorded.".to_owned(),
                ),
                &token,
                &headers,
            );
        }
    };
    let Some(used) = used else {
        let found = state.store.answer_token(&hash).await.ok().flatten();
        tracing::warn!(
            found = found.is_some(),
            "answer link: refused a token that cannot be used"
        );
        return render(
            unusable(found.as_ref(), state.store.now()),
            &token,
            &headers,
        );
    };
    let outcome = match answer_with(&state, &used).await {
        Ok(outcome) | Err(outcome) => outcome,
    };
    render(outcome, &token, &headers)
}

async fn answer_with(state: &AppState, token: &AnswerToken) -> Result<Outcome, Outcome> {
    let person = match state.store.get_user(&token.user_id).await {
        Ok(Some(person)) if person.role.can_answer() => person,
        Ok(_) => {
            return Err(Outcome::refused(
                StatusCode::FORBIDDEN,
                "forbidden",
                "You may not answer",
                "Your Anteroom account no longer answers questions; nothing was recorded."
                    .to_owned(),
            ));
        }
        Err(error) => {
            tracing::warn!(%error, "answer link: cannot read the person");
            return Err(Outcome::refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Try again",
                "Anteroom could not read your account; nothing was recorded.".to_owned(),
            ));
        }
    };
    let (round, answer) = resolve(state, token).await?;
    let by = token.channel.credit(&person.username);
    match answer_one(
        state,
        &round,
        answer.response,
        &Principal::person(&person),
        by,
    )
    .await
    {
        Ok((round, Submission::Recorded)) => Ok(Outcome {
            status: StatusCode::OK,
            code: "answered",
            title: format!("Answered \u{201c}{}\u{201d}", answer.label),
            detail: "The agent gets your answer when it next asks.".to_owned(),
            confirm: None,
            round: Some(round),
        }),
        Ok((round, Submission::Replayed)) => Err(Outcome {
            round: Some(round),
            ..Outcome::refused(
                StatusCode::CONFLICT,
                "closed",
                "Already answered",
                "This answer was already recorded.".to_owned(),
            )
        }),
        Err(error) => Err(Outcome::refused(
            error.code().status(),
            "closed",
            "Nothing was recorded",
            error.message().to_owned(),
        )),
    }
}
