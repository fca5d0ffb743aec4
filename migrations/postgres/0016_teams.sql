-- A team's queue (docs/teams.md): groups of people, who answers a session's questions, and questions an admin
-- handed to someone.
CREATE TABLE responder_groups (
    name TEXT PRIMARY KEY NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE TABLE group_members (
    group_name TEXT NOT NULL REFERENCES responder_groups (name) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (group_name, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);

-- JSON lists of responders ("group:ops", "user:rita", "key:orchestrator"): the session's, and per server.
ALTER TABLE session_settings ADD COLUMN responders TEXT;
ALTER TABLE session_settings ADD COLUMN server_responders TEXT;

-- A question an admin handed to one person, group or key; it goes with its round.
CREATE TABLE round_assignments (
    round_id TEXT PRIMARY KEY NOT NULL REFERENCES rounds (round_id) ON DELETE CASCADE,
    assignee TEXT NOT NULL,
    assigned_by TEXT NOT NULL,
    assigned_at_ms BIGINT NOT NULL
);
