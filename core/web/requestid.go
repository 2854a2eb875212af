package web

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/faxhub/faxhub/core"
)

// Every request gets an id, so a user's error can be found in the logs:
// it is answered in the X-Request-Id header and in problem+json bodies
// (requestId), and every log line written with the request's context
// carries it (request_id). A caller's own X-Request-Id is kept when it is a
// plain token of at most 64 characters (a proxy's, a client's retry
// tracing); anything else is replaced by one of ours.

// HeaderRequestID names the header.
const HeaderRequestID = "X-Request-Id"

const maxRequestID = 64

type requestIDKey struct{}

// WithRequestID gives each request its id (see above).
func WithRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderRequestID)
		if !plainToken(id) {
			id = core.PrefixRequest + core.RandomString(10)
		}
		w.Header().Set(HeaderRequestID, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// RequestID is the id of the request ctx belongs to ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func plainToken(s string) bool {
	if s == "" || len(s) > maxRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// RequestIDLogs wraps a log handler so that a record logged with a
// request's context carries its request_id.
func RequestIDLogs(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
