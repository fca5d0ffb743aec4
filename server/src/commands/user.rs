//! `anteroom user`: a person added (the password from `ANTEROOM_PASSWORD` or standard input), their e-mail set,
//! or their browsers signed out everywhere.

use anteroom_domain::access::{Role, User, normalise_email, normalise_username};
use anteroom_server::{config::DatabaseArgs, people::add_user};
use anteroom_store::{Store, StoreOptions};
use anyhow::Context;

use super::open_store;

pub async fn add(
    username: &str,
    role: Role,
    email: Option<&str>,
    database: &DatabaseArgs,
) -> anyhow::Result<()> {
    // Checked before anything is stored: a bad address adds nobody.
    if let Some(email) = email {
        normalise_email(email)?;
    }
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
    if let Some(email) = email {
        // Given by an admin: this e-mail may link the person's first sign-in through the identity provider.
        store.set_user_email(&user.id, Some(email)).await?;
        store.vouch_for_email(&user.id).await?;
    }
    eprintln!("added {} ({})", user.username, user.role.as_str());
    Ok(())
}

/// `anteroom user email`: sets or clears a person's e-mail.
pub async fn set_email(
    username: &str,
    email: Option<&str>,
    database: &DatabaseArgs,
) -> anyhow::Result<()> {
    let store = open_store(database, StoreOptions::default()).await?;
    let user = person_named(store.as_ref(), username).await?;
    store.set_user_email(&user.id, email).await?;
    store.vouch_for_email(&user.id).await?;
    match email {
        Some(_) => eprintln!("{}'s e-mail is set", user.username),
        None => eprintln!("{}'s e-mail is cleared", user.username),
    }
    Ok(())
}

/// `anteroom user sign-out`: ends every browser session of a person and removes their passkeys (a lost phone, a
/// stolen session that added one of its own): they sign in again with a password or through the provider.
pub async fn sign_out(username: &str, database: &DatabaseArgs) -> anyhow::Result<()> {
    let store = open_store(database, StoreOptions::default()).await?;
    let user = person_named(store.as_ref(), username).await?;
    let ended = store.end_every_browser_sign_in(&user.id).await?;
    let passkeys = store.remove_every_passkey(&user.id).await?;
    eprintln!(
        "{} is signed out in {ended} browser(s); {passkeys} passkey(s) removed",
        user.username
    );
    Ok(())
}

/// The person called `username`, or an error naming who was not found.
async fn person_named(store: &dyn Store, username: &str) -> anyhow::Result<User> {
    match store
        .user_with_password(normalise_username(username))
        .await?
    {
        Some((user, _)) => Ok(user),
        None => anyhow::bail!("no person is called {username}"),
    }
}
