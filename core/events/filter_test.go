package events_test

import (
	"fmt"
	"testing"

	"github.com/faxhub/faxhub/core/events"
)

// TestParseFilterKeepsWildcards: a filter keeps "fax.*" as given (so it
// takes fax types added later), drops duplicates, sorts, and refuses what
// ParseTypes refuses.
func TestParseFilterKeepsWildcards(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
		bad  bool
	}{
		{nil, "[]", false},
		{[]string{"fax.*"}, "[fax.*]", false},
		{[]string{"number.active, fax.*", "fax.*"}, "[fax.* number.active]", false},
		{[]string{"fax.exploded"}, "", true},
		{[]string{"nothing.*"}, "", true},
		{[]string{"webhook.test"}, "", true},
	} {
		got, err := events.ParseFilter(tc.in)
		if (err != nil) != tc.bad {
			t.Fatalf("ParseFilter(%q): %v", tc.in, err)
		}
		if !tc.bad && fmt.Sprint(got) != tc.want && !(tc.want == "[]" && len(got) == 0) {
			t.Errorf("ParseFilter(%q) = %v, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		filter []events.Type
		t      events.Type
		want   bool
	}{
		{nil, events.AgentRevoked, true},
		{[]events.Type{"fax.*"}, events.FaxRetrying, true},
		{[]events.Type{"fax.*"}, "fax.added_later", true},
		{[]events.Type{"fax.*"}, events.InboundReceived, false},
		{[]events.Type{events.FaxDelivered}, events.FaxFailed, false},
	} {
		if got := events.Match(tc.filter, tc.t); got != tc.want {
			t.Errorf("Match(%v, %s) = %v", tc.filter, tc.t, got)
		}
	}
	if w := events.Wildcards(); fmt.Sprint(w) != "[agent.* approval.* batch.* credits.* fax.* inbound_fax.* number.*]" {
		t.Errorf("Wildcards() = %v", w)
	}
}
