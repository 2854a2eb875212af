package store

import (
	"context"
	"path/filepath"
	"testing"
)

func TestStatementCache(t *testing.T) {
	ctx := context.Background()
	db := openCachedSQLite("file:"+filepath.Join(t.TempDir(), "c.db")+"?_pragma=journal_mode(WAL)", false)
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection, so every call meets the same cache
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := db.ExecContext(ctx, "INSERT INTO t (id, v) VALUES (?, ?)", i, "v"); err != nil {
			t.Fatal(err)
		}
	}
	const q = "SELECT id FROM t WHERE id >= ? ORDER BY id"

	t.Run("nested use of an open statement", func(t *testing.T) {
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		outer, err := tx.QueryContext(ctx, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for outer.Next() {
			var id int
			if err := outer.Scan(&id); err != nil {
				t.Fatal(err)
			}
			// The same query while its rows are open runs uncached instead
			// of resetting the outer rows.
			var inner []int
			if err := tx.SelectContext(ctx, &inner, q, id); err != nil {
				t.Fatal(err)
			}
			if len(inner) != 5-id {
				t.Fatalf("inner query from %d got %v", id, inner)
			}
			n++
		}
		if err := outer.Err(); err != nil || n != 5 {
			t.Fatalf("outer rows: %d, %v", n, err)
		}
		outer.Close()
	})

	t.Run("reused and schema changes", func(t *testing.T) {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var cached int
		if err := conn.Raw(func(dc any) error { cached = len(dc.(*cachingConn).stmts); return nil }); err != nil {
			t.Fatal(err)
		}
		if cached == 0 {
			t.Fatal("no statement was cached")
		}
		if _, err := conn.ExecContext(ctx, "ALTER TABLE t ADD COLUMN w TEXT"); err != nil {
			t.Fatal(err)
		}
		var ids []int
		rows, err := conn.QueryContext(ctx, q, 3)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int
			rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) != 2 {
			t.Fatalf("cached statement after a schema change returned %v", ids)
		}
	})

	t.Run("savepoints are cached and keep working", func(t *testing.T) {
		for round := range 3 {
			tx, err := db.BeginTxx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			steps := []string{"SAVEPOINT a", "INSERT", "SAVEPOINT b", "INSERT", "ROLLBACK TO SAVEPOINT b", "RELEASE SAVEPOINT b", "RELEASE SAVEPOINT a"}
			for i, st := range steps {
				var err error
				if st == "INSERT" {
					_, err = tx.ExecContext(ctx, "INSERT INTO t (id, v) VALUES (?, ?)", 100+10*round+i, "sp")
				} else {
					_, err = tx.ExecContext(ctx, st)
				}
				if err != nil {
					t.Fatalf("round %d, %s: %v", round, st, err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := db.GetContext(ctx, &n, "SELECT count(*) FROM t WHERE v = 'sp'"); err != nil || n != 3 {
			t.Fatalf("%d rows kept (%v), want 3: one per round, the rolled-back ones gone", n, err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "PRAGMA user_version"); err != nil {
			t.Fatal(err)
		}
		if err := conn.Raw(func(dc any) error {
			if _, ok := dc.(*cachingConn).stmts["ROLLBACK TO SAVEPOINT b"]; !ok {
				t.Error("ROLLBACK TO SAVEPOINT b was not cached")
			}
			if _, ok := dc.(*cachingConn).stmts["PRAGMA user_version"]; ok {
				t.Error("a pragma was cached")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}
