-- People who sign in through the company's identity provider (docs/operations.md): who they are there, by the
-- provider's issuer and subject, and when they last came through it. Their password_hash is empty: a person
-- made at their first provider sign-in has no password, and an empty hash never verifies.
CREATE TABLE provider_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at_ms BIGINT NOT NULL,
    signed_in_at_ms BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX provider_identities_user ON provider_identities (user_id);
