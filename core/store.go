package core

import (
	"context"
	"time"
)

// Store is the persistence port. One implementation (core/store) serves
// SQLite and PostgreSQL; conformance/storetest holds the suite both pass.
//
// Every method returns ErrNoRows when a looked-up row is absent, ErrExists on
// a unique violation and ErrConflict when a compare-and-set finds the row in
// another state; services turn those into *Error.
type Store interface {
	Queries
	Transactor
	// Ping checks the database is reachable; Ready also checks that every
	// migration is applied.
	Ping(ctx context.Context) error
	Ready(ctx context.Context) error
	Secrets
	Close() error
}

// Transactor runs functions in database transactions. A feature whose
// transactions touch rows of its own defines its Tx as core.Tx plus its
// queries; the store's transaction implements every feature's, so the
// feature asserts the Tx it is handed to its own (once, in its inTx).
type Transactor interface {
	// InTx runs fn in one transaction: committed when fn returns nil, rolled
	// back otherwise. On SQLite the transaction takes the write lock at
	// BEGIN (immediate), so a read-then-write inside fn cannot race.
	InTx(ctx context.Context, fn func(tx Tx) error) error
}

// Secrets are the server secrets every replica shares.
type Secrets interface {
	// Secret returns the named server secret, creating it (32 random bytes)
	// on first use; every replica gets the same value.
	Secret(ctx context.Context, name string) ([]byte, error)
}

// Tx is a Store bound to one transaction. Adapters that must write in the
// same transaction (the job queue) reach the driver's transaction through
// an interface they define on their side.
type Tx interface {
	Queries
}

// Queries are the data operations, available on a Store and inside a Tx.
type Queries interface {
	KernelStore
}

// KernelStore keeps what every feature shares: idempotency records and
// the rate limiter.
type KernelStore interface {
	// InsertIdempotency stores r; ErrExists if (scope, key) is taken.
	InsertIdempotency(ctx context.Context, r *IdempotencyRecord) error
	GetIdempotency(ctx context.Context, scope, key string) (*IdempotencyRecord, error)

	// AllowRate is a GCRA limiter shared by every replica: it admits one
	// event for key if fewer than burst events are outstanding, where one
	// event drains every interval. When refused it reports how long to wait.
	AllowRate(ctx context.Context, key string, now time.Time, interval time.Duration, burst int) (ok bool, retryAfter time.Duration, err error)
}

// IdempotencyRecord remembers the response to a request made with an
// idempotency key.
type IdempotencyRecord struct {
	Scope        string    `db:"scope"` // owner, mode and operation
	Key          string    `db:"key"`
	RequestHash  string    `db:"request_hash"`
	ResponseCode int       `db:"response_code"`
	Response     []byte    `db:"response"`
	CreatedAt    time.Time `db:"created_at"`
}
