//! `anteroom env`: a session's environment block, as `.env` lines, JSON or shell exports, with a new token.

#![allow(
    clippy::print_stdout,
    reason = "what this command prints on stdout is its output"
)]

use anteroom_domain::ids::SessionId;
use anteroom_server::config::EnvArgs;
use anteroom_store::StoreOptions;
use anyhow::bail;

use super::{open_store, session::issue_block};

pub async fn run(args: EnvArgs) -> anyhow::Result<u8> {
    if !args.rotate {
        bail!(
            "a session's token is stored hashed and shown only when it is issued: pass --rotate to issue session \
             {} a new one (the old one stops working), or reuse the block printed then",
            args.session
        );
    }
    let store = open_store(&args.database, StoreOptions::default()).await?;
    let id = SessionId::parse(&args.session)?;
    // An unknown session is an error, not a new session.
    store.get_session(&id).await?;
    let block = issue_block(store.as_ref(), &id, args.server.as_deref(), &args.public).await?;
    print!("{}", args.format.render(&block));
    Ok(0)
}
