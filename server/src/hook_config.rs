//! Writes Anteroom's hook entries into the harnesses' hook files: Claude Code's settings (`.claude/settings.json`:
//! `PreToolUse` and `Elicitation` HTTP hooks) and Codex's `hooks.json` (a `PreToolUse` command hook running
//! `anteroom hook codex-pre-tool-use`). Pure text in, text out, like `mcp_config`: every other key and hook stays
//! where it was, an entry of Anteroom's already there is replaced in place, so a second run changes nothing.

use serde_json::{Map, Value, json};

use crate::mcp_config::{ConfigError, write_json};

/// The environment variable Claude Code reads the session's token from (listed in the hook's
/// `allowedEnvVars`, so the token is in neither the file nor a URL).
pub use anteroom_api::views::SESSION_TOKEN_VARIABLE;

/// Whose hook file it is, by its name: `hooks.json` is Codex's, any other JSON file Claude Code's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookFile {
    ClaudeSettings,
    CodexHooks,
}

impl HookFile {
    pub fn of(path: &std::path::Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?;
        if name == "hooks.json" {
            Some(Self::CodexHooks)
        } else if name.ends_with(".json") {
            Some(Self::ClaudeSettings)
        } else {
            None
        }
    }
}

/// What the entries say: where Anteroom is, the hooks' timeout, and how Codex runs `anteroom`.
#[derive(Debug, Clone)]
pub struct HookInstall {
    pub public_url: String,
    pub timeout_seconds: u64,
    pub program: String,
}

impl HookInstall {
    /// The `(event, matcher group)` pairs Anteroom adds to `file`.
    fn groups(&self, file: HookFile) -> Vec<(&'static str, Value)> {
        let timeout = self.timeout_seconds;
        match file {
            HookFile::ClaudeSettings => ["pre-tool-use", "elicitation"]
                .into_iter()
                .zip(["PreToolUse", "Elicitation"])
                .map(|(route, event)| {
                    let hook = json!({
                        "type": "http",
                        "url": format!(
                            "{}/hooks/claude/{route}?timeout={timeout}",
                            self.public_url.trim_end_matches('/')
                        ),
                        "timeout": timeout,
                        "headers": {"Authorization": format!("Bearer ${SESSION_TOKEN_VARIABLE}")},
                        "allowedEnvVars": [SESSION_TOKEN_VARIABLE],
                    });
                    (event, json!({"matcher": "*", "hooks": [hook]}))
                })
                .collect(),
            HookFile::CodexHooks => {
                let hook = json!({
                    "type": "command",
                    "command": format!(
                        "{} hook codex-pre-tool-use --timeout {timeout}",
                        self.program
                    ),
                    "timeout": timeout,
                });
                vec![("PreToolUse", json!({"hooks": [hook]}))]
            }
        }
    }
}

/// Whether a hook handler is one of Anteroom's: an HTTP hook to its hook routes, or its Codex command.
pub fn is_anteroom_handler(handler: &Value) -> bool {
    let text = |key: &str| handler.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "http" => text("url").contains("/hooks/claude/"),
        "command" => text("command").contains(" hook codex-pre-tool-use"),
        _ => false,
    }
}

/// Adds (or refreshes) Anteroom's hooks in `text`, a hook file of kind `file`; an empty text is an empty file.
/// Returns the new text, equal to `text` when nothing changed.
pub fn install_hooks(
    text: &str,
    file: HookFile,
    install: &HookInstall,
) -> Result<String, ConfigError> {
    let source = if text.trim().is_empty() { "{}" } else { text };
    let mut document: Value = serde_json::from_str(source).map_err(|error| {
        ConfigError::Unparsable(format!(
            "not valid JSON at line {}, column {}: {error}",
            error.line(),
            error.column()
        ))
    })?;
    let original = document.clone();
    let root = document
        .as_object_mut()
        .ok_or_else(|| ConfigError::Shape("the file is not a JSON object".to_owned()))?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| ConfigError::Shape("`hooks` is not an object".to_owned()))?;
    for (event, group) in install.groups(file) {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| ConfigError::Shape(format!("`hooks.{event}` is not an array")))?;
        place_group(groups, group);
    }
    if document == original && !text.trim().is_empty() {
        return Ok(text.to_owned());
    }
    write_json(&document, text)
}

/// Puts Anteroom's `group` where its handler already is (replacing that handler's group when it holds only
/// Anteroom's handler, else the handler alone), or appends it.
fn place_group(groups: &mut Vec<Value>, group: Value) {
    let ours = |candidate: &Value| {
        candidate
            .get("hooks")
            .and_then(Value::as_array)
            .is_some_and(|handlers| handlers.iter().any(is_anteroom_handler))
    };
    let Some(at) = groups.iter().position(ours) else {
        groups.push(group);
        return;
    };
    let alone = groups[at]
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|handlers| handlers.iter().all(is_anteroom_handler));
    if alone {
        groups[at] = group;
        return;
    }
    // A group the person shares with other hooks: only Anteroom's handler is refreshed.
    let handler = group["hooks"][0].clone();
    if let Some(handlers) = groups[at].get_mut("hooks").and_then(Value::as_array_mut)
        && let Some(slot) = handlers
            .iter_mut()
            .find(|handler| is_anteroom_handler(handler))
    {
        *slot = handler;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install() -> HookInstall {
        HookInstall {
            public_url: "https://anteroom.example/".to_owned(),
            timeout_seconds: 600,
            program: "anteroom".to_owned(),
        }
    }

    #[test]
    fn claude_settings_gain_both_http_hooks_with_the_token_from_the_environment_and_keep_the_rest()
    {
        let text = r#"{
    "model": "opus",
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}
        ]
    }
}
"#;
        let written = install_hooks(text, HookFile::ClaudeSettings, &install()).expect("installed");
        let document: Value = serde_json::from_str(&written).expect("JSON");
        assert_eq!(document["model"], "opus");
        let pre = document["hooks"]["PreToolUse"].as_array().expect("array");
        assert_eq!(pre.len(), 2, "the person's own hook stays");
        assert_eq!(pre[0]["hooks"][0]["command"], "audit.sh");
        let ours = &pre[1]["hooks"][0];
        assert_eq!(
            ours["url"],
            "https://anteroom.example/hooks/claude/pre-tool-use?timeout=600"
        );
        assert_eq!(
            ours["headers"]["Authorization"],
            "Bearer $ANTEROOM_SESSION_TOKEN"
        );
        assert_eq!(ours["allowedEnvVars"], json!(["ANTEROOM_SESSION_TOKEN"]));
        assert_eq!(
            document["hooks"]["Elicitation"][0]["hooks"][0]["url"],
            "https://anteroom.example/hooks/claude/elicitation?timeout=600"
        );
        assert!(
            written.starts_with("{\n    \"model\""),
            "indent kept: {written}"
        );
        assert_eq!(
            install_hooks(&written, HookFile::ClaudeSettings, &install()).expect("again"),
            written,
            "a second run changes nothing"
        );
        // A new timeout refreshes Anteroom's entries where they are.
        let longer = HookInstall {
            timeout_seconds: 900,
            ..install()
        };
        let refreshed =
            install_hooks(&written, HookFile::ClaudeSettings, &longer).expect("refresh");
        let document: Value = serde_json::from_str(&refreshed).expect("JSON");
        assert_eq!(
            document["hooks"]["PreToolUse"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(
            document["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"],
            900
        );
    }

    #[test]
    fn codex_hooks_gain_the_command_hook_and_an_empty_file_is_a_new_one() {
        let written = install_hooks("", HookFile::CodexHooks, &install()).expect("installed");
        let document: Value = serde_json::from_str(&written).expect("JSON");
        assert_eq!(
            document["hooks"]["PreToolUse"][0]["hooks"][0],
            json!({
                "type": "command",
                "command": "anteroom hook codex-pre-tool-use --timeout 600",
                "timeout": 600
            })
        );
        assert!(document["hooks"].get("Elicitation").is_none());
        assert_eq!(
            install_hooks(&written, HookFile::CodexHooks, &install()).expect("again"),
            written
        );
    }

    #[test]
    fn a_file_of_another_shape_is_refused_and_names_are_recognised() {
        assert!(install_hooks("[1]", HookFile::ClaudeSettings, &install()).is_err());
        assert!(install_hooks(r#"{"hooks": []}"#, HookFile::ClaudeSettings, &install()).is_err());
        assert!(install_hooks("{", HookFile::ClaudeSettings, &install()).is_err());
        assert_eq!(
            HookFile::of(std::path::Path::new(".codex/hooks.json")),
            Some(HookFile::CodexHooks)
        );
        assert_eq!(
            HookFile::of(std::path::Path::new(".claude/settings.local.json")),
            Some(HookFile::ClaudeSettings)
        );
        assert_eq!(HookFile::of(std::path::Path::new("config.toml")), None);
    }
}
