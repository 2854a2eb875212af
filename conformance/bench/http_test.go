//go:build bench

package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// loadResult is what a timed load phase achieved.
type loadResult struct {
	requests int64
	elapsed  time.Duration
	// latencies of the counted requests, sorted.
	latencies []time.Duration
}

func (l loadResult) perSecond() float64 { return float64(l.requests) / l.elapsed.Seconds() }

// percentile is the latency below which q (0–1) of the requests finished.
func (l loadResult) percentile(q float64) time.Duration {
	if len(l.latencies) == 0 {
		return 0
	}
	return l.latencies[min(len(l.latencies)-1, int(q*float64(len(l.latencies))))]
}

// hammer runs clients goroutines that call do back to back: first for warm
// (not counted: connections, caches and the heap settle), then for d. A
// request in flight at the deadline finishes and counts; the elapsed time
// runs to the last one. The first error cancels the rest and is returned.
func hammer(ctx context.Context, clients int, warm, d time.Duration, do func(ctx context.Context, client int) error) (loadResult, error) {
	if warm > 0 {
		if _, err := phase(ctx, clients, warm, do); err != nil {
			return loadResult{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	return phase(ctx, clients, d, do)
}

// compareRounds is how many turns each side of a compared pair gets
// (interleaved).
const compareRounds = 5

// interleaved runs the loads in turns (A, B, C, A, B, C, …), each for d
// split over compareRounds turns, after a warm-up of each, and returns each
// load's turns summed. A ratio of two loads measured one after the other
// also measures what this machine did in between: a disk that slows for a
// few seconds (fsync times here move by 2× within a minute), writeback of
// an earlier row's files, a neighbour on the host. In turns, a drift lands
// on every side alike, so the ratio keeps to what the two sides cost.
// inTurns says, for a row's note, how interleaved ran a comparison of d
// per side.
func inTurns(d time.Duration) string {
	return fmt.Sprintf("take turns (%d of %s each, after a warm-up of each)", compareRounds, d/compareRounds)
}

func interleaved(ctx context.Context, clients int, warm, d time.Duration, loads ...func(ctx context.Context, client int) error) ([]loadResult, error) {
	if warm > 0 {
		for i, do := range loads {
			if _, err := phase(ctx, clients, warm, do); err != nil {
				return nil, fmt.Errorf("load %d: warm-up: %w", i, err)
			}
		}
	}
	out := make([]loadResult, len(loads))
	for range compareRounds {
		for i, do := range loads {
			r, err := phase(ctx, clients, d/compareRounds, do)
			if err != nil {
				return nil, fmt.Errorf("load %d: %w", i, err)
			}
			out[i].requests += r.requests
			out[i].elapsed += r.elapsed
			out[i].latencies = append(out[i].latencies, r.latencies...)
		}
	}
	for i := range out {
		slices.Sort(out[i].latencies)
	}
	return out, nil
}

func phase(ctx context.Context, clients int, d time.Duration, do func(ctx context.Context, client int) error) (loadResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var n atomic.Int64
	var wg sync.WaitGroup
	lat := make([][]time.Duration, clients)
	start := time.Now()
	deadline := start.Add(d)
	for c := range clients {
		wg.Go(func() {
			for t0 := time.Now(); t0.Before(deadline) && ctx.Err() == nil; t0 = time.Now() {
				if err := do(ctx, c); err != nil {
					cancel(err)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
				n.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return loadResult{}, err
	}
	all := slices.Sorted(slices.Values(slices.Concat(lat...)))
	return loadResult{requests: n.Load(), elapsed: elapsed, latencies: all}, nil
}

// newClient is an HTTP/1.1 client that keeps a connection per client
// goroutine alive (the default keeps two, and the rest would churn through
// loopback ports).
func newClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        conns * 2,
			MaxIdleConnsPerHost: conns * 2,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
		Timeout: 5 * time.Minute,
	}
}

// call sends req and wants 200; out, if not nil, receives the JSON body.
func call(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", req.Method, req.URL.Path, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// idSample keeps the first ids a load phase created, for later reads.
type idSample struct {
	mu  sync.Mutex
	ids []string
	max int
}

func (s *idSample) add(id string) {
	s.mu.Lock()
	if len(s.ids) < s.max {
		s.ids = append(s.ids, id)
	}
	s.mu.Unlock()
}

func (s *idSample) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// baseline is the yardstick: HTTP handlers that do the least a real
// service must do for each operation, on the same kind of database.
//
//   - POST /faxes: one INSERT in a transaction on a SQLite database opened
//     with store.Open (same DSN settings as faxhub: WAL, synchronous=NORMAL,
//     _txlock=immediate, one writer connection).
//   - GET /faxes/{id}: one primary-key SELECT of that table, through a
//     read-only pool like the store's own reader pool (same settings and
//     size), since faxhub reads outside transactions that way too.
//   - PUT /uploads: io.Copy of the body to a file in a temp dir.
type baseline struct {
	db   *store.DB
	read *sql.DB
	dir  string
}

func newBaseline(t *testing.T) *baseline {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "baseline.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.SQL().ExecContext(ctx, `CREATE TABLE bench_rows (
		id TEXT PRIMARY KEY,
		idempotency_key TEXT NOT NULL,
		body TEXT NOT NULL,
		created_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	// The parameters store.Open gives its read-only connections.
	read, err := sql.Open("sqlite", path+"?_busy_timeout=10000&_foreign_keys=1&_query_only=1&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	n := max(4, runtime.NumCPU())
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	t.Cleanup(func() { read.Close() })
	if err := read.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	uploads := filepath.Join(dir, "uploads")
	if err := os.MkdirAll(uploads, 0o700); err != nil {
		t.Fatal(err)
	}
	return &baseline{db: db, read: read, dir: uploads}
}

type baselineRow struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotencyKey"`
	Body           string `json:"body"`
	CreatedAt      string `json:"createdAt"`
}

func (b *baseline) handler(log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		log.ErrorContext(r.Context(), "baseline", "path", r.URL.Path, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /baseline/faxes", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			fail(w, r, err)
			return
		}
		row := baselineRow{ID: "row_" + randomHex(12), IdempotencyKey: r.Header.Get("Idempotency-Key"), Body: string(body),
			CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
		tx, err := b.db.SQL().BeginTx(r.Context(), nil) // BEGIN IMMEDIATE (the DSN's _txlock)
		if err != nil {
			fail(w, r, err)
			return
		}
		if _, err := tx.ExecContext(r.Context(), "INSERT INTO bench_rows (id, idempotency_key, body, created_at) VALUES (?, ?, ?, ?)",
			row.ID, row.IdempotencyKey, row.Body, row.CreatedAt); err != nil {
			_ = tx.Rollback()
			fail(w, r, err)
			return
		}
		if err := tx.Commit(); err != nil {
			fail(w, r, err)
			return
		}
		writeJSON(w, row)
	})
	mux.HandleFunc("GET /baseline/faxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		var row baselineRow
		err := b.read.QueryRowContext(r.Context(), "SELECT id, idempotency_key, body, created_at FROM bench_rows WHERE id = ?", r.PathValue("id")).
			Scan(&row.ID, &row.IdempotencyKey, &row.Body, &row.CreatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			http.NotFound(w, r)
			return
		} else if err != nil {
			fail(w, r, err)
			return
		}
		writeJSON(w, row)
	})
	mux.HandleFunc("PUT /baseline/uploads", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.CreateTemp(b.dir, "upload-")
		if err != nil {
			fail(w, r, err)
			return
		}
		n, err := io.Copy(f, r.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		writeJSON(w, map[string]any{"stored": true, "bytes": n})
	})
	return mux
}

// serve starts h on a loopback httptest server closed at cleanup.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// serveApp opens a whole faxhub (internal/app's production wiring, dev
// mode, SQLite) and serves it on a loopback listener named localhost until
// the bench ends; mcpOAuth turns on the chat-app OAuth the MCP and A2A
// endpoints need.
func serveApp(t *testing.T, mcpOAuth bool) *consoletest.Site {
	t.Helper()
	site := consoletest.Start(t, func(base, _ string) app.Options {
		return app.Options{BaseURL: base, DataDir: t.TempDir(), Dev: true, MCPOAuth: mcpOAuth,
			InsertOnly: true, Logger: slog.New(slog.DiscardHandler)}
	})
	return site
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testLogger writes warnings and errors to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
