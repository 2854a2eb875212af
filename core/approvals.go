package core

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ApprovalFaxSend is a delegated agent's send_fax waiting for the owner's
// passkey (requires_uv, binding = the exact fax).
const ApprovalFaxSend ApprovalKind = "fax_send"

// ApprovalRequest asks an owner to decide something.
type ApprovalRequest struct {
	OwnerID   string
	Kind      ApprovalKind
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
func BindingHash(v any) string { return HashRequest(v) }

// RequestApproval records a pending approval for the owner's inbox.
func (s *Service) RequestApproval(ctx context.Context, r ApprovalRequest) (*Approval, error) {
	return s.RequestApprovalIn(ctx, s.d.Store, r)
}

// requestApproval records a pending approval through q (the store or a
// transaction that writes it together with what it approves).
func (s *Service) RequestApprovalIn(ctx context.Context, q Queries, r ApprovalRequest) (*Approval, error) {
	details, err := json.Marshal(r.Details)
	if err != nil {
		return nil, fmt.Errorf("encode approval details: %w", err)
	}
	if r.TTL <= 0 {
		r.TTL = 10 * time.Minute
	}
	now := s.now()
	a := &Approval{
		ID: NewID(PrefixApproval), OwnerID: r.OwnerID, Kind: r.Kind, Requester: CutUTF8(r.Requester, 200),
		Summary: CutUTF8(r.Summary, 500), Details: details, BindingHash: BindingHash(r.Binding),
		RequiresUV: r.RequiresUV, Status: ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(r.TTL),
	}
	if err := q.CreateApproval(ctx, a); err != nil {
		return nil, fmt.Errorf("create approval: %w", err)
	}
	return a, nil
}

// GetApproval returns one of the owner's approvals; expired pending ones
// read as expired.
func (s *Service) GetApproval(ctx context.Context, ownerID, id string) (*Approval, error) {
	a, err := s.d.Store.GetApproval(ctx, ownerID, id)
	if err != nil {
		return nil, StoreErr(err, "approval")
	}
	if a.Status == ApprovalPending && s.now().After(a.ExpiresAt) {
		a.Status = ApprovalExpired
	}
	return a, nil
}

// PendingApprovals lists what the owner still has to decide.
func (s *Service) PendingApprovals(ctx context.Context, ownerID string) ([]Approval, error) {
	all, err := s.d.Store.ListApprovals(ctx, ownerID, ApprovalPending, 200)
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

// DecideApproval records the owner's decision once. Approvals that require
// user verification cannot be approved without it; declining never needs it.
func (s *Service) DecideApproval(ctx context.Context, ownerID, id string, d Decision) (*Approval, error) {
	a, err := s.GetApproval(ctx, ownerID, id)
	if err != nil {
		return nil, err
	}
	if a.Status != ApprovalPending {
		return nil, Errorf(KindConflict, CodeApprovalState, "this request is already %s", a.Status).With("status", string(a.Status))
	}
	if subtle.ConstantTimeCompare([]byte(d.BindingHash), []byte(a.BindingHash)) != 1 {
		return nil, Errorf(KindConflict, CodeApprovalBinding, "the request changed since it was shown; reload and decide again")
	}
	status := ApprovalDeclined
	if d.Approve {
		if a.RequiresUV && !d.UserVerified {
			return nil, Errorf(KindForbidden, CodeUserVerification, "approving this needs your passkey with user verification")
		}
		status = ApprovalApproved
	}
	var data []byte
	if d.Data != nil {
		if data, err = json.Marshal(d.Data); err != nil {
			return nil, fmt.Errorf("encode decision: %w", err)
		}
	}
	h := s.d.Approvals[a.Kind]
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
		return s.GetApproval(ctx, ownerID, id)
	}
	if err := s.d.Store.DecideApproval(ctx, ownerID, id, status, data, s.now()); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, Errorf(KindConflict, CodeApprovalState, "this request was decided already or expired")
		}
		return nil, StoreErr(err, "approval")
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
	return s.GetApproval(ctx, ownerID, id)
}

// ApprovalHandler is the feature that asks for approvals of one kind.
type ApprovalHandler struct {
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
