// Package httpmetrics is the HTTP side of faxhub's metrics: it counts and
// times every request by the route that served it (core/web's router says
// which) and serves the registry of core/prometheus in Prometheus's text
// format at /metrics, on the metrics listener only (internal/app).
package httpmetrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/faxhub/faxhub/core/prometheus"
	"github.com/faxhub/faxhub/core/web"
)

// Path is where the metrics are served, on the metrics listener only.
const Path = "/metrics"

// maxScrapesInFlight bounds concurrent scrapes (each reads the database);
// more get 503.
const maxScrapesInFlight = 2

// Handler serves the registry in Prometheus's text format. A collector
// that fails is left out (and said in faxhub_snapshot_up) rather than
// failing the whole scrape.
func Handler(m *prometheus.Metrics) http.Handler {
	return promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxScrapesInFlight,
	})
}

// routeOther is the route of a request no route or fallback answered (the
// router's 404 or 405) or that was refused before routing. Labelling by
// the route's template, never by path, keeps one series per endpoint
// however many ids callers send.
const routeOther = "other"

// Instrument counts and times every request of next by route, method and
// status. Put it outermost, so that requests refused by other middleware
// count too; next must end in a web.Router, which names the route.
func Instrument(m *prometheus.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, slot := web.WithRouteSlot(r)
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		m.ObserveHTTP(routeLabel(slot.Template), methodLabel(r.Method), statusLabel(rec.status), time.Since(start))
	})
}

// routeLabel is the route's path template, or other.
func routeLabel(template string) string {
	if template == "" {
		return routeOther
	}
	return template
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
