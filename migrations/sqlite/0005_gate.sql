-- The gate's health, shared by every instance, so one outage opens one incident however many instances probe.
CREATE TABLE gate_state (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    healthy INTEGER NOT NULL,
    since_ms INTEGER NOT NULL,
    last_checked_ms INTEGER
);
