//! What the pages show, as plain serialisable views built on the server from the store's records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain::{
    access::Principal,
    form::{FieldErrors, FormModel, posted_value},
    responders::{Responder, may_answer},
    round::ResponseAction,
    session::{LostElicitation, LostReason, SessionStatus},
};

mod time;

pub use time::*;

/// A question nobody will answer any more, as the pages show it: the domain's marker with its time in
/// milliseconds, so the browser bundle carries no date parser (about 12 KB of the wasm before `wasm-opt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostView {
    pub reason: LostReason,
    pub at_ms: i64,
    pub request_id: String,
    /// Producer text, always rendered escaped.
    pub summary: String,
    pub detail: Option<String>,
}

impl From<LostElicitation> for LostView {
    fn from(lost: LostElicitation) -> Self {
        Self {
            reason: lost.reason,
            at_ms: lost.at.timestamp_millis(),
            request_id: lost.request_id.as_str().to_owned(),
            summary: lost.summary,
            detail: lost.detail,
        }
    }
}

/// The signed-in person, as the pages and server functions see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Viewer {
    pub principal: Principal,
    /// The token every form post must carry (CSRF), bound to the browser session.
    pub csrf: String,
    /// The time zone the person reads times in, when they chose one (otherwise their browser's).
    #[serde(default)]
    pub time_zone: Option<String>,
    /// The groups the person answers with (docs/teams.md).
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Viewer {
    /// Whether the person's role answers questions at all.
    pub fn can_answer(&self) -> bool {
        self.principal.role.can_answer()
    }

    /// Whether the person may answer a question whose responders are `scope` (the rule of
    /// [`anteroom_domain::responders::may_answer`]; the server applies it again to every answer).
    pub fn may_answer(&self, scope: &[Responder]) -> bool {
        may_answer(&self.principal, &self.groups, scope)
    }
}

/// `/`: every session that may need a person, in attention-queue order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueView {
    /// The server's clock when the view was made, in epoch milliseconds (countdowns start from it).
    pub now_ms: i64,
    pub items: Vec<QueueItem>,
    /// Who asked for this view (set per request; the view the live stream sends to every page has none, and
    /// the page keeps the one it loaded with).
    #[serde(default)]
    pub viewer: Option<Viewer>,
}

impl QueueView {
    /// How many questions wait for a person (the tab title's count).
    pub fn open_questions(&self) -> u32 {
        self.items.iter().map(|item| item.open_rounds).sum()
    }
}

/// One session in the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueItem {
    pub session_id: String,
    pub title: String,
    pub agent: Option<String>,
    pub status: SessionStatus,
    pub open_rounds: u32,
    /// The oldest open question, when there is one.
    pub question: Option<QuestionPreview>,
    pub lost: Option<LostView>,
    pub updated_ms: i64,
    /// Its run's state, when `anteroom run` runs it (docs/runs.md).
    #[serde(default)]
    pub run: Option<crate::domain::run::RunState>,
}

/// Enough of a question to decide whether to open it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionPreview {
    pub round_id: String,
    pub message: String,
    pub asker: Asker,
    pub asked_ms: i64,
    pub deadline_ms: i64,
    /// The deadline is the asking server's own: it stops waiting then.
    pub askers_deadline: bool,
    /// Who answers it (empty: every responder).
    #[serde(default)]
    pub responders: Vec<Responder>,
    /// The same question's name ([`crate::domain::standing::QuestionMatch::key`]): identical open questions
    /// share it, and the queue shows them as one card.
    #[serde(default)]
    pub same_as: Option<String>,
}

/// When the asking server last polled for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskerSeenView {
    pub last_poll_ms: i64,
    /// The observed time between its polls, once it polled twice.
    pub interval_ms: Option<i64>,
}

/// What a banner says about the asker's presence, at `now_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    /// "checked 3 s ago · every ~5 s".
    pub checked: String,
    /// Less time is left than one observed poll interval: an answer now may arrive too late.
    pub too_late_warning: Option<String>,
    /// No poll for three observed intervals (and at least 30 s): the asker may have stopped.
    pub silent_warning: Option<String>,
}

/// Silence shorter than this never counts as an asker that may have stopped.
const SILENT_AT_LEAST_MS: i64 = 30_000;

impl AskerSeenView {
    pub fn presence(&self, deadline_ms: i64, now_ms: i64) -> Presence {
        let ago = (now_ms - self.last_poll_ms).max(0);
        let checked = match self.interval_ms {
            Some(interval) => format!(
                "checked {} ago · every ~{}",
                short_span(ago),
                short_span(interval)
            ),
            None => format!("checked {} ago", short_span(ago)),
        };
        let left = deadline_ms - now_ms;
        let too_late_warning = self
            .interval_ms
            .filter(|interval| left > 0 && left < *interval)
            .map(|interval| {
                format!(
                    "An answer now may arrive too late: the asking server checks every ~{} and stops waiting in {}.",
                    short_span(interval),
                    short_span(left)
                )
            });
        let silent_after = self.interval_ms.map_or(SILENT_AT_LEAST_MS, |interval| {
            (interval * 3).max(SILENT_AT_LEAST_MS)
        });
        let silent_warning = (ago >= silent_after).then(|| {
            format!(
                "The asking server has not checked for {}; it may have stopped waiting, and an answer may never reach the agent.",
                short_span(ago)
            )
        });
        Presence {
            checked,
            too_late_warning,
            silent_warning,
        }
    }
}

/// "3 s", "2 min", "1 h" — rounded down, for spans a person glances at.
pub fn short_span(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    if seconds < 120 {
        format!("{seconds} s")
    } else if seconds < 7200 {
        format!("{} min", seconds / 60)
    } else {
        format!("{} h", seconds / 3600)
    }
}

/// Which server and which tool, prompt or resource is asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asker {
    pub server: Option<String>,
    /// `tool`, `prompt` or `resource`.
    pub kind: String,
    pub name: String,
}

impl Asker {
    /// "github-mcp · tool deploy", or just "deploy" when the producer named no server (so the banner reads
    /// "deploy asks", not "an unknown server · tool deploy asks").
    pub fn describe(&self) -> String {
        match &self.server {
            Some(server) => format!("{server} · {} {}", self.kind, self.name),
            None => self.name.clone(),
        }
    }
}

/// Rounds on one page of a session's history.
pub const HISTORY_PAGE: u32 = 50;
/// Open questions shown as banners at once (the oldest first; the rest follow as these are answered).
pub const OPEN_ROUNDS_SHOWN: u32 = 50;

/// `/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionPage {
    pub now_ms: i64,
    pub session_id: String,
    pub title: String,
    pub agent: Option<String>,
    pub status: SessionStatus,
    pub lost: Option<LostView>,
    /// Questions waiting for an answer, oldest first (at most [`OPEN_ROUNDS_SHOWN`]).
    pub active: Vec<ActiveRound>,
    /// One page of the session's rounds, newest first (at most [`HISTORY_PAGE`]).
    pub history: Vec<HistoryEntry>,
    /// The round the next (older) history page starts after, when there is one.
    pub older: Option<String>,
    /// This page shows older history, not the newest.
    pub paged: bool,
    pub viewer: Viewer,
    /// The outcome of an answer posted without JavaScript, shown once after the redirect.
    pub notice: Option<AnswerNotice>,
    /// The standing answers in force here, newest first.
    #[serde(default)]
    pub standing: Vec<StandingView>,
    /// Its latest run under `anteroom run`, with the tail of its output.
    #[serde(default)]
    pub run: Option<RunView>,
}

/// A session's run as its page shows it (docs/runs.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub state: crate::domain::run::RunState,
    pub command: String,
    pub host: String,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stop_requested_by: Option<String>,
    pub stopped_by: Option<String>,
    /// The last 64 KiB the agent printed: text, rendered escaped, never as markup.
    pub output: String,
}

impl RunView {
    /// The state in words: "running", "waiting for a person", "exited with code 3", "stopped by rita"…
    pub fn described(&self) -> String {
        use crate::domain::run::RunState;
        match self.state {
            RunState::Running if self.stop_requested_by.is_some() => format!(
                "stopping (asked by {})",
                self.stop_requested_by.as_deref().unwrap_or("someone")
            ),
            RunState::Running => "running".to_owned(),
            RunState::NeedsInput => "running, waiting for a person".to_owned(),
            RunState::Finished => "finished (exit code 0)".to_owned(),
            RunState::Failed => match (self.exit_code, self.signal) {
                (Some(code), _) => format!("failed: exited with code {code}"),
                (None, Some(signal)) => format!("failed: ended by signal {signal}"),
                (None, None) => "failed".to_owned(),
            },
            RunState::Stopped => format!(
                "stopped by {}",
                self.stopped_by.as_deref().unwrap_or("someone")
            ),
            RunState::Lost => "lost: `anteroom run` stopped reporting".to_owned(),
        }
    }
}

/// A standing answer, as the session page lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandingView {
    pub id: i64,
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    pub asker: Asker,
    pub message: String,
    pub created_by: String,
    pub until_ms: i64,
    pub uses: i64,
    /// It holds in every session, not only this one.
    pub everywhere: bool,
    /// Paused: it answers nothing until resumed.
    #[serde(default)]
    pub paused: bool,
    /// Its message matches the beginning of a question's.
    #[serde(default)]
    pub prefix: bool,
    /// How many questions it may answer (`None`: any number).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// A round waiting for a person: one banner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActiveRound {
    pub round_id: String,
    /// One id per rendered form (an idempotency key), so a double submission records one answer.
    pub attempt: String,
    pub asker: Asker,
    pub asked_ms: i64,
    pub deadline_ms: i64,
    /// The deadline is the asking server's own: it stops waiting then.
    pub askers_deadline: bool,
    /// When the asker last polled (askers that poll; a worker-driven round has none).
    pub asker_seen: Option<AskerSeenView>,
    /// Who answers it (empty: every responder); the page says "for platform-oncall".
    #[serde(default)]
    pub responders: Vec<Responder>,
    /// How many other waiting questions, in any session, are this same question and may be answered by the
    /// viewer: one answer may answer them all.
    #[serde(default)]
    pub alike: u32,
    pub requests: Vec<RequestView>,
    /// Its answer may stand for questions like it (one form question, nothing secret).
    #[serde(default)]
    pub can_stand: bool,
}

/// One request of a round: a form, or consent to open a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestView {
    pub key: String,
    pub message: String,
    pub body: RequestBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestBody {
    Form { form: FormModel },
    Url { url: String, host: String },
}

impl RequestBody {
    /// A host written in punycode may imitate another one: the banner warns about it.
    pub fn is_punycode(host: &str) -> bool {
        host.split('.').any(|label| label.starts_with("xn--"))
    }
}

/// How a round ended (or that it has not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Waiting,
    Answered {
        actions: Vec<ResponseAction>,
    },
    Expired,
    /// Answered, but the asker stopped waiting before it picked the answer up.
    Undelivered {
        actions: Vec<ResponseAction>,
        message: String,
    },
    Failed {
        code: String,
        message: String,
    },
}

impl Outcome {
    /// The actions of the answers given, in request order (empty when none were).
    pub fn actions(&self) -> &[ResponseAction] {
        match self {
            Self::Answered { actions } | Self::Undelivered { actions, .. } => actions,
            Self::Waiting | Self::Expired | Self::Failed { .. } => &[],
        }
    }
}

/// One round in the session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub round_id: String,
    pub asker: Asker,
    pub asked_ms: i64,
    pub messages: Vec<String>,
    pub outcome: Outcome,
    pub answered_by: Option<String>,
    pub answered_ms: Option<i64>,
    /// The accepted content per request key.
    pub answers: Vec<ShownAnswer>,
}

/// One request's accepted content: as the person gave it, field by field, and as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShownAnswer {
    pub key: String,
    /// (the form's label, the value as the form showed it), in the form's order.
    pub fields: Vec<(String, String)>,
    pub json: String,
}

/// What a person's answer came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerNotice {
    /// Recorded (or the same answer was already recorded).
    Recorded {
        round_id: String,
        action: RecordedAction,
        /// With "answer all alike": how many of the identical questions were answered the same way too,
        /// and how many had been answered (or had ended) meanwhile.
        #[serde(default)]
        alike: Option<(u32, u32)>,
    },
    /// The server refused the content: messages per `request_key/field` (the empty field is the form).
    Refused {
        round_id: String,
        message: String,
        fields: FieldErrors,
        /// What was posted, so a form re-rendered without JavaScript keeps the person's input.
        posted: Vec<(String, String)>,
    },
    /// Somebody else answered first.
    AlreadyAnswered {
        round_id: String,
        by: Option<String>,
        at_ms: Option<i64>,
        actions: Vec<ResponseAction>,
    },
    /// The question can no longer be answered (expired, cancelled, gone) or the person may not answer.
    Closed { round_id: String, message: String },
}

/// What a recorded answer did: one action for every request of the round, or different ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedAction {
    All(ResponseAction),
    Mixed,
}

impl RecordedAction {
    /// The action every answer shares, or `Mixed`.
    pub fn of(actions: impl IntoIterator<Item = ResponseAction>) -> Self {
        let mut actions = actions.into_iter();
        match actions.next() {
            Some(first) if actions.all(|action| action == first) => Self::All(first),
            // No answer at all is not an answer anyone recorded; the notice reads as mixed.
            _ => Self::Mixed,
        }
    }
}

impl AnswerNotice {
    pub fn round_id(&self) -> &str {
        match self {
            Self::Recorded { round_id, .. }
            | Self::Refused { round_id, .. }
            | Self::AlreadyAnswered { round_id, .. }
            | Self::Closed { round_id, .. } => round_id,
        }
    }
}

/// How one question of a batch fared (the queue's "Decline selected" / "Dismiss selected").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriageOutcome {
    pub round_id: String,
    /// `recorded`, `answered_elsewhere` (someone answered first, or it ended), `not_yours` (the person may not
    /// answer it) or `gone`.
    pub outcome: String,
}

/// The most questions one batch answers.
pub const TRIAGE_MAX: usize = 200;

/// The banner's checkbox that answers the identical waiting questions the same way.
pub const ALIKE_CONTROL: &str = "alike";

/// The banner's checkbox that makes an answer stand for questions like it.
pub const STANDING_CONTROL: &str = "standing";

/// How a standing answer made from a banner holds: for how long, where, how many times, and whether its
/// message is only a beginning.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandingChoice {
    /// Minutes it lasts (`None`: an hour).
    pub minutes: Option<i64>,
    /// In every session (of the same server), not just this one.
    pub every_session: bool,
    /// How many questions it may answer (`None`: any number until it ends).
    pub limit: Option<i64>,
    /// Any message that starts with this question's first line.
    pub prefix: bool,
}

impl StandingChoice {
    /// Reads the banner's standing-answer controls.
    pub fn from_pairs(pairs: &[(String, String)]) -> Self {
        let take = |name: &str| posted_value(pairs, name);
        Self {
            minutes: take("standing_minutes").trim().parse().ok(),
            every_session: take("standing_scope") == "every_session",
            limit: take("standing_limit")
                .trim()
                .parse()
                .ok()
                .filter(|limit: &i64| *limit > 0),
            prefix: take("standing_prefix") == "on",
        }
    }
}

/// A posted answer: the round, the button pressed, and every control's value as posted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerPost {
    pub session_id: String,
    pub round_id: String,
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    pub csrf: String,
    /// One id per rendered form, so a double submission records one answer.
    pub attempt: String,
    /// Control values; the field `f` of request `k` is posted as `k/f`.
    pub values: Vec<(String, String)>,
    /// In a round of several requests, each request's own choice, posted as `choice@k`.
    #[serde(default)]
    pub choices: Vec<(String, String)>,
    /// "Answer questions like this the same way" was ticked.
    #[serde(default)]
    pub standing: bool,
    /// How that standing answer holds.
    #[serde(default)]
    pub standing_choice: StandingChoice,
    /// "Answer the identical questions waiting the same way" was ticked.
    #[serde(default)]
    pub alike: bool,
}

impl AnswerPost {
    /// Reads a posted banner form: the hidden `round`, `csrf` and `attempt` inputs, the pressed `action`
    /// button, and every control.
    pub fn from_pairs(session_id: &str, pairs: Vec<(String, String)>) -> Self {
        let take = |name: &str| posted_value(&pairs, name);
        Self {
            session_id: session_id.to_owned(),
            round_id: take("round"),
            action: take("action"),
            csrf: take("csrf"),
            attempt: take("attempt"),
            values: pairs
                .iter()
                .filter(|(key, _)| key.contains('/'))
                .cloned()
                .collect(),
            choices: pairs
                .iter()
                .filter(|(key, _)| key.starts_with("choice@"))
                .cloned()
                .collect(),
            standing: take(STANDING_CONTROL) == "on",
            standing_choice: StandingChoice::from_pairs(&pairs),
            alike: take(ALIKE_CONTROL) == "on",
        }
    }
}

/// The name a field's control is posted under.
pub fn control_name(request_key: &str, field: &str) -> String {
    format!("{request_key}/{field}")
}

/// Field problems of a whole round, keyed by control name, from each form's own errors.
pub fn round_field_errors(per_request: BTreeMap<String, FieldErrors>) -> FieldErrors {
    per_request
        .into_iter()
        .flat_map(|(key, errors)| {
            errors
                .into_iter()
                .map(move |(field, problems)| (control_name(&key, &field), problems))
        })
        .collect()
}

/// The admins' webhook delivery log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub event: String,
    pub endpoint: String,
    pub status: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_ms: i64,
    /// When it was queued, in the reader's time zone (written on the server, as the page shows it).
    #[serde(default)]
    pub queued_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asker_without_a_server_is_named_by_its_tool() {
        let named = Asker {
            server: Some("shop".to_owned()),
            kind: "tool".to_owned(),
            name: "deploy".to_owned(),
        };
        assert_eq!(named.describe(), "shop · tool deploy");
        let unnamed = Asker {
            server: None,
            ..named
        };
        assert_eq!(unnamed.describe(), "deploy");
    }

    #[test]
    fn relative_times_read_naturally_both_ways() {
        let minute = 60_000;
        assert_eq!(relative_time(0, 44_000), "just now");
        assert_eq!(relative_time(44_000, 0), "just now");
        assert_eq!(relative_time(0, 2 * minute), "2 min ago");
        assert_eq!(relative_time(9 * minute, 0), "in 9 min");
        assert_eq!(relative_time(0, 59 * minute), "59 min ago");
        assert_eq!(relative_time(0, 60 * minute), "1 h ago");
        assert_eq!(relative_time(0, 150 * minute), "3 h ago");
        assert_eq!(relative_time(0, 36 * 60 * minute), "2 d ago");
        assert_eq!(relative_time(i64::MAX, i64::MIN), "in 106751991167 d");
    }

    #[test]
    fn a_zoned_time_is_written_in_the_zone_or_in_utc() {
        // 2026-03-01 09:30 UTC.
        let at = 1_772_357_400_000;
        assert_eq!(zoned_time(at, None), "2026-03-01 09:30 UTC");
        assert_eq!(zoned_time(at, Some("Not/AZone")), "2026-03-01 09:30 UTC");
        #[cfg(feature = "ssr")]
        {
            assert_eq!(
                zoned_time(at, Some("Asia/Tokyo")),
                "2026-03-01 18:30 Asia/Tokyo"
            );
            assert_eq!(
                zoned_time(at, Some("America/New_York")),
                "2026-03-01 04:30 America/New_York"
            );
        }
    }

    #[test]
    fn countdowns_read_naturally() {
        assert_eq!(countdown(1_000, 2_000), "due now");
        assert_eq!(countdown(245_000, 0), "4 min 05 s");
        assert_eq!(countdown(7_800_000, 0), "2 h 10 min");
        assert_eq!(countdown(90_000_000, 0), "1 d 1 h");
    }

    #[test]
    fn presence_says_when_the_asker_checked_and_warns_in_time() {
        let seen = AskerSeenView {
            last_poll_ms: 100_000,
            interval_ms: Some(5_000),
        };
        let calm = seen.presence(160_000, 103_000);
        assert_eq!(calm.checked, "checked 3 s ago · every ~5 s");
        assert_eq!(calm.too_late_warning, None);
        assert_eq!(calm.silent_warning, None);
        let close = seen.presence(106_000, 102_000);
        assert!(
            close
                .too_late_warning
                .as_deref()
                .is_some_and(|w| w.contains("stops waiting in 4 s")),
            "{close:?}"
        );
        assert!(seen.presence(500_000, 129_000).silent_warning.is_none());
        assert!(seen.presence(500_000, 130_000).silent_warning.is_some());
        let slow = AskerSeenView {
            last_poll_ms: 0,
            interval_ms: Some(20_000),
        };
        assert!(slow.presence(500_000, 59_000).silent_warning.is_none());
        assert!(slow.presence(500_000, 60_000).silent_warning.is_some());
        let once = AskerSeenView {
            last_poll_ms: 0,
            interval_ms: None,
        };
        assert_eq!(once.presence(500_000, 2_000).checked, "checked 2 s ago");
    }

    #[test]
    fn control_names_join_request_key_and_field() {
        let errors = round_field_errors(BTreeMap::from([(
            "q1".to_owned(),
            FieldErrors::from([("age".to_owned(), vec!["must be a number".to_owned()])]),
        )]));
        assert_eq!(errors["q1/age"], vec!["must be a number"]);
        assert!(RequestBody::is_punycode("xn--pple-43d.com"));
        assert!(!RequestBody::is_punycode("apple.com"));
    }
}

/// `/profile`: how questions reach this person outside an open tab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileView {
    pub username: String,
    pub role: String,
    pub email: Option<String>,
    /// `off`, `all` or `unanswered` (domain `EmailQuestions`).
    pub email_questions: String,
    pub email_after_minutes: i64,
    /// The browsers push is on in, oldest first.
    pub browsers: Vec<BrowserRow>,
    /// Quiet hours as `HH:MM`, empty when none are set.
    pub quiet_from: String,
    pub quiet_until: String,
    /// The IANA time zone quiet hours are read in; empty when none is set.
    pub time_zone: String,
    /// More questions than this in a minute, and the rest come as one digest (0: never).
    pub digest_after: u32,
    /// The Slack accounts linked to this person by hand, oldest first.
    pub slack_links: Vec<SlackLinkRow>,
    /// The browsers this person is signed in on, most recently seen first.
    pub sign_ins: Vec<SignInRow>,
    /// The person's passkeys, newest first.
    pub passkeys: Vec<PasskeyRow>,
    /// The token the page's forms (and `/reach.js`) send with every change.
    pub csrf: String,
}

/// A Slack account linked to the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlackLinkRow {
    /// Slack's member ID, `U0123ABCD`.
    pub slack_user: String,
    pub linked_ms: i64,
}

/// A browser the person is signed in on, by its handle (never its session id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignInRow {
    pub handle: String,
    pub device: String,
    pub seen_ms: Option<i64>,
    pub this_browser: bool,
}

/// A passkey of the person's, by its credential id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PasskeyRow {
    pub id: String,
    pub name: String,
    pub added_ms: i64,
    pub used_ms: Option<i64>,
}

/// The handle of the browser session a request came with (the host puts it on the request).
#[derive(Debug, Clone)]
pub struct ThisBrowser(pub String);

/// A browser with push on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserRow {
    pub id: String,
    pub device: String,
    pub created_ms: i64,
}
