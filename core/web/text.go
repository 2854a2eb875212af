package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
)

// Text that reaches the service must be valid UTF-8 without NUL bytes:
// PostgreSQL refuses both in text columns (SQLSTATE 22021 and "invalid
// byte sequence"), which would turn a client's mistake into a 500 there
// while SQLite quietly stores it. JSON can also spell a lone surrogate
// (\ud800), which PostgreSQL's jsonb refuses (22P02) and encoding/json
// turns into U+FFFD: that is refused too, one rule at every door. The
// edges refuse such text, so the stores never see it.

// ValidText returns an invalid_request error naming what when s is not
// valid UTF-8 or contains a NUL byte.
func ValidText(what, s string) error {
	switch {
	case !utf8.ValidString(s):
		return textError(what, "is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return textError(what, "contains a NUL byte")
	}
	return nil
}

// CheckStrings is ValidText over several strings that share one name.
func CheckStrings(what string, ss ...string) error {
	for _, s := range ss {
		if err := ValidText(what, s); err != nil {
			return err
		}
	}
	return nil
}

// CheckValues checks the names and values of a query string or form.
func CheckValues(what string, v url.Values) error {
	for name, vs := range v {
		if err := ValidText(what+" parameter name", name); err != nil {
			return err
		}
		if err := CheckStrings(what+" parameter "+printable(name), vs...); err != nil {
			return err
		}
	}
	return nil
}

// CheckJSONText checks a JSON document's text: the whole document must be
// UTF-8 (RFC 8259 §8.1; encoding/json would silently replace bad bytes
// with U+FFFD), no string, name or value, may decode to a NUL, and no
// \u escape may be half of a surrogate pair without its other half (RFC
// 8259 §8.2 leaves such strings' meaning undefined: encoding/json turns
// them into U+FFFD, PostgreSQL's jsonb refuses them with SQLSTATE 22P02).
// It does not check that the document is well-formed beyond what it needs
// to find its escapes: decoding reports that.
func CheckJSONText(body []byte) error {
	if !utf8.Valid(body) {
		return textError("the JSON body", "is not valid UTF-8")
	}
	// Both problems are \u escapes: look for one before a byte pass.
	if !bytes.Contains(body, []byte(`\u`)) {
		return nil
	}
	return checkJSONEscapes(body)
}

// checkJSONEscapes walks the escapes of body. A backslash only appears in
// valid JSON inside a string, where it starts an escape, so the walk needs
// no string state: \\ and the other two-byte escapes are skipped whole
// (the "\\u0000" of a string holding a backslash is not a NUL), \uXXXX is
// read. Malformed escapes are the decoder's to report.
func checkJSONEscapes(body []byte) error {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 >= len(body) || body[i+1] != 'u' {
			i++ // a two-byte escape (or a stray backslash at the end)
			continue
		}
		r, ok := hex4(body, i+2)
		if !ok {
			i++
			continue
		}
		i += 5 // at the escape's last hex digit
		switch {
		case r == 0:
			return textError("a string in the JSON body", "contains a NUL character (\\u0000)")
		case r >= 0xdc00 && r <= 0xdfff:
			return textError("a string in the JSON body", fmt.Sprintf("contains an unpaired surrogate (\\u%04x)", r))
		case r >= 0xd800 && r <= 0xdbff:
			// A high surrogate needs a low one right after it.
			if i+2 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				if lo, ok := hex4(body, i+3); ok && lo >= 0xdc00 && lo <= 0xdfff {
					i += 6
					continue
				}
			}
			return textError("a string in the JSON body", fmt.Sprintf("contains an unpaired surrogate (\\u%04x)", r))
		}
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape at body[at:].
func hex4(body []byte, at int) (rune, bool) {
	if at+4 > len(body) {
		return 0, false
	}
	var r rune
	for _, c := range body[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// dataHeaders are the request headers whose values become data (keys,
// tokens, cookies compared or stored). Other headers are left alone:
// RFC 9110 allows obs-text in them and nothing stores them.
var dataHeaders = [...]string{"Authorization", "Idempotency-Key", "Cookie", "X-CSRF-Token", "DPoP"}

// CheckRequest checks the text of the path, the query string and the data
// headers of r. Go's server already refuses control characters in header
// values; it lets through bytes above 0x7F, which are not always UTF-8.
func CheckRequest(r *http.Request) error {
	if err := ValidText("the request path", r.URL.Path); err != nil {
		return err
	}
	if r.URL.RawQuery != "" {
		// Malformed escapes are the handler's to refuse; what did decode
		// must still be text.
		q, _ := url.ParseQuery(r.URL.RawQuery)
		if err := CheckValues("the query", q); err != nil {
			return err
		}
	}
	for _, name := range dataHeaders {
		if err := CheckStrings("the "+name+" header", r.Header.Values(name)...); err != nil {
			return err
		}
	}
	return nil
}

// MaxCheckedBody is the largest JSON or form body CheckBody reads to check
// its text. Every JSON and form endpoint refuses larger bodies anyway
// (DefaultMaxJSON, the MCP and OAuth limits are at most this size); a
// larger body passes through unchecked to the handler that refuses it.
const MaxCheckedBody = DefaultMaxJSON

// CheckBody checks the text of a JSON or form body (by Content-Type; a
// body without one is checked as JSON when it looks like JSON). It reads
// the body and puts an identical one back on r, so the handler reads what
// the client sent. The bytes read are returned for error reporting.
func CheckBody(r *http.Request) ([]byte, error) {
	kind := bodyKind(r)
	if kind == "" || r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxCheckedBody+1))
	rest := r.Body
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), errReader{err}, rest), rest}
	if IsBodyTimeout(err) {
		// The body missed its read deadline: refused here, in the route's
		// shape, as 408. Handed on, the handler would meet a context the
		// server has cancelled (a 500 from the first store call, an
		// invalid_token from a token check).
		return body, BodyTimeoutError(err)
	}
	if err != nil || len(body) > MaxCheckedBody {
		// A failed read (the client went away) or an oversize body is the
		// handler's to report.
		return body, nil
	}
	if kind == "auto" {
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || (t[0] != '{' && t[0] != '[') {
			return body, nil
		}
		kind = "json"
	}
	if kind == "form" {
		v, _ := url.ParseQuery(string(body))
		return body, CheckValues("the form", v)
	}
	return body, CheckJSONText(body)
}

// bodyKind is "json", "form", "auto" (no Content-Type) or "" (not checked:
// file uploads and anything else).
func bodyKind(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "auto"
	}
	mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
	mt = strings.TrimSpace(mt)
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return "json"
	case mt == "application/x-www-form-urlencoded":
		return "form"
	}
	return ""
}

// readCloser reads the checked prefix, then the rest of the original body,
// and closes the original.
type readCloser struct {
	io.Reader
	io.Closer
}

// errReader returns err once the checked prefix is consumed (nil: EOF, so
// the MultiReader goes on to the rest of the body).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// Refuser writes the refusal of a request whose text is invalid, in the
// shape of the request's protocol (problem+json, an OAuth error, a
// JSON-RPC error). body is what CheckBody read of the body, if anything.
type Refuser func(w http.ResponseWriter, r *http.Request, body []byte, err error)

// RefuseInvalidText refuses requests whose path, query, data headers or
// JSON/form body carry invalid UTF-8, NUL or (JSON) an unpaired surrogate
// escape, and requests whose body does not arrive in time (KindTimeout),
// before any handler sees them.
// The bodies of requests files reports (uploads: bytes, whatever their
// declared Content-Type) are not read.
func RefuseInvalidText(next http.Handler, refuse Refuser, files func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := CheckRequest(r); err != nil {
			refuse(w, r, nil, err)
			return
		}
		if files != nil && files(r) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := CheckBody(r)
		if err != nil {
			refuse(w, r, body, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WriteOAuthError writes an RFC 6749 §5.2 error object.
func WriteOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache") // RFC 6749 section 5.1
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

func textError(what, problem string) error {
	return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s %s; send text as UTF-8 without NUL characters", what, problem)
}

// printable quotes a name for an error message, however broken it is.
func printable(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", strings.ToValidUTF8(s, "\uFFFD"))
}

// DisplayTextProblem says what is wrong with s as a single-line text a
// person reads (a name, a client's metadata), or "": besides what
// ValidText refuses, control characters and the bidirectional formatting
// characters that make a name or URI display as something it is not.
func DisplayTextProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case r == 0:
			return "contains a NUL character"
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			return "contains a control character"
		case isBidiControl(r):
			return "contains a bidirectional formatting character"
		}
	}
	return ""
}

// isBidiControl reports the Unicode bidirectional formatting characters
// (embeddings, overrides, isolates and marks) that reorder displayed text.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
