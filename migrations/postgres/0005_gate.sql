-- The gate's health, shared by every instance, so one outage opens one incident however many instances probe.
CREATE TABLE gate_state (
    id BIGINT PRIMARY KEY NOT NULL CHECK (id = 1),
    healthy BOOLEAN NOT NULL,
    since_ms BIGINT NOT NULL,
    last_checked_ms BIGINT
);
