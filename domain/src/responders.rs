//! Who may answer a question: the one rule the page, the API, `/mcp`, Slack, e-mail and push all apply
//! (docs/teams.md).
//!
//! A session may name its responders (people, groups or API keys), for all its questions or per server; an
//! admin may hand one question to someone else. Nobody named means everyone whose role answers.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
};

use serde::{Deserialize, Serialize};

use super::{
    ManagedInputError,
    access::{Principal, PrincipalKind, check_username},
    ids::{RoundId, SessionId},
    round::Round,
    session::SessionSettings,
};

/// At most this many responders per list (a session's, or one server's in it).
pub const RESPONDERS_MAX: usize = 20;
/// At most this many servers with responders of their own in one session.
pub const SERVER_LISTS_MAX: usize = 20;
/// At most this many groups in an installation, and members in one group.
pub const GROUPS_MAX: usize = 200;
pub const GROUP_MEMBERS_MAX: usize = 500;

/// One name on a list of who answers: `user:rita`, `group:platform-oncall` or `key:orchestrator`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Responder {
    User(String),
    Group(String),
    /// An API key, by its name (an orchestrator answering through the API or `/mcp`).
    Key(String),
}

impl Responder {
    /// Reads `user:NAME`, `group:NAME` or `key:NAME`; the name follows the username rule (1–64 letters,
    /// digits, `.`, `_`, `-`, `@`), which is also the group-name rule.
    pub fn parse(raw: &str) -> Result<Self, ManagedInputError> {
        let (kind, name) = raw.split_once(':').ok_or_else(|| {
            ManagedInputError::validation(format!(
                "{} is not a responder: write user:NAME, group:NAME or key:NAME.",
                shown(raw)
            ))
        })?;
        check_name(name)?;
        let name = name.to_owned();
        match kind {
            "user" => Ok(Self::User(name)),
            "group" => Ok(Self::Group(name)),
            "key" => Ok(Self::Key(name)),
            _ => Err(ManagedInputError::validation(format!(
                "{} is not a responder: write user:NAME, group:NAME or key:NAME.",
                shown(raw)
            ))),
        }
    }

    /// The bare name, as the page shows it ("for platform-oncall").
    pub fn name(&self) -> &str {
        match self {
            Self::User(name) | Self::Group(name) | Self::Key(name) => name,
        }
    }

    fn covers(&self, who: &Principal, groups: &[String]) -> bool {
        match (self, who.kind) {
            (Self::User(name), PrincipalKind::Person)
            | (Self::Key(name), PrincipalKind::ApiKey) => *name == who.name,
            (Self::Group(name), PrincipalKind::Person) => groups.contains(name),
            _ => false,
        }
    }
}

/// One step of a session's escalation ladder: after this many minutes unanswered, these responders are told
/// and may answer too (docs/teams.md#escalation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalationStep {
    #[schema(minimum = 1, maximum = 10080)]
    pub after_minutes: u32,
    #[schema(value_type = Vec<String>, example = json!(["group:platform-leads"]))]
    pub notify: Vec<Responder>,
}

/// At most this many steps on a ladder.
pub const ESCALATION_STEPS_MAX: usize = 5;

/// Checks a ladder: at most five steps, each 1 to 10,080 minutes after the question was asked and later than
/// the one before, each naming someone; and the "nobody available" end after the last step.
pub fn check_ladder(
    steps: &[EscalationStep],
    nobody_available_after: Option<u32>,
) -> Result<(), ManagedInputError> {
    let week = u32::try_from(crate::expiry::MAX_WINDOW.num_minutes()).unwrap_or(u32::MAX);
    if steps.len() > ESCALATION_STEPS_MAX {
        return Err(ManagedInputError::validation(format!(
            "An escalation ladder has at most {ESCALATION_STEPS_MAX} steps."
        )));
    }
    let mut before = 0;
    for step in steps {
        if step.after_minutes <= before || step.after_minutes > week {
            return Err(ManagedInputError::validation(
                "Each escalation step comes 1 to 10080 minutes after the question was asked, later than the step before.",
            ));
        }
        if step.notify.is_empty() || step.notify.len() > RESPONDERS_MAX {
            return Err(ManagedInputError::validation(format!(
                "Each escalation step names 1 to {RESPONDERS_MAX} responders."
            )));
        }
        before = step.after_minutes;
    }
    if let Some(after) = nobody_available_after
        && (after <= before || after > week)
    {
        return Err(ManagedInputError::validation(
            "nobody_available_after_minutes comes after the last escalation step, within 10080 minutes.",
        ));
    }
    Ok(())
}

/// A group of people who answer together, with its members' usernames.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Group {
    pub name: String,
    pub members: Vec<String>,
}

/// A producer-supplied name is shown back cut short and quoted, never whole.
fn shown(raw: &str) -> String {
    format!("{:?}", raw.chars().take(80).collect::<String>())
}

/// Checks a group's name: the username rule.
pub fn check_name(name: &str) -> Result<(), ManagedInputError> {
    check_username(name).map_err(|_| {
        ManagedInputError::validation(
            "A user, group or key name is 1 to 64 characters of letters, digits and . _ - @.",
        )
    })
}

impl fmt::Display for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Self::User(_) => "user",
            Self::Group(_) => "group",
            Self::Key(_) => "key",
        };
        write!(f, "{kind}:{}", self.name())
    }
}

impl TryFrom<String> for Responder {
    type Error = ManagedInputError;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(&raw)
    }
}

impl From<Responder> for String {
    fn from(responder: Responder) -> Self {
        responder.to_string()
    }
}

/// Who answers one question: the person or group an admin handed it to, or else its session's lists.
///
/// Each escalation step reached (`reached` of the session's ladder) adds the responders it notified: a question
/// that climbed to the leads may be answered by them too.
pub fn scope_of(
    assigned: Option<&Responder>,
    session: &SessionSettings,
    server: Option<&str>,
    reached: usize,
) -> Vec<Responder> {
    let mut scope = match assigned {
        Some(assigned) => vec![assigned.clone()],
        None => session.responders_for(server).to_vec(),
    };
    if !scope.is_empty() {
        for step in session.escalation.iter().take(reached) {
            for responder in &step.notify {
                if !scope.contains(responder) {
                    scope.push(responder.clone());
                }
            }
        }
    }
    scope
}

/// Who answers a question from what is stored about it: its assignment, its session's settings (`None`: the
/// session has none) and how many escalation steps it reached. Empty: everyone whose role answers.
pub fn scope_for(
    assigned: Option<&Responder>,
    session: Option<&SessionSettings>,
    server: Option<&str>,
    reached: usize,
) -> Vec<Responder> {
    match (assigned, session) {
        (assigned, Some(settings)) => scope_of(assigned, settings, server, reached),
        (Some(assigned), None) => vec![assigned.clone()],
        (None, None) => Vec::new(),
    }
}

/// Who answers each open question of a queue, read once for the whole queue: what the page shows ("for
/// platform-oncall") and filters "Mine" by.
#[derive(Debug, Clone, Default)]
pub struct TeamView {
    pub assignments: HashMap<RoundId, Responder>,
    pub sessions: HashMap<SessionId, SessionSettings>,
    /// How many escalation steps each waiting question has reached.
    pub reached: HashMap<RoundId, usize>,
}

impl TeamView {
    /// Who answers `round` (empty: everyone whose role answers).
    pub fn scope(&self, round: &Round) -> Vec<Responder> {
        scope_for(
            self.assignments.get(&round.round_id),
            self.sessions.get(&round.session_id),
            round.server.as_deref(),
            self.reached.get(&round.round_id).copied().unwrap_or(0),
        )
    }
}

/// Checks a session's lists of who answers: bounded in number and size.
pub fn check_lists(
    session: &[Responder],
    servers: &BTreeMap<String, Vec<Responder>>,
) -> Result<(), ManagedInputError> {
    if servers.len() > SERVER_LISTS_MAX {
        return Err(ManagedInputError::validation(format!(
            "At most {SERVER_LISTS_MAX} servers may have responders of their own."
        )));
    }
    if servers
        .keys()
        .any(|server| server.is_empty() || server.chars().count() > 200)
    {
        return Err(ManagedInputError::validation(
            "A server name in server_responders is 1 to 200 characters.",
        ));
    }
    if std::iter::once(session)
        .chain(servers.values().map(Vec::as_slice))
        .any(|list| list.len() > RESPONDERS_MAX)
    {
        return Err(ManagedInputError::validation(format!(
            "At most {RESPONDERS_MAX} responders per list."
        )));
    }
    Ok(())
}

/// The rule: `who` (a member of `groups`) may answer a question whose responders are `scope`.
///
/// A viewer never answers. An admin always may (they could hand the question to themselves). Otherwise an
/// empty scope is everyone's, and a named one is only theirs.
pub fn may_answer(who: &Principal, groups: &[String], scope: &[Responder]) -> bool {
    if !who.role.can_answer() {
        return false;
    }
    who.role.can_manage() || scope.is_empty() || scope.iter().any(|r| r.covers(who, groups))
}

/// Names a scope for the page: "platform-oncall, rita" (empty for everyone's).
pub fn describe(scope: &[Responder]) -> String {
    scope
        .iter()
        .map(Responder::name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;

    fn person(name: &str, role: Role) -> Principal {
        Principal {
            id: format!("id-{name}"),
            name: name.to_owned(),
            role,
            kind: PrincipalKind::Person,
        }
    }

    fn key(name: &str, role: Role) -> Principal {
        Principal {
            kind: PrincipalKind::ApiKey,
            ..person(name, role)
        }
    }

    fn parsed(raw: &[&str]) -> Vec<Responder> {
        raw.iter()
            .filter_map(|r| Responder::parse(r).ok())
            .collect()
    }

    #[test]
    fn responders_read_and_write_the_same() {
        for raw in ["user:rita", "group:platform-oncall", "key:orchestrator"] {
            assert_eq!(
                Responder::parse(raw).map(|r| r.to_string()).ok().as_deref(),
                Some(raw)
            );
        }
        for bad in [
            "rita",
            "team:x",
            "user:",
            "group:has space",
            &format!("user:{}", "a".repeat(65)),
        ] {
            assert!(Responder::parse(bad).is_err(), "{bad}");
        }
        let json: Result<Vec<Responder>, _> = serde_json::from_str(r#"["group:ops","nobody"]"#);
        assert!(json.is_err());
    }

    #[test]
    fn only_the_named_answer_a_named_question() {
        let scope = parsed(&["group:oncall", "user:rita", "key:orchestrator"]);
        let oncall = vec!["oncall".to_owned()];
        assert!(may_answer(&person("bob", Role::Responder), &oncall, &scope));
        assert!(may_answer(&person("rita", Role::Responder), &[], &scope));
        assert!(!may_answer(&person("carol", Role::Responder), &[], &scope));
        assert!(may_answer(
            &key("orchestrator", Role::Responder),
            &[],
            &scope
        ));
        // A key named like a person, or a person named like a key, is not them.
        assert!(!may_answer(&key("rita", Role::Responder), &[], &scope));
        assert!(!may_answer(
            &person("orchestrator", Role::Responder),
            &[],
            &scope
        ));
        // A key is in no group, whatever is claimed for it.
        assert!(!may_answer(
            &key("ops", Role::Responder),
            &oncall,
            &parsed(&["group:oncall"])
        ));
        // Admins always may; viewers never.
        assert!(may_answer(&person("ada", Role::Admin), &[], &scope));
        assert!(!may_answer(&person("rita", Role::Viewer), &[], &scope));
        // Nobody named: every responder.
        assert!(may_answer(&person("carol", Role::Responder), &[], &[]));
        assert!(!may_answer(&person("vic", Role::Viewer), &[], &[]));
    }

    #[test]
    fn an_assignment_wins_then_the_server_then_the_session() {
        let lists = SessionSettings {
            responders: parsed(&["group:ops"]),
            server_responders: BTreeMap::from([("billing".to_owned(), parsed(&["user:bea"]))]),
            ..SessionSettings::default()
        };
        assert_eq!(
            scope_of(None, &lists, Some("billing"), 0),
            parsed(&["user:bea"])
        );
        assert_eq!(
            scope_of(None, &lists, Some("deploy"), 0),
            parsed(&["group:ops"])
        );
        assert_eq!(scope_of(None, &lists, None, 0), parsed(&["group:ops"]));
        let rita = Responder::User("rita".to_owned());
        assert_eq!(
            scope_of(Some(&rita), &lists, Some("billing"), 0),
            vec![rita.clone()]
        );
        assert_eq!(describe(&parsed(&["group:ops", "user:bea"])), "ops, bea");
        // Steps reached widen the scope, once each.
        let laddered = SessionSettings {
            escalation: vec![
                EscalationStep {
                    after_minutes: 5,
                    notify: parsed(&["group:leads"]),
                },
                EscalationStep {
                    after_minutes: 15,
                    notify: parsed(&["group:ops", "user:cto"]),
                },
            ],
            ..lists.clone()
        };
        assert_eq!(
            scope_of(None, &laddered, None, 1),
            parsed(&["group:ops", "group:leads"])
        );
        assert_eq!(
            scope_of(None, &laddered, None, 2),
            parsed(&["group:ops", "group:leads", "user:cto"])
        );
        // Everyone's question stays everyone's.
        let everyone = SessionSettings {
            escalation: laddered.escalation.clone(),
            ..SessionSettings::default()
        };
        assert!(scope_of(None, &everyone, None, 2).is_empty());
    }

    #[test]
    fn ladders_climb_and_are_bounded() {
        let step = |after, who: &[&str]| EscalationStep {
            after_minutes: after,
            notify: parsed(who),
        };
        assert!(check_ladder(&[step(5, &["group:a"]), step(15, &["group:b"])], Some(30)).is_ok());
        assert!(check_ladder(&[], Some(10)).is_ok());
        for (steps, end) in [
            (vec![step(15, &["group:a"]), step(5, &["group:b"])], None),
            (vec![step(0, &["group:a"])], None),
            (vec![step(5, &[])], None),
            (vec![step(10_081, &["group:a"])], None),
            (vec![step(30, &["group:a"])], Some(30)),
            ((1..=6).map(|i| step(i, &["group:a"])).collect(), None),
        ] {
            assert!(check_ladder(&steps, end).is_err(), "{steps:?} {end:?}");
        }
    }

    #[test]
    fn lists_are_bounded() {
        let many: Vec<Responder> = (0..=RESPONDERS_MAX)
            .map(|i| Responder::User(format!("u{i}")))
            .collect();
        assert!(check_lists(&many, &BTreeMap::new()).is_err());
        let one_server = BTreeMap::from([("deploy".to_owned(), many.clone())]);
        assert!(check_lists(&[], &one_server).is_err());
        assert!(check_lists(&many[..3], &BTreeMap::new()).is_ok());
    }
}
