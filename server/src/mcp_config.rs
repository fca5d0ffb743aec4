//! Rewrites harness configuration files — Claude Code's `.mcp.json` (`mcpServers.NAME`) and Codex's `config.toml`
//! (`[mcp_servers.NAME]`) — so their stdio MCP servers reach Anteroom: the environment block written into each
//! entry's `env`, or the entry's command run under `anteroom wrap`, and back.
//!
//! Pure text in, text out: the command (`commands/mcp_config.rs`) reads, diffs and writes the files. Remote
//! (non-stdio) servers are never touched; everything not named by a rule is kept as it was (TOML comments and
//! layout through `toml_edit`, JSON key order through `serde_json`'s `preserve_order`).

use std::collections::BTreeMap;

use serde_json::Value;

/// A key never written: whether a server gates an action on a person is that server's own decision.
pub const NEVER_WRITTEN: &str = "ELICITATION_ENABLED";

/// The two formats, by file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code's `.mcp.json` (and any JSON with `mcpServers`).
    Json,
    /// Codex's `config.toml`.
    Toml,
}

impl Format {
    pub fn of(path: &std::path::Path) -> Option<Self> {
        match path.extension().and_then(|extension| extension.to_str()) {
            Some("json") => Some(Self::Json),
            Some("toml") => Some(Self::Toml),
            _ => None,
        }
    }
}

/// What to do to each stdio server.
#[derive(Debug, Clone)]
pub enum Change {
    /// Write the block into the entry's `env`: the block's keys take Anteroom's value (or the session's `.env`
    /// value where it has one); every other key stays.
    Inject {
        block: Vec<(String, String)>,
        dotenv: BTreeMap<String, String>,
    },
    /// Run the entry's command under `anteroom wrap --server NAME --` (`program` is how `anteroom` is run).
    Wrap { program: String },
    /// Undo [`Change::Wrap`].
    Unwrap,
}

/// Why a file cannot be rewritten.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Unparsable(String),
    #[error("{0}")]
    Shape(String),
}

/// The values each key of the block gets: the `.env` file's where it sets one, never [`NEVER_WRITTEN`].
fn env_values(
    block: &[(String, String)],
    dotenv: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    block
        .iter()
        .filter(|(key, _)| key != NEVER_WRITTEN)
        .map(|(key, value)| {
            let value = dotenv.get(key).cloned().unwrap_or_else(|| value.clone());
            (key.clone(), value)
        })
        .collect()
}

/// The block as server `name` gets it: its addresses point at the server's own route, so a question's banner
/// names the server (a name that is not plain path text keeps the session's route).
fn block_for(block: &[(String, String)], name: &str) -> Vec<(String, String)> {
    let plain = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    block
        .iter()
        .map(|(key, value)| {
            let value = match key.as_str() {
                "ELICITATION_REQUEST_URL" | "ELICITATION_POLL_URL" if plain => {
                    server_route(value, name)
                }
                _ => value.clone(),
            };
            (key.clone(), value)
        })
        .collect()
}

/// `…/api/v1/s/TOKEN/elicitations` (or another server's route) as server `name`'s route of the same session.
fn server_route(url: &str, name: &str) -> String {
    let marker = "/api/v1/s/";
    let Some((base, after)) = url.split_once(marker) else {
        return url.to_owned();
    };
    let token = after.split('/').next().unwrap_or("");
    if token.is_empty() || !url.ends_with("/elicitations") {
        return url.to_owned();
    }
    format!("{base}{marker}{token}/servers/{name}/elicitations")
}

/// Whether `args` already run a server under `anteroom wrap`: the wrapped command starts after `--`.
fn wrapped_command(command: &str, args: &[String]) -> Option<usize> {
    // `anteroom`, `anteroom.exe`, `/opt/bin/anteroom-1.2`: however the harness runs it.
    let is_anteroom = std::path::Path::new(command)
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("anteroom"));
    // The shape `wrap` writes: `wrap --server NAME -- COMMAND …`.
    let shaped = args.len() >= 5 && args[0] == "wrap" && args[1] == "--server" && args[3] == "--";
    (is_anteroom && shaped).then_some(3)
}

/// The new command and args of a stdio entry named `name`, or `None` when the change leaves them alone.
fn rewritten_command(
    change: &Change,
    name: &str,
    command: &str,
    args: &[String],
) -> Option<(String, Vec<String>)> {
    match change {
        Change::Wrap { program } => {
            if wrapped_command(command, args).is_some() {
                return None;
            }
            let mut wrapped = vec![
                "wrap".to_owned(),
                "--server".to_owned(),
                name.to_owned(),
                "--".to_owned(),
                command.to_owned(),
            ];
            wrapped.extend(args.iter().cloned());
            Some((program.clone(), wrapped))
        }
        Change::Unwrap => {
            let at = wrapped_command(command, args)?;
            let inner = args.get(at + 1)?.clone();
            Some((inner, args[at + 2..].to_vec()))
        }
        Change::Inject { .. } => None,
    }
}

/// Rewrites `text` in `format`; only the servers `only` names when it names any. Returns the new text (equal to
/// `text` when nothing changed).
pub fn rewrite(
    format: Format,
    text: &str,
    change: &Change,
    only: &[String],
) -> Result<String, ConfigError> {
    match format {
        Format::Json => rewrite_json(text, change, only),
        Format::Toml => rewrite_toml(text, change, only),
    }
}

fn picked(only: &[String], name: &str) -> bool {
    only.is_empty() || only.iter().any(|wanted| wanted == name)
}

/// The indentation of the first indented line, so a rewritten file keeps its style.
fn json_indent(text: &str) -> Vec<u8> {
    text.lines()
        .find_map(|line| {
            let indent: String = line
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            (!indent.is_empty() && line.len() > indent.len()).then_some(indent)
        })
        .unwrap_or_else(|| "  ".to_owned())
        .into_bytes()
}

fn rewrite_json(text: &str, change: &Change, only: &[String]) -> Result<String, ConfigError> {
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
        // A stdio server has a command; a remote one a URL (or an http/sse type).
        let remote = entry.contains_key("url")
            || entry
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind != "stdio");
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

/// `document` as the text of a file that was `text`: its indentation, its key order and its final newline (a
/// new file gets one).
pub(crate) fn write_json(document: &Value, text: &str) -> Result<String, ConfigError> {
    let indent = json_indent(text);
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(&indent);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(document, &mut serializer)
        .map_err(|error| ConfigError::Shape(error.to_string()))?;
    let mut out = String::from_utf8(out).map_err(|error| ConfigError::Shape(error.to_string()))?;
    if text.ends_with('\n') || text.trim().is_empty() {
        out.push('\n');
    }
    Ok(out)
}

fn rewrite_toml(text: &str, change: &Change, only: &[String]) -> Result<String, ConfigError> {
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

/// Reads a `.env` file: `KEY=VALUE` lines (an `export ` prefix and one level of matching quotes are allowed;
/// blank lines and `#` comments are skipped).
pub fn parse_dotenv(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let line = line.strip_prefix("export ").unwrap_or(line);
            let (key, value) = line.split_once('=')?;
            let value = value.trim();
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|quote| {
                    value
                        .strip_prefix(*quote)
                        .and_then(|rest| rest.strip_suffix(*quote))
                })
                .unwrap_or(value);
            Some((key.trim().to_owned(), unquoted.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Vec<(String, String)> {
        vec![
            (
                "ELICITATION_REQUEST_URL".into(),
                "http://a/api/v1/s/ars_new/elicitations".into(),
            ),
            ("ELICITATION_SESSION_ID".into(), "s1".into()),
        ]
    }

    fn inject(dotenv: &[(&str, &str)]) -> Change {
        Change::Inject {
            block: block(),
            dotenv: dotenv
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    const CLAUDE: &str = r#"{
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "ghp_keep", "ELICITATION_REQUEST_URL": "http://stale"}
        },
        "remote": {"type": "http", "url": "https://mcp.example.com"},
        "zeta": {"command": "zeta-mcp"}
    }
}
"#;

    #[test]
    fn json_injection_replaces_the_blocks_keys_keeps_the_rest_and_skips_remote_servers() {
        let out = rewrite(Format::Json, CLAUDE, &inject(&[]), &[]).expect("rewritten");
        let document: Value = serde_json::from_str(&out).expect("JSON");
        let github = &document["mcpServers"]["github"]["env"];
        assert_eq!(github["GITHUB_TOKEN"], "ghp_keep", "credentials stay");
        assert_eq!(
            github["ELICITATION_REQUEST_URL"],
            "http://a/api/v1/s/ars_new/servers/github/elicitations",
            "a stale copy does not shadow the real address, and each server gets its own route"
        );
        assert_eq!(
            document["mcpServers"]["zeta"]["env"]["ELICITATION_SESSION_ID"],
            "s1"
        );
        assert!(document["mcpServers"]["remote"].get("env").is_none());
        let order: Vec<&String> = document["mcpServers"]
            .as_object()
            .expect("servers")
            .keys()
            .collect();
        assert_eq!(order, ["github", "remote", "zeta"], "key order kept");
        assert!(
            out.contains("\n    \"mcpServers\""),
            "indentation kept: {out}"
        );
        assert_eq!(
            rewrite(Format::Json, &out, &inject(&[]), &[]).expect("again"),
            out,
            "a second run changes nothing"
        );
    }

    #[test]
    fn the_sessions_dotenv_wins_and_elicitation_enabled_is_never_written() {
        let mut with_enabled = block();
        with_enabled.push((NEVER_WRITTEN.into(), "true".into()));
        let change = Change::Inject {
            block: with_enabled,
            dotenv: [(
                "ELICITATION_SESSION_ID".to_owned(),
                "from-dotenv".to_owned(),
            )]
            .into(),
        };
        let out = rewrite(Format::Json, CLAUDE, &change, &[]).expect("rewritten");
        assert!(out.contains("from-dotenv"));
        assert!(!out.contains(NEVER_WRITTEN));
    }

    const CODEX: &str = r#"# my Codex setup
model = "o4"

[mcp_servers.github] # the GitHub server
command = "npx"   # runs from npm
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "ghp_keep", ELICITATION_REQUEST_URL = "http://stale" }

[mcp_servers.docs]
url = "https://docs.example.com/mcp"

[mcp_servers.zeta]
command = "zeta-mcp"
"#;

    #[test]
    fn toml_injection_keeps_comments_and_layout() {
        let out = rewrite(Format::Toml, CODEX, &inject(&[]), &[]).expect("rewritten");
        assert!(
            out.starts_with("# my Codex setup\nmodel = \"o4\"\n"),
            "{out}"
        );
        assert!(out.contains("# the GitHub server"));
        assert!(out.contains("command = \"npx\"   # runs from npm"), "{out}");
        assert!(out.contains("GITHUB_TOKEN = \"ghp_keep\""));
        assert!(!out.contains("http://stale"));
        assert!(out.contains("[mcp_servers.zeta.env]"), "{out}");
        let document: toml_edit::DocumentMut = out.parse().expect("TOML");
        assert!(
            document["mcp_servers"]["docs"].get("env").is_none(),
            "remote left alone"
        );
        assert_eq!(
            document["mcp_servers"]["zeta"]["env"]["ELICITATION_SESSION_ID"].as_str(),
            Some("s1")
        );
        assert_eq!(
            rewrite(Format::Toml, &out, &inject(&[]), &[]).expect("again"),
            out
        );
    }

    #[test]
    fn wrap_and_unwrap_round_trip_in_both_formats() {
        let wrap = Change::Wrap {
            program: "anteroom".to_owned(),
        };
        for (format, text) in [(Format::Json, CLAUDE), (Format::Toml, CODEX)] {
            let wrapped = rewrite(format, text, &wrap, &[]).expect("wrapped");
            assert!(wrapped.contains("\"wrap\""), "{wrapped}");
            assert!(wrapped.contains("\"--server\""));
            assert_eq!(
                rewrite(format, &wrapped, &wrap, &[]).expect("again"),
                wrapped,
                "idempotent"
            );
            let unwrapped = rewrite(format, &wrapped, &Change::Unwrap, &[]).expect("unwrapped");
            let reparsed_equal = match format {
                Format::Json => {
                    serde_json::from_str::<Value>(&unwrapped).ok()
                        == serde_json::from_str::<Value>(text).ok()
                }
                Format::Toml => unwrapped == text,
            };
            assert!(reparsed_equal, "{format:?} round trip:\n{unwrapped}");
        }
    }

    #[test]
    fn only_picks_servers() {
        let wrap = Change::Wrap {
            program: "anteroom".to_owned(),
        };
        let out = rewrite(Format::Json, CLAUDE, &wrap, &["zeta".to_owned()]).expect("wrapped");
        let document: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(document["mcpServers"]["github"]["command"], "npx");
        assert_eq!(document["mcpServers"]["zeta"]["command"], "anteroom");
        assert_eq!(
            document["mcpServers"]["zeta"]["args"],
            serde_json::json!(["wrap", "--server", "zeta", "--", "zeta-mcp"])
        );
    }

    #[test]
    fn broken_files_are_refused_with_their_line() {
        let json = rewrite(
            Format::Json,
            "{\n  \"mcpServers\": {\n    oops\n",
            &inject(&[]),
            &[],
        );
        assert!(
            matches!(&json, Err(ConfigError::Unparsable(message)) if message.contains("line 3")),
            "{json:?}"
        );
        let toml = rewrite(
            Format::Toml,
            "a = 1\n[mcp_servers.x\ncommand = 1\n",
            &inject(&[]),
            &[],
        );
        assert!(
            matches!(&toml, Err(ConfigError::Unparsable(message)) if message.contains("line 2")),
            "{toml:?}"
        );
    }

    #[test]
    fn each_server_gets_its_own_route_of_the_session() {
        assert_eq!(
            server_route("http://a/api/v1/s/ars_t/elicitations", "github"),
            "http://a/api/v1/s/ars_t/servers/github/elicitations"
        );
        assert_eq!(
            server_route("http://a/api/v1/s/ars_t/servers/old/elicitations", "new"),
            "http://a/api/v1/s/ars_t/servers/new/elicitations"
        );
        let block = vec![(
            "ELICITATION_POLL_URL".to_owned(),
            "http://a/api/v1/s/ars_t/elicitations".to_owned(),
        )];
        assert_eq!(
            block_for(&block, "my server")[0].1,
            "http://a/api/v1/s/ars_t/elicitations",
            "a name that is not plain path text keeps the session's route"
        );
    }

    #[test]
    fn dotenv_lines_are_read_like_a_shell_would() {
        let parsed = parse_dotenv("# comment\nexport A=1\nB=\"two words\"\n\nC='x=y'\n");
        assert_eq!(parsed["A"], "1");
        assert_eq!(parsed["B"], "two words");
        assert_eq!(parsed["C"], "x=y");
    }
}
