-- Response times (docs/teams.md#response-times): every figure is one range scan of this index, which holds
-- everything the counts read, so the table itself is never visited.
CREATE INDEX rounds_response_times ON rounds
    (created_at_ms, session_id, server, responded_by, responded_at_ms, failure_code, status);
