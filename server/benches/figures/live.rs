//! Live updates with many pages open: what each question event costs the database, and how soon every page
//! holds a view that shows it.

use super::*;

/// Signed-in pages watching the queue.
const PAGES: usize = 100;
/// Question events a second (creates and answers, alternating).
const EVENTS_PER_SECOND: u64 = 10;
/// How long the events run with the pages open, and with none (the events' own cost).
const LIVE_RUN: Duration = Duration::from_secs(30);
const QUIET_RUN: Duration = Duration::from_secs(10);
/// Sessions the questions rotate through: each has at most one open question at a time.
const LIVE_SESSIONS: usize = 20;

/// What a page must see after event `n`: question `n` shown (after its create) or gone (after its answer).
#[derive(Clone)]
struct Expectation {
    needle: String,
    shown: bool,
    at: Instant,
}

impl Bench {
    pub(super) async fn live_updates(&self) -> Vec<Figure> {
        eprintln!("bench: live updates, {PAGES} pages, {EVENTS_PER_SECOND} events/s");
        let sessions = sessions_with_tokens(self.store.as_ref(), "live", LIVE_SESSIONS).await;
        let client = reqwest::Client::new();

        // The events' own cost: the same events with no page open.
        let quiet = self
            .question_events(&client, &sessions, QUIET_RUN, None)
            .await;
        let quiet_per_event = quiet.round_trips as f64 / quiet.events as f64;

        let cookie = sign_in(&self.base, self.store.as_ref()).await;
        let expectations = Arc::new(std::sync::Mutex::new(Vec::<Expectation>::new()));
        let (samples_tx, mut samples_rx) = tokio::sync::mpsc::unbounded_channel::<Duration>();
        let mut pages = Vec::new();
        for _ in 0..PAGES {
            let mut stream = client
                .get(format!("{}/fn/live", self.base))
                .header("cookie", &cookie)
                .send()
                .await
                .expect("live stream");
            assert!(stream.status().is_success(), "live: {}", stream.status());
            let expectations = expectations.clone();
            let samples = samples_tx.clone();
            pages.push(tokio::spawn(async move {
                let mut buffer = String::new();
                let mut next = 0;
                while let Ok(Some(chunk)) = stream.chunk().await {
                    let at = Instant::now();
                    buffer.push_str(&String::from_utf8_lossy(&chunk));
                    while let Some(end) = buffer.find("\n\n") {
                        let event: String = buffer.drain(..end + 2).collect();
                        if !event.starts_with("event: queue") {
                            continue;
                        }
                        let Ok(expected) = expectations.lock() else {
                            return;
                        };
                        // A page holds the latest view, not every one (a slow page skips to the newest): a
                        // view satisfies every change up to the last one it reflects. This instance has
                        // no other open questions, so each question is in the view while it is open.
                        let reflected = expected
                            .iter()
                            .rposition(|e| event.contains(&e.needle) == e.shown);
                        if let Some(last) = reflected.filter(|last| *last >= next) {
                            for e in &expected[next..=last] {
                                let _ = samples.send(at.saturating_duration_since(e.at));
                            }
                            next = last + 1;
                        }
                    }
                }
            }));
        }
        drop(samples_tx);
        // Every page connected and settled before the clock starts.
        tokio::time::sleep(Duration::from_millis(500)).await;

        let loud = self
            .question_events(&client, &sessions, LIVE_RUN, Some(&expectations))
            .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        for page in &pages {
            page.abort();
        }
        let mut samples = Vec::new();
        while let Ok(sample) = samples_rx.try_recv() {
            samples.push(sample);
        }
        let expected = loud.events * PAGES;
        let loud_per_event = loud.round_trips as f64 / loud.events as f64;
        let for_pages = (loud_per_event - quiet_per_event).max(0.0);
        let (p50, p99) = (percentile(&samples, 50.0), percentile(&samples, 99.0));
        vec![
            Figure::new(
                &format!(
                    "live updates: database round trips per question event, {PAGES} pages open"
                ),
                format!("{for_pages:.3} for the pages"),
                format!(
                    "{quiet_per_event:.2} for the event itself, no page open ({} events)",
                    loud.events
                ),
                "—".to_owned(),
                "≤ 1",
                Some(for_pages <= 1.0),
            ),
            Figure::new(
                &format!("live updates: event → page holds the new view, {PAGES} pages"),
                format!("p50 {} · p99 {}", ms(p50), ms(p99)),
                format!(
                    "{} of {expected} page updates seen; timed from sending the change",
                    samples.len()
                ),
                "—".to_owned(),
                "every page updated",
                Some(samples.len() == expected),
            ),
        ]
    }

    /// Asks and answers questions at [`EVENTS_PER_SECOND`] for `run`; the store's round trips meanwhile.
    async fn question_events(
        &self,
        client: &reqwest::Client,
        sessions: &[(String, String)],
        run: Duration,
        expectations: Option<&std::sync::Mutex<Vec<Expectation>>>,
    ) -> EventRun {
        let mut tick = tokio::time::interval(Duration::from_millis(1000 / EVENTS_PER_SECOND));
        let before = self.store.round_trips();
        let end = Instant::now() + run;
        let mut events = 0_usize;
        let mut open: Option<(String, String)> = None;
        // Ends after an answer, so no question stays open into the next run.
        while Instant::now() < end || open.is_some() {
            tick.tick().await;
            // The clock starts as the change is sent: a page may hold the new view before its request is
            // even answered (the change is announced first), so the expectation must be there already.
            let expect = |needle: &str, shown: bool| {
                if let Some(expectations) = expectations
                    && let Ok(mut list) = expectations.lock()
                {
                    list.push(Expectation {
                        needle: needle.to_owned(),
                        shown,
                        at: Instant::now(),
                    });
                }
            };
            match open.take() {
                None => {
                    let (_, token) = &sessions[(events / 2) % sessions.len()];
                    let request_id = format!("live-{}", uuid::Uuid::new_v4().simple());
                    let message = format!("Live question {request_id}");
                    let needle = format!("\"message\":\"{message}\"");
                    expect(&needle, true);
                    let reply = client
                        .post(format!("{}/api/v1/s/{token}/elicitations", self.base))
                        .json(&json!({
                            "mode": "form",
                            "message": message,
                            "requestedSchema": {"type": "object", "properties": {"env": {"type": "string", "enum": ["staging", "production"]}}, "required": ["env"]},
                            "_meta": {"com.pulsemcp/request-id": request_id}
                        }))
                        .send()
                        .await
                        .expect("ask");
                    assert!(reply.status().is_success(), "ask: {}", reply.status());
                    open = Some((request_id, needle));
                }
                Some((request_id, needle)) => {
                    expect(&needle, false);
                    self.answer(client, &request_id).await;
                }
            }
            events += 1;
        }
        EventRun {
            events,
            round_trips: self.store.round_trips() - before,
        }
    }
}

struct EventRun {
    events: usize,
    round_trips: u64,
}
