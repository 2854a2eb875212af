package documents

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestKeepLease: the heartbeat renews every interval while the PUT runs,
// stops when told, and stops by itself once a renewal says the lease is
// gone.
func TestKeepLease(t *testing.T) {
	for _, tc := range []struct {
		name   string
		run    time.Duration
		failAt int // renewal that reports the lease lost; 0: never
		want   int
	}{
		{name: "renews every 20 s", run: 65 * time.Second, want: 3},
		{name: "stops after a lost lease", run: 5 * time.Minute, failAt: 2, want: 2},
		{name: "nothing before the first beat", run: 19 * time.Second, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				stop := keepLease(t.Context(), 20*time.Second, func(context.Context) error {
					calls++
					if calls == tc.failAt {
						return errLeaseLost
					}
					return nil
				})
				time.Sleep(tc.run) // virtual time inside the bubble
				synctest.Wait()
				stop()
				if calls != tc.want {
					t.Fatalf("renewals = %d, want %d", calls, tc.want)
				}
			})
		})
	}
}

// TestCtxReaderStopsOnLostLease: the body is no longer read once the PUT
// lost its lease.
func TestCtxReaderStopsOnLostLease(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := ctxReader{ctx, eofReader{}}
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatalf("read before cancel: %v", err)
	}
	cancel(errLeaseLost)
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, errLeaseLost) {
		t.Fatalf("read after a lost lease: %v, want errLeaseLost", err)
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, nil }
