-- Rounds: one pause of an agent for human input (SPEC §2, §2.1, §5.3).
-- JSON documents are stored as text, verbatim; times are Unix milliseconds (UTC).
CREATE TABLE rounds (
    round_id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- What a producer polls by: its pulsemcp request id, or the round id.
    request_id TEXT NOT NULL UNIQUE,
    logical_operation_id TEXT NOT NULL,
    server TEXT,
    operation_kind TEXT NOT NULL CHECK (operation_kind IN ('tool', 'prompt', 'resource')),
    operation_name TEXT NOT NULL,
    requests TEXT NOT NULL,
    request_state TEXT,
    round_index BIGINT NOT NULL,
    round_limit BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('pending', 'response_validated', 'delivery_started', 'delivered', 'resolved', 'failed')),
    created_at_ms BIGINT NOT NULL,
    deadline_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    lease_owner TEXT,
    lease_token TEXT,
    lease_expires_at_ms BIGINT,
    responses TEXT,
    idempotency_key TEXT,
    responded_at_ms BIGINT,
    responded_by TEXT,
    delivery_attempts BIGINT NOT NULL DEFAULT 0,
    delivered_at_ms BIGINT,
    resolved_at_ms BIGINT,
    failure_code TEXT,
    failure_message TEXT,
    failed_at_ms BIGINT,
    summary TEXT NOT NULL,
    version BIGINT NOT NULL
);

CREATE INDEX rounds_session_created ON rounds (session_id, created_at_ms);
-- The expiry sweep and "is anything still open" both look only at pending rounds.
CREATE INDEX rounds_pending_deadline ON rounds (deadline_ms) WHERE status = 'pending';
CREATE INDEX rounds_pending_session ON rounds (session_id, created_at_ms) WHERE status = 'pending';
-- Lease recovery looks only at rounds mid-delivery.
CREATE INDEX rounds_delivery_lease ON rounds (lease_expires_at_ms)
    WHERE status IN ('delivery_started', 'delivered');
