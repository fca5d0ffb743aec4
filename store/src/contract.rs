//! The store's contract, one trait per concern; [`Store`] is all of them on one database.
//!
//! Method names follow the managed-input contract (docs/lifecycle.md#worker-leases). Callers import the traits
//! they use, or the crate root's [`Store`] for all of them.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};

mod accounts;
pub use accounts::{AccountStore, BrowserSignIn, WebSessionOwner};
mod passkeys;
pub use passkeys::{
    NewPasskey, PASSKEYS_PER_PERSON_MAX, Passkey, PasskeyAdded, PasskeyForSignIn, PasskeyStore,
};

use crate::{
    AttentionItem, Backend, PollProbe, QueueEntry, StoreResult,
    domain::{
        access::Principal,
        access::User,
        audit::{AuditEntry, NewAuditEntry},
        gate::{GateChange, GateState},
        ids::{IdempotencyKey, LeaseToken, OwnerId, RequestId, RequestKey, RoundId, SessionId},
        reach::{
            AnswerToken, EmailPreference, EmailRecipient, PushRecipient, PushSubscription,
            QuietHours, ReachChannel, SlackLink,
        },
        responders::{Group, Responder, TeamView, may_answer},
        round::{
            ElicitationResponse, FailureCode, Lease, NewRound, RedactedResponses, Round, Submission,
        },
        run::{Run, RunEnd, RunStart},
        session::{NewSession, Session, SessionSettings},
        standing::{NewStandingAnswer, QuestionMatch, StandingAnswer},
        stats::{DayCount, ResponseTimes, day_of, response_times},
        webhook::{AttemptOutcome, QueuedDelivery, WebhookDelivery, WebhookEvent, WebhookFormat},
    },
};

/// Agent sessions (the runs that ask; browser sign-ins are kept by `AccountStore`) and the producer token that
/// asks in each.
#[async_trait::async_trait]
pub trait AgentSessionStore: Send + Sync {
    /// Creates the session, or returns it unchanged if it exists.
    async fn register_session(&self, new: NewSession) -> StoreResult<Session>;

    /// Reads a session, expiring its overdue rounds first.
    async fn get_session(&self, id: &SessionId) -> StoreResult<Session>;

    /// Sessions in attention-queue order: open questions first (oldest wait first), then lost
    /// elicitations, then the rest (most recently changed first). Expires overdue rounds first.
    async fn list_sessions(&self, limit: u32) -> StoreResult<Vec<QueueEntry>>;

    /// [`Self::list_sessions`] with each session's oldest open question, in one statement unless something
    /// is due (then it expires first and reads again): what the home page shows, read once per change for
    /// every open page.
    async fn attention_queue(&self, limit: u32) -> StoreResult<Vec<AttentionItem>>;

    /// A person or orchestrator resumed the session: markers cleared.
    async fn resume_session(&self, id: &SessionId) -> StoreResult<Session>;

    /// The agent run finished (refused while questions are open).
    async fn finish_session(&self, id: &SessionId) -> StoreResult<Session>;

    /// Cancels the session and fails its unfinished rounds with `cancelled`.
    async fn cancel_session(&self, id: &SessionId) -> StoreResult<Session>;

    /// Sets (or with `None` revokes) the session's producer token. Replacing or revoking a token ends the
    /// questions asked through the old one (pending ones `revoked`, answers not yet picked up `undelivered`);
    /// returns those rounds.
    async fn set_producer_token(
        &self,
        id: &SessionId,
        token_hash: Option<&str>,
        actor: &str,
    ) -> StoreResult<Vec<Round>>;

    /// The session a producer token belongs to.
    async fn session_for_token(&self, token_hash: &str) -> StoreResult<Option<Session>>;

    /// The id of the session a producer token belongs to, for a call that reads the session again in its own
    /// transaction (a create): answered from memory while the token is known not to have changed, as a pending
    /// poll is (docs in `poll_states.rs`).
    async fn session_id_for_token(&self, token_hash: &str) -> StoreResult<Option<SessionId>>;
}

/// Questions: asking, reading, answering, and the asker's polls.
#[async_trait::async_trait]
pub trait RoundStore: Send + Sync {
    /// Stores a new pending round (deadline decided by the domain) and parks its session in `needs_input`.
    async fn create_round(&self, new: NewRound) -> StoreResult<Round>;

    /// Reads a round, expiring it first if its deadline has passed.
    async fn get_round(&self, id: RoundId) -> StoreResult<Round>;

    /// Reads a round by the id its producer polls with, expiring it first if due.
    async fn get_round_by_request_id(&self, id: &RequestId) -> StoreResult<Round>;

    /// The session's rounds, newest first (overdue ones expired first).
    async fn list_rounds(&self, session: &SessionId) -> StoreResult<Vec<Round>>;

    /// At most `limit` of the session's rounds, newest first, older than round `before` when given (a page of
    /// its history; an unknown `before` gives an empty page). Read as stored: call it after
    /// [`AgentSessionStore::get_session`], which expires the session's overdue rounds first.
    async fn list_rounds_page(
        &self,
        session: &SessionId,
        before: Option<RoundId>,
        limit: u32,
    ) -> StoreResult<Vec<Round>>;

    /// At most `limit` of the session's pending rounds, oldest first; read as stored, like
    /// [`RoundStore::list_rounds_page`].
    async fn open_rounds(&self, session: &SessionId, limit: u32) -> StoreResult<Vec<Round>>;

    /// At most `limit` pending rounds of any session, oldest first, overdue ones expired first: the whole queue's
    /// questions in one query (an orchestrator's list).
    async fn open_rounds_everywhere(&self, limit: u32) -> StoreResult<Vec<Round>>;

    /// At most `limit` waiting rounds of any session whose summary is `summary`, oldest first, read as stored:
    /// the candidates for questions identical to one with that summary.
    async fn open_rounds_asking(&self, summary: &str, limit: u32) -> StoreResult<Vec<Round>>;

    /// The session (by its producer token's hash) and state of the question `request_id` in it, in one
    /// light query: the hot path of a producer polling a question nobody has answered yet.
    /// Answered from memory while the question is known to be pending (docs in `poll_states.rs`).
    async fn poll_probe(
        &self,
        token_hash: &str,
        request_id: &str,
    ) -> StoreResult<Option<PollProbe>>;

    /// Another instance changed `session` (and the question `request_id`): what this one remembers of their
    /// polls is dropped.
    fn forget_poll_states(&self, session: &SessionId, request_id: Option<&str>);

    /// This instance may have missed other instances' changes (its relay reconnected): forget every poll.
    fn forget_all_poll_states(&self);

    /// The session's single pending round; `managed_input_state` when storage holds more than one.
    async fn pending_round(&self, session: &SessionId) -> StoreResult<Option<Round>>;

    /// Validates and records an answer (`pending -> response_validated`) in one transaction.
    async fn submit_responses(
        &self,
        id: RoundId,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        idempotency_key: IdempotencyKey,
        answered_by: Option<String>,
    ) -> StoreResult<(Round, Submission)>;

    /// [`Self::submit_responses`] for a round the caller has just read: its requests, which never change, check
    /// the answer before the write transaction, so the round is not read a second time first.
    async fn submit_responses_to(
        &self,
        round: &Round,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        idempotency_key: IdempotencyKey,
        answered_by: Option<String>,
    ) -> StoreResult<(Round, Submission)>;

    /// The asker of round `id` polled just now: remembered in memory, persisted at most every ~10 s.
    async fn record_asker_poll(&self, id: RoundId) -> StoreResult<()>;

    /// A pulsemcp poll picked up the answer: counts a delivery and marks the round delivered.
    async fn record_poll_delivery(&self, id: RoundId) -> StoreResult<Round>;

    /// Moves a waiting question's deadline `by` later, within the domain's bounds (never past the asker's own
    /// deadline, nor seven days after it was asked).
    async fn extend_deadline(&self, id: RoundId, by: Duration, actor: &str) -> StoreResult<Round>;

    /// Keys, actions and field names of the answer; never values.
    async fn redacted_responses(&self, id: RoundId) -> StoreResult<RedactedResponses>;

    /// How many questions are waiting for a person right now (for `/metrics`).
    async fn open_round_count(&self) -> StoreResult<i64>;
}

/// A worker's lease on a round, from claim to resolution (docs/lifecycle.md#worker-leases).
#[async_trait::async_trait]
pub trait WorkerStore: Send + Sync {
    async fn claim_round(&self, id: RoundId, owner: OwnerId, lease: Duration)
    -> StoreResult<Lease>;

    async fn renew(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
        lease: Duration,
    ) -> StoreResult<Lease>;

    async fn start_delivery(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
    ) -> StoreResult<Round>;

    async fn mark_delivered(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
    ) -> StoreResult<Round>;

    async fn resolve(&self, id: RoundId, owner: &OwnerId, token: &LeaseToken)
    -> StoreResult<Round>;

    async fn fail(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
        code: FailureCode,
        message: String,
    ) -> StoreResult<Round>;

    /// Marks a round whose worker vanished mid-delivery `failed / recovery_unavailable`, session `failed`.
    async fn fail_recovery(&self, id: RoundId) -> StoreResult<Round>;
}

/// The webhook outbox: queued in the transaction of the change it announces, delivered at least once.
#[async_trait::async_trait]
pub trait OutboxStore: Send + Sync {
    /// Queues events that no round or session change carries (gate incidents), once per endpoint.
    async fn enqueue_webhooks(&self, events: &[WebhookEvent]) -> StoreResult<()>;

    /// Queues deliveries to single receivers (a fan-out's rows); one already queued under its key stays.
    async fn enqueue_deliveries(&self, deliveries: &[QueuedDelivery]) -> StoreResult<()>;

    /// Claims up to `limit` due deliveries for one attempt each, hidden from other claimers for `lock`.
    async fn claim_webhook_deliveries(
        &self,
        limit: u32,
        lock: Duration,
    ) -> StoreResult<Vec<WebhookDelivery>>;

    /// Records how an attempt went: delivered, retried later with backoff, or given up.
    async fn finish_webhook_delivery(
        &self,
        delivery: &WebhookDelivery,
        outcome: AttemptOutcome,
    ) -> StoreResult<()>;

    /// The most recent deliveries, newest first (the admins' delivery log).
    async fn list_webhook_deliveries(&self, limit: u32) -> StoreResult<Vec<WebhookDelivery>>;
}

/// The gate, shared by every instance.
#[async_trait::async_trait]
pub trait GateStore: Send + Sync {
    /// The gate's state (healthy since the first read when never probed).
    async fn gate_state(&self) -> StoreResult<GateState>;

    /// Records a probe of `probe_url`; the instance whose probe flips the gate queues the incident webhook, in
    /// the same transaction, so one outage is one incident however many instances probe.
    async fn record_gate_probe(
        &self,
        healthy: bool,
        probe_url: &str,
    ) -> StoreResult<(GateChange, GateState)>;
}

/// The scheduled jobs' work, each one batch per call.
#[async_trait::async_trait]
pub trait SweepStore: Send + Sync {
    /// Fails every pending round past its deadline with `expired`, and every answer its asker stopped waiting
    /// for before picking it up with `undelivered`, and moves the sessions (docs/lifecycle.md#where-expiry-happens, docs/deadlines.md).
    /// The expired rounds come back without their requests: the sweep may end many at once.
    async fn expire_due_rounds(&self) -> StoreResult<Vec<Round>>;

    /// Clears `blocked_on_elicitation` markers that outlived every active round (docs/lifecycle.md#stranded-markers).
    async fn sweep_stranded(&self) -> StoreResult<Vec<Session>>;

    /// Fails rounds whose worker's lease ran out mid-delivery (`recovery_unavailable`), sessions `failed`.
    async fn recover_leases(&self) -> StoreResult<Vec<Round>>;

    /// Deletes resolved and failed rounds last changed before `before`; returns how many.
    async fn purge_terminal_rounds(&self, before: DateTime<Utc>) -> StoreResult<u64>;
}

/// Standing answers: rules that answer a question like one a person answered before (domain `standing`).
#[async_trait::async_trait]
pub trait StandingAnswerStore: Send + Sync {
    /// Records a standing answer.
    async fn create_standing_answer(&self, new: NewStandingAnswer) -> StoreResult<StandingAnswer>;

    /// The standing answers in force for `session` (its own and those for every session), newest first.
    async fn standing_answers(&self, session: &SessionId) -> StoreResult<Vec<StandingAnswer>>;

    /// Every standing answer not yet ended (in force or paused), in every session, newest first.
    async fn live_standing_answers(&self, limit: u32) -> StoreResult<Vec<StandingAnswer>>;

    /// Pauses a standing answer (it answers nothing) or resumes it; one that ended is `not_found`.
    async fn pause_standing_answer(
        &self,
        id: i64,
        paused: bool,
        actor: &str,
    ) -> StoreResult<StandingAnswer>;

    /// Ends a standing answer now; a rule already ended stays as it ended.
    async fn revoke_standing_answer(&self, id: i64, actor: &str) -> StoreResult<StandingAnswer>;

    /// Whether any standing answer may be in force anywhere. Where they are in force (session, server, tool) is
    /// remembered for a second, and a rule made here is added at once, so a question costs no read for rules
    /// while none is in force in its place.
    async fn standing_answers_in_force(&self) -> StoreResult<bool>;

    /// Takes one use of the newest standing answer in force for a question like `question` in `session`, if
    /// there is one: at most its use limit, however many ask at once.
    async fn use_standing_answer(
        &self,
        session: &SessionId,
        question: &QuestionMatch,
    ) -> StoreResult<Option<StandingAnswer>>;
}

/// Reaching people outside the web app: their e-mail addresses and each question's Slack message
/// (docs/reach.md).
#[async_trait::async_trait]
pub trait ReachStore: Send + Sync {
    /// Sets or clears a person's e-mail (stored as [`crate::domain::access::normalise_email`] gives it); an
    /// address another person has is a `managed_input_conflict`. False when no such person exists.
    async fn set_user_email(&self, user_id: &str, email: Option<&str>) -> StoreResult<bool>;

    /// A person's e-mail, if they gave one.
    async fn user_email(&self, user_id: &str) -> StoreResult<Option<String>>;

    /// The person with this e-mail (compared lower-cased).
    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>>;

    /// Remembers where a question's Slack message is (its channel and `ts`); the first one stays.
    async fn remember_slack_message(
        &self,
        round: &RoundId,
        channel: &str,
        ts: &str,
    ) -> StoreResult<()>;

    /// Where a question's Slack message is, if one was posted.
    async fn slack_message(&self, round: &RoundId) -> StoreResult<Option<(String, String)>>;

    /// Sets a person's e-mail preference; false when no such person exists.
    async fn set_email_preference(
        &self,
        user_id: &str,
        preference: EmailPreference,
    ) -> StoreResult<bool>;

    /// A person's e-mail preference (the default for one who never chose).
    async fn email_preference(&self, user_id: &str) -> StoreResult<EmailPreference>;

    /// Sets or clears a person's quiet hours; false when no such person exists.
    async fn set_quiet_hours(&self, user_id: &str, quiet: Option<&QuietHours>)
    -> StoreResult<bool>;

    /// A person's quiet hours, if they set some.
    async fn quiet_hours(&self, user_id: &str) -> StoreResult<Option<QuietHours>>;

    /// Sets or clears the time zone a person reads times in (quiet hours count in it too); false when no such
    /// person exists. The caller checks the name.
    async fn set_time_zone(&self, user_id: &str, time_zone: Option<&str>) -> StoreResult<bool>;

    /// The time zone a person chose, if any (otherwise their browser's).
    async fn time_zone(&self, user_id: &str) -> StoreResult<Option<String>>;

    /// The people questions are mailed to: an e-mail, a preference other than off, and a role that
    /// answers. At most [`crate::domain::reach::EMAIL_RECIPIENTS_MAX`].
    async fn email_recipients(&self) -> StoreResult<Vec<EmailRecipient>>;

    /// Stores answer tokens (their hashes).
    async fn create_answer_tokens(&self, tokens: &[AnswerToken]) -> StoreResult<()>;

    /// The token with this hash, used or not.
    async fn answer_token(&self, token_hash: &str) -> StoreResult<Option<AnswerToken>>;

    /// Uses up the token with this hash: `Some` only once, and only before it expires.
    async fn use_answer_token(&self, token_hash: &str) -> StoreResult<Option<AnswerToken>>;

    /// The instance key called `name`: the stored one, or `candidate` stored now if there is none (the first
    /// instance to start wins, and every instance then reads the same key).
    async fn instance_key(&self, name: &str, candidate: &str) -> StoreResult<String>;

    /// Saves a browser's push subscription for its person; the same endpoint again replaces the old one.
    /// A person's eleventh browser is a `managed_input_conflict`.
    async fn save_push_subscription(
        &self,
        subscription: &PushSubscription,
    ) -> StoreResult<PushSubscription>;

    /// A person's browsers with push on, oldest first.
    async fn push_subscriptions(&self, user_id: &str) -> StoreResult<Vec<PushSubscription>>;

    async fn push_subscription(&self, id: &str) -> StoreResult<Option<PushSubscription>>;

    /// Removes a subscription: only its own person's (`user_id`), or any when `None` (the push service
    /// said it is gone). False when there was none.
    async fn remove_push_subscription(&self, id: &str, user_id: Option<&str>) -> StoreResult<bool>;

    /// The subscriptions of everyone who may answer, with each person's quiet hours and digest count, at most
    /// [`crate::domain::reach::PUSH_RECIPIENTS_MAX`].
    async fn push_recipients(&self) -> StoreResult<Vec<PushRecipient>>;

    /// How many question messages of `format` each outbox endpoint was queued since `since`.
    async fn recent_deliveries(
        &self,
        format: WebhookFormat,
        since: DateTime<Utc>,
    ) -> StoreResult<HashMap<String, u32>>;

    /// Holds `round` for a person's next digest on `channel`, and queues that digest (`digest`, whose
    /// dedupe key names its window, so one is sent however many questions and instances hold for it).
    async fn hold_for_digest(
        &self,
        user_id: &str,
        channel: ReachChannel,
        round: RoundId,
        digest: &QueuedDelivery,
    ) -> StoreResult<()>;

    /// The questions held for a person's digest on `channel`, oldest first, at most `limit`.
    async fn digest_held(
        &self,
        user_id: &str,
        channel: ReachChannel,
        limit: u32,
    ) -> StoreResult<Vec<RoundId>>;

    /// Forgets held questions once their digest went out.
    async fn release_digest(
        &self,
        user_id: &str,
        channel: ReachChannel,
        rounds: &[RoundId],
    ) -> StoreResult<()>;

    /// Sets after how many questions a minute a person's messages are gathered into a digest (0: never);
    /// false when no such person exists.
    async fn set_digest_after(&self, user_id: &str, after: u32) -> StoreResult<bool>;

    /// A person's digest setting (the default for one not found).
    async fn digest_after(&self, user_id: &str) -> StoreResult<u32>;

    /// Stores the hash of a link offered to Slack user `slack_user`, usable until `expires_at`; the same
    /// user's earlier offers, and every expired one, are dropped (one live offer per Slack user).
    async fn offer_slack_link(
        &self,
        token_hash: &str,
        slack_user: &str,
        expires_at: DateTime<Utc>,
    ) -> StoreResult<()>;

    /// The Slack user a live link offer names (the offer stays).
    async fn slack_link_offer(&self, token_hash: &str) -> StoreResult<Option<String>>;

    /// Takes a live link offer (once) and links its Slack user to `user_id`, replacing any earlier link of
    /// that Slack user. `None` when the offer is used, expired or unknown; a person's eleventh link is a
    /// `managed_input_conflict`.
    async fn link_slack(&self, token_hash: &str, user_id: &str) -> StoreResult<Option<SlackLink>>;

    /// The person a Slack user was linked to by hand.
    async fn slack_linked_user(&self, slack_user: &str) -> StoreResult<Option<User>>;

    /// The Slack accounts linked to a person, oldest first.
    async fn slack_links(&self, user_id: &str) -> StoreResult<Vec<SlackLink>>;

    /// Removes one of a person's own links; false when they had no such link.
    async fn unlink_slack(&self, slack_user: &str, user_id: &str) -> StoreResult<bool>;

    /// What an admin set for a session (the defaults when nothing); an unknown session is `not_found`.
    async fn session_settings(&self, session: &SessionId) -> StoreResult<SessionSettings>;

    /// Replaces a session's settings (validated); an unknown session is `not_found`.
    async fn set_session_settings(
        &self,
        session: &SessionId,
        settings: &SessionSettings,
        actor: &str,
    ) -> StoreResult<SessionSettings>;
}

/// Teams: groups of people, who answers a session's questions, and questions handed to someone
/// (docs/teams.md). [`TeamStore::may_answer`] is the one decision every way of answering asks.
#[async_trait::async_trait]
pub trait TeamStore: Send + Sync {
    /// Adds an empty group; a taken name is a `managed_input_conflict`.
    async fn create_group(&self, name: &str, actor: &str) -> StoreResult<Group>;

    /// Removes a group (its members stay people); false when there was none.
    async fn delete_group(&self, name: &str, actor: &str) -> StoreResult<bool>;

    /// Adds the person `username` to `group`; an unknown person or group is `not_found`. Adding a member twice
    /// changes nothing.
    async fn add_group_member(
        &self,
        group: &str,
        username: &str,
        actor: &str,
    ) -> StoreResult<Group>;

    /// Takes the person `username` out of `group`; false when they were not in it.
    async fn remove_group_member(
        &self,
        group: &str,
        username: &str,
        actor: &str,
    ) -> StoreResult<bool>;

    /// Every group with its members, by name.
    async fn list_groups(&self) -> StoreResult<Vec<Group>>;

    /// The groups a person is in, by name.
    async fn user_groups(&self, user_id: &str) -> StoreResult<Vec<String>>;

    /// Hands a pending question to one person, group or key (`None`: back to its session's responders).
    async fn assign_round(
        &self,
        round: RoundId,
        assignee: Option<&Responder>,
        assigned_by: &str,
    ) -> StoreResult<()>;

    /// Who answers `round`: the assignee, else its server's or its session's responders; empty for everyone
    /// whose role answers. Steps of the session's ladder climbed count only while the session has a ladder.
    async fn answer_scope(&self, round: &Round) -> StoreResult<Vec<Responder>>;

    /// How many steps of its session's ladder `round` has climbed.
    async fn escalations_reached(&self, round: RoundId) -> StoreResult<usize>;

    /// Climbs each waiting question's ladder: every step now due is taken once (on any number of instances),
    /// its notification queued in the same transaction; a question past its session's "nobody available"
    /// end ends so. Returns the questions that climbed and those that ended.
    async fn escalate(&self) -> StoreResult<Escalated>;

    /// Who answers each open question, for a whole queue at once.
    async fn team_view(&self) -> StoreResult<TeamView>;

    /// A session's responder lists (the defaults for a session without settings, known or not).
    async fn team_settings(&self, session: &SessionId) -> StoreResult<SessionSettings>;

    /// Whether `who` may answer `round`: the rule of [`may_answer`] over [`TeamStore::answer_scope`].
    async fn may_answer(&self, who: &Principal, round: &Round) -> StoreResult<bool> {
        if !who.role.can_answer() {
            return Ok(false);
        }
        if who.role.can_manage() {
            return Ok(true);
        }
        let scope = self.answer_scope(round).await?;
        self.may_answer_in(who, &scope).await
    }

    /// Whether `who` may stop `session`'s agent run: admins, and whoever its `responders` let answer there.
    async fn may_stop_run(&self, who: &Principal, session: &SessionId) -> StoreResult<bool> {
        if who.role.can_manage() || !who.role.can_answer() {
            return Ok(who.role.can_manage());
        }
        let settings = self.team_settings(session).await?;
        self.may_answer_in(who, &settings.responders).await
    }

    /// [`TeamStore::may_answer`] for a question whose scope the caller read already (one reading for a
    /// question's many recipients), reading the person's groups only when the scope names someone.
    async fn may_answer_in(&self, who: &Principal, scope: &[Responder]) -> StoreResult<bool> {
        let groups = match who.kind {
            crate::domain::access::PrincipalKind::Person
                if !scope.is_empty() && who.role == crate::domain::access::Role::Responder =>
            {
                self.user_groups(&who.id).await?
            }
            _ => Vec::new(),
        };
        Ok(may_answer(who, &groups, scope))
    }
}

/// The record (docs/audit.md): entries written with the changes they record, sealed into a hash chain.
#[async_trait::async_trait]
pub trait AuditStore: Send + Sync {
    /// Writes entries that no store change carries, to be sealed like the rest.
    async fn record_audit(&self, entries: &[NewAuditEntry]) -> StoreResult<()>;

    /// Seals every pending entry into the chain, oldest first, one sealer at a time; returns how many.
    async fn seal_audit(&self) -> StoreResult<u64>;

    /// Sealed entries numbered after `after_seq` and made at or after `since`, in order, at most `limit`.
    async fn audit_entries(
        &self,
        after_seq: i64,
        since: Option<DateTime<Utc>>,
        limit: u32,
    ) -> StoreResult<Vec<AuditEntry>>;

    /// The chain's head (the last sealed entry's number and hash) and how many entries wait to be sealed.
    async fn audit_head(&self) -> StoreResult<(i64, String, i64)>;
}

/// How many ended questions one counting transaction takes (the tally job, the purge).
pub const COUNT_BATCH: u32 = 5_000;

/// Response times (docs/teams.md#response-times).
#[async_trait::async_trait]
pub trait StatsStore: Send + Sync {
    /// Counts up to `limit` questions that ended since the last count (the tally job, and the purge before it
    /// deletes): adds them to the kept counts and marks them counted in one transaction. Returns how many.
    async fn count_ended_questions(&self, limit: u32) -> StoreResult<u64>;

    /// The counts of the `days` days (7, 30 or 90) since day `since_day`: per day, and per session, server and
    /// person summed over the period (day 0); the kept ones, and those of the questions not counted yet (the
    /// open ones and the ones ended since the last count).
    async fn response_time_counts(&self, days: u32, since_day: i64) -> StoreResult<Vec<DayCount>>;

    /// The figures of the last `days` days (7, 30 or 90, counted in whole days from the first one's start, UTC):
    /// per day, and for the busiest sessions, servers and people. Two reads, neither growing with the number
    /// of questions the period holds.
    async fn response_times(&self, days: u32) -> StoreResult<ResponseTimes> {
        let since = self.stats_now() - Duration::days(i64::from(days));
        let since_day = day_of(since.timestamp_millis());
        Ok(response_times(
            days,
            self.response_time_counts(days, since_day).await?,
        ))
    }

    /// The store's "now" (its injected clock).
    fn stats_now(&self) -> DateTime<Utc>;
}

/// What one escalation tick did.
#[derive(Debug, Default)]
pub struct Escalated {
    /// Questions that climbed a step: the round and the step's number (from 0).
    pub climbed: Vec<(Round, usize)>,
    /// Questions that ended `nobody_available`.
    pub ended: Vec<Round>,
}

/// Agent runs under `anteroom run` (docs/runs.md): a session's latest run, its reports and output, a stop asked
/// for, and how it ended. An ended run ends its session's waiting questions in the same transaction.
#[async_trait::async_trait]
pub trait RunStore: Send + Sync {
    /// Starts a run in the session (which must exist), replacing the record of an earlier run, and sets the
    /// session running; refused (`conflict`) while another run there is live (reporting and not ended).
    async fn start_run(
        &self,
        session: &SessionId,
        run_id: &str,
        start: RunStart,
    ) -> StoreResult<Run>;

    /// The session's latest run, if it ever had one.
    async fn run(&self, session: &SessionId) -> StoreResult<Option<Run>>;

    /// The run's kept output (its last 64 KiB, cleaned and masked by the caller).
    async fn run_output(&self, session: &SessionId) -> StoreResult<Option<String>>;

    /// The run reports it is alive, with `output` (already cleaned and masked) to keep; refused for a run
    /// that ended or that another run replaced.
    async fn report_run(&self, session: &SessionId, run_id: &str, output: &str)
    -> StoreResult<Run>;

    /// `by` asks the session's running run to stop; the first to ask is the one recorded.
    async fn request_stop(&self, session: &SessionId, by: &str) -> StoreResult<Run>;

    /// The run ended: recorded with its last `output`, its session's waiting questions ended with the reason,
    /// the session finished, failed or cancelled. Returns the run and the questions it ended. Said twice, the
    /// first word stands.
    async fn end_run(
        &self,
        session: &SessionId,
        run_id: &str,
        end: &RunEnd,
        output: &str,
    ) -> StoreResult<(Run, Vec<Round>)>;

    /// Running runs that have not reported for `run::LOST_AFTER` end `lost`, with their questions. Returns
    /// each one's session and the questions it ended.
    async fn lose_quiet_runs(&self) -> StoreResult<Vec<(SessionId, Vec<Round>)>>;
}

/// The whole store on one database.
#[async_trait::async_trait]
pub trait Store:
    AgentSessionStore
    + RoundStore
    + StandingAnswerStore
    + ReachStore
    + TeamStore
    + AuditStore
    + StatsStore
    + WorkerStore
    + AccountStore
    + PasskeyStore
    + OutboxStore
    + GateStore
    + SweepStore
    + RunStore
    + Send
    + Sync
    + 'static
{
    fn backend(&self) -> Backend;

    /// The store's clock (the injected one in tests), so views and the store agree on "now".
    fn now(&self) -> DateTime<Utc>;

    /// How many round trips (statements, `BEGIN`s, `COMMIT`s) this store has sent to the database since it
    /// opened: what live updates cost per event is read off it.
    fn round_trips(&self) -> u64;

    /// How many of those round trips read again a remembered fact that had gone stale (whether any standing
    /// answer is in force, whether any browser has push on): at most one a second each, whatever the traffic,
    /// so an operation's own cost is its round trips less these.
    fn fact_rereads(&self) -> u64;

    /// Applies every migration not yet applied; running it again is a no-op.
    async fn migrate(&self) -> StoreResult<()>;

    /// The migrations this binary carries beside those the database has applied (`anteroom migrate --status`).
    async fn schema_status(&self) -> StoreResult<crate::migrations::SchemaStatus>;

    /// The newest migration the database has applied, in one round trip that also proves the database answers
    /// (`/readyz`).
    async fn schema_version(&self) -> StoreResult<Option<i64>>;

    /// Writes a consistent copy of an embedded (SQLite) database to `path`, which must not exist yet, while
    /// writers go on (`anteroom backup`); on PostgreSQL it says to use `pg_dump`.
    async fn backup_to(&self, path: &std::path::Path) -> StoreResult<()>;
}
