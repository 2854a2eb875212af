package machine

import (
	"context"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
)

// RequestStatus is where a machine request stands: open until one
// of its challenges is paid, then paid (it has its fax and its stored 200).
type RequestStatus string

const (
	RequestOpen RequestStatus = "open"
	RequestPaid RequestStatus = "paid"
)

// Request is one request_id of a paying machine: the body it was
// first seen with, its quote, the challenges offered for it and, once paid,
// the answer every later retry gets.
type Request struct {
	RequestID   string `db:"request_id"`
	BodyDigest  string `db:"body_digest"`
	Destination string `db:"destination"`
	Country     string `db:"country"`
	Pages       int    `db:"pages"`
	Cover       bool   `db:"cover"`
	// Options are the request's send options as checked (cover page,
	// header, resolution, retry); the fax created when it is paid gets
	// them. The body digest the challenges bind covers them.
	Options     faxes.Options `db:"options"`
	PriceMicros int64         `db:"price_micros"`
	// Challenges are every offered challenge, unfiltered, in the server's
	// order: JSON of []Challenge (the adapter filters and orders them per
	// response by Accept-Payment). A row of an earlier version holds
	// {id, method, intent, header} entries with the rendered
	// WWW-Authenticate value and no realm; its challenges are issued again
	// (offered).
	Challenges         []byte    `db:"challenges"`
	ChallengesExpireAt time.Time `db:"challenges_expire_at"`
	// Generation counts re-issues of the challenges; it is bound into
	// opaque from the first re-issue on, so a re-issue never repeats the
	// ids of the challenges it replaces.
	Generation int           `db:"generation"`
	Status     RequestStatus `db:"status"`
	FaxID      *string       `db:"fax_id"`
	// Response is the stored Order JSON of the 200.
	Response []byte `db:"response"`
	// Receipt is the rendered Payment-Receipt an earlier version stored;
	// written empty now, and never read: the receipt is derived from the
	// charge that paid the fax (storedOrder).
	Receipt   string    `db:"receipt"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
	// issued are the challenges this process just issued for the request
	// (issueChallenges), the ones Challenges encodes, and rendered their
	// wire forms by id (FaxResult.Rendered): the answer offers them as they
	// are instead of decoding what was just encoded and rendering it
	// again. nil for a row read from the store.
	issued   []Challenge       `db:"-"`
	rendered map[string]string `db:"-"`
}

// ClaimState is where a claimed challenge stands.
type ClaimState string

const (
	// ClaimSettling: the method is being (or was, when the process
	// died) asked to settle; the lease says until when it is one request's.
	ClaimSettling ClaimState = "settling"
	// ClaimPaid: settled, and the fax exists.
	ClaimPaid ClaimState = "paid"
	// ClaimFailed: the method refused the credential; nothing moved.
	// Another credential (another idempotency key) may claim it again.
	ClaimFailed ClaimState = "failed"
)

// Claim is the single use of one challenge.
type Claim struct {
	ChallengeID string    `db:"challenge_id"`
	RequestID   string    `db:"request_id"`
	Method      string    `db:"method"`
	Mode        core.Mode `db:"mode"`
	// IdempotencyKey is what the method settles under: derived from the
	// challenge id and a hash of the credential, never the credential.
	IdempotencyKey string `db:"idempotency_key"`
	// Amount and Currency are the challenge's request, in the method's
	// units.
	Amount   int64  `db:"amount"`
	Currency string `db:"currency"`
	// Credential is the payer's payload sealed under a server secret
	// (core/seal), kept while the claim settles so that a retry after a
	// crash settles it with the same key and parameters; cleared when the
	// claim ends.
	Credential []byte     `db:"credential"`
	State      ClaimState `db:"state"`
	LeaseUntil time.Time  `db:"lease_until"`
	DocumentID string     `db:"document_id"`
	FaxID      *string    `db:"fax_id"`
	Failure    string     `db:"failure"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
}

// Refund states of a machine charge (Charge.RefundState).
const (
	RefundNone          = ""
	RefundDue           = "due"
	RefundDone          = "refunded"
	RefundNotRefundable = "not_refundable"
)

// Queries persists machine payments; part of services.Store. Errors follow
// core.Store.
type Queries interface {
	// CreateMachineRequest records a new request_id; ErrExists if taken.
	CreateMachineRequest(ctx context.Context, r *Request) error
	GetMachineRequest(ctx context.Context, requestID string) (*Request, error)
	// ReissueMachineChallenges replaces the challenges of an open request
	// whose generation is still r.Generation-1 (compare-and-set: of many
	// concurrent re-issues one wins); ErrConflict otherwise.
	ReissueMachineChallenges(ctx context.Context, r *Request) error
	// MarkMachineRequestPaid moves an open request to paid with its fax and
	// stored answer; ErrConflict if it is paid already. Core passes an
	// empty receipt (Request.Receipt).
	MarkMachineRequestPaid(ctx context.Context, requestID, faxID string, response []byte, receipt string, at time.Time) error

	// InsertMachineClaim claims a challenge; ErrExists if it was claimed.
	InsertMachineClaim(ctx context.Context, c *Claim) error
	GetMachineClaim(ctx context.Context, challengeID string) (*Claim, error)
	// TakeOverMachineClaim gives a claim to c's caller until
	// c.LeaseUntil: a settling claim whose lease ended at or before at
	// keeps its own key, amount, credential and document (the method may
	// have charged under them); a failed one, when c brings another
	// idempotency key (another credential), takes c's and moves to
	// settling. The caller reads the claim back. ErrConflict when the
	// claim is paid, leased, or failed under the same key; ErrNoRows when
	// there is none.
	TakeOverMachineClaim(ctx context.Context, c *Claim, at time.Time) error
	// RenewMachineClaim extends the lease of a settling claim (the sweeper
	// taking a stale one) if it still ends at leaseWas; ErrConflict
	// otherwise.
	RenewMachineClaim(ctx context.Context, challengeID string, leaseWas, until time.Time) error
	// ReleaseMachineClaim ends the lease of a settling claim (lease_until
	// = at) so that the next retry settles it at once.
	ReleaseMachineClaim(ctx context.Context, challengeID string, at time.Time) error
	// FinishMachineClaim moves a settling claim to paid (with its fax) or
	// failed (with why) and clears its credential; ErrConflict if it is
	// not settling.
	FinishMachineClaim(ctx context.Context, challengeID string, state ClaimState, faxID *string, failure string, at time.Time) error
	// StaleMachineClaims lists up to n settling claims whose lease ended
	// at or before before, oldest first.
	StaleMachineClaims(ctx context.Context, before time.Time, n int) ([]Claim, error)

	// DueRefunds lists up to n charges whose refund is due and not leased
	// at now.
	DueRefunds(ctx context.Context, now time.Time, n int) ([]credits.Charge, error)
	// LeaseRefund takes a due refund for one replica until until, if it
	// is due and unleased at now; ErrConflict otherwise.
	LeaseRefund(ctx context.Context, chargeID string, now, until time.Time) error
	// FinishRefund ends a due refund: refunded (the charge is marked
	// refunded with reference) or not_refundable; ErrConflict if it is not
	// due.
	FinishRefund(ctx context.Context, chargeID, state, reference string, at time.Time) error

	// PurgeMachineRequests deletes open requests whose challenges expired
	// before before, with their failed claims.
	PurgeMachineRequests(ctx context.Context, before time.Time) (int64, error)
	// PurgeMachineClaims deletes failed claims last updated before before.
	PurgeMachineClaims(ctx context.Context, before time.Time) (int64, error)
}
