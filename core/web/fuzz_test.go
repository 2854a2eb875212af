package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// FuzzParseAuthorization: any header value parses without a panic, and a
// bearer token is what follows the scheme, trimmed and non-empty.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"Bearer fxk_test_abc", "bearer  tok ", "DPoP x", "Basic dXNlcjpwYXNz", "Bearer", "Bearer ", " Bearer\tx", "Payment id=\"x\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header["Authorization"] = []string{v}
		a, err := web.ParseAuthorization(r)
		if err != nil {
			t.Fatalf("one header refused: %v", err)
		}
		tok, ok := web.BearerToken(r)
		if ok != a.IsBearer() || (ok && (tok == "" || tok != strings.TrimSpace(tok) || tok != a.Credentials)) {
			t.Fatalf("%q: bearer %q %v, parsed %+v", v, tok, ok, a)
		}
		if ok && !strings.Contains(v, tok) {
			t.Fatalf("%q: token %q is not from the header", v, tok)
		}
		r.Header.Add("Authorization", v)
		if _, err := web.ParseAuthorization(r); core.ErrorKind(err) != core.KindInvalid {
			t.Fatalf("two headers: %v", err)
		}
	})
}

type fuzzBody struct {
	To        string            `json:"to"`
	Pages     int               `json:"pages,omitempty"`
	Cover     *bool             `json:"cover,omitempty"`
	Items     []struct{ N int } `json:"items,omitempty"`
	Meta      map[string]any    `json:"meta,omitempty"`
	Arguments json.RawMessage   `json:"arguments,omitempty"`
}

// FuzzDecodeJSON: the strict decoder never panics, refuses only with
// client errors, and what it accepts is UTF-8 without NUL in any string,
// one object, with no name twice.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"to":"x"}`, `{"to":"x","to":"y"}`, `{"TO":"x"}`, `{"to":"\u0000"}`, "{\"to\":\"\xff\"}", `{"to":"x"}]`, `{"items":[{"N":1},{"n":2}]}`, `{"meta":{"a":{"a":1}}}`, `{"arguments":{"x":1,"x":2}}`, ``, `[]`, `null`,
		// JSON-escaped surrogates: a lone one is refused, a pair is a
		// character, an escaped backslash is not an escape.
		`{"to":"\ud800"}`, `{"meta":{"\udc00":1}}`, `{"to":"\ud83d\ude00"}`, `{"to":"\\ud800"}`, `{"to":"\ud800\u0041"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var v fuzzBody
		err := web.DecodeJSONLimit(httptest.NewRecorder(), r, &v, 4096, false)
		if err != nil {
			if k := core.ErrorKind(err); k != core.KindInvalid && k != core.KindTooLarge {
				t.Fatalf("%q: kind %d: %v", body, k, err)
			}
			return
		}
		if !utf8.Valid(body) || web.CheckJSONText(body) != nil {
			t.Fatalf("%q accepted with invalid text", body)
		}
		for _, s := range append([]string{v.To}, stringsOf(v.Meta)...) {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("%q: a NUL got through", body)
			}
		}
	})
}

func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(out, k)
			out = append(out, stringsOf(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, stringsOf(e)...)
		}
		return out
	}
	return nil
}
