package httpmetrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/prometheus"
	"github.com/faxhub/faxhub/core/web"
)

func TestLabels(t *testing.T) {
	for _, c := range []struct{ template, route string }{
		{"/api/v1/faxes", "/api/v1/faxes"},
		{"/api/v1/faxes/{id}", "/api/v1/faxes/{id}"},
		{"/api/v1/", "/api/v1/"},
		{"", routeOther},
	} {
		if got := routeLabel(c.template); got != c.route {
			t.Errorf("routeLabel(%q) = %q, want %q", c.template, got, c.route)
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

// requests reads faxhub_http_requests_total by route and status.
func requests(t *testing.T, m *prometheus.Metrics) map[[2]string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]float64{}
	for _, f := range fams {
		if f.GetName() != "faxhub_http_requests_total" {
			continue
		}
		for _, mm := range f.GetMetric() {
			out[[2]string{label(mm, "route"), label(mm, "status")}] += mm.GetCounter().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestInstrumentRoutesByTemplate: a request counts under the template of
// the route that served it (or the pattern of the fallback that answered),
// never its path; one the router answered itself is other.
func TestInstrumentRoutesByTemplate(t *testing.T) {
	m := prometheus.New(prometheus.Options{})
	r := web.NewRouter(web.Origins{web.OriginBase: "http://fax.example"})
	g := r.Group("t", web.OriginBase)
	g.HandleFunc(web.Route{Name: "t.fax", Methods: "GET", Path: "/api/v1/faxes/{id}", Auth: web.AuthNone},
		func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	g.HandleFunc(web.Route{Name: "t.health", Methods: "GET", Path: "/healthz", Auth: web.AuthNone},
		func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	g.Fallback("/api/v1/", nil)
	h := Instrument(m, r)
	for _, path := range []string{"/api/v1/faxes/a", "/api/v1/faxes/b", "/healthz", "/nowhere", "/api/v1/faxes/c", "/api/v1/nope"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	got := requests(t, m)
	want := map[[2]string]float64{
		{"/api/v1/faxes/{id}", "418"}: 3,
		{"/healthz", "200"}:           1,
		{routeOther, "404"}:           1,
		{"/api/v1/", "404"}:           1,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requests{route=%q,status=%s} = %v, want %v", k[0], k[1], got[k], v)
		}
	}
}

// TestSnapshotTimeout: a database that does not answer makes the scrape
// report faxhub_snapshot_up 0 after the timeout, not hang.
func TestSnapshotTimeout(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	for _, c := range []struct {
		name string
		read func(ctx context.Context) (*faxes.Snapshot, error)
	}{
		{"honours its context", func(ctx context.Context) (*faxes.Snapshot, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{"fails", func(ctx context.Context) (*faxes.Snapshot, error) { return nil, errors.New("database down") }},
		{"ignores its context", func(ctx context.Context) (*faxes.Snapshot, error) {
			<-stuck
			return &faxes.Snapshot{}, nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := prometheus.New(prometheus.Options{Snapshot: c.read, SnapshotTimeout: 50 * time.Millisecond})
			done := make(chan string, 1)
			go func() {
				rec := httptest.NewRecorder()
				Handler(m).ServeHTTP(rec, httptest.NewRequest("GET", Path, nil))
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

// BenchmarkInstrument is what instrumentation adds to one request.
func BenchmarkInstrument(b *testing.B) {
	r := web.NewRouter(web.Origins{web.OriginBase: "http://fax.example"})
	r.Group("t", web.OriginBase).HandleFunc(web.Route{Name: "t.fax", Methods: "GET", Path: "/api/v1/faxes/{id}", Auth: web.AuthNone},
		func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare", r}, {"instrumented", Instrument(prometheus.New(prometheus.Options{}), r)}} {
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
