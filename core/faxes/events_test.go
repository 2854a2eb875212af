package faxes_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// faxEvents are the types of fax's events in the order they were written.
func faxEvents(t *testing.T, e *testenv.Env, p core.Principal, faxID string) []events.Type {
	t.Helper()
	page, err := e.Svc.Events.List(ctx, p, nil, "", core.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Type
	for _, ev := range slices.Backward(page.Data) {
		var f faxes.Fax
		if err := json.Unmarshal(ev.Data, &f); err != nil {
			t.Fatalf("event %s data: %v", ev.ID, err)
		}
		if f.ID == faxID {
			if string(f.Status) != string(ev.Type)[len("fax."):] && ev.Type != events.FaxRetrying {
				t.Errorf("event %s shows the fax %s", ev.Type, f.Status)
			}
			out = append(out, ev.Type)
		}
	}
	return out
}

// Every move of a fax writes its event in the move's transaction: the log
// of each simulated outcome is exactly the path the fax took.
func TestFaxEventsFollowTheFax(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	q, s, r, d := events.FaxQueued, events.FaxSending, events.FaxRetrying, events.FaxDelivered
	tests := []struct {
		to   string
		want []events.Type
	}{
		{"+12125550100", []events.Type{q, s, d}},
		{"+12125550101", []events.Type{q, s, r, s, r, s, events.FaxFailed}},
		{"+12125550104", []events.Type{q, s, events.FaxPartial}},
		{"+12125550105", []events.Type{q, s, r, s, d}},
	}
	for _, tc := range tests {
		t.Run(tc.to, func(t *testing.T) {
			o, _, err := e.Svc.Faxes.Send(ctx, p, "events-"+tc.to, faxes.SendRequest{To: tc.to, UploadToken: e.Upload(t, p, 2)})
			if err != nil {
				t.Fatal(err)
			}
			e.DrainQueue(t)
			if got := faxEvents(t, e, p, o.ID); !slices.Equal(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		// Without workers, so that none delivers the fax before it is
		// canceled; its delivery job is then run by hand, as a worker
		// that had claimed it would, and must leave it alone.
		e := testenv.New(t, testenv.WithoutWorkers())
		p := e.Principal(t, e.KeyATest)
		o, _, err := e.Svc.Faxes.Send(ctx, p, "events-cancel", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.CancelQueued(ctx, p, o.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		if got := faxEvents(t, e, p, o.ID); !slices.Equal(got, []events.Type{q, events.FaxCanceled}) {
			t.Fatalf("events %v", got)
		}
	})
	t.Run("a refused send writes nothing", func(t *testing.T) {
		before, err := e.Svc.Events.List(ctx, p, nil, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.Svc.Faxes.Send(ctx, p, "events-refused", faxes.SendRequest{To: "+19005550100", UploadToken: e.Upload(t, p, 1)})
		if err == nil {
			t.Fatal("a premium-rate send was accepted")
		}
		after, err := e.Svc.Events.List(ctx, p, nil, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if before.Data[0].ID != after.Data[0].ID {
			t.Fatalf("a refused send wrote %s", after.Data[0].Type)
		}
	})
	t.Run("another owner sees none", func(t *testing.T) {
		other := e.Principal(t, e.KeyBTest)
		page, err := e.Svc.Events.List(ctx, other, nil, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 0 {
			t.Fatalf("owner B sees %d of A's events", len(page.Data))
		}
		if _, err := e.Svc.Events.List(ctx, other, nil, "evt_nope", 10); core.AsError(err) == nil || core.AsError(err).Code != core.CodeInvalidRequest {
			t.Fatalf("unknown cursor: %v", err)
		}
	})
}
