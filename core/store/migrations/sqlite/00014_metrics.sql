-- Indexes for the gauges monitoring reads at every scrape (faxes.Snapshot,
-- docs/operations.md "Metrics"): both are partial, so they hold only the
-- rows a gauge counts (faxes not yet final, pending approvals) and a scrape
-- reads those rows, never the whole table.

-- +goose Up
CREATE INDEX faxes_unfinished ON faxes (status, mode) WHERE status IN ('queued', 'sending');
CREATE INDEX approvals_pending ON approvals (kind, expires_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX approvals_pending;
DROP INDEX faxes_unfinished;
