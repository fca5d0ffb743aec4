-- Quiet hours (docs/reach.md#quiet-hours): while it is between these minutes of the day in the person's time zone,
-- pushes and mails to them wait (held, not dropped). NULL: never quiet.
ALTER TABLE users ADD COLUMN quiet_from_minute INTEGER;
ALTER TABLE users ADD COLUMN quiet_until_minute INTEGER;
ALTER TABLE users ADD COLUMN time_zone TEXT;
