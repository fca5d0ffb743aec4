//! Answers from a page: checked, recorded first-answer-wins, replayed alike to identical questions, and turned into a standing answer when asked.

use super::*;

impl PageData {
    /// Records `post` as `viewer`'s answer; every outcome is a notice for the person.
    pub async fn answer(&self, viewer: &Viewer, post: AnswerPost) -> AnswerNotice {
        submit_answer(self, viewer, post).await
    }
}

/// How many waiting questions with the same summary are compared for "answer all alike", and how many one
/// answer answers at most.
const ALIKE_SCAN: u32 = 1_000;

const ALIKE_MAX: usize = 200;

/// Records `post` as `viewer`'s answer. Every outcome is a notice for the person; nothing here fails.
async fn submit_answer(services: &PageData, viewer: &Viewer, post: AnswerPost) -> AnswerNotice {
    let closed = |message: &str| AnswerNotice::Closed {
        round_id: post.round_id.clone(),
        message: message.to_owned(),
    };
    if post.csrf != viewer.csrf {
        return closed(
            "This page is out of date (your sign-in changed). Reload it and answer again.",
        );
    }
    if !viewer.can_answer() {
        return closed("You have the viewer role: you can see questions but not answer them.");
    }
    let Some(action) = ResponseAction::parse(&post.action) else {
        return closed("Choose Accept, Decline or Dismiss.");
    };
    let Ok(round_id) = RoundId::parse(&post.round_id) else {
        return closed("This question does not exist.");
    };
    let Ok(idempotency_key) = IdempotencyKey::parse(format!("web-{}", post.attempt)) else {
        return closed("This page is out of date. Reload it and answer again.");
    };
    let store = services.store.as_ref();
    let round = match store.get_round(round_id).await {
        Ok(round) if round.session_id.as_str() == post.session_id => round,
        Ok(_) => return closed("This question does not exist."),
        Err(error) if error.is_not_found() => return closed("This question does not exist."),
        Err(error) => return unavailable(&post, &error),
    };
    if round.status != RoundStatus::Pending
        && round.idempotency_key.as_ref() != Some(&idempotency_key)
    {
        return settled_notice(&round);
    }
    match store.may_answer(&viewer.principal, &round).await {
        Ok(true) => {}
        Ok(false) => {
            let scope = store.answer_scope(&round).await.unwrap_or_default();
            return closed(&format!(
                "This question is for {}; you may not answer it.",
                describe(&scope)
            ));
        }
        Err(error) => return unavailable(&post, &error),
    }
    let responses = match read_answer(
        &request_views(&round),
        action,
        &post.choices,
        &post.values,
        &RegexPatterns,
    ) {
        Ok(responses) => responses,
        Err(fields) => return refused(&post, "Some answers need another look.", fields),
    };
    let recorded_action = RecordedAction::of(responses.values().map(|response| response.action));
    let given = responses.clone();
    match services
        .record(&round, responses, idempotency_key, viewer)
        .await
    {
        Ok((round, submission)) => {
            if post.standing && submission == Submission::Recorded {
                stand_by_answer(store, &round, viewer, &post.standing_choice).await;
            }
            let alike = if post.alike {
                Some(answer_alike(services, &round, &given, viewer, &post.attempt).await)
            } else {
                None
            };
            AnswerNotice::Recorded {
                round_id: post.round_id.clone(),
                action: recorded_action,
                alike,
            }
        }
        Err(StoreError::Refused(ManagedInputError::ValidationError { message, details })) => {
            refused(&post, &message, server_field_errors(details.as_ref()))
        }
        Err(StoreError::Refused(ManagedInputError::ManagedInputConflict { .. })) => {
            match store.get_round(round_id).await {
                Ok(round) => settled_notice(&round),
                Err(error) => unavailable(&post, &error),
            }
        }
        Err(StoreError::Refused(refusal)) => closed(refusal.message()),
        Err(error) => unavailable(&post, &error),
    }
}

/// The waiting questions identical to `round` (same server, tool, message and form, any session) that
/// `viewer` may answer by `team`, at most [`ALIKE_MAX`]: what one answer may answer alike. Only rounds with
/// the same summary are read, and none for a question that cannot be merged (a secret field, a URL).
pub(super) async fn alike_waiting(
    store: &dyn Store,
    round: &Round,
    viewer: &Viewer,
    team: &TeamView,
) -> StoreResult<Vec<Round>> {
    let Ok(key) = QuestionMatch::of(round).map(|question| question.key()) else {
        return Ok(Vec::new());
    };
    Ok(store
        .open_rounds_asking(&round.summary, ALIKE_SCAN)
        .await?
        .into_iter()
        .filter(|other| other.round_id != round.round_id)
        .filter(|other| QuestionMatch::of(other).is_ok_and(|question| question.key() == key))
        .filter(|other| viewer.may_answer(&team.scope(other)))
        .take(ALIKE_MAX)
        .collect())
}

/// Answers each waiting question identical to `round` as `round` was answered (`given`): each recorded and
/// delivered on its own, each idempotent (a retried post answers none twice), each only if the person may
/// answer it. Returns how many were answered and how many had been answered or had ended meanwhile.
async fn answer_alike(
    services: &PageData,
    round: &Round,
    given: &BTreeMap<RequestKey, ElicitationResponse>,
    viewer: &Viewer,
    attempt: &str,
) -> (u32, u32) {
    let store = services.store.as_ref();
    let others = match store.team_view().await {
        Ok(team) => alike_waiting(store, round, viewer, &team).await,
        Err(error) => Err(error),
    };
    let others = match others {
        Ok(others) => others,
        Err(error) => {
            tracing::warn!(%error, "the identical questions could not be read; only this one was answered");
            return (0, 0);
        }
    };
    let Some(response) = given.values().next() else {
        return (0, 0);
    };
    let (mut answered, mut elsewhere) = (0, 0);
    for other in others {
        let (Some(key), Ok(idempotency_key)) = (
            other.requests.keys().next().cloned(),
            IdempotencyKey::parse(format!("web-{attempt}-{}", other.round_id.0.simple())),
        ) else {
            continue;
        };
        let responses = BTreeMap::from([(key, response.clone())]);
        match services
            .record(&other, responses, idempotency_key, viewer)
            .await
        {
            Ok(_) => answered += 1,
            Err(_) => elsewhere += 1,
        }
    }
    (answered, elsewhere)
}

/// Makes `round`'s answer stand for questions like it in its session for an hour, made by the viewer. A
/// question that cannot have one never shows the checkbox; a rule that cannot be made leaves the answer as it
/// was recorded.
async fn stand_by_answer(
    store: &dyn Store,
    round: &Round,
    viewer: &Viewer,
    choice: &StandingChoice,
) {
    let (Ok(mut question), Some(response)) = (
        QuestionMatch::of(round),
        round
            .responses
            .as_ref()
            .and_then(|responses| responses.values().next()),
    ) else {
        return;
    };
    let Ok(expires_at) = standing_expiry(store.now(), choice.minutes) else {
        return;
    };
    // The message's first line ("Allow `npm test`", not the run that follows it), and never so short that it
    // would match nearly anything.
    let first_line = question
        .message
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let prefix = choice.prefix && first_line.trim().chars().count() >= 8;
    if prefix {
        question.message = first_line;
    }
    let made = store
        .create_standing_answer(NewStandingAnswer {
            created_by: viewer.principal.label(),
            session_id: (!choice.every_session).then(|| round.session_id.clone()),
            question,
            action: response.action,
            content: response.content.clone(),
            expires_at,
            use_limit: choice.limit,
            prefix,
        })
        .await;
    if let Err(error) = made {
        tracing::warn!(%error, round = %round.round_id, "the standing answer was not made");
    }
}

fn refused(post: &AnswerPost, message: &str, fields: FieldErrors) -> AnswerNotice {
    AnswerNotice::Refused {
        round_id: post.round_id.clone(),
        message: message.to_owned(),
        fields,
        // The choices too, so a refused round of several keeps how each request was being answered.
        posted: post.values.iter().chain(&post.choices).cloned().collect(),
    }
}

fn unavailable(post: &AnswerPost, error: &StoreError) -> AnswerNotice {
    tracing::error!(%error, round_id = %post.round_id, "cannot record an answer from the web app");
    AnswerNotice::Closed {
        round_id: post.round_id.clone(),
        message: "The answer could not be saved just now. Try again in a moment.".to_owned(),
    }
}

/// Why a round no longer takes answers: who answered it, or that it expired or failed.
fn settled_notice(round: &Round) -> AnswerNotice {
    let round_id = round.round_id.to_string();
    let closed = |code: &str| AnswerNotice::Closed {
        round_id: round_id.clone(),
        message: format!("This question was closed without an answer ({code})."),
    };
    let outcome = Outcome::of(round);
    match &outcome {
        Outcome::Expired => AnswerNotice::Closed {
            round_id: round_id.clone(),
            message: "This question expired before it was answered; the agent went on without it."
                .to_owned(),
        },
        Outcome::Undelivered { .. } => closed(FailureCode::Undelivered.as_str()),
        Outcome::Failed { code, .. } => closed(code),
        Outcome::Waiting | Outcome::Answered { .. } => AnswerNotice::AlreadyAnswered {
            round_id: round_id.clone(),
            by: round.responded_by.clone(),
            at_ms: round.responded_at.map(ms),
            actions: outcome.actions().to_vec(),
        },
    }
}

/// The store's per-field errors (`{request_key, fields}`) keyed by control name.
fn server_field_errors(details: Option<&serde_json::Value>) -> FieldErrors {
    let Some(details) = details else {
        return FieldErrors::new();
    };
    let key = details
        .get("request_key")
        .and_then(|key| key.as_str())
        .unwrap_or_default();
    let Some(fields) = details.get("fields").and_then(|fields| fields.as_object()) else {
        return FieldErrors::new();
    };
    fields
        .iter()
        .map(|(field, problems)| {
            let problems = problems
                .as_array()
                .map(|list| {
                    list.iter()
                        .filter_map(|p| p.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            (control_name(key, field), problems)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn store_field_errors_are_keyed_by_control() {
        let errors = server_field_errors(Some(
            &json!({"request_key": "q1", "fields": {"age": ["must be at least 18"]}}),
        ));
        assert_eq!(errors["q1/age"], vec!["must be at least 18"]);
        assert!(server_field_errors(None).is_empty());
    }
}
