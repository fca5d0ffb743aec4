//! The Slack app (docs/reach.md#slack): questions posted to a channel with buttons for the simple ones,
//! answered from a click as if from the page, and each message updated when its question ends.
//!
//! Posting and updating ride the webhook outbox (format `slack_app`), so a Slack outage delays messages and
//! loses none; clicks arrive at `POST /integrations/slack/actions`, signed by Slack.

mod actions;
mod blocks;
mod deliver;
mod signature;
mod web_api;

pub use actions::routes;
pub use deliver::deliver;
pub use signature::{SignatureError, sign, verify_signature};
pub use web_api::SlackClient;
