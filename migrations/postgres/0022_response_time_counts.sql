-- Response times kept as questions end (docs/teams.md#response-times): the page reads these counts, a few rows
-- per day and key, instead of scanning every round of the period; they outlive the rounds' retention.
CREATE TABLE response_time_counts (
    -- Days since 1970-01-01 (UTC) of the questions' asking.
    day BIGINT NOT NULL,
    -- 'd' the day itself (subject empty), 's' a session, 'v' a server, 'p' the person who answered.
    dimension TEXT NOT NULL,
    subject TEXT NOT NULL,
    -- How they ended: 'a' answered, 'u' answered but never delivered, 'e' expired, 'o' otherwise.
    ending TEXT NOT NULL,
    -- The waiting-time bucket of an answer (domain::stats::BUCKET_BOUNDS_MS); 0 when not answered.
    bucket BIGINT NOT NULL,
    questions BIGINT NOT NULL,
    PRIMARY KEY (day, dimension, subject, ending, bucket)
);

-- 1 once an ended round's outcome is in the counts (2 only inside the transaction that counts it); rounds
-- already here are counted by the tally job in batches after the upgrade.
ALTER TABLE rounds ADD COLUMN counted INTEGER NOT NULL DEFAULT 0;

-- What is not counted yet: the open rounds and those ended since the last tally.
CREATE INDEX rounds_uncounted ON rounds (counted, status, created_at_ms) WHERE counted IN (0, 2);

-- The response-time scans are gone; the counts hold what the index served.
DROP INDEX rounds_response_times;
