//! The database's schema against the migrations this binary carries: what is applied, what is pending, and
//! whether a newer Anteroom has upgraded the database past what this binary knows (then it must not start).

use crate::StoreError;

/// A migration this binary carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownMigration {
    pub version: i64,
    pub description: String,
}

/// A migration the database records as applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    pub version: i64,
    pub description: String,
    /// When it was applied, as the database wrote it.
    pub applied_at: String,
    /// False when it failed half-way (never on PostgreSQL, where a migration is one transaction).
    pub success: bool,
}

/// The migrations this binary carries beside those the database has applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaStatus {
    pub known: Vec<KnownMigration>,
    pub applied: Vec<AppliedMigration>,
    /// The Anteroom release that most recently began running on the database (from migration 21 on).
    pub newest_release: Option<String>,
}

impl SchemaStatus {
    /// The newest migration applied successfully: the database's schema version (`None`: an empty database).
    pub fn database_version(&self) -> Option<i64> {
        self.applied
            .iter()
            .filter(|applied| applied.success)
            .map(|applied| applied.version)
            .max()
    }

    /// The newest migration this binary carries.
    pub fn binary_version(&self) -> i64 {
        self.known
            .iter()
            .map(|known| known.version)
            .max()
            .unwrap_or(0)
    }

    /// The migrations this binary would apply.
    pub fn pending(&self) -> Vec<&KnownMigration> {
        self.known
            .iter()
            .filter(|known| {
                !self
                    .applied
                    .iter()
                    .any(|applied| applied.version == known.version && applied.success)
            })
            .collect()
    }

    /// Applied migrations this binary does not carry: a newer Anteroom applied them.
    pub fn unknown(&self) -> Vec<&AppliedMigration> {
        self.applied
            .iter()
            .filter(|applied| {
                !self
                    .known
                    .iter()
                    .any(|known| known.version == applied.version)
            })
            .collect()
    }

    /// Why this binary must not run on the database, when a newer one upgraded it.
    pub fn refusal(&self) -> Option<StoreError> {
        let newest = self
            .unknown()
            .into_iter()
            .max_by_key(|applied| applied.version)?;
        Some(StoreError::SchemaNewer {
            database: newest.version,
            description: newest.description.clone(),
            release: self
                .newest_release
                .clone()
                .filter(|release| release != ANTEROOM_VERSION)
                .map_or_else(
                    || "a newer Anteroom".to_owned(),
                    |release| format!("Anteroom {release}"),
                ),
            binary: self.binary_version(),
        })
    }
}

/// The version of Anteroom this store is built as (the workspace's one version).
pub const ANTEROOM_VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod tests {
    use super::*;

    fn known(versions: &[i64]) -> Vec<KnownMigration> {
        versions
            .iter()
            .map(|version| KnownMigration {
                version: *version,
                description: format!("step {version}"),
            })
            .collect()
    }

    fn applied(versions: &[i64]) -> Vec<AppliedMigration> {
        versions
            .iter()
            .map(|version| AppliedMigration {
                version: *version,
                description: format!("step {version}"),
                applied_at: "2026-12-04 20:00:00".to_owned(),
                success: true,
            })
            .collect()
    }

    #[test]
    fn an_older_database_has_pending_steps_and_a_newer_one_is_refused_naming_both_versions() {
        let older = SchemaStatus {
            known: known(&[1, 2, 3]),
            applied: applied(&[1]),
            newest_release: None,
        };
        assert_eq!(older.database_version(), Some(1));
        assert_eq!(older.binary_version(), 3);
        assert_eq!(older.pending().len(), 2);
        assert!(older.refusal().is_none());

        let empty = SchemaStatus {
            known: known(&[1, 2]),
            applied: Vec::new(),
            newest_release: None,
        };
        assert_eq!(empty.database_version(), None);
        assert_eq!(empty.pending().len(), 2);

        let mut newer = SchemaStatus {
            known: known(&[1, 2]),
            applied: applied(&[1, 2, 3, 4]),
            newest_release: None,
        };
        assert!(newer.pending().is_empty());
        let message = newer.refusal().expect("refused").to_string();
        assert!(
            message.contains("which a newer Anteroom applied"),
            "{message}"
        );
        newer.newest_release = Some("9.1.0".to_owned());
        let message = newer.refusal().expect("refused").to_string();
        assert!(
            message.contains("which Anteroom 9.1.0 applied"),
            "{message}"
        );
        assert!(message.contains("schema version 4 (step 4)"), "{message}");
        assert!(message.contains("knows up to 2"), "{message}");
        assert!(message.contains(ANTEROOM_VERSION), "{message}");
    }
}
