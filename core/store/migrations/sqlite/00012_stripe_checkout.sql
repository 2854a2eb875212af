-- Live card payments through Stripe Checkout (docs/payments.md, "Owner card
-- payments"). A checkout remembers the payment that settled it
-- (payment_ref: the PaymentIntent, so a refund event finds it) and how much
-- of it Stripe refunded (refunded_cents, cumulative as Stripe reports it)
-- and how much credit that took back (reversed_micros). Its status gains
-- 'failed' (an asynchronous payment that did not go through).
--
-- The ledger gains 'reversal' (negative): credits of a refunded pack taken
-- back. SQLite cannot change a CHECK constraint, so ledger_entries is
-- rebuilt with the same columns, rows and indexes.

-- +goose Up
ALTER TABLE checkouts ADD COLUMN payment_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE checkouts ADD COLUMN refunded_cents INTEGER NOT NULL DEFAULT 0;
ALTER TABLE checkouts ADD COLUMN reversed_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE checkouts ADD COLUMN refunded_at TIMESTAMP;
CREATE INDEX checkouts_payment_ref ON checkouts (payment_ref) WHERE payment_ref <> '';

CREATE TABLE ledger_entries_new (
    id            TEXT NOT NULL PRIMARY KEY,
    owner_id      TEXT NOT NULL REFERENCES owners (id),
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    kind          TEXT NOT NULL,
    amount_micros INTEGER NOT NULL,
    fax_id        TEXT REFERENCES faxes (id),
    hold_id       TEXT REFERENCES ledger_entries_new (id),
    reason        TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    CHECK (
        (kind = 'hold' AND amount_micros < 0) OR
        (kind = 'capture' AND amount_micros = 0 AND hold_id IS NOT NULL) OR
        (kind = 'release' AND amount_micros > 0 AND hold_id IS NOT NULL) OR
        (kind IN ('grant', 'purchase', 'refund') AND amount_micros > 0) OR
        (kind = 'reversal' AND amount_micros < 0)
    )
);
INSERT INTO ledger_entries_new (id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at)
    SELECT id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at FROM ledger_entries;
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_new RENAME TO ledger_entries;
CREATE INDEX ledger_entries_owner_list ON ledger_entries (owner_id, mode, created_at DESC, id DESC);
CREATE UNIQUE INDEX ledger_entries_hold_settlement ON ledger_entries (hold_id) WHERE kind IN ('capture', 'release');
CREATE UNIQUE INDEX ledger_entries_fax_hold ON ledger_entries (fax_id) WHERE kind = 'hold';

-- +goose Down
CREATE TABLE ledger_entries_old (
    id            TEXT NOT NULL PRIMARY KEY,
    owner_id      TEXT NOT NULL REFERENCES owners (id),
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    kind          TEXT NOT NULL,
    amount_micros INTEGER NOT NULL,
    fax_id        TEXT REFERENCES faxes (id),
    hold_id       TEXT REFERENCES ledger_entries_old (id),
    reason        TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    CHECK (
        (kind = 'hold' AND amount_micros < 0) OR
        (kind = 'capture' AND amount_micros = 0 AND hold_id IS NOT NULL) OR
        (kind = 'release' AND amount_micros > 0 AND hold_id IS NOT NULL) OR
        (kind IN ('grant', 'purchase', 'refund') AND amount_micros > 0)
    )
);
INSERT INTO ledger_entries_old (id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at)
    SELECT id, owner_id, mode, kind, amount_micros, fax_id, hold_id, reason, created_at FROM ledger_entries WHERE kind <> 'reversal';
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_old RENAME TO ledger_entries;
CREATE INDEX ledger_entries_owner_list ON ledger_entries (owner_id, mode, created_at DESC, id DESC);
CREATE UNIQUE INDEX ledger_entries_hold_settlement ON ledger_entries (hold_id) WHERE kind IN ('capture', 'release');
CREATE UNIQUE INDEX ledger_entries_fax_hold ON ledger_entries (fax_id) WHERE kind = 'hold';
DROP INDEX checkouts_payment_ref;
ALTER TABLE checkouts DROP COLUMN refunded_at;
ALTER TABLE checkouts DROP COLUMN reversed_micros;
ALTER TABLE checkouts DROP COLUMN refunded_cents;
ALTER TABLE checkouts DROP COLUMN payment_ref;
