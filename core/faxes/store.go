package faxes

import (
	"context"
	"errors"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/events"
)

// Queries keeps drafts, faxes and their attempts.
type Queries interface {
	CreateDraft(ctx context.Context, d *Draft) error
	GetDraft(ctx context.Context, ownerID string, mode core.Mode, id string) (*Draft, error)
	// MarkDraftPaid moves an open draft to paid; ErrConflict otherwise.
	MarkDraftPaid(ctx context.Context, id, faxID string) error

	CreateFax(ctx context.Context, o *Fax) error
	GetFax(ctx context.Context, ownerID string, mode core.Mode, id string) (*Fax, error)
	// GetFaxByID reads a fax for the delivery worker (no owner filter).
	GetFaxByID(ctx context.Context, id string) (*Fax, error)
	ListFaxes(ctx context.Context, f Filter) ([]Fax, error)
	// UpdateFax writes o's mutable fields if the stored status is one of
	// from; ErrConflict otherwise. o's document as faxed (FaxedSHA256 and
	// FaxedPages) is recorded as SetFaxedDocument records it: only if the
	// fax has none yet.
	UpdateFax(ctx context.Context, o *Fax, from ...Status) error
	// MoveFax is UpdateFax of m's fax and, only if it wrote, what goes
	// with the move (see Move), in one statement where the database can.
	MoveFax(ctx context.Context, m Move) error
	// SetFaxedDocument records the document as faxed of a fax that has
	// none yet (a fax keeps the first one).
	SetFaxedDocument(ctx context.Context, faxID, sha256 string, pages int) error

	// GetFaxSettings reads an owner's fax defaults; ErrNoRows when they
	// set none.
	GetFaxSettings(ctx context.Context, ownerID string) (*Settings, error)
	PutFaxSettings(ctx context.Context, ownerID string, st Settings, at time.Time) error
	// FaxWithDocument reads a fax, its document (as GetDocument, purged
	// excluded) and its owner's fax settings (zero when they set none)
	// together; ErrNoRows if there is no such fax or its document is
	// gone.
	FaxWithDocument(ctx context.Context, faxID string) (*Fax, *documents.Document, Settings, error)

	PreviewQueries
	// FaxedOfDocument lists a document's faxes: any may have a document
	// as faxed, named by its row or not (created by a delivery that never
	// recorded it: the fax canceled meanwhile, a crash).
	FaxedOfDocument(ctx context.Context, documentID string) ([]Fax, error)

	CreateAttempt(ctx context.Context, a *Attempt) error
	UpdateAttempt(ctx context.Context, a *Attempt) error
	LatestAttempt(ctx context.Context, faxID string) (*Attempt, error)
	// FaxWithLatestAttempt reads a fax and its latest attempt together
	// (GetFaxByID and LatestAttempt in one statement); ErrNoRows if there
	// is no such fax or it has no attempt.
	FaxWithLatestAttempt(ctx context.Context, faxID string) (*Fax, *Attempt, error)
	ListAttempts(ctx context.Context, faxID string) ([]Attempt, error)

	BatchQueries
}

// Move is one change of a fax as the store writes it (MoveFax): the fax,
// if its stored status is one of From, and only then the rest.
type Move struct {
	Fax  *Fax
	From []Status
	// Event is appended with the move (nil: none).
	Event *events.Event
	// Started is the attempt the move begins, inserted (nil: none).
	Started *Attempt
	// Updated is an attempt whose outcome fields (UpdateAttempt) are
	// written with the move (nil: none).
	Updated *Attempt
	// Read, if not nil, is the fax as the caller read or wrote it before
	// this move, outside its transaction: the move writes only if the
	// stored fax is still as read (ErrConflict otherwise). Every move
	// writes updated_at and every start counts an attempt, so the two
	// together say whether the fax moved since. A delivery moves a fax it
	// knows this way without reading it again.
	Read *Fax
	// Settle, if not empty, is the capture or release of the fax's credit
	// hold, settled with the move (credits.Tx.SettleHold, dated the fax's
	// UpdatedAt): a delivery's end is then its move, its attempt's outcome
	// and its ledger entry together, one statement on PostgreSQL that
	// needs no transaction around it. A hold that cannot be settled (none,
	// settled already, no balance row) fails the move with
	// ErrHoldNotSettled.
	Settle credits.LedgerKind
}

// ErrHoldNotSettled fails a move whose credit hold could not be settled
// with it (Move.Settle): the fax's status and its ledger disagree. It is
// neither ErrConflict nor ErrNoRows, so no caller takes it for a refused
// move; what the move wrote is taken back (by the caller's transaction
// inside one).
var ErrHoldNotSettled = errors.New("the fax's credit hold could not be settled with its move")

// Filter selects faxes for listing, newest first, with cursor
// pagination by id.
type Filter struct {
	OwnerID string
	Mode    core.Mode
	Status  Status // empty: any
	// CreatedFrom (inclusive) and CreatedTo (exclusive) bound the period;
	// nil: unbounded.
	CreatedFrom, CreatedTo *time.Time
	StartingAfter          string // fax id; list continues after it
	Limit                  int
}
