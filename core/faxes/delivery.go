package faxes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
)

// Deliver makes one delivery attempt for a fax; the queue calls it for
// each delivery job. It is safe to call again for the same fax (a job
// rescued after its process died): terminal faxes are left alone, an
// attempt the provider accepted (its reference is recorded) waits for its
// outcome, and an attempt interrupted before the provider's answer was
// recorded is resumed: sent again under the same attempt id, the provider's
// idempotency key, if it started less than ResumeWindow ago, or else closed
// as interrupted before a new one starts.
//
// Retryable failures schedule a new delivery job (with backoff) in the same
// transaction that records them, so a retry is never lost or doubled.
func (s *Service) Deliver(ctx context.Context, faxID string) error {
	prep, err := s.prepareFaxed(ctx, faxID)
	if err != nil {
		return err
	}
	o, attempt, err := s.startAttempt(ctx, faxID, prep)
	if err != nil || attempt == nil {
		return err
	}
	provider := s.d.Providers[o.Mode]
	if provider == nil {
		return fmt.Errorf("no fax provider for mode %s", o.Mode)
	}
	key, pages, err := s.faxedDocument(ctx, o, prep, attempt.StartedAt)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var bad *unfaxableError
		if !errors.As(err, &bad) {
			return err // the store or the blobs failed: the job retries
		}
		res := ProviderResult{Status: AttemptFailed, FailureCode: FailureMedia, FailureReason: bad.Error()}
		return s.recordOutcome(context.WithoutCancel(ctx), o.ID, attempt.ID, res, &started{o, attempt})
	}
	media, err := s.providerMediaURL(ctx, o.ID)
	if err != nil {
		return err
	}
	sentAt := s.now()
	res, sendErr := provider.Send(ctx, ProviderRequest{
		FaxID: o.ID, AttemptID: attempt.ID, Attempt: attempt.Number, To: o.To, From: o.From, Pages: pages,
		PDF:        func(ctx context.Context) (io.ReadCloser, error) { return s.d.Blobs.Open(ctx, key) },
		MediaURL:   media,
		Resolution: o.Options.resolution(), Header: o.Options.Header,
	})
	if sendErr != nil {
		if ctx.Err() != nil {
			// Shutting down: leave the attempt open; the job is retried and
			// the interrupted attempt is closed then.
			return ctx.Err()
		}
		res = ProviderResult{Status: AttemptFailed, FailureCode: FailureProvider, FailureReason: sendErr.Error(), Retryable: true}
	}
	if res.Duration == 0 {
		res.Duration = s.now().Sub(sentAt)
	}
	return s.recordOutcome(context.WithoutCancel(ctx), o.ID, attempt.ID, res, &started{o, attempt})
}

// startAttempt moves a queued fax to sending and opens an attempt. It
// returns a nil attempt when there is nothing to do. The attempt that goes
// ahead (a new one or one resumed) records prep, the document as faxed
// composed for it, if the fax has none yet: with the move, so before any
// byte leaves. A fax prep read queued and due, still as read, starts
// without being read again (startAsRead); any other is read and decided
// on in a transaction.
func (s *Service) startAttempt(ctx context.Context, faxID string, prep *faxedPrep) (*Fax, *Attempt, error) {
	if prep != nil {
		o, a, err := s.startAsRead(ctx, prep)
		if !errors.Is(err, core.ErrConflict) {
			return o, a, err
		}
		// The fax moved since prep read it, or as read it was not one to
		// start now: decide on it as it is now.
	}
	var (
		fax     *Fax
		attempt *Attempt
		ended   outcomeEvents
	)
	err := s.inTx(ctx, func(tx Tx) error {
		ended = outcomeEvents{}
		o, err := tx.GetFaxByID(ctx, faxID)
		if err != nil {
			return fmt.Errorf("load fax %s: %w", faxID, err)
		}
		fresh := prep.recordsOn(o)
		record := func() error {
			if !fresh {
				return nil
			}
			if err := tx.SetFaxedDocument(ctx, o.ID, prep.sum, prep.pages); err != nil {
				return fmt.Errorf("record the document as faxed of %s: %w", o.ID, err)
			}
			o.FaxedSHA256, o.FaxedPages = prep.sum, prep.pages
			return nil
		}
		now := s.now()
		switch o.Status {
		case Queued, Scheduled:
			if o.NextAttemptAt != nil && now.Before(*o.NextAttemptAt) {
				// Early (clock skew between replicas): ask the queue to run
				// the job again at the scheduled time rather than drop it.
				return &NotBeforeError{At: *o.NextAttemptAt}
			}
		case Sending:
			last, err := tx.LatestAttempt(ctx, o.ID)
			if err != nil && !errors.Is(err, core.ErrNoRows) {
				return err
			}
			if last != nil && last.Status == AttemptSending {
				if last.ProviderRef != "" {
					return nil // the provider has it; its outcome arrives separately
				}
				if now.Sub(last.StartedAt) < ResumeWindow {
					fax, attempt = o, last
					return record()
				}
				fin := now
				last.Status, last.FailureCode, last.FailureReason, last.FinishedAt = AttemptFailed, "interrupted", "the worker stopped before the provider answered", &fin
				last.Retryable = true
				if err := tx.UpdateAttempt(ctx, last); err != nil {
					return err
				}
				ended.seen(last, nil)
			}
			if o.Attempts >= s.maxAttempts(o) {
				// Interrupted on its last attempt (a crash loop, or a
				// provider that never answers): fail it and give the money
				// back rather than leave it sending forever.
				o.Status, o.CompletedAt = Failed, &now
				o.FailureCode, o.FailureReason, o.UpdatedAt = "interrupted", "delivery was interrupted on the last attempt", now
				if err := s.saveFax(ctx, tx, o, last, Sending); err != nil {
					return err
				}
				ended.seen(nil, o)
				return s.settle(ctx, tx, o, credits.LedgerRelease)
			}
		default:
			return nil // terminal
		}
		m, a, err := s.openAttempt(o, prep, now)
		if err != nil {
			return err
		}
		if err := tx.MoveFax(ctx, m); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return nil // another worker took it
			}
			return err
		}
		fax, attempt = o, a
		return nil
	})
	if err == nil {
		ended.report(s.d.Metrics)
	}
	return fax, attempt, err
}

// startAsRead opens the first attempt of the fax prep read without reading
// it again or a transaction: on PostgreSQL one statement, one round trip
// where the transaction takes four, that writes only if the fax is still
// as prep read it (Move.Read). ErrConflict if it is not, or if as read it
// is not a fax to start now (early, sending, ended): startAttempt's
// transaction decides on those.
func (s *Service) startAsRead(ctx context.Context, prep *faxedPrep) (*Fax, *Attempt, error) {
	read, now := prep.fax, s.now()
	if read.Status != Queued && read.Status != Scheduled || read.NextAttemptAt != nil && now.Before(*read.NextAttemptAt) {
		return nil, nil, core.ErrConflict
	}
	o := *read
	m, a, err := s.openAttempt(&o, prep, now)
	if err != nil {
		return nil, nil, err
	}
	m.Read = read
	if err := s.d.Store.MoveFax(ctx, m); err != nil {
		return nil, nil, err
	}
	return &o, a, nil
}

// openAttempt moves o, queued or scheduled, to sending with a new attempt
// and, if o has none yet, the document as faxed prep composed; it returns
// the move that writes them, with the fax.sending event showing the
// attempt (one statement on PostgreSQL), and the attempt.
func (s *Service) openAttempt(o *Fax, prep *faxedPrep, now time.Time) (Move, *Attempt, error) {
	from := o.Status
	o.Attempts++
	o.Status, o.UpdatedAt, o.NextAttemptAt = Sending, now, nil
	if prep.recordsOn(o) {
		// Recorded by the move to sending itself, not by a statement of
		// its own.
		o.FaxedSHA256, o.FaxedPages = prep.sum, prep.pages
	}
	a := &Attempt{ID: core.NewID(core.PrefixAttempt), FaxID: o.ID, Number: o.Attempts, Provider: s.ProviderName(o.Mode), Status: AttemptSending, StartedAt: now}
	e, err := s.faxEventOf(o, a, from)
	if err != nil {
		return Move{}, nil, err
	}
	return Move{Fax: o, From: []Status{from}, Event: e, Started: a}, a, nil
}

func (s *Service) ProviderName(m core.Mode) string {
	if p := s.d.Providers[m]; p != nil {
		return p.Name()
	}
	return "none"
}

// RecordProviderOutcome records the end of an attempt reported
// asynchronously by a provider (a signed webhook).
func (s *Service) RecordProviderOutcome(ctx context.Context, faxID, attemptID string, res ProviderResult) error {
	return s.recordOutcome(ctx, faxID, attemptID, res, nil)
}

// errStaleOutcome rolls back a report that lost a race with another report
// of the same attempt (a provider's webhook can arrive before Send's own
// answer is recorded).
var errStaleOutcome = errors.New("stale provider outcome")

// errMovedSinceStart rolls back an outcome recorded on the fax as its
// attempt's start left it when the fax has moved since (see started).
var errMovedSinceStart = errors.New("the fax moved since its attempt started")

// started is a fax as the start of its attempt left it, and the attempt:
// what Deliver knows when it records the provider's answer, so the
// outcome's transaction need not read them again. Its moves then write
// only if the fax is still as started (Move.Read); if it moved (a
// webhook, a cancel at the provider), the outcome is recorded again on
// the fax as read.
type started struct {
	fax     *Fax
	attempt *Attempt
}

func (s *Service) recordOutcome(ctx context.Context, faxID, attemptID string, res ProviderResult, known *started) error {
	err := s.recordOutcomeOn(ctx, faxID, attemptID, res, known)
	if errors.Is(err, errMovedSinceStart) {
		err = s.recordOutcomeOn(ctx, faxID, attemptID, res, nil)
	}
	return err
}

// recordOutcomeOn records res on the fax and attempt known, or, if nil, on
// them as read in the transaction.
func (s *Service) recordOutcomeOn(ctx context.Context, faxID, attemptID string, res ProviderResult, known *started) error {
	// known's outcome is decided once, on copies, before any transaction.
	var decided *outcome
	if known != nil {
		fax, attempt := *known.fax, *known.attempt
		if stale(&fax, &attempt, attemptID) {
			return nil
		}
		w, err := s.outcomeOf(&fax, &attempt, res, known.fax)
		if err != nil {
			return err
		}
		if w.alone() {
			// Nothing but the move and what goes with it: the store writes
			// it atomically by itself (one statement on PostgreSQL), so
			// the most common end of a delivery needs no transaction.
			if err := refusedAsStarted(w, s.writeOutcome(ctx, s.d.Store, w)); err != nil {
				return err
			}
			var ended outcomeEvents
			ended.seen(w.move.Updated, w.move.Fax)
			ended.report(s.d.Metrics)
			return nil
		}
		decided = &w
	}
	// What ended, for Metrics once the transaction has committed.
	var ended outcomeEvents
	err := s.inTx(ctx, func(tx Tx) error {
		ended = outcomeEvents{}
		w := decided
		if w == nil {
			o, a, err := tx.FaxWithLatestAttempt(ctx, faxID)
			if err != nil {
				return fmt.Errorf("load fax %s and its attempt: %w", faxID, err)
			}
			if stale(o, a, attemptID) {
				return nil
			}
			read, err := s.outcomeOf(o, a, res, nil)
			if err != nil {
				return err
			}
			w = &read
		}
		ended.seen(w.move.Updated, w.move.Fax)
		return refusedAsStarted(*w, s.writeOutcome(ctx, tx, *w))
	})
	if errors.Is(err, errStaleOutcome) {
		return nil
	}
	if err == nil {
		ended.report(s.d.Metrics)
	}
	return err
}

// refusedAsStarted is err of writing w, except that a move refused on the
// fax as its attempt's start left it (w's Move.Read) is the fax moved
// since, not a stale report: errMovedSinceStart, to record the report
// again on the fax as read.
func refusedAsStarted(w outcome, err error) error {
	if w.move.Read != nil && (errors.Is(err, core.ErrConflict) || errors.Is(err, errStaleOutcome)) {
		return errMovedSinceStart
	}
	return err
}

// stale reports whether a report of attemptID comes too late for o and
// its latest attempt a: another attempt, or one that ended already.
func stale(o *Fax, a *Attempt, attemptID string) bool {
	return a.ID != attemptID || a.Status != AttemptSending || o.Status != Sending
}

// outcome is what recording a provider's report writes: the fax's move
// with its attempt's outcome, and what the fax's new status asks for.
type outcome struct {
	move Move
	// settle is how the fax's payment is settled: "" while the fax is not
	// done (still sending, or to be retried).
	settle credits.LedgerKind
	// refund: the unsent pages' share goes back (a partial fax).
	refund bool
	// retryAt is when the next attempt's delivery job runs (nil: none).
	retryAt *time.Time
}

// outcomeOf applies res to o and a, the fax sending and its attempt (the
// caller's to change), and returns what records it. read, if not nil, is
// o as its attempt's start left it (Move.Read). It writes nothing.
func (s *Service) outcomeOf(o *Fax, a *Attempt, res ProviderResult, read *Fax) (outcome, error) {
	now := s.now()
	a.Status, a.ProviderRef, a.PagesSent = res.Status, res.ProviderRef, res.PagesSent
	a.FailureCode, a.FailureReason, a.Retryable = res.FailureCode, core.CutUTF8(res.FailureReason, 500), res.Retryable
	a.DurationMS = res.Duration.Milliseconds()
	if res.Status != AttemptSending {
		a.FinishedAt = &now
	}
	o.UpdatedAt = now
	w := outcome{move: Move{Fax: o, From: []Status{Sending}, Updated: a, Read: read}}
	switch res.Status {
	case AttemptSending:
		// The move changes no status (no event) but is a compare-and-set
		// on the fax all the same: on PostgreSQL a concurrent report that
		// ended the fax makes this one stale, and its attempt is not
		// written (writeOutcome).
	case AttemptDelivered:
		o.Status, o.PagesSent, o.CompletedAt = Delivered, o.Pages, &now
		o.FailureCode, o.FailureReason = "", ""
		w.settle = credits.LedgerCapture
	case AttemptPartial:
		// The provider counts the pages transmitted, the cover page
		// among them; the fax counts its document's pages.
		docSent := max(0, res.PagesSent-max(0, o.FaxedPages-o.Pages))
		o.FailureCode, o.FailureReason, o.CompletedAt = a.FailureCode, a.FailureReason, &now
		if docSent <= 0 {
			// Nothing arrived: that is a failure, not a partial fax.
			a.Status, o.Status = AttemptFailed, Failed
			w.settle = credits.LedgerRelease
			break
		}
		o.Status, o.PagesSent = Partial, docSent
		w.settle, w.refund = credits.LedgerCapture, true
	case AttemptFailed:
		o.FailureCode, o.FailureReason = a.FailureCode, a.FailureReason
		if delay, again := s.retryDelay(o, a); again {
			at := now.Add(delay)
			o.Status, o.NextAttemptAt, w.retryAt = Queued, &at, &at
			break
		}
		o.Status, o.CompletedAt = Failed, &now
		if a.FailureCode == FailureCanceled {
			// Called back while sending (CancelFax): nothing arrived.
			o.Status = Canceled
		}
		w.settle = credits.LedgerRelease
	default:
		return outcome{}, fmt.Errorf("provider reported unknown status %q", res.Status)
	}
	return w, nil
}

// alone reports whether w writes nothing but its move (with the credit
// hold's settlement, Move.Settle): no refund, no retry, no batch's count,
// no refund owed through a payment method.
func (w outcome) alone() bool {
	o := w.move.Fax
	return !w.refund && w.retryAt == nil && (o.BatchID == nil || !o.Status.Terminal()) &&
		(w.settle == "" || o.PaymentMethod == PayCredits || w.settle == credits.LedgerCapture)
}

// writeOutcome writes w in tx: the move with the fax's event and its
// attempt's outcome, and the credit hold's settlement with it; then any
// other settlement, the refund and the retry. A report that changes no
// status refused by the fax's compare-and-set is errStaleOutcome.
func (s *Service) writeOutcome(ctx context.Context, tx Tx, w outcome) error {
	o := w.move.Fax
	if o.PaymentMethod == PayCredits {
		w.move.Settle = w.settle
	}
	if err := s.moveFax(ctx, tx, w.move, w.move.Updated); err != nil {
		if o.Status == Sending && errors.Is(err, core.ErrConflict) {
			return errStaleOutcome
		}
		return err
	}
	if w.settle != "" && w.move.Settle == "" {
		if err := s.settle(ctx, tx, o, w.settle); err != nil {
			return err
		}
	}
	if w.refund {
		if err := s.refundUnsentPages(ctx, tx, o); err != nil {
			return err
		}
	}
	if w.retryAt != nil {
		return s.d.Queue.EnqueueDelivery(ctx, tx, o.ID, *w.retryAt)
	}
	return nil
}

// outcomeEvents is what one transaction of the delivery ended: an attempt,
// a fax, both or neither. It holds values, not the transaction's rows,
// so reporting allocates nothing.
type outcomeEvents struct {
	attemptEnded bool
	provider     string
	outcome      AttemptStatus
	attemptTook  time.Duration

	faxEnded bool
	state    Status
	faxTook  time.Duration
}

// seen notes a (an attempt just updated) and o (its fax) if they ended.
func (e *outcomeEvents) seen(a *Attempt, o *Fax) {
	if a != nil && a.Status != AttemptSending {
		e.attemptEnded, e.provider, e.outcome = true, a.Provider, a.Status
		e.attemptTook = time.Duration(a.DurationMS) * time.Millisecond
	}
	if o != nil && o.Status.Terminal() && o.CompletedAt != nil {
		e.faxEnded, e.state, e.faxTook = true, o.Status, o.CompletedAt.Sub(o.CreatedAt)
	}
}

func (e *outcomeEvents) report(m DeliveryMetrics) {
	if e.attemptEnded {
		m.AttemptEnded(e.provider, e.outcome, e.attemptTook)
	}
	if e.faxEnded {
		m.FaxEnded(e.state, e.faxTook)
	}
}

// ResumeWindow is how long after its start an attempt interrupted before
// the provider's answer was recorded is resumed under its own id; later
// (a crash loop) it is closed as interrupted and a new attempt counts
// against MaxAttempts.
const ResumeWindow = 10 * time.Minute

// NotBeforeError tells the queue a delivery job ran before its fax's
// scheduled attempt time; the queue runs it again at At.
type NotBeforeError struct{ At time.Time }

func (e *NotBeforeError) Error() string {
	return "delivery is scheduled for " + e.At.Format(time.RFC3339Nano)
}

// backoff is the wait after the nth failed attempt: base, 4×base, 16×base…
func (s *Service) backoff(n int) time.Duration {
	d := s.fc.RetryBackoff
	for i := 1; i < n; i++ {
		d *= 4
	}
	return d
}

// refundUnsentPages credits back the price of pages a partial delivery did
// not send: the owner pays for what arrived (the cover page counts as sent).
// A fax paid at its checkout gets the same refund as account credits; a
// machine's fax is owed the same share back through its method.
func (s *Service) refundUnsentPages(ctx context.Context, tx Tx, o *Fax) error {
	if o.PagesSent >= o.Pages {
		return nil
	}
	e164, country, err := s.d.Destination.Check(o.To)
	if err != nil {
		return fmt.Errorf("re-price partial fax %s: %w", o.ID, err)
	}
	fair := int64(0)
	if o.PagesSent > 0 {
		q, err := s.d.Prices.Quote(e164, country, o.PagesSent, o.Cover)
		if err != nil {
			return fmt.Errorf("re-price partial fax %s: %w", o.ID, err)
		}
		fair = q.AmountMicros
	}
	refund := o.PriceMicros - fair
	if refund <= 0 {
		return nil
	}
	if o.PaymentMethod == PayMachine {
		return s.d.PayerRefunds.OwePayer(ctx, tx, o, refund)
	}
	return tx.AppendLedger(ctx, &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: o.OwnerID, Mode: o.Mode, Kind: credits.LedgerRefund, AmountMicros: refund,
		FaxID: &o.ID, Reason: fmt.Sprintf("refund for %d of %d pages not delivered (fax %s)", o.Pages-o.PagesSent, o.Pages, o.ID),
		CreatedAt: s.now(),
	})
}
