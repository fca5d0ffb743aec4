//! What a question offers outside the web app (docs/reach.md): the answers one tap can give — for a
//! confirmation, a single yes/no, or a single choice of at most three — and nothing for any other form, which
//! is answered on its page.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    ManagedInputError,
    access::User,
    form::{FieldKind, FormModel},
    ids::RoundId,
    limits::Limits,
    round::{ElicitationRequest, ElicitationResponse, ResponseAction, Round},
};

/// Which questions reach a person by e-mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmailQuestions {
    Off,
    /// Every question they may answer, as it is asked.
    All,
    /// Only those still unanswered after their chosen minutes.
    Unanswered,
}

text_names!(EmailQuestions { Off => "off", All => "all", Unanswered => "unanswered" });

/// Minutes a person may ask to wait before an unanswered question is mailed: up to a day.
pub const EMAIL_AFTER_MINUTES_MAX: i64 = 24 * 60;

/// A person's e-mail preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailPreference {
    pub questions: EmailQuestions,
    /// With [`EmailQuestions::Unanswered`]: how long a question waits before it is mailed.
    pub after_minutes: i64,
}

impl Default for EmailPreference {
    fn default() -> Self {
        Self {
            questions: EmailQuestions::Off,
            after_minutes: 10,
        }
    }
}

impl EmailPreference {
    /// When a question asked at `asked` should be mailed under this preference (`None`: never).
    pub fn send_at(&self, asked: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.questions {
            EmailQuestions::Off => None,
            EmailQuestions::All => Some(asked),
            EmailQuestions::Unanswered => Some(
                asked + Duration::minutes(self.after_minutes.clamp(0, EMAIL_AFTER_MINUTES_MAX)),
            ),
        }
    }
}

/// People one question is mailed to at most: a bound on one fan-out's work.
pub const EMAIL_RECIPIENTS_MAX: u32 = 500;

/// Minutes in a day: quiet hours are minutes of the day, `0..MINUTES_PER_DAY`.
pub const MINUTES_PER_DAY: u16 = 24 * 60;

/// A person's quiet hours: while their local time of day is in `[from, until)` (across midnight when `from` is
/// later than `until`), pushes and mails to them wait until `until` — held, never dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuietHours {
    pub from_minute: u16,
    pub until_minute: u16,
    /// An IANA time zone name, "Europe/Paris".
    pub time_zone: String,
}

impl QuietHours {
    /// Checks what a person typed: minutes within a day, different from each other, and a plausible zone name
    /// (whether the zone exists is the server's to say).
    pub fn new(
        from_minute: u16,
        until_minute: u16,
        time_zone: &str,
    ) -> Result<Self, ManagedInputError> {
        let time_zone = time_zone.trim();
        let zone_ok = !time_zone.is_empty()
            && time_zone.len() <= 64
            && time_zone
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c));
        if from_minute >= MINUTES_PER_DAY
            || until_minute >= MINUTES_PER_DAY
            || from_minute == until_minute
        {
            return Err(ManagedInputError::validation(
                "Quiet hours start and end at different times of the day.",
            ));
        }
        if !zone_ok {
            return Err(ManagedInputError::validation(
                "A time zone is an IANA name such as Europe/Paris or America/New_York.",
            ));
        }
        Ok(Self {
            from_minute,
            until_minute,
            time_zone: time_zone.to_owned(),
        })
    }

    /// Whether local minute of the day `minute` is quiet.
    pub fn is_quiet_at(&self, minute: u16) -> bool {
        if self.from_minute < self.until_minute {
            (self.from_minute..self.until_minute).contains(&minute)
        } else {
            minute >= self.from_minute || minute < self.until_minute
        }
    }
}

/// A person questions are mailed to.
#[derive(Debug, Clone, PartialEq)]
pub struct EmailRecipient {
    pub user: User,
    pub email: String,
    pub preference: EmailPreference,
    pub quiet: Option<QuietHours>,
    /// See [`Digest`].
    pub digest_after: u32,
}

/// The window a digest counts over: more than a person's `digest_after` questions in it, and the rest wait
/// for one message at its end.
pub const DIGEST_WINDOW_SECS: i64 = 60;
/// Questions a minute a person is sent one by one unless they choose otherwise.
pub const DIGEST_AFTER_DEFAULT: u32 = 5;
/// The highest `digest_after` a person may choose; 0 means never gather.
pub const DIGEST_AFTER_MAX: u32 = 1_000;
/// Questions one digest lists by name; it counts the rest.
pub const DIGEST_LISTED_MAX: usize = 20;

/// Gathering a burst of questions into one message per person and channel (docs/reach.md#digests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    /// Questions a window sends one by one; 0: every question is sent alone.
    pub after: u32,
}

impl Digest {
    /// Whether a question arriving after `sent` messages in the current window waits for the digest.
    pub fn holds(self, sent: u32) -> bool {
        self.after > 0 && sent >= self.after
    }

    /// When the digest that gathers a question held at `now` goes out: the end of its window.
    pub fn due(now: DateTime<Utc>) -> DateTime<Utc> {
        let start = now.timestamp().div_euclid(DIGEST_WINDOW_SECS) * DIGEST_WINDOW_SECS;
        DateTime::from_timestamp(start + DIGEST_WINDOW_SECS, 0).unwrap_or(now)
    }

    /// The outbox key of the digest due at `due` for one person and channel: one digest per window, however
    /// many questions (and instances) hold for it.
    pub fn dedupe_key(channel: ReachChannel, user_id: &str, due: DateTime<Utc>) -> String {
        format!("digest:{}:{user_id}:{}", channel.as_str(), due.timestamp())
    }
}

/// The outbox endpoint of a person's digest: `digest:{user id}`.
pub fn digest_endpoint(user_id: &str) -> String {
    format!("{DIGEST_ENDPOINT_PREFIX}{user_id}")
}

pub const DIGEST_ENDPOINT_PREFIX: &str = "digest:";

/// The event of a digest's outbox row.
pub const DIGEST_EVENT: &str = "question.digest";

/// A Slack account linked by hand to a person (when Slack's e-mail for them is not their Anteroom one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlackLink {
    /// Slack's member ID, `U0123ABCD`.
    pub slack_user: String,
    pub user_id: String,
    pub linked_at: DateTime<Utc>,
}

/// How long the link a Slack reply offers stays usable.
pub const SLACK_LINK_MINUTES: i64 = 15;
/// Slack accounts one person may link.
pub const SLACK_LINKS_PER_PERSON: usize = 10;

/// Whether `raw` is shaped like a Slack member ID (`U…` or `W…`, capital letters and digits): what a link
/// may name, so nothing else ever reaches the table or a page.
pub fn is_slack_user_id(raw: &str) -> bool {
    (3..=32).contains(&raw.len())
        && raw.starts_with(['U', 'W'])
        && raw
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
}

/// Browsers one person may have push turned on in.
pub const PUSH_SUBSCRIPTIONS_PER_PERSON: usize = 10;
/// Subscriptions one question is pushed to at most: a bound on one fan-out's work.
pub const PUSH_RECIPIENTS_MAX: u32 = 2_000;

/// A browser pushed to, with what its person chose: when they are quiet, and their digest count.
#[derive(Debug, Clone, PartialEq)]
pub struct PushRecipient {
    pub browser: PushSubscription,
    pub quiet: Option<QuietHours>,
    /// See [`Digest`].
    pub digest_after: u32,
}

/// A browser that turned push on: where its push service takes messages for it, and the keys that encrypt
/// them for it alone (RFC 8291).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushSubscription {
    pub id: String,
    pub user_id: String,
    pub endpoint: String,
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's 16-byte authentication secret, base64url.
    pub auth: String,
    /// What the person sees it as: "Chrome on Android".
    pub device: String,
    pub created_at: DateTime<Utc>,
}

/// Checks what a browser sent when it turned push on; every part came from the page, so all are bounded.
/// `allow_plain_http` admits an `http://` push service on loopback (a development instance's test service).
pub fn check_push_subscription(
    endpoint: &str,
    p256dh: &str,
    auth: &str,
    device: &str,
    allow_plain_http: bool,
) -> Result<(), ManagedInputError> {
    let url = url::Url::parse(endpoint)
        .map_err(|_| ManagedInputError::validation("The push endpoint is not a URL."))?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    let scheme_ok =
        url.scheme() == "https" || (allow_plain_http && url.scheme() == "http" && loopback);
    if !scheme_ok || endpoint.len() > 2_000 || url.username() != "" || url.password().is_some() {
        return Err(ManagedInputError::validation(
            "A push endpoint is an https URL of at most 2,000 characters, without credentials.",
        ));
    }
    let base64url = |text: &str, max: usize| {
        !text.is_empty()
            && text.len() <= max
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'=')
    };
    if !base64url(p256dh, 200) || !base64url(auth, 100) {
        return Err(ManagedInputError::validation(
            "A push subscription's keys are base64url text (p256dh and auth).",
        ));
    }
    if device.chars().count() > 100 || device.chars().any(char::is_control) {
        return Err(ManagedInputError::validation(
            "A device name is at most 100 characters, without control characters.",
        ));
    }
    Ok(())
}

/// Where an answer token was handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReachChannel {
    Email,
    Push,
}

text_names!(ReachChannel { Email => "email", Push => "push" });

impl ReachChannel {
    /// How an answer given through this channel is credited: "rita via e-mail".
    pub fn credit(self, username: &str) -> String {
        match self {
            Self::Email => format!("{username} via e-mail"),
            Self::Push => format!("{username} via push"),
        }
    }
}

/// A single-use token that gives quick answer `choice` to one question as one person; only its hash is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerToken {
    pub token_hash: String,
    pub user_id: String,
    pub round_id: RoundId,
    pub choice: usize,
    pub channel: ReachChannel,
    /// The question's deadline: a token outlives its question by nothing.
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

/// Choices a single-choice question may have and still be answered with one tap.
pub const QUICK_CHOICES: usize = 3;

/// One answer a button gives: what it says and what it records.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickAnswer {
    pub label: String,
    pub response: ElicitationResponse,
}

/// The answers one tap gives to `round`, in the order they are shown (accepting ones first, "Decline" last),
/// or `None` when its form needs the page: several questions at once, a URL question, more than one field, a
/// field other than a yes/no or a choice, or more than [`QUICK_CHOICES`] choices. Recomputed from the stored
/// question wherever a tap arrives, so a tap names an index, never a value.
pub fn quick_answers(round: &Round, limits: &Limits) -> Option<Vec<QuickAnswer>> {
    let [
        ElicitationRequest::Form {
            requested_schema, ..
        },
    ] = round.requests.values().collect::<Vec<_>>().as_slice()
    else {
        return None;
    };
    let form = FormModel::from_schema(requested_schema, limits).ok()?;
    let accept = |label: &str, content: Map<String, Value>| QuickAnswer {
        label: label.to_owned(),
        response: ElicitationResponse {
            action: ResponseAction::Accept,
            content: Some(content),
            reason: None,
        },
    };
    let one = |name: &str, value: Value| Map::from_iter([(name.to_owned(), value)]);
    let mut answers = match form.fields.as_slice() {
        [] => vec![accept("Accept", Map::new())],
        [field] => match &field.kind {
            FieldKind::Boolean => vec![
                accept("Yes", one(&field.name, Value::Bool(true))),
                accept("No", one(&field.name, Value::Bool(false))),
            ],
            FieldKind::SingleSelect { choices } if choices.len() <= QUICK_CHOICES => choices
                .iter()
                .map(|choice| {
                    accept(
                        &choice.label,
                        one(&field.name, Value::String(choice.value.clone())),
                    )
                })
                .collect(),
            _ => return None,
        },
        _ => return None,
    };
    answers.push(QuickAnswer {
        label: "Decline".to_owned(),
        response: ElicitationResponse {
            action: ResponseAction::Decline,
            content: None,
            reason: None,
        },
    });
    Some(answers)
}

/// A question's first line, cut to `chars` characters (with "…" when cut): what a notification has room for.
pub fn first_line(text: &str, chars: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    cut(line, chars)
}

/// `text` cut to `chars` characters (never inside one), ending in "…" when cut.
pub fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(chars.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_digest_holds_past_its_count_and_is_due_at_the_window_end() {
        let every = Digest { after: 0 };
        assert!(!every.holds(10_000));
        let five = Digest { after: 5 };
        assert!(!five.holds(4));
        assert!(five.holds(5));
        let at = DateTime::from_timestamp(1_800_000_030, 0).expect("a time");
        assert_eq!(Digest::due(at).timestamp(), 1_800_000_060);
        let edge = DateTime::from_timestamp(1_800_000_000, 0).expect("a time");
        assert_eq!(Digest::due(edge).timestamp(), 1_800_000_060);
        assert_eq!(
            Digest::dedupe_key(ReachChannel::Push, "u1", Digest::due(at)),
            Digest::dedupe_key(ReachChannel::Push, "u1", Digest::due(edge)),
            "one digest per window"
        );
    }

    #[test]
    fn only_slack_member_ids_are_linked() {
        for good in ["U0123ABCD", "W012A3CDE"] {
            assert!(is_slack_user_id(good), "{good}");
        }
        for bad in [
            "",
            "U1",
            "u0123abcd",
            "C0123ABCD",
            "U0123<!channel>",
            &"U".repeat(40),
        ] {
            assert!(!is_slack_user_id(bad), "{bad}");
        }
    }
    use crate::ids::RequestKey;

    fn round_asking(schemas: &[Value]) -> Round {
        let mut round = crate::round::fixtures::round(false);
        round.requests = schemas
            .iter()
            .enumerate()
            .map(|(index, schema)| {
                (
                    RequestKey::parse(format!("q{index}")).expect("key"),
                    ElicitationRequest::Form {
                        message: "Deploy?".to_owned(),
                        requested_schema: schema.clone(),
                        meta: None,
                    },
                )
            })
            .collect();
        round
    }

    fn labels(answers: Option<Vec<QuickAnswer>>) -> Option<Vec<String>> {
        answers.map(|answers| answers.into_iter().map(|answer| answer.label).collect())
    }

    #[test]
    fn simple_forms_get_buttons_and_the_rest_the_page() {
        let limits = Limits::default();
        let of = |schemas: &[Value]| labels(quick_answers(&round_asking(schemas), &limits));
        assert_eq!(
            of(&[json!({"type": "object"})]),
            Some(vec!["Accept".into(), "Decline".into()])
        );
        assert_eq!(
            of(&[json!({"type": "object", "properties": {"ok": {"type": "boolean"}}})]),
            Some(vec!["Yes".into(), "No".into(), "Decline".into()])
        );
        let three = json!({"type": "object", "properties": {"env": {"type": "string", "enum": ["dev", "stage", "prod"]}}});
        assert_eq!(
            of(std::slice::from_ref(&three)),
            Some(vec![
                "dev".into(),
                "stage".into(),
                "prod".into(),
                "Decline".into()
            ])
        );
        let four = json!({"type": "object", "properties": {"env": {"type": "string", "enum": ["a", "b", "c", "d"]}}});
        assert_eq!(of(&[four]), None);
        let text = json!({"type": "object", "properties": {"why": {"type": "string"}}});
        assert_eq!(of(&[text]), None);
        let two = json!({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"}}});
        assert_eq!(of(&[two]), None);
        assert_eq!(
            of(&[three.clone(), three]),
            None,
            "two questions at once need the page"
        );
    }

    #[test]
    fn a_choice_records_its_value() {
        let schema = json!({"type": "object", "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}}});
        let answers = quick_answers(&round_asking(&[schema]), &Limits::default()).expect("buttons");
        assert_eq!(
            answers[1].response.content,
            json!({"env": "prod"}).as_object().cloned()
        );
        assert_eq!(answers[2].response.action, ResponseAction::Decline);
    }

    #[test]
    fn quiet_hours_may_span_midnight_and_are_checked() {
        let night = QuietHours::new(22 * 60, 7 * 60, "Europe/Paris").expect("night");
        assert!(
            night.is_quiet_at(23 * 60) && night.is_quiet_at(0) && night.is_quiet_at(6 * 60 + 59)
        );
        assert!(
            !night.is_quiet_at(7 * 60)
                && !night.is_quiet_at(12 * 60)
                && !night.is_quiet_at(22 * 60 - 1)
        );
        let lunch = QuietHours::new(12 * 60, 13 * 60, "UTC").expect("lunch");
        assert!(lunch.is_quiet_at(12 * 60 + 30) && !lunch.is_quiet_at(13 * 60));
        assert!(QuietHours::new(60, 60, "UTC").is_err(), "an empty window");
        assert!(QuietHours::new(24 * 60, 60, "UTC").is_err());
        assert!(QuietHours::new(0, 60, "Europe/Paris; DROP").is_err());
        assert!(QuietHours::new(0, 60, "").is_err());
    }

    #[test]
    fn push_subscriptions_are_checked() {
        let ok = |endpoint: &str, http: bool| {
            check_push_subscription(endpoint, "BKey-_", "auth", "Chrome", http).is_ok()
        };
        assert!(ok("https://fcm.googleapis.com/fcm/send/abc", false));
        assert!(!ok("http://fcm.googleapis.com/fcm/send/abc", false));
        assert!(
            ok("http://127.0.0.1:9/push", true),
            "a development instance's loopback service"
        );
        assert!(
            !ok("http://10.0.0.1/push", true),
            "never plain http elsewhere"
        );
        assert!(!ok("https://user:pw@push.example/x", false));
        assert!(!ok(
            &format!("https://push.example/{}", "a".repeat(2_000)),
            false
        ));
        assert!(!ok("javascript:alert(1)", true));
        assert!(
            check_push_subscription("https://p.example/x", "not base64!", "a", "d", false).is_err()
        );
        assert!(
            check_push_subscription("https://p.example/x", "a", "a", "line\nbreak", false).is_err()
        );
    }

    #[test]
    fn first_lines_are_cut_on_characters() {
        assert_eq!(first_line("\n  Deploy now?\nDetails", 80), "Deploy now?");
        assert_eq!(first_line("ééééé", 3), "éé…");
        assert_eq!(first_line("", 3), "");
    }
}
