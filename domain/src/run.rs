//! An agent run under `anteroom run`: its state, how it ended and what that means for its open questions, and
//! the tail of its output as Anteroom keeps and shows it (docs/runs.md).

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::{ManagedInputError, session::SessionStatus};

/// A run that has not reported for this long is `lost`: its machine died or its network went.
pub const LOST_AFTER: Duration = Duration::minutes(2);
/// How often `anteroom run` reports when the agent prints nothing (a quarter of [`LOST_AFTER`]).
pub const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);
/// The most of a run's output kept: its last 64 KiB, in whole lines.
pub const OUTPUT_KEPT: usize = 64 * 1024;
/// The most of one output line kept; the rest is cut with an ellipsis.
pub const LINE_CHARS: usize = 2_000;
/// The most one report may carry (the client sends at most this much a second).
pub const REPORT_BYTES: usize = 256 * 1024;
/// The longest command line and host name kept.
pub const COMMAND_CHARS: usize = 2_000;
pub const HOST_CHARS: usize = 255;

/// Where a run is. `needs_input` is never stored: it is a `running` run whose session waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    NeedsInput,
    /// The agent exited 0.
    Finished,
    /// The agent exited non-zero or was killed by a signal nobody here sent.
    Failed,
    /// Someone stopped it from Anteroom.
    Stopped,
    /// `anteroom run` stopped reporting for [`LOST_AFTER`].
    Lost,
}

text_names!(RunState { Running => "running", NeedsInput => "needs_input", Finished => "finished", Failed => "failed", Stopped => "stopped", Lost => "lost" });

impl RunState {
    pub fn is_ended(self) -> bool {
        !matches!(self, Self::Running | Self::NeedsInput)
    }
}

/// A session's run, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Run {
    pub run_id: String,
    pub state: RunState,
    /// The agent's command line, credentials masked.
    pub command: String,
    pub host: String,
    #[serde(with = "crate::wire::time")]
    pub started_at: DateTime<Utc>,
    #[serde(default, with = "crate::wire::time::option")]
    pub ended_at: Option<DateTime<Utc>>,
    #[serde(with = "crate::wire::time")]
    pub heartbeat_at: DateTime<Utc>,
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, by number.
    pub signal: Option<i32>,
    /// Who asked the run to stop, while it stops and after.
    pub stop_requested_by: Option<String>,
    /// Who stopped it, once it has stopped.
    pub stopped_by: Option<String>,
}

/// What `anteroom run` says when it starts the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStart {
    #[schema(max_length = 2000)]
    pub command: String,
    #[schema(max_length = 255)]
    pub host: String,
}

impl RunStart {
    /// Refuses a command line or host name past its bound (`anteroom run` cuts them before it sends).
    pub fn validate(&self) -> Result<(), ManagedInputError> {
        if self.command.chars().count() > COMMAND_CHARS {
            return Err(ManagedInputError::validation(format!(
                "`command` is longer than {COMMAND_CHARS} characters."
            )));
        }
        if self.host.chars().count() > HOST_CHARS {
            return Err(ManagedInputError::validation(format!(
                "`host` is longer than {HOST_CHARS} characters."
            )));
        }
        Ok(())
    }

    /// The command line and host as kept and shown: on one line each, without terminal sequences or control
    /// characters (credentials are masked by the caller).
    pub fn cleaned(self) -> Self {
        Self {
            command: strip_controls(&self.command),
            host: strip_controls(&self.host),
        }
    }
}

/// How the agent ended, as `anteroom run` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunEnd {
    pub exit_code: Option<i32>,
    #[schema(minimum = 1, maximum = 64)]
    pub signal: Option<i32>,
    /// The run ended because Anteroom asked it to stop.
    #[serde(default)]
    pub stopped: bool,
}

impl RunEnd {
    pub fn validate(&self) -> Result<(), ManagedInputError> {
        if self.exit_code.is_some() == self.signal.is_some() {
            return Err(ManagedInputError::validation(
                "A run ends with either `exit_code` or `signal`, not both and not neither.",
            ));
        }
        if self
            .signal
            .is_some_and(|signal| !(1..=64).contains(&signal))
        {
            return Err(ManagedInputError::validation(
                "`signal` is a signal number from 1 to 64.",
            ));
        }
        Ok(())
    }
}

impl Run {
    /// The state a viewer sees: a running run whose session waits for a person `needs_input`.
    pub fn seen_with(mut self, session: SessionStatus) -> Self {
        if self.state == RunState::Running && session == SessionStatus::NeedsInput {
            self.state = RunState::NeedsInput;
        }
        self
    }

    /// Whether another `anteroom run` may take this session over: only once this one has ended or gone quiet.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        !self.state.is_ended() && now - self.heartbeat_at < LOST_AFTER
    }

    /// Records how the agent ended.
    pub fn end(&mut self, end: &RunEnd, now: DateTime<Utc>) {
        self.exit_code = end.exit_code;
        self.signal = end.signal;
        self.ended_at = Some(now);
        self.heartbeat_at = now;
        self.state = match (&self.stop_requested_by, end.stopped, end.exit_code) {
            (Some(_), _, _) | (None, true, _) => RunState::Stopped,
            (None, false, Some(0)) => RunState::Finished,
            _ => RunState::Failed,
        };
        if self.state == RunState::Stopped {
            self.stopped_by = Some(
                self.stop_requested_by
                    .clone()
                    .unwrap_or_else(|| "anteroom run".to_owned()),
            );
        }
    }

    /// The run went quiet: lost.
    pub fn lose(&mut self, now: DateTime<Utc>) {
        self.state = RunState::Lost;
        self.ended_at = Some(now);
    }

    /// The session's status once the run ended this way.
    pub fn session_status(&self) -> Option<SessionStatus> {
        match self.state {
            RunState::Running | RunState::NeedsInput => None,
            RunState::Finished => Some(SessionStatus::Finished),
            RunState::Stopped => Some(SessionStatus::Cancelled),
            RunState::Failed | RunState::Lost => Some(SessionStatus::Failed),
        }
    }

    /// Why the run's open questions ended with it, in the words the banner, the audit log and a late answerer
    /// read.
    pub fn ending_reason(&self) -> String {
        let how = match (self.state, self.exit_code, self.signal) {
            (RunState::Stopped, _, _) => format!(
                "{} stopped the agent",
                self.stopped_by.as_deref().unwrap_or("Someone")
            ),
            (RunState::Lost, _, _) => format!(
                "The agent's `anteroom run` stopped reporting for {} minutes (its machine or network went)",
                LOST_AFTER.num_minutes()
            ),
            (_, Some(code), _) => format!("The agent exited with code {code}"),
            (_, None, Some(signal)) => format!("The agent was killed by signal {signal}"),
            (_, None, None) => "The agent ended".to_owned(),
        };
        format!("{how} before anyone answered.")
    }
}

/// `chunk` of an agent's output made safe to keep and show: terminal control sequences removed, every other
/// control character but tab dropped, carriage returns read as line ends, and each line cut at [`LINE_CHARS`].
pub fn clean_output(chunk: &str) -> String {
    let text = strip_controls_keeping_lines(chunk);
    let mut cleaned = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            cleaned.push('\n');
        }
        cleaned.push_str(&cut_chars(line, LINE_CHARS));
    }
    cleaned
}

/// `kept` with `more` appended, cut from the front to its last [`OUTPUT_KEPT`] bytes at a line start.
pub fn append_output(kept: &str, more: &str) -> String {
    let mut joined = String::with_capacity(kept.len() + more.len());
    joined.push_str(kept);
    joined.push_str(more);
    if joined.len() <= OUTPUT_KEPT {
        return joined;
    }
    let from = next_boundary(&joined, joined.len() - OUTPUT_KEPT);
    // Cut after the first line end past `from`, so no line is kept in part; a single line longer than the
    // whole tail (impossible after `clean_output`) is cut at a character boundary.
    let start = joined
        .get(from..)
        .and_then(|rest| rest.find('\n'))
        .map_or(from, |at| from + at + 1);
    joined.split_off(start)
}

/// One line of an agent's output as a person reads it: Claude Code's `stream-json` and Codex's `exec --json`
/// events become short sentences (assistant text, tool calls, their results); anything else is itself. `None`
/// for events that say nothing a person needs (bookkeeping such as `turn.started`).
pub fn readable_line(line: &str) -> Option<String> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return Some(line.to_owned());
    }
    let Ok(event) = serde_json::from_str::<serde_json::Value>(trimmed) else {
        return Some(line.to_owned());
    };
    let kind = event["type"].as_str().unwrap_or_default();
    match kind {
        // Claude Code, --output-format stream-json.
        "assistant" | "user" => {
            let parts: Vec<String> = event["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(claude_part)
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        "result" => Some(match event["result"].as_str() {
            Some(result) => format!("▸ done: {}", one_line(result)),
            None => format!("▸ done ({})", event["subtype"].as_str().unwrap_or("ended")),
        }),
        "system" => (event["subtype"] == "init").then(|| {
            format!(
                "▸ session started ({})",
                event["model"].as_str().unwrap_or("model unknown")
            )
        }),
        // Codex, exec --json.
        "item.started" | "item.completed" => codex_item(kind, &event["item"]),
        "turn.failed" | "error" => Some(format!(
            "▸ error: {}",
            one_line(
                event["message"]
                    .as_str()
                    .or_else(|| event["error"]["message"].as_str())
                    .unwrap_or("unknown")
            )
        )),
        "thread.started" | "turn.started" | "turn.completed" | "stream_event" => None,
        _ => Some(line.to_owned()),
    }
}

fn claude_part(part: &serde_json::Value) -> Option<String> {
    match part["type"].as_str()? {
        "text" => Some(part["text"].as_str()?.to_owned()),
        "tool_use" => Some(format!(
            "▸ {}: {}",
            part["name"].as_str().unwrap_or("tool"),
            tool_input(&part["input"])
        )),
        "tool_result" => {
            let content = match &part["content"] {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(|item| item["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            };
            let label = if part["is_error"] == true {
                "refused"
            } else {
                "result"
            };
            Some(format!("  {label}: {}", one_line(&content)))
        }
        _ => None,
    }
}

fn codex_item(kind: &str, item: &serde_json::Value) -> Option<String> {
    let done = kind == "item.completed";
    match item["type"].as_str()? {
        "agent_message" if done => Some(item["text"].as_str()?.to_owned()),
        "reasoning" => None,
        "command_execution" if done => Some(format!(
            "  result (exit {}): {}",
            item["exit_code"]
                .as_i64()
                .map_or_else(|| "?".to_owned(), |code| code.to_string()),
            one_line(item["aggregated_output"].as_str().unwrap_or_default())
        )),
        "command_execution" => Some(format!(
            "▸ exec: {}",
            one_line(item["command"].as_str().unwrap_or_default())
        )),
        "mcp_tool_call" if !done => Some(format!(
            "▸ {}/{}",
            item["server"].as_str().unwrap_or("mcp"),
            item["tool"].as_str().unwrap_or("tool")
        )),
        "error" => Some(format!(
            "▸ error: {}",
            one_line(item["message"].as_str().unwrap_or_default())
        )),
        _ => None,
    }
}

/// A tool's input in a line: a shell command as itself, anything else as compact JSON.
fn tool_input(input: &serde_json::Value) -> String {
    match input["command"].as_str() {
        Some(command) => one_line(command),
        None => one_line(&input.to_string()),
    }
}

/// `text` on one line, at most 300 characters.
fn one_line(text: &str) -> String {
    cut_chars(&text.split_whitespace().collect::<Vec<_>>().join(" "), 300)
}

fn cut_chars(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()),
        None => text.to_owned(),
    }
}

/// The first character boundary of `text` at or after byte `at`.
pub fn next_boundary(text: &str, at: usize) -> usize {
    (at..text.len())
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(text.len())
}

/// `text` without terminal sequences or control characters, on one line.
fn strip_controls(text: &str) -> String {
    strip_controls_keeping_lines(text).replace(['\n', '\t'], " ")
}

/// `text` without terminal escape sequences (CSI, OSC and two-byte escapes) or control characters other than
/// tab and line ends; `\r\n` and a lone `\r` both become `\n`.
fn strip_controls_keeping_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS and the like: up to BEL or ESC \.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            // Bidirectional overrides can make a shown line read differently from what ran.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).expect("valid time")
    }

    fn run() -> Run {
        Run {
            run_id: "r1".into(),
            state: RunState::Running,
            command: "claude -p hi".into(),
            host: "box".into(),
            started_at: at(0),
            ended_at: None,
            heartbeat_at: at(0),
            exit_code: None,
            signal: None,
            stop_requested_by: None,
            stopped_by: None,
        }
    }

    #[test]
    fn each_ending_has_its_state_session_status_and_reason() {
        let cases = [
            (
                RunEnd {
                    exit_code: Some(0),
                    signal: None,
                    stopped: false,
                },
                None,
                RunState::Finished,
                SessionStatus::Finished,
                "The agent exited with code 0 before anyone answered.",
            ),
            (
                RunEnd {
                    exit_code: Some(3),
                    signal: None,
                    stopped: false,
                },
                None,
                RunState::Failed,
                SessionStatus::Failed,
                "The agent exited with code 3 before anyone answered.",
            ),
            (
                RunEnd {
                    exit_code: None,
                    signal: Some(9),
                    stopped: false,
                },
                None,
                RunState::Failed,
                SessionStatus::Failed,
                "The agent was killed by signal 9 before anyone answered.",
            ),
            (
                RunEnd {
                    exit_code: None,
                    signal: Some(2),
                    stopped: true,
                },
                Some("rita"),
                RunState::Stopped,
                SessionStatus::Cancelled,
                "rita stopped the agent before anyone answered.",
            ),
            (
                RunEnd {
                    exit_code: Some(130),
                    signal: None,
                    stopped: false,
                },
                Some("rita"),
                RunState::Stopped,
                SessionStatus::Cancelled,
                "rita stopped the agent before anyone answered.",
            ),
        ];
        for (end, requested, state, status, reason) in cases {
            let mut run = run();
            run.stop_requested_by = requested.map(str::to_owned);
            end.validate().expect("valid");
            run.end(&end, at(5));
            assert_eq!(run.state, state);
            assert_eq!(run.session_status(), Some(status));
            assert_eq!(run.ending_reason(), reason);
            assert_eq!(run.ended_at, Some(at(5)));
        }
        let mut lost = run();
        lost.lose(at(200));
        assert_eq!(lost.session_status(), Some(SessionStatus::Failed));
        assert!(
            lost.ending_reason()
                .contains("stopped reporting for 2 minutes")
        );
    }

    #[test]
    fn an_end_needs_exactly_one_of_code_and_signal() {
        for bad in [
            RunEnd {
                exit_code: None,
                signal: None,
                stopped: false,
            },
            RunEnd {
                exit_code: Some(1),
                signal: Some(9),
                stopped: false,
            },
            RunEnd {
                exit_code: None,
                signal: Some(0),
                stopped: false,
            },
            RunEnd {
                exit_code: None,
                signal: Some(65),
                stopped: false,
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_run_is_live_until_it_ends_or_goes_quiet() {
        let mut run = run();
        assert!(run.is_live(at(119)));
        assert!(!run.is_live(at(120)));
        run.end(
            &RunEnd {
                exit_code: Some(0),
                signal: None,
                stopped: false,
            },
            at(1),
        );
        assert!(!run.is_live(at(2)));
        assert_eq!(
            run.clone().seen_with(SessionStatus::NeedsInput).state,
            RunState::Finished
        );
        let waiting = super::tests::run().seen_with(SessionStatus::NeedsInput);
        assert_eq!(waiting.state, RunState::NeedsInput);
    }

    #[test]
    fn output_loses_its_terminal_sequences_and_controls() {
        let raw = "\u{1b}[1;32mgreen\u{1b}[0m ok\r\n\u{1b}]0;title\u{7}next\u{0}\u{8}\rover\u{202e}txt\tend";
        assert_eq!(clean_output(raw), "green ok\nnext\novertxt\tend");
        let long = "x".repeat(LINE_CHARS + 10);
        let cleaned = clean_output(&format!("{long}\nshort"));
        assert_eq!(cleaned, format!("{}…\nshort", "x".repeat(LINE_CHARS)));
        let start = RunStart {
            command: "a\nb\u{1b}[2J".into(),
            host: "h".repeat(300),
        };
        assert!(start.validate().is_err());
        assert_eq!(start.cleaned().command, "a b");
    }

    #[test]
    fn the_kept_output_is_its_last_lines_within_the_bound() {
        let line = format!("{}\n", "y".repeat(99));
        let mut kept = String::new();
        for _ in 0..2_000 {
            kept = append_output(&kept, &line);
            assert!(kept.len() <= OUTPUT_KEPT);
        }
        assert!(kept.len() > OUTPUT_KEPT - 200);
        assert!(kept.starts_with('y') && kept.ends_with('\n'));
        assert_eq!(kept.len() % 100, 0, "only whole lines are kept");
        let kept = append_output(&kept, "é".repeat(OUTPUT_KEPT).as_str());
        assert!(kept.len() <= OUTPUT_KEPT && kept.chars().all(|c| c == 'é'));
    }

    #[test]
    fn harness_events_read_as_sentences() {
        let claude_tool = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Let me check."},{"type":"tool_use","name":"Bash","input":{"command":"terraform\n apply"}}]}}"#;
        assert_eq!(
            readable_line(claude_tool).as_deref(),
            Some("Let me check.\n▸ Bash: terraform apply")
        );
        let refused = r#"{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":"Denied by rita"}]}}"#;
        assert_eq!(
            readable_line(refused).as_deref(),
            Some("  refused: Denied by rita")
        );
        assert_eq!(
            readable_line(r#"{"type":"result","subtype":"success","result":"All done."}"#)
                .as_deref(),
            Some("▸ done: All done.")
        );
        let codex_exec = r#"{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}"#;
        assert_eq!(
            readable_line(codex_exec).as_deref(),
            Some("▸ exec: bash -lc ls")
        );
        let codex_done = r#"{"type":"item.completed","item":{"type":"command_execution","command":"ls","aggregated_output":"a\nb\n","exit_code":0}}"#;
        assert_eq!(
            readable_line(codex_done).as_deref(),
            Some("  result (exit 0): a b")
        );
        assert_eq!(
            readable_line(
                r#"{"type":"item.completed","item":{"type":"agent_message","text":"Hi."}}"#
            )
            .as_deref(),
            Some("Hi.")
        );
        assert_eq!(readable_line(r#"{"type":"turn.started"}"#), None);
        // Anything else is shown as it came.
        for other in ["plain text", "{not json", r#"{"type":"something.new"}"#] {
            assert_eq!(readable_line(other).as_deref(), Some(other));
        }
    }
}
