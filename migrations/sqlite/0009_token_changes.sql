-- How many times any session's producer token has changed, counted by the database itself (whoever writes it:
-- the server, or the CLI in another process). A server keeps pending questions' poll state in memory and reads
-- this one row once a second: when it moved, a token was revoked or replaced somewhere it was not told about,
-- and everything remembered is dropped.
CREATE TABLE producer_token_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    changes INTEGER NOT NULL
);
INSERT INTO producer_token_changes (id, changes) VALUES (1, 0);

CREATE TRIGGER sessions_token_changed AFTER UPDATE OF producer_token_hash ON sessions
WHEN OLD.producer_token_hash IS NOT NEW.producer_token_hash
BEGIN
    UPDATE producer_token_changes SET changes = changes + 1 WHERE id = 1;
END;

CREATE TRIGGER sessions_token_deleted AFTER DELETE ON sessions WHEN OLD.producer_token_hash IS NOT NULL
BEGIN
    UPDATE producer_token_changes SET changes = changes + 1 WHERE id = 1;
END;
