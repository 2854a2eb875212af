package inbox_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/inbox"
)

func TestInboxViews(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 12, 30, 15, 500_000_000, time.FixedZone("UTC+2", 2*3600))
	receiving := &inbox.InboundFax{ID: "inb_1", NumberID: "num_1", From: "+15550001111", To: "+15550002222", Status: inbox.Receiving, ReceivedAt: at}
	received := *receiving
	received.Status, received.Pages, received.TextStatus, received.TextPreview, received.Text, received.TextMethod =
		inbox.Received, 2, inbox.TextExtracted, "Dear", "Dear Ada", "text"
	link := &inbox.Link{URL: "https://api.faxhub.test/api/v1/inbox/files/t", ExpiresAt: at.Add(5 * time.Minute)}
	for _, tc := range []struct {
		name string
		v    any
		keys []string
		want map[string]any
	}{
		{"item, receiving", inbox.PresentItem(receiving),
			[]string{"from", "id", "numberId", "pages", "receivedAt", "status", "to"},
			map[string]any{"receivedAt": "2026-03-04T10:30:15Z", "status": "receiving"}},
		{"fax, received with its link", inbox.PresentFax(&received, link),
			[]string{"downloadExpiresAt", "downloadUrl", "from", "id", "numberId", "pages", "receivedAt", "status", "text", "textMethod", "textPreview", "textStatus", "to"},
			map[string]any{"downloadExpiresAt": "2026-03-04T10:35:15Z", "text": "Dear Ada", "textStatus": "extracted"}},
		{"fax, receiving: no link, a note", inbox.PresentFax(receiving, nil),
			[]string{"from", "id", "numberId", "pages", "receivedAt", "status", "text", "textNote", "to"},
			map[string]any{"text": ""}},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("%s: keys %v, want %v", tc.name, keys, tc.keys)
		}
		for k, v := range tc.want {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, m[k], v)
			}
		}
	}
}
