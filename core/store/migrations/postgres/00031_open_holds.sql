-- A credit hold's settlement no longer writes the owner's balance row.
-- held_micros on credit_balances was kept by every hold and every
-- settlement, so every delivery of one owner queued on that one row (its
-- lock held until the settlement committed). A hold is now marked settled
-- with its capture or release, and the amount held is the sum of the
-- owner's open holds, read through a partial index that holds only those:
-- a capture writes the fax's own rows and nothing an owner's other faxes
-- share. A release still returns its amount to available_micros.

-- +goose Up
ALTER TABLE ledger_entries ADD COLUMN settled BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE ledger_entries h SET settled = TRUE
    WHERE kind = 'hold' AND EXISTS (SELECT 1 FROM ledger_entries s WHERE s.hold_id = h.id AND s.kind IN ('capture', 'release'));
CREATE INDEX ledger_entries_open_holds ON ledger_entries (owner_id, mode, amount_micros) WHERE kind = 'hold' AND NOT settled;
ALTER TABLE credit_balances DROP COLUMN held_micros;

-- +goose Down
ALTER TABLE credit_balances ADD COLUMN held_micros BIGINT NOT NULL DEFAULT 0 CHECK (held_micros >= 0);
UPDATE credit_balances b SET held_micros = coalesce((SELECT sum(-amount_micros) FROM ledger_entries h
    WHERE h.owner_id = b.owner_id AND h.mode = b.mode AND h.kind = 'hold' AND NOT h.settled), 0);
DROP INDEX ledger_entries_open_holds;
ALTER TABLE ledger_entries DROP COLUMN settled;
