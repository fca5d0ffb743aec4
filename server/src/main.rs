//! Entry point of the `anteroom` binary: parses the command line and runs the chosen sub-command (one file
//! each under `commands/`).

mod commands;

use std::process::ExitCode;

use anteroom_server::{
    ask,
    config::{ApikeyCommand, Cli, Command, SessionCommand, UserCommand},
};
use clap::Parser;

/// mimalloc rather than glibc's malloc: every request allocates and frees small buffers on both cores at once
/// (server/Cargo.toml says what it measured).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ends the process with `code` without waiting for the runtime's blocking tasks.
#[expect(
    clippy::disallowed_methods,
    reason = "main decides the exit; `anteroom wrap` must not wait on a stdin read"
)]
fn exit_now(code: u8) -> ! {
    std::process::exit(i32::from(code))
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Some(Command::Serve(args)) => commands::serve::run(*args).await.map(|()| 0),
        None => commands::serve::run(cli.serve).await.map(|()| 0),
        Some(Command::Migrate(args)) => {
            commands::init_logging("info", commands::log_format_from_env());
            commands::migrate::run(args).await
        }
        Some(Command::Backup(args)) => {
            commands::init_logging("warn", commands::log_format_from_env());
            commands::backup::back_up(args).await.map(|()| 0)
        }
        Some(Command::Restore(args)) => {
            commands::init_logging("warn", commands::log_format_from_env());
            commands::backup::restore(args).await.map(|()| 0)
        }
        Some(Command::Healthcheck(args)) => commands::healthcheck::run(args).await.map(|()| 0),
        Some(Command::SiteBundle(args)) => std::env::current_exe()
            .map_err(anyhow::Error::from)
            .and_then(|exe| {
                let bytes = anteroom_server::router::site_files::write_with_site(
                    &exe, &args.site, &args.out,
                )?;
                eprintln!("wrote {} ({bytes} bytes)", args.out.display());
                Ok(0)
            }),
        Some(Command::Apikey(ApikeyCommand::Create {
            name,
            role,
            database,
        })) => commands::apikey::create(&name, role, &database)
            .await
            .map(|()| 0),
        Some(Command::Session(SessionCommand::Create {
            id,
            title,
            agent,
            server,
            slack_channel,
            responders,
            public,
            database,
        })) => commands::session::create(
            (id, title, agent),
            server,
            (slack_channel, responders),
            &public,
            &database,
        )
        .await
        .map(|()| 0),
        Some(Command::User(UserCommand::Add {
            username,
            role,
            email,
            database,
        })) => commands::user::add(&username, role, email.as_deref(), &database)
            .await
            .map(|()| 0),
        Some(Command::User(UserCommand::Email {
            username,
            email,
            database,
        })) => commands::user::set_email(&username, email.as_deref(), &database)
            .await
            .map(|()| 0),
        Some(Command::User(UserCommand::SignOut { username, database })) => {
            commands::user::sign_out(&username, &database)
                .await
                .map(|()| 0)
        }
        Some(Command::Group(command)) => commands::group::run(command).await.map(|()| 0),
        Some(Command::Audit(command)) => commands::audit::run(command).await,
        Some(Command::Ask(args)) => ask::run(args).await,
        Some(Command::Wrap(args)) => {
            // Exit at once: the runtime would otherwise wait on its blocking read of a stdin the harness may
            // keep open (after a signal, or when the server exited first).
            let code = commands::wrap::run(args).await.unwrap_or_else(|error| {
                eprintln!("anteroom: {error:#}");
                ask::EXIT_ERROR
            });
            exit_now(code)
        }
        Some(Command::Env(args)) => commands::env::run(args).await,
        Some(Command::Hook(hook)) => match commands::hook::CommandHook::of(&hook) {
            Some((relayed, timeout)) => Ok(commands::hook::relay(relayed, timeout).await),
            None => Ok(commands::hook::offline()),
        },
        Some(Command::McpConfig(command)) => commands::mcp_config::run(command).await,
        Some(Command::Run(args)) => {
            // Exit at once, as for wrap: the agent's stdin is its own, and nothing here should wait on it.
            let code = commands::run::run(args).await.unwrap_or_else(|error| {
                eprintln!("anteroom run: {error:#}");
                ask::EXIT_ERROR
            });
            exit_now(code)
        }
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("anteroom: {error:#}");
            ExitCode::from(ask::EXIT_ERROR)
        }
    }
}
