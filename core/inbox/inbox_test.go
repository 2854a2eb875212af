package inbox_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestInboxEndToEnd(t *testing.T) {
	e, clk := testenv.WithClock(t)
	pa, pb := e.Principal(t, e.KeyATest), e.Principal(t, e.KeyBTest)
	n := e.BuyNumber(t, pa, "+12125550150")
	f := e.DeliverTestFax(t, pa, n.E164, testenv.MinimalPDF(2))

	got, err := e.Svc.Inbox.Get(ctx, pa, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != inbox.Received || got.Pages != 2 || got.From != "+13125550100" || got.To != n.E164 || got.NumberID != n.ID || got.Bytes == 0 {
		t.Fatalf("received: %+v", got)
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		require.Missing(t, "pdftotext", "apt-get install poppler-utils")
	}
	if got.TextStatus != inbox.TextExtracted || got.TextMethod != "text" || !strings.Contains(got.Text, "faxhub test page 2") {
		t.Fatalf("text of the received fax: %q %s %s %s", got.Text, got.TextStatus, got.TextMethod, got.TextNote)
	}
	page, err := e.Svc.Inbox.List(ctx, pa, inbox.Query{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != f.ID || page.Data[0].Text != "" || !strings.HasPrefix(page.Data[0].TextPreview, "faxhub test page 1") {
		t.Fatalf("inbox of A: %+v %v", page, err)
	}
	if page, _ := e.Svc.Inbox.List(ctx, pb, inbox.Query{}); len(page.Data) != 0 {
		t.Fatalf("inbox of B: %+v", page.Data)
	}
	if _, err := e.Svc.Inbox.Get(ctx, pb, f.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B reads A's fax: %v", err)
	}
	if _, err := e.Svc.Inbox.Download(ctx, pb, f.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B downloads A's fax: %v", err)
	}

	link, err := e.Svc.Inbox.Download(ctx, pa, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	token := link.URL[strings.LastIndex(link.URL, "/")+1:]
	rc, _, err := e.Svc.Inbox.OpenDownload(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.HasPrefix(string(body), "%PDF-") {
		t.Fatalf("download: %q", body[:min(len(body), 10)])
	}
	for _, bad := range []string{token + "x", strings.Replace(token, "inb_", "fax_", 1), "inb_x.1.y", strings.Repeat("a", 300)} {
		if _, _, err := e.Svc.Inbox.OpenDownload(ctx, bad); core.ErrorCode(err) != inbox.CodeDownloadLink {
			t.Errorf("open %q: %v", bad, err)
		}
	}
	// The link lives 5 minutes (to the second): it works a nanosecond
	// before its expiry and is refused at it.
	if want := clk.Now().Add(inbox.DownloadTTL).Truncate(time.Second); !link.ExpiresAt.Equal(want) {
		t.Fatalf("link expires %v, want %v", link.ExpiresAt, want)
	}
	clk.Advance(link.ExpiresAt.Sub(clk.Now()) - time.Nanosecond)
	if rc, _, err := e.Svc.Inbox.OpenDownload(ctx, token); err != nil {
		t.Fatalf("link just before its expiry: %v", err)
	} else {
		rc.Close()
	}
	clk.Advance(time.Nanosecond)
	if _, _, err := e.Svc.Inbox.OpenDownload(ctx, token); core.ErrorCode(err) != inbox.CodeDownloadLink {
		t.Fatalf("link at its expiry: %v", err)
	}
	clk.Advance(inbox.DownloadTTL + time.Second)
	if _, _, err := e.Svc.Inbox.OpenDownload(ctx, token); core.ErrorCode(err) != inbox.CodeDownloadLink {
		t.Fatalf("expired link: %v", err)
	}

	// B cannot deliver to A's number; live mode cannot simulate.
	path := filepath.Join(t.TempDir(), "x.pdf")
	_ = os.WriteFile(path, testenv.MinimalPDF(1), 0o600)
	if _, err := e.Svc.Inbox.Simulate(ctx, pb, inbox.TestInboundFax{To: n.E164, Path: path}); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("B delivers to A's number: %v", err)
	}
	live := e.Principal(t, e.KeyALive)
	_ = os.WriteFile(path, testenv.MinimalPDF(1), 0o600)
	if _, err := e.Svc.Inbox.Simulate(ctx, live, inbox.TestInboundFax{To: n.E164, Path: path}); core.ErrorCode(err) != inbox.CodeTestModeOnly {
		t.Fatalf("live simulation: %v", err)
	}

	// Retention: a month on, the garbage collector deletes it, text and PDF.
	clk.Advance(31 * 24 * time.Hour)
	counts, err := e.Svc.Retention.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.What == "inbound_faxes" && c.N != 1 {
			t.Fatalf("purged %d received faxes, want 1", c.N)
		}
	}
	if _, err := e.Svc.Inbox.Get(ctx, pa, f.ID); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("a purged fax: %v", err)
	}
}

func TestReceiveFaxOnce(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+12125550160"})
	if err != nil {
		t.Fatal(err)
	}
	notice := inbox.InboundNotice{Provider: simulated.Name, ProviderRef: "ref-1", To: n.E164, From: "+13125550100\x07", MediaURL: "https://media.example/x"}
	// Not yet receiving: it is awaiting payment.
	if _, err := e.Svc.Inbox.ReceiveFax(ctx, notice); core.ErrorCode(err) != inbox.CodeNumberNotReceiving {
		t.Fatalf("receive on an unpaid number: %v", err)
	}
	cs, _ := e.Svc.Checkout.StartNumber(ctx, p, n.ID)
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Numbers.PlaceOrder(ctx, n.ID); err != nil {
		t.Fatal(err)
	}
	first, err := e.Svc.Inbox.ReceiveFax(ctx, notice)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.Svc.Inbox.ReceiveFax(ctx, notice)
	if err != nil || second.ID != first.ID {
		t.Fatalf("duplicate notice: %+v %v", second, err)
	}
	if first.From != "+13125550100" {
		t.Fatalf("caller id not cleaned: %q", first.From)
	}
	page, _ := e.Svc.Inbox.List(ctx, p, inbox.Query{})
	if len(page.Data) != 1 || page.Data[0].Status != inbox.Receiving {
		t.Fatalf("inbox: %+v", page.Data)
	}
	other := notice
	other.To, other.ProviderRef = "+12125550161", "ref-2"
	if _, err := e.Svc.Inbox.ReceiveFax(ctx, other); core.ErrorCode(err) != inbox.CodeNumberNotReceiving {
		t.Fatalf("receive on a number no one holds: %v", err)
	}
}
