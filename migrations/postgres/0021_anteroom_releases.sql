-- The Anteroom releases that have run on this database (each recorded once, when it first migrated it), so an
-- older binary refused by a newer schema can name the release that upgraded it (docs/operations.md#upgrades).
CREATE TABLE anteroom_releases (
    version TEXT PRIMARY KEY,
    first_started_at_ms BIGINT NOT NULL
);
