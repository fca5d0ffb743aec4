//! Response times: counted from the rounds themselves, per day, session, server and person.

use anteroom_store::domain::{clock::Clock, round::Round};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

async fn response_times_count_each_question_once_by_how_it_ended(h: &Harness) {
    let quick = ask(h, "s1").await;
    let slow = ask_again(h, "s1").await;
    let _unanswered = ask(h, "s2").await;
    h.clock.advance(Duration::seconds(3));
    answer(h, &quick, accept(json!({"city": "Oslo"})), "k1")
        .await
        .expect("answered");
    h.clock.advance(Duration::seconds(87));
    answer(h, &slow, accept(json!({"city": "Rome"})), "k2")
        .await
        .expect("answered");
    h.clock.advance(Duration::minutes(61));
    h.store.expire_due_rounds().await.expect("sweep");

    let times = h.store.response_times(7).await.expect("figures");
    assert_eq!(times.days, 7);
    assert_eq!(times.daily.len(), 1);
    let day = &times.daily[0];
    assert_eq!(
        day.key,
        crate::support::start_time().format("%Y-%m-%d").to_string()
    );
    // Both answers were never picked up: answered, and undelivered; the third expired.
    assert_eq!((day.asked, day.answered), (3, 2));
    assert!((day.expired_share - 1.0 / 3.0).abs() < 1e-9, "{day:?}");
    assert!((day.undelivered_share - 2.0 / 3.0).abs() < 1e-9, "{day:?}");
    // One answer took 3 s, the other 90 s: the median lies between, the 95th near the slower.
    let median = day.median_ms.expect("median");
    let p95 = day.p95_ms.expect("p95");
    assert!((2_000..=120_000).contains(&median), "{median}");
    assert!((60_000..=120_000).contains(&p95), "{p95}");
    let sessions: Vec<(&str, i64)> = times
        .sessions
        .iter()
        .map(|f| (f.key.as_str(), f.asked))
        .collect();
    assert_eq!(sessions, vec![("s1", 2), ("s2", 1)]);
    assert_eq!(times.servers.len(), 1);
    assert_eq!(times.servers[0].key, "shipping");
    let people: Vec<(&str, i64)> = times
        .people
        .iter()
        .map(|f| (f.key.as_str(), f.answered))
        .collect();
    assert_eq!(people, vec![("ada", 2)]);
    // A week later the questions are out of the 7-day window.
    h.clock.advance(Duration::days(8));
    assert!(
        h.store
            .response_times(7)
            .await
            .expect("figures")
            .daily
            .is_empty()
    );
    assert_eq!(
        h.store
            .response_times(30)
            .await
            .expect("figures")
            .daily
            .len(),
        1
    );
}

async fn counted_questions_outlive_their_purge_and_a_restart_in_a_bounded_number_of_rows(
    h: &Harness,
) {
    let mut asked = Vec::new();
    for n in 0..6 {
        let round = if n == 0 {
            ask(h, "s1").await
        } else {
            ask_again(h, "s1").await
        };
        asked.push(round);
    }
    h.clock.advance(Duration::seconds(3));
    for (n, round) in asked.iter().take(4).enumerate() {
        answer(h, round, accept(json!({"city": "Oslo"})), &format!("k{n}"))
            .await
            .expect("answered");
    }
    // Two answers are picked up; two are not and end undelivered; two questions expire unanswered.
    for round in asked.iter().take(2) {
        h.store
            .record_poll_delivery(round.round_id)
            .await
            .expect("delivered");
    }
    h.clock.advance(Duration::minutes(61));
    h.store.expire_due_rounds().await.expect("sweep");
    let before = h.store.response_times(7).await.expect("figures");
    assert_eq!((before.daily[0].asked, before.daily[0].answered), (6, 4));

    assert_eq!(h.store.count_ended_questions(4).await.expect("count"), 4);
    assert_eq!(
        h.store.response_times(7).await.expect("figures"),
        before,
        "half counted, half read from the rounds: the same figures"
    );
    assert_eq!(h.store.count_ended_questions(100).await.expect("count"), 2);
    assert_eq!(
        h.store.count_ended_questions(100).await.expect("count"),
        0,
        "each once"
    );
    let rows = h
        .raw_integer("SELECT COUNT(*) FROM response_time_counts")
        .await;

    // Twenty more questions like the first two: more questions, no more rows.
    for n in 0..20 {
        let round = ask_again(h, "s1").await;
        h.clock.advance(Duration::seconds(3));
        answer_and_deliver(h, &round, &format!("m{n}")).await;
    }
    h.store.count_ended_questions(100).await.expect("count");
    assert_eq!(
        h.raw_integer("SELECT COUNT(*) FROM response_time_counts")
            .await,
        rows,
        "counts grow with days and keys, not with questions"
    );
    let counted = h.store.response_times(7).await.expect("figures");
    assert_eq!(counted.daily[0].asked, 26);

    // The purge takes the ended rounds (the delivered ones stay, as ever); the figures do not move.
    h.clock.advance(Duration::days(2));
    let purged = h
        .store
        .purge_terminal_rounds(h.clock.now())
        .await
        .expect("purge");
    assert_eq!(purged, 4, "the two undelivered and the two expired");
    assert_eq!(h.store.response_times(7).await.expect("figures"), counted);
    let restarted = h.reopened().await;
    assert_eq!(restarted.response_times(7).await.expect("figures"), counted);

    // Past the page's longest period the counts go too.
    h.clock.advance(Duration::days(95));
    h.store
        .purge_terminal_rounds(h.clock.now())
        .await
        .expect("purge");
    for table in ["response_time_counts", "response_time_period_counts"] {
        assert_eq!(
            h.raw_integer(&format!("SELECT COUNT(*) FROM {table}"))
                .await,
            Some(0),
            "{table}"
        );
    }
}

/// `round` answered under `key` and the answer picked up by its asker.
async fn answer_and_deliver(h: &Harness, round: &Round, key: &str) {
    answer(h, round, accept(json!({"city": "Oslo"})), key)
        .await
        .expect("answered");
    h.store
        .record_poll_delivery(round.round_id)
        .await
        .expect("delivered");
}

/// The sums of one period's counts per session, server and person.
async fn period_rows(h: &Harness, period: i64) -> Option<i64> {
    h.raw_integer(&format!(
        "SELECT COUNT(*) FROM response_time_period_counts WHERE period = {period}"
    ))
    .await
}

async fn each_period_sums_its_days_and_moves_with_them(h: &Harness) {
    let first = ask(h, "s1").await;
    h.clock.advance(Duration::seconds(3));
    answer_and_deliver(h, &first, "k1").await;
    assert_eq!(h.store.count_ended_questions(100).await.expect("count"), 1);
    // Session, server and person, each in the three periods.
    for period in [7, 30, 90] {
        assert_eq!(period_rows(h, period).await, Some(3), "{period} days");
    }
    let week = h.store.response_times(7).await.expect("figures");
    assert_eq!(week.sessions.len(), 1);

    // Eight days on, before the tally moves the periods, the week's sums still hold the question: the page
    // takes its day off them.
    h.clock.advance(Duration::days(8));
    let second = ask(h, "s2").await;
    answer_and_deliver(h, &second, "k2").await;
    let keys = |times: &anteroom_store::domain::stats::ResponseTimes| {
        times
            .sessions
            .iter()
            .map(|figures| (figures.key.clone(), figures.asked))
            .collect::<Vec<_>>()
    };
    let expected_week = vec![("s2".to_owned(), 1)];
    let expected_month = vec![("s1".to_owned(), 1), ("s2".to_owned(), 1)];
    let before_move = (
        keys(&h.store.response_times(7).await.expect("figures")),
        keys(&h.store.response_times(30).await.expect("figures")),
    );
    assert_eq!(before_move, (expected_week.clone(), expected_month.clone()));

    // The tally counts the second and moves the periods: the week no longer holds the first.
    assert_eq!(h.store.count_ended_questions(100).await.expect("count"), 1);
    assert_eq!(period_rows(h, 7).await, Some(3));
    assert_eq!(period_rows(h, 30).await, Some(6));
    assert_eq!(
        keys(&h.store.response_times(7).await.expect("figures")),
        expected_week
    );
    assert_eq!(
        keys(&h.store.response_times(30).await.expect("figures")),
        expected_month
    );
}

crate::on_both_backends!(
    response_times_count_each_question_once_by_how_it_ended,
    counted_questions_outlive_their_purge_and_a_restart_in_a_bounded_number_of_rows,
    each_period_sums_its_days_and_moves_with_them
);
