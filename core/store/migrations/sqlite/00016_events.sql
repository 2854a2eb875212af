-- The event log (core/events): one row per state change an owner or an
-- agent may want to hear about, written in the transaction of the change.
-- seq orders the log; dispatch marks the events that have somewhere to go
-- (an enabled webhook endpoint or an A2A push config of the owner and
-- mode when the event was written), which the dispatcher fans out into
-- deliveries and clears. webhook_endpoints and a2a_push_configs are here
-- so the log can ask that at insert time; their features own them.

-- +goose Up
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    owner_id   TEXT NOT NULL,
    mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    type       TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    dispatch   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_owner ON events (owner_id, mode, seq);
CREATE INDEX events_dispatch ON events (seq) WHERE dispatch;

CREATE TABLE webhook_endpoints (
    id                  TEXT NOT NULL PRIMARY KEY,
    owner_id            TEXT NOT NULL REFERENCES owners (id),
    mode                TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    url                 TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    event_types         TEXT NOT NULL DEFAULT '[]',
    enabled             INTEGER NOT NULL DEFAULT 1,
    created_at          TIMESTAMP NOT NULL,
    updated_at          TIMESTAMP NOT NULL
);
CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner_id, mode, enabled);

CREATE TABLE a2a_push_configs (
    id         TEXT NOT NULL PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (id),
    mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    task_id    TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX a2a_push_configs_owner ON a2a_push_configs (owner_id, mode);
CREATE INDEX a2a_push_configs_task ON a2a_push_configs (task_id);

-- +goose Down
DROP TABLE a2a_push_configs;
DROP TABLE webhook_endpoints;
DROP TABLE events;
