package rest_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest"
)

// FuzzSendFax drives POST /api/v1/faxes on the fully wired service (on
// PostgreSQL when FAXHUB_TESTENV_POSTGRES is set) with any body and
// Idempotency-Key: whatever the client sends, the answer is never a 5xx.
func FuzzSendFax(f *testing.F) {
	env := testenv.New(f, testenv.WithoutWorkers())
	ctx := context.Background()
	capa, err := env.Svc.CreateUpload(ctx, env.Principal(f, env.KeyATest), "", 0)
	if err != nil {
		f.Fatal(err)
	}
	doc, err := env.Svc.ReceiveUpload(ctx, capa.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
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
	} {
		f.Add([]byte(s.body), s.key)
	}
	h := rest.New(env.Svc, rest.Options{}, nil)
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
