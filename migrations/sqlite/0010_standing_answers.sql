-- Standing answers: a person's "answer questions like this the same way", for a while and a number of times.
-- A new question of the same server, tool, message and form (in the rule's session, or anywhere when it names
-- none) is answered at once by the newest such rule still in force.
CREATE TABLE standing_answers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_by TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    session_id TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    message TEXT NOT NULL,
    requested_schema TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('accept', 'decline', 'cancel')),
    content TEXT,
    expires_at_ms INTEGER NOT NULL,
    use_limit INTEGER,
    uses INTEGER NOT NULL DEFAULT 0,
    revoked_at_ms INTEGER
);
CREATE INDEX standing_answers_question ON standing_answers (tool, server);
CREATE INDEX standing_answers_session ON standing_answers (session_id);
