package prometheus

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/faxhub/faxhub/core"
)

func TestLabels(t *testing.T) {
	for _, c := range []struct{ pattern, route string }{
		{"POST /api/v1/faxes", "/api/v1/faxes"},
		{"GET /api/v1/faxes/{id}", "/api/v1/faxes/{id}"},
		{"/api/v1/", "/api/v1/"},
		{"GET /{$}", "/{$}"},
		{"", routeOther},
	} {
		if got := routeLabel(c.pattern); got != c.route {
			t.Errorf("routeLabel(%q) = %q, want %q", c.pattern, got, c.route)
		}
	}
	for _, c := range []struct{ method, label string }{
		{"GET", "GET"}, {"DELETE", "DELETE"}, {"OPTIONS", "OPTIONS"},
		{"PROPFIND", "other"}, {"get", "other"}, {strings.Repeat("X", 1000), "other"},
	} {
		if got := methodLabel(c.method); got != c.label {
			t.Errorf("methodLabel(%q) = %q, want %q", c.method, got, c.label)
		}
	}
	for _, c := range []struct {
		code  int
		label string
	}{{200, "200"}, {404, "404"}, {599, "599"}, {0, "other"}, {1000, "other"}} {
		if got := statusLabel(c.code); got != c.label {
			t.Errorf("statusLabel(%d) = %q, want %q", c.code, got, c.label)
		}
	}
}

// TestInstrumentRoutesByPattern serves two nested muxes (as the REST API
// sits under the main one): the innermost pattern names the route.
func TestInstrumentRoutesByPattern(t *testing.T) {
	m := New(Options{})
	inner := http.NewServeMux()
	inner.HandleFunc("GET /api/v1/faxes/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	outer := http.NewServeMux()
	outer.Handle("/api/v1/", inner)
	outer.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	h := m.Instrument(CaptureRoute(outer))
	for _, path := range []string{"/api/v1/faxes/a", "/api/v1/faxes/b", "/healthz", "/nowhere", "/api/v1/faxes/c"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	for _, c := range []struct {
		route, status string
		want          float64
	}{
		{"/api/v1/faxes/{id}", "418", 3},
		{"/healthz", "200", 1},
		{routeOther, "404", 1},
	} {
		if got := counterValue(t, m.httpRequests.WithLabelValues(c.route, "GET", c.status)); got != c.want {
			t.Errorf("requests{route=%q,status=%s} = %v, want %v", c.route, c.status, got, c.want)
		}
	}
	if n := seriesCount(t, m.httpRequests); n != 3 {
		t.Errorf("%d request series, want 3", n)
	}
}

// TestSnapshotTimeout: a database that does not answer makes the scrape
// report faxhub_snapshot_up 0 after the timeout, not hang.
func TestSnapshotTimeout(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	for _, c := range []struct {
		name string
		read func(ctx context.Context) (*core.Snapshot, error)
	}{
		{"honours its context", func(ctx context.Context) (*core.Snapshot, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{"fails", func(ctx context.Context) (*core.Snapshot, error) { return nil, errors.New("database down") }},
		{"ignores its context", func(ctx context.Context) (*core.Snapshot, error) {
			<-stuck
			return &core.Snapshot{}, nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := New(Options{Snapshot: c.read, SnapshotTimeout: 50 * time.Millisecond})
			done := make(chan string, 1)
			go func() {
				rec := httptest.NewRecorder()
				m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", Path, nil))
				done <- rec.Body.String()
			}()
			select {
			case body := <-done:
				if !strings.Contains(body, "\nfaxhub_snapshot_up 0\n") {
					t.Errorf("scrape does not report the snapshot down:\n%s", body)
				}
				if !strings.Contains(body, "go_goroutines") {
					t.Error("a failed snapshot dropped the other metrics")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("scrape hung on a slow snapshot")
			}
		})
	}
}

// TestEventsDoNotAllocate: once a label set has been seen, recording an
// event allocates nothing (they run on the delivery and upload paths).
func TestEventsDoNotAllocate(t *testing.T) {
	m := New(Options{})
	m.AttemptEnded("simulated", core.AttemptDelivered, time.Second)
	m.FaxEnded(core.FaxDelivered, time.Minute)
	m.Converted(core.FilePDF, true, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		m.AttemptEnded("simulated", core.AttemptDelivered, time.Second)
		m.FaxEnded(core.FaxDelivered, time.Minute)
		m.Converted(core.FilePDF, true, time.Millisecond)
	}); n != 0 {
		t.Errorf("%v allocations per event, want 0", n)
	}
	if got := counterValue(t, m.attempts.WithLabelValues("simulated", "delivered")); got != 102 {
		t.Errorf("attempts = %v, want 102 (1 + AllocsPerRun's warm-up and 100 runs)", got)
	}
	if got := counterValue(t, m.conversions.WithLabelValues("pdf", "ok")); got != 102 {
		t.Errorf("conversions = %v, want 102 (1 + AllocsPerRun's warm-up and 100 runs)", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func seriesCount(t *testing.T, c prometheus.Collector) int {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

func BenchmarkAttemptEnded(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.AttemptEnded("simulated", core.AttemptDelivered, time.Second)
	}
}

// BenchmarkInstrument is what instrumentation adds to one request.
func BenchmarkInstrument(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/faxes/{id}", func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare", mux}, {"instrumented", New(Options{}).Instrument(CaptureRoute(mux))}} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/api/v1/faxes/fax_1", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, req)
			}
		})
	}
}
