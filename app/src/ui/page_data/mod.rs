//! The web app's server side: page views built from the store, and answers recorded for a signed-in person.

use std::{collections::BTreeMap, sync::Arc};

use chrono::{DateTime, Utc};

use super::{
    model::{
        ActiveRound, AnswerNotice, AnswerPost, Asker, AskerSeenView, BrowserRow, HISTORY_PAGE,
        HistoryEntry, OPEN_ROUNDS_SHOWN, Outcome, PasskeyRow, ProfileView, QuestionPreview,
        QueueItem, QueueView, RecordedAction, RequestBody, RequestView, RunView, SessionPage,
        ShownAnswer, SignInRow, SlackLinkRow, StandingChoice, StandingView, TRIAGE_MAX,
        TriageOutcome, Viewer, clock_minute, control_name, parse_clock_minute,
    },
    posted_answer::read_answer,
};
use crate::{
    domain::{
        ManagedInputError,
        access::hash_secret,
        form::{FieldErrors, FormModel},
        ids::{IdempotencyKey, RequestKey, RoundId, SessionId},
        limits::Limits,
        reach::{
            DIGEST_AFTER_MAX, EMAIL_AFTER_MINUTES_MAX, EmailPreference, EmailQuestions, QuietHours,
        },
        responders::{Responder, TeamView, describe},
        round::{
            ElicitationRequest, ElicitationResponse, FailureCode, ResponseAction, Round,
            RoundOutcome, RoundStatus, Submission,
        },
        standing::{NewStandingAnswer, QuestionMatch, standing_expiry},
        webhook::WebhookDelivery,
    },
    store::{AttentionItem, Store, StoreError, StoreResult, schemas::RegexPatterns},
};

mod admin;
mod answering;
mod profile;
mod queue;
mod session;
mod standing;
mod triage;

pub use session::request_views;

/// Told of every answer the store took, recorded or replayed; the host decides what to announce.
pub type AnswerHook = Arc<dyn Fn(&Round, Submission) + Send + Sync>;

/// Told of any other change a page made to a round (a deadline extended), for the host to announce.
pub type RoundHook = Arc<dyn Fn(&Round) + Send + Sync>;

/// Told of a change a page made to a session itself (its run asked to stop), for the host to announce.
pub type SessionHook = Arc<dyn Fn(&SessionId) + Send + Sync>;

/// The page-data service: the one way the pages' server side reaches data. Server functions and the server's
/// form posts ask it for page views and hand it answers; the store stays behind it, and every answer the store
/// took goes to the host's hook, the server's one announce path, which decides what is news (events for live
/// pages and producers, metrics).
#[derive(Clone)]
pub struct PageData {
    store: Arc<dyn Store>,
    on_answer: AnswerHook,
    on_round_change: RoundHook,
    on_session_change: SessionHook,
}

impl PageData {
    pub fn new(
        store: Arc<dyn Store>,
        on_answer: AnswerHook,
        on_round_change: RoundHook,
        on_session_change: SessionHook,
    ) -> Self {
        Self {
            store,
            on_answer,
            on_round_change,
            on_session_change,
        }
    }

    /// Records `responses` to `round` as `viewer`'s answer under `idempotency_key`, and hands what the store
    /// took to the host's announce hook: every answer a page gives goes through here.
    async fn record(
        &self,
        round: &Round,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        idempotency_key: IdempotencyKey,
        viewer: &Viewer,
    ) -> StoreResult<(Round, Submission)> {
        let (round, submission) = self
            .store
            .submit_responses_to(
                round,
                responses,
                idempotency_key,
                Some(viewer.principal.label()),
            )
            .await?;
        (self.on_answer)(&round, submission);
        Ok((round, submission))
    }
}

/// What a person is told of a store error: a refusal's own message, never a database's detail.
fn said(error: StoreError) -> String {
    match error {
        StoreError::Refused(refusal) => refusal.message().to_owned(),
        other => {
            tracing::error!(error = %other, "a page could not reach the store");
            "The data could not be changed just now; try again in a moment.".to_owned()
        }
    }
}

fn ms(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

fn asker(round: &Round) -> Asker {
    Asker {
        server: round.server.clone(),
        kind: round.operation_kind.as_str().to_owned(),
        name: round.operation_name.clone(),
    }
}

/// A form's CSRF token must be the signed-in browser's own: a form from before a sign-in change is refused.
fn same_sign_in(viewer: &Viewer, csrf: &str) -> Result<(), String> {
    if csrf == viewer.csrf {
        Ok(())
    } else {
        Err("This page is out of date (your sign-in changed). Reload it.".to_owned())
    }
}
