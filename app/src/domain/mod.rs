//! The domain: sessions, rounds, answers and expiry as plain types and pure functions (no HTTP, no Leptos,
//! no database). Time always comes from an injected [`clock::Clock`].

/// Gives an enum its stored names: `as_str`, `parse` and `ALL`, from one list of `Variant => "name"`.
macro_rules! text_names {
    ($name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            pub fn parse(value: &str) -> Option<Self> {
                match value {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

pub mod access;
pub mod answer;
pub mod clock;
#[cfg(feature = "ssr")]
pub mod consent_url;
pub mod error;
pub mod expiry;
pub mod form;
pub mod gate;
pub mod ids;
pub mod limits;
pub mod round;
pub mod session;
pub mod webhook;
pub mod wire;

pub use error::ManagedInputError;

#[cfg(test)]
mod tests {
    use super::{access::Role, round, session};

    /// The stored names and the JSON names must never drift apart.
    fn agrees<T: serde::Serialize + Copy>(
        all: &[T],
        name: fn(T) -> &'static str,
        parse: fn(&str) -> Option<T>,
    ) {
        for value in all {
            let json = serde_json::to_value(value).expect("serialise");
            assert_eq!(json.as_str(), Some(name(*value)));
            assert!(parse(name(*value)).is_some());
        }
        assert!(parse("no-such-name").is_none());
    }

    #[test]
    fn stored_names_match_the_json_names() {
        agrees(
            round::RoundStatus::ALL,
            round::RoundStatus::as_str,
            round::RoundStatus::parse,
        );
        agrees(
            round::OperationKind::ALL,
            round::OperationKind::as_str,
            round::OperationKind::parse,
        );
        agrees(
            round::ResponseAction::ALL,
            round::ResponseAction::as_str,
            round::ResponseAction::parse,
        );
        agrees(
            session::SessionStatus::ALL,
            session::SessionStatus::as_str,
            session::SessionStatus::parse,
        );
        agrees(
            session::LostReason::ALL,
            session::LostReason::as_str,
            session::LostReason::parse,
        );
        agrees(Role::ALL, Role::as_str, Role::parse);
    }
}
