-- The record (docs/audit.md): every decision and every change of who may decide. An entry is written to
-- audit_pending in the transaction of the change it records, then sealed into audit_log in order, each entry's
-- hash covering the one before, so a deleted or edited entry breaks the chain.
CREATE TABLE audit_pending (
    id TEXT PRIMARY KEY NOT NULL,
    at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL
);

CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY NOT NULL,
    at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at_ms);

-- The last sealed entry: what the next one chains to, and how a cut-off tail is noticed.
CREATE TABLE audit_head (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
