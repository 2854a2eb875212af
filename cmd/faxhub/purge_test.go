package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestAdminPurge: `faxhub admin purge` runs the collector once with the
// retention its flags give and prints a count per kind.
func TestAdminPurge(t *testing.T) {
	d := dataArgs(t)
	if _, err := faxhub(t, append([]string{"migrate"}, d...)...); err != nil {
		t.Fatal(err)
	}
	// An owner with one unsent document, stored through the service.
	ctx := context.Background()
	opts := app.Options{BaseURL: "http://localhost:8080", InsertOnly: true}
	for i := 0; i+1 < len(d); i += 2 {
		switch d[i] {
		case "--data":
			opts.DataDir = d[i+1]
		case "--database":
			opts.Database = d[i+1]
		}
	}
	a, err := app.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	o, err := a.Svc.Accounts.CreateOwner(ctx, "purge@example.com", "", true)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := a.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Svc.Accounts.AuthenticateAPIKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := a.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
	if err != nil {
		t.Fatal(err)
	}
	a.Close()

	// With the default retention the week-less document stays.
	out, err := faxhub(t, append([]string{"admin", "purge"}, d...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "documents 0\n") || !strings.Contains(out, "rate_limits ") || !strings.Contains(out, "oauth_tokens_and_consents ") {
		t.Fatalf("admin purge printed:\n%s", out)
	}
	// A retention of a millisecond purges it and its upload.
	out, err = faxhub(t, append([]string{"admin", "purge", "--retention", "1ms"}, d...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "documents 1\n") || !strings.Contains(out, "uploads 1\n") {
		t.Fatalf("admin purge --retention 1ms printed:\n%s", out)
	}
	a, err = app.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Svc.Documents.Get(ctx, p, doc.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("purged document: %v", err)
	}
	if _, err := faxhub(t, append([]string{"admin", "purge", "--retention", "soon"}, d...)...); err == nil {
		t.Fatal("a bad --retention was accepted")
	}
}
