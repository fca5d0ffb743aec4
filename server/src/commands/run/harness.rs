//! What the agent is started with: the session's environment block, and for Claude Code and Codex Anteroom's
//! hooks and their stdio MCP servers under `anteroom wrap`, in files of the run's own (docs/runs.md#what-the-agent-gets).

use std::{collections::BTreeMap, path::PathBuf};

use anteroom_installers::{Change, Format, HookFile, HookInstall, install_hooks, rewrite};
use anteroom_server::config::RunArgs;
use anyhow::Context;
use serde_json::{Value, json};

use super::anteroom::RunSession;

/// The agent's command with what this run gives it: the environment block, and for Claude Code a settings file
/// of the run's own with Anteroom's hooks (Claude Code merges `--settings` over the user's own settings).
pub(super) fn agent_command(
    args: &RunArgs,
    session: Option<&RunSession>,
    scratch: PathBuf,
) -> anyhow::Result<std::process::Command> {
    let (program, rest) = args
        .command
        .split_first()
        .context("name the agent's command after `--`")?;
    let mut command = std::process::Command::new(program);
    if let Some(session) = session {
        command.envs(&session.environment);
    }
    let install = HookInstall {
        public_url: session
            .map(|session| session.public_base.clone())
            .unwrap_or_default(),
        timeout_seconds: args.hook_timeout,
        program: super::super::mcp_config::this_binary()?,
        token_variable: anteroom_api::views::SESSION_TOKEN_VARIABLE.to_owned(),
    };
    match program.rsplit('/').next().unwrap_or(program) {
        "claude" => {
            let settings = match session {
                Some(_) => install_hooks("", HookFile::ClaudeSettings, &install)?,
                // Offline: a command hook that refuses what would ask a person, with the reason.
                None => json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{
                    "type": "command", "command": format!("{} hook offline", install.program), "timeout": 30
                }]}]}})
                .to_string(),
            };
            let path = scratch.join("claude-settings.json");
            std::fs::write(&path, settings)
                .with_context(|| format!("cannot write {}", path.display()))?;
            command.arg("--settings").arg(&path);
            let cwd = std::env::current_dir().context("cannot read the working folder")?;
            if let (Some(session), Some(servers)) = (
                session,
                claude_servers(&cwd, std::env::home_dir().as_deref())?,
            ) {
                let config = run_servers(Format::Json, &servers, session)?;
                let path = scratch.join("claude-mcp.json");
                std::fs::write(&path, config)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                command
                    .arg("--mcp-config")
                    .arg(&path)
                    .arg("--strict-mcp-config");
            }
        }
        "codex" => {
            let user_home = match std::env::var_os("CODEX_HOME") {
                Some(home) => PathBuf::from(home),
                None => std::env::home_dir()
                    .context("no home folder to find Codex's in: set CODEX_HOME")?
                    .join(".codex"),
            };
            let home =
                layered_codex_home(&user_home, &scratch.join("codex-home"), &install, session)?;
            command.env("CODEX_HOME", home);
        }
        _ => {}
    }
    command.args(rest);
    Ok(command)
}

/// A `CODEX_HOME` of the run's own, layered over the user's: every entry of the user's home is linked into it
/// (so logins, sessions and logs are the user's own), except `hooks.json`, which is the user's with Anteroom's
/// entry added, and `config.toml`, a copy of the user's that trusts that entry and carries the user's trust in
/// their own entries over to the new file's path. The user's files are read, never written; their trust
/// setting is not weakened (no bypass flag): the run's entry is trusted by its hash, as `mcp-config hooks`
/// would record it.
fn layered_codex_home(
    user_home: &std::path::Path,
    home: &std::path::Path,
    install: &HookInstall,
    session: Option<&RunSession>,
) -> anyhow::Result<PathBuf> {
    use anteroom_installers::{codex, is_anteroom_handler};

    std::fs::create_dir_all(home).with_context(|| format!("cannot make {}", home.display()))?;
    if let Ok(entries) = std::fs::read_dir(user_home) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == "config.toml" || name == "hooks.json" {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), home.join(&name)).with_context(|| {
                format!(
                    "cannot link {} into the run's Codex home",
                    entry.path().display()
                )
            })?;
        }
    }
    let read = |name: &str| std::fs::read_to_string(user_home.join(name)).unwrap_or_default();
    let hooks_path = home.join("hooks.json");
    let hooks = install_hooks(&read("hooks.json"), HookFile::CodexHooks, install)?;
    std::fs::write(&hooks_path, &hooks)
        .with_context(|| format!("cannot write {}", hooks_path.display()))?;
    // Trust keys name the hooks.json's path: the user's own entries keep their places (Anteroom's is added
    // after them, or replaces its own in place), so their trust moves to the run's file as it is.
    let user_hooks = format!("\"{}:", user_home.join("hooks.json").display());
    let run_hooks = format!("\"{}:", hooks_path.display());
    let config = read("config.toml").replace(&user_hooks, &run_hooks);
    // Its stdio MCP servers ask in the run's session, under `anteroom wrap` (offline: as they are).
    let config = match session {
        Some(session) => run_servers(Format::Toml, &config, session)?,
        None => config,
    };
    let entries = codex::entries_to_trust(&hooks, &hooks_path, is_anteroom_handler);
    let config = codex::record_trust(&config, &entries)?;
    std::fs::write(home.join("config.toml"), config)
        .with_context(|| format!("cannot write {}", home.join("config.toml").display()))?;
    Ok(home.to_path_buf())
}

/// `config` (a `.mcp.json`-shaped text or a Codex `config.toml`) with every stdio server given the run's
/// environment block and put under `anteroom wrap` (this binary, by its absolute path), so a server's own
/// questions reach the run's session; remote servers are left alone.
fn run_servers(format: Format, config: &str, session: &RunSession) -> anyhow::Result<String> {
    let block: Vec<(String, String)> = session
        .environment
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let injected = rewrite(
        format,
        config,
        &Change::Inject {
            block,
            dotenv: BTreeMap::new(),
        },
        &[],
    )?;
    let program = std::env::current_exe()
        .context("cannot find this binary's path to wrap the MCP servers with")?;
    Ok(rewrite(
        format,
        &injected,
        &Change::Wrap {
            program: program.display().to_string(),
        },
        &[],
    )?)
}

/// The MCP servers Claude Code would start in `cwd`, as one `.mcp.json`-shaped text, or `None` when it has
/// none: the user's (`~/.claude.json` `mcpServers`), the project's `.mcp.json` servers the user approved
/// (`enableAllProjectMcpServers` or `enabledMcpjsonServers` in a settings file; a project's servers never start
/// unapproved because a run listed them), and the local ones (`~/.claude.json` `projects[cwd].mcpServers`), a
/// later scope's server replacing an earlier one of the same name, as Claude Code does. The run passes them
/// with `--strict-mcp-config`, so each is started once, wrapped.
fn claude_servers(
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
) -> anyhow::Result<Option<String>> {
    let read = |path: PathBuf| -> Value {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null)
    };
    let user = home
        .map(|home| read(home.join(".claude.json")))
        .unwrap_or(Value::Null);
    let settings: Vec<Value> = [
        Some(cwd.join(".claude/settings.local.json")),
        Some(cwd.join(".claude/settings.json")),
        home.map(|home| home.join(".claude/settings.json")),
    ]
    .into_iter()
    .flatten()
    .map(read)
    .collect();
    let project_entry = &user["projects"][cwd.display().to_string()];
    let approved = |name: &str| {
        let listed = |value: &Value, key: &str| {
            value[key]
                .as_array()
                .is_some_and(|names| names.iter().any(|listed| listed == name))
        };
        let all = settings
            .iter()
            .chain(std::iter::once(project_entry))
            .any(|value| value["enableAllProjectMcpServers"] == true);
        let denied = settings
            .iter()
            .chain(std::iter::once(project_entry))
            .any(|value| listed(value, "disabledMcpjsonServers"));
        !denied
            && (all
                || settings
                    .iter()
                    .chain(std::iter::once(project_entry))
                    .any(|value| listed(value, "enabledMcpjsonServers")))
    };
    let mut servers = serde_json::Map::new();
    let mut add = |found: &Value, keep: &dyn Fn(&str) -> bool| {
        for (name, server) in found.as_object().into_iter().flatten() {
            if keep(name) {
                servers.insert(name.clone(), server.clone());
            }
        }
    };
    add(&user["mcpServers"], &|_| true);
    add(&read(cwd.join(".mcp.json"))["mcpServers"], &approved);
    add(&project_entry["mcpServers"], &|_| true);
    if servers.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string_pretty(&json!({
        "mcpServers": servers
    }))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_runs_codex_home_trusts_its_hook_and_leaves_the_users_alone() {
        let user = tempfile::tempdir().expect("user's home");
        let scratch = tempfile::tempdir().expect("scratch");
        let user_hooks = user.path().join("hooks.json");
        let own_hook = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "audit.sh"}]}]}}"#;
        std::fs::write(&user_hooks, own_hook).expect("hooks.json");
        let config = format!(
            "model = \"m\"\n\n[mcp_servers.github]\ncommand = \"npx\"\nargs = [\"server-github\"]\n\n\
             [hooks.state.\"{}:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:mine\"\n",
            user_hooks.display()
        );
        std::fs::write(user.path().join("config.toml"), &config).expect("config.toml");
        std::fs::write(user.path().join("auth.json"), "{}").expect("auth.json");
        let install = HookInstall {
            public_url: "http://anteroom".into(),
            timeout_seconds: 60,
            program: "/bin/anteroom".into(),
            token_variable: "ANTEROOM_SESSION_TOKEN".into(),
        };
        let session = RunSession {
            id: "s1".into(),
            token: "ars_x".into(),
            environment: BTreeMap::from([(
                "ELICITATION_REQUEST_URL".to_owned(),
                "http://anteroom/api/v1/s/ars_x/elicitations".to_owned(),
            )]),
            public_base: "http://anteroom".into(),
        };
        let home = layered_codex_home(
            user.path(),
            &scratch.path().join("codex"),
            &install,
            Some(&session),
        )
        .expect("layered");
        // The user's files are as they were.
        assert_eq!(
            std::fs::read_to_string(&user_hooks).expect("read"),
            own_hook
        );
        assert_eq!(
            std::fs::read_to_string(user.path().join("config.toml")).expect("read"),
            config
        );
        // Their login is linked, not copied.
        assert!(
            std::fs::symlink_metadata(home.join("auth.json"))
                .expect("auth")
                .file_type()
                .is_symlink()
        );
        let hooks = std::fs::read_to_string(home.join("hooks.json")).expect("run's hooks");
        assert!(
            hooks.contains("audit.sh") && hooks.contains("/bin/anteroom hook codex-pre-tool-use")
        );
        let run_config = std::fs::read_to_string(home.join("config.toml")).expect("run's config");
        let run_hooks = home.join("hooks.json").display().to_string();
        assert!(
            run_config.contains(&format!("{run_hooks}:pre_tool_use:0:0")),
            "{run_config}"
        );
        assert!(run_config.contains("sha256:mine"));
        assert!(
            run_config.contains(&format!("{run_hooks}:pre_tool_use:1:0")),
            "{run_config}"
        );
        assert!(!run_config.contains(&user_hooks.display().to_string()));
        // Its MCP server asks in the run's session, wrapped.
        assert!(
            run_config.contains("\"wrap\", \"--server\", \"github\", \"--\", \"npx\""),
            "{run_config}"
        );
        assert!(
            run_config.contains("ars_x/servers/github/elicitations"),
            "{run_config}"
        );
    }

    #[test]
    fn claudes_servers_are_the_users_the_approved_projects_and_the_local_ones() {
        let home = tempfile::tempdir().expect("home");
        let cwd = tempfile::tempdir().expect("project");
        let server = |command: &str| json!({"command": command});
        assert!(
            claude_servers(cwd.path(), Some(home.path()))
                .expect("none")
                .is_none()
        );
        std::fs::write(
            cwd.path().join(".mcp.json"),
            json!({"mcpServers": {"approved": server("a"), "unapproved": server("u"), "same": server("project")}})
                .to_string(),
        )
        .expect(".mcp.json");
        std::fs::create_dir_all(cwd.path().join(".claude")).expect(".claude");
        std::fs::write(
            cwd.path().join(".claude/settings.local.json"),
            json!({"enabledMcpjsonServers": ["approved", "same"]}).to_string(),
        )
        .expect("settings");
        let projects =
            json!({cwd.path().display().to_string(): {"mcpServers": {"same": server("local")}}});
        std::fs::write(
            home.path().join(".claude.json"),
            json!({"mcpServers": {"mine": server("m")}, "projects": projects}).to_string(),
        )
        .expect(".claude.json");
        let text = claude_servers(cwd.path(), Some(home.path()))
            .expect("read")
            .expect("servers");
        let servers: Value = serde_json::from_str(&text).expect("JSON");
        let names: Vec<&String> = servers["mcpServers"]
            .as_object()
            .expect("servers")
            .keys()
            .collect();
        assert_eq!(names, ["mine", "approved", "same"]);
        assert_eq!(servers["mcpServers"]["same"]["command"], "local");
    }
}
