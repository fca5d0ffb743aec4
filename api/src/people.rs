//! People who sign in to the web app: adding one, with a checked name and an Argon2id hash of the password
//! (`anteroom user add`, and the test kit's browser).

use anteroom_domain::access::{Role, User, check_password, check_username, normalise_username};
use anteroom_store::Store;

use crate::passwords;

/// Adds a person with a checked name and an Argon2id hash of their password.
pub async fn add_user(
    store: &dyn Store,
    username: &str,
    password: &str,
    role: Role,
) -> anyhow::Result<User> {
    let username = normalise_username(username);
    check_username(username)?;
    check_password(password)?;
    let password = password.to_owned();
    let hash = tokio::task::spawn_blocking(move || passwords::hash(&password)).await??;
    let user = User {
        id: uuid::Uuid::now_v7().to_string(),
        username: username.to_owned(),
        role,
    };
    store.create_user(&user, &hash).await?;
    Ok(user)
}
