-- Live card payments through Stripe Checkout (docs/payments.md, "Owner card
-- payments"). A checkout remembers the payment that settled it
-- (payment_ref: the PaymentIntent, so a refund event finds it) and how much
-- of it Stripe refunded (refunded_cents, cumulative as Stripe reports it)
-- and how much credit that took back (reversed_micros). Its status gains
-- 'failed' (an asynchronous payment that did not go through).
--
-- The ledger gains 'reversal' (negative): credits of a refunded pack taken
-- back.

-- +goose Up
ALTER TABLE checkouts ADD COLUMN payment_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE checkouts ADD COLUMN refunded_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checkouts ADD COLUMN reversed_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE checkouts ADD COLUMN refunded_at TIMESTAMPTZ;
CREATE INDEX checkouts_payment_ref ON checkouts (payment_ref) WHERE payment_ref <> '';

ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_check CHECK (
    (kind = 'hold' AND amount_micros < 0) OR
    (kind = 'capture' AND amount_micros = 0 AND hold_id IS NOT NULL) OR
    (kind = 'release' AND amount_micros > 0 AND hold_id IS NOT NULL) OR
    (kind IN ('grant', 'purchase', 'refund') AND amount_micros > 0) OR
    (kind = 'reversal' AND amount_micros < 0)
);

-- +goose Down
DELETE FROM ledger_entries WHERE kind = 'reversal';
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_check CHECK (
    (kind = 'hold' AND amount_micros < 0) OR
    (kind = 'capture' AND amount_micros = 0 AND hold_id IS NOT NULL) OR
    (kind = 'release' AND amount_micros > 0 AND hold_id IS NOT NULL) OR
    (kind IN ('grant', 'purchase', 'refund') AND amount_micros > 0)
);
DROP INDEX checkouts_payment_ref;
ALTER TABLE checkouts DROP COLUMN refunded_at;
ALTER TABLE checkouts DROP COLUMN reversed_micros;
ALTER TABLE checkouts DROP COLUMN refunded_cents;
ALTER TABLE checkouts DROP COLUMN payment_ref;
