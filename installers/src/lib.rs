//! Writing Anteroom into the harnesses' own configuration: `anteroom mcp-config inject | wrap | unwrap | hooks`.
//! One file per harness holds everything that harness reads — its MCP server list, its hook entries, and
//! whatever else it needs to run them — so adding a harness is adding a file here and a variant to
//! [`Format`] and [`HookFile`]:
//!
//! - [`claude_code`]: `.mcp.json` (`mcpServers.NAME`) and the settings' `PreToolUse` and `Elicitation` HTTP hooks;
//! - [`codex`]: `config.toml` (`[mcp_servers.NAME]`), the `hooks.json` command hook, and Codex's trust in it.
//!
//! What they share is here: the three changes to a stdio server (the environment block written into its `env`,
//! its command run under `anteroom wrap`, and back), the block as each server gets it, `.env` files, the placing
//! of hook groups and JSON written back in a file's own style. Pure text in, text out: the command
//! (`server/src/commands/mcp_config.rs`) reads, diffs and writes the files. Remote (non-stdio) servers are never touched;
//! everything not named by a rule is kept as it was (TOML comments and layout through `toml_edit`, JSON key order
//! through `serde_json`'s `preserve_order`). A crate of its own, with no Anteroom dependency, so the fuzzer
//! builds it alone (`fuzz/fuzz_targets/mcp_config.rs`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub mod claude_code;
pub mod codex;
mod copilot;
mod cursor;
mod gemini;
mod opencode;

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
        Format::Json => match serde_json::from_str::<Value>(text) {
            Ok(mut document) if opencode::is_opencode(&document) => {
                opencode::rewrite_opencode_json(&mut document, text, change, only)
            }
            // `.mcp.json`, Gemini CLI's `settings.json`, Copilot CLI's `mcp-config.json`: `mcpServers`.
            _ => claude_code::rewrite_mcp_json(text, change, only),
        },
        Format::Toml => codex::rewrite_config_toml(text, change, only),
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

/// Whose hook file it is, by its name and folder: `.cursor/hooks.json` is Cursor's, any other `hooks.json`
/// Codex's; a `.json` file in `.copilot/hooks/` or `.github/hooks/` Copilot CLI's; `settings*.json` in `.qwen/`
/// Qwen Code's and in `.gemini/` Gemini CLI's; any other JSON file Claude Code's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookFile {
    ClaudeSettings,
    CodexHooks,
    /// A `.json` file in Copilot CLI's hook folders: `~/.copilot/hooks/` (`$COPILOT_HOME/hooks/`) or a
    /// repository's `.github/hooks/`.
    CopilotHooks,
    /// `~/.cursor/hooks.json` or a project's `.cursor/hooks.json`.
    CursorHooks,
    /// `~/.gemini/settings.json` or a project's `.gemini/settings.json`.
    GeminiSettings,
    /// `~/.qwen/settings.json` or a project's `.qwen/settings.json`.
    QwenSettings,
}

impl HookFile {
    pub fn of(path: &std::path::Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?;
        fn folder(at: &std::path::Path) -> Option<&str> {
            at.file_name().and_then(|name| name.to_str())
        }
        let in_copilot_folder = path.parent().is_some_and(|hooks| {
            folder(hooks) == Some("hooks")
                && hooks
                    .parent()
                    .is_some_and(|above| matches!(folder(above), Some(".copilot" | ".github")))
        });
        let parent = path.parent().and_then(folder);
        if in_copilot_folder && name.ends_with(".json") {
            Some(Self::CopilotHooks)
        } else if name == "hooks.json" && parent == Some(".cursor") {
            Some(Self::CursorHooks)
        } else if name.starts_with("settings") && name.ends_with(".json") && parent == Some(".qwen")
        {
            Some(Self::QwenSettings)
        } else if name.starts_with("settings")
            && name.ends_with(".json")
            && parent == Some(".gemini")
        {
            Some(Self::GeminiSettings)
        } else if name == "hooks.json" {
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
    /// The environment variable the harness reads the session's token from (Claude Code's header).
    pub token_variable: String,
}

impl HookInstall {
    /// The `(event, matcher group)` pairs Anteroom adds to `file`, as its harness writes them.
    fn groups(&self, file: HookFile) -> Vec<(&'static str, Value)> {
        match file {
            HookFile::ClaudeSettings => claude_code::hook_groups(self),
            HookFile::CodexHooks => codex::hook_groups(self),
            HookFile::QwenSettings => claude_code::qwen_hook_groups(self),
            HookFile::GeminiSettings => gemini::hook_groups(self),
            // Flat handlers, placed by `install_hooks` itself.
            HookFile::CopilotHooks | HookFile::CursorHooks => Vec::new(),
        }
    }
}

/// The `anteroom hook` commands the installers write: a command handler running one is Anteroom's.
const HOOK_COMMANDS: [&str; 6] = [
    "codex-pre-tool-use",
    "codex-permission-request",
    "copilot-pre-tool-use",
    "copilot-permission-request",
    "cursor",
    "gemini-before-tool",
];

/// Whether a hook handler is one of Anteroom's: an HTTP hook to its hook routes, or a command running one of
/// its `anteroom hook` commands (Cursor's handlers name no `type`).
pub fn is_anteroom_handler(handler: &Value) -> bool {
    let text = |key: &str| handler.get(key).and_then(Value::as_str).unwrap_or_default();
    let runs_hook = |command: &str| {
        command.split_once(" hook ").is_some_and(|(_, rest)| {
            let name = rest.split_whitespace().next().unwrap_or_default();
            HOOK_COMMANDS.contains(&name)
        })
    };
    match text("type") {
        "http" => ["/hooks/claude/", "/hooks/qwen/"]
            .iter()
            .any(|route| text("url").contains(route)),
        "command" | "" => runs_hook(text("command")) || runs_hook(text("bash")),
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
    let flat = match file {
        HookFile::CopilotHooks => Some(copilot::handlers(install)),
        HookFile::CursorHooks => Some(cursor::handlers(install)),
        _ => None,
    };
    if let Some(handlers) = flat {
        copilot::place_flat_handlers(root, handlers)?;
        if document == original && !text.trim().is_empty() {
            return Ok(text.to_owned());
        }
        return write_json(&document, text);
    }
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

    #[test]
    fn gemini_and_copilot_servers_are_wrapped_as_claudes_are() {
        let wrap = Change::Wrap {
            program: "anteroom".to_owned(),
        };
        let gemini = r#"{"general": {"enableAutoUpdate": false}, "mcpServers": {
            "deployer": {"command": "python3", "args": ["server.py"], "timeout": 30000},
            "remote": {"httpUrl": "https://example.com/mcp"}}}"#;
        let wrapped: Value =
            serde_json::from_str(&rewrite(Format::Json, gemini, &wrap, &[]).expect("gemini"))
                .expect("JSON");
        assert_eq!(wrapped["mcpServers"]["deployer"]["command"], "anteroom");
        assert_eq!(wrapped["mcpServers"]["deployer"]["timeout"], 30000);
        assert_eq!(
            wrapped["mcpServers"]["remote"]["httpUrl"],
            "https://example.com/mcp"
        );
        let copilot = r#"{"mcpServers": {"deployer": {"type": "local", "command": "python3", "args": ["s.py"],
            "tools": ["*"]}, "web": {"type": "http", "url": "https://example.com/mcp"}}}"#;
        let wrapped: Value =
            serde_json::from_str(&rewrite(Format::Json, copilot, &wrap, &[]).expect("copilot"))
                .expect("JSON");
        assert_eq!(
            wrapped["mcpServers"]["deployer"]["args"],
            serde_json::json!(["wrap", "--server", "deployer", "--", "python3", "s.py"])
        );
        assert!(wrapped["mcpServers"]["web"].get("command").is_none());
    }

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

#[cfg(test)]
mod hook_tests {
    use serde_json::json;

    use super::*;

    fn install() -> HookInstall {
        HookInstall {
            public_url: "https://anteroom.example/".to_owned(),
            timeout_seconds: 600,
            program: "anteroom".to_owned(),
            token_variable: "ANTEROOM_SESSION_TOKEN".to_owned(),
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
            ours["onFailure"], "block",
            "a call is blocked, not let through, when Anteroom cannot be reached"
        );
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
