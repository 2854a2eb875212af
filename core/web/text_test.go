package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

func TestValidText(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{"", true}, {"fax_123", true}, {"Zürich ✓", true}, {"a\x00b", false}, {"\xff", false}, {"a\xc3", false}} {
		err := web.ValidText("x", c.in)
		if (err == nil) != c.ok || (err != nil && core.ErrorKind(err) != core.KindInvalid) {
			t.Errorf("%q: %v", c.in, err)
		}
	}
}

func TestCheckJSONText(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{"a":"b"}`, true},
		{`{"a":"\\u0000"}`, true}, // an escaped backslash, then text
		{`{"a":"\u00e9"}`, true},
		{`{"a":"\u0000"}`, false},
		{`{"\u0000":1}`, false},
		{`{"a":["x","y\u0000"]}`, false},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":`, true}, // malformed: the decoder reports it
	} {
		err := web.CheckJSONText([]byte(c.in))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.in, err)
		}
	}
}

func TestCheckRequest(t *testing.T) {
	for _, c := range []struct {
		target string
		hdr    map[string]string
		ok     bool
	}{
		{"/api/v1/faxes/fax_1?limit=2", nil, true},
		{"/api/v1/faxes/fax_%00", nil, false},
		{"/api/v1/faxes/%FF", nil, false},
		{"/api/v1/faxes?starting_after=%00", nil, false},
		{"/api/v1/faxes?%FF=1", nil, false},
		{"/api/v1/faxes?a=%zz", nil, true}, // malformed escapes are the handler's
		{"/", map[string]string{"Idempotency-Key": "k\xff"}, false},
		{"/", map[string]string{"Authorization": "Bearer \xc3"}, false},
		{"/", map[string]string{"User-Agent": "\xff"}, true}, // not data
	} {
		r := httptest.NewRequest(http.MethodGet, c.target, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if err := web.CheckRequest(r); (err == nil) != c.ok {
			t.Errorf("%s %v: %v", c.target, c.hdr, err)
		}
	}
}

func TestCheckBodyKeepsTheBody(t *testing.T) {
	for _, c := range []struct {
		name, ctype, body string
		ok                bool
	}{
		{"json", "application/json", `{"a":"b"}`, true},
		{"json NUL", "application/json; charset=utf-8", `{"a":"\u0000"}`, false},
		{"json bad UTF-8", "application/json", "{\"a\":\"\xff\"}", false},
		{"untyped json", "", ` {"a":"\u0000"}`, false},
		{"untyped bytes", "", "%PDF\x00\xff", true},
		{"form", "application/x-www-form-urlencoded", "a=b&c=d", true},
		{"form NUL", "application/x-www-form-urlencoded", "a=b%00", false},
		{"form bad UTF-8", "application/x-www-form-urlencoded", "a%FF=b", false},
		{"file", "application/pdf", "%PDF\x00\xff", true},
		{"oversize passes to the handler", "application/json", `{"a":"` + strings.Repeat("x", web.MaxCheckedBody) + `\u0000"}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
			if c.ctype != "" {
				r.Header.Set("Content-Type", c.ctype)
			}
			_, err := web.CheckBody(r)
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
			got, _ := io.ReadAll(r.Body)
			if string(got) != c.body {
				t.Fatalf("the handler would read %d bytes, not the %d sent", len(got), len(c.body))
			}
		})
	}
}

func TestLogPath(t *testing.T) {
	long := "/api/v1/faxes/" + strings.Repeat("é", 200)
	for _, c := range []struct{ in, want string }{
		{"/api/v1/faxes/fax_1", "/api/v1/faxes/fax_1"},
		{"/api/v1/uploads/upl_secret", "/api/v1/uploads/…"},
		{"/agent/claim/cat_secret", "/agent/claim/…"},
		{"/checkout/test/chk_secret", "/checkout/test/…"},
		{"/api/v1/machine/faxes/status/ms1.secret", "/api/v1/machine/faxes/status/…"},
		{"/x/\xff", "/x/\uFFFD"},
		{long, long[:256] + "…"},       // 14 + 2×121: 256 falls on a boundary
		{long + "x", long[:256] + "…"}, // still cut at the limit
		{"/" + strings.Repeat("a", 300), "/" + strings.Repeat("a", 255) + "…"},
	} {
		got := web.LogPath(c.in)
		if got != c.want {
			t.Errorf("LogPath(%.40q…) = %.60q…, want %.60q…", c.in, got, c.want)
		}
		if len(got) > web.MaxLoggedPath+len("…") || !utf8.ValidString(got) {
			t.Errorf("LogPath(%.40q…) is %d bytes or not UTF-8", c.in, len(got))
		}
	}
	// A cut inside a character backs up to its start.
	odd := "/" + strings.Repeat("é", 200)
	if got := web.LogPath(odd); got != odd[:255]+"…" {
		t.Errorf("odd cut: %q", got[len(got)-8:])
	}
}

func TestWriteJSONRPCInvalidParams(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":"x"}`:     `7`,
		`{"jsonrpc":"2.0","id":"a-1","method":"x"}`: `"a-1"`,
		`{"jsonrpc":"2.0","id":{"x":1}}`:            `null`,
		"{\"id\":\"\xff\"}":                         `null`,
		`[{"jsonrpc":"2.0","id":1}]`:                `null`,
		``:                                          `null`,
	} {
		rec := httptest.NewRecorder()
		web.WriteJSONRPCInvalidParams(rec, []byte(body), "bad text")
		var m struct {
			ID    json.RawMessage
			Error struct{ Code int }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != 400 || m.Error.Code != -32602 || string(m.ID) != want {
			t.Errorf("%q: %d %s", body, rec.Code, rec.Body)
		}
	}
}

// Error bodies used to repeat the whole path: a 100 KB path came back
// whole, an upload token came back in every failed upload's answer.
func TestWriteErrorInstance(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/faxes/fax_1":                "/api/v1/faxes/fax_1",
		"/api/v1/uploads/upl_secret":         "/api/v1/uploads/…",
		"/x/" + strings.Repeat("a", 100_000): "/x/" + strings.Repeat("a", web.MaxLoggedPath-3) + "…",
	} {
		rec := httptest.NewRecorder()
		web.WriteError(rec, httptest.NewRequest(http.MethodGet, path, nil), nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "no"))
		var p struct{ Instance string }
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Instance != want {
			t.Errorf("%.40s…: instance %.60q…", path, p.Instance)
		}
	}
}

func TestDisplayTextProblem(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"Ada's fax bot", ""},
		{"Zoë — 東京", ""},
		{"a\x00b", "contains a NUL character"},
		{"a\xffb", "is not valid UTF-8"},
		{"line\nbreak", "contains a control character"},
		{"del\x7f", "contains a control character"},
		{"evil\u202egpj.exe", "contains a bidirectional formatting character"},
		{"iso\u2066late", "contains a bidirectional formatting character"},
	} {
		if got := web.DisplayTextProblem(tc.in); got != tc.want {
			t.Errorf("DisplayTextProblem(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A JSON-escaped lone surrogate decodes to U+FFFD in encoding/json but is
// refused by PostgreSQL's jsonb (SQLSTATE 22P02): one rule, refused
// everywhere. A pair is a character; an escaped backslash is not an escape.
func TestCheckJSONTextSurrogates(t *testing.T) {
	for body, bad := range map[string]bool{
		`{"a":"\ud800"}`:             true,
		`{"a":"\uDBFF"}`:             true,
		`{"a":"\udc00"}`:             true,
		`{"a":"x\ud800y"}`:           true,
		`{"a":"\ud800\u0041"}`:       true,
		`{"a":"\ud800\ud800"}`:       true,
		`{"a":"\udc00\ud800"}`:       true,
		`{"\ud800":1}`:               true,
		`["ok","\ud83d"]`:            true,
		`{"a":"\ud83d\ude00"}`:       false, // 😀 as a pair
		`{"a":"\uD83D\uDE00\u00e9"}`: false,
		`{"a":"\\ud800"}`:            false, // a backslash, then text
		`{"a":"\\\ud83d\ude00"}`:     false,
		`{"a":"\\\\ud800"}`:          false,
		`{"a":"\\\ud800"}`:           true,
		`{"a":"\u0000"}`:             true,
		`{"a":"\\u0000"}`:            false,
		`{"a":"\u00"}`:               false, // malformed: the decoder's to report
		`{"a":"é \u00e9 \u2028"}`:    false,
		`{"a":"\ud800\u`:             true,
	} {
		err := web.CheckJSONText([]byte(body))
		if (err != nil) != bad {
			t.Errorf("CheckJSONText(%s) = %v, want refused %v", body, err, bad)
		}
		if err != nil && core.ErrorCode(err) != core.CodeInvalidRequest {
			t.Errorf("CheckJSONText(%s): code %q", body, core.ErrorCode(err))
		}
	}
	// The strict decoder refuses it with the others.
	var v struct{ A string }
	if err := web.DecodeStrictJSON([]byte(`{"A":"\ud800"}`), &v); core.ErrorKind(err) != core.KindInvalid {
		t.Fatalf("DecodeStrictJSON: %v (decoded %q)", err, v.A)
	}
}
