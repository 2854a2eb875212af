//go:build bench

package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
)

// sendPGOwners is how many owners the PostgreSQL send load is spread
// over. An exec'd server keeps core's send rate limit (20 at once, then
// 10 a second per owner and mode), which the SQLite sendFax benchmark
// turns off in process: 256 owners allow ~3,000 sends a second in all,
// far above what two cores reach, and no request is refused.
const sendPGOwners = 256

// benchSendPostgres measures POST /api/v1/faxes per second (the sendFax
// load: 32 clients, 10 s, unique Idempotency-Keys) against one `faxhub
// serve` on a fresh PostgreSQL schema, then against three serves sharing
// a fresh schema and a blob directory, the clients spread round-robin
// over them.
func benchSendPostgres(t *testing.T, rep *report) {
	name := func(n int) string {
		return fmt.Sprintf("sendFax  POST /api/v1/faxes, PostgreSQL, %d faxhub serve, %d clients, %s", n, httpClients, sendDuration)
	}
	url := os.Getenv(storetest.EnvPostgresURL)
	if url == "" {
		for _, n := range []int{1, 3} {
			rep.skipped(name(n), storetest.EnvPostgresURL+" is not set (make bench sets it)")
		}
		t.Skip(storetest.EnvPostgresURL + " is not set")
	}
	bin := buildFaxhub(t)
	one, cpu1 := sendPostgresRate(t, bin, url, 1)
	three, cpu3 := sendPostgresRate(t, bin, url, 3)
	rep.add(name(1), "req/s", one, nan, noTarget(), 0,
		fmt.Sprintf("sendFax PostgreSQL: exec'd `faxhub serve` processes on a fresh schema (their delivery workers on, simulated provider "+
			"in real time, so each fax also gets its delivery job within the run); the load of the SQLite sendFax row spread over %d owners, "+
			"because a real server keeps the per-owner send rate limit.", sendPGOwners))
	rep.add(name(3), "req/s", three, nan, noTarget(), 0, "")
	rep.add("sendFax  PostgreSQL, CPU share of the serves, 1 serve", "%", cpu1.serves, nan, noTarget(), 0,
		"CPU share of the machine's CPUs over each phase, warm-up included (/proc/PID/stat utime+stime of each faxhub serve, "+
			"and of its PostgreSQL backends, found by the application_name of its DSN; 100% is every CPU busy the whole phase): 1 serve: "+cpu1.note+"; 3 serves: "+cpu3.note+".")
	rep.add("sendFax  PostgreSQL, CPU share of the serves, 3 serves", "%", cpu3.serves, nan, noTarget(), 0, "")
	rep.add("sendFax  PostgreSQL, 3 replicas against 1", "req/s", three, one, noTarget(), 0,
		"sendFax 3 replicas / 1: the machine has 2 cores, so the three replicas compete for the same CPUs as PostgreSQL and the clients; "+
			"near 1 shows that sends scale out across replicas (no single-writer lock: the same CPUs give the same sends through three processes), "+
			"not the speedup on bigger machines; what it lacks of 1 is the price of more processes, connections and workers on the same CPUs.")
}

// sendPostgresRate starts replicas serves on one fresh schema, prepares
// the owners and runs the send load; it returns sends per second.
func sendPostgresRate(t *testing.T, bin, pgURL string, replicas int) (float64, cpuShare) {
	ctx := t.Context()
	dsn := storetest.OpenPostgresSchema(t, pgURL)
	blobs := "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "blobs"))
	var procs []*serveProc
	// Each replica names its connections, so that its PostgreSQL backends
	// can be found in pg_stat_activity for their CPU time.
	var apps []string
	for i := range replicas {
		apps = append(apps, fmt.Sprintf("faxhub-bench-%d-%d-%d", os.Getpid(), replicas, i))
		// One at a time: the first migrates the schema.
		procs = append(procs, startServe(t, bin, "--data", filepath.Join(t.TempDir(), fmt.Sprintf("data%d", i)),
			"--database", dsn+"&application_name="+apps[i], "--blobs", blobs, "--log-level", "warn"))
	}
	client := newClient(httpClients)
	defer client.CloseIdleConnections()
	keys, uploads := sendPGSetup(t, procs[0].base, dsn, blobs, client)
	bodies := make([][]byte, len(uploads))
	for i, u := range uploads {
		bodies[i] = []byte(fmt.Sprintf(`{"to":"+12125550100","uploadToken":%q}`, u))
	}

	var seq atomic.Int64
	post := func(ctx context.Context, c int) error {
		n := seq.Add(1)
		o := int(n % sendPGOwners)
		req, err := http.NewRequestWithContext(ctx, "POST", procs[c%replicas].base+"/api/v1/faxes", bytes.NewReader(bodies[o]))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+keys[o])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("sendpg-%d", n))
		_, err = postForID(client, req)
		return err
	}
	var pids []int
	for _, p := range procs {
		pids = append(pids, p.pid())
	}
	cpu, err := startCPUShares(pids)
	if err != nil {
		t.Fatal(err)
	}
	res, err := hammer(ctx, httpClients, warmUp, sendDuration, post)
	if err != nil {
		t.Fatalf("sendFax on PostgreSQL, %d replicas: %v", replicas, err)
	}
	shares := cpuShareNote(t, cpu, pgURL, apps)
	for _, p := range procs {
		if err := p.alive(); err != nil {
			t.Fatalf("%v\n%s", err, p.tail())
		}
	}
	t.Logf("sendFax PostgreSQL, %d replicas: %d requests in %s = %.0f/s", replicas, res.requests, res.elapsed.Round(time.Millisecond), res.perSecond())
	for _, p := range procs {
		if err := p.stop(); err != nil {
			t.Errorf("faxhub serve on SIGTERM: %v\n%s", err, p.tail())
		}
	}
	return res.perSecond(), shares
}

// cpuShareNote says what share of the machine's CPUs each serve and its
// PostgreSQL backends used over the phase just ended (warm-up included).
func cpuShareNote(t *testing.T, cpu *cpuShares, pgURL string, apps []string) cpuShare {
	db, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	serve, backends, clients, err := cpu.done(t.Context(), db, apps, runtime.NumCPU())
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	var sumS, sumB float64
	for i := range serve {
		parts = append(parts, fmt.Sprintf("serve %d %.0f%% + its backends %.0f%%", i+1, serve[i], backends[i]))
		sumS += serve[i]
		sumB += backends[i]
	}
	note := fmt.Sprintf("%s; serves %.0f%%, backends %.0f%%, clients (the bench process) %.0f%%, the rest (PostgreSQL's own processes, other load, idle) %.0f%%",
		strings.Join(parts, ", "), sumS, sumB, clients, 100-sumS-sumB-clients)
	t.Logf("CPU share of %d CPUs over the phase: %s", runtime.NumCPU(), note)
	return cpuShare{serves: sumS, note: note}
}

// cpuShare is the serves' share of the CPUs over a phase, in percent, and
// the breakdown.
type cpuShare struct {
	serves float64
	note   string
}

// sendPGSetup creates sendPGOwners owners, each with test credits and a
// test API key (through an in-process app on the same database, as
// `faxhub admin` does), and uploads a one-page PDF for each over HTTP at
// base; it returns the keys and the upload tokens.
func sendPGSetup(t *testing.T, base, dsn, blobs string, client *http.Client) (keys, uploads []string) {
	ctx := t.Context()
	a, err := app.Open(ctx, app.Options{BaseURL: base, DataDir: t.TempDir(), Database: dsn, BlobURL: blobs, InsertOnly: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range sendPGOwners {
		_, key := benchOwner(ctx, t, a.Svc, fmt.Sprintf("sendpg-%d@example.com", i))
		keys = append(keys, key)
	}
	pdf := testenv.MinimalPDF(1)
	for _, key := range keys {
		token, err := newUploadAt(ctx, client, base, key)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, "PUT", base+"/api/v1/uploads/"+token, bytes.NewReader(pdf))
		if err != nil {
			t.Fatal(err)
		}
		if err := call(client, req, nil); err != nil {
			t.Fatal(err)
		}
		uploads = append(uploads, token)
	}
	return keys, uploads
}
