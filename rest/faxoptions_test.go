package rest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"image/png"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth/receipts"
)

// pdfText reads a PDF's text layer with poppler's pdftotext, as a person
// checking the fax would.
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		require.Missing(t, "pdftotext", "apt-get install poppler-utils, or make deps")
	}
	cmd := exec.Command("pdftotext", "-layout", "-", "-")
	cmd.Stdin = bytes.NewReader(pdf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

// fetch GETs a signed link of the API origin.
func (h *harness) fetch(url string) *result {
	h.t.Helper()
	return h.do("", "GET", strings.TrimPrefix(url, h.env.Svc.Config().APIURL), nil, nil)
}

// TestFaxOptionsOverREST: a fax with a cover page, a header line, fine
// resolution and a retry policy is sent as asked: the document as faxed
// holds the cover fields and the header on every page (read back with
// pdftotext), its pages are images, its report and its signed receipt tell
// the outcome, and the receipt verifies with faxhub's JWKS until a byte
// changes.
func TestFaxOptionsOverREST(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	p := h.env.Principal(t, key)

	h.do(key, "PUT", "/api/v1/fax-settings", map[string]any{
		"timeZone": "Europe/Zurich", "header": "ACME Legal",
		"sender": map[string]any{"name": "Jane Doe", "company": "ACME Legal LLP", "phone": "+1 212 555 0199"},
	}, nil).status(http.StatusOK)

	var f faxes.Fax
	h.do(key, "POST", "/api/v1/faxes", map[string]any{
		"to": deliverable, "uploadToken": h.env.Upload(t, p, 2), "resolution": "fine",
		"coverPage": map[string]any{"recipientName": "Dr. Ada Park", "recipientCompany": "Zürich Klinik", "subject": "Referral", "message": "Two pages follow.\nThank you."},
		"retry":     map[string]any{"attempts": 4, "delayMinutes": 2},
	}, map[string]string{"Idempotency-Key": "opt-1"}).status(http.StatusOK).decode(&f)
	cp := f.Options.CoverPage
	if !f.Cover || cp == nil || cp.SenderName != "Jane Doe" || cp.RecipientName != "Dr. Ada Park" || f.Options.Resolution != faxes.ResolutionFine ||
		f.Options.Retry == nil || f.Options.Retry.Attempts != 4 || f.CoverText != "Two pages follow.\nThank you." {
		t.Fatalf("sent fax %+v cover %+v", f, cp)
	}
	h.env.DrainQueue(t)
	h.do(key, "GET", "/api/v1/faxes/"+f.ID, nil, nil).status(http.StatusOK).decode(&f)
	if f.Status != faxes.Delivered || f.FaxedPages != 3 || len(f.FaxedSHA256) != 64 || f.Pages != 2 || f.PagesSent != 2 {
		t.Fatalf("delivered fax %+v", f)
	}

	var doc faxes.Files
	h.do(key, "GET", "/api/v1/faxes/"+f.ID+"/document", nil, nil).status(http.StatusOK).decode(&doc)
	if doc.Pages != 3 || doc.SHA256 != f.FaxedSHA256 || len(doc.PageImages) != 3 {
		t.Fatalf("document as faxed %+v", doc)
	}
	pdf := h.fetch(doc.URL)
	if pdf.code != http.StatusOK || pdf.header.Get("Content-Type") != "application/pdf" {
		t.Fatalf("faxed PDF: %d %s", pdf.code, pdf.body)
	}
	text := pdfText(t, pdf.body)
	for _, want := range []string{"Dr. Ada Park", "Zürich Klinik", "Jane Doe", "ACME Legal LLP", "Referral", "Two pages follow.", "ACME Legal", "Page 1/3", "Page 3/3", "CET"} {
		if !strings.Contains(text, want) {
			t.Errorf("the document as faxed lacks %q:\n%s", want, text)
		}
	}
	img := h.fetch(doc.PageImages[0])
	if img.code != http.StatusOK || img.header.Get("Content-Type") != "image/png" {
		t.Fatalf("page image: %d %s", img.code, img.body)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img.body)); err != nil || cfg.Width != faxes.PageImageWidth {
		t.Fatalf("page image: %+v %v", cfg, err)
	}
	h.fetch(strings.Replace(doc.PageImages[0], "/pages/1", "/pages/4", 1)).problem(http.StatusNotFound, faxes.CodePageOutOfRange)
	h.fetch(doc.URL+"x").problem(http.StatusNotFound, faxes.CodeFileLink)

	var rl faxes.ReportLink
	h.do(key, "GET", "/api/v1/faxes/"+f.ID+"/report", nil, nil).status(http.StatusOK).decode(&rl)
	rep := h.fetch(rl.URL)
	if rep.code != http.StatusOK {
		t.Fatalf("report: %d %s", rep.code, rep.body)
	}
	repText := pdfText(t, rep.body)
	for _, want := range []string{f.ID, "DELIVERED", "3 sent of 3", "fine", f.FaxedSHA256[:32]} {
		if !strings.Contains(repText, want) {
			t.Errorf("the report lacks %q:\n%s", want, repText)
		}
	}

	var sr faxes.SignedReceipt
	h.do(key, "GET", "/api/v1/faxes/"+f.ID+"/receipt", nil, nil).status(http.StatusOK).decode(&sr)
	jwks, err := h.env.App.OAuth.JWKS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	claims, err := receipts.Verify(sr.Receipt, jwks)
	if err != nil {
		t.Fatalf("receipt: %v", err)
	}
	if claims.Subject != f.ID || claims.To != deliverable || claims.DocumentSHA256 != f.FaxedSHA256 || claims.Outcome != "delivered" ||
		claims.Pages != 3 || claims.PagesSent != 3 || claims.Resolution != "fine" || claims.Mode != "test" || sr.JWKSURI == "" {
		t.Fatalf("receipt claims %+v (%s)", claims, sr.JWKSURI)
	}
	set, err := json.Marshal(jwks)
	if err != nil {
		t.Fatal(err)
	}
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, set, 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.VerifyReceiptWithNodeJose(t, sr.Receipt, jwksFile, h.env.App.OAuth.Issuer())
	parts := strings.Split(sr.Receipt, ".")
	payload := []byte(parts[1])
	payload[10] ^= 1
	if _, err := receipts.Verify(parts[0]+"."+string(payload)+"."+parts[2], jwks); err == nil {
		t.Fatal("a receipt changed by one byte verified")
	}

	// Another owner sees none of it.
	keyB := h.env.KeyBTest
	for _, path := range []string{"/document", "/report", "/receipt"} {
		h.do(keyB, "GET", "/api/v1/faxes/"+f.ID+path, nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
	}

	// A fax not finished has no report or receipt yet: one scheduled an
	// hour ahead, so no worker can finish it first (the fax above is
	// delivered by the running workers, perhaps before a request could
	// see it unfinished). Last: the queue is not drained after it.
	var later faxes.Fax
	h.do(key, "POST", "/api/v1/faxes", map[string]any{
		"to": deliverable, "uploadToken": h.env.Upload(t, p, 1), "sendAt": h.env.Svc.Kernel.Now().Add(time.Hour).Format(time.RFC3339),
	}, map[string]string{"Idempotency-Key": "opt-later"}).status(http.StatusOK).decode(&later)
	if later.Status != faxes.Scheduled {
		t.Fatalf("a fax sent an hour ahead is %s", later.Status)
	}
	for _, path := range []string{"/report", "/receipt"} {
		h.do(key, "GET", "/api/v1/faxes/"+later.ID+path, nil, nil).problem(http.StatusConflict, faxes.CodeFaxNotFinished)
	}
}

// TestFaxOptionsRefused: each option's bad input is a 400 naming its
// field, and nothing is charged.
func TestFaxOptionsRefused(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	p := h.env.Principal(t, key)
	before := h.env.Credits(t, p).AvailableMicros
	now := h.env.Svc.Kernel.Now()
	for _, c := range []struct {
		name  string
		body  map[string]any
		code  string
		field string
	}{
		{"past sendAt", map[string]any{"sendAt": now.Add(-time.Minute).Format(time.RFC3339)}, core.CodeInvalidRequest, "sendAt"},
		{"sendAt 31 days ahead", map[string]any{"sendAt": now.Add(31 * 24 * time.Hour).Format(time.RFC3339)}, core.CodeInvalidRequest, "sendAt"},
		{"sendAt not RFC 3339", map[string]any{"sendAt": "tomorrow"}, core.CodeInvalidRequest, ""},
		{"51-character header", map[string]any{"header": strings.Repeat("h", 51)}, core.CodeInvalidRequest, "header"},
		{"header with a newline", map[string]any{"header": "a\nb"}, core.CodeInvalidRequest, "header"},
		{"6 attempts", map[string]any{"retry": map[string]any{"attempts": 6, "delayMinutes": 5}}, core.CodeInvalidRequest, "retry.attempts"},
		{"no delay", map[string]any{"retry": map[string]any{"attempts": 2, "delayMinutes": 0}}, core.CodeInvalidRequest, "retry.delayMinutes"},
		{"31-minute delay", map[string]any{"retry": map[string]any{"attempts": 2, "delayMinutes": 31}}, core.CodeInvalidRequest, "retry.delayMinutes"},
		{"resolution", map[string]any{"resolution": "ultra"}, core.CodeInvalidRequest, "resolution"},
		{"unknown cover field", map[string]any{"coverPage": map[string]any{"recipient": "x"}}, core.CodeInvalidRequest, ""},
		{"unknown field", map[string]any{"coverpage": map[string]any{}}, core.CodeInvalidRequest, ""},
		{"undrawable subject", map[string]any{"coverPage": map[string]any{"subject": "漢字"}}, faxes.CodeUndrawableCharacter, "coverPage.subject"},
		{"emoji message", map[string]any{"coverPage": map[string]any{"message": "hi 🙂"}}, faxes.CodeUndrawableCharacter, "coverPage.message"},
		{"101-character name", map[string]any{"coverPage": map[string]any{"recipientName": strings.Repeat("n", 101)}}, core.CodeInvalidRequest, "coverPage.recipientName"},
		{"two messages", map[string]any{"cover": true, "coverText": "a", "coverPage": map[string]any{"message": "b"}}, core.CodeInvalidRequest, "coverText"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"to": deliverable, "uploadToken": h.env.Upload(t, p, 1)}
			for k, v := range c.body {
				body[k] = v
			}
			pr := h.do(key, "POST", "/api/v1/faxes", body, map[string]string{"Idempotency-Key": "bad-" + c.name}).problem(http.StatusBadRequest, c.code)
			if c.field != "" && pr["field"] != c.field {
				t.Errorf("field %v, want %s: %v", pr["field"], c.field, pr)
			}
			h.do(key, "POST", "/api/v1/previews", body, nil).problem(http.StatusBadRequest, c.code)
		})
	}
	if after := h.env.Credits(t, p).AvailableMicros; after != before {
		t.Fatalf("refused sends charged %d", before-after)
	}
	for _, bad := range []map[string]any{{"timeZone": "Mars/Olympus"}, {"timeZone": "Local"}, {"header": strings.Repeat("x", 51)}, {"sender": map[string]any{"name": "🙂"}}} {
		h.do(key, "PUT", "/api/v1/fax-settings", bad, nil).status(http.StatusBadRequest)
	}
}

// TestScheduledFax: a fax with sendAt is held and scheduled; canceled
// before its time, it releases the hold and never sends.
func TestScheduledFax(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	p := h.env.Principal(t, key)
	before := h.env.Credits(t, p).AvailableMicros
	at := h.env.Svc.Kernel.Now().Add(2 * time.Hour).Truncate(time.Second)
	var f faxes.Fax
	h.do(key, "POST", "/api/v1/faxes", map[string]any{"to": deliverable, "uploadToken": h.env.Upload(t, p, 1), "sendAt": at.Format(time.RFC3339)},
		map[string]string{"Idempotency-Key": "sched-1"}).status(http.StatusOK).decode(&f)
	if f.Status != faxes.Scheduled || f.Options.SendAt == nil || !f.Options.SendAt.Equal(at) || f.NextAttemptAt == nil || !f.NextAttemptAt.Equal(at) {
		t.Fatalf("scheduled fax %+v", f)
	}
	if held := before - h.env.Credits(t, p).AvailableMicros; held != f.PriceMicros && held <= 0 {
		t.Fatalf("held %d for a fax of %s", held, f.Price)
	}
	var page struct{ Data []faxes.Fax }
	h.do(key, "GET", "/api/v1/faxes?status=scheduled", nil, nil).status(http.StatusOK).decode(&page)
	if len(page.Data) != 1 || page.Data[0].ID != f.ID {
		t.Fatalf("scheduled list %+v", page.Data)
	}
	h.do(key, "GET", "/api/v1/faxes/"+f.ID+"/document", nil, nil).problem(http.StatusConflict, faxes.CodeNotYetFaxed)
	h.do(key, "POST", "/api/v1/faxes/"+f.ID+"/cancel", nil, nil).status(http.StatusOK).decode(&f)
	if f.Status != faxes.Canceled {
		t.Fatalf("canceled %+v", f)
	}
	if after := h.env.Credits(t, p).AvailableMicros; after != before {
		t.Fatalf("the hold was not released: %d before, %d after", before, after)
	}
	// Its job, run at its time, finds it canceled and sends nothing.
	if err := h.env.Svc.Faxes.Deliver(t.Context(), f.ID); err != nil {
		t.Fatal(err)
	}
	if atts, _ := h.env.Svc.Faxes.Attempts(t.Context(), p, f.ID); len(atts) != 0 {
		t.Fatalf("a canceled scheduled fax was attempted: %+v", atts)
	}
}

// TestPreviewOverREST: the pages as they will be faxed, before sending,
// with the price; nothing is held.
func TestPreviewOverREST(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	p := h.env.Principal(t, key)
	before := h.env.Credits(t, p).AvailableMicros
	var pv faxes.Preview
	h.do(key, "POST", "/api/v1/previews", map[string]any{
		"to": deliverable, "uploadToken": h.env.Upload(t, p, 2), "header": "Preview Co",
		"coverPage": map[string]any{"recipientName": "Ελλάδα Москва"},
	}, nil).status(http.StatusOK).decode(&pv)
	if pv.Files.Pages != 3 || len(pv.Files.PageImages) != 3 || pv.Quote == nil || !pv.Quote.Cover || pv.Quote.BilledPages != 3 {
		t.Fatalf("preview %+v quote %+v", pv, pv.Quote)
	}
	text := pdfText(t, h.fetch(pv.Files.URL).body)
	for _, want := range []string{"Ελλάδα Москва", "Preview Co", "Page 2/3", "+1 212"} {
		if !strings.Contains(text, want) {
			t.Errorf("preview lacks %q:\n%s", want, text)
		}
	}
	if r := h.fetch(pv.Files.PageImages[2]); r.code != http.StatusOK {
		t.Fatalf("preview page 3: %d %s", r.code, r.body)
	}
	if after := h.env.Credits(t, p).AvailableMicros; after != before {
		t.Fatalf("a preview held %d", before-after)
	}
	// Without a destination: the pages, no price.
	var bare faxes.Preview
	h.do(key, "POST", "/api/v1/previews", map[string]any{"uploadToken": h.env.Upload(t, p, 1)}, nil).status(http.StatusOK).decode(&bare)
	if bare.Quote != nil || bare.Files.Pages != 1 {
		t.Fatalf("preview without to %+v", bare)
	}
}

// TestPageImageWithoutRenderer: a server without poppler's pdftoppm still
// serves the PDF, and answers a page image with 503
// page_images_unavailable (its lack, not the caller's mistake), never a
// 500.
func TestPageImageWithoutRenderer(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	var f faxes.Fax
	h.do(key, "POST", "/api/v1/faxes", map[string]any{"to": deliverable, "uploadToken": h.env.Upload(t, h.env.Principal(t, key), 1)},
		map[string]string{"Idempotency-Key": "no-renderer"}).status(http.StatusOK).decode(&f)
	h.env.DrainQueue(t)
	var doc faxes.Files
	h.do(key, "GET", "/api/v1/faxes/"+f.ID+"/document", nil, nil).status(http.StatusOK).decode(&doc)
	t.Setenv("PATH", t.TempDir()) // the renderer is looked up per page
	h.fetch(doc.PageImages[0]).problem(http.StatusServiceUnavailable, faxes.CodePageImagesUnavailable)
	if pdf := h.fetch(doc.URL); pdf.code != http.StatusOK {
		t.Fatalf("the PDF without the renderer: %d %s", pdf.code, pdf.body)
	}
}
