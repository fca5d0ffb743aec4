//! Command line and environment configuration: every flag has an environment variable of the same meaning.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand};

/// Anteroom: where headless AI agents wait for a human.
#[derive(Debug, Parser)]
#[command(name = "anteroom", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Settings for `serve`, accepted here too so that plain `anteroom` serves.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web app and the API (the default).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate(DatabaseArgs),
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Database URL: `sqlite://FILE` (embedded, created if missing) or `postgres://…` for several instances.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://anteroom.sqlite3"
    )]
    pub database_url: String,
}

/// Settings of the server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "ANTEROOM_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    #[command(flatten)]
    pub database: DatabaseArgs,

    /// Folder holding the built browser bundle (`pkg/`) and public files.
    #[arg(long, env = "ANTEROOM_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,

    /// Default window of a question, in minutes, when its producer names no deadline (default 60).
    /// Blank means unset; a value that is not a positive whole number is logged and ignored.
    #[arg(long, env = "ELICITATION_EXPIRATION_MINUTES")]
    pub expiration_minutes: Option<String>,

    /// Log filter, in `tracing` env-filter syntax.
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log: String,
}
