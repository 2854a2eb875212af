// End-to-end tests of the REST adapter against a fully wired service
// (internal/testenv). They sit behind the e2e build tag until the store,
// converter and queue packages testenv wires have landed; then the tag can
// go.
package rest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest"
)

const (
	// deliverable is a valid NANP number the simulated provider delivers to
	// (docs/test-numbers.md lists the ones that fail in various ways).
	deliverable = "+12125550100"
	premium     = "+19005550123"
	invalid     = "+1555"
)

type harness struct {
	t    *testing.T
	env  *testenv.Env
	base string
	// codes is the Problem code enum of the served /openapi.json: every
	// problem a test sees must be one of them.
	codes map[string]bool
}

func newHarness(t *testing.T, opts ...testenv.Option) *harness {
	return newHarnessWith(t, rest.Options{}, opts...)
}

func newHarnessWith(t *testing.T, ro rest.Options, opts ...testenv.Option) *harness {
	t.Helper()
	env := testenv.New(t, opts...)
	srv := env.Serve(routed(rest.New(env.Svc, ro, nil), env.Svc.Config()))
	h := &harness{t: t, env: env, base: srv.URL, codes: map[string]bool{}}
	res := h.do("", "GET", "/openapi.json", nil, nil)
	res.status(http.StatusOK)
	var doc struct {
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Code struct{ Enum []string }
					}
				}
			}
		}
	}
	res.decode(&doc)
	for _, c := range doc.Components.Schemas.Problem.Properties.Code.Enum {
		h.codes[c] = true
	}
	if len(h.codes) == 0 {
		t.Fatal("no code enum in /openapi.json")
	}
	return h
}

type result struct {
	h      *harness
	what   string
	code   int
	header http.Header
	body   []byte
}

// do sends a request; body is JSON-encoded unless it is []byte or an
// io.Reader (sent as is, which is how the upload PUT is exercised).
func (h *harness) do(key, method, path string, body any, header map[string]string) *result {
	h.t.Helper()
	var rd io.Reader
	isJSON := false
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		js, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd, isJSON = bytes.NewReader(js), true
	}
	req, err := http.NewRequestWithContext(context.Background(), method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if isJSON {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return &result{h: h, what: method + " " + path, code: resp.StatusCode, header: resp.Header, body: b}
}

func (r *result) status(want int) *result {
	r.h.t.Helper()
	if r.code != want {
		r.h.t.Fatalf("%s: status %d, want %d: %s", r.what, r.code, want, r.body)
	}
	if strings.HasPrefix(r.what, "GET /api/") || strings.HasPrefix(r.what, "POST /api/") || strings.HasPrefix(r.what, "PUT /api/") {
		if cc := r.header.Get("Cache-Control"); cc != "no-store" {
			r.h.t.Errorf("%s: Cache-Control %q", r.what, cc)
		}
	}
	return r
}

func (r *result) decode(v any) {
	r.h.t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.h.t.Fatalf("%s: decode %T: %v: %s", r.what, v, err, r.body)
	}
}

// problem asserts a problem+json answer with status and code.
func (r *result) problem(status int, code string) map[string]any {
	r.h.t.Helper()
	r.status(status)
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		r.h.t.Fatalf("%s: Content-Type %q", r.what, ct)
	}
	var p map[string]any
	r.decode(&p)
	if p["code"] != code {
		r.h.t.Fatalf("%s: code %v, want %s: %s", r.what, p["code"], code, r.body)
	}
	if !r.h.codes[code] {
		r.h.t.Errorf("%s: code %s is not in the OpenAPI enum", r.what, code)
	}
	return p
}

type uploaded struct {
	Stored      bool               `json:"stored"`
	UploadToken string             `json:"uploadToken"`
	Document    documents.Document `json:"document"`
}

// createUpload returns the capability with its uploadUrl pointed at the
// test server (the service builds it from its configured API URL).
func (h *harness) createUpload(key string, body any) documents.Capability {
	h.t.Helper()
	var c documents.Capability
	h.do(key, "POST", "/api/v1/uploads", body, nil).status(http.StatusOK).decode(&c)
	prefix := h.env.Svc.Config().APIURL
	if !strings.HasPrefix(c.UploadURL, prefix+"/api/v1/uploads/") || !strings.HasSuffix(c.UploadURL, "/"+c.UploadToken) {
		h.t.Fatalf("uploadUrl %q does not name the token under %s", c.UploadURL, prefix)
	}
	c.UploadURL = strings.TrimPrefix(c.UploadURL, prefix)
	return c
}

// put uploads body with no Authorization header.
func (h *harness) put(path string, body any) *result {
	h.t.Helper()
	return h.do("", "PUT", path, body, map[string]string{"Content-Type": "application/octet-stream"})
}

func (h *harness) upload(key string, file []byte) uploaded {
	h.t.Helper()
	c := h.createUpload(key, nil)
	var u uploaded
	h.put(c.UploadURL, file).status(http.StatusOK).decode(&u)
	return u
}

func (h *harness) send(key, idem string, body any) *result {
	h.t.Helper()
	hdr := map[string]string{}
	if idem != "" {
		hdr["Idempotency-Key"] = idem
	}
	return h.do(key, "POST", "/api/v1/faxes", body, hdr)
}

func (h *harness) sendOK(key string, body any) faxes.Fax {
	h.t.Helper()
	var o faxes.Fax
	h.send(key, core.RandomString(8), body).status(http.StatusOK).decode(&o)
	return o
}

func (h *harness) credits(key, query string) credits.Account {
	h.t.Helper()
	var c credits.Account
	h.do(key, "GET", "/api/v1/credits"+query, nil, nil).status(http.StatusOK).decode(&c)
	return c
}

func (h *harness) list(key, query string) core.Page[faxes.Fax] {
	h.t.Helper()
	var p core.Page[faxes.Fax]
	h.do(key, "GET", "/api/v1/faxes"+query, nil, nil).status(http.StatusOK).decode(&p)
	return p
}

func TestE2EUploadSendDeliver(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	pdf := testenv.MinimalPDF(2)

	c := h.createUpload(key, nil)
	if c.Method != "PUT" || c.Key == "" || c.MaxBytes != h.env.Svc.Config().Documents.MaxUploadBytes || !c.ExpiresAt.After(time.Now()) {
		t.Fatalf("capability %+v", c)
	}
	// No Authorization header, and a Content-Type that says nothing: the
	// token is the credential and the type is read from the bytes.
	res := h.put(c.UploadURL, pdf).status(http.StatusOK)
	for _, secret := range []string{"sourceKey", "pdfKey", "ownerId", h.env.OwnerA.ID, "source_key"} {
		if bytes.Contains(res.body, []byte(secret)) {
			t.Errorf("upload response leaks %q: %s", secret, res.body)
		}
	}
	var u uploaded
	res.decode(&u)
	sum := sha256.Sum256(pdf)
	d := u.Document
	if !u.Stored || u.UploadToken != c.UploadToken || d.Pages != 2 || d.SourceType != "application/pdf" ||
		d.SourceBytes != int64(len(pdf)) || d.SHA256 != hex.EncodeToString(sum[:]) || d.Mode != core.ModeTest || d.ID == "" {
		t.Fatalf("upload result %s", res.body)
	}

	var q core.Quote
	h.do(key, "POST", "/api/v1/quote", map[string]any{"to": deliverable, "pages": 2}, nil).status(http.StatusOK).decode(&q)

	before := h.credits(key, "")
	res = h.send(key, "first-fax", faxes.SendRequest{To: deliverable, UploadToken: c.UploadToken}).status(http.StatusOK)
	if res.header.Get("Idempotent-Replayed") != "" {
		t.Error("a first request was marked replayed")
	}
	var o faxes.Fax
	res.decode(&o)
	if o.Status != faxes.Queued || o.To != deliverable || o.Pages != 2 || o.Price != q.Amount || o.PaymentMethod != faxes.PayCredits || o.DocumentID != d.ID {
		t.Fatalf("queued fax %s", res.body)
	}

	h.env.DrainQueue(t)

	var got faxes.Fax
	h.do(key, "GET", "/api/v1/faxes/"+o.ID, nil, nil).status(http.StatusOK).decode(&got)
	if got.Status != faxes.Delivered || got.PagesSent != 2 || got.CompletedAt == nil || got.LatestAttempt == nil ||
		got.LatestAttempt.Status != faxes.AttemptDelivered || got.LatestAttempt.Number != 1 {
		t.Fatalf("delivered fax %+v (attempt %+v)", got, got.LatestAttempt)
	}
	var attempts struct{ Data []faxes.Attempt }
	h.do(key, "GET", "/api/v1/faxes/"+o.ID+"/attempts", nil, nil).status(http.StatusOK).decode(&attempts)
	if len(attempts.Data) != 1 || attempts.Data[0].ID != got.LatestAttempt.ID {
		t.Fatalf("attempts %+v", attempts.Data)
	}

	after := h.credits(key, "")
	if after.HeldCents != 0 || before.AvailableCents-after.AvailableCents != o.PriceCents {
		t.Fatalf("balance before %+v after %+v, price %d cents", before.Balance, after.Balance, o.PriceCents)
	}
	kinds := map[credits.LedgerKind]bool{}
	for _, e := range after.Ledger {
		if e.FaxID != nil && *e.FaxID == o.ID {
			kinds[e.Kind] = true
		}
	}
	if !kinds[credits.LedgerHold] || !kinds[credits.LedgerCapture] || kinds[credits.LedgerRelease] {
		t.Fatalf("ledger for %s has %v, want hold and capture", o.ID, kinds)
	}
}

func TestE2EIdempotency(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	body := faxes.SendRequest{To: deliverable, DocumentID: doc.ID}

	h.send(key, "", body).problem(http.StatusBadRequest, core.CodeIdempotencyKeyRequired)

	var first, again faxes.Fax
	h.send(key, "k-1", body).status(http.StatusOK).decode(&first)
	res := h.send(key, "k-1", body).status(http.StatusOK)
	res.decode(&again)
	if again.ID != first.ID || res.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay gave %s (Idempotent-Replayed %q), want %s", again.ID, res.header.Get("Idempotent-Replayed"), first.ID)
	}
	h.send(key, "k-1", faxes.SendRequest{To: deliverable, DocumentID: doc.ID, Cover: true}).problem(http.StatusConflict, core.CodeIdempotencyConflict)

	// Concurrent duplicates: one fax, one hold.
	var wg sync.WaitGroup
	ids := make([]string, 6)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o faxes.Fax
			if r := h.send(key, "k-2", body); r.code == http.StatusOK {
				r.decode(&o)
			}
			ids[i] = o.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent duplicates gave %v", ids)
		}
	}
	if n := len(h.list(key, "").Data); n != 2 {
		t.Fatalf("%d faxes, want 2", n)
	}
	holds := 0
	for _, e := range h.credits(key, "?limit=100").Ledger {
		if e.Kind == credits.LedgerHold {
			holds++
		}
	}
	if holds != 2 {
		t.Fatalf("%d holds, want 2", holds)
	}
}

func TestE2EInsufficientCredits(t *testing.T) {
	h := newHarness(t, testenv.WithoutCredits())
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	p := h.send(key, "k", faxes.SendRequest{To: deliverable, DocumentID: doc.ID}).problem(http.StatusPaymentRequired, credits.CodeInsufficientCredits)
	if p["price"] == nil || p["balance"] == nil || p["checkoutPath"] != "/api/v1/credits/checkout" {
		t.Errorf("402 details %v", p)
	}
	if n := len(h.list(key, "").Data); n != 0 {
		t.Fatalf("%d faxes after a refused send", n)
	}
	if c := h.credits(key, ""); len(c.Ledger) != 0 || c.AvailableCents != 0 {
		t.Fatalf("credits after refusal %+v", c)
	}
}

func TestE2ERateLimited(t *testing.T) {
	h := newHarness(t, testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Interval: time.Hour, Burst: 3}) }))
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	// The limit counts faxes created (it is charged in the fax's
	// transaction): a refused request does not use up the allowance.
	h.send(key, "bad", faxes.SendRequest{To: invalid, DocumentID: doc.ID}).problem(http.StatusUnprocessableEntity, core.CodeInvalidDestination)
	for i := range 3 {
		h.send(key, fmt.Sprint("k", i), faxes.SendRequest{To: deliverable, DocumentID: doc.ID}).status(http.StatusOK)
	}
	res := h.send(key, "k-last", faxes.SendRequest{To: deliverable, DocumentID: doc.ID})
	res.problem(http.StatusTooManyRequests, core.CodeRateLimited)
	if n, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q", res.header.Get("Retry-After"))
	}
	// Per owner: B is not slowed down by A.
	docB := h.upload(h.env.KeyBTest, testenv.MinimalPDF(1)).Document
	h.send(h.env.KeyBTest, "k", faxes.SendRequest{To: deliverable, DocumentID: docB.ID}).status(http.StatusOK)
}

func TestE2EUploadErrors(t *testing.T) {
	const serverMax = 4096
	h := newHarness(t, testenv.WithConfig(func(c *services.Config) { c.Documents.MaxUploadBytes = serverMax }))
	key := h.env.KeyATest
	pdf := testenv.MinimalPDF(1)

	t.Run("create", func(t *testing.T) {
		h.do(key, "POST", "/api/v1/uploads", map[string]any{"maxBytes": serverMax + 1}, nil).problem(http.StatusRequestEntityTooLarge, documents.CodeFileTooLarge)
		h.do(key, "POST", "/api/v1/uploads", map[string]any{"contentType": "text/plain"}, nil).problem(http.StatusUnsupportedMediaType, documents.CodeUnsupportedType)
		h.do(key, "POST", "/api/v1/uploads", map[string]any{"maxbytes": 1, "extra": true}, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
		h.do("", "POST", "/api/v1/uploads", nil, nil).problem(http.StatusUnauthorized, core.CodeUnauthenticated)
	})
	t.Run("too large declared", func(t *testing.T) {
		c := h.createUpload(key, nil)
		h.put(c.UploadURL, make([]byte, serverMax+1)).problem(http.StatusRequestEntityTooLarge, documents.CodeFileTooLarge)
	})
	t.Run("too large streamed", func(t *testing.T) {
		c := h.createUpload(key, map[string]any{"maxBytes": 100})
		// A reader of unknown length makes the client send it chunked, so
		// only the service's streaming limit can catch it.
		h.put(c.UploadURL, io.MultiReader(bytes.NewReader(pdf))).problem(http.StatusRequestEntityTooLarge, documents.CodeFileTooLarge)
	})
	t.Run("unsupported type", func(t *testing.T) {
		c := h.createUpload(key, nil)
		h.put(c.UploadURL, []byte("just some plain text, not a document")).problem(http.StatusUnsupportedMediaType, documents.CodeUnsupportedType)
	})
	t.Run("content type mismatch", func(t *testing.T) {
		c := h.createUpload(key, map[string]any{"contentType": "image/png"})
		h.put(c.UploadURL, pdf).problem(http.StatusUnsupportedMediaType, documents.CodeContentTypeMismatch)
	})
	t.Run("empty", func(t *testing.T) {
		c := h.createUpload(key, nil)
		h.put(c.UploadURL, []byte{}).problem(http.StatusBadRequest, documents.CodeEmptyFile)
	})
	t.Run("corrupt then retried", func(t *testing.T) {
		c := h.createUpload(key, nil)
		h.put(c.UploadURL, []byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R\nthis is not a pdf\n%%EOF\n")).problem(http.StatusUnprocessableEntity, documents.CodeCorruptDocument)
		// A failed PUT gives the token back.
		h.put(c.UploadURL, pdf).status(http.StatusOK)
	})
	t.Run("token invalid", func(t *testing.T) {
		c := h.createUpload(key, nil)
		tampered := c.UploadURL[:len(c.UploadURL)-2] + "AA"
		if tampered == c.UploadURL {
			tampered = c.UploadURL[:len(c.UploadURL)-2] + "BB"
		}
		h.put(tampered, pdf).problem(http.StatusForbidden, documents.CodeUploadInvalid)
		h.put("/api/v1/uploads/not-a-token", pdf).problem(http.StatusForbidden, documents.CodeUploadInvalid)
	})
	t.Run("token used", func(t *testing.T) {
		c := h.createUpload(key, nil)
		h.put(c.UploadURL, pdf).status(http.StatusOK)
		h.put(c.UploadURL, pdf).problem(http.StatusConflict, documents.CodeUploadUsed)
	})
	t.Run("not uploaded yet", func(t *testing.T) {
		c := h.createUpload(key, nil)
		h.send(key, "k-pending", faxes.SendRequest{To: deliverable, UploadToken: c.UploadToken}).problem(http.StatusConflict, documents.CodeUploadPending)
	})
}

func TestE2EUploadExpired(t *testing.T) {
	var skew atomic.Int64
	h := newHarness(t, testenv.WithConfig(func(c *services.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	}))
	c := h.createUpload(h.env.KeyATest, nil)
	skew.Store(int64(h.env.Svc.Config().Documents.UploadTTL + time.Minute))
	h.put(c.UploadURL, testenv.MinimalPDF(1)).problem(http.StatusGone, documents.CodeUploadExpired)
}

func TestE2EDestinations(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	before := h.credits(key, "")
	h.send(key, "k1", faxes.SendRequest{To: invalid, DocumentID: doc.ID}).problem(http.StatusUnprocessableEntity, core.CodeInvalidDestination)
	h.send(key, "k2", faxes.SendRequest{To: premium, DocumentID: doc.ID}).problem(http.StatusUnprocessableEntity, core.CodePremiumDestination)
	h.do(key, "POST", "/api/v1/quote", map[string]any{"to": premium, "pages": 1}, nil).problem(http.StatusUnprocessableEntity, core.CodePremiumDestination)
	h.do(key, "POST", "/api/v1/quote", map[string]any{"to": invalid, "pages": 1}, nil).problem(http.StatusUnprocessableEntity, core.CodeInvalidDestination)
	if after := h.credits(key, ""); after.AvailableCents != before.AvailableCents || len(after.Ledger) != len(before.Ledger) {
		t.Fatalf("refused sends touched credits: %+v → %+v", before.Balance, after.Balance)
	}
}

func TestE2EListFaxes(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	var created []string
	for range 5 {
		created = append(created, h.sendOK(key, faxes.SendRequest{To: deliverable, DocumentID: doc.ID}).ID)
	}

	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := "?limit=2"
		if cursor != "" {
			q += "&starting_after=" + cursor
		}
		p := h.list(key, q)
		for _, o := range p.Data {
			if o.LatestAttempt != nil {
				t.Error("list items carry latestAttempt")
			}
			seen = append(seen, o.ID)
		}
		if !p.HasMore {
			if p.Next != "" || len(p.Data) != 1 {
				t.Fatalf("last page %+v", p)
			}
			break
		}
		if len(p.Data) != 2 || p.Next != p.Data[1].ID || pages > 3 {
			t.Fatalf("page %+v", p)
		}
		cursor = p.Next
	}
	slices.Sort(seen)
	slices.Sort(created)
	if !slices.Equal(seen, created) {
		t.Fatalf("paged through %v, created %v", seen, created)
	}
	if p := h.list(key, ""); len(p.Data) != 5 || p.HasMore {
		t.Fatalf("default page %+v", p)
	}

	h.env.DrainQueue(t)
	if p := h.list(key, "?status=delivered"); len(p.Data) != 5 {
		t.Fatalf("%d delivered", len(p.Data))
	}
	if p := h.list(key, "?status=queued"); len(p.Data) != 0 {
		t.Fatalf("%d still queued", len(p.Data))
	}
	h.do(key, "GET", "/api/v1/faxes?status=lost", nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
	h.do(key, "GET", "/api/v1/faxes?starting_after=fax_nope", nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
	h.do(key, "GET", "/api/v1/faxes?limit=500", nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)

	// A period: the day the faxes were made (UTC), and none before 2020;
	// bad bounds are 400 invalid_period naming the parameter.
	day := h.list(key, "?limit=1").Data[0].CreatedAt.UTC().Format(time.DateOnly)
	if p := h.list(key, "?created_from="+day+"&created_to="+day+"&status=delivered"); len(p.Data) != 5 {
		t.Fatalf("%d faxes made today", len(p.Data))
	}
	if p := h.list(key, "?created_to=2020-01-01"); len(p.Data) != 0 {
		t.Fatalf("%d faxes before 2020", len(p.Data))
	}
	for q, field := range map[string]string{
		"created_from=yesterday":                        "created_from",
		"created_to=2026-02-30":                         "created_to",
		"created_from=2026-11-02&created_to=2026-11-01": "created_from",
		"created_from=" + strings.Repeat("9", 60):       "created_from",
		"created_from=2026-11-01T25:00:00Z":             "created_from",
	} {
		if pb := h.do(key, "GET", "/api/v1/faxes?"+q, nil, nil).problem(http.StatusBadRequest, faxes.CodeInvalidPeriod); pb["field"] != field {
			t.Errorf("%s: field %v, want %s", q, pb["field"], field)
		}
	}
	// Each fax names the door it came in by: this API key, by id and name,
	// never its secret.
	f := h.list(key, "?limit=1").Data[0]
	if f.SentBy.Kind != core.PrincipalAPIKey || !strings.HasPrefix(f.SentBy.ID, "key_") || f.SentBy.Name != "test" {
		t.Fatalf("sentBy %+v", f.SentBy)
	}
	raw := h.do(key, "GET", "/api/v1/faxes/"+f.ID, nil, nil).status(http.StatusOK)
	if b := string(raw.body); !strings.Contains(b, `"sentBy":{"kind":"api_key","id":"`+f.SentBy.ID+`","name":"test"}`) || strings.Contains(b, key) {
		t.Fatalf("fax JSON %s", b)
	}

	// The ledger pages the same way.
	c := h.credits(key, "?limit=1")
	if len(c.Ledger) != 1 || !c.HasMore {
		t.Fatalf("ledger page %+v", c.Ledger)
	}
	c2 := h.credits(key, "?limit=1&starting_after="+c.Next)
	if len(c2.Ledger) != 1 || c2.Ledger[0].ID == c.Ledger[0].ID {
		t.Fatalf("ledger second page %+v", c2.Ledger)
	}
}

func TestE2ECancel(t *testing.T) {
	// Without workers faxes stay queued until the test says otherwise.
	h := newHarness(t, testenv.WithoutWorkers())
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	keep := h.sendOK(key, faxes.SendRequest{To: deliverable, DocumentID: doc.ID})
	drop := h.sendOK(key, faxes.SendRequest{To: deliverable, DocumentID: doc.ID})

	h.do(h.env.KeyBTest, "POST", "/api/v1/faxes/"+drop.ID+"/cancel", nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
	var o faxes.Fax
	h.do(key, "POST", "/api/v1/faxes/"+drop.ID+"/cancel", nil, nil).status(http.StatusOK).decode(&o)
	if o.Status != faxes.Canceled || o.ID != drop.ID {
		t.Fatalf("canceled %+v", o)
	}
	h.do(key, "POST", "/api/v1/faxes/"+drop.ID+"/cancel", nil, nil).problem(http.StatusConflict, faxes.CodeFaxNotCancelable)
	h.do(key, "POST", "/api/v1/faxes/fax_nope/cancel", nil, nil).problem(http.StatusNotFound, core.CodeNotFound)

	if p := h.list(key, "?status=canceled"); len(p.Data) != 1 || p.Data[0].ID != drop.ID {
		t.Fatalf("canceled list %+v", p.Data)
	}
	if p := h.list(key, "?status=queued"); len(p.Data) != 1 || p.Data[0].ID != keep.ID {
		t.Fatalf("queued list %+v", p.Data)
	}
	released := false
	for _, e := range h.credits(key, "").Ledger {
		released = released || (e.Kind == credits.LedgerRelease && e.FaxID != nil && *e.FaxID == drop.ID)
	}
	if !released {
		t.Fatal("the canceled fax's hold was not released")
	}
	if c := h.credits(key, ""); c.HeldCents != keep.PriceCents {
		t.Fatalf("held %d cents, want %d", c.HeldCents, keep.PriceCents)
	}
}

func TestE2EIsolation(t *testing.T) {
	h := newHarness(t)
	a, b, aLive := h.env.KeyATest, h.env.KeyBTest, h.env.KeyALive
	up := h.upload(a, testenv.MinimalPDF(1))
	fax := h.sendOK(a, faxes.SendRequest{To: deliverable, UploadToken: up.UploadToken})
	h.env.DrainQueue(t)

	t.Run("owner B sees nothing of A", func(t *testing.T) {
		h.do(b, "GET", "/api/v1/faxes/"+fax.ID, nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
		h.do(b, "GET", "/api/v1/faxes/"+fax.ID+"/attempts", nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
		if p := h.list(b, ""); len(p.Data) != 0 {
			t.Fatalf("B lists %d faxes", len(p.Data))
		}
		h.send(b, "k1", faxes.SendRequest{To: deliverable, UploadToken: up.UploadToken}).problem(http.StatusNotFound, core.CodeNotFound)
		h.send(b, "k2", faxes.SendRequest{To: deliverable, DocumentID: up.Document.ID}).problem(http.StatusNotFound, core.CodeNotFound)
		h.do(b, "GET", "/api/v1/faxes?starting_after="+fax.ID, nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
		for _, e := range h.credits(b, "?limit=100").Ledger {
			if e.FaxID != nil && *e.FaxID == fax.ID {
				t.Fatal("B sees A's ledger entry")
			}
		}
	})

	t.Run("test and live never mix", func(t *testing.T) {
		h.do(aLive, "GET", "/api/v1/faxes/"+fax.ID, nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
		if p := h.list(aLive, ""); len(p.Data) != 0 {
			t.Fatalf("the live key lists %d test faxes", len(p.Data))
		}
		if c := h.credits(aLive, ""); c.Mode != core.ModeLive || c.AvailableCents != 0 || len(c.Ledger) != 0 {
			t.Fatalf("the live key sees test credits: %+v", c)
		}
		// Live data made with the live key is invisible to the test key.
		live := h.upload(aLive, testenv.MinimalPDF(1))
		if live.Document.Mode != core.ModeLive {
			t.Fatalf("live upload made a %s document", live.Document.Mode)
		}
		h.send(a, "k3", faxes.SendRequest{To: deliverable, UploadToken: live.UploadToken}).problem(http.StatusNotFound, core.CodeNotFound)
		h.send(a, "k4", faxes.SendRequest{To: deliverable, DocumentID: live.Document.ID}).problem(http.StatusNotFound, core.CodeNotFound)
	})
}

func TestE2ECredits(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	c := h.credits(key, "")
	if c.Mode != core.ModeTest || c.Currency != "usd" || c.Available != "10.00" || c.AvailableCents != 1000 || len(c.Ledger) != 1 || c.Ledger[0].Kind != credits.LedgerGrant {
		t.Fatalf("credits %+v", c)
	}

	var packs struct{ Data []core.CreditPack }
	h.do(key, "GET", "/api/v1/credits/packs", nil, nil).status(http.StatusOK).decode(&packs)
	if len(packs.Data) == 0 {
		t.Fatal("no packs")
	}
	pack := packs.Data[0]
	var s checkout.Session
	h.do(key, "POST", "/api/v1/credits/checkout", map[string]string{"packId": pack.ID}, nil).status(http.StatusOK).decode(&s)
	if s.CheckoutURL == "" || s.ID == "" || s.PackID != pack.ID || s.Amount != pack.Price || s.Credit != pack.Credit || s.Currency != "usd" || !s.ExpiresAt.After(time.Now()) {
		t.Fatalf("checkout %+v", s)
	}
	h.do(key, "POST", "/api/v1/credits/checkout", map[string]string{"packId": "pack_7"}, nil).problem(http.StatusBadRequest, credits.CodeUnknownPack)
	h.do(key, "POST", "/api/v1/credits/checkout", nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
	// testenv configures no live gateway.
	h.do(h.env.KeyALive, "POST", "/api/v1/credits/checkout", map[string]string{"packId": pack.ID}, nil).problem(http.StatusServiceUnavailable, checkout.CodeCheckoutUnavailable)
}

func TestE2EProtocolErrors(t *testing.T) {
	h := newHarness(t)
	h.do("", "GET", "/api/v1/faxes", nil, nil).problem(http.StatusUnauthorized, core.CodeUnauthenticated)
	h.do("fxk_test_nope", "GET", "/api/v1/faxes", nil, nil).problem(http.StatusUnauthorized, accounts.CodeInvalidAPIKey)
	h.do("", "GET", "/api/v1/faxes?api_key="+h.env.KeyATest, nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
	h.do(h.env.KeyATest, "GET", "/api/v1/nothing", nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
	res := h.do(h.env.KeyATest, "DELETE", "/api/v1/faxes", nil, nil)
	res.problem(http.StatusMethodNotAllowed, "method_not_allowed")
	if res.header.Get("Allow") != "GET, HEAD, POST" {
		t.Fatalf("Allow %q", res.header.Get("Allow"))
	}
	h.do(h.env.KeyATest, "GET", "/api/v1/faxes/fax_nope", nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
}
