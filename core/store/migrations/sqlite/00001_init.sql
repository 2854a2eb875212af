-- Times are TIMESTAMP columns holding fixed-width UTC text
-- ("2006-01-02 15:04:05.000000Z"): text compares in time order, and the
-- driver reads TIMESTAMP columns back as time.Time.
-- Money is INTEGER micro-USD.

-- +goose Up
CREATE TABLE owners (
    id                TEXT NOT NULL PRIMARY KEY,
    email             TEXT NOT NULL UNIQUE,
    name              TEXT NOT NULL DEFAULT '',
    email_verified_at TIMESTAMP,
    created_at        TIMESTAMP NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    name         TEXT NOT NULL DEFAULT '',
    hash         TEXT NOT NULL UNIQUE,
    hint         TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP
);
CREATE INDEX api_keys_owner ON api_keys (owner_id, created_at DESC, id DESC);

CREATE TABLE sessions (
    id           TEXT NOT NULL PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    created_at   TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    user_agent   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sessions_owner ON sessions (owner_id);

CREATE TABLE documents (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    source_type  TEXT NOT NULL,
    source_bytes INTEGER NOT NULL,
    source_key   TEXT NOT NULL,
    pdf_key      TEXT NOT NULL,
    pdf_bytes    INTEGER NOT NULL,
    pages        INTEGER NOT NULL,
    sha256       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX documents_owner ON documents (owner_id, mode);

CREATE TABLE uploads (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    content_type TEXT NOT NULL DEFAULT '',
    max_bytes    INTEGER NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    claimed_at   TIMESTAMP,
    document_id  TEXT REFERENCES documents (id)
);
CREATE INDEX uploads_owner ON uploads (owner_id);

-- drafts.order_id and orders.draft_id reference each other; SQLite resolves
-- foreign keys when rows are written, so the forward reference is fine.
CREATE TABLE drafts (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    document_id  TEXT NOT NULL REFERENCES documents (id),
    destination  TEXT NOT NULL,
    cover        BOOLEAN NOT NULL DEFAULT FALSE,
    cover_text   TEXT NOT NULL DEFAULT '',
    pages        INTEGER NOT NULL,
    price_micros INTEGER NOT NULL,
    status       TEXT NOT NULL,
    order_id     TEXT REFERENCES orders (id),
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL
);
CREATE INDEX drafts_owner ON drafts (owner_id, mode);

CREATE TABLE orders (
    id              TEXT NOT NULL PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES owners (id),
    mode            TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    status          TEXT NOT NULL,
    destination     TEXT NOT NULL,
    document_id     TEXT NOT NULL REFERENCES documents (id),
    pages           INTEGER NOT NULL,
    cover           BOOLEAN NOT NULL DEFAULT FALSE,
    cover_text      TEXT NOT NULL DEFAULT '',
    price_micros    INTEGER NOT NULL,
    currency        TEXT NOT NULL,
    payment_method  TEXT NOT NULL,
    pages_sent      INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    failure_code    TEXT NOT NULL DEFAULT '',
    failure_reason  TEXT NOT NULL DEFAULT '',
    draft_id        TEXT REFERENCES drafts (id),
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    completed_at    TIMESTAMP,
    next_attempt_at TIMESTAMP
);
CREATE INDEX orders_owner_list ON orders (owner_id, mode, created_at DESC, id DESC);
CREATE INDEX orders_owner_status_list ON orders (owner_id, mode, status, created_at DESC, id DESC);

CREATE TABLE attempts (
    id             TEXT NOT NULL PRIMARY KEY,
    order_id       TEXT NOT NULL REFERENCES orders (id),
    number         INTEGER NOT NULL,
    provider       TEXT NOT NULL,
    provider_ref   TEXT NOT NULL DEFAULT '',
    status         TEXT NOT NULL,
    failure_code   TEXT NOT NULL DEFAULT '',
    failure_reason TEXT NOT NULL DEFAULT '',
    retryable      BOOLEAN NOT NULL DEFAULT FALSE,
    pages_sent     INTEGER NOT NULL DEFAULT 0,
    duration_ms    INTEGER NOT NULL DEFAULT 0,
    started_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP,
    UNIQUE (order_id, number)
);

-- The ledger is append-only; credit_balances caches its sums per owner and
-- mode and is updated in the transaction that appends each entry.
CREATE TABLE ledger_entries (
    id            TEXT NOT NULL PRIMARY KEY,
    owner_id      TEXT NOT NULL REFERENCES owners (id),
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    kind          TEXT NOT NULL,
    amount_micros INTEGER NOT NULL,
    order_id      TEXT REFERENCES orders (id),
    hold_id       TEXT REFERENCES ledger_entries (id),
    reason        TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    CHECK (
        (kind = 'hold' AND amount_micros < 0) OR
        (kind = 'capture' AND amount_micros = 0 AND hold_id IS NOT NULL) OR
        (kind = 'release' AND amount_micros > 0 AND hold_id IS NOT NULL) OR
        (kind IN ('grant', 'purchase', 'refund') AND amount_micros > 0)
    )
);
CREATE INDEX ledger_entries_owner_list ON ledger_entries (owner_id, mode, created_at DESC, id DESC);
-- One hold per order, so "the order's hold" is well defined.
CREATE UNIQUE INDEX ledger_entries_order_hold ON ledger_entries (order_id) WHERE kind = 'hold';
-- A hold is settled (captured or released) at most once.
CREATE UNIQUE INDEX ledger_entries_hold_settlement ON ledger_entries (hold_id) WHERE kind IN ('capture', 'release');

CREATE TABLE credit_balances (
    owner_id         TEXT NOT NULL REFERENCES owners (id),
    mode             TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    available_micros INTEGER NOT NULL DEFAULT 0 CHECK (available_micros >= 0),
    held_micros      INTEGER NOT NULL DEFAULT 0 CHECK (held_micros >= 0),
    PRIMARY KEY (owner_id, mode)
);

CREATE TABLE idempotency_records (
    scope         TEXT NOT NULL,
    key           TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    response_code INTEGER NOT NULL,
    response      BLOB,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE TABLE approvals (
    id           TEXT NOT NULL PRIMARY KEY,
    owner_id     TEXT NOT NULL REFERENCES owners (id),
    kind         TEXT NOT NULL,
    requester    TEXT NOT NULL DEFAULT '',
    summary      TEXT NOT NULL DEFAULT '',
    details      TEXT,
    binding_hash TEXT NOT NULL,
    requires_uv  BOOLEAN NOT NULL DEFAULT FALSE,
    status       TEXT NOT NULL,
    decision     TEXT,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    decided_at   TIMESTAMP
);
CREATE INDEX approvals_owner_status ON approvals (owner_id, status, created_at DESC, id DESC);

CREATE TABLE checkouts (
    id            TEXT NOT NULL PRIMARY KEY,
    owner_id      TEXT NOT NULL REFERENCES owners (id),
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    kind          TEXT NOT NULL,
    pack_id       TEXT NOT NULL DEFAULT '',
    draft_id      TEXT REFERENCES drafts (id),
    amount_micros INTEGER NOT NULL,
    credit_micros INTEGER NOT NULL DEFAULT 0,
    status        TEXT NOT NULL,
    external_id   TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    paid_at       TIMESTAMP
);
CREATE INDEX checkouts_owner ON checkouts (owner_id, mode);

-- GCRA state: tat is the theoretical arrival time in unix microseconds.
CREATE TABLE rate_limits (
    key TEXT NOT NULL PRIMARY KEY,
    tat INTEGER NOT NULL
);

CREATE TABLE secrets (
    name       TEXT NOT NULL PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE secrets;
DROP TABLE rate_limits;
DROP TABLE checkouts;
DROP TABLE approvals;
DROP TABLE idempotency_records;
DROP TABLE credit_balances;
DROP TABLE ledger_entries;
DROP TABLE attempts;
UPDATE drafts SET order_id = NULL;
DROP TABLE orders;
DROP TABLE drafts;
DROP TABLE uploads;
DROP TABLE documents;
DROP TABLE sessions;
DROP TABLE api_keys;
DROP TABLE owners;
