package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/blob"
	"github.com/faxhub/faxhub/core/convert"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/phone"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/queue"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/rest"
)

// app is a wired faxhub process.
type app struct {
	cfg   config
	log   *slog.Logger
	db    *store.DB
	queue *queue.Queue
	svc   *core.Service
}

func newLogger(c config, w *os.File) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openDB creates the data dir, opens the database and applies faxhub's and
// River's migrations (both safe to run from many replicas at once).
func openDB(ctx context.Context, c config) (*store.DB, error) {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	db, err := store.Open(ctx, c.Database)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if err := queue.Migrate(ctx, db.SQL(), db.Dialect()); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate job queue: %w", err)
	}
	return db, nil
}

// build wires the service. workers=false builds an insert-only queue, for
// admin commands that must not deliver faxes.
func build(ctx context.Context, c config, log *slog.Logger, workers bool) (*app, error) {
	db, err := openDB(ctx, c)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: c, log: log, db: db}
	ok := false
	defer func() {
		if !ok {
			db.Close()
		}
	}()

	secret, err := db.Secret(ctx, "upload-token")
	if err != nil {
		return nil, fmt.Errorf("upload secret: %w", err)
	}
	blobs, err := blob.Open(ctx, c.BlobURL)
	if err != nil {
		return nil, fmt.Errorf("open blob store: %w", err)
	}
	prices := core.DefaultPriceTable()
	if c.PriceTable != "" {
		b, err := os.ReadFile(c.PriceTable)
		if err != nil {
			return nil, fmt.Errorf("read price table: %w", err)
		}
		if prices, err = core.ParsePriceTable(b); err != nil {
			return nil, err
		}
	}
	tmp := filepath.Join(c.DataDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}

	var svc *core.Service
	deliver := func(ctx context.Context, orderID string) error { return svc.Deliver(ctx, orderID) }
	q, err := queue.New(db.SQL(), db.Dialect(), deliver, queue.Options{Workers: c.Workers, InsertOnly: !workers}, log)
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	a.queue = q

	svc, err = core.New(core.Config{
		BaseURL: c.BaseURL, APIURL: c.APIURL, UploadSecret: secret, TempDir: tmp,
		MaxUploadBytes: c.MaxUploadMB << 20, MaxPages: c.MaxPages,
	}, core.Deps{
		Store:       db,
		Blobs:       blobs,
		Converter:   convert.New(convert.Options{SofficePath: c.Soffice, TempDir: tmp}),
		Destination: phone.New(),
		Queue:       q,
		// Live faxing needs a real provider account; until one is
		// configured, live sends answer provider_not_configured.
		Providers: map[core.Mode]core.FaxProvider{core.ModeTest: simulated.New(simulated.Options{TimeScale: c.SimTimeScale})},
		Checkout:  map[core.Mode]core.CheckoutGateway{core.ModeTest: payments.NewTestGateway(c.BaseURL)},
		Prices:    prices,
		Logger:    log,
	})
	if err != nil {
		return nil, err
	}
	a.svc = svc
	ok = true
	return a, nil
}

func (a *app) close() { a.db.Close() }

// handler is the whole HTTP surface.
func (a *app) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := a.svc.Ready(ctx); err != nil {
			a.log.WarnContext(ctx, "not ready", "err", err)
			web.WriteProblem(w, web.Problem{Type: web.ProblemType(core.CodeNotReady), Title: "Service Unavailable", Status: http.StatusServiceUnavailable, Code: core.CodeNotReady, Detail: "the database is unreachable or not migrated"})
			return
		}
		web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	var numbers []rest.TestNumber
	for _, n := range simulated.TestNumbers() {
		numbers = append(numbers, rest.TestNumber{Number: n.Number, Description: n.Description})
	}
	api := rest.New(a.svc, rest.Options{BaseURL: a.cfg.BaseURL, APIURL: a.cfg.APIURL, MachinePayments: a.cfg.MachinePayments, TestNumbers: numbers}, a.log)
	mux.Handle("/api/v1/", api)
	mux.Handle("/openapi.json", api)
	mux.Handle("/llms.txt", api)
	mux.Handle("/checkout/test/", payments.TestCheckoutPage(a.svc, a.log))
	mux.HandleFunc("GET /{$}", a.home)
	return accessLog(a.log, mux)
}

// home answers the bare origin with where to go next.
func (a *app) home(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "faxhub is running.\n\nAPI:      %s/api/v1/\nOpenAPI:  %s/openapi.json\nFor LLMs: %s/llms.txt\n", a.cfg.APIURL, a.cfg.BaseURL, a.cfg.BaseURL)
}

// statusRecorder captures the status for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int)        { s.status = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// accessLog logs method, path (capability tokens redacted), status and
// duration; never headers or bodies, which carry secrets.
func accessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if strings.HasPrefix(r.URL.Path, "/healthz") || strings.HasPrefix(r.URL.Path, "/readyz") {
			return
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "http",
			slog.String("method", r.Method), slog.String("path", web.RedactPath(r.URL.Path)),
			slog.Int("status", rec.status), slog.Duration("dur", time.Since(start)))
	})
}
