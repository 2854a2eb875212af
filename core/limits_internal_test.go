package core

import (
	"fmt"
	"testing"
	"time"
)

// TestRefusalsBounded: the refusals a Kernel remembers are bounded; when
// full of waits still running a new one is not remembered, and waits that
// have passed make room.
func TestRefusalsBounded(t *testing.T) {
	r := &refusals{until: map[string]time.Time{}}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range maxRefusals {
		r.note(fmt.Sprint("k", i), t0, time.Duration(i+1)*time.Second)
	}
	r.note("late", t0, time.Minute)
	if w := r.wait("late", t0); w != 0 || len(r.until) != maxRefusals {
		t.Fatalf("full: late remembered (wait %s), %d entries", w, len(r.until))
	}
	// A key already remembered is updated in place.
	r.note("k0", t0, time.Minute)
	if w := r.wait("k0", t0); w != time.Minute {
		t.Fatalf("k0's wait %s, want 1m", w)
	}
	// Ten seconds on, nine waits have passed (k0's was renewed): room.
	at := t0.Add(10 * time.Second)
	r.note("late", at, time.Minute)
	if w := r.wait("late", at); w != time.Minute || len(r.until) != maxRefusals-8 {
		t.Fatalf("after ten seconds: late's wait %s, %d entries (want 1m, %d)", w, len(r.until), maxRefusals-8)
	}
	if w := r.wait("k5", at); w != 0 {
		t.Fatalf("a passed wait answered %s", w)
	}
}
