package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/faxhub/faxhub/core"
)

// encoding/json matches object names to struct fields without regard to
// case and keeps the last of duplicate names. Both let one body mean
// different things to different readers (a proxy or a signature check
// reading "to" while we read "TO"), so the strict decoder refuses them:
// checkJSONNames walks the document once with the target type beside it.

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkJSONNames refuses duplicate names in any object of body and names
// that match a field of t only when case is ignored. Malformed JSON is
// left to the decoder, which says what is wrong with it.
//
// It scans the bytes itself rather than asking encoding/json's Decoder for
// tokens: every request body passes here, and Token boxed each name and
// value in an interface and parsed each number (two thirds of a send
// body's strict decoding went to it). A name is compared as it is written
// unless it has an escape, which is decoded first, so "a" and "\u0061"
// are one name.
func checkJSONNames(body []byte, t reflect.Type) error {
	s := nameScanner{b: body}
	s.path = s.pathBuf[:0]
	if err := s.value(t); err != errMalformed {
		return err
	}
	return nil
}

// CheckJSONDuplicates refuses a JSON document that names a member twice in
// any of its objects, naming the member by its path. It is the strict
// decoder's rule for bodies that a library decodes (JSON-RPC requests to
// MCP and A2A): encoding/json and the SDKs keep the last of duplicates, so
// a skill argument given twice would silently mean its second value.
// Malformed JSON is left to the decoder.
func CheckJSONDuplicates(body []byte) error {
	return checkJSONNames(body, nil)
}

// errMalformed stops the scan at the first syntax error; checkJSONNames
// leaves the error to the decoder, which says what and where.
var errMalformed = errors.New("malformed JSON")

// maxJSONDepth is encoding/json's own nesting limit: deeper documents are
// refused by the decoder, so the scan stops there too rather than recurse
// as deep as a hostile body nests.
const maxJSONDepth = 10000

// smallObject is how many names an object's duplicate check compares
// pairwise before it moves them into a map: requests have a handful, and a
// hostile object of thousands must not cost their square.
const smallObject = 16

type nameScanner struct {
	b []byte
	i int
	// path is where the scan is: the names of the members it is in, nil
	// for an array's element. It is spelled out only for an error.
	path    [][]byte
	pathBuf [8][]byte
}

func (s *nameScanner) at() string { return pathText(s.path) }

// pathShown is how many of a path's innermost steps an error names: a
// hostile body nested thousands deep gets a short message, not its path.
const pathShown = 16

// pathText spells a path as an error names it: "items"[]."name".
func pathText(path [][]byte) string {
	at := ""
	if len(path) > pathShown {
		at, path = "…", path[len(path)-pathShown:]
	}
	for _, name := range path {
		if name == nil {
			at += "[]"
		} else {
			at = fieldPath(at, string(name))
		}
	}
	return at
}

func (s *nameScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value whose Go type is t (nil: unknown, only duplicates
// are refused below it).
func (s *nameScanner) value(t reflect.Type) error {
	s.space()
	if s.i >= len(s.b) {
		return errMalformed
	}
	switch s.b[s.i] {
	case '{':
		return s.object(jsonTarget(t))
	case '[':
		return s.array(jsonTarget(t))
	case '"':
		_, err := s.str()
		return err
	}
	// A number or a literal: the decoder checks its spelling.
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		case '{', '[', '"':
			return errMalformed
		}
		s.i++
	}
	return nil
}

// str scans the string at s.i and returns its text as written, without
// the quotes.
func (s *nameScanner) str() (raw []byte, err error) {
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch s.b[i] {
		case '"':
			s.i = i + 1
			return s.b[start:i], nil
		case '\\':
			i++ // the escaped byte; \uXXXX's digits need no care
		}
	}
	return nil, errMalformed
}

// name scans an object's member name and returns it decoded.
func (s *nameScanner) name() ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, errMalformed
	}
	start := s.i
	raw, err := s.str()
	if err != nil || bytes.IndexByte(raw, '\\') < 0 {
		return raw, err
	}
	var name string
	if json.Unmarshal(s.b[start:s.i], &name) != nil {
		return nil, errMalformed
	}
	return []byte(name), nil
}

// enter steps into the object or array at s.i, which ends at close, and
// reports whether it has members (then the path has a step for them).
func (s *nameScanner) enter(close byte) (bool, error) {
	if len(s.path) >= maxJSONDepth {
		return false, errMalformed
	}
	s.i++ // the opening bracket
	s.space()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		return false, nil
	}
	s.path = append(s.path, nil)
	return true, nil
}

// more reads what follows a member or an element: true after a comma
// (another comes), false at close (the container ends; its step leaves
// the path).
func (s *nameScanner) more(close byte) (bool, error) {
	s.space()
	if s.i >= len(s.b) {
		return false, errMalformed
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return true, nil
	case close:
		s.i++
		s.path = s.path[:len(s.path)-1]
		return false, nil
	}
	return false, errMalformed
}

func (s *nameScanner) object(t reflect.Type) error {
	members, err := s.enter('}')
	if err != nil || !members {
		return err
	}
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	var few [smallObject][]byte
	seen := few[:0]
	var many map[string]bool
	for more := true; more; {
		s.space()
		name, err := s.name()
		if err != nil {
			return err
		}
		s.path[len(s.path)-1] = name
		if many != nil {
			if many[string(name)] {
				return duplicateName(s.at())
			}
			many[string(name)] = true
		} else {
			for _, n := range seen {
				if bytes.Equal(n, name) {
					return duplicateName(s.at())
				}
			}
			if len(seen) < smallObject {
				seen = append(seen, name)
			} else {
				many = make(map[string]bool, 2*smallObject)
				for _, n := range seen {
					many[string(n)] = true
				}
				many[string(name)] = true
			}
		}
		next := elem
		if fields != nil {
			ft, ok := fields[string(name)]
			if !ok {
				for exact := range fields {
					if strings.EqualFold(exact, string(name)) {
						return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body has %s; field names are case-sensitive: use %q", s.at(), exact)
					}
				}
			}
			next = ft // an unknown name: the decoder refuses it
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errMalformed
		}
		s.i++
		if err := s.value(next); err != nil {
			return err
		}
		if more, err = s.more('}'); err != nil {
			return err
		}
	}
	return nil
}

func duplicateName(at string) error {
	return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body names %s twice; send each field once", at)
}

func (s *nameScanner) array(t reflect.Type) error {
	elements, err := s.enter(']')
	if err != nil || !elements {
		return err
	}
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for more := true; more; {
		if err := s.value(elem); err != nil {
			return err
		}
		if more, err = s.more(']'); err != nil {
			return err
		}
	}
	return nil
}

// jsonTarget is the type a JSON value decodes into, or nil when the names
// below it are not known (interfaces, raw messages, custom unmarshalers):
// there only duplicates are refused.
func jsonTarget(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// jsonFields maps the JSON names of a struct's fields (embedded structs
// flattened, as encoding/json does) to their types. The map is shared:
// callers only read it.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m, _ := jsonFieldsOf.LoadOrStore(t, structJSONFields(t))
	return m.(map[string]reflect.Type)
}

// jsonFieldsOf memoizes jsonFields by type, as encoding/json memoizes its
// own field lists: a type's fields never change, the types are the few
// the code decodes into, and building the map was most of what checking a
// body's names allocated.
var jsonFieldsOf sync.Map // reflect.Type → map[string]reflect.Type

func structJSONFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range structJSONFields(ft) {
					if _, ok := out[n]; !ok {
						out[n] = typ
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func fieldPath(at, name string) string {
	if at == "" {
		return printable(name)
	}
	return at + "." + printable(name)
}
