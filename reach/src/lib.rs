//! Every way a question leaves the page and an answer comes back: the outbox and its delivery loop, webhooks,
//! Web Push, Slack, e-mail with its answer links, digests and quiet hours. `server/` wires it: it merges
//! [`routes`] into the router and schedules [`outbox::run`].
//!
//! # How a question travels out
//!
//! Nothing here is sent while a request waits. When a question is created, the store writes it and, in the same
//! transaction, one outbox row per way out that is switched on (a webhook per configured endpoint, and one row
//! each for Slack, e-mail and push). [`outbox::run`] ticks every few seconds on every instance; each row is
//! claimed by exactly one instance just before its attempt, sent, and marked delivered or retried with backoff,
//! so an outage of a receiver delays a question and loses none.
//!
//! - **Webhooks** ([`outbox`]): the event JSON POSTed to the operator's URL, signed with
//!   `X-Anteroom-Signature: sha256=…` ([`outbox::signature`]).
//! - **Slack** ([`slack`]): a message with the question and, for simple ones, a button per quick answer,
//!   posted through the Web API and updated in place when the question ends.
//! - **E-mail** ([`mail`]): the `email` row fans out into one row per person who asked for mail, each sent at
//!   once or after their minutes, with a single-use answer link per quick answer.
//! - **Web Push** ([`push`]): the `push` row fans out into one encrypted notification per subscribed browser
//!   of everyone who may answer (RFC 8291, signed as this instance by VAPID, RFC 8292), with the same answer
//!   tokens behind its buttons; the question's end pushes again to close it.
//! - **Digests and quiet hours** ([`digest`], [`quiet`]): a person who gets more questions in a minute than
//!   they take one by one gets the rest as one mail or notification at the window's end, and nothing reaches
//!   them inside their quiet hours; held questions go out when those end.
//!
//! # How an answer comes back
//!
//! Every channel answers through the page's own path (`anteroom_api::answers::answer_one`), credited to the
//! person it came from, so the same checks, audit entry and live update follow whichever way it arrived:
//!
//! - **Slack**: a click arrives at `POST /integrations/slack/actions`, its signature checked against the
//!   app's signing secret ([`slack::sign`] is the same computation) and the Slack user matched to a linked
//!   person.
//! - **E-mail and push buttons** ([`answer_links`]): `/answer/{token}`; a GET only shows what the link would
//!   answer (mail scanners open every link), a POST spends the single-use token in one statement.
//! - **Webhooks** carry no answers back: a receiver that wants to answer calls the API like any producer.

pub mod answer_links;
pub mod digest;
pub mod mail;
pub mod outbox;
pub mod push;
pub mod quiet;
pub mod slack;

use anteroom_api::AppState;
use axum::Router;

/// The HTTP surface of the ways out: Slack's actions and account links, the answer links, and push
/// subscriptions.
pub fn routes() -> Router<AppState> {
    Router::new()
        .merge(slack::routes())
        .merge(answer_links::routes())
        .merge(push::routes())
}
