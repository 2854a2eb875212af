package tasks_test

import (
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/payments/testcard"
	"github.com/faxhub/faxhub/internal/testenv"
)

// An AP2 purchase writes its approval's events in the cart's mode and, once
// charged, credits.purchased naming the cart, exactly once however many
// reads race the owner's approval; a purchase canceled while it waits
// closes its approval (declined) and buys nothing.
func TestCreditPurchaseEvents(t *testing.T) {
	e := newAP2Env(t)
	v := e.start(t, "pack_100")
	_, a := e.submit(t, v, mandateFor(v, "pm_events", testcard.TokenVisa))
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
			t.Error(err)
		}
	})
	for range 6 {
		wg.Go(func() { _, _ = e.svc.Tasks.Get(ctx, e.p, v.ID) })
	}
	wg.Wait()
	e.task(t, v.ID)

	bought := e.Events(t, e.p, events.CreditsPurchased)
	if len(bought) != 1 {
		t.Fatalf("%d credits.purchased events", len(bought))
	}
	if d := testenv.EventData(t, bought[0]); d["cartId"] != v.Purchase.ID || d["packId"] != "pack_100" || d["credit"] != "105.00" || d["checkoutId"] != nil {
		t.Fatalf("data %v", d)
	}
	appr := e.Events(t, e.p, events.ApprovalRequested, events.ApprovalDecided)
	if len(appr) != 2 || appr[0].Type != events.ApprovalRequested || appr[1].Type != events.ApprovalDecided {
		t.Fatalf("approval events %v", testenv.EventTypes(appr))
	}
	if d := testenv.EventData(t, appr[1]); d["id"] != a.ID || d["kind"] != "credit_purchase" || d["status"] != "approved" || d["requester"] != "Claude Desktop" {
		t.Fatalf("decided %v", d)
	}

	v = e.start(t, "pack_10")
	_, a = e.submit(t, v, mandateFor(v, "pm_events_cancel", testcard.TokenVisa))
	if _, err := e.svc.Tasks.Cancel(ctx, e.p, v.ID); err != nil {
		t.Fatal(err)
	}
	appr = e.Events(t, e.p, events.ApprovalDecided)
	if d := testenv.EventData(t, appr[len(appr)-1]); d["id"] != a.ID || d["status"] != "declined" {
		t.Fatalf("canceled purchase's approval %v", d)
	}
	if got := e.Events(t, e.p, events.CreditsPurchased); len(got) != 1 {
		t.Fatalf("a canceled purchase wrote credits.purchased")
	}
}
