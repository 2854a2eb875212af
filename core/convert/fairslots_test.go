package convert

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// acquireAsync starts an acquisition and reports its outcome on the
// returned channel; the release function is sent on granted.
func acquireAsync(ctx context.Context, s *fairSlots, owner string) (granted chan func(), failed chan error) {
	granted, failed = make(chan func(), 1), make(chan error, 1)
	go func() {
		release, err := s.acquire(ctx, owner)
		if err != nil {
			failed <- err
			return
		}
		granted <- release
	}()
	return granted, failed
}

func isGranted(ch chan func()) (func(), bool) {
	select {
	case r := <-ch:
		return r, true
	default:
		return nil, false
	}
}

// Issue 10 defect 5: two slow jobs of one owner held both LibreOffice slots
// and another owner's small file waited for them (61.6 s). Before the fix
// the slots were a plain semaphore: owner A's second job took the second
// slot and B's job waited for one of A's to end.
func TestFairSlotsOtherOwnerFindsASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFairSlots(2, 1, 4)
		ctx := context.Background()
		releaseA1, err := s.acquire(ctx, "A")
		if err != nil {
			t.Fatal(err)
		}
		a2, _ := acquireAsync(ctx, s, "A")
		synctest.Wait()
		if _, ok := isGranted(a2); ok {
			t.Fatal("owner A got a second slot")
		}
		b, _ := acquireAsync(ctx, s, "B")
		synctest.Wait()
		releaseB, ok := isGranted(b)
		if !ok {
			t.Fatal("owner B waits although a slot is free")
		}
		releaseB()
		releaseA1()
		synctest.Wait()
		if _, ok := isGranted(a2); !ok {
			t.Fatal("A's queued job did not get the freed slot")
		}
	})
}

// Freed slots go round robin across waiting owners: A queued three jobs
// before B queued one, but B is served after A's first.
func TestFairSlotsRoundRobin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFairSlots(1, 1, 4)
		ctx := context.Background()
		release, err := s.acquire(ctx, "A")
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		done := make(chan string)
		start := func(owner string) {
			g, _ := acquireAsync(ctx, s, owner)
			go func() {
				r := <-g
				done <- owner
				r()
			}()
			synctest.Wait() // queued in this order
		}
		start("A")
		start("A")
		start("B")
		start("A")
		release()
		for range 4 {
			order = append(order, <-done)
		}
		want := []string{"A", "B", "A", "A"}
		if len(order) != len(want) {
			t.Fatalf("served %v", order)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("served %v, want %v", order, want)
			}
		}
	})
}

func TestFairSlotsQueueLimitAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newFairSlots(1, 1, 2)
		release, err := s.acquire(context.Background(), "A")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, failed1 := acquireAsync(ctx, s, "A")
		g2, _ := acquireAsync(context.Background(), s, "A")
		synctest.Wait()
		if _, err := s.acquire(context.Background(), "A"); !errors.Is(err, errQueueFull) {
			t.Fatalf("third waiting job: %v, want errQueueFull", err)
		}
		// Another owner's queue is its own.
		gB, _ := acquireAsync(context.Background(), s, "B")
		synctest.Wait()
		cancel()
		synctest.Wait()
		if err := <-failed1; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v", err)
		}
		// The cancelled waiter left the queue; A's turn (it queued
		// before B) goes to its remaining job, then B's.
		release()
		synctest.Wait()
		r2, ok := isGranted(g2)
		if !ok {
			t.Fatal("A's remaining job was not served")
		}
		if _, ok := isGranted(gB); ok {
			t.Fatal("B was served beside A on one slot")
		}
		r2()
		synctest.Wait()
		rB, ok := isGranted(gB)
		if !ok {
			t.Fatal("B was not served next")
		}
		rB()
		rB() // releasing twice gives back one slot only
		if s.free != 1 || len(s.running) != 0 || len(s.waiting) != 0 || len(s.turn) != 0 {
			t.Fatalf("state after all released: free=%d running=%v waiting=%v turn=%v", s.free, s.running, s.waiting, s.turn)
		}
	})
}

// Through the converter: an owner with a full queue gets 429 rate_limited
// with Retry-After at once, and another owner's image converts while the
// first owner's slot is held.
func TestConverterQueuesPerOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConverter(t, Options{MaxConcurrentImages: 2, MaxQueuedPerOwner: 1})
		dir := t.TempDir()
		src := writeTemp(t, "source", pngBytes(t))
		req := func(owner, name string) documents.ConvertRequest {
			return documents.ConvertRequest{Src: src, Kind: documents.FilePNG, Dst: filepath.Join(dir, name), OwnerID: owner}
		}
		// A's first conversion holds its one slot (a slow file).
		releaseA, err := c.images.acquire(context.Background(), "A")
		if err != nil {
			t.Fatal(err)
		}
		queued := make(chan error, 1)
		go func() {
			_, err := c.ToPDF(context.Background(), req("A", "a2.pdf"))
			queued <- err
		}()
		synctest.Wait()
		_, err = c.ToPDF(context.Background(), req("A", "a3.pdf"))
		wantCode(t, err, core.KindRateLimited, core.CodeRateLimited)
		var ce *core.Error
		errors.As(err, &ce)
		if ce.RetryAfterSeconds <= 0 {
			t.Errorf("no Retry-After: %+v", ce)
		}
		if pages, err := c.ToPDF(context.Background(), req("B", "b.pdf")); err != nil || pages != 1 {
			t.Fatalf("B's conversion while A's slot is held: %d pages, %v", pages, err)
		}
		select {
		case err := <-queued:
			t.Fatalf("A's queued job ran beside A's first: %v", err)
		default:
		}
		releaseA()
		if err := <-queued; err != nil {
			t.Fatalf("A's queued job: %v", err)
		}
	})
}
