package events_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

func TestParseTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []events.Type
		err  bool
	}{
		{"none", nil, nil, false},
		{"one", []string{"fax.delivered"}, []events.Type{events.FaxDelivered}, false},
		{"repeated and comma-separated, deduplicated, blanks ignored", []string{"fax.failed, fax.delivered", "fax.failed", " ,"},
			[]events.Type{events.FaxFailed, events.FaxDelivered}, false},
		{"a wildcard", []string{"number.*"}, []events.Type{events.NumberActive, events.NumberFailed, events.NumberReleased, events.NumberRenewalFailed}, false},
		{"a wildcard and one of its types", []string{"credits.low,credits.*"}, []events.Type{events.CreditsLow, events.CreditsPurchased}, false},
		{"unknown", []string{"fax.exploded"}, nil, true},
		{"a resource alone", []string{"fax"}, nil, true},
		{"a wildcard of nothing", []string{"nope.*"}, nil, true},
		{"a prefix is not a wildcard", []string{"in*"}, nil, true},
		{"the test type is not in the log", []string{string(events.WebhookTest)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.ParseTypes(tc.in)
			if tc.err {
				if core.ErrorCode(err) != core.CodeInvalidRequest {
					t.Fatalf("error %v, want invalid_request", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func TestReadable(t *testing.T) {
	key := core.Principal{Kind: core.PrincipalAPIKey, Scopes: core.FaxScopes()}
	console := core.Principal{Kind: core.PrincipalOwnerSession, Scopes: core.FaxScopes()}
	app := core.Principal{Kind: core.PrincipalOAuthGrant, Scopes: []core.Scope{core.ScopeFaxRead}}
	agent := core.Principal{Kind: core.PrincipalAgent, Scopes: core.FaxScopes()}
	for _, tc := range []struct {
		p    core.Principal
		t    events.Type
		want bool
	}{
		{key, events.ApprovalRequested, true}, {console, events.AgentRevoked, true},
		{app, events.FaxDelivered, true}, {app, events.NumberActive, true}, {app, events.InboundReceived, false}, {app, events.CreditsLow, false},
		{agent, events.InboundRead, true}, {agent, events.CreditsPurchased, true}, {agent, events.ApprovalDecided, false}, {agent, events.AgentRegistered, false},
		{key, events.WebhookTest, false}, {key, "fax.nope", false},
	} {
		if got := events.Readable(tc.p, tc.t); got != tc.want {
			t.Errorf("Readable(%s %v, %s) = %v", tc.p.Kind, tc.p.Scopes, tc.t, got)
		}
	}
}

type captured struct{ got []*events.Event }

func (c *captured) AppendEvent(_ context.Context, e *events.Event) error {
	c.got = append(c.got, e)
	return nil
}

// Append writes the event as the webhooks and the list show it; an
// unknown type is a programming error, and an event of no owner (a
// machine's fax) is not written.
func TestAppendAndEnvelope(t *testing.T) {
	var c captured
	at := time.Date(2026, 1, 2, 15, 4, 5, 999_000_000, time.FixedZone("x", 3600))
	if err := events.Append(t.Context(), &c, "own_1", core.ModeTest, events.FaxQueued, "fax_1", map[string]string{"id": "fax_1"}, at); err != nil {
		t.Fatal(err)
	}
	if err := events.Append(t.Context(), &c, "", core.ModeTest, events.FaxQueued, "fax_2", nil, at); err != nil || len(c.got) != 1 {
		t.Fatalf("an ownerless event: %v, %d written", err, len(c.got))
	}
	if err := events.Append(t.Context(), &c, "own_1", core.ModeTest, "fax.nope", "fax_3", nil, at); err == nil {
		t.Fatal("an unknown type was appended")
	}
	e := c.got[0]
	if !core.HasPrefix(e.ID, core.PrefixEvent) || e.OwnerID != "own_1" || e.SubjectID != "fax_1" || e.CreatedAt.Location() != time.UTC {
		t.Fatalf("event %+v", e)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + e.ID + `","type":"fax.queued","timestamp":"2026-01-02T14:04:05Z","mode":"test","data":{"id":"fax_1"}}`
	if string(b) != want {
		t.Fatalf("envelope\n got %s\nwant %s", b, want)
	}
	if _, err := events.NewEvent("own_1", core.ModeTest, events.FaxQueued, "x", func() {}, at); err == nil {
		t.Fatal("data that cannot be JSON was accepted")
	}
	// Data encoded by the caller is taken as it is, in a copy of its own.
	raw := json.RawMessage(`{"id":"fax_2"}`)
	e2, err := events.NewEvent("own_1", core.ModeTest, events.FaxQueued, "fax_2", raw, at)
	if err != nil {
		t.Fatal(err)
	}
	raw[2] = 'X'
	if string(e2.Data) != `{"id":"fax_2"}` {
		t.Fatalf("data of an encoded value: %s", e2.Data)
	}
}
