-- Charges: money taken through a payment method (core/payments), recorded
-- in the transaction that delivers what it paid for (core/credits/charges.go).

-- +goose Up
CREATE TABLE charges (
    id               TEXT NOT NULL PRIMARY KEY,
    owner_id         TEXT NOT NULL DEFAULT '',
    mode             TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    method           TEXT NOT NULL,
    purpose          TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL UNIQUE,
    amount_micros    BIGINT NOT NULL CHECK (amount_micros > 0),
    currency         TEXT NOT NULL,
    reference        TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    fax_id           TEXT REFERENCES faxes (id),
    pack_id          TEXT NOT NULL DEFAULT '',
    subject          TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    refunded_at      TIMESTAMP,
    refund_reference TEXT NOT NULL DEFAULT ''
);
CREATE INDEX charges_owner ON charges (owner_id, mode, created_at DESC);
CREATE INDEX charges_fax ON charges (fax_id);

-- +goose Down
DROP TABLE charges;
