package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest"
)

type eventPage struct {
	Data []struct {
		ID        string          `json:"id"`
		Type      events.Type     `json:"type"`
		Timestamp string          `json:"timestamp"`
		Mode      string          `json:"mode"`
		Data      json.RawMessage `json:"data"`
	} `json:"data"`
	HasMore bool   `json:"hasMore"`
	Next    string `json:"nextCursor"`
}

// allEvents lists key's events over REST, newest first, through every page.
func (h *harness) allEvents(key, query string) []json.RawMessage {
	h.t.Helper()
	var out []json.RawMessage
	after := ""
	for {
		q := query
		if after != "" {
			q += "&starting_after=" + after
		}
		res := h.do(key, "GET", "/api/v1/events?limit=100"+q, nil, nil).status(http.StatusOK)
		var raw struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"hasMore"`
			Next    string            `json:"nextCursor"`
		}
		res.decode(&raw)
		out = append(out, raw.Data...)
		if !raw.HasMore {
			return out
		}
		after = raw.Next
	}
}

// makeEveryEvent drives the services so that owner A's log holds every
// type of event at least once.
func makeEveryEvent(t *testing.T, h *harness, clk interface{ Advance(time.Duration) }) {
	ctx := context.Background()
	e := h.env
	p := e.Principal(t, e.KeyATest)
	if _, err := e.Svc.Credits.SetAlert(ctx, p, ptr("9.90")); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{deliverable, "+12125550101", "+12125550104"} {
		if _, _, err := e.Svc.Faxes.Send(ctx, p, "ev-"+to, faxes.SendRequest{To: to, UploadToken: e.Upload(t, p, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	// A batch whose faxes end: batch.completed.
	if _, _, err := e.Svc.Faxes.SendBatch(ctx, p, "ev-batch", faxes.BatchRequest{UploadToken: e.Upload(t, p, 1),
		Recipients: []faxes.BatchRecipient{{To: deliverable}, {To: "+12125550103"}}}); err != nil {
		t.Fatal(err)
	}
	// A worker may start a fax before it is canceled: try until one is.
	for i := 0; ; i++ {
		f, _, err := e.Svc.Faxes.Send(ctx, p, fmt.Sprint("ev-cancel-", i), faxes.SendRequest{To: deliverable, UploadToken: e.Upload(t, p, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.CancelQueued(ctx, p, f.ID); err == nil {
			break
		} else if core.ErrorCode(err) != faxes.CodeFaxNotCancelable || i == 20 {
			t.Fatal(err)
		}
	}
	e.DrainQueue(t)
	cs, err := e.Svc.Checkout.StartCreditPack(ctx, p, "pack_10")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	n := e.BuyNumber(t, p, "+12125550171")
	e.BuyNumber(t, p, simulated.FailingNumber)
	f := e.DeliverTestFax(t, p, n.E164, testenv.MinimalPDF(1))
	if _, err := e.Svc.Inbox.Get(ctx, p, f.ID); err != nil {
		t.Fatal(err)
	}
	gone := e.BuyNumber(t, p, "+12125550172")
	if _, err := e.Svc.Numbers.Release(ctx, p, gone.ID); err != nil {
		t.Fatal(err)
	}
	// After the last DrainQueue: its job waits for its time.
	later := e.Svc.Kernel.Now().Add(time.Hour)
	if _, _, err := e.Svc.Faxes.Send(ctx, p, "ev-scheduled", faxes.SendRequest{To: deliverable, UploadToken: e.Upload(t, p, 1), Options: faxes.Options{SendAt: &later}}); err != nil {
		t.Fatal(err)
	}
	// A month later with nothing left: the renewal fails.
	c := e.Credits(t, p)
	if err := e.Store.InTx(ctx, func(tx core.Tx) error {
		_, err := credits.Reverse(ctx, tx.(credits.Tx), &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: p.OwnerID, Mode: p.Mode,
			Kind: credits.LedgerReversal, AmountMicros: -c.AvailableMicros, Reason: "test: spend everything", CreatedAt: e.Svc.Kernel.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(32 * 24 * time.Hour)
	if err := e.Svc.Numbers.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Svc.Numbers.Get(ctx, p, n.ID); got.Status != numbers.PastDue {
		t.Fatalf("number %s after an unpaid month", got.Status)
	}

	a, err := e.Svc.Approvals.Request(ctx, approvals.Request{OwnerID: e.OwnerA.ID, Mode: core.ModeTest, Kind: approvals.KindVerifiedAction,
		Requester: "agent x", Summary: "do a thing", Binding: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: false, BindingHash: a.BindingHash}); err != nil {
		t.Fatal(err)
	}
	en, err := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Bot", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeAnonymous, EnrollmentToken: en.EnrollmentToken})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Agents.RevokeRegistration(ctx, e.OwnerA.ID, reg.Registration.ID); err != nil {
		t.Fatal(err)
	}
}

// TestEventsAPI: the log over REST. Every event faxhub writes (every type
// is made here) validates against the schema /openapi.json declares for
// its type under webhooks; the list filters by type (repeated, comma
// separated, wildcards), pages newest first, refuses what it cannot
// answer with a problem, and shows an owner only their own mode's events.
func TestEventsAPI(t *testing.T) {
	h, clk := newClockHarness(t)
	makeEveryEvent(t, h, clk)
	var doc map[string]any
	h.do("", "GET", "/openapi.json", nil, nil).status(http.StatusOK).decode(&doc)

	seen := map[events.Type]int{}
	keys := []string{h.env.KeyATest, h.env.KeyALive}
	for _, key := range keys {
		for _, raw := range h.allEvents(key, "") {
			var ev map[string]any
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			typ := events.Type(ev["type"].(string))
			seen[typ]++
			name := "#/components/schemas/" + rest.EventSchemaName(typ)
			if err := rest.SchemaOf(t, doc, name).Validate(ev); err != nil {
				t.Errorf("a real %s event does not match its schema: %v\n%s", typ, err, raw)
			}
		}
	}
	for _, typ := range events.Types() {
		if seen[typ] == 0 {
			t.Errorf("no %s event was made: its schema is not checked against a real one", typ)
		}
	}

	key := h.env.KeyATest
	all := h.allEvents(key, "")
	ids := func(raws []json.RawMessage) []string {
		out := make([]string, len(raws))
		for i, r := range raws {
			var ev struct{ ID string }
			_ = json.Unmarshal(r, &ev)
			out[i] = ev.ID
		}
		return out
	}
	t.Run("pages", func(t *testing.T) {
		var p1, p2 eventPage
		h.do(key, "GET", "/api/v1/events?limit=2", nil, nil).status(http.StatusOK).decode(&p1)
		if len(p1.Data) != 2 || !p1.HasMore || p1.Next != p1.Data[1].ID {
			t.Fatalf("first page %+v", p1)
		}
		h.do(key, "GET", "/api/v1/events?limit=2&starting_after="+p1.Next, nil, nil).status(http.StatusOK).decode(&p2)
		got := []string{p1.Data[0].ID, p1.Data[1].ID, p2.Data[0].ID, p2.Data[1].ID}
		// Newest first by sequence (not by timestamp: a transaction that
		// read the clock first may commit second).
		if !slices.Equal(got, ids(all)[:4]) {
			t.Fatalf("pages %v, want %v", got, ids(all)[:4])
		}
	})
	t.Run("type filters", func(t *testing.T) {
		count := func(q string) map[events.Type]int {
			out := map[events.Type]int{}
			for _, raw := range h.allEvents(key, q) {
				var ev struct{ Type events.Type }
				_ = json.Unmarshal(raw, &ev)
				out[ev.Type]++
			}
			return out
		}
		both := map[events.Type]int{events.FaxDelivered: seen[events.FaxDelivered], events.FaxFailed: seen[events.FaxFailed]}
		for _, q := range []string{"&type=fax.delivered&type=fax.failed", "&type=fax.delivered,fax.failed", "&type=" + url.QueryEscape(" fax.failed , fax.delivered,fax.failed")} {
			if got := count(q); !equalCounts(got, both) {
				t.Errorf("%s: %v, want %v", q, got, both)
			}
		}
		got := count("&type=fax.*")
		for typ, n := range seen {
			if strings.HasPrefix(string(typ), "fax.") != (got[typ] == n) {
				t.Errorf("fax.*: %s listed %d of %d", typ, got[typ], n)
			}
		}
		for _, q := range []string{"type=fax.nope", "type=nope.*", "type=fax", "limit=0", "limit=101", "limit=1&limit=2", "starting_after=evt_unknown",
			"starting_after=" + url.QueryEscape("evt_\x00x"), "startingAfter=x", "type=" + strings.Repeat("fax.queued&type=", 70) + "fax.queued"} {
			h.do(key, "GET", "/api/v1/events?"+q, nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
		}
	})
	t.Run("one event", func(t *testing.T) {
		var first, one map[string]any
		_ = json.Unmarshal(all[0], &first)
		h.do(key, "GET", "/api/v1/events/"+first["id"].(string), nil, nil).status(http.StatusOK).decode(&one)
		if one["id"] != first["id"] || one["type"] != first["type"] {
			t.Fatalf("got %v, want %v", one, first)
		}
		h.do(h.env.KeyBTest, "GET", "/api/v1/events/"+first["id"].(string), nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
		h.do(h.env.KeyALive, "GET", "/api/v1/events/"+first["id"].(string), nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
		for _, bad := range []string{"evt_nope", url.PathEscape("evt_\x00"), strings.Repeat("e", 300)} {
			h.do(key, "GET", "/api/v1/events/"+bad, nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
		}
		h.do("", "GET", "/api/v1/events", nil, nil).problem(http.StatusUnauthorized, core.CodeUnauthenticated)
		if got := h.allEvents(h.env.KeyBTest, ""); len(got) != 0 {
			t.Fatalf("owner B lists %d of A's events", len(got))
		}
	})
}

// TestCreditAlertAPI: the low-balance alert over REST.
func TestCreditAlertAPI(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	var a map[string]any
	h.do(key, "GET", "/api/v1/credits/alert", nil, nil).status(http.StatusOK).decode(&a)
	if a["threshold"] != nil || a["thresholdCents"] != nil || a["below"] != false || a["balance"] != "10.00" || a["mode"] != "test" {
		t.Fatalf("default %v", a)
	}
	h.do(key, "PUT", "/api/v1/credits/alert", map[string]any{"threshold": "12.5"}, nil).status(http.StatusOK).decode(&a)
	if a["threshold"] != "12.50" || a["thresholdCents"] != float64(1250) || a["below"] != true {
		t.Fatalf("set %v", a)
	}
	h.do(key, "GET", "/api/v1/credits/alert", nil, nil).status(http.StatusOK).decode(&a)
	if a["threshold"] != "12.50" {
		t.Fatalf("read back %v", a)
	}
	var live map[string]any
	h.do(h.env.KeyALive, "GET", "/api/v1/credits/alert", nil, nil).status(http.StatusOK).decode(&live)
	if live["threshold"] != nil || live["mode"] != "live" {
		t.Fatalf("the live alert follows the test one: %v", live)
	}
	for _, body := range []any{map[string]any{}, map[string]any{"threshold": 5}, map[string]any{"threshold": "0"}, map[string]any{"threshold": "-1"},
		map[string]any{"threshold": "1.001"}, map[string]any{"threshold": "100000.01"}, map[string]any{"threshold": "5", "extra": 1},
		map[string]any{"threshold": true}, []byte(`{"threshold": "5", "threshold": null}`)} {
		res := h.do(key, "PUT", "/api/v1/credits/alert", body, map[string]string{"Content-Type": "application/json"})
		res.problem(http.StatusBadRequest, core.CodeInvalidRequest)
	}
	h.do(key, "PUT", "/api/v1/credits/alert", []byte(`threshold=5`), map[string]string{"Content-Type": "text/plain"}).
		problem(http.StatusUnsupportedMediaType, core.CodeUnsupportedContentType)
	h.do(key, "PUT", "/api/v1/credits/alert", map[string]any{"threshold": nil}, nil).status(http.StatusOK).decode(&a)
	if a["threshold"] != nil || a["below"] != false {
		t.Fatalf("off %v", a)
	}
	h.do(key, "GET", "/api/v1/credits/alert?x=1", nil, nil).problem(http.StatusBadRequest, core.CodeInvalidRequest)
	h.do(key, "DELETE", "/api/v1/credits/alert", nil, nil).problem(http.StatusMethodNotAllowed, core.CodeMethodNotAllowed)
}

func equalCounts(a, b map[events.Type]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
