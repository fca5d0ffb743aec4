//! Cursor's hook file (`~/.cursor/hooks.json`, a project's `.cursor/hooks.json`): `{"version": 1, "hooks":
//! {"beforeShellExecution": [{"command": …}], "beforeMCPExecution": […]}}`, each handler a command run with the
//! event on stdin that answers `{"permission", "user_message", "agent_message"}`. Anteroom's run `anteroom hook
//! cursor`, by its absolute path. Not `preToolUse` as well: it fires for the same shell call again, so a person
//! would be asked twice (`anteroom hook cursor` answers it for those who choose it instead).

use serde_json::{Value, json};

use super::HookInstall;

/// A shell command, and an MCP tool call, each asked before it runs.
pub(super) fn handlers(install: &HookInstall) -> Vec<(&'static str, Value)> {
    let timeout = install.timeout_seconds;
    ["beforeShellExecution", "beforeMCPExecution"]
        .into_iter()
        .map(|event| {
            let command = format!("{} hook cursor --timeout {timeout}", install.program);
            (event, json!({"command": command, "timeout": timeout}))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::{HookFile, HookInstall, install_hooks};

    fn install() -> HookInstall {
        HookInstall {
            public_url: "http://127.0.0.1:3000".to_owned(),
            timeout_seconds: 300,
            program: "/usr/local/bin/anteroom".to_owned(),
            token_variable: "ANTEROOM_SESSION_TOKEN".to_owned(),
        }
    }

    #[test]
    fn shell_and_mcp_calls_are_asked_and_their_hooks_kept() {
        let path = std::path::Path::new("/srv/shop/.cursor/hooks.json");
        assert_eq!(HookFile::of(path), Some(HookFile::CursorHooks));
        let theirs = r#"{"version": 1, "hooks": {"beforeShellExecution": [{"command": "./audit.sh"}],
            "afterFileEdit": [{"command": "prettier --write"}]}}"#;
        let once = install_hooks(theirs, HookFile::CursorHooks, &install()).expect("installed");
        let document: serde_json::Value = serde_json::from_str(&once).expect("JSON");
        let shell = document["hooks"]["beforeShellExecution"]
            .as_array()
            .expect("handlers");
        assert_eq!(shell.len(), 2);
        assert_eq!(shell[0]["command"], "./audit.sh");
        assert_eq!(
            shell[1]["command"],
            "/usr/local/bin/anteroom hook cursor --timeout 300"
        );
        assert_eq!(
            document["hooks"]["beforeMCPExecution"][0]["command"],
            "/usr/local/bin/anteroom hook cursor --timeout 300"
        );
        assert_eq!(
            document["hooks"]["afterFileEdit"][0]["command"],
            "prettier --write"
        );
        assert!(document["hooks"].get("preToolUse").is_none());
        let twice = install_hooks(&once, HookFile::CursorHooks, &install()).expect("again");
        assert_eq!(twice, once, "a second run changes nothing");
    }
}
