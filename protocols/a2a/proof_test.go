package a2a_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestProofSkills through a2a-go's client: preview_fax with a cover page
// answers links to 2 pages (a page image is a PNG); get_fax_document is
// fax_not_yet_faxed before the first attempt, and after delivery links to
// the PDF whose sha256 is the fax's faxedSha256; the report link serves a
// PDF; the receipt is a JWS.
func TestProofSkills(t *testing.T) {
	e := newEnv(t)
	w := e.owner("proof@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)

	pv := call(t, c, skillMsg("preview_fax", map[string]any{"to": "+12125550100", "uploadToken": tok,
		"coverPage": map[string]any{"recipientName": "Dr. Ada"}, "header": "Acme"}))
	imgs := strs(pv["pageImages"])
	quote, _ := pv["quote"].(map[string]any)
	if pv["previewId"] == "" || pv["pages"] != float64(2) || len(imgs) != 2 || len(pv["sha256"].(string)) != 64 || pv["url"] == "" || quote == nil || quote["cover"] != true {
		t.Fatalf("preview_fax = %v", pv)
	}
	if require.Tool(t, "pdftoppm", "apt-get install poppler-utils, or make deps") {
		if r := testenv.Fetch(t, imgs[1]); r.Code != http.StatusOK || r.ContentType != "image/png" {
			t.Fatalf("page image: %d %s %s", r.Code, r.ContentType, r.Body)
		}
	}
	if bare := call(t, c, skillMsg("preview_fax", map[string]any{"uploadToken": tok})); bare["quote"] != nil || bare["pages"] != float64(1) {
		t.Fatalf("preview_fax without to = %v", bare)
	}
	for _, bad := range []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"a 51-character header", map[string]any{"uploadToken": tok, "header": strings.Repeat("h", 51)}, "header"},
		{"a malformed sendAt", map[string]any{"uploadToken": tok, "sendAt": "soon"}, "sendAt"},
		{"no uploadToken", map[string]any{"to": "+12125550100"}, "uploadToken"},
	} {
		_, err := c.SendMessage(t.Context(), skillMsg("preview_fax", bad.args))
		if d := a2aErr(t, bad.name, err, a2a.ErrInvalidParams, bad.field); d["field"] != bad.field {
			t.Errorf("%s: details %v", bad.name, d)
		}
	}

	p := ownerPrincipal(t, e, w.Account.ID)
	if _, err := e.a.Svc.Credits.Grant(t.Context(), w.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	f := sendFaxWithCredits(t, e, p)
	for skill, code := range map[string]string{"get_fax_document": faxes.CodeNotYetFaxed, "get_fax_report": faxes.CodeFaxNotFinished, "get_fax_receipt": faxes.CodeFaxNotFinished} {
		_, err := c.SendMessage(t.Context(), skillMsg(skill, map[string]any{"faxId": f.ID}))
		if d := a2aErr(t, skill+" before delivery", err, a2a.ErrInvalidParams, code); d["code"] != code {
			t.Errorf("%s: details %v", skill, d)
		}
	}
	if err := e.a.Svc.Faxes.Deliver(t.Context(), f.ID); err != nil {
		t.Fatal(err)
	}
	stored, err := e.a.DB.GetFaxByID(t.Context(), f.ID)
	if err != nil || stored.Status != faxes.Delivered || stored.FaxedSHA256 == "" {
		t.Fatalf("delivered fax %+v %v", stored, err)
	}
	doc := call(t, c, skillMsg("get_fax_document", map[string]any{"faxId": f.ID}))
	if doc["sha256"] != stored.FaxedSHA256 || len(strs(doc["pageImages"])) != stored.FaxedPages {
		t.Fatalf("get_fax_document = %v, faxedSha256 %s", doc, stored.FaxedSHA256)
	}
	pdf := testenv.Fetch(t, doc["url"].(string))
	sum := sha256.Sum256(pdf.Body)
	if pdf.Code != http.StatusOK || pdf.ContentType != "application/pdf" || hex.EncodeToString(sum[:]) != stored.FaxedSHA256 {
		t.Fatalf("the document as faxed: %d %s, sha256 %x, want %s", pdf.Code, pdf.ContentType, sum, stored.FaxedSHA256)
	}
	rep := call(t, c, skillMsg("get_fax_report", map[string]any{"faxId": f.ID}))
	if r := testenv.Fetch(t, rep["url"].(string)); r.Code != http.StatusOK || r.ContentType != "application/pdf" || !bytes.HasPrefix(r.Body, []byte("%PDF")) {
		t.Fatalf("report: %d %s", r.Code, r.ContentType)
	}
	rc := call(t, c, skillMsg("get_fax_receipt", map[string]any{"faxId": f.ID}))
	if parts := strings.Split(rc["receipt"].(string), "."); len(parts) != 3 || parts[1] == "" || parts[2] == "" || rc["jwksUri"] == "" {
		t.Fatalf("get_fax_receipt = %v", rc)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("get_fax_document", map[string]any{"faxId": "fax_nope"}))
	a2aErr(t, "get_fax_document unknown", err, a2a.ErrInvalidParams, "not_found")
}

// TestBatchSkills: a 3-recipient broadcast sent with credits (REST's way)
// is summarised by get_fax_batch, its counts delivered after delivery;
// cancel_fax_batch cancels a queued one; a fax:read token reads batches
// but cannot cancel one or preview.
func TestBatchSkills(t *testing.T) {
	e := newEnv(t)
	w := e.owner("batch@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	p := ownerPrincipal(t, e, w.Account.ID)
	if _, err := e.a.Svc.Credits.Grant(t.Context(), w.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	send := func(key string, to ...string) *faxes.BatchView {
		t.Helper()
		up, err := e.a.Svc.Documents.CreateUpload(t.Context(), p, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.a.Svc.Documents.ReceiveUpload(t.Context(), up.UploadToken, bytes.NewReader(testenv.MinimalPDF(1))); err != nil {
			t.Fatal(err)
		}
		r := faxes.BatchRequest{UploadToken: up.UploadToken}
		for _, n := range to {
			r.Recipients = append(r.Recipients, faxes.BatchRecipient{To: n})
		}
		b, _, err := e.a.Svc.Faxes.SendBatch(t.Context(), p, key, r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := send("b1", "+12125550100", "+12125550120", "+12125550121")
	got := call(t, c, skillMsg("get_fax_batch", map[string]any{"batchId": b.ID}))
	counts, _ := got["counts"].(map[string]any)
	if got["id"] != b.ID || got["total"] != float64(3) || counts["queued"] != float64(3) || len(got["faxes"].([]any)) != 3 {
		t.Fatalf("get_fax_batch = %v", got)
	}
	for _, f := range b.Faxes {
		if err := e.a.Svc.Faxes.Deliver(t.Context(), f.ID); err != nil {
			t.Fatal(err)
		}
	}
	got = call(t, c, skillMsg("get_fax_batch", map[string]any{"batchId": b.ID}))
	if counts, _ := got["counts"].(map[string]any); counts["delivered"] != float64(3) || got["completedAt"] == nil {
		t.Fatalf("get_fax_batch after delivery = %v", got)
	}

	queued := send("b2", "+12125550100", "+12125550120")
	readOnly := e.client(w.Token(t, []string{"fax:read"}, e.base+"/a2a"))
	if got := call(t, readOnly, skillMsg("get_fax_batch", map[string]any{"batchId": queued.ID})); got["id"] != queued.ID {
		t.Fatalf("get_fax_batch with fax:read = %v", got)
	}
	for skill, args := range map[string]map[string]any{
		"cancel_fax_batch": {"batchId": queued.ID},
		"preview_fax":      {"uploadToken": upload(t, c, 1)},
	} {
		_, err := readOnly.SendMessage(t.Context(), skillMsg(skill, args))
		if d := a2aErr(t, skill+" with fax:read", err, a2a.ErrUnauthorized, "fax:"); d["code"] != core.CodeInsufficientScope {
			t.Errorf("%s: details %v", skill, d)
		}
	}
	cb := call(t, c, skillMsg("cancel_fax_batch", map[string]any{"batchId": queued.ID}))
	if counts, _ := cb["counts"].(map[string]any); counts["canceled"] != float64(2) {
		t.Fatalf("cancel_fax_batch = %v", cb)
	}
	_, err := c.SendMessage(t.Context(), skillMsg("get_fax_batch", map[string]any{"batchId": "bat_nope"}))
	a2aErr(t, "get_fax_batch unknown", err, a2a.ErrInvalidParams, "not_found")
	// No broadcast is sent through A2A: it would spend account credits.
	_, err = c.SendMessage(t.Context(), skillMsg("send_fax_batch", map[string]any{}))
	a2aErr(t, "send_fax_batch", err, a2a.ErrInvalidParams, "unknown skill")
}
