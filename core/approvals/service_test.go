package approvals_test

import (
	"context"
	"sync"
	"testing"

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

	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 20 {
		wg.Go(func() {
			_, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash, UserVerified: true})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if core.ErrorCode(err) != approvals.CodeApprovalState {
				t.Error(err)
			}
		})
	}
	wg.Wait()
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
