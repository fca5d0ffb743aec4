//! Copilot CLI's hook file (`~/.copilot/hooks/*.json`, `$COPILOT_HOME/hooks/`, a repository's
//! `.github/hooks/`): `{"version": 1, "hooks": {"permissionRequest": [handler, …]}}`, each handler a command run
//! with the event on stdin. Anteroom's handler runs `anteroom hook copilot-permission-request`, by its absolute
//! path; every other key and handler stays, and a second run changes nothing.

use serde_json::{Map, Value, json};

use super::{ConfigError, HookInstall, is_anteroom_handler};

/// The event Anteroom answers: Copilot sends it only for a call it would ask a person about, and reads an allow
/// from it even in `-p`.
const EVENT: &str = "permissionRequest";

/// Puts Anteroom's handler in `root` (a hook file's object), replacing its own where it already is.
pub(super) fn place_handler(
    root: &mut Map<String, Value>,
    install: &HookInstall,
) -> Result<(), ConfigError> {
    let timeout = install.timeout_seconds;
    let handler = json!({
        "type": "command",
        "bash": format!("{} hook copilot-permission-request --timeout {timeout}", install.program),
        "timeoutSec": timeout,
    });
    root.entry("version").or_insert(json!(1));
    let handlers = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| ConfigError::Shape("`hooks` is not an object".to_owned()))?
        .entry(EVENT)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| ConfigError::Shape(format!("`hooks.{EVENT}` is not an array")))?;
    match handlers
        .iter_mut()
        .find(|existing| is_anteroom_handler(existing))
    {
        Some(ours) => *ours = handler,
        None => handlers.push(handler),
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
