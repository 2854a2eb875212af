package passkeys_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEnrollmentNameText: the console refuses enrollment names with NUL,
// control or bidirectional formatting characters, or invalid UTF-8, with a
// 400 on the page. Before, a NUL reached the store: a 500 on PostgreSQL.
func TestEnrollmentNameText(t *testing.T) {
	h, _ := newAgentsHarness(t)
	b, _ := h.signUp("ada@example.com", "Ada")
	for name, bad := range map[string]string{
		"NUL":           "Bot\x00",
		"control":       "Bot\x07",
		"bidi":          "Bot\u202e",
		"invalid UTF-8": "Bot\xff",
	} {
		r := b.form("/console/agents", url.Values{"csrf": {b.csrf()}, "name": {bad}, "scope": {"fax:read"}})
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "agent name") {
			t.Fatalf("%s: %d\n%s", name, r.status, r.body)
		}
	}
	b.enroll("Office bot", "fax:read")
}
