package prometheus

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// routeOther is the route of a request no pattern matched (a 404 or 405
// of the mux, a redirect to the canonical path). Labelling by pattern,
// never by path, keeps one series per endpoint however many ids callers
// send.
const routeOther = "other"

type routeKey struct{}

// routeSlot is where CaptureRoute leaves the pattern for Instrument.
type routeSlot struct{ pattern string }

// Instrument counts and times every request of next by route, method and
// status. Put it outermost, so that requests refused by other middleware
// count too, and wrap the ServeMux itself in CaptureRoute: the route is
// the pattern of the innermost ServeMux that served the request.
func (m *Metrics) Instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		slot := &routeSlot{}
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), routeKey{}, slot)))
		route, method := routeLabel(slot.pattern), methodLabel(r.Method)
		m.httpRequests.WithLabelValues(route, method, statusLabel(rec.status)).Inc()
		m.httpDuration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	})
}

// CaptureRoute wraps a ServeMux: once it has served a request it hands the
// matched pattern (http.Request.Pattern) to Instrument. A ServeMux sets
// Pattern on the request it is given, and so does a ServeMux inside it
// given the same request (the REST API's), so the innermost pattern wins.
func CaptureRoute(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		if slot, ok := r.Context().Value(routeKey{}).(*routeSlot); ok {
			slot.pattern = r.Pattern
		}
	})
}

// routeLabel is a pattern without its method ("POST /api/v1/faxes" is
// /api/v1/faxes; the method is a label of its own).
func routeLabel(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = strings.TrimLeft(pattern[i+1:], " \t")
	}
	if pattern == "" {
		return routeOther
	}
	return pattern
}

// methodLabel bounds the method label: a client can send any token.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

func statusLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// statusWriter records the status of the answer. Unwrap lets
// http.ResponseController reach the connection (flushes of streamed
// answers, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader && code >= 200 {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes a flush through, for handlers that ask their writer for
// http.Flusher rather than using a ResponseController.
func (s *statusWriter) Flush() {
	s.wroteHeader = true
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}
