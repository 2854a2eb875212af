package simulated_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/provider/simulated"
)

const minimalPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

// doc serves a document and remembers whether it was closed.
type doc struct {
	body   string
	err    error
	mu     sync.Mutex
	opened int
	closed int
}

type closeCounter struct {
	io.Reader
	d *doc
}

func (c closeCounter) Close() error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	c.d.closed++
	return nil
}

func (d *doc) open(context.Context) (io.ReadCloser, error) {
	if d.err != nil {
		return nil, d.err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opened++
	return closeCounter{strings.NewReader(d.body), d}, nil
}

func request(to string, pages, attempt int, d *doc) faxes.ProviderRequest {
	return faxes.ProviderRequest{FaxID: "ord_1", AttemptID: "att_1", Attempt: attempt, To: to, Pages: pages, PDF: d.open}
}

func TestTestNumbersAreValidUSNumbers(t *testing.T) {
	nums := simulated.TestNumbers()
	if len(nums) == 0 {
		t.Fatal("no test numbers")
	}
	seen := map[simulated.Outcome]bool{}
	for _, n := range nums {
		p, err := phonenumbers.Parse(n.Number, "")
		if err != nil {
			t.Fatalf("%s: %v", n.Number, err)
		}
		if !phonenumbers.IsValidNumber(p) {
			t.Errorf("%s is not a valid number to libphonenumber", n.Number)
		}
		if region := phonenumbers.GetRegionCodeForNumber(p); region != "US" {
			t.Errorf("%s is in %s, want US", n.Number, region)
		}
		if e164 := phonenumbers.Format(p, phonenumbers.E164); e164 != n.Number {
			t.Errorf("%s is not in E.164 form (%s)", n.Number, e164)
		}
		if n.Description == "" {
			t.Errorf("%s has no description", n.Number)
		}
		if seen[n.Outcome] {
			t.Errorf("outcome %s is listed twice", n.Outcome)
		}
		seen[n.Outcome] = true
	}
	// The table is a copy: changing it changes nothing.
	nums[1].Outcome = simulated.OutcomeDelivered
	if simulated.OutcomeFor(simulated.TestNumbers()[1].Number) == simulated.OutcomeDelivered {
		t.Error("TestNumbers exposes the provider's own table")
	}
}

func TestOutcomes(t *testing.T) {
	p := simulated.New(simulated.Options{})
	if p.Name() != "simulated" {
		t.Fatalf("Name = %q", p.Name())
	}
	cases := []struct {
		name      string
		to        string
		pages     int
		attempt   int
		wantErr   bool
		status    faxes.AttemptStatus
		pagesSent int
		code      string
		retryable bool
	}{
		{"listed delivered", "+12125550100", 3, 1, false, faxes.AttemptDelivered, 3, "", false},
		{"any other number", "+14155550123", 2, 1, false, faxes.AttemptDelivered, 2, "", false},
		{"foreign number", "+442079460958", 1, 1, false, faxes.AttemptDelivered, 1, "", false},
		{"busy", "+12125550101", 3, 1, false, faxes.AttemptFailed, 0, "busy", true},
		{"no answer", "+12125550102", 3, 2, false, faxes.AttemptFailed, 0, "no_answer", true},
		{"not a fax", "+12125550103", 3, 1, false, faxes.AttemptFailed, 0, "not_a_fax_machine", false},
		{"partial of 5", "+12125550104", 5, 1, false, faxes.AttemptPartial, 2, "call_dropped", false},
		{"partial of 4", "+12125550104", 4, 1, false, faxes.AttemptPartial, 2, "call_dropped", false},
		{"partial of 3", "+12125550104", 3, 1, false, faxes.AttemptPartial, 1, "call_dropped", false},
		{"partial of 2", "+12125550104", 2, 1, false, faxes.AttemptPartial, 1, "call_dropped", false},
		{"partial of 1", "+12125550104", 1, 1, false, faxes.AttemptPartial, 0, "call_dropped", false},
		{"error once, first attempt", "+12125550105", 2, 1, true, "", 0, "", false},
		{"error once, retry", "+12125550105", 2, 2, false, faxes.AttemptDelivered, 2, "", false},
		{"always error, first", "+12125550106", 2, 1, true, "", 0, "", false},
		{"always error, third", "+12125550106", 2, 3, true, "", 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &doc{body: minimalPDF}
			res, err := p.Send(t.Context(), request(c.to, c.pages, c.attempt, d))
			if c.wantErr {
				if err == nil {
					t.Fatalf("want a provider error, got %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.status || res.PagesSent != c.pagesSent || res.FailureCode != c.code || res.Retryable != c.retryable {
				t.Fatalf("got status=%s pagesSent=%d code=%q retryable=%v, want %s %d %q %v",
					res.Status, res.PagesSent, res.FailureCode, res.Retryable, c.status, c.pagesSent, c.code, c.retryable)
			}
			if c.code != "" && res.FailureReason == "" {
				t.Error("failure without a reason")
			}
			if !strings.HasPrefix(res.ProviderRef, "simfax_") {
				t.Errorf("ProviderRef = %q", res.ProviderRef)
			}
			if d.opened != 1 || d.closed != 1 {
				t.Errorf("document opened %d and closed %d times, want 1 and 1", d.opened, d.closed)
			}
		})
	}
}

// reports records what the simulator schedules.
type reports struct {
	mu   sync.Mutex
	at   []time.Time
	ids  []string
	res  []faxes.ProviderResult
	fail error
}

// report is idempotent per attempt, as the queue's unique insert is.
func (r *reports) report(_ context.Context, at time.Time, faxID, attemptID string, res faxes.ProviderResult) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return false, r.fail
	}
	for _, id := range r.ids {
		if id == faxID+"/"+attemptID {
			return false, nil
		}
	}
	r.at, r.ids, r.res = append(r.at, at), append(r.ids, faxID+"/"+attemptID), append(r.res, res)
	return true, nil
}

// Above scale 0 a call is accepted at once and its outcome scheduled for
// when the call ends: connect 15 s + 30 s a page + 2 s hang-up, scaled.
func TestAsyncTimings(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		to     string
		pages  int
		scale  float64
		want   time.Duration
		status faxes.AttemptStatus
	}{
		{"+12125550100", 3, 1, 107 * time.Second, faxes.AttemptDelivered},
		{"+12125550100", 3, 0.01, 1070 * time.Millisecond, faxes.AttemptDelivered},
		{"+12125550104", 4, 1, 77 * time.Second, faxes.AttemptPartial}, // two of four pages
		{"+12125550101", 3, 1, 5 * time.Second, faxes.AttemptFailed},
		{"+12125550102", 3, 1, 60 * time.Second, faxes.AttemptFailed},
		{"+12125550103", 3, 1, 35 * time.Second, faxes.AttemptFailed},
	}
	for _, c := range cases {
		r := &reports{}
		p := simulated.New(simulated.Options{TimeScale: c.scale, Report: r.report, Now: func() time.Time { return now }})
		res, err := p.Send(t.Context(), request(c.to, c.pages, 1, &doc{body: minimalPDF}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != faxes.AttemptSending || res.ProviderRef != simulated.Ref("att_1") {
			t.Errorf("%s: accepted as %+v", c.to, res)
		}
		if len(r.at) != 1 || !r.at[0].Equal(now.Add(c.want)) || r.ids[0] != "ord_1/att_1" {
			t.Fatalf("%s, %d pages, scale %v: scheduled %v %v, want one at +%s", c.to, c.pages, c.scale, r.at, r.ids, c.want)
		}
		if r.res[0].Status != c.status || r.res[0].Duration != c.want || r.res[0].ProviderRef != res.ProviderRef {
			t.Errorf("%s: scheduled outcome %+v", c.to, r.res[0])
		}
	}
}

// The attempt id is the call's idempotency key: the same attempt gets the
// same reference; another attempt another.
func TestAttemptIsIdempotencyKey(t *testing.T) {
	r := &reports{}
	p := simulated.New(simulated.Options{TimeScale: 1, Report: r.report})
	a, err := p.Send(t.Context(), request("+12125550100", 1, 1, &doc{body: minimalPDF}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Send(t.Context(), request("+12125550100", 1, 1, &doc{body: minimalPDF}))
	if err != nil || a.ProviderRef != b.ProviderRef {
		t.Fatalf("resent attempt: %v %v %v", a, b, err)
	}
	if len(r.ids) != 1 {
		t.Fatalf("a resent attempt placed a second call: %v", r.ids)
	}
	other := request("+12125550100", 1, 2, &doc{body: minimalPDF})
	other.AttemptID = "att_2"
	c, _ := p.Send(t.Context(), other)
	if c.ProviderRef == a.ProviderRef {
		t.Fatal("two attempts share a reference")
	}
	if len(r.ids) != 2 {
		t.Fatalf("another attempt is another call: %v", r.ids)
	}
}

// The slow number places its call at once and answers after 2 s a page
// (scaled): a delivery is held mid-attempt with its call placed. Sending
// the same attempt again answers at once, placing no second call; a send
// whose context ends while waiting returns the context's error.
func TestSlowAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &reports{}
		p := simulated.New(simulated.Options{TimeScale: 0.5, Report: r.report})
		start := time.Now()
		res, err := p.Send(t.Context(), request("+12125550107", 4, 1, &doc{body: minimalPDF}))
		if err != nil || res.Status != faxes.AttemptSending || res.ProviderRef != simulated.Ref("att_1") {
			t.Fatalf("slow send: %+v %v", res, err)
		}
		if took := time.Since(start); took != 4*time.Second {
			t.Fatalf("the slow API answered after %s, want 4 pages × 2 s × 0.5 = 4s", took)
		}
		if len(r.res) != 1 || r.res[0].Status != faxes.AttemptDelivered || r.res[0].PagesSent != 4 {
			t.Fatalf("scheduled %+v", r.res)
		}
		start = time.Now()
		again, err := p.Send(t.Context(), request("+12125550107", 4, 1, &doc{body: minimalPDF}))
		if err != nil || again != res || time.Since(start) != 0 || len(r.ids) != 1 {
			t.Fatalf("resend: %+v %v after %s; calls %v", again, err, time.Since(start), r.ids)
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		other := request("+12125550107", 4, 2, &doc{body: minimalPDF})
		other.AttemptID = "att_2"
		if _, err := p.Send(ctx, other); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("send cut short: err = %v", err)
		}
		if len(r.ids) != 2 {
			t.Fatalf("the cut-short call was placed: %v", r.ids)
		}
	})
}

// A call that cannot be scheduled is not accepted.
func TestReportFailure(t *testing.T) {
	r := &reports{fail: errors.New("database down")}
	p := simulated.New(simulated.Options{TimeScale: 1, Report: r.report})
	if _, err := p.Send(t.Context(), request("+12125550100", 1, 1, &doc{body: minimalPDF})); err == nil || !strings.Contains(err.Error(), "database down") {
		t.Fatalf("err = %v", err)
	}
	p = simulated.New(simulated.Options{TimeScale: 1})
	if _, err := p.Send(t.Context(), request("+12125550100", 1, 1, &doc{body: minimalPDF})); err == nil {
		t.Fatal("accepted a call with nowhere to report its outcome")
	}
}

func TestDocumentProblems(t *testing.T) {
	p := simulated.New(simulated.Options{})

	_, err := p.Send(t.Context(), request("+12125550100", 1, 1, &doc{err: errors.New("blob store down")}))
	if err == nil || !strings.Contains(err.Error(), "blob store down") {
		t.Fatalf("unopenable document: err = %v", err)
	}

	d := &doc{body: "PK\x03\x04 this is a zip"}
	res, err := p.Send(t.Context(), request("+12125550100", 1, 1, d))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != faxes.AttemptFailed || res.FailureCode != "invalid_document" || res.Retryable {
		t.Fatalf("non-PDF: %+v", res)
	}
	if d.closed != 1 {
		t.Fatalf("document closed %d times", d.closed)
	}

	if _, err := p.Send(t.Context(), request("+12125550100", 1, 1, &doc{body: ""})); err != nil {
		t.Fatal(err)
	}

	req := request("+12125550100", 1, 1, nil)
	req.PDF = nil
	if _, err := p.Send(t.Context(), req); err == nil {
		t.Fatal("request without a document accepted")
	}
}
