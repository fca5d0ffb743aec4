-- Each period the response-times page shows (7, 30 and 90 days), its counts per session, server and person kept
-- summed over the period's days, so the page reads a row per key and outcome instead of one per key, outcome and
-- day (docs/teams.md#response-times). Always the sums of `response_time_counts` from `first_day` on.
CREATE TABLE response_time_periods (
    period BIGINT PRIMARY KEY,
    -- The first day the sums hold; NULL until the tally first builds them (they hold nothing then).
    first_day BIGINT
);
INSERT INTO response_time_periods (period, first_day) VALUES (7, NULL), (30, NULL), (90, NULL);

CREATE TABLE response_time_period_counts (
    period BIGINT NOT NULL,
    -- 's' a session, 'v' a server, 'p' the person who answered; as in `response_time_counts`.
    dimension TEXT NOT NULL,
    subject TEXT NOT NULL,
    ending TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    questions BIGINT NOT NULL,
    PRIMARY KEY (period, dimension, subject, ending, bucket)
) WITHOUT ROWID; -- the page reads a period's sums in their key's order, so they are kept in it
