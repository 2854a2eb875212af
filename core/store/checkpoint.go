package store

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// SQLite copies the WAL back into the database file in a checkpoint, which
// ends with two fsyncs. Left to itself it checkpoints in the writer, right
// after the commit that grew the WAL past a threshold, and every request
// queued behind the writer waits for the disk. The checkpointer does it in
// the background instead, on a reader connection, while the writer goes on
// writing (a PASSIVE checkpoint never blocks the writer, and copies only
// frames every reader is done with).
//
// The writer's own automatic checkpoint stays on, at a higher threshold
// (writerAutoCheckpoint), as the bound on the WAL's size: under continuous
// writes the background checkpoint never sees the WAL's end and SQLite
// only restarts the WAL from its beginning after a checkpoint that did.
// By then the background has copied nearly everything, so the writer's
// checkpoint has little left to copy.
type checkpointer struct {
	r *sqlx.DB
	// kick (one slot) is signalled after each commit of the writer.
	kick       chan struct{}
	stop, done chan struct{}
	once       sync.Once
	// every is how many commits pass between checkpoints.
	every int64
	// commits counts the writer's commits; runs and failures the
	// background checkpoints, for WriterStats and tests.
	commits, runs, failures atomic.Int64
}

const (
	// checkpointEvery commits, a checkpoint: at ~10 pages a transaction
	// and up to maxBatch transactions a commit, a few thousand pages.
	checkpointEvery = 8
	// writerAutoCheckpoint pages (4 KiB) in the WAL make the writer
	// checkpoint itself; SQLite's default is 1,000.
	writerAutoCheckpoint = 10_000
)

func newCheckpointer(r *sqlx.DB, every int64) *checkpointer {
	c := &checkpointer{r: r, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), every: every}
	go c.run()
	return c
}

// committed tells the checkpointer that the writer committed.
func (c *checkpointer) committed() {
	c.commits.Add(1)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	var last int64
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		if n := c.commits.Load(); n-last >= c.every {
			last = n
			c.runs.Add(1)
			// A failure is not fatal: the writer's automatic checkpoint
			// still bounds the WAL. It is counted for the tests.
			if _, err := c.r.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
				c.failures.Add(1)
			}
		}
	}
}

// close stops the checkpointer after the checkpoint in progress; it may be
// called more than once.
func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}
