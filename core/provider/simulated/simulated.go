// Package simulated is the fax provider of test mode: nothing is dialled,
// and the outcome of a fax is chosen by its destination number, so every
// path of delivery (retries, partial pages, permanent failures) can be
// exercised on purpose. Transmission takes about as long as a real fax would,
// scaled by Options.TimeScale.
//
// Like a real provider it is asynchronous: Send accepts the fax at once and
// the outcome is reported when the simulated call ends, through
// Options.Report, which must be durable (the job queue), so a process that
// dies mid-call loses nothing: the report arrives on whichever replica
// runs it. A call of zero duration (TimeScale 0) reports its outcome as
// Send's result. The attempt id is the idempotency key of a call: sending
// the same attempt again (a delivery resumed after a crash) accepts it
// under the same reference and places no second call, as a real
// provider's idempotency key would. The simulator's record of the keys it
// has seen is the durable outcome it scheduled (Options.Report says when
// one already exists), so it survives the crash of the process that made
// the first call.
package simulated

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
)

// Name is the provider name recorded on attempts.
const Name = "simulated"

// Outcome is what the simulated network does with a fax.
type Outcome string

const (
	// OutcomeDelivered: every page arrives.
	OutcomeDelivered Outcome = "delivered"
	// OutcomeBusy: the line is busy; retryable.
	OutcomeBusy Outcome = "busy"
	// OutcomeNoAnswer: it rings out; retryable.
	OutcomeNoAnswer Outcome = "no_answer"
	// OutcomeNotAFax: a person or voicemail answers; final.
	OutcomeNotAFax Outcome = "not_a_fax_machine"
	// OutcomePartial: the call drops half way; final, with the pages sent.
	OutcomePartial Outcome = "partial"
	// OutcomeProviderErrorOnce: the provider's API fails on the first
	// attempt and the retry is delivered.
	OutcomeProviderErrorOnce Outcome = "provider_error_once"
	// OutcomeProviderError: the provider's API fails on every attempt, so
	// the fax fails once its attempts are used up.
	OutcomeProviderError Outcome = "provider_error"
	// OutcomeSlowAPI: the provider's API is slow to answer a send (it
	// takes the document at slowAPIPerPage); the call is placed as the
	// request arrives and every page is delivered. It holds a delivery
	// mid-attempt, with the call placed but its reference not yet
	// recorded: the window a crash must not turn into a second call.
	OutcomeSlowAPI Outcome = "slow_api"
)

// TestNumber is one documented destination with a fixed outcome.
type TestNumber struct {
	Number      string // E.164
	Outcome     Outcome
	Description string
}

// testNumbers are 555-01xx numbers in New York's 212 area code: valid to
// libphonenumber (unlike +1 555…), reserved for fiction, so never a real
// line. Every other valid number is delivered.
var testNumbers = [...]TestNumber{
	{"+12125550100", OutcomeDelivered, "Delivered: every page arrives (as does any number not listed here)."},
	{"+12125550101", OutcomeBusy, "Line busy: the attempt fails with failure code busy and is retried."},
	{"+12125550102", OutcomeNoAnswer, "No answer: it rings out; failure code no_answer, retried."},
	{"+12125550103", OutcomeNotAFax, "A person answers, not a fax machine: failure code not_a_fax_machine, not retried; the fax fails."},
	{"+12125550104", OutcomePartial, "The call drops half way: half the pages (rounded down, at least one of two or more) are sent; the fax ends partial with failure code call_dropped."},
	{"+12125550105", OutcomeProviderErrorOnce, "The provider's API errors on the first attempt; the retry is delivered."},
	{"+12125550106", OutcomeProviderError, "The provider's API errors on every attempt; the fax fails after its last retry."},
	{"+12125550107", OutcomeSlowAPI, "The provider's API takes 2 s a page to answer a send (the call is placed at once; a send of the same attempt again answers at once); every page arrives."},
}

// TestNumbers returns the documented test destinations, in number fax.
func TestNumbers() []TestNumber {
	return append([]TestNumber(nil), testNumbers[:]...)
}

// OutcomeFor returns what the simulated network does with a fax to number.
func OutcomeFor(number string) Outcome {
	for _, n := range testNumbers {
		if n.Number == number {
			return n.Outcome
		}
	}
	return OutcomeDelivered
}

// Real-world durations of a G3 fax call at 14.4 kbit/s, before TimeScale.
const (
	connectTime   = 15 * time.Second // dial, ring, T.30 handshake
	perPageTime   = 30 * time.Second
	busyTime      = 5 * time.Second
	noAnswerTime  = 60 * time.Second // about ten rings
	notAFaxTime   = 35 * time.Second // T.30 timer T1 runs out
	apiErrorTime  = 500 * time.Millisecond
	hangupTime    = 2 * time.Second
	pdfHeaderSize = 5
)

// slowAPIPerPage is how long OutcomeSlowAPI's API takes to answer, per
// page: a 10-page fax holds Send 20 s, under the queue's 30 s job timeout
// at real time; a longer one times out and the retried job resends the
// attempt, which answers at once.
const slowAPIPerPage = 2 * time.Second

// Options tune the simulation.
type Options struct {
	// TimeScale multiplies real-world durations: 1 is real time (a 3-page
	// fax takes about 1m45s), 0.01 makes it about a second, 0 is instant.
	TimeScale float64
	// Report schedules the outcome of an accepted call for the moment the
	// call ends. It must be durable, and idempotent per attempt: placed is
	// false when an outcome of attemptID is already scheduled (or was
	// recorded), which means the call was placed before, and nothing new
	// is scheduled. Needed when TimeScale is above 0.
	Report func(ctx context.Context, at time.Time, faxID, attemptID string, res faxes.ProviderResult) (placed bool, err error)
	// ReportNumber schedules the answer to a number order for the moment
	// provisioning ends; durable like Report. Needed when TimeScale is
	// above 0 and numbers are ordered.
	ReportNumber func(ctx context.Context, at time.Time, provider, orderRef string, res numbers.OrderResult) error
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Provider is the simulated fax provider.
type Provider struct {
	scale        float64
	report       func(ctx context.Context, at time.Time, faxID, attemptID string, res faxes.ProviderResult) (bool, error)
	reportNumber func(ctx context.Context, at time.Time, provider, orderRef string, res numbers.OrderResult) error
	now          func() time.Time
}

var _ faxes.Provider = (*Provider)(nil)

// New returns a simulated provider.
func New(opts Options) *Provider {
	p := &Provider{scale: max(opts.TimeScale, 0), report: opts.Report, reportNumber: opts.ReportNumber, now: opts.Now}
	if p.now == nil {
		p.now = time.Now
	}
	return p
}

// Name is "simulated".
func (p *Provider) Name() string { return Name }

// Send simulates one fax call. It reads the document as a real provider
// would fetch it, accepts the call under a reference derived from the
// attempt id, and schedules the call's outcome (or, for a call of zero
// duration, returns it).
func (p *Provider) Send(ctx context.Context, req faxes.ProviderRequest) (faxes.ProviderResult, error) {
	pages := max(req.Pages, 1)
	outcome := OutcomeFor(req.To)
	if outcome == OutcomeProviderError || outcome == OutcomeProviderErrorOnce && req.Attempt <= 1 {
		return faxes.ProviderResult{}, fmt.Errorf("simulated provider error: the fax API answered 503 Service Unavailable for %s (attempt %d)", req.To, req.Attempt)
	}

	if res, ok, err := p.checkDocument(ctx, req); err != nil || !ok {
		return res, err
	}

	var d time.Duration
	res := faxes.ProviderResult{ProviderRef: Ref(req.AttemptID), Status: faxes.AttemptFailed}
	switch outcome {
	case OutcomeBusy:
		d = busyTime
		res.FailureCode, res.FailureReason, res.Retryable = faxes.FailureBusy, "the line was busy", true
	case OutcomeNoAnswer:
		d = noAnswerTime
		res.FailureCode, res.FailureReason, res.Retryable = faxes.FailureNoAnswer, "no one answered after ten rings", true
	case OutcomeNotAFax:
		d = notAFaxTime
		res.FailureCode, res.FailureReason = faxes.FailureNotAFax, "the call was answered, but not by a fax machine"
	case OutcomePartial:
		sent := pages / 2
		if pages > 1 {
			sent = max(sent, 1)
		}
		d = connectTime + time.Duration(sent)*perPageTime + hangupTime
		res.Status, res.PagesSent = faxes.AttemptPartial, sent
		res.FailureCode, res.FailureReason = faxes.FailureCallDropped, fmt.Sprintf("the call dropped after page %d of %d", sent, pages)
	default:
		d = connectTime + time.Duration(pages)*perPageTime + hangupTime
		res.Status, res.PagesSent = faxes.AttemptDelivered, pages
	}
	res.Duration = p.scaled(d)
	if res.Duration <= 0 {
		return res, nil
	}
	if p.report == nil {
		return faxes.ProviderResult{}, errors.New("simulated provider: no Report function to deliver outcomes with")
	}
	placed, err := p.report(ctx, p.now().Add(res.Duration), req.FaxID, req.AttemptID, res)
	if err != nil {
		return faxes.ProviderResult{}, fmt.Errorf("simulated fax to %s: schedule its outcome: %w", req.To, err)
	}
	accepted := faxes.ProviderResult{Status: faxes.AttemptSending, ProviderRef: res.ProviderRef}
	if !placed {
		// A resend of an attempt whose call is under way or over: the
		// idempotency key answers with the first call, at once.
		return accepted, nil
	}
	if outcome == OutcomeSlowAPI {
		// The call is placed; the answer that says so is slow.
		if err := p.wait(ctx, p.scaled(time.Duration(pages)*slowAPIPerPage)); err != nil {
			return faxes.ProviderResult{}, fmt.Errorf("simulated fax to %s: waiting for the provider's answer: %w", req.To, err)
		}
	}
	return accepted, nil
}

// wait sleeps for d unless ctx ends first.
func (p *Provider) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ref is the simulated provider's reference of the call of an attempt:
// the same attempt always gets the same reference.
func Ref(attemptID string) string {
	sum := sha256.Sum256([]byte(attemptID))
	return "simfax_" + hex.EncodeToString(sum[:8])
}

// checkDocument opens and reads the PDF as an upload would. A document that
// cannot be opened is an infrastructure error (retried); one that is not a
// PDF is refused for good, as a real provider would.
func (p *Provider) checkDocument(ctx context.Context, req faxes.ProviderRequest) (faxes.ProviderResult, bool, error) {
	if req.PDF == nil {
		return faxes.ProviderResult{}, false, fmt.Errorf("simulated fax to %s: no document to send", req.To)
	}
	rc, err := req.PDF(ctx)
	if err != nil {
		return faxes.ProviderResult{}, false, fmt.Errorf("simulated fax to %s: open document: %w", req.To, err)
	}
	defer rc.Close()
	head := make([]byte, pdfHeaderSize)
	n, err := io.ReadFull(rc, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return faxes.ProviderResult{}, false, fmt.Errorf("simulated fax to %s: read document: %w", req.To, err)
	}
	if !bytes.Equal(head[:n], []byte("%PDF-")) {
		return faxes.ProviderResult{
			Status: faxes.AttemptFailed, FailureCode: "invalid_document",
			FailureReason: "the document is not a PDF",
		}, false, nil
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return faxes.ProviderResult{}, false, fmt.Errorf("simulated fax to %s: read document: %w", req.To, err)
	}
	return faxes.ProviderResult{}, true, nil
}

func (p *Provider) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * p.scale)
}
