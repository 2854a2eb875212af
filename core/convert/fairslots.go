package convert

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// errQueueFull is returned by fairSlots.acquire when the owner already has as
// many conversions waiting as it may.
var errQueueFull = errors.New("too many conversions waiting for this owner")

// fairSlots is a counting semaphore shared by owners. A plain semaphore
// serves whoever asked first, so one owner with a few slow files holds every
// slot and everyone else waits for the slowest of them (issue 10, defect 5).
// Here:
//   - an owner holds at most perOwner slots at once, so with more slots than
//     that another owner finds one free without waiting for anybody's job;
//   - freed slots go to the waiting owners in turn (round robin), not to the
//     longest queue;
//   - an owner may have at most maxQueued acquisitions waiting; more are
//     refused at once (the caller answers 429) instead of piling up.
type fairSlots struct {
	perOwner  int
	maxQueued int

	mu      sync.Mutex
	free    int
	running map[string]int
	waiting map[string][]chan struct{}
	// turn lists the owners with waiters in the order they are served.
	turn []string
}

func newFairSlots(slots, perOwner, maxQueued int) *fairSlots {
	return &fairSlots{
		perOwner: perOwner, maxQueued: maxQueued, free: slots,
		running: map[string]int{}, waiting: map[string][]chan struct{}{},
	}
}

// acquire waits for a slot for owner and returns the function that gives it
// back. It fails with errQueueFull when owner has maxQueued acquisitions
// waiting already, or with ctx's error when ctx ends first.
func (s *fairSlots) acquire(ctx context.Context, owner string) (release func(), err error) {
	release = sync.OnceFunc(func() { s.release(owner) })
	s.mu.Lock()
	// Other owners may be waiting with a slot free only if they are all at
	// their cap, so taking it is fair.
	if s.free > 0 && s.running[owner] < s.perOwner && len(s.waiting[owner]) == 0 {
		s.grantLocked(owner)
		s.mu.Unlock()
		return release, nil
	}
	if len(s.waiting[owner]) >= s.maxQueued {
		s.mu.Unlock()
		return nil, errQueueFull
	}
	granted := make(chan struct{})
	if len(s.waiting[owner]) == 0 {
		s.turn = append(s.turn, owner)
	}
	s.waiting[owner] = append(s.waiting[owner], granted)
	s.mu.Unlock()

	select {
	case <-granted:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	select {
	case <-granted:
		// Granted while ctx ended: hand the slot on.
		s.mu.Unlock()
		release()
		return nil, ctx.Err()
	default:
	}
	q := s.waiting[owner]
	if i := slices.Index(q, granted); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) == 0 {
		delete(s.waiting, owner)
		if i := slices.Index(s.turn, owner); i >= 0 {
			s.turn = slices.Delete(s.turn, i, i+1)
		}
	} else {
		s.waiting[owner] = q
	}
	s.mu.Unlock()
	return nil, ctx.Err()
}

func (s *fairSlots) grantLocked(owner string) {
	s.free--
	s.running[owner]++
}

func (s *fairSlots) release(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	if s.running[owner]--; s.running[owner] <= 0 {
		delete(s.running, owner)
	}
	s.dispatchLocked()
}

// dispatchLocked hands free slots to waiting owners in turn, passing over
// owners at their cap. A served owner with more waiters goes to the back.
func (s *fairSlots) dispatchLocked() {
	for s.free > 0 {
		i := slices.IndexFunc(s.turn, func(o string) bool { return s.running[o] < s.perOwner })
		if i < 0 {
			return
		}
		owner := s.turn[i]
		s.turn = slices.Delete(s.turn, i, i+1)
		q := s.waiting[owner]
		granted := q[0]
		if q = q[1:]; len(q) > 0 {
			s.waiting[owner] = q
			s.turn = append(s.turn, owner)
		} else {
			delete(s.waiting, owner)
		}
		s.grantLocked(owner)
		close(granted)
	}
}
