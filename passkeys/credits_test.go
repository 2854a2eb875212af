package passkeys_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
)

func TestBuyCredits(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	packs := h.env.Svc.Credits.Packs()
	if len(packs) == 0 {
		t.Skip("no credit packs on sale")
	}
	r := b.get("/console?mode=test")
	if !strings.Contains(r.body, `action="/console/credits"`) || !strings.Contains(r.body, `value="`+packs[0].ID+`"`) {
		t.Fatalf("dashboard has no Buy credits form:\n%s", r.body)
	}
	csrf := b.csrf()
	r = b.form("/console/credits", url.Values{"csrf": {csrf}, "mode": {"test"}, "pack": {packs[0].ID}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") == "" {
		t.Fatalf("buy: %d %s\n%s", r.status, r.header.Get("Location"), r.body)
	}
	for _, tc := range []struct {
		name string
		v    url.Values
	}{
		{"unknown pack", url.Values{"csrf": {csrf}, "mode": {"test"}, "pack": {"nope"}}},
		{"bad mode", url.Values{"csrf": {csrf}, "mode": {"prod"}, "pack": {packs[0].ID}}},
	} {
		if r := b.form("/console/credits", tc.v); r.status < 400 || r.status >= 500 {
			t.Errorf("%s: %d", tc.name, r.status)
		}
	}
	wantStatus(t, "no csrf", b.form("/console/credits", url.Values{"mode": {"test"}, "pack": {packs[0].ID}}), http.StatusForbidden)
}

// The owner sets the low-balance alert beside the balance: the same rule
// as PUT /api/v1/credits/alert, per mode, CSRF-protected; a refused value
// is shown again with why.
func TestCreditAlertForm(t *testing.T) {
	h := newHarness(t)
	b, _ := h.signUp("grace@example.com", "Grace")
	owner, err := h.env.Svc.Accounts.OwnerByEmail(t.Context(), "grace@example.com")
	if err != nil {
		t.Fatal(err)
	}
	r := b.get("/console?mode=live")
	if !strings.Contains(r.body, `action="/console/credits/alert"`) || !strings.Contains(r.body, `name="threshold"`) {
		t.Fatalf("dashboard has no alert form:\n%s", r.body)
	}
	csrf := b.csrf()
	r = b.form("/console/credits/alert", url.Values{"csrf": {csrf}, "mode": {"live"}, "threshold": {"$7.5"}})
	wantStatus(t, "set", r, http.StatusOK)
	if !strings.Contains(r.body, "falls below $7.50") || !strings.Contains(r.body, `value="7.50"`) || !strings.Contains(r.body, "below $7.50 already") {
		t.Fatalf("after setting:\n%s", r.body)
	}
	alert, err := h.env.Svc.Credits.Alert(t.Context(), core.OwnerPrincipal(owner.ID, core.ModeLive))
	if err != nil || alert.Threshold == nil || *alert.Threshold != "7.50" {
		t.Fatalf("live alert %+v %v", alert, err)
	}
	if test, _ := h.env.Svc.Credits.Alert(t.Context(), core.OwnerPrincipal(owner.ID, core.ModeTest)); test.Threshold != nil {
		t.Fatal("setting the live alert set the test one")
	}
	r = b.form("/console/credits/alert", url.Values{"csrf": {csrf}, "mode": {"live"}, "threshold": {"lots"}})
	wantStatus(t, "refused", r, http.StatusBadRequest)
	if !strings.Contains(r.body, "threshold must be") || !strings.Contains(r.body, `value="lots"`) {
		t.Fatalf("after a refused value:\n%s", r.body)
	}
	wantStatus(t, "no csrf", b.form("/console/credits/alert", url.Values{"mode": {"live"}, "threshold": {"1"}}), http.StatusForbidden)
	wantStatus(t, "bad mode", b.form("/console/credits/alert", url.Values{"csrf": {csrf}, "mode": {"prod"}, "threshold": {"1"}}), http.StatusBadRequest)
	r = b.form("/console/credits/alert", url.Values{"csrf": {csrf}, "mode": {"live"}, "threshold": {""}})
	wantStatus(t, "off", r, http.StatusOK)
	if !strings.Contains(r.body, "turned off") {
		t.Fatalf("after turning off:\n%s", r.body)
	}
	if alert, _ := h.env.Svc.Credits.Alert(t.Context(), core.OwnerPrincipal(owner.ID, core.ModeLive)); alert.Threshold != nil {
		t.Fatal("the alert is still on")
	}
}
