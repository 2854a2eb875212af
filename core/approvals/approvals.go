// Package approvals is the owner's approval inbox: one table of pending
// owner decisions (OAuth consent, agent claims, device approvals, delegated
// sends, AP2 charges), each bound to the exact thing it approves, some
// needing the owner's passkey with user verification. The feature that
// asked for an approval records or acts on the decision through its
// Handler. It also owns the one code-confirmed approval (CodeApproval,
// codes.go) behind agent claims and device approvals: the user code, its
// tries and expiry, narrow-never-widen, and the inbox copy.
package approvals

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// KindFaxSend is a delegated agent's send_fax waiting for the owner's
// passkey (requires_uv, binding = the exact fax).
const KindFaxSend Kind = "fax_send"

// KindChatSend is a chat app's send_fax (an OAuth grant without fax:send,
// or any chat app when the owner asks to approve every send) waiting for
// the owner's passkey: requires_uv, binding = the client and the exact fax
// of one draft. The inbox records the decision; the app's retry sends.
const KindChatSend Kind = "chat_send"

// Request asks an owner to decide something.
type Request struct {
	OwnerID string
	// Mode is the mode the requester acts in (default the agents' mode,
	// core.Config.AgentMode: every approval is asked for by an agent).
	Mode      core.Mode
	Kind      Kind
	Requester string // who asks: client name, agent name, host name
	Summary   string // one line shown in the inbox
	Details   any    // what exactly is asked (scopes, fax details, …), JSON
	// Binding is the exact thing approved; its hash is stored and a
	// decision must present the same hash.
	Binding    any
	RequiresUV bool
	TTL        time.Duration
}

// BindingHash commits to v (its JSON encoding).
func BindingHash(v any) string { return core.HashRequest(v) }

// Request records a pending approval for the owner's inbox.
func (s *Service) Request(ctx context.Context, r Request) (*Approval, error) {
	return s.RequestIn(ctx, nil, r)
}

// RequestIn records a pending approval, and approval.requested, in tx (a
// transaction that writes it together with what it approves; nil: one of
// its own).
func (s *Service) RequestIn(ctx context.Context, tx Tx, r Request) (*Approval, error) {
	details, err := json.Marshal(r.Details)
	if err != nil {
		return nil, fmt.Errorf("encode approval details: %w", err)
	}
	if r.TTL <= 0 {
		r.TTL = 10 * time.Minute
	}
	now := s.now()
	a := &Approval{
		ID: core.NewID(core.PrefixApproval), OwnerID: r.OwnerID, Mode: cmp.Or(r.Mode, s.cfg.AgentMode, core.ModeLive), Kind: r.Kind, Requester: core.CutUTF8(r.Requester, 200),
		Summary: core.CutUTF8(r.Summary, 500), Details: details, BindingHash: BindingHash(r.Binding),
		RequiresUV: r.RequiresUV, Status: Pending, CreatedAt: now, ExpiresAt: now.Add(r.TTL),
	}
	if err := s.in(ctx, tx, func(tx Tx) error { return Create(ctx, tx, a) }); err != nil {
		return nil, err
	}
	return a, nil
}

// Get returns one of the owner's approvals; expired pending ones
// read as expired. ExpiresAt is the first instant it is expired, as the
// inbox, Decide's store update and CodeApproval.Open have it: reading it
// pending at that instant would show a decision that cannot be made.
func (s *Service) Get(ctx context.Context, ownerID, id string) (*Approval, error) {
	a, err := s.d.Store.GetApproval(ctx, ownerID, id)
	if err != nil {
		return nil, core.StoreErr(err, "approval")
	}
	if a.Status == Pending && !s.now().Before(a.ExpiresAt) {
		a.Status = Expired
	}
	return a, nil
}

// FindByBinding returns the owner's newest approval of kind bound to
// binding (expired pending ones read as expired), or nil when there is
// none: a requester asking again for exactly the same thing finds its
// earlier request.
func (s *Service) FindByBinding(ctx context.Context, ownerID string, kind Kind, binding any) (*Approval, error) {
	a, err := s.d.Store.FindApproval(ctx, ownerID, kind, BindingHash(binding))
	if errors.Is(err, core.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("find approval: %w", err)
	}
	if a.Status == Pending && !s.now().Before(a.ExpiresAt) {
		a.Status = Expired
	}
	return a, nil
}

// ListPending lists what the owner still has to decide.
func (s *Service) ListPending(ctx context.Context, ownerID string) ([]Approval, error) {
	all, err := s.d.Store.ListApprovals(ctx, ownerID, Pending, 200)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	now := s.now()
	out := all[:0]
	for _, a := range all {
		if now.Before(a.ExpiresAt) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Decision is an owner's answer to an approval.
type Decision struct {
	Approve bool
	// BindingHash must equal the approval's: the owner decided on exactly
	// what was asked.
	BindingHash string
	// UserVerified is set only by the passkey adapter after a WebAuthn
	// assertion with user verification over this approval's challenge.
	UserVerified bool
	// Data records decision details (e.g. narrowed scopes).
	Data any
}

// Decide records the owner's decision once. Approvals that require
// user verification cannot be approved without it; declining never needs it.
func (s *Service) Decide(ctx context.Context, ownerID, id string, d Decision) (*Approval, error) {
	a, err := s.Get(ctx, ownerID, id)
	if err != nil {
		return nil, err
	}
	if a.Status != Pending {
		return nil, core.Errorf(core.KindConflict, CodeApprovalState, "this request is already %s", a.Status).With("status", string(a.Status))
	}
	if subtle.ConstantTimeCompare([]byte(d.BindingHash), []byte(a.BindingHash)) != 1 {
		return nil, core.Errorf(core.KindConflict, CodeApprovalBinding, "the request changed since it was shown; reload and decide again")
	}
	status := Declined
	if d.Approve {
		if a.RequiresUV && !d.UserVerified {
			return nil, core.Errorf(core.KindForbidden, CodeUserVerification, "approving this needs your passkey with user verification")
		}
		status = Approved
	}
	var data []byte
	if d.Data != nil {
		if data, err = json.Marshal(d.Data); err != nil {
			return nil, fmt.Errorf("encode decision: %w", err)
		}
	}
	h := s.d.Handlers[a.Kind]
	if d.Approve && h.Check != nil {
		if err := h.Check(ctx, a); err != nil {
			return nil, err
		}
	}
	if d.Approve && h.Approve != nil {
		// The feature records the approval itself, with what it acts on
		// (a delegated send: the approval, the fax and its payment in one
		// transaction).
		if err := h.Approve(ctx, ownerID, a, data); err != nil {
			return nil, err
		}
		return s.Get(ctx, ownerID, id)
	}
	if err := s.RecordIn(ctx, nil, ownerID, id, status, data); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil, core.Errorf(core.KindConflict, CodeApprovalState, "this request was decided already or expired")
		}
		return nil, core.StoreErr(err, "approval")
	}
	if h.Decided != nil {
		// The decision stands whatever its follower does with it (a
		// credit purchase whose charge fails to reach a verdict is retried
		// when its task is read; a device agent declined in the inbox is
		// rejected).
		if err := h.Decided(ctx, a, d.Approve); err != nil {
			s.d.Logger.Error("act on the owner's decision", "approval", id, "kind", a.Kind, "err", err)
		}
	}
	return s.Get(ctx, ownerID, id)
}

// Handler is the feature that asks for approvals of one kind.
type Handler struct {
	// Check, when set, refuses an approval the inbox must not record (a
	// device approval is decided on the device page, with the user code).
	Check func(ctx context.Context, a *Approval) error
	// Approve, when set, records the owner's approval of a itself (data is
	// the decision's details), with whatever acts on it in the same
	// transaction; the inbox records declines.
	Approve func(ctx context.Context, ownerID string, a *Approval, data []byte) error
	// Decided acts on a decision the inbox recorded.
	Decided func(ctx context.Context, a *Approval, approved bool) error
}

// Store keeps approvals.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction that writes approvals with what they approve, and
// their events.
type Tx interface {
	core.Tx
	events.Queries
	Queries
}

// Deps are the ports the approval inbox drives.
type Deps struct {
	Store Store
	// Handlers are the features that asked for approvals, by kind: they
	// record or act on the owner's decisions (DecideApproval).
	Handlers map[Kind]Handler
	Logger   *slog.Logger
}

// Service is the approval inbox.
type Service struct {
	cfg core.Config
	d   Deps
}

// New returns the inbox; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, d: d}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }
