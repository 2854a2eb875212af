-- The OAuth authorization server (oauth/). Token-like keys are SHA-256
-- hashes of fosite's signatures; private keys are sealed by oauth/.

-- +goose Up
CREATE TABLE oauth_clients (
    id             TEXT NOT NULL PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('dynamic', 'metadata_document')),
    name           TEXT NOT NULL DEFAULT '',
    uri            TEXT NOT NULL DEFAULT '',
    logo_uri       TEXT NOT NULL DEFAULT '',
    redirect_uris  TEXT NOT NULL,
    grant_types    TEXT NOT NULL,
    response_types TEXT NOT NULL,
    scope          TEXT NOT NULL DEFAULT '',
    metadata       TEXT,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);

CREATE TABLE oauth_grants (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    client_id    TEXT NOT NULL REFERENCES oauth_clients (id),
    scopes       TEXT NOT NULL DEFAULT '',
    resource     TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP
);
CREATE INDEX oauth_grants_owner ON oauth_grants (owner_id, created_at DESC, id DESC);
-- One live grant per owner, client and resource: a new consent updates it.
CREATE UNIQUE INDEX oauth_grants_live ON oauth_grants (owner_id, client_id, resource) WHERE revoked_at IS NULL;

-- Authorization codes, PKCE and OpenID Connect sessions, access and refresh
-- tokens: one row each, keyed by kind and the hash of fosite's signature.
CREATE TABLE oauth_tokens (
    kind             TEXT NOT NULL CHECK (kind IN ('authorize_code', 'pkce', 'oidc', 'access_token', 'refresh_token')),
    signature        TEXT NOT NULL,
    request_id       TEXT NOT NULL,
    grant_id         TEXT NOT NULL DEFAULT '',
    client_id        TEXT NOT NULL,
    owner_id         TEXT NOT NULL DEFAULT '',
    active           BOOLEAN NOT NULL DEFAULT TRUE,
    access_signature TEXT NOT NULL DEFAULT '',
    request          BLOB NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    expires_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (kind, signature)
);
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

CREATE TABLE oauth_consents (
    approval_id TEXT NOT NULL PRIMARY KEY REFERENCES approvals (id),
    owner_id    TEXT NOT NULL REFERENCES owners (id),
    client_id   TEXT NOT NULL,
    query       TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    expires_at  TIMESTAMP NOT NULL
);
CREATE INDEX oauth_consents_expires ON oauth_consents (expires_at);

CREATE TABLE oauth_keys (
    id             TEXT NOT NULL PRIMARY KEY,
    alg            TEXT NOT NULL CHECK (alg IN ('EdDSA', 'RS256')),
    public_jwk     TEXT NOT NULL,
    sealed_private BLOB NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    retired_at     TIMESTAMP
);
CREATE INDEX oauth_keys_alg ON oauth_keys (alg, created_at DESC);

-- +goose Down
DROP TABLE oauth_keys;
DROP TABLE oauth_consents;
DROP TABLE oauth_tokens;
DROP TABLE oauth_grants;
DROP TABLE oauth_clients;
