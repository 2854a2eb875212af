-- Machine payments (core/machine/machine.go, core/machine/pay.go): a machine with no
-- account pays for one fax per request over HTTP 402.
--
-- owners: the reserved owner of every machine's documents and faxes. Its
-- address is on the reserved .invalid domain (RFC 2606) and it has no
-- passkeys, so no one can sign in as it; core refuses to look it up by
-- e-mail, so no one can claim it either.
--
-- machine_requests: one row per request_id, the payer's key for one fax:
-- the body's digest (same id + other body is a conflict), the quote, the
-- challenges offered (JSON bytes, every method, rendered header values) and,
-- once paid, the fax and the stored 200 (response JSON + receipt).
--
-- machine_claims: the single use of a challenge. A paid retry inserts its
-- claim (settling, with a lease) before the payment method is called, so
-- concurrent retries with one credential settle once; a claim whose lease
-- lapsed is taken over (by a retry or the sweeper) and settled again with
-- its own idempotency key. The credential is kept sealed (core/seal) only
-- while the claim settles, for that retry, and cleared when it ends.
--
-- charges: the method's own amount and currency units, the refund a failed
-- or partial machine fax is owed (refund_state due → refunded, or
-- not_refundable where the method cannot refund) with a lease so one
-- replica performs it, and (method, reference) unique where a reference
-- is known: a Tempo transaction hash pays for one charge only.

-- +goose Up
INSERT INTO owners (id, email, name, created_at)
VALUES ('own_machine', 'machine-payments@faxhub.invalid', 'Paying machines', '2026-11-23 00:00:00.000000Z');

CREATE TABLE machine_requests (
    request_id           TEXT NOT NULL PRIMARY KEY,
    body_digest          TEXT NOT NULL,
    destination          TEXT NOT NULL,
    country              TEXT NOT NULL DEFAULT '',
    pages                INTEGER NOT NULL,
    cover                BOOLEAN NOT NULL DEFAULT FALSE,
    price_micros         BIGINT NOT NULL,
    challenges           BLOB NOT NULL,
    challenges_expire_at TIMESTAMP NOT NULL,
    generation           INTEGER NOT NULL DEFAULT 0,
    status               TEXT NOT NULL CHECK (status IN ('open', 'paid')),
    fax_id               TEXT REFERENCES faxes (id),
    response             BLOB,
    receipt              TEXT NOT NULL DEFAULT '',
    created_at           TIMESTAMP NOT NULL,
    updated_at           TIMESTAMP NOT NULL
);
CREATE INDEX machine_requests_open ON machine_requests (status, challenges_expire_at);

CREATE TABLE machine_claims (
    challenge_id    TEXT NOT NULL PRIMARY KEY,
    request_id      TEXT NOT NULL,
    method          TEXT NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    idempotency_key TEXT NOT NULL,
    amount          BIGINT NOT NULL CHECK (amount > 0),
    currency        TEXT NOT NULL,
    credential      BLOB,
    state           TEXT NOT NULL CHECK (state IN ('settling', 'paid', 'failed')),
    lease_until     TIMESTAMP NOT NULL,
    document_id     TEXT NOT NULL DEFAULT '',
    fax_id          TEXT REFERENCES faxes (id),
    failure         TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX machine_claims_state ON machine_claims (state, lease_until);
CREATE INDEX machine_claims_request ON machine_claims (request_id);

ALTER TABLE charges ADD COLUMN request_id TEXT NOT NULL DEFAULT '';
ALTER TABLE charges ADD COLUMN amount_units BIGINT NOT NULL DEFAULT 0;
ALTER TABLE charges ADD COLUMN refund_state TEXT NOT NULL DEFAULT '';
ALTER TABLE charges ADD COLUMN refund_due_units BIGINT NOT NULL DEFAULT 0;
ALTER TABLE charges ADD COLUMN refund_lease_until TIMESTAMP;
CREATE UNIQUE INDEX charges_method_reference ON charges (method, reference) WHERE reference <> '';
CREATE INDEX charges_refund_due ON charges (refund_state, refund_lease_until);

-- +goose Down
DROP INDEX charges_refund_due;
DROP INDEX charges_method_reference;
ALTER TABLE charges DROP COLUMN refund_lease_until;
ALTER TABLE charges DROP COLUMN refund_due_units;
ALTER TABLE charges DROP COLUMN refund_state;
ALTER TABLE charges DROP COLUMN amount_units;
ALTER TABLE charges DROP COLUMN request_id;
DROP TABLE machine_claims;
DROP TABLE machine_requests;
DELETE FROM owners WHERE id = 'own_machine';
