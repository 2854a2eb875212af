-- The options a fax is sent with (cover page fields, header line,
-- resolution, schedule, retry policy: core/faxes Options as JSON), the
-- broadcast it belongs to, and the document as faxed (its hash and pages,
-- composed at the first attempt). Owners' fax defaults.

-- +goose Up
ALTER TABLE faxes ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE faxes ADD COLUMN batch_id TEXT;
ALTER TABLE faxes ADD COLUMN faxed_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE faxes ADD COLUMN faxed_pages INTEGER NOT NULL DEFAULT 0;
CREATE INDEX faxes_batch ON faxes (batch_id) WHERE batch_id IS NOT NULL;
ALTER TABLE drafts ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
CREATE TABLE fax_settings (
    owner_id   TEXT NOT NULL PRIMARY KEY REFERENCES owners (id) ON DELETE CASCADE,
    settings   TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE fax_settings;
ALTER TABLE drafts DROP COLUMN options;
DROP INDEX faxes_batch;
ALTER TABLE faxes DROP COLUMN faxed_pages;
ALTER TABLE faxes DROP COLUMN faxed_sha256;
ALTER TABLE faxes DROP COLUMN batch_id;
ALTER TABLE faxes DROP COLUMN options;
