package numbers_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/testenv"
)

// The agent doors' one presentation of a number: times in RFC 3339 UTC to
// the second, reservedUntil only while the number awaits payment, the
// other optional members only when set.
func TestPresentNumber(t *testing.T) {
	clk := testenv.NewClockAt(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	east := time.FixedZone("UTC+2", 2*60*60)
	created := clk.Now().Add(300 * time.Millisecond).In(east)
	reserved := clk.Now().Add(30 * time.Minute).In(east)
	paid := clk.Now().AddDate(0, 1, 0).In(east)
	activated := clk.Now().Add(time.Minute).In(east)

	base := func(s numbers.Status) *numbers.Number {
		return &numbers.Number{ID: "num_1", Mode: core.ModeTest, E164: "+14155550100", Country: "US", Region: "CA", Locality: "San Francisco",
			Status: s, Provider: "simulated", ProviderRef: "ref", MonthlyMicros: 2_000_000, MonthlyPrice: "2.00", MonthlyCents: 200, Currency: "usd",
			ReservedUntil: &reserved, CreatedAt: created}
	}
	common := func(status string, extra map[string]any) map[string]any {
		m := map[string]any{"id": "num_1", "number": "+14155550100", "mode": "test", "status": status, "country": "US", "region": "CA",
			"locality": "San Francisco", "monthlyPrice": "2.00", "monthlyCents": 200.0, "currency": "usd", "createdAt": "2026-11-01T12:00:00Z"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name   string
		number func() *numbers.Number
		want   map[string]any
	}{
		{
			name: "awaiting payment: its checkout and reservation",
			number: func() *numbers.Number {
				n := base(numbers.AwaitingPayment)
				n.CheckoutURL = "https://faxhub.test/console/numbers/num_1?mode=test"
				return n
			},
			want: common("awaiting_payment", map[string]any{"checkoutUrl": "https://faxhub.test/console/numbers/num_1?mode=test",
				"reservedUntil": "2026-11-01T12:30:00Z"}),
		},
		{
			name: "active: paid through and activated, the old reservation hidden",
			number: func() *numbers.Number {
				n := base(numbers.Active)
				n.PaidThrough, n.ActivatedAt = &paid, &activated
				return n
			},
			want: common("active", map[string]any{"paidThrough": "2026-12-01T12:00:00Z", "activatedAt": "2026-11-01T12:01:00Z"}),
		},
		{
			name: "failed: code and reason",
			number: func() *numbers.Number {
				n := base(numbers.Failed)
				n.FailureCode, n.FailureReason = "provider_error", "the provider refused the order"
				return n
			},
			want: common("failed", map[string]any{"failureCode": "provider_error", "failureReason": "the provider refused the order"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(numbers.Present(tt.number()))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("view\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}
