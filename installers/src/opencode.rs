//! OpenCode: its `opencode.json` (`mcp.NAME`, rewritten by inject, wrap and unwrap). A local server is
//! `{"type": "local", "command": ["program", "arg", …], "environment": {…}}` — the command one array, the
//! environment under its own name; a remote one has `"type": "remote"` and a `url` and is left alone.

use serde_json::{Map, Value};

use super::{Change, ConfigError, block_for, env_values, picked, rewritten_command, write_json};

/// Whether `document` is OpenCode's configuration: an `mcp` object and no `mcpServers`.
pub(super) fn is_opencode(document: &Value) -> bool {
    document.get("mcp").is_some_and(Value::is_object) && document.get("mcpServers").is_none()
}

pub(super) fn rewrite_opencode_json(
    document: &mut Value,
    text: &str,
    change: &Change,
    only: &[String],
) -> Result<String, ConfigError> {
    let Some(servers) = document.get_mut("mcp").and_then(Value::as_object_mut) else {
        return Ok(text.to_owned());
    };
    let mut changed = false;
    for (name, entry) in servers.iter_mut() {
        let Some(entry) = entry.as_object_mut() else {
            continue;
        };
        if entry.get("type").and_then(Value::as_str) != Some("local") || !picked(only, name) {
            continue;
        }
        let words: Vec<String> = match entry.get("command") {
            Some(Value::Array(words)) => words
                .iter()
                .map(|word| word.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    ConfigError::Shape(format!("mcp.{name}.command holds a non-string"))
                })?,
            _ => {
                return Err(ConfigError::Shape(format!(
                    "mcp.{name}.command is not an array of words"
                )));
            }
        };
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        match change {
            Change::Inject { block, dotenv } => {
                let environment = entry
                    .entry("environment")
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .ok_or_else(|| {
                        ConfigError::Shape(format!("mcp.{name}.environment is not an object"))
                    })?;
                for (key, value) in env_values(&block_for(block, name), dotenv) {
                    if environment.get(&key).and_then(Value::as_str) != Some(value.as_str()) {
                        environment.insert(key, Value::String(value));
                        changed = true;
                    }
                }
            }
            Change::Wrap { .. } | Change::Unwrap => {
                if let Some((program, args)) = rewritten_command(change, name, program, args) {
                    let command = std::iter::once(program)
                        .chain(args)
                        .map(Value::String)
                        .collect();
                    entry.insert("command".to_owned(), Value::Array(command));
                    changed = true;
                }
            }
        }
    }
    if !changed {
        return Ok(text.to_owned());
    }
    write_json(document, text)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{Change, Format, rewrite};

    const OPENCODE: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "deployer": {"type": "local", "command": ["python3", "server.py", "--fast"], "enabled": true},
    "docs": {"type": "remote", "url": "https://example.com/mcp"}
  }
}
"#;

    fn wrap() -> Change {
        Change::Wrap {
            program: "/usr/local/bin/anteroom".to_owned(),
        }
    }

    #[test]
    fn a_local_server_is_wrapped_once_unwrapped_back_and_a_remote_one_left_alone() {
        let wrapped = rewrite(Format::Json, OPENCODE, &wrap(), &[]).expect("wrapped");
        let document: serde_json::Value = serde_json::from_str(&wrapped).expect("JSON");
        assert_eq!(
            document["mcp"]["deployer"]["command"],
            serde_json::json!([
                "/usr/local/bin/anteroom",
                "wrap",
                "--server",
                "deployer",
                "--",
                "python3",
                "server.py",
                "--fast"
            ])
        );
        assert_eq!(document["mcp"]["deployer"]["enabled"], true);
        assert_eq!(document["mcp"]["docs"]["url"], "https://example.com/mcp");
        assert_eq!(document["model"], "anthropic/claude-sonnet-4-5");
        assert_eq!(
            rewrite(Format::Json, &wrapped, &wrap(), &[]).expect("again"),
            wrapped
        );
        let unwrapped = rewrite(Format::Json, &wrapped, &Change::Unwrap, &[]).expect("unwrapped");
        let document: serde_json::Value = serde_json::from_str(&unwrapped).expect("JSON");
        assert_eq!(
            document["mcp"]["deployer"]["command"],
            serde_json::json!(["python3", "server.py", "--fast"])
        );
    }

    #[test]
    fn the_block_goes_in_the_servers_environment_and_a_bad_shape_is_refused() {
        let inject = Change::Inject {
            block: vec![
                (
                    "ELICITATION_REQUEST_URL".to_owned(),
                    "http://a/api/v1/s/ars_new/elicitations".to_owned(),
                ),
                ("ELICITATION_SESSION_ID".to_owned(), "s1".to_owned()),
            ],
            dotenv: BTreeMap::new(),
        };
        let injected = rewrite(Format::Json, OPENCODE, &inject, &[]).expect("injected");
        let document: serde_json::Value = serde_json::from_str(&injected).expect("JSON");
        let environment = &document["mcp"]["deployer"]["environment"];
        assert_eq!(
            environment["ELICITATION_REQUEST_URL"],
            "http://a/api/v1/s/ars_new/servers/deployer/elicitations"
        );
        assert_eq!(environment["ELICITATION_SESSION_ID"], "s1");
        assert!(document["mcp"]["docs"].get("environment").is_none());
        assert_eq!(
            rewrite(Format::Json, &injected, &inject, &[]).expect("again"),
            injected
        );
        let bad = r#"{"mcp": {"x": {"type": "local", "command": "python3 server.py"}}}"#;
        assert!(rewrite(Format::Json, bad, &wrap(), &[]).is_err());
    }
}
