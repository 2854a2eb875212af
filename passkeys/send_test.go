package passkeys_test

import (
	"bytes"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// uploadDoc posts the send page's upload form; csrf "" leaves the token
// out, accept is sent as the Accept header when set.
func (b *browser) uploadDoc(csrf string, file []byte, accept string) reply {
	b.h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if csrf != "" {
		_ = mw.WriteField("csrf", csrf)
	}
	fw, _ := mw.CreateFormFile("file", "letter.pdf")
	_, _ = fw.Write(file)
	_ = mw.Close()
	hdr := http.Header{}
	if accept != "" {
		hdr.Set("Accept", accept)
	}
	return b.do("POST", "/console/send/upload?mode=test", &body, mw.FormDataContentType(), hdr)
}

var (
	idemField      = regexp.MustCompile(`name="idem" value="([^"]+)"`)
	previewedField = regexp.MustCompile(`name="previewed" value="([^"]*)"`)
	pageImage      = regexp.MustCompile(`<img src="([^"]*/api/v1/preview-files/[^"]+)"`)
	faxLocation    = regexp.MustCompile(`^/console/faxes/(fax_[a-z0-9]+)\?mode=test$`)
)

// sendValues is the send form of a page: its hidden fields and to.
func sendValues(t *testing.T, page reply, csrf, doc, to string) url.Values {
	t.Helper()
	m := idemField.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no idempotency key on the page (%d)", page.status)
	}
	v := url.Values{"csrf": {csrf}, "mode": {"test"}, "idem": {m[1]}, "document": {doc}, "to": {to}, "resolution": {"standard"}, "when": {"now"}}
	if p := previewedField.FindStringSubmatch(page.body); p != nil {
		v.Set("previewed", html.UnescapeString(p[1]))
	}
	return v
}

func (h *harness) faxCount(owner string) int {
	h.t.Helper()
	page, err := h.env.Svc.Faxes.List(h.t.Context(), core.OwnerPrincipal(owner, core.ModeTest), faxes.ListRequest{Limit: 100})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(page.Data)
}

func (h *harness) available(owner string) int64 {
	h.t.Helper()
	b, err := h.env.Svc.Credits.Balance(h.t.Context(), owner, core.ModeTest)
	if err != nil {
		h.t.Fatal(err)
	}
	return b.AvailableMicros
}

// TestSendPage: an owner uploads a document on the send page, previews
// its pages and price, and sends it with credits; a double submit is one
// fax and one charge.
func TestSendPage(t *testing.T) {
	h := newHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	csrf := ada.csrf()
	if _, err := h.env.Svc.Credits.Grant(t.Context(), owner, core.ModeTest, 5*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}

	// The dashboard and the navigation lead to the page.
	dash := ada.get("/console?mode=test")
	for _, want := range []string{`href="/console/send"`, `href="/console/send?mode=test"`} {
		if !strings.Contains(dash.body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
	page := ada.get("/console/send?mode=test")
	wantStatus(t, "send page", page, 200)
	for _, want := range []string{`aria-current="page">Send a fax`, `enctype="multipart/form-data"`, `<progress`, `/console/static/send.js`, `type="datetime-local"`, "Date and time, UTC", "No document yet"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("send page lacks %s", want)
		}
	}

	// Upload: PRG back to the form with the document.
	loc := wantRedirect(t, "upload", ada.uploadDoc(csrf, testenv.MinimalPDF(2), ""), "/console/send?mode=test&document=doc_")
	docID := strings.TrimPrefix(loc, "/console/send?mode=test&document=")
	page = ada.get(loc)
	if !strings.Contains(page.body, "2 pages, PDF") || !strings.Contains(page.body, `name="document" value="`+docID+`"`) {
		t.Fatalf("the form lacks the uploaded document:\n%s", page.body)
	}
	// The script's upload gets JSON.
	r := ada.uploadDoc(csrf, testenv.MinimalPDF(1), "application/json")
	wantStatus(t, "JSON upload", r, 200)
	if j := r.json(t); !strings.HasPrefix(j["location"].(string), "/console/send?mode=test&document=doc_") || j["summary"] != "1 page, PDF, "+j["summary"].(string)[len("1 page, PDF, "):] {
		t.Fatalf("JSON upload: %s", r.body)
	}

	// A send never previewed is previewed, not sent.
	v := sendValues(t, page, csrf, docID, "+12125550100")
	v.Set("cover", "on")
	v.Set("subject", "Two pages")
	r = ada.form("/console/send", v)
	wantStatus(t, "send before preview", r, 200)
	if !strings.Contains(r.body, "was not previewed") || h.faxCount(owner) != 0 {
		t.Fatalf("a send without a preview: %d faxes\n%s", h.faxCount(owner), r.body)
	}

	// The preview: cover page + 2 pages, their images, the price.
	r = ada.form("/console/send/preview", v)
	wantStatus(t, "preview", r, 200)
	imgs := pageImage.FindAllStringSubmatch(r.body, -1)
	if len(imgs) != 3 {
		t.Fatalf("%d page images, want 3:\n%s", len(imgs), r.body)
	}
	for _, want := range []string{"Send fax for $0.21", "+12125550100: United States (US), landline or mobile", "3 (a cover page and 2)"} {
		if !strings.Contains(html.UnescapeString(r.body), want) {
			t.Errorf("preview lacks %q", want)
		}
	}
	// The image is the preview's signed API link (on faxhub.test, which
	// this harness does not serve): core answers it.
	link, err := url.Parse(html.UnescapeString(imgs[0][1]))
	if err != nil {
		t.Fatal(err)
	}
	token, _, _ := strings.Cut(strings.TrimPrefix(link.Path, core.LinkPreviewFile.PathPrefix()), "/")
	if require.Tool(t, "pdftoppm", "apt-get install poppler-utils, or make deps") {
		png, err := h.env.Svc.Faxes.PageImage(t.Context(), core.LinkPreviewFile, token, 1)
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Fatalf("page image of %s: %v", link, err)
		}
	}

	// Send: to the fax's page; again (a double submit): the same fax, one charge.
	before := h.available(owner)
	sv := sendValues(t, r, csrf, docID, "+12125550100")
	sv.Set("cover", "on")
	sv.Set("subject", "Two pages")
	loc = wantRedirect(t, "send", ada.form("/console/send", sv), "/console/faxes/fax_")
	m := faxLocation.FindStringSubmatch(loc)
	if m == nil {
		t.Fatalf("redirect %s", loc)
	}
	wantRedirect(t, "double submit", ada.form("/console/send", sv), loc)
	f, err := h.env.Svc.Faxes.Get(t.Context(), core.OwnerPrincipal(owner, core.ModeTest), m[1])
	if err != nil || f.To != "+12125550100" || f.DocumentID != docID || !f.Cover || f.Options.CoverPage.Subject != "Two pages" || f.Options.CoverPage.SenderName != "" && f.Options.CoverPage.SenderName != "Ada" {
		t.Fatalf("fax %+v %v", f, err)
	}
	if h.faxCount(owner) != 1 || before-h.available(owner) != f.PriceMicros || f.Price != "0.21" {
		t.Fatalf("%d faxes, charged %d for a fax of %d", h.faxCount(owner), before-h.available(owner), f.PriceMicros)
	}
	// The same form changed after the send: previewed again, and its key
	// (which sent the first fax) makes no second fax; the page then gives
	// a fresh key, with which the changed fax is sent.
	sv.Set("to", "+12125550101")
	r = ada.form("/console/send", sv)
	if h.faxCount(owner) != 1 || r.status != 200 || !strings.Contains(r.body, "changed since its preview") {
		t.Fatalf("a changed resubmit: %d, %d faxes", r.status, h.faxCount(owner))
	}
	sv = sendValues(t, r, csrf, docID, "+12125550101")
	sv.Set("cover", "on")
	sv.Set("subject", "Two pages")
	r = ada.form("/console/send", sv)
	wantStatus(t, "a used key", r, http.StatusConflict)
	if !strings.Contains(r.body, "this form has sent a fax already") || h.faxCount(owner) != 1 {
		t.Fatalf("a used key: %d faxes\n%s", h.faxCount(owner), r.body)
	}
	r = ada.form("/console/send/preview", sendValues(t, r, csrf, docID, "+12125550101"))
	wantRedirect(t, "send with the fresh key", ada.form("/console/send", sendValues(t, r, csrf, docID, "+12125550101")), "/console/faxes/fax_")
	if h.faxCount(owner) != 2 {
		t.Fatalf("%d faxes, want 2", h.faxCount(owner))
	}
}

// TestSendPageRefusals: refused numbers (as typed and on submit), the
// upload's bound and form token, a short balance, another owner's
// document: each a clear message on the form, nothing charged.
func TestSendPageRefusals(t *testing.T) {
	h := newHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	bob, _ := h.signUp("bob@example.com", "Bob")
	csrf, bobCSRF := ada.csrf(), bob.csrf()
	anon := h.browser()

	// The number check as it is typed.
	r := ada.get("/console/send/check?mode=test&to=%2B12125550100")
	wantStatus(t, "check", r, 200)
	if j := r.json(t); j["e164"] != "+12125550100" || j["country"] != "US" || j["numberType"] != "fixed_line_or_mobile" || j["perPage"] != "0.07" || j["countryName"] != "United States" {
		t.Fatalf("check: %s", r.body)
	}
	r = ada.get("/console/send/check?mode=test&to=%2B19005550123")
	wantCode(t, "premium", r, http.StatusUnprocessableEntity, core.CodePremiumDestination)
	if s, _ := r.json(t)["summary"].(string); !strings.Contains(s, "premium-rate") || !strings.Contains(s, "before anything is charged") {
		t.Fatalf("premium summary: %s", r.body)
	}
	r = ada.get("/console/send/check?mode=test&to=%2B1%20212%20555%200100")
	wantCode(t, "spaces", r, http.StatusUnprocessableEntity, core.CodeInvalidDestination)
	if s, _ := r.json(t)["summary"].(string); !strings.Contains(s, "did you mean +12125550100?") {
		t.Fatalf("no hint: %s", r.body)
	}
	wantCode(t, "bad mode", ada.get("/console/send/check?mode=staging&to=%2B12125550100"), 400, core.CodeInvalidRequest)
	wantStatus(t, "check signed out", anon.do("GET", "/console/send/check?to=%2B12125550100", nil, "", http.Header{"Accept": {"application/json"}}), 401)

	// The upload: bounded before the form token is read, then the token.
	maxFile := h.env.Svc.Config().Documents.MaxUploadBytes
	wantCode(t, "oversize body without a token", ada.uploadDoc("", bytes.Repeat([]byte("x"), int(maxFile)+32<<10), "application/json"), http.StatusRequestEntityTooLarge, documents.CodeFileTooLarge)
	wantCode(t, "a file a byte too large", ada.uploadDoc(csrf, append(testenv.MinimalPDF(1), bytes.Repeat([]byte(" "), int(maxFile))...)[:maxFile+1], "application/json"), http.StatusRequestEntityTooLarge, documents.CodeFileTooLarge)
	wantCode(t, "upload without a token", ada.uploadDoc("", testenv.MinimalPDF(1), "application/json"), 403, "csrf_refused")
	wantCode(t, "upload with another's token", ada.uploadDoc(bobCSRF, testenv.MinimalPDF(1), "application/json"), 403, "csrf_refused")
	wantStatus(t, "upload signed out", anon.uploadDoc(csrf, testenv.MinimalPDF(1), ""), 401)
	wantCode(t, "not a document", ada.uploadDoc(csrf, []byte("just some text"), "application/json"), http.StatusUnsupportedMediaType, documents.CodeUnsupportedType)
	loc := wantRedirect(t, "upload", ada.uploadDoc(csrf, testenv.MinimalPDF(1), ""), "/console/send?mode=test&document=doc_")
	docID := strings.TrimPrefix(loc, "/console/send?mode=test&document=")
	page := ada.get(loc)

	// A premium-rate number on submit: its explanation beside the field.
	v := sendValues(t, page, csrf, docID, "+19005550123")
	r = ada.form("/console/send/preview", v)
	wantStatus(t, "premium preview", r, http.StatusUnprocessableEntity)
	body := html.UnescapeString(r.body)
	if !strings.Contains(body, "premium-rate number in US") || !strings.Contains(body, "before anything is charged") || !strings.Contains(body, `aria-invalid="true"`) || !strings.Contains(body, `value="+19005550123"`) {
		t.Fatalf("premium refusal not on the form:\n%s", r.body)
	}
	r = ada.form("/console/send/preview", sendValues(t, page, csrf, docID, "12125550100"))
	wantStatus(t, "invalid preview", r, http.StatusUnprocessableEntity)
	if !strings.Contains(html.UnescapeString(r.body), "not in E.164 format") {
		t.Fatalf("invalid number not explained:\n%s", r.body)
	}
	wantStatus(t, "preview without a token", ada.form("/console/send/preview", url.Values{"to": {"+12125550100"}, "document": {docID}}), 403)

	// A short balance (no credits): the preview says so with the way to
	// buy; the send is refused with it and charges nothing.
	r = ada.form("/console/send/preview", sendValues(t, page, csrf, docID, "+12125550100"))
	wantStatus(t, "preview", r, 200)
	if !strings.Contains(r.body, "does not cover this fax") || !strings.Contains(r.body, `href="/console?mode=test#credits-h"`) {
		t.Fatalf("short balance not said:\n%s", r.body)
	}
	r = ada.form("/console/send", sendValues(t, r, csrf, docID, "+12125550100"))
	wantStatus(t, "send short", r, http.StatusPaymentRequired)
	if !strings.Contains(r.body, "Buy test credits") || h.faxCount(owner) != 0 {
		t.Fatalf("short send: %d faxes\n%s", h.faxCount(owner), r.body)
	}

	// Another owner's document: refused, on the page and on send.
	bobPage := bob.get("/console/send?mode=test&document=" + docID)
	wantStatus(t, "another's document", bobPage, http.StatusNotFound)
	if !strings.Contains(bobPage.body, "upload the document again") {
		t.Fatalf("another's document:\n%s", bobPage.body)
	}
	r = bob.form("/console/send/preview", sendValues(t, bobPage, bobCSRF, docID, "+12125550100"))
	wantStatus(t, "preview of another's document", r, http.StatusNotFound)
	if h.faxCount(h.ownerID("bob@example.com")) != 0 || h.faxCount(owner) != 0 {
		t.Fatal("a fax was made")
	}
	if h.available(owner) != 0 {
		t.Fatalf("balance moved: %d", h.available(owner))
	}
}

// TestSendPageSchedulesInTheOwnersZone: a datetime-local is read in the
// owner's fax settings time zone, which the page names.
func TestSendPageSchedulesInTheOwnersZone(t *testing.T) {
	h := newHarness(t)
	ada, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	csrf := ada.csrf()
	p := core.OwnerPrincipal(owner, core.ModeTest)
	if _, err := h.env.Svc.Faxes.PutSettings(t.Context(), p, faxes.Settings{TimeZone: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.env.Svc.Credits.Grant(t.Context(), owner, core.ModeTest, 5*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	day := h.env.Svc.Config().Now().In(ny).AddDate(0, 0, 2)
	want := time.Date(day.Year(), day.Month(), day.Day(), 9, 30, 0, 0, ny)

	loc := wantRedirect(t, "upload", ada.uploadDoc(csrf, testenv.MinimalPDF(1), ""), "/console/send?mode=test&document=doc_")
	docID := strings.TrimPrefix(loc, "/console/send?mode=test&document=")
	page := ada.get(loc)
	if !strings.Contains(page.body, "Date and time, America/New_York") {
		t.Fatal("the page does not name the zone")
	}
	v := sendValues(t, page, csrf, docID, "+12125550100")
	v.Set("when", "later")
	v.Set("sendAt", want.Format("2006-01-02T15:04"))
	r := ada.form("/console/send/preview", v)
	wantStatus(t, "preview", r, 200)
	v = sendValues(t, r, csrf, docID, "+12125550100")
	v.Set("when", "later")
	v.Set("sendAt", want.Format("2006-01-02T15:04"))
	m := faxLocation.FindStringSubmatch(wantRedirect(t, "send", ada.form("/console/send", v), "/console/faxes/fax_"))
	f, err := h.env.Svc.Faxes.Get(t.Context(), p, m[1])
	if err != nil || f.Status != faxes.Scheduled || f.Options.SendAt == nil || !f.Options.SendAt.Equal(want) {
		t.Fatalf("fax %+v (sendAt %v, want %v) %v", f, f.Options.SendAt, want, err)
	}

	// In the past, or "later" without a time: the field says why.
	v.Set("idem", "console-another")
	v.Set("sendAt", h.env.Svc.Config().Now().In(ny).Add(-time.Hour).Format("2006-01-02T15:04"))
	r = ada.form("/console/send/preview", v)
	wantStatus(t, "past", r, 400)
	if !strings.Contains(r.body, `id="send-sendAt-error"`) || !strings.Contains(r.body, "in the past") {
		t.Fatalf("past sendAt:\n%s", r.body)
	}
	v.Set("sendAt", "")
	r = ada.form("/console/send/preview", v)
	wantStatus(t, "no time", r, 400)
	if !strings.Contains(r.body, "choose the date and time") {
		t.Fatalf("no sendAt:\n%s", r.body)
	}
}
