//! The `[bytes]` budgets of `budgets.toml`: what a first visit downloads, measured on the built site the way a
//! browser gets it. A fresh server (the test build's binary, serving `target/site`, over a new SQLite file)
//! gets a person and a session with an open question; the queue page and that session's page are fetched
//! signed in, then the stylesheet, script and wasm each page names, once with `Accept-Encoding: br` and once
//! with `gzip`, counting the bytes as they arrive (nothing is decompressed). A count above its limit fails the
//! build with the budget's name, the count and the limit.

use std::{
    collections::BTreeMap,
    io::Read,
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// The person the check signs in as.
const USERNAME: &str = "budget-reader";
const PASSWORD: &str = "a long enough password for the budget";

/// Measures every `[bytes.*]` budget against the site in `site`, served by `binary`; fails on any exceeded.
pub fn check_bytes(binary: &Path, site: &Path) -> Result<()> {
    let limits = limits("bytes")?;
    let folder = tempfile_dir()?;
    let database = format!("sqlite://{}", folder.join("budgets.sqlite3").display());
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let address = format!("127.0.0.1:{port}");
    let base = format!("http://{address}");
    let anteroom = |args: &[&str]| -> Result<String> {
        let output = Command::new(binary)
            .args(args)
            .env("DATABASE_URL", &database)
            .env("ANTEROOM_ADDR", &address)
            .env("ANTEROOM_PASSWORD", PASSWORD)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("anteroom {}", args.join(" ")))?;
        if !output.status.success() {
            bail!(
                "anteroom {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    anteroom(&["migrate"])?;
    anteroom(&["user", "add", "--username", USERNAME, "--role", "admin"])?;
    let block = anteroom(&["session", "create", "--id", "budget-session"])?;
    let server = Server(
        Command::new(binary)
            .arg("serve")
            .env("DATABASE_URL", &database)
            .env("ANTEROOM_ADDR", &address)
            .env("ANTEROOM_SITE_ROOT", site)
            .env("ANTEROOM_DEVELOPMENT", "true")
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("start the server")?,
    );
    crate::dist::wait_for(&address, "/readyz", Duration::from_secs(30), None)?;
    // An open question in the session, asked as an MCP server asks (it waits until it is killed).
    let mut asking = Command::new(binary);
    asking
        .args([
            "ask",
            "--message",
            "Which environment?",
            "--schema",
            r#"{"type":"object","properties":{"env":{"type":"string","enum":["staging","production"]}},"required":["env"]}"#,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for line in block.lines() {
        if let Some((key, value)) = line.split_once('=') {
            asking.env(key.trim(), value.trim().trim_matches('"'));
        }
    }
    let asker = Server(asking.spawn().context("anteroom ask")?);

    let agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent();
    let cookie = sign_in(&agent, &base)?;
    wait_for_question(&agent, &base, &cookie)?;

    let mut measured = BTreeMap::new();
    for (page, path) in [("queue", "/"), ("session", "/sessions/budget-session")] {
        for encoding in ["br", "gzip"] {
            let visit = first_visit(&agent, &base, path, &cookie, encoding)?;
            println!(
                "xtask: first visit of {path} ({encoding}): {} bytes ({})",
                visit.total,
                visit.parts.join(", ")
            );
            measured.insert(
                format!("{page}_first_visit_{}", encoding_name(encoding)),
                visit.total,
            );
            if page == "queue" {
                measured.insert(format!("wasm_{}", encoding_name(encoding)), visit.wasm);
            }
        }
    }
    drop(asker);
    drop(server);
    let _ = std::fs::remove_dir_all(&folder);
    judge("bytes", &limits, &measured)
}

fn encoding_name(encoding: &str) -> &'static str {
    if encoding == "br" { "brotli" } else { "gzip" }
}

/// A process ended with the check, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let folder = workspace_root()
        .join("target")
        .join(format!("budgets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder)?;
    Ok(folder)
}

/// Signs in with the form; the `Cookie` header value of the browser session.
fn sign_in(agent: &ureq::Agent, base: &str) -> Result<String> {
    let reply = agent
        .post(format!("{base}/login"))
        .header("Origin", base)
        .send_form([
            ("username", USERNAME),
            ("password", PASSWORD),
            ("next", "/"),
        ])
        .context("POST /login")?;
    if reply.status() != 303 {
        bail!("signing in answered {}", reply.status());
    }
    let cookie = reply
        .headers()
        .get("set-cookie")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .context("signing in set no cookie")?;
    Ok(cookie.to_owned())
}

/// Waits until the asked question is in the session (the asker starts on its own).
fn wait_for_question(agent: &ureq::Agent, base: &str, cookie: &str) -> Result<()> {
    for _ in 0..100 {
        let page = agent
            .get(format!("{base}/sessions/budget-session"))
            .header("Cookie", cookie)
            .call()
            .context("GET the session page")?
            .into_body()
            .read_to_string()
            .context("the session page")?;
        if page.contains("Which environment?") {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("the asked question never reached the session page")
}

/// What one first visit downloaded.
struct Visit {
    total: u64,
    wasm: u64,
    parts: Vec<String>,
}

/// The page at `path`, then the stylesheet, script and wasm it names, asked with `encoding`: the bytes on the
/// wire, each part noted with the encoding it came in.
fn first_visit(
    agent: &ureq::Agent,
    base: &str,
    path: &str,
    cookie: &str,
    encoding: &str,
) -> Result<Visit> {
    let fetch = |path: &str| -> Result<(u64, String)> {
        let reply = agent
            .get(format!("{base}{path}"))
            .header("Cookie", cookie)
            .header("Accept-Encoding", encoding)
            .call()
            .with_context(|| format!("GET {path}"))?;
        if reply.status() != 200 {
            bail!("GET {path} answered {}", reply.status());
        }
        let came = reply
            .headers()
            .get("content-encoding")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("identity")
            .to_owned();
        let mut bytes = Vec::new();
        reply
            .into_body()
            .into_reader()
            .read_to_end(&mut bytes)
            .with_context(|| format!("GET {path}: the body"))?;
        Ok((bytes.len() as u64, came))
    };
    // The assets' names are fingerprinted: read them out of an uncompressed copy of the page.
    let html = agent
        .get(format!("{base}{path}"))
        .header("Cookie", cookie)
        .call()
        .with_context(|| format!("GET {path}"))?
        .into_body()
        .read_to_string()
        .with_context(|| format!("GET {path}: the page"))?;
    let linked = |suffix: &str| -> Result<String> {
        html.split(['"', '\''])
            .find(|part| part.starts_with("/pkg/") && part.ends_with(suffix))
            .map(str::to_owned)
            .with_context(|| format!("{path} names no {suffix} under /pkg/"))
    };
    let (page, came) = fetch(path)?;
    let mut total = page;
    let mut parts = vec![format!("page {page} {came}")];
    let mut wasm = 0;
    for suffix in [".css", ".js", ".wasm"] {
        let asset = linked(suffix)?;
        let (size, came) = fetch(&asset)?;
        total += size;
        if suffix == ".wasm" {
            wasm = size;
        }
        parts.push(format!("{asset} {size} {came}"));
    }
    Ok(Visit { total, wasm, parts })
}

/// The limits under `[table.*]` of `budgets.toml`, each checked to say why.
fn limits(table: &str) -> Result<BTreeMap<String, u64>> {
    let path = workspace_root().join("budgets.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let document: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not TOML", path.display()))?;
    let entries = document
        .get(table)
        .and_then(toml::Value::as_table)
        .with_context(|| format!("{} has no [{table}] table", path.display()))?;
    let mut limits = BTreeMap::new();
    for (name, entry) in entries {
        let limit = entry
            .get("limit")
            .and_then(toml::Value::as_integer)
            .and_then(|limit| u64::try_from(limit).ok())
            .with_context(|| format!("[{table}.{name}] needs a whole `limit`"))?;
        if entry
            .get("why")
            .and_then(toml::Value::as_str)
            .is_none_or(|why| why.trim().is_empty())
        {
            bail!("[{table}.{name}] needs a `why`: the reason for that number");
        }
        limits.insert(name.clone(), limit);
    }
    Ok(limits)
}

/// Prints each count beside its limit; fails naming every count over its limit, and every budget not measured.
fn judge(
    table: &str,
    limits: &BTreeMap<String, u64>,
    measured: &BTreeMap<String, u64>,
) -> Result<()> {
    let mut failures = Vec::new();
    for (name, limit) in limits {
        match measured.get(name) {
            Some(count) => {
                let over = count > limit;
                println!(
                    "xtask: budget {table}.{name}: {count} (limit {limit}){}",
                    if over { "  EXCEEDED" } else { "" }
                );
                if over {
                    failures.push(format!("{table}.{name}: measured {count}, limit {limit}"));
                }
            }
            None => failures.push(format!(
                "{table}.{name}: not measured (a budget nothing checks)"
            )),
        }
    }
    for name in measured.keys().filter(|name| !limits.contains_key(*name)) {
        failures.push(format!(
            "{table}.{name}: measured, but budgets.toml has no [{table}.{name}] (add it, with its why)"
        ));
    }
    if !failures.is_empty() {
        bail!(
            "budgets exceeded:\n  {}\nA limit is raised only in budgets.toml ([{table}.NAME] limit), with the reason in \
             its `why` and in the same commit.",
            failures.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_over_its_limit_or_unbudgeted_fails_and_names_itself() {
        let limits = BTreeMap::from([("wasm_brotli".to_owned(), 100)]);
        assert!(
            judge(
                "bytes",
                &limits,
                &BTreeMap::from([("wasm_brotli".to_owned(), 100)])
            )
            .is_ok()
        );
        let over = judge(
            "bytes",
            &limits,
            &BTreeMap::from([("wasm_brotli".to_owned(), 101)]),
        )
        .expect_err("over");
        assert!(
            over.to_string()
                .contains("bytes.wasm_brotli: measured 101, limit 100"),
            "{over}"
        );
        assert!(judge("bytes", &limits, &BTreeMap::new()).is_err());
        assert!(
            judge(
                "bytes",
                &BTreeMap::new(),
                &BTreeMap::from([("js_brotli".to_owned(), 1)])
            )
            .is_err()
        );
    }

    #[test]
    fn every_budget_in_the_file_has_a_limit_and_a_reason() {
        for table in ["bytes", "database"] {
            assert!(!limits(table).expect("budgets.toml").is_empty(), "{table}");
        }
    }
}
