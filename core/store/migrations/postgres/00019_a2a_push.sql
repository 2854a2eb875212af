-- A2A push notification configs (core/tasks, push.go): the minimal row of
-- 00016 becomes the whole config. No release wrote the minimal table, so
-- it is replaced rather than altered.
--
-- config_id is the client's id for the config (A2A PushNotificationConfig
-- id; the task id when the client sent none), unique per task. token and
-- credentials are sealed with core/seal (the receiver's secrets: they are
-- sent, so they cannot be hashed); auth_scheme is Bearer or Basic, or
-- empty. The id (pnc_) is the delivery engine's target id.

-- +goose Up
DROP TABLE a2a_push_configs;
CREATE TABLE a2a_push_configs (
    id          TEXT NOT NULL PRIMARY KEY,
    owner_id    TEXT NOT NULL REFERENCES owners (id),
    mode        TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    task_id     TEXT NOT NULL,
    config_id   TEXT NOT NULL,
    url         TEXT NOT NULL,
    token       BYTEA,
    auth_scheme TEXT NOT NULL DEFAULT '',
    credentials BYTEA,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX a2a_push_configs_owner ON a2a_push_configs (owner_id, mode);
CREATE UNIQUE INDEX a2a_push_configs_task ON a2a_push_configs (task_id, config_id);
CREATE INDEX a2a_push_configs_created ON a2a_push_configs (created_at);

-- +goose Down
DROP TABLE a2a_push_configs;
CREATE TABLE a2a_push_configs (
    id         TEXT NOT NULL PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (id),
    mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    task_id    TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX a2a_push_configs_owner ON a2a_push_configs (owner_id, mode);
CREATE INDEX a2a_push_configs_task ON a2a_push_configs (task_id);
