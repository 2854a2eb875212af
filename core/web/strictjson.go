package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

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
func checkJSONNames(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := walkJSON(dec, t, ""); err != errMalformed {
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

// errMalformed stops the walk at the first syntax error (the decoder's
// More keeps answering true after a failed Token, so the walk must not go
// on); checkJSONNames leaves the error to the decoder.
var errMalformed = errors.New("malformed JSON")

func walkJSON(dec *json.Decoder, t reflect.Type, at string) error {
	t = jsonTarget(t)
	tok, err := dec.Token()
	if err != nil {
		return errMalformed
	}
	switch tok {
	case json.Delim('{'):
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
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return errMalformed
			}
			name, _ := kt.(string)
			if seen[name] {
				return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body names %s twice; send each field once", fieldPath(at, name))
			}
			seen[name] = true
			next := elem
			if fields != nil {
				ft, ok := fields[name]
				if !ok {
					for exact := range fields {
						if strings.EqualFold(exact, name) {
							return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body has %s; field names are case-sensitive: use %q", fieldPath(at, name), exact)
						}
					}
				}
				next = ft // an unknown name: the decoder refuses it
			}
			if err := walkJSON(dec, next, fieldPath(at, name)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return errMalformed
		}
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkJSON(dec, elem, at+"[]"); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return errMalformed
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
// flattened, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
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
				for n, typ := range jsonFields(ft) {
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
