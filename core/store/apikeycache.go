package store

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/faxhub/faxhub/core/accounts"
)

// apiKeyCacheSize bounds the API keys remembered: one entry is a couple of
// hundred bytes.
const apiKeyCacheSize = 4096

// apiKeyCache remembers api_keys rows by hash on SQLite, so that a REST
// request with a key it has seen reads no row to authenticate (issue 32:
// the lookup was a third of what a getFax costs beyond its own read, and
// on SQLite every read after a write re-reads its pages from the file).
//
// It is only used on SQLite, where one process owns the database (docs/
// operations.md): every write to api_keys goes through this process's
// writer, so the cache can be told of each one and nothing is ever served
// stale. On PostgreSQL several replicas write the table and each lookup
// reads the row, as before, so a key revoked on one replica is refused on
// every other at once.
//
// The rule that keeps a revocation immediate: a statement that changes
// api_keys marks the cache (changed), inside the writer's batch; when that
// batch's transaction ends, before any of its callers is answered, the
// writer calls ended, which advances the generation and so invalidates
// every entry. A lookup stores what it read only if the generation did not
// move while it read, under the generation it started with. So an entry
// read before a revocation committed is either never stored or stored
// under a generation that ended before the revoker was answered; a
// lookup that starts after that reads the committed row.
type apiKeyCache struct {
	mu      sync.Mutex
	gen     uint64
	changes bool
	entries *lru.Cache[string, apiKeyEntry]
	// hashes maps a stored key's id to its hash, for touched.
	hashes map[string]string
}

type apiKeyEntry struct {
	key accounts.APIKey
	gen uint64
}

func newAPIKeyCache() *apiKeyCache {
	k := &apiKeyCache{hashes: map[string]string{}}
	// The eviction callback runs under mu: the cache is only changed
	// with it held.
	c, err := lru.NewWithEvict(apiKeyCacheSize, func(_ string, e apiKeyEntry) { delete(k.hashes, e.key.ID) })
	if err != nil {
		// Only a non-positive size fails.
		panic(err)
	}
	k.entries = c
	return k
}

// generation is what a lookup that misses reads under: pass it to add.
func (c *apiKeyCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// get returns a copy of the key stored under hash in the current
// generation.
func (c *apiKeyCache) get(hash string) (*accounts.APIKey, bool) {
	c.mu.Lock()
	e, ok := c.entries.Get(hash)
	ok = ok && e.gen == c.gen
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return copyAPIKey(e.key), true
}

// add stores k, read under generation gen, unless the table changed since.
func (c *apiKeyCache) add(k *accounts.APIKey, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.changes {
		return
	}
	c.entries.Add(k.Hash, apiKeyEntry{key: *copyAPIKey(*k), gen: gen})
	c.hashes[k.ID] = k.Hash
}

// changed marks a write to api_keys in the transaction now running in the
// writer. It must be called from inside the writer's batch (a function
// run by groupWriter), so that the batch's end is what invalidates.
func (c *apiKeyCache) changed() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.changes = true
	c.mu.Unlock()
}

// ended is the writer's hook: a batch's transaction ended (committed or
// rolled back). If it wrote api_keys, every entry is invalidated.
func (c *apiKeyCache) ended() {
	c.mu.Lock()
	if c.changes {
		c.gen++
		c.changes = false
	}
	c.mu.Unlock()
}

// touched updates the last use of the entry of key id, if any, once the
// write is committed, so that AuthenticateAPIKey does not touch it again
// within core.TouchEvery. A last use is not a revocation, so it does not
// invalidate: an entry that misses it (stored by a lookup that read
// before the touch) only costs an extra touch.
func (c *apiKeyCache) touched(id string, at time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hash, ok := c.hashes[id]
	if !ok {
		return
	}
	if e, ok := c.entries.Peek(hash); ok {
		at = at.UTC().Truncate(time.Microsecond) // as the row holds it
		e.key.LastUsedAt = &at
		c.entries.Add(hash, e)
	}
}

func copyAPIKey(k accounts.APIKey) *accounts.APIKey {
	if k.LastUsedAt != nil {
		t := *k.LastUsedAt
		k.LastUsedAt = &t
	}
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		k.RevokedAt = &t
	}
	return &k
}
