-- The attention queue's order, kept by the database itself: each session's count of pending questions and when
-- the oldest of them was asked, kept up to date whenever a round enters or leaves `pending` (whoever writes it: the
-- server, the sweep, the CLI). The home page then reads its first rows off one index instead of grouping every
-- open question of every session.
ALTER TABLE sessions ADD COLUMN open_rounds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN oldest_open_ms INTEGER;

UPDATE sessions SET
    open_rounds = (SELECT COUNT(*) FROM rounds r WHERE r.session_id = sessions.id AND r.status = 'pending'),
    oldest_open_ms = (SELECT MIN(r.created_at_ms) FROM rounds r WHERE r.session_id = sessions.id AND r.status = 'pending');

-- Each change moves the count by one (SQLite has one writer at a time, so nothing interleaves) and re-reads the
-- oldest time from the first entry of `rounds_pending_session`: no trigger counts a session's rounds.
CREATE TRIGGER rounds_open_after_insert AFTER INSERT ON rounds WHEN NEW.status = 'pending'
BEGIN
    UPDATE sessions SET open_rounds = open_rounds + 1, oldest_open_ms = (SELECT MIN(r.created_at_ms) FROM rounds r WHERE r.session_id = NEW.session_id AND r.status = 'pending')
    WHERE id = NEW.session_id;
END;

CREATE TRIGGER rounds_open_after_status AFTER UPDATE OF status ON rounds
WHEN (OLD.status = 'pending') <> (NEW.status = 'pending')
BEGIN
    UPDATE sessions SET
        open_rounds = open_rounds + CASE WHEN NEW.status = 'pending' THEN 1 ELSE -1 END,
        oldest_open_ms = (SELECT MIN(r.created_at_ms) FROM rounds r WHERE r.session_id = NEW.session_id AND r.status = 'pending')
    WHERE id = NEW.session_id;
END;

CREATE TRIGGER rounds_open_after_delete AFTER DELETE ON rounds WHEN OLD.status = 'pending'
BEGIN
    UPDATE sessions SET open_rounds = open_rounds - 1, oldest_open_ms = (SELECT MIN(r.created_at_ms) FROM rounds r WHERE r.session_id = OLD.session_id AND r.status = 'pending')
    WHERE id = OLD.session_id;
END;

-- The queue's order as an index: sessions with open questions (oldest first), then lost ones, then the rest,
-- most recently changed first. The expression must match the queue query's ORDER BY exactly.
CREATE INDEX sessions_queue ON sessions (
    (CASE WHEN open_rounds > 0 THEN 0 WHEN lost_reason IS NOT NULL THEN 1 ELSE 2 END),
    oldest_open_ms, updated_at_ms DESC, id
);
