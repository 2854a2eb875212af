-- Agent tasks (core/tasks): a task row stores only what it follows
-- (its subject: a draft, a credit purchase); its state is derived from that
-- subject on every read. credit_purchases are AP2 purchases of a credit
-- pack: a payment mandate is honoured once (payment_mandate_id is unique).
-- approval_id, charge_id and task_id carry no foreign key: approvals are
-- purged on their own schedule and a purchase outlives them.

-- +goose Up
CREATE TABLE agent_tasks (
    id         TEXT NOT NULL PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (id),
    mode       TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    kind       TEXT NOT NULL,
    skill      TEXT NOT NULL DEFAULT '',
    context_id TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX agent_tasks_owner ON agent_tasks (owner_id, created_at);

CREATE TABLE credit_purchases (
    id                 TEXT NOT NULL PRIMARY KEY,
    owner_id           TEXT NOT NULL REFERENCES owners (id),
    mode               TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    task_id            TEXT NOT NULL,
    pack_id            TEXT NOT NULL,
    amount_micros      BIGINT NOT NULL CHECK (amount_micros > 0),
    credit_micros      BIGINT NOT NULL,
    currency           TEXT NOT NULL,
    status             TEXT NOT NULL,
    cart_jws           TEXT NOT NULL DEFAULT '',
    expires_at         TIMESTAMP NOT NULL,
    payment_mandate_id TEXT UNIQUE,
    payment_method     TEXT NOT NULL DEFAULT '',
    credential         BLOB,
    approval_id        TEXT,
    charge_id          TEXT,
    failure_code       TEXT NOT NULL DEFAULT '',
    failure_reason     TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);
CREATE INDEX credit_purchases_approval ON credit_purchases (approval_id);
CREATE INDEX credit_purchases_task ON credit_purchases (task_id);
CREATE INDEX credit_purchases_updated ON credit_purchases (updated_at);

-- A draft keeps the country its destination was priced in, so reading
-- it back (a task polled every few seconds) does not parse the number again.
ALTER TABLE drafts ADD COLUMN country TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE drafts DROP COLUMN country;
DROP TABLE credit_purchases;
DROP TABLE agent_tasks;
