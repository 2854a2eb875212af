-- What the event log (core/events) needs of the features that write it.
--
-- inbound_faxes.read_at: when the owner or an agent first read the fax
-- whole; set once by a conditional UPDATE, so concurrent readers write one
-- inbound_fax.read event.
--
-- credit_balances.low_threshold_micros: the owner's low-balance alert of
-- the mode (NULL: off). It sits on the balance row so the statement that
-- lowers a balance returns the threshold with the new balance: whether an
-- entry crossed it is exact under concurrency and costs no extra query.
--
-- approvals.mode: the mode the requester acts in, so approval.requested and
-- approval.decided land in the log of that mode. Approvals are short-lived;
-- rows from before this migration read as live.

-- +goose Up
ALTER TABLE inbound_faxes ADD COLUMN read_at TIMESTAMPTZ;
ALTER TABLE credit_balances ADD COLUMN low_threshold_micros BIGINT CHECK (low_threshold_micros IS NULL OR low_threshold_micros > 0);
ALTER TABLE approvals ADD COLUMN mode TEXT NOT NULL DEFAULT 'live' CHECK (mode IN ('live', 'test'));

-- +goose Down
ALTER TABLE approvals DROP COLUMN mode;
ALTER TABLE credit_balances DROP COLUMN low_threshold_micros;
ALTER TABLE inbound_faxes DROP COLUMN read_at;
