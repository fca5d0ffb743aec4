//! People's e-mail addresses and each question's Slack message: what the reach channels look up.

use super::{SqlStore, conflict_on_unique};
use crate::{
    ReachStore, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        access::{Role, User, normalise_email},
        ids::RoundId,
    },
    records::to_ms,
    sql,
};

#[async_trait::async_trait]
impl<D: Dialect> ReachStore for SqlStore<D> {
    async fn set_user_email(&self, user_id: &str, email: Option<&str>) -> StoreResult<bool> {
        let email = email.map(normalise_email).transpose()?;
        let updated = self
            .execute(
                Statement::new(sql::SET_USER_EMAIL)
                    .bind(user_id)
                    .bind(email.clone()),
            )
            .await;
        let updated = conflict_on_unique(updated, || {
            format!(
                "Another person already has the e-mail {}.",
                email.as_deref().unwrap_or_default()
            )
        })?;
        Ok(updated == 1)
    }

    async fn user_email(&self, user_id: &str) -> StoreResult<Option<String>> {
        let row = self
            .optional::<(Option<String>,)>(Statement::new(sql::SELECT_USER_EMAIL).bind(user_id))
            .await?;
        Ok(row.and_then(|(email,)| email))
    }

    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        let Ok(email) = normalise_email(email) else {
            return Ok(None);
        };
        let row = self
            .optional::<(String, String, String)>(
                Statement::new(sql::SELECT_USER_BY_EMAIL).bind(email),
            )
            .await?;
        row.map(|(id, username, role)| {
            Ok(User {
                id,
                username,
                role: Role::parse(&role)
                    .ok_or_else(|| StoreError::Corrupt(format!("user role {role}")))?,
            })
        })
        .transpose()
    }

    async fn remember_slack_message(
        &self,
        round: &RoundId,
        channel: &str,
        ts: &str,
    ) -> StoreResult<()> {
        self.execute(
            Statement::new(sql::INSERT_SLACK_MESSAGE)
                .bind(round.to_string())
                .bind(channel)
                .bind(ts)
                .bind(to_ms(self.clock_now())),
        )
        .await?;
        Ok(())
    }

    async fn slack_message(&self, round: &RoundId) -> StoreResult<Option<(String, String)>> {
        self.optional::<(String, String)>(
            Statement::new(sql::SELECT_SLACK_MESSAGE).bind(round.to_string()),
        )
        .await
    }
}
