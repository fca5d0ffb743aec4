//! Claude Code: its `.mcp.json` (`mcpServers.NAME`, rewritten by inject, wrap and unwrap; Gemini CLI's
//! `settings.json` and Copilot CLI's `mcp-config.json` hold their servers the same way) and its settings'
//! `PreToolUse` and `Elicitation` hooks, `"type": "http"` hooks to Anteroom's `/hooks/claude/…` routes whose
//! `Authorization` header takes the session's token from the environment (`allowedEnvVars`), so it is in neither
//! the file nor a URL.

use serde_json::{Value, json};

use super::{
    Change, ConfigError, HookInstall, block_for, env_values, picked, rewritten_command, write_json,
};

/// The settings' hook groups: one per event, matching every tool. The `PreToolUse` handler is marked
/// `"onFailure": "block"` (Claude Code 2.1.295 and later): Claude Code lets a call through when an HTTP hook cannot
/// be reached or times out, so with Anteroom away a call the user's own rules allow would run with nobody asked;
/// marked, it is blocked and the model reads that the hook failed.
pub(super) fn hook_groups(install: &HookInstall) -> Vec<(&'static str, Value)> {
    let mut groups = http_hook_groups(
        install,
        "claude",
        &[
            ("pre-tool-use", "PreToolUse"),
            ("elicitation", "Elicitation"),
        ],
    );
    for (event, group) in &mut groups {
        if *event == "PreToolUse" {
            group["hooks"][0]["onFailure"] = Value::String("block".to_owned());
        }
    }
    groups
}

/// Qwen Code's settings (`~/.qwen/settings.json`, a trusted project's `.qwen/settings.json`) take Claude Code's
/// HTTP hooks: `PreToolUse` (asked in `yolo` mode, where nothing asks before it) and `PermissionRequest` (asked
/// whenever Qwen would ask its user).
pub(super) fn qwen_hook_groups(install: &HookInstall) -> Vec<(&'static str, Value)> {
    http_hook_groups(
        install,
        "qwen",
        &[
            ("pre-tool-use", "PreToolUse"),
            ("permission-request", "PermissionRequest"),
        ],
    )
}

/// One `"type": "http"` hook group per `(route, event)`, to `/hooks/{harness}/{route}`, its token from the
/// environment variable the install names.
fn http_hook_groups(
    install: &HookInstall,
    harness: &str,
    routes: &[(&str, &'static str)],
) -> Vec<(&'static str, Value)> {
    let timeout = install.timeout_seconds;
    let variable = &install.token_variable;
    routes
        .iter()
        .map(|(route, event)| {
            let hook = json!({
                "type": "http",
                "url": format!(
                    "{}/hooks/{harness}/{route}?timeout={timeout}",
                    install.public_url.trim_end_matches('/')
                ),
                "timeout": timeout,
                "headers": {"Authorization": format!("Bearer ${variable}")},
                "allowedEnvVars": [variable],
            });
            (*event, json!({"matcher": "*", "hooks": [hook]}))
        })
        .collect()
}

pub(super) fn rewrite_mcp_json(
    text: &str,
    change: &Change,
    only: &[String],
) -> Result<String, ConfigError> {
    let mut document: Value = serde_json::from_str(text).map_err(|error| {
        ConfigError::Unparsable(format!(
            "not valid JSON at line {}, column {}: {error}",
            error.line(),
            error.column()
        ))
    })?;
    let Some(servers) = document
        .get_mut("mcpServers")
        .and_then(Value::as_object_mut)
    else {
        return Ok(text.to_owned());
    };
    let mut changed = false;
    for (name, entry) in servers.iter_mut() {
        let Some(entry) = entry.as_object_mut() else {
            continue;
        };
        // A stdio server has a command; a remote one a URL (or an http/sse type). Copilot CLI calls its stdio
        // servers `local`; Gemini CLI names a remote one by `httpUrl` and no command.
        let remote = entry.contains_key("url")
            || entry
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| !matches!(kind, "stdio" | "local"));
        let Some(command) = entry
            .get("command")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            continue;
        };
        if remote || !picked(only, name) {
            continue;
        }
        match change {
            Change::Inject { block, dotenv } => {
                let env = entry
                    .entry("env")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                let Some(env) = env.as_object_mut() else {
                    return Err(ConfigError::Shape(format!(
                        "mcpServers.{name}.env is not an object"
                    )));
                };
                for (key, value) in env_values(&block_for(block, name), dotenv) {
                    if env.get(&key).and_then(Value::as_str) != Some(value.as_str()) {
                        env.insert(key, Value::String(value));
                        changed = true;
                    }
                }
            }
            Change::Wrap { .. } | Change::Unwrap => {
                let args: Vec<String> = match entry.get("args") {
                    None => Vec::new(),
                    Some(Value::Array(args)) => args
                        .iter()
                        .map(|arg| arg.as_str().map(str::to_owned))
                        .collect::<Option<_>>()
                        .ok_or_else(|| {
                            ConfigError::Shape(format!("mcpServers.{name}.args holds a non-string"))
                        })?,
                    Some(_) => {
                        return Err(ConfigError::Shape(format!(
                            "mcpServers.{name}.args is not an array"
                        )));
                    }
                };
                if let Some((command, args)) = rewritten_command(change, name, &command, &args) {
                    entry.insert("command".to_owned(), Value::String(command));
                    if args.is_empty() {
                        // A server run without arguments had no `args` before it was wrapped.
                        entry.remove("args");
                    } else {
                        entry.insert(
                            "args".to_owned(),
                            Value::Array(args.into_iter().map(Value::String).collect()),
                        );
                    }
                    changed = true;
                }
            }
        }
    }
    if !changed {
        return Ok(text.to_owned());
    }
    write_json(&document, text)
}
