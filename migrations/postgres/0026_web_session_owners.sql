-- Whose each browser session is (docs/operations.md#browser-sessions): a person's page lists the browsers they are
-- signed in on and signs one out; an admin signs a person out everywhere. The handle names a session without
-- being its secret id.
ALTER TABLE web_sessions ADD COLUMN user_id TEXT;
ALTER TABLE web_sessions ADD COLUMN handle TEXT;
ALTER TABLE web_sessions ADD COLUMN device TEXT;
ALTER TABLE web_sessions ADD COLUMN seen_at_ms BIGINT;
CREATE INDEX web_sessions_user ON web_sessions (user_id);
-- Sessions signed in before this migration: their owner from their data, so signing someone out everywhere ends them
-- too (they have no handle, so a profile does not list them until they are used again).
UPDATE web_sessions SET user_id = data::jsonb->>'user_id';
