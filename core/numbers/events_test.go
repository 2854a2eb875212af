package numbers_test

import (
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/internal/testenv"
)

// numberEvents are the number events of id, oldest first, each checked to
// show the number in the status its type names.
func numberEvents(t *testing.T, e *testenv.Env, p core.Principal, id string) []events.Type {
	t.Helper()
	status := map[events.Type]string{events.NumberActive: "active", events.NumberFailed: "failed",
		events.NumberRenewalFailed: "past_due", events.NumberReleased: "released"}
	var out []events.Type
	for _, ev := range e.Events(t, p, events.NumberActive, events.NumberFailed, events.NumberRenewalFailed, events.NumberReleased) {
		d := testenv.EventData(t, ev)
		if d["id"] != id {
			continue
		}
		if d["status"] != status[ev.Type] || d["monthlyPrice"] != "2.00" {
			t.Errorf("%s shows %v", ev.Type, d)
		}
		out = append(out, ev.Type)
	}
	return out
}

// Every status change of a number an owner hears about writes its event in
// the change's transaction: provisioned (active) or not (failed), a
// renewal that could not be paid, paid later (active again), released by
// the owner or by the sweeper after the grace period. Concurrent sweeps and
// releases, whose losers roll back, write each event once.
func TestNumberEvents(t *testing.T) {
	e, clk := testenv.WithClock(t)
	p := e.Principal(t, e.KeyATest)
	act, fail, late, rel := events.NumberActive, events.NumberFailed, events.NumberRenewalFailed, events.NumberReleased
	sweep := func(t *testing.T, times int) {
		t.Helper()
		var wg sync.WaitGroup
		for range times {
			wg.Go(func() {
				if err := e.Svc.Numbers.Sweep(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}

	kept := e.BuyNumber(t, p, "+12025550161")
	dropped := e.BuyNumber(t, p, "+12025550162")
	failed := e.BuyNumber(t, p, simulated.FailingNumber)
	if got := numberEvents(t, e, p, failed.ID); len(got) != 1 || got[0] != fail {
		t.Fatalf("failing number: %v", got)
	}

	t.Run("released by the owner, once", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _, _ = e.Svc.Numbers.Release(ctx, p, dropped.ID) })
		}
		wg.Wait()
		if got := numberEvents(t, e, p, dropped.ID); len(got) != 2 || got[0] != act || got[1] != rel {
			t.Fatalf("events %v", got)
		}
	})

	t.Run("renewal failed, paid late, then released by the sweeper", func(t *testing.T) {
		spendAll(t, e, p)
		clk.Advance(32 * 24 * time.Hour)
		sweep(t, 3)
		if got := numberEvents(t, e, p, kept.ID); len(got) != 2 || got[1] != late {
			t.Fatalf("after the unpaid renewal: %v", got)
		}
		sweep(t, 1) // still unpaid: no second event
		if _, err := e.Svc.Credits.Grant(ctx, p.OwnerID, p.Mode, 5*core.MicrosPerDollar, "top-up"); err != nil {
			t.Fatal(err)
		}
		sweep(t, 2)
		if got := numberEvents(t, e, p, kept.ID); len(got) != 3 || got[2] != act {
			t.Fatalf("after the late payment: %v", got)
		}
		spendAll(t, e, p)
		clk.Advance(31 * 24 * time.Hour)
		sweep(t, 1)
		clk.Advance(8 * 24 * time.Hour)
		sweep(t, 2)
		got := numberEvents(t, e, p, kept.ID)
		if want := []events.Type{act, late, act, late, rel}; len(got) != len(want) || got[4] != rel || got[3] != late {
			t.Fatalf("events %v, want %v", got, want)
		}
		last := e.Events(t, p, rel)
		if d := testenv.EventData(t, last[len(last)-1]); d["failureCode"] != numbers.CodeRenewalInsufficientCredits || d["releasedAt"] == nil {
			t.Fatalf("released by the sweeper: %v", d)
		}
	})

	t.Run("another owner and mode see none", func(t *testing.T) {
		for _, key := range []string{e.KeyBTest, e.KeyALive} {
			if got := e.Events(t, e.Principal(t, key), act, fail, late, rel); len(got) != 0 {
				t.Fatalf("%d events of A's test numbers seen elsewhere", len(got))
			}
		}
	})
}
