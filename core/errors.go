package core

import (
	"errors"
	"fmt"
)

// Kind classifies an Error so that every adapter can map it to its own
// protocol (an HTTP status, a JSON-RPC code, an OAuth error) in one place.
type Kind int

const (
	KindInternal Kind = iota
	KindInvalid
	KindUnauthenticated
	KindForbidden
	KindNotFound
	KindConflict
	KindPaymentRequired
	KindRateLimited
	KindTooLarge
	KindUnsupportedMedia
	KindUnprocessable
	KindUnavailable
	KindGone
	// KindTimeout is a request that did not arrive in time (its body
	// missed the read deadline): HTTP 408, the client's to resend.
	KindTimeout
)

// Stable, machine-readable error codes. They are part of the public API:
// clients switch on them, so never rename one. Each feature declares its
// own; these are the ones every feature and protocol shares.
const (
	CodeInternal          = "internal_error"
	CodeInvalidRequest    = "invalid_request"
	CodeUnauthenticated   = "unauthenticated"
	CodeInsufficientScope = "insufficient_scope"
	// CodeInvalidToken is a bad access token (RFC 6750).
	CodeInvalidToken           = "invalid_token"
	CodeNotFound               = "not_found"
	CodeIdempotencyKeyRequired = "idempotency_key_required"
	CodeIdempotencyConflict    = "idempotency_conflict"
	CodeRateLimited            = "rate_limited"
	CodeInvalidDestination     = "invalid_destination"
	CodePremiumDestination     = "premium_rate_destination"
	CodeUnsupportedDestination = "unsupported_destination"
	CodeUnsupportedContentType = "unsupported_content_type"
	CodeMethodNotAllowed       = "method_not_allowed"
	CodeNotReady               = "not_ready"
	// CodeRequestTimeout is a request body that did not arrive within its
	// read deadline (KindTimeout).
	CodeRequestTimeout = "request_timeout"
)

// CodeNumbersNotOffered: the price table sells no numbers in that
// country.
const CodeNumbersNotOffered = "numbers_not_offered"

// Error is the one error type services return for anything a caller can act
// on. Internal failures are plain wrapped errors and surface as KindInternal
// without their text.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	// Fields carries machine-readable details (for example "required" for a
	// missing scope, or "balance" for insufficient credits). Values must be
	// JSON-encodable and never secret.
	Fields map[string]any
	// RetryAfter is set on KindRateLimited.
	RetryAfterSeconds int
	Err               error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e with one more detail field.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		c.Fields[k] = v
	}
	c.Fields[key] = value
	return &c
}

// WithRetryAfter returns a copy of e that tells the client when to retry.
func (e *Error) WithRetryAfter(seconds int) *Error {
	c := *e
	c.RetryAfterSeconds = seconds
	return &c
}

// AsError returns the *Error in err's chain, or an internal error that hides
// err's text (it may contain SQL or paths).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindInternal, Code: CodeInternal, Message: "internal error", Err: err}
}

// ErrorKind reports the Kind of err (KindInternal for foreign errors).
func ErrorKind(err error) Kind { return AsError(err).Kind }

// ErrorCode reports the Code of err (CodeInternal for foreign errors).
func ErrorCode(err error) string { return AsError(err).Code }

// Sentinel errors returned by Store implementations. Services translate them
// into *Error with context.
var (
	ErrNoRows   = errors.New("core: no rows")
	ErrExists   = errors.New("core: already exists")
	ErrConflict = errors.New("core: state changed concurrently")
	// ErrInsufficientFunds is returned by Store.PlaceHold when the available
	// balance does not cover the hold.
	ErrInsufficientFunds = errors.New("core: insufficient funds")
)

func NotFound(what string) *Error {
	return Errorf(KindNotFound, CodeNotFound, "%s not found", what)
}

// WrapErr keeps the cause of a caller-facing error for the log.
func WrapErr(e *Error, cause error) *Error {
	e.Err = cause
	return e
}
