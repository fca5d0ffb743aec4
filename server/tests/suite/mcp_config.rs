//! `anteroom env` and `anteroom mcp-config inject | wrap | unwrap` run as real processes on the fixture harness
//! files (`tests/fixtures/mcp-config/`): the environment block lands where each harness reads it, and wrapping
//! round-trips.

use serde_json::{Value, json};
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_anteroom");

/// The fixture harness files (`tests/fixtures/mcp-config/`), copied into a fresh folder.
fn harness_files(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp-config");
    let claude = dir.join(".mcp.json");
    let codex = dir.join("config.toml");
    std::fs::copy(format!("{fixtures}/claude.mcp.json"), &claude).expect("copy");
    std::fs::copy(format!("{fixtures}/codex.config.toml"), &codex).expect("copy");
    (claude, codex)
}

async fn anteroom(args: &[&str], database: &str) -> std::process::Output {
    Command::new(BINARY)
        .args(args)
        .env("DATABASE_URL", database)
        .env("ANTEROOM_PUBLIC_URL", "http://127.0.0.1:3000")
        .output()
        .await
        .expect("run anteroom")
}

/// `anteroom env` and `anteroom mcp-config inject`: the block lands in every stdio server's `env` of both
/// harness formats, replacing exactly its keys; credentials, comments, order and remote servers stay; the
/// session's `.env` wins; a second run changes nothing; a dry run only shows the diff; a broken file is refused
/// untouched.
#[tokio::test]
async fn mcp_config_inject_writes_the_block_into_both_harness_formats() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let database = format!("sqlite://{}", dir.path().join("cli.sqlite3").display());
    let created = anteroom(&["session", "create", "--id", "s1"], &database).await;
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );

    let refused = anteroom(&["env", "--session", "s1"], &database).await;
    assert_eq!(
        refused.status.code(),
        Some(1),
        "no token is shown without --rotate"
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--rotate"));
    let json = anteroom(
        &["env", "--session", "s1", "--rotate", "--format", "json"],
        &database,
    )
    .await;
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let block: Value = serde_json::from_slice(&json.stdout).expect("a JSON block");
    assert_eq!(block["ELICITATION_SESSION_ID"], "s1");
    let unknown = anteroom(&["env", "--session", "nobody", "--rotate"], &database).await;
    assert_eq!(unknown.status.code(), Some(1));

    let block_file = dir.path().join("s1.env");
    let env = anteroom(&["env", "--session", "s1", "--rotate"], &database).await;
    std::fs::write(&block_file, &env.stdout).expect("write the block");
    let request_url = String::from_utf8_lossy(&env.stdout)
        .lines()
        .find_map(|line| {
            line.strip_prefix("ELICITATION_REQUEST_URL=")
                .map(str::to_owned)
        })
        .expect("the block's address");
    let dotenv = dir.path().join("session.env");
    std::fs::write(
        &dotenv,
        "ELICITATION_TTL_MS=120000\nELICITATION_ENABLED=true\n",
    )
    .expect("write");
    let (claude, codex) = harness_files(dir.path());
    let (claude_before, codex_before) = (
        std::fs::read_to_string(&claude).expect("read"),
        std::fs::read_to_string(&codex).expect("read"),
    );
    let inject = |dry_run: bool| {
        let mut args = vec![
            "mcp-config".to_owned(),
            "inject".to_owned(),
            "--env-file".to_owned(),
            block_file.display().to_string(),
            "--dotenv".to_owned(),
            dotenv.display().to_string(),
        ];
        if dry_run {
            args.push("--dry-run".to_owned());
        }
        args.push(claude.display().to_string());
        args.push(codex.display().to_string());
        args
    };
    let args = inject(true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dry = anteroom(&args, &database).await;
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(String::from_utf8_lossy(&dry.stdout).contains("+        \"ELICITATION_REQUEST_URL\""));
    let token = request_url
        .split("/api/v1/s/")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("the block's token");
    assert!(
        !String::from_utf8_lossy(&dry.stdout).contains(token),
        "a dry run's diff does not show the token"
    );
    assert_eq!(
        std::fs::read_to_string(&claude).expect("read"),
        claude_before,
        "a dry run writes nothing"
    );

    let args = inject(false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = anteroom(&args, &database).await;
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let claude_after: Value =
        serde_json::from_str(&std::fs::read_to_string(&claude).expect("read")).expect("JSON");
    let github = &claude_after["mcpServers"]["github"]["env"];
    assert_eq!(github["GITHUB_PERSONAL_ACCESS_TOKEN"], "ghp_keep_me");
    let github_route = request_url.replace("/elicitations", "/servers/github/elicitations");
    assert_eq!(github["ELICITATION_REQUEST_URL"], github_route.as_str());
    assert_eq!(
        github["ELICITATION_TTL_MS"], "120000",
        "the session's .env wins"
    );
    assert!(github.get("ELICITATION_ENABLED").is_none());
    assert_eq!(
        claude_after["mcpServers"]["deployer"]["env"]["ELICITATION_SESSION_ID"],
        "s1"
    );
    assert!(
        claude_after["mcpServers"]["linear"].get("env").is_none(),
        "remote left alone"
    );
    let servers: Vec<&String> = claude_after["mcpServers"]
        .as_object()
        .expect("servers")
        .keys()
        .collect();
    assert_eq!(servers, ["github", "linear", "deployer"]);
    let codex_after = std::fs::read_to_string(&codex).expect("read");
    for kept in [
        "# Codex configuration, kept by hand: these comments must survive.",
        "command = \"npx\" # from npm",
        "GITHUB_PERSONAL_ACCESS_TOKEN = \"ghp_keep_me\"",
        "# A remote server: no command, left alone.",
        "tool_timeout_sec = 3600",
    ] {
        assert!(codex_after.contains(kept), "{kept} kept:\n{codex_after}");
    }
    assert!(
        codex_after
            .contains(&request_url.replace("/elicitations", "/servers/deployer/elicitations"))
            && !codex_after.contains("ars_old"),
        "{codex_after}"
    );
    assert!(
        codex_after.contains("[mcp_servers.deployer.env]"),
        "{codex_after}"
    );
    assert!(!codex_after.contains("ELICITATION_ENABLED"));
    assert_ne!(codex_after, codex_before);

    let again = anteroom(&args, &database).await;
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .matches("unchanged")
            .count()
            == 2,
        "idempotent"
    );

    // By session: a fresh file gets a newly issued token once; the next run finds it and changes nothing.
    let fresh = dir.path().join("fresh").join(".mcp.json");
    std::fs::create_dir_all(fresh.parent().expect("folder")).expect("folder");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/mcp-config/claude.mcp.json"
        ),
        &fresh,
    )
    .expect("copy");
    let fresh_path = fresh.display().to_string();
    let dry = anteroom(
        &[
            "mcp-config",
            "inject",
            "--session",
            "s1",
            "--dry-run",
            fresh_path.as_str(),
        ],
        &database,
    )
    .await;
    assert!(
        String::from_utf8_lossy(&dry.stdout).contains("NEW-TOKEN-ISSUED-ON-A-REAL-RUN"),
        "a dry run issues no token"
    );
    let by_session = [
        "mcp-config",
        "inject",
        "--session",
        "s1",
        fresh_path.as_str(),
    ];
    let first = anteroom(&by_session, &database).await;
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let written = std::fs::read_to_string(&fresh).expect("read");
    assert!(!written.contains("ars_old"));
    let second = anteroom(&by_session, &database).await;
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("unchanged"),
        "the live token is reused"
    );
    assert_eq!(std::fs::read_to_string(&fresh).expect("read"), written);

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\n  \"mcpServers\": {\n    \"x\": \n").expect("write");
    let broken_path = broken.display().to_string();
    let block_path = block_file.display().to_string();
    let refused = anteroom(
        &[
            "mcp-config",
            "inject",
            "--env-file",
            &block_path,
            &broken_path,
        ],
        &database,
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("line 4"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&broken).expect("read"),
        "{\n  \"mcpServers\": {\n    \"x\": \n"
    );
}

/// `anteroom mcp-config wrap` and `unwrap`: every stdio server (or `--only` one) runs under `anteroom wrap`, a
/// second run changes nothing, and unwrapping gives the files back as they were.
#[tokio::test]
async fn mcp_config_wrap_and_unwrap_round_trip() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let database = format!("sqlite://{}", dir.path().join("cli.sqlite3").display());
    let (claude, codex) = harness_files(dir.path());
    let before = (
        std::fs::read_to_string(&claude).expect("read"),
        std::fs::read_to_string(&codex).expect("read"),
    );
    let (claude_path, codex_path) = (claude.display().to_string(), codex.display().to_string());
    let wrapped = anteroom(
        &["mcp-config", "wrap", &claude_path, &codex_path],
        &database,
    )
    .await;
    assert!(
        wrapped.status.success(),
        "{}",
        String::from_utf8_lossy(&wrapped.stderr)
    );
    let claude_wrapped: Value =
        serde_json::from_str(&std::fs::read_to_string(&claude).expect("read")).expect("JSON");
    assert_eq!(
        claude_wrapped["mcpServers"]["deployer"]["command"],
        "anteroom"
    );
    assert_eq!(
        claude_wrapped["mcpServers"]["deployer"]["args"],
        json!([
            "wrap",
            "--server",
            "deployer",
            "--",
            "python3",
            "deployer.py"
        ])
    );
    assert!(
        claude_wrapped["mcpServers"]["linear"]
            .get("command")
            .is_none()
    );
    let codex_wrapped = std::fs::read_to_string(&codex).expect("read");
    assert!(
        codex_wrapped.contains("command = \"anteroom\" # from npm"),
        "{codex_wrapped}"
    );
    let again = anteroom(
        &["mcp-config", "wrap", &claude_path, &codex_path],
        &database,
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&again.stderr)
            .matches("unchanged")
            .count(),
        2
    );

    let unwrapped = anteroom(
        &["mcp-config", "unwrap", &claude_path, &codex_path],
        &database,
    )
    .await;
    assert!(unwrapped.status.success());
    assert_eq!(
        std::fs::read_to_string(&codex).expect("read"),
        before.1,
        "Codex file back byte for byte"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&claude).expect("read"))
            .expect("JSON"),
        serde_json::from_str::<Value>(&before.0).expect("JSON"),
    );

    let only = anteroom(
        &["mcp-config", "wrap", "--only", "github", &codex_path],
        &database,
    )
    .await;
    assert!(only.status.success());
    let codex_only = std::fs::read_to_string(&codex).expect("read");
    assert!(
        codex_only.contains("\"--server\", \"github\""),
        "{codex_only}"
    );
    assert!(
        codex_only.contains("command = \"python3\""),
        "deployer untouched:\n{codex_only}"
    );
}
