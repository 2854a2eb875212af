package testenv

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// Events reads p's event log through the service, every page, oldest
// first; with types, only those.
func (e *Env) Events(t testing.TB, p core.Principal, types ...events.Type) []events.Event {
	t.Helper()
	var out []events.Event
	after := ""
	for {
		page, err := e.Svc.Events.List(t.Context(), p, types, after, core.MaxListLimit)
		if err != nil {
			t.Fatalf("list events: %v", err)
		}
		out = append(out, page.Data...)
		if !page.HasMore {
			break
		}
		after = page.Next
	}
	slices.Reverse(out)
	return out
}

// EventData decodes the data of ev into a map, failing the test if it is
// not a JSON object.
func EventData(t testing.TB, ev events.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("event %s (%s) data: %v", ev.ID, ev.Type, err)
	}
	return m
}

// EventTypes lists the types of evs in order.
func EventTypes(evs []events.Event) []events.Type {
	out := make([]events.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
