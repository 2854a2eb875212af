package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jmoiron/sqlx/reflectx"
)

type namedRow struct {
	ID      string     `db:"id"`
	N       int        `db:"n"`
	At      time.Time  `db:"at"`
	Maybe   *string    `db:"maybe"`
	Skipped string     `db:"-"`
	Inner   namedInner `db:"inner"`
}

type namedInner struct {
	Name string `db:"name"`
}

// The cache binds exactly as sqlx.Named does, the first time and every
// time after, and leaves what it cannot parse to sqlx.
func TestNamedCacheMatchesSqlx(t *testing.T) {
	c := newNamedCache(reflectx.NewMapperFunc("db", sqlx.NameMapper))
	s := "x"
	rows := []namedRow{
		{ID: "a", N: 1, At: time.Unix(1, 0).UTC(), Maybe: &s, Inner: namedInner{Name: "one"}},
		{ID: "b", N: 2, At: time.Unix(2, 0).UTC()},
	}
	for _, tc := range []struct {
		name, query string
		cached      bool
	}{
		{"plain", "INSERT INTO t (id, n, at, maybe) VALUES (:id, :n, :at, :maybe) ON CONFLICT DO NOTHING", true},
		{"nested field", "UPDATE t SET name = :inner.name WHERE id = :id", true},
		{"a PostgreSQL cast", "SELECT :id::text", false},
		{"a name the type lacks", "SELECT :nope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, row := range rows {
				for _, arg := range []any{row, &row} {
					got, gotArgs, gotErr := c.bind(tc.query, arg)
					want, wantArgs, wantErr := sqlx.Named(tc.query, arg)
					if wantErr != nil {
						if gotErr == nil {
							t.Fatalf("bind = %q %v, sqlx.Named failed: %v", got, gotArgs, wantErr)
						}
						continue
					}
					if gotErr != nil || got != want || !reflect.DeepEqual(gotArgs, wantArgs) {
						t.Fatalf("bind = %q %v %v, sqlx.Named = %q %v %v", got, gotArgs, gotErr, want, wantArgs, wantErr)
					}
				}
			}
			e, ok := c.entries.Load(namedKey{tc.query, reflect.TypeOf(namedRow{})})
			if cached := ok && e.(*namedEntry).fields != nil; cached != tc.cached {
				t.Errorf("cached = %v, want %v", cached, tc.cached)
			}
		})
	}
}
