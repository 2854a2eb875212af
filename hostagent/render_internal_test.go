package hostagent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

func TestSnakeName(t *testing.T) {
	for in, want := range map[string]string{
		"to": "to", "faxId": "fax_id", "pagesSent": "pages_sent", "latestAttempt": "latest_attempt",
		"amountCents": "amount_cents", "billedPages": "billed_pages", "checkoutUrl": "checkout_url",
	} {
		if got := snakeName(in); got != want {
			t.Errorf("snakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A fax and a quote in hostagent are core's agent view with snake_case
// keys, nested ones too, numbers exact; failure_reason stays beside
// failure_code even when empty, as hostagent always sent it.
func TestFaxDataAndQuote(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f := &faxes.Fax{ID: "fax_1", Status: faxes.Failed, To: "+12125550100", Pages: 2, Price: "0.14", Currency: "usd",
		PaymentMethod: faxes.PayCredits, Attempts: 1, FailureCode: "busy", CreatedAt: at,
		LatestAttempt: &faxes.Attempt{Number: 1, Status: faxes.AttemptFailed, FailureCode: "busy", StartedAt: at}}
	got, err := faxData(f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	const want = `{"attempts":1,"created_at":"2026-11-01T12:00:00Z","currency":"usd","failure_code":"busy","failure_reason":"","fax_id":"fax_1",` +
		`"latest_attempt":{"failure_code":"busy","number":1,"pages_sent":0,"started_at":"2026-11-01T12:00:00Z","status":"failed"},` +
		`"pages":2,"pages_sent":0,"payment_method":"credits","price":"0.14","resolution":"standard","status":"failed","to":"+12125550100"}`
	if string(b) != want {
		t.Errorf("fax\n got %s\nwant %s", b, want)
	}

	q, err := snakeCase(core.Quote{To: "+12125550100", Country: "US", Pages: 1, BilledPages: 1, Currency: "usd", Amount: "0.07", Cents: 7, Tariff: "us"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(q)
	const wantQ = `{"amount":"0.07","amount_cents":7,"billed_pages":1,"country":"US","cover":false,"currency":"usd","pages":1,"tariff":"us","to":"+12125550100"}`
	if string(b) != wantQ {
		t.Errorf("quote\n got %s\nwant %s", b, wantQ)
	}
}
