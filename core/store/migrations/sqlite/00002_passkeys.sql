-- Passkeys, WebAuthn challenges and email tokens of the owner console.
-- Challenges and email tokens are bearer secrets: only their SHA-256 is kept.

-- +goose Up
CREATE TABLE passkeys (
    id               TEXT NOT NULL PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES owners (id),
    credential_id    TEXT NOT NULL UNIQUE,
    name             TEXT NOT NULL DEFAULT '',
    public_key       BLOB NOT NULL,
    attestation_type TEXT NOT NULL DEFAULT '',
    aaguid           BLOB,
    sign_count       INTEGER NOT NULL DEFAULT 0,
    transports       TEXT NOT NULL DEFAULT '',
    user_verified    BOOLEAN NOT NULL DEFAULT FALSE,
    backup_eligible  BOOLEAN NOT NULL DEFAULT FALSE,
    backup_state     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       TIMESTAMP NOT NULL,
    last_used_at     TIMESTAMP
);
CREATE INDEX passkeys_owner ON passkeys (owner_id, created_at, id);

CREATE TABLE webauthn_challenges (
    hash       TEXT NOT NULL PRIMARY KEY,
    purpose    TEXT NOT NULL,
    owner_id   TEXT REFERENCES owners (id),
    binding    TEXT NOT NULL DEFAULT '',
    session    BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges (expires_at);

CREATE TABLE email_tokens (
    hash       TEXT NOT NULL PRIMARY KEY,
    purpose    TEXT NOT NULL CHECK (purpose IN ('signup', 'recovery')),
    email      TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    owner_id   TEXT REFERENCES owners (id),
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP
);
CREATE INDEX email_tokens_expiry ON email_tokens (expires_at);

-- +goose Down
DROP TABLE email_tokens;
DROP TABLE webauthn_challenges;
DROP TABLE passkeys;
