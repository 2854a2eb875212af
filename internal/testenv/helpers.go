package testenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/retention"
	"github.com/faxhub/faxhub/core/services"
)

// Clock is an injected test clock: it moves only when a test advances it.
// It is safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock starts a clock at the current wall time.
func NewClock() *Clock { return NewClockAt(time.Now()) }

// NewClockAt starts a clock at t.
func NewClockAt(t time.Time) *Clock {
	c := &Clock{}
	c.ns.Store(t.UnixNano())
	return c
}

// Now is the clock's time (UTC).
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// WantCode fails t unless err is a *core.Error with code.
func WantCode(t testing.TB, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s, got nil", code)
	}
	if got := core.ErrorCode(err); got != code {
		t.Fatalf("want error code %s, got %s (%v)", code, got, err)
	}
}

// Upload stores a PDF of n pages for p and returns its upload token.
func (e *Env) Upload(t testing.TB, p core.Principal, pages int) string {
	t.Helper()
	ctx := context.Background()
	capa, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Documents.ReceiveUpload(ctx, capa.UploadToken, bytes.NewReader(MinimalPDF(pages))); err != nil {
		t.Fatal(err)
	}
	return capa.UploadToken
}

// Credits reads p's balance and the first 100 ledger entries.
func (e *Env) Credits(t testing.TB, p core.Principal) *credits.Account {
	t.Helper()
	c, err := e.Svc.Credits.Get(context.Background(), p, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PurgeCounts maps a garbage-collector run's counts by what they count.
func PurgeCounts(pc []retention.PurgeCount) map[string]int64 {
	m := map[string]int64{}
	for _, c := range pc {
		m[c.What] = c.N
	}
	return m
}

// Clocked is an Env without delivery workers (tests drain the queue) whose
// service clock is a test clock at 2026-11-01 12:00 UTC.
func Clocked(t testing.TB, opts ...Option) (*Env, *Clock) {
	clk := NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	opts = append([]Option{WithoutWorkers(), WithConfig(func(c *services.Config) { c.Now = clk.Now })}, opts...)
	return New(t, opts...), clk
}

// WithClock is New with the service clock a test clock started now.
func WithClock(t testing.TB, opts ...Option) (*Env, *Clock) {
	c := NewClock()
	return New(t, append(opts, WithConfig(func(cfg *services.Config) { cfg.Now = c.Now }))...), c
}

// BuyNumber reserves and pays number for p at a checkout and waits for it
// to be active.
func (e *Env) BuyNumber(t testing.TB, p core.Principal, number string) *numbers.Number {
	t.Helper()
	ctx := context.Background()
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: number})
	if err != nil {
		t.Fatalf("buy %s: %v", number, err)
	}
	cs, err := e.Svc.Checkout.StartNumber(ctx, p, n.ID)
	if err != nil {
		t.Fatalf("checkout of %s: %v", number, err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatalf("pay %s: %v", number, err)
	}
	e.DrainQueue(t)
	n, err = e.Svc.Numbers.Get(ctx, p, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// DeliverTestFax delivers pdf to p's number to (test mode's simulator) and
// waits for it to be processed.
func (e *Env) DeliverTestFax(t testing.TB, p core.Principal, to string, pdf []byte) *inbox.InboundFax {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := e.Svc.Inbox.Simulate(context.Background(), p, inbox.TestInboundFax{To: to, From: "+13125550100", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	e.DrainQueue(t)
	return f
}
