package mcp_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// uploadPDF uploads a PDF of pages pages through create_upload and
// returns its token.
func uploadPDF(t *testing.T, cs *mcp.ClientSession, pages int) string {
	t.Helper()
	var up uploadOut
	mustOK(t, "create_upload", call(t, cs, "create_upload", map[string]any{}, &up))
	req, _ := http.NewRequest(http.MethodPut, up.UploadURL, bytes.NewReader(testenv.MinimalPDF(pages)))
	req.Header.Set("Content-Type", "application/pdf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	return up.UploadToken
}

type filesOut struct {
	PreviewID  string
	URL        string
	Pages      int
	PageImages []string
	SHA256     string
	ExpiresAt  string
	Quote      *struct{ Cover bool }
}

type batchSummary struct {
	ID          string
	Total       int
	Price       string
	AlreadyPaid bool
	Counts      struct{ Queued, Delivered, Canceled int }
	Faxes       []struct{ ID, Status, To string }
}

// TestProofTools: preview_fax shows the pages (with the cover) as page
// image links that serve PNGs; get_fax_document is fax_not_yet_faxed
// before the first attempt and, after delivery, links to the PDF whose
// sha256 is the fax's faxedSha256; the report link serves a PDF; the
// receipt is a JWS.
func TestProofTools(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("proof@example.com")
	cs := e.connect(o.Token(t, allScopes, e.base+"/mcp"))
	if _, err := e.a.Svc.Credits.Grant(t.Context(), o.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	tok := uploadPDF(t, cs, 1)

	var pv filesOut
	mustOK(t, "preview_fax", call(t, cs, "preview_fax", map[string]any{"to": "+12125550100", "uploadToken": tok,
		"coverPage": map[string]any{"recipientName": "Dr. Ada", "subject": "Lab"}, "header": "Acme"}, &pv))
	if pv.PreviewID == "" || pv.Pages < 2 || len(pv.PageImages) != pv.Pages || len(pv.SHA256) != 64 || pv.URL == "" || pv.ExpiresAt == "" ||
		pv.Quote == nil || !pv.Quote.Cover {
		t.Fatalf("preview_fax = %+v", pv)
	}
	if require.Tool(t, "pdftoppm", "apt-get install poppler-utils, or make deps") {
		if r := testenv.Fetch(t, pv.PageImages[1]); r.Code != http.StatusOK || r.ContentType != "image/png" {
			t.Fatalf("page image: %d %s %s", r.Code, r.ContentType, r.Body)
		}
	}
	var bare filesOut
	mustOK(t, "preview_fax without to", call(t, cs, "preview_fax", map[string]any{"uploadToken": tok}, &bare))
	if bare.Quote != nil || bare.Pages != 1 {
		t.Fatalf("preview_fax without to = %+v", bare)
	}
	wantErr(t, "preview_fax bad header", call(t, cs, "preview_fax", map[string]any{"uploadToken": tok, "header": strings.Repeat("h", 51)}, nil), "field: header")
	wantErr(t, "preview_fax unknown argument", call(t, cs, "preview_fax", map[string]any{"uploadToken": tok, "color": true}, nil), "field: color")

	// The upload token still drafts the fax after its previews.
	var d optionsFax
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": tok, "cover": true}, &d))
	var f optionsFax
	mustOK(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d.DraftID}, &f))
	wantErr(t, "get_fax_document before delivery", call(t, cs, "get_fax_document", map[string]any{"faxId": f.FaxID}, nil), faxes.CodeNotYetFaxed)
	wantErr(t, "get_fax_report before delivery", call(t, cs, "get_fax_report", map[string]any{"faxId": f.FaxID}, nil), faxes.CodeFaxNotFinished)
	wantErr(t, "get_fax_receipt before delivery", call(t, cs, "get_fax_receipt", map[string]any{"faxId": f.FaxID}, nil), faxes.CodeFaxNotFinished)
	wantErr(t, "get_fax_document unknown", call(t, cs, "get_fax_document", map[string]any{"faxId": "fax_nope"}, nil), "not_found")

	if err := e.a.Svc.Faxes.Deliver(t.Context(), f.FaxID); err != nil {
		t.Fatal(err)
	}
	stored, err := e.a.DB.GetFaxByID(t.Context(), f.FaxID)
	if err != nil || stored.Status != faxes.Delivered || stored.FaxedSHA256 == "" {
		t.Fatalf("delivered fax %+v %v", stored, err)
	}
	var doc filesOut
	mustOK(t, "get_fax_document", call(t, cs, "get_fax_document", map[string]any{"faxId": f.FaxID}, &doc))
	if doc.SHA256 != stored.FaxedSHA256 || doc.Pages != 2 || len(doc.PageImages) != 2 {
		t.Fatalf("get_fax_document = %+v, faxedSha256 %s", doc, stored.FaxedSHA256)
	}
	pdf := testenv.Fetch(t, doc.URL)
	sum := sha256.Sum256(pdf.Body)
	if pdf.Code != http.StatusOK || pdf.ContentType != "application/pdf" || hex.EncodeToString(sum[:]) != stored.FaxedSHA256 {
		t.Fatalf("the document as faxed: %d %s, sha256 %x, want %s", pdf.Code, pdf.ContentType, sum, stored.FaxedSHA256)
	}
	if require.Tool(t, "pdftoppm", "apt-get install poppler-utils, or make deps") {
		if r := testenv.Fetch(t, doc.PageImages[0]); r.Code != http.StatusOK || r.ContentType != "image/png" {
			t.Fatalf("faxed page image: %d %s", r.Code, r.ContentType)
		}
	}

	var rep struct{ URL, ExpiresAt string }
	mustOK(t, "get_fax_report", call(t, cs, "get_fax_report", map[string]any{"faxId": f.FaxID}, &rep))
	if r := testenv.Fetch(t, rep.URL); r.Code != http.StatusOK || r.ContentType != "application/pdf" || !bytes.HasPrefix(r.Body, []byte("%PDF")) {
		t.Fatalf("report: %d %s", r.Code, r.ContentType)
	}
	var rc struct{ Receipt, JWKSURI string }
	mustOK(t, "get_fax_receipt", call(t, cs, "get_fax_receipt", map[string]any{"faxId": f.FaxID}, &rc))
	if parts := strings.Split(rc.Receipt, "."); len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" || rc.JWKSURI == "" {
		t.Fatalf("get_fax_receipt = %+v", rc)
	}
}

// TestBatchTools: a broadcast to 3 recipients, its summary, the same call
// again charging nothing, the counts after delivery; a +1900 number
// refuses the whole broadcast naming the recipient; cancel_fax_batch.
func TestBatchTools(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("batch@example.com")
	cs := e.connect(o.Token(t, allScopes, e.base+"/mcp"))
	if _, err := e.a.Svc.Credits.Grant(t.Context(), o.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	tok := uploadPDF(t, cs, 1)
	args := map[string]any{"uploadToken": tok, "header": "Acme", "recipients": []any{
		map[string]any{"to": "+12125550100", "coverPage": map[string]any{"recipientName": "Ada"}},
		map[string]any{"to": "+12125550120"},
		map[string]any{"to": "+12125550121"},
	}}
	var b batchSummary
	mustOK(t, "send_fax_batch", call(t, cs, "send_fax_batch", args, &b))
	if b.ID == "" || b.Total != 3 || len(b.Faxes) != 3 || b.Counts.Queued != 3 || b.AlreadyPaid || b.Price == "" {
		t.Fatalf("send_fax_batch = %+v", b)
	}
	var again batchSummary
	mustOK(t, "send_fax_batch again", call(t, cs, "send_fax_batch", args, &again))
	if again.ID != b.ID || !again.AlreadyPaid {
		t.Fatalf("the same call again = %+v, want batch %s replayed", again, b.ID)
	}
	for _, fx := range b.Faxes {
		if err := e.a.Svc.Faxes.Deliver(t.Context(), fx.ID); err != nil {
			t.Fatal(err)
		}
	}
	var got batchSummary
	mustOK(t, "get_fax_batch", call(t, cs, "get_fax_batch", map[string]any{"batchId": b.ID}, &got))
	if got.Counts.Delivered != 3 || got.Counts.Queued != 0 {
		t.Fatalf("get_fax_batch after delivery = %+v", got)
	}

	// One premium-rate number refuses the whole broadcast, naming it.
	bad := map[string]any{"uploadToken": uploadPDF(t, cs, 1), "recipients": []any{
		map[string]any{"to": "+12125550100"}, map[string]any{"to": "+19005550100"},
	}}
	var before, after struct{ Balance, Held string }
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &before))
	msg := call(t, cs, "send_fax_batch", bad, nil)
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &after))
	if before != after {
		t.Errorf("a refused broadcast charged: %+v, then %+v", before, after)
	}
	for _, want := range []string{core.CodePremiumDestination, "recipient: 1", "+19005550100"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a +1900 recipient: %q lacks %q", msg, want)
		}
	}
	tooMany := make([]any, faxes.MaxBatchRecipients+1)
	for i := range tooMany {
		tooMany[i] = map[string]any{"to": "+12125550100"}
	}
	wantErr(t, "101 recipients", call(t, cs, "send_fax_batch", map[string]any{"uploadToken": tok, "recipients": tooMany}, nil), "field: recipients")
	wantErr(t, "an unknown recipient field", call(t, cs, "send_fax_batch", map[string]any{"uploadToken": tok,
		"recipients": []any{map[string]any{"to": "+12125550100", "fax": "x"}}}, nil), "recipients")

	// A queued broadcast is canceled whole.
	var sb batchSummary
	mustOK(t, "send_fax_batch queued", call(t, cs, "send_fax_batch", map[string]any{"uploadToken": uploadPDF(t, cs, 1), "idempotencyKey": "k1",
		"recipients": []any{map[string]any{"to": "+12125550100"}, map[string]any{"to": "+12125550101"}}}, &sb))
	var cb batchSummary
	mustOK(t, "cancel_fax_batch", call(t, cs, "cancel_fax_batch", map[string]any{"batchId": sb.ID}, &cb))
	if cb.Counts.Canceled != 2 {
		t.Fatalf("cancel_fax_batch = %+v", cb)
	}
	wantErr(t, "get_fax_batch unknown", call(t, cs, "get_fax_batch", map[string]any{"batchId": "bat_nope"}, nil), "not_found")
}

// TestProofToolScopes: a fax:read token cannot preview or broadcast (the
// gate's 403 insufficient_scope, the tool's own error behind it), and
// can read batches.
func TestProofToolScopes(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("proofscope@example.com")
	tok := o.Token(t, []string{"fax:read"}, e.base+"/mcp")
	for tool, scope := range map[string]string{"preview_fax": "fax:draft", "send_fax_batch": "fax:send", "cancel_fax_batch": "fax:send"} {
		resp, body := rawPost(t, e.base+"/mcp", "Bearer "+tok,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="`+scope+`"`) {
			t.Errorf("%s with fax:read: %d %s %s", tool, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	cs := e.connect(tok)
	wantErr(t, "get_fax_batch", call(t, cs, "get_fax_batch", map[string]any{"batchId": "bat_nope"}, nil), "not_found")
}
