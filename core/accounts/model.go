package accounts

import (
	"time"

	"github.com/faxhub/faxhub/core"
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
	Mode       core.Mode  `json:"mode" db:"mode"`
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
