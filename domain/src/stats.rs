//! Response times: how long people took to answer, and how many questions expired or were never delivered,
//! per day, session, server and person, from counts the store groups by a fixed set of waiting-time buckets.

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
    /// The one-letter code the store's query writes.
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

/// One row of the store's grouped counts: a key (a day, a session, a server or a person), how the questions
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

    #[test]
    fn durations_read_shortly() {
        assert_eq!(short_duration(850), "850 ms");
        assert_eq!(short_duration(12_300), "12 s");
        assert_eq!(short_duration(240_000), "4 min");
        assert_eq!(short_duration(9_000_000), "2.5 h");
    }
}
