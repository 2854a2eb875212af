package main

import (
	"strings"
	"testing"
)

// TestAdminKeysRotate: each rotation prints a new token EdDSA, token RS256
// and receipt EdDSA kid.
func TestAdminKeysRotate(t *testing.T) {
	d := dataArgs(t)
	var kids []string
	for range 2 {
		out, err := faxhub(t, append([]string{"admin", "keys", "rotate"}, d...)...)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "EdDSA ") || !strings.HasSuffix(lines[0], " token") ||
			!strings.HasPrefix(lines[1], "RS256 ") || !strings.HasPrefix(lines[2], "EdDSA ") || !strings.HasSuffix(lines[2], " receipt") {
			t.Fatalf("keys rotate printed %q", out)
		}
		for _, l := range lines {
			kid := strings.Fields(l)[1]
			for _, k := range kids {
				if k == kid {
					t.Fatalf("kid %s printed twice: rotation did not create a new key", kid)
				}
			}
			kids = append(kids, kid)
		}
	}
	if _, err := faxhub(t, append([]string{"admin", "keys", "rotate", "extra"}, d...)...); err == nil {
		t.Fatal("an extra argument was accepted")
	}
}
