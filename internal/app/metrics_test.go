package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/internal/testenv"
)

// metricsEnv is a wired process with metrics on: the public surface over
// HTTP and the metrics listener, as `faxhub serve --metrics-addr` runs them.
type metricsEnv struct {
	*testenv.Env
	t       *testing.T
	public  string // base URL of the public handler
	metrics string // base URL of the metrics listener
}

func newMetricsEnv(t *testing.T, opts ...testenv.Option) *metricsEnv {
	t.Helper()
	e := testenv.New(t, append([]testenv.Option{testenv.WithMetrics()}, opts...)...)
	srv := e.Serve(e.App.Handler())
	ms, err := e.App.StartMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ms.Stop(ctx); err != nil {
			t.Errorf("stop metrics listener: %v", err)
		}
	})
	return &metricsEnv{Env: e, t: t, public: srv.URL, metrics: "http://" + ms.Addr}
}

// call makes one request of the public surface and returns its status and
// body.
func (m *metricsEnv) call(method, path, key string, body []byte, hdr map[string]string) (int, []byte) {
	m.t.Helper()
	req, err := http.NewRequest(method, m.public+path, bytes.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		m.t.Fatal(err)
	}
	return res.StatusCode, b
}

// sendFax uploads a one-page PDF and sends it over REST as a client does;
// it returns the send's status and the fax id.
func (m *metricsEnv) sendFax(key string) (int, string) {
	m.t.Helper()
	status, b := m.call("POST", "/api/v1/uploads", key, []byte(`{}`), map[string]string{"Content-Type": "application/json"})
	var up documents.Capability
	if status != http.StatusOK || json.Unmarshal(b, &up) != nil {
		m.t.Fatalf("create upload: %d %s", status, b)
	}
	status, b = m.call("PUT", strings.TrimPrefix(up.UploadURL, m.Svc.Config().APIURL), "", testenv.MinimalPDF(1),
		map[string]string{"Content-Type": "application/pdf"})
	var doc struct {
		Document documents.Document `json:"document"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &doc) != nil || doc.Document.ID == "" {
		m.t.Fatalf("upload: %d %s", status, b)
	}
	body := fmt.Sprintf(`{"to":%q,"documentId":%q}`, simulated.TestNumbers()[0].Number, doc.Document.ID)
	status, b = m.call("POST", "/api/v1/faxes", key, []byte(body),
		map[string]string{"Content-Type": "application/json", "Idempotency-Key": core.RandomString(12)})
	var fax faxes.Fax
	if status/100 != 2 || json.Unmarshal(b, &fax) != nil || fax.ID == "" {
		m.t.Fatalf("send: %d %s", status, b)
	}
	return status, fax.ID
}

// scrape reads the metrics listener with Prometheus's own text parser.
func (m *metricsEnv) scrape() scraped {
	m.t.Helper()
	res, err := http.Get(m.metrics + "/metrics")
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		m.t.Fatalf("scrape: %d %s", res.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		m.t.Fatalf("parse scrape: %v", err)
	}
	return scraped{t: m.t, fams: fams}
}

type scraped struct {
	t    *testing.T
	fams map[string]*dto.MetricFamily
}

// series returns the samples of name whose labels include want.
func (s scraped) series(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	f := s.fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// value is the one sample of name with labels want: a counter's or
// gauge's value, a histogram's count.
func (s scraped) value(name string, want map[string]string) float64 {
	s.t.Helper()
	ms := s.series(name, want)
	if len(ms) != 1 {
		s.t.Fatalf("%s%v: %d series, want 1", name, want, len(ms))
	}
	switch m := ms[0]; {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	s.t.Fatalf("%s%v: no value", name, want)
	return 0
}

func (m *metricsEnv) waitForState(key, id string, want faxes.Status) {
	m.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, b := m.call("GET", "/api/v1/faxes/"+id, key, nil, nil)
		var fax faxes.Fax
		if status == http.StatusOK && json.Unmarshal(b, &fax) == nil && fax.Status == want {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("fax %s not %s after 20s: %d %s", id, want, status, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMetricsAfterASend sends a fax over REST, lets the simulated provider
// deliver it, and reads every kind of metric back from the metrics
// listener (FAXHUB_TESTENV_POSTGRES runs it on PostgreSQL).
func TestMetricsAfterASend(t *testing.T) {
	m := newMetricsEnv(t)
	status, id := m.sendFax(m.KeyATest)
	m.waitForState(m.KeyATest, id, faxes.Delivered)
	if _, err := m.Svc.Approvals.Request(t.Context(), approvals.Request{
		OwnerID: m.OwnerA.ID, Kind: approvals.KindAgentClaim, Requester: "metrics test", Summary: "claim", Binding: "x", TTL: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}

	s := m.scrape()
	send := map[string]string{"route": "/api/v1/faxes", "method": "POST", "status": fmt.Sprint(status)}
	if got := s.value("faxhub_http_requests_total", send); got != 1 {
		t.Errorf("requests %v = %v, want 1", send, got)
	}
	if got := s.value("faxhub_http_request_duration_seconds", map[string]string{"route": "/api/v1/faxes", "method": "POST"}); got < 1 {
		t.Errorf("send latency histogram count = %v, want ≥ 1", got)
	}
	if got := s.value("faxhub_http_requests_total", map[string]string{"route": "/api/v1/uploads/{token}", "method": "PUT", "status": "200"}); got != 1 {
		t.Errorf("upload PUT requests = %v, want 1 (labelled by pattern, not by token)", got)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"faxhub_faxes_completed_total", map[string]string{"state": "delivered"}, 1},
		{"faxhub_delivery_duration_seconds", map[string]string{"state": "delivered"}, 1},
		{"faxhub_delivery_attempts_total", map[string]string{"provider": simulated.Name, "outcome": "delivered"}, 1},
		{"faxhub_delivery_attempt_duration_seconds", map[string]string{"provider": simulated.Name}, 1},
		{"faxhub_conversions_total", map[string]string{"type": "pdf", "outcome": "ok"}, 1},
		{"faxhub_conversion_duration_seconds", map[string]string{"type": "pdf"}, 1},
		// The delivered fax left the unfinished states.
		{"faxhub_faxes", map[string]string{"mode": "test", "state": "queued"}, 0},
		{"faxhub_faxes", map[string]string{"mode": "test", "state": "sending"}, 0},
		{"faxhub_approvals_pending", map[string]string{"kind": string(approvals.KindAgentClaim)}, 1},
		{"faxhub_approvals_pending", map[string]string{"kind": string(approvals.KindDevice)}, 0},
		// Captured: nothing on hold any more.
		{"faxhub_ledger_held_usd", map[string]string{"mode": "test"}, 0},
		{"faxhub_snapshot_up", nil, 1},
	} {
		if got := s.value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// SQLite's group commit, counted on SQLite only.
	if m.DB.Dialect() == "sqlite" {
		txs, commits := s.value("faxhub_sqlite_writer_transactions_total", nil), s.value("faxhub_sqlite_writer_commits_total", nil)
		if commits < 1 || txs < commits {
			t.Errorf("SQLite writer: %v transactions in %v commits, want at least one commit and no fewer transactions", txs, commits)
		}
		if busy := s.value("faxhub_sqlite_writer_busy_seconds_total", nil); busy <= 0 {
			t.Errorf("faxhub_sqlite_writer_busy_seconds_total = %v after %v commits, want > 0", busy, commits)
		}
		if failed := s.value("faxhub_sqlite_checkpoint_failures_total", nil); failed != 0 || len(s.series("faxhub_sqlite_checkpoints_total", nil)) != 1 {
			t.Errorf("faxhub_sqlite_checkpoint_failures_total = %v, want 0, and faxhub_sqlite_checkpoints_total reported", failed)
		}
	} else {
		for _, name := range []string{"faxhub_sqlite_writer_commits_total", "faxhub_sqlite_writer_busy_seconds_total", "faxhub_sqlite_checkpoints_total"} {
			if len(s.series(name, nil)) != 0 {
				t.Errorf("%s is reported on PostgreSQL", name)
			}
		}
	}
	// The runtime and process collectors the soak test reads.
	for _, name := range []string{"process_resident_memory_bytes", "go_goroutines", "process_open_fds"} {
		if got := s.value(name, nil); got <= 0 {
			t.Errorf("%s = %v, want > 0", name, got)
		}
	}
	// No series is labelled with an id.
	for name, f := range s.fams {
		for _, mm := range f.GetMetric() {
			for _, l := range mm.GetLabel() {
				if strings.Contains(l.GetValue(), id) || strings.Contains(l.GetValue(), "upl_") {
					t.Errorf("%s has an id in label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestMetricsNotOnThePublicOrigin: /metrics is served by the metrics
// listener only, whether metrics are on or off.
func TestMetricsNotOnThePublicOrigin(t *testing.T) {
	on := newMetricsEnv(t)
	if status, _ := on.call("GET", "/metrics", "", nil, nil); status != http.StatusNotFound {
		t.Errorf("metrics on: public GET /metrics = %d, want 404", status)
	}
	off := testenv.New(t)
	srv := off.Serve(off.App.Handler())
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("metrics off: public GET /metrics = %d, want 404", res.StatusCode)
	}
	if _, err := off.App.StartMetrics(); err == nil {
		t.Error("StartMetrics without MetricsAddr started a listener")
	}
	// The metrics listener serves nothing else.
	res, err = http.Get(on.metrics + "/api/v1/faxes")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("metrics listener GET /api/v1/faxes = %d, want 404", res.StatusCode)
	}
}

// TestMetricsOneSeriesPerRoute: requests for many distinct fax ids (and
// paths no route matches) make one series each, not one per path.
func TestMetricsOneSeriesPerRoute(t *testing.T) {
	m := newMetricsEnv(t)
	const n = 25
	for i := range n {
		if status, b := m.call("GET", fmt.Sprintf("/api/v1/faxes/fax_%d%s", i, core.RandomString(6)), m.KeyATest, nil, nil); status != http.StatusNotFound {
			t.Fatalf("GET unknown fax: %d %s", status, b)
		}
		if status, _ := m.call("GET", fmt.Sprintf("/no-such-page-%d", i), "", nil, nil); status != http.StatusNotFound {
			t.Fatalf("GET unknown page: %d", status)
		}
	}
	s := m.scrape()
	faxes := s.series("faxhub_http_requests_total", map[string]string{"route": "/api/v1/faxes/{id}"})
	if len(faxes) != 1 {
		t.Fatalf("%d series for /api/v1/faxes/{id}, want 1", len(faxes))
	}
	if got := faxes[0].GetCounter().GetValue(); got != n {
		t.Errorf("/api/v1/faxes/{id} count = %v, want %d", got, n)
	}
	if got := s.value("faxhub_http_requests_total", map[string]string{"route": "other", "method": "GET", "status": "404"}); got != n {
		t.Errorf("unrouted count = %v, want %d", got, n)
	}
	if got := len(s.series("faxhub_http_request_duration_seconds", map[string]string{"route": "/api/v1/faxes/{id}"})); got != 1 {
		t.Errorf("%d latency series for /api/v1/faxes/{id}, want 1", got)
	}
	for _, mm := range s.fams["faxhub_http_requests_total"].GetMetric() {
		for _, l := range mm.GetLabel() {
			if l.GetName() == "route" && (strings.Contains(l.GetValue(), "fax_") || strings.Contains(l.GetValue(), "no-such-page")) {
				t.Errorf("route label from a raw path: %q", l.GetValue())
			}
		}
	}
}

// TestMetricsQueueAndUnfinishedFaxes reads the database-wide gauges while
// a fax waits in the queue (an insert-only queue: no workers), then after
// it is delivered.
func TestMetricsQueueAndUnfinishedFaxes(t *testing.T) {
	m := newMetricsEnv(t, testenv.WithoutWorkers())
	_, id := m.sendFax(m.KeyATest)

	s := m.scrape()
	if got := s.value("faxhub_faxes", map[string]string{"mode": "test", "state": "queued"}); got != 1 {
		t.Errorf("queued faxes = %v, want 1", got)
	}
	if got := s.value("faxhub_queue_jobs", map[string]string{"state": "available", "kind": "deliver_fax"}); got != 1 {
		t.Errorf("available deliver_fax jobs = %v, want 1", got)
	}
	// The job's age grows from the moment it is due (read from River's
	// own timestamps: a format the query misread would stay 0).
	age := map[string]string{"state": "available", "kind": "deliver_fax"}
	for deadline := time.Now().Add(10 * time.Second); ; {
		got := m.scrape().value("faxhub_queue_oldest_job_age_seconds", age)
		if got > 0 && got < 3600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("oldest available job age = %v s, want it to grow above 0 (and stay under an hour)", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A credit send holds its price until it is settled.
	if got := s.value("faxhub_ledger_held_usd", map[string]string{"mode": "test"}); got <= 0 {
		t.Errorf("held USD = %v, want > 0", got)
	}
	if got := s.value("faxhub_ledger_hold_balances", map[string]string{"mode": "test"}); got != 1 {
		t.Errorf("balances with holds = %v, want 1", got)
	}

	// Deliver as the job would (the simulated provider at zero delay
	// answers at once).
	if err := m.Svc.Faxes.Deliver(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	m.waitForState(m.KeyATest, id, faxes.Delivered)
	s = m.scrape()
	for _, st := range []string{"queued", "sending"} {
		if got := s.value("faxhub_faxes", map[string]string{"mode": "test", "state": st}); got != 0 {
			t.Errorf("%s faxes after delivery = %v, want 0", st, got)
		}
	}
	if got := s.value("faxhub_faxes_completed_total", map[string]string{"state": "delivered"}); got != 1 {
		t.Errorf("delivered faxes = %v, want 1", got)
	}
	if got := s.value("faxhub_ledger_held_usd", map[string]string{"mode": "test"}); got != 0 {
		t.Errorf("held USD after delivery = %v, want 0", got)
	}
}

// TestMetricsSnapshotBounded: the database reads of a scrape end with
// their context, on both databases.
func TestMetricsSnapshotBounded(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	done := make(chan error, 1)
	go func() { _, err := e.Svc.Faxes.Snapshot(ctx); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Snapshot with a canceled context succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Snapshot with a canceled context did not return")
	}
	snap, err := e.Svc.Faxes.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Faxes) != 0 || len(snap.ApprovalsPending) != 0 {
		t.Errorf("empty database: %+v", snap)
	}
}

// TestMetricsDeliveryOutcomes counts every attempt and every end of a
// fax once, retries included, and a conversion that fails.
func TestMetricsDeliveryOutcomes(t *testing.T) {
	m := newMetricsEnv(t)
	ctx := t.Context()
	p := m.Principal(t, m.KeyATest)
	for _, to := range []string{
		"+12125550101", // busy: three failed attempts, the fax fails
		"+12125550104", // the call drops half way: one partial attempt
		"+12125550105", // the API errors once: a failed attempt, then delivered
	} {
		capa, err := m.Svc.Documents.CreateUpload(ctx, p, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Svc.Documents.ReceiveUpload(ctx, capa.UploadToken, bytes.NewReader(testenv.MinimalPDF(2))); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.Svc.Faxes.Send(ctx, p, "metrics-"+to, faxes.SendRequest{To: to, UploadToken: capa.UploadToken}); err != nil {
			t.Fatal(err)
		}
	}
	capa, err := m.Svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Svc.Documents.ReceiveUpload(ctx, capa.UploadToken, strings.NewReader("%PDF-1.4\nnot really a PDF\n")); err == nil {
		t.Fatal("a broken PDF was accepted")
	}
	m.DrainQueue(t)

	s := m.scrape()
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"faxhub_delivery_attempts_total", map[string]string{"provider": simulated.Name, "outcome": "failed"}, 4},
		{"faxhub_delivery_attempts_total", map[string]string{"provider": simulated.Name, "outcome": "partial"}, 1},
		{"faxhub_delivery_attempts_total", map[string]string{"provider": simulated.Name, "outcome": "delivered"}, 1},
		{"faxhub_delivery_attempt_duration_seconds", map[string]string{"provider": simulated.Name}, 6},
		{"faxhub_faxes_completed_total", map[string]string{"state": "failed"}, 1},
		{"faxhub_faxes_completed_total", map[string]string{"state": "partial"}, 1},
		{"faxhub_faxes_completed_total", map[string]string{"state": "delivered"}, 1},
		{"faxhub_conversions_total", map[string]string{"type": "pdf", "outcome": "ok"}, 3},
		{"faxhub_conversions_total", map[string]string{"type": "pdf", "outcome": "error"}, 1},
		{"faxhub_conversion_duration_seconds", map[string]string{"type": "pdf"}, 4},
	} {
		if got := s.value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestMetricsWebhookAttempts: each webhook attempt that ends is counted by
// kind of target and outcome.
func TestMetricsWebhookAttempts(t *testing.T) {
	// No workers: the test delivers each attempt itself. With River's
	// worker running, it could claim the delivery first, so Deliver
	// returned before the attempt was counted and the scrape raced it.
	m := newMetricsEnv(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.Webhooks.AllowPrivate = true }))
	ctx := t.Context()
	p := m.Principal(t, m.KeyATest)
	for _, status := range []int{http.StatusNoContent, http.StatusGone, http.StatusInternalServerError} {
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
		t.Cleanup(rcv.Close)
		ep, err := m.Svc.Webhooks.Create(ctx, p, webhooks.CreateRequest{URL: rcv.URL})
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.Svc.Webhooks.SendTest(ctx, p, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Svc.Webhooks.Deliver(ctx, d.ID); err != nil {
			t.Fatalf("deliver to a %d receiver: %v", status, err)
		}
	}
	s := m.scrape()
	for outcome, want := range map[string]float64{webhooks.OutcomeDelivered: 1, webhooks.OutcomeGone: 1, webhooks.OutcomeFailed: 1} {
		if got := s.value("faxhub_webhook_attempts_total", map[string]string{"kind": string(webhooks.TargetWebhook), "outcome": outcome}); got != want {
			t.Errorf("faxhub_webhook_attempts_total{outcome=%s} = %v, want %v", outcome, got, want)
		}
	}
	if got := s.value("faxhub_webhook_attempt_duration_seconds", map[string]string{"kind": string(webhooks.TargetWebhook)}); got != 3 {
		t.Errorf("faxhub_webhook_attempt_duration_seconds count = %v, want 3", got)
	}
}
