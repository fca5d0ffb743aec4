//! Pieces of UI shared by several pages.

pub mod header;
