//! The SQL of response-time counts (docs/teams.md#response-times). A round's `counted` is 0 until its outcome
//! is in `response_time_counts`, then 1; on SQLite 2 only inside the transaction that counts it, so no other
//! reader sees it (PostgreSQL goes from 0 to 1 in one statement). Every statement names the partial index's
//! condition `counted IN (0, 2)` verbatim, which is how SQLite knows it may use the index.

use std::sync::LazyLock;

/// Marks up to `$1` ended rounds not yet counted as being counted (`delivered` is ended for the counts: a
/// pulsemcp question whose answer a poll picked up stays there, and nothing after changes how it is counted).
/// The outer `counted = 0` makes a second instance that raced for the same rows skip them once the first
/// commits (PostgreSQL re-checks an updated row's condition), so no round is counted twice.
pub static MARK_ENDED_ROUNDS: LazyLock<String> = LazyLock::new(|| mark_ended_rounds_as(2));

/// [`MARK_ENDED_ROUNDS`] with `counted` set to `value`.
fn mark_ended_rounds_as(value: u8) -> String {
    format!(
        "UPDATE rounds SET counted = {value} WHERE counted = 0 AND round_id IN \
         (SELECT round_id FROM rounds WHERE counted IN (0, 2) AND counted = 0 \
         AND status IN ('delivered', 'resolved', 'failed') LIMIT $1)"
    )
}

/// The marked rounds' counts added to the kept ones.
pub fn add_marked_counts() -> String {
    add_counts_of("rounds", "counted IN (0, 2) AND counted = 2")
}

/// The counts of the rounds `selection` picks from `source` added to the kept ones.
fn add_counts_of(source: &str, selection: &str) -> String {
    format!(
        "INSERT INTO response_time_counts (day, dimension, subject, ending, bucket, questions) {} \
         ON CONFLICT (day, dimension, subject, ending, bucket) \
         DO UPDATE SET questions = response_time_counts.questions + excluded.questions",
        counts_of(source, selection)
    )
}

/// PostgreSQL: [`MARK_ENDED_ROUNDS`], the marked rounds' counts added and the rounds marked counted, in one
/// statement that updates each round once (`counted` 0 → 1) where the three update it twice: an update of a
/// round writes a new entry in each of its indexes, which a backlog's tally pays for (the bench's 1M rounds:
/// 269 s in three statements a batch). Returns how many rounds it counted.
pub static COUNT_ENDED_ROUNDS_AT_ONCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marked AS ({} RETURNING created_at_ms, session_id, server, responded_by, failure_code, \
         responded_at_ms, status), added AS ({}) SELECT COUNT(*) FROM marked",
        mark_ended_rounds_as(1),
        add_counts_of("marked", "TRUE")
    )
});

pub const MARKED_ROUNDS_COUNTED: &str =
    "UPDATE rounds SET counted = 1 WHERE counted IN (0, 2) AND counted = 2";

/// The counts of the rounds asked since `$1` that are not counted yet: the open ones and those ended since
/// the last tally.
pub fn uncounted_counts() -> String {
    counts_of(
        "rounds",
        "counted IN (0, 2) AND counted = 0 AND created_at_ms >= $1",
    )
}

/// The counts (day, dimension, subject, ending, bucket, questions) of the rounds `selection` picks from
/// `source` (the table, or rounds a statement returned): each round counted once per dimension. How a round
/// ended and its bucket are the SQL of `domain::stats::Ending::of` and `bucket_of`, which the store's property
/// test holds equal to them.
fn counts_of(source: &str, selection: &str) -> String {
    let bounds = crate::domain::stats::BUCKET_BOUNDS_MS;
    let buckets: Vec<String> = bounds
        .iter()
        .take(bounds.len() - 1)
        .enumerate()
        .map(|(bucket, bound)| {
            format!("WHEN responded_at_ms - created_at_ms < {bound} THEN {bucket}")
        })
        .collect();
    format!(
        "SELECT CAST(created_at_ms / 86400000 AS BIGINT), dims.dimension, \
         CASE dims.dimension WHEN 'd' THEN '' WHEN 's' THEN session_id WHEN 'v' THEN COALESCE(server, '') \
         ELSE COALESCE(responded_by, '') END, \
         CASE WHEN failure_code = 'undelivered' THEN 'u' WHEN responded_at_ms IS NOT NULL THEN 'a' \
         WHEN failure_code IN ('expired', 'nobody_available') THEN 'e' WHEN status = 'pending' THEN 'p' \
         ELSE 'o' END, \
         CAST(CASE WHEN responded_at_ms IS NULL THEN 0 {} ELSE {} END AS BIGINT), CAST(COUNT(*) AS BIGINT) \
         FROM {source}, (SELECT 'd' AS dimension UNION ALL SELECT 's' UNION ALL SELECT 'v' UNION ALL SELECT 'p') \
         AS dims WHERE {selection} GROUP BY 1, 2, 3, 4, 5",
        buckets.join(" "),
        bounds.len() - 1
    )
}

/// The kept counts since day `$1`, summed over the period for every dimension but the day itself. Both halves
/// read `response_time_counts_by_subject` in its order, so the sums stream out of the index; grouping the whole
/// period at once sorted every count of it (5× slower over the bench's 673k counts).
pub const SELECT_RESPONSE_TIME_COUNTS: &str = "SELECT CAST(0 AS BIGINT), dimension, subject, ending, \
     CAST(bucket AS BIGINT), CAST(SUM(questions) AS BIGINT) FROM response_time_counts \
     WHERE dimension IN ('s', 'v', 'p') AND day >= $1 GROUP BY dimension, subject, ending, bucket \
     UNION ALL SELECT CAST(day AS BIGINT), dimension, subject, ending, CAST(bucket AS BIGINT), \
     CAST(SUM(questions) AS BIGINT) FROM response_time_counts \
     WHERE dimension = 'd' AND day >= $1 GROUP BY day, dimension, subject, ending, bucket";

/// PostgreSQL's planner statistics of the rounds, refreshed after a tally's backlog (`engine::stats`).
pub const ANALYZE_ROUNDS: &str = "ANALYZE rounds";

/// The kept counts' dead rows cleared and their pages marked all-visible, so the page's read of them is an
/// index-only scan again; and their statistics refreshed. Outside any transaction, as VACUUM must be.
pub const VACUUM_RESPONSE_TIME_COUNTS: &str = "VACUUM (ANALYZE) response_time_counts";

/// Kept counts older than the page's longest period (`$1` is its first day).
pub const PURGE_RESPONSE_TIME_COUNTS: &str = "DELETE FROM response_time_counts WHERE day < $1";
