package tasks

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// Bounds and pace of the streams that follow tasks (A2A
// SendStreamingMessage and SubscribeToTask). docs/a2a.md#streaming says
// what a client sees of each.
const (
	// MaxStreamsPerOwner is how many streams one owner may hold open on
	// one process at once. A stream is a connection held by one process,
	// so the count is that process's: behind a front spreading requests
	// over R replicas an owner holds at most R times as many.
	MaxStreamsPerOwner = 10
	// MaxStreams is how many streams one process holds open at once, every
	// owner together: each polls the database a few times a second.
	MaxStreams = 1000
	// DefaultStreamPoll is how often a stream reads the owner's events.
	DefaultStreamPoll = 250 * time.Millisecond
	// DefaultStreamRefresh is how often a stream derives its task again
	// without any event: changes that write no event (a draft that
	// expires, a reservation that lapses, a payment not yet announced by
	// its feature) and, on PostgreSQL, an event whose transaction
	// committed after a later one (a sequence value is taken at insert,
	// not at commit, so a follower can pass it) still arrive, within this.
	DefaultStreamRefresh = 5 * time.Second
	// DefaultStreamMaxDuration ends a stream that long after it opened; the
	// client subscribes again (to any replica) and gets the task as it
	// stands first.
	DefaultStreamMaxDuration = time.Hour
	// streamRetryAfter is what a refused stream is told to wait.
	streamRetryAfter = 5
	// followBatch is how many events one read takes; a longer backlog is
	// read in several, then the task is derived once.
	followBatch = 100
	// maxFollowErrors consecutive failed polls end a stream (with the
	// error); fewer are a hiccup of the database, retried at the next
	// poll.
	maxFollowErrors = 5
)

// CodeTooManyStreams refuses a stream over MaxStreamsPerOwner or
// MaxStreams.
const CodeTooManyStreams = "too_many_streams"

// Config is the tasks feature's configuration; zero fields take the
// defaults.
type Config struct {
	Streams StreamConfig
}

// StreamConfig paces and bounds the streams that follow tasks.
type StreamConfig struct {
	Poll        time.Duration
	Refresh     time.Duration
	MaxDuration time.Duration
	PerOwner    int
	Total       int
	// Ticker replaces time.NewTicker for the polls: it returns the channel
	// of ticks and a function that stops them. Tests drive the polls
	// through it; the clock (core.Config.Now) decides refreshes and the
	// maximum duration.
	Ticker func(time.Duration) (<-chan time.Time, func())
}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {
	s := &c.Streams
	if s.Poll <= 0 {
		s.Poll = DefaultStreamPoll
	}
	if s.Refresh <= 0 {
		s.Refresh = DefaultStreamRefresh
	}
	if s.MaxDuration <= 0 {
		s.MaxDuration = DefaultStreamMaxDuration
	}
	if s.PerOwner <= 0 {
		s.PerOwner = MaxStreamsPerOwner
	}
	if s.Total <= 0 {
		s.Total = MaxStreams
	}
	if s.Ticker == nil {
		s.Ticker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
}

// streams counts the open streams of one process and ends them all when
// it shuts down.
type streams struct {
	mu       sync.Mutex
	perOwner map[string]int
	total    int
	closing  chan struct{}
	close    sync.Once
}

func newStreams() *streams {
	return &streams{perOwner: map[string]int{}, closing: make(chan struct{})}
}

// Stream follows one task for one principal: opened before the task is
// created or read (so that nothing that happens in between is missed),
// closed when the client goes. Each open stream holds a slot of its
// owner's MaxStreamsPerOwner until Close.
type Stream struct {
	s       *Service
	p       core.Principal
	cursor  events.Cursor
	expires time.Time
	release sync.Once
}

// OpenStream opens a stream for p: it checks that p may follow tasks (as
// GetTask, fax:read), takes a slot and marks the end of p's event log.
// Create or read the task after it, then Follow it; Close the stream when
// done.
func (s *Service) OpenStream(ctx context.Context, p core.Principal) (*Stream, error) {
	if err := core.Authorize(p, core.OpGetTask); err != nil {
		e := *core.AsError(err)
		e.Message = "following a task (SendStreamingMessage, SubscribeToTask) reads it as GetTask does: " + e.Message
		return nil, &e
	}
	if err := s.acquire(p.OwnerID); err != nil {
		return nil, err
	}
	c, err := s.d.Events.Tail(ctx, p.OwnerID, p.Mode)
	if err != nil {
		s.releaseSlot(p.OwnerID)
		return nil, fmt.Errorf("open task stream: %w", err)
	}
	return &Stream{s: s, p: p, cursor: c, expires: s.now().Add(s.conf.Streams.MaxDuration)}, nil
}

// Subscribe opens a stream and reads the task id as it stands (after the
// stream's mark): what SubscribeToTask follows. Another owner's task, or
// one of the other mode, is not_found as in Get; the stream is closed
// then.
func (s *Service) Subscribe(ctx context.Context, p core.Principal, id string) (*Stream, *View, error) {
	st, err := s.OpenStream(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	v, err := s.Get(ctx, p, id)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, v, nil
}

func (s *Service) acquire(ownerID string) error {
	st, lim := s.streams, s.conf.Streams
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.perOwner[ownerID] >= lim.PerOwner:
		return core.Errorf(core.KindRateLimited, CodeTooManyStreams,
			"this account already has %d task streams open on this server, the most it may; close one, or poll GetTask", lim.PerOwner).
			With("limit", lim.PerOwner).WithRetryAfter(streamRetryAfter)
	case st.total >= lim.Total:
		return core.Errorf(core.KindRateLimited, CodeTooManyStreams,
			"this server holds as many task streams as it may (%d); try again shortly, or poll GetTask", lim.Total).
			WithRetryAfter(streamRetryAfter)
	}
	st.perOwner[ownerID]++
	st.total++
	return nil
}

func (s *Service) releaseSlot(ownerID string) {
	st := s.streams
	st.mu.Lock()
	defer st.mu.Unlock()
	st.total--
	if st.perOwner[ownerID]--; st.perOwner[ownerID] <= 0 {
		delete(st.perOwner, ownerID)
	}
}

// OpenStreams is how many streams this process holds open: ownerID's, or
// every owner's when ownerID is empty.
func (s *Service) OpenStreams(ownerID string) int {
	st := s.streams
	st.mu.Lock()
	defer st.mu.Unlock()
	if ownerID == "" {
		return st.total
	}
	return st.perOwner[ownerID]
}

// CloseStreams ends every stream of this process (at shutdown): each ends
// as if its maximum duration had passed, and its client subscribes again,
// to another replica.
func (s *Service) CloseStreams() {
	s.streams.close.Do(func() { close(s.streams.closing) })
}

// Close gives the stream's slot back; safe to call more than once.
func (st *Stream) Close() {
	st.release.Do(func() { st.s.releaseSlot(st.p.OwnerID) })
}

// Follow yields first, then the task each time its status (state,
// message, failure) changes, until it is terminal. It reads the owner's
// events every Poll and derives the task again after any, or after
// Refresh without any; a burst of events that leaves the status as it was
// yields nothing. It ends without an error when ctx ends, at the stream's
// maximum duration and at shutdown (CloseStreams); with one when the
// store keeps failing. first must be a task of the stream's principal
// (StartFaxTask, Get…).
func (st *Stream) Follow(ctx context.Context, first *View) iter.Seq2[*View, error] {
	return func(yield func(*View, error) bool) {
		s, conf := st.s, st.s.conf.Streams
		if first.OwnerID != st.p.OwnerID || first.Mode != st.p.Mode {
			yield(nil, fmt.Errorf("follow task %s: not a task of the stream's principal", first.ID))
			return
		}
		// first was derived about now: the next refresh is due Refresh
		// after this, however long the client takes to read it.
		last, derived, failures := first, s.now(), 0
		if !yield(first, nil) || first.State.Terminal() {
			return
		}
		ticks, stop := conf.Ticker(conf.Poll)
		defer stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.streams.closing:
				return
			case <-ticks:
			}
			now := s.now()
			if !now.Before(st.expires) {
				return
			}
			moved, err := st.poll(ctx)
			if err == nil && (moved || now.Sub(derived) >= conf.Refresh) {
				var v *View
				if v, err = s.view(ctx, st.p, &last.Task); err == nil {
					derived = now
					if !sameStatus(last, v) {
						last = v
						if !yield(v, nil) || v.State.Terminal() {
							return
						}
					}
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if failures++; failures >= maxFollowErrors {
					yield(nil, fmt.Errorf("follow task %s: %w", first.ID, err))
					return
				}
				s.d.Logger.WarnContext(ctx, "task stream: poll failed; retrying", "task_id", first.ID, "err", err)
				continue
			}
			failures = 0
		}
	}
}

// poll reads the owner's events after the cursor and reports whether
// there were any. Which ones does not matter: the task is derived from its
// subject, not from the events, so one derivation answers a whole batch.
func (st *Stream) poll(ctx context.Context) (bool, error) {
	moved := false
	for {
		list, next, err := st.s.d.Events.Next(ctx, st.cursor, followBatch)
		if err != nil {
			return moved, err
		}
		st.cursor = next
		moved = moved || len(list) > 0
		if len(list) < followBatch {
			return moved, nil
		}
	}
}

// sameStatus reports whether b says what a said: the state, the words and
// the failure. What a status carries beyond them (the checkout link, the
// approval page, the artifacts) changes only with them.
func sameStatus(a, b *View) bool {
	return a.State == b.State && a.Message == b.Message && a.FailureCode == b.FailureCode
}
