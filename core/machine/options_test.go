package machine_test

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/mpp"
)

// optionsBody is machineBody with send options, its digest over a body
// that carries them (as the adapter's digest of the raw body does).
func optionsBody(to, requestID string, pages int, o faxes.Options) machine.FaxRequest {
	pdf := testenv.MinimalPDF(pages)
	body := map[string]any{"to": to, "base64": base64.StdEncoding.EncodeToString(pdf), "request_id": requestID}
	b, _ := json.Marshal(o)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k, v := range m {
		body[k] = v
	}
	raw, _ := json.Marshal(body)
	return machine.FaxRequest{To: to, PDF: pdf, RequestID: requestID, Options: o, BodyDigest: mpp.ContentDigest(raw), ClientIP: "192.0.2.1"}
}

// tempoAmount is the amount of res's tempo challenge (stripe's would be
// its 50-cent minimum).
func tempoAmount(t *testing.T, res *machine.FaxResult) int64 {
	t.Helper()
	var req struct{ Amount string }
	if err := json.Unmarshal(challenge(t, res, "tempo").Request, &req); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(req.Amount, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A machine fax takes the send options but sendAt: a coverPage is priced
// into every challenge's amount, the paid fax and the order carry them,
// other options with the same request_id are another body (409); each
// mistake is invalid_request naming the field; sendAt is refused by name.
func TestMachineOptions(t *testing.T) {
	m := newMachineEnv(t)
	opts := faxes.Options{CoverPage: &faxes.CoverPage{RecipientName: "Ada", Subject: "Invoice"}, Header: "Acme",
		Resolution: faxes.ResolutionFine, Retry: &faxes.RetryPolicy{Attempts: 4, DelayMinutes: 10}}

	plain := m.fax(t, machineBody(deliverable, "req-plain", 2))
	r := optionsBody(deliverable, "req-options", 2, opts)
	res := m.fax(t, r)
	if a, b := tempoAmount(t, res), tempoAmount(t, plain); a <= b {
		t.Fatalf("a cover page is not in the challenge's amount: %d with it, %d without", a, b)
	}
	r.Credential = credential(challenge(t, res, "stripe"), m.spt(t, "pm_card_visa"))
	out := m.fax(t, r)
	o := out.Order
	if o == nil {
		t.Fatalf("paid: %+v", out.Refusal)
	}
	if !o.Cover || o.CoverPage == nil || o.CoverPage.Subject != "Invoice" || o.Header != "Acme" || o.Resolution != faxes.ResolutionFine ||
		o.Retry == nil || o.Retry.Attempts != 4 || o.SendAt != nil {
		t.Fatalf("order: %+v", o)
	}
	f, err := m.Store.GetFaxByID(ctx, o.ID)
	if err != nil || f.Options.CoverPage == nil || f.Options.CoverPage.RecipientName != "Ada" || f.Options.Header != "Acme" ||
		f.Options.Resolution != faxes.ResolutionFine || f.Options.Retry == nil || f.Options.Retry.DelayMinutes != 10 || !f.Cover {
		t.Fatalf("fax: %+v %v", f, err)
	}
	// The order as stored answers a replay with the options.
	b, _ := json.Marshal(o)
	if !strings.Contains(string(b), `"coverPage":{"recipientName":"Ada"`) || !strings.Contains(string(b), `"resolution":"fine"`) {
		t.Fatalf("order JSON %s", b)
	}

	// The same request_id with other options is another body.
	other := opts
	other.Header = "Other"
	if _, err := m.svc.Machine.Fax(ctx, optionsBody(deliverable, "req-options", 2, other)); core.ErrorCode(err) != machine.CodeRequestIDConflict {
		t.Fatalf("other options, same request_id: %v", err)
	}

	at := m.clk.Now().Add(time.Hour)
	for _, c := range []struct {
		name  string
		o     faxes.Options
		field string
	}{
		{"sendAt", faxes.Options{SendAt: &at}, "sendAt"},
		{"a 51-character header", faxes.Options{Header: strings.Repeat("h", 51)}, "header"},
		{"retry.attempts 6", faxes.Options{Retry: &faxes.RetryPolicy{Attempts: 6, DelayMinutes: 1}}, "retry.attempts"},
		{"a resolution", faxes.Options{Resolution: "ultra"}, "resolution"},
	} {
		_, err := m.svc.Machine.Fax(ctx, optionsBody(deliverable, "req-bad-"+strings.ReplaceAll(c.name, " ", "-"), 1, c.o))
		e := core.AsError(err)
		if e.Code != core.CodeInvalidRequest || e.Fields["field"] != c.field {
			t.Errorf("%s: %v (fields %v), want invalid_request naming %s", c.name, err, e.Fields, c.field)
		}
	}
	if _, err := m.svc.Machine.Quote(ctx, machine.QuoteRequest{To: deliverable, Pages: 1, Options: faxes.Options{SendAt: &at}}); core.AsError(err).Fields["field"] != "sendAt" {
		t.Fatalf("validate with sendAt: %v", err)
	}
	q, err := m.svc.Machine.Quote(ctx, machine.QuoteRequest{To: deliverable, Pages: 1, Options: faxes.Options{CoverPage: &faxes.CoverPage{Subject: "x"}}})
	if err != nil || !q.Cover || q.BilledPages != 2 {
		t.Fatalf("validate with a coverPage: %+v %v", q, err)
	}
}
