package faxes_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestSendFaxIsDeliveredAndCaptured(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	tok := e.Upload(t, p, 3)

	o, replayed, err := e.Svc.Faxes.Send(ctx, p, "k1", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
	if err != nil {
		t.Fatal(err)
	}
	if replayed || o.Status != faxes.Queued || o.Pages != 3 || o.PriceMicros != 210_000 || o.Price != "0.21" {
		t.Fatalf("unexpected queued fax: %+v", o)
	}
	e.DrainQueue(t)

	got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != faxes.Delivered || got.PagesSent != 3 || got.CompletedAt == nil {
		t.Fatalf("want delivered, got %+v", got)
	}
	if got.LatestAttempt == nil || got.LatestAttempt.Status != faxes.AttemptDelivered || got.LatestAttempt.Provider != "simulated" {
		t.Fatalf("latest attempt: %+v", got.LatestAttempt)
	}
	c := e.Credits(t, p)
	if c.AvailableMicros != 10*core.MicrosPerDollar-210_000 || c.HeldMicros != 0 {
		t.Fatalf("balance after capture: available %s held %s", c.Available, c.Held)
	}
	kinds := []credits.LedgerKind{}
	for _, le := range c.Ledger {
		kinds = append(kinds, le.Kind)
	}
	if fmt.Sprint(kinds) != "[capture hold grant]" {
		t.Fatalf("ledger kinds newest first: %v", kinds)
	}
}

// Every simulated outcome ends in the documented state with the right money.
func TestDeliveryOutcomes(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	tests := []struct {
		to        string
		status    faxes.Status
		attempts  int
		failure   string
		pagesSent int
		charged   int64 // micro-USD finally paid
	}{
		{"+12125550100", faxes.Delivered, 1, "", 4, 280_000},
		{"+12125550101", faxes.Failed, 3, "busy", 0, 0},
		{"+12125550102", faxes.Failed, 3, "no_answer", 0, 0},
		{"+12125550103", faxes.Failed, 1, "not_a_fax_machine", 0, 0},
		{"+12125550104", faxes.Partial, 1, "call_dropped", 2, 140_000},
		{"+12125550105", faxes.Delivered, 2, "", 4, 280_000},
		{"+12125550106", faxes.Failed, 3, "provider_error", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.to, func(t *testing.T) {
			before := e.Credits(t, p).AvailableMicros
			o, _, err := e.Svc.Faxes.Send(ctx, p, "outcome-"+tc.to, faxes.SendRequest{To: tc.to, UploadToken: e.Upload(t, p, 4)})
			if err != nil {
				t.Fatal(err)
			}
			e.DrainQueue(t)
			got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.status || got.Attempts != tc.attempts || got.FailureCode != tc.failure || got.PagesSent != tc.pagesSent {
				t.Fatalf("got status=%s attempts=%d failure=%q pagesSent=%d", got.Status, got.Attempts, got.FailureCode, got.PagesSent)
			}
			atts, err := e.Svc.Faxes.Attempts(ctx, p, o.ID)
			if err != nil || len(atts) != tc.attempts {
				t.Fatalf("attempts: %d, %v", len(atts), err)
			}
			c := e.Credits(t, p)
			if paid := before - c.AvailableMicros; paid != tc.charged || c.HeldMicros != 0 {
				t.Fatalf("paid %d micros (held %d), want %d", paid, c.HeldMicros, tc.charged)
			}
		})
	}
}

// Fifty concurrent requests with one key make one fax and one hold.
func TestIdempotentConcurrentSend(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 1000}) }))
	p := e.Principal(t, e.KeyATest)
	req := faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)}
	var wg sync.WaitGroup
	ids := make([]string, 50)
	errs := make([]error, 50)
	for i := range 50 {
		wg.Go(func() {
			o, _, err := e.Svc.Faxes.Send(ctx, p, "same-key", req)
			errs[i] = err
			if o != nil {
				ids[i] = o.ID
			}
		})
	}
	wg.Wait()
	for i := range 50 {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("request %d got fax %s, request 0 got %s", i, ids[i], ids[0])
		}
	}
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 100})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("want exactly one fax, got %d (%v)", len(page.Data), err)
	}
	c := e.Credits(t, p)
	if c.HeldMicros != 100_000 { // one page to the US is the 0.10 minimum
		t.Fatalf("want exactly one hold of 0.10, held %s", c.Held)
	}
	o, replayed, err := e.Svc.Faxes.Send(ctx, p, "same-key", req)
	if err != nil || !replayed || o.ID != ids[0] || o.Status != faxes.Queued {
		t.Fatalf("replay: %+v replayed=%v err=%v", o, replayed, err)
	}
	_, _, err = e.Svc.Faxes.Send(ctx, p, "same-key", faxes.SendRequest{To: "+12125550101", UploadToken: req.UploadToken})
	testenv.WantCode(t, err, core.CodeIdempotencyConflict)
}

func TestSendFaxErrors(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 1000}) }))
	p := e.Principal(t, e.KeyATest)
	tok := e.Upload(t, p, 1)
	noSend := p
	noSend.Scopes = []core.Scope{core.ScopeFaxRead}
	tests := []struct {
		name string
		p    core.Principal
		key  string
		req  faxes.SendRequest
		code string
	}{
		{"missing key", p, "", faxes.SendRequest{To: "+12125550100", UploadToken: tok}, core.CodeIdempotencyKeyRequired},
		{"long key", p, strings.Repeat("k", 256), faxes.SendRequest{To: "+12125550100", UploadToken: tok}, core.CodeInvalidRequest},
		{"scope", noSend, "s1", faxes.SendRequest{To: "+12125550100", UploadToken: tok}, core.CodeInsufficientScope},
		{"not e164", p, "s2", faxes.SendRequest{To: "212 555 0100", UploadToken: tok}, core.CodeInvalidDestination},
		{"invalid number", p, "s3", faxes.SendRequest{To: "+15555550100", UploadToken: tok}, core.CodeInvalidDestination},
		{"premium", p, "s4", faxes.SendRequest{To: "+19005550100", UploadToken: tok}, core.CodePremiumDestination},
		{"no document", p, "s5", faxes.SendRequest{To: "+12125550100"}, core.CodeInvalidRequest},
		{"both documents", p, "s6", faxes.SendRequest{To: "+12125550100", UploadToken: tok, DocumentID: "doc_x"}, core.CodeInvalidRequest},
		{"unknown document", p, "s7", faxes.SendRequest{To: "+12125550100", DocumentID: "doc_x"}, core.CodeNotFound},
		{"forged token", p, "s8", faxes.SendRequest{To: "+12125550100", UploadToken: tok[:len(tok)-2] + "xx"}, documents.CodeUploadInvalid},
		{"cover text without cover", p, "s9", faxes.SendRequest{To: "+12125550100", UploadToken: tok, CoverText: "hi"}, core.CodeInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.Svc.Faxes.Send(ctx, tc.p, tc.key, tc.req)
			testenv.WantCode(t, err, tc.code)
		})
	}
	t.Run("upload not completed", func(t *testing.T) {
		capa, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.Svc.Faxes.Send(ctx, p, "s10", faxes.SendRequest{To: "+12125550100", UploadToken: capa.UploadToken})
		testenv.WantCode(t, err, documents.CodeUploadPending)
	})
}

func TestInsufficientCreditsStoresNothing(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits(), testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	req := faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)}
	_, _, err := e.Svc.Faxes.Send(ctx, p, "k", req)
	testenv.WantCode(t, err, credits.CodeInsufficientCredits)
	if ce := core.AsError(err); ce.Kind != core.KindPaymentRequired || ce.Fields["price"] != "0.10" {
		t.Fatalf("error details: %+v", ce)
	}
	page, _ := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 10})
	if len(page.Data) != 0 {
		t.Fatalf("a refused send left %d faxes", len(page.Data))
	}
	if _, err := e.Svc.Credits.Grant(ctx, p.OwnerID, core.ModeTest, 1_000_000, "top up"); err != nil {
		t.Fatal(err)
	}
	if _, replayed, err := e.Svc.Faxes.Send(ctx, p, "k", req); err != nil || replayed {
		t.Fatalf("retry with the same key after top-up: replayed=%v err=%v", replayed, err)
	}
}

func TestSendRateLimit(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitSend, core.Rate{Interval: time.Hour, Burst: 3})
	}))
	p := e.Principal(t, e.KeyATest)
	tok := e.Upload(t, p, 1)
	for i := range 3 {
		if _, _, err := e.Svc.Faxes.Send(ctx, p, fmt.Sprint("r", i), faxes.SendRequest{To: "+12125550100", UploadToken: tok}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := e.Svc.Faxes.Send(ctx, p, "r3", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
	testenv.WantCode(t, err, core.CodeRateLimited)
	if ce := core.AsError(err); ce.RetryAfterSeconds < 1 {
		t.Fatalf("RetryAfterSeconds = %d", ce.RetryAfterSeconds)
	}
	// Another owner has its own allowance.
	pb := e.Principal(t, e.KeyBTest)
	if _, _, err := e.Svc.Faxes.Send(ctx, pb, "r0", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, pb, 1)}); err != nil {
		t.Fatal(err)
	}
}

func TestOwnersAndModesAreIsolated(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	a := e.Principal(t, e.KeyATest)
	b := e.Principal(t, e.KeyBTest)
	aLive := e.Principal(t, e.KeyALive)
	tok := e.Upload(t, a, 1)
	o, _, err := e.Svc.Faxes.Send(ctx, a, "k", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]core.Principal{"other owner": b, "live key of the same owner": aLive} {
		t.Run(name, func(t *testing.T) {
			_, err := e.Svc.Faxes.Get(ctx, p, o.ID)
			testenv.WantCode(t, err, core.CodeNotFound)
			_, err = e.Svc.Faxes.Cancel(ctx, p, o.ID)
			testenv.WantCode(t, err, core.CodeNotFound)
			page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 10})
			if err != nil || len(page.Data) != 0 {
				t.Fatalf("listed %d foreign faxes (%v)", len(page.Data), err)
			}
			_, err = e.Svc.Faxes.CreateDraft(ctx, p, faxes.CreateDraftRequest{To: "+12125550100", UploadToken: tok})
			if p.Mode == core.ModeLive {
				testenv.WantCode(t, err, faxes.CodeProviderUnavailable)
			} else {
				testenv.WantCode(t, err, core.CodeNotFound)
			}
		})
	}
	_, _, err = e.Svc.Faxes.Send(ctx, b, "k", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
	testenv.WantCode(t, err, core.CodeNotFound)
	_, _, err = e.Svc.Faxes.Send(ctx, aLive, "k", faxes.SendRequest{To: "+12125550100", UploadToken: tok})
	testenv.WantCode(t, err, faxes.CodeProviderUnavailable)
}

func TestListFaxesPagination(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 100}) }))
	p := e.Principal(t, e.KeyATest)
	tok := e.Upload(t, p, 1)
	var ids []string
	for i := range 5 {
		o, _, err := e.Svc.Faxes.Send(ctx, p, fmt.Sprint("p", i), faxes.SendRequest{To: "+12125550100", UploadToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{o.ID}, ids...) // newest first
	}
	var got []string
	cursor := ""
	for {
		page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{StartingAfter: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Data {
			got = append(got, o.ID)
		}
		if !page.HasMore {
			break
		}
		cursor = page.Next
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Fatalf("pages gave %v, want %v", got, ids)
	}
	if _, err := e.Svc.Faxes.Cancel(ctx, p, ids[0]); err != nil {
		t.Fatal(err)
	}
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Status: "canceled", Limit: 10})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != ids[0] {
		t.Fatalf("status filter: %+v %v", page, err)
	}
	_, err = e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Status: "lost", Limit: 10})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
	_, err = e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 101})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
	_, err = e.Svc.Faxes.List(ctx, e.Principal(t, e.KeyBTest), faxes.ListRequest{StartingAfter: ids[0], Limit: 10})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
}

func TestCancelReleasesHold(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	o, _, err := e.Svc.Faxes.Send(ctx, p, "k", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Svc.Faxes.Cancel(ctx, p, o.ID)
	if err != nil || got.Status != faxes.Canceled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	c := e.Credits(t, p)
	if c.AvailableMicros != 10*core.MicrosPerDollar || c.HeldMicros != 0 {
		t.Fatalf("after cancel: available %s held %s", c.Available, c.Held)
	}
	_, err = e.Svc.Faxes.Cancel(ctx, p, o.ID)
	testenv.WantCode(t, err, faxes.CodeFaxNotCancelable)
	// The job still runs later and leaves the canceled fax alone.
	if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Svc.Faxes.Get(ctx, p, o.ID); got.Status != faxes.Canceled || got.Attempts != 0 {
		t.Fatalf("delivery touched a canceled fax: %+v", got)
	}
}

func TestDraftCheckoutQueuesExactlyOneFax(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits())
	p := e.Principal(t, e.KeyATest)
	d, err := e.Svc.Faxes.CreateDraft(ctx, p, faxes.CreateDraftRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 2), Cover: true, CoverText: "For Dr. Who"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Quote.BilledPages != 3 || d.Quote.Amount != "0.21" || d.Status != faxes.DraftOpen {
		t.Fatalf("draft: %+v", d)
	}
	cs, err := e.Svc.Checkout.StartDraft(ctx, p, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cs.CheckoutURL, "http://faxhub.test/checkout/test/") || cs.Amount != "0.21" {
		t.Fatalf("checkout: %+v", cs)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	e.DrainQueue(t)
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 10})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("want one fax, got %d (%v)", len(page.Data), err)
	}
	o := page.Data[0]
	if o.Status != faxes.Delivered || o.PaymentMethod != faxes.PayCheckout || *o.DraftID != d.ID || o.CoverText != "For Dr. Who" {
		t.Fatalf("fax from draft: %+v", o)
	}
	if c := e.Credits(t, p); c.AvailableMicros != 0 || len(c.Ledger) != 0 {
		t.Fatalf("a checkout-paid fax touched credits: %+v", c)
	}
	_, err = e.Svc.Checkout.StartDraft(ctx, p, d.ID)
	testenv.WantCode(t, err, faxes.CodeDraftState)
}

func TestDeliveryEdges(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	send := func(to string, pages int) *faxes.Fax {
		t.Helper()
		o, _, err := e.Svc.Faxes.Send(ctx, p, to+fmt.Sprint(pages, time.Now().UnixNano()), faxes.SendRequest{To: to, UploadToken: e.Upload(t, p, pages)})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	full := int64(10 * core.MicrosPerDollar)

	t.Run("partial with nothing sent is a failure", func(t *testing.T) {
		o := send("+12125550104", 1)
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.Svc.Faxes.Get(ctx, p, o.ID)
		if got.Status != faxes.Failed || got.PagesSent != 0 || got.LatestAttempt.Status != faxes.AttemptFailed {
			t.Fatalf("got %+v / %+v", got, got.LatestAttempt)
		}
		if c := e.Credits(t, p); c.AvailableMicros != full || c.HeldMicros != 0 {
			t.Fatalf("money not returned: %s held %s", c.Available, c.Held)
		}
	})

	// A delivery's end moves the fax and settles its hold together (one
	// statement on PostgreSQL, no transaction around it): a hold that
	// cannot be settled leaves the fax sending, its attempt open and no
	// event, for the job to try again; never delivered and not charged.
	t.Run("a hold that cannot be settled leaves the fax sending", func(t *testing.T) {
		o := send("+12125550100", 1)
		if _, err := e.Store.SettleHold(ctx, o.ID, credits.LedgerRelease, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); !errors.Is(err, faxes.ErrHoldNotSettled) {
			t.Fatalf("Deliver: %v, want ErrHoldNotSettled", err)
		}
		got, _ := e.Svc.Faxes.Get(ctx, p, o.ID)
		if got.Status != faxes.Sending || got.LatestAttempt == nil || got.LatestAttempt.Status != faxes.AttemptSending || got.CompletedAt != nil {
			t.Fatalf("got %+v / %+v, want sending with its attempt open", got, got.LatestAttempt)
		}
		evs, err := e.Store.ListEvents(ctx, events.Filter{OwnerID: o.OwnerID, Mode: o.Mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.SubjectID == o.ID && ev.Type != events.FaxQueued && ev.Type != events.FaxSending {
				t.Errorf("event %s of fax %s, want none after sending", ev.Type, o.ID)
			}
		}
		if c := e.Credits(t, p); c.AvailableMicros != full || c.HeldMicros != 0 {
			t.Fatalf("the release out of band is all that moved: %s held %s", c.Available, c.Held)
		}
	})

	t.Run("early job is deferred, not dropped", func(t *testing.T) {
		o := send("+12125550100", 1)
		stored, err := e.Store.GetFaxByID(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		stored.NextAttemptAt = &at
		if err := e.Store.UpdateFax(ctx, stored, faxes.Queued); err != nil {
			t.Fatal(err)
		}
		err = e.Svc.Faxes.Deliver(ctx, o.ID)
		var nb *faxes.NotBeforeError
		if !errors.As(err, &nb) || !nb.At.Equal(at) {
			t.Fatalf("want NotBeforeError at %v, got %v", at, err)
		}
	})

	// interrupted puts o in the state a worker that died mid-send leaves:
	// sending, with attempt n open and no provider reference, started at
	// startedAt.
	interrupted := func(t *testing.T, o *faxes.Fax, n int, startedAt time.Time) string {
		t.Helper()
		stored, err := e.Store.GetFaxByID(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		stored.Status, stored.Attempts = faxes.Sending, n
		if err := e.Store.UpdateFax(ctx, stored, faxes.Queued); err != nil {
			t.Fatal(err)
		}
		id := core.NewID(core.PrefixAttempt)
		if err := e.Store.CreateAttempt(ctx, &faxes.Attempt{ID: id, FaxID: o.ID, Number: n, Provider: "simulated", Status: faxes.AttemptSending, StartedAt: startedAt.UTC().Truncate(time.Microsecond)}); err != nil {
			t.Fatal(err)
		}
		return id
	}

	t.Run("interrupted attempt is resumed under its own id", func(t *testing.T) {
		o := send("+12125550100", 1)
		id := interrupted(t, o, 1, time.Now())
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.Svc.Faxes.Get(ctx, p, o.ID)
		atts, _ := e.Svc.Faxes.Attempts(ctx, p, o.ID)
		if got.Status != faxes.Delivered || got.Attempts != 1 || len(atts) != 1 || atts[0].ID != id || atts[0].ProviderRef != simulated.Ref(id) {
			t.Fatalf("got %+v, attempts %+v", got, atts)
		}
	})

	t.Run("attempt accepted by the provider is not sent again", func(t *testing.T) {
		o := send("+12125550100", 1)
		id := interrupted(t, o, 1, time.Now())
		a, _ := e.Store.LatestAttempt(ctx, o.ID)
		a.ProviderRef = "simfax_accepted"
		if err := e.Store.UpdateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.Svc.Faxes.Get(ctx, p, o.ID)
		if got.Status != faxes.Sending || got.LatestAttempt.ID != id || got.LatestAttempt.ProviderRef != "simfax_accepted" {
			t.Fatalf("got %+v / %+v", got, got.LatestAttempt)
		}
		// Its outcome arrives as the provider reports it.
		if err := e.Svc.Faxes.RecordProviderOutcome(ctx, o.ID, id, faxes.ProviderResult{Status: faxes.AttemptDelivered, ProviderRef: "simfax_accepted", PagesSent: 1}); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.Svc.Faxes.Get(ctx, p, o.ID); got.Status != faxes.Delivered {
			t.Fatalf("after the report: %+v", got)
		}
	})

	t.Run("interrupted last attempt past the resume window fails and releases", func(t *testing.T) {
		o := send("+12125550100", 1)
		interrupted(t, o, 3, time.Now().Add(-faxes.ResumeWindow-time.Minute))
		heldBefore := e.Credits(t, p).HeldMicros
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.Svc.Faxes.Get(ctx, p, o.ID)
		if got.Status != faxes.Failed || got.FailureCode != "interrupted" || got.LatestAttempt.FailureCode != "interrupted" {
			t.Fatalf("got %+v / %+v", got, got.LatestAttempt)
		}
		if c := e.Credits(t, p); heldBefore-c.HeldMicros != o.PriceMicros {
			t.Fatalf("hold not released: held %s before, %s after", core.FormatUSD(heldBefore), c.Held)
		}
	})

	t.Run("interrupted earlier attempt past the resume window is retried", func(t *testing.T) {
		o := send("+12125550100", 1)
		interrupted(t, o, 1, time.Now().Add(-faxes.ResumeWindow-time.Minute))
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.Svc.Faxes.Get(ctx, p, o.ID)
		atts, _ := e.Svc.Faxes.Attempts(ctx, p, o.ID)
		if got.Status != faxes.Delivered || got.Attempts != 2 || len(atts) != 2 || atts[0].FailureCode != "interrupted" && atts[1].FailureCode != "interrupted" {
			t.Fatalf("got %+v, attempts %+v", got, atts)
		}
	})
}

// A request whose Idempotency-Key was used gets the first request's answer
// whatever has changed since: the balance spent, the rate allowance used,
// the document purged. A replay charges neither the balance nor the rate
// limit, and a different request under the key is a conflict even when it
// would be refused on its own.
func TestReplayAnswersWhateverChangedSince(t *testing.T) {
	e := testenv.New(t, testenv.WithoutCredits(), testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitSend, core.Rate{Interval: time.Hour, Burst: 2})
	}))
	p := e.Principal(t, e.KeyATest)
	if _, err := e.Svc.Credits.Grant(ctx, p.OwnerID, core.ModeTest, 100_000, "one fax"); err != nil {
		t.Fatal(err)
	}
	req := faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)}
	first, replayed, err := e.Svc.Faxes.Send(ctx, p, "k1", req)
	if err != nil || replayed {
		t.Fatalf("first send: replayed=%v err=%v", replayed, err)
	}
	replay := func(what string) {
		t.Helper()
		o, replayed, err := e.Svc.Faxes.Send(ctx, p, "k1", req)
		if err != nil || !replayed || o.ID != first.ID || o.Status != faxes.Queued {
			t.Fatalf("replay %s: %+v replayed=%v err=%v", what, o, replayed, err)
		}
	}
	replay("with the balance spent")
	replay("again")
	_, _, err = e.Svc.Faxes.Send(ctx, p, "k1", faxes.SendRequest{To: "+12125550101", UploadToken: req.UploadToken})
	testenv.WantCode(t, err, core.CodeIdempotencyConflict)
	_, _, err = e.Svc.Faxes.Send(ctx, p, "k1", faxes.SendRequest{To: "+19005550100", UploadToken: req.UploadToken})
	testenv.WantCode(t, err, core.CodeIdempotencyConflict)
	if c := e.Credits(t, p); c.HeldMicros != 100_000 || c.AvailableMicros != 0 {
		t.Fatalf("after replays: held %s, available %s; want one hold of 0.10", c.Held, c.Available)
	}
	// Neither replays nor conflicts used the rate allowance: the second of
	// the burst of two is still there, and only then is the limit reached.
	if _, err := e.Svc.Credits.Grant(ctx, p.OwnerID, core.ModeTest, 1_000_000, "top up"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Svc.Faxes.Send(ctx, p, "k2", req); err != nil {
		t.Fatalf("second send of the burst: %v", err)
	}
	_, _, err = e.Svc.Faxes.Send(ctx, p, "k3", req)
	testenv.WantCode(t, err, core.CodeRateLimited)
	replay("with the rate limit reached")
	// The document is purged (as retention would, once the faxes are
	// done): a new send cannot use it, a replay answers.
	db := e.Store.(interface{ SQL() *sql.DB }).SQL()
	if _, err := db.ExecContext(ctx, "UPDATE documents SET purged_at = CURRENT_TIMESTAMP WHERE id = $1", first.DocumentID); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Svc.Faxes.Send(ctx, p, "k4", faxes.SendRequest{To: "+12125550100", DocumentID: first.DocumentID})
	testenv.WantCode(t, err, core.CodeNotFound)
	replay("with the document purged")
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 100})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("want the two faxes sent, got %d (%v)", len(page.Data), err)
	}
}

// A fax never attempted has no latest attempt (and getFax does not look for
// one); once attempted, a read shows its last one.
func TestGetFaxLatestAttempt(t *testing.T) {
	t.Run("queued, never attempted", func(t *testing.T) {
		e := testenv.New(t, testenv.WithoutWorkers())
		p := e.Principal(t, e.KeyATest)
		o, _, err := e.Svc.Faxes.Send(ctx, p, "k", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
		if err != nil || got.Status != faxes.Queued || got.Attempts != 0 || got.LatestAttempt != nil {
			t.Fatalf("queued fax: %+v (%v)", got, err)
		}
	})
	t.Run("retried", func(t *testing.T) {
		e := testenv.New(t)
		p := e.Principal(t, e.KeyATest)
		// +12125550105: the first attempt fails with provider_error, the
		// retry is delivered.
		o, _, err := e.Svc.Faxes.Send(ctx, p, "k", faxes.SendRequest{To: "+12125550105", UploadToken: e.Upload(t, p, 1)})
		if err != nil {
			t.Fatal(err)
		}
		e.DrainQueue(t)
		got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
		if err != nil || got.Status != faxes.Delivered || got.Attempts != 2 || got.LatestAttempt == nil ||
			got.LatestAttempt.Number != 2 || got.LatestAttempt.Status != faxes.AttemptDelivered {
			t.Fatalf("retried fax: %+v / %+v (%v)", got, got.LatestAttempt, err)
		}
	})
}
