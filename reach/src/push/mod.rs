//! Web Push (docs/reach.md#push): a new question is pushed to the browsers of everyone who may answer,
//! encrypted for each (RFC 8291, `aes128gcm`) and signed as this instance (RFC 8292, VAPID); its end pushes
//! again to close the notification (same `tag`). A simple question's notification carries buttons whose
//! single-use answer tokens the service worker posts to `/answer/{token}`.

mod deliver;
mod routes;
mod vapid;

pub use deliver::{FAN_OUT_ENDPOINT, deliver, notification};
pub use routes::routes;
pub use vapid::{Vapid, vapid_authorization};
