package approvals_test

import (
	"context"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/internal/testenv"
)

var ctx = context.Background()

func TestApprovals(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	binding := map[string]any{"to": "+12125550100", "pages": 2}
	newApproval := func(uv bool) *approvals.Approval {
		a, err := e.Svc.Approvals.Request(ctx, approvals.Request{
			OwnerID: e.OwnerA.ID, Kind: approvals.KindVerifiedAction, Requester: "agent x",
			Summary: "send a fax", Details: binding, Binding: binding, RequiresUV: uv,
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := newApproval(true)
	pending, err := e.Svc.Approvals.ListPending(ctx, e.OwnerA.ID)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %d %v", len(pending), err)
	}
	if other, _ := e.Svc.Approvals.ListPending(ctx, e.OwnerB.ID); len(other) != 0 {
		t.Fatal("owner B sees owner A's approvals")
	}
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerB.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash, UserVerified: true})
	testenv.WantCode(t, err, core.CodeNotFound)
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: approvals.BindingHash(map[string]any{"to": "+12125550101"}), UserVerified: true})
	testenv.WantCode(t, err, approvals.CodeApprovalBinding)
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash})
	testenv.WantCode(t, err, approvals.CodeUserVerification)

	wins := e.RaceApprovals(t, e.OwnerA.ID, a, 20)
	if wins != 1 {
		t.Fatalf("%d decisions won, want 1", wins)
	}
	got, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, a.ID)
	if err != nil || got.Status != approvals.Approved || got.DecidedAt == nil {
		t.Fatalf("after approval: %+v %v", got, err)
	}
	// Declining never needs user verification.
	d := newApproval(true)
	if got, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, d.ID, approvals.Decision{Approve: false, BindingHash: d.BindingHash}); err != nil || got.Status != approvals.Declined {
		t.Fatalf("decline: %+v %v", got, err)
	}
}

// An approval lives its TTL (15 minutes for a delegated send or an AP2
// purchase), driven by the injected clock: a nanosecond before its expiry
// it is pending, listed and can be decided; at its expiry it reads
// expired everywhere (Get, the inbox, Decide), as challenges and signed
// links do.
func TestApprovalExpiry(t *testing.T) {
	e, clk := testenv.Clocked(t)
	const ttl = 15 * time.Minute
	newApproval := func() *approvals.Approval {
		a, err := e.Svc.Approvals.Request(ctx, approvals.Request{
			OwnerID: e.OwnerA.ID, Kind: approvals.KindVerifiedAction, Requester: "agent x",
			Summary: "send a fax", Details: map[string]any{"pages": 1}, Binding: map[string]any{"pages": 1}, TTL: ttl,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !a.ExpiresAt.Equal(clk.Now().Add(ttl)) {
			t.Fatalf("expires %v, want %v", a.ExpiresAt, clk.Now().Add(ttl))
		}
		return a
	}
	inTime, late := newApproval(), newApproval()

	clk.Advance(ttl - time.Nanosecond)
	if got, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, late.ID); err != nil || got.Status != approvals.Pending {
		t.Fatalf("a nanosecond before its expiry: %+v %v", got, err)
	}
	if pending, err := e.Svc.Approvals.ListPending(ctx, e.OwnerA.ID); err != nil || len(pending) != 2 {
		t.Fatalf("pending a nanosecond before the expiry: %d %v", len(pending), err)
	}
	if got, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, inTime.ID, approvals.Decision{Approve: true, BindingHash: inTime.BindingHash}); err != nil || got.Status != approvals.Approved {
		t.Fatalf("decided a nanosecond before the expiry: %+v %v", got, err)
	}

	clk.Advance(time.Nanosecond)
	if got, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, late.ID); err != nil || got.Status != approvals.Expired {
		t.Fatalf("at its expiry: %+v %v", got, err)
	}
	if pending, err := e.Svc.Approvals.ListPending(ctx, e.OwnerA.ID); err != nil || len(pending) != 0 {
		t.Fatalf("pending at the expiry: %d %v", len(pending), err)
	}
	_, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, late.ID, approvals.Decision{Approve: true, BindingHash: late.BindingHash})
	testenv.WantCode(t, err, approvals.CodeApprovalState)
	if got, err := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, inTime.ID); err != nil || got.Status != approvals.Approved {
		t.Fatalf("the approval decided in time: %+v %v", got, err)
	}
}
