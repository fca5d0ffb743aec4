//! Copilot CLI's hook file (`~/.copilot/hooks/*.json`, `$COPILOT_HOME/hooks/`, a repository's
//! `.github/hooks/`): `{"version": 1, "hooks": {"preToolUse": [handler, …], "permissionRequest": […]}}`, each
//! handler a command run with the event on stdin. Anteroom's handlers run `anteroom hook copilot-pre-tool-use`
//! and `copilot-permission-request`, by its absolute path; every other key and handler stays, and a second run
//! changes nothing. Cursor's `.cursor/hooks.json` has the same flat shape ([`place_flat_handlers`]).

use serde_json::{Map, Value, json};

use super::{ConfigError, HookInstall, is_anteroom_handler};

/// The handlers Anteroom adds: `preToolUse` for every call (the policy's calls asked; an allow skips Copilot's own
/// prompt, even in `-p`) and `permissionRequest` for a call Copilot would ask about that the policy let through
/// (no double question: a call `preToolUse` allowed is never asked again by Copilot).
pub(super) fn handlers(install: &HookInstall) -> Vec<(&'static str, Value)> {
    let timeout = install.timeout_seconds;
    [
        ("preToolUse", "copilot-pre-tool-use"),
        ("permissionRequest", "copilot-permission-request"),
    ]
    .into_iter()
    .map(|(event, command)| {
        let handler = json!({
            "type": "command",
            "bash": format!("{} hook {command} --timeout {timeout}", install.program),
            "timeoutSec": timeout,
        });
        (event, handler)
    })
    .collect()
}

/// Puts each `(event, handler)` in `root` (a hook file of Copilot's or Cursor's flat shape, `{"version": 1,
/// "hooks": {"event": [handler, …]}}`), replacing Anteroom's own where it already is.
pub(super) fn place_flat_handlers(
    root: &mut Map<String, Value>,
    handlers: Vec<(&'static str, Value)>,
) -> Result<(), ConfigError> {
    root.entry("version").or_insert(json!(1));
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| ConfigError::Shape("`hooks` is not an object".to_owned()))?;
    for (event, handler) in handlers {
        let existing = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| ConfigError::Shape(format!("`hooks.{event}` is not an array")))?;
        match existing
            .iter_mut()
            .find(|existing| is_anteroom_handler(existing))
        {
            Some(ours) => *ours = handler,
            None => existing.push(handler),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{HookFile, HookInstall, install_hooks};

    fn install() -> HookInstall {
        HookInstall {
            public_url: "http://127.0.0.1:3000".to_owned(),
            timeout_seconds: 120,
            program: "/usr/local/bin/anteroom".to_owned(),
            token_variable: "ANTEROOM_SESSION_TOKEN".to_owned(),
        }
    }

    #[test]
    fn copilots_hook_folders_are_recognised() {
        for path in [
            "/home/rita/.copilot/hooks/anteroom.json",
            "/srv/shop/.github/hooks/hooks.json",
        ] {
            assert_eq!(
                HookFile::of(std::path::Path::new(path)),
                Some(HookFile::CopilotHooks),
                "{path}"
            );
        }
        assert_eq!(
            HookFile::of(std::path::Path::new("/home/rita/.codex/hooks.json")),
            Some(HookFile::CodexHooks)
        );
    }

    #[test]
    fn the_handler_is_added_once_and_everything_else_stays() {
        let theirs = r#"{
  "version": 1,
  "hooks": {
    "permissionRequest": [{"type": "command", "bash": "./policy.sh", "timeoutSec": 5}],
    "sessionStart": [{"type": "command", "bash": "./hello.sh"}]
  }
}"#;
        let once = install_hooks(theirs, HookFile::CopilotHooks, &install()).expect("installed");
        let document: serde_json::Value = serde_json::from_str(&once).expect("JSON");
        let handlers = document["hooks"]["permissionRequest"]
            .as_array()
            .expect("handlers");
        assert_eq!(handlers.len(), 2);
        assert_eq!(handlers[0]["bash"], "./policy.sh");
        assert_eq!(
            document["hooks"]["preToolUse"][0]["bash"],
            "/usr/local/bin/anteroom hook copilot-pre-tool-use --timeout 120"
        );
        assert_eq!(
            handlers[1]["bash"],
            "/usr/local/bin/anteroom hook copilot-permission-request --timeout 120"
        );
        assert_eq!(handlers[1]["timeoutSec"], 120);
        assert_eq!(document["hooks"]["sessionStart"][0]["bash"], "./hello.sh");
        let twice = install_hooks(&once, HookFile::CopilotHooks, &install()).expect("again");
        assert_eq!(twice, once, "a second run changes nothing");
        let mut longer = install();
        longer.timeout_seconds = 300;
        let refreshed = install_hooks(&once, HookFile::CopilotHooks, &longer).expect("refreshed");
        let document: serde_json::Value = serde_json::from_str(&refreshed).expect("JSON");
        assert_eq!(
            document["hooks"]["permissionRequest"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        assert_eq!(document["hooks"]["permissionRequest"][1]["timeoutSec"], 300);
        let fresh = install_hooks("", HookFile::CopilotHooks, &install()).expect("new file");
        let document: serde_json::Value = serde_json::from_str(&fresh).expect("JSON");
        assert_eq!(document["version"], 1);
    }
}
