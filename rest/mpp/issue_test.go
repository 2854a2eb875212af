package mpp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core/machine"
)

// TestBinderIssue: Issue binds to the id Bind computes and renders the
// header Header renders for the bound challenge, from one encoding; a
// challenge Header cannot render is bound with no rendering, so the answer
// renders it and fails as before; what Bind refuses, Issue refuses.
func TestBinderIssue(t *testing.T) {
	for name, opaque := range map[string]map[string]string{"request_id": {"request_id": "r-1", "generation": "2"}, "empty": {}, "absent": nil} {
		s := sample()
		c := s.Machine()
		c.Opaque = opaque
		id, h, err := (Binder{}).Issue(secret, c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want, err := (Binder{}).Bind(secret, c); err != nil || id != want {
			t.Fatalf("%s: Issue bound %s, Bind %s (%v)", name, id, want, err)
		}
		c.ID = id
		w := FromMachine(c)
		want, err := w.Header()
		if err != nil || h != want {
			t.Fatalf("%s: Issue rendered\n%s\nHeader renders\n%s (%v)", name, h, want, err)
		}
	}

	ls := sample()
	long := ls.Machine()
	long.Request = json.RawMessage(`{"amount":"50","currency":"usd","description":"` + strings.Repeat("x", MaxChallengeBytes) + `"}`)
	id, h, err := (Binder{}).Issue(secret, long)
	if err != nil || id == "" || h != "" {
		t.Fatalf("a challenge over %d bytes: id %q, header %d bytes, %v", MaxChallengeBytes, id, len(h), err)
	}
	long.ID = id
	w := FromMachine(long)
	if _, err := w.Header(); err == nil {
		t.Fatal("Header rendered a challenge over the bound")
	}

	if _, _, err := (Binder{}).Issue(secret, machine.Challenge{Realm: "r", Method: "stripe", Intent: "charge", Request: json.RawMessage(`[1]`)}); err == nil {
		t.Error("issued a challenge whose request is no object")
	}
	if _, _, err := (Binder{}).Issue(nil, ls.Machine()); err == nil {
		t.Error("issued without a secret")
	}
}
