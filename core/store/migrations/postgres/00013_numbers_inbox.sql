-- Fax numbers and the inbox (core/numbers, core/inbox).
--
-- numbers: one row per number an owner rents or tried to rent. A number is
-- held (awaiting_payment, pending, active, past_due) by one owner at a time
-- in a mode: the partial unique index is what makes two buyers of one
-- number race safely. paid_through is when the next month is due;
-- reserved_until when an unpaid reservation lapses.
--
-- inbound_faxes: faxes received on those numbers, unique by the provider's
-- reference so a notice delivered twice is recorded once. media_url is the
-- provider's link to the document until it is fetched; document_key the
-- blob once stored; text what agents read.
--
-- faxes.from_number, drafts.from_number: the sender number of a send.
-- checkouts.number_id: the number a checkout pays the first month of.

-- +goose Up
CREATE TABLE numbers (
    id             TEXT NOT NULL PRIMARY KEY,
    owner_id       TEXT NOT NULL REFERENCES owners (id),
    mode           TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    e164           TEXT NOT NULL,
    country        TEXT NOT NULL,
    region         TEXT NOT NULL DEFAULT '',
    locality       TEXT NOT NULL DEFAULT '',
    status         TEXT NOT NULL CHECK (status IN ('awaiting_payment', 'pending', 'active', 'past_due', 'failed', 'canceled', 'released')),
    provider       TEXT NOT NULL,
    provider_ref   TEXT NOT NULL DEFAULT '',
    order_ref      TEXT NOT NULL DEFAULT '',
    monthly_micros BIGINT NOT NULL CHECK (monthly_micros > 0),
    reserved_until TIMESTAMPTZ,
    paid_through   TIMESTAMPTZ,
    failure_code   TEXT NOT NULL DEFAULT '',
    failure_reason TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    activated_at   TIMESTAMPTZ,
    released_at    TIMESTAMPTZ
);
CREATE UNIQUE INDEX numbers_held ON numbers (mode, e164) WHERE status IN ('awaiting_payment', 'pending', 'active', 'past_due');
CREATE INDEX numbers_owner ON numbers (owner_id, mode, created_at);
CREATE INDEX numbers_order ON numbers (provider, order_ref) WHERE order_ref <> '';
CREATE INDEX numbers_reserved ON numbers (reserved_until) WHERE status = 'awaiting_payment';
CREATE INDEX numbers_renewal ON numbers (paid_through) WHERE status IN ('active', 'past_due');
CREATE INDEX numbers_pending ON numbers (updated_at) WHERE status = 'pending';

CREATE TABLE inbound_faxes (
    id             TEXT NOT NULL PRIMARY KEY,
    owner_id       TEXT NOT NULL REFERENCES owners (id),
    mode           TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    number_id      TEXT NOT NULL REFERENCES numbers (id),
    from_number    TEXT NOT NULL DEFAULT '',
    to_number      TEXT NOT NULL,
    pages          INTEGER NOT NULL DEFAULT 0,
    status         TEXT NOT NULL CHECK (status IN ('receiving', 'received', 'failed')),
    provider       TEXT NOT NULL,
    provider_ref   TEXT NOT NULL,
    media_url      TEXT NOT NULL DEFAULT '',
    document_key   TEXT NOT NULL DEFAULT '',
    bytes          BIGINT NOT NULL DEFAULT 0,
    text           TEXT NOT NULL DEFAULT '',
    text_status    TEXT NOT NULL DEFAULT '',
    text_method    TEXT NOT NULL DEFAULT '',
    text_note      TEXT NOT NULL DEFAULT '',
    failure_reason TEXT NOT NULL DEFAULT '',
    received_at    TIMESTAMPTZ NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    processed_at   TIMESTAMPTZ
);
CREATE UNIQUE INDEX inbound_faxes_ref ON inbound_faxes (provider, provider_ref);
CREATE INDEX inbound_faxes_owner ON inbound_faxes (owner_id, mode, created_at);

ALTER TABLE faxes ADD COLUMN from_number TEXT NOT NULL DEFAULT '';
ALTER TABLE drafts ADD COLUMN from_number TEXT NOT NULL DEFAULT '';
ALTER TABLE checkouts ADD COLUMN number_id TEXT REFERENCES numbers (id);

-- +goose Down
ALTER TABLE checkouts DROP COLUMN number_id;
ALTER TABLE drafts DROP COLUMN from_number;
ALTER TABLE faxes DROP COLUMN from_number;
DROP TABLE inbound_faxes;
DROP TABLE numbers;
