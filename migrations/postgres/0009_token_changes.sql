-- How many times any session's producer token has changed, counted by the database itself (whoever writes it:
-- any instance, or the CLI in another process). An instance keeps pending questions' poll state in memory and
-- reads this one row once a second: when it moved, a token was revoked or replaced somewhere it was not told
-- about, and everything remembered is dropped.
CREATE TABLE producer_token_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    changes BIGINT NOT NULL
);
INSERT INTO producer_token_changes (id, changes) VALUES (1, 0);

CREATE FUNCTION count_token_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE producer_token_changes SET changes = changes + 1 WHERE id = 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER sessions_token_changed AFTER UPDATE OF producer_token_hash ON sessions
FOR EACH ROW WHEN (OLD.producer_token_hash IS DISTINCT FROM NEW.producer_token_hash)
EXECUTE FUNCTION count_token_change();

CREATE TRIGGER sessions_token_deleted AFTER DELETE ON sessions
FOR EACH ROW WHEN (OLD.producer_token_hash IS NOT NULL)
EXECUTE FUNCTION count_token_change();
