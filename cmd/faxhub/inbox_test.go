package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestAdminInboxDeliver: `faxhub admin inbox deliver` hands a file to the
// simulator for one of an owner's test numbers, and a running service
// reads it into that owner's inbox; a live or unknown number is refused.
func TestAdminInboxDeliver(t *testing.T) {
	ctx := context.Background()
	d := dataArgs(t)
	if _, err := faxhub(t, append([]string{"admin", "owner", "create", "--email", "in@example.com"}, d...)...); err != nil {
		t.Fatal(err)
	}
	key, err := faxhub(t, append([]string{"admin", "apikey", "create", "--owner", "in@example.com", "--mode", "test"}, d...)...)
	if err != nil {
		t.Fatal(err)
	}
	var c config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	commonFlags(fs, &c)
	if err := fs.Parse(d); err != nil {
		t.Fatal(err)
	}
	if err := c.finish(); err != nil {
		t.Fatal(err)
	}
	a, err := build(ctx, c, slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Queue.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = a.Queue.Stop(sctx)
	}()
	p, err := a.Svc.Accounts.AuthenticateAPIKey(ctx, strings.TrimSpace(key))
	if err != nil {
		t.Fatal(err)
	}
	n, err := a.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550170"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := a.Svc.Checkout.StartNumber(ctx, p, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the number to be active", func() bool {
		n, err = a.Svc.Numbers.Get(ctx, p, n.ID)
		return err == nil && n.Status == numbers.Active
	})

	pdf := filepath.Join(t.TempDir(), "in.pdf")
	if err := os.WriteFile(pdf, testenv.MinimalPDF(3), 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := faxhub(t, append([]string{"admin", "inbox", "deliver", "--to", n.E164, "--file", pdf}, d...)...)
	if err != nil || !strings.HasPrefix(id, "inb_") {
		t.Fatalf("inbox deliver printed %q (%v)", id, err)
	}
	if _, err := os.Stat(pdf); err != nil {
		t.Fatalf("the operator's file was consumed: %v", err)
	}
	var f *inbox.InboundFax
	waitFor(t, "the fax to be read", func() bool {
		f, err = a.Svc.Inbox.Get(ctx, p, strings.TrimSpace(id))
		return err == nil && f.Status == inbox.Received
	})
	if f.Pages != 3 || f.To != n.E164 {
		t.Fatalf("received: %+v", f)
	}
	if _, err := faxhub(t, append([]string{"admin", "inbox", "deliver", "--to", "+14155550171", "--file", pdf}, d...)...); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("deliver to a number no one holds: %v", err)
	}
	if _, err := faxhub(t, append([]string{"admin", "inbox", "deliver", "--to", n.E164}, d...)...); err == nil {
		t.Fatal("deliver without --file: want a usage error")
	}
}

// waitFor polls cond (the real queue works in the background) for up to
// 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
