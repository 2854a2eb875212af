package faxes_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

func newDraft(t *testing.T, e *testenv.Env, p core.Principal, pages int) *faxes.DraftView {
	t.Helper()
	d, err := e.Svc.Faxes.CreateDraft(ctx, p, faxes.CreateDraftRequest{To: "+12125550100", UploadToken: e.Upload(t, p, pages)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSendDraft(t *testing.T) {
	e, clk := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)

	t.Run("success and retry", func(t *testing.T) {
		d := newDraft(t, e, p, 3)
		f, replayed, err := e.Svc.Faxes.SendDraft(ctx, p, d.ID)
		if err != nil || replayed || f.Status != faxes.Queued || f.PaymentMethod != faxes.PayCredits || *f.DraftID != d.ID || f.PriceMicros != d.PriceMicros {
			t.Fatalf("send = %+v replayed=%v %v", f, replayed, err)
		}
		again, replayed, err := e.Svc.Faxes.SendDraft(ctx, p, d.ID)
		if err != nil || !replayed || again.ID != f.ID {
			t.Fatalf("retry = %+v replayed=%v %v", again, replayed, err)
		}
		got, _ := e.Svc.Faxes.GetDraft(ctx, p, d.ID)
		if got.Status != faxes.DraftPaid || *got.FaxID != f.ID {
			t.Fatalf("draft after send = %+v", got)
		}
		// Its checkout can no longer be started.
		_, err = e.Svc.Checkout.StartDraft(ctx, p, d.ID)
		testenv.WantCode(t, err, faxes.CodeDraftState)
		if !strings.Contains(core.AsError(err).Message, "paid already") {
			t.Fatalf("message: %v", err)
		}
	})

	t.Run("expired", func(t *testing.T) {
		d := newDraft(t, e, p, 1)
		clk.Advance(25 * time.Hour)
		_, _, err := e.Svc.Faxes.SendDraft(ctx, p, d.ID)
		testenv.WantCode(t, err, faxes.CodeDraftState)
		if !strings.Contains(core.AsError(err).Message, "expired") {
			t.Fatalf("message: %v", err)
		}
		_, err = e.Svc.Checkout.StartDraft(ctx, p, d.ID)
		testenv.WantCode(t, err, faxes.CodeDraftState)
		if !strings.Contains(core.AsError(err).Message, "expired") {
			t.Fatalf("checkout message: %v", err)
		}
		got, _ := e.Svc.Faxes.GetDraft(ctx, p, d.ID)
		if got.Status != faxes.DraftExpired {
			t.Fatalf("status %s", got.Status)
		}
	})

	t.Run("insufficient credits charge nothing", func(t *testing.T) {
		pb := e.Principal(t, e.KeyBTest)
		big := newDraft(t, e, pb, 300)
		before := e.Credits(t, pb)
		_, _, err := e.Svc.Faxes.SendDraft(ctx, pb, big.ID)
		testenv.WantCode(t, err, credits.CodeInsufficientCredits)
		if f := core.AsError(err).Fields; f["draftId"] != big.ID || f["price"] == nil || f["balance"] == nil {
			t.Fatalf("fields: %v", f)
		}
		after := e.Credits(t, pb)
		if after.AvailableMicros != before.AvailableMicros || after.HeldMicros != 0 {
			t.Fatalf("balance moved: %+v", after)
		}
		got, _ := e.Svc.Faxes.GetDraft(ctx, pb, big.ID)
		if got.Status != faxes.DraftOpen {
			t.Fatalf("draft after a refused send: %s", got.Status)
		}
	})

	t.Run("not found and scope", func(t *testing.T) {
		_, _, err := e.Svc.Faxes.SendDraft(ctx, p, "drf_nope")
		testenv.WantCode(t, err, core.CodeNotFound)
		_, _, err = e.Svc.Faxes.SendDraft(ctx, core.Principal{OwnerID: e.OwnerA.ID, Mode: core.ModeTest, Scopes: []core.Scope{core.ScopeFaxDraft}}, "drf_nope")
		testenv.WantCode(t, err, core.CodeInsufficientScope)
	})
}

// Twenty concurrent sends of one draft: one fax, one hold.
func TestSendDraftConcurrent(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 1000}) }))
	p := e.Principal(t, e.KeyATest)
	d := newDraft(t, e, p, 1)
	var wg sync.WaitGroup
	ids := make([]string, 20)
	for i := range ids {
		wg.Go(func() {
			f, _, err := e.Svc.Faxes.SendDraft(ctx, p, d.ID)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = f.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("two faxes: %v", ids)
		}
	}
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 100})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("want one fax, got %d (%v)", len(page.Data), err)
	}
	c := e.Credits(t, p)
	holds := 0
	for _, le := range c.Ledger {
		if le.Kind == credits.LedgerHold {
			holds++
		}
	}
	if holds != 1 || c.HeldMicros != d.PriceMicros {
		t.Fatalf("holds %d, held %s", holds, c.Held)
	}
}

// A draft's checkout page was open when the draft was sent with credits:
// the checkout says the fax is paid and completing it charges nothing.
func TestCheckoutOfDraftSentWithCredits(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	d := newDraft(t, e, p, 1)
	cs, err := e.Svc.Checkout.StartDraft(ctx, p, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := e.Svc.Faxes.SendDraft(ctx, p, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.Svc.Checkout.Get(ctx, cs.ID)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, e.Svc.Checkout.Payable(ctx, c), faxes.CodeDraftState)
	_, err = e.Svc.Checkout.Complete(ctx, cs.ID)
	testenv.WantCode(t, err, faxes.CodeDraftState)
	if core.ErrorKind(err) != core.KindConflict {
		t.Fatalf("kind %v", core.ErrorKind(err))
	}
	c, _ = e.Svc.Checkout.Get(ctx, cs.ID)
	if c.Status != checkout.Open {
		t.Fatalf("checkout marked %s", c.Status)
	}
	page, _ := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 10})
	if len(page.Data) != 1 || page.Data[0].ID != f.ID {
		t.Fatalf("faxes: %+v", page.Data)
	}
}

// Paying a draft at checkout is rate limited like the other two ways of
// sending: it shares the owner's send allowance.
func TestCheckoutSharesTheSendRate(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Interval: time.Hour, Burst: 1}) }))
	p := e.Principal(t, e.KeyATest)
	d1, d2 := newDraft(t, e, p, 1), newDraft(t, e, p, 1)
	cs, err := e.Svc.Checkout.StartDraft(ctx, p, d2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Svc.Faxes.SendDraft(ctx, p, d1.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Checkout.Complete(ctx, cs.ID)
	testenv.WantCode(t, err, core.CodeRateLimited)
	c, _ := e.Svc.Checkout.Get(ctx, cs.ID)
	if c.Status != checkout.Open {
		t.Fatalf("a refused checkout was marked %s", c.Status)
	}
}
