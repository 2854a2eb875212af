package faxes_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// A delivery starts its fax from the read that composed its document as
// faxed, and records the provider's answer on the fax as that start left
// it, without reading either again. A fax that moved in between, as
// another process can move it, is decided on as it is now: nothing starts
// twice or early, nothing is charged or refunded twice.
func TestDeliveryOnAFaxThatMovedSinceItWasRead(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	full := int64(10 * core.MicrosPerDollar)
	n := 0
	// Busy lines are retried five minutes later.
	retry := faxes.Options{Retry: &faxes.RetryPolicy{Attempts: 3, DelayMinutes: 5}}
	send := func(t *testing.T) *faxes.Fax {
		t.Helper()
		n++
		o, _, err := e.Svc.Faxes.Send(ctx, p, fmt.Sprint("moved-", n), faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1), Options: retry})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	attempts := func(t *testing.T, o *faxes.Fax) []faxes.Attempt {
		t.Helper()
		atts, err := e.Svc.Faxes.Attempts(ctx, p, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		return atts
	}
	// settlements counts the captures and releases of o's hold.
	settlements := func(t *testing.T, o *faxes.Fax) (n int) {
		t.Helper()
		acct, err := e.Svc.Credits.Get(ctx, p, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range acct.Ledger {
			if l.FaxID != nil && *l.FaxID == o.ID && (l.Kind == credits.LedgerCapture || l.Kind == credits.LedgerRelease) {
				n++
			}
		}
		return n
	}
	delivered := faxes.ProviderResult{Status: faxes.AttemptDelivered, PagesSent: 1, Duration: time.Second}
	// held and captured are what the subtests leave of their faxes' prices:
	// held while a fax is sending or queued again, captured once delivered.
	var held, captured int64

	t.Run("canceled after the read: not started", func(t *testing.T) {
		o := send(t)
		got, a, err := e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {
			if err := e.Svc.Faxes.CancelQueued(ctx, p, o.ID); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil || a != nil || got != nil {
			t.Fatalf("started a canceled fax: %+v, %+v, %v", got, a, err)
		}
		if now, _ := e.Svc.Faxes.Get(ctx, p, o.ID); now.Status != faxes.Canceled || len(attempts(t, o)) != 0 || settlements(t, o) != 1 {
			t.Fatalf("fax %s with %d attempts and %d settlements, want canceled, none and one", now.Status, len(attempts(t, o)), settlements(t, o))
		}
	})

	t.Run("started by another worker after the read: one attempt", func(t *testing.T) {
		o := send(t)
		var theirs *faxes.Attempt
		_, ours, err := e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {
			var err error
			if _, theirs, err = e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {}); err != nil || theirs == nil {
				t.Fatalf("the other worker's start: %+v, %v", theirs, err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// Found sending with an attempt the provider has not answered, the
		// delivery resumes that attempt under its id (the provider's
		// idempotency key), as a job rescued from a dead worker does.
		if atts := attempts(t, o); len(atts) != 1 || ours == nil || ours.ID != theirs.ID {
			t.Fatalf("attempts %+v; ours %+v, theirs %+v: want one, the same", atts, ours, theirs)
		}
		held += o.PriceMicros
	})

	t.Run("failed and queued for a retry after the read: not started early", func(t *testing.T) {
		o := send(t)
		_, _, err := e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {
			started, a, err := e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {})
			if err != nil || a == nil {
				t.Fatalf("the other worker's start: %+v, %v", a, err)
			}
			busy := faxes.ProviderResult{Status: faxes.AttemptFailed, FailureCode: faxes.FailureBusy, FailureReason: "busy", Retryable: true}
			if err := e.Svc.Faxes.RecordOutcomeAsStarted(ctx, started, a, busy); err != nil {
				t.Fatal(err)
			}
		})
		var nb *faxes.NotBeforeError
		if !errors.As(err, &nb) {
			t.Fatalf("want the retry's NotBeforeError, got %v", err)
		}
		if now, _ := e.Svc.Faxes.Get(ctx, p, o.ID); now.Status != faxes.Queued || now.Attempts != 1 || len(attempts(t, o)) != 1 {
			t.Fatalf("fax %s after %d attempts (%d rows), want queued after one", now.Status, now.Attempts, len(attempts(t, o)))
		}
		held += o.PriceMicros
	})

	t.Run("ended by the provider's report after the start: recorded once", func(t *testing.T) {
		o := send(t)
		started, a, err := e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {})
		if err != nil || a == nil {
			t.Fatalf("start: %+v, %v", a, err)
		}
		if err := e.Svc.Faxes.RecordProviderOutcome(ctx, o.ID, a.ID, delivered); err != nil {
			t.Fatal(err)
		}
		failed := faxes.ProviderResult{Status: faxes.AttemptFailed, FailureCode: faxes.FailureProvider, FailureReason: "late answer"}
		if err := e.Svc.Faxes.RecordOutcomeAsStarted(ctx, started, a, failed); err != nil {
			t.Fatal(err)
		}
		if now, _ := e.Svc.Faxes.Get(ctx, p, o.ID); now.Status != faxes.Delivered || now.LatestAttempt.Status != faxes.AttemptDelivered || settlements(t, o) != 1 {
			t.Fatalf("fax %s, attempt %s, %d settlements: want the first report's, once", now.Status, now.LatestAttempt.Status, settlements(t, o))
		}
		captured += o.PriceMicros
	})

	t.Run("accepted by the provider's report after the start: recorded on the fax as it is", func(t *testing.T) {
		o := send(t)
		started, a, err := e.Svc.Faxes.StartAttemptAfter(ctx, o.ID, func() {})
		if err != nil || a == nil {
			t.Fatalf("start: %+v, %v", a, err)
		}
		accepted := faxes.ProviderResult{Status: faxes.AttemptSending, ProviderRef: "ref-accepted"}
		if err := e.Svc.Faxes.RecordProviderOutcome(ctx, o.ID, a.ID, accepted); err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.RecordOutcomeAsStarted(ctx, started, a, delivered); err != nil {
			t.Fatal(err)
		}
		if now, _ := e.Svc.Faxes.Get(ctx, p, o.ID); now.Status != faxes.Delivered || settlements(t, o) != 1 {
			t.Fatalf("fax %s with %d settlements, want delivered, captured once", now.Status, settlements(t, o))
		}
		captured += o.PriceMicros
	})

	// Nothing charged or given back twice: the balance is exactly what
	// the faxes' ends say.
	if c := e.Credits(t, p); c.HeldMicros != held || c.AvailableMicros != full-held-captured {
		t.Fatalf("credits: available %d, held %d; want %d and %d", c.AvailableMicros, c.HeldMicros, full-held-captured, held)
	}
}
