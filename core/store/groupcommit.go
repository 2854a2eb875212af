package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// SQLite has one writer, and a fax send spends most of its time in the
// writer on its commit: writing the pages it changed to the WAL (the rate
// limiter's row, the balance, the ledger, the fax, the job, the
// idempotency record and their indexes), one write call per page. When
// many requests write at once the groupWriter commits them together: it
// takes every transaction that is waiting, runs each under its own
// savepoint in one SQLite transaction, and commits once. Pages that several
// of them change (the owner's balance and limiter, index pages) are written
// once per batch instead of once per request.
//
// What each caller sees is what a transaction of its own would give it:
//   - its function's writes commit together or not at all: an error (or a
//     panic) rolls back to its savepoint, and the others in the batch go on;
//   - nothing is reported before it is durable: every caller gets its
//     answer after the batch's COMMIT, and if the COMMIT fails (or SQLite
//     rolled the transaction back under us) every caller of the batch gets
//     that error, the successful ones too, since none of their writes stayed;
//   - later functions in a batch see the writes of earlier ones, as they
//     would had those committed first: a unique key taken by an earlier
//     request in the batch is a conflict for a later one, a hold that spent
//     the balance leaves less for the next.
//
// A batch of one runs without a savepoint, exactly as before. Batches form
// by themselves: while one commits, the next gathers; nothing waits on a
// timer, so a lone request is not delayed.
type groupWriter struct {
	w *sqlx.DB
	// queue holds the requests not yet taken, in arrival order; notify
	// (one slot) wakes the writer when it may have become non-empty. A
	// queue rather than a channel the callers send on: a caller is not
	// woken when the writer takes its request, only when it is answered,
	// which halves the goroutine switches per transaction on a busy writer.
	mu     sync.Mutex
	queue  []*txRequest
	notify chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// committed, when set, is called after each successful COMMIT.
	committed func()
	// ended, when set, is called when a batch's transaction has ended
	// (committed or not), before any of its callers is answered: what
	// caches rows (rowCache) learns of a change before anyone can act
	// on its having been made.
	ended func()
	// batches and txs count what was committed (or tried), waiting the
	// transactions not yet taken, for WriterStats.
	batches, txs, waiting atomic.Int64
	// busy is the time (ns) spent running batches.
	busy atomic.Int64
}

// WriterStats reports how SQLite's writer batched: transactions run, the
// batches (commits) they were run in, and transactions waiting to be
// taken; zeros on PostgreSQL. Benchmarks and tests read it.
func (db *DB) WriterStats() (txs, batches, waiting int64) {
	if db.gw == nil {
		return 0, 0, 0
	}
	return db.gw.txs.Load(), db.gw.batches.Load(), db.gw.waiting.Load()
}

// WriterBusy is the time SQLite's writer spent running and committing
// batches: when it grows as fast as the clock, the writer is saturated and
// writes queue. Zero on PostgreSQL.
func (db *DB) WriterBusy() time.Duration {
	if db.gw == nil {
		return 0
	}
	return time.Duration(db.gw.busy.Load())
}

// Checkpoints counts the background WAL checkpoints on SQLite, and those
// that failed (the writer's own automatic checkpoint then bounds the WAL).
func (db *DB) Checkpoints() (runs, failures int64) {
	if db.ckpt == nil {
		return 0, 0
	}
	return db.ckpt.runs.Load(), db.ckpt.failures.Load()
}

// maxBatch bounds the transactions committed together, so that one batch
// (and the write lock) is not held for long; at about 50 µs of work each,
// 64 are a few milliseconds.
const maxBatch = 64

type txRequest struct {
	ctx    context.Context
	fn     func(*sqlx.Tx) error
	result chan txResult
	// state moves once, from queued to taken (by the writer, which will
	// answer) or to abandoned (by a caller that stops waiting first).
	state atomic.Int32
}

const (
	queued int32 = iota
	taken
	abandoned
)

type txResult struct {
	err error
	// panicked is the value fn panicked with, re-panicked in the caller's
	// goroutine.
	panicked any
	didPanic bool
}

// errWriterClosed answers transactions asked for after Close.
var errWriterClosed = errors.New("database is closed")

func newGroupWriter(w *sqlx.DB) *groupWriter {
	g := &groupWriter{w: w, notify: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// close stops the writer after the batch in progress; transactions asked
// for afterwards fail.
func (g *groupWriter) close() {
	g.once.Do(func() { close(g.stop) })
	<-g.done
}

// inTx runs fn in a transaction shared with whoever else is writing, as
// described on groupWriter, and returns once the outcome is durable.
func (g *groupWriter) inTx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	r := &txRequest{ctx: ctx, fn: fn, result: make(chan txResult, 1)}
	g.waiting.Add(1)
	g.mu.Lock()
	g.queue = append(g.queue, r)
	g.mu.Unlock()
	select {
	case g.notify <- struct{}{}:
	default: // the writer is woken already
	}
	var err error
	select {
	case res := <-r.result:
		return res.get()
	case <-ctx.Done():
		err = fmt.Errorf("begin transaction: %w", ctx.Err())
	case <-g.stop:
		err = fmt.Errorf("begin transaction: %w", errWriterClosed)
	}
	if r.state.CompareAndSwap(queued, abandoned) {
		g.waiting.Add(-1)
		return err
	}
	// Once taken, the request is answered whatever happens to ctx: leaving
	// early could report a failure for writes that then commit.
	return (<-r.result).get()
}

// get returns the result's error, re-raising a panic of its function in
// the caller's goroutine.
func (res txResult) get() error {
	if res.didPanic {
		panic(res.panicked)
	}
	return res.err
}

func (g *groupWriter) run() {
	defer close(g.done)
	batch := make([]*txRequest, 0, maxBatch)
	for {
		select {
		case <-g.notify:
		case <-g.stop:
			return
		}
		for {
			// One yield before taking a batch: on a busy process the handlers
			// that are runnable get to the point of asking for their
			// transaction, and they share this commit instead of each paying
			// one of their own (a commit is most of a small transaction's
			// cost); with nothing else runnable it returns at once, so a lone
			// request still waits on nothing. docs/benchmarks.md has the pairs.
			runtime.Gosched()
			batch = g.take(batch[:0])
			if len(batch) == 0 {
				break
			}
			start := time.Now()
			g.commit(batch)
			g.busy.Add(int64(time.Since(start)))
			clear(batch)
			select {
			case <-g.stop:
				return
			default:
			}
		}
	}
}

// take moves up to maxBatch requests that are still wanted from the queue
// into batch.
func (g *groupWriter) take(batch []*txRequest) []*txRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.queue {
		if len(batch) == maxBatch {
			break
		}
		n++
		if r.state.CompareAndSwap(queued, taken) {
			g.waiting.Add(-1)
			batch = append(batch, r)
		}
	}
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	return batch
}

// commit runs one batch and answers every request in it.
func (g *groupWriter) commit(batch []*txRequest) {
	g.batches.Add(1)
	g.txs.Add(int64(len(batch)))
	results := make([]txResult, len(batch))
	// answer reports err to every request of a batch that did not commit
	// (a refusal earlier in it may have been caused by writes that are now
	// gone, so its own error would mislead), or each one's own result.
	answer := func(err error) {
		if g.ended != nil {
			g.ended()
		}
		for i, r := range batch {
			if err != nil && !results[i].didPanic {
				results[i].err = err
			}
			r.result <- results[i]
		}
	}
	// The transaction belongs to the batch, not to any one caller: a
	// caller's cancelled context must not roll back the others' writes.
	t, err := g.w.BeginTxx(context.Background(), nil)
	if err != nil {
		answer(fmt.Errorf("begin transaction: %w", err))
		return
	}
	single := len(batch) == 1
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i].err = fmt.Errorf("begin transaction: %w", err)
			continue
		}
		sp := "faxhub_batch_" + strconv.Itoa(i)
		if !single {
			if _, err := t.Exec("SAVEPOINT " + sp); err != nil {
				_ = t.Rollback()
				answer(fmt.Errorf("savepoint: %w", dbErr(err)))
				return
			}
		}
		results[i] = call(r.fn, t)
		failed := results[i].err != nil || results[i].didPanic
		switch {
		case single && failed:
			if rerr := t.Rollback(); rerr != nil && results[i].err != nil {
				results[i].err = errors.Join(results[i].err, fmt.Errorf("roll back: %w", rerr))
			}
			answer(nil)
			return
		case single:
		case failed:
			// ROLLBACK TO keeps the savepoint; RELEASE drops it. Either
			// failing means SQLite ended the transaction itself (an I/O
			// error, a full disk): nobody's writes survive.
			if _, err := t.Exec("ROLLBACK TO SAVEPOINT " + sp); err != nil {
				_ = t.Rollback()
				answer(fmt.Errorf("roll back to savepoint: %w", dbErr(err)))
				return
			}
			fallthrough
		default:
			if _, err := t.Exec("RELEASE SAVEPOINT " + sp); err != nil {
				_ = t.Rollback()
				answer(fmt.Errorf("release savepoint: %w", dbErr(err)))
				return
			}
		}
	}
	if err := t.Commit(); err != nil {
		answer(fmt.Errorf("commit: %w", dbErr(err)))
		return
	}
	answer(nil)
	if g.committed != nil {
		g.committed()
	}
}

// call runs fn, turning a panic into a result so that the batch survives
// it and the caller re-panics.
func call(fn func(*sqlx.Tx) error, t *sqlx.Tx) (res txResult) {
	defer func() {
		if p := recover(); p != nil {
			res = txResult{panicked: p, didPanic: true}
		}
	}()
	return txResult{err: fn(t)}
}
