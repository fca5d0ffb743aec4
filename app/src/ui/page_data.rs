//! The web app's server side: page views built from the store, and answers recorded for a signed-in person.

use std::{collections::BTreeMap, sync::Arc};

use chrono::{DateTime, Utc};

use super::{
    model::{
        ActiveRound, AnswerNotice, AnswerPost, Asker, AskerSeenView, BrowserRow, HISTORY_PAGE,
        HistoryEntry, OPEN_ROUNDS_SHOWN, Outcome, ProfileView, QuestionPreview, QueueItem,
        QueueView, RecordedAction, RequestBody, RequestView, SessionPage, ShownAnswer,
        SlackLinkRow, StandingChoice, StandingView, TRIAGE_MAX, TriageOutcome, Viewer,
        clock_minute, control_name, parse_clock_minute,
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

/// Told of every answer the store took, recorded or replayed; the host decides what to announce.
pub type AnswerHook = Arc<dyn Fn(&Round, Submission) + Send + Sync>;

/// Told of any other change a page made to a round (a deadline extended), for the host to announce.
pub type RoundHook = Arc<dyn Fn(&Round) + Send + Sync>;

/// The page-data service: the one way the pages' server side reaches data. Server functions and the server's
/// form posts ask it for page views and hand it answers; the store stays behind it, and every answer the store
/// took goes to the host's hook, the server's one announce path, which decides what is news (events for live
/// pages and producers, metrics).
#[derive(Clone)]
pub struct PageData {
    store: Arc<dyn Store>,
    on_answer: AnswerHook,
    on_round_change: RoundHook,
}

impl PageData {
    pub fn new(store: Arc<dyn Store>, on_answer: AnswerHook, on_round_change: RoundHook) -> Self {
        Self {
            store,
            on_answer,
            on_round_change,
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

    /// Declines or dismisses (`action`) each of `round_ids` for `viewer` (batch triage): each one only if it
    /// still waits and the person may answer it, each recorded on its own under the batch's `attempt` (a
    /// retried batch answers none twice). Says how each fared.
    pub async fn triage(
        &self,
        viewer: &Viewer,
        round_ids: &[String],
        action: &str,
        attempt: &str,
        csrf: &str,
    ) -> Result<Vec<TriageOutcome>, String> {
        same_sign_in(viewer, csrf)?;
        let Some(action @ (ResponseAction::Decline | ResponseAction::Cancel)) =
            ResponseAction::parse(action)
        else {
            return Err(
                "A batch declines or dismisses; accept each question on its page.".to_owned(),
            );
        };
        if round_ids.len() > TRIAGE_MAX {
            return Err(format!("At most {TRIAGE_MAX} questions at once."));
        }
        if attempt.is_empty()
            || attempt.len() > 64
            || !attempt.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err("This page is out of date. Reload it and try again.".to_owned());
        }
        let mut outcomes = Vec::with_capacity(round_ids.len());
        for raw in round_ids {
            let outcome = self.triage_one(viewer, raw, action, attempt).await;
            outcomes.push(TriageOutcome {
                round_id: raw.chars().take(64).collect(),
                outcome: outcome.to_owned(),
            });
        }
        Ok(outcomes)
    }

    async fn triage_one(
        &self,
        viewer: &Viewer,
        raw: &str,
        action: ResponseAction,
        attempt: &str,
    ) -> &'static str {
        let Ok(round_id) = RoundId::parse(raw) else {
            return "gone";
        };
        let Ok(round) = self.store.get_round(round_id).await else {
            return "gone";
        };
        match self.store.may_answer(&viewer.principal, &round).await {
            Ok(true) => {}
            Ok(false) => return "not_yours",
            Err(_) => return "gone",
        }
        let Ok(idempotency_key) =
            IdempotencyKey::parse(format!("triage-{attempt}-{}", round_id.0.simple()))
        else {
            return "gone";
        };
        let responses = round
            .requests
            .keys()
            .map(|key| {
                (
                    key.clone(),
                    crate::domain::round::ElicitationResponse {
                        action,
                        content: None,
                        reason: None,
                    },
                )
            })
            .collect();
        match self
            .record(&round, responses, idempotency_key, viewer)
            .await
        {
            Ok(_) => "recorded",
            Err(_) => "answered_elsewhere",
        }
    }

    /// Hands round `round_id` of session `session` to `assignee` (`user:NAME`, `group:NAME`, `key:NAME`; empty:
    /// back to the session's responders), for an admin.
    pub async fn assign(
        &self,
        viewer: &Viewer,
        session: &str,
        round_id: &str,
        assignee: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if !viewer.principal.role.can_manage() {
            return Err("Only admins hand questions to someone.".to_owned());
        }
        let assignee = match assignee.trim() {
            "" => None,
            raw => Some(Responder::parse(raw).map_err(|error| error.message().to_owned())?),
        };
        let gone = || "This question does not exist.".to_owned();
        let round_id = RoundId::parse(round_id).map_err(|_| gone())?;
        let round = self.store.get_round(round_id).await.map_err(said)?;
        if round.session_id.as_str() != session {
            return Err(gone());
        }
        self.store
            .assign_round(round_id, assignee.as_ref(), &viewer.principal.label())
            .await
            .map_err(said)?;
        (self.on_round_change)(&round);
        Ok(())
    }

    /// Gives people an hour more to answer round `round_id` of session `session`, for a person who may
    /// answer it; returns the new deadline (epoch milliseconds).
    pub async fn extend_deadline(
        &self,
        viewer: &Viewer,
        session: &str,
        round_id: &str,
        csrf: &str,
    ) -> Result<i64, String> {
        same_sign_in(viewer, csrf)?;
        let gone = || "This question does not exist.".to_owned();
        let round_id = RoundId::parse(round_id).map_err(|_| gone())?;
        let round = self.store.get_round(round_id).await.map_err(said)?;
        if round.session_id.as_str() != session {
            return Err(gone());
        }
        if !self
            .store
            .may_answer(&viewer.principal, &round)
            .await
            .map_err(said)?
        {
            return Err(
                "Only someone who may answer this question can give it more time.".to_owned(),
            );
        }
        let round = self
            .store
            .extend_deadline(round_id, EXTENSION, &viewer.principal.label())
            .await
            .map_err(said)?;
        (self.on_round_change)(&round);
        Ok(ms(round.deadline))
    }

    /// The attention queue, with each waiting session's oldest question.
    pub async fn queue(&self) -> StoreResult<QueueView> {
        queue_view(self.store.as_ref()).await
    }

    /// A session page, or `None` for an unknown session.
    pub async fn session(
        &self,
        id: &str,
        viewer: Viewer,
        notice: Option<AnswerNotice>,
        older: Option<&str>,
    ) -> StoreResult<Option<SessionPage>> {
        session_page(self.store.as_ref(), id, viewer, notice, older).await
    }

    /// Records `post` as `viewer`'s answer; every outcome is a notice for the person.
    pub async fn answer(&self, viewer: &Viewer, post: AnswerPost) -> AnswerNotice {
        submit_answer(self, viewer, post).await
    }

    /// Ends standing answer `id`, listed on session `session`'s page, for a person who may answer there.
    pub async fn revoke_standing(
        &self,
        viewer: &Viewer,
        session: &str,
        id: i64,
        csrf: &str,
    ) -> Result<(), String> {
        self.listed_standing(viewer, session, id, csrf).await?;
        self.store
            .revoke_standing_answer(id, &viewer.principal.label())
            .await
            .map(drop)
            .map_err(said)
    }

    /// Pauses or resumes standing answer `id`, listed on session `session`'s page.
    pub async fn pause_standing(
        &self,
        viewer: &Viewer,
        session: &str,
        id: i64,
        paused: bool,
        csrf: &str,
    ) -> Result<(), String> {
        self.listed_standing(viewer, session, id, csrf).await?;
        self.store
            .pause_standing_answer(id, paused, &viewer.principal.label())
            .await
            .map(drop)
            .map_err(said)
    }

    /// Checks that `viewer` may change standing answer `id`, listed on session `session`'s page.
    async fn listed_standing(
        &self,
        viewer: &Viewer,
        session: &str,
        id: i64,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if !viewer.can_answer() {
            return Err("You have the viewer role: you cannot change standing answers.".to_owned());
        }
        let session = SessionId::parse(session).map_err(|error| error.to_string())?;
        let listed = self.store.standing_answers(&session).await.map_err(said)?;
        if listed.iter().any(|rule| rule.id == id) {
            Ok(())
        } else {
            Err(format!("Standing answer #{id} is not in force here."))
        }
    }

    /// Response times over the last `days` days (7, 30 or 90), for admins.
    pub async fn response_times(
        &self,
        days: u32,
    ) -> StoreResult<crate::domain::stats::ResponseTimes> {
        self.store.response_times(days).await
    }

    /// The signed-in person's reach settings.
    pub async fn profile(&self, viewer: &Viewer) -> StoreResult<ProfileView> {
        let id = &viewer.principal.id;
        let email = self.store.user_email(id).await?;
        let preference = self.store.email_preference(id).await?;
        let browsers = self.store.push_subscriptions(id).await?;
        let quiet = self.store.quiet_hours(id).await?;
        let time_zone = self.store.time_zone(id).await?;
        let digest_after = self.store.digest_after(id).await?;
        let slack_links = self.store.slack_links(id).await?;
        Ok(ProfileView {
            digest_after,
            slack_links: slack_links
                .into_iter()
                .map(|link| SlackLinkRow {
                    slack_user: link.slack_user,
                    linked_ms: link.linked_at.timestamp_millis(),
                })
                .collect(),
            quiet_from: quiet
                .as_ref()
                .map(|q| clock_minute(q.from_minute))
                .unwrap_or_default(),
            quiet_until: quiet
                .as_ref()
                .map(|q| clock_minute(q.until_minute))
                .unwrap_or_default(),
            time_zone: time_zone.unwrap_or_default(),
            username: viewer.principal.name.clone(),
            role: viewer.principal.role.as_str().to_owned(),
            email,
            email_questions: preference.questions.as_str().to_owned(),
            email_after_minutes: preference.after_minutes,
            browsers: browsers
                .into_iter()
                .map(|browser| BrowserRow {
                    id: browser.id,
                    device: browser.device,
                    created_ms: browser.created_at.timestamp_millis(),
                })
                .collect(),
            csrf: viewer.csrf.clone(),
        })
    }

    /// Saves the person's e-mail and which questions reach them by mail.
    pub async fn save_email(
        &self,
        viewer: &Viewer,
        email: &str,
        questions: &str,
        after_minutes: i64,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        let questions = EmailQuestions::parse(questions).ok_or_else(|| {
            "Choose which questions to mail: none, every one, or unanswered ones.".to_owned()
        })?;
        if !(0..=EMAIL_AFTER_MINUTES_MAX).contains(&after_minutes) {
            return Err(format!(
                "Wait between 0 and {EMAIL_AFTER_MINUTES_MAX} minutes."
            ));
        }
        let email = Some(email.trim()).filter(|email| !email.is_empty());
        if email.is_none() && questions != EmailQuestions::Off {
            return Err("Give an e-mail address to get questions by mail.".to_owned());
        }
        let id = &viewer.principal.id;
        self.store.set_user_email(id, email).await.map_err(said)?;
        self.store
            .set_email_preference(
                id,
                EmailPreference {
                    questions,
                    after_minutes,
                },
            )
            .await
            .map(drop)
            .map_err(said)
    }

    /// Sets the person's time zone (empty: the browser's) and quiet hours (both times empty: none), which
    /// count in that zone.
    pub async fn save_quiet(
        &self,
        viewer: &Viewer,
        from: &str,
        until: &str,
        time_zone: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        let time_zone = time_zone.trim();
        if !time_zone.is_empty() && jiff::tz::TimeZone::get(time_zone).is_err() {
            return Err(format!(
                "This server does not know the time zone {time_zone}."
            ));
        }
        let quiet = if from.trim().is_empty() && until.trim().is_empty() {
            None
        } else {
            let (Some(from), Some(until)) = (parse_clock_minute(from), parse_clock_minute(until))
            else {
                return Err(
                    "Give both times of the quiet hours as HH:MM (or neither, for none)."
                        .to_owned(),
                );
            };
            Some(
                QuietHours::new(from, until, time_zone)
                    .map_err(|error| error.message().to_owned())?,
            )
        };
        self.store
            .set_time_zone(
                &viewer.principal.id,
                (!time_zone.is_empty()).then_some(time_zone),
            )
            .await
            .map_err(said)?;
        self.store
            .set_quiet_hours(&viewer.principal.id, quiet.as_ref())
            .await
            .map(drop)
            .map_err(said)
    }

    /// Turns push off in one of the person's browsers.
    pub async fn remove_browser(
        &self,
        viewer: &Viewer,
        id: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        match self
            .store
            .remove_push_subscription(id, Some(&viewer.principal.id))
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err("That browser no longer has push on.".to_owned()),
            Err(error) => Err(said(error)),
        }
    }

    /// Sets after how many questions a minute the person's pushes and mails are gathered into a digest.
    pub async fn save_digest(&self, viewer: &Viewer, after: u32, csrf: &str) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if after > DIGEST_AFTER_MAX {
            return Err(format!(
                "Choose between 0 (never gather) and {DIGEST_AFTER_MAX} questions a minute."
            ));
        }
        self.store
            .set_digest_after(&viewer.principal.id, after)
            .await
            .map(drop)
            .map_err(said)
    }

    /// The Slack account a live link offer names (nothing is taken by reading it).
    pub async fn slack_link_offer(&self, token: &str) -> StoreResult<Option<String>> {
        self.store.slack_link_offer(&hash_secret(token)).await
    }

    /// Takes a link offer: its Slack account answers as this person from now on. Returns the account.
    pub async fn link_slack(
        &self,
        viewer: &Viewer,
        token: &str,
        csrf: &str,
    ) -> Result<String, String> {
        same_sign_in(viewer, csrf)?;
        match self
            .store
            .link_slack(&hash_secret(token), &viewer.principal.id)
            .await
        {
            Ok(Some(link)) => Ok(link.slack_user),
            Ok(None) => Err(
                "This link was used already or has expired. Click a button in Slack again for a new one."
                    .to_owned(),
            ),
            Err(error) => Err(said(error)),
        }
    }

    /// Unlinks one of the person's Slack accounts.
    pub async fn unlink_slack(
        &self,
        viewer: &Viewer,
        slack_user: &str,
        csrf: &str,
    ) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        match self
            .store
            .unlink_slack(slack_user, &viewer.principal.id)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err("That Slack account is not linked to you.".to_owned()),
            Err(error) => Err(said(error)),
        }
    }

    /// The most recent webhook deliveries, newest first.
    pub async fn webhook_deliveries(&self, limit: u32) -> StoreResult<Vec<WebhookDelivery>> {
        self.store.list_webhook_deliveries(limit).await
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

/// How many waiting questions with the same summary are compared for "answer all alike", and how many one
/// answer answers at most.
const ALIKE_SCAN: u32 = 1_000;
const ALIKE_MAX: usize = 200;

/// How much longer one press of a banner's "+1 hour" gives people.
const EXTENSION: chrono::Duration = chrono::Duration::hours(1);

/// The most sessions the queue shows at once.
const QUEUE_LIMIT: u32 = 200;

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

/// The attention queue, with each waiting session's oldest question.
async fn queue_view(store: &dyn Store) -> StoreResult<QueueView> {
    let queue = store.attention_queue(QUEUE_LIMIT).await?;
    // Who answers each question, for the whole queue in two readings (none when nothing waits).
    let team = if queue.iter().any(|item| item.oldest_open.is_some()) {
        store.team_view().await?
    } else {
        TeamView::default()
    };
    let items = queue
        .into_iter()
        .map(|AttentionItem { entry, oldest_open }| {
            let question = oldest_open.as_ref().map(|round| QuestionPreview {
                round_id: round.round_id.to_string(),
                message: round
                    .requests
                    .values()
                    .next()
                    .map(|request| request.message().to_owned())
                    .unwrap_or_default(),
                asker: asker(round),
                asked_ms: ms(round.created_at),
                deadline_ms: ms(round.deadline),
                askers_deadline: round.deadline_is_askers(),
                responders: team.scope(round),
                same_as: QuestionMatch::of(round).ok().map(|question| question.key()),
            });
            QueueItem {
                session_id: entry.session.id.as_str().to_owned(),
                title: entry.session.title.clone(),
                agent: entry.session.agent.clone(),
                status: entry.session.status,
                open_rounds: entry.open_rounds,
                question,
                lost: entry.session.lost_elicitation.clone(),
                updated_ms: ms(entry.session.updated_at),
            }
        })
        .collect();
    Ok(QueueView {
        now_ms: ms(store.now()),
        items,
        viewer: None,
    })
}

/// The session page, or `None` for an unknown session.
async fn session_page(
    store: &dyn Store,
    id: &str,
    viewer: Viewer,
    notice: Option<AnswerNotice>,
    older: Option<&str>,
) -> StoreResult<Option<SessionPage>> {
    let Ok(id) = SessionId::parse(id) else {
        return Ok(None);
    };
    let session = match store.get_session(&id).await {
        Ok(session) => session,
        Err(error) if error.is_not_found() => return Ok(None),
        Err(error) => return Err(error),
    };
    let before = older.and_then(|older| RoundId::parse(older).ok());
    let paged = before.is_some();
    let rounds = store.list_rounds_page(&id, before, HISTORY_PAGE).await?;
    let open = store.open_rounds(&id, OPEN_ROUNDS_SHOWN).await?;
    let team = if open.is_empty() {
        TeamView::default()
    } else {
        store.team_view().await?
    };
    // Identical questions waiting elsewhere, which one answer may answer too: one small read per banner
    // that could offer it.
    let mut alike = Vec::with_capacity(open.len());
    for round in &open {
        let count = alike_waiting(store, round, &viewer, &team).await?.len();
        alike.push(u32::try_from(count).unwrap_or(u32::MAX));
    }
    let active: Vec<ActiveRound> = open
        .iter()
        .zip(alike)
        .map(|(round, alike)| ActiveRound {
            round_id: round.round_id.to_string(),
            attempt: uuid::Uuid::new_v4().simple().to_string(),
            asker: asker(round),
            asked_ms: ms(round.created_at),
            deadline_ms: ms(round.deadline),
            askers_deadline: round.deadline_is_askers(),
            asker_seen: round.asker_seen.map(|seen| AskerSeenView {
                last_poll_ms: ms(seen.last_poll_at),
                interval_ms: seen.interval_ms,
            }),
            responders: team.scope(round),
            alike,
            requests: request_views(round),
            can_stand: QuestionMatch::of(round).is_ok(),
        })
        .collect();
    let older = (rounds.len() == HISTORY_PAGE as usize)
        .then(|| rounds.last().map(|round| round.round_id.to_string()))
        .flatten();
    let history = rounds.iter().map(history_entry).collect();
    let standing = store
        .standing_answers(&session.id)
        .await?
        .into_iter()
        .map(|rule| StandingView {
            id: rule.id,
            action: rule.action.as_str().to_owned(),
            asker: Asker {
                server: (!rule.question.server.is_empty()).then(|| rule.question.server.clone()),
                kind: "tool".to_owned(),
                name: rule.question.tool.clone(),
            },
            message: rule.question.message.clone(),
            created_by: rule.created_by.clone(),
            until_ms: ms(rule.expires_at),
            uses: rule.uses,
            everywhere: rule.session_id.is_none(),
            paused: rule.paused_at.is_some(),
            prefix: rule.prefix,
            limit: rule.use_limit,
        })
        .collect();
    Ok(Some(SessionPage {
        now_ms: ms(store.now()),
        session_id: session.id.as_str().to_owned(),
        title: session.title,
        agent: session.agent,
        status: session.status,
        lost: session.lost_elicitation,
        active,
        history,
        older,
        paged,
        viewer,
        notice,
        standing,
    }))
}

/// The requests of a round as the browser renders them.
pub fn request_views(round: &Round) -> Vec<RequestView> {
    // Generous limits: every stored schema already passed the configured ones when it was created.
    let limits = Limits {
        schema_bytes: usize::MAX,
        schema_properties: usize::MAX,
        schema_depth: usize::MAX,
        ..Limits::default()
    };
    round
        .requests
        .iter()
        .map(|(key, request)| RequestView {
            key: key.as_str().to_owned(),
            message: request.message().to_owned(),
            body: match request {
                ElicitationRequest::Form {
                    requested_schema, ..
                } => RequestBody::Form {
                    form: FormModel::from_schema(requested_schema, &limits)
                        .map(FormModel::for_the_browser)
                        .unwrap_or(FormModel {
                            fields: Vec::new(),
                            closed: false,
                        }),
                },
                ElicitationRequest::Url { url, .. } => RequestBody::Url {
                    url: url.clone(),
                    host: crate::domain::consent_url::host(url),
                },
            },
        })
        .collect()
}

impl Outcome {
    /// The one reading of a round's outcome for the pages.
    pub fn of(round: &Round) -> Self {
        let outcome = round.outcome();
        match &outcome {
            RoundOutcome::Waiting => Self::Waiting,
            RoundOutcome::Expired => Self::Expired,
            RoundOutcome::Undelivered { message, .. } => Self::Undelivered {
                actions: outcome.actions(),
                message: (*message).to_owned(),
            },
            RoundOutcome::Revoked { message } => Self::Failed {
                code: FailureCode::Revoked.as_str().to_owned(),
                message: (*message).to_owned(),
            },
            RoundOutcome::NobodyAvailable { message } => Self::Failed {
                code: FailureCode::NobodyAvailable.as_str().to_owned(),
                message: (*message).to_owned(),
            },
            RoundOutcome::Failed { code, message } => Self::Failed {
                code: (*code).to_owned(),
                message: (*message).to_owned(),
            },
            RoundOutcome::Answered(_) => Self::Answered {
                actions: outcome.actions(),
            },
        }
    }
}

fn history_entry(round: &Round) -> HistoryEntry {
    HistoryEntry {
        round_id: round.round_id.to_string(),
        asker: asker(round),
        asked_ms: ms(round.created_at),
        messages: round
            .requests
            .values()
            .map(|request| request.message().to_owned())
            .collect(),
        outcome: Outcome::of(round),
        answered_by: round.responded_by.clone(),
        answered_ms: round.responded_at.map(ms),
        answers: round
            .responses
            .iter()
            .flat_map(|responses| responses.iter())
            .filter_map(|(key, response)| {
                let content = response.content.as_ref()?;
                let form = match round.requests.get(key) {
                    Some(ElicitationRequest::Form {
                        requested_schema, ..
                    }) => FormModel::from_schema(requested_schema, &Limits::default()).ok(),
                    _ => None,
                };
                let fields = match form {
                    Some(form) => form.shown(content),
                    None => content
                        .iter()
                        .map(|(name, value)| (name.clone(), value.to_string()))
                        .collect(),
                };
                Some(ShownAnswer {
                    key: key.as_str().to_owned(),
                    fields,
                    json: serde_json::to_string(content).unwrap_or_default(),
                })
            })
            .collect(),
    }
}

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
async fn alike_waiting(
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

/// A form's CSRF token must be the signed-in browser's own: a form from before a sign-in change is refused.
fn same_sign_in(viewer: &Viewer, csrf: &str) -> Result<(), String> {
    if csrf == viewer.csrf {
        Ok(())
    } else {
        Err("This page is out of date (your sign-in changed). Reload it.".to_owned())
    }
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
