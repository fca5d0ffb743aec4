//! Gemini CLI's settings (`~/.gemini/settings.json`, a project's `.gemini/settings.json`): its MCP servers are
//! `mcpServers` as in Claude Code's `.mcp.json`, and its `BeforeTool` hooks are groups of command handlers with a
//! tool-name matcher (a regular expression) and a `timeout` in milliseconds. Anteroom's handler runs `anteroom
//! hook gemini-before-tool` for the tools that change something — a guard that can only refuse, since Gemini
//! runs its own approval after the hook whatever it says (docs/hooks.md).

use serde_json::{Value, json};

use super::HookInstall;

/// Gemini's tools that change something: a shell command, a new file, an edit.
const ASKED_TOOLS: &str = "run_shell_command|write_file|replace";

/// The `BeforeTool` group.
pub(super) fn hook_groups(install: &HookInstall) -> Vec<(&'static str, Value)> {
    let timeout = install.timeout_seconds;
    let hook = json!({
        "type": "command",
        "name": "anteroom",
        "command": format!("{} hook gemini-before-tool --timeout {timeout}", install.program),
        "timeout": timeout.saturating_mul(1_000),
    });
    vec![(
        "BeforeTool",
        json!({"matcher": ASKED_TOOLS, "hooks": [hook]}),
    )]
}

#[cfg(test)]
mod tests {
    use crate::{HookFile, HookInstall, install_hooks};

    #[test]
    fn the_guard_is_added_beside_the_settings_and_hooks_already_there() {
        let install = HookInstall {
            public_url: "http://127.0.0.1:3000".to_owned(),
            timeout_seconds: 120,
            program: "/usr/local/bin/anteroom".to_owned(),
            token_variable: "ANTEROOM_SESSION_TOKEN".to_owned(),
        };
        let path = std::path::Path::new("/home/rita/.gemini/settings.json");
        assert_eq!(HookFile::of(path), Some(HookFile::GeminiSettings));
        let theirs = r#"{"security": {"auth": {"selectedType": "gemini-api-key"}},
            "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}]}}"#;
        let once = install_hooks(theirs, HookFile::GeminiSettings, &install).expect("installed");
        let document: serde_json::Value = serde_json::from_str(&once).expect("JSON");
        let groups = document["hooks"]["BeforeTool"].as_array().expect("groups");
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0]["hooks"][0]["command"], "./lint.sh");
        assert_eq!(groups[1]["matcher"], "run_shell_command|write_file|replace");
        assert_eq!(
            groups[1]["hooks"][0]["command"],
            "/usr/local/bin/anteroom hook gemini-before-tool --timeout 120"
        );
        assert_eq!(groups[1]["hooks"][0]["timeout"], 120_000, "milliseconds");
        assert_eq!(
            document["security"]["auth"]["selectedType"],
            "gemini-api-key"
        );
        let twice = install_hooks(&once, HookFile::GeminiSettings, &install).expect("again");
        assert_eq!(twice, once, "a second run changes nothing");
    }
}
