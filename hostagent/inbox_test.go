package hostagent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestInboxCapabilities: a delegated agent granted list_inbox and
// read_inbox_fax reads the faxes its owner received, as text with a
// short-lived link to the PDF; one without the grant is refused, and
// another owner's agent finds nothing.
func TestInboxCapabilities(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	svc := e.a.Svc
	w := e.owner("inbox@example.com")
	p := core.OwnerPrincipal(w.Account.ID, core.ModeTest)
	n, err := svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+13125550140"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := svc.Checkout.StartNumber(ctx, p, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	if err := svc.Numbers.PlaceOrder(ctx, n.ID); err != nil { // the queue is insert-only here
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "in.pdf")
	if err := os.WriteFile(path, testenv.MinimalPDF(2), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := svc.Inbox.Simulate(ctx, p, inbox.TestInboundFax{To: n.E164, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Inbox.Process(ctx, f.ID, false); err != nil {
		t.Fatal(err)
	}

	ag := w.activeAgent(w.createHost(), "list_inbox", "read_inbox_fax")
	r := ag.execute("list_inbox", map[string]any{})
	data, _ := r.body["data"].(map[string]any)
	faxes, _ := data["faxes"].([]any)
	if r.status != 200 || len(faxes) != 1 || faxes[0].(map[string]any)["id"] != f.ID {
		t.Fatalf("list_inbox: %d %s", r.status, r.raw)
	}
	r = ag.execute("read_inbox_fax", map[string]any{"id": f.ID})
	data, _ = r.body["data"].(map[string]any)
	if r.status != 200 || data["pages"] != float64(2) || !strings.Contains(data["download_url"].(string), core.LinkInboxFile.PathPrefix()) {
		t.Fatalf("read_inbox_fax: %d %s", r.status, r.raw)
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		require.Missing(t, "pdftotext", "apt-get install poppler-utils")
	}
	if !strings.Contains(data["text"].(string), "faxhub test page 2") {
		t.Fatalf("text: %q", data["text"])
	}
	wantError(t, "read_inbox_fax without an id", ag.execute("read_inbox_fax", map[string]any{}), 400, core.CodeInvalidRequest)

	other := e.owner("other-inbox@example.com")
	stranger := other.activeAgent(other.createHost(), "read_inbox_fax")
	wantError(t, "another owner's fax", stranger.execute("read_inbox_fax", map[string]any{"id": f.ID}), 404, core.CodeNotFound)
	narrow := w.activeAgent(w.createHost(), "list_inbox")
	if r := narrow.execute("read_inbox_fax", map[string]any{"id": f.ID}); r.status != 403 {
		t.Fatalf("read without the grant: %d %s", r.status, r.raw)
	}
}
