package rest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestE2EStrictRequests: what was documented as refused but accepted.
// Before, two Idempotency-Key headers sent the fax under the first key,
// and {"TO": …}, {"to": …, "to": …} and a body with a trailing "]" were
// read as if they were plain.
func TestE2EStrictRequests(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	send := func(body string, idem ...string) *result {
		req, err := http.NewRequest("POST", h.base+"/api/v1/faxes", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header["Idempotency-Key"] = idem
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return &result{h: h, what: "POST /api/v1/faxes", code: res.StatusCode, header: res.Header, body: b}
	}
	good := `{"to":"` + deliverable + `","documentId":"` + doc.ID + `"}`
	for name, c := range map[string]struct {
		body string
		idem []string
	}{
		"two Idempotency-Key headers": {good, []string{"k-a", "k-b"}},
		"case-folded name":            {`{"TO":"` + deliverable + `","documentId":"` + doc.ID + `"}`, []string{"k-c"}},
		"duplicate name":              {`{"to":"+19999999999","to":"` + deliverable + `","documentId":"` + doc.ID + `"}`, []string{"k-d"}},
		"trailing bracket":            {good + "]", []string{"k-e"}},
	} {
		t.Run(name, func(t *testing.T) {
			send(c.body, c.idem...).problem(http.StatusBadRequest, core.CodeInvalidRequest)
		})
	}
	if n := len(h.list(key, "").Data); n != 0 {
		t.Fatalf("%d faxes were sent by refused requests", n)
	}
	send(good, "k-f").status(http.StatusOK)
}
