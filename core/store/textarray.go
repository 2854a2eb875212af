package store

import (
	"context"
	"database/sql/driver"
	"reflect"

	"github.com/jackc/pgx/v5/stdlib"
)

// textArrayConnector opens pgx connections that send lib/pq's arrays as the
// text they already are. River's database/sql driver (riverdatabasesql)
// passes each of its batch statements' parameters as pq.Array values: a
// job's insert is twelve of them, a batch of completions as many. pgx takes
// any driver.Valuer, calls Value (lib/pq's text form of the array) and,
// since it sends an array parameter in binary, parses that text back into
// an array to encode it: about a fifth of a PostgreSQL send's CPU in the
// handler, and work on every delivery's completion. Given the text itself,
// pgx sends it as text and PostgreSQL parses it, as it would from lib/pq.
// Any other value goes to pgx as before.
type textArrayConnector struct{ driver.Connector }

func (c textArrayConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if sc, ok := conn.(*stdlib.Conn); ok {
		return textArrayConn{sc}, nil
	}
	return conn, nil
}

// textArrayConn is pgx's connection (every method of it, so every optional
// interface database/sql looks for) but for CheckNamedValue.
type textArrayConn struct{ *stdlib.Conn }

// CheckNamedValue replaces a lib/pq value by its driver value (lib/pq's
// arrays: their text); pgx's own accepts everything as it is.
func (c textArrayConn) CheckNamedValue(nv *driver.NamedValue) error {
	if v, ok := nv.Value.(driver.Valuer); ok && fromLibPQ(v) {
		val, err := v.Value()
		if err != nil {
			return err
		}
		nv.Value = val
		return nil
	}
	return c.Conn.CheckNamedValue(nv)
}

// fromLibPQ reports whether v's type (or what it points to) is lib/pq's.
func fromLibPQ(v any) bool {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "github.com/lib/pq"
}
