//! People's e-mail addresses and each question's Slack message: what the reach channels look up.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{SqlStore, conflict_on_unique, outbox::queued_params};
use crate::{
    AgentSessionStore, ReachStore, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        access::{Role, User, normalise_email},
        audit::NewAuditEntry,
        ids::{RoundId, SessionId},
        reach::{
            AnswerToken, DIGEST_AFTER_DEFAULT, DIGEST_AFTER_MAX, EMAIL_RECIPIENTS_MAX,
            EmailPreference, EmailQuestions, EmailRecipient, PUSH_RECIPIENTS_MAX,
            PUSH_SUBSCRIPTIONS_PER_PERSON, PushRecipient, PushSubscription, QuietHours,
            ReachChannel, SLACK_LINKS_PER_PERSON, SlackLink,
        },
        session::SessionSettings,
        webhook::{QueuedDelivery, WebhookFormat},
    },
    records::{from_ms, from_ms_opt, to_ms},
    sql,
};

fn role(raw: &str) -> StoreResult<Role> {
    Role::parse(raw).ok_or_else(|| StoreError::Corrupt(format!("user role {raw}")))
}

/// A `users` row of id, username and role.
fn user((id, username, role): (String, String, String)) -> StoreResult<User> {
    Ok(User {
        id,
        username,
        role: self::role(&role)?,
    })
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

fn digest_after(raw: i64) -> u32 {
    u32::try_from(raw).map_or(DIGEST_AFTER_DEFAULT, |after| after.min(DIGEST_AFTER_MAX))
}

/// A `slack_links` row.
type SlackLinkRow = (String, String, i64);

fn slack_link(row: SlackLinkRow) -> StoreResult<SlackLink> {
    let (slack_user, user_id, linked_at_ms) = row;
    Ok(SlackLink {
        slack_user,
        user_id,
        linked_at: from_ms(linked_at_ms)?,
    })
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
        row.map(user).transpose()
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
            i64,
        );
        let rows = self
            .all::<RecipientRow>(
                Statement::new(sql::SELECT_EMAIL_RECIPIENTS).bind(i64::from(EMAIL_RECIPIENTS_MAX)),
            )
            .await?;
        rows.into_iter()
            .map(
                |(id, username, user_role, email, questions, after, from, until, zone, digest)| {
                    Ok(EmailRecipient {
                        quiet: quiet(from, until, zone),
                        digest_after: digest_after(digest),
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

    async fn push_recipients(&self) -> StoreResult<Vec<PushRecipient>> {
        type RecipientRow = (
            String,
            String,
            String,
            String,
            String,
            String,
            i64,
            Option<i64>,
            Option<i64>,
            Option<String>,
            i64,
        );
        self.all::<RecipientRow>(
            Statement::new(sql::SELECT_PUSH_RECIPIENTS.as_str())
                .bind(i64::from(PUSH_RECIPIENTS_MAX)),
        )
        .await?
        .into_iter()
        .map(
            |(id, user_id, endpoint, p256dh, auth, device, created, from, until, zone, digest)| {
                Ok(PushRecipient {
                    browser: subscription((id, user_id, endpoint, p256dh, auth, device, created))?,
                    quiet: quiet(from, until, zone),
                    digest_after: digest_after(digest),
                })
            },
        )
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

    async fn set_time_zone(&self, user_id: &str, time_zone: Option<&str>) -> StoreResult<bool> {
        let updated = self
            .execute(
                Statement::new(sql::SET_TIME_ZONE)
                    .bind(user_id)
                    .bind(time_zone.map(str::to_owned)),
            )
            .await?;
        Ok(updated == 1)
    }

    async fn time_zone(&self, user_id: &str) -> StoreResult<Option<String>> {
        let row = self
            .optional::<(Option<String>,)>(Statement::new(sql::SELECT_TIME_ZONE).bind(user_id))
            .await?;
        Ok(row.and_then(|(zone,)| zone))
    }

    async fn recent_deliveries(
        &self,
        format: WebhookFormat,
        since: DateTime<Utc>,
    ) -> StoreResult<HashMap<String, u32>> {
        let rows = self
            .all::<(String, i64)>(
                Statement::new(sql::COUNT_RECENT_DELIVERIES)
                    .bind(format.as_str())
                    .bind(to_ms(since)),
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|(endpoint, count)| (endpoint, u32::try_from(count).unwrap_or(u32::MAX)))
            .collect())
    }

    async fn hold_for_digest(
        &self,
        user_id: &str,
        channel: ReachChannel,
        round: RoundId,
        digest: &QueuedDelivery,
    ) -> StoreResult<()> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        tx.execute(
            Statement::new(sql::INSERT_DIGEST_HELD)
                .bind(user_id)
                .bind(channel.as_str())
                .bind(round.to_string())
                .bind(to_ms(now)),
        )
        .await?;
        tx.execute(Statement::new(sql::insert_outbox(1)).bind_all(queued_params(digest, now)))
            .await?;
        tx.commit().await
    }

    async fn digest_held(
        &self,
        user_id: &str,
        channel: ReachChannel,
        limit: u32,
    ) -> StoreResult<Vec<RoundId>> {
        let rows = self
            .all::<(String,)>(
                Statement::new(sql::SELECT_DIGEST_HELD)
                    .bind(user_id)
                    .bind(channel.as_str())
                    .bind(i64::from(limit)),
            )
            .await?;
        rows.into_iter()
            .map(|(round,)| {
                RoundId::parse(&round)
                    .map_err(|_| StoreError::Corrupt(format!("held round {round}")))
            })
            .collect()
    }

    async fn release_digest(
        &self,
        user_id: &str,
        channel: ReachChannel,
        rounds: &[RoundId],
    ) -> StoreResult<()> {
        for round in rounds {
            self.execute(
                Statement::new(sql::DELETE_DIGEST_HELD)
                    .bind(user_id)
                    .bind(channel.as_str())
                    .bind(round.to_string()),
            )
            .await?;
        }
        Ok(())
    }

    async fn set_digest_after(&self, user_id: &str, after: u32) -> StoreResult<bool> {
        let updated = self
            .execute(
                Statement::new(sql::SET_DIGEST_AFTER)
                    .bind(user_id)
                    .bind(i64::from(after.min(DIGEST_AFTER_MAX))),
            )
            .await?;
        Ok(updated == 1)
    }

    async fn digest_after(&self, user_id: &str) -> StoreResult<u32> {
        let row = self
            .optional::<(i64,)>(Statement::new(sql::SELECT_DIGEST_AFTER).bind(user_id))
            .await?;
        Ok(row.map_or(DIGEST_AFTER_DEFAULT, |(after,)| digest_after(after)))
    }

    async fn offer_slack_link(
        &self,
        token_hash: &str,
        slack_user: &str,
        expires_at: DateTime<Utc>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        tx.execute(
            Statement::new(sql::DROP_STALE_SLACK_LINK_TOKENS)
                .bind(to_ms(self.clock_now()))
                .bind(slack_user),
        )
        .await?;
        tx.execute(
            Statement::new(sql::INSERT_SLACK_LINK_TOKEN)
                .bind(token_hash)
                .bind(slack_user)
                .bind(to_ms(expires_at)),
        )
        .await?;
        tx.commit().await
    }

    async fn slack_link_offer(&self, token_hash: &str) -> StoreResult<Option<String>> {
        let row = self
            .optional::<(String,)>(
                Statement::new(sql::SELECT_SLACK_LINK_TOKEN)
                    .bind(token_hash)
                    .bind(to_ms(self.clock_now())),
            )
            .await?;
        Ok(row.map(|(slack_user,)| slack_user))
    }

    async fn link_slack(&self, token_hash: &str, user_id: &str) -> StoreResult<Option<SlackLink>> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let Some((slack_user,)) = tx
            .optional::<(String,)>(
                Statement::new(sql::USE_SLACK_LINK_TOKEN)
                    .bind(token_hash)
                    .bind(to_ms(now)),
            )
            .await?
        else {
            return Ok(None);
        };
        let (others,): (i64,) = tx
            .one(
                Statement::new(sql::COUNT_SLACK_LINKS)
                    .bind(user_id)
                    .bind(&slack_user),
            )
            .await?;
        if usize::try_from(others).unwrap_or(usize::MAX) >= SLACK_LINKS_PER_PERSON {
            return Err(crate::domain::ManagedInputError::conflict(format!(
                "You have {SLACK_LINKS_PER_PERSON} Slack accounts linked already; unlink one first."
            ))
            .into());
        }
        tx.execute(
            Statement::new(sql::UPSERT_SLACK_LINK)
                .bind(&slack_user)
                .bind(user_id)
                .bind(to_ms(now)),
        )
        .await?;
        tx.commit().await?;
        Ok(Some(SlackLink {
            slack_user,
            user_id: user_id.to_owned(),
            linked_at: now,
        }))
    }

    async fn slack_linked_user(&self, slack_user: &str) -> StoreResult<Option<User>> {
        let row = self
            .optional::<(String, String, String)>(
                Statement::new(sql::SELECT_SLACK_LINKED_USER).bind(slack_user),
            )
            .await?;
        row.map(user).transpose()
    }

    async fn slack_links(&self, user_id: &str) -> StoreResult<Vec<SlackLink>> {
        self.all::<SlackLinkRow>(Statement::new(sql::SELECT_SLACK_LINKS).bind(user_id))
            .await?
            .into_iter()
            .map(slack_link)
            .collect()
    }

    async fn unlink_slack(&self, slack_user: &str, user_id: &str) -> StoreResult<bool> {
        let deleted = self
            .execute(
                Statement::new(sql::DELETE_SLACK_LINK)
                    .bind(slack_user)
                    .bind(user_id),
            )
            .await?;
        Ok(deleted == 1)
    }

    async fn session_settings(&self, session: &SessionId) -> StoreResult<SessionSettings> {
        match self.stored_settings(session).await? {
            Some(settings) => Ok(settings),
            None => {
                // Nothing set: the defaults, for a session that exists.
                self.get_session(session).await?;
                Ok(SessionSettings::default())
            }
        }
    }

    async fn set_session_settings(
        &self,
        session: &SessionId,
        settings: &SessionSettings,
        actor: &str,
    ) -> StoreResult<SessionSettings> {
        settings.validate()?;
        let settings = SessionSettings {
            slack_channel: settings
                .slack_channel
                .as_deref()
                .map(|channel| channel.trim_start_matches('#').to_owned()),
            ..settings.clone()
        };
        self.get_session(session).await?;
        let before = self.stored_settings(session).await?.unwrap_or_default();
        let (responders, server_responders, escalation, nobody) =
            super::teams::team_columns(&settings)?;
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        tx.execute(
            Statement::new(sql::UPSERT_SESSION_SETTINGS)
                .bind(session.to_string())
                .bind(settings.slack_channel.clone())
                .bind(to_ms(now))
                .bind(responders)
                .bind(server_responders)
                .bind(escalation)
                .bind(nobody),
        )
        .await?;
        // Who may answer is a decision the record keeps.
        if before.responders != settings.responders
            || before.server_responders != settings.server_responders
            || before.escalation != settings.escalation
            || before.nobody_available_after_minutes != settings.nobody_available_after_minutes
        {
            let entry = NewAuditEntry::new(
                actor,
                "session.responders_changed",
                session.to_string(),
                serde_json::json!({
                    "responders": settings.responders,
                    "server_responders": settings.server_responders,
                    "escalation": settings.escalation,
                    "nobody_available_after_minutes": settings.nobody_available_after_minutes,
                }),
            );
            self.audit(&mut tx, &[entry], now).await?;
        }
        tx.commit().await?;
        Ok(settings)
    }
}
