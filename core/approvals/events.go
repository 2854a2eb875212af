package approvals

import (
	"context"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// EventView is an approval as its events show it: what it asks and where
// it stands. Never its details (scopes, fax details stay in the console)
// nor its binding hash, nor anything of the decision.
type EventView struct {
	ID         string `json:"id"`
	Kind       Kind   `json:"kind"`
	Requester  string `json:"requester"`
	Summary    string `json:"summary"`
	Status     Status `json:"status"`
	RequiresUV bool   `json:"requiresUserVerification"`
	CreatedAt  string `json:"createdAt"`
	ExpiresAt  string `json:"expiresAt"`
	DecidedAt  string `json:"decidedAt,omitempty"`
}

// View is a as its events show it.
func View(a *Approval) EventView {
	v := EventView{ID: a.ID, Kind: a.Kind, Requester: a.Requester, Summary: a.Summary, Status: a.Status, RequiresUV: a.RequiresUV,
		CreatedAt: core.RFC3339(a.CreatedAt), ExpiresAt: core.RFC3339(a.ExpiresAt)}
	if a.DecidedAt != nil {
		v.DecidedAt = core.RFC3339(*a.DecidedAt)
	}
	return v
}

// Create writes a, a pending approval, and approval.requested in tx. Every
// approval is created here.
func Create(ctx context.Context, tx Tx, a *Approval) error {
	if a.Mode == "" {
		return fmt.Errorf("create approval %s: no mode", a.ID)
	}
	if err := tx.CreateApproval(ctx, a); err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	return events.Append(ctx, tx, a.OwnerID, a.Mode, events.ApprovalRequested, a.ID, View(a), a.CreatedAt)
}

// Record moves the owner's pending approval id to status (DecideApproval:
// ErrConflict when it is no longer pending) and writes approval.decided in
// tx. Every decision is recorded here: approved, declined, and expired for
// a request withdrawn before the owner decided (superseded by a new
// attempt, its requester revoked). An approval that merely lapses writes
// nothing: nothing is written when time passes; its expiresAt says when.
func Record(ctx context.Context, tx Tx, ownerID, id string, status Status, decision []byte, at time.Time) error {
	if err := tx.DecideApproval(ctx, ownerID, id, status, decision, at); err != nil {
		return err
	}
	a, err := tx.GetApproval(ctx, ownerID, id)
	if err != nil {
		return fmt.Errorf("read decided approval: %w", err)
	}
	return events.Append(ctx, tx, a.OwnerID, a.Mode, events.ApprovalDecided, a.ID, View(a), at)
}

// RecordIn is Record in tx, or in a transaction of its own when tx is nil.
func (s *Service) RecordIn(ctx context.Context, tx Tx, ownerID, id string, status Status, decision []byte) error {
	now := s.now()
	return s.in(ctx, tx, func(tx Tx) error { return Record(ctx, tx, ownerID, id, status, decision, now) })
}

// in runs fn in tx, or in a transaction of its own when tx is nil.
func (s *Service) in(ctx context.Context, tx Tx, fn func(Tx) error) error {
	if tx != nil {
		return fn(tx)
	}
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
