-- Web Push (docs/reach.md#push): each person's browsers that turned push on, and the instance's own keys
-- (the VAPID key pair push services know it by), made once on first start and shared by every instance.
CREATE TABLE push_subscriptions (
    id TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    endpoint TEXT NOT NULL UNIQUE,
    p256dh TEXT NOT NULL,
    auth TEXT NOT NULL,
    device TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id);

CREATE TABLE instance_keys (
    name TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
