package faxes_test

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestQuote: Quote authorizes the principal itself (every door relies on
// it) and applies the one pages rule: absent means one page, 0 or negative
// is invalid_request, more than the maximum too_many_pages.
func TestQuote(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	maxPages := e.Svc.Config().Documents.MaxPages
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name      string
		p         core.Principal
		pages     *int
		wantPages int
		wantCode  string
	}{
		{"pages absent: one page", p, nil, 1, ""},
		{"one page", p, n(1), 1, ""},
		{"three pages", p, n(3), 3, ""},
		{"the maximum", p, n(maxPages), maxPages, ""},
		{"zero pages", p, n(0), 0, core.CodeInvalidRequest},
		{"negative pages", p, n(-2), 0, core.CodeInvalidRequest},
		{"over the maximum", p, n(maxPages + 1), 0, documents.CodeTooManyPages},
		{"no quote scope", core.Principal{OwnerID: e.OwnerA.ID, Mode: core.ModeTest, Scopes: []core.Scope{core.ScopeFaxRead, core.ScopeCreditsRead}}, n(1), 0, core.CodeInsufficientScope},
		{"no principal", core.Principal{}, n(1), 0, core.CodeUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := e.Svc.Faxes.Quote(ctx, tc.p, faxes.QuoteRequest{To: "+12125550100", Pages: tc.pages})
			if tc.wantCode != "" {
				testenv.WantCode(t, err, tc.wantCode)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.Pages != tc.wantPages || q.BilledPages != tc.wantPages || q.AmountMicros <= 0 {
				t.Fatalf("quote %+v, want %d pages", q, tc.wantPages)
			}
		})
	}
	// Zero pages names the field, so every door can point at it.
	_, err := e.Svc.Faxes.Quote(ctx, p, faxes.QuoteRequest{To: "+12125550100", Pages: n(0)})
	if core.ErrorKind(err) != core.KindInvalid || core.AsError(err).Fields["field"] != "pages" {
		t.Fatalf("zero pages: %v (%+v)", err, core.AsError(err))
	}
}
