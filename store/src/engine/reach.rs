//! People's e-mail addresses and each question's Slack message: what the reach channels look up.

use super::{SqlStore, conflict_on_unique};
use crate::{
    ReachStore, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        access::{Role, User, normalise_email},
        ids::RoundId,
        reach::{
            AnswerToken, EMAIL_RECIPIENTS_MAX, EmailPreference, EmailQuestions, EmailRecipient,
            PUSH_RECIPIENTS_MAX, PUSH_SUBSCRIPTIONS_PER_PERSON, PushSubscription, QuietHours,
            ReachChannel,
        },
    },
    records::{from_ms, from_ms_opt, to_ms},
    sql,
};

fn role(raw: &str) -> StoreResult<Role> {
    Role::parse(raw).ok_or_else(|| StoreError::Corrupt(format!("user role {raw}")))
}

fn preference(questions: &str, after_minutes: i64) -> StoreResult<EmailPreference> {
    Ok(EmailPreference {
        questions: EmailQuestions::parse(questions)
            .ok_or_else(|| StoreError::Corrupt(format!("e-mail preference {questions}")))?,
        after_minutes,
    })
}

/// Quiet hours as stored: all three set, or none (a row that holds a window no longer valid reads as none).
fn quiet(from: Option<i64>, until: Option<i64>, zone: Option<String>) -> Option<QuietHours> {
    let (from, until, zone) = (from?, until?, zone?);
    QuietHours::new(u16::try_from(from).ok()?, u16::try_from(until).ok()?, &zone).ok()
}

/// A `push_subscriptions` row.
type PushRow = (String, String, String, String, String, String, i64);

fn subscription(row: PushRow) -> StoreResult<PushSubscription> {
    let (id, user_id, endpoint, p256dh, auth, device, created_at_ms) = row;
    Ok(PushSubscription {
        id,
        user_id,
        endpoint,
        p256dh,
        auth,
        device,
        created_at: from_ms(created_at_ms)?,
    })
}

/// An `answer_tokens` row: hash, user, round, choice, channel, expiry, use.
type TokenRow = (String, String, String, i64, String, i64, Option<i64>);

fn token(row: TokenRow) -> StoreResult<AnswerToken> {
    let (token_hash, user_id, round_id, choice, channel, expires_at_ms, used_at_ms) = row;
    Ok(AnswerToken {
        token_hash,
        user_id,
        round_id: RoundId::parse(&round_id)
            .map_err(|_| StoreError::Corrupt(format!("answer token round {round_id}")))?,
        choice: usize::try_from(choice)
            .map_err(|_| StoreError::Corrupt(format!("answer token choice {choice}")))?,
        channel: ReachChannel::parse(&channel)
            .ok_or_else(|| StoreError::Corrupt(format!("answer token channel {channel}")))?,
        expires_at: from_ms(expires_at_ms)?,
        used_at: from_ms_opt(used_at_ms)?,
    })
}

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
                role: self::role(&role)?,
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

    async fn set_email_preference(
        &self,
        user_id: &str,
        preference: EmailPreference,
    ) -> StoreResult<bool> {
        let updated = self
            .execute(
                Statement::new(sql::SET_EMAIL_PREFERENCE)
                    .bind(user_id)
                    .bind(preference.questions.as_str())
                    .bind(
                        preference
                            .after_minutes
                            .clamp(0, crate::domain::reach::EMAIL_AFTER_MINUTES_MAX),
                    ),
            )
            .await?;
        Ok(updated == 1)
    }

    async fn email_preference(&self, user_id: &str) -> StoreResult<EmailPreference> {
        let row = self
            .optional::<(String, i64)>(Statement::new(sql::SELECT_EMAIL_PREFERENCE).bind(user_id))
            .await?;
        match row {
            Some((questions, after)) => preference(&questions, after),
            None => Ok(EmailPreference::default()),
        }
    }

    async fn email_recipients(&self) -> StoreResult<Vec<EmailRecipient>> {
        type RecipientRow = (
            String,
            String,
            String,
            String,
            String,
            i64,
            Option<i64>,
            Option<i64>,
            Option<String>,
        );
        let rows = self
            .all::<RecipientRow>(
                Statement::new(sql::SELECT_EMAIL_RECIPIENTS).bind(i64::from(EMAIL_RECIPIENTS_MAX)),
            )
            .await?;
        rows.into_iter()
            .map(
                |(id, username, user_role, email, questions, after, from, until, zone)| {
                    Ok(EmailRecipient {
                        quiet: quiet(from, until, zone),
                        user: User {
                            id,
                            username,
                            role: role(&user_role)?,
                        },
                        email,
                        preference: preference(&questions, after)?,
                    })
                },
            )
            .filter(|recipient| {
                recipient
                    .as_ref()
                    .map_or(true, |recipient| recipient.user.role.can_answer())
            })
            .collect()
    }

    async fn create_answer_tokens(&self, tokens: &[AnswerToken]) -> StoreResult<()> {
        let now = to_ms(self.clock_now());
        for token in tokens {
            self.execute(
                Statement::new(sql::INSERT_ANSWER_TOKEN)
                    .bind(&token.token_hash)
                    .bind(&token.user_id)
                    .bind(token.round_id.to_string())
                    .bind(i64::try_from(token.choice).unwrap_or(i64::MAX))
                    .bind(token.channel.as_str())
                    .bind(now)
                    .bind(to_ms(token.expires_at)),
            )
            .await?;
        }
        Ok(())
    }

    async fn answer_token(&self, token_hash: &str) -> StoreResult<Option<AnswerToken>> {
        self.optional::<TokenRow>(
            Statement::new(sql::SELECT_ANSWER_TOKEN.as_str()).bind(token_hash),
        )
        .await?
        .map(token)
        .transpose()
    }

    async fn use_answer_token(&self, token_hash: &str) -> StoreResult<Option<AnswerToken>> {
        self.optional::<TokenRow>(
            Statement::new(sql::USE_ANSWER_TOKEN.as_str())
                .bind(token_hash)
                .bind(to_ms(self.clock_now())),
        )
        .await?
        .map(token)
        .transpose()
    }

    async fn instance_key(&self, name: &str, candidate: &str) -> StoreResult<String> {
        // Read first: after the first start this is one read, never a write (anyone may ask for the public key).
        let read = || Statement::new(sql::SELECT_INSTANCE_KEY).bind(name);
        if let Some((value,)) = self.optional::<(String,)>(read()).await? {
            return Ok(value);
        }
        self.execute(
            Statement::new(sql::INSERT_INSTANCE_KEY)
                .bind(name)
                .bind(candidate)
                .bind(to_ms(self.clock_now())),
        )
        .await?;
        let (value,): (String,) = self.one(read()).await?;
        Ok(value)
    }

    async fn save_push_subscription(
        &self,
        new: &PushSubscription,
    ) -> StoreResult<PushSubscription> {
        let (others,): (i64,) = self
            .one(
                Statement::new(sql::COUNT_PUSH_SUBSCRIPTIONS)
                    .bind(&new.user_id)
                    .bind(&new.endpoint),
            )
            .await?;
        if usize::try_from(others).unwrap_or(usize::MAX) >= PUSH_SUBSCRIPTIONS_PER_PERSON {
            return Err(crate::domain::ManagedInputError::conflict(format!(
                "Push is on in {PUSH_SUBSCRIPTIONS_PER_PERSON} browsers already; remove one first."
            ))
            .into());
        }
        self.execute(
            Statement::new(sql::UPSERT_PUSH_SUBSCRIPTION)
                .bind(&new.id)
                .bind(&new.user_id)
                .bind(&new.endpoint)
                .bind(&new.p256dh)
                .bind(&new.auth)
                .bind(&new.device)
                .bind(to_ms(new.created_at)),
        )
        .await?;
        self.ctx.push_browsers.set(true);
        let row = self
            .one::<PushRow>(
                Statement::new(sql::SELECT_PUSH_SUBSCRIPTION_BY_ENDPOINT.as_str())
                    .bind(&new.endpoint),
            )
            .await?;
        subscription(row)
    }

    async fn push_subscriptions(&self, user_id: &str) -> StoreResult<Vec<PushSubscription>> {
        self.all::<PushRow>(Statement::new(sql::SELECT_PUSH_SUBSCRIPTIONS.as_str()).bind(user_id))
            .await?
            .into_iter()
            .map(subscription)
            .collect()
    }

    async fn push_subscription(&self, id: &str) -> StoreResult<Option<PushSubscription>> {
        self.optional::<PushRow>(Statement::new(sql::SELECT_PUSH_SUBSCRIPTION.as_str()).bind(id))
            .await?
            .map(subscription)
            .transpose()
    }

    async fn remove_push_subscription(&self, id: &str, user_id: Option<&str>) -> StoreResult<bool> {
        let statement = match user_id {
            Some(user_id) => Statement::new(sql::DELETE_OWN_PUSH_SUBSCRIPTION)
                .bind(id)
                .bind(user_id),
            None => Statement::new(sql::DELETE_PUSH_SUBSCRIPTION).bind(id),
        };
        Ok(self.execute(statement).await? == 1)
    }

    async fn push_recipients(&self) -> StoreResult<Vec<PushSubscription>> {
        self.all::<PushRow>(
            Statement::new(sql::SELECT_PUSH_RECIPIENTS.as_str())
                .bind(i64::from(PUSH_RECIPIENTS_MAX)),
        )
        .await?
        .into_iter()
        .map(subscription)
        .collect()
    }

    async fn set_quiet_hours(
        &self,
        user_id: &str,
        quiet: Option<&QuietHours>,
    ) -> StoreResult<bool> {
        let updated = self
            .execute(
                Statement::new(sql::SET_QUIET_HOURS)
                    .bind(user_id)
                    .bind(quiet.map(|quiet| i64::from(quiet.from_minute)))
                    .bind(quiet.map(|quiet| i64::from(quiet.until_minute)))
                    .bind(quiet.map(|quiet| quiet.time_zone.clone())),
            )
            .await?;
        Ok(updated == 1)
    }

    async fn quiet_hours(&self, user_id: &str) -> StoreResult<Option<QuietHours>> {
        let row = self
            .optional::<(Option<i64>, Option<i64>, Option<String>)>(
                Statement::new(sql::SELECT_QUIET_HOURS).bind(user_id),
            )
            .await?;
        Ok(row.and_then(|(from, until, zone)| quiet(from, until, zone)))
    }
}
