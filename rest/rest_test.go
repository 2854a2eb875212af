package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/core/webhooks"
)

// keyStore knows API keys and nothing else: the embedded nil Store makes
// any other call panic, which proves these tests need no database.
type keyStore struct {
	services.Store
	keys map[string]*accounts.APIKey // by hash
}

func (s *keyStore) GetAPIKeyByHash(_ context.Context, hash string) (*accounts.APIKey, error) {
	if k, ok := s.keys[hash]; ok {
		return k, nil
	}
	return nil, core.ErrNoRows
}

func (s *keyStore) TouchAPIKey(context.Context, string, time.Time) error { return nil }

// GetWebhookSigningKey fails: the public key is served from a real store
// in the end-to-end tests (core/webhooks, internal/app).
func (s *keyStore) GetWebhookSigningKey(context.Context, string) (*webhooks.SigningKey, error) {
	return nil, errors.New("the unit tests' store keeps no webhook signing key")
}

// AllowRate never limits: the rate limits are tested end to end on real stores.
func (s *keyStore) AllowRate(context.Context, string, time.Time, time.Duration, int) (bool, time.Duration, error) {
	return true, 0, nil
}

// destinations accepts one US number and refuses a premium one, enough to
// exercise the quote endpoints.
type destinations struct{}

func (destinations) Check(n string) (string, string, error) {
	switch n {
	case "+12125550100":
		return n, "US", nil
	case "+19005550100":
		return "", "", core.Errorf(core.KindUnprocessable, core.CodePremiumDestination, "premium-rate numbers cannot be faxed")
	}
	return "", "", core.Errorf(core.KindUnprocessable, core.CodeInvalidDestination, "%q is not a valid fax number", n)
}

func (d destinations) Describe(n string) (core.Destination, error) {
	e164, country, err := d.Check(n)
	return core.Destination{E164: e164, Country: country, Type: "fixed_line"}, err
}

const (
	testKey    = "fxk_test_unitunitunitunitunitunit"
	revokedKey = "fxk_test_revokedrevokedrevoked"
	// liveLooking has a live prefix but is stored as a test key: a key
	// whose prefix lies about its mode must not authenticate.
	liveLooking = "fxk_live_mislabelledmislabelled"
	unitBaseURL = "https://faxhub.example"
	unitAPIURL  = "https://api.faxhub.example"
)

func newUnitAPI(t *testing.T, machineOn bool) *api {
	t.Helper()
	now := time.Now()
	revoked := now.Add(-time.Hour)
	st := &keyStore{keys: map[string]*accounts.APIKey{
		core.HashSecret(testKey):     {ID: "key_a", OwnerID: "own_a", Mode: core.ModeTest, LastUsedAt: &now},
		core.HashSecret(revokedKey):  {ID: "key_r", OwnerID: "own_a", Mode: core.ModeTest, LastUsedAt: &now, RevokedAt: &revoked},
		core.HashSecret(liveLooking): {ID: "key_m", OwnerID: "own_a", Mode: core.ModeTest, LastUsedAt: &now},
	}}
	svc, err := services.New(services.Config{
		Config:    core.Config{BaseURL: unitBaseURL, APIURL: unitAPIURL},
		Documents: documents.Config{UploadSecret: bytes.Repeat([]byte{1}, 32), MaxUploadBytes: 1 << 20},
		Machine:   machine.Config{Enabled: machineOn, MaxPDFBytes: 3 << 10},
	}, services.Deps{Store: st, Destination: destinations{}})
	if err != nil {
		t.Fatal(err)
	}
	return newAPI(svc, Options{TestNumbers: []TestNumber{{"+12125550103", "not a fax machine answers"}}}, nil)
}

// router is a router with a's routes alone, on a's origins.
func (a *api) router() *web.Router {
	r := web.NewRouter(web.Origins{web.OriginBase: a.opts.BaseURL, web.OriginAPI: a.opts.APIURL})
	a.register(r)
	return r
}

// ServeHTTP serves a request as the server's router does.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.router().ServeHTTP(w, r) }

type req struct {
	method, path, key, body string
	header                  map[string]string
}

func (a *api) do(t *testing.T, r req) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader = http.NoBody
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, hr)
	return rec
}

// problem checks that rec is a problem+json response with status and code,
// that the code is one /openapi.json documents, and returns the body.
func problem(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) map[string]any {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if p["code"] != code {
		t.Fatalf("code = %v, want %s; body %s", p["code"], code, rec.Body)
	}
	if p["type"] != "urn:faxhub:error:"+code || p["status"] != float64(status) || p["title"] == "" {
		t.Fatalf("malformed problem %s", rec.Body)
	}
	if _, ok := problemDetails()[code]; !ok {
		t.Fatalf("code %s is not in the OpenAPI code enum", code)
	}
	return p
}

func TestAuthentication(t *testing.T) {
	a := newUnitAPI(t, false)
	cases := []struct {
		name, authorization, code, challenge string
	}{
		{"missing", "", core.CodeUnauthenticated, `Bearer realm="faxhub"`},
		{"other scheme", "Basic Zm9vOmJhcg==", core.CodeUnauthenticated, `Bearer realm="faxhub"`},
		{"empty bearer", "Bearer ", core.CodeUnauthenticated, `Bearer realm="faxhub"`},
		{"no key prefix", "Bearer sk_live_123", accounts.CodeInvalidAPIKey, `Bearer realm="faxhub", error="invalid_token"`},
		{"unknown key", "Bearer fxk_test_doesnotexist", accounts.CodeInvalidAPIKey, `Bearer realm="faxhub", error="invalid_token"`},
		{"revoked key", "Bearer " + revokedKey, accounts.CodeInvalidAPIKey, `Bearer realm="faxhub", error="invalid_token"`},
		{"prefix disagrees with mode", "Bearer " + liveLooking, accounts.CodeInvalidAPIKey, `Bearer realm="faxhub", error="invalid_token"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := a.do(t, req{method: "GET", path: "/api/v1/credits/packs", header: map[string]string{"Authorization": c.authorization}})
			problem(t, rec, http.StatusUnauthorized, c.code)
			if got := rec.Header().Get("WWW-Authenticate"); got != c.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, c.challenge)
			}
			if got := rec.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q", got)
			}
		})
	}

	t.Run("valid key", func(t *testing.T) {
		for _, scheme := range []string{"Bearer", "bearer"} {
			rec := a.do(t, req{method: "GET", path: "/api/v1/credits/packs", header: map[string]string{"Authorization": scheme + " " + testKey}})
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: status %d: %s", scheme, rec.Code, rec.Body)
			}
			if got := rec.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q on an authenticated response", got)
			}
			var packs struct{ Data []core.CreditPack }
			if err := json.Unmarshal(rec.Body.Bytes(), &packs); err != nil || len(packs.Data) == 0 {
				t.Fatalf("packs: %v %s", err, rec.Body)
			}
		}
	})
}

func TestPrincipalReachesHandler(t *testing.T) {
	a := newUnitAPI(t, false)
	var got core.Principal
	h := a.authed(func(w http.ResponseWriter, r *http.Request, p core.Principal) error {
		fromCtx, ok := core.PrincipalFrom(r.Context())
		if !ok || fromCtx.SubjectID != p.SubjectID {
			t.Errorf("principal not in context: %+v", fromCtx)
		}
		got = p
		return nil
	})
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", "Bearer "+testKey)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got.OwnerID != "own_a" || got.Mode != core.ModeTest || got.Kind != core.PrincipalAPIKey {
		t.Fatalf("principal = %+v", got)
	}
}

func TestCredentialsInQueryRefused(t *testing.T) {
	a := newUnitAPI(t, true)
	for _, path := range []string{
		"/api/v1/faxes?api_key=" + testKey,
		"/api/v1/faxes?limit=2&access_token=abc",
		"/api/v1/credits?key=x",
		"/api/v1/uploads/u1.x.y?api_key=z",
		"/api/v1/machine/faxes/validate?access_token=abc",
		"/api/v1/nowhere?api_key=z",
	} {
		method := "GET"
		switch {
		case strings.HasPrefix(path, "/api/v1/uploads/"):
			method = "PUT"
		case strings.HasPrefix(path, "/api/v1/machine/"):
			method = "POST"
		}
		// Refused even with a valid header: the key in the URL has leaked.
		rec := a.do(t, req{method: method, path: path, key: testKey})
		p := problem(t, rec, http.StatusBadRequest, core.CodeInvalidRequest)
		if d, _ := p["detail"].(string); !strings.Contains(d, "Authorization: Bearer") {
			t.Errorf("%s: detail does not point to the header: %q", path, d)
		}
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	a := newUnitAPI(t, false)
	// /api/v1 itself redirects to the subtree, as the server has always
	// answered it (the router's trailing-slash redirect).
	if rec := a.do(t, req{method: "GET", path: "/api/v1", key: testKey}); rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "/api/v1/" {
		t.Errorf("/api/v1: %d Location %q, want 307 to /api/v1/", rec.Code, rec.Header().Get("Location"))
	}
	for _, path := range []string{"/api/v1/", "/api/v1/nope", "/api/v1/faxes/fax_1/nope", "/api/v1/uploads/", "/api/v2/faxes"} {
		rec := a.do(t, req{method: "GET", path: path, key: testKey})
		if path == "/api/v2/faxes" {
			// Outside /api/v1 this handler makes no promises about shape.
			if rec.Code != http.StatusNotFound {
				t.Errorf("%s: status %d", path, rec.Code)
			}
			continue
		}
		problem(t, rec, http.StatusNotFound, core.CodeNotFound)
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: no Cache-Control", path)
		}
	}

	cases := []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/faxes", "GET, HEAD, POST"},
		{"PUT", "/api/v1/faxes/fax_1", "GET, HEAD"},
		{"GET", "/api/v1/uploads", "POST"},
		{"GET", "/api/v1/uploads/u1.a.b", "PUT, OPTIONS"},
		{"GET", "/api/v1/faxes/fax_1/cancel", "POST"},
		{"GET", "/api/v1/machine/faxes", "POST"},
		{"POST", "/api/v1/credits", "GET, HEAD"},
	}
	for _, c := range cases {
		rec := a.do(t, req{method: c.method, path: c.path})
		p := problem(t, rec, http.StatusMethodNotAllowed, core.CodeMethodNotAllowed)
		if got := rec.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow = %q, want %q", c.method, c.path, got, c.allow)
		}
		if p["allow"] == nil {
			t.Errorf("%s %s: problem lacks allow", c.method, c.path)
		}
	}
}

func TestMachineEndpoints(t *testing.T) {
	body := `{"to":"+12125550100","pages":2,"cover":true}`
	t.Run("disabled", func(t *testing.T) {
		a := newUnitAPI(t, false)
		for _, path := range []string{"/api/v1/machine/faxes", "/api/v1/machine/faxes/validate"} {
			problem(t, a.do(t, req{method: "POST", path: path, body: body}), http.StatusServiceUnavailable, machine.CodeMachinePaymentsOff)
		}
		problem(t, a.do(t, req{method: "GET", path: "/api/v1/machine/faxes/status/ms1.x.y"}), http.StatusServiceUnavailable, machine.CodeMachinePaymentsOff)
	})
	// What the adapter refuses itself, before core is asked: each answer a
	// 4xx problem with a code and never a payment challenge.
	t.Run("bodies", func(t *testing.T) {
		a := newUnitAPI(t, true)
		big := `{"to":"+12125550100","request_id":"r","base64":"` + strings.Repeat("A", 8<<10) + `"}`
		for _, c := range []struct {
			path, body, ctype string
			status            int
			code              string
		}{
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"JVBERg==","request_id":"r","x":1}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"JVBERg==","request_id":"r","to":"+12125550100"}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"JVBERg==","Request_ID":"r"}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":1,"request_id":"r"}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"JVBERg=="}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{"base64":"JVBERg==","request_id":"r"}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"","request_id":"r"}`, "", 400, documents.CodeEmptyFile},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"JVB*Rg==","request_id":"r"}`, "", 400, CodeInvalidBase64},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"data:application/pdf;base64,JVBERg==","request_id":"r"}`, "", 400, CodeInvalidBase64},
			{"/api/v1/machine/faxes", `{"to":"+12125550100","base64":"_-_-","request_id":"r"}`, "", 400, CodeInvalidBase64},
			{"/api/v1/machine/faxes", ``, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes", `{}`, "text/plain", 415, core.CodeUnsupportedContentType},
			{"/api/v1/machine/faxes", big, "", 413, documents.CodeFileTooLarge},
			{"/api/v1/machine/faxes/validate", `{"to":"+12125550100"}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes/validate", `{"to":"+12125550100","pages":1,"base64":"JVBERg=="}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes/validate", `{"to":"+12125550100","pages":0}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes/validate", `{"to":"+12125550100","base64":"%%%"}`, "", 400, CodeInvalidBase64},
			{"/api/v1/machine/faxes/validate", `{"pages":1}`, "", 400, core.CodeInvalidRequest},
			{"/api/v1/machine/faxes/validate", big, "", 413, documents.CodeFileTooLarge},
		} {
			r := req{method: "POST", path: c.path, body: c.body}
			if c.ctype != "" {
				r.header = map[string]string{"Content-Type": c.ctype}
			}
			rec := a.do(t, r)
			problem(t, rec, c.status, c.code)
			if rec.Header().Get("WWW-Authenticate") != "" {
				t.Errorf("%s %s: a payment challenge was offered", c.path, c.body)
			}
		}
	})
}

func TestDecodeDocument(t *testing.T) {
	pdf := []byte("%PDF-1.4\n%\xe2\xe3")
	for _, c := range []struct {
		in   string
		want []byte
		code string
	}{
		{"JVBERi0xLjQKJeLj", pdf, ""},
		{"JVBERi0xLjQKJeLj\nJVBE", nil, ""}, // decoded below
		{"JVBERg==", []byte("%PDF"), ""},
		{"JVBERg", []byte("%PDF"), ""},     // unpadded
		{"JVBER\ng==", []byte("%PDF"), ""}, // wrapped lines
		{"JVBERg=", nil, CodeInvalidBase64},
		{"JVBE Rg==", nil, CodeInvalidBase64},
		{"JVBERg-_", nil, CodeInvalidBase64},
		{"", nil, documents.CodeEmptyFile},
		{"  ", nil, documents.CodeEmptyFile},
		{"=", nil, CodeInvalidBase64},
	} {
		got, err := decodeDocument(c.in)
		if c.code != "" {
			if core.AsError(err).Code != c.code {
				t.Errorf("%q: err %v, want code %s", c.in, err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if c.want != nil && !bytes.Equal(got, c.want) {
			t.Errorf("%q = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestQuoteNeedsKey(t *testing.T) {
	a := newUnitAPI(t, false)
	body := `{"to":"+12125550100","pages":1}`
	problem(t, a.do(t, req{method: "POST", path: "/api/v1/quote", body: body}), http.StatusUnauthorized, core.CodeUnauthenticated)
	rec := a.do(t, req{method: "POST", path: "/api/v1/quote", body: body, key: testKey})
	if rec.Code != http.StatusOK {
		t.Fatalf("quote: %d %s", rec.Code, rec.Body)
	}
	rec = a.do(t, req{method: "POST", path: "/api/v1/quote", body: body, key: testKey, header: map[string]string{"Content-Type": "text/plain"}})
	problem(t, rec, http.StatusUnsupportedMediaType, core.CodeUnsupportedContentType)
}

func TestIdempotencyKeyRequired(t *testing.T) {
	a := newUnitAPI(t, false)
	rec := a.do(t, req{method: "POST", path: "/api/v1/faxes", key: testKey, body: `{"to":"+12125550100","documentId":"doc_1"}`})
	problem(t, rec, http.StatusBadRequest, core.CodeIdempotencyKeyRequired)
}

func TestListQueryValidation(t *testing.T) {
	a := newUnitAPI(t, false)
	for _, q := range []string{
		"limit=0", "limit=101", "limit=-1", "limit=ten", "limit=", "limit=2&limit=3",
		"startingAfter=fax_1", "state=queued", "status=queued&status=failed",
	} {
		for _, path := range []string{"/api/v1/faxes?", "/api/v1/credits?"} {
			if path == "/api/v1/credits?" && strings.HasPrefix(q, "status") {
				continue
			}
			problem(t, a.do(t, req{method: "GET", path: path + q, key: testKey}), http.StatusBadRequest, core.CodeInvalidRequest)
		}
	}
	// status is a fax filter, not a ledger one.
	problem(t, a.do(t, req{method: "GET", path: "/api/v1/credits?status=queued", key: testKey}), http.StatusBadRequest, core.CodeInvalidRequest)
}

// unreadable fails the test if the handler reads the body.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the oversize body was read")
	return 0, io.EOF
}

func TestPutUpload(t *testing.T) {
	a := newUnitAPI(t, false)
	limit := a.svc.Config().Documents.MaxUploadBytes

	t.Run("declared too large is refused unread", func(t *testing.T) {
		r := httptest.NewRequest("PUT", "/api/v1/uploads/u1.x.y", unreadable{t})
		r.ContentLength = limit + 1
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, r)
		p := problem(t, rec, http.StatusRequestEntityTooLarge, documents.CodeFileTooLarge)
		if p["limit"] != float64(limit) {
			t.Errorf("limit = %v", p["limit"])
		}
	})

	t.Run("no Authorization needed, bad token refused", func(t *testing.T) {
		r := httptest.NewRequest("PUT", "/api/v1/uploads/u1.bogus.token", strings.NewReader("%PDF-1.4"))
		r.Header.Set("Content-Type", "application/octet-stream")
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, r)
		// 403 from the token check, not 401: the handler never asked for a key.
		problem(t, rec, http.StatusForbidden, documents.CodeUploadInvalid)
		if rec.Header().Get("WWW-Authenticate") != "" {
			t.Error("the upload PUT challenged for a bearer token")
		}
	})
}

func TestLLMsTxt(t *testing.T) {
	a := newUnitAPI(t, false)
	rec := a.do(t, req{method: "GET", path: "/llms.txt"})
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("llms.txt: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	for _, want := range []string{"# faxhub", unitBaseURL + "/openapi.json", unitBaseURL + "/auth.md", unitAPIURL + "/api/v1", "Idempotency-Key", "+12125550103: not a fax"} {
		if !strings.Contains(body, want) {
			t.Errorf("llms.txt lacks %q", want)
		}
	}
}

// TestLLMsTxtMachine: with methods on offer llms.txt walks through the 402
// flow, and names the test mint only when the built-in backend serves it.
func TestLLMsTxtMachine(t *testing.T) {
	svc := newUnitAPI(t, true).svc
	get := func(o Options) string {
		rec := newAPI(svc, o, nil).do(t, req{method: "GET", path: "/llms.txt"})
		return rec.Body.String()
	}
	if body := get(Options{}); strings.Contains(body, "HTTP 402") {
		t.Error("llms.txt explains machine payments though no method is on offer")
	}
	offers := []MachineOffer{{"stripe", "charge", "usd"}}
	body := get(Options{MachineOffers: offers})
	for _, want := range []string{"HTTP 402", "/api/v1/machine/faxes/validate", "request_id", "WWW-Authenticate: Payment", "Authorization: Payment", "Payment-Receipt", "statusUrl", "stripe/charge", "409 request_id_conflict"} {
		if !strings.Contains(body, want) {
			t.Errorf("llms.txt lacks %q", want)
		}
	}
	if strings.Contains(body, "pm_card_visa") {
		t.Error("llms.txt offers the test mint without the built-in backend")
	}
	body = get(Options{MachineOffers: offers, StripeTestMintPath: "/test/stripe/v1/test_helpers/shared_payment/granted_tokens"})
	for _, want := range []string{unitAPIURL + "/test/stripe/v1/test_helpers/shared_payment/granted_tokens", "pm_card_visa", "pm_card_chargeDeclined", "MPPX_STRIPE_SPT_URL=" + unitAPIURL, "mppx " + unitAPIURL + "/api/v1/machine/faxes"} {
		if !strings.Contains(body, want) {
			t.Errorf("llms.txt lacks %q", want)
		}
	}
}
