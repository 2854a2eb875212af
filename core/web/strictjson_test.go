package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
)

type namesBody struct {
	To    string `json:"to"`
	Items []struct {
		Name string `json:"name"`
	} `json:"items,omitempty"`
	Meta      map[string]any  `json:"meta,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Embedded
}

type Embedded struct {
	Retry *struct {
		Attempts int `json:"attempts"`
	} `json:"retry,omitempty"`
}

func TestCheckJSONNames(t *testing.T) {
	nested := func(depth int, inner string) string {
		return strings.Repeat(`{"a":`, depth-1) + inner + strings.Repeat(`}`, depth-1)
	}
	var many strings.Builder
	many.WriteString(`{"to":"x","meta":{`)
	for i := range 10000 {
		many.WriteString(`"k` + strings.Repeat("z", i%7) + string(rune('a'+i%26)) + `_` + itoa(i) + `":1,`)
	}
	many.WriteString(`"k_0":2,"ka_0":3}}`)
	for _, c := range []struct {
		name, body string
		want       string // "" accepted; else a part of the error
	}{
		{"plain", `{"to":"x","items":[{"name":"a"},{"name":"b"}],"meta":{"a":{"a":1}}}`, ""},
		{"whitespace everywhere", " {\n\t\"to\" : \"x\" ,\r\n \"items\" : [ { \"name\" : \"a\" } , { } ] , \"meta\" : { } } ", ""},
		{"duplicate", `{"to":"x","to":"y"}`, `names "to" twice`},
		{"duplicate by an escape", `{"to":"x","\u0074o":"y"}`, `names "to" twice`},
		{"duplicate in an array's object", `{"items":[{"name":"a"},{"name":"a","name":"b"}]}`, `names "items"[]."name" twice`},
		{"duplicate in a map", `{"meta":{"b":[1,{"c":2,"c":3}]}}`, `names "meta"."b"[]."c" twice`},
		{"duplicate in raw arguments", `{"arguments":{"x":1,"x":2}}`, `names "arguments"."x" twice`},
		{"a string that looks like a name", `{"to":"\"to\":","meta":{"to":"}"}}`, ""},
		{"case-folded", `{"TO":"x"}`, `use "to"`},
		{"case-folded, embedded, nested", `{"retry":{"Attempts":1}}`, `has "retry"."Attempts"; field names are case-sensitive: use "attempts"`},
		{"17 names, no duplicate (past the small set)", `{"meta":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1}}`, ""},
		{"a duplicate past the small set", `{"meta":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1,"c":2}}`, `names "meta"."c" twice`},
		{"ten thousand names, the last one twice", many.String(), `names "meta"."ka_0" twice`},
		{"a duplicate at encoding/json's depth limit", nested(10000, `{"a":1,"a":2}`), "names …" + strings.Repeat(`."a"`, 16) + " twice; send"},
		{"deeper than the decoder reads: left to it", nested(10001, `{"a":1,"a":2}`), ""},
		{"a megabyte of brackets: left to the decoder", strings.Repeat("[", 1<<20), ""},
		{"malformed: left to the decoder", `{"to":"x",,"to":"y"}`, ""},
		{"unterminated string", `{"to":"x`, ""},
		{"unterminated name", `{"to`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkJSONNames([]byte(c.body), reflect.TypeFor[*namesBody]())
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// FuzzCheckJSONNames: on any valid JSON document the byte scan says what
// the token walk it replaced said (referenceJSONNames below), for a typed
// body and for duplicates alone.
func FuzzCheckJSONNames(f *testing.F) {
	for _, s := range []string{`{"to":"x"}`, `{"to":"x","to":"y"}`, `{"TO":"x"}`, `{"to":"x","\u0074o":"y"}`, `{"items":[{"name":1},{"Name":2}]}`, `{"meta":{"a":{"a":1,"a":2}}}`, `{"arguments":{"x":1,"x":2}}`, `{"retry":{"attempts":1,"attempts":2}}`, `[{"a":1},{"a":2,"b":[{"c":1,"c":1}]}]`, `{"a\\"b":1,"a\"b":2}`, `{"":1,"":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || !utf8.Valid(body) {
			return
		}
		for _, typ := range []reflect.Type{reflect.TypeFor[*namesBody](), nil} {
			got, want := checkJSONNames(body, typ), referenceJSONNames(body, typ)
			if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
				t.Fatalf("%q as %v: scan says %v, token walk says %v", body, typ, got, want)
			}
		}
	})
}

// referenceJSONNames is the token walk checkJSONNames replaced, kept as
// the fuzz target's oracle: slow and plainly right.
func referenceJSONNames(body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := referenceWalk(dec, t, nil); !errors.Is(err, errMalformed) {
		return err
	}
	return nil
}

func referenceWalk(dec *json.Decoder, t reflect.Type, at [][]byte) error {
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
			here := append(at[:len(at):len(at)], []byte(name))
			if seen[name] {
				return duplicateName(pathText(here))
			}
			seen[name] = true
			next := elem
			if fields != nil {
				ft, ok := fields[name]
				if !ok {
					for exact := range fields {
						if strings.EqualFold(exact, name) {
							return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body has %s; field names are case-sensitive: use %q", pathText(here), exact)
						}
					}
				}
				next = ft
			}
			if err := referenceWalk(dec, next, here); err != nil {
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
			if err := referenceWalk(dec, elem, append(at[:len(at):len(at)], nil)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return errMalformed
		}
	}
	return nil
}
