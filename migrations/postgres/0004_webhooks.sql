-- Outgoing webhooks (SPEC §6.1): one row per event and endpoint, written in the transaction of the change that
-- caused it, delivered with retries by the outbox job. The dedupe key makes an event at most one row per
-- endpoint, however many instances observe it.
CREATE TABLE webhook_outbox (
    id TEXT PRIMARY KEY NOT NULL,
    endpoint TEXT NOT NULL,
    format TEXT NOT NULL CHECK (format IN ('json', 'slack')),
    event TEXT NOT NULL,
    dedupe_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at_ms BIGINT NOT NULL,
    locked_until_ms BIGINT,
    last_status BIGINT,
    last_error TEXT,
    created_at_ms BIGINT NOT NULL,
    delivered_at_ms BIGINT
);

CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at_ms) WHERE status = 'pending';
