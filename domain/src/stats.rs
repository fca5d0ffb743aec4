//! Response times: how long people took to answer, and how many questions expired or were never delivered,
//! per day, session, server and person, from counts kept by a fixed set of waiting-time buckets.
//!
//! A question is counted once, when it has ended: the store adds its outcome to counts per day and key in the
//! transaction that marks it counted, and the page reads those counts (a few rows per day and key, however many
//! questions there were) plus those of the questions not counted yet. The store groups in SQL, next to the
//! rows; [`tally`] is the definition it follows, which the store's property test holds it to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The upper bounds of the waiting-time buckets, in milliseconds: a wait falls in the first bucket whose bound
/// exceeds it (the last is open-ended). Medians and 95th percentiles are read between a bucket's bounds.
pub const BUCKET_BOUNDS_MS: [i64; 20] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    1_200_000,
    1_800_000,
    3_600_000,
    7_200_000,
    14_400_000,
    28_800_000,
    86_400_000,
    172_800_000,
    604_800_000,
    i64::MAX,
];

/// The periods the page offers, in days.
pub const PERIODS: [u32; 3] = [7, 30, 90];

/// The longest period the figures cover, in days.
pub const MAX_DAYS: u32 = 90;

/// How a question ended, for the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ending {
    /// Answered (and delivered, or on its way).
    Answered,
    /// Expired, or nobody was available.
    Expired,
    /// Answered, but never picked up.
    Undelivered,
    /// Still waiting.
    Waiting,
    /// Cancelled, revoked, or a worker's failure.
    Other,
}

impl Ending {
    /// How a question stands, from its record: an answer never picked up is `Undelivered`, any other answer
    /// `Answered`, an expiry or no one to ask `Expired`, a question still open `Waiting`.
    pub fn of(responded_at_ms: Option<i64>, failure_code: Option<&str>, status: &str) -> Self {
        match (failure_code, responded_at_ms) {
            (Some("undelivered"), _) => Self::Undelivered,
            (_, Some(_)) => Self::Answered,
            (Some("expired" | "nobody_available"), None) => Self::Expired,
            _ if status == "pending" => Self::Waiting,
            _ => Self::Other,
        }
    }

    /// The one-letter code the store keeps.
    pub fn code(self) -> &'static str {
        match self {
            Self::Answered => "a",
            Self::Expired => "e",
            Self::Undelivered => "u",
            Self::Waiting => "p",
            Self::Other => "o",
        }
    }

    /// The ending of a code the store kept.
    pub fn parse(code: &str) -> Self {
        match code {
            "a" => Self::Answered,
            "e" => Self::Expired,
            "u" => Self::Undelivered,
            "p" => Self::Waiting,
            _ => Self::Other,
        }
    }
}

/// The waiting-time bucket of an answer given `wait_ms` after the question was asked.
pub fn bucket_of(wait_ms: i64) -> usize {
    BUCKET_BOUNDS_MS
        .iter()
        .position(|&bound| wait_ms < bound)
        .unwrap_or(BUCKET_BOUNDS_MS.len() - 1)
}

const DAY_MS: i64 = 86_400_000;

/// The day number (days since 1970-01-01, UTC) of a time in Unix milliseconds.
pub fn day_of(at_ms: i64) -> i64 {
    at_ms.div_euclid(DAY_MS)
}

/// The first millisecond of a day number.
pub fn day_start_ms(day: i64) -> i64 {
    day.saturating_mul(DAY_MS)
}

/// What a count is kept by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dimension {
    Day,
    Session,
    Server,
    Person,
}

impl Dimension {
    pub const ALL: [Self; 4] = [Self::Day, Self::Session, Self::Server, Self::Person];

    /// The one-letter code the store keeps.
    pub fn code(self) -> &'static str {
        match self {
            Self::Day => "d",
            Self::Session => "s",
            Self::Server => "v",
            Self::Person => "p",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|dimension| dimension.code() == code)
    }
}

/// A question as the counts see it: when it was asked, by whom, and how it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOutcome {
    pub created_at_ms: i64,
    pub session_id: String,
    pub server: Option<String>,
    pub responded_by: Option<String>,
    pub responded_at_ms: Option<i64>,
    pub failure_code: Option<String>,
    pub status: String,
}

/// One kept count: on `day` (the day the questions were asked), for `key` of `dimension` (empty for days),
/// `count` questions ended with `ending`, in waiting-time `bucket` (0 for those not answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayCount {
    pub day: i64,
    pub dimension: Dimension,
    pub key: String,
    pub ending: Ending,
    pub bucket: usize,
    pub count: i64,
}

/// The counts of `questions`: one per day, dimension, key, ending and bucket that occurs, in a stable order.
pub fn tally<'a>(questions: impl IntoIterator<Item = &'a QuestionOutcome>) -> Vec<DayCount> {
    let mut counts: BTreeMap<(i64, Dimension, String, Ending, usize), i64> = BTreeMap::new();
    for question in questions {
        let ending = Ending::of(
            question.responded_at_ms,
            question.failure_code.as_deref(),
            &question.status,
        );
        let bucket = question
            .responded_at_ms
            .map_or(0, |at| bucket_of(at - question.created_at_ms));
        let day = day_of(question.created_at_ms);
        let keys = [
            (Dimension::Day, String::new()),
            (Dimension::Session, question.session_id.clone()),
            (
                Dimension::Server,
                question.server.clone().unwrap_or_default(),
            ),
            (
                Dimension::Person,
                question.responded_by.clone().unwrap_or_default(),
            ),
        ];
        for (dimension, key) in keys {
            *counts
                .entry((day, dimension, key, ending, bucket))
                .or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|((day, dimension, key, ending, bucket), count)| DayCount {
            day,
            dimension,
            key,
            ending,
            bucket,
            count,
        })
        .collect()
}

/// The figures of a period from its counts, kept and not yet kept alike: per day (keyed `2026-12-01`) and the
/// busiest 50 sessions, servers and people.
pub fn response_times(days: u32, counts: impl IntoIterator<Item = DayCount>) -> ResponseTimes {
    let mut rows: BTreeMap<Dimension, Vec<CountRow>> = BTreeMap::new();
    for count in counts {
        let key = match count.dimension {
            Dimension::Day => date_of_day(count.day),
            _ => count.key,
        };
        rows.entry(count.dimension).or_default().push(CountRow {
            key,
            ending: count.ending,
            bucket: count.bucket,
            count: count.count,
        });
    }
    let mut take = |dimension| figures(&rows.remove(&dimension).unwrap_or_default());
    let daily = take(Dimension::Day);
    let sessions = busiest(take(Dimension::Session), 50);
    let servers = busiest(take(Dimension::Server), 50);
    let people = busiest(
        take(Dimension::Person)
            .into_iter()
            .filter(|figures| !figures.key.is_empty())
            .collect(),
        50,
    );
    ResponseTimes {
        days,
        daily,
        sessions,
        servers,
        people,
    }
}

/// `2026-12-01` for a day number.
fn date_of_day(day: i64) -> String {
    chrono::DateTime::from_timestamp_millis(day_start_ms(day))
        .map_or_else(|| day.to_string(), |at| at.format("%Y-%m-%d").to_string())
}

/// One row of grouped counts: a key (a day, a session, a server or a person), how the questions
/// ended, the waiting-time bucket of the answered ones, and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountRow {
    pub key: String,
    pub ending: Ending,
    pub bucket: usize,
    pub count: i64,
}

/// The figures of one key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Figures {
    /// The day (`2026-12-01`), the session id, the server, or the person's name.
    pub key: String,
    pub asked: i64,
    pub answered: i64,
    /// Median time to answer, in milliseconds (`null` when nothing was answered).
    pub median_ms: Option<i64>,
    /// 95th percentile time to answer, in milliseconds.
    pub p95_ms: Option<i64>,
    /// Share of the questions asked that expired unanswered (or found nobody available), 0 to 1.
    pub expired_share: f64,
    /// Share answered but never delivered.
    pub undelivered_share: f64,
}

/// Figures per key, in key order, from grouped counts.
pub fn figures(rows: &[CountRow]) -> Vec<Figures> {
    let mut by_key: BTreeMap<&str, (Vec<i64>, [i64; 5])> = BTreeMap::new();
    for row in rows {
        let (histogram, endings) = by_key
            .entry(row.key.as_str())
            .or_insert_with(|| (vec![0; BUCKET_BOUNDS_MS.len()], [0; 5]));
        endings[row.ending as usize] += row.count;
        if matches!(row.ending, Ending::Answered | Ending::Undelivered)
            && let Some(slot) = histogram.get_mut(row.bucket)
        {
            *slot += row.count;
        }
    }
    by_key
        .into_iter()
        .map(|(key, (histogram, endings))| {
            let asked: i64 = endings.iter().sum();
            let share = |n: i64| {
                if asked == 0 {
                    0.0
                } else {
                    n as f64 / asked as f64
                }
            };
            Figures {
                key: key.to_owned(),
                asked,
                answered: endings[Ending::Answered as usize]
                    + endings[Ending::Undelivered as usize],
                median_ms: quantile(&histogram, 0.5),
                p95_ms: quantile(&histogram, 0.95),
                expired_share: share(endings[Ending::Expired as usize]),
                undelivered_share: share(endings[Ending::Undelivered as usize]),
            }
        })
        .collect()
}

/// The `q` quantile of a bucketed histogram, read linearly between the bounds of the bucket it falls in (the
/// open last bucket reads as its lower bound).
#[expect(
    clippy::cast_possible_truncation,
    reason = "the offset within one bucket is at most its width, a week in milliseconds"
)]
pub fn quantile(histogram: &[i64], q: f64) -> Option<i64> {
    let total: i64 = histogram.iter().sum();
    if total == 0 {
        return None;
    }
    let target = q * total as f64;
    let mut seen = 0_i64;
    for (bucket, &count) in histogram.iter().enumerate() {
        if count == 0 {
            continue;
        }
        if (seen + count) as f64 >= target {
            let low = if bucket == 0 {
                0
            } else {
                BUCKET_BOUNDS_MS[bucket - 1]
            };
            let high = BUCKET_BOUNDS_MS[bucket];
            if high == i64::MAX {
                return Some(low);
            }
            let within = ((target - seen as f64) / count as f64).clamp(0.0, 1.0);
            return Some(low + ((high - low) as f64 * within).round() as i64);
        }
        seen += count;
    }
    None
}

/// Response times over a period, as the page and `GET /api/v1/stats/response-times` give them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResponseTimes {
    pub days: u32,
    /// Each day with questions, oldest first.
    pub daily: Vec<Figures>,
    /// The busiest sessions, servers and people (at most 50 each), most questions first.
    pub sessions: Vec<Figures>,
    pub servers: Vec<Figures>,
    pub people: Vec<Figures>,
}

/// The busiest `limit` keys, most questions first.
pub fn busiest(mut figures: Vec<Figures>, limit: usize) -> Vec<Figures> {
    figures.sort_by(|a, b| b.asked.cmp(&a.asked).then_with(|| a.key.cmp(&b.key)));
    figures.truncate(limit);
    figures
}

/// "850 ms", "12 s", "4 min", "2.5 h".
pub fn short_duration(ms: i64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 60_000 => format!("{} s", ms / 1_000),
        ms if ms < 3_600_000 => format!("{} min", ms / 60_000),
        ms => format!("{:.1} h", ms as f64 / 3_600_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, ending: Ending, bucket: usize, count: i64) -> CountRow {
        CountRow {
            key: key.to_owned(),
            ending,
            bucket,
            count,
        }
    }

    #[test]
    fn quantiles_are_read_within_their_bucket() {
        let mut histogram = vec![0; BUCKET_BOUNDS_MS.len()];
        histogram[2] = 100; // every wait 2–5 s
        assert_eq!(quantile(&histogram, 0.5), Some(3_500));
        assert_eq!(quantile(&histogram, 0.95), Some(4_850));
        histogram[12] = 900; // most 30–60 min
        assert_eq!(quantile(&histogram, 0.05), Some(3_500));
        assert!(quantile(&histogram, 0.5).is_some_and(|ms| (1_800_000..=3_600_000).contains(&ms)));
        assert_eq!(quantile(&vec![0; BUCKET_BOUNDS_MS.len()], 0.5), None);
        let mut open = vec![0; BUCKET_BOUNDS_MS.len()];
        open[19] = 1;
        assert_eq!(quantile(&open, 0.5), Some(604_800_000));
    }

    #[test]
    fn figures_count_each_ending_and_share_of_asked() {
        let figures = figures(&[
            row("2026-12-01", Ending::Answered, 2, 6),
            row("2026-12-01", Ending::Undelivered, 2, 1),
            row("2026-12-01", Ending::Expired, 0, 2),
            row("2026-12-01", Ending::Waiting, 0, 1),
            row("2026-12-02", Ending::Expired, 0, 3),
        ]);
        assert_eq!(figures.len(), 2);
        let first = &figures[0];
        assert_eq!((first.asked, first.answered), (10, 7));
        assert!((first.expired_share - 0.2).abs() < 1e-9);
        assert!((first.undelivered_share - 0.1).abs() < 1e-9);
        assert!(
            first
                .median_ms
                .is_some_and(|ms| (2_000..=5_000).contains(&ms))
        );
        assert_eq!((figures[1].answered, figures[1].median_ms), (0, None));
        assert!((figures[1].expired_share - 1.0).abs() < 1e-9);
    }

    fn outcome(
        day: i64,
        session: &str,
        wait_ms: Option<i64>,
        failure: Option<&str>,
        status: &str,
    ) -> QuestionOutcome {
        let created_at_ms = day_start_ms(day) + 3_600_000;
        QuestionOutcome {
            created_at_ms,
            session_id: session.to_owned(),
            server: Some("shipping".to_owned()),
            responded_by: wait_ms.map(|_| "ada".to_owned()),
            responded_at_ms: wait_ms.map(|wait| created_at_ms + wait),
            failure_code: failure.map(str::to_owned),
            status: status.to_owned(),
        }
    }

    #[test]
    fn an_ending_is_read_from_the_record_as_the_page_tells_it() {
        assert_eq!(
            Ending::of(Some(1), Some("undelivered"), "failed"),
            Ending::Undelivered
        );
        assert_eq!(Ending::of(Some(1), None, "delivered"), Ending::Answered);
        assert_eq!(
            Ending::of(Some(1), Some("recovery_unavailable"), "failed"),
            Ending::Answered
        );
        assert_eq!(Ending::of(None, Some("expired"), "failed"), Ending::Expired);
        assert_eq!(
            Ending::of(None, Some("nobody_available"), "failed"),
            Ending::Expired
        );
        assert_eq!(Ending::of(None, None, "pending"), Ending::Waiting);
        assert_eq!(Ending::of(None, Some("cancelled"), "failed"), Ending::Other);
        for ending in [
            Ending::Answered,
            Ending::Expired,
            Ending::Undelivered,
            Ending::Waiting,
            Ending::Other,
        ] {
            assert_eq!(Ending::parse(ending.code()), ending);
        }
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(999), 0);
        assert_eq!(bucket_of(1_000), 1);
        assert_eq!(bucket_of(i64::MAX), BUCKET_BOUNDS_MS.len() - 1);
        assert_eq!(
            day_of(-1),
            -1,
            "a time before 1970 falls on the day before, not on day 0"
        );
    }

    #[test]
    fn a_tally_keeps_one_count_per_day_key_ending_and_bucket() {
        let questions = [
            outcome(20_000, "s1", Some(3_000), None, "delivered"),
            outcome(20_000, "s1", Some(3_500), None, "resolved"),
            outcome(20_000, "s2", None, Some("expired"), "failed"),
            outcome(20_001, "s1", Some(90_000), Some("undelivered"), "failed"),
        ];
        let counts = tally(&questions);
        let of = |dimension, key: &str| -> Vec<(i64, Ending, usize, i64)> {
            counts
                .iter()
                .filter(|count| count.dimension == dimension && count.key == key)
                .map(|count| (count.day, count.ending, count.bucket, count.count))
                .collect()
        };
        assert_eq!(
            of(Dimension::Day, ""),
            vec![
                (20_000, Ending::Answered, 2, 2),
                (20_000, Ending::Expired, 0, 1),
                (20_001, Ending::Undelivered, 7, 1)
            ]
        );
        assert_eq!(
            of(Dimension::Session, "s2"),
            vec![(20_000, Ending::Expired, 0, 1)]
        );
        assert_eq!(
            of(Dimension::Person, "").len(),
            1,
            "the unanswered one has no person"
        );
        // Counts summed by the page give the same figures as the questions themselves.
        let times = response_times(7, counts);
        assert_eq!(times.daily.len(), 2);
        assert_eq!((times.daily[0].asked, times.daily[0].answered), (3, 2));
        assert_eq!(times.daily[0].key, "2024-10-04");
        assert_eq!(times.sessions[0].key, "s1");
        assert_eq!(times.people.len(), 1);
    }

    #[test]
    fn durations_read_shortly() {
        assert_eq!(short_duration(850), "850 ms");
        assert_eq!(short_duration(12_300), "12 s");
        assert_eq!(short_duration(240_000), "4 min");
        assert_eq!(short_duration(9_000_000), "2.5 h");
    }
}
