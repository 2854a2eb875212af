-- Previews: a fax's pages composed before it is sent (core/faxes
-- Preview), kept an hour for their signed links, then purged with their
-- PDF by the garbage collector.

-- +goose Up
CREATE TABLE previews (
    id          TEXT NOT NULL PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    mode        TEXT NOT NULL,
    document_id TEXT NOT NULL,
    pages       INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    resolution  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX previews_expires ON previews (expires_at);

-- +goose Down
DROP TABLE previews;
