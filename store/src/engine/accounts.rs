//! API keys, people, first-run sign-in links and browser sessions.

use chrono::{DateTime, Utc};

use super::{SqlStore, conflict_on_unique};
use crate::{
    AccountStore, BrowserSignIn, StoreError, StoreResult, WebSessionOwner,
    dialect::{Dialect, Statement},
    domain::{
        access::{ApiKey, Role, SignedIn, User},
        audit::NewAuditEntry,
        provider_people::ProviderPerson,
    },
    records::{from_ms, to_ms},
    sql,
};

fn role(role: &str, of: &str) -> StoreResult<Role> {
    Role::parse(role).ok_or_else(|| StoreError::Corrupt(format!("{of} role {role}")))
}

/// The INSERT of a new person, to run on the pool or in a transaction.
fn insert_user(user: &User, password_hash: &str, now: DateTime<Utc>) -> Statement {
    Statement::new(sql::INSERT_USER)
        .bind(&user.id)
        .bind(&user.username)
        .bind(user.role.as_str())
        .bind(password_hash)
        .bind(to_ms(now))
}

/// A browser session's write (an INSERT or an UPSERT), its owner beside its data.
fn web_session(
    sql: &'static str,
    id: &str,
    data: &str,
    expires_at: DateTime<Utc>,
    owner: &WebSessionOwner,
) -> Statement {
    Statement::new(sql)
        .bind(id)
        .bind(data)
        .bind(to_ms(expires_at))
        .bind(owner.user_id.clone())
        .bind(&owner.handle)
        .bind(owner.device.clone())
        .bind(owner.seen_at.map(to_ms))
}

#[async_trait::async_trait]
impl<D: Dialect> AccountStore for SqlStore<D> {
    async fn create_api_key(&self, key: &ApiKey, key_hash: &str, actor: &str) -> StoreResult<()> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        tx.execute(
            Statement::new(sql::INSERT_API_KEY)
                .bind(&key.id)
                .bind(&key.name)
                .bind(key.role.as_str())
                .bind(key_hash)
                .bind(to_ms(now)),
        )
        .await?;
        let entry = NewAuditEntry::new(
            actor,
            "key.issued",
            key.name.clone(),
            serde_json::json!({"role": key.role.as_str()}),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await
    }

    async fn api_key_for_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
        let row = self
            .optional::<(String, String, String)>(
                Statement::new(sql::SELECT_API_KEY_BY_HASH).bind(key_hash),
            )
            .await?;
        row.map(|(id, name, key_role)| {
            Ok(ApiKey {
                id,
                name,
                role: role(&key_role, "api key")?,
            })
        })
        .transpose()
    }

    async fn create_user(&self, user: &User, password_hash: &str) -> StoreResult<()> {
        let inserted = self
            .execute(insert_user(user, password_hash, self.clock_now()))
            .await;
        conflict_on_unique(inserted, || {
            format!("The username {} is taken.", user.username)
        })?;
        Ok(())
    }

    async fn user_with_password(&self, username: &str) -> StoreResult<Option<(User, String)>> {
        let row = self
            .optional::<(String, String, String, String)>(
                Statement::new(sql::SELECT_USER_BY_NAME).bind(username),
            )
            .await?;
        row.map(|(id, username, user_role, hash)| {
            Ok((
                User {
                    id,
                    username,
                    role: role(&user_role, "user")?,
                },
                hash,
            ))
        })
        .transpose()
    }

    async fn signed_in(&self, id: &str) -> StoreResult<Option<SignedIn>> {
        // One row per group (one with no group for a person in none).
        let rows = self
            .all::<(String, String, String, Option<String>, Option<String>)>(
                Statement::new(sql::SELECT_SIGNED_IN).bind(id),
            )
            .await?;
        let groups = rows.iter().filter_map(|row| row.4.clone()).collect();
        rows.into_iter()
            .next()
            .map(|(id, username, user_role, time_zone, _)| {
                Ok(SignedIn {
                    user: User {
                        id,
                        username,
                        role: role(&user_role, "user")?,
                    },
                    time_zone,
                    groups,
                })
            })
            .transpose()
    }

    async fn get_user(&self, id: &str) -> StoreResult<Option<User>> {
        let row = self
            .optional::<(String, String, String)>(Statement::new(sql::SELECT_USER_BY_ID).bind(id))
            .await?;
        row.map(|(id, username, user_role)| {
            Ok(User {
                id,
                username,
                role: role(&user_role, "user")?,
            })
        })
        .transpose()
    }

    async fn sign_in_from_provider(&self, person: &ProviderPerson) -> StoreResult<User> {
        self.provider_sign_in(person).await
    }

    async fn withdraw_provider_access(&self, issuer: &str, subject: &str) -> StoreResult<bool> {
        self.provider_withdrawal(issuer, subject).await
    }

    async fn provider_signed_in_at(&self, user_id: &str) -> StoreResult<Option<DateTime<Utc>>> {
        let (at,): (Option<i64>,) = self
            .one(Statement::new(sql::SELECT_PROVIDER_SIGNED_IN_AT).bind(user_id))
            .await?;
        at.map(from_ms).transpose()
    }

    async fn vouch_for_email(&self, user_id: &str) -> StoreResult<bool> {
        let vouched = self
            .execute(Statement::new(sql::VOUCH_FOR_EMAIL).bind(user_id))
            .await?;
        Ok(vouched == 1)
    }

    async fn count_users(&self) -> StoreResult<i64> {
        let (count,): (i64,) = self.one(Statement::new(sql::COUNT_USERS)).await?;
        Ok(count)
    }

    async fn create_sign_in_link(
        &self,
        token_hash: &str,
        expires_at: DateTime<Utc>,
    ) -> StoreResult<()> {
        self.execute(
            Statement::new(sql::INSERT_SIGN_IN_LINK)
                .bind(token_hash)
                .bind(to_ms(self.clock_now()))
                .bind(to_ms(expires_at)),
        )
        .await?;
        Ok(())
    }

    async fn create_first_admin(
        &self,
        token_hash: &str,
        user: &User,
        password_hash: &str,
    ) -> StoreResult<bool> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let used = tx
            .execute(
                Statement::new(sql::USE_SIGN_IN_LINK)
                    .bind(token_hash)
                    .bind(to_ms(now)),
            )
            .await?;
        if used != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        tx.execute(insert_user(user, password_hash, now)).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn save_web_session(
        &self,
        id: &str,
        data: &str,
        expires_at: DateTime<Utc>,
        owner: &WebSessionOwner,
    ) -> StoreResult<()> {
        self.execute(web_session(
            sql::UPDATE_WEB_SESSION,
            id,
            data,
            expires_at,
            owner,
        ))
        .await?;
        Ok(())
    }

    async fn create_web_session(
        &self,
        id: &str,
        data: &str,
        expires_at: DateTime<Utc>,
        owner: &WebSessionOwner,
    ) -> StoreResult<bool> {
        let inserted = self
            .execute(web_session(
                sql::INSERT_WEB_SESSION_IF_NEW,
                id,
                data,
                expires_at,
                owner,
            ))
            .await?;
        Ok(inserted == 1)
    }

    async fn load_web_session(&self, id: &str) -> StoreResult<Option<(String, DateTime<Utc>)>> {
        let row = self
            .optional::<(String, i64)>(
                Statement::new(sql::SELECT_WEB_SESSION)
                    .bind(id)
                    .bind(to_ms(self.clock_now())),
            )
            .await?;
        row.map(|(data, expires)| Ok((data, from_ms(expires)?)))
            .transpose()
    }

    async fn delete_web_session(&self, id: &str) -> StoreResult<()> {
        self.execute(Statement::new(sql::DELETE_WEB_SESSION).bind(id))
            .await?;
        Ok(())
    }

    async fn purge_web_sessions(&self) -> StoreResult<u64> {
        self.execute(Statement::new(sql::PURGE_WEB_SESSIONS).bind(to_ms(self.clock_now())))
            .await
    }

    async fn browser_sign_ins(&self, user_id: &str) -> StoreResult<Vec<BrowserSignIn>> {
        let rows = self
            .all::<(String, Option<String>, Option<i64>)>(
                Statement::new(sql::SELECT_BROWSER_SIGN_INS)
                    .bind(user_id)
                    .bind(to_ms(self.clock_now())),
            )
            .await?;
        rows.into_iter()
            .map(|(handle, device, seen_at)| {
                Ok(BrowserSignIn {
                    handle,
                    device,
                    seen_at: seen_at.map(from_ms).transpose()?,
                })
            })
            .collect()
    }

    async fn end_browser_sign_in(&self, user_id: &str, handle: &str) -> StoreResult<bool> {
        let ended = self
            .execute(
                Statement::new(sql::DELETE_BROWSER_SIGN_IN)
                    .bind(user_id)
                    .bind(handle),
            )
            .await?;
        Ok(ended > 0)
    }

    async fn end_every_browser_sign_in(&self, user_id: &str) -> StoreResult<u64> {
        self.execute(Statement::new(sql::DELETE_EVERY_BROWSER_SIGN_IN).bind(user_id))
            .await
    }
}
