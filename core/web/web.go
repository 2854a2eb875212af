// Package web is the HTTP plumbing every faxhub adapter shares: RFC 9457
// problem+json errors with stable codes, strict JSON bodies, bearer tokens.
// Keeping it in one place is what makes a 404 or a 429 look the same on
// every endpoint.
package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/faxhub/faxhub/core"
)

// Status maps a core error kind to its HTTP status.
func Status(k core.Kind) int {
	switch k {
	case core.KindInvalid:
		return http.StatusBadRequest
	case core.KindUnauthenticated:
		return http.StatusUnauthorized
	case core.KindForbidden:
		return http.StatusForbidden
	case core.KindNotFound:
		return http.StatusNotFound
	case core.KindConflict:
		return http.StatusConflict
	case core.KindPaymentRequired:
		return http.StatusPaymentRequired
	case core.KindRateLimited:
		return http.StatusTooManyRequests
	case core.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case core.KindUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case core.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case core.KindUnavailable:
		return http.StatusServiceUnavailable
	case core.KindGone:
		return http.StatusGone
	case core.KindTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// Problem is an RFC 9457 problem details object. Code is faxhub's stable
// machine-readable error code; Fields carry details such as required_scope.
type Problem struct {
	Type     string         `json:"type"`
	Title    string         `json:"title"`
	Status   int            `json:"status"`
	Detail   string         `json:"detail,omitempty"`
	Code     string         `json:"code"`
	Instance string         `json:"instance,omitempty"`
	Fields   map[string]any `json:"-"`
}

// MarshalJSON inlines Fields as extension members.
func (p Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(p.Fields)+6)
	for k, v := range p.Fields {
		m[k] = v
	}
	m["type"], m["title"], m["status"], m["code"] = p.Type, p.Title, p.Status, p.Code
	if p.Detail != "" {
		m["detail"] = p.Detail
	}
	if p.Instance != "" {
		m["instance"] = p.Instance
	}
	return json.Marshal(m)
}

// ProblemType is the type URI of a code.
func ProblemType(code string) string { return "urn:faxhub:error:" + code }

// ProblemFor turns err into a Problem. Internal errors keep their text out of
// the response.
func ProblemFor(err error) Problem {
	e := core.AsError(err)
	st := Status(e.Kind)
	p := Problem{Type: ProblemType(e.Code), Title: http.StatusText(st), Status: st, Code: e.Code, Detail: e.Message, Fields: e.Fields}
	if e.Kind == core.KindInternal {
		p.Detail = "an internal error occurred; it has been logged"
		p.Fields = nil
	}
	return p
}

// WriteError writes err as problem+json; internal errors are logged (with
// the request's method and path, never its headers or body).
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	err = clientGone(r, err)
	e := core.AsError(err)
	p := ProblemFor(err)
	// The instance is the path as logs show it: clients log error bodies,
	// so a capability token in the path is not repeated there, and a
	// 100 KB path is not sent back whole.
	p.Instance = LogPath(r.URL.Path)
	if e.Kind == core.KindInternal && log != nil {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", LogPath(r.URL.Path), "err", err)
	}
	// Rate limits, and conflicts that clear by themselves (a payment being
	// settled by a concurrent request), say when to retry.
	if e.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	WriteProblem(w, p)
}

// clientGone turns an error that only says the request's context ended
// (the client hung up, or its body missed its read deadline and the server
// closed the connection) into the client's failure: nobody is left to read
// a 500, and it is not the server's to log as one.
func clientGone(r *http.Request, err error) error {
	if r.Context().Err() == nil || core.ErrorKind(err) != core.KindInternal ||
		!(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	e := core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the request ended before it was answered (the connection closed or the body did not arrive in time)")
	e.Err = err
	return e
}

// WriteProblem writes p with its status, and the request's id
// (WithRequestID set it on the response) as requestId.
func WriteProblem(w http.ResponseWriter, p Problem) {
	if id := w.Header().Get(HeaderRequestID); id != "" && p.Fields["requestId"] == nil {
		f := make(map[string]any, len(p.Fields)+1)
		for k, v := range p.Fields {
			f[k] = v
		}
		f["requestId"] = id
		p.Fields = f
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// secretPaths are path prefixes whose rest is a secret: upload
// capabilities, the claim-attempt token of an agent claim link, the test
// checkout page's id (core.LinkTestCheckout: whoever has the link
// can pay the checkout, so it is a capability too) and the status link of
// a machine-paid fax (the token is the payer's only credential).
var secretPaths = [...]string{"/uploads/", core.LinkClaimPage.PathPrefix(), core.LinkTestCheckout.PathPrefix(), "/machine/faxes/status/"}

// MaxLoggedPath bounds a path in the logs: a 100 KB path is an attack or a
// mistake, and either way its first bytes say enough.
const MaxLoggedPath = 256

// redactPath hides the capability tokens some paths carry.
func redactPath(p string) string {
	for _, prefix := range secretPaths {
		if i := strings.Index(p, prefix); i >= 0 && len(p) > i+len(prefix) {
			return p[:i+len(prefix)] + "…"
		}
	}
	return p
}

// RedactPath is redactPath for access logs.
func RedactPath(p string) string { return redactPath(p) }

// LogPath is a path as logs show it: capability tokens redacted, at most
// MaxLoggedPath bytes (cut at a character boundary, marked with "…"),
// invalid UTF-8 replaced.
func LogPath(p string) string {
	p = strings.ToValidUTF8(redactPath(p), "\uFFFD")
	if len(p) <= MaxLoggedPath {
		return p
	}
	cut := MaxLoggedPath
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return p[:cut] + "…"
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// DefaultMaxJSON bounds JSON request bodies.
const DefaultMaxJSON = 1 << 20

// DecodeJSON reads a JSON object body strictly: the content type must be
// JSON, the text UTF-8 without NUL; unknown fields, names that match a
// field only when case is ignored, duplicate names and trailing data are
// refused; the size is bounded by DefaultMaxJSON. An empty body decodes to the zero value when
// allowEmpty is true.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) error {
	return DecodeJSONLimit(w, r, v, DefaultMaxJSON, allowEmpty)
}

// DecodeJSONLimit is DecodeJSON with its own size bound.
func DecodeJSONLimit(w http.ResponseWriter, r *http.Request, v any, limit int64, allowEmpty bool) error {
	if r.ContentLength == 0 && allowEmpty {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return core.Errorf(core.KindUnsupportedMedia, core.CodeUnsupportedContentType, "send the body as application/json")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return core.Errorf(core.KindTooLarge, core.CodeInvalidRequest, "the JSON body is larger than %d bytes", limit)
		}
		if IsBodyTimeout(err) {
			return BodyTimeoutError(err)
		}
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body could not be read: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "a JSON body is required")
	}
	return DecodeStrictJSON(body, v)
}

// DecodeStrictJSON decodes one JSON document into v the strict way every
// JSON body is read: text only (UTF-8, no NUL), each name once and spelled
// as the field is (case-sensitive), no unknown names, nothing after the
// value. Errors are KindInvalid with a message that names the field.
func DecodeStrictJSON(body []byte, v any) error {
	if err := CheckJSONText(body); err != nil {
		return err
	}
	if err := checkJSONNames(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body is invalid: %s", jsonErrorText(err))
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) != 0 {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body has trailing data after its object")
	}
	return nil
}

func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + te.Field + " must be " + te.Type.String()
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
