package authstate

import (
	"context"
	"time"
)

// The owner console (passkeys/) keeps WebAuthn state in the database so that
// every replica can finish a ceremony another one began, and so that
// single-use rules hold across replicas. core/store implements
// PasskeyStore; conformance/storetest checks it on every backend.

// Passkey is a WebAuthn credential an owner signs in with.
type Passkey struct {
	ID      string `db:"id"`
	OwnerID string `db:"owner_id"`
	// CredentialID is the authenticator's credential id, base64url without
	// padding (as it appears in WebAuthn JSON).
	CredentialID    string `db:"credential_id"`
	Name            string `db:"name"`
	PublicKey       []byte `db:"public_key"` // COSE_Key
	AttestationType string `db:"attestation_type"`
	AAGUID          []byte `db:"aaguid"`
	SignCount       int64  `db:"sign_count"`
	// Transports are the authenticator's transports, space-separated
	// ("internal hybrid"), used as hints in later ceremonies.
	Transports     string     `db:"transports"`
	UserVerified   bool       `db:"user_verified"`
	BackupEligible bool       `db:"backup_eligible"`
	BackupState    bool       `db:"backup_state"`
	CreatedAt      time.Time  `db:"created_at"`
	LastUsedAt     *time.Time `db:"last_used_at"`
}

// Challenge purposes. An approval's challenge has the purpose
// ApprovalChallengePurpose(id), so it cannot approve anything else.
const (
	ChallengeRegistration = "registration" // a signed-in owner adds a passkey
	ChallengeLogin        = "login"        // discoverable sign-in
	ChallengeSignup       = "signup"       // first passkey after email verification
	ChallengeRecovery     = "recovery"     // new passkey after a recovery link
)

// ApprovalChallengePurpose is the purpose of a challenge issued to approve
// one approval.
func ApprovalChallengePurpose(approvalID string) string { return "approval:" + approvalID }

// WebAuthnChallenge is a pending WebAuthn ceremony. The challenge itself
// is known only to the browser; the store keeps its hash and finds the row
// by the challenge the authenticator signed.
type WebAuthnChallenge struct {
	Hash    string  `db:"hash"` // HashSecret of the base64url challenge
	Purpose string  `db:"purpose"`
	OwnerID *string `db:"owner_id"` // whom it was issued to; nil for sign-in
	// Binding is what the ceremony is bound to besides its purpose: an
	// approval's binding hash, or the hash of the email token of a sign-up
	// or recovery.
	Binding string `db:"binding"`
	// Session is the ceremony state to verify the response against
	// (go-webauthn's SessionData without the challenge), JSON.
	Session   []byte     `db:"session"`
	CreatedAt time.Time  `db:"created_at"`
	ExpiresAt time.Time  `db:"expires_at"`
	UsedAt    *time.Time `db:"used_at"`
}

// Email token purposes.
const (
	EmailTokenSignup   = "signup"   // a pending sign-up: email and name to verify
	EmailTokenRecovery = "recovery" // an owner who lost their passkeys
)

// EmailToken is a one-time link mailed to an owner (or a would-be owner).
// Only its hash is stored.
type EmailToken struct {
	Hash    string `db:"hash"`
	Purpose string `db:"purpose"`
	Email   string `db:"email"`
	Name    string `db:"name"`
	// OwnerID is the owner the link acts for: set at creation for recovery,
	// and when the owner is created for a sign-up.
	OwnerID   *string    `db:"owner_id"`
	CreatedAt time.Time  `db:"created_at"`
	ExpiresAt time.Time  `db:"expires_at"`
	UsedAt    *time.Time `db:"used_at"`
}

// PasskeyStore persists passkeys, WebAuthn challenges and email tokens.
// Errors follow core.Store: ErrNoRows, ErrExists, ErrConflict.
type PasskeyStore interface {
	PasskeyQueries
	// InPasskeyTx runs fn in one transaction (committed when fn returns
	// nil), so that spending an email link and storing the passkey it
	// registers happen together.
	InPasskeyTx(ctx context.Context, fn func(PasskeyQueries) error) error
}

// PasskeyQueries are PasskeyStore's operations, on the store or inside a
// transaction.
type PasskeyQueries interface {
	// CreatePasskey stores a new passkey; ErrExists if its credential id is
	// registered already (to anyone).
	CreatePasskey(ctx context.Context, p *Passkey) error
	GetPasskeyByCredentialID(ctx context.Context, credentialID string) (*Passkey, error)
	// ListPasskeys lists the owner's passkeys, oldest first.
	ListPasskeys(ctx context.Context, ownerID string) ([]Passkey, error)
	// RenamePasskey renames one of the owner's passkeys; ErrNoRows if the
	// owner has no such passkey.
	RenamePasskey(ctx context.Context, ownerID, id, name string) error
	// DeletePasskey removes one of the owner's passkeys unless it is their
	// last: ErrConflict then (also under concurrent deletes), ErrNoRows if
	// the owner has no such passkey.
	DeletePasskey(ctx context.Context, ownerID, id string) error
	// RecordPasskeyUse stores the signature counter and backup state an
	// assertion reported and when it happened.
	RecordPasskeyUse(ctx context.Context, id string, signCount int64, backupState bool, at time.Time) error

	CreateChallenge(ctx context.Context, c *WebAuthnChallenge) error
	// ClaimChallenge marks an unused, unexpired challenge used and returns
	// it. Exactly one of concurrent callers succeeds. ErrNoRows if no
	// challenge with that hash was issued for purpose; ErrConflict if it
	// was used already or has expired at at.
	ClaimChallenge(ctx context.Context, hash, purpose string, at time.Time) (*WebAuthnChallenge, error)

	CreateEmailToken(ctx context.Context, t *EmailToken) error
	GetEmailToken(ctx context.Context, hash string) (*EmailToken, error)
	// SetEmailTokenOwner records the owner a sign-up created, once:
	// ErrConflict if another owner is recorded already.
	SetEmailTokenOwner(ctx context.Context, hash, ownerID string) error
	// ClaimEmailToken marks an unused, unexpired token of purpose used and
	// returns it, once; errors as ClaimChallenge.
	ClaimEmailToken(ctx context.Context, hash, purpose string, at time.Time) (*EmailToken, error)

	// PurgeWebAuthn deletes challenges and email tokens that expired
	// before before.
	PurgeWebAuthn(ctx context.Context, before time.Time) error
}
