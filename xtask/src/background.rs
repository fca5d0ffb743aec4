//! Work beside the foreground: installs that wait on the network or the disk more than on a core (Debian's
//! Chromium, the npm and PyPI test packages) while the compiler has both cores, and test suites that wait more
//! than they compute beside the longest one. Each writes its own log, shown when it fails (or, for tests, when it
//! ends), so the build's output stays readable.

use std::{
    fs,
    path::PathBuf,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::workspace_root;

/// One install running in the background.
pub struct Install {
    name: &'static str,
    log: PathBuf,
    /// The install's outcome and how long it ran.
    thread: JoinHandle<(Result<()>, Duration)>,
}

impl Install {
    /// Starts `work` on a thread of its own. `work` runs its commands with [`quiet`], which appends their output
    /// to this install's log.
    pub fn start(
        name: &'static str,
        work: impl FnOnce(&Log) -> Result<()> + Send + 'static,
    ) -> Self {
        let log = workspace_root()
            .join("target/xtask-logs")
            .join(format!("{}.log", name.replace(' ', "-")));
        let for_thread = Log(log.clone());
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let outcome = (|| {
                if let Some(dir) = for_thread.0.parent() {
                    fs::create_dir_all(dir)?;
                }
                fs::write(&for_thread.0, b"")?;
                work(&for_thread)
            })();
            (outcome, started.elapsed())
        });
        Self { name, log, thread }
    }

    /// Waits for the work to end and prints its log, whether it failed or not (for work whose output is a
    /// report, such as tests run beside others). Returns how long it ran.
    pub fn finish_showing_log(self) -> Result<Duration> {
        let log = self.log.clone();
        let outcome = self.finish();
        if outcome.is_ok() {
            println!("{}", fs::read_to_string(&log).unwrap_or_default());
        }
        outcome
    }

    /// Waits for the install to end; a failure carries its log. Returns how long it ran.
    pub fn finish(self) -> Result<Duration> {
        let (outcome, took) = self.thread.join().unwrap_or_else(|_| {
            (
                Err(anyhow::anyhow!("the install thread panicked")),
                Duration::ZERO,
            )
        });
        if let Err(error) = outcome {
            let log = fs::read_to_string(&self.log).unwrap_or_default();
            bail!(
                "{} failed: {error:#}\n--- {} ---\n{log}",
                self.name,
                self.log.display()
            );
        }
        Ok(took)
    }
}

/// Where an install's commands write.
pub struct Log(PathBuf);

impl Log {
    /// Appends `text` to this log.
    pub fn write(&self, text: &str) -> Result<()> {
        use std::io::Write as _;
        fs::OpenOptions::new()
            .append(true)
            .open(&self.0)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .with_context(|| format!("cannot write {}", self.0.display()))
    }

    /// Runs `command` to completion with its output appended to this log, failing if it fails.
    pub fn run(&self, command: &mut std::process::Command) -> Result<()> {
        let shown = format!("{command:?}");
        if command.get_current_dir().is_none() {
            command.current_dir(workspace_root());
        }
        let open = || {
            fs::OpenOptions::new()
                .append(true)
                .open(&self.0)
                .with_context(|| format!("cannot open {}", self.0.display()))
        };
        let status = command
            .stdout(open()?)
            .stderr(open()?)
            .status()
            .with_context(|| format!("cannot start {shown}"))?;
        if !status.success() {
            bail!("{shown} failed ({status})");
        }
        Ok(())
    }
}
