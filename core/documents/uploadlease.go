package documents

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errLeaseLost ends a PUT whose upload lease another PUT took over.
var errLeaseLost = errors.New("upload lease lost to another PUT")

// newLeaseID names one PUT's claim of an upload. It is never shown to
// anyone; it only fences a PUT that lost its lease from completing.
func newLeaseID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("lease id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// keepLease calls renew every interval until stop is called or ctx ends,
// or renew returns an error (the lease is gone: nothing left to renew).
// stop waits for a renewal in progress to return.
func keepLease(ctx context.Context, every time.Duration, renew func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := renew(ctx); err != nil {
					return
				}
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// ctxReader stops reading a body once ctx ends, so a PUT that lost its
// lease stops streaming instead of reading the rest of the file.
type ctxReader struct {
	ctx context.Context
	r   interface{ Read([]byte) (int, error) }
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// deleteBlobs removes a document's blobs (a missing one is not an error).
func (s *Service) DeleteBlobs(ctx context.Context, d *Document) error {
	keys := []string{d.SourceKey}
	if d.PDFKey != d.SourceKey {
		keys = append(keys, d.PDFKey)
	}
	var errs []error
	for _, k := range keys {
		if k == "" {
			continue
		}
		if err := s.d.Blobs.Delete(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("delete blob of %s: %w", d.ID, err))
		}
	}
	return errors.Join(errs...)
}
