-- The response-times page sums each session's, server's and person's counts over its period: read in this
-- order, the sums stream out of the index instead of sorting every count of the period (docs/teams.md#response-times).
CREATE INDEX response_time_counts_by_subject
    ON response_time_counts (dimension, subject, ending, bucket, day, questions);
