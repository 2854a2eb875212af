package store

import (
	"database/sql"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lib/pq"
)

// lib/pq's arrays reach pgx as their text; every other value as it was.
func TestTextArrayConnCheckNamedValue(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 3, 4, 5000, time.UTC)
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"strings", pq.Array([]string{"a", `b "c"`}), `{"a","b \"c\""}`},
		{"int16s", pq.Array([]int16{1, 2}), `{1,2}`},
		{"times", pq.Array([]time.Time{now}), `{2026-12-01 02:03:04.000005Z}`},
		{"nil strings", pq.Array([]string(nil)), nil},
		{"a string", "x", "x"},
		{"a time", now, now},
		{"another Valuer", sql.NullString{String: "x", Valid: true}, sql.NullString{String: "x", Valid: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nv := &driver.NamedValue{Ordinal: 1, Value: tc.in}
			if err := (textArrayConn{}).CheckNamedValue(nv); err != nil {
				t.Fatal(err)
			}
			if nv.Value != tc.want {
				t.Fatalf("got %#v, want %#v", nv.Value, tc.want)
			}
		})
	}
}

// On PostgreSQL, arrays of the kinds River's database/sql driver passes come
// out as they went in when sent as text.
func TestTextArraysOnPostgres(t *testing.T) {
	cfg, err := pgx.ParseConfig(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(textArrayConnector{stdlib.GetConnector(*cfg)})
	defer db.Close()
	at := time.Date(2026, 12, 1, 2, 3, 4, 5000, time.UTC)
	var (
		args, kind string
		when       time.Time
		key        []byte
		prio       int
	)
	err = db.QueryRowContext(t.Context(), `SELECT ($1::jsonb[])[2]::text, ($2::text[])[1], ($3::timestamptz[])[1], ($4::bytea[])[1], ($5::smallint[])[2]`,
		pq.Array([]string{`{"a":1}`, `{"fax_id":"fax_\"x\""}`}), pq.Array([]string{"deliver_fax"}), pq.Array([]time.Time{at}),
		pq.Array([][]byte{{0, 1, 0xff}}), pq.Array([]int16{1, 4})).Scan(&args, &kind, &when, &key, &prio)
	if err != nil {
		t.Fatal(err)
	}
	if args != `{"fax_id": "fax_\"x\""}` || kind != "deliver_fax" || !when.Equal(at) || string(key) != "\x00\x01\xff" || prio != 4 {
		t.Fatalf("got %q %q %v %x %d", args, kind, when, key, prio)
	}
}
