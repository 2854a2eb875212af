-- Agent registration with owner approval (core/agents, oauth/agent_http.go). Every secret
-- (enrollment, claim, attempt and access tokens, user codes) is a SHA-256 hash.

-- +goose Up
CREATE TABLE agent_enrollments (
    id              TEXT NOT NULL PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES owners (id),
    name            TEXT NOT NULL,
    scopes          TEXT NOT NULL DEFAULT '',
    token_hash      TEXT NOT NULL UNIQUE,
    created_at      TIMESTAMP NOT NULL,
    expires_at      TIMESTAMP NOT NULL,
    consumed_at     TIMESTAMP,
    revoked_at      TIMESTAMP,
    registration_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX agent_enrollments_owner ON agent_enrollments (owner_id, created_at DESC);

CREATE TABLE agent_registrations (
    id                  TEXT NOT NULL PRIMARY KEY,
    owner_id            TEXT NOT NULL REFERENCES owners (id),
    type                TEXT NOT NULL CHECK (type IN ('service_auth', 'anonymous')),
    name                TEXT NOT NULL,
    scopes              TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    claimed             BOOLEAN NOT NULL DEFAULT FALSE,
    created_at          TIMESTAMP NOT NULL,
    last_used_at        TIMESTAMP,
    revoked_at          TIMESTAMP,
    assertion_jti       TEXT NOT NULL DEFAULT '',
    assertion_issued_at TIMESTAMP
);
CREATE INDEX agent_registrations_owner ON agent_registrations (owner_id, created_at DESC);

CREATE TABLE agent_claims (
    registration_id  TEXT NOT NULL PRIMARY KEY REFERENCES agent_registrations (id),
    owner_id         TEXT NOT NULL REFERENCES owners (id),
    token_hash       TEXT NOT NULL UNIQUE,
    user_code_hash   TEXT NOT NULL DEFAULT '',
    attempt_hash     TEXT NOT NULL DEFAULT '',
    approval_id      TEXT NOT NULL DEFAULT '',
    scopes           TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'redeemed')),
    created_at       TIMESTAMP NOT NULL,
    expires_at       TIMESTAMP NOT NULL,
    interval_seconds INTEGER NOT NULL,
    last_poll_at     TIMESTAMP,
    tries            INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX agent_claims_attempt ON agent_claims (attempt_hash);

CREATE TABLE agent_tokens (
    token_hash      TEXT NOT NULL PRIMARY KEY,
    registration_id TEXT NOT NULL REFERENCES agent_registrations (id),
    owner_id        TEXT NOT NULL,
    scopes          TEXT NOT NULL DEFAULT '',
    resource        TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    expires_at      TIMESTAMP NOT NULL
);
CREATE INDEX agent_tokens_registration ON agent_tokens (registration_id);

-- +goose Down
DROP TABLE agent_tokens;
DROP TABLE agent_claims;
DROP TABLE agent_registrations;
DROP TABLE agent_enrollments;
