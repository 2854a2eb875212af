-- The built-in Stripe test backend's state (internal/stripetest with
-- WithDatabase), shared by every replica on this database so a test token
-- minted on one settles on another (docs/operations.md "Many replicas").
-- Nothing in faxhub reads these tables but the stand-in.
--
-- stripe_standin_objects: tokens, payment intents, refunds and charges as
-- the stand-in's JSON, by kind and id. created_at is Unix seconds, as
-- Stripe's created is.
--
-- stripe_standin_idempotency: the saved answer of an idempotent request,
-- by a digest of the API key and Idempotency-Key (scope), with a digest of
-- the request (fingerprint). Kept 24 hours, as Stripe keeps them: the
-- stand-in deletes older records when it saves one.

-- +goose Up
CREATE TABLE stripe_standin_objects (
    kind       TEXT NOT NULL,
    id         TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE TABLE stripe_standin_idempotency (
    scope       TEXT NOT NULL PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    status      INTEGER NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX stripe_standin_idempotency_created ON stripe_standin_idempotency (created_at);

-- +goose Down
DROP TABLE stripe_standin_idempotency;
DROP TABLE stripe_standin_objects;
