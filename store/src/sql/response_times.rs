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

/// The marked rounds' counts added to the kept ones: per day, then to each period's sums.
pub static ADD_MARKED_COUNTS: LazyLock<[String; 2]> = LazyLock::new(|| {
    let marked = "counted IN (0, 2) AND counted = 2";
    [
        add_counts_of("rounds", marked),
        add_period_counts_of("rounds", marked),
    ]
});

/// The counts of the rounds `selection` picks from `source` added to the kept ones.
fn add_counts_of(source: &str, selection: &str) -> String {
    format!(
        "INSERT INTO response_time_counts (day, dimension, subject, ending, bucket, questions) {} \
         ON CONFLICT (day, dimension, subject, ending, bucket) \
         DO UPDATE SET questions = response_time_counts.questions + excluded.questions",
        counts_of(source, selection)
    )
}

/// The counts of the rounds `selection` picks from `source` added to the sums of every period that holds
/// their day.
fn add_period_counts_of(source: &str, selection: &str) -> String {
    format!(
        "INSERT INTO response_time_period_counts (period, dimension, subject, ending, bucket, questions) \
         SELECT periods.period, dims.dimension, {SUBJECT}, {ENDING}, {BUCKET}, CAST(COUNT(*) AS BIGINT) \
         FROM {source}, {KEYED_DIMENSIONS} AS dims, response_time_periods AS periods \
         WHERE {selection} AND {DAY} >= periods.first_day GROUP BY 1, 2, 3, 4, 5 \
         ON CONFLICT (period, dimension, subject, ending, bucket) \
         DO UPDATE SET questions = response_time_period_counts.questions + excluded.questions",
        BUCKET = bucket_sql().as_str(),
    )
}

/// PostgreSQL: [`MARK_ENDED_ROUNDS`], the marked rounds' counts added and the rounds marked counted, in one
/// statement that updates each round once (`counted` 0 → 1) where the three update it twice: an update of a
/// round writes a new entry in each of its indexes, which a backlog's tally pays for (the bench's 1M rounds:
/// 269 s in three statements a batch). Returns how many rounds it counted.
pub static COUNT_ENDED_ROUNDS_AT_ONCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marked AS ({} RETURNING created_at_ms, session_id, server, responded_by, failure_code, \
         responded_at_ms, status), added AS ({}), added_to_periods AS ({}) SELECT COUNT(*) FROM marked",
        mark_ended_rounds_as(1),
        add_counts_of("marked", "TRUE"),
        add_period_counts_of("marked", "TRUE")
    )
});

pub const MARKED_ROUNDS_COUNTED: &str =
    "UPDATE rounds SET counted = 1 WHERE counted IN (0, 2) AND counted = 2";

/// The counts of the rounds asked since `$1` that are not counted yet: the open ones and those ended since
/// the last tally.
pub static UNCOUNTED_COUNTS: LazyLock<String> = LazyLock::new(|| {
    counts_of(
        "rounds",
        "counted IN (0, 2) AND counted = 0 AND created_at_ms >= $1",
    )
});

/// The day (since 1970-01-01, UTC) a round was asked.
const DAY: &str = "CAST(created_at_ms / 86400000 AS BIGINT)";

/// Every dimension a round is counted in, and those with a key of their own (all but the day).
const ALL_DIMENSIONS: &str =
    "(SELECT 'd' AS dimension UNION ALL SELECT 's' UNION ALL SELECT 'v' UNION ALL SELECT 'p')";
const KEYED_DIMENSIONS: &str =
    "(SELECT 's' AS dimension UNION ALL SELECT 'v' UNION ALL SELECT 'p')";

/// A round's key in `dims.dimension`.
const SUBJECT: &str = "CASE dims.dimension WHEN 'd' THEN '' WHEN 's' THEN session_id \
     WHEN 'v' THEN COALESCE(server, '') ELSE COALESCE(responded_by, '') END";

/// How a round ended and its bucket: the SQL of `domain::stats::Ending::of` and `bucket_of`, which the store's
/// property test holds equal to them.
const ENDING: &str = "CASE WHEN failure_code = 'undelivered' THEN 'u' WHEN responded_at_ms IS NOT NULL THEN 'a' \
     WHEN failure_code IN ('expired', 'nobody_available') THEN 'e' WHEN status = 'pending' THEN 'p' ELSE 'o' END";

fn bucket_sql() -> &'static String {
    static BUCKET: LazyLock<String> = LazyLock::new(|| {
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
            "CAST(CASE WHEN responded_at_ms IS NULL THEN 0 {} ELSE {} END AS BIGINT)",
            buckets.join(" "),
            bounds.len() - 1
        )
    });
    &BUCKET
}

/// The counts (day, dimension, subject, ending, bucket, questions) of the rounds `selection` picks from
/// `source` (the table, or rounds a statement returned): each round counted once per dimension.
fn counts_of(source: &str, selection: &str) -> String {
    format!(
        "SELECT {DAY} AS day, dims.dimension AS dimension, {SUBJECT} AS subject, {ENDING} AS ending, \
         {BUCKET} AS bucket, CAST(COUNT(*) AS BIGINT) AS questions \
         FROM {source}, {ALL_DIMENSIONS} AS dims WHERE {selection} GROUP BY 1, 2, 3, 4, 5",
        BUCKET = bucket_sql().as_str(),
    )
}

/// Every period's first day, locked on PostgreSQL for the tally's transaction: the sums and the counts they
/// are made from change together, and a rebuild never races a tally that read an older first day.
pub const SELECT_PERIODS: &str =
    "SELECT period, first_day FROM response_time_periods ORDER BY period";
pub const SELECT_PERIODS_FOR_UPDATE: &str =
    "SELECT period, first_day FROM response_time_periods ORDER BY period FOR UPDATE";

/// The periods' sums made again from the kept counts, each from its first day as of day `$1` (today): run by
/// the tally once a day has begun, so the page reads sums that need no correction.
pub const MOVE_PERIODS: &str = "UPDATE response_time_periods SET first_day = $1 - period";
pub const CLEAR_PERIOD_COUNTS: &str = "DELETE FROM response_time_period_counts";
pub const SUM_PERIOD_COUNTS: &str = "INSERT INTO response_time_period_counts \
     (period, dimension, subject, ending, bucket, questions) \
     SELECT periods.period, c.dimension, c.subject, c.ending, c.bucket, SUM(c.questions) \
     FROM response_time_counts AS c, response_time_periods AS periods \
     WHERE c.dimension IN ('s', 'v', 'p') AND c.day >= periods.first_day GROUP BY 1, 2, 3, 4, 5";

/// The kept counts of the `$2` days since day `$1`: the day's own per day, and each session's, server's and
/// person's summed over the period (day 0). Those are the period's sums, corrected by the days between the
/// period's first day and `$1` when the tally has not moved them yet (the day began less than a tick ago, or
/// a backlog is being counted; a period never built holds nothing, so every day from `$1` is added): the sums
/// are always those of the kept counts from their first day, so the result is exact either way. The days
/// between are found by the counts' key, which starts with the day (`dimension <> 'd'` is not one SQLite
/// can look up, so it does not pick the index by dimension and read every key's counts).
pub const SELECT_RESPONSE_TIME_COUNTS: &str = "WITH held AS (SELECT COALESCE(MAX(first_day), \
     9223372036854775807) AS first_day FROM response_time_periods WHERE period = $2) \
     SELECT CAST(0 AS BIGINT) AS day, dimension, subject, ending, CAST(bucket AS BIGINT) AS bucket, \
     CAST(SUM(questions) AS BIGINT) AS questions FROM (\
     SELECT dimension, subject, ending, bucket, questions FROM response_time_period_counts WHERE period = $2 \
     UNION ALL SELECT c.dimension, c.subject, c.ending, c.bucket, \
     CASE WHEN c.day < held.first_day THEN c.questions ELSE -c.questions END \
     FROM response_time_counts AS c, held WHERE c.dimension <> 'd' \
     AND c.day >= CASE WHEN $1 < held.first_day THEN $1 ELSE held.first_day END \
     AND c.day < CASE WHEN $1 < held.first_day THEN held.first_day ELSE $1 END\
     ) AS kept GROUP BY dimension, subject, ending, bucket HAVING SUM(questions) <> 0 \
     UNION ALL SELECT CAST(day AS BIGINT), dimension, subject, ending, CAST(bucket AS BIGINT), \
     CAST(questions AS BIGINT) FROM response_time_counts WHERE dimension = 'd' AND day >= $1";

/// PostgreSQL's planner statistics of the rounds, refreshed after a tally's backlog (`engine::stats`).
pub const ANALYZE_ROUNDS: &str = "ANALYZE rounds";

/// The kept counts' dead rows cleared and their pages marked all-visible, so the page's read of them is an
/// index-only scan again; and their statistics refreshed. Outside any transaction, as VACUUM must be.
pub const VACUUM_RESPONSE_TIME_COUNTS: &str = "VACUUM (ANALYZE) response_time_counts";

/// SQLite: the rows of `query` (day, dimension, subject, ending, bucket, questions) as one JSON array. sqlx
/// hands SQLite's rows over one at a time from the connection's thread: the bench's page over 1M questions
/// read its 12,210 counts in 51 ms (p50) as rows, 28-35 ms as one value (the page's p99: 117 ms, then 46-54 ms).
pub fn counts_as_json(query: &str) -> String {
    format!(
        "SELECT json_group_array(json_array(day, dimension, subject, ending, bucket, questions)) \
         FROM ({query})"
    )
}

/// Kept counts older than the page's longest period (`$1` is its first day), and than every period's sums:
/// the page corrects sums not moved yet by the counts of the days they still hold.
pub const PURGE_RESPONSE_TIME_COUNTS: &str = "DELETE FROM response_time_counts WHERE day < $1 \
     AND day < COALESCE((SELECT MIN(first_day) FROM response_time_periods), $1)";
