package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/internal/require"
)

// openStore opens and migrates a store at dsn, closed when t ends.
func openStore(t *testing.T, dsn string) services.Store {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStoreSQLite(t *testing.T) {
	// Every case starts from a copy of one migrated database (see
	// storetest.SQLiteTemplate); openStore's Migrate then finds it current.
	migrated := storetest.SQLiteTemplate{Make: func(ctx context.Context, path string) error {
		db, err := store.Open(ctx, path)
		if err != nil {
			return err
		}
		if err := db.Migrate(ctx); err != nil {
			db.Close()
			return err
		}
		return db.Close()
	}}
	storetest.RunTests(t, func(t *testing.T) services.Store {
		path := filepath.Join(t.TempDir(), "faxhub.db")
		migrated.CopyTo(t, path)
		return openStore(t, path)
	})
}

func TestStorePostgres(t *testing.T) {
	base := os.Getenv(storetest.EnvPostgresURL)
	if base == "" {
		require.Missing(t, "PostgreSQL", storetest.EnvPostgresURL+" is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	storetest.RunTests(t, func(t *testing.T) services.Store {
		return openStore(t, storetest.OpenPostgresSchema(t, base))
	})
}
