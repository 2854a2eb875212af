package rest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"

	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest"
)

// FuzzSendFax drives POST /api/v1/faxes on the fully wired service (on
// PostgreSQL when FAXHUB_TESTENV_POSTGRES is set) with any body and
// Idempotency-Key: whatever the client sends, the answer is never a 5xx.
func FuzzSendFax(f *testing.F) {
	env := testenv.New(f, testenv.WithoutWorkers())
	ctx := context.Background()
	capa, err := env.Svc.Documents.CreateUpload(ctx, env.Principal(f, env.KeyATest), "", 0)
	if err != nil {
		f.Fatal(err)
	}
	doc, err := env.Svc.Documents.ReceiveUpload(ctx, capa.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct{ body, key string }{
		{`{"to":"` + deliverable + `","documentId":"` + doc.ID + `"}`, "k-1"},
		{`{"to":"` + deliverable + `","documentId":"` + doc.ID + `","cover":true,"coverText":"Hi"}`, "k-2"},
		{`{"to":"` + deliverable + `","uploadToken":"` + capa.UploadToken + `"}`, "k-3"},
		{`{"to":"+19005550100","documentId":"doc_x"}`, ""},
		{`{"to":"x","to":"y"}`, "k\xff"},
		{`{"coverText":"\u0000"}`, "k-4"},
		{`{"to":"` + deliverable + `","documentId":"` + doc.ID + `","cover":true,"coverText":"\ud800"}`, "k-5"},
		{`{"to":"` + deliverable + `","documentId":"doc_\udc00"}`, "k-6"},
	} {
		f.Add([]byte(s.body), s.key)
	}
	h := routed(rest.New(env.Svc, rest.Options{}, nil), env.Svc.Config())
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/faxes", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+env.KeyATest)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header["Idempotency-Key"] = []string{key}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q with key %q: %d %s", body, key, rec.Code, rec.Body)
		}
	})
}

// routed serves api's routes alone, on the service's origins.
func routed(api *rest.API, cfg services.Config) *web.Router {
	r := web.NewRouter(web.Origins{web.OriginBase: cfg.BaseURL, web.OriginAPI: cfg.APIURL})
	api.Register(r)
	return r
}

// FuzzMachineFax drives POST /api/v1/machine/faxes (and its validate twin)
// on the fully wired service with machine payments on, with any body and
// any Authorization and Accept-Payment headers: the decoder and what
// follows it never answer a 5xx, and a 402 always carries a challenge.
func FuzzMachineFax(f *testing.F) {
	env := testenv.New(f, testenv.WithoutWorkers(), testenv.WithMachinePayments(), testenv.WithConfig(func(c *services.Config) {
		c.Machine.MaxPDFBytes = 32 << 10
	}))
	pdf := base64.StdEncoding.EncodeToString(testenv.MinimalPDF(1))
	for _, s := range []struct{ body, authz, accept string }{
		{`{"to":"` + deliverable + `","base64":"` + pdf + `","request_id":"f-1"}`, "", ""},
		{`{"to":"` + deliverable + `","base64":"` + pdf + `","request_id":"f-2","cover":true}`, "Payment e30", "stripe/charge"},
		{`{"to":"` + deliverable + `","base64":"` + strings.TrimRight(pdf, "=") + `","request_id":"f-3"}`, "Payment eyJjaGFsbGVuZ2UiOnt9fQ", "tempo/charge;q=0.5, */*"},
		{`{"to":"` + deliverable + `","base64":"JVBERg==","request_id":"f-4"}`, "Payment a, Payment b", ""},
		{`{"to":"+1555","base64":"%%%","request_id":""}`, "Bearer x", "*/*;q=2"},
		{`{"to":"` + deliverable + `","pages":3}`, "", ""},
		{`{"to":"x","to":"y","base64":1}`, "Payment \xff", "\x00"},
		{`{"to":"` + deliverable + `","pages":1,"request_id":"\ud800"}`, "", ""},
	} {
		f.Add([]byte(s.body), s.authz, s.accept)
	}
	h := routed(rest.New(env.Svc, rest.Options{}, nil), env.Svc.Config())
	f.Fuzz(func(t *testing.T, body []byte, authz, accept string) {
		for _, path := range []string{"/api/v1/machine/faxes", "/api/v1/machine/faxes/validate"} {
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if authz != "" {
				req.Header["Authorization"] = []string{authz}
			}
			if accept != "" {
				req.Header["Accept-Payment"] = []string{accept}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("%s %q (Authorization %q, Accept-Payment %q): %d %s", path, body, authz, accept, rec.Code, rec.Body)
			}
			if rec.Code == http.StatusPaymentRequired && rec.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("%s: a 402 without a challenge: %s", path, rec.Body)
			}
		}
	})
}

// FuzzBuyNumber drives POST /api/v1/numbers (a JSON body) and the query
// strings of the number search and the inbox list with anything: never a
// 5xx other than the 503 of a provider (none is unavailable here).
func FuzzBuyNumber(f *testing.F) {
	env := testenv.New(f, testenv.WithoutWorkers())
	for _, s := range []struct{ body, query string }{
		{`{"number":"+12125550142"}`, "country=US&areaCode=212&limit=2"},
		{`{"number":"+1555"}`, "locality=New%20York"},
		{`{"Number":"+12125550142"}`, "country=%00"},
		{`{"number":1}`, "limit=-1&all=true"},
		{`{"number":"+12125550142","number":"+12125550143"}`, "startingAfter=inb_x&numberId=num_x"},
		{`[]`, "%zz"},
		{`{"number":"+1212555014\ud800"}`, "locality=%ED%A0%80"},
	} {
		f.Add([]byte(s.body), s.query)
	}
	h := routed(rest.New(env.Svc, rest.Options{}, nil), env.Svc.Config())
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		for _, r := range []*http.Request{
			httptest.NewRequest(http.MethodPost, "/api/v1/numbers", bytes.NewReader(body)),
			httptest.NewRequest(http.MethodGet, "/api/v1/numbers/available", nil),
			httptest.NewRequest(http.MethodGet, "/api/v1/inbox", nil),
			httptest.NewRequest(http.MethodGet, "/api/v1/numbers", nil),
		} {
			r.URL.RawQuery = query
			r.Header.Set("Authorization", "Bearer "+env.KeyATest)
			r.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code >= 500 {
				t.Fatalf("%s %q ?%q: %d %s", r.Method, body, query, rec.Code, rec.Body)
			}
		}
	})
}
