// Package agents is agent registration with owner approval (spec,
// Authentication section 3): an owner issues an enrollment token, an agent
// registers with it, and the owner approves the agent's claim. The rules
// are here; oauth/ serves the HTTP endpoints and signs identity
// assertions; core/store keeps the state. Every secret (enrollment token,
// claim token, claim-attempt token, user code, access token) reaches the
// store only as a SHA-256 hash.
package agents

import (
	"context"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/events"
)

// Limits of agent registration.
const (
	EnrollmentTTL      = 10 * time.Minute
	MaxLiveEnrollments = 5
	ClaimTTL           = 10 * time.Minute
	ClaimInterval      = 5 // seconds
	ClaimSlowDownStep  = 5 // seconds
	ClaimMaxTries      = 5
	AccessTokenTTL     = time.Hour
	AssertionTTL       = 30 * 24 * time.Hour
	TypeService        = "service_auth"
	TypeAnonymous      = "anonymous"
)

// Agent claim states.
const (
	ClaimPending  = "pending"
	ClaimApproved = "approved"
	ClaimDenied   = "denied"
	ClaimExpired  = "expired"
	// ClaimRedeemed is an approved claim whose token was handed out by
	// a poll: later polls are refused.
	ClaimRedeemed = "redeemed"
)

// Agent registration states.
const (
	Active  = "active"
	Revoked = "revoked"
)

// Enrollment is an owner-issued enrollment token (hashed).
type Enrollment struct {
	ID             string     `db:"id" json:"id"`
	OwnerID        string     `db:"owner_id" json:"-"`
	Name           string     `db:"name" json:"name"`
	Scopes         []string   `db:"-" json:"scopes"`
	TokenHash      string     `db:"token_hash" json:"-"`
	CreatedAt      time.Time  `db:"created_at" json:"created_at"`
	ExpiresAt      time.Time  `db:"expires_at" json:"expires_at"`
	ConsumedAt     *time.Time `db:"consumed_at" json:"consumed_at,omitempty"`
	RevokedAt      *time.Time `db:"revoked_at" json:"revoked_at,omitempty"`
	RegistrationID string     `db:"registration_id" json:"registration_id,omitempty"`
}

// Live reports whether the token can still register an agent at now.
func (e *Enrollment) Live(now time.Time) bool {
	return e.ConsumedAt == nil && e.RevokedAt == nil && now.Before(e.ExpiresAt)
}

// Registration is one registered agent.
type Registration struct {
	ID         string     `db:"id" json:"id"`
	OwnerID    string     `db:"owner_id" json:"-"`
	Type       string     `db:"type" json:"type"`
	Name       string     `db:"name" json:"name"`
	Scopes     []string   `db:"-" json:"scopes"`
	Status     string     `db:"status" json:"status"`
	Claimed    bool       `db:"claimed" json:"claimed"`
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at" json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `db:"revoked_at" json:"revoked_at,omitempty"`
	// AssertionJTI is the jti of the one identity assertion that is
	// currently valid; issuing a new one invalidates the previous.
	AssertionJTI      string     `db:"assertion_jti" json:"-"`
	AssertionIssuedAt *time.Time `db:"assertion_issued_at" json:"-"`
}

// Claim is the owner-approval state of a registration (one per
// registration).
type Claim struct {
	RegistrationID string `db:"registration_id"`
	OwnerID        string `db:"owner_id"`
	TokenHash      string `db:"token_hash"`
	// UserCodeHash and AttemptHash belong to the current claim attempt; a
	// new attempt replaces both (the old link stops working).
	UserCodeHash string     `db:"user_code_hash"`
	AttemptHash  string     `db:"attempt_hash"`
	ApprovalID   string     `db:"approval_id"`
	Scopes       []string   `db:"-"` // requested, then approved
	Status       string     `db:"status"`
	CreatedAt    time.Time  `db:"created_at"`
	ExpiresAt    time.Time  `db:"expires_at"`
	Interval     int        `db:"interval_seconds"`
	LastPollAt   *time.Time `db:"last_poll_at"`
	Tries        int        `db:"tries"`
}

// Token is an agent access token (hashed).
type Token struct {
	TokenHash      string    `db:"token_hash"`
	RegistrationID string    `db:"registration_id"`
	OwnerID        string    `db:"owner_id"`
	Scopes         []string  `db:"-"`
	Resource       string    `db:"resource"`
	CreatedAt      time.Time `db:"created_at"`
	ExpiresAt      time.Time `db:"expires_at"`
}

// Queries persists agent registration. core/store implements it beside
// core.Store. Errors follow core.Store: ErrNoRows, ErrExists, ErrConflict.
type Queries interface {
	// CreateEnrollment stores a token unless the owner already has
	// max live unused tokens at e.CreatedAt (ErrConflict); the check and
	// the insert are atomic across replicas.
	CreateAgentEnrollment(ctx context.Context, e *Enrollment, max int) error
	GetAgentEnrollmentByHash(ctx context.Context, hash string) (*Enrollment, error)
	// ListEnrollments lists the owner's live unused tokens at now.
	ListAgentEnrollments(ctx context.Context, ownerID string, now time.Time) ([]Enrollment, error)
	// RevokeEnrollment revokes a live unused token; ErrNoRows if none.
	RevokeAgentEnrollment(ctx context.Context, ownerID, id string, at time.Time) error

	// Register consumes the enrollment enrollmentID (ErrConflict if it
	// is not live and unused at r.CreatedAt) and creates the registration
	// and its claim, in one transaction.
	RegisterAgent(ctx context.Context, enrollmentID string, r *Registration, c *Claim) error
	GetAgentRegistration(ctx context.Context, id string) (*Registration, error)
	ListAgentRegistrations(ctx context.Context, ownerID string) ([]Registration, error)
	// RevokeRegistration revokes an active registration (of ownerID
	// unless ownerID is empty), deletes its access tokens and ends its
	// pending claim; ErrNoRows if there is no active one.
	RevokeAgentRegistration(ctx context.Context, ownerID, id string, at time.Time) error
	// SetAgentAssertion records the registration's current assertion.
	SetAgentAssertion(ctx context.Context, id, jti string, at time.Time) error
	TouchAgentRegistration(ctx context.Context, id string, at time.Time) error

	GetAgentClaimByToken(ctx context.Context, tokenHash string) (*Claim, error)
	GetAgentClaimByAttempt(ctx context.Context, attemptHash string) (*Claim, error)
	// StartAgentClaimAttempt replaces a pending claim's attempt (new link,
	// new code, tries reset, approval id); ErrConflict if not pending.
	StartAgentClaimAttempt(ctx context.Context, registrationID, attemptHash, codeHash, approvalID string) error
	// AddAgentClaimTry counts one wrong code on the attempt and returns
	// the tries so far.
	AddAgentClaimTry(ctx context.Context, attemptHash string) (int, error)
	// DecideClaim moves a pending claim to approved (with scopes,
	// also written to the registration) or denied; ErrConflict if it is
	// not pending.
	DecideAgentClaim(ctx context.Context, registrationID string, approve bool, scopes []string, at time.Time) error
	// LockAgentClaim reads a claim by its token for update: inside a
	// transaction, concurrent polls of one claim (on any replica) queue.
	LockAgentClaim(ctx context.Context, tokenHash string) (*Claim, error)
	// RecordAgentClaimPoll stores a poll's outcome: the status (pending or
	// expired), the interval and when the poll happened.
	RecordAgentClaimPoll(ctx context.Context, registrationID, status string, interval int, at time.Time) error
	// RedeemAgentClaim moves approved to redeemed once (ErrConflict
	// otherwise).
	RedeemAgentClaim(ctx context.Context, registrationID string) error

	CreateAgentToken(ctx context.Context, t *Token) error
	GetAgentToken(ctx context.Context, hash string) (*Token, error)
	DeleteAgentToken(ctx context.Context, hash string) error
	// DeleteExpiredAgentTokens removes access tokens that expired before t.
	DeleteExpiredAgentTokens(ctx context.Context, t time.Time) (int64, error)
}

// Store keeps agent registrations.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of agent registration.
type Tx interface {
	core.Tx
	approvals.Tx
	events.Queries
	Queries
}

// Deps are the ports agent registration drives.
type Deps struct {
	Store  Store
	Logger *slog.Logger
	// Core records the approvals and charges the rate limits.
	Kernel *core.Kernel
	// Accounts reads the owners agents are enrolled for.
	Accounts *accounts.Service
	// Approvals asks the owner and reads their decisions.
	Approvals *approvals.Service
}

// Service runs agent registration.
type Service struct {
	cfg      core.Config
	d        Deps
	kernel   *core.Kernel
	accounts *accounts.Service
	codes    *approvals.CodeApproval[string]
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, d: d, kernel: d.Kernel, accounts: d.Accounts,
		codes: approvals.NewCodeApproval(d.Approvals, claimRules())}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// inTx runs fn in one transaction of the store, typed as agent
// registration's.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
