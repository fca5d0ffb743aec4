//! The hot paths against their ceilings: polls, creates, and the time from an answer to a waiting poller and stream.

use super::*;

/// CPU time (user + system) of every PostgreSQL server process on this machine, from `/proc`.
fn postgres_cpu_seconds() -> f64 {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    processes
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|name| name.trim() == "postgres")
        })
        .map(cpu_seconds)
        .sum()
}

impl Bench {
    pub(super) async fn polls(&self) -> Figure {
        eprintln!("bench: polls of pending questions");
        // Enough questions that the per-question poll limit (5 a second, bursts of 20) does not bite below
        // about 35,000 polls/s: 64 × 128 = 8,192 questions, each polled 4.3 times a second at that rate (the
        // limiter hashes keys into 65,536 buckets, so a few pairs share one budget; refusals are reported).
        // With 32 per connection the limit refused a third of the polls once the handler passed 10,000 a
        // second, and the figure counted only the rest. Few enough that each is polled several times, after
        // one poll each before the run: the figure is a known pending question's poll, not a first poll.
        let sessions = sessions_with_tokens(self.store.as_ref(), "poll", CONNECTIONS).await;
        let mut urls = Vec::new();
        for (id, token) in &sessions {
            let mut mine = Vec::new();
            for q in 0..128 {
                let request_id = format!("{id}-q{q}");
                self.store
                    .create_round(new_round(id, &request_id, "Which environment?"))
                    .await
                    .expect("round");
                mine.push(format!(
                    "{}/api/v1/s/{token}/elicitations/{request_id}",
                    self.base
                ));
            }
            urls.push(mine);
        }
        poll_each_once(&urls).await;
        let (polls, constant) =
            interleaved_throughput(urls, vec![vec![self.constant.clone()]; CONNECTIONS]).await;
        let ratio = polls / constant;
        Figure::new(
            "polls/s of a pending question (token route)",
            format!("{polls:.0}/s"),
            format!("{constant:.0}/s constant JSON handler"),
            format!("{ratio:.2}"),
            "≥ 0.6",
            Some(ratio >= 0.6),
        )
    }

    /// Each session's create URL, sixteen sessions to a connection (so the per-session create limit never bites).
    fn create_urls(&self, sessions: Vec<(String, String)>) -> Vec<Vec<String>> {
        sessions
            .chunks(16)
            .map(|chunk| {
                chunk
                    .iter()
                    .map(|(_, token)| {
                        format!(
                            "{}/api/v1/s/{token}/servers/bench-mcp/elicitations",
                            self.base
                        )
                    })
                    .collect()
            })
            .collect()
    }

    pub(super) async fn creates(&self, args: &Args) -> Figure {
        eprintln!("bench: question creates");
        // Sixteen sessions per connection, so the per-session create limit never bites.
        let sessions = sessions_with_tokens(self.store.as_ref(), "create", CONNECTIONS * 16).await;
        let open_before = self.store.open_round_count().await.unwrap_or(0);
        let postgres_before = postgres_cpu_seconds();
        let creates = create_throughput(self.create_urls(sessions)).await;
        if matches!(self.data, Data::Postgres(_)) {
            // What each create costs the database server itself (docs/operations.md#sizing): every PostgreSQL
            // process on this machine, background writers included, over every create of the run.
            let created = self.store.open_round_count().await.unwrap_or(0) - open_before;
            let cpu = postgres_cpu_seconds() - postgres_before;
            eprintln!(
                "bench: PostgreSQL's own CPU per create: {:.0} µs ({cpu:.2} s over {created} creates)",
                cpu / created.max(1) as f64 * 1e6
            );
        }
        let row_bytes = self.round_row_bytes().await;
        let bare = bare_inserts(args, row_bytes).await;
        let ratio = creates / bare;
        Figure::new(
            "creates/s (token route)",
            format!("{creates:.0}/s"),
            format!("{bare:.0}/s bare insert of a {row_bytes}-byte row"),
            format!("{ratio:.2}"),
            "≥ 0.5",
            Some(ratio >= 0.5),
        )
    }

    /// What a standing answer in force costs each create: the same create run with no rule in force and with
    /// one in force in another session (so every create looks for it, and none is answered by it), three
    /// times each, in the order none, with, with, none, none, with: each run adds its questions to the
    /// database, which slows the next a little, so neither side always runs later. A run of 3 s moves by up
    /// to a tenth from one to the next on this machine, twice the goal, so the sides are held as means.
    pub(super) async fn creates_with_a_rule(&self) -> Figure {
        use anteroom_domain::{
            round::ResponseAction,
            standing::{NewStandingAnswer, QuestionMatch},
        };
        eprintln!("bench: question creates with and without a standing answer in force");
        let elsewhere = sessions_with_tokens(self.store.as_ref(), "rule-home", 1).await;
        let home = anteroom_domain::ids::SessionId::parse(elsewhere[0].0.clone()).expect("id");
        let rule = self
            .store
            .create_standing_answer(NewStandingAnswer {
                created_by: "bench".to_owned(),
                session_id: Some(home),
                question: QuestionMatch {
                    server: "bench-mcp".to_owned(),
                    tool: "deploy".to_owned(),
                    message: "A question nobody asks here".to_owned(),
                    schema: "{}".to_owned(),
                },
                action: ResponseAction::Accept,
                content: None,
                expires_at: SystemClock.now() + chrono::Duration::hours(1),
                use_limit: None,
                prefix: false,
            })
            .await
            .expect("rule");
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for (run, in_force) in [false, true, true, false, false, true]
            .into_iter()
            .enumerate()
        {
            self.store
                .pause_standing_answer(rule.id, !in_force, "bench")
                .await
                .expect("pause or resume the rule");
            if !in_force {
                // What this process remembers of the rules in force is trusted for a second: past it, the
                // paused rule is not among them.
                tokio::time::sleep(Duration::from_millis(1_100)).await;
            }
            assert_eq!(
                self.store.standing_answers_in_force().await.expect("read"),
                in_force
            );
            let sessions = sessions_with_tokens(
                self.store.as_ref(),
                &format!("rule-{run}"),
                CONNECTIONS * 16,
            )
            .await;
            let rate = create_throughput(self.create_urls(sessions)).await;
            if in_force { &mut with } else { &mut without }.push(rate);
        }
        let mean = |rates: &[f64]| rates.iter().sum::<f64>() / rates.len() as f64;
        let list = |rates: &[f64]| {
            rates
                .iter()
                .map(|rate| format!("{rate:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (some, none) = (mean(&with), mean(&without));
        let cost = 1.0 - some / none;
        Figure::new(
            "creates/s with a standing answer in force",
            format!("{some:.0}/s ({})", list(&with)),
            format!("{none:.0}/s with none ({})", list(&without)),
            format!("{:.1}% slower", cost * 100.0),
            "≤ 5% slower",
            Some(cost <= 0.05),
        )
    }

    /// The stored size of one created question (requests, summary and ids), for the bare insert loop.
    pub(super) async fn round_row_bytes(&self) -> usize {
        let round = self
            .store
            .open_rounds_everywhere(1)
            .await
            .ok()
            .and_then(|mut rounds| rounds.pop());
        round.map_or(600, |round| {
            serde_json::to_string(&round.requests).map_or(0, |r| r.len())
                + round.summary.len()
                + round.round_id.to_string().len() * 2
                + round.request_id.as_str().len()
                + round.session_id.as_str().len()
                + 120
        })
    }

    pub(super) async fn latencies(&self) -> Vec<Figure> {
        eprintln!("bench: answer latencies");
        let client = reqwest::Client::new();
        let (id, token) = sessions_with_tokens(self.store.as_ref(), "latency", 1)
            .await
            .pop()
            .expect("a session");

        // Long-poll: the poller waits; the clock runs from sending the answer to the poller's reply. Each sample
        // is followed by one of the parked ceiling, the same shape with no database (a waiting GET woken by a
        // POST), so a noisy moment of the machine lands on both.
        let mut long_poll = Vec::new();
        let mut parked = Vec::new();
        for i in 0..SAMPLES {
            let request_id = format!("lp-{i}");
            self.store
                .create_round(new_round(&id, &request_id, "Go?"))
                .await
                .expect("round");
            let poll_url = format!(
                "{}/api/v1/s/{token}/elicitations/{request_id}?wait=30",
                self.base
            );
            let poller = client.get(&poll_url).send();
            let waiting = tokio::spawn(async move { poller.await.map(|_| Instant::now()) });
            tokio::time::sleep(Duration::from_millis(15)).await;
            let sent = Instant::now();
            self.answer(&client, &request_id).await;
            if let Ok(Ok(received)) = waiting.await {
                long_poll.push(received.saturating_duration_since(sent));
            }

            let poller = client.get(&self.parked).send();
            let waiting = tokio::spawn(async move { poller.await.map(|_| Instant::now()) });
            tokio::time::sleep(Duration::from_millis(15)).await;
            let sent = Instant::now();
            let _ = client.post(&self.parked).send().await;
            if let Ok(Ok(received)) = waiting.await {
                parked.push(received.saturating_duration_since(sent));
            }
        }

        // The event stream: the clock runs from sending the answer to the `round.answered` event.
        let (events_tx, mut events_rx) =
            tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
        let mut stream = client
            .get(format!("{}/api/v1/events", self.base))
            .bearer_auth(&self.admin_key)
            .send()
            .await
            .expect("event stream");
        tokio::spawn(async move {
            let mut buffer = String::new();
            while let Ok(Some(chunk)) = stream.chunk().await {
                let at = Instant::now();
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    if event.contains("event: round.answered") {
                        let _ = events_tx.send((event, at));
                    }
                }
            }
        });
        let mut sse = Vec::new();
        for i in 0..SAMPLES {
            let request_id = format!("sse-{i}");
            self.store
                .create_round(new_round(&id, &request_id, "Go?"))
                .await
                .expect("round");
            let sent = Instant::now();
            self.answer(&client, &request_id).await;
            while let Ok(Some((event, at))) =
                tokio::time::timeout(Duration::from_secs(5), events_rx.recv()).await
            {
                if event.contains(&format!("\"request_id\":\"{request_id}\"")) {
                    sse.push(at.saturating_duration_since(sent));
                    break;
                }
            }
        }

        let (c50, c99) = (percentile(&parked, 50.0), percentile(&parked, 99.0));
        let row = |name: &str, samples: &[Duration]| {
            let (p50, p99) = (percentile(samples, 50.0), percentile(samples, 99.0));
            let ratio = p99.as_secs_f64() / c99.as_secs_f64();
            let tail = p99.as_secs_f64() / p50.as_secs_f64();
            Figure::new(
                name,
                format!("p50 {} · p99 {} (p99 {tail:.1}× p50)", ms(p50), ms(p99)),
                format!(
                    "a parked GET woken by a POST, no database: p50 {} · p99 {}",
                    ms(c50),
                    ms(c99)
                ),
                format!("p99 {ratio:.1}×"),
                "p99 ≤ 10× and ≤ 3× its own p50",
                Some(ratio <= 10.0 && tail <= 3.0),
            )
        };
        vec![
            row("answer → waiting long-poll", &long_poll),
            row("answer → SSE subscriber", &sse),
        ]
    }

    /// A Claude Code hook for a tool the policy lets through (`Read`): the empty "no decision" reply every
    /// read-only call waits for, authenticated by the session's token.
    pub(super) async fn hook_pass_through(&self) -> Figure {
        eprintln!("bench: hook pass-through");
        let client = reqwest::Client::new();
        let (_, token) = sessions_with_tokens(self.store.as_ref(), "hooked", 1)
            .await
            .pop()
            .expect("a session");
        let event = serde_json::json!({
            "session_id": "4f2a9c1e-8d7b-4c1a-9e2f-0123456789ab",
            "cwd": "/home/rita/shop",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "README.md"},
            "tool_use_id": "toolu_01ABC"
        });
        let url = format!("{}/hooks/claude/pre-tool-use", self.base);
        let mut hooks = Vec::new();
        let mut loopback = Vec::new();
        for _ in 0..SAMPLES * 5 {
            let sent = Instant::now();
            let reply = client
                .post(&url)
                .bearer_auth(&token)
                .json(&event)
                .send()
                .await;
            if reply.is_ok_and(|reply| reply.status() == 200) {
                hooks.push(sent.elapsed());
            }
            let sent = Instant::now();
            if client.get(&self.constant).send().await.is_ok() {
                loopback.push(sent.elapsed());
            }
        }
        let (p50, p99) = (percentile(&hooks, 50.0), percentile(&hooks, 99.0));
        let (lp50, lp99) = (percentile(&loopback, 50.0), percentile(&loopback, 99.0));
        let ratio = p99.as_secs_f64() / lp99.as_secs_f64();
        Figure::new(
            "hook: a read-only tool's no-decision reply",
            format!("p50 {} · p99 {}", ms(p50), ms(p99)),
            format!("loopback round trip p50 {} · p99 {}", ms(lp50), ms(lp99)),
            format!("p99 {ratio:.1}×"),
            "p99 ≤ 5 ms",
            Some(p99 <= Duration::from_millis(5)),
        )
    }

    pub(super) async fn answer(&self, client: &reqwest::Client, request_id: &str) {
        let reply = client
            .patch(format!(
                "{}/api/v1/elicitations/{request_id}/respond",
                self.base
            ))
            .bearer_auth(&self.admin_key)
            .json(&json!({"action_type": "accept", "content": {"env": "staging"}}))
            .send()
            .await
            .expect("answer");
        assert!(
            reply.status().is_success(),
            "answer refused: {}",
            reply.status()
        );
    }

    /// A question's push: from the producer's create to the push service receiving the encrypted, signed
    /// message, with the outbox delivered on the event as `anteroom serve` does. The ceiling is the create
    /// alone, measured in the same loop.
    pub(super) async fn push_arrival(&self) -> Figure {
        use axum::{http::StatusCode, routing::post};
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
        eprintln!("bench: question to push");
        let (arrived, mut arrivals) = tokio::sync::mpsc::unbounded_channel::<Instant>();
        let service = Router::new().route(
            "/push/bench",
            post(move || {
                let arrived = arrived.clone();
                async move {
                    let _ = arrived.send(Instant::now());
                    StatusCode::CREATED
                }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("port");
        let endpoint = format!(
            "http://{}/push/bench",
            listener.local_addr().expect("address")
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, service).await;
        });
        let person = add_user(
            self.store.as_ref(),
            "pushed",
            "bench-password",
            Role::Responder,
        )
        .await
        .expect("person");
        // A person whose digest is off: with the default, past 5 questions a minute the rest wait for one digest
        // at the minute's end (by design, docs/reach.md#digests; tests/suite/push.rs shows the held ones listed),
        // and a bench of 100 questions in 25 s measured the digest, not the push: "52 of 100 arrived".
        assert!(
            self.store
                .set_digest_after(&person.id, 0)
                .await
                .expect("digest off")
        );
        let browser = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        self.store
            .save_push_subscription(&anteroom_domain::reach::PushSubscription {
                id: "bench-browser".to_owned(),
                user_id: person.id,
                endpoint,
                p256dh: URL_SAFE_NO_PAD.encode(browser.public_key().to_sec1_bytes()),
                auth: URL_SAFE_NO_PAD.encode([7_u8; 16]),
                device: "bench".to_owned(),
                created_at: self.store.now(),
            })
            .await
            .expect("subscription");
        let outbox = anteroom_server::jobs::deliver_on_events(self.state.clone());
        let (_, token) = sessions_with_tokens(self.store.as_ref(), "pushed", 1)
            .await
            .pop()
            .expect("a session");
        let client = reqwest::Client::new();
        let url = format!(
            "{}/api/v1/s/{token}/servers/bench-mcp/elicitations",
            self.base
        );
        let (mut pushes, mut creates) = (Vec::new(), Vec::new());
        // Each sample waits out the per-session create limit (5/s), so fewer than the other rows.
        const PUSHES: usize = SAMPLES / 2;
        for n in 0..PUSHES {
            // The per-session create limit is 5/s: keep under it.
            tokio::time::sleep(Duration::from_millis(220)).await;
            let sent = Instant::now();
            let reply = client
                .post(&url)
                .json(&json!({"mode": "form", "message": format!("Deploy build {n}?"),
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                    "_meta": {"com.pulsemcp/request-id": format!("push-{n}"), "com.pulsemcp/tool-name": "deploy"}}))
                .send()
                .await
                .expect("create");
            assert_eq!(reply.status(), 201, "create refused");
            creates.push(sent.elapsed());
            match tokio::time::timeout(Duration::from_secs(10), arrivals.recv()).await {
                Ok(Some(at)) => pushes.push(at - sent),
                _ => eprintln!("bench: a push did not arrive within 10 s"),
            }
        }
        outbox.abort();
        let (p50, p99) = (percentile(&pushes, 50.0), percentile(&pushes, 99.0));
        let (cp50, cp99) = (percentile(&creates, 50.0), percentile(&creates, 99.0));
        let all_arrived = pushes.len() == PUSHES;
        Figure::new(
            "push: a question to the push service",
            format!(
                "p50 {} · p99 {} ({} of {PUSHES} arrived)",
                ms(p50),
                ms(p99),
                pushes.len()
            ),
            format!("the create alone p50 {} · p99 {}", ms(cp50), ms(cp99)),
            format!("p99 {:.1}×", p99.as_secs_f64() / cp99.as_secs_f64()),
            "all arrive, p99 ≤ 1 s",
            Some(all_arrived && p99 <= Duration::from_secs(1)),
        )
    }
}
