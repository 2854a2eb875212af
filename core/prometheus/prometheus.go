// Package prometheus is faxhub's monitoring on Prometheus
// (client_golang): it implements services.Metrics (delivery attempts, finished
// faxes, conversions), counts the HTTP requests it is told of by route,
// and reads the database-wide gauges (faxes.Snapshot) at scrape time, in a
// registry with the Go runtime and process metrics. Nothing here speaks
// HTTP: internal/httpmetrics instruments the router and serves the
// registry at /metrics. The metric names and how to read them are in
// docs/operations.md ("Metrics").
package prometheus

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/webhooks"
)

// Options configure Metrics.
type Options struct {
	// Snapshot reads the database-wide gauges (faxes.Service.Snapshot);
	// nil leaves them out.
	Snapshot func(ctx context.Context) (*faxes.Snapshot, error)
	// SnapshotTimeout bounds Snapshot at each scrape (default 2 s): a slow
	// database makes faxhub_snapshot_up 0, never a hung scrape.
	SnapshotTimeout time.Duration
	// WriterStats reads SQLite's group commit (transactions, commits);
	// nil on PostgreSQL, which has no single writer.
	WriterStats func() (txs, commits int64)
	// WriterBusy reads the time SQLite's writer spent on batches, and
	// Checkpoints its background WAL checkpoints (all, failed); nil on
	// PostgreSQL.
	WriterBusy  func() time.Duration
	Checkpoints func() (runs, failures int64)
}

// DefaultSnapshotTimeout bounds the database reads of one scrape.
const DefaultSnapshotTimeout = 2 * time.Second

// Metrics is one process's registry and the metrics it records. It is
// safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	faxesEnded      *prometheus.CounterVec
	deliveryTime    *prometheus.HistogramVec
	conversions     *prometheus.CounterVec
	conversionTime  *prometheus.HistogramVec
	webhookAttempts *prometheus.CounterVec
	webhookTime     *prometheus.HistogramVec

	// Children of the vectors above, looked up once per label set so the
	// delivery and upload paths do not build label slices per event.
	attemptSeries    seriesCache[attemptKey]
	faxSeries        seriesCache[faxes.Status]
	conversionSeries seriesCache[conversionKey]
	webhookSeries    seriesCache[webhookKey]
}

var (
	_ faxes.DeliveryMetrics       = (*Metrics)(nil)
	_ documents.ConversionMetrics = (*Metrics)(nil)
	_ webhooks.Metrics            = (*Metrics)(nil)
)

type webhookKey struct {
	kind    webhooks.TargetKind
	outcome string
}

type attemptKey struct {
	provider string
	outcome  faxes.AttemptStatus
}

type conversionKey struct {
	kind documents.FileKind
	ok   bool
}

// New builds a registry with faxhub's metrics, the Go runtime's and the
// process's (memory, goroutines, open files).
func New(o Options) *Metrics {
	if o.SnapshotTimeout <= 0 {
		o.SnapshotTimeout = DefaultSnapshotTimeout
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faxhub_http_requests_total",
			Help: "HTTP requests answered, by route (the route's path template; other: none matched), method and status.",
		}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faxhub_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faxhub_delivery_attempts_total",
			Help: "Provider attempts that ended, by provider and outcome (delivered, partial, failed).",
		}, []string{"provider", "outcome"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faxhub_delivery_attempt_duration_seconds",
			Help:    "Duration of one provider attempt (the call as the provider reports it), by provider.",
			Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 3600},
		}, []string{"provider"}),
		faxesEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faxhub_faxes_completed_total",
			Help: "Faxes that reached a final state through delivery, by state (delivered, partial, failed, canceled).",
		}, []string{"state"}),
		deliveryTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faxhub_delivery_duration_seconds",
			Help:    "Time from a fax's creation (queued) to its final state, retries included, by final state.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600},
		}, []string{"state"}),
		conversions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faxhub_conversions_total",
			Help: "Documents converted to a fax-ready PDF (PDFs checked), by source type and outcome (ok, error).",
		}, []string{"type", "outcome"}),
		conversionTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faxhub_conversion_duration_seconds",
			Help:    "Time of one conversion, waiting for a slot included, by source type.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"type"}),
		webhookAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faxhub_webhook_attempts_total",
			Help: "Webhook and A2A push attempts that ended, by kind of target (webhook, a2a_push) and outcome (delivered, failed, gone, skipped).",
		}, []string{"kind", "outcome"}),
		webhookTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faxhub_webhook_attempt_duration_seconds",
			Help:    "Time from a webhook attempt's request to its answer (0 without one), by kind of target.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15},
		}, []string{"kind"}),
	}
	m.attemptSeries.build = func(k attemptKey) series {
		return series{m.attempts.WithLabelValues(k.provider, string(k.outcome)), m.attemptDuration.WithLabelValues(k.provider)}
	}
	m.faxSeries.build = func(s faxes.Status) series {
		return series{m.faxesEnded.WithLabelValues(string(s)), m.deliveryTime.WithLabelValues(string(s))}
	}
	m.webhookSeries.build = func(k webhookKey) series {
		return series{m.webhookAttempts.WithLabelValues(string(k.kind), k.outcome), m.webhookTime.WithLabelValues(string(k.kind))}
	}
	m.conversionSeries.build = func(k conversionKey) series {
		t, outcome := fileType(k.kind), "error"
		if k.ok {
			outcome = "ok"
		}
		return series{m.conversions.WithLabelValues(t, outcome), m.conversionTime.WithLabelValues(t)}
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration,
		m.attempts, m.attemptDuration, m.faxesEnded, m.deliveryTime, m.conversions, m.conversionTime,
		m.webhookAttempts, m.webhookTime,
	)
	if o.Snapshot != nil {
		m.reg.MustRegister(newSnapshotCollector(o.Snapshot, o.SnapshotTimeout))
	}
	if o.WriterStats != nil {
		// Transactions per commit is their ratio: near 1 when writes come
		// one at a time, higher when concurrent writes share commits.
		m.reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "faxhub_sqlite_writer_transactions_total",
				Help: "Transactions (and single writes) run by SQLite's writer in this process.",
			}, func() float64 { txs, _ := o.WriterStats(); return float64(txs) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "faxhub_sqlite_writer_commits_total",
				Help: "Commits of SQLite's writer in this process; each commits a batch of the transactions that were waiting.",
			}, func() float64 { _, commits := o.WriterStats(); return float64(commits) }),
		)
	}
	if o.WriterBusy != nil {
		// Its rate is the writer's utilisation: near 1, writes queue.
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "faxhub_sqlite_writer_busy_seconds_total",
			Help: "Time SQLite's writer spent running and committing batches in this process; its rate near 1 means writes queue for it.",
		}, func() float64 { return o.WriterBusy().Seconds() }))
	}
	if o.Checkpoints != nil {
		m.reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "faxhub_sqlite_checkpoints_total",
				Help: "Background checkpoints of SQLite's WAL into the database file in this process.",
			}, func() float64 { runs, _ := o.Checkpoints(); return float64(runs) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "faxhub_sqlite_checkpoint_failures_total",
				Help: "Background WAL checkpoints that failed; the writer then checkpoints itself when the WAL is large.",
			}, func() float64 { _, failed := o.Checkpoints(); return float64(failed) }),
		)
	}
	return m
}

// Registry is the registry the metrics live in (tests gather it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveHTTP counts one answered HTTP request and its duration. The
// labels come bounded from the caller (internal/httpmetrics): a route
// template, never a raw path, a known method or "other", a status.
func (m *Metrics) ObserveHTTP(route, method, status string, took time.Duration) {
	m.httpRequests.WithLabelValues(route, method, status).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// WebhookAttemptEnded implements webhooks.Metrics.
func (m *Metrics) WebhookAttemptEnded(kind webhooks.TargetKind, outcome string, took time.Duration) {
	s := m.webhookSeries.get(webhookKey{kind, outcome})
	s.count.Inc()
	s.time.Observe(took.Seconds())
}

// AttemptEnded implements faxes.DeliveryMetrics.
func (m *Metrics) AttemptEnded(provider string, outcome faxes.AttemptStatus, took time.Duration) {
	s := m.attemptSeries.get(attemptKey{provider, outcome})
	s.count.Inc()
	s.time.Observe(took.Seconds())
}

// FaxEnded implements faxes.DeliveryMetrics.
func (m *Metrics) FaxEnded(state faxes.Status, took time.Duration) {
	s := m.faxSeries.get(state)
	s.count.Inc()
	s.time.Observe(took.Seconds())
}

// Converted implements documents.ConversionMetrics.
func (m *Metrics) Converted(kind documents.FileKind, ok bool, took time.Duration) {
	s := m.conversionSeries.get(conversionKey{kind, ok})
	s.count.Inc()
	s.time.Observe(took.Seconds())
}

// series is a counter and the histogram observed with it.
type series struct {
	count prometheus.Counter
	time  prometheus.Observer
}

// seriesCache keeps the children of a label set. Label values come from
// core's own constants and provider names, so the map stays small.
type seriesCache[K comparable] struct {
	mu    sync.RWMutex
	m     map[K]series
	build func(K) series
}

func (c *seriesCache[K]) get(k K) series {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[k]; ok {
		return s
	}
	if c.m == nil {
		c.m = map[K]series{}
	}
	s = c.build(k)
	c.m[k] = s
	return s
}

// fileType is a conversion's type label: a short name for each kind the
// converter detects.
func fileType(k documents.FileKind) string {
	switch k {
	case documents.FilePDF:
		return "pdf"
	case documents.FilePNG:
		return "png"
	case documents.FileJPEG:
		return "jpeg"
	case documents.FileTIFF:
		return "tiff"
	case documents.FileGIF:
		return "gif"
	case documents.FileDOC:
		return "doc"
	case documents.FileDOCX:
		return "docx"
	case documents.FileXLS:
		return "xls"
	case documents.FileXLSX:
		return "xlsx"
	case documents.FileODT:
		return "odt"
	case documents.FileODS:
		return "ods"
	case documents.FileRTF:
		return "rtf"
	}
	return "other"
}
