//! Which tool calls wait for a person: the tools that change something by default, every MCP tool, Claude's own
//! questions always, and the hook's own `ask` and `allow` lists; and the tool names taken at all.

use super::ASK_USER_QUESTION;
use crate::ManagedInputError;

/// The tools that change something, asked about by default; any `mcp__server__tool` too. `apply_patch` is how
/// Codex edits files.
const ASKED_BY_DEFAULT: [&str; 6] = [
    "Bash",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "apply_patch",
];

/// The longest tool name taken (Claude Code's own are short; an MCP tool's is `mcp__server__tool`).
const TOOL_NAME_CHARS: usize = 200;

/// Which tools need a person: the defaults, with tools added (`ask`) or let through (`allow`) by the hook's
/// own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    pub ask: Vec<String>,
    pub allow: Vec<String>,
}

impl ToolPolicy {
    /// From the comma-separated `ask` and `allow` lists of a hook's URL; at most 64 names each.
    pub fn from_lists(ask: Option<&str>, allow: Option<&str>) -> Self {
        let names = |list: Option<&str>| {
            list.unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .take(64)
                .map(str::to_owned)
                .collect()
        };
        Self {
            ask: names(ask),
            allow: names(allow),
        }
    }

    /// Whether a call of `tool` waits for a person.
    pub fn needs_person(&self, tool: &str) -> bool {
        if tool == ASK_USER_QUESTION {
            return true;
        }
        if self.allow.iter().any(|name| name == tool) {
            return false;
        }
        self.ask.iter().any(|name| name == tool)
            || ASKED_BY_DEFAULT.contains(&tool)
            || tool.starts_with("mcp__")
    }
}

/// Refuses a tool name that is empty, too long, or carries control characters.
pub fn check_tool_name(name: &str) -> Result<(), ManagedInputError> {
    if name.is_empty()
        || name.chars().count() > TOOL_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ManagedInputError::validation(format!(
            "`tool_name` must be 1 to {TOOL_NAME_CHARS} characters without control characters."
        )));
    }
    Ok(())
}
