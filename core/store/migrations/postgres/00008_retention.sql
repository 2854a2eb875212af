-- Upload leases, document retention and the indexes the garbage collector
-- (core/retention/purge.go) deletes by.
--
-- An upload's PUT holds a lease: claim_id names the PUT that holds it and
-- lease_until is when it lapses unless renewed, so a PUT whose process died
-- does not keep the token busy until it expires. A document whose blobs were
-- deleted keeps its row (faxes, drafts and uploads refer to it) with
-- purged_at set. used_at is when a fax or draft was last made from a
-- document, written in that transaction so a concurrent purge sees it.

-- +goose Up
ALTER TABLE uploads ADD COLUMN claim_id TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN lease_until TIMESTAMPTZ;
ALTER TABLE documents ADD COLUMN purged_at TIMESTAMPTZ;
ALTER TABLE documents ADD COLUMN used_at TIMESTAMPTZ;
CREATE INDEX uploads_expires ON uploads (expires_at);
CREATE INDEX documents_unpurged ON documents (created_at) WHERE purged_at IS NULL;
CREATE INDEX faxes_document ON faxes (document_id);
CREATE INDEX drafts_document ON drafts (document_id);
CREATE INDEX idempotency_records_created ON idempotency_records (created_at);
CREATE INDEX sessions_expires ON sessions (expires_at);
CREATE INDEX approvals_expires ON approvals (expires_at);
CREATE INDEX checkouts_expires ON checkouts (expires_at) WHERE status = 'open';
CREATE INDEX agent_claims_expires ON agent_claims (expires_at);
CREATE INDEX agent_enrollments_expires ON agent_enrollments (expires_at);
CREATE INDEX rate_limits_tat ON rate_limits (tat);

-- +goose Down
DROP INDEX rate_limits_tat;
DROP INDEX agent_enrollments_expires;
DROP INDEX agent_claims_expires;
DROP INDEX checkouts_expires;
DROP INDEX approvals_expires;
DROP INDEX sessions_expires;
DROP INDEX idempotency_records_created;
DROP INDEX drafts_document;
DROP INDEX faxes_document;
DROP INDEX documents_unpurged;
DROP INDEX uploads_expires;
ALTER TABLE documents DROP COLUMN used_at;
ALTER TABLE documents DROP COLUMN purged_at;
ALTER TABLE uploads DROP COLUMN lease_until;
ALTER TABLE uploads DROP COLUMN claim_id;
