-- A2A push notifications are not repeated (core/tasks, push.go):
-- a2a_push_configs.last_pushed is the lowercase hex SHA-256 of the last
-- body its receiver acknowledged (2xx), written with the attempt's
-- outcome; a notification whose body would be the same is not sent. It is
-- logged as such: its delivery and its attempt end 'skipped'.
--
-- SQLite cannot change a CHECK constraint, so webhook_deliveries and
-- webhook_attempts are rebuilt with the same columns, rows and indexes.
-- The new attempts table references the new deliveries table before the
-- old ones are dropped: dropping webhook_deliveries while the old attempts
-- still referenced it would cascade-delete them (foreign keys are on), and
-- the rename carries the reference over.

-- +goose Up
ALTER TABLE a2a_push_configs ADD COLUMN last_pushed TEXT NOT NULL DEFAULT '';
CREATE TABLE webhook_deliveries_new (
    id               TEXT NOT NULL PRIMARY KEY,
    target_kind      TEXT NOT NULL,
    target_id        TEXT NOT NULL,
    owner_id         TEXT NOT NULL,
    mode             TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    event_id         TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    origin           TEXT NOT NULL CHECK (origin IN ('event', 'redeliver', 'test')),
    payload          TEXT,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'skipped')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMP,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    completed_at     TIMESTAMP
);
INSERT INTO webhook_deliveries_new (id, target_kind, target_id, owner_id, mode, event_id, event_type, origin, payload, status, attempts,
        next_attempt_at, last_status_code, last_error, created_at, updated_at, completed_at)
    SELECT id, target_kind, target_id, owner_id, mode, event_id, event_type, origin, payload, status, attempts,
        next_attempt_at, last_status_code, last_error, created_at, updated_at, completed_at FROM webhook_deliveries;
CREATE TABLE webhook_attempts_new (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries_new (id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    owner_id    TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('sending', 'succeeded', 'failed', 'interrupted', 'skipped')),
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    response    TEXT NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL DEFAULT 0,
    started_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    PRIMARY KEY (delivery_id, number)
);
INSERT INTO webhook_attempts_new (delivery_id, number, owner_id, target_id, status, status_code, error, response, duration_ms, started_at, finished_at)
    SELECT delivery_id, number, owner_id, target_id, status, status_code, error, response, duration_ms, started_at, finished_at FROM webhook_attempts;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
ALTER TABLE webhook_attempts_new RENAME TO webhook_attempts;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (event_id, target_kind, target_id) WHERE origin = 'event';
CREATE INDEX webhook_deliveries_target ON webhook_deliveries (target_kind, target_id, id);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
CREATE INDEX webhook_attempts_owner_sending ON webhook_attempts (owner_id, started_at) WHERE status = 'sending';
CREATE INDEX webhook_attempts_target_sending ON webhook_attempts (target_id, started_at) WHERE status = 'sending';

-- +goose Down
UPDATE webhook_attempts SET status = 'failed' WHERE status = 'skipped';
UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'skipped';
CREATE TABLE webhook_deliveries_new (
    id               TEXT NOT NULL PRIMARY KEY,
    target_kind      TEXT NOT NULL,
    target_id        TEXT NOT NULL,
    owner_id         TEXT NOT NULL,
    mode             TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    event_id         TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    origin           TEXT NOT NULL CHECK (origin IN ('event', 'redeliver', 'test')),
    payload          TEXT,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMP,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    completed_at     TIMESTAMP
);
INSERT INTO webhook_deliveries_new (id, target_kind, target_id, owner_id, mode, event_id, event_type, origin, payload, status, attempts,
        next_attempt_at, last_status_code, last_error, created_at, updated_at, completed_at)
    SELECT id, target_kind, target_id, owner_id, mode, event_id, event_type, origin, payload, status, attempts,
        next_attempt_at, last_status_code, last_error, created_at, updated_at, completed_at FROM webhook_deliveries;
CREATE TABLE webhook_attempts_new (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries_new (id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    owner_id    TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('sending', 'succeeded', 'failed', 'interrupted')),
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    response    TEXT NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL DEFAULT 0,
    started_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    PRIMARY KEY (delivery_id, number)
);
INSERT INTO webhook_attempts_new (delivery_id, number, owner_id, target_id, status, status_code, error, response, duration_ms, started_at, finished_at)
    SELECT delivery_id, number, owner_id, target_id, status, status_code, error, response, duration_ms, started_at, finished_at FROM webhook_attempts;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
ALTER TABLE webhook_attempts_new RENAME TO webhook_attempts;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (event_id, target_kind, target_id) WHERE origin = 'event';
CREATE INDEX webhook_deliveries_target ON webhook_deliveries (target_kind, target_id, id);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
CREATE INDEX webhook_attempts_owner_sending ON webhook_attempts (owner_id, started_at) WHERE status = 'sending';
CREATE INDEX webhook_attempts_target_sending ON webhook_attempts (target_id, started_at) WHERE status = 'sending';
ALTER TABLE a2a_push_configs DROP COLUMN last_pushed;
