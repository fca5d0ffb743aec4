//! `anteroom user add`: a person who signs in to the web app, with the password from `ANTEROOM_PASSWORD` or
//! standard input.

use anteroom_domain::access::Role;
use anteroom_server::{config::DatabaseArgs, people::add_user};
use anteroom_store::StoreOptions;
use anyhow::Context;

use super::open_store;

pub async fn add(username: &str, role: Role, database: &DatabaseArgs) -> anyhow::Result<()> {
    let password = match std::env::var("ANTEROOM_PASSWORD") {
        Ok(password) => password,
        Err(_) => {
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .context("cannot read the password from standard input")?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        }
    };
    let store = open_store(database, StoreOptions::default()).await?;
    let user = add_user(store.as_ref(), username, &password, role).await?;
    eprintln!("added {} ({})", user.username, user.role.as_str());
    Ok(())
}
