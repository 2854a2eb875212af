package passkeys_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
