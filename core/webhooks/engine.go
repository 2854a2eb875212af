package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
)

// Dispatch fans one batch of marked events out into deliveries: in one
// transaction, a delivery per event and target with its job, and the
// events unmarked. It returns how many events it took (a full batch means
// more may wait). A failure rolls everything back: the events stay marked
// for the next pass, and a delivery already written for an event (by a
// pass that committed) is never written twice.
func (s *Service) Dispatch(ctx context.Context) (int, error) {
	// Idle passes read, outside any transaction, on the read pool: on
	// SQLite a transaction would take the single writer every poll.
	peek, err := s.d.Store.EventsToDispatch(ctx, 1)
	if err != nil {
		return 0, fmt.Errorf("dispatch events: %w", err)
	}
	if len(peek) == 0 {
		return 0, nil
	}
	kinds := make([]TargetKind, 0, len(s.dests))
	for k := range s.dests {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	n := 0
	err = s.inTx(ctx, func(tx Tx) error {
		evs, err := tx.EventsToDispatch(ctx, s.wc.DispatchBatch)
		if err != nil || len(evs) == 0 {
			return err
		}
		now := s.now()
		seqs := make([]int64, 0, len(evs))
		var jobs []string
		for i := range evs {
			e := &evs[i]
			seqs = append(seqs, e.Seq)
			for _, k := range kinds {
				targets, err := s.dests[k].Targets(ctx, tx, e)
				if err != nil {
					return fmt.Errorf("targets of %s: %w", e.ID, err)
				}
				for _, t := range targets {
					d := &Delivery{
						ID: core.NewID(core.PrefixWebhookDelivery), TargetKind: t.Kind, TargetID: t.ID, OwnerID: e.OwnerID, Mode: e.Mode,
						EventID: e.ID, EventType: e.Type, Origin: OriginEvent, Status: DeliveryPending, CreatedAt: now, UpdatedAt: now,
					}
					err := tx.InsertWebhookDelivery(ctx, d)
					if errors.Is(err, core.ErrExists) {
						continue // an earlier pass delivered it already
					}
					if err != nil {
						return err
					}
					jobs = append(jobs, d.ID)
				}
			}
		}
		if len(jobs) > 0 {
			if err := s.d.Queue.EnqueueWebhookDeliveries(ctx, tx, jobs); err != nil {
				return err
			}
		}
		n = len(evs)
		return tx.ClearDispatch(ctx, seqs)
	})
	if err != nil {
		return 0, fmt.Errorf("dispatch events: %w", err)
	}
	return n, nil
}

// rescueBatch bounds one rescue pass.
const rescueBatch = 500

// Rescue gives a new job to each delivery that stalled: pending, due more
// than StallAfter ago (or never attempted for that long) and not moved
// since. Its job was lost (River discards a job after repeated
// infrastructure errors), so without this it would wait for the purge. A
// job that was only late finds the delivery claimed or not due and ends:
// a second job never sends an attempt twice (claim's compare-and-set).
func (s *Service) Rescue(ctx context.Context) (int, error) {
	var ids []string
	err := s.inTx(ctx, func(tx Tx) error {
		now := s.now()
		var err error
		ids, err = tx.StalledWebhookDeliveries(ctx, now.Add(-s.wc.StallAfter), now, rescueBatch)
		if err != nil || len(ids) == 0 {
			return err
		}
		return s.d.Queue.EnqueueWebhookDeliveries(ctx, tx, ids)
	})
	if err != nil {
		return 0, fmt.Errorf("rescue webhook deliveries: %w", err)
	}
	if len(ids) > 0 {
		s.d.Logger.WarnContext(ctx, "webhook deliveries had lost their jobs: enqueued again", "deliveries", len(ids))
	}
	return len(ids), nil
}

// RunDispatcher dispatches until ctx ends: a full batch is followed by the
// next at once, otherwise it waits PollInterval; failures back off up to
// ten seconds. Every RescueEvery it also runs Rescue. Every replica runs one (the store's row locks share the
// work out on PostgreSQL).
func (s *Service) RunDispatcher(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	// The first sweep waits a round: a process starting after a crash
	// leaves the jobs River rescues itself their minute.
	nextRescue := s.now().Add(s.wc.RescueEvery)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now := s.now(); !now.Before(nextRescue) {
			nextRescue = now.Add(s.wc.RescueEvery)
			if _, err := s.Rescue(ctx); err != nil && ctx.Err() == nil {
				s.d.Logger.ErrorContext(ctx, "webhook rescue", "err", err)
			}
		}
		n, err := s.Dispatch(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			failures++
			s.d.Logger.ErrorContext(ctx, "webhook dispatcher", "err", err, "failures", failures)
			t.Reset(min(s.wc.PollInterval<<min(failures, 6), 10*time.Second))
		case n >= s.wc.DispatchBatch:
			failures = 0
			t.Reset(0)
		default:
			failures = 0
			t.Reset(s.wc.PollInterval)
		}
	}
}

// maxAttempts is how many attempts d may make: one for a test event (the
// owner is watching), else one plus a retry per step of the schedule.
func (s *Service) maxAttempts(d *Delivery) int {
	if d.Origin == OriginTest {
		return 1
	}
	return 1 + len(s.wc.Schedule)
}

// retryAt is when attempt n+1 is due after attempt n ended at at: the
// schedule's n-th wait, spread by ± Jitter so that an endpoint back from
// an outage is not hit by every retry in the same second.
func (s *Service) retryAt(at time.Time, n int) time.Time {
	w := s.wc.Schedule[min(n, len(s.wc.Schedule))-1]
	if !s.wc.NoJitter {
		w = time.Duration(float64(w) * (1 + s.wc.Jitter*(2*rand.Float64()-1)))
	}
	return at.Add(w)
}

// busyWait is how long a delivery over an in-flight cap waits for its
// turn: a quarter of how long it has waited already, from one to thirty
// seconds (±20%), so a backlog behind a slow endpoint polls less and less
// while a short burst to a fast one is sent within a second or two. It
// needs no state of its own: River does not count snoozes.
func (s *Service) busyWait(d *Delivery) time.Duration {
	since := d.CreatedAt
	if d.NextAttemptAt != nil && d.NextAttemptAt.After(since) {
		since = *d.NextAttemptAt
	}
	w := min(max(s.now().Sub(since)/4, time.Second), 30*time.Second)
	return time.Duration(float64(w) * (0.8 + 0.4*rand.Float64()))
}

// body is what d carries: its event from the log ({id, type, timestamp,
// mode, data}), or a test event's stored body.
func body(ctx context.Context, q Queries, d *Delivery) ([]byte, error) {
	if len(d.Payload) > 0 {
		return d.Payload, nil
	}
	e, err := q.GetEvent(ctx, d.OwnerID, d.Mode, d.EventID)
	if errors.Is(err, core.ErrNoRows) {
		return nil, &Refusal{Reason: "the event is no longer kept"}
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(e)
}

// claim is an attempt claimed and ready to send.
type claim struct {
	d   *Delivery
	a   *Attempt
	req *Request
	// skip: the destination's Finish found nothing to send.
	skip *Skip
}

// Deliver makes delivery id's next attempt if one is due: the job of each
// delivery calls it, and its *WaitError says when to call again (the next
// attempt's time, or a turn when the target is busy). An attempt is
// written (claimed) before it is sent and its
// outcome after, each in a transaction: a crash in between leaves it
// sending, and the next run, once AttemptLease has passed, closes it as
// interrupted and makes the next attempt. Every attempt is sent at most
// once.
func (s *Service) Deliver(ctx context.Context, id string) error {
	// Read before any transaction (SQLite: they may write through the
	// writer the transaction would hold).
	if err := s.sealKey(ctx); err != nil {
		return fmt.Errorf("deliver webhook %s: %w", id, err)
	}
	if _, err := s.signingKey(ctx); err != nil {
		return fmt.Errorf("deliver webhook %s: %w", id, err)
	}
	c, wait, err := s.claim(ctx, id)
	if err != nil {
		return fmt.Errorf("deliver webhook %s: claim an attempt: %w", id, err)
	}
	if wait != nil {
		return wait
	}
	if c == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, s.wc.AttemptTimeout)
	var resp *Response
	var sendErr error
	if f, ok := s.dests[c.d.TargetKind].(Finisher); ok {
		sendErr = f.Finish(sctx, c.d, c.req, c.a.StartedAt)
	}
	var skip *Skip
	if errors.As(sendErr, &skip) {
		c.skip = skip
	} else if sendErr == nil {
		resp, sendErr = s.d.Sender.Send(sctx, c.req)
	}
	cancel()
	if ctx.Err() != nil && sendErr != nil && c.skip == nil {
		// Shutdown cut the attempt short: record it as such, so the
		// log is true and the next attempt keeps to the schedule.
		sendErr = errors.New("interrupted by a shutdown of the sending process")
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	next, err := s.record(rctx, c, resp, sendErr)
	if err != nil {
		return fmt.Errorf("deliver webhook %s: record attempt %d: %w", id, c.a.Number, err)
	}
	if next > 0 {
		return &WaitError{After: next, Why: "next attempt scheduled"}
	}
	return nil
}

// claim writes d's next attempt (status sending) and builds its request,
// in one transaction; nil when there is nothing to send (the delivery
// ended, or is gone), or a wait. What can be decided without writing is
// read first, outside any transaction: a run that is early or finds its
// target busy takes no write lock (on SQLite, the one writer every send
// needs), and the event's body is read beside the writer.
func (s *Service) claim(ctx context.Context, id string) (*claim, *WaitError, error) {
	d, err := s.d.Store.GetWebhookDelivery(ctx, id)
	if errors.Is(err, core.ErrNoRows) {
		return nil, nil, nil // purged
	}
	if err != nil || d.Status != DeliveryPending {
		return nil, nil, err
	}
	if w := s.notDue(d); w != nil {
		return nil, w, nil
	}
	if d.Attempts < s.maxAttempts(d) {
		owner, target, err := s.d.Store.WebhookAttemptsInFlight(ctx, d.OwnerID, d.TargetID, s.now().Add(-s.wc.AttemptLease))
		if err != nil {
			return nil, nil, err
		}
		if s.busy(d, owner, target) {
			return nil, &WaitError{After: s.busyWait(d), Why: "the endpoint or its owner has the most attempts in flight"}, nil
		}
	}
	b, berr := body(ctx, s.d.Store, d)
	var c *claim
	var wait *WaitError
	err = s.inTx(ctx, func(tx Tx) error {
		c, wait = nil, nil
		d, err := tx.GetWebhookDelivery(ctx, id)
		if errors.Is(err, core.ErrNoRows) {
			return nil
		}
		if err != nil || d.Status != DeliveryPending {
			return err
		}
		now := s.now()
		if wait = s.notDue(d); wait != nil {
			return nil
		}
		dest := s.dests[d.TargetKind]
		if dest == nil {
			return s.end(ctx, tx, d, d.Attempts, now, "this server does not deliver to "+string(d.TargetKind)+" targets")
		}
		if err := tx.LockWebhookOwner(ctx, d.OwnerID); err != nil {
			return err
		}
		stored, interrupted := d.Attempts, false
		if d.Attempts > 0 {
			last, err := tx.GetWebhookAttempt(ctx, d.ID, d.Attempts)
			if err != nil && !errors.Is(err, core.ErrNoRows) {
				return err
			}
			if err == nil && last.Status == AttemptSending {
				if age := now.Sub(last.StartedAt); age < s.wc.AttemptLease {
					wait = &WaitError{After: s.wc.AttemptLease - age, Why: "an attempt is in flight"}
					return nil
				}
				last.Status, last.FinishedAt = AttemptInterrupted, &now
				last.Error = "interrupted: the sending process stopped before it recorded an answer; the endpoint may have received it"
				if err := tx.FinishWebhookAttempt(ctx, last); err != nil {
					return err
				}
				d.LastStatusCode, d.LastError, interrupted = 0, last.Error, true
			}
		}
		if d.Attempts >= s.maxAttempts(d) {
			return s.end(ctx, tx, d, stored, now, cmpOr(d.LastError, "no attempt is left"))
		}
		// Again under the owner's lock: the caps hold across replicas.
		owner, target, err := tx.WebhookAttemptsInFlight(ctx, d.OwnerID, d.TargetID, now.Add(-s.wc.AttemptLease))
		if err != nil {
			return err
		}
		if s.busy(d, owner, target) {
			wait = &WaitError{After: s.busyWait(d), Why: "the endpoint or its owner has the most attempts in flight"}
			if interrupted {
				d.UpdatedAt = now
				return tx.UpdateWebhookDelivery(ctx, d, stored)
			}
			return nil
		}
		var refused *Refusal
		if errors.As(berr, &refused) {
			return s.end(ctx, tx, d, stored, now, refused.Reason)
		}
		if berr != nil {
			return berr
		}
		req, err := dest.Request(ctx, tx, d, b, now)
		if errors.As(err, &refused) {
			return s.end(ctx, tx, d, stored, now, refused.Reason)
		}
		if err != nil {
			return err
		}
		a := &Attempt{DeliveryID: d.ID, Number: d.Attempts + 1, OwnerID: d.OwnerID, TargetID: d.TargetID, Status: AttemptSending, StartedAt: now}
		if err := tx.InsertWebhookAttempt(ctx, a); err != nil {
			return err
		}
		d.Attempts, d.NextAttemptAt, d.UpdatedAt = a.Number, nil, now
		if err := tx.UpdateWebhookDelivery(ctx, d, stored); err != nil {
			return err
		}
		c = &claim{d: d, a: a, req: req}
		return nil
	})
	if errors.Is(err, core.ErrConflict) {
		// Another run claimed it between our read and write: its run
		// sends, this one looks again later.
		return nil, &WaitError{After: time.Second, Why: "another run claimed the attempt"}, nil
	}
	return c, wait, err
}

// notDue is the wait of a delivery whose next attempt is later.
func (s *Service) notDue(d *Delivery) *WaitError {
	if now := s.now(); d.NextAttemptAt != nil && now.Before(*d.NextAttemptAt) {
		return &WaitError{After: d.NextAttemptAt.Sub(now), Why: "the next attempt is not due"}
	}
	return nil
}

// busy reports whether an owner or d's target has its most attempts in
// flight: one for a SerialDestination's.
func (s *Service) busy(d *Delivery, owner, target int) bool {
	perTarget := s.wc.MaxInFlightPerEndpoint
	if _, ok := s.dests[d.TargetKind].(SerialDestination); ok {
		perTarget = 1
	}
	return owner >= s.wc.MaxInFlightPerOwner || target >= perTarget
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// end fails d without another attempt, for reason.
func (s *Service) end(ctx context.Context, tx Tx, d *Delivery, stored int, now time.Time, reason string) error {
	d.Status, d.CompletedAt, d.NextAttemptAt, d.UpdatedAt = DeliveryFailed, &now, nil, now
	d.LastError = reason
	return tx.UpdateWebhookDelivery(ctx, d, stored)
}

// excerpt is the start of an answer as text the log can keep: valid UTF-8
// without NUL (PostgreSQL's text refuses both), at most MaxResponseExcerpt
// bytes.
func excerpt(b []byte) string {
	t := strings.ToValidUTF8(string(b[:min(len(b), MaxResponseExcerpt+utf8.UTFMax)]), "\uFFFD")
	t = strings.ReplaceAll(t, "\x00", "\uFFFD")
	return core.CutUTF8(t, MaxResponseExcerpt)
}

// maxErrorBytes bounds an attempt's error in the log.
const maxErrorBytes = 500

// goneMeans says what a 410 does to a target of kind k, for the log.
func (s *Service) goneMeans(k TargetKind) string {
	if k == TargetWebhook {
		return " (the endpoint is disabled until it is enabled again)"
	}
	return " (its " + string(k) + " target is removed)"
}

// outcome classifies an answer: 2xx delivered; 410 gone (no retry, and
// the endpoint is disabled); a redirect is a failure (redirects are never
// followed); anything else, or no answer, fails and is retried while the
// schedule lasts.
func (s *Service) outcome(c *claim, resp *Response, sendErr error, at time.Time) *Outcome {
	o := &Outcome{At: at, Number: c.a.Number, Test: c.d.Origin == OriginTest}
	switch {
	case c.skip != nil:
		o.Skipped, o.Err, o.Final = true, core.CutUTF8(c.skip.Reason, maxErrorBytes), true
		return o
	case sendErr != nil:
		o.Err = core.CutUTF8(strings.ToValidUTF8(sendErr.Error(), "?"), maxErrorBytes)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		o.Delivered = true
	case resp.StatusCode == 410:
		o.Gone, o.Err = true, "the receiver answered 410 Gone: it gets nothing more"+s.goneMeans(c.d.TargetKind)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		o.Err = core.CutUTF8("redirects are not followed (Location: "+strings.ToValidUTF8(resp.Location, "?")+"); give the endpoint's final URL", maxErrorBytes)
	default:
		o.Err = fmt.Sprintf("the endpoint answered %d", resp.StatusCode)
	}
	if resp != nil {
		o.StatusCode, o.Body = resp.StatusCode, c.req.Body
	}
	o.Final = o.Delivered || (o.Gone && !o.Test) || c.a.Number >= s.maxAttempts(c.d)
	return o
}

// record writes an attempt's outcome and what follows from it: the
// delivery delivered, failed, or its next attempt's time (returned as a
// wait), and the target's health.
func (s *Service) record(ctx context.Context, c *claim, resp *Response, sendErr error) (time.Duration, error) {
	var next time.Duration
	var logged *Delivery
	var loggedAttempt *Attempt
	var loggedOutcome *Outcome
	err := s.inTx(ctx, func(tx Tx) error {
		next, logged = 0, nil
		now := s.now()
		o := s.outcome(c, resp, sendErr, now)
		loggedOutcome = o
		a, d := *c.a, *c.d
		a.FinishedAt, a.StatusCode, a.Error = &now, o.StatusCode, o.Err
		a.Status = AttemptFailed
		switch {
		case o.Delivered:
			a.Status = AttemptSucceeded
		case o.Skipped:
			a.Status = AttemptSkipped
		}
		if resp != nil {
			a.Response, a.DurationMS = excerpt(resp.Body), resp.Duration.Milliseconds()
		}
		if err := tx.FinishWebhookAttempt(ctx, &a); errors.Is(err, core.ErrConflict) {
			// A later run presumed this attempt dead and closed it as
			// interrupted; it has moved on.
			s.d.Logger.WarnContext(ctx, "webhook attempt finished after it was presumed interrupted", "delivery", d.ID, "attempt", a.Number)
			return nil
		} else if err != nil {
			return err
		}
		d.LastStatusCode, d.LastError, d.UpdatedAt = o.StatusCode, o.Err, now
		switch {
		case o.Delivered:
			d.Status, d.CompletedAt = DeliveryDelivered, &now
		case o.Skipped:
			d.Status, d.CompletedAt = DeliverySkipped, &now
		case o.Final:
			d.Status, d.CompletedAt = DeliveryFailed, &now
		default:
			at := s.retryAt(now, a.Number)
			d.NextAttemptAt = &at
			next = at.Sub(now)
		}
		if err := tx.UpdateWebhookDelivery(ctx, &d, c.a.Number); err != nil {
			return err
		}
		if err := s.dests[d.TargetKind].Attempted(ctx, tx, &d, o); err != nil {
			return err
		}
		logged, loggedAttempt = &d, &a
		return nil
	})
	if err == nil && logged != nil {
		s.logAttempt(ctx, logged, loggedAttempt)
		if m := s.d.Metrics; m != nil {
			m.WebhookAttemptEnded(logged.TargetKind, metricOutcome(loggedOutcome), time.Duration(loggedAttempt.DurationMS)*time.Millisecond)
		}
	}
	return next, err
}

// logAttempt writes an attempt to the server's log (the owner's delivery
// log has it too): failures at info, successes at debug. Never the URL,
// whose path or query may hold a receiver's token, nor a header.
func (s *Service) logAttempt(ctx context.Context, d *Delivery, a *Attempt) {
	level := slog.LevelDebug
	if a.Status != AttemptSucceeded && a.Status != AttemptSkipped {
		level = slog.LevelInfo
	}
	s.d.Logger.Log(ctx, level, "webhook attempt", "target", d.TargetID, "delivery", d.ID, "event", d.EventID, "type", d.EventType,
		"attempt", a.Number, "status", a.Status, "code", a.StatusCode, "ms", a.DurationMS, "error", a.Error)
}
