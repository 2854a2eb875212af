-- Delegated hosts and agents (core/hosts, Agent Auth Protocol).
-- Capability lists (default_capabilities, requested, granted) are stored
-- space-joined, like agent scopes: capability names have no spaces.
-- Public keys are canonical Ed25519 public JWKs; a thumbprint (RFC 7638) is
-- unique among hosts and among agents; that a key is not both a host's and
-- an agent's is checked in core. Enrollment tokens and user codes are stored
-- hashed. approval_id carries no foreign key: approvals are purged on their
-- own schedule. jwt_ids is the replay store of host and agent JWTs, shared
-- by every replica: a row lives until its JWT's exp plus the allowed skew.

-- +goose Up
CREATE TABLE hosts (
    id                    TEXT NOT NULL PRIMARY KEY,
    owner_id              TEXT NOT NULL REFERENCES owners (id),
    name                  TEXT NOT NULL,
    public_key            TEXT,
    thumbprint            TEXT UNIQUE,
    default_capabilities  TEXT NOT NULL DEFAULT '',
    status                TEXT NOT NULL CHECK (status IN ('pending_enrollment', 'active', 'revoked')),
    enrollment_hash       TEXT UNIQUE,
    enrollment_expires_at TIMESTAMPTZ,
    created_at            TIMESTAMPTZ NOT NULL,
    enrolled_at           TIMESTAMPTZ,
    revoked_at            TIMESTAMPTZ,
    last_used_at          TIMESTAMPTZ
);
CREATE INDEX hosts_owner ON hosts (owner_id, created_at);

CREATE TABLE delegated_agents (
    id                TEXT NOT NULL PRIMARY KEY,
    host_id           TEXT NOT NULL REFERENCES hosts (id),
    owner_id          TEXT NOT NULL REFERENCES owners (id),
    name              TEXT NOT NULL,
    public_key        TEXT NOT NULL,
    thumbprint        TEXT NOT NULL UNIQUE,
    requested         TEXT NOT NULL DEFAULT '',
    granted           TEXT NOT NULL DEFAULT '',
    status            TEXT NOT NULL CHECK (status IN ('pending', 'active', 'rejected', 'revoked')),
    user_code_hash    TEXT NOT NULL DEFAULT '',
    device_expires_at TIMESTAMPTZ NOT NULL,
    device_tries      INTEGER NOT NULL DEFAULT 0,
    approval_id       TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL,
    activated_at      TIMESTAMPTZ,
    revoked_at        TIMESTAMPTZ,
    last_used_at      TIMESTAMPTZ
);
CREATE INDEX delegated_agents_host ON delegated_agents (host_id, status);
CREATE INDEX delegated_agents_owner ON delegated_agents (owner_id, created_at);

CREATE TABLE delegated_sends (
    id              TEXT NOT NULL PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES owners (id),
    mode            TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    host_id         TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    approval_id     TEXT NOT NULL UNIQUE,
    document_id     TEXT NOT NULL,
    document_sha256 TEXT NOT NULL,
    to_number       TEXT NOT NULL,
    country         TEXT NOT NULL DEFAULT '',
    pages           INTEGER NOT NULL,
    cover           BOOLEAN NOT NULL DEFAULT FALSE,
    cover_text      TEXT NOT NULL DEFAULT '',
    price_micros    BIGINT NOT NULL,
    currency        TEXT NOT NULL,
    fax_id          TEXT UNIQUE,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX delegated_sends_agent ON delegated_sends (agent_id, expires_at);
CREATE INDEX delegated_sends_created ON delegated_sends (created_at);

CREATE TABLE jwt_ids (
    issuer     TEXT NOT NULL,
    jti        TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (issuer, jti)
);
CREATE INDEX jwt_ids_expires ON jwt_ids (expires_at);

-- +goose Down
DROP TABLE jwt_ids;
DROP TABLE delegated_sends;
DROP TABLE delegated_agents;
DROP TABLE hosts;
