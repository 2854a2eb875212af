-- Owner webhooks (core/webhooks): what an endpoint needs beyond the
-- minimal row of 00016, and the delivery engine's tables.
--
-- webhook_endpoints: signing (space-separated schemes: v1, v1a), the v1
-- secret sealed with core/seal (secret, and the one it replaced while a
-- rotation's overlap lasts), the failure streak (failing_since) and why
-- and since when a disabled endpoint is.
--
-- webhook_deliveries: one event on its way to one target (target_kind:
-- webhook today; A2A push configs later), over its attempts. A delivery
-- the dispatcher writes (origin event) is unique per event and target, so
-- a dispatcher that crashed after its commit never doubles one;
-- redeliveries and test events are deliveries of their own. payload keeps
-- a test event's body (test events are not in the log).
--
-- webhook_attempts: one POST each, written (sending) before it is sent and
-- finished after, so a crash leaves a trace the next run closes as
-- interrupted. The partial index finds the attempts in flight, which the
-- caps count.
--
-- webhook_signing_keys: faxhub's Ed25519 key for v1a, its seed sealed;
-- every replica signs with the same.
--
-- webhook_owner_locks: a row per owner that claims lock (FOR UPDATE) so
-- that the in-flight caps hold across replicas on PostgreSQL.

-- +goose Up
ALTER TABLE webhook_endpoints ADD COLUMN signing TEXT NOT NULL DEFAULT 'v1';
ALTER TABLE webhook_endpoints ADD COLUMN secret BYTEA;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret BYTEA;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_until TIMESTAMPTZ;
ALTER TABLE webhook_endpoints ADD COLUMN secret_rotated_at TIMESTAMPTZ;
ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN disabled_at TIMESTAMPTZ;
ALTER TABLE webhook_endpoints ADD COLUMN failing_since TIMESTAMPTZ;
ALTER TABLE webhook_endpoints ADD COLUMN last_success_at TIMESTAMPTZ;

CREATE TABLE webhook_deliveries (
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
    next_attempt_at  TIMESTAMPTZ,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (event_id, target_kind, target_id) WHERE origin = 'event';
CREATE INDEX webhook_deliveries_target ON webhook_deliveries (target_kind, target_id, id);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    owner_id    TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('sending', 'succeeded', 'failed', 'interrupted')),
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    response    TEXT NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL DEFAULT 0,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    PRIMARY KEY (delivery_id, number)
);
CREATE INDEX webhook_attempts_owner_sending ON webhook_attempts (owner_id, started_at) WHERE status = 'sending';
CREATE INDEX webhook_attempts_target_sending ON webhook_attempts (target_id, started_at) WHERE status = 'sending';

CREATE TABLE webhook_signing_keys (
    id         TEXT NOT NULL PRIMARY KEY,
    public_key BYTEA NOT NULL,
    sealed     BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE webhook_owner_locks (
    owner_id TEXT NOT NULL PRIMARY KEY
);

-- +goose Down
DROP TABLE webhook_owner_locks;
DROP TABLE webhook_signing_keys;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_endpoints DROP COLUMN last_success_at;
ALTER TABLE webhook_endpoints DROP COLUMN failing_since;
ALTER TABLE webhook_endpoints DROP COLUMN disabled_at;
ALTER TABLE webhook_endpoints DROP COLUMN disabled_reason;
ALTER TABLE webhook_endpoints DROP COLUMN secret_rotated_at;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_until;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret;
ALTER TABLE webhook_endpoints DROP COLUMN secret;
ALTER TABLE webhook_endpoints DROP COLUMN signing;
