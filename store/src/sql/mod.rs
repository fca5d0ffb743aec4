//! The store's SQL, written once: both SQLite and PostgreSQL accept `$N` parameters, `RETURNING` and
//! `ON CONFLICT`, and every column is text, a 64-bit integer or a boolean. Statements over a round's or a
//! session's whole record are built from the one column list in [`crate::records`].

use std::sync::LazyLock;

use crate::{
    dialect::{placeholders, value_rows},
    records::{ROUND_COLUMNS, SESSION_COLUMNS, Written},
};

mod identities;
mod passkeys;
mod reach;
mod response_times;
mod runs;

pub use identities::*;
pub use passkeys::*;
pub use reach::*;
pub use response_times::*;
pub use runs::*;

/// The columns of `list` an INSERT (`insert`) or an UPDATE writes, in list order.
pub(crate) fn written_by(list: &[(&'static str, Written)], insert: bool) -> Vec<&'static str> {
    list.iter()
        .filter(|(_, written)| written.by(insert))
        .map(|(column, _)| *column)
        .collect()
}

/// `INSERT INTO table (…) VALUES ($1, …)` over the columns an insert writes.
fn insert(table: &str, list: &[(&'static str, Written)]) -> String {
    let columns = written_by(list, true);
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        placeholders(1, columns.len())
    )
}

pub const SELECT_ROUND: &str = "SELECT * FROM rounds WHERE round_id = $1";

pub const SELECT_ROUND_BY_REQUEST_ID: &str = "SELECT * FROM rounds WHERE request_id = $1";

pub const SELECT_SESSION_ROUNDS: &str =
    "SELECT * FROM rounds WHERE session_id = $1 ORDER BY created_at_ms DESC, round_id DESC";

/// A page of a session's history: keyset paging on (created_at_ms, round_id), newest first.
pub const SELECT_SESSION_ROUNDS_PAGE: &str = "SELECT * FROM rounds WHERE session_id = $1 \
     AND ($2 = '' OR (created_at_ms, round_id) < (SELECT created_at_ms, round_id FROM rounds WHERE round_id = $2)) \
     ORDER BY created_at_ms DESC, round_id DESC LIMIT $3";

pub const SELECT_OPEN_ROUNDS: &str = "SELECT * FROM rounds WHERE session_id = $1 AND status = 'pending' \
     ORDER BY created_at_ms, round_id LIMIT $2";

pub const SELECT_OPEN_ROUNDS_EVERYWHERE: &str = "SELECT * FROM rounds WHERE status = 'pending' \
     ORDER BY created_at_ms, round_id LIMIT $1";

/// Pending rounds not yet due whose summary ("<tool>: <message>") is `$1`: the few candidates for "the same
/// question", so the page never reads every open question to find them.
pub const SELECT_OPEN_ROUNDS_ASKING: &str = "SELECT * FROM rounds WHERE status = 'pending' AND summary = $1 \
     AND deadline_ms > $2 ORDER BY created_at_ms, round_id LIMIT $3";

pub const SELECT_PENDING_ROUNDS: &str = "SELECT * FROM rounds WHERE session_id = $1 AND status = 'pending' \
     ORDER BY created_at_ms, round_id LIMIT 2";

/// A poll's delivery of an answer in one statement, as `Round::record_poll_delivery` would record it ($1 the
/// round, $2 now): only for an answer with no lease whose round needs no expiry first (not yet past its
/// deadline while waiting for pickup). Anything else matches no row and takes the transactional path.
pub const RECORD_POLL_DELIVERY: &str = "UPDATE rounds SET status = 'delivered', \
     delivery_attempts = delivery_attempts + 1, delivered_at_ms = COALESCE(delivered_at_ms, $2), \
     updated_at_ms = $2, version = version + 1 \
     WHERE round_id = $1 AND lease_owner IS NULL \
     AND (status = 'delivered' OR (status = 'response_validated' AND deadline_ms > $2)) RETURNING *";

/// What a poll of a pending question needs, found through the session's token in one query.
pub const SELECT_POLL_PROBE: &str = "SELECT s.id, r.round_id, r.status, r.deadline_ms FROM sessions s \
     JOIN rounds r ON r.session_id = s.id WHERE s.producer_token_hash = $1 AND r.request_id = $2";

/// How many times any session's producer token has changed (migration 0009 counts them in the database).
pub const SELECT_TOKEN_CHANGES: &str = "SELECT changes FROM producer_token_changes WHERE id = 1";

/// Each of `sessions` listed sessions' oldest pending round (for the tests' `StoreTesting`).
#[cfg(feature = "testing")]
pub fn select_oldest_open(sessions: usize) -> String {
    format!(
        "SELECT r.* FROM rounds r WHERE r.status = 'pending' \
         AND r.created_at_ms = (SELECT MIN(o.created_at_ms) FROM rounds o \
         WHERE o.session_id = r.session_id AND o.status = 'pending') AND r.session_id IN ({}) \
         ORDER BY r.created_at_ms, r.round_id",
        placeholders(1, sessions)
    )
}

/// `sessions` listed sessions, each row read for writing (`lock` is the dialect's row lock).
pub fn select_sessions(sessions: usize, lock: &str) -> String {
    format!(
        "SELECT * FROM sessions WHERE id IN ({}){lock}",
        placeholders(1, sessions)
    )
}

/// How many questions of each of `sessions` listed sessions wait for a person ($1 is now).
pub fn count_open_by_session(sessions: usize) -> String {
    format!(
        "SELECT session_id, COUNT(*) FROM rounds WHERE status = 'pending' AND deadline_ms > $1 \
         AND session_id IN ({}) GROUP BY session_id",
        placeholders(2, sessions)
    )
}

/// The latest round of each of `sessions` listed sessions: its session, request id and summary.
pub fn select_latest_rounds(sessions: usize) -> String {
    format!(
        "SELECT r.session_id, r.request_id, r.summary FROM rounds r WHERE r.session_id IN ({}) \
         AND r.created_at_ms = (SELECT MAX(r2.created_at_ms) FROM rounds r2 WHERE r2.session_id = r.session_id)",
        placeholders(1, sessions)
    )
}

pub const SELECT_UNFINISHED_ROUNDS: &str =
    "SELECT * FROM rounds WHERE session_id = $1 AND status NOT IN ('resolved', 'failed')";

/// New rounds, `rows` of them, in one statement; a round whose request id is taken is skipped, and the ids of
/// those inserted come back.
pub fn insert_new_rounds(rows: usize) -> String {
    let columns = written_by(ROUND_COLUMNS, true);
    format!(
        "INSERT INTO rounds ({}) VALUES {} ON CONFLICT (request_id) DO NOTHING RETURNING round_id",
        columns.join(", "),
        value_rows(rows, columns.len())
    )
}

/// On PostgreSQL, `INSERT INTO table (…) SELECT … FROM json_populate_recordset(NULL::table, $1::json)`: the rows
/// of a batch come as one JSON array of objects keyed by column, typed by the table's own row type. The text is
/// the same for any number of rows, so it stays prepared on its connection; as rows of parameters each batch
/// size was a text of its own, prepared for its one use (`Statement::kept_prepared`), and PostgreSQL parsed and
/// planned up to a thousand placeholders for every batch of creates. `--postgres --only creates` on 2026-12-07:
/// 430-448 µs of PostgreSQL's CPU per create as rows of parameters, 345-367 µs with those batches kept prepared,
/// 323-332 µs with the rounds, sessions and audit entries of a batch as records.
fn insert_from_records(table: &str, columns: &[&str]) -> String {
    let columns = columns.join(", ");
    format!(
        "INSERT INTO {table} ({columns}) SELECT {columns} \
         FROM json_populate_recordset(NULL::{table}, $1::json)"
    )
}

/// [`insert_new_rounds`] on PostgreSQL, its rows from one JSON parameter ([`insert_from_records`]).
pub static INSERT_NEW_ROUNDS_FROM_RECORDS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} ON CONFLICT (request_id) DO NOTHING RETURNING round_id",
        insert_from_records("rounds", &written_by(ROUND_COLUMNS, true))
    )
});

/// Compare-and-set: the write lands only if status, lease owner, lease token and version are unchanged.
/// Binds the [`Written::Always`] columns, then the round id and the old version, status, owner and token.
pub static UPDATE_ROUND: LazyLock<String> = LazyLock::new(|| {
    let written = written_by(ROUND_COLUMNS, false);
    let set: Vec<String> = written
        .iter()
        .enumerate()
        .map(|(i, column)| format!("{column} = ${}", i + 1))
        .collect();
    let next = written.len() + 1;
    format!(
        "UPDATE rounds SET {} WHERE round_id = ${} AND version = ${} AND status = ${} \
         AND COALESCE(lease_owner, '') = ${} AND COALESCE(lease_token, '') = ${}",
        set.join(", "),
        next,
        next + 1,
        next + 2,
        next + 3,
        next + 4
    )
});

/// The set-based form of `Round::expire_if_due` (pending and past the deadline → failed / expired): `$1` now,
/// `$2` the message.
const EXPIRE_SET: &str = "status = 'failed', failure_code = 'expired', failure_message = $2, failed_at_ms = $1, \
     updated_at_ms = $1, lease_owner = NULL, lease_token = NULL, lease_expires_at_ms = NULL, version = version + 1";

/// Every column of a round as one JSON array (`function` builds it: `json_array` or `json_build_array`), in
/// [`ROUND_COLUMNS`] order, without the question and answer documents: nothing that announces an expiry reads
/// them, and a sweep may end 100k rounds at once. Handing each round over as a row of its own cost more than
/// the UPDATE itself; one JSON value holding them all is one hand-over.
fn ended_round_json(function: &str) -> String {
    round_json(function, "", |column| match column {
        "requests" => Some("'{}'"),
        "request_state" | "responses" => Some("NULL"),
        _ => None,
    })
}

/// A round as one JSON array in [`ROUND_COLUMNS`] order, built by `function` (the dialect's array builder),
/// its columns read through `prefix` (a table alias and a dot, or nothing); `instead` gives a column's
/// stand-in value where the reader does not need it.
fn round_json(
    function: &str,
    prefix: &str,
    instead: impl Fn(&str) -> Option<&'static str>,
) -> String {
    let values: Vec<String> = ROUND_COLUMNS
        .iter()
        .map(|(column, _)| {
            instead(column).map_or_else(|| format!("{prefix}{column}"), str::to_owned)
        })
        .collect();
    format!("{function}({})", values.join(", "))
}

/// The rounds [`ANY_DUE`] looks for, as of `$1` (one text for every query that asks).
macro_rules! due_at_1 {
    () => {
        "deadline_ms <= $1 AND (status = 'pending' \
         OR (status = 'response_validated' AND COALESCE(lease_expires_at_ms, 0) <= $1))"
    };
}

/// The attention queue's order, which the `sessions_queue` index (migration 0008) matches exactly.
macro_rules! queue_order {
    () => {
        "ORDER BY CASE WHEN open_rounds > 0 THEN 0 WHEN lost_reason IS NOT NULL THEN 1 ELSE 2 END, \
         oldest_open_ms, updated_at_ms DESC, id"
    };
}

/// The attention queue in one statement: [`SELECT_QUEUE`]'s sessions (`$2` of them), each with its oldest
/// pending question as a JSON array (the round in [`ROUND_COLUMNS`] order, whom an admin handed it to, and how
/// many escalation steps it climbed), the session's settings as a JSON array (channel, responders, server
/// responders, ladder, "nobody available" minutes), and whether [`ANY_DUE`] finds anything at `$1` (then the
/// reader expires and reads again, so no question past its deadline is shown open). Who answers each question
/// comes with it, so a live reading of the queue is this one statement, not one more per team table.
///
/// The oldest round is picked first and only then looked up in the team tables: looked up inside the pick, the
/// lookups ran for every waiting question of the session (the 100k-question queue read took 2–4 ms longer).
/// `outer` makes that array from the picked round's JSON, its assignee and its steps: SQLite's JSON loses its
/// JSON-ness in the subquery, and parsing it again costs more than joining the text.
fn queue_with_oldest(
    function: &str,
    as_text: &str,
    outer: fn(&str, &str, &str) -> String,
) -> String {
    format!(
        concat!(
            "SELECT sessions.*, \
             (SELECT {outer} \
             FROM (SELECT {round} AS round, r.round_id AS round_id FROM rounds r \
             WHERE r.session_id = sessions.id AND r.status = 'pending' \
             ORDER BY r.created_at_ms, r.round_id LIMIT 1) o){as_text} AS oldest_round, \
             (SELECT {function}(ss.slack_channel, ss.responders, ss.server_responders, ss.escalation, \
             ss.nobody_available_after_minutes) FROM session_settings ss \
             WHERE ss.session_id = sessions.id){as_text} AS team_settings, \
             (SELECT state FROM session_runs sr WHERE sr.session_id = sessions.id) AS run_state, \
             EXISTS (SELECT 1 FROM rounds WHERE ",
            due_at_1!(),
            ") AS any_due FROM sessions ",
            queue_order!(),
            " LIMIT $2"
        ),
        function = function,
        outer = outer(
            "o.round",
            "(SELECT a.assignee FROM round_assignments a WHERE a.round_id = o.round_id)",
            "(SELECT COUNT(*) FROM escalations e WHERE e.round_id = o.round_id)",
        ),
        round = round_json(function, "r.", |_| None),
        as_text = as_text,
    )
}

pub static SELECT_ATTENTION_QUEUE_SQLITE: LazyLock<String> = LazyLock::new(|| {
    queue_with_oldest("json_array", "", |round, assignee, steps| {
        format!("'[' || {round} || ',' || json_quote({assignee}) || ',' || {steps} || ']'")
    })
});
pub static SELECT_ATTENTION_QUEUE_POSTGRES: LazyLock<String> = LazyLock::new(|| {
    queue_with_oldest("json_build_array", "::text", |round, assignee, steps| {
        format!("json_build_array({round}, {assignee}, {steps})")
    })
});

/// SQLite, inside the write transaction that then runs [`EXPIRE_DUE`]: every due round as it is before expiry,
/// in one JSON array (`$1` now). The transaction holds the write lock, so the UPDATE ends exactly these.
pub static SELECT_DUE_AS_JSON: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT json_group_array({}) FROM rounds WHERE status = 'pending' AND deadline_ms <= $1",
        ended_round_json("json_array")
    )
});

/// [`SELECT_DUE_AS_JSON`] within one session (`$2`).
pub static SELECT_DUE_IN_SESSION_AS_JSON: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT json_group_array({}) FROM rounds WHERE status = 'pending' AND deadline_ms <= $1 \
         AND session_id = $2",
        ended_round_json("json_array")
    )
});

/// Expires every due round.
pub static EXPIRE_DUE: LazyLock<String> = LazyLock::new(|| {
    format!("UPDATE rounds SET {EXPIRE_SET} WHERE status = 'pending' AND deadline_ms <= $1")
});

/// [`EXPIRE_DUE`] within one session (`$3`).
pub static EXPIRE_DUE_IN_SESSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE rounds SET {EXPIRE_SET} WHERE status = 'pending' AND deadline_ms <= $1 AND session_id = $3"
    )
});

/// PostgreSQL: expires every due round and returns them, as they are after expiry, in one JSON array.
pub static EXPIRE_DUE_AS_JSON: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH ended AS ({} RETURNING *) SELECT COALESCE(json_agg({}), '[]'::json)::text FROM ended",
        EXPIRE_DUE.as_str(),
        ended_round_json("json_build_array")
    )
});

/// [`EXPIRE_DUE_AS_JSON`] within one session (`$3`).
pub static EXPIRE_DUE_IN_SESSION_AS_JSON: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH ended AS ({} RETURNING *) SELECT COALESCE(json_agg({}), '[]'::json)::text FROM ended",
        EXPIRE_DUE_IN_SESSION.as_str(),
        ended_round_json("json_build_array")
    )
});

pub const COUNT_OPEN_ROUNDS: &str =
    "SELECT COUNT(*) FROM rounds WHERE status = 'pending' AND deadline_ms > $1";

/// Is any question due to end: unanswered past its deadline, or answered but never picked up by then?
/// A worker holding a live lease may still deliver an answer after the deadline (`Round::is_undeliverable`).
pub const ANY_DUE: &str = concat!(
    "SELECT round_id FROM rounds WHERE ",
    due_at_1!(),
    " LIMIT 1"
);

pub const ANY_DUE_IN_SESSION: &str = concat!(
    "SELECT round_id FROM rounds WHERE session_id = $2 AND ",
    due_at_1!(),
    " LIMIT 1"
);

/// Answers still not picked up when their deadline passed, with no worker left to deliver them.
pub const SELECT_ANSWERED_PAST_DEADLINE: &str = "SELECT * FROM rounds WHERE status = 'response_validated' \
     AND deadline_ms <= $1 AND COALESCE(lease_expires_at_ms, 0) <= $1 LIMIT 500";

pub const SELECT_ANSWERED_PAST_DEADLINE_IN_SESSION: &str = "SELECT * FROM rounds \
     WHERE status = 'response_validated' AND deadline_ms <= $1 AND COALESCE(lease_expires_at_ms, 0) <= $1 \
     AND session_id = $2 LIMIT 500";

/// The session's questions whose asker polls with the session's token and that are not yet answered for good.
pub const SELECT_TOKEN_ROUNDS_OPEN: &str = "SELECT * FROM rounds WHERE session_id = $1 \
     AND asked_through = 'session_token' AND status IN ('pending', 'response_validated')";

/// The askers' latest polls of `rounds` rounds at once (round id, polled at, interval), each moving only
/// forward: liveness only, so neither the version nor `updated_at` moves.
pub fn record_asker_polls(rounds: usize) -> String {
    format!(
        "WITH polled (round_id, polled_at_ms, interval_ms) AS (VALUES {}) \
         UPDATE rounds SET asker_polled_at_ms = polled.polled_at_ms, asker_poll_interval_ms = polled.interval_ms \
         FROM polled WHERE rounds.round_id = polled.round_id \
         AND (rounds.asker_polled_at_ms IS NULL OR rounds.asker_polled_at_ms < polled.polled_at_ms)",
        value_rows(rounds, 3)
    )
}

pub const SELECT_PRODUCER_TOKEN: &str = "SELECT producer_token_hash FROM sessions WHERE id = $1";

/// The set-based form of `Round::fail_recovery` for every round whose worker's lease ran out mid-delivery.
pub const RECOVER_LEASES: &str = "UPDATE rounds SET status = 'failed', \
     failure_code = 'recovery_unavailable', failure_message = $2, failed_at_ms = $1, updated_at_ms = $1, \
     lease_owner = NULL, lease_token = NULL, lease_expires_at_ms = NULL, version = version + 1 \
     WHERE status IN ('delivery_started', 'delivered') AND lease_expires_at_ms <= $1 RETURNING *";

pub const SET_PRODUCER_TOKEN: &str =
    "UPDATE sessions SET producer_token_hash = $2, updated_at_ms = $3 WHERE id = $1";

pub const SELECT_SESSION_BY_TOKEN: &str = "SELECT * FROM sessions WHERE producer_token_hash = $1";

pub const INSERT_API_KEY: &str = "INSERT INTO api_keys (id, name, role, key_hash, created_at_ms) \
     VALUES ($1, $2, $3, $4, $5)";

pub const SELECT_API_KEY_BY_HASH: &str =
    "SELECT id, name, role FROM api_keys WHERE key_hash = $1 AND revoked_at_ms IS NULL";

pub const SELECT_SESSION: &str = "SELECT * FROM sessions WHERE id = $1";

pub static INSERT_SESSION_IF_NEW: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} ON CONFLICT (id) DO NOTHING",
        insert("sessions", SESSION_COLUMNS)
    )
});

/// Writes whole sessions on PostgreSQL, new ones inserted and known ones updated, from one JSON parameter
/// ([`insert_from_records`]).
pub static UPSERT_SESSIONS_FROM_RECORDS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} ON CONFLICT (id) DO UPDATE SET {}",
        insert_from_records("sessions", &written_by(SESSION_COLUMNS, true)),
        session_updates()
    )
});

/// What an upsert of a known session changes: every column a write carries but its id.
fn session_updates() -> String {
    written_by(SESSION_COLUMNS, false)
        .iter()
        .map(|column| format!("{column} = excluded.{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The same upsert on SQLite from one JSON array of rows (`[[id, title, …], …]`, the columns an insert writes,
/// in order): SQLite binds each of a multi-row VALUES' parameters separately, and a sweep that
/// ends 100k questions writes as many sessions (the audit's pending write found the same, see
/// [`INSERT_AUDIT_PENDING_FROM_JSON`]). `WHERE true` keeps SQLite from reading `ON CONFLICT` as a join's.
pub static UPSERT_SESSIONS_FROM_JSON: LazyLock<String> = LazyLock::new(|| {
    let columns = written_by(SESSION_COLUMNS, true);
    let values: Vec<String> = (0..columns.len())
        .map(|index| format!("value ->> {index}"))
        .collect();
    format!(
        "INSERT INTO sessions ({}) SELECT {} FROM json_each($1) WHERE true ON CONFLICT (id) DO UPDATE SET {}",
        columns.join(", "),
        values.join(", "),
        session_updates()
    )
});

/// Sessions still marked blocked although nothing of theirs is waiting any more.
pub const SELECT_STRANDED: &str = "SELECT * FROM sessions s WHERE s.blocked_on_elicitation = $2 \
     AND NOT EXISTS (SELECT 1 FROM rounds r WHERE r.session_id = s.id AND r.status = 'pending' \
     AND r.deadline_ms > $1)";

/// The attention queue, read off the `sessions_queue` index: the open-question count and the oldest one's time
/// are session columns the database updates when a round enters or leaves `pending` (migration 0008), so the
/// first page costs the same at 100 sessions as at 10,000.
pub const SELECT_QUEUE: &str = concat!("SELECT * FROM sessions ", queue_order!(), " LIMIT $1");

/// Rows per multi-row statement: well under both backends' parameter limits.
pub const BATCH: usize = 500;

/// Values per outbox row in [`insert_outbox`].
pub const OUTBOX_COLUMNS: usize = 10;

/// Queues `rows` webhook deliveries; a delivery already queued (same dedupe key) is kept as it is.
pub fn insert_outbox(rows: usize) -> String {
    format!(
        "INSERT INTO webhook_outbox (id, endpoint, format, event, dedupe_key, payload, status, attempts, \
         next_attempt_at_ms, created_at_ms) VALUES {} ON CONFLICT (dedupe_key) DO NOTHING",
        value_rows(rows, OUTBOX_COLUMNS)
    )
}

/// Claims due deliveries for one attempt; the outer conditions are re-checked on a row another instance just
/// claimed, so each delivery is attempted by one instance at a time.
pub const OUTBOX_CLAIM: &str = "UPDATE webhook_outbox SET locked_until_ms = $2, attempts = attempts + 1 \
     WHERE status = 'pending' AND next_attempt_at_ms <= $1 AND COALESCE(locked_until_ms, 0) <= $1 \
     AND id IN (SELECT id FROM webhook_outbox WHERE status = 'pending' AND next_attempt_at_ms <= $1 \
     AND COALESCE(locked_until_ms, 0) <= $1 ORDER BY created_at_ms LIMIT $3) RETURNING *";

pub const OUTBOX_DELIVERED: &str = "UPDATE webhook_outbox SET status = 'delivered', delivered_at_ms = $2, \
     last_status = $3, last_error = NULL, locked_until_ms = NULL WHERE id = $1";

pub const OUTBOX_RETRY: &str = "UPDATE webhook_outbox SET status = $2, next_attempt_at_ms = $3, \
     last_status = $4, last_error = $5, locked_until_ms = NULL WHERE id = $1";

pub const OUTBOX_LIST: &str =
    "SELECT * FROM webhook_outbox ORDER BY created_at_ms DESC, id DESC LIMIT $1";

pub const PURGE_SLACK_MESSAGES: &str = "DELETE FROM slack_messages WHERE created_at_ms < $1";

/// Only counted rounds go: the response-time counts outlive them.
pub const PURGE_TERMINAL_ROUNDS: &str = "DELETE FROM rounds WHERE status IN ('resolved', 'failed') \
     AND counted = 1 AND updated_at_ms < $1";

pub const GATE_INIT: &str = "INSERT INTO gate_state (id, healthy, since_ms, last_checked_ms) \
     VALUES (1, $1, $2, NULL) ON CONFLICT (id) DO NOTHING";

pub const GATE_READ: &str =
    "SELECT healthy, since_ms, last_checked_ms FROM gate_state WHERE id = 1";

pub const GATE_WRITE: &str =
    "UPDATE gate_state SET healthy = $1, since_ms = $2, last_checked_ms = $3 WHERE id = 1";

pub const INSERT_USER: &str = "INSERT INTO users (id, username, role, password_hash, created_at_ms) \
     VALUES ($1, $2, $3, $4, $5)";

/// A person and their password hash; empty for someone who signs in through the identity provider, whose
/// rights come from the provider and must not outlive it through a password.
pub const SELECT_USER_BY_NAME: &str = "SELECT id, username, role, CASE WHEN EXISTS \
     (SELECT 1 FROM provider_identities p WHERE p.user_id = users.id) THEN '' ELSE password_hash END \
     FROM users WHERE username = $1";

pub const SELECT_USER_BY_ID: &str = "SELECT id, username, role FROM users WHERE id = $1";

/// A person, their zone, and one row per group they are in (at most the group limit).
pub const SELECT_SIGNED_IN: &str = "SELECT u.id, u.username, u.role, u.time_zone, m.group_name \
     FROM users u LEFT JOIN group_members m ON m.user_id = u.id WHERE u.id = $1 \
     ORDER BY m.group_name LIMIT 1000";

pub const COUNT_USERS: &str = "SELECT COUNT(*) FROM users";

pub const INSERT_SIGN_IN_LINK: &str =
    "INSERT INTO sign_in_links (token_hash, created_at_ms, expires_at_ms) VALUES ($1, $2, $3)";

/// Uses the link at most once: only an unused, unexpired link matches, and only while nobody can sign in.
pub const USE_SIGN_IN_LINK: &str = "UPDATE sign_in_links SET used_at_ms = $2 \
     WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2 \
     AND NOT EXISTS (SELECT 1 FROM users)";

/// A session written back: only while it exists, so one signed out meanwhile (from the profile, or by
/// `anteroom user sign-out`) is not brought back by a request that loaded it before.
pub const UPDATE_WEB_SESSION: &str = "UPDATE web_sessions SET data = $2, expires_at_ms = $3, user_id = $4, \
     handle = $5, device = $6, seen_at_ms = $7 WHERE id = $1";

pub const INSERT_WEB_SESSION_IF_NEW: &str = "INSERT INTO web_sessions (id, data, expires_at_ms, user_id, \
     handle, device, seen_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING";

pub const SELECT_WEB_SESSION: &str =
    "SELECT data, expires_at_ms FROM web_sessions WHERE id = $1 AND expires_at_ms > $2";

pub const DELETE_WEB_SESSION: &str = "DELETE FROM web_sessions WHERE id = $1";

pub const PURGE_WEB_SESSIONS: &str = "DELETE FROM web_sessions WHERE expires_at_ms <= $1";

/// A standing answer's columns, as the INSERT writes them and every read returns them.
const STANDING_ANSWER_FIELDS: &str = "id, created_by, created_at_ms, session_id, server, tool, message, \
     requested_schema, action, content, expires_at_ms, use_limit, uses, revoked_at_ms, paused_at_ms, \
     match_prefix";

pub static INSERT_STANDING_ANSWER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO standing_answers (created_by, created_at_ms, session_id, server, tool, message, \
         requested_schema, action, content, expires_at_ms, use_limit, match_prefix) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING {STANDING_ANSWER_FIELDS}"
    )
});

/// In force for session `$1` at `$2`: its own and those for every session, newest first.
pub static SELECT_STANDING_ANSWERS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {STANDING_ANSWER_FIELDS} FROM standing_answers \
         WHERE (session_id = $1 OR session_id IS NULL) AND revoked_at_ms IS NULL AND expires_at_ms > $2 \
         AND (use_limit IS NULL OR uses < use_limit) ORDER BY id DESC LIMIT 200"
    )
});

/// Every standing answer not yet ended (in force or paused), anywhere, newest first.
pub static SELECT_LIVE_STANDING_ANSWERS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {STANDING_ANSWER_FIELDS} FROM standing_answers \
         WHERE revoked_at_ms IS NULL AND expires_at_ms > $1 AND (use_limit IS NULL OR uses < use_limit) \
         ORDER BY id DESC LIMIT $2"
    )
});

/// Pauses (`$2` a time) or resumes (`$2` NULL) standing answer `$1`, unless it has ended.
pub static PAUSE_STANDING_ANSWER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE standing_answers SET paused_at_ms = $2 WHERE id = $1 AND revoked_at_ms IS NULL \
         RETURNING {STANDING_ANSWER_FIELDS}"
    )
});

/// Ends standing answer `$1` at `$2` unless it has ended already.
pub static REVOKE_STANDING_ANSWER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE standing_answers SET revoked_at_ms = COALESCE(revoked_at_ms, $2) WHERE id = $1 \
         RETURNING {STANDING_ANSWER_FIELDS}"
    )
});

/// Where the standing answers in force at `$1` hold: their sessions, servers and tools, at most `$2` of them.
pub const STANDING_PLACES: &str = "SELECT session_id, server, tool FROM standing_answers \
     WHERE revoked_at_ms IS NULL AND paused_at_ms IS NULL AND expires_at_ms > $1 LIMIT $2";

/// Whether any standing answer in force could answer the question `$2`–`$5` in session `$1` at `$6`: a read,
/// so a question no rule answers costs no write.
pub const ANY_STANDING_ANSWER: &str = "SELECT id FROM standing_answers \
     WHERE (session_id = $1 OR session_id IS NULL) AND server = $2 AND tool = $3 \
     AND (message = $4 OR (match_prefix = 1 AND substr($4, 1, length(message)) = message)) \
     AND requested_schema = $5 AND revoked_at_ms IS NULL AND paused_at_ms IS NULL AND expires_at_ms > $6 \
     LIMIT 1";

/// One use of the newest standing answer in force for session `$1` and the question `$2`–`$5` at `$6`. The
/// outer condition is checked again on the row as it is updated, so two questions at once cannot both take its
/// last use.
pub static USE_STANDING_ANSWER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE standing_answers SET uses = uses + 1 \
         WHERE id = (SELECT id FROM standing_answers \
             WHERE (session_id = $1 OR session_id IS NULL) AND server = $2 AND tool = $3 \
             AND (message = $4 OR (match_prefix = 1 AND substr($4, 1, length(message)) = message)) \
             AND requested_schema = $5 AND revoked_at_ms IS NULL AND paused_at_ms IS NULL \
             AND expires_at_ms > $6 AND (use_limit IS NULL OR uses < use_limit) ORDER BY id DESC LIMIT 1) \
         AND revoked_at_ms IS NULL AND paused_at_ms IS NULL AND (use_limit IS NULL OR uses < use_limit) \
         RETURNING {STANDING_ANSWER_FIELDS}"
    )
});

pub const INSERT_GROUP: &str = "INSERT INTO responder_groups (name, created_at_ms) VALUES ($1, $2)";

pub const COUNT_GROUPS: &str = "SELECT COUNT(*) FROM responder_groups";

pub const DELETE_GROUP: &str = "DELETE FROM responder_groups WHERE name = $1";

pub const SELECT_GROUP: &str = "SELECT name FROM responder_groups WHERE name = $1";

pub const COUNT_GROUP_MEMBERS: &str = "SELECT COUNT(*) FROM group_members WHERE group_name = $1";

pub const INSERT_GROUP_MEMBER: &str = "INSERT INTO group_members (group_name, user_id) \
     SELECT $1, id FROM users WHERE username = $2 ON CONFLICT (group_name, user_id) DO NOTHING";

pub const DELETE_GROUP_MEMBER: &str = "DELETE FROM group_members WHERE group_name = $1 \
     AND user_id IN (SELECT id FROM users WHERE username = $2)";

/// Every group, with one row per member (a group without members has a NULL username).
pub const SELECT_GROUPS: &str = "SELECT g.name, u.username FROM responder_groups g \
     LEFT JOIN group_members m ON m.group_name = g.name LEFT JOIN users u ON u.id = m.user_id \
     ORDER BY g.name, u.username";

pub const SELECT_USER_GROUPS: &str =
    "SELECT group_name FROM group_members WHERE user_id = $1 ORDER BY group_name";

pub const UPSERT_ROUND_ASSIGNMENT: &str = "INSERT INTO round_assignments (round_id, assignee, \
     assigned_by, assigned_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (round_id) DO UPDATE SET \
     assignee = $2, assigned_by = $3, assigned_at_ms = $4";

pub const DELETE_ROUND_ASSIGNMENT: &str = "DELETE FROM round_assignments WHERE round_id = $1";

/// Who answers round `$1` of session `$2`, in one read: its assignee, its session's settings (NULLs, with a NULL
/// session id, for a session that has none) and how many steps of its ladder it climbed.
pub const SELECT_ANSWER_SCOPE: &str = "SELECT (SELECT assignee FROM round_assignments WHERE round_id = $1), \
     s.session_id, s.slack_channel, s.responders, s.server_responders, s.escalation, \
     s.nobody_available_after_minutes, (SELECT COUNT(*) FROM escalations WHERE round_id = $1) \
     FROM (SELECT 1 AS one) o LEFT JOIN session_settings s ON s.session_id = $2";

/// The assignees of pending questions (what the queue needs to say who answers each).
/// Driven by the (small) assignments table: a join let SQLite walk every pending round instead, which cost
/// the queue 10 ms at 10k open questions.
pub const SELECT_OPEN_ASSIGNMENTS: &str = "SELECT a.round_id, a.assignee FROM round_assignments a \
     WHERE EXISTS (SELECT 1 FROM rounds r WHERE r.round_id = a.round_id AND r.status = 'pending') LIMIT $1";

/// Every session's responder lists that names someone (few: sessions an admin configured).
pub const SELECT_TEAM_SETTINGS: &str = "SELECT session_id, slack_channel, responders, server_responders, \
     escalation, nobody_available_after_minutes FROM session_settings WHERE responders IS NOT NULL \
     OR server_responders IS NOT NULL OR escalation IS NOT NULL OR nobody_available_after_minutes IS NOT NULL \
     LIMIT $1";

/// The sessions with an escalation ladder or a "nobody available" end (what the escalation job visits).
pub const SELECT_LADDER_SETTINGS: &str = "SELECT session_id, slack_channel, responders, server_responders, \
     escalation, nobody_available_after_minutes FROM session_settings WHERE escalation IS NOT NULL \
     OR nobody_available_after_minutes IS NOT NULL LIMIT $1";

/// How many steps each waiting question has climbed.
/// Driven by the (small) escalations table, like [`SELECT_OPEN_ASSIGNMENTS`].
pub const SELECT_OPEN_ESCALATIONS: &str = "SELECT e.round_id, COUNT(*) FROM escalations e \
     WHERE EXISTS (SELECT 1 FROM rounds r WHERE r.round_id = e.round_id AND r.status = 'pending') \
     GROUP BY e.round_id LIMIT $1";

pub const COUNT_ROUND_ESCALATIONS: &str = "SELECT COUNT(*) FROM escalations WHERE round_id = $1";

pub const INSERT_ESCALATION: &str = "INSERT INTO escalations (round_id, step, at_ms) VALUES ($1, $2, $3) \
     ON CONFLICT (round_id, step) DO NOTHING";

/// Pending entries on SQLite, from one JSON array (`$1`) of `[id, at_ms, actor, action, subject, detail]` arrays:
/// one parameter a statement instead of six an entry (an expiry sweep of 100k questions spent 2.4 s of its
/// 4.8 s binding 3,000 parameters a statement; this takes 0.64 s).
pub const INSERT_AUDIT_PENDING_FROM_JSON: &str = "INSERT INTO audit_pending (id, at_ms, actor, action, subject, detail) \
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each($1)";

/// Rows one statement that reads them from a JSON parameter ([`INSERT_AUDIT_PENDING_FROM_JSON`],
/// [`UPSERT_SESSIONS_FROM_JSON`]) writes at most: its parameter stays a few megabytes.
pub const JSON_ROWS_BATCH: usize = 5_000;

pub const AUDIT_PENDING_COLUMNS: usize = 6;

/// A few pending entries on PostgreSQL, from one JSON parameter ([`insert_from_records`]).
pub static INSERT_AUDIT_PENDING_FROM_RECORDS: LazyLock<String> =
    LazyLock::new(|| insert_from_records("audit_pending", &AUDIT_PENDING_COLUMN_NAMES));

/// The columns of an `audit_pending` row, in the order its values are bound.
pub const AUDIT_PENDING_COLUMN_NAMES: [&str; AUDIT_PENDING_COLUMNS] =
    ["id", "at_ms", "actor", "action", "subject", "detail"];

/// Many pending entries on PostgreSQL, as rows of parameters (`engine/audit.rs` says when).
pub fn insert_audit_pending(rows: usize) -> String {
    format!(
        "INSERT INTO audit_pending (id, at_ms, actor, action, subject, detail) VALUES {}",
        value_rows(rows, AUDIT_PENDING_COLUMNS)
    )
}

pub const AUDIT_LOG_COLUMNS: usize = 8;

pub fn insert_audit_log(rows: usize) -> String {
    format!(
        "INSERT INTO audit_log (seq, at_ms, actor, action, subject, detail, prev_hash, hash) VALUES {}",
        value_rows(rows, AUDIT_LOG_COLUMNS)
    )
}

/// Pending entries in the order they are sealed: by time, then by their time-ordered ids.
pub const SELECT_AUDIT_PENDING: &str = "SELECT id, at_ms, actor, action, subject, detail FROM audit_pending \
     ORDER BY at_ms, id LIMIT $1";

pub fn delete_audit_pending(rows: usize) -> String {
    let ids: Vec<String> = (1..=rows).map(|i| format!("${i}")).collect();
    format!("DELETE FROM audit_pending WHERE id IN ({})", ids.join(", "))
}

pub const SELECT_AUDIT_HEAD: &str = "SELECT seq, hash FROM audit_head WHERE id = 1";

pub const UPDATE_AUDIT_HEAD: &str = "UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1";

pub const COUNT_AUDIT_PENDING: &str = "SELECT COUNT(*) FROM audit_pending";

pub const SELECT_AUDIT_LOG: &str = "SELECT seq, at_ms, actor, action, subject, detail, prev_hash, hash \
     FROM audit_log WHERE seq > $1 AND at_ms >= $2 ORDER BY seq LIMIT $3";
