package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
)

// newCachedKey creates an owner and a live API key on db.
func newCachedKey(t *testing.T, db *DB) *accounts.APIKey {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	o := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: core.NewID("mail") + "@example.com", CreatedAt: now}
	if err := db.CreateOwner(ctx, o); err != nil {
		t.Fatal(err)
	}
	id := core.NewID(core.PrefixAPIKey)
	k := &accounts.APIKey{ID: id, OwnerID: o.ID, Mode: core.ModeLive, Name: "k", Hash: core.HashSecret(id), Hint: "h", CreatedAt: now}
	if err := db.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestAPIKeyCacheServesReads checks that SQLite answers a key it has read
// from its cache, and PostgreSQL has none.
func TestAPIKeyCacheServesReads(t *testing.T) {
	db := openMigratedSQLite(t)
	k := newCachedKey(t, db)
	if _, err := db.GetAPIKeyByHash(t.Context(), k.Hash); err != nil {
		t.Fatal(err)
	}
	got, ok := db.caches.apiKeys.peek(k.Hash)
	if !ok || got.ID != k.ID {
		t.Fatalf("after a lookup, the cache holds %v, %v; want the key", got, ok)
	}
	// What it hands out is a copy.
	got.RevokedAt = &k.CreatedAt
	if again, _ := db.caches.apiKeys.peek(k.Hash); again.RevokedAt != nil {
		t.Error("changing a key the cache handed out changed the cache")
	}
}

// TestAPIKeyCacheRevocationRace revokes a key while readers look it up
// without pause: no lookup that starts after RevokeAPIKey returned may
// see the key unrevoked (the rule in rowcache.go).
func TestAPIKeyCacheRevocationRace(t *testing.T) {
	ctx := t.Context()
	db := openMigratedSQLite(t)
	for round := range 20 {
		k := newCachedKey(t, db)
		var revoked atomic.Bool
		var stale atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := revoked.Load()
					got, err := db.GetAPIKeyByHash(ctx, k.Hash)
					if err != nil {
						t.Error(err)
						return
					}
					if after && got.RevokedAt == nil {
						stale.Add(1)
					}
				}
			})
		}
		if err := db.RevokeAPIKey(ctx, k.OwnerID, k.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		revoked.Store(true)
		// Let the readers run a while after the revocation.
		for range 50 {
			if _, err := db.GetAPIKeyByHash(ctx, k.Hash); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
		if n := stale.Load(); n > 0 {
			t.Fatalf("round %d: %d lookups started after the revocation returned saw the key unrevoked", round, n)
		}
	}
}

// TestAPIKeyCacheTouch checks that a touch updates the cached key's last
// use (so AuthenticateAPIKey does not touch again at once) without
// emptying the cache.
func TestAPIKeyCacheTouch(t *testing.T) {
	ctx := t.Context()
	db := openMigratedSQLite(t)
	k, other := newCachedKey(t, db), newCachedKey(t, db)
	for _, key := range []*accounts.APIKey{k, other} {
		if _, err := db.GetAPIKeyByHash(ctx, key.Hash); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(time.Hour)
	if err := db.TouchAPIKey(ctx, k.ID, at); err != nil {
		t.Fatal(err)
	}
	got, ok := db.caches.apiKeys.peek(k.Hash)
	want := at.UTC().Truncate(time.Microsecond)
	if !ok || got.LastUsedAt == nil || !got.LastUsedAt.Equal(want) {
		t.Fatalf("cached key after a touch: %v, %v; want last used %v", got, ok, want)
	}
	if _, ok := db.caches.apiKeys.peek(other.Hash); !ok {
		t.Error("a touch emptied the cache")
	}
	read, err := db.GetAPIKeyByHash(ctx, k.Hash)
	if err != nil || read.LastUsedAt == nil || !read.LastUsedAt.Equal(want) {
		t.Fatalf("lookup after a touch: %v, %v; want last used %v", read, err, want)
	}
}

// TestAPIKeyCacheWriteInvalidates checks that a revocation empties the
// cache once its transaction ends, even rolled back, and an insert does
// not; and that a lookup inside a transaction reads its own view.
func TestAPIKeyCacheWriteInvalidates(t *testing.T) {
	ctx := t.Context()
	db := openMigratedSQLite(t)
	k := newCachedKey(t, db)
	cached := func() bool {
		if _, err := db.GetAPIKeyByHash(ctx, k.Hash); err != nil {
			t.Fatal(err)
		}
		_, ok := db.caches.apiKeys.peek(k.Hash)
		return ok
	}
	if !cached() {
		t.Fatal("a lookup was not cached")
	}
	newCachedKey(t, db) // CreateAPIKey: an insert changes no kept row
	if _, ok := db.caches.apiKeys.peek(k.Hash); !ok {
		t.Error("a key created emptied the cache")
	}
	errBack := errors.New("back")
	err := db.InTx(ctx, func(raw core.Tx) error {
		tx := raw.(*Tx)
		in, err := tx.GetAPIKeyByHash(ctx, k.Hash)
		if err != nil {
			return err
		}
		if in.RevokedAt != nil {
			return errors.New("revoked before the revocation")
		}
		if err := tx.RevokeAPIKey(ctx, k.OwnerID, k.ID, time.Now()); err != nil {
			return err
		}
		if in, err = tx.GetAPIKeyByHash(ctx, k.Hash); err != nil {
			return err
		}
		if in.RevokedAt == nil {
			return errors.New("the transaction's own lookup missed its revocation")
		}
		return errBack
	})
	if !errors.Is(err, errBack) {
		t.Fatal(err)
	}
	if _, ok := db.caches.apiKeys.peek(k.Hash); ok {
		t.Error("a revocation rolled back left the cache as it was; want it emptied (harmless either way, but the rule is any write)")
	}
	if got, err := db.GetAPIKeyByHash(ctx, k.Hash); err != nil || got.RevokedAt != nil {
		t.Fatalf("after the rollback: %v, %v; want the key unrevoked", got, err)
	}
}

// TestRowCacheBounded checks a cache keeps at most rowCacheSize rows.
func TestRowCacheBounded(t *testing.T) {
	c := newRowCache(cloneAPIKey)
	for range rowCacheSize + 10 {
		id := core.NewID(core.PrefixAPIKey)
		_, gen, _ := c.lookup(id)
		c.add(id, &accounts.APIKey{ID: id}, gen)
	}
	if n := c.entries.Len(); n != rowCacheSize {
		t.Errorf("%d entries; want %d", n, rowCacheSize)
	}
}

// TestAPIKeyCacheInvalidatedBeforeAnswer checks the writer ends a batch's
// cache generation before it answers the batch's callers: a revoker that
// got its answer, and anyone it told, can rely on the revocation.
func TestAPIKeyCacheInvalidatedBeforeAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		db := openMigratedSQLite(t)
		k := newCachedKey(t, db)
		release, entered := make(chan struct{}), make(chan struct{})
		ended := db.gw.ended
		var once sync.Once
		db.gw.ended = func() {
			ended()
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		done := make(chan error, 1)
		go func() { done <- db.RevokeAPIKey(ctx, k.OwnerID, k.ID, time.Now()) }()
		<-entered
		synctest.Wait()
		select {
		case err := <-done:
			close(release)
			t.Fatalf("RevokeAPIKey returned (%v) while the cache was being invalidated", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// peek is an entry as the cache holds it, without reading through.
func (c *rowCache[V]) peek(key string) (V, bool) {
	v, _, ok := c.lookup(key)
	return v, ok
}
