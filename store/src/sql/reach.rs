//! The SQL of the ways out (docs/reach.md): people's e-mail and quiet hours, Slack messages and account links,
//! answer links, digests, Web Push subscriptions and the instance's VAPID key, a session's reach settings.

use std::sync::LazyLock;

/// Any change of e-mail undoes an admin's vouching for the one before.
pub const SET_USER_EMAIL: &str = "UPDATE users SET email = $2, email_vouched = FALSE WHERE id = $1";

pub const SELECT_USER_EMAIL: &str = "SELECT email FROM users WHERE id = $1";

pub const SELECT_USER_BY_EMAIL: &str = "SELECT id, username, role FROM users WHERE email = $1";

pub const INSERT_SLACK_MESSAGE: &str = "INSERT INTO slack_messages (round_id, channel, ts, created_at_ms) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (round_id) DO NOTHING";

pub const SELECT_SLACK_MESSAGE: &str = "SELECT channel, ts FROM slack_messages WHERE round_id = $1";

pub const SET_EMAIL_PREFERENCE: &str =
    "UPDATE users SET email_questions = $2, email_after_minutes = $3 WHERE id = $1";

pub const SELECT_EMAIL_PREFERENCE: &str =
    "SELECT email_questions, email_after_minutes FROM users WHERE id = $1";

/// Clearing the quiet hours keeps the person's time zone: it is also the zone their pages show times in.
pub const SET_QUIET_HOURS: &str = "UPDATE users SET quiet_from_minute = $2, quiet_until_minute = $3, \
     time_zone = COALESCE($4, time_zone) WHERE id = $1";

pub const SET_TIME_ZONE: &str = "UPDATE users SET time_zone = $2 WHERE id = $1";

pub const SELECT_TIME_ZONE: &str = "SELECT time_zone FROM users WHERE id = $1";

pub const SELECT_QUIET_HOURS: &str =
    "SELECT quiet_from_minute, quiet_until_minute, time_zone FROM users WHERE id = $1";

pub const SELECT_EMAIL_RECIPIENTS: &str = "SELECT id, username, role, email, email_questions, \
     email_after_minutes, quiet_from_minute, quiet_until_minute, time_zone, digest_after FROM users WHERE email IS NOT NULL AND email_questions <> 'off' \
     AND role IN ('responder', 'admin') ORDER BY username LIMIT $1";

pub const INSERT_ANSWER_TOKEN: &str = "INSERT INTO answer_tokens (token_hash, user_id, round_id, choice, \
     channel, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)";

const ANSWER_TOKEN_COLUMNS: &str =
    "token_hash, user_id, round_id, choice, channel, expires_at_ms, used_at_ms";

pub static SELECT_ANSWER_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {ANSWER_TOKEN_COLUMNS} FROM answer_tokens WHERE token_hash = $1")
});

/// Uses a token up in one statement, so two clicks at once cannot both use it.
pub static USE_ANSWER_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE answer_tokens SET used_at_ms = $2 WHERE token_hash = $1 AND used_at_ms IS NULL \
         AND expires_at_ms > $2 RETURNING {ANSWER_TOKEN_COLUMNS}"
    )
});

/// How many question messages of one format each endpoint was queued since `$2` (a digest's count).
pub const COUNT_RECENT_DELIVERIES: &str = "SELECT endpoint, COUNT(*) FROM webhook_outbox \
     WHERE format = $1 AND created_at_ms > $2 AND event = 'question.created' GROUP BY endpoint";

pub const INSERT_DIGEST_HELD: &str = "INSERT INTO digest_held (user_id, channel, round_id, held_at_ms) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, channel, round_id) DO NOTHING";

pub const SELECT_DIGEST_HELD: &str = "SELECT round_id FROM digest_held WHERE user_id = $1 AND channel = $2 \
     ORDER BY held_at_ms, round_id LIMIT $3";

pub const DELETE_DIGEST_HELD: &str =
    "DELETE FROM digest_held WHERE user_id = $1 AND channel = $2 AND round_id = $3";

pub const SET_DIGEST_AFTER: &str = "UPDATE users SET digest_after = $2 WHERE id = $1";

pub const SELECT_DIGEST_AFTER: &str = "SELECT digest_after FROM users WHERE id = $1";

/// Before an offer is made: offers already expired, and the same Slack user's earlier ones, go. So the table
/// holds at most one live offer per Slack user who clicked in the last 15 minutes.
pub const DROP_STALE_SLACK_LINK_TOKENS: &str =
    "DELETE FROM slack_link_tokens WHERE expires_at_ms <= $1 OR slack_user = $2";

pub const INSERT_SLACK_LINK_TOKEN: &str =
    "INSERT INTO slack_link_tokens (token_hash, slack_user, expires_at_ms) VALUES ($1, $2, $3)";

pub const SELECT_SLACK_LINK_TOKEN: &str =
    "SELECT slack_user FROM slack_link_tokens WHERE token_hash = $1 AND expires_at_ms > $2";

/// Uses a link token up in one statement: two tabs cannot both take it.
pub const USE_SLACK_LINK_TOKEN: &str = "DELETE FROM slack_link_tokens WHERE token_hash = $1 \
     AND expires_at_ms > $2 RETURNING slack_user";

pub const PURGE_SLACK_LINK_TOKENS: &str = "DELETE FROM slack_link_tokens WHERE expires_at_ms < $1";

pub const UPSERT_SLACK_LINK: &str = "INSERT INTO slack_links (slack_user, user_id, linked_at_ms) \
     VALUES ($1, $2, $3) ON CONFLICT (slack_user) DO UPDATE SET user_id = $2, linked_at_ms = $3";

pub const COUNT_SLACK_LINKS: &str =
    "SELECT COUNT(*) FROM slack_links WHERE user_id = $1 AND slack_user <> $2";

pub const SELECT_SLACK_LINKS: &str = "SELECT slack_user, user_id, linked_at_ms FROM slack_links \
     WHERE user_id = $1 ORDER BY linked_at_ms, slack_user";

pub const SELECT_SLACK_LINKED_USER: &str = "SELECT users.id, users.username, users.role FROM slack_links \
     JOIN users ON users.id = slack_links.user_id WHERE slack_links.slack_user = $1";

pub const DELETE_SLACK_LINK: &str =
    "DELETE FROM slack_links WHERE slack_user = $1 AND user_id = $2";

pub const SELECT_SESSION_SETTINGS: &str = "SELECT slack_channel, responders, server_responders, \
     escalation, nobody_available_after_minutes FROM session_settings WHERE session_id = $1";

pub const UPSERT_SESSION_SETTINGS: &str = "INSERT INTO session_settings (session_id, slack_channel, \
     updated_at_ms, responders, server_responders, escalation, nobody_available_after_minutes) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (session_id) DO UPDATE SET slack_channel = $2, \
     updated_at_ms = $3, responders = $4, server_responders = $5, escalation = $6, \
     nobody_available_after_minutes = $7";

pub const PURGE_ANSWER_TOKENS: &str = "DELETE FROM answer_tokens WHERE expires_at_ms < $1";

pub const INSERT_INSTANCE_KEY: &str = "INSERT INTO instance_keys (name, value, created_at_ms) \
     VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING";

pub const SELECT_INSTANCE_KEY: &str = "SELECT value FROM instance_keys WHERE name = $1";

const PUSH_COLUMNS: &str = "id, user_id, endpoint, p256dh, auth, device, created_at_ms";

pub const UPSERT_PUSH_SUBSCRIPTION: &str = "INSERT INTO push_subscriptions (id, user_id, endpoint, \
     p256dh, auth, device, created_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (endpoint) DO UPDATE \
     SET user_id = excluded.user_id, p256dh = excluded.p256dh, auth = excluded.auth, device = excluded.device";

pub const COUNT_PUSH_SUBSCRIPTIONS: &str =
    "SELECT COUNT(*) FROM push_subscriptions WHERE user_id = $1 AND endpoint <> $2";

pub static SELECT_PUSH_SUBSCRIPTION_BY_ENDPOINT: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {PUSH_COLUMNS} FROM push_subscriptions WHERE endpoint = $1"));

pub static SELECT_PUSH_SUBSCRIPTIONS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {PUSH_COLUMNS} FROM push_subscriptions WHERE user_id = $1 ORDER BY created_at_ms, id"
    )
});

pub static SELECT_PUSH_SUBSCRIPTION: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {PUSH_COLUMNS} FROM push_subscriptions WHERE id = $1"));

/// A BIGINT on both backends: PostgreSQL types a bare `1` INT4, which the store reads as i64.
pub const ANY_PUSH_SUBSCRIPTION: &str = "SELECT CAST(1 AS BIGINT) FROM push_subscriptions LIMIT 1";

pub const DELETE_PUSH_SUBSCRIPTION: &str = "DELETE FROM push_subscriptions WHERE id = $1";

pub const DELETE_OWN_PUSH_SUBSCRIPTION: &str =
    "DELETE FROM push_subscriptions WHERE id = $1 AND user_id = $2";

pub static SELECT_PUSH_RECIPIENTS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, u.quiet_from_minute, u.quiet_until_minute, u.time_zone, u.digest_after \
         FROM push_subscriptions s JOIN users u ON u.id = s.user_id \
         WHERE u.role IN ('responder', 'admin') ORDER BY s.created_at_ms, s.id LIMIT $1",
        PUSH_COLUMNS
            .split(", ")
            .map(|column| format!("s.{column}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
});
