//! Pieces of UI shared by several pages.

pub mod banner;
pub mod countdown;
pub mod fields;
pub mod header;
pub mod message;
pub mod moment;
pub mod page_title;
pub mod server_form;
