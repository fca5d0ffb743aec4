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

-- Whether an admin vouched for the person's e-mail (`anteroom user add --email`, `anteroom user email`): only such
-- an e-mail links a first provider sign-in to an existing person. An e-mail a person typed on their own profile
-- never does, or anyone could claim a colleague's account by typing their address first.
ALTER TABLE users ADD COLUMN email_vouched BOOLEAN NOT NULL DEFAULT FALSE;
