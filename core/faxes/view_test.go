package faxes_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// jsonOf is v as an agent door emits it, decoded back into a map so that
// a test states exactly which members are there.
func jsonOf(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The agent doors' one presentation of a fax: the members MCP, A2A and
// hostagent show, times in RFC 3339 UTC to the second whatever the zone
// and precision of the stored time, optional members only when set.
func TestPresentFax(t *testing.T) {
	clk := testenv.NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	// A zone east of UTC and sub-second precision: the view must show
	// neither.
	east := time.FixedZone("UTC+2", 2*60*60)
	created := clk.Now().Add(250 * time.Millisecond).In(east)
	clk.Advance(90 * time.Second)
	done := clk.Now().In(east)
	draft := "drf_1"

	base := func() *faxes.Fax {
		return &faxes.Fax{ID: "fax_1", Mode: core.ModeTest, Status: faxes.Queued, To: "+12125550100", Pages: 2,
			Price: "0.14", PriceCents: 14, Currency: "usd", PaymentMethod: faxes.PayCredits, CreatedAt: created,
			SentBy: faxes.SentBy{Kind: core.PrincipalAPIKey, ID: "key_1", Name: "billing backend"}}
	}
	sentBy := map[string]any{"kind": "api_key", "id": "key_1", "name": "billing backend"}
	tests := []struct {
		name string
		fax  func() *faxes.Fax
		want map[string]any
	}{
		{
			name: "queued, no draft, no failure",
			fax:  base,
			want: map[string]any{"faxId": "fax_1", "status": "queued", "to": "+12125550100", "pages": 2.0, "pagesSent": 0.0,
				"price": "0.14", "currency": "usd", "paymentMethod": "credits", "sentBy": sentBy, "attempts": 0.0, "createdAt": "2026-11-01T12:00:00Z"},
		},
		{
			name: "delivered from a draft, with a sender and its attempt",
			fax: func() *faxes.Fax {
				f := base()
				f.Status, f.From, f.DraftID, f.PagesSent, f.Attempts, f.CompletedAt = faxes.Delivered, "+14155550100", &draft, 2, 1, &done
				f.LatestAttempt = &faxes.Attempt{ID: "att_1", Number: 1, Provider: "simulated", ProviderRef: "ref", Status: faxes.AttemptDelivered,
					PagesSent: 2, StartedAt: created, FinishedAt: &done}
				return f
			},
			want: map[string]any{"faxId": "fax_1", "status": "delivered", "to": "+12125550100", "from": "+14155550100", "pages": 2.0, "pagesSent": 2.0,
				"price": "0.14", "currency": "usd", "paymentMethod": "credits", "sentBy": sentBy, "draftId": "drf_1", "attempts": 1.0,
				"createdAt": "2026-11-01T12:00:00Z", "completedAt": "2026-11-01T12:01:30Z",
				"latestAttempt": map[string]any{"number": 1.0, "status": "delivered", "pagesSent": 2.0,
					"startedAt": "2026-11-01T12:00:00Z", "finishedAt": "2026-11-01T12:01:30Z"}},
		},
		{
			name: "failed, with failure code and reason, attempt still open",
			fax: func() *faxes.Fax {
				f := base()
				f.Status, f.Attempts, f.FailureCode, f.FailureReason, f.CompletedAt = faxes.Failed, 3, "busy", "the line was busy", &done
				f.LatestAttempt = &faxes.Attempt{Number: 3, Status: faxes.AttemptFailed, FailureCode: "busy", FailureReason: "the line was busy", StartedAt: created}
				return f
			},
			want: map[string]any{"faxId": "fax_1", "status": "failed", "to": "+12125550100", "pages": 2.0, "pagesSent": 0.0,
				"price": "0.14", "currency": "usd", "paymentMethod": "credits", "sentBy": sentBy, "attempts": 3.0,
				"failureCode": "busy", "failureReason": "the line was busy",
				"createdAt": "2026-11-01T12:00:00Z", "completedAt": "2026-11-01T12:01:30Z",
				"latestAttempt": map[string]any{"number": 3.0, "status": "failed", "pagesSent": 0.0, "failureCode": "busy",
					"failureReason": "the line was busy", "startedAt": "2026-11-01T12:00:00Z"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := faxes.Present(tt.fax())
			if v.AlreadyPaid {
				t.Error("Present never sets alreadyPaid: only the door that sent the fax knows")
			}
			if got := jsonOf(t, v); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("view\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// A draft as agents see it: what was drafted, the quote in its own JSON,
// the checkout page the caller gives, the expiry in RFC 3339 UTC.
func TestPresentDraft(t *testing.T) {
	clk := testenv.NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	west := time.FixedZone("UTC-5", -5*60*60)
	q := core.Quote{To: "+12125550100", Country: "US", Pages: 2, Cover: true, BilledPages: 3, Currency: "usd",
		AmountMicros: 210000, Amount: "0.21", Cents: 21, Tariff: "us"}
	quote := map[string]any{"to": "+12125550100", "country": "US", "pages": 2.0, "cover": true, "billedPages": 3.0,
		"currency": "usd", "amount": "0.21", "amountCents": 21.0, "tariff": "us"}
	tests := []struct {
		name  string
		draft faxes.Draft
		want  map[string]any
	}{
		{
			name:  "default sender",
			draft: faxes.Draft{ID: "drf_1", Mode: core.ModeTest, To: "+12125550100", Cover: true, Pages: 2, Status: faxes.DraftOpen},
			want: map[string]any{"draftId": "drf_1", "mode": "test", "status": "open", "to": "+12125550100", "pages": 2.0, "cover": true,
				"quote": quote, "checkoutUrl": "https://faxhub.test/console/drafts/drf_1?mode=test", "expiresAt": "2026-11-02T12:00:00Z"},
		},
		{
			name:  "a chosen sender",
			draft: faxes.Draft{ID: "drf_1", Mode: core.ModeTest, To: "+12125550100", From: "+14155550100", Cover: true, Pages: 2, Status: faxes.DraftPaid},
			want: map[string]any{"draftId": "drf_1", "mode": "test", "status": "paid", "to": "+12125550100", "from": "+14155550100", "pages": 2.0, "cover": true,
				"quote": quote, "checkoutUrl": "https://faxhub.test/console/drafts/drf_1?mode=test", "expiresAt": "2026-11-02T12:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.draft
			d.ExpiresAt = clk.Now().Add(24*time.Hour + 400*time.Millisecond).In(west)
			v := faxes.PresentDraft(&faxes.DraftView{Draft: d, Quote: q}, "https://faxhub.test/console/drafts/drf_1?mode=test")
			if got := jsonOf(t, v); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("view\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}
