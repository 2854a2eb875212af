package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// Checks every OAuth and agent-registration input passes before it reaches
// fosite, core or the store: parameters appear once (RFC 6749 section
// 3.1), JSON objects have no duplicate members, and text is valid UTF-8
// without NUL, control or bidirectional-formatting characters (PostgreSQL
// refuses NUL and invalid UTF-8 in text; the others let a name or URI
// display as something it is not): web.DisplayTextProblem.

// formProblem checks a parsed form: each parameter at most once (except
// the names in repeatable) and every name and value valid text. It returns
// a description of the first problem, or "".
func formProblem(form url.Values, repeatable ...string) string {
	names := make([]string, 0, len(form))
	for name := range form {
		names = append(names, name)
	}
	sort.Strings(names) // the same request always names the same problem
	for _, name := range names {
		if p := web.DisplayTextProblem(name); p != "" {
			return fmt.Sprintf("a parameter name %s", p)
		}
		vs := form[name]
		if len(vs) > 1 && !slices.Contains(repeatable, name) {
			return fmt.Sprintf("the parameter %s is given more than once", name)
		}
		for _, v := range vs {
			if p := web.DisplayTextProblem(v); p != "" {
				return fmt.Sprintf("the parameter %s %s", name, p)
			}
		}
	}
	return ""
}

// errJSONSyntax is jsonProblem's answer to a body that is not JSON.
var errJSONSyntax = errors.New("not JSON")

// jsonProblem walks a JSON document and describes the first duplicate
// object member or string that is not valid text (see textProblem), or
// returns "" when there is none. Invalid JSON is errJSONSyntax: the
// decoder that follows says what is wrong with it. encoding/json itself
// keeps the last of duplicate members and replaces invalid UTF-8 with
// U+FFFD, so both must be caught on the raw bytes.
func jsonProblem(body []byte) (string, error) {
	if !utf8.Valid(body) {
		return "the body is not valid UTF-8", nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	p, err := walkJSON(dec, "")
	if err != nil {
		return "", errJSONSyntax
	}
	if p != "" {
		return p, nil
	}
	// A lone surrogate escape (\ud800) decodes to U+FFFD, so only the raw
	// bytes show it; the shared rule refuses it (PostgreSQL's jsonb would).
	if err := web.CheckJSONText(body); err != nil {
		return core.AsError(err).Message, nil
	}
	return "", nil
}

// walkJSON reads one value; path names it in messages.
func walkJSON(dec *json.Decoder, path string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", err
				}
				key, _ := kt.(string)
				member := key
				if path != "" {
					member = path + "." + key
				}
				if p := web.DisplayTextProblem(key); p != "" {
					return "a member name " + p, nil
				}
				if seen[key] {
					return fmt.Sprintf("the member %s appears more than once", member), nil
				}
				seen[key] = true
				if p, err := walkJSON(dec, member); p != "" || err != nil {
					return p, err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if p, err := walkJSON(dec, fmt.Sprintf("%s[%d]", path, i)); p != "" || err != nil {
					return p, err
				}
			}
		}
		if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
	case string:
		if p := web.DisplayTextProblem(t); p != "" {
			if path == "" {
				return "the body " + p, nil
			}
			return "the member " + path + " " + p, nil
		}
	}
	return "", nil
}

// jsonTypeName is how a Go type reads in an error message for JSON
// clients.
func jsonTypeName(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "[]string":
		return "an array of strings"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"):
		return "an object"
	}
	return "of another type"
}

// decodeProblem describes a json.Unmarshal error for a client: the field
// and the type it must have, rather than "not valid JSON". target is what
// was decoded into (a pointer to a struct), to name a field's whole type
// when an element of it was wrong.
func decodeProblem(err error, target any) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return "the body must be " + jsonTypeName(te.Type.String())
		}
		if ft, ok := jsonFieldType(target, field); ok && ft != te.Type {
			return fmt.Sprintf("the field %s must be %s (an element is %s)", field, jsonTypeName(ft.String()), jsonValueName(te.Value))
		}
		return fmt.Sprintf("the field %s must be %s, not %s", field, jsonTypeName(te.Type.String()), jsonValueName(te.Value))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("the body is not valid JSON (at byte %d): %s", se.Offset, strings.TrimPrefix(err.Error(), "json: "))
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "the field " + strings.Trim(f, `"`) + " is not known here"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the body is not complete JSON"
	}
	return "the body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// jsonFieldType finds the Go type of a top-level field of the struct
// target points to, by its JSON name.
func jsonFieldType(target any, name string) (reflect.Type, bool) {
	t := reflect.TypeOf(target)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || (tag == "" && strings.EqualFold(f.Name, name)) {
			return f.Type, true
		}
	}
	return nil, false
}

// jsonValueName is the JSON kind encoding/json reports in a type error.
func jsonValueName(v string) string {
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	return v
}
