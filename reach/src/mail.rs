//! Questions by e-mail (docs/reach.md#e-mail): a new question's `email` delivery is fanned out into one per
//! person who asked for mail, each sent when their preference says (at once, or if still unanswered after
//! their minutes), holding the question and one answer link per quick answer. A link's token is single-use,
//! bound to that person, question and answer, and stored only as its hash.

use std::time::Duration as StdDuration;

use anteroom_domain::{
    access::{Principal, User},
    expiry::wire_time,
    limits::Limits,
    reach::{
        AnswerToken, DIGEST_ENDPOINT_PREFIX, DIGEST_LISTED_MAX, Digest, EmailQuestions,
        QuickAnswer, ReachChannel, first_line, quick_answers,
    },
    round::{Round, RoundStatus},
    webhook::{AttemptOutcome, QueuedDelivery, WebhookDelivery, WebhookFormat},
};
use lettre::{
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
    message::{Mailbox, header::ContentType},
};

use anteroom_api::{AppState, MailConfig, credentials};

/// The endpoint of a question's one fan-out delivery; each person's is `user:{id}`.
pub const FAN_OUT_ENDPOINT: &str = "people";
/// An SMTP exchange gives up after this long.
const SMTP_TIMEOUT: StdDuration = StdDuration::from_secs(10);
/// Characters of the agent's words a mail quotes.
const MESSAGE_CHARS: usize = 5_000;
/// Characters of a subject's first line and of each answer's label.
const LINE_CHARS: usize = 80;

/// The SMTP connection settings, checked once per tick.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    pub fn new(config: &MailConfig) -> anyhow::Result<Self> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(&config.smtp_url)
            .map_err(|error| anyhow::anyhow!("ANTEROOM_SMTP_URL cannot be used: {error}"))?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        let from = config
            .from
            .parse()
            .map_err(|error| anyhow::anyhow!("ANTEROOM_SMTP_FROM is not an address: {error}"))?;
        Ok(Self { transport, from })
    }
}

fn done() -> AttemptOutcome {
    AttemptOutcome::Delivered { status: 200 }
}

fn failed(error: impl std::fmt::Display) -> AttemptOutcome {
    AttemptOutcome::Failed {
        status: None,
        error: error.to_string(),
    }
}

/// Sends one `email` delivery: the fan-out, or one person's mail.
pub async fn deliver(
    state: &AppState,
    mailer: &Mailer,
    delivery: &WebhookDelivery,
) -> AttemptOutcome {
    if let Some(user_id) = delivery.endpoint.strip_prefix(DIGEST_ENDPOINT_PREFIX) {
        return mail_digest(state, mailer, user_id).await;
    }
    let Some(round_id) = delivery.round_id() else {
        return done();
    };
    let round = match state.store.get_round(round_id).await {
        Ok(round) => round,
        Err(error) if error.is_not_found() => return done(),
        Err(error) => return failed(format!("cannot read the question: {error}")),
    };
    if delivery.endpoint == FAN_OUT_ENDPOINT {
        return fan_out(state, &round, delivery).await;
    }
    match delivery.endpoint.strip_prefix("user:") {
        Some(user_id) => mail_one(state, mailer, &round, user_id).await,
        None => done(),
    }
}

/// One queued mail per person who wants this question, at the time their preference says.
async fn fan_out(state: &AppState, round: &Round, delivery: &WebhookDelivery) -> AttemptOutcome {
    let recipients = match state.store.email_recipients().await {
        Ok(recipients) => recipients,
        Err(error) => return failed(format!("cannot read who wants mail: {error}")),
    };
    let recent = match crate::digest::sent_lately(state, ReachChannel::Email).await {
        Ok(recent) => recent,
        Err(error) => return failed(format!("cannot count the recent mails: {error}")),
    };
    let scope = match state.store.answer_scope(round).await {
        Ok(scope) => scope,
        Err(error) => return failed(format!("cannot read who answers the question: {error}")),
    };
    let mut queued = Vec::new();
    for recipient in &recipients {
        let Some(due) = recipient.preference.send_at(round.created_at) else {
            continue;
        };
        // Only the people who may answer it are asked (docs/teams.md).
        match state
            .store
            .may_answer_in(&Principal::person(&recipient.user), &scope)
            .await
        {
            Ok(true) => {}
            Ok(false) => continue,
            Err(error) => return failed(format!("cannot read the person's groups: {error}")),
        }
        // Quiet hours hold the mail until they end; it is never dropped for them.
        let quiet = |at| {
            recipient
                .quiet
                .as_ref()
                .map_or(at, |quiet| crate::quiet::held_until(quiet, at))
        };
        let endpoint = format!("user:{}", recipient.user.id);
        let sent = recent.get(&endpoint).copied().unwrap_or(0);
        if (Digest {
            after: recipient.digest_after,
        })
        .holds(sent)
        {
            if let Err(error) = crate::digest::hold(
                state,
                &recipient.user.id,
                ReachChannel::Email,
                round.round_id,
                quiet(due),
            )
            .await
            {
                return failed(format!("cannot hold a mail for the digest: {error}"));
            }
            continue;
        }
        queued.push(QueuedDelivery {
            endpoint,
            format: WebhookFormat::Email,
            event: delivery.event.clone(),
            dedupe_key: format!("email:{}:{}", round.round_id, recipient.user.id),
            payload: delivery.payload.clone(),
            not_before: quiet(due),
        });
    }
    match state.store.enqueue_deliveries(&queued).await {
        Ok(()) => done(),
        Err(error) => failed(format!("cannot queue the mails: {error}")),
    }
}

async fn mail_one(
    state: &AppState,
    mailer: &Mailer,
    round: &Round,
    user_id: &str,
) -> AttemptOutcome {
    if round.status != RoundStatus::Pending || round.deadline <= state.store.now() {
        // Answered or ended before this person's mail was due: nothing to ask.
        return done();
    }
    let (user, to) = match recipient(state, user_id).await {
        Ok(Some(found)) => found,
        Ok(None) => return done(),
        Err(outcome) => return outcome,
    };
    // Handed to someone else since the mail was queued: not theirs to answer any more.
    match state
        .store
        .may_answer(&Principal::person(&user), round)
        .await
    {
        Ok(true) => {}
        Ok(false) => return done(),
        Err(error) => return failed(format!("cannot read who answers the question: {error}")),
    }
    let quick = quick_answers(round, &Limits::default()).unwrap_or_default();
    let links: Vec<(String, String)> = quick
        .iter()
        .map(|answer| {
            (
                answer.label.clone(),
                credentials::generate(credentials::ANSWER_TOKEN_PREFIX),
            )
        })
        .collect();
    let tokens: Vec<AnswerToken> = links
        .iter()
        .enumerate()
        .map(|(choice, (_, token))| AnswerToken {
            token_hash: credentials::hash(token),
            user_id: user.id.clone(),
            round_id: round.round_id,
            choice,
            channel: ReachChannel::Email,
            expires_at: round.deadline,
            used_at: None,
        })
        .collect();
    if let Err(error) = state.store.create_answer_tokens(&tokens).await {
        return failed(format!("cannot store the answer links: {error}"));
    }
    let public = &state.config.public_url;
    let message = Message::builder()
        .from(mailer.from.clone())
        .to(to)
        .subject(subject(round))
        .header(ContentType::TEXT_PLAIN)
        .body(body(round, public, &quick, &links));
    let message = match message {
        Ok(message) => message,
        Err(error) => return failed(format!("cannot build the mail: {error}")),
    };
    match mailer.transport.send(message).await {
        Ok(_) => {
            tracing::info!(user = %user.username, round = %round.round_id, "mail: question mailed");
            done()
        }
        Err(error) => failed(format!("the SMTP server refused the mail: {error}")),
    }
}

/// The person `user_id` and their address, while they may answer and still want mail.
async fn recipient(
    state: &AppState,
    user_id: &str,
) -> Result<Option<(User, Mailbox)>, AttemptOutcome> {
    let (user, email, preference) = tokio::try_join!(
        state.store.get_user(user_id),
        state.store.user_email(user_id),
        state.store.email_preference(user_id),
    )
    .map_err(|error| failed(format!("cannot read the person: {error}")))?;
    let (Some(user), Some(email)) = (user, email) else {
        return Ok(None);
    };
    if !user.role.can_answer() || preference.questions == EmailQuestions::Off {
        return Ok(None);
    }
    let Ok(to) = email.parse::<Mailbox>() else {
        tracing::warn!(user = %user.username, "mail: the stored address cannot be mailed");
        return Ok(None);
    };
    Ok(Some((user, to)))
}

/// One mail for the questions held for a person's digest that are still open, listed with their pages.
async fn mail_digest(state: &AppState, mailer: &Mailer, user_id: &str) -> AttemptOutcome {
    let (held, open) = match crate::digest::held(state, user_id, ReachChannel::Email).await {
        Ok(found) => found,
        Err(error) => return failed(format!("cannot read the held questions: {error}")),
    };
    if !open.is_empty() {
        let (user, to) = match recipient(state, user_id).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                crate::digest::release(state, user_id, ReachChannel::Email, &held).await;
                return done();
            }
            Err(outcome) => return outcome,
        };
        let message = Message::builder()
            .from(mailer.from.clone())
            .to(to)
            .subject(digest_subject(open.len()))
            .header(ContentType::TEXT_PLAIN)
            .body(digest_body(&open, &state.config.public_url));
        let message = match message {
            Ok(message) => message,
            Err(error) => return failed(format!("cannot build the digest: {error}")),
        };
        if let Err(error) = mailer.transport.send(message).await {
            return failed(format!("the SMTP server refused the digest: {error}"));
        }
        tracing::info!(user = %user.username, questions = open.len(), "mail: digest mailed");
    }
    crate::digest::release(state, user_id, ReachChannel::Email, &held).await;
    done()
}

/// `3 questions wait for you in Anteroom`.
pub fn digest_subject(count: usize) -> String {
    if count == 1 {
        "1 question waits for you in Anteroom".to_owned()
    } else {
        format!("{count} questions wait for you in Anteroom")
    }
}

/// The digest's text: each question's asker, tool, first line, deadline and page; the rest counted.
pub fn digest_body(open: &[Round], public_url: &str) -> String {
    let mut text =
        "More questions reached you in a minute than your digest setting sends one by one, so \
                    here they are together.\n\n"
            .to_owned();
    for round in open.iter().take(DIGEST_LISTED_MAX) {
        let message = round
            .requests
            .values()
            .next()
            .map(|request| request.message())
            .unwrap_or(&round.summary);
        text.push_str(&format!(
            "- {} asks, through {}, in session {}:\n  > {}\n  Answer by {} (UTC): {public_url}/sessions/{}\n\n",
            asker(round),
            first_line(&round.operation_name, LINE_CHARS),
            first_line(round.session_id.as_str(), LINE_CHARS),
            first_line(message, LINE_CHARS),
            wire_time(round.deadline).replace('T', " "),
            round.session_id,
        ));
    }
    if open.len() > DIGEST_LISTED_MAX {
        text.push_str(&format!(
            "And {} more: {public_url}/\n\n",
            open.len() - DIGEST_LISTED_MAX
        ));
    }
    text.push_str("You get this digest because of your e-mail setting in Anteroom (the digest count is on your profile).\n");
    text
}

fn asker(round: &Round) -> String {
    first_line(round.server.as_deref().unwrap_or("An agent"), LINE_CHARS)
}

/// `Question from shop: Deploy to production?` — one line, cut.
pub fn subject(round: &Round) -> String {
    let message = round
        .requests
        .values()
        .next()
        .map(|request| request.message())
        .unwrap_or(&round.summary);
    format!(
        "Question from {}: {}",
        asker(round),
        first_line(message, LINE_CHARS)
    )
}

/// The mail's text: who asks, the agent's words quoted line by line (so they cannot pass for Anteroom's own),
/// the deadline, one link per quick answer and the form's link.
pub fn body(
    round: &Round,
    public_url: &str,
    quick: &[QuickAnswer],
    links: &[(String, String)],
) -> String {
    let mut text = format!(
        "{} asks, through {}, in session {}:\n\n",
        asker(round),
        first_line(&round.operation_name, LINE_CHARS),
        first_line(round.session_id.as_str(), LINE_CHARS),
    );
    for request in round.requests.values() {
        let words: String = request.message().chars().take(MESSAGE_CHARS).collect();
        for line in words.lines() {
            text.push_str("> ");
            text.push_str(line);
            text.push('\n');
        }
        text.push('\n');
    }
    text.push_str(&format!(
        "Answer by {} (UTC); after that the agent is told nobody answered.\n\n",
        wire_time(round.deadline).replace('T', " ")
    ));
    if !quick.is_empty() {
        text.push_str("Answer from here (each link asks you to confirm):\n");
        for (label, token) in links {
            text.push_str(&format!(
                "  {}: {public_url}/answer/{token}\n",
                first_line(label, LINE_CHARS)
            ));
        }
        text.push('\n');
    }
    text.push_str(&format!(
        "Open the form: {public_url}/sessions/{}\n\n",
        round.session_id
    ));
    text.push_str("You get these mails because of your e-mail setting in Anteroom. The links work once, only for you, and only while the question is open.\n");
    text
}
