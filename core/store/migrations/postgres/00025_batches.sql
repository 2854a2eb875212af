-- Broadcasts: one document sent to many recipients, each a fax of its own
-- (faxes.batch_id, 00022). remaining counts the batch's faxes not yet
-- ended; the transaction that ends a fax decrements it under the row's
-- lock, and the one that takes it to 0 writes batch.completed, once.

-- +goose Up
CREATE TABLE batches (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    mode         TEXT NOT NULL,
    document_id  TEXT NOT NULL,
    recipients   INTEGER NOT NULL,
    remaining    INTEGER NOT NULL,
    price_micros BIGINT NOT NULL DEFAULT 0,
    created_at   TIMESTAMPTZ NOT NULL,
    completed_at TIMESTAMPTZ
);
CREATE INDEX batches_owner ON batches (owner_id, mode, created_at DESC, id DESC);

-- +goose Down
DROP TABLE batches;
