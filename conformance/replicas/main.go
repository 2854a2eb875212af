// Command replicas runs several `faxhub serve` processes on one PostgreSQL
// database behind a round-robin reverse proxy, so that the third-party
// suites (conformance/run-suites.sh with FAXHUB_SUITES_REPLICAS) spread
// every step of every journey across replicas: a state kept in one
// process's memory instead of the database shows up as a failed step.
//
//	go run ./conformance/replicas -bin ./faxhub -n 3 -addr 127.0.0.1:8080 \
//	    -database 'postgres://…?search_path=s' -dir /tmp/rep -log /tmp/front.log \
//	    -- --dev --sim-timescale 0
//
// It starts the N serves at the same moment (their migrations race: that
// is part of the test), each on its own loopback port with the front's
// URL as --base-url, one shared blob directory, its own data directory
// and loopback as a trusted proxy (so the X-Forwarded-For the front adds
// is the client's address). Once every /readyz answers it serves, sending
// each request to the next replica in strict rotation, and logs which
// replica served what to -log. SIGINT or SIGTERM stops the front and the
// replicas. Arguments after -- are passed to every serve. It uses the
// standard library only, and faxhub's rule for keeping capability tokens
// out of logs (core/web).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faxhub/faxhub/core/web"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "replicas:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	bin := fs.String("bin", "faxhub", "the faxhub binary")
	n := fs.Int("n", 3, "replicas to start")
	addr := fs.String("addr", "127.0.0.1:8080", "the front's listen address")
	baseURL := fs.String("base-url", "", "the public URL every replica is given (default: http://localhost:PORT of -addr)")
	database := fs.String("database", os.Getenv("FAXHUB_DATABASE_URL"), "the PostgreSQL URL every replica shares [FAXHUB_DATABASE_URL]")
	dir := fs.String("dir", "", "directory for the replicas' data directories, shared blobs and logs (required)")
	logPath := fs.String("log", "", "file for the front's request log (default: stderr)")
	logDir := fs.String("logs", "", "directory for the replicas' logs, replica-A.log … (default: -dir)")
	ready := fs.Duration("ready-timeout", 60*time.Second, "how long the replicas may take to become ready")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *n < 1 || *n > 16:
		return errors.New("-n must be 1 to 16")
	case *dir == "":
		return errors.New("-dir is required")
	case !strings.HasPrefix(*database, "postgres://") && !strings.HasPrefix(*database, "postgresql://"):
		return errors.New("-database (FAXHUB_DATABASE_URL) must be a postgres:// URL: replicas share one PostgreSQL database")
	}
	if *baseURL == "" {
		_, port, err := net.SplitHostPort(*addr)
		if err != nil {
			return fmt.Errorf("-addr: %w", err)
		}
		*baseURL = "http://localhost:" + port
	}
	logOut := io.Writer(os.Stderr)
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("request log: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	logger := log.New(logOut, "", log.LstdFlags|log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Listen first, so the suites can connect as soon as we say we are up
	// and nothing else takes the port while the replicas start.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("front: %w", err)
	}
	defer ln.Close()

	blobs := filepath.Join(*dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return fmt.Errorf("blob dir: %w", err)
	}
	if *logDir == "" {
		*logDir = *dir
	}
	if err := os.MkdirAll(*logDir, 0o755); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	g := &group{}
	defer g.stop()
	for i := range *n {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("replica %d: %w", i, err)
		}
		r := &replica{
			name: string(rune('A' + i)),
			addr: net.JoinHostPort("127.0.0.1", port),
		}
		serve := []string{"serve",
			"--addr", r.addr,
			"--base-url", *baseURL,
			"--database", *database,
			"--data", filepath.Join(*dir, "replica-"+r.name),
			"--blobs", "file://" + filepath.ToSlash(blobs),
			"--trusted-proxies", "127.0.0.1/32,::1/128",
		}
		serve = append(serve, fs.Args()...)
		if err := g.start(r, *bin, serve, filepath.Join(*logDir, "replica-"+r.name+".log")); err != nil {
			return err
		}
	}
	if err := g.waitReady(ctx, *ready); err != nil {
		return err
	}
	for _, r := range g.replicas {
		logger.Printf("replica %s on %s (pid %d)", r.name, r.addr, r.cmd.Process.Pid)
	}

	srv := &http.Server{
		Handler:           newFront(g.replicas, logger),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("replicas: %d faxhub serve behind %s (base URL %s)\n", len(g.replicas), ln.Addr(), *baseURL)

	var failure error
	select {
	case <-ctx.Done():
	case err := <-served:
		failure = fmt.Errorf("front: %w", err)
	case r := <-g.exited:
		failure = fmt.Errorf("replica %s exited while serving: %v (see its log)", r.name, r.err)
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	return failure
}

// replica is one `faxhub serve` child.
type replica struct {
	name  string // A, B, C, …
	addr  string
	cmd   *exec.Cmd
	proxy *httputil.ReverseProxy
	done  chan struct{} // closed when the process has exited
	err   error         // its exit error, once done
}

// group is the running replicas.
type group struct {
	replicas []*replica
	exited   chan *replica // each replica that exits, once
	logs     []*os.File
}

func (g *group) start(r *replica, bin string, args []string, logPath string) error {
	if g.exited == nil {
		g.exited = make(chan *replica, 16)
	}
	f, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("replica %s log: %w", r.name, err)
	}
	g.logs = append(g.logs, f)
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start replica %s: %w", r.name, err)
	}
	r.done = make(chan struct{})
	g.replicas = append(g.replicas, r)
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
		g.exited <- r
	}()
	return nil
}

// waitReady polls every replica's /readyz until all answer 200, one exits,
// or the deadline passes.
func (g *group) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for _, r := range g.replicas {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/readyz", nil)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-r.done:
				return fmt.Errorf("replica %s exited before it was ready: %v (see its log)", r.name, r.err)
			case <-ctx.Done():
				return fmt.Errorf("replica %s not ready: %w", r.name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// stop asks every replica to stop (SIGTERM, as an orchestrator would) and
// kills those still running after the serve's shutdown grace.
func (g *group) stop() {
	for _, r := range g.replicas {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(20 * time.Second)
	for _, r := range g.replicas {
		select {
		case <-r.done:
		case <-deadline:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	}
	for _, f := range g.logs {
		f.Close()
	}
}

// newFront is the round-robin reverse proxy: request k goes to replica
// k mod N, so consecutive steps of a journey land on different replicas.
func newFront(replicas []*replica, logger *log.Logger) http.Handler {
	for _, r := range replicas {
		target := &url.URL{Scheme: "http", Host: r.addr}
		r.proxy = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.SetXForwarded()
				// The client's Host, as a load balancer keeps it.
				pr.Out.Host = pr.In.Host
			},
			FlushInterval: -1, // server-sent events stream through
			ErrorLog:      logger,
		}
	}
	var next atomic.Uint64
	var mu sync.Mutex // one log line at a time
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := replicas[(next.Add(1)-1)%uint64(len(replicas))]
		rec := &statusWriter{ResponseWriter: w}
		start := time.Now()
		r.proxy.ServeHTTP(rec, req)
		mu.Lock()
		logger.Printf("replica=%s %s %s status=%d request_id=%s %s", r.name, req.Method, redact(req.URL.Path),
			rec.status, rec.Header().Get("X-Request-Id"), time.Since(start).Round(time.Millisecond))
		mu.Unlock()
	})
}

// redact hides the capability tokens of paths (upload, claim, test
// checkout and status links) by faxhub's own rule, and the long segments
// of paths it has no rule for (download links): the log must not hold
// secrets.
func redact(path string) string {
	segs := strings.Split(web.LogPath(path), "/")
	for i, s := range segs {
		if len(s) > 32 {
			segs[i] = "…"
		}
	}
	return strings.Join(segs, "/")
}

// statusWriter records the status a replica answered; it passes flushes
// through for streams.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}
