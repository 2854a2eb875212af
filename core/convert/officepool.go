package convert

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faxhub/faxhub/core/documents"
)

// Defaults of the warm LibreOffice pool.
const (
	// defaultOfficeRecycleAfter restarts a warm LibreOffice after this many
	// conversions, so that whatever a long run accumulates (caches, leaks,
	// a document's leftovers in its temp directory) is dropped regularly;
	// a restart costs one cold start (about 1.5 s).
	defaultOfficeRecycleAfter = 100
	// defaultOfficeMaxRSS restarts a warm LibreOffice whose processes hold
	// more than this after a conversion. An idle one holds about 150 MB.
	defaultOfficeMaxRSS = 768 << 20
	// officeStartTimeout bounds the wait for a warm LibreOffice's IPC pipe.
	// A cold start takes about 1.5 s; one that has no pipe after this is
	// taken to be a LibreOffice that names it otherwise, and conversions
	// run cold from then on.
	officeStartTimeout = 20 * time.Second
)

// officePool holds one warm LibreOffice per office slot. The slots
// (fairSlots) bound who converts; the pool only hands each slot holder a
// worker, so get never waits.
type officePool struct {
	idle         chan *officeWorker
	tempDir      string
	recycleAfter int
	maxRSS       int64
	// cold is set once a warm LibreOffice failed to start for a reason other
	// than the caller's deadline: from then on every conversion starts its
	// own, as before the pool.
	cold      atomic.Bool
	closeOnce sync.Once
}

func newOfficePool(workers, recycleAfter int, maxRSS int64, tempDir string) *officePool {
	reapStaleOffices(tempDir)
	p := &officePool{idle: make(chan *officeWorker, workers), tempDir: tempDir, recycleAfter: recycleAfter, maxRSS: maxRSS}
	for range workers {
		p.idle <- &officeWorker{}
	}
	return p
}

// get returns an idle worker, or nil when there is none (the pool is
// closing) or warm conversion is off.
func (p *officePool) get() *officeWorker {
	if p == nil || p.cold.Load() {
		return nil
	}
	select {
	case w := <-p.idle:
		return w
	default:
		return nil
	}
}

func (p *officePool) put(w *officeWorker) { p.idle <- w }

// close stops every worker, waiting for conversions in progress to return
// theirs.
func (p *officePool) close() {
	if p == nil {
		return
	}
	p.closeOnce.Do(func() {
		for range cap(p.idle) {
			w := <-p.idle
			w.stop()
		}
	})
}

// rss sums the resident memory of the idle workers' processes.
func (p *officePool) rss() int64 {
	if p == nil {
		return 0
	}
	var total int64
	n := cap(p.idle)
	got := make([]*officeWorker, 0, n)
	for range n {
		select {
		case w := <-p.idle:
			got = append(got, w)
			total += w.rss()
		default:
		}
	}
	for _, w := range got {
		p.put(w)
	}
	return total
}

// convertWarm runs one conversion on w, starting (or restarting) its LibreOffice
// first when needed. It returns errNoWarmOffice when no warm LibreOffice
// could be had; the caller then converts cold.
func (c *Converter) convertWarm(ctx context.Context, w *officeWorker, bin, job, out, input string, kind documents.FileKind) error {
	p := c.pool
	if w.running() && w.bin != bin {
		// --soffice or PATH changed under a running server.
		w.stop()
	}
	if !w.running() {
		sctx, cancel := context.WithTimeout(ctx, officeStartTimeout)
		err := w.start(sctx, bin, p.tempDir)
		cancel()
		switch {
		case err == nil:
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			// The conversion's own time ran out while LibreOffice started:
			// report it as the cold path would.
			return c.officeTimeout(ctx, kind)
		case ctx.Err() != nil:
			return fmt.Errorf("convert %s: %w", kindName(kind), ctx.Err())
		case errors.Is(err, errNoWarmOffice):
			p.cold.Store(true)
			return err
		default:
			return fmt.Errorf("%w: %w", errNoWarmOffice, err)
		}
	}
	err := c.runSoffice(ctx, bin, job, w.profileURL, out, input, kind)
	w.uses++
	switch {
	case ctx.Err() != nil || isOfficeTimeout(err):
		// The server may still be working on (or hung in) the abandoned
		// document: kill it rather than queue the next one behind it.
		w.stop()
	case !w.running():
		// It crashed under this document: clean up, the next conversion
		// starts a fresh one.
		w.stop()
	case w.uses >= p.recycleAfter || w.rss() > p.maxRSS:
		w.stop()
	}
	return err
}
