package store

import (
	"reflect"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/jmoiron/sqlx/reflectx"
)

// namedCache is sqlx.Named with its work done once per query and type
// instead of on every call: sqlx parses the query's :name parameters and
// looks each name up in the type's fields every time, which was a quarter
// of each INSERT's cost on SQLite's writer (every send runs three).
//
// The first call for a query and type binds it both ways and keeps the
// cached form only if it gives exactly what sqlx.Named gives (the same
// query, the same arguments); any other query (one with "::", a map
// argument, a name the type lacks) is always left to sqlx.Named.
type namedCache struct {
	mapper  *reflectx.Mapper
	entries sync.Map // namedKey → *namedEntry
}

type namedKey struct {
	query string
	typ   reflect.Type
}

type namedEntry struct {
	bound string
	// fields are the traversals to each parameter's field; nil means
	// "use sqlx.Named".
	fields [][]int
}

func newNamedCache(m *reflectx.Mapper) *namedCache { return &namedCache{mapper: m} }

// bind returns query with ? placeholders and the arguments for them.
func (c *namedCache) bind(query string, arg any) (string, []any, error) {
	v := reflect.Indirect(reflect.ValueOf(arg))
	if v.Kind() != reflect.Struct {
		return sqlx.Named(query, arg)
	}
	key := namedKey{query, v.Type()}
	if e, ok := c.entries.Load(key); ok {
		e := e.(*namedEntry)
		if e.fields == nil {
			return sqlx.Named(query, arg)
		}
		args := make([]any, len(e.fields))
		for i, f := range e.fields {
			args[i] = reflectx.FieldByIndexesReadOnly(v, f).Interface()
		}
		return e.bound, args, nil
	}
	bound, args, err := sqlx.Named(query, arg)
	if err != nil {
		return "", nil, err
	}
	c.entries.Store(key, c.compile(query, v, bound, args))
	return bound, args, nil
}

// compile parses query's parameters and keeps the result if it agrees
// with what sqlx bound (want, wantArgs).
func (c *namedCache) compile(query string, v reflect.Value, want string, wantArgs []any) *namedEntry {
	bound, names, ok := parseNamed(query)
	if !ok || bound != want || len(names) != len(wantArgs) {
		return &namedEntry{}
	}
	fields := c.mapper.TraversalsByName(v.Type(), names)
	for i, f := range fields {
		if len(f) == 0 || !reflect.DeepEqual(reflectx.FieldByIndexesReadOnly(v, f).Interface(), wantArgs[i]) {
			return &namedEntry{}
		}
	}
	return &namedEntry{bound: bound, fields: fields}
}

// parseNamed replaces each :name in query with ?; ok is false for a query
// with "::" (sqlx's escape and PostgreSQL's cast), left to sqlx.
func parseNamed(query string) (bound string, names []string, ok bool) {
	if strings.Contains(query, "::") {
		return "", nil, false
	}
	var b strings.Builder
	for i := 0; i < len(query); i++ {
		if query[i] != ':' {
			b.WriteByte(query[i])
			continue
		}
		j := i + 1
		for j < len(query) && isNameByte(query[j]) {
			j++
		}
		if j == i+1 {
			b.WriteByte(':')
			continue
		}
		names = append(names, query[i+1:j])
		b.WriteByte('?')
		i = j - 1
	}
	return b.String(), names, true
}

func isNameByte(c byte) bool {
	return c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
