package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// SQLiteTemplate is one migrated SQLite database, made on first use and
// then copied byte for byte for every test that needs a fresh one.
//
// Migrating is the most expensive step of opening a test's database under
// the race detector: modernc's SQLite is C translated to Go, so every
// statement of the migrations runs instrumented, and a fresh database took
// about 4 s to migrate under -race (0.1 s without), paid again by every test
// that made one. A copy of a database the same code migrated is the same
// database; opening it still runs the migrations, which find nothing to do.
// The migrations themselves are tested where they are run for real (the
// store's own tests, and every exec'd `faxhub serve` of cmd/faxhub).
type SQLiteTemplate struct {
	// Make creates, migrates and closes a SQLite database at path (in a
	// directory of its own, which it may use as a data dir).
	Make func(ctx context.Context, path string) error

	once sync.Once
	db   []byte
	err  error
}

// CopyTo writes a fresh copy of the migrated database to path (the file a
// store then opens), making the template first if no test has yet.
func (tp *SQLiteTemplate) CopyTo(t testing.TB, path string) {
	t.Helper()
	tp.once.Do(func() { tp.db, tp.err = makeTemplate(tp.Make) })
	if tp.err != nil {
		t.Fatalf("migrated SQLite template: %v", tp.err)
	}
	if err := os.WriteFile(path, tp.db, 0o600); err != nil {
		t.Fatalf("copy the migrated SQLite template: %v", err)
	}
}

// makeTemplate runs build in a temporary directory and keeps the database
// file's bytes; nothing is left on disk.
func makeTemplate(build func(ctx context.Context, path string) error) ([]byte, error) {
	dir, err := os.MkdirTemp("", "faxhub-sqlite-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "faxhub.db")
	if err := build(context.Background(), path); err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the WAL into the file and
	// removes it; a WAL left with frames in it would hold rows the file
	// lacks.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s-wal still holds %d bytes after close: the database was not closed", path, fi.Size())
	}
	return os.ReadFile(path)
}
