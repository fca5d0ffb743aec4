//! The one wire format of a time (RFC 3339, UTC, milliseconds, `Z`), as serde helpers for every record that
//! leaves the process, so an acknowledgement and every later read of the same record agree to the byte.

/// `#[serde(with = "wire::time")]` for a `DateTime<Utc>`; `wire::time::option` for an `Option` of one.
pub mod time {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::expiry::wire_time;

    pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&wire_time(*at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        DateTime::<Utc>::deserialize(deserializer)
    }

    pub mod option {
        use chrono::{DateTime, Utc};
        use serde::{Deserialize, Deserializer, Serializer};

        use crate::expiry::wire_time;

        pub fn serialize<S: Serializer>(
            at: &Option<DateTime<Utc>>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match at {
                Some(at) => serializer.serialize_some(&wire_time(*at)),
                None => serializer.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<DateTime<Utc>>, D::Error> {
            Option::<DateTime<Utc>>::deserialize(deserializer)
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Stamped {
        #[serde(with = "super::time")]
        at: DateTime<Utc>,
        #[serde(with = "super::time::option")]
        maybe: Option<DateTime<Utc>>,
    }

    #[test]
    fn times_travel_as_rfc3339_milliseconds_in_utc_and_come_back() {
        let at = DateTime::from_timestamp_millis(1_800_000_000_000).expect("valid");
        let stamped = Stamped {
            at,
            maybe: Some(at),
        };
        let text = serde_json::to_string(&stamped).expect("serialises");
        assert_eq!(
            text,
            r#"{"at":"2027-01-15T08:00:00.000Z","maybe":"2027-01-15T08:00:00.000Z"}"#
        );
        assert_eq!(
            serde_json::from_str::<Stamped>(&text).expect("parses"),
            stamped
        );
        let none = serde_json::to_string(&Stamped { at, maybe: None }).expect("serialises");
        assert!(none.ends_with(r#""maybe":null}"#));
    }
}
