package store

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/documents"
)

// rowCacheSize bounds the rows each cache keeps: an entry is a few
// hundred bytes.
const rowCacheSize = 4096

// rowCache keeps rows that nearly every request of one kind reads, on
// SQLite, so that a request whose credential was seen reads no row to
// authenticate (issue 32: the credential's row was one of getFax's two
// reads and about a quarter of A2A GetTask's and hostagent's handlers,
// and on SQLite every read after a write reads its pages from the file
// again). Four are kept (rowCaches): API keys by hash, delegated agents
// with their host by agent id, OAuth access tokens with their grant by
// signature, and an upload's document by upload, owner and mode (every
// send by upload token reads it; the document's fields never change once
// it is written, and its use, used_at, is neither a field of the row nor
// a condition of the read, so a send marking its document used changes
// nothing kept; a purge is a change).
//
// Only on SQLite, where one process owns the database (docs/operations.md):
// every write to these tables goes through this process's writer, so a
// cache is told of each one and never answers stale. On PostgreSQL several
// replicas write the tables and each lookup reads the row, as before, so a
// credential revoked on one replica is refused on every other at once.
//
// The rule that makes a revocation immediate: a statement that changes a
// kept table, other than inserting rows or recording a last use, marks
// the cache (changed) inside the writer's batch; when that batch's
// transaction ends, before any of its callers is answered, the writer
// calls ended, which advances the generation and so invalidates every
// entry. A lookup stores what it read only under the generation it
// started with, and only if that did not move while it read. So a row read
// before a revocation committed is either not stored or stored under a
// generation that ended before the revoker was answered; a lookup that
// starts after that reads the committed row. Inserting a row needs no
// mark: a cache keeps only rows it found, and an insert changes none of
// them. A last use (last_used_at, written at most once a minute) is not a
// revocation: it updates the entries it concerns (update) instead of
// emptying the cache, and an entry that misses it only costs an extra
// touch.
//
// A transaction's own reads bypass the cache (it must see its own writes).
type rowCache[V any] struct {
	mu      sync.Mutex
	gen     uint64
	changes bool
	entries *lru.Cache[string, cachedRow[V]]
	// clone copies a row deeply enough that whoever gets a copy may
	// change it without changing the entry.
	clone func(V) V
}

type cachedRow[V any] struct {
	v   V
	gen uint64
}

func newRowCache[V any](clone func(V) V) *rowCache[V] {
	c, err := lru.New[string, cachedRow[V]](rowCacheSize)
	if err != nil {
		// Only a non-positive size fails.
		panic(err)
	}
	return &rowCache[V]{entries: c, clone: clone}
}

// lookup returns a copy of the row kept under key, or else the generation
// a read that misses must pass to add.
func (c *rowCache[V]) lookup(key string) (v V, gen uint64, ok bool) {
	c.mu.Lock()
	e, ok := c.entries.Get(key)
	ok = ok && e.gen == c.gen
	gen = c.gen
	c.mu.Unlock()
	if !ok {
		return v, gen, false
	}
	return c.clone(e.v), gen, true
}

// add keeps a copy of v, read under generation gen, unless a kept table
// changed since (or is being changed by the batch in the writer now).
func (c *rowCache[V]) add(key string, v V, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.changes {
		return
	}
	c.entries.Add(key, cachedRow[V]{v: c.clone(v), gen: gen})
}

// changed marks a write to a kept table by the transaction now running in
// the writer. It must be called from inside the writer's batch (a function
// the groupWriter runs), so that the end of that batch invalidates.
func (c *rowCache[V]) changed() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.changes = true
	c.mu.Unlock()
}

// ended is called by the writer when a batch's transaction has ended
// (committed or rolled back): if it changed a kept table, every entry is
// invalidated.
func (c *rowCache[V]) ended() {
	c.mu.Lock()
	if c.changes {
		c.gen++
		c.changes = false
	}
	c.mu.Unlock()
}

// update runs fn on every entry, keeping those it reports changed: for a
// last use, which is not a revocation.
func (c *rowCache[V]) update(fn func(v *V) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range c.entries.Keys() {
		e, ok := c.entries.Peek(key)
		if ok && fn(&e.v) {
			c.entries.Add(key, e)
		}
	}
}

// cachedRead is read's row for key, from c when it keeps it: outside a
// transaction, on SQLite.
func cachedRead[V any](x q, c *rowCache[V], key string, read func() (V, error)) (V, error) {
	if c == nil || x.tx != nil {
		return read()
	}
	v, gen, ok := c.lookup(key)
	if ok {
		return v, nil
	}
	v, err := read()
	if err == nil {
		c.add(key, v, gen)
	}
	return v, err
}

// rowCaches are the store's caches: made on SQLite; on PostgreSQL every
// field is nil, and a nil rowCache keeps nothing (cachedRead reads,
// changed and update do nothing).
type rowCaches struct {
	apiKeys      *rowCache[*accounts.APIKey]
	agents       *rowCache[agentWithHost]
	accessTokens *rowCache[accessTokenRow]
	uploadDocs   *rowCache[*documents.Document]
}

func newRowCaches() *rowCaches {
	return &rowCaches{
		apiKeys:      newRowCache(cloneAPIKey),
		agents:       newRowCache(agentWithHost.clone),
		accessTokens: newRowCache(accessTokenRow.clone),
		uploadDocs:   newRowCache(cloneDocument),
	}
}

// ended is the writer's hook (groupWriter.ended).
func (c *rowCaches) ended() {
	c.apiKeys.ended()
	c.agents.ended()
	c.accessTokens.ended()
	c.uploadDocs.ended()
}

// cloneTime copies what t points to.
func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// cloneString copies what s points to.
func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

func cloneAPIKey(k *accounts.APIKey) *accounts.APIKey {
	c := *k
	c.LastUsedAt, c.RevokedAt = cloneTime(k.LastUsedAt), cloneTime(k.RevokedAt)
	return &c
}

// cloneDocument copies a document: its fields are values.
func cloneDocument(d *documents.Document) *documents.Document {
	c := *d
	return &c
}

// usedAt is a last use as the row holds it.
func usedAt(at time.Time) *time.Time {
	at = at.UTC().Truncate(time.Microsecond)
	return &at
}

// marker is a cache told of a change (rowCache.changed).
type marker interface{ changed() }

// changing runs fn, which changes a table c keeps, as one write with the
// change marked inside the writer's batch (rowCache).
func (x q) changing(ctx context.Context, c marker, fn func(q) error) error {
	return x.write(ctx, func(x q) error {
		c.changed()
		return fn(x)
	})
}
