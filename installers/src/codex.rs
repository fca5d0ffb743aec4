//! Codex: its `config.toml` (`[mcp_servers.NAME]`, rewritten by inject, wrap and unwrap, comments and layout
//! kept), the `hooks.json` `PreToolUse` command hook that runs `anteroom hook codex-pre-tool-use`, and Codex's
//! trust in that entry, recorded in its `config.toml` so `codex exec` runs the hook without
//! `--dangerously-bypass-hook-trust`.
//!
//! Codex skips an untrusted `hooks.json` entry silently (the command runs, nobody is asked). An entry is trusted
//! when `[hooks.state."<hooks.json's absolute path>:pre_tool_use:<group>:<handler>"]` holds `trusted_hash` equal
//! to the entry's hash: SHA-256 over the entry's normalized identity (the event's snake-case label, the group's
//! matcher, and the one handler with `async`, `command`, `timeout` and `type`), as JSON with sorted keys and no
//! spaces, the way Codex 0.171's app server reports it as `currentHash` in `hooks/list`. The hash changes when
//! the entry does, so a refreshed entry is trusted again by the same command that refreshed it.

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toml_edit::DocumentMut;

use super::{Change, ConfigError, HookInstall, block_for, env_values, picked, rewritten_command};

/// The `hooks.json` groups, each one command hook for every tool: `PreToolUse` (every call; the policy is
/// Anteroom's) and `PermissionRequest` (a call Codex would ask its user about, in the TUI or an app server; one
/// the person already allowed in the same turn is allowed at once).
pub(super) fn hook_groups(install: &HookInstall) -> Vec<(&'static str, Value)> {
    let timeout = install.timeout_seconds;
    EVENTS
        .iter()
        .map(|(event, _, command)| {
            let hook = json!({
                "type": "command",
                "command": format!("{} hook {command} --timeout {timeout}", install.program),
                "timeout": timeout,
            });
            (*event, json!({"hooks": [hook]}))
        })
        .collect()
}

/// The events Anteroom hooks: the name in `hooks.json`, Codex's label of it in trust keys and hashes, and the
/// `anteroom hook` command that answers it.
const EVENTS: [(&str, &str, &str); 2] = [
    ("PreToolUse", "pre_tool_use", "codex-pre-tool-use"),
    (
        "PermissionRequest",
        "permission_request",
        "codex-permission-request",
    ),
];

pub(super) fn rewrite_config_toml(
    text: &str,
    change: &Change,
    only: &[String],
) -> Result<String, ConfigError> {
    use toml_edit::{Array, DocumentMut, Item, Value as TomlValue};

    let mut document: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        let at = error.span().map(|span| {
            text.as_bytes()[..span.start.min(text.len())]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1
        });
        ConfigError::Unparsable(match at {
            Some(line) => format!("not valid TOML at line {line}: {}", error.message()),
            None => format!("not valid TOML: {}", error.message()),
        })
    })?;
    let Some(servers) = document
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
    else {
        return Ok(text.to_owned());
    };
    let names: Vec<String> = servers.iter().map(|(name, _)| name.to_owned()).collect();
    for name in names {
        let Some(entry) = servers.get_mut(&name).and_then(Item::as_table_like_mut) else {
            continue;
        };
        let Some(command) = entry
            .get("command")
            .and_then(Item::as_str)
            .map(str::to_owned)
        else {
            // No command: a remote server (`url`), left alone.
            continue;
        };
        if entry.contains_key("url") || !picked(only, &name) {
            continue;
        }
        match change {
            Change::Inject { block, dotenv } => {
                if !entry.contains_key("env") {
                    let mut table = toml_edit::Table::new();
                    table.set_implicit(false);
                    entry.insert("env", Item::Table(table));
                }
                let Some(env) = entry.get_mut("env").and_then(Item::as_table_like_mut) else {
                    return Err(ConfigError::Shape(format!(
                        "mcp_servers.{name}.env is not a table"
                    )));
                };
                for (key, value) in env_values(&block_for(block, &name), dotenv) {
                    if env.get(&key).and_then(Item::as_str) != Some(value.as_str()) {
                        match env.get_mut(&key).and_then(Item::as_value_mut) {
                            // Keep the entry's own decoration (comments, spacing) around the new value.
                            Some(existing) => {
                                let decor = existing.decor().clone();
                                *existing = TomlValue::from(value);
                                *existing.decor_mut() = decor;
                            }
                            None => {
                                env.insert(&key, toml_edit::value(value));
                            }
                        }
                    }
                }
            }
            Change::Wrap { .. } | Change::Unwrap => {
                let args: Vec<String> = match entry.get("args") {
                    None => Vec::new(),
                    Some(item) => item
                        .as_array()
                        .ok_or_else(|| {
                            ConfigError::Shape(format!("mcp_servers.{name}.args is not an array"))
                        })?
                        .iter()
                        .map(|arg| arg.as_str().map(str::to_owned))
                        .collect::<Option<_>>()
                        .ok_or_else(|| {
                            ConfigError::Shape(format!(
                                "mcp_servers.{name}.args holds a non-string"
                            ))
                        })?,
                };
                if let Some((command, args)) = rewritten_command(change, &name, &command, &args) {
                    if let Some(existing) = entry.get_mut("command").and_then(Item::as_value_mut) {
                        let decor = existing.decor().clone();
                        *existing = TomlValue::from(command);
                        *existing.decor_mut() = decor;
                    }
                    let array: Array = args.iter().map(String::as_str).collect();
                    if array.is_empty() {
                        entry.remove("args");
                        continue;
                    }
                    match entry.get_mut("args").and_then(Item::as_value_mut) {
                        Some(existing) => {
                            let decor = existing.decor().clone();
                            *existing = TomlValue::Array(array);
                            *existing.decor_mut() = decor;
                        }
                        None => {
                            entry.insert("args", toml_edit::value(array));
                        }
                    }
                }
            }
        }
    }
    let out = document.to_string();
    Ok(if out == text { text.to_owned() } else { out })
}

/// Codex's timeout for a command hook that names none.
const DEFAULT_TIMEOUT: u64 = 600;

/// One hook entry to trust: its key in `[hooks.state]` and the hash Codex expects there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedEntry {
    pub key: String,
    pub hash: String,
}

/// The trust entries for the handlers in `hooks_json` (a Codex `hooks.json`, at `hooks_path`, absolute) that
/// `is_ours` picks, under the events Anteroom hooks.
pub fn entries_to_trust(
    hooks_json: &str,
    hooks_path: &Path,
    is_ours: impl Fn(&Value) -> bool,
) -> Vec<TrustedEntry> {
    let Ok(document) = serde_json::from_str::<Value>(hooks_json) else {
        return Vec::new();
    };
    let mut entries = Vec::new();
    for (event, label, _) in EVENTS {
        let Some(groups) = document["hooks"][event].as_array() else {
            continue;
        };
        entries.extend(event_entries(groups, label, hooks_path, &is_ours));
    }
    entries
}

/// The trust entries of one event's groups.
fn event_entries(
    groups: &[Value],
    label: &str,
    hooks_path: &Path,
    is_ours: &impl Fn(&Value) -> bool,
) -> Vec<TrustedEntry> {
    let mut entries = Vec::new();
    for (group_index, group) in groups.iter().enumerate() {
        let matcher = group.get("matcher").and_then(Value::as_str);
        for (handler_index, handler) in group["hooks"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if !is_ours(handler) {
                continue;
            }
            let Some(command) = handler.get("command").and_then(Value::as_str) else {
                continue;
            };
            let timeout = handler
                .get("timeout")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_TIMEOUT)
                .max(1);
            let asynchronous = handler
                .get("async")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            entries.push(TrustedEntry {
                key: format!(
                    "{}:{label}:{group_index}:{handler_index}",
                    hooks_path.display()
                ),
                hash: entry_hash(label, command, timeout, asynchronous, matcher),
            });
        }
    }
    entries
}

/// The hash Codex computes for a command handler of the event Codex labels `label`. Keys are inserted in sorted
/// order (the workspace's `serde_json` keeps insertion order), and a matcher that is absent is left out, as
/// Codex's TOML round trip leaves out what is `None`.
fn entry_hash(
    label: &str,
    command: &str,
    timeout: u64,
    asynchronous: bool,
    matcher: Option<&str>,
) -> String {
    let handler = json!({
        "async": asynchronous,
        "command": command,
        "timeout": timeout,
        "type": "command",
    });
    let mut identity = json!({"event_name": label, "hooks": [handler]});
    if let Some(matcher) = matcher {
        identity["matcher"] = Value::String(matcher.to_owned());
    }
    let digest = Sha256::digest(identity.to_string().as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

/// `config_toml` (Codex's `config.toml`; empty is a new one) with `trusted_hash` set for each entry, every
/// other key, comment and table kept. Equal to the input when nothing changed.
pub fn record_trust(config_toml: &str, entries: &[TrustedEntry]) -> Result<String, ConfigError> {
    let mut document: DocumentMut =
        config_toml.parse().map_err(|error: toml_edit::TomlError| {
            ConfigError::Unparsable(format!("not valid TOML: {error}"))
        })?;
    let mut changed = false;
    for entry in entries {
        let hooks = document
            .entry("hooks")
            .or_insert_with(implicit_table)
            .as_table_mut()
            .ok_or_else(|| ConfigError::Shape("`hooks` is not a table".to_owned()))?;
        let state = hooks
            .entry("state")
            .or_insert_with(implicit_table)
            .as_table_mut()
            .ok_or_else(|| ConfigError::Shape("`hooks.state` is not a table".to_owned()))?;
        let slot = state
            .entry(&entry.key)
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| {
                ConfigError::Shape(format!("`hooks.state.\"{}\"` is not a table", entry.key))
            })?;
        if slot.get("trusted_hash").and_then(toml_edit::Item::as_str) != Some(entry.hash.as_str()) {
            slot.insert("trusted_hash", toml_edit::value(&entry.hash));
            changed = true;
        }
    }
    Ok(if changed {
        document.to_string()
    } else {
        config_toml.to_owned()
    })
}

/// A table written only through its sub-tables (`[hooks.state."…"]`, not an empty `[hooks]`).
fn implicit_table() -> toml_edit::Item {
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    toml_edit::Item::Table(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(handler: &Value) -> bool {
        handler["command"]
            .as_str()
            .is_some_and(|command| command.contains("anteroom"))
    }

    #[test]
    fn the_hash_is_the_one_codex_reports_for_the_entry() {
        // `currentHash` from the real Codex 0.171 app server's `hooks/list` for exactly this hooks.json.
        let hooks = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command",
            "command": "/usr/bin/anteroom hook codex-pre-tool-use --timeout 600", "timeout": 600}]}],
            "PermissionRequest": [{"hooks": [{"type": "command",
            "command": "/usr/bin/anteroom hook codex-permission-request --timeout 600", "timeout": 600}]}]}}"#;
        let entries = entries_to_trust(hooks, Path::new("/tmp/ch/home/hooks.json"), ours);
        assert_eq!(
            entries,
            vec![
                TrustedEntry {
                    key: "/tmp/ch/home/hooks.json:pre_tool_use:0:0".to_owned(),
                    hash: "sha256:a62599e4c90453caff6198b6c3dd58ce2d956c68ab0f31455d7e2b1d69cdb685"
                        .to_owned(),
                },
                TrustedEntry {
                    key: "/tmp/ch/home/hooks.json:permission_request:0:0".to_owned(),
                    hash: "sha256:6cdecb7590b1695d38a8cd02f1a3b7a9a104e1251de1e89ddd40f1589a2d6858"
                        .to_owned(),
                },
            ]
        );
    }

    #[test]
    fn only_our_handler_is_trusted_at_its_place_and_a_matcher_changes_the_hash() {
        let hooks = r#"{"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"},
                                          {"type": "command", "command": "anteroom hook codex-pre-tool-use"}]}]}}"#;
        let entries = entries_to_trust(hooks, Path::new("/h/hooks.json"), ours);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].key, "/h/hooks.json:pre_tool_use:0:1");
        assert_ne!(
            entries[0].hash,
            entry_hash(
                "pre_tool_use",
                "anteroom hook codex-pre-tool-use",
                600,
                false,
                None
            )
        );
        assert!(entries_to_trust("not json", Path::new("/h/hooks.json"), ours).is_empty());
    }

    #[test]
    fn trust_is_recorded_beside_the_rest_and_a_second_run_changes_nothing() {
        let entry = TrustedEntry {
            key: "/h/hooks.json:pre_tool_use:0:0".to_owned(),
            hash: "sha256:ab".to_owned(),
        };
        let config = "# mine\nmodel = \"o4\"\n\n[projects.\"/src\"]\ntrust_level = \"trusted\"\n";
        let written = record_trust(config, std::slice::from_ref(&entry)).expect("recorded");
        assert!(written.starts_with(config), "{written}");
        assert!(
            written.contains(
                "[hooks.state.\"/h/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:ab\""
            ),
            "{written}"
        );
        assert!(!written.contains("[hooks]\n"), "{written}");
        assert_eq!(
            record_trust(&written, std::slice::from_ref(&entry)).expect("again"),
            written
        );
        let refreshed = TrustedEntry {
            hash: "sha256:cd".to_owned(),
            ..entry
        };
        let updated = record_trust(&written, &[refreshed]).expect("refreshed");
        assert!(
            updated.contains("trusted_hash = \"sha256:cd\""),
            "{updated}"
        );
        assert!(!updated.contains("sha256:ab"), "{updated}");
        assert!(record_trust("hooks = 1", &[]).is_ok());
        assert!(
            record_trust(
                "hooks = 1",
                &[TrustedEntry {
                    key: "k".to_owned(),
                    hash: "h".to_owned()
                }]
            )
            .is_err()
        );
    }
}
