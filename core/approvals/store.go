package approvals

import (
	"context"
	"time"
)

// Queries keeps the owner's approvals.
type Queries interface {
	CreateApproval(ctx context.Context, a *Approval) error
	GetApproval(ctx context.Context, ownerID, id string) (*Approval, error)
	ListApprovals(ctx context.Context, ownerID string, status Status, limit int) ([]Approval, error)
	// FindApproval returns the owner's newest approval of kind bound to
	// bindingHash, whatever its status; ErrNoRows when there is none.
	FindApproval(ctx context.Context, ownerID string, kind Kind, bindingHash string) (*Approval, error)
	// Decide moves a pending, unexpired approval to status once;
	// ErrConflict if it is no longer pending.
	DecideApproval(ctx context.Context, ownerID, id string, status Status, decision []byte, at time.Time) error
}
