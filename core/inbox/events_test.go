package inbox_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/internal/testenv"
)

// A received fax writes inbound_fax.received when its processing ends,
// whatever the outcome (data.status says which), with its metadata and the
// path to read it, never its text or a download link; the first whole read
// writes inbound_fax.read once, however many read it at once.
func TestInboundFaxEvents(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	n := e.BuyNumber(t, p, "+12125550151")
	types := []events.Type{events.InboundReceived, events.InboundRead}

	tests := []struct {
		name       string
		file       []byte
		wantStatus inbox.Status
	}{
		{"readable", testenv.MinimalPDF(2), inbox.Received},
		{"unreadable", []byte("this is not a document a fax machine sends"), inbox.Failed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.Events(t, p, types...))
			f := e.DeliverTestFax(t, p, n.E164, tc.file)
			got := e.Events(t, p, types...)[before:]
			if len(got) != 1 || got[0].Type != events.InboundReceived {
				t.Fatalf("events %v", testenv.EventTypes(got))
			}
			d := testenv.EventData(t, got[0])
			if d["id"] != f.ID || d["status"] != string(tc.wantStatus) || d["numberId"] != n.ID || d["to"] != n.E164 ||
				d["path"] != "/api/v1/inbox/"+f.ID || d["processedAt"] == nil {
				t.Fatalf("data %v", d)
			}
			if tc.wantStatus == inbox.Failed && d["failureReason"] == "" {
				t.Fatalf("a failed fax's event says no why: %v", d)
			}
			for _, k := range []string{"text", "textPreview", "downloadUrl", "mediaUrl", "documentKey", "providerRef"} {
				if _, ok := d[k]; ok {
					t.Errorf("the event carries %s", k)
				}
			}
			if strings.Contains(string(got[0].Data), "faxhub test page") {
				t.Error("the event carries the fax's text")
			}
		})
	}

	t.Run("read once", func(t *testing.T) {
		f := e.DeliverTestFax(t, p, n.E164, testenv.MinimalPDF(1))
		before := len(e.Events(t, p, events.InboundRead))
		if _, err := e.Svc.Inbox.List(ctx, p, inbox.Query{}); err != nil {
			t.Fatal(err)
		}
		if got := e.Events(t, p, events.InboundRead)[before:]; len(got) != 0 {
			t.Fatal("listing the inbox counts as reading")
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				got, err := e.Svc.Inbox.Get(ctx, p, f.ID)
				if err != nil {
					t.Error(err)
				} else if got.ReadAt == nil {
					t.Error("a read fax has no readAt")
				}
			})
		}
		wg.Wait()
		if _, err := e.Svc.Inbox.Download(ctx, p, f.ID); err != nil {
			t.Fatal(err)
		}
		got := e.Events(t, p, events.InboundRead)[before:]
		if len(got) != 1 {
			t.Fatalf("%d inbound_fax.read events for one fax read 9 times", len(got))
		}
		d := testenv.EventData(t, got[0])
		rb, _ := d["readBy"].(map[string]any)
		if d["id"] != f.ID || d["readAt"] == nil || rb["kind"] != string(core.PrincipalAPIKey) || d["text"] != nil {
			t.Fatalf("data %v", d)
		}
	})

	t.Run("a refused read writes nothing", func(t *testing.T) {
		f := e.DeliverTestFax(t, p, n.E164, testenv.MinimalPDF(1))
		pb := e.Principal(t, e.KeyBTest)
		if _, err := e.Svc.Inbox.Get(ctx, pb, f.ID); core.ErrorCode(err) != core.CodeNotFound {
			t.Fatalf("B reads A's fax: %v", err)
		}
		noScope := p
		noScope.Scopes = []core.Scope{core.ScopeFaxRead}
		if _, err := e.Svc.Inbox.Get(ctx, noScope, f.ID); core.ErrorCode(err) != core.CodeInsufficientScope {
			t.Fatalf("fax:read reads the inbox: %v", err)
		}
		for _, ev := range e.Events(t, p, events.InboundRead) {
			if testenv.EventData(t, ev)["id"] == f.ID {
				t.Fatal("a refused read wrote inbound_fax.read")
			}
		}
		if got, _ := e.Svc.Inbox.Get(ctx, p, f.ID); got.ReadAt == nil {
			t.Fatal("the owner's first read left no readAt")
		}
	})
}
