-- One name per concept: a paid fax is a "fax" in code, SQL, JSON and docs
-- (the REST resource is /faxes and ids are fax_…); "order" is gone. A draft
-- that was paid for is "paid".

-- +goose Up
ALTER TABLE orders RENAME TO faxes;
ALTER TABLE drafts RENAME COLUMN order_id TO fax_id;
ALTER TABLE attempts RENAME COLUMN order_id TO fax_id;
ALTER TABLE ledger_entries RENAME COLUMN order_id TO fax_id;
UPDATE drafts SET status = 'paid' WHERE status = 'ordered';
DROP INDEX orders_owner_list;
DROP INDEX orders_owner_status_list;
CREATE INDEX faxes_owner_list ON faxes (owner_id, mode, created_at DESC, id DESC);
CREATE INDEX faxes_owner_status_list ON faxes (owner_id, mode, status, created_at DESC, id DESC);
DROP INDEX ledger_entries_order_hold;
CREATE UNIQUE INDEX ledger_entries_fax_hold ON ledger_entries (fax_id) WHERE kind = 'hold';

-- +goose Down
DROP INDEX ledger_entries_fax_hold;
CREATE UNIQUE INDEX ledger_entries_order_hold ON ledger_entries (fax_id) WHERE kind = 'hold';
DROP INDEX faxes_owner_status_list;
DROP INDEX faxes_owner_list;
CREATE INDEX orders_owner_list ON faxes (owner_id, mode, created_at DESC, id DESC);
CREATE INDEX orders_owner_status_list ON faxes (owner_id, mode, status, created_at DESC, id DESC);
UPDATE drafts SET status = 'ordered' WHERE status = 'paid';
ALTER TABLE ledger_entries RENAME COLUMN fax_id TO order_id;
ALTER TABLE attempts RENAME COLUMN fax_id TO order_id;
ALTER TABLE drafts RENAME COLUMN fax_id TO order_id;
ALTER TABLE faxes RENAME TO orders;
