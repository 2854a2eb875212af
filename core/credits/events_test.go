package credits_test

import (
	"context"
	"errors"
	"go/ast"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

var ctx = context.Background()

func ptr[T any](v T) *T { return &v }

// The low-balance rule: a crossing from at-or-above the threshold to below
// it, not every entry below it.
func TestCrossed(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after int64
		threshold     *int64
		want          bool
	}{
		{"no threshold", 10, 0, nil, false},
		{"from above to below", 600, 400, ptr[int64](500), true},
		{"from exactly at to below", 500, 499, ptr[int64](500), true},
		{"from above to exactly at", 600, 500, ptr[int64](500), false},
		{"stays above", 900, 600, ptr[int64](500), false},
		{"below already", 400, 300, ptr[int64](500), false},
		{"to zero", 500, 0, ptr[int64](500), true},
		{"a credit up across it", 400, 600, ptr[int64](500), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := credits.Crossed(tc.before, tc.after, tc.threshold); got != tc.want {
				t.Fatalf("Crossed(%d, %d, %v) = %v", tc.before, tc.after, tc.threshold, got)
			}
		})
	}
}

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]int64{"5": 5_000_000, "5.00": 5_000_000, "0.01": 10_000, " 12.5 ": 12_500_000, "100000": 100_000_000_000} {
		got, err := credits.ParseThreshold(&in)
		if err != nil || *got != want {
			t.Errorf("%q: %v %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "0.00", "-1", "+1", "abc", "5.001", "100000.01", "1e3", "5,00"} {
		if _, err := credits.ParseThreshold(&in); core.ErrorCode(err) != core.CodeInvalidRequest {
			t.Errorf("%q: %v, want invalid_request", in, err)
		}
	}
	if got, err := credits.ParseThreshold(nil); got != nil || err != nil {
		t.Errorf("null: %v %v", got, err)
	}
}

// lows are p's credits.low events.
func lows(t *testing.T, e *testenv.Env, p core.Principal) []events.Event {
	t.Helper()
	return e.Events(t, p, events.CreditsLow)
}

// credits.low is written in the transaction of the ledger entry that takes
// the balance below the owner's threshold: once per crossing, re-armed by a
// top-up, exactly once among concurrent holds, never by a hold that is
// refused or rolled back.
func TestLowBalanceEvents(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers()) // faxes stay queued: their holds stay
	p := e.Principal(t, e.KeyATest)
	send := func(t *testing.T) *faxes.Fax {
		t.Helper()
		f, _, err := e.Svc.Faxes.Send(ctx, p, core.RandomString(8), faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 2)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	a, err := e.Svc.Credits.Alert(ctx, p)
	if err != nil || a.Threshold != nil || a.Below || a.Balance != "10.00" {
		t.Fatalf("default alert %+v %v", a, err)
	}
	agent := core.Principal{OwnerID: p.OwnerID, Kind: core.PrincipalOAuthGrant, Mode: p.Mode, Scopes: core.FaxScopes()}
	if _, err := e.Svc.Credits.SetAlert(ctx, agent, ptr("1.00")); core.ErrorCode(err) != core.CodeInsufficientScope {
		t.Fatalf("an agent sets the owner's alert: %v", err)
	}
	send(t) // 10.00 → 9.86, no threshold: nothing
	if a, err = e.Svc.Credits.SetAlert(ctx, p, ptr("9.80")); err != nil || *a.Threshold != "9.80" || *a.ThresholdCents != 980 || a.Below {
		t.Fatalf("set alert %+v %v", a, err)
	}
	if got := lows(t, e, p); len(got) != 0 {
		t.Fatalf("%d events before any crossing", len(got))
	}

	var sent []*faxes.Fax
	sent = append(sent, send(t)) // 9.86 → 9.72: crosses
	sent = append(sent, send(t)) // 9.72 → 9.58: below already
	got := lows(t, e, p)
	if len(got) != 1 {
		t.Fatalf("%d credits.low events, want 1", len(got))
	}
	d := testenv.EventData(t, got[0])
	le, _ := d["ledgerEntry"].(map[string]any)
	if d["balance"] != "9.72" || d["balanceCents"] != float64(972) || d["held"] != "0.28" || d["threshold"] != "9.80" ||
		d["thresholdCents"] != float64(980) || d["mode"] != "test" || le["kind"] != "hold" || le["faxId"] != sent[0].ID || le["amount"] != "-0.14" {
		t.Fatalf("data %v", d)
	}
	if a, _ := e.Svc.Credits.Alert(ctx, p); !a.Below {
		t.Fatal("the alert does not say the balance is below")
	}

	// Released holds lift the balance back over the threshold (no event
	// going up); the next fall crosses again.
	for _, f := range sent {
		if err := e.Svc.Faxes.CancelQueued(ctx, p, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	send(t) // 9.86 → 9.72
	if got := lows(t, e, p); len(got) != 2 {
		t.Fatalf("%d credits.low events after a second crossing, want 2", len(got))
	}

	t.Run("concurrent holds cross once", func(t *testing.T) {
		if _, err := e.Svc.Credits.SetAlert(ctx, p, ptr("9.20")); err != nil {
			t.Fatal(err)
		}
		tokens := make([]string, 8)
		for i := range tokens {
			tokens[i] = e.Upload(t, p, 2)
		}
		var wg sync.WaitGroup
		for _, tok := range tokens {
			wg.Go(func() {
				if _, _, err := e.Svc.Faxes.Send(ctx, p, core.RandomString(8), faxes.SendRequest{To: "+12125550100", UploadToken: tok}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := lows(t, e, p); len(got) != 3 {
			t.Fatalf("%d credits.low events after 8 concurrent holds crossed 9.20, want 3", len(got))
		}
	})

	t.Run("a refused hold writes nothing", func(t *testing.T) {
		pb := e.Principal(t, e.KeyBTest)
		if _, err := e.Svc.Credits.SetAlert(ctx, pb, ptr("9.99")); err != nil {
			t.Fatal(err)
		}
		_, _, err := e.Svc.Faxes.Send(ctx, pb, "too-big", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, pb, 300)})
		testenv.WantCode(t, err, credits.CodeInsufficientCredits)
		if got := lows(t, e, pb); len(got) != 0 {
			t.Fatalf("a refused hold wrote %d events", len(got))
		}
	})

	t.Run("a rolled-back hold writes nothing", func(t *testing.T) {
		pb := e.Principal(t, e.KeyBTest)
		rollback := errors.New("roll back")
		err := e.Store.InTx(ctx, func(tx core.Tx) error {
			if err := credits.PlaceHold(ctx, tx.(credits.Tx), &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: pb.OwnerID, Mode: pb.Mode,
				Kind: credits.LedgerHold, AmountMicros: -core.MicrosPerDollar, Reason: "test", CreatedAt: e.Svc.Kernel.Now()}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if got := lows(t, e, pb); len(got) != 0 {
			t.Fatalf("a rolled-back crossing left %d events", len(got))
		}
		if c := e.Credits(t, pb); c.Available != "10.00" {
			t.Fatalf("balance %s after a rolled-back hold", c.Available)
		}
	})

	t.Run("a reversal crosses too", func(t *testing.T) {
		pb := e.Principal(t, e.KeyBTest)
		err := e.Store.InTx(ctx, func(tx core.Tx) error {
			_, err := credits.Reverse(ctx, tx.(credits.Tx), &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: pb.OwnerID, Mode: pb.Mode,
				Kind: credits.LedgerReversal, AmountMicros: -core.MicrosPerDollar, Reason: "test refund", CreatedAt: e.Svc.Kernel.Now()})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got := lows(t, e, pb)
		if len(got) != 1 || testenv.EventData(t, got[0])["ledgerEntry"].(map[string]any)["kind"] != "reversal" {
			t.Fatalf("events %v", got)
		}
	})

	t.Run("off writes nothing", func(t *testing.T) {
		if a, err := e.Svc.Credits.SetAlert(ctx, p, nil); err != nil || a.Threshold != nil || a.Below {
			t.Fatalf("alert off: %+v %v", a, err)
		}
		if _, err := e.Svc.Credits.SetAlert(ctx, p, ptr("9.999")); core.ErrorCode(err) != core.CodeInvalidRequest {
			t.Fatalf("a threshold below the cent: %v", err)
		}
		n := len(lows(t, e, p))
		send(t)
		if got := lows(t, e, p); len(got) != n {
			t.Fatal("a hold wrote credits.low with the alert off")
		}
	})
}

// Every purchase of a credit pack writes credits.purchased with the ledger
// entry, in the transaction that grants it; a checkout completed many
// times at once grants, and tells, once.
func TestCreditsPurchasedEvent(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits())
	p := e.Principal(t, e.KeyATest)
	cs, err := e.Svc.Checkout.StartCreditPack(ctx, p, "pack_100")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := e.Svc.Checkout.Complete(context.WithoutCancel(ctx), cs.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := e.Events(t, p, events.CreditsPurchased)
	if len(got) != 1 {
		t.Fatalf("%d credits.purchased events, want 1", len(got))
	}
	d := testenv.EventData(t, got[0])
	le, _ := d["ledgerEntry"].(map[string]any)
	if d["packId"] != "pack_100" || d["checkoutId"] != cs.ID || d["price"] != "100.00" || d["priceCents"] != float64(10000) ||
		d["credit"] != "105.00" || d["creditCents"] != float64(10500) || le["kind"] != "purchase" || le["amount"] != "105.00" || d["cartId"] != nil {
		t.Fatalf("data %v", d)
	}
	// A credit that was not bought (an operator's grant) is not a purchase.
	if _, err := e.Svc.Credits.Grant(ctx, p.OwnerID, p.Mode, core.MicrosPerDollar, "goodwill"); err != nil {
		t.Fatal(err)
	}
	if got := e.Events(t, p, events.CreditsPurchased); len(got) != 1 {
		t.Fatalf("a grant wrote credits.purchased")
	}
}

// Every hold, reversal and purchase goes through this package, so that
// credits.low and credits.purchased cannot be forgotten by a new caller:
// outside core/credits and the store, no code calls the store's
// PlaceHold or ReverseCredits, nor AppendLedger with a purchase.
func TestLedgerWritesGoThroughCredits(t *testing.T) {
	testenv.EachCall(t, "../..", []string{"core/credits", "core/store", "conformance"}, func(rel string, call *ast.CallExpr) {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "credits" {
			return // credits.PlaceHold, credits.Reverse
		}
		switch sel.Sel.Name {
		case "PlaceHold", "ReverseCredits":
			t.Errorf("%s calls %s directly; use credits.PlaceHold or credits.Reverse", rel, sel.Sel.Name)
		case "AppendLedger":
			ast.Inspect(call, func(m ast.Node) bool {
				if id, ok := m.(*ast.Ident); ok && id.Name == "LedgerPurchase" {
					t.Errorf("%s appends a purchase directly; use credits.GrantPurchase", rel)
				}
				return true
			})
		}
	})
}
