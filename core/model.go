package core

import (
	"time"
)

// Owner is an account holder. Everything in faxhub belongs to one owner.
type Owner struct {
	ID              string     `json:"id" db:"id"`
	Email           string     `json:"email" db:"email"`
	Name            string     `json:"name" db:"name"`
	EmailVerifiedAt *time.Time `json:"emailVerifiedAt,omitempty" db:"email_verified_at"`
	CreatedAt       time.Time  `json:"createdAt" db:"created_at"`
}

// APIKey is a backend credential. The secret is shown once at creation and
// only its hash is stored.
type APIKey struct {
	ID         string     `json:"id" db:"id"`
	OwnerID    string     `json:"ownerId" db:"owner_id"`
	Mode       Mode       `json:"mode" db:"mode"`
	Name       string     `json:"name" db:"name"`
	Hash       string     `json:"-" db:"hash"`
	Hint       string     `json:"hint" db:"hint"` // prefix and last four characters, for recognition
	CreatedAt  time.Time  `json:"createdAt" db:"created_at"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty" db:"last_used_at"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty" db:"revoked_at"`
}

// Session is a first-party browser session of an owner. The cookie holds the
// secret; the store holds its hash.
type Session struct {
	ID         string    `db:"id"`
	Hash       string    `db:"hash"`
	OwnerID    string    `db:"owner_id"`
	CreatedAt  time.Time `db:"created_at"`
	LastSeenAt time.Time `db:"last_seen_at"`
	ExpiresAt  time.Time `db:"expires_at"` // absolute expiry
	UserAgent  string    `db:"user_agent"`
}

// Quote is a price for sending a number of pages to one destination.
type Quote struct {
	To           string `json:"to"`
	Country      string `json:"country"` // ISO 3166-1 alpha-2
	Pages        int    `json:"pages"`
	Cover        bool   `json:"cover"`
	BilledPages  int    `json:"billedPages"` // pages plus the cover page
	Currency     string `json:"currency"`
	AmountMicros int64  `json:"-"`
	// Amount is the decimal USD string ("0.21"); Cents is the same in cents.
	Amount string `json:"amount"`
	Cents  int64  `json:"amountCents"`
	Tariff string `json:"tariff"`
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
