//! `anteroom mcp-config inject | wrap | unwrap | hooks`: rewrites harness configuration files (the rules are
//! `anteroom_installers`, a file per harness), each through a temporary file and a rename, or only
//! shows the diff.

#![allow(
    clippy::print_stdout,
    reason = "what this command prints on stdout is its output"
)]

use std::path::Path;

use anteroom_domain::ids::SessionId;
use anteroom_installers::{
    Change, Format, HookFile, HookInstall,
    codex::{entries_to_trust, record_trust},
    install_hooks, is_anteroom_handler, parse_dotenv, rewrite,
};
use anteroom_server::config::McpConfigCommand;
use anteroom_store::StoreOptions;
use anyhow::Context;

use anteroom_server::credentials;

use super::{
    open_store,
    session::{block_with, issue_block},
};

pub async fn run(command: McpConfigCommand) -> anyhow::Result<u8> {
    let (change, files) = match command {
        McpConfigCommand::Inject {
            session,
            env_file,
            dotenv,
            files,
            public,
            database,
        } => {
            let block: Vec<(String, String)> = match (env_file, session) {
                (Some(path), _) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    parse_dotenv(&text).into_iter().collect()
                }
                (None, Some(session)) => {
                    let store = open_store(&database, StoreOptions::default()).await?;
                    let id = SessionId::parse(&session)?;
                    store.get_session(&id).await?;
                    let live = token_in_files(store.as_ref(), &id, &files.files).await;
                    let block = match live {
                        // The files already carry the session's live token: the same block again.
                        Some(token) => block_with(&id, &token, None, &public),
                        // A dry run shows where a token would go without issuing one (that would revoke the
                        // session's current token).
                        None if files.dry_run => block_with(&id, DRY_RUN_TOKEN, None, &public),
                        None => issue_block(store.as_ref(), &id, None, &public).await?,
                    };
                    block
                        .into_iter()
                        .map(|(key, value)| (key.to_owned(), value))
                        .collect()
                }
                (None, None) => anyhow::bail!("name the block: --session ID or --env-file FILE"),
            };
            let dotenv = match dotenv {
                Some(path) => parse_dotenv(
                    &std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?,
                ),
                None => Default::default(),
            };
            (Change::Inject { block, dotenv }, files)
        }
        McpConfigCommand::Wrap { program, files } => (Change::Wrap { program }, files),
        McpConfigCommand::Unwrap { files } => (Change::Unwrap, files),
        McpConfigCommand::Hooks {
            timeout,
            program,
            codex_home,
            dry_run,
            files,
            public,
        } => {
            let program = match program {
                Some(program) => program,
                None => this_binary()?,
            };
            let install = HookInstall {
                public_url: public.public_url(),
                timeout_seconds: timeout,
                program,
                token_variable: anteroom_api::views::SESSION_TOKEN_VARIABLE.to_owned(),
            };
            let mut failed = apply_each(&files, dry_run, true, |path, text| {
                let file = HookFile::of(path).context(
                    "not a hook file: settings.json (Claude Code) or hooks.json (Codex)",
                )?;
                Ok(install_hooks(text, file, &install)?)
            }) != 0;
            let codex_files: Vec<_> = files
                .iter()
                .filter(|path| HookFile::of(path) == Some(HookFile::CodexHooks))
                .collect();
            if !codex_files.is_empty() {
                let home = match codex_home {
                    Some(home) => home,
                    None => std::env::home_dir()
                        .context("no home folder: name Codex's with --codex-home")?
                        .join(".codex"),
                };
                for path in codex_files {
                    failed |= trust_in_codex(path, &home, &install, dry_run);
                }
            }
            return Ok(u8::from(failed));
        }
    };
    Ok(apply_each(
        &files.files,
        files.dry_run,
        false,
        |path, text| {
            let format = Format::of(path)
                .with_context(|| "neither .json (Claude Code) nor .toml (Codex)".to_owned())?;
            Ok(rewrite(format, text, &change, &files.only)?)
        },
    ))
}

/// This binary's absolute path, quoted for the shell that runs Codex's command hooks.
pub(crate) fn this_binary() -> anyhow::Result<String> {
    let path = std::env::current_exe().context("cannot find this binary's path: give --program")?;
    let path = path
        .to_str()
        .context("this binary's path is not UTF-8: give --program")?;
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    Ok(if plain {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    })
}

/// Records Codex's trust in Anteroom's entry of the `hooks.json` at `path` in `home`'s `config.toml`
/// (docs/hooks.md), so Codex runs it without `--dangerously-bypass-hook-trust`. Says what it did on stderr;
/// true when it failed.
fn trust_in_codex(path: &Path, home: &Path, install: &HookInstall, dry_run: bool) -> bool {
    let config = home.join("config.toml");
    let trusted = (|| -> anyhow::Result<&'static str> {
        // In a dry run the file is not written: trust what it would hold.
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let text = install_hooks(&text, HookFile::CodexHooks, install)?;
        let absolute = absolute_path(path)?;
        let entries = entries_to_trust(&text, &absolute, is_anteroom_handler);
        apply_one(&config, dry_run, true, &|_, config_text| {
            Ok(record_trust(config_text, &entries)?)
        })
    })();
    match trusted {
        Ok(outcome) => {
            let trusts = if dry_run { "would trust" } else { "trusts" };
            eprintln!(
                "{}: {outcome} (Codex {trusts} the entry of {}: no --dangerously-bypass-hook-trust needed)",
                config.display(),
                path.display()
            );
            false
        }
        Err(error) => {
            eprintln!(
                "{}: {error:#} (left unchanged: Codex skips the untrusted entry of {} until it is trusted with \
                 /hooks in Codex, or run with --dangerously-bypass-hook-trust)",
                config.display(),
                path.display()
            );
            true
        }
    }
}

/// `path` made absolute and resolved as Codex names it (its folder through symbolic links; the file may not
/// exist yet in a dry run).
fn absolute_path(path: &Path) -> anyhow::Result<std::path::PathBuf> {
    if let Ok(resolved) = std::fs::canonicalize(path) {
        return Ok(resolved);
    }
    let absolute = std::path::absolute(path).context("cannot make its path absolute")?;
    let folder = absolute.parent().context("it has no folder")?;
    let name = absolute.file_name().context("it has no name")?;
    Ok(std::fs::canonicalize(folder)
        .unwrap_or_else(|_| folder.to_path_buf())
        .join(name))
}

/// What a dry run shows in place of a token a real run would issue.
const DRY_RUN_TOKEN: &str = "NEW-TOKEN-ISSUED-ON-A-REAL-RUN";

/// A token of session `id` that one of `files` already carries and that still works: tokens are stored hashed,
/// so this is how a second run writes the same block instead of issuing a new token.
async fn token_in_files(
    store: &dyn anteroom_store::Store,
    id: &SessionId,
    files: &[std::path::PathBuf],
) -> Option<String> {
    let marker = format!("/api/v1/s/{}", credentials::SESSION_TOKEN_PREFIX);
    for path in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (at, _) in text.match_indices(&marker) {
            let token: String = text
                .get(at + "/api/v1/s/".len()..)
                .unwrap_or_default()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .take(200)
                .collect();
            if let Ok(Some(session)) = store.session_for_token(&credentials::hash(&token)).await
                && session.id == *id
            {
                return Some(token);
            }
        }
    }
    None
}

/// Rewrites every file with `rewrite` (its path and text to its new text); a file that fails is named and left
/// untouched, and the others still run. A missing file is an empty one when `create` says so.
fn apply_each(
    files: &[std::path::PathBuf],
    dry_run: bool,
    create: bool,
    rewrite: impl Fn(&Path, &str) -> anyhow::Result<String>,
) -> u8 {
    let mut failed = false;
    for path in files {
        match apply_one(path, dry_run, create, &rewrite) {
            Ok(outcome) => eprintln!("{}: {outcome}", path.display()),
            Err(error) => {
                eprintln!("{}: {error:#} (left unchanged)", path.display());
                failed = true;
            }
        }
    }
    u8::from(failed)
}

fn apply_one(
    path: &Path,
    dry_run: bool,
    create: bool,
    rewrite: &impl Fn(&Path, &str) -> anyhow::Result<String>,
) -> anyhow::Result<&'static str> {
    let missing = create && !path.exists();
    let text = if missing {
        String::new()
    } else {
        std::fs::read_to_string(path).context("cannot read it")?
    };
    let rewritten = rewrite(path, &text)?;
    if rewritten == text {
        return Ok("unchanged");
    }
    if dry_run {
        let diff = similar::TextDiff::from_lines(&text, &rewritten);
        let name = path.display().to_string();
        // A diff is often pasted into a review or a CI log: the session token is shown only by its prefix.
        print!(
            "{}",
            credentials::mask_credentials(&diff.unified_diff().header(&name, &name).to_string())
        );
        return Ok("would change (dry run)");
    }
    if missing {
        if let Some(folder) = path
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty())
        {
            std::fs::create_dir_all(folder).context("cannot create its folder")?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .context("cannot create it")?;
        std::io::Write::write_all(&mut file, rewritten.as_bytes()).context("cannot write it")?;
        return Ok("created");
    }
    // A new file beside the real one (a symlink is followed to it), created exclusively and readable by its
    // owner only (it holds tokens), given the old file's permissions, then renamed over it.
    let target = std::fs::canonicalize(path).context("cannot resolve it")?;
    let folder = target.parent().context("it has no folder")?;
    let mut temporary =
        tempfile::NamedTempFile::new_in(folder).context("cannot write beside it")?;
    std::io::Write::write_all(&mut temporary, rewritten.as_bytes())
        .context("cannot write beside it")?;
    if let Ok(metadata) = std::fs::metadata(&target) {
        let _ = std::fs::set_permissions(temporary.path(), metadata.permissions());
    }
    temporary
        .persist(&target)
        .map_err(|error| error.error)
        .context("cannot replace it")?;
    Ok("updated")
}
